/* distributed_lookup_table: the checks made before any pserver is asked, a lookup of
 * padding ids only (no pserver needed), and a lookup through a pserver loop in this
 * process (rows in the ids' order, each distinct id asked once). Whole jobs are tested
 * in tests/python/test_dist_runtime.py. */
#include "op_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "framework/data/scope.h"
#include "framework/rpc/dist.h"

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

/* A pserver in this process holding block 1 (rows 4..9) of a 10 x 3 table whose row r
 * is (10r, 10r+1, 10r+2); its prefetch "block" answers each local id with that row and
 * counts the ids it was asked. */
typedef struct table_server {
  rill_scope *scope;
  rill_pserver_opts o;
  pthread_t th;
  rill_status *result;
  char ep[64];
  atomic_bool bound;
  atomic_int asked;
} table_server;

static rill_status *table_rows(void *arg, int32_t block, rill_scope *scope) {
  table_server *t = arg;
  cr_assert_eq(block, 2);
  rill_variable *ids = rill_scope_find(scope, "emb.block1@PREFETCH_IDS"), *rows = NULL;
  int64_t n = rill_tensor_numel(&ids->u.tensor);
  const int64_t *id = rill_tensor_ptr(&ids->u.tensor);
  OK(rill_scope_var(scope, "emb.block1@PREFETCH_ROWS", &rows));
  rill_dims d = {.n = 2, .d = {n, 3}};
  OK(rill_tensor_alloc(rill_variable_tensor(rows), RILL_DTYPE_FP32, &d));
  float *r = rill_tensor_ptr(&rows->u.tensor);
  for (int64_t i = 0; i < n; i++)
    for (int j = 0; j < 3; j++) r[i * 3 + j] = (float)(10 * (id[i] + 4) + j);
  atomic_fetch_add(&t->asked, (int)n);
  return NULL;
}

static void table_bound(void *arg, const char *ep) {
  table_server *t = arg;
  snprintf(t->ep, sizeof t->ep, "%s", ep);
  atomic_store(&t->bound, true);
}

static void *table_main(void *arg) {
  table_server *t = arg;
  t->result = rill_pserver_serve(&t->o, NULL);
  return NULL;
}

Test(distributed_lookup_table, rows_come_back_in_the_ids_order_each_asked_once) {
  static const char *names[1] = {"emb.block1@PREFETCH_IDS"};
  static const int32_t blocks[1] = {2};
  table_server t;
  memset(&t, 0, sizeof t);
  OK(rill_scope_create(NULL, &t.scope));
  t.o = (rill_pserver_opts){.endpoint = "127.0.0.1:0", .fanin = 1, .mode = RILL_PSERVER_ASYNC,
                            .lr_block = -1, .deadline_ms = 10000, .threads = 1,
                            .scope = t.scope, .nprefetch = 1, .prefetch_names = names,
                            .prefetch_blocks = blocks, .run_block = table_rows, .run_arg = &t,
                            .on_bound = table_bound, .bound_arg = &t};
  cr_assert_eq(pthread_create(&t.th, NULL, table_main, &t), 0);
  while (!atomic_load(&t.bound)) usleep(1000);

  /* Block 0 (rows 0..3) is never asked: these ids all lie in block 1 or are padding. */
  int64_t ids[6] = {9, 7, 4, 9, 7, 9};
  op_harness *h = lookup(ids, 6, (const int64_t[]){4, 6}, 2);
  char *eps[2] = {"127.0.0.1:1", t.ep};
  rill_attr_value ev = {.type = RILL_ATTR_STRINGS, .n = 2, .list.strings = eps};
  OK(op_harness_attr(h, "endpoints", &ev));
  OK(op_harness_run(h));
  rill_variable *out = rill_scope_find(op_harness_scope(h), "out");
  expect_dims(&out->u.tensor, DIMS(6, 3));
  float want[18] = {90, 91, 92, 0, 0, 0, 40, 41, 42, 90, 91, 92, 0, 0, 0, 90, 91, 92};
  expect_close_f32(rill_tensor_ptr(&out->u.tensor), want, 18, 0);
  cr_assert_eq(atomic_load(&t.asked), 2, "rows 9 and 4 asked once each, not %d ids",
               atomic_load(&t.asked));
  op_harness_destroy(h);

  rill_rpc_client *c;
  OK(rill_dist_client(&c));
  OK(rill_rpc_send_notice(c, t.ep, RILL_RPC_COMPLETE, 0));
  pthread_join(t.th, NULL);
  OK(t.result);
  rill_dist_shutdown();
  rill_scope_destroy(t.scope);
}
