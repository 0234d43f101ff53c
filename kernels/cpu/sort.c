/* argsort, where_index, unique and unique_with_counts. Orders come from one stable merge
 * sort of positions under a comparator per dtype; a NaN sorts after every number, and
 * -0 equals 0. */
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/tensor_ops.h"

typedef int (*elem_cmp)(const void *vals, int64_t a, int64_t b);

#define CMP_FLOAT(T, NAME)                                                                \
  static int NAME(const void *vals, int64_t a, int64_t b) {                               \
    T x = ((const T *)vals)[a], y = ((const T *)vals)[b];                                 \
    if (x != x || y != y) return (x != x) - (y != y);                                     \
    return (x > y) - (x < y);                                                             \
  }
#define CMP_INT(T, NAME)                                                                  \
  static int NAME(const void *vals, int64_t a, int64_t b) {                               \
    T x = ((const T *)vals)[a], y = ((const T *)vals)[b];                                 \
    return (x > y) - (x < y);                                                             \
  }
CMP_FLOAT(float, cmp_f32)
CMP_FLOAT(double, cmp_f64)
CMP_INT(int32_t, cmp_i32)
CMP_INT(int64_t, cmp_i64)
CMP_INT(int16_t, cmp_i16)
CMP_INT(int8_t, cmp_i8)
CMP_INT(uint8_t, cmp_u8)
CMP_INT(bool, cmp_bool)

static elem_cmp cmp_for(rill_dtype dt) {
  switch (dt) {
  case RILL_DTYPE_FP32: return cmp_f32;
  case RILL_DTYPE_FP64: return cmp_f64;
  case RILL_DTYPE_INT32: return cmp_i32;
  case RILL_DTYPE_INT64: return cmp_i64;
  case RILL_DTYPE_INT16: return cmp_i16;
  case RILL_DTYPE_INT8: return cmp_i8;
  case RILL_DTYPE_UINT8: return cmp_u8;
  case RILL_DTYPE_BOOL: return cmp_bool;
  default: return NULL;
  }
}

/* Sorts positions idx[0..n) by their values (sign -1: descending), stably; tmp holds n. */
static void merge_sort(int64_t *idx, int64_t *tmp, int64_t n, const void *vals, elem_cmp cmp,
                       int sign) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = sign * cmp(vals, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
      while (i < mid) tmp[k++] = idx[i++];
      while (j < hi) tmp[k++] = idx[j++];
    }
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
  }
}

static rill_status *need_cmp(rill_kernel_ctx *ctx, const rill_tensor *x, elem_cmp *cmp) {
  if (!(*cmp = cmp_for(x->dtype)))
    return rill_kernel_error(ctx, "input %s (%s) is %s, which has no order",
                             ctx->schema->inputs[0].name, rill_kin_name(ctx, 0, 0),
                             rill_dtype_name(x->dtype));
  return NULL;
}

