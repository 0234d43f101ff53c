/* Helpers of the predictor tests over the shared models (RILL_SHARED_DIR/models/<name>/,
 * reference inputs and outputs in its refs/): opening a model with the options a test
 * sets, and a set of input tensors by name. Each fails the running Criterion test on an
 * error. */
#ifndef RILL_TESTS_INFERENCE_PREDICTOR_TEST_H
#define RILL_TESTS_INFERENCE_PREDICTOR_TEST_H

#include <criterion/criterion.h>
#include <stdio.h>

#include "rill.h"

#define MODELS RILL_SHARED_DIR "/models/"

static inline void predictor_test_ok(rill_status *st, const char *what) {
  cr_assert_null(st, "%s: %s", what, rill_status_message(st));
}

/* A config for model `name`, for the caller to set options on and pass to open_config. */
static inline rill_predictor_config *model_config(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, MODELS "%s", name);
  rill_predictor_config *c;
  predictor_test_ok(rill_predictor_config_create(path, &c), path);
  return c;
}

/* The predictor of config c, which it destroys. */
static inline rill_predictor *open_config(rill_predictor_config *c) {
  rill_predictor *p = NULL;
  predictor_test_ok(rill_predictor_create(c, &p), "rill_predictor_create");
  rill_predictor_config_destroy(c);
  return p;
}

typedef struct inputs {
  const char *names[8];
  rill_tensor *t[8];
  size_t n;
} inputs;

static inline void free_inputs(inputs *in) {
  for (size_t i = 0; i < in->n; i++) rill_tensor_destroy(in->t[i]);
}

#endif
