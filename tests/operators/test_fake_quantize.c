/* The quantization simulation ops against naive references written here: Paddle's
 * inverse scale, round half to even with clamping (round_type 0) or clipping and round
 * half away from zero (round_type 1), dequantization q * s / range; all bit-exact. */
#include "op_test.h"
#include "framework/base/isa.h"

#define N 24

static float ref_inv(float s) { return s <= 1e-30f ? 1.0f / (s + 1e-6f) : 1.0f / s; }

static float ref_level(float x, float s, int bits, int round_type) {
  float bin = (float)((1 << (bits - 1)) - 1);
  if (round_type == 0) {
    float q = nearbyintf(bin * ref_inv(s) * x); /* default mode: ties to even */
    return fminf(fmaxf(q, -bin - 1.0f), bin);
  }
  float c = fminf(fmaxf(x, -s), s);
  return roundf(bin * ref_inv(s) * c);
}

static float ref_qdq(float x, float s, int bits, int round_type) {
  float bin = (float)((1 << (bits - 1)) - 1);
  return ref_level(x, s, bits, round_type) * s / bin;
}

static void fill(float *x, int n, uint32_t seed, float amp) {
  for (int i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 2 * amp;
  }
}

static const float *out_of(op_harness *h, const char *name) {
  rill_tensor *t = op_harness_tensor(h, name);
  cr_assert_not_null(t, "%s missing", name);
  return rill_tensor_ptr(t);
}

static void expect_exact(const float *got, const float *want, int n, const char *what) {
  for (int i = 0; i < n; i++)
    cr_assert(got[i] == want[i], "%s [%d]: %.9g != %.9g", what, i, (double)got[i], (double)want[i]);
}

/* ---- fake_quantize_abs_max / fake_quantize_dequantize_abs_max ---- */

static void run_abs_max(const char *type, const float *x, int n, int bits, int rt, bool dq) {
  op_harness *h = harness(type);
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(n), x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "OutScale", "scale"));
  if (bits) OK(op_harness_attr_int(h, "bit_length", bits));
  if (rt >= 0) OK(op_harness_attr_int(h, "round_type", rt));
  OK(op_harness_run(h));
  float s = 0, want[64];
  for (int i = 0; i < n; i++) s = fmaxf(s, fabsf(x[i]));
  int b = bits ? bits : 8, r = rt >= 0 ? rt : 1; /* defaults: 8 bits, std::round */
  for (int i = 0; i < n; i++) want[i] = dq ? ref_qdq(x[i], s, b, r) : ref_level(x[i], s, b, r);
  expect_dims(op_harness_tensor(h, "scale"), DIMS(1));
  cr_assert(out_of(h, "scale")[0] == s);
  expect_exact(out_of(h, "out"), want, n, type);
  op_harness_destroy(h);
}

Test(fake_quantize, abs_max_matches_reference) {
  float x[N];
  fill(x, N, 3, 2.5f);
  for (int dq = 0; dq < 2; dq++) {
    const char *type = dq ? "fake_quantize_dequantize_abs_max" : "fake_quantize_abs_max";
    for (int rt = -1; rt < 2; rt++) {
      run_abs_max(type, x, N, 0, rt, dq);
      run_abs_max(type, x, N, 4, rt, dq);
      run_abs_max(type, x, N, 16, rt, dq);
    }
  }
}

/* bit_length 2: range 1, scale 4, so x = +-2 lands on +-0.5 exactly */
Test(fake_quantize, ties_round_to_even_or_away_by_round_type) {
  float x[5] = {2, -2, 4, -4, 1};
  const float even[5] = {0, 0, 1, -1, 0}, away[5] = {1, -1, 1, -1, 0};
  for (int rt = 0; rt < 2; rt++) {
    op_harness *h = harness("fake_quantize_abs_max");
    bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(5), x);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_output(h, "OutScale", "scale"));
    OK(op_harness_attr_int(h, "bit_length", 2));
    OK(op_harness_attr_int(h, "round_type", rt));
    OK(op_harness_run(h));
    expect_exact(out_of(h, "out"), rt ? away : even, 5, "ties");
    op_harness_destroy(h);
  }
}