rill_status *rill_cpu_argsort(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out, *ind;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  elem_cmp cmp;
  RILL_TRY(need_cmp(ctx, x, &cmp));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  RILL_TRY(rill_kout_need(ctx, 1, 0, RILL_DTYPE_INT64, &ind));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  RILL_TRY(rill_kout_check_dims(ctx, 1, 0, ind, &x->dims));
  int a;
  if (!rill_norm_axis(ctx->attrs[RILL_ARGSORT_ATTR_AXIS].v.i, x->dims.n, &a))
    return rill_kernel_error(ctx, "axis %d is out of range for input X (%s) of rank %d",
                             (int)ctx->attrs[RILL_ARGSORT_ATTR_AXIS].v.i, rill_kin_name(ctx, 0, 0),
                             (int)x->dims.n);
  int64_t outer = rill_dims_prod(&x->dims, 0, a), n = x->dims.d[a];
  int64_t inner = rill_dims_prod(&x->dims, a + 1, x->dims.n);
  size_t es = rill_dtype_size(x->dtype);
  int sign = ctx->attrs[RILL_ARGSORT_ATTR_DESCENDING].v.b ? -1 : 1;
  int64_t *idx = rill_malloc((size_t)(2 * n + 1) * sizeof *idx);
  char *line = rill_malloc((size_t)(n + 1) * es), *src = rill_tensor_ptr(x), *dst = rill_tensor_ptr(out);
  char *tmp = rill_malloc((size_t)(n + 1) * es); /* Out may be X: the sorted line first */
  if (!idx || !line || !tmp) {
    rill_free(idx);
    rill_free(line);
    rill_free(tmp);
    return rill_oom();
  }
  int64_t *ip = rill_tensor_ptr(ind);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t base = o * n * inner + i;
      for (int64_t k = 0; k < n; k++) {
        memcpy(line + (size_t)k * es, src + (size_t)(base + k * inner) * es, es);
        idx[k] = k;
      }
      merge_sort(idx, idx + n, n, line, cmp, sign);
      for (int64_t k = 0; k < n; k++) memcpy(tmp + (size_t)k * es, line + (size_t)idx[k] * es, es);
      for (int64_t k = 0; k < n; k++) {
        memcpy(dst + (size_t)(base + k * inner) * es, tmp + (size_t)k * es, es);
        ip[base + k * inner] = idx[k];
      }
    }
  rill_free(idx);
  rill_free(line);
  rill_free(tmp);
  return NULL;
}

/* Whether element i of a tensor of dtype dt is nonzero (true). */
static bool nonzero_at(const void *p, int64_t i, rill_dtype dt, size_t es) {
  switch (dt) {
  case RILL_DTYPE_FP32: return ((const float *)p)[i] != 0;
  case RILL_DTYPE_FP64: return ((const double *)p)[i] != 0;
  case RILL_DTYPE_BOOL: return ((const bool *)p)[i];
  default: {
    const unsigned char *b = (const unsigned char *)p + (size_t)i * es;
    for (size_t k = 0; k < es; k++)
      if (b[k]) return true;
    return false;
  }
  }
}

rill_status *rill_cpu_where_index(rill_kernel_ctx *ctx) {
  rill_tensor *c = rill_kin(ctx, 0, 0), *out = rill_kout(ctx, 0, 0);
  if (!c || !rill_tensor_is_set(c))
    return rill_kernel_error(ctx, "input Condition (%s) is missing or holds no data",
                             rill_kin_name(ctx, 0, 0));
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",
                             rill_kout_name(ctx, 0, 0));
  if (out == c) return rill_kernel_error(ctx, "output Out (%s) is its input", rill_kout_name(ctx, 0, 0));
  int64_t n = rill_tensor_numel(c), count = 0;
  size_t es = rill_dtype_size(c->dtype);
  const void *p = rill_tensor_ptr(c);
  for (int64_t i = 0; i < n; i++) count += nonzero_at(p, i, c->dtype, es);
  int r = c->dims.n;
  rill_dims d = {.n = 2, .d = {count, r}};
  rill_lod_clear(&out->lod);
  RILL_TRY(rill_tensor_alloc(out, RILL_DTYPE_INT64, &d));
  int64_t *op = rill_tensor_ptr(out);
  for (int64_t i = 0, row = 0; i < n; i++) {
    if (!nonzero_at(p, i, c->dtype, es)) continue;
    int64_t rest = i;
    for (int j = r - 1; j >= 0; j--) {
      op[row * r + j] = rest % c->dims.d[j];
      rest /= c->dims.d[j];
    }
    row++;
  }
  return NULL;
}

static void put_index(void *p, int64_t i, int64_t v, bool i64) {
  if (i64) ((int64_t *)p)[i] = v;
  else ((int32_t *)p)[i] = (int32_t)v;
}

