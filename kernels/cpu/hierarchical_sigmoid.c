/* hierarchical_sigmoid CPU kernels: the path of each row is walked once per pass; the
 * dot products and the gradient sums run in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/selected_rows.h"

typedef struct hs_geom {
  int64_t n, d, nodes, width; /* rows, features, W's rows, PreOut's columns */
  int64_t classes;
  const int64_t *label, *table, *code; /* table and code NULL for the default tree */
} hs_geom;

static int64_t hs_bits(int64_t v) {
  int64_t b = 0;
  while (v > 0) b++, v >>= 1;
  return b;
}

static int64_t hs_len(const hs_geom *g, int64_t i) {
  if (!g->table) return hs_bits(g->label[i] + g->classes) - 1;
  int64_t k = 0;
  while (k < g->width && g->table[i * g->width + k] >= 0) k++;
  return k;
}
static int64_t hs_index(const hs_geom *g, int64_t i, int64_t j) {
  return g->table ? g->table[i * g->width + j] : ((g->label[i] + g->classes) >> (j + 1)) - 1;
}
static bool hs_bit(const hs_geom *g, int64_t i, int64_t j) {
  return g->table ? g->code[i * g->width + j] != 0 : (((g->label[i] + g->classes) >> j) & 1);
}

/* Reads and checks X, W, Label, PathTable, PathCode (input slots 0-4) of dtype dt. */
static rill_status *hs_inputs(rill_kernel_ctx *ctx, rill_dtype dt, hs_geom *g,
                              rill_tensor **x, rill_tensor **w) {
  rill_tensor *l, *pt = NULL, *pc = NULL;
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, w));
  RILL_TRY(rill_kin_need(ctx, 2, 0, RILL_DTYPE_INT64, &l));
  if ((*x)->dims.n != 2 || (*w)->dims.n != 2 || (*w)->dims.d[1] != (*x)->dims.d[1])
    return rill_kernel_error(ctx, "inputs X (%s) and W (%s) must be [N, D] and [nodes, D]",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));
  memset(g, 0, sizeof *g);
  g->n = (*x)->dims.d[0];
  g->d = (*x)->dims.d[1];
  g->nodes = (*w)->dims.d[0];
  g->classes = ctx->attrs[RILL_HIERARCHICAL_SIGMOID_ATTR_NUM_CLASSES].v.i;
  g->label = rill_tensor_ptr(l);
  if (rill_kin(ctx, 3, 0)) {
    RILL_TRY(rill_kin_need(ctx, 3, 0, RILL_DTYPE_INT64, &pt));
    RILL_TRY(rill_kin_need(ctx, 4, 0, RILL_DTYPE_INT64, &pc));
    if (pt->dims.n != 2 || pt->dims.d[0] != g->n || !rill_dims_equal(&pt->dims, &pc->dims))
      return rill_kernel_error(ctx, "inputs PathTable (%s) and PathCode (%s) must be [N, L] "
                               "alike with X (%s)'s rows", rill_kin_name(ctx, 3, 0),
                               rill_kin_name(ctx, 4, 0), rill_kin_name(ctx, 0, 0));
    g->table = rill_tensor_ptr(pt);
    g->code = rill_tensor_ptr(pc);
    g->width = pt->dims.d[1];
    for (int64_t i = 0; i < g->n; i++)
      for (int64_t j = 0; j < hs_len(g, i); j++)
        if (g->table[i * g->width + j] >= g->nodes)
          return rill_kernel_error(ctx, "input PathTable (%s) names node %lld (row %lld), but "
                                   "W (%s) has %lld rows", rill_kin_name(ctx, 3, 0),
                                   (long long)g->table[i * g->width + j], (long long)i,
                                   rill_kin_name(ctx, 1, 0), (long long)g->nodes);
    return NULL;
  }
  if (rill_tensor_numel(l) != g->n)
    return rill_kernel_error(ctx, "input Label (%s) must hold X (%s)'s %lld rows",
                             rill_kin_name(ctx, 2, 0), rill_kin_name(ctx, 0, 0),
                             (long long)g->n);
  if (g->classes < 2 || g->nodes < g->classes - 1)
    return rill_kernel_error(ctx, "attribute num_classes %lld needs W (%s) of %lld rows",
                             (long long)g->classes, rill_kin_name(ctx, 1, 0),
                             (long long)g->classes - 1);
  g->width = hs_bits(g->classes - 1);
  for (int64_t i = 0; i < g->n; i++)
    if (g->label[i] < 0 || g->label[i] >= g->classes)
      return rill_kernel_error(ctx, "input Label (%s) holds class %lld in row %lld, outside "
                               "[0, num_classes = %lld)", rill_kin_name(ctx, 2, 0),
                               (long long)g->label[i], (long long)i, (long long)g->classes);
  return NULL;
}