Test(fake_quantize, all_zero_input_gives_zero_scale_and_zeros) {
  float x[6] = {0};
  for (int dq = 0; dq < 2; dq++)
    for (int rt = 0; rt < 2; rt++) {
      op_harness *h = harness(dq ? "fake_quantize_dequantize_abs_max" : "fake_quantize_abs_max");
      bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), x);
      OK(op_harness_output(h, "Out", "out"));
      OK(op_harness_output(h, "OutScale", "scale"));
      OK(op_harness_attr_int(h, "round_type", rt));
      OK(op_harness_run(h));
      cr_assert(out_of(h, "scale")[0] == 0);
      expect_dims(op_harness_tensor(h, "out"), DIMS(2, 3));
      for (int i = 0; i < 6; i++) cr_assert(out_of(h, "out")[i] == 0);
      op_harness_destroy(h);
    }
}

Test(fake_quantize, bad_bit_length_and_round_type_name_the_op) {
  float x[2] = {1, 2};
  const char *types[] = {"fake_quantize_abs_max", "fake_quantize_dequantize_abs_max",
                         "fake_quantize_moving_average_abs_max", "fake_quantize_range_abs_max",
                         "fake_channel_wise_quantize_abs_max", "quantize_linear"};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
    for (int which = 0; which < 3; which++) {
      op_harness *h = harness(types[t]);
      bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2), x);
      OK(op_harness_output(h, types[t][0] == 'q' ? "Y" : "Out", "out"));
      if (types[t][0] != 'q') OK(op_harness_output(h, "OutScale", "scale"));
      if (which == 0) OK(op_harness_attr_int(h, "bit_length", 17));
      if (which == 1) OK(op_harness_attr_int(h, "bit_length", 0));
      if (which == 2) OK(op_harness_attr_int(h, "round_type", 2));
      if (which < 2)
        EXPECT_ERROR(op_harness_run(h), types[t], "bit_length");
      else
        EXPECT_ERROR(op_harness_run(h), types[t], "round_type is 2");
      op_harness_destroy(h);
    }
}

Test(fake_quantize, straight_through_gradient) {
  float g[6] = {0.5f, -1, 2, 3, -4, 0.25f}, x[6] = {1, 2, 3, 4, 5, 6};
  op_harness *h = harness("fake_quantize_dequantize_grad");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), x);
  bind_input(h, "Out@GRAD", "g", RILL_DTYPE_FP32, DIMS(2, 3), g);
  OK(op_harness_output(h, "X@GRAD", "dx"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "dx"), DIMS(2, 3));
  expect_exact(out_of(h, "dx"), g, 6, "X@GRAD");
  op_harness_destroy(h);
}

/* ---- fake_quantize_range_abs_max ---- */

Test(fake_quantize, range_abs_max_is_test_uses_in_scale) {
  float x[N], s = 0.75f, want[N];
  fill(x, N, 9, 1.0f); /* some |x| beyond the scale: clipped (1) or clamped (0) */
  for (int rt = 0; rt < 2; rt++) {
    op_harness *h = harness("fake_quantize_range_abs_max");
    bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(4, 6), x);
    bind_input(h, "InScale", "s", RILL_DTYPE_FP32, DIMS(1), &s);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_output(h, "OutScale", "s"));
    OK(op_harness_attr_bool(h, "is_test", true));
    OK(op_harness_attr_int(h, "round_type", rt));
    OK(op_harness_run(h));
    for (int i = 0; i < N; i++) want[i] = ref_level(x[i], s, 8, rt);
    expect_exact(out_of(h, "out"), want, N, "range");
    cr_assert(out_of(h, "s")[0] == s);
    op_harness_destroy(h);
  }
}

/* Training over steps 0..7 with a window of 3: the scale follows the window's maximum,
 * dropping a maximum once it leaves the window. Reference: the same rule, written out. */
