/* Small helpers for the op tests (header-only, included by each test file). */
#ifndef RILL_TESTS_OPERATORS_OP_TEST_H
#define RILL_TESTS_OPERATORS_OP_TEST_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/op_harness.h"

#define OK(expr)                                                                          \
  do {                                                                                    \
    rill_status *ok_st_ = (expr);                                                         \
    cr_assert_null(ok_st_, "%s: %s", #expr, rill_status_message(ok_st_));                 \
  } while (0)

/* Asserts st is an error whose message holds every given substring; frees it. */
static inline void expect_error(rill_status *st, const char *const *parts, size_t n) {
  cr_assert_not_null(st, "expected an error");
  const char *msg = rill_status_message(st);
  for (size_t i = 0; i < n; i++)
    cr_assert_not_null(strstr(msg, parts[i]), "message \"%s\" lacks \"%s\"", msg, parts[i]);
  rill_status_destroy(st);
}
#define EXPECT_ERROR(st, ...)                                                             \
  do {                                                                                    \
    const char *ee_parts_[] = {__VA_ARGS__};                                              \
    expect_error((st), ee_parts_, sizeof ee_parts_ / sizeof ee_parts_[0]);                \
  } while (0)

static inline op_harness *harness(const char *type) {
  op_harness *h = NULL;
  OK(op_harness_create(type, &h));
  return h;
}

/* Binds a fresh tensor as input (the harness keeps a copy). */
static inline void bind_input(op_harness *h, const char *slot, const char *name, rill_dtype dt,
                              const int64_t *dims, size_t nd, const void *data) {
  rill_tensor *t = op_harness_make(dt, dims, nd, data);
  cr_assert_not_null(t);
  OK(op_harness_input(h, slot, name, t));
  op_harness_free_tensor(t);
}

static inline int64_t numel_of(const int64_t *dims, size_t nd) {
  int64_t n = 1;
  for (size_t i = 0; i < nd; i++) n *= dims[i];
  return n;
}

static inline void expect_dims(const rill_tensor *t, const int64_t *dims, size_t nd) {
  cr_assert_not_null(t);
  cr_assert_eq(t->dims.n, (int)nd, "rank %d, expected %zu", t->dims.n, nd);
  for (size_t i = 0; i < nd; i++)
    cr_assert_eq(t->dims.d[i], dims[i], "dim %zu is %lld, expected %lld", i,
                 (long long)t->dims.d[i], (long long)dims[i]);
}

static inline void expect_close_f32(const float *got, const float *want, int64_t n, float tol) {
  for (int64_t i = 0; i < n; i++)
    cr_assert(fabsf(got[i] - want[i]) <= tol * (1 + fabsf(want[i])), "[%lld] %g != %g",
              (long long)i, got[i], want[i]);
}

static inline void expect_close_f64(const double *got, const double *want, int64_t n, double tol) {
  for (int64_t i = 0; i < n; i++)
    cr_assert(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])), "[%lld] %g != %g",
              (long long)i, got[i], want[i]);
}

/* Binds double values as a tensor of dt: float64 as they are, float32 rounded. */
static inline void bind_input_dt(op_harness *h, const char *slot, const char *name, rill_dtype dt,
                                 const int64_t *dims, size_t nd, const double *v) {
  if (dt == RILL_DTYPE_FP64) {
    bind_input(h, slot, name, dt, dims, nd, v);
    return;
  }
  int64_t n = numel_of(dims, nd);
  float *p = malloc((size_t)(n + 1) * sizeof *p);
  for (int64_t i = 0; i < n; i++) p[i] = (float)v[i];
  bind_input(h, slot, name, dt, dims, nd, p);
  free(p);
}

/* Asserts t is of dt and its first n values match want: within 1e-10 (float64) or 2e-5
 * (float32), relative to 1 + |want|. */
static inline void expect_close_dt(const rill_tensor *t, const double *want, int64_t n,
                                   rill_dtype dt) {
  cr_assert_eq(t->dtype, dt);
  for (int64_t i = 0; i < n; i++) {
    double got = dt == RILL_DTYPE_FP64 ? ((const double *)rill_tensor_ptr(t))[i]
                                       : ((const float *)rill_tensor_ptr(t))[i];
    double tol = dt == RILL_DTYPE_FP64 ? 1e-10 : 2e-5;
    cr_assert(fabs(got - want[i]) <= tol * (1 + fabs(want[i])), "[%lld] %.9g != %.9g",
              (long long)i, got, want[i]);
  }
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__}), (sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

#endif
