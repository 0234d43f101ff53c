/* The `rill` command line: one file per command (inspect.c, run.c, ops.c, prune.c,
 * checkpoint.c, dot.c, trace.c), main.c dispatching to them, and the helpers they share here.
 * Every file uses only the public API (rill.h); the build gives the command line no
 * other include path.
 *
 * A command takes the arguments after its name and returns the exit status: 0 success,
 * 1 a runtime error (message on stderr), 2 a usage error. */
#ifndef RILL_TOOLS_CLI_H
#define RILL_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rill.h"

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

int cmd_inspect(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_prune(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);
int cmd_dot(int argc, char **argv);
int cmd_trace(int argc, char **argv);

/* Loads and removes every `--plugin LIB` (or `--plugin=LIB`) from argv[0..*argc), in
 * order. Returns 0, or the exit status after printing why: 2 for a usage error, 1 when
 * a library fails to load. */
int take_plugins(int *argc, char **argv);

/* Prints "rill: <fmt with arg>" and a pointer to --help on stderr; returns EXIT_USAGE. */
int usage_error(const char *fmt, const char *arg);
/* Prints the error's code and message on stderr, destroys it; returns EXIT_ERROR. */
int fail(rill_status *st);
/* A new OUT_OF_MEMORY status. */
rill_status *cli_oom(void);

/* Evaluates `expr`; on error returns it from the enclosing function. */
#define CLI_TRY(expr)                                                                  \
  do {                                                                                 \
    rill_status *cli_try_st_ = (expr);                                                 \
    if (cli_try_st_) return cli_try_st_;                                               \
  } while (0)

bool path_is_dir(const char *path);
/* The program file of MODEL: DIR/__model__, DIR/<x>.pdmodel (the first by name), or
 * MODEL itself. *out is freed with free(). */
rill_status *program_path(const char *model, char **out);
/* Loads the program of MODEL (see program_path); *path_out (may be NULL) receives the
 * file it read, freed with free(). */
rill_status *load_program(const char *model, rill_program **out, char **path_out);

/* Writes `len` bytes to `path` crash-safely: a temp file beside it, fsync, rename. */
rill_status *write_file(const char *path, const void *data, size_t len);

/* "[1, -1, 28, 28]": dims as Paddle prints them (-1 an unknown extent). */
enum { DIMS_STR_MAX = 16 + RILL_MAX_DIMS * 21 };
const char *dims_str(const int64_t *dims, size_t ndim, char *buf, size_t cap);

/* The name of a VarType.Type number ("LOD_TENSOR", ..., "OTHER"). */
const char *var_type_name(int32_t type);

#endif
