/* random_crop on the CPU (operators/random_crop.c has the draws). The generator is
 * advanced by i * k draws (framework/base/std_random.h's discard), so every instance starts
 * from the state Paddle's discard() reaches. */
#include <string.h>

#include "framework/base/std_random.h"
#include "kernels/cpu/kernels.h"

rill_status *rill_cpu_random_crop(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *seed = rill_kin(ctx, 1, 0), *out = NULL, *so = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) holds no data", rill_kin_name(ctx, 0, 0));
  out = rill_kout(ctx, 0, 0);
  so = rill_kout(ctx, 1, 0);
  if (!out) return rill_kernel_error(ctx, "needs output Out");
  const rill_attr_value *shape = &ctx->attrs[RILL_RANDOM_CROP_ATTR_SHAPE];
  char s[RILL_DIMS_STR_MAX];
  int rank = x->dims.n, k = (int)shape->n, lead = rank - k;
  if (k == 0 || lead < 0)
    return rill_kernel_error(ctx, "input X (%s) %s cannot take a crop of %d dims",
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&x->dims, s, sizeof s), k);
  rill_dims want = x->dims;
  for (int i = 0; i < k; i++) {
    int64_t c = shape->list.ints[i];
    if (c <= 0 || c > x->dims.d[lead + i] || (uint64_t)(x->dims.d[lead + i] - c) > RILL_MINSTD_M - 2)
      return rill_kernel_error(ctx, "attribute shape[%d] is %lld, input X (%s) %s has %lld there",
                               i, (long long)c, rill_kin_name(ctx, 0, 0),
                               rill_dims_str(&x->dims, s, sizeof s), (long long)x->dims.d[lead + i]);
    want.d[lead + i] = c;
  }
  int64_t sv = ctx->attrs[RILL_RANDOM_CROP_ATTR_STARTUP_SEED].v.i;
  if (seed && rill_tensor_is_set(seed)) {
    if (seed->dtype != RILL_DTYPE_INT64 || rill_tensor_numel(seed) < 1)
      return rill_kernel_error(ctx, "input Seed (%s) is %s with %lld values, expected int64 [1]",
                               rill_kin_name(ctx, 1, 0), rill_dtype_name(seed->dtype),
                               (long long)rill_tensor_numel(seed));
    sv = *(const int64_t *)rill_tensor_ptr(seed);
  }
  /* Seed and SeedOut are one variable in Fluid's programs: the seed is read before
   * SeedOut is allocated (the op sizes its own outputs for this). */
  RILL_TRY(rill_tensor_alloc(out, x->dtype, &want));
  if (out->lod.nlevels) rill_lod_clear(&out->lod);
  if (so) {
    rill_dims sd = {.n = 1, .d = {1}};
    RILL_TRY(rill_tensor_alloc(so, RILL_DTYPE_INT64, &sd));
  }
  int64_t batch = 1, in_inst = 1, out_inst = 1;
  for (int i = 0; i < lead; i++) batch *= x->dims.d[i];
  for (int i = lead; i < rank; i++) {
    in_inst *= x->dims.d[i];
    out_inst *= want.d[i];
  }
  size_t es = rill_dtype_size(x->dtype);
  const char *xp = rill_tensor_ptr(x);
  char *op = rill_tensor_ptr(out);
  int64_t off[RILL_MAX_DIMS], idx[RILL_MAX_DIMS], xst[RILL_MAX_DIMS];
  int64_t stride = 1;
  for (int i = k - 1; i >= 0; i--) {
    xst[i] = stride;
    stride *= x->dims.d[lead + i];
  }
  int64_t row = want.d[rank - 1]; /* elements copied at once */
  for (int64_t b = 0; b < batch; b++) {
    rill_minstd e;
    rill_minstd_seed(&e, (uint64_t)sv);
    rill_minstd_discard(&e, (uint64_t)b * (uint64_t)k);
    for (int i = 0; i < k; i++)
      off[i] = (int64_t)rill_minstd_uniform_int(&e, (uint64_t)(x->dims.d[lead + i] - want.d[lead + i]));
    const char *src = xp + (size_t)(b * in_inst) * es;
    char *dst = op + (size_t)(b * out_inst) * es;
    memset(idx, 0, sizeof idx);
    for (int64_t r = 0; r < out_inst / row; r++) {
      int64_t at = off[k - 1];
      for (int i = 0; i < k - 1; i++) at += (off[i] + idx[i]) * xst[i];
      memcpy(dst + (size_t)(r * row) * es, src + (size_t)at * es, (size_t)row * es);
      for (int i = k - 2; i >= 0 && ++idx[i] == want.d[lead + i]; i--) idx[i] = 0;
    }
  }
  if (so) {
    rill_minstd e;
    rill_minstd_seed(&e, (uint64_t)sv);
    rill_minstd_discard(&e, (uint64_t)batch * (uint64_t)k);
    *(int64_t *)rill_tensor_ptr(so) = (int64_t)rill_minstd_next(&e) + 1; /* the state */
  }
  return NULL;
}
