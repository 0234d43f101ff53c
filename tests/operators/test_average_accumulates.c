/* average_accumulates against Paddle 1.8.5's kernel run in place, written here: the sums
 * and counters over steps that restart the window (min 2, max 3, rate 0.5), the move of
 * sum_1 into sum_2 every 16384 steps, separate outputs giving the in-place results, and
 * the errors. */
#include <stdio.h>

#include "op_test.h"

typedef struct acc {
  double s1[2], s2[2], s3[2];
  int64_t k, old, n;
} acc;

/* One step of the in-place kernel. */
static void reference(acc *a, const double *p, float rate, int64_t lo, int64_t hi) {
  a->n++, a->k++;
  for (int i = 0; i < 2; i++) a->s1[i] += p[i];
  if (a->n % 16384 == 0)
    for (int i = 0; i < 2; i++) a->s2[i] += a->s1[i], a->s1[i] = 0;
  int64_t by_rate = (int64_t)((float)a->n * rate);
  if (a->k >= lo && a->k >= (hi < by_rate ? hi : by_rate)) {
    for (int i = 0; i < 2; i++) a->s3[i] = a->s1[i] + a->s2[i], a->s1[i] = a->s2[i] = 0;
    a->old = a->k, a->k = 0;
  }
}

static op_harness *make(const acc *a, const double *p, bool in_place) {
  op_harness *h = harness("average_accumulates");
  bind_input(h, "param", "w", RILL_DTYPE_FP64, DIMS(2), p);
  const char *sums[3] = {"s1", "s2", "s3"}, *cnt[3] = {"k", "old", "n"};
  const double *sv[3] = {a->s1, a->s2, a->s3};
  const int64_t *cv[3] = {&a->k, &a->old, &a->n};
  const char *ins[6] = {"in_sum_1", "in_sum_2", "in_sum_3", "in_num_accumulates",
                        "in_old_num_accumulates", "in_num_updates"};
  const char *outs[6] = {"out_sum_1", "out_sum_2", "out_sum_3", "out_num_accumulates",
                         "out_old_num_accumulates", "out_num_updates"};
  char buf[6][16];
  for (int i = 0; i < 3; i++) {
    bind_input(h, ins[i], sums[i], RILL_DTYPE_FP64, DIMS(2), sv[i]);
    bind_input(h, ins[3 + i], cnt[i], RILL_DTYPE_INT64, DIMS(1), cv[i]);
  }
  for (int i = 0; i < 6; i++) {
    const char *name = i < 3 ? sums[i] : cnt[i - 3];
    snprintf(buf[i], sizeof buf[i], "%s%s", name, in_place ? "" : "_out");
    OK(op_harness_output(h, outs[i], buf[i]));
  }
  OK(op_harness_attr_float(h, "average_window", 0.5f));
  OK(op_harness_attr_long(h, "min_average_window", 2));
  OK(op_harness_attr_long(h, "max_average_window", 3));
  return h;
}

static void expect_state(op_harness *h, const acc *a, const char *suffix) {
  char n[16];
  const char *sums[3] = {"s1", "s2", "s3"}, *cnt[3] = {"k", "old", "n"};
  const double *sv[3] = {a->s1, a->s2, a->s3};
  const int64_t cv[3] = {a->k, a->old, a->n};
  for (int i = 0; i < 3; i++) {
    snprintf(n, sizeof n, "%s%s", sums[i], suffix);
    const double *got = rill_tensor_ptr(op_harness_tensor(h, n));
    for (int j = 0; j < 2; j++)
      cr_assert(fabs(got[j] - sv[i][j]) < 1e-12, "%s[%d] = %g, want %g", n, j, got[j], sv[i][j]);
    snprintf(n, sizeof n, "%s%s", cnt[i], suffix);
    int64_t c = *(const int64_t *)rill_tensor_ptr(op_harness_tensor(h, n));
    cr_assert_eq(c, cv[i], "%s = %lld, want %lld", n, (long long)c, (long long)cv[i]);
  }
}

Test(average_accumulates, windows_over_steps_in_place) {
  acc a, want;
  memset(&a, 0, sizeof a);
  memset(&want, 0, sizeof want);
  double p[2] = {1.5, -2};
  op_harness *h = make(&a, p, true);
  OK(op_harness_infer(h));
  for (int step = 0; step < 9; step++) {
    p[0] += 0.25 * step, p[1] -= 0.5;
    memcpy(rill_tensor_ptr(op_harness_tensor(h, "w")), p, sizeof p);
    OK(op_harness_run(h));
    reference(&want, p, 0.5f, 2, 3);
    expect_state(h, &want, "");
  }
  cr_assert(want.old > 0 && want.s3[0] != 0, "the window never restarted");
  op_harness_destroy(h);
}

Test(average_accumulates, the_16384th_step_moves_sum_1_and_separate_outputs_agree) {
  acc a = {{3, 4}, {1, 1}, {0, 0}, 1, 0, 16383}, want = a;
  double p[2] = {0.5, 0.25};
  op_harness *h = make(&a, p, false);
  OK(op_harness_attr_long(h, "min_average_window", 100));
  OK(op_harness_attr_long(h, "max_average_window", 200));
  OK(op_harness_run(h));
  reference(&want, p, 0.5f, 100, 200);
  cr_assert(want.s1[0] == 0 && want.s2[0] == 4.5, "reference %g %g", want.s1[0], want.s2[0]);
  expect_state(h, &want, "_out");
  op_harness_destroy(h);
}

Test(average_accumulates, errors_name_op_and_variable) {
  acc a;
  memset(&a, 0, sizeof a);
  double p[2] = {1, 2};
  op_harness *h = make(&a, p, true);
  OK(op_harness_attr_long(h, "min_average_window", 5));
  EXPECT_ERROR(op_harness_infer(h), "average_accumulates", "min_average_window", "w");
  op_harness_destroy(h);
  h = make(&a, p, true);
  rill_dims three = {.n = 1, .d = {3}}, one = {.n = 1, .d = {1}};
  OK(rill_tensor_alloc(op_harness_tensor(h, "s2"), RILL_DTYPE_FP64, &three));
  EXPECT_ERROR(op_harness_run(h), "average_accumulates", "in_sum_2", "s2");
  op_harness_destroy(h);
  h = make(&a, p, true);
  OK(rill_tensor_alloc(op_harness_tensor(h, "k"), RILL_DTYPE_INT32, &one));
  EXPECT_ERROR(op_harness_run(h), "average_accumulates", "in_num_accumulates", "k", "int64");
  op_harness_destroy(h);
}
