/* A predictor runs the plan it prepared when it was created, and a run infers shapes
 * again only for ops whose input shapes changed since their last run: the second run
 * of an unchanged input infers nothing, a new batch size infers again and gives the
 * right shapes and values, and going back re-infers once more. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "framework/exec/executor.h"
#include "framework/inference/predictor.h"
#include "framework/io/npy.h"
#include "rill.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

#define MODEL RILL_SHARED_DIR "/models/mnist_conv_bn_etienne"

static rill_predictor *open_model(void) {
  rill_predictor_config *c;
  OK(rill_predictor_config_create(MODEL, &c));
  rill_predictor *p = NULL;
  OK(rill_predictor_create(c, &p));
  rill_predictor_config_destroy(c);
  return p;
}

/* The model's reference input repeated `batch` times along the first axis. */
static rill_tensor *batch_of(rill_tensor *one, int64_t batch) {
  size_t nd = rill_tensor_ndim(one);
  int64_t dims[8];
  memcpy(dims, rill_tensor_dims(one), nd * sizeof *dims);
  cr_assert_eq(dims[0], 1);
  dims[0] = batch;
  rill_tensor *t;
  OK(rill_tensor_create(rill_tensor_dtype(one), dims, nd, &t));
  size_t bytes = rill_tensor_byte_size(one);
  for (int64_t b = 0; b < batch; b++)
    memcpy((char *)rill_tensor_data(t) + (size_t)b * bytes, rill_tensor_data(one), bytes);
  return t;
}

static rill_tensor *run(rill_predictor *p, rill_tensor *in) {
  const char *name = rill_predictor_input_name(p, 0);
  rill_tensor *out = NULL;
  OK(rill_predictor_run(p, &name, &in, 1, &out));
  return out;
}

/* Every row of `got` equals the single row of `want`. */
static void same_rows(rill_tensor *got, rill_tensor *want, int64_t rows) {
  cr_assert_eq(rill_tensor_dims(got)[0], rows);
  int64_t n = rill_tensor_numel(want);
  cr_assert_eq(rill_tensor_numel(got), n * rows);
  const float *g = rill_tensor_data(got), *w = rill_tensor_data(want);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t i = 0; i < n; i++)
      cr_assert(fabsf(g[r * n + i] - w[i]) <= 1e-5f + 1e-4f * fabsf(w[i]),
                "row %lld [%lld]: %g, want %g", (long long)r, (long long)i, g[r * n + i], w[i]);
}

/* Runs `in` and checks its rows; returns how many ops the run inferred. */
static uint64_t run_checked(rill_predictor *p, rill_tensor *in, rill_tensor *want, int64_t rows) {
  const rill_plan *plan = rill_predictor_plan(p);
  uint64_t before = rill_plan_infer_runs(plan);
  rill_tensor *out = run(p, in);
  same_rows(out, want, rows);
  rill_tensor_destroy(out);
  return rill_plan_infer_runs(plan) - before;
}

Test(predictor, unchanged_input_shapes_are_not_inferred_again) {
  rill_predictor *p = open_model();
  cr_assert_not_null(rill_predictor_plan(p));
  rill_tensor *one, *want;
  OK(rill_npy_load(MODEL "/refs/input_img.npy", &one));
  OK(rill_npy_load(MODEL "/refs/output_0.npy", &want));
  rill_tensor *two = batch_of(one, 2);

  cr_assert_gt(run_checked(p, one, want, 1), 0, "the first run infers");
  uint64_t n = run_checked(p, one, want, 1);
  cr_assert_eq(n, 0, "an identical second run inferred %llu ops again", (unsigned long long)n);
  cr_assert_gt(run_checked(p, two, want, 2), 0, "a new batch size must be inferred");
  cr_assert_eq(run_checked(p, two, want, 2), 0);
  cr_assert_gt(run_checked(p, one, want, 1), 0, "back to batch 1: inferred again");
  cr_assert_eq(run_checked(p, one, want, 1), 0);

  rill_tensor_destroy(two);
  rill_tensor_destroy(one);
  rill_tensor_destroy(want);
  rill_predictor_destroy(p);
}

/* The predictor never looks its plan up again: the executor's cache sees one build and
 * no hits however many runs there are. */
Test(predictor, runs_its_prepared_plan_directly) {
  rill_predictor *p = open_model();
  const rill_plan *plan = rill_predictor_plan(p);
  rill_tensor *one, *want;
  OK(rill_npy_load(MODEL "/refs/input_img.npy", &one));
  OK(rill_npy_load(MODEL "/refs/output_0.npy", &want));
  for (int i = 0; i < 3; i++) run_checked(p, one, want, 1);
  cr_assert_eq(rill_predictor_plan(p), plan, "the predictor keeps one plan");
  const rill_executor *exe = rill_predictor_executor(p);
  cr_assert_eq(rill_executor_plan_builds(exe), 1);
  cr_assert_eq(rill_executor_plan_hits(exe), 0, "%llu runs looked the plan up in the cache",
               (unsigned long long)rill_executor_plan_hits(exe));
  rill_tensor_destroy(one);
  rill_tensor_destroy(want);
  rill_predictor_destroy(p);
}
