/* auc against the Mann-Whitney form of the bucketed ROC area, written here: the chance
 * that a positive's bucket is above a negative's, ties counting one half, over the last
 * slide_steps batches (or all of them). */
#include "op_test.h"

#define NT 9 /* num_thresholds: 10 buckets */
#define BATCHES 5
#define ROWS 12

static double ref_auc(const int *bucket, const int *label, int from, int to) {
  double above = 0, pairs = 0;
  for (int i = from * ROWS; i < to * ROWS; i++)
    for (int j = from * ROWS; j < to * ROWS; j++)
      if (label[i] && !label[j]) {
        pairs++;
        above += bucket[i] > bucket[j] ? 1.0 : bucket[i] == bucket[j] ? 0.5 : 0.0;
      }
  return pairs > 0 ? above / pairs : 0.0;
}

static void data(float *pred, int64_t *label64, int *bucket, int *label) {
  unsigned s = 12345u;
  for (int i = 0; i < BATCHES * ROWS; i++) {
    s = s * 1103515245u + 12345u;
    float p = (float)((s >> 8) % 1000u) / 999.0f;
    pred[2 * i] = 1 - p;
    pred[2 * i + 1] = p;
    bucket[i] = (int)(p * (float)NT);
    s = s * 1103515245u + 12345u;
    label[i] = (float)((s >> 8) % 1000u) / 1000.0f < p;
    label64[i] = label[i] ? 1 + i % 3 : 0; /* any nonzero label is positive */
  }
}

static void run(int slide) {
  float pred[BATCHES * ROWS * 2];
  int64_t label64[BATCHES * ROWS];
  int bucket[BATCHES * ROWS], label[BATCHES * ROWS];
  data(pred, label64, bucket, label);
  int64_t n = slide ? (slide + 1) * (NT + 1) + 1 : NT + 1;
  int64_t *zero = calloc((size_t)n, sizeof *zero);
  op_harness *h = harness("auc");
  OK(op_harness_attr_int(h, "num_thresholds", NT));
  OK(op_harness_attr_int(h, "slide_steps", slide));
  bind_input(h, "StatPos", "pos", RILL_DTYPE_INT64, DIMS(n), zero);
  bind_input(h, "StatNeg", "neg", RILL_DTYPE_INT64, DIMS(n), zero);
  OK(op_harness_output(h, "AUC", "auc"));
  OK(op_harness_output(h, "StatPosOut", "pos"));
  OK(op_harness_output(h, "StatNegOut", "neg"));
  for (int b = 0; b < BATCHES; b++) {
    bind_input(h, "Predict", "p", RILL_DTYPE_FP32, DIMS(ROWS, 2), pred + b * ROWS * 2);
    bind_input(h, "Label", "l", RILL_DTYPE_INT64, DIMS(ROWS, 1), label64 + b * ROWS);
    OK(op_harness_run(h));
    int from = slide && b + 1 > slide ? b + 1 - slide : 0;
    double want = ref_auc(bucket, label, from, b + 1);
    rill_tensor *auc = op_harness_tensor(h, "auc");
    cr_assert_eq(auc->dtype, RILL_DTYPE_FP64);
    cr_assert_float_eq(*(double *)rill_tensor_ptr(auc), want, 1e-12, "slide %d batch %d", slide, b);
  }
  if (slide) {
    const int64_t *pos = rill_tensor_ptr(op_harness_tensor(h, "pos"));
    cr_assert_eq(pos[n - 1], BATCHES, "the run count is last");
  }
  op_harness_destroy(h);
  free(zero);
}

Test(auc, accumulated_and_over_a_window) {
  run(0);
  run(1);
  run(2);
}

Test(auc, refuses_a_probability_outside_0_1_and_stats_of_the_wrong_size) {
  int64_t zero[NT + 1] = {0}, lab[2] = {1, 0};
  op_harness *h = harness("auc");
  OK(op_harness_attr_int(h, "num_thresholds", NT));
  OK(op_harness_attr_int(h, "slide_steps", 0));
  bind_input(h, "Predict", "p", RILL_DTYPE_FP64, DIMS(2, 2), (const double[]){0, 1.5, 1, 0});
  bind_input(h, "Label", "l", RILL_DTYPE_INT64, DIMS(2, 1), lab);
  bind_input(h, "StatPos", "pos", RILL_DTYPE_INT64, DIMS(NT + 1), zero);
  bind_input(h, "StatNeg", "neg", RILL_DTYPE_INT64, DIMS(NT + 1), zero);
  OK(op_harness_output(h, "AUC", "auc"));
  OK(op_harness_output(h, "StatPosOut", "pos"));
  OK(op_harness_output(h, "StatNegOut", "neg"));
  EXPECT_ERROR(op_harness_run(h), "auc", "Predict", "p", "outside [0, 1]");
  const int64_t *pos = rill_tensor_ptr(op_harness_tensor(h, "pos"));
  for (int i = 0; i <= NT; i++) cr_assert_eq(pos[i], 0, "nothing counted");
  OK(op_harness_attr_int(h, "slide_steps", 1));
  bind_input(h, "Predict", "p", RILL_DTYPE_FP64, DIMS(2, 2), (const double[]){0, 0.5, 1, 0});
  EXPECT_ERROR(op_harness_run(h), "auc", "StatPos", "pos", "holds 10 counts", "need 21");
  op_harness_destroy(h);
}
