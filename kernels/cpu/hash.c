/* hash's CPU kernel (int32, int64) with XXH64 written from its published specification:
 * 32-byte stripes into four lanes, then 8-, 4- and 1-byte tails, then the avalanche. */
#include <string.h>

#include "kernels/cpu/kernels.h"

#define P1 11400714785074694791ULL
#define P2 14029467366897019727ULL
#define P3 1609587929392839161ULL
#define P4 9650029242287828579ULL
#define P5 2870177450012600261ULL

static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static uint64_t lane(uint64_t acc, uint64_t v) { return rotl(acc + v * P2, 31) * P1; }

/* Little-endian loads (the bytes as stored, as the reference reads them on x86). */
static uint64_t load64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static uint32_t load32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t xxh64(const void *data, size_t n, uint64_t seed) {
  const unsigned char *p = data, *end = p + n;
  uint64_t h;
  if (n >= 32) {
    uint64_t v[4] = {seed + P1 + P2, seed + P2, seed, seed - P1};
    for (; p + 32 <= end; p += 32)
      for (int k = 0; k < 4; k++) v[k] = lane(v[k], load64(p + 8 * k));
    h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
    for (int k = 0; k < 4; k++) h = (h ^ lane(0, v[k])) * P1 + P4;
  } else {
    h = seed + P5;
  }
  h += (uint64_t)n;
  for (; p + 8 <= end; p += 8) h = rotl(h ^ lane(0, load64(p)), 27) * P1 + P4;
  if (p + 4 <= end) {
    h = rotl(h ^ (uint64_t)load32(p) * P1, 23) * P2 + P3;
    p += 4;
  }
  for (; p < end; p++) h = rotl(h ^ (uint64_t)*p * P5, 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  return h ^ (h >> 32);
}

#define HASH(T, DT, NAME)                                                                    \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *x, *out;                                                                   \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
    if (x->dims.n != 2)                                                                     \
      return rill_kernel_error(ctx, "input X (%s) must be [N, D]", rill_kin_name(ctx, 0, 0)); \
    int64_t nh = ctx->attrs[RILL_HASH_ATTR_NUM_HASH].v.i;                                   \
    int64_t mod = ctx->attrs[RILL_HASH_ATTR_MOD_BY].v.i;                                    \
    if (nh <= 0 || mod <= 0)                                                                \
      return rill_kernel_error(ctx, "attributes num_hash and mod_by must be positive");     \
    int64_t N = x->dims.d[0], D = x->dims.d[1];                                             \
    rill_dims od = {.n = 3, .d = {N, nh, 1}};                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                    \
    const T *xp = rill_tensor_ptr(x);                                                       \
    T *op = rill_tensor_ptr(out);                                                           \
    for (int64_t r = 0; r < N; r++)                                                         \
      for (int64_t k = 0; k < nh; k++)                                                      \
        op[r * nh + k] = (T)(xxh64(xp + r * D, (size_t)D * sizeof(T), (uint64_t)k) %   \
                             (uint64_t)mod);                                                \
    return NULL;                                                                            \
  }

HASH(int32_t, RILL_DTYPE_INT32, rill_cpu_hash_int32)
HASH(int64_t, RILL_DTYPE_INT64, rill_cpu_hash_int64)
