/* `rill prune`, run as a process: a model pruned to its own outputs gives the same
 * answer, pruned to an intermediate variable keeps only the ops and parameters that
 * need, writes combined parameters on request, and reports bad names and arguments. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "support/shell.h"

#define RILL RILL_BINARY_DIR "/rill"
#define MODEL RILL_SHARED_DIR "/models/mnist_mlp_handwriting"
#define IMAGE MODEL "/refs/input_image.npy"

static char dir[64];

static void make_dir(void) {
  strcpy(dir, "/tmp/rill_prune_cli_XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

TestSuite(cli_prune, .init = make_dir, .fini = remove_dir);


static bool exists(const char *name) {
  char path[256];
  struct stat sb;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return stat(path, &sb) == 0;
}

Test(cli_prune, to_the_models_outputs_gives_the_same_answer) {
  char *out;
  int rc = sh(&out, "'%s' prune '%s' --output '%s/m' 2>&1", RILL, MODEL, dir);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "fetch col 0: save_infer_model/scale_0.tmp_4"), "%s", out);
  free(out);
  char *a, *b;
  cr_assert_eq(sh(&a, "'%s' run '%s' --input image='%s' 2>&1", RILL, MODEL, IMAGE), 0);
  cr_assert_eq(sh(&b, "'%s' run '%s/m' --input image='%s' 2>&1", RILL, dir, IMAGE), 0, "%s", b);
  cr_assert_str_eq(a, b);
  cr_assert(strstr(b, "argmax per row: 3"), "%s", b);
  free(a);
  free(b);
}

Test(cli_prune, to_an_intermediate_keeps_only_what_it_needs) {
  char *out;
  int rc = sh(&out, "'%s' prune '%s' --fetch fc_0.tmp_2 --output '%s' 2>&1", RILL, MODEL, dir);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "2 variables"), "%s", out);
  free(out);
  cr_assert(exists("__model__") && exists("fc_0.w_0") && exists("fc_0.b_0"));
  cr_assert(!exists("fc_1.w_0") && !exists("fc_2.w_0"));
  rc = sh(&out, "'%s' run '%s' --input image='%s' 2>&1", RILL, dir, IMAGE);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "output 0: fc_0.tmp_2 float32 [1, 100]"), "%s", out);
  free(out);
}

Test(cli_prune, combined_parameters) {
  char *out;
  int rc = sh(&out, "'%s' prune '%s' --output '%s' --combined params 2>&1", RILL, MODEL, dir);
  cr_assert_eq(rc, 0, "%s", out);
  free(out);
  cr_assert(exists("params") && !exists("fc_0.w_0"));
  rc = sh(&out, "'%s' run '%s' --params params --input image='%s' 2>&1", RILL, dir, IMAGE);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "argmax per row: 3"), "%s", out);
  free(out);
}

Test(cli_prune, bad_names_and_arguments) {
  char *out;
  int rc = sh(&out, "'%s' prune '%s' --fetch no_such_var --output '%s' 2>&1", RILL, MODEL, dir);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "'no_such_var'"), "%s", out);
  cr_assert(!exists("__model__"), "nothing is written on error");
  free(out);
  rc = sh(&out, "'%s' prune '%s' 2>&1", RILL, MODEL);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "--output"), "%s", out);
  free(out);
  rc = sh(&out, "'%s' prune '%s' --output '%s' --bogus 1 2>&1", RILL, MODEL, dir);
  cr_assert_eq(rc, 2, "%s", out);
  free(out);
  rc = sh(&out, "'%s' prune '%s/nope' --output '%s' 2>&1", RILL, dir, dir);
  cr_assert_eq(rc, 1, "%s", out);
  free(out);
}
