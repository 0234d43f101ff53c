/* `--plugin LIB` for the commands that run or describe ops. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int take_plugins(int *argc, char **argv) {
  int out = 0;
  for (int i = 0; i < *argc; i++) {
    const char *lib = NULL;
    if (strcmp(argv[i], "--plugin") == 0) {
      if (i + 1 >= *argc) {
        fprintf(stderr, "rill: --plugin needs a shared library path\n"
                        "(run 'rill --help' for usage)\n");
        return 2;
      }
      lib = argv[++i];
    } else if (strncmp(argv[i], "--plugin=", 9) == 0) {
      lib = argv[i] + 9;
    } else {
      argv[out++] = argv[i];
      continue;
    }
    rill_status *st = rill_load_op_library(lib);
    if (st) {
      fprintf(stderr, "rill: error: %s: %s\n", rill_code_name(rill_status_code(st)),
              rill_status_message(st));
      rill_status_destroy(st);
      return 1;
    }
  }
  *argc = out;
  argv[out] = NULL;
  return 0;
}
