/* filter_by_instag and its gradient on the CPU. The forward pass marks each instance
 * kept or not (a linear search of Filter_tag per tag: tag lists are short), then sizes
 * and fills the three outputs and their one-level LoD. */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

/* The first LoD level of input slot `slot` covering `rows` rows, or an error. */
static rill_status *fi_level(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *t,
                             const rill_lod_level **lv) {
  const char *names[] = {"Ins", "Ins_tag"};
  if (!t->lod.nlevels)
    return rill_kernel_error(ctx, "input %s (%s) has no LoD", names[slot],
                             rill_kin_name(ctx, slot, 0));
  *lv = &t->lod.levels[0];
  const rill_lod_level *l = *lv;
  bool ok = l->n >= 1 && l->offsets[0] == 0 && l->offsets[l->n - 1] == (uint64_t)t->dims.d[0];
  for (size_t k = 1; ok && k < l->n; k++) ok = l->offsets[k] >= l->offsets[k - 1];
  if (!ok)
    return rill_kernel_error(ctx, "input %s (%s): its first LoD level does not cover its %lld "
                             "rows in order", names[slot], rill_kin_name(ctx, slot, 0),
                             (long long)t->dims.d[0]);
  return NULL;
}

rill_status *rill_cpu_filter_by_instag(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *tag, *flt;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input Ins (%s) is missing or holds no data",
                             rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_INT64, &tag));
  RILL_TRY(rill_kin_need(ctx, 2, 0, RILL_DTYPE_INT64, &flt));
  char s[RILL_DIMS_STR_MAX];
  if (x->dims.n != 2)
    return rill_kernel_error(ctx, "input Ins (%s) has shape %s, expected [rows, D]",
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&x->dims, s, sizeof s));
  const rill_lod_level *tl, *xl = NULL;
  RILL_TRY(fi_level(ctx, 1, tag, &tl));
  bool is_lod = ctx->attrs[RILL_FILTER_BY_INSTAG_ATTR_IS_LOD].v.b;
  if (is_lod) RILL_TRY(fi_level(ctx, 0, x, &xl));
  int64_t ninst = (int64_t)tl->n - 1, have = is_lod ? (int64_t)xl->n - 1 : x->dims.d[0];
  if (have < ninst)
    return rill_kernel_error(ctx, "input Ins (%s) has %lld instances, fewer than the %lld tag "
                             "sequences of Ins_tag (%s)", rill_kin_name(ctx, 0, 0),
                             (long long)have, (long long)ninst, rill_kin_name(ctx, 1, 0));
  rill_tensor *out = rill_kout(ctx, 0, 0), *lw = rill_kout(ctx, 1, 0), *map = rill_kout(ctx, 2, 0);
  if (!out || !lw || !map) return rill_kernel_error(ctx, "needs outputs Out, LossWeight and IndexMap");
  const int64_t *tp = rill_tensor_ptr(tag), *fp = rill_tensor_ptr(flt);
  int64_t nf = rill_tensor_numel(flt), d = x->dims.d[1];
  /* kept[k]: instance index of the k-th kept instance; offs: Out's LoD */
  int64_t *kept = rill_malloc((size_t)(ninst + 1) * sizeof *kept);
  uint64_t *offs = rill_malloc((size_t)(ninst + 2) * sizeof *offs);
  if (!kept || !offs) {
    rill_free(kept);
    rill_free(offs);
    return rill_oom();
  }
  int64_t nk = 0;
  offs[0] = 0;
  for (int64_t i = 0; i < ninst; i++) {
    bool hit = false;
    for (uint64_t j = tl->offsets[i]; j < tl->offsets[i + 1] && !hit; j++)
      for (int64_t k = 0; k < nf && !hit; k++) hit = tp[j] == fp[k];
    if (!hit) continue;
    int64_t rows = is_lod ? (int64_t)(xl->offsets[i + 1] - xl->offsets[i]) : 1;
    kept[nk] = i;
    offs[nk + 1] = offs[nk] + (uint64_t)rows;
    nk++;
  }
  size_t es = rill_dtype_size(x->dtype);
  int64_t m = nk ? nk : 1, orows = nk ? (int64_t)offs[nk] : 1;
  size_t nlod = (size_t)m + 1; /* offsets per LoD: one sequence per kept instance */
  rill_dims od = {.n = 2, .d = {orows, d}}, wd = {.n = 2, .d = {m, 1}}, md = {.n = 2, .d = {m, 3}};
  rill_status *st = rill_tensor_alloc(out, x->dtype, &od);
  if (!st) st = rill_tensor_alloc(lw, RILL_DTYPE_FP32, &wd);
  if (!st) st = rill_tensor_alloc(map, RILL_DTYPE_INT64, &md);
  if (!st) {
    char *op = rill_tensor_ptr(out);
    const char *xp = rill_tensor_ptr(x);
    float *wp = rill_tensor_ptr(lw);
    int64_t *mp = rill_tensor_ptr(map);
    if (nk) {
      for (int64_t k = 0; k < nk; k++) {
        int64_t from = is_lod ? (int64_t)xl->offsets[kept[k]] : kept[k];
        int64_t rows = (int64_t)(offs[k + 1] - offs[k]);
        memcpy(op + (size_t)offs[k] * (size_t)d * es, xp + (size_t)from * (size_t)d * es,
               (size_t)(rows * d) * es);
        wp[k] = 1.0f;
        mp[3 * k] = (int64_t)offs[k];
        mp[3 * k + 1] = from;
        mp[3 * k + 2] = rows;
      }
    } else {
      int64_t v = ctx->attrs[RILL_FILTER_BY_INSTAG_ATTR_OUT_VAL_IF_EMPTY].v.l;
      for (int64_t j = 0; j < d; j++) {
        switch (x->dtype) {
        case RILL_DTYPE_FP32: ((float *)op)[j] = (float)v; break;
        case RILL_DTYPE_FP64: ((double *)op)[j] = (double)v; break;
        case RILL_DTYPE_INT32: ((int32_t *)op)[j] = (int32_t)v; break;
        default: ((int64_t *)op)[j] = v; break;
        }
      }
      wp[0] = 0.0f;
      mp[0] = 0, mp[1] = 1, mp[2] = 1;
      offs[1] = 1;
    }
    st = rill_tensor_set_lod(out, 1, (const uint64_t *const[]){offs}, &nlod);
  }
  if (!st) { /* LossWeight's and IndexMap's LoD: one sequence per row */
    uint64_t *one = rill_malloc((size_t)(m + 1) * sizeof *one);
    if (!one) st = rill_oom();
    for (int64_t k = 0; one && k <= m; k++) one[k] = (uint64_t)k;
    if (!st) st = rill_tensor_set_lod(lw, 1, (const uint64_t *const[]){one}, &nlod);
    if (!st) st = rill_tensor_set_lod(map, 1, (const uint64_t *const[]){one}, &nlod);
    rill_free(one);
  }
  rill_free(kept);
  rill_free(offs);
  return st;
}

