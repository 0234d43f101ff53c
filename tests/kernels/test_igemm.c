/* kernels/cpu/igemm.h: the int8 conv gives a naive int64 reference's sums exactly on
 * every path this CPU runs (scalar, AVX2, AVX-512 VNNI), for GEMM shapes with K off
 * the groups of 4 and the 64-byte vectors, few columns and rows, padding, strides,
 * dilations and groups, at the extremes of the levels (where a 16-bit step would
 * saturate), on one or several parts, from int8 or from float levels converted as they
 * are unfolded; depthwise convs on their direct path; one column's rows split across
 * threads; the float output is (float)sum [* row scale] [* scale] / range; values that
 * are not levels are refused with their index. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/igemm.h"

static uint32_t next(uint32_t *s) {
  *s = *s * 1103515245u + 12345u;
  return *s >> 8;
}

typedef struct shape {
  int64_t n, c, h, w, m, kh, kw, groups, sh, sw, dh, dw, pt, pb, pl, pr;
} shape;

static rill_conv_geom geom_of(const shape *s) {
  rill_conv_geom g = {.n = s->n, .c = s->c, .h = s->h, .w = s->w, .m = s->m, .kh = s->kh, .kw = s->kw,
                      .groups = s->groups, .sh = s->sh, .sw = s->sw, .dh = s->dh, .dw = s->dw,
                      .pt = s->pt, .pb = s->pb, .pl = s->pl, .pr = s->pr};
  g.oh = (s->h + s->pt + s->pb - (s->dh * (s->kh - 1) + 1)) / s->sh + 1;
  g.ow = (s->w + s->pl + s->pr - (s->dw * (s->kw - 1) + 1)) / s->sw + 1;
  return g;
}

static void reference(const rill_conv_geom *g, const int8_t *x, const float *w, int32_t *y) {
  int64_t cg = g->c / g->groups, mg = g->m / g->groups;
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t o = 0; o < g->m; o++)
      for (int64_t oy = 0; oy < g->oh; oy++)
        for (int64_t ox = 0; ox < g->ow; ox++) {
          int64_t sum = 0, grp = o / mg;
          for (int64_t c = 0; c < cg; c++)
            for (int64_t i = 0; i < g->kh; i++)
              for (int64_t j = 0; j < g->kw; j++) {
                int64_t iy = oy * g->sh - g->pt + i * g->dh, ix = ox * g->sw - g->pl + j * g->dw;
                if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) continue;
                int64_t xv = x[((n * g->c + grp * cg + c) * g->h + iy) * g->w + ix];
                sum += xv * (int64_t)w[((o * cg + c) * g->kh + i) * g->kw + j];
              }
          y[((n * g->m + o) * g->oh + oy) * g->ow + ox] = (int32_t)sum;
        }
}

/* fill: 0 random levels, 1 the extremes (x -128, w alternating +-127 by row). */
static void check_shape(const shape *s, int fill) {
  rill_conv_geom g = geom_of(s);
  cr_assert(g.oh > 0 && g.ow > 0);
  int64_t nx = s->n * s->c * s->h * s->w, k = s->c / s->groups * s->kh * s->kw, nw = s->m * k;
  int64_t ny = s->n * s->m * g.oh * g.ow;
  int8_t *x = malloc((size_t)nx);
  float *w = malloc(sizeof(float) * (size_t)nw);
  int32_t *want = malloc(sizeof(int32_t) * (size_t)ny), *got = malloc(sizeof(int32_t) * (size_t)ny);
  float *gotf = malloc(sizeof(float) * (size_t)ny);
  cr_assert(x && w && want && got && gotf);
  uint32_t seed = (uint32_t)(s->c * 7 + s->m * 13 + s->h * 31 + fill);
  for (int64_t i = 0; i < nx; i++) x[i] = fill ? -128 : (int8_t)((int)(next(&seed) % 256) - 128);
  for (int64_t i = 0; i < nw; i++)
    w[i] = fill ? ((i / k) % 2 ? -127.0f : 127.0f) : (float)((int)(next(&seed) % 255) - 127);
  reference(&g, x, w, want);
  float *xf = malloc(sizeof(float) * (size_t)(nx + 1)), *rs = malloc(sizeof(float) * (size_t)(s->m + 1));
  cr_assert(xf && rs);
  for (int64_t i = 0; i < nx; i++) xf[i] = (float)x[i];
  for (int64_t i = 0; i < s->m; i++) rs[i] = 0.5f + 0.0625f * (float)(i % 13);
  rill_i8_weights pw;
  int64_t bad = -1;
  cr_assert_eq(rill_i8_weights_pack(w, s->m, k, s->groups, false, &pw, &bad), RILL_I8_PACKED);
  for (int path = RILL_I8_SCALAR; path <= (int)rill_i8_path_for_cpu(); path++)
    for (int64_t threads = 1; threads <= 3; threads += 2) {
      memset(got, 0x5a, sizeof(int32_t) * (size_t)ny);
      rill_i8_out out = {.i32 = got};
      cr_assert(rill_i8_conv(NULL, threads, (rill_i8_path)path, &g, x, &pw, &out));
      for (int64_t i = 0; i < ny; i++)
        cr_assert_eq(got[i], want[i],
                     "%s, %lld parts' threads, c %lld h %lld w %lld m %lld k %lldx%lld g %lld: y[%lld] = %d, "
                     "expected %d",
                     rill_i8_path_name((rill_i8_path)path), (long long)threads, (long long)s->c,
                     (long long)s->h, (long long)s->w, (long long)s->m, (long long)s->kh,
                     (long long)s->kw, (long long)s->groups, (long long)i, got[i], want[i]);
      rill_i8_out fo = {.f32 = gotf, .scale = 0.75f, .range = 16129.0f};
      cr_assert(rill_i8_conv(NULL, threads, (rill_i8_path)path, &g, x, &pw, &fo));
      for (int64_t i = 0; i < ny; i++) {
        float e = (float)want[i] * 0.75f / 16129.0f;
        cr_assert(gotf[i] == e, "float y[%lld] = %.9g, expected %.9g", (long long)i, (double)gotf[i], (double)e);
      }
      /* float levels converted as they are unfolded: the same sums */
      memset(got, 0x5a, sizeof(int32_t) * (size_t)ny);
      cr_assert(rill_i8_conv_levels(NULL, threads, (rill_i8_path)path, &g, xf, &pw, &out));
      for (int64_t i = 0; i < ny; i++)
        cr_assert_eq(got[i], want[i], "from float levels, %s: y[%lld] = %d, expected %d",
                     rill_i8_path_name((rill_i8_path)path), (long long)i, got[i], want[i]);
      /* a scale per output channel, then the tensor's, then the divisor; and the first alone */
      for (int alone = 0; alone < 2; alone++) {
        rill_i8_out ro = {.f32 = gotf, .row_scale = rs, .no_scale = alone, .scale = 0.75f, .range = 16129.0f};
        cr_assert(rill_i8_conv(NULL, threads, (rill_i8_path)path, &g, x, &pw, &ro));
        for (int64_t i = 0; i < ny; i++) {
          float r = rs[(i / (g.oh * g.ow)) % g.m];
          float e = alone ? (float)want[i] * r / 16129.0f : (float)want[i] * r * 0.75f / 16129.0f;
          cr_assert(gotf[i] == e, "per-channel y[%lld] = %.9g, expected %.9g", (long long)i, (double)gotf[i],
                    (double)e);
        }
      }
    }
  rill_i8_weights_free(&pw);
  free(xf);
  free(rs);
  free(x);
  free(w);
  free(want);
  free(got);
  free(gotf);
}

