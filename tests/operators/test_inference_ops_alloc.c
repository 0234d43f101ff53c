/* Out-of-memory sweeps over the inference ops whose kernels allocate scratch (conv3d's
 * column buffer, interp's index tables, group_norm's factors, set_value's converted
 * attribute values): every failing allocation gives an error and leaks nothing. */
#include "op_test.h"
#include "support/fail_alloc.h"

static rill_status *bind(op_harness *h, const char *slot, const char *name, rill_dtype dt,
                         const int64_t *d, size_t n) {
  float v[256];
  for (int i = 0; i < 256; i++) v[i] = (float)i * 0.125f;
  rill_tensor *t = op_harness_make(dt, d, n, dt == RILL_DTYPE_FP32 ? v : NULL);
  if (!t) return rill_error(RILL_OUT_OF_MEMORY, "out of memory making %s", name);
  rill_status *st = op_harness_input(h, slot, name, t);
  op_harness_free_tensor(t);
  return st;
}

static rill_status *run_conv3d(void *ctx) {
  (void)ctx;
  op_harness *h;
  RILL_TRY(op_harness_create("conv3d", &h));
  rill_status *st = bind(h, "Input", "x", RILL_DTYPE_FP32, DIMS(1, 2, 3, 3, 3));
  if (!st) st = bind(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(2, 2, 3, 1, 1));
  if (!st) st = op_harness_output(h, "Output", "y");
  if (!st) st = op_harness_attr_ints(h, "paddings", (const int32_t[]){1, 0, 0}, 3);
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

static rill_status *run_interp(void *ctx) {
  op_harness *h;
  RILL_TRY(op_harness_create(ctx, &h));
  rill_status *st = bind(h, "X", "x", RILL_DTYPE_FP32, DIMS(1, 2, 3, 4));
  if (!st) st = op_harness_output(h, "Out", "y");
  if (!st) st = op_harness_attr_int(h, "out_h", 5);
  if (!st) st = op_harness_attr_int(h, "out_w", 7);
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

static rill_status *run_group_norm(void *ctx) {
  (void)ctx;
  op_harness *h;
  RILL_TRY(op_harness_create("group_norm", &h));
  rill_status *st = bind(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 4, 3));
  if (!st) st = op_harness_output(h, "Y", "y");
  if (!st) st = op_harness_attr_int(h, "groups", 2);
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

static rill_status *run_set_value(void *ctx) {
  (void)ctx;
  op_harness *h;
  RILL_TRY(op_harness_create("set_value", &h));
  rill_status *st = bind(h, "Input", "x", RILL_DTYPE_FP32, DIMS(3, 4));
  if (!st) st = op_harness_output(h, "Out", "x");
  if (!st) st = op_harness_attr_ints(h, "axes", (const int32_t[]){1}, 1);
  if (!st) st = op_harness_attr_longs(h, "starts", (const int64_t[]){0}, 1);
  if (!st) st = op_harness_attr_longs(h, "ends", (const int64_t[]){2}, 1);
  if (!st) st = op_harness_attr_longs(h, "shape", (const int64_t[]){1}, 1);
  float one = 1.0f;
  rill_attr_value v = {.type = RILL_ATTR_FLOATS, .n = 1};
  v.list.floats = &one;
  if (!st) st = op_harness_attr(h, "fp32_values", &v);
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

Test(inference_ops_alloc, kernels_fail_cleanly_at_every_allocation) {
  cr_assert_null(rill_registry_init());
  struct {
    const char *name;
    fail_alloc_op op;
    void *ctx;
  } runs[] = {{"conv3d", run_conv3d, NULL},
              {"nearest_interp_v2", run_interp, "nearest_interp_v2"},
              {"bilinear_interp", run_interp, "bilinear_interp"},
              {"group_norm", run_group_norm, NULL},
              {"set_value", run_set_value, NULL}};
  for (size_t i = 0; i < RILL_COUNTOF(runs); i++) {
    char why[512] = "";
    long n = fail_alloc_sweep(runs[i].op, NULL, runs[i].ctx, 5000, false, why, sizeof why);
    fail_alloc_uninstall();
    cr_assert_geq(n, 5, "%s: %ld failing runs: %s", runs[i].name, n, why);
  }
}