#define FI_GRAD(T, DT, SUF)                                                                    \
  rill_status *rill_cpu_filter_by_instag_grad_##SUF(rill_kernel_ctx *ctx) {                    \
    rill_tensor *x, *lw, *map, *g, *dx;                                                        \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                \
    RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_FP32, &lw));                                  \
    RILL_TRY(rill_kin_need(ctx, 2, 0, RILL_DTYPE_INT64, &map));                                \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &g));                                                \
    char s[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX];                                          \
    if (x->dims.n != 2 || g->dims.n != 2 || g->dims.d[1] != x->dims.d[1])                      \
      return rill_kernel_error(ctx, "inputs Ins (%s) %s and Out@GRAD (%s) %s need 2 dims and " \
                               "one width", rill_kin_name(ctx, 0, 0),                          \
                               rill_dims_str(&x->dims, s, sizeof s), rill_kin_name(ctx, 3, 0), \
                               rill_dims_str(&g->dims, s2, sizeof s2));                        \
    if (map->dims.n != 2 || map->dims.d[1] != 3)                                               \
      return rill_kernel_error(ctx, "input IndexMap (%s) has shape %s, expected [kept, 3]",    \
                               rill_kin_name(ctx, 2, 0), rill_dims_str(&map->dims, s, sizeof s)); \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                                    \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                              \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                                   \
    int64_t d = x->dims.d[1], rows = x->dims.d[0], grows = g->dims.d[0];                       \
    T *o = rill_tensor_ptr(dx);                                                                \
    const T *gp = rill_tensor_ptr(g);                                                          \
    const int64_t *mp = rill_tensor_ptr(map);                                                  \
    const float *wp = rill_tensor_ptr(lw);                                                     \
    memset(o, 0, (size_t)(rows * d) * sizeof(T));                                              \
    if (rill_tensor_numel(lw) == 1 && wp[0] == 0.0f) return NULL;                              \
    for (int64_t k = 0; k < map->dims.d[0]; k++) {                                             \
      int64_t src = mp[3 * k], dst = mp[3 * k + 1], cnt = mp[3 * k + 2];                       \
      if (src < 0 || dst < 0 || cnt < 0 || src + cnt > grows || dst + cnt > rows)              \
        return rill_kernel_error(ctx, "input IndexMap (%s) row %lld (%lld, %lld, %lld) "       \
                                 "reaches past Out@GRAD (%s) or Ins (%s)",                     \
                                 rill_kin_name(ctx, 2, 0), (long long)k, (long long)src,       \
                                 (long long)dst, (long long)cnt, rill_kin_name(ctx, 3, 0),     \
                                 rill_kin_name(ctx, 0, 0));                                    \
      memcpy(o + dst * d, gp + src * d, (size_t)(cnt * d) * sizeof(T));                        \
    }                                                                                          \
    return NULL;                                                                               \
  }

FI_GRAD(float, RILL_DTYPE_FP32, fp32)
FI_GRAD(double, RILL_DTYPE_FP64, fp64)