Test(fake_quantize, range_abs_max_training_window) {
  const float peaks[8] = {1, 3, 2, 0.5f, 0.25f, 0.1f, 4, 0.2f};
  float x[4], s0 = 0, zeros[3] = {0, 0, 0};
  int64_t it0 = 0;
  op_harness *h = harness("fake_quantize_range_abs_max");
  for (int i = 0; i < 4; i++) x[i] = 0;
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(4), x);
  bind_input(h, "InScale", "s", RILL_DTYPE_FP32, DIMS(1), &s0);
  bind_input(h, "Iter", "iter", RILL_DTYPE_INT64, DIMS(1), &it0);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "OutScale", "s"));
  OK(op_harness_output(h, "OutScales", "window"));
  OK(op_harness_attr_int(h, "window_size", 3));
  /* without the window variable: an error naming it */
  EXPECT_ERROR(op_harness_run(h), "fake_quantize_range_abs_max", "OutScales (window)");
  rill_tensor *w = op_harness_make(RILL_DTYPE_FP32, DIMS(3), zeros);
  OK(rill_scope_set_tensor(op_harness_scope(h), "window", w));
  op_harness_free_tensor(w);
  float ref_win[3] = {0, 0, 0}, ref_s = 0;
  for (int64_t step = 0; step < 8; step++) {
    float *xp = rill_tensor_ptr(op_harness_tensor(h, "x"));
    xp[0] = 0.1f, xp[1] = -peaks[step], xp[2] = peaks[step] / 3, xp[3] = 0;
    *(int64_t *)rill_tensor_ptr(op_harness_tensor(h, "iter")) = step;
    OK(op_harness_run(h));
    float removed = ref_win[step % 3];
    ref_win[step % 3] = peaks[step];
    if (ref_s < peaks[step]) {
      ref_s = peaks[step];
    } else if (fabs((double)(removed - ref_s)) < 1e-6) {
      int n = step > 3 ? 3 : (int)step;
      ref_s = 0;
      for (int k = 0; k < (n ? n : 1); k++) ref_s = fmaxf(ref_s, ref_win[k]);
    }
    cr_assert(out_of(h, "s")[0] == ref_s, "step %lld: scale %g, expected %g", (long long)step,
              (double)out_of(h, "s")[0], (double)ref_s);
    expect_exact(out_of(h, "window"), ref_win, 3, "window");
    float want[4];
    for (int i = 0; i < 4; i++) want[i] = ref_level(xp[i], ref_s, 8, 1);
    expect_exact(out_of(h, "out"), want, 4, "range training");
  }
  op_harness_destroy(h);
}

/* ---- moving average ---- */

Test(fake_quantize, moving_average_training_updates_state_accum_scale) {
  float x[N];
  fill(x, N, 5, 3.0f);
  float s = 0.1f, accum = 2.0f, state = 1.5f, rate = 0.8f;
  for (int dq = 0; dq < 2; dq++) {
    const char *type = dq ? "fake_quantize_dequantize_moving_average_abs_max"
                          : "fake_quantize_moving_average_abs_max";
    op_harness *h = harness(type);
    bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(N), x);
    bind_input(h, "InScale", "scale", RILL_DTYPE_FP32, DIMS(1), &s);
    bind_input(h, "InAccum", "accum", RILL_DTYPE_FP32, DIMS(1), &accum);
    bind_input(h, "InState", "state", RILL_DTYPE_FP32, DIMS(1), &state);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_output(h, "OutScale", "scale")); /* in place, as Paddle's programs do */
    OK(op_harness_output(h, "OutAccum", "accum"));
    OK(op_harness_output(h, "OutState", "state"));
    OK(op_harness_attr_float(h, "moving_rate", rate));
    OK(op_harness_run(h));
    float m = 0;
    for (int i = 0; i < N; i++) m = fmaxf(m, fabsf(x[i]));
    float st = rate * state + 1.0f, ac = rate * accum + m, sc = ac / st, want[N];
    cr_assert(out_of(h, "state")[0] == st);
    cr_assert(out_of(h, "accum")[0] == ac);
    cr_assert(out_of(h, "scale")[0] == sc);
    for (int i = 0; i < N; i++) want[i] = dq ? ref_qdq(x[i], sc, 8, 1) : ref_level(x[i], sc, 8, 1);
    expect_exact(out_of(h, "out"), want, N, type);
    op_harness_destroy(h);
  }
}

