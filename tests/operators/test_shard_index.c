/* shard_index: Paddle's documented example, every shard of int32 and int64 indices
 * against a naive reference (the shard found by walking the block bounds), the shape and
 * LoD kept, and the errors naming op and variable. */
#include "op_test.h"

static op_harness *si_harness(rill_dtype dt, const int64_t *d, size_t nd, const void *x, int num,
                              int ns, int id, int ignore) {
  op_harness *h = harness("shard_index");
  bind_input(h, "X", "label", dt, d, nd, x);
  OK(op_harness_output(h, "Out", "shard_label"));
  OK(op_harness_attr_int(h, "index_num", num));
  OK(op_harness_attr_int(h, "nshards", ns));
  OK(op_harness_attr_int(h, "shard_id", id));
  OK(op_harness_attr_int(h, "ignore_value", ignore));
  return h;
}

Test(shard_index, paddle_doc_example) {
  /* 20 classes over 2 shards of 10: shard 0 keeps 1 and 6, shard 1 maps 12, 19 to 2, 9 */
  const int64_t x[4] = {1, 6, 12, 19};
  const int64_t want[2][4] = {{1, 6, -1, -1}, {-1, -1, 2, 9}};
  for (int id = 0; id < 2; id++) {
    op_harness *h = si_harness(RILL_DTYPE_INT64, DIMS(4, 1), x, 20, 2, id, -1);
    OK(op_harness_run(h));
    const rill_tensor *o = op_harness_tensor(h, "shard_label");
    cr_assert_eq(o->dtype, RILL_DTYPE_INT64);
    expect_dims(o, DIMS(4, 1));
    const int64_t *got = rill_tensor_ptr(o);
    for (int i = 0; i < 4; i++) cr_assert_eq(got[i], want[id][i], "shard %d [%d]", id, i);
    op_harness_destroy(h);
  }
}

Test(shard_index, every_shard_matches_reference) {
  /* 23 classes over 4 shards: blocks of 6, the last one short (18..22) */
  enum { N = 23, NS = 4 };
  int32_t x[2 * N];
  for (int i = 0; i < 2 * N; i++) x[i] = (i * 7) % N;
  for (int id = 0; id < NS; id++) {
    op_harness *h = si_harness(RILL_DTYPE_INT32, DIMS(2, N, 1), x, N, NS, id, -5);
    OK(op_harness_run(h));
    const rill_tensor *o = op_harness_tensor(h, "shard_label");
    expect_dims(o, DIMS(2, N, 1));
    const int32_t *got = rill_tensor_ptr(o);
    for (int i = 0; i < 2 * N; i++) {
      int lo = 0, shard = 0;
      while (x[i] >= lo + 6) lo += 6, shard++;
      int32_t want = shard == id ? x[i] - lo : -5;
      cr_assert_eq(got[i], want, "shard %d [%d]: %d", id, i, got[i]);
    }
    op_harness_destroy(h);
  }
}

Test(shard_index, keeps_lod) {
  const int64_t x[3] = {0, 5, 2};
  op_harness *h = harness("shard_index");
  rill_tensor *t = op_harness_make(RILL_DTYPE_INT64, DIMS(3, 1), x);
  static const uint64_t lod[] = {0, 1, 3};
  const uint64_t *levels[1] = {lod};
  size_t counts[1] = {3};
  OK(rill_tensor_set_lod(t, 1, levels, counts));
  OK(op_harness_input(h, "X", "label", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "Out", "shard_label"));
  OK(op_harness_attr_int(h, "index_num", 6));
  OK(op_harness_attr_int(h, "nshards", 3));
  OK(op_harness_attr_int(h, "shard_id", 1));
  OK(op_harness_run(h));
  const rill_tensor *o = op_harness_tensor(h, "shard_label");
  const int64_t *got = rill_tensor_ptr(o);
  cr_assert(got[0] == -1 && got[1] == -1 && got[2] == 0);
  cr_assert_eq(o->lod.nlevels, 1);
  cr_assert(o->lod.levels[0].n == 3 && o->lod.levels[0].offsets[1] == 1);
  op_harness_destroy(h);
}

Test(shard_index, errors_name_op_and_variable) {
  const int64_t x[4] = {1, 6, 20, 3};
  op_harness *h = si_harness(RILL_DTYPE_INT64, DIMS(4, 1), x, 20, 2, 0, -1);
  EXPECT_ERROR(op_harness_run(h), "shard_index", "label", "20", "index_num");
  op_harness_destroy(h);
  const int64_t neg[2] = {-1, 0};
  h = si_harness(RILL_DTYPE_INT64, DIMS(2, 1), neg, 20, 2, 0, -1);
  EXPECT_ERROR(op_harness_run(h), "shard_index", "label", "-1");
  op_harness_destroy(h);
  h = si_harness(RILL_DTYPE_INT64, DIMS(2, 1), x, 20, 2, 2, -1);
  EXPECT_ERROR(op_harness_run(h), "shard_index", "shard_id", "2");
  op_harness_destroy(h);
  h = si_harness(RILL_DTYPE_INT64, DIMS(2, 1), x, 0, 2, 0, -1);
  EXPECT_ERROR(op_harness_run(h), "shard_index", "index_num");
  op_harness_destroy(h);
  h = si_harness(RILL_DTYPE_INT64, DIMS(2, 2), x, 20, 2, 0, -1);
  EXPECT_ERROR(op_harness_run(h), "shard_index", "label", "last dim 1");
  op_harness_destroy(h);
  const float f[2] = {1, 2};
  h = si_harness(RILL_DTYPE_FP32, DIMS(2, 1), f, 20, 2, 0, -1);
  EXPECT_ERROR(op_harness_run(h), "shard_index", "label", "int32 or int64");
  op_harness_destroy(h);
}
