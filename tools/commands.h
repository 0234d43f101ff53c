/* Commands of the `rill` command line that live outside tools/rill.c. */
#ifndef RILL_TOOLS_COMMANDS_H
#define RILL_TOOLS_COMMANDS_H

#include "rill.h"

/* The program file of MODEL: DIR/__model__, DIR/<x>.pdmodel, or MODEL itself. */
rill_status *program_path(const char *model, char **out);

/* `rill dot MODEL [-o FILE]`: the program's graph in Graphviz form. */
int cmd_dot(int argc, char **argv);

/* Loads and removes every `--plugin LIB` (or `--plugin=LIB`) from argv[0..*argc), in
 * order. Returns 0, or the exit status after printing why: 2 for a usage error, 1 when
 * a library fails to load. */
int take_plugins(int *argc, char **argv);

#endif