Test(fake_quantize, moving_average_is_test_uses_in_scale_and_clamps) {
  float x[4] = {2, -2, 0.5f, -0.25f}, s = 1;
  const float clamp[4] = {127, -128, 64, -32}, clip[4] = {127, -127, 64, -32};
  for (int rt = 0; rt < 2; rt++) {
    op_harness *h = harness("fake_quantize_moving_average_abs_max");
    bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(4), x);
    bind_input(h, "InScale", "s", RILL_DTYPE_FP32, DIMS(1), &s);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_output(h, "OutScale", "s"));
    OK(op_harness_attr_bool(h, "is_test", true));
    OK(op_harness_attr_int(h, "round_type", rt));
    OK(op_harness_run(h));
    expect_exact(out_of(h, "out"), rt ? clip : clamp, 4, "is_test");
    cr_assert(out_of(h, "s")[0] == 1);
    op_harness_destroy(h);
  }
  /* training without the state inputs */
  op_harness *h = harness("fake_quantize_dequantize_moving_average_abs_max");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(4), x);
  bind_input(h, "InScale", "s", RILL_DTYPE_FP32, DIMS(1), &s);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "OutScale", "s"));
  EXPECT_ERROR(op_harness_run(h), "fake_quantize_dequantize_moving_average_abs_max", "InState");
  op_harness_destroy(h);
}

/* A long input (16, 8 or 4 lanes at a time in the kernel by vector level, then a
 * tail): halves, signed zeros, infinities, values past the scale and denormals, levels
 * and dequantized, at every level this CPU runs. */
Test(fake_quantize, long_spans_match_reference_lane_by_lane) {
  enum { L = 1003 };
  static float x[L], want[L];
  const float s = 0.75f;
  fill(x, L, 11, 2.0f);
  for (int i = 0; i < L; i += 7) x[i] = (float)((i % 255) - 127) * 0.5f * s / 127.0f; /* near halves */
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, 1e-45f, -1e-45f, 0.75f, -0.75f, 3e38f};
  for (int k = 0; k < 9; k++) x[100 + 3 * k] = x[L - 1 - k] = special[k];
  const rill_cpu_isa_level was = rill_cpu_isa_level_get();
  const rill_cpu_isa_level levels[] = {RILL_CPU_ISA_GENERIC, RILL_CPU_ISA_AVX2, RILL_CPU_ISA_AVX512};
  for (int l = 0; l < 3 && levels[l] <= rill_cpu_isa_level_native(); l++) {
    rill_cpu_isa_level_set(levels[l]);
    for (int dq = 0; dq < 2; dq++) {
      op_harness *h =
          harness(dq ? "fake_quantize_dequantize_moving_average_abs_max" : "fake_quantize_moving_average_abs_max");
      bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(L), x);
      bind_input(h, "InScale", "s", RILL_DTYPE_FP32, DIMS(1), &s);
      OK(op_harness_output(h, "Out", "out"));
      OK(op_harness_output(h, "OutScale", "s"));
      OK(op_harness_attr_bool(h, "is_test", true));
      OK(op_harness_run(h));
      for (int i = 0; i < L; i++) want[i] = dq ? ref_qdq(x[i], s, 8, 1) : ref_level(x[i], s, 8, 1);
      const float *got = out_of(h, "out");
      for (int i = 0; i < L; i++)
        cr_assert(memcmp(&got[i], &want[i], sizeof(float)) == 0, "level %s dq %d [%d] x %a: %a, expected %a",
                  rill_cpu_isa_level_name(levels[l]), dq, i, (double)x[i], (double)got[i], (double)want[i]);
      op_harness_destroy(h);
    }
  }
  rill_cpu_isa_level_set(was);
}

Test(fake_quantize, moving_average_zero_scale_gives_zeros) {
  float x[3] = {0, 0, 0}, s = 0, accum = 0, state = 0;
  op_harness *h = harness("fake_quantize_dequantize_moving_average_abs_max");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(3), x);
  bind_input(h, "InScale", "s", RILL_DTYPE_FP32, DIMS(1), &s);
  bind_input(h, "InAccum", "a", RILL_DTYPE_FP32, DIMS(1), &accum);
  bind_input(h, "InState", "st", RILL_DTYPE_FP32, DIMS(1), &state);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "OutScale", "s"));
  OK(op_harness_output(h, "OutAccum", "a"));
  OK(op_harness_output(h, "OutState", "st"));
  OK(op_harness_run(h));
  cr_assert(out_of(h, "s")[0] == 0 && out_of(h, "st")[0] == 1);
  for (int i = 0; i < 3; i++) cr_assert(out_of(h, "out")[i] == 0);
  op_harness_destroy(h);
}

