/* faccy, a Paddle 2.x OCR recognizer whose head is a 2-layer bidirectional LSTM lowered
 * to one `rnn` op, runs end to end with synthetic parameters (its weights are not in
 * ../shared): per-step class probabilities of the expected shape, each row a
 * distribution, the two images of a batch that are equal giving equal rows (up to
 * rounding), and the parallel schedule the same answer bit for bit. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "framework/registry/registry.h"
#include "rill.h"
#include "support/synth_params.h"

#define FACCY RILL_SHARED_DIR "/programs/faccy.pdmodel"

static void expect_ok(rill_status *st, const char *what) {
  cr_assert_null(st, "%s: %s", what, rill_status_message(st));
}

/* 1 for batch_norm's variances (.w_2), else small values around 0. */
static float faccy_value(const char *name, float r) {
  size_t len = strlen(name);
  bool variance = len > 4 && strcmp(name + len - 4, ".w_2") == 0;
  return variance ? 1.0f : (r - 0.5f) * 0.4f;
}

/* Runs faccy on a batch of two [3, 32, W] images, the second a copy of the first. */
static rill_tensor *run_faccy(int64_t W, rill_schedule schedule) {
  rill_program *p = NULL;
  expect_ok(rill_program_load(FACCY, &p), FACCY);
  rill_scope *scope = NULL;
  expect_ok(rill_scope_create(NULL, &scope), "scope");
  synth_params(p, scope, 11, faccy_value);
  const int64_t xd[] = {2, 3, 32, W};
  rill_tensor *x = NULL;
  expect_ok(rill_tensor_create(RILL_DTYPE_FP32, xd, 4, &x), "x");
  float *xp = rill_tensor_data(x);
  int64_t per = 3 * 32 * W;
  for (int64_t k = 0; k < per; k++) xp[k] = xp[per + k] = (float)sin(0.013 * (double)k);
  const char *names[] = {"x"}, *fetch = "save_infer_model/scale_0.tmp_1";
  rill_executor *exe = NULL;
  rill_executor_options opts = RILL_EXECUTOR_OPTIONS_INIT;
  opts.num_threads = 2;
  expect_ok(rill_executor_create(&opts, &exe), "executor");
  expect_ok(rill_executor_set_schedule(exe, schedule), "schedule");
  rill_tensor *out = NULL;
  expect_ok(rill_executor_run(exe, p, scope, names, &x, 1, &fetch, 1, &out), "faccy");
  rill_executor_destroy(exe);
  rill_tensor_destroy(x);
  rill_scope_destroy(scope);
  rill_program_destroy(p);
  return out;
}

Test(rnn_program, faccy_runs_with_synthetic_parameters) {
  expect_ok(rill_registry_init(), "registry");
  rill_tensor *out = run_faccy(100, RILL_SCHEDULE_SEQUENTIAL);
  const rill_dims *d = &out->dims;
  cr_assert_eq(d->n, 3);
  cr_assert_eq(d->d[0], 2);
  cr_assert_eq(d->d[1], 25, "steps: width 100 / 4, got %lld", (long long)d->d[1]);
  cr_assert_eq(d->d[2], 96);
  const float *o = rill_tensor_data(out);
  int64_t steps = d->d[1], classes = d->d[2];
  bool steps_differ = false;
  for (int64_t r = 0; r < 2 * steps; r++) {
    double sum = 0;
    for (int64_t c = 0; c < classes; c++) {
      cr_assert(isfinite(o[r * classes + c]));
      sum += o[r * classes + c];
    }
    cr_assert(fabs(sum - 1) < 1e-4, "row %lld sums to %g", (long long)r, sum);
    if (r > 0 && r < steps && fabsf(o[r * classes] - o[(r - 1) * classes]) > 1e-7f)
      steps_differ = true;
  }
  cr_assert(steps_differ, "every step has the same distribution");
  /* equal images, equal rows: the LSTM keeps the batch rows apart. Equal up to rounding:
   * a BLAS may compute two rows of one product with different kernels (OpenBLAS, under
   * RILL_CPU_ISA=generic, does), so the sums may round differently. */
  for (int64_t i = 0; i < steps * classes; i++)
    cr_assert(fabsf(o[i] - o[steps * classes + i]) <= 1e-5f + 1e-4f * fabsf(o[i]),
              "batch rows differ at %lld: %g and %g", (long long)i, o[i], o[steps * classes + i]);
  rill_tensor *par = run_faccy(100, RILL_SCHEDULE_PARALLEL);
  cr_assert_eq(rill_tensor_byte_size(par), rill_tensor_byte_size(out));
  cr_assert(memcmp(rill_tensor_data(par), o, rill_tensor_byte_size(out)) == 0);
  rill_tensor_destroy(par);
  rill_tensor_destroy(out);
}
