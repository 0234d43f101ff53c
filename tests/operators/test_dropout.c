#include "framework/base/std_random.h"
#include "nn_test.h"

typedef struct do_cfg {
  float p;
  bool upscale, is_test, fix;
  int32_t seed;
} do_cfg;

static void set_do_attrs(op_harness *h, const void *arg) {
  const do_cfg *c = arg;
  OK(op_harness_attr_float(h, "dropout_prob", c->p));
  if (c->upscale) OK(op_harness_attr_string(h, "dropout_implementation", "upscale_in_train"));
  if (c->is_test) OK(op_harness_attr_bool(h, "is_test", true));
  if (c->fix) OK(op_harness_attr_bool(h, "fix_seed", true));
  OK(op_harness_attr_int(h, "seed", c->seed));
}

static op_harness *dropout_h(const do_cfg *c, rill_dtype dt, const void *x, int64_t n) {
  op_harness *h = harness("dropout");
  bind_input(h, "X", "x", dt, DIMS(n), x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Mask", "mask"));
  set_do_attrs(h, c);
  return h;
}

/* Out against X and the mask; returns the number dropped. */
static int64_t check_out(op_harness *h, const do_cfg *c, const double *x, int64_t n, bool f64) {
  rill_tensor *o = op_harness_tensor(h, "out"), *m = op_harness_tensor(h, "mask");
  cr_assert_eq(m->dtype, RILL_DTYPE_UINT8);
  const uint8_t *mp = rill_tensor_ptr(m);
  int64_t dropped = 0;
  for (int64_t i = 0; i < n; i++) {
    double k = c->is_test ? (c->upscale ? 1 : 1 - c->p)
                          : (mp[i] ? (c->upscale ? 1 / (1 - (double)c->p) : 1) : 0);
    double want = x[i] * k, got = f64 ? ((double *)rill_tensor_ptr(o))[i] : ((float *)rill_tensor_ptr(o))[i];
    cr_assert(fabs(got - want) <= 1e-6 * (1 + fabs(want)), "[%lld] %g != %g", (long long)i, got, want);
    cr_assert(mp[i] <= 1);
    dropped += !mp[i];
  }
  return dropped;
}

Test(dropout, fixed_seed_masks_are_reproducible_and_follow_the_generator) {
  enum { N = 4000 };
  double *x = malloc(N * sizeof *x);
  fill_rand(x, N, 61);
  for (int up = 0; up < 2; up++)
    for (int dt = 0; dt < 2; dt++) {
      do_cfg c = {0.3f, up, false, true, 1234};
      float *xf = to_f32(x, N);
      op_harness *h = dropout_h(&c, dt ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32, dt ? (void *)x : (void *)xf, N);
      OK(op_harness_run(h));
      int64_t dropped = check_out(h, &c, x, N, dt);
      /* the mask is minstd_rand's: element i dropped when its draw i < p */
      rill_minstd r;
      rill_minstd_seed(&r, 1234);
      const uint8_t *mp = rill_tensor_ptr(op_harness_tensor(h, "mask"));
      for (int64_t i = 0; i < N; i++) cr_assert_eq(mp[i], rill_minstd_canonical_fp32(&r) < 0.3f ? 0 : 1);
      cr_assert(dropped > N * 0.26 && dropped < N * 0.34, "dropped %lld of %d", (long long)dropped, N);
      uint8_t *first = malloc(N);
      memcpy(first, mp, N);
      OK(op_harness_run(h));
      cr_assert_eq(memcmp(first, rill_tensor_ptr(op_harness_tensor(h, "mask")), N), 0);
      free(first);
      op_harness_destroy(h);
      free(xf);
    }
  free(x);
}

Test(dropout, unfixed_runs_draw_new_masks_and_seed_input_overrides) {
  enum { N = 512 };
  double x[N];
  fill_rand(x, N, 62);
  do_cfg c = {0.5f, false, false, false, 7};
  op_harness *h = dropout_h(&c, RILL_DTYPE_FP64, x, N);
  OK(op_harness_run(h));
  uint8_t first[N];
  memcpy(first, rill_tensor_ptr(op_harness_tensor(h, "mask")), N);
  OK(op_harness_run(h));
  cr_assert_neq(memcmp(first, rill_tensor_ptr(op_harness_tensor(h, "mask")), N), 0);
  check_out(h, &c, x, N, true);
  op_harness_destroy(h);

  /* Seed input: the mask of that seed, whatever fix_seed says */
  h = dropout_h(&c, RILL_DTYPE_FP64, x, N);
  int32_t seed = 99;
  bind_input(h, "Seed", "seed", RILL_DTYPE_INT32, DIMS(1), &seed);
  OK(op_harness_run(h));
  rill_minstd r;
  rill_minstd_seed(&r, 99);
  const uint8_t *mp = rill_tensor_ptr(op_harness_tensor(h, "mask"));
  for (int i = 0; i < N; i++) cr_assert_eq(mp[i], rill_minstd_canonical_fp32(&r) < 0.5f ? 0 : 1);
  op_harness_destroy(h);

  /* Paddle 1.8.5's own masks: seed 7 at p 0.5, and a negative Seed input (-3, which
   * Paddle hands the engine sign-extended) at p 0.6 */
  static const uint8_t paddle7[12] = {0, 1, 0, 0, 1, 0, 1, 1, 1, 0, 1, 1};
  static const uint8_t paddle_neg3[12] = {0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0};
  const uint8_t *want[2] = {paddle7, paddle_neg3};
  int32_t seeds[2] = {7, -3};
  float probs[2] = {0.5f, 0.6f};
  for (int k = 0; k < 2; k++) {
    do_cfg ck = {probs[k], false, false, true, seeds[k]};
    h = dropout_h(&ck, RILL_DTYPE_FP64, x, 12);
    if (k == 1) bind_input(h, "Seed", "seed", RILL_DTYPE_INT32, DIMS(1), &seeds[k]);
    OK(op_harness_run(h));
    cr_assert_arr_eq(rill_tensor_ptr(op_harness_tensor(h, "mask")), want[k], 12, "seed %d", seeds[k]);
    op_harness_destroy(h);
  }
}

Test(dropout, inference_and_extreme_probabilities) {
  enum { N = 300 };
  double x[N];
  fill_rand(x, N, 63);
  const do_cfg cases[] = {
      {0.25f, false, true, false, 0}, {0.25f, true, true, false, 0}, {0.0f, false, false, true, 1},
      {0.0f, true, false, true, 1},   {1.0f, false, false, true, 1}, {1.0f, true, false, true, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    op_harness *h = dropout_h(&cases[i], RILL_DTYPE_FP64, x, N);
    OK(op_harness_run(h));
    int64_t dropped = check_out(h, &cases[i], x, N, true);
    if (!cases[i].is_test) cr_assert_eq(dropped, cases[i].p == 1.0f ? N : 0);
    op_harness_destroy(h);
  }
}

static void do_grad(const do_cfg *c) {
  double x[24];
  fill_rand(x, 24, 64);
  fd_case fc = {.op = "dropout", .nin = 1, .out_slots = {"Out", "Mask"}, .out_names = {"out", "mask"},
                .nout = 2, .attrs = set_do_attrs, .arg = c, .tol = 1e-6};
  fc.in[0] = (fd_input){"X", "x", {4, 6}, 2, x, true};
  fd_check(&fc);
}

Test(dropout, gradients_match_finite_differences) {
  do_grad(&(do_cfg){0.4f, false, false, true, 5});
  do_grad(&(do_cfg){0.4f, true, false, true, 5});
  do_grad(&(do_cfg){0.4f, false, true, true, 5});
  do_grad(&(do_cfg){0.4f, true, true, true, 5});
}

Test(dropout, bad_attributes_fail_at_inference) {
  double x[4] = {0};
  op_harness *h = dropout_h(&(do_cfg){1.5f, false, false, false, 0}, RILL_DTYPE_FP64, x, 4);
  EXPECT_ERROR(op_harness_infer(h), "dropout", "dropout_prob");
  OK(op_harness_attr_float(h, "dropout_prob", 0.5f));
  OK(op_harness_attr_string(h, "dropout_implementation", "upscale"));
  EXPECT_ERROR(op_harness_infer(h), "dropout", "dropout_implementation", "upscale");
  op_harness_destroy(h);
  h = harness("dropout");
  bind_input(h, "X", "ids", RILL_DTYPE_INT64, DIMS(4), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "dropout", "X (ids)", "int64");
  op_harness_destroy(h);
}