/* A GEMM c [m, n] = w [m, k] x [k, n]: a 1x1 conv of one image of k channels, 1 x n. */
static shape gemm(int64_t m, int64_t n, int64_t k) {
  return (shape){.n = 1, .c = k, .h = 1, .w = n, .m = m, .kh = 1, .kw = 1, .groups = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1};
}

Test(igemm, gemm_shapes_off_every_block_edge) {
  const int64_t ms[] = {1, 7, 8, 9, 33};
  const int64_t ns[] = {1, 5, 8, 17, 31, 33, 100};
  const int64_t ks[] = {1, 3, 4, 5, 63, 64, 65, 130};
  for (size_t a = 0; a < RILL_COUNTOF(ms); a++)
    for (size_t b = 0; b < RILL_COUNTOF(ns); b++)
      for (size_t c = 0; c < RILL_COUNTOF(ks); c++) {
        shape s = gemm(ms[a], ns[b], ks[c]);
        check_shape(&s, 0);
      }
}

Test(igemm, convs_with_padding_strides_dilations_and_groups) {
  const shape shapes[] = {
      /* n c h w m kh kw groups sh sw dh dw pt pb pl pr */
      {2, 3, 9, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   /* 3x3, pad 1 */
      {1, 5, 10, 7, 9, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1},   /* stride 2 */
      {1, 3, 13, 13, 4, 7, 7, 1, 2, 2, 1, 1, 3, 3, 3, 3},  /* ResNet's first layer, small */
      {1, 4, 9, 9, 6, 3, 3, 1, 1, 1, 2, 2, 2, 2, 2, 2},    /* dilation 2 */
      {1, 6, 8, 6, 9, 3, 2, 3, 1, 2, 1, 1, 0, 2, 1, 0},    /* 3 groups, asymmetric */
      {2, 8, 5, 5, 8, 1, 1, 2, 1, 1, 1, 1, 0, 0, 0, 0},    /* 1x1, 2 groups */
      {1, 16, 7, 7, 16, 3, 3, 16, 1, 1, 1, 1, 1, 1, 1, 1}, /* depthwise */
      {1, 7, 6, 6, 3, 1, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},    /* 1x1, stride 2 */
      {1, 2, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 2, 2, 2, 2},    /* pads wider than the image */
      {1, 3, 11, 14, 4, 5, 5, 1, 3, 3, 1, 1, 2, 1, 4, 2},  /* stride 3, uneven pads */
      {2, 2, 9, 10, 3, 3, 3, 1, 2, 3, 2, 2, 1, 2, 3, 1},   /* strides 2 x 3, dilation 2 */
  };
  for (size_t i = 0; i < RILL_COUNTOF(shapes); i++) check_shape(&shapes[i], 0);
}

/* Depthwise convs (groups == C, one or more output channels per group) run direct
 * (igemm.c, dw_run), not as a GEMM: the same sums on every path and split. */
Test(igemm, depthwise_convs_with_strides_padding_dilation_and_multipliers) {
  const shape shapes[] = {
      /* n c h w m kh kw groups sh sw dh dw pt pb pl pr */
      {1, 32, 20, 37, 32, 3, 3, 32, 1, 1, 1, 1, 1, 1, 1, 1}, /* MobileNet's 3x3, rows wider than a vector */
      {2, 5, 19, 21, 5, 3, 3, 5, 2, 2, 1, 1, 1, 1, 1, 1},    /* stride 2, batch 2 */
      {1, 3, 11, 14, 3, 5, 5, 3, 3, 3, 1, 1, 2, 1, 4, 2},    /* stride 3, uneven pads */
      {1, 4, 12, 13, 4, 3, 3, 4, 1, 1, 2, 3, 2, 2, 3, 3},    /* dilations 2 x 3 */
      {1, 6, 9, 10, 6, 3, 3, 6, 2, 3, 2, 2, 1, 2, 3, 1},     /* strides 2 x 3, dilation 2 */
      {1, 3, 8, 8, 6, 3, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0},      /* two filters per channel, no padding */
      {1, 2, 7, 9, 18, 3, 2, 2, 2, 1, 1, 1, 1, 0, 0, 1},     /* nine per channel (over a block of 8) */
      {1, 2, 3, 3, 2, 3, 3, 2, 1, 1, 1, 1, 2, 2, 2, 2},      /* pads wider than the image */
      {1, 3, 5, 6, 3, 7, 7, 3, 2, 2, 1, 1, 3, 3, 3, 3},      /* 7x7 over a smaller image */
      {1, 40, 6, 6, 40, 1, 1, 40, 1, 1, 1, 1, 0, 0, 0, 0},   /* 1x1: a channel scale */
  };
  for (size_t i = 0; i < RILL_COUNTOF(shapes); i++) check_shape(&shapes[i], 0);
  shape e = {1, 8, 9, 40, 8, 3, 3, 8, 1, 1, 1, 1, 1, 1, 1, 1};
  check_shape(&e, 1);
}

/* One column (a batch-1 mul: the VNNI path's matrix-vector kernel, K odd in steps of 4
 * too) or a few, and many rows: with several threads and enough products the rows
 * split into runs of whole blocks (conv_run); every split gives the same sums, at the
 * extremes too. */
Test(igemm, one_column_splits_its_rows_across_threads) {
  shape a = gemm(1000, 1, 2048), b = gemm(520, 1, 8193), c = gemm(17, 3, 700), d = gemm(9, 1, 4608);
  shape e = gemm(200, 5, 4096); /* five columns, 25 blocks of rows: three runs */
  check_shape(&a, 0);
  check_shape(&b, 0);
  check_shape(&c, 0);
  check_shape(&d, 1);
  check_shape(&e, 0);
}

Test(igemm, extreme_levels_never_saturate) {
  shape a = gemm(9, 37, 4608); /* every product -128 * +-127: |sum| = 4608 * 16256 */
  check_shape(&a, 1);
  shape b = {1, 64, 6, 6, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  check_shape(&b, 1);
}

Test(igemm, values_that_are_not_levels_are_refused) {
  const float bad_w[] = {0.5f, 128.0f, -128.0f, NAN, INFINITY};
  for (size_t i = 0; i < RILL_COUNTOF(bad_w); i++) {
    float w[6] = {1, 2, 3, 4, 5, 6};
    w[4] = bad_w[i];
    rill_i8_weights pw;
    int64_t bad = -1;
    cr_assert_eq(rill_i8_weights_pack(w, 2, 3, 1, false, &pw, &bad), RILL_I8_NOT_LEVEL, "w = %g", (double)bad_w[i]);
    cr_assert_eq(bad, 4);
  }
  const float bad_x[] = {0.25f, 128.0f, -129.0f, NAN};
  for (size_t i = 0; i < RILL_COUNTOF(bad_x); i++) {
    float x[5] = {-128, 127, 0, 1, 2};
    int8_t q[5];
    x[3] = bad_x[i];
    int64_t bad = -1;
    cr_assert(!rill_i8_from_levels(x, 5, q, &bad), "x = %g", (double)bad_x[i]);
    cr_assert_eq(bad, 3);
  }
  float x[3] = {-128, 127, -0.0f};
  int8_t q[3];
  int64_t bad = -1;
  cr_assert(rill_i8_from_levels(x, 3, q, &bad));
  cr_assert(q[0] == -128 && q[1] == 127 && q[2] == 0);
  /* the check alone, 200 values: inside the first 64 (AVX-512 blocks where the level
   * has them), the next 64, the 16-wide steps after them, and the tail */
  const float bad_c[] = {0.5f, 128.0f, -128.5f, NAN, -INFINITY};
  const int64_t at[] = {5, 70, 131, 199};
  float xc[200];
  for (int k = 0; k < 200; k++) xc[k] = (float)(k % 256 - 128);
  int64_t okbad = -1;
  cr_assert(rill_i8_check_levels(xc, 200, &okbad));
  for (size_t i = 0; i < RILL_COUNTOF(bad_c); i++)
    for (size_t j = 0; j < RILL_COUNTOF(at); j++) {
      float keep = xc[at[j]];
      xc[at[j]] = bad_c[i];
      int64_t b = -1;
      cr_assert(!rill_i8_check_levels(xc, 200, &b), "x[%lld] = %g", (long long)at[j], (double)bad_c[i]);
      cr_assert_eq(b, at[j]);
      xc[at[j]] = keep;
    }
}

/* 16 values at a time and the tail: every level converts, and a bad value anywhere
 * (inside a vector or in the tail) is found at its index. */
Test(igemm, levels_convert_in_vectors_and_tail) {
  float x[41];
  int8_t q[41];
  for (int i = 0; i < 41; i++) x[i] = (float)((i * 53) % 256 - 128);
  x[7] = -0.0f;
  int64_t bad = -1;
  cr_assert(rill_i8_from_levels(x, 41, q, &bad));
  cr_assert(rill_i8_check_levels(x, 41, &bad));
  for (int i = 0; i < 41; i++) cr_assert_eq(q[i], (int8_t)(int)x[i], "q[%d] = %d for %g", i, q[i], (double)x[i]);
  const int at[] = {0, 5, 17, 31, 32, 40};
  const float bad_x[] = {NAN, 0.5f, 128.0f, -128.5f, INFINITY, 1e10f};
  for (size_t a = 0; a < RILL_COUNTOF(at); a++)
    for (size_t b = 0; b < RILL_COUNTOF(bad_x); b++) {
      float y[41];
      memcpy(y, x, sizeof y);
      y[at[a]] = bad_x[b];
      if (at[a] != 40) y[40] = 0.25f; /* a later bad value: the first is reported */
      bad = -1;
      cr_assert(!rill_i8_from_levels(y, 41, q, &bad), "%g at %d", (double)bad_x[b], at[a]);
      cr_assert_eq(bad, at[a], "%g at %d: reported %lld", (double)bad_x[b], at[a], (long long)bad);
      bad = -1;
      cr_assert(!rill_i8_check_levels(y, 41, &bad), "check: %g at %d", (double)bad_x[b], at[a]);
      cr_assert_eq(bad, at[a], "check: %g at %d: reported %lld", (double)bad_x[b], at[a], (long long)bad);
    }
}