/* ---- fake_dequantize_max_abs ---- */

Test(fake_quantize, dequantize_max_abs) {
  float x[6] = {127, -128, 3, 0, -5, 64}, s = 2.5f, want[6];
  op_harness *h = harness("fake_dequantize_max_abs");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), x);
  bind_input(h, "Scale", "s", RILL_DTYPE_FP32, DIMS(1), &s);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_float(h, "max_range", 127));
  OK(op_harness_run(h));
  for (int i = 0; i < 6; i++) want[i] = x[i] * s / 127.0f;
  expect_exact(out_of(h, "out"), want, 6, "dequantize");
  op_harness_destroy(h);
  for (int bad = 0; bad < 2; bad++) {
    h = harness("fake_dequantize_max_abs");
    bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), x);
    bind_input(h, "Scale", "s", RILL_DTYPE_FP32, DIMS(1), &s);
    OK(op_harness_output(h, "Out", "out"));
    if (bad) OK(op_harness_attr_float(h, "max_range", 0));
    EXPECT_ERROR(op_harness_run(h), "fake_dequantize_max_abs", "max_range");
    op_harness_destroy(h);
  }
}

/* ---- channel-wise ---- */

/* Channel of element i of a [d0, d1, d2] tensor along axis. */
static int chan(int i, int axis, int d1, int d2) { return axis == 0 ? i / (d1 * d2) : (i / d2) % d1; }

Test(fake_quantize, channel_wise_quantize_axis_0_and_1) {
  float x[N], want[N];
  fill(x, N, 11, 4.0f);
  x[4] = 0, x[5] = 0; /* fine: channel 1 of axis 1 keeps other values */
  for (int axis = 0; axis < 2; axis++)
    for (int rt = 0; rt < 2; rt++) {
      op_harness *h = harness("fake_channel_wise_quantize_abs_max");
      bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3, 4), x);
      OK(op_harness_output(h, "Out", "out"));
      OK(op_harness_output(h, "OutScale", "scales"));
      OK(op_harness_attr_int(h, "quant_axis", axis));
      OK(op_harness_attr_int(h, "round_type", rt));
      OK(op_harness_run(h));
      int nc = axis == 0 ? 2 : 3;
      float s[3] = {0, 0, 0};
      for (int i = 0; i < N; i++) s[chan(i, axis, 3, 4)] = fmaxf(s[chan(i, axis, 3, 4)], fabsf(x[i]));
      expect_dims(op_harness_tensor(h, "scales"), (int64_t[]){nc}, 1);
      expect_exact(out_of(h, "scales"), s, nc, "scales");
      for (int i = 0; i < N; i++) want[i] = ref_level(x[i], s[chan(i, axis, 3, 4)], 8, rt);
      expect_exact(out_of(h, "out"), want, N, "channel quantize");
      /* is_test: the stored OutScale is used, not recomputed */
      float *sp = rill_tensor_ptr(op_harness_tensor(h, "scales"));
      for (int c = 0; c < nc; c++) sp[c] = s[c] = 0.5f * (float)(c + 1);
      OK(op_harness_attr_bool(h, "is_test", true));
      OK(op_harness_run(h));
      for (int i = 0; i < N; i++) want[i] = ref_level(x[i], s[chan(i, axis, 3, 4)], 8, rt);
      expect_exact(out_of(h, "out"), want, N, "channel quantize is_test");
      op_harness_destroy(h);
    }
}

Test(fake_quantize, channel_wise_is_test_needs_stored_scales) {
  float x[6] = {1, 2, 3, 4, 5, 6};
  op_harness *h = harness("fake_channel_wise_quantize_abs_max");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "OutScale", "scales"));
  OK(op_harness_attr_bool(h, "is_test", true));
  EXPECT_ERROR(op_harness_run(h), "fake_channel_wise_quantize_abs_max", "OutScale (scales)");
  op_harness_destroy(h);
}

