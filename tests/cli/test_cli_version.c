/* `rill --version` prints the loaded library's version, which is the project's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rill.h"
#include "support/shell.h"

#define RILL RILL_BINARY_DIR "/rill"

Test(cli_version, prints_the_project_version) {
  char *out;
  cr_assert_eq(sh(&out, "'%s' --version", RILL), 0);
  char want[64];
  snprintf(want, sizeof want, "rill %s\n", RILL_PROJECT_VERSION);
  cr_assert_str_eq(out, want);
  cr_assert_str_eq(rill_version(), RILL_PROJECT_VERSION);
  free(out);
}
