/* target_assign: matched priors copy X[lod[i] + id][j % P], unmatched ones get
 * mismatch_value and weight 0, negatives get mismatch_value and weight 1; int32 labels
 * with P = 1; the errors (no LoD, an index beyond its instance, a negative beyond M). */
#include "op_test.h"

static rill_tensor *with_lod(rill_dtype dt, const int64_t *dims, size_t nd, const void *data,
                             const uint64_t *lod, size_t nl) {
  rill_tensor *t = op_harness_make(dt, dims, nd, data);
  cr_assert_not_null(t);
  if (lod) OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nl));
  return t;
}

static void input(op_harness *h, const char *slot, const char *name, rill_tensor *t) {
  OK(op_harness_input(h, slot, name, t));
  op_harness_free_tensor(t);
}

Test(target_assign, gathers_with_lod) {
  enum { ROWS = 5, P = 4, K = 2, N = 2, M = 4 };
  float x[ROWS * P * K];
  for (int i = 0; i < ROWS * P * K; i++) x[i] = (float)i;
  const uint64_t lod[] = {0, 3, 5};
  const int32_t match[N * M] = {2, -1, 0, 1, -1, 1, 0, -1};
  op_harness *h = harness("target_assign");
  input(h, "X", "enc", with_lod(RILL_DTYPE_FP32, DIMS(ROWS, P, K), x, lod, 3));
  bind_input(h, "MatchIndices", "match", RILL_DTYPE_INT32, DIMS(N, M), match);
  OK(op_harness_output(h, "Out", "tgt"));
  OK(op_harness_output(h, "OutWeight", "wt"));
  OK(op_harness_attr_int(h, "mismatch_value", -3));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "tgt"), DIMS(N, M, K));
  expect_dims(op_harness_tensor(h, "wt"), DIMS(N, M, 1));
  const float *o = rill_tensor_ptr(op_harness_tensor(h, "tgt"));
  const float *w = rill_tensor_ptr(op_harness_tensor(h, "wt"));
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++) {
      int id = match[i * M + j];
      for (int k = 0; k < K; k++) {
        float want = id < 0 ? -3.f : x[(((int)lod[i] + id) * P + j % P) * K + k];
        cr_assert_float_eq(o[(i * M + j) * K + k], want, 0, "[%d, %d, %d]", i, j, k);
      }
      cr_assert_float_eq(w[i * M + j], id < 0 ? 0.f : 1.f, 0);
    }
  op_harness_destroy(h);
}

Test(target_assign, labels_with_negatives) {
  const int32_t labels[5] = {7, 8, 9, 4, 5};
  const uint64_t lod[] = {0, 3, 5}, nlod[] = {0, 1, 3};
  const int32_t match[2 * 3] = {1, -1, -1, -1, 0, -1};
  const int32_t neg[3] = {2, 0, 2};
  op_harness *h = harness("target_assign");
  input(h, "X", "gt_label", with_lod(RILL_DTYPE_INT32, DIMS(5, 1, 1), labels, lod, 3));
  bind_input(h, "MatchIndices", "match", RILL_DTYPE_INT32, DIMS(2, 3), match);
  input(h, "NegIndices", "neg", with_lod(RILL_DTYPE_INT32, DIMS(3, 1), neg, nlod, 3));
  OK(op_harness_output(h, "Out", "tgt"));
  OK(op_harness_output(h, "OutWeight", "wt"));
  OK(op_harness_run(h)); /* mismatch_value defaults to 0 */
  const int32_t want[] = {8, 0, 0, 0, 4, 0};
  const float ww[] = {1, 0, 1, 1, 1, 1};
  const int32_t *o = rill_tensor_ptr(op_harness_tensor(h, "tgt"));
  for (int i = 0; i < 6; i++) cr_assert_eq(o[i], want[i], "[%d] %d", i, o[i]);
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "wt")), ww, 6, 0);
  op_harness_destroy(h);
}

Test(target_assign, errors_name_op_and_variable) {
  float x[3 * 2 * 1] = {0};
  const uint64_t lod[] = {0, 1, 3};
  const int32_t match[2 * 2] = {0, 1, 1, 0}; /* instance 0 has 1 row: id 1 is out */
  op_harness *h = harness("target_assign");
  input(h, "X", "enc", with_lod(RILL_DTYPE_FP32, DIMS(3, 2, 1), x, lod, 3));
  bind_input(h, "MatchIndices", "match", RILL_DTYPE_INT32, DIMS(2, 2), match);
  OK(op_harness_output(h, "Out", "tgt"));
  OK(op_harness_output(h, "OutWeight", "wt"));
  EXPECT_ERROR(op_harness_run(h), "target_assign", "match", "enc", "1 rows");
  op_harness_destroy(h);
  h = harness("target_assign");
  input(h, "X", "enc_nolod", with_lod(RILL_DTYPE_FP32, DIMS(3, 2, 1), x, NULL, 0));
  bind_input(h, "MatchIndices", "match", RILL_DTYPE_INT32, DIMS(2, 2), match);
  OK(op_harness_output(h, "Out", "tgt"));
  OK(op_harness_output(h, "OutWeight", "wt"));
  EXPECT_ERROR(op_harness_run(h), "target_assign", "enc_nolod", "LoD");
  op_harness_destroy(h);
  const int32_t ok_match[2 * 2] = {0, -1, 1, 0}, neg[1] = {2};
  const uint64_t nlod[] = {0, 1, 1};
  h = harness("target_assign");
  input(h, "X", "enc", with_lod(RILL_DTYPE_FP32, DIMS(3, 2, 1), x, lod, 3));
  bind_input(h, "MatchIndices", "match", RILL_DTYPE_INT32, DIMS(2, 2), ok_match);
  input(h, "NegIndices", "neg", with_lod(RILL_DTYPE_INT32, DIMS(1, 1), neg, nlod, 3));
  OK(op_harness_output(h, "Out", "tgt"));
  OK(op_harness_output(h, "OutWeight", "wt"));
  EXPECT_ERROR(op_harness_run(h), "target_assign", "neg", "2");
  op_harness_destroy(h);
  h = harness("target_assign");
  input(h, "X", "enc2d", with_lod(RILL_DTYPE_FP32, DIMS(3, 2), x, lod, 3));
  bind_input(h, "MatchIndices", "match", RILL_DTYPE_INT32, DIMS(2, 2), ok_match);
  OK(op_harness_output(h, "Out", "tgt"));
  OK(op_harness_output(h, "OutWeight", "wt"));
  EXPECT_ERROR(op_harness_infer(h), "target_assign", "enc2d", "[rows, P, K]");
  op_harness_destroy(h);
}
