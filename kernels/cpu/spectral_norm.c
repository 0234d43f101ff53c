/* spectral_norm and spectral_norm_grad on the CPU (operators/spectral_norm.c has the
 * rules). W is never copied: entry (r, c) of the matrix is Weight[(o * h + r) * inner + i]
 * with c = o * inner + i, inner the product of the dims after `dim`. The power
 * iteration accumulates in double. */
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

typedef struct sn_view {
  int64_t h, w, inner;
} sn_view;

static int64_t sn_at(const sn_view *m, int64_t r, int64_t c) {
  return ((c / m->inner) * m->h + r) * m->inner + c % m->inner;
}

/* Checks Weight, U, V; fills the view. */
static rill_status *sn_setup(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **wt, rill_tensor **u,
                             rill_tensor **v, sn_view *m) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, wt));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, u));
  RILL_TRY(rill_kin_need(ctx, 2, 0, dt, v));
  char s[RILL_DIMS_STR_MAX];
  int rank = (*wt)->dims.n, dim = ctx->attrs[RILL_SPECTRAL_NORM_ATTR_DIM].v.i;
  if (rank < 2 || dim < 0 || dim >= rank)
    return rill_kernel_error(ctx, "input Weight (%s) %s has no dim %d", rill_kin_name(ctx, 0, 0),
                             rill_dims_str(&(*wt)->dims, s, sizeof s), dim);
  m->h = (*wt)->dims.d[dim];
  m->inner = 1;
  for (int i = dim + 1; i < rank; i++) m->inner *= (*wt)->dims.d[i];
  m->w = m->h ? rill_tensor_numel(*wt) / m->h : 0;
  if (rill_tensor_numel(*u) != m->h || rill_tensor_numel(*v) != m->w)
    return rill_kernel_error(ctx, "inputs U (%s) and V (%s) hold %lld and %lld values, Weight (%s) "
                             "%s needs %lld and %lld", rill_kin_name(ctx, 1, 0),
                             rill_kin_name(ctx, 2, 0), (long long)rill_tensor_numel(*u),
                             (long long)rill_tensor_numel(*v), rill_kin_name(ctx, 0, 0),
                             rill_dims_str(&(*wt)->dims, s, sizeof s), (long long)m->h,
                             (long long)m->w);
  return NULL;
}

static void sn_scale(double *x, int64_t n, double eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; i++) ss += x[i] * x[i];
  double d = sqrt(ss) + eps;
  for (int64_t i = 0; i < n; i++) x[i] /= d;
}

/* The power iteration: u [h] and v [w] (double) from U and V; returns sigma. */
#define SN_SIGMA(T, NAME)                                                                      \
  static double NAME(const sn_view *m, const T *wp, const T *up, const T *vp, int iters,       \
                     double eps, double *u, double *v) {                                       \
    for (int64_t r = 0; r < m->h; r++) u[r] = (double)up[r];                                   \
    for (int64_t c = 0; c < m->w; c++) v[c] = (double)vp[c];                                   \
    for (int it = 0; it < iters; it++) {                                                       \
      for (int64_t c = 0; c < m->w; c++) {                                                     \
        double acc = 0;                                                                        \
        for (int64_t r = 0; r < m->h; r++) acc += (double)wp[sn_at(m, r, c)] * u[r];           \
        v[c] = acc;                                                                            \
      }                                                                                        \
      sn_scale(v, m->w, eps);                                                                  \
      for (int64_t r = 0; r < m->h; r++) {                                                     \
        double acc = 0;                                                                        \
        for (int64_t c = 0; c < m->w; c++) acc += (double)wp[sn_at(m, r, c)] * v[c];           \
        u[r] = acc;                                                                            \
      }                                                                                        \
      sn_scale(u, m->h, eps);                                                                  \
    }                                                                                          \
    double sigma = 0;                                                                          \
    for (int64_t r = 0; r < m->h; r++) {                                                       \
      double acc = 0;                                                                          \
      for (int64_t c = 0; c < m->w; c++) acc += (double)wp[sn_at(m, r, c)] * v[c];             \
      sigma += u[r] * acc;                                                                     \
    }                                                                                          \
    return sigma;                                                                              \
  }

#define SPECTRAL_NORM(T, DT, NAME)                                                             \
  SN_SIGMA(T, NAME##_sigma)                                                                    \
  static rill_status *NAME##_run(rill_kernel_ctx *ctx, bool backward) {                        \
    rill_tensor *wt = NULL, *u = NULL, *v = NULL, *res = rill_kout(ctx, 0, 0), *dout = NULL;   \
    sn_view m;                                                                                 \
    if (!res && backward) return NULL;                                                         \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &res));                                             \
    if (backward) RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &dout));                               \
    RILL_TRY(sn_setup(ctx, DT, &wt, &u, &v, &m));                                              \
    if (backward) RILL_TRY(rill_kin_check_dims(ctx, 3, dout, &wt->dims));                      \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, res, &wt->dims));                                 \
    double *uu = rill_malloc((size_t)(m.h + m.w + 1) * sizeof *uu);                            \
    if (!uu) return rill_oom();                                                                \
    double *vv = uu + m.h;                                                                     \
    const T *wp = rill_tensor_ptr(wt);                                                         \
    double sigma = NAME##_sigma(&m, wp, rill_tensor_ptr(u), rill_tensor_ptr(v),                \
                                ctx->attrs[RILL_SPECTRAL_NORM_ATTR_POWER_ITERS].v.i,           \
                                (double)ctx->attrs[RILL_SPECTRAL_NORM_ATTR_EPS].v.f, uu, vv);  \
    T *op = rill_tensor_ptr(res);                                                              \
    if (!backward) {                                                                           \
      for (int64_t k = 0, n = rill_tensor_numel(wt); k < n; k++) op[k] = (T)(wp[k] / sigma);   \
    } else {                                                                                   \
      double total = 0;                                                                        \
      for (int64_t k = 0, n = rill_tensor_numel(wt); k < n; k++) total += wp[k] / sigma;       \
      const T *gp = rill_tensor_ptr(dout);                                                     \
      for (int64_t r = 0; r < m.h; r++)                                                        \
        for (int64_t c = 0; c < m.w; c++) {                                                    \
          int64_t k = sn_at(&m, r, c);                                                         \
          op[k] = (T)(gp[k] * (1 - uu[r] * vv[c] * total) / sigma);                            \
        }                                                                                      \
    }                                                                                          \
    rill_free(uu);                                                                             \
    return NULL;                                                                               \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) { return NAME##_run(ctx, false); }                   \
  rill_status *NAME##_grad(rill_kernel_ctx *ctx) { return NAME##_run(ctx, true); }

SPECTRAL_NORM(float, RILL_DTYPE_FP32, rill_cpu_spectral_norm_fp32)
SPECTRAL_NORM(double, RILL_DTYPE_FP64, rill_cpu_spectral_norm_fp64)
