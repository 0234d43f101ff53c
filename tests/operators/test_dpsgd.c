/* dpsgd against Paddle 1.8.5's update written here: the gradient scaled down to norm
 * clip when longer, one noise draw per run shared by every element (zero with sigma 0),
 * a fixed seed giving the same noise each run, and the errors. */
#include "op_test.h"

static op_harness *dpsgd(rill_dtype dt, const void *p, const void *g, const void *lr, int n) {
  op_harness *h = harness("dpsgd");
  bind_input(h, "Param", "w", dt, DIMS(n), p);
  bind_input(h, "Grad", "w@GRAD", dt, DIMS(n), g);
  bind_input(h, "LearningRate", "lr", dt, DIMS(1), lr);
  OK(op_harness_output(h, "ParamOut", "w"));
  return h;
}

Test(dpsgd, clipped_step_without_noise) {
  double p[4] = {1, 2, 3, 4}, g[4] = {3, 0, -4, 0}, lr = 0.5; /* |g| = 5 */
  op_harness *h = dpsgd(RILL_DTYPE_FP64, p, g, &lr, 4);
  OK(op_harness_attr_float(h, "clip", 2.5f));
  OK(op_harness_attr_float(h, "sigma", 0.0f));
  OK(op_harness_infer(h));
  OK(op_harness_run(h));
  const double *w = rill_tensor_ptr(op_harness_tensor(h, "w"));
  const double want[4] = {1 - 0.5 * 1.5, 2, 3 + 0.5 * 2, 4}; /* g / (5 / 2.5) */
  for (int i = 0; i < 4; i++) cr_assert(fabs(w[i] - want[i]) < 1e-6, "w[%d] = %g", i, w[i]);
  op_harness_destroy(h);
  /* a gradient shorter than clip is not scaled */
  float pf[2] = {1, 1}, gf[2] = {0.3f, 0.4f}, lrf = 1;
  h = dpsgd(RILL_DTYPE_FP32, pf, gf, &lrf, 2);
  OK(op_harness_attr_float(h, "clip", 1.0f));
  OK(op_harness_attr_float(h, "sigma", 0.0f));
  OK(op_harness_run(h));
  const float *wf = rill_tensor_ptr(op_harness_tensor(h, "w"));
  cr_assert(fabsf(wf[0] - 0.7f) < 1e-6f && fabsf(wf[1] - 0.6f) < 1e-6f, "%g %g", wf[0], wf[1]);
  op_harness_destroy(h);
}

Test(dpsgd, one_noise_per_run_and_a_fixed_seed_repeats) {
  double p[3] = {0, 0, 0}, g[3] = {0, 0, 0}, lr = 1;
  op_harness *h = dpsgd(RILL_DTYPE_FP64, p, g, &lr, 3);
  OK(op_harness_attr_float(h, "sigma", 2.0f));
  OK(op_harness_attr_float(h, "batch_size", 4.0f));
  OK(op_harness_attr_int(h, "seed", 99));
  OK(op_harness_run(h));
  const double *w = rill_tensor_ptr(op_harness_tensor(h, "w"));
  double first = w[0];
  cr_assert(first != 0 && w[1] == first && w[2] == first, "%g %g %g", w[0], w[1], w[2]);
  OK(op_harness_run(h));
  w = rill_tensor_ptr(op_harness_tensor(h, "w"));
  cr_assert(fabs(w[0] - 2 * first) < 1e-12, "the same seed gave %g then %g", first, w[0] - first);
  op_harness_destroy(h);
  /* unseeded: over many runs the steps -n / batch_size have std sigma / batch_size */
  h = dpsgd(RILL_DTYPE_FP64, p, g, &lr, 3);
  OK(op_harness_attr_float(h, "sigma", 2.0f));
  OK(op_harness_attr_float(h, "batch_size", 4.0f));
  double prev = 0, sum = 0, sq = 0;
  for (int i = 0; i < 4000; i++) {
    OK(op_harness_run(h));
    double now = ((const double *)rill_tensor_ptr(op_harness_tensor(h, "w")))[0], d = now - prev;
    prev = now;
    sum += d, sq += d * d;
  }
  double mean = sum / 4000, sd = sqrt(sq / 4000 - mean * mean);
  cr_assert(fabs(mean) < 0.03 && fabs(sd - 0.5) < 0.03, "mean %g std %g", mean, sd);
  op_harness_destroy(h);
}

Test(dpsgd, errors_name_op_and_variable) {
  double p[4] = {0}, g[3] = {0}, lr = 1;
  op_harness *h = harness("dpsgd");
  bind_input(h, "Param", "w", RILL_DTYPE_FP64, DIMS(4), p);
  bind_input(h, "Grad", "w@GRAD", RILL_DTYPE_FP64, DIMS(3), g);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP64, DIMS(1), &lr);
  OK(op_harness_output(h, "ParamOut", "w"));
  EXPECT_ERROR(op_harness_infer(h), "dpsgd", "Grad", "w@GRAD");
  op_harness_destroy(h);
  double g4[4] = {0};
  h = dpsgd(RILL_DTYPE_FP64, p, g4, &lr, 4);
  OK(op_harness_attr_float(h, "clip", 0.0f));
  EXPECT_ERROR(op_harness_run(h), "dpsgd", "clip", "w");
  op_harness_destroy(h);
  double lr2[2] = {1, 1};
  h = harness("dpsgd");
  bind_input(h, "Param", "w", RILL_DTYPE_FP64, DIMS(4), p);
  bind_input(h, "Grad", "w@GRAD", RILL_DTYPE_FP64, DIMS(4), g4);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP64, DIMS(2), lr2);
  OK(op_harness_output(h, "ParamOut", "w"));
  EXPECT_ERROR(op_harness_run(h), "dpsgd", "LearningRate", "lr");
  op_harness_destroy(h);
}
