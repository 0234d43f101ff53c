/* `rill prune` (tools/cmd_prune.c). */
#ifndef RILL_TOOLS_CMD_PRUNE_H
#define RILL_TOOLS_CMD_PRUNE_H

/* argv: the arguments after "prune". Returns the exit status (0, 1 error, 2 usage). */
int rill_cmd_prune(int argc, char **argv);

#endif