/* Bias (slot 5), when present, as a vector of g->nodes values. */
static rill_status *hs_bias(rill_kernel_ctx *ctx, rill_dtype dt, const hs_geom *g,
                            rill_tensor **b) {
  *b = NULL;
  if (!rill_kin(ctx, 5, 0)) return NULL;
  RILL_TRY(rill_kin_need(ctx, 5, 0, dt, b));
  if (rill_tensor_numel(*b) != g->nodes)
    return rill_kernel_error(ctx, "input Bias (%s) must hold one value per row of W (%s)",
                             rill_kin_name(ctx, 5, 0), rill_kin_name(ctx, 1, 0));
  return NULL;
}

#define HSIGMOID(T, DT, SUF)                                                              \
  rill_status *rill_cpu_hierarchical_sigmoid_##SUF(rill_kernel_ctx *ctx) {               \
    rill_tensor *x, *w, *b, *out, *pre;                                                   \
    hs_geom g;                                                                            \
    RILL_TRY(hs_inputs(ctx, DT, &g, &x, &w));                                             \
    RILL_TRY(hs_bias(ctx, DT, &g, &b));                                                   \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &pre));                                        \
    rill_dims od = {.n = 2, .d = {g.n, 1}}, pd = {.n = 2, .d = {g.n, g.width}};           \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                  \
    RILL_TRY(rill_kout_check_dims(ctx, 1, 0, pre, &pd));                                  \
    const T *xp = rill_tensor_ptr(x), *wp = rill_tensor_ptr(w);                           \
    const T *bp = b ? (const T *)rill_tensor_ptr(b) : NULL;                               \
    T *op = rill_tensor_ptr(out), *pp = rill_tensor_ptr(pre);                             \
    for (int64_t i = 0; i < g.n; i++) {                                                   \
      int64_t len = hs_len(&g, i);                                                        \
      T *pr = pp + i * g.width;                                                           \
      T picked = 0, total = 0;                                                            \
      for (int64_t j = 0; j < g.width; j++) {                                             \
        T z = 0;                                                                          \
        if (j < len) {                                                                    \
          int64_t k = hs_index(&g, i, j);                                                 \
          double s = bp ? (double)bp[k] : 0.0;                                            \
          for (int64_t q = 0; q < g.d; q++) s += (double)wp[k * g.d + q] * (double)xp[i * g.d + q]; \
          z = (T)(s < -40.0 ? -40.0 : s > 40.0 ? 40.0 : s);                               \
          if (hs_bit(&g, i, j)) picked += z;                                              \
        }                                                                                 \
        pr[j] = (T)log1p(exp((double)z));                                                 \
        total += pr[j];                                                                   \
      }                                                                                   \
      op[i] = total - picked;                                                             \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_hierarchical_sigmoid_grad_##SUF(rill_kernel_ctx *ctx) {          \
    rill_tensor *x, *w, *b, *pre, *dout, *dx = NULL, *db = NULL;                          \
    hs_geom g;                                                                            \
    RILL_TRY(hs_inputs(ctx, DT, &g, &x, &w));                                             \
    RILL_TRY(hs_bias(ctx, DT, &g, &b));                                                   \
    RILL_TRY(rill_kin_need(ctx, 6, 0, DT, &pre));                                         \
    RILL_TRY(rill_kin_need(ctx, 7, 0, DT, &dout));                                        \
    rill_dims od = {.n = 2, .d = {g.n, 1}}, pd = {.n = 2, .d = {g.n, g.width}};           \
    RILL_TRY(rill_kin_check_dims(ctx, 6, pre, &pd));                                      \
    if (rill_tensor_numel(dout) != g.n) RILL_TRY(rill_kin_check_dims(ctx, 7, dout, &od)); \
    if (rill_kout(ctx, 0, 0)) {                                                           \
      RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                            \
      memset(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx));                             \
    }                                                                                     \
    if (rill_kout(ctx, 2, 0) && b) {                                                      \
      RILL_TRY(rill_kout_need(ctx, 2, 0, DT, &db));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 2, 0, db, &b->dims));                            \
      memset(rill_tensor_ptr(db), 0, rill_tensor_nbytes(db));                             \
    }                                                                                     \
    /* W@GRAD: dense rows of W, or the selected rows of PathTable's nodes */              \
    T *dwp = NULL;                                                                        \
    rill_selected_rows *sr = NULL;                                                        \
    rill_variable *dwv = ctx->nout[1] ? ctx->out[1][0] : NULL;                            \
    if (dwv && ctx->attrs[RILL_HIERARCHICAL_SIGMOID_ATTR_IS_SPARSE].v.b) {                \
      if (!g.table)                                                                       \
        return rill_kernel_error(ctx, "attribute is_sparse needs a custom tree (PathTable)"); \
      RILL_TRY(rill_cpu_rows_out_ids(ctx, 1, g.table, g.n * g.width, g.nodes, g.d, DT, &sr)); \
      dwp = rill_tensor_ptr(&sr->value);                                                  \
    } else if (dwv && rill_kout(ctx, 1, 0)) {                                             \
      rill_tensor *dw;                                                                    \
      RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &dw));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 1, 0, dw, &w->dims));                            \
      dwp = rill_tensor_ptr(dw);                                                          \
      memset(dwp, 0, rill_tensor_nbytes(dw));                                             \
    }                                                                                     \
    const T *xp = rill_tensor_ptr(x), *wp = rill_tensor_ptr(w), *pp = rill_tensor_ptr(pre); \
    const T *gp = rill_tensor_ptr(dout);                                                  \
    T *dxp = dx ? (T *)rill_tensor_ptr(dx) : NULL, *dbp = db ? (T *)rill_tensor_ptr(db) : NULL; \
    for (int64_t i = 0; i < g.n; i++) {                                                   \
      int64_t len = hs_len(&g, i);                                                        \
      for (int64_t j = 0; j < len; j++) {                                                 \
        int64_t k = hs_index(&g, i, j);                                                   \
        /* d softplus = 1 - 1 / e^PreOut = sigmoid(z) */                                  \
        T gz = (T)1 - (T)1 / (T)exp((double)pp[i * g.width + j]);                         \
        if (hs_bit(&g, i, j)) gz -= (T)1;                                                 \
        gz *= gp[i];                                                                      \
        if (dbp) dbp[k] += gz;                                                            \
        if (dwp) {                                                                        \
          int64_t r = sr ? rill_cpu_rows_find(sr, k) : k;                                 \
          for (int64_t q = 0; q < g.d; q++) dwp[r * g.d + q] += gz * xp[i * g.d + q];     \
        }                                                                                 \
        if (dxp)                                                                          \
          for (int64_t q = 0; q < g.d; q++) dxp[i * g.d + q] += gz * wp[k * g.d + q];     \
      }                                                                                   \
    }                                                                                     \
    return NULL;                                                                          \
  }

HSIGMOID(float, RILL_DTYPE_FP32, fp32)
HSIGMOID(double, RILL_DTYPE_FP64, fp64)
