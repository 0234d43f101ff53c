/* Every shared program and model either validates fully or fails with one message that
 * names exactly the op types rill lacks. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "framework/program/program.h"
#include "framework/registry/registry.h"

#define PREFIX "program uses ops rill does not have: "
#define SUFFIX                                                                         \
  " (load an op library that registers them: 'rill run --plugin LIB' or "              \
  "rill_load_op_library(), see examples/plugin/README.md; or add them to operators/ "  \
  "and kernels/cpu/)"

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The sorted, comma-separated op types of p without a schema, found by walking p. */
static char *missing_ops(const rill_program *p) {
  const char *names[512];
  size_t n = 0;
  for (size_t b = 0; b < p->nblocks; b++)
    for (size_t i = 0; i < p->blocks[b].nops; i++) {
      const char *t = p->blocks[b].ops[i].type;
      if (rill_schema_find(t)) continue;
      bool seen = false;
      for (size_t k = 0; k < n; k++) seen |= strcmp(names[k], t) == 0;
      if (!seen && n < 512) names[n++] = t;
    }
  qsort(names, n, sizeof names[0], cmp);
  size_t len = 1;
  for (size_t k = 0; k < n; k++) len += strlen(names[k]) + 2;
  char *s = calloc(1, len);
  for (size_t k = 0; k < n; k++) {
    if (k) strcat(s, ", ");
    strcat(s, names[k]);
  }
  return s;
}

/* Validates the program at path; returns the missing-op list ("" when it validated). */
static char *check_program(const char *path) {
  rill_program *p = NULL;
  rill_status *st = rill_program_load(path, &p);
  cr_assert_null(st, "%s: %s", path, rill_status_message(st));
  char *want = missing_ops(p);
  st = rill_program_validate(p);
  if (*want) {
    cr_assert_not_null(st, "%s uses %s but validated", path, want);
    const char *msg = rill_status_message(st);
    size_t lp = strlen(PREFIX), lw = strlen(want);
    cr_assert(strncmp(msg, PREFIX, lp) == 0 && strncmp(msg + lp, want, lw) == 0 &&
                  strcmp(msg + lp + lw, SUFFIX) == 0,
              "%s: message \"%s\", expected the ops %s", path, msg, want);
  } else {
    cr_assert_null(st, "%s: %s", path, rill_status_message(st));
  }
  rill_status_destroy(st);
  rill_program_destroy(p);
  return want;
}

Test(programs, fit_a_line_and_mnist_mlp_validate_fully) {
  char *a = check_program(RILL_SHARED_DIR "/models/fit_a_line_raftliu/__model__");
  char *b = check_program(RILL_SHARED_DIR "/models/mnist_mlp_handwriting/__model__");
  cr_assert_str_empty(a);
  cr_assert_str_empty(b);
  free(a);
  free(b);
}

Test(programs, every_model_validates_or_names_its_missing_ops) {
  const char *models[] = {"abalone_bn_mlp/__model__", "fit_a_line_raftliu/__model__",
                          "luotao1_example_mlp_2018/__model__", "mnist_conv_bn_etienne/__model__",
                          "mnist_mlp_handwriting/__model__", "paddlejs_gesture_rec/__model__",
                          "paddlelite_simple_model/model.pdmodel", "pureboys_word2vec/__model__"};
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s", RILL_SHARED_DIR, models[i]);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0, "%s is missing", path);
    char *m = check_program(path);
    cr_log_info("%s: %s", models[i], *m ? m : "validates");
    free(m);
  }
}

Test(programs, every_shared_program_validates_or_names_its_missing_ops) {
  DIR *d = opendir(RILL_SHARED_DIR "/programs");
  cr_assert_not_null(d);
  struct dirent *e;
  int count = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/programs/%s", RILL_SHARED_DIR, e->d_name);
    char *m = check_program(path);
    cr_log_info("%s: %s", e->d_name, *m ? m : "validates");
    free(m);
    count++;
  }
  closedir(d);
  cr_assert_geq(count, 32);
}
