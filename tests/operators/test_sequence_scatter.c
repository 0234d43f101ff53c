/* sequence_scatter against a reference written here (float64, float32, int64; repeated
 * ids add up; an empty sequence leaves its row), its gradients by finite differences,
 * sequence_erase (int32 and int64, two LoD levels, everything erased); errors. */
#include "op_test.h"
#include "support/grad_check.h"

static const uint64_t ids_lod[] = {0, 3, 3, 6}; /* row 1 gets nothing */
static const int64_t ids[] = {0, 2, 2, 1, 5, 4};

static op_harness *scatter_harness(rill_dtype dt, const void *x, const void *up, const char *ids_name,
                                   const int64_t *id_vals) {
  op_harness *h = harness("sequence_scatter");
  bind_input(h, "X", "x", dt, DIMS(3, 6), x);
  size_t n = 4;
  rill_tensor *t = op_harness_make(RILL_DTYPE_INT64, DIMS(6, 1), id_vals);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){ids_lod}, &n));
  OK(op_harness_input(h, "Ids", ids_name, t));
  op_harness_free_tensor(t);
  t = op_harness_make(dt, DIMS(6, 1), up);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){ids_lod}, &n));
  OK(op_harness_input(h, "Updates", "upd", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "Out", "out"));
  return h;
}

Test(sequence_scatter, matches_reference_and_gradients) {
  double x[18], up[6] = {0.5, 1, 2, 3, 4, 5}, want[18];
  for (int i = 0; i < 18; i++) x[i] = want[i] = i * 0.25 - 1;
  for (int s = 0; s < 3; s++)
    for (uint64_t j = ids_lod[s]; j < ids_lod[s + 1]; j++) want[s * 6 + ids[j]] += up[j];
  op_harness *h = scatter_harness(RILL_DTYPE_FP64, x, up, "ids", ids);
  OK(op_harness_run(h));
  const double *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
  for (int i = 0; i < 18; i++) cr_assert_float_eq(o[i], want[i], 1e-15, "element %d", i);
  grad_check_opts opt = {.rtol = 1e-7, .atol = 1e-9};
  rill_status *st = grad_check(h, GC_SLOTS("X", "Updates"), GC_SLOTS("Out"), &opt);
  cr_assert_null(st, "%s", rill_status_message(st));
  op_harness_destroy(h);
  float xf[18], uf[6];
  int64_t xi[18], ui[6];
  for (int i = 0; i < 18; i++) xf[i] = (float)x[i], xi[i] = i;
  for (int i = 0; i < 6; i++) uf[i] = (float)up[i], ui[i] = 10 * (i + 1);
  h = scatter_harness(RILL_DTYPE_FP32, xf, uf, "ids", ids);
  OK(op_harness_run(h));
  const float *of = rill_tensor_ptr(op_harness_tensor(h, "out"));
  for (int i = 0; i < 18; i++) cr_assert_float_eq(of[i], (float)want[i], 1e-6f);
  op_harness_destroy(h);
  h = scatter_harness(RILL_DTYPE_INT64, xi, ui, "ids", ids);
  OK(op_harness_run(h));
  const int64_t *oi = rill_tensor_ptr(op_harness_tensor(h, "out"));
  cr_assert_eq(oi[2], 2 + 20 + 30);
  cr_assert_eq(oi[7], 7, "row 1 untouched");
  cr_assert_eq(oi[12 + 5], 17 + 50);
  op_harness_destroy(h);
}

Test(sequence_scatter, errors_name_op_and_variable) {
  double x[18] = {0}, up[6] = {0};
  const int64_t bad[] = {0, 2, 6, 1, 5, 4};
  op_harness *h = scatter_harness(RILL_DTYPE_FP64, x, up, "seq.ids", bad);
  EXPECT_ERROR(op_harness_run(h), "sequence_scatter", "Ids", "seq.ids", "6");
  op_harness_destroy(h);
  h = harness("sequence_scatter");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 6), x);
  bind_input(h, "Ids", "ids.nolod", RILL_DTYPE_INT64, DIMS(6, 1), ids);
  bind_input(h, "Updates", "upd", RILL_DTYPE_FP64, DIMS(6, 1), up);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "sequence_scatter", "ids.nolod", "LoD");
  op_harness_destroy(h);
}

static void check_erase(rill_dtype dt) {
  const int64_t v[] = {2, 2, 5, 1, 3, 2, 5, 5};
  int32_t v32[8];
  for (int i = 0; i < 8; i++) v32[i] = (int32_t)v[i];
  const uint64_t top[] = {0, 1, 3}, low[] = {0, 3, 7, 8};
  const size_t ns[] = {3, 4};
  op_harness *h = harness("sequence_erase");
  rill_tensor *t = op_harness_make(dt, DIMS(8, 1), dt == RILL_DTYPE_INT32 ? (const void *)v32 : v);
  OK(rill_tensor_set_lod(t, 2, (const uint64_t *const[]){top, low}, ns));
  OK(op_harness_input(h, "X", "tok", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "tokens", (const int32_t[]){2, 5}, 2));
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "out");
  expect_dims(o, DIMS(2, 1));
  cr_assert_eq(o->dtype, dt);
  int64_t got0 = dt == RILL_DTYPE_INT32 ? ((int32_t *)rill_tensor_ptr(o))[0] : ((int64_t *)rill_tensor_ptr(o))[0];
  int64_t got1 = dt == RILL_DTYPE_INT32 ? ((int32_t *)rill_tensor_ptr(o))[1] : ((int64_t *)rill_tensor_ptr(o))[1];
  cr_assert(got0 == 1 && got1 == 3);
  cr_assert_eq(o->lod.nlevels, 2);
  const uint64_t want_low[] = {0, 0, 2, 2};
  for (int i = 0; i < 3; i++) cr_assert_eq(o->lod.levels[0].offsets[i], top[i], "top level kept");
  for (int i = 0; i < 4; i++) cr_assert_eq(o->lod.levels[1].offsets[i], want_low[i]);
  /* everything erased */
  OK(op_harness_attr_ints(h, "tokens", (const int32_t[]){1, 2, 3, 5}, 4));
  OK(op_harness_run(h));
  o = op_harness_tensor(h, "out");
  expect_dims(o, DIMS(0, 1));
  for (int i = 0; i < 4; i++) cr_assert_eq(o->lod.levels[1].offsets[i], 0);
  op_harness_destroy(h);
}

Test(sequence_erase, erases_tokens_and_recounts_lod) {
  check_erase(RILL_DTYPE_INT32);
  check_erase(RILL_DTYPE_INT64);
}

Test(sequence_erase, errors_name_op_and_variable) {
  const float f[] = {1, 2};
  op_harness *h = harness("sequence_erase");
  bind_input(h, "X", "scores", RILL_DTYPE_FP32, DIMS(2, 1), f);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "tokens", (const int32_t[]){1}, 1));
  EXPECT_ERROR(op_harness_run(h), "sequence_erase", "X", "scores", "int");
  op_harness_destroy(h);
  const int64_t v[] = {1, 2};
  h = harness("sequence_erase");
  bind_input(h, "X", "tok.nolod", RILL_DTYPE_INT64, DIMS(2, 1), v);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "sequence_erase", "tok.nolod", "LoD");
  op_harness_destroy(h);
}
