/* distributed_lookup_table: the checks made before any pserver is asked, and a lookup
 * of padding ids only, which needs no pserver. Lookups through real pservers are
 * tested end to end in tests/python/test_dist_runtime.py and the prefetch path of the
 * pserver loop in tests/rpc/test_pserver.c. */
#include "op_test.h"

#include "framework/data/scope.h"

static op_harness *lookup(const int64_t *ids, size_t n, const int64_t *sections, size_t nsec) {
  op_harness *h = harness("distributed_lookup_table");
  float w[10 * 3] = {0};
  bind_input(h, "Ids", "ids", RILL_DTYPE_INT64, (const int64_t[]){(int64_t)n, 1}, 2, ids);
  bind_input(h, "W", "emb", RILL_DTYPE_FP32, DIMS(10, 3), w);
  OK(op_harness_output(h, "Outputs", "out"));
  char *tables[2] = {"emb.block0", "emb.block1"};
  char *eps[2] = {"127.0.0.1:1", "127.0.0.1:2"};
  rill_attr_value tv = {.type = RILL_ATTR_STRINGS, .n = nsec, .list.strings = tables};
  rill_attr_value ev = {.type = RILL_ATTR_STRINGS, .n = nsec, .list.strings = eps};
  OK(op_harness_attr(h, "table_names", &tv));
  OK(op_harness_attr(h, "endpoints", &ev));
  OK(op_harness_attr_longs(h, "height_sections", sections, nsec));
  OK(op_harness_attr_long(h, "padding_idx", 7));
  return h;
}

Test(distributed_lookup_table, padding_ids_alone_give_zero_rows_without_a_pserver) {
  int64_t ids[3] = {7, 7, 7};
  op_harness *h = lookup(ids, 3, (const int64_t[]){4, 6}, 2);
  OK(op_harness_run(h));
  rill_variable *out = rill_scope_find(op_harness_scope(h), "out");
  expect_dims(&out->u.tensor, DIMS(3, 3));
  float zero[9] = {0};
  expect_close_f32(rill_tensor_ptr(&out->u.tensor), zero, 9, 0);
  op_harness_destroy(h);
}

Test(distributed_lookup_table, ids_outside_the_table_are_refused) {
  int64_t ids[3] = {1, 10, 7};
  op_harness *h = lookup(ids, 3, (const int64_t[]){4, 6}, 2);
  EXPECT_ERROR(op_harness_run(h), "distributed_lookup_table", "Ids (ids) holds 10 at 1",
               "outside the table's 10 rows");
  op_harness_destroy(h);
}

Test(distributed_lookup_table, sections_must_cover_the_table) {
  int64_t ids[1] = {7};
  op_harness *h = lookup(ids, 1, (const int64_t[]){4, 5}, 2);
  EXPECT_ERROR(op_harness_run(h), "height_sections add up to 9 rows but W has 10");
  op_harness_destroy(h);
  h = lookup(ids, 1, (const int64_t[]){10}, 1);
  char *two[2] = {"a", "b"};
  rill_attr_value ev = {.type = RILL_ATTR_STRINGS, .n = 2, .list.strings = two};
  OK(op_harness_attr(h, "endpoints", &ev));
  EXPECT_ERROR(op_harness_run(h), "1 table_names, 2 endpoints and 1 height_sections");
  op_harness_destroy(h);
}