static rill_status *unique_common(rill_kernel_ctx *ctx, bool counts) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = rill_kout(ctx, 0, 0), *index = rill_kout(ctx, 1, 0);
  rill_tensor *count = counts ? rill_kout(ctx, RILL_UNIQUE_WITH_COUNTS_OUT_COUNT_SLOT, 0) : NULL;
  if (!x || !rill_tensor_is_set(x) || x->dims.n != 1)
    return rill_kernel_error(ctx, "input X (%s) must be a 1-D tensor with data", rill_kin_name(ctx, 0, 0));
  if (!out || !index || (counts && !count))
    return rill_kernel_error(ctx, "outputs Out (%s), Index (%s)%s must be dense tensors",
                             rill_kout_name(ctx, 0, 0), rill_kout_name(ctx, 1, 0),
                             counts ? " and Count" : "");
  if (out == x || index == x || count == x)
    return rill_kernel_error(ctx, "an output is input X (%s)", rill_kin_name(ctx, 0, 0));
  elem_cmp cmp;
  RILL_TRY(need_cmp(ctx, x, &cmp));
  bool i64 = ctx->attrs[RILL_UNIQUE_ATTR_DTYPE].v.i == RILL_DTYPE_INT64;
  rill_dtype idt = i64 ? RILL_DTYPE_INT64 : RILL_DTYPE_INT32;
  int64_t n = x->dims.d[0];
  size_t es = rill_dtype_size(x->dtype);
  /* order: positions sorted by value (stable, so each group starts at its first
   * occurrence); group: the group of each position; first: the first position of each
   * group, then sorted so groups come in order of first appearance. */
  int64_t *order = rill_malloc((size_t)(2 * n + 1) * sizeof *order);
  int64_t *group = rill_malloc((size_t)(n + 1) * sizeof *group);
  int64_t *first = rill_malloc((size_t)(2 * n + 1) * sizeof *first);
  int64_t *rank = rill_malloc((size_t)(n + 1) * sizeof *rank);
  int64_t *cnt = rill_calloc((size_t)(n + 1), sizeof *cnt);
  rill_status *st = NULL;
  if (!order || !group || !first || !rank || !cnt) {
    st = rill_oom();
    goto done;
  }
  const void *xp = rill_tensor_ptr(x);
  for (int64_t i = 0; i < n; i++) order[i] = i;
  merge_sort(order, order + n, n, xp, cmp, 1);
  int64_t groups = 0;
  for (int64_t k = 0; k < n; k++) {
    if (k == 0 || cmp(xp, order[k - 1], order[k]) != 0) first[groups++] = order[k];
    group[order[k]] = groups - 1;
  }
  /* Groups by first appearance: sort group ids by their first position. */
  for (int64_t g = 0; g < groups; g++) order[g] = g;
  merge_sort(order, order + groups, groups, first, cmp_i64, 1);
  for (int64_t g = 0; g < groups; g++) rank[order[g]] = g;
  rill_dims od = {.n = 1, .d = {groups}}, idd = {.n = 1, .d = {n}};
  rill_lod_clear(&out->lod);
  rill_lod_clear(&index->lod);
  if ((st = rill_tensor_alloc(out, x->dtype, &od)) || (st = rill_tensor_alloc(index, idt, &idd))) goto done;
  for (int64_t g = 0; g < groups; g++)
    memcpy((char *)rill_tensor_ptr(out) + (size_t)rank[g] * es,
           (const char *)xp + (size_t)first[g] * es, es);
  for (int64_t i = 0; i < n; i++) {
    int64_t r = rank[group[i]];
    put_index(rill_tensor_ptr(index), i, r, i64);
    cnt[r]++;
  }
  if (count) {
    rill_lod_clear(&count->lod);
    if ((st = rill_tensor_alloc(count, idt, &od))) goto done;
    for (int64_t g = 0; g < groups; g++) put_index(rill_tensor_ptr(count), g, cnt[g], i64);
  }
done:
  rill_free(order);
  rill_free(group);
  rill_free(first);
  rill_free(rank);
  rill_free(cnt);
  return st;
}

rill_status *rill_cpu_unique(rill_kernel_ctx *ctx) { return unique_common(ctx, false); }
rill_status *rill_cpu_unique_with_counts(rill_kernel_ctx *ctx) { return unique_common(ctx, true); }
