/* similarity_focus on the CPU. Each slice's entries are ordered by value, largest first;
 * equal values keep their row-major order (Paddle 1.8.5 leaves ties to an unstable sort,
 * so only tie-free inputs are guaranteed to give its mask). */
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

typedef struct sf_entry {
  double v;
  int64_t pos; /* row * columns + column within the slice */
} sf_entry;

static int sf_cmp(const void *a, const void *b) {
  const sf_entry *x = a, *y = b;
  if (x->v != y->v) return x->v > y->v ? -1 : 1;
  return (x->pos > y->pos) - (x->pos < y->pos);
}

#define SIMILARITY_FOCUS(T, DT, NAME)                                                          \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x = NULL, *out = NULL;                                                        \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                             \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                                  \
    int axis = ctx->attrs[RILL_SIMILARITY_FOCUS_ATTR_AXIS].v.i;                                \
    const rill_attr_value *idx = &ctx->attrs[RILL_SIMILARITY_FOCUS_ATTR_INDEXES];              \
    char s[RILL_DIMS_STR_MAX];                                                                 \
    if (x->dims.n != 4 || axis < 1 || axis > 3)                                                \
      return rill_kernel_error(ctx, "input X (%s) %s needs 4 dims and axis (%d) 1, 2 or 3",    \
                               rill_kin_name(ctx, 0, 0), rill_dims_str(&x->dims, s, sizeof s), \
                               axis);                                                          \
    const int64_t *d = x->dims.d;                                                              \
    for (size_t k = 0; k < idx->n; k++)                                                        \
      if (idx->list.ints[k] < 0 || idx->list.ints[k] >= d[axis])                               \
        return rill_kernel_error(ctx, "attribute indexes holds %d, outside dim %d of input X " \
                                 "(%s) %s", (int)idx->list.ints[k], axis,                      \
                                 rill_kin_name(ctx, 0, 0), rill_dims_str(&x->dims, s, sizeof s)); \
    /* strides of dims 1..3; the slice's rows and columns are the two dims besides axis */   \
    int64_t st[4] = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};                                \
    int ra = axis == 1 ? 2 : 1, ca = axis == 3 ? 2 : 3;                                        \
    int64_t rows = d[ra], cols = d[ca], n_ent = rows * cols;                                   \
    sf_entry *ent = rill_malloc((size_t)(n_ent ? n_ent : 1) * sizeof *ent);                    \
    bool *taken = rill_calloc((size_t)(rows + cols + 1), sizeof *taken);                       \
    if (!ent || !taken) {                                                                      \
      rill_free(ent);                                                                          \
      rill_free(taken);                                                                        \
      return rill_oom();                                                                       \
    }                                                                                          \
    const T *xp = rill_tensor_ptr(x);                                                          \
    T *op = rill_tensor_ptr(out);                                                              \
    memset(op, 0, (size_t)rill_tensor_numel(out) * sizeof(T));                                 \
    int64_t want = rows < cols ? rows : cols;                                                  \
    for (int64_t n = 0; n < d[0]; n++)                                                         \
      for (size_t k = 0; k < idx->n; k++) {                                                    \
        int64_t base = n * st[0] + idx->list.ints[k] * st[axis];                               \
        for (int64_t r = 0; r < rows; r++)                                                     \
          for (int64_t c = 0; c < cols; c++)                                                   \
            ent[r * cols + c] = (sf_entry){(double)xp[base + r * st[ra] + c * st[ca]], r * cols + c}; \
        qsort(ent, (size_t)n_ent, sizeof *ent, sf_cmp);                                        \
        memset(taken, 0, (size_t)(rows + cols) * sizeof *taken);                               \
        int64_t got = 0;                                                                       \
        for (int64_t e = 0; e < n_ent && got < want; e++) {                                    \
          int64_t r = ent[e].pos / cols, c = ent[e].pos % cols;                                \
          if (taken[r] || taken[rows + c]) continue;                                           \
          taken[r] = taken[rows + c] = true;                                                   \
          got++;                                                                               \
          int64_t line = n * st[0] + r * st[ra] + c * st[ca];                                  \
          for (int64_t a = 0; a < d[axis]; a++) op[line + a * st[axis]] = (T)1;                \
        }                                                                                      \
      }                                                                                        \
    rill_free(ent);                                                                            \
    rill_free(taken);                                                                          \
    return NULL;                                                                               \
  }

SIMILARITY_FOCUS(float, RILL_DTYPE_FP32, rill_cpu_similarity_focus_fp32)
SIMILARITY_FOCUS(double, RILL_DTYPE_FP64, rill_cpu_similarity_focus_fp64)
