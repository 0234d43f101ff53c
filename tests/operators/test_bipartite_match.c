/* bipartite_match: the greedy order on a hand-made matrix (largest first, each row and
 * column once, near-zero distances never matched), per_prediction's extra matches over
 * the threshold, instances by LoD (one empty), no LoD as one instance, a naive
 * reference on a larger random matrix (over 130 rows, Paddle's sorted variant); the
 * errors. */
#include "op_test.h"

static op_harness *bm_harness(const float *d, int64_t rows, int64_t cols, const uint64_t *lod,
                              size_t nl, const char *type, float thresh) {
  op_harness *h = harness("bipartite_match");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(rows, cols), d);
  if (lod) OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nl));
  OK(op_harness_input(h, "DistMat", "iou", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "ColToRowMatchIndices", "idx"));
  OK(op_harness_output(h, "ColToRowMatchDist", "dist"));
  if (type) OK(op_harness_attr_string(h, "match_type", type));
  OK(op_harness_attr_float(h, "dist_threshold", thresh));
  return h;
}

static void expect_ints(const int32_t *got, const int32_t *want, int64_t n) {
  for (int64_t i = 0; i < n; i++) cr_assert_eq(got[i], want[i], "[%lld] %d != %d", (long long)i, got[i], want[i]);
}

Test(bipartite_match, greedy_then_per_prediction) {
  /* 3 rows x 5 columns */
  const float d[] = {0.9f, 0.8f, 0.0f, 0.6f, 0.0f,
                     0.95f, 0.2f, 0.0f, 0.55f, 5e-7f,
                     0.1f, 0.7f, 0.0f, 0.3f, 0.4f};
  op_harness *h = bm_harness(d, 3, 5, NULL, 0, NULL, 0.5f);
  OK(op_harness_run(h));
  /* 0.95 (r1, c0), then 0.8 (r0, c1), then r2's best free column: 0.4 (c4) */
  const int32_t want[] = {1, 0, -1, -1, 2};
  const float wd[] = {0.95f, 0.8f, 0, 0, 0.4f};
  expect_dims(op_harness_tensor(h, "idx"), DIMS(1, 5));
  expect_ints(rill_tensor_ptr(op_harness_tensor(h, "idx")), want, 5);
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "dist")), wd, 5, 0);
  op_harness_destroy(h);
  h = bm_harness(d, 3, 5, NULL, 0, "per_prediction", 0.5f);
  OK(op_harness_run(h));
  /* c3 takes its best row over 0.5 (r0, 0.6); c2 has nothing */
  const int32_t wantp[] = {1, 0, -1, 0, 2};
  const float wdp[] = {0.95f, 0.8f, 0, 0.6f, 0.4f};
  expect_ints(rill_tensor_ptr(op_harness_tensor(h, "idx")), wantp, 5);
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "dist")), wdp, 5, 0);
  op_harness_destroy(h);
  h = bm_harness(d, 3, 5, NULL, 0, "per_prediction", 0.65f);
  OK(op_harness_run(h));
  expect_ints(rill_tensor_ptr(op_harness_tensor(h, "idx")), want, 5);
  op_harness_destroy(h);
}

Test(bipartite_match, instances_by_lod) {
  const float d[] = {0.2f, 0.6f, 0.7f,
                     0.9f, 0.1f, 0.4f,
                     0.3f, 0.8f, 0.0f};
  const uint64_t lod[] = {0, 2, 2, 3}; /* instance 1 is empty */
  op_harness *h = bm_harness(d, 3, 3, lod, 4, "per_prediction", 0.25f);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "idx"), DIMS(3, 3));
  /* instance 0: 0.9 (r1, c0), 0.7 (r0, c2); c1 extra: best 0.6 (r0) >= 0.25
   * instance 2: 0.8 (c1); c0 extra: 0.3 */
  const int32_t want[] = {1, 0, 0, -1, -1, -1, 0, 0, -1};
  const float wd[] = {0.9f, 0.6f, 0.7f, 0, 0, 0, 0.3f, 0.8f, 0};
  expect_ints(rill_tensor_ptr(op_harness_tensor(h, "idx")), want, 9);
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "dist")), wd, 9, 0);
  op_harness_destroy(h);
}

Test(bipartite_match, many_rows_against_reference) {
  enum { R = 140, C = 200 };
  float *d = malloc(sizeof(float) * R * C);
  for (int i = 0; i < R * C; i++) d[i] = (float)fabs(sin(i * 12.9898 + 78.233));
  op_harness *h = bm_harness(d, R, C, NULL, 0, NULL, 0.5f);
  OK(op_harness_run(h));
  const int32_t *idx = rill_tensor_ptr(op_harness_tensor(h, "idx"));
  /* reference: repeatedly the largest free pair */
  int32_t want[C];
  bool row_used[R] = {false};
  for (int j = 0; j < C; j++) want[j] = -1;
  for (;;) {
    int bi = -1, bj = -1;
    float best = 0;
    for (int i = 0; i < R; i++)
      for (int j = 0; j < C; j++)
        if (!row_used[i] && want[j] < 0 && d[i * C + j] > best) {
          best = d[i * C + j];
          bi = i;
          bj = j;
        }
    if (bi < 0) break;
    want[bj] = bi;
    row_used[bi] = true;
  }
  expect_ints(idx, want, C);
  op_harness_destroy(h);
  free(d);
}

Test(bipartite_match, errors_name_op_and_variable) {
  float d[6] = {0};
  op_harness *h = bm_harness(d, 2, 3, NULL, 0, "best", 0.5f);
  EXPECT_ERROR(op_harness_run(h), "bipartite_match", "match_type", "best");
  op_harness_destroy(h);
  h = harness("bipartite_match");
  bind_input(h, "DistMat", "iou3", RILL_DTYPE_FP32, DIMS(1, 2, 3), d);
  OK(op_harness_output(h, "ColToRowMatchIndices", "idx"));
  OK(op_harness_output(h, "ColToRowMatchDist", "dist"));
  EXPECT_ERROR(op_harness_run(h), "bipartite_match", "iou3", "[K, M]");
  op_harness_destroy(h);
  const uint64_t bad[] = {0, 5};
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(2, 3), d);
  size_t nl = 2;
  rill_status *st = rill_tensor_set_lod(t, 1, (const uint64_t *const[]){bad}, &nl);
  if (st) {
    rill_status_destroy(st); /* the tensor refuses a LoD beyond its rows itself */
  } else {
    h = harness("bipartite_match");
    OK(op_harness_input(h, "DistMat", "iou", t));
    OK(op_harness_output(h, "ColToRowMatchIndices", "idx"));
    OK(op_harness_output(h, "ColToRowMatchDist", "dist"));
    EXPECT_ERROR(op_harness_run(h), "bipartite_match", "iou", "LoD");
    op_harness_destroy(h);
  }
  op_harness_free_tensor(t);
}