Test(fake_quantize, channel_wise_zero_channel_and_bad_axis) {
  float x[6] = {0, 0, 0, 1, -2, 0.5f};
  op_harness *h = harness("fake_channel_wise_quantize_abs_max");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "OutScale", "scales"));
  OK(op_harness_run(h));
  const float *o = out_of(h, "out"), *s = out_of(h, "scales");
  cr_assert(s[0] == 0 && s[1] == 2);
  for (int i = 0; i < 3; i++) cr_assert(o[i] == 0);
  cr_assert(o[3] == 64 && o[4] == -127 && o[5] == 32);
  op_harness_destroy(h);
  for (int bad = 0; bad < 2; bad++) {
    h = harness("fake_channel_wise_quantize_abs_max");
    if (bad)
      bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(6), x);
    else
      bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), x);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_output(h, "OutScale", "scales"));
    OK(op_harness_attr_int(h, "quant_axis", bad ? 1 : 2));
    EXPECT_ERROR(op_harness_run(h), "fake_channel_wise_quantize_abs_max", "quant_axis");
    op_harness_destroy(h);
  }
}

Test(fake_quantize, channel_wise_dequantize_one_scale) {
  float x[N], want[N], s[3] = {0.5f, 2, 0};
  fill(x, N, 13, 127.0f);
  for (int axis = 0; axis < 2; axis++) {
    op_harness *h = harness("fake_channel_wise_dequantize_max_abs");
    bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3, 4), x);
    bind_input(h, "Scales", "s", RILL_DTYPE_FP32, DIMS(axis ? 3 : 2), s);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_attr_int(h, "quant_axis", axis));
    OK(op_harness_attr_ints(h, "quant_bits", (int32_t[]){4}, 1));
    OK(op_harness_run(h));
    for (int i = 0; i < N; i++) want[i] = x[i] * s[chan(i, axis, 3, 4)] / 7.0f;
    expect_exact(out_of(h, "out"), want, N, "channel dequantize");
    op_harness_destroy(h);
  }
}

Test(fake_quantize, channel_wise_dequantize_two_scales) {
  float x[N], want[N], s0[3] = {0.5f, 2, 3}, s1 = 1.25f;
  fill(x, N, 17, 127.0f);
  op_harness *h = harness("fake_channel_wise_dequantize_max_abs");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3, 4), x);
  bind_input(h, "Scales", "s0", RILL_DTYPE_FP32, DIMS(3), s0);
  bind_input(h, "Scales", "s1", RILL_DTYPE_FP32, DIMS(1), &s1);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "quant_bits", (int32_t[]){8, 8}, 2));
  OK(op_harness_run(h)); /* x_num_col_dims 1: channels along dim 1 */
  for (int i = 0; i < N; i++) want[i] = x[i] * s0[chan(i, 1, 3, 4)] * s1 / (127.0f * 127.0f);
  expect_exact(out_of(h, "out"), want, N, "two scales");
  op_harness_destroy(h);
  /* quant_bits too short for two scales; three scales */
  for (int bad = 0; bad < 2; bad++) {
    h = harness("fake_channel_wise_dequantize_max_abs");
    bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3, 4), x);
    bind_input(h, "Scales", "s0", RILL_DTYPE_FP32, DIMS(3), s0);
    bind_input(h, "Scales", "s1", RILL_DTYPE_FP32, DIMS(1), &s1);
    if (bad) bind_input(h, "Scales", "s2", RILL_DTYPE_FP32, DIMS(1), &s1);
    OK(op_harness_output(h, "Out", "out"));
    if (bad) OK(op_harness_attr_ints(h, "quant_bits", (int32_t[]){8, 8, 8}, 3));
    EXPECT_ERROR(op_harness_run(h), "fake_channel_wise_dequantize_max_abs", bad ? "Scales" : "quant_bits");
    op_harness_destroy(h);
  }
}

/* ---- quantize_linear / dequantize_linear ---- */

Test(fake_quantize, quantize_linear_per_tensor_and_per_channel) {
  float x[N], want[N], s[3] = {1.5f, 0.25f, 0};
  fill(x, N, 19, 2.0f);
  x[0] = 0.75f * 2 / 127; /* a tie at scale 1.5 ... near one, whatever float makes it */
  for (int axis = -1; axis < 2; axis++)
    for (int rt = -1; rt < 2; rt++) {
      op_harness *h = harness("quantize_linear");
      bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3, 4), x);
      bind_input(h, "Scale", "s", RILL_DTYPE_FP32, DIMS(axis < 0 ? 1 : axis ? 3 : 2), s);
      OK(op_harness_output(h, "Y", "y"));
      OK(op_harness_attr_int(h, "quant_axis", axis));
      if (rt >= 0) OK(op_harness_attr_int(h, "round_type", rt));
      OK(op_harness_run(h));
      int r = rt < 0 ? 0 : rt; /* Paddle's default here: ties to even */
      for (int i = 0; i < N; i++) want[i] = ref_level(x[i], s[axis < 0 ? 0 : chan(i, axis, 3, 4)], 8, r);
      expect_exact(out_of(h, "y"), want, N, "quantize_linear");
      op_harness_destroy(h);

      h = harness("dequantize_linear");
      bind_input(h, "X", "q", RILL_DTYPE_FP32, DIMS(2, 3, 4), want);
      bind_input(h, "Scale", "s", RILL_DTYPE_FP32, DIMS(axis < 0 ? 1 : axis ? 3 : 2), s);
      OK(op_harness_output(h, "Y", "y"));
      OK(op_harness_attr_int(h, "quant_axis", axis));
      OK(op_harness_run(h));
      float deq[N];
      for (int i = 0; i < N; i++) deq[i] = want[i] * s[axis < 0 ? 0 : chan(i, axis, 3, 4)] / 127.0f;
      expect_exact(out_of(h, "y"), deq, N, "dequantize_linear");
      op_harness_destroy(h);
    }
}

Test(fake_quantize, quantize_linear_ties_and_bit_length) {
  /* bit_length 2 (range 1), scale 4: +-2 are ties */
  float x[4] = {2, -2, 6, -6}, s = 4;
  const float even[4] = {0, 0, 1, -2}, away[4] = {1, -1, 1, -1};
  for (int rt = 0; rt < 2; rt++) {
    op_harness *h = harness("quantize_linear");
    bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(4), x);
    bind_input(h, "Scale", "s", RILL_DTYPE_FP32, DIMS(1), &s);
    OK(op_harness_output(h, "Y", "y"));
    OK(op_harness_attr_int(h, "quant_axis", -1));
    OK(op_harness_attr_int(h, "bit_length", 2));
    OK(op_harness_attr_int(h, "round_type", rt));
    OK(op_harness_run(h));
    expect_exact(out_of(h, "y"), rt ? away : even, 4, "ties");
    op_harness_destroy(h);
  }
}

Test(fake_quantize, quantize_linear_observer_training_and_bad_axis) {
  float x[4] = {0.3f, -1, 2, 0}, s = 4;
  op_harness *h = harness("quantize_linear");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(4), x);
  bind_input(h, "Scale", "s", RILL_DTYPE_FP32, DIMS(1), &s);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_attr_int(h, "quant_axis", -1));
  OK(op_harness_attr_bool(h, "only_observer", true));
  OK(op_harness_run(h));
  expect_exact(out_of(h, "y"), x, 4, "only_observer");
  OK(op_harness_attr_bool(h, "only_observer", false));
  OK(op_harness_attr_bool(h, "is_test", false));
  EXPECT_ERROR(op_harness_run(h), "quantize_linear", "is_test");
  op_harness_destroy(h);
  for (int which = 0; which < 2; which++) {
    h = harness(which ? "dequantize_linear" : "quantize_linear");
    bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(4), x);
    bind_input(h, "Scale", "s", RILL_DTYPE_FP32, DIMS(1), &s);
    OK(op_harness_output(h, "Y", "y"));
    OK(op_harness_attr_int(h, "quant_axis", which ? 1 : 3));
    EXPECT_ERROR(op_harness_run(h), which ? "dequantize_linear" : "quantize_linear", "quant_axis");
    op_harness_destroy(h);
  }
  /* per-channel scales too few */
  h = harness("quantize_linear");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(4), x);
  bind_input(h, "Scale", "s", RILL_DTYPE_FP32, DIMS(1), &s);
  OK(op_harness_output(h, "Y", "y"));
  EXPECT_ERROR(op_harness_run(h), "quantize_linear", "Scale (s)");
  op_harness_destroy(h);
}
