/* nearest_interp(_v2) and bilinear_interp(_v2) against a naive per-element reference. */
#include "op_test.h"

typedef struct icase {
  const char *op;
  bool nhwc;
  int64_t n, c, d, h, w; /* d = 0: 4-D */
  int64_t od, oh, ow;    /* expected output extents */
  bool align_corners;
  int align_mode;
  float scale;           /* the scale Paddle uses for the ratio (v2), <= 0 none */
} icase;

static float ref_ratio(int64_t in, int64_t out, bool ac, float scale) {
  if (out <= 1) return 0;
  if (ac) return (float)(in - 1) / (float)(out - 1);
  if (scale > 0) return 1.0f / scale;
  return (float)in / (float)out;
}

/* Source coordinate of output index k along one axis: lo, hi, weight of hi. */
static void ref_src(bool bil, float r, bool ac, int mode, int64_t k, int64_t in, int64_t *lo,
                    int64_t *hi, double *wh) {
  if (!bil) {
    double s = ac ? floor((double)(r * (float)k) + 0.5) : floor((double)(r * (float)k));
    *lo = *hi = (int64_t)s < in ? (int64_t)s : in - 1;
    *wh = 0;
    return;
  }
  double s = (mode == 0 && !ac) ? (double)r * (k + 0.5) - 0.5 : (double)r * k;
  if (s < 0) s = 0;
  *lo = (int64_t)floor(s);
  if (*lo > in - 1) *lo = in - 1;
  *hi = *lo + 1 < in ? *lo + 1 : in - 1;
  *wh = s - (double)*lo;
}

static void ref_interp(const icase *k, const float *x, float *out) {
  bool bil = strstr(k->op, "bilinear") != NULL;
  int64_t D = k->d ? k->d : 1, OD = k->d ? k->od : 1;
  float sc = strstr(k->op, "_v2") ? k->scale : 0; /* v1 ratios ignore the scale */
  float rd = ref_ratio(D, OD, k->align_corners, sc);
  float rh = ref_ratio(k->h, k->oh, k->align_corners, sc);
  float rw = ref_ratio(k->w, k->ow, k->align_corners, sc);
  for (int64_t n = 0; n < k->n; n++)
    for (int64_t c = 0; c < k->c; c++)
      for (int64_t a = 0; a < OD; a++)
        for (int64_t i = 0; i < k->oh; i++)
          for (int64_t j = 0; j < k->ow; j++) {
            int64_t d0, d1, y0, y1, x0, x1;
            double wd, wy, wx;
            ref_src(false, rd, k->align_corners, 1, a, D, &d0, &d1, &wd);
            ref_src(bil, rh, k->align_corners, k->align_mode, i, k->h, &y0, &y1, &wy);
            ref_src(bil, rw, k->align_corners, k->align_mode, j, k->w, &x0, &x1, &wx);
#define AT(dd, yy, xx)                                                                    \
  (k->nhwc ? x[(((n * D + (dd)) * k->h + (yy)) * k->w + (xx)) * k->c + c]                 \
           : x[(((n * k->c + c) * D + (dd)) * k->h + (yy)) * k->w + (xx)])
            double v = AT(d0, y0, x0) * (1 - wy) * (1 - wx) + AT(d0, y1, x0) * wy * (1 - wx) +
                       AT(d0, y0, x1) * (1 - wy) * wx + AT(d0, y1, x1) * wy * wx;
            int64_t o = k->nhwc ? (((n * OD + a) * k->oh + i) * k->ow + j) * k->c + c
                                : (((n * k->c + c) * OD + a) * k->oh + i) * k->ow + j;
            out[o] = (float)v;
          }
}

/* Runs the case; `setup` adds the size attributes / inputs. */
static void run_case(const icase *k, void (*setup)(op_harness *, const icase *)) {
  int64_t xd[5], od[5];
  size_t nd = k->d ? 5 : 4;
  int64_t sp_in[3] = {k->d, k->h, k->w}, sp_out[3] = {k->od, k->oh, k->ow};
  int s0 = k->d ? 0 : 1;
  xd[0] = od[0] = k->n;
  for (size_t i = 0; i + 2 < nd; i++) {
    xd[k->nhwc ? 1 + i : 2 + i] = sp_in[s0 + i];
    od[k->nhwc ? 1 + i : 2 + i] = sp_out[s0 + i];
  }
  xd[k->nhwc ? nd - 1 : 1] = od[k->nhwc ? nd - 1 : 1] = k->c;
  int64_t nx = numel_of(xd, nd), no = numel_of(od, nd);
  float *x = malloc((size_t)nx * sizeof *x), *want = malloc((size_t)no * sizeof *want);
  for (int64_t i = 0; i < nx; i++) x[i] = (float)sin((double)i * 0.61) * 3;
  ref_interp(k, x, want);
  op_harness *h = harness(k->op);
  bind_input(h, "X", "img", RILL_DTYPE_FP32, xd, nd, x);
  OK(op_harness_output(h, "Out", "resized"));
  if (k->nhwc) OK(op_harness_attr_string(h, "data_layout", k->d ? "NDHWC" : "NHWC"));
  OK(op_harness_attr_bool(h, "align_corners", k->align_corners));
  OK(op_harness_attr_int(h, "align_mode", k->align_mode));
  OK(op_harness_attr_string(h, "interp_method", strstr(k->op, "bilinear") ? "bilinear" : "nearest"));
  setup(h, k);
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "resized");
  expect_dims(out, od, nd);
  expect_close_f32(rill_tensor_ptr(out), want, no, 1e-5f);
  op_harness_destroy(h);
  free(x);
  free(want);
}

static void set_out_attrs(op_harness *h, const icase *k) {
  if (k->d) OK(op_harness_attr_int(h, "out_d", (int)k->od));
  OK(op_harness_attr_int(h, "out_h", (int)k->oh));
  OK(op_harness_attr_int(h, "out_w", (int)k->ow));
}

static void set_scale_list(op_harness *h, const icase *k) {
  float s[3] = {k->scale, k->scale, k->scale};
  rill_attr_value v = {.type = RILL_ATTR_FLOATS, .n = k->d ? 3 : 2};
  v.list.floats = s;
  OK(op_harness_attr(h, "scale", &v));
  OK(op_harness_attr_int(h, "out_h", 99)); /* the scale wins over out_h / out_w */
  OK(op_harness_attr_int(h, "out_w", 99));
}

static void set_scale_v1(op_harness *h, const icase *k) {
  OK(op_harness_attr_float(h, "scale", k->scale));
}

static void set_out_size(op_harness *h, const icase *k) {
  int32_t sz[2] = {(int32_t)k->oh, (int32_t)k->ow};
  bind_input(h, "OutSize", "out_size", RILL_DTYPE_INT32, DIMS(2), sz);
  OK(op_harness_attr_int(h, "out_h", 3)); /* OutSize wins */
  OK(op_harness_attr_int(h, "out_w", 3));
}

static void set_size_tensor(op_harness *h, const icase *k) {
  int64_t a = k->oh;
  int32_t b = (int32_t)k->ow;
  bind_input(h, "SizeTensor", "size_h", RILL_DTYPE_INT64, DIMS(1), &a);
  bind_input(h, "SizeTensor", "size_w", RILL_DTYPE_INT32, DIMS(1), &b);
  int32_t sz[2] = {1, 1};
  bind_input(h, "OutSize", "ignored", RILL_DTYPE_INT32, DIMS(2), sz); /* SizeTensor wins */
}

static void set_scale_tensor(op_harness *h, const icase *k) {
  float s = k->scale;
  bind_input(h, "Scale", "scale_t", RILL_DTYPE_FP32, DIMS(1), &s);
}

Test(interp, nearest_v2_sizes_from_each_source) {
  /* scale list, align_corners false: ratio 1/scale */
  run_case(&(icase){"nearest_interp_v2", false, 2, 3, 0, 4, 5, 0, 8, 10, false, 1, 2.0f}, set_scale_list);
  run_case(&(icase){"nearest_interp_v2", false, 1, 2, 0, 5, 7, 0, 7, 10, false, 1, 1.5f}, set_scale_list);
  /* out_h / out_w, align_corners true (Paddle's default) and false, down and up */
  run_case(&(icase){"nearest_interp_v2", false, 1, 2, 0, 5, 7, 0, 3, 4, true, 1, 0}, set_out_attrs);
  run_case(&(icase){"nearest_interp_v2", false, 2, 1, 0, 3, 4, 0, 7, 9, false, 1, 0}, set_out_attrs);
  run_case(&(icase){"nearest_interp_v2", false, 1, 1, 0, 1, 1, 0, 1, 3, true, 1, 0}, set_out_attrs);
  /* OutSize, SizeTensor, Scale inputs */
  run_case(&(icase){"nearest_interp_v2", false, 1, 2, 0, 4, 4, 0, 6, 9, false, 1, 0}, set_out_size);
  run_case(&(icase){"nearest_interp_v2", false, 1, 2, 0, 4, 4, 0, 5, 11, true, 1, 0}, set_size_tensor);
  run_case(&(icase){"nearest_interp_v2", false, 1, 3, 0, 4, 6, 0, 6, 9, false, 1, 1.5f}, set_scale_tensor);
  /* NHWC */
  run_case(&(icase){"nearest_interp_v2", true, 2, 3, 0, 3, 5, 0, 6, 10, false, 1, 2.0f}, set_scale_list);
}

Test(interp, nearest_v2_five_d) {
  run_case(&(icase){"nearest_interp_v2", false, 1, 2, 2, 3, 4, 4, 6, 8, false, 1, 0}, set_out_attrs);
  run_case(&(icase){"nearest_interp_v2", true, 1, 3, 3, 2, 2, 5, 4, 3, true, 1, 0}, set_out_attrs);
  run_case(&(icase){"nearest_interp_v2", false, 1, 2, 2, 3, 3, 4, 6, 6, false, 1, 2.0f}, set_scale_list);
}

Test(interp, nearest_v1_scale_and_layouts) {
  /* v1 ratio is in/out even with a scale */
  run_case(&(icase){"nearest_interp", false, 1, 2, 0, 3, 5, 0, 6, 10, false, 1, 2.0f}, set_scale_v1);
  run_case(&(icase){"nearest_interp", true, 2, 3, 0, 4, 4, 0, 8, 8, false, 1, 0}, set_out_attrs);
  run_case(&(icase){"nearest_interp", false, 1, 1, 0, 6, 6, 0, 4, 5, true, 1, 0}, set_out_size);
}

Test(interp, bilinear_v2_modes) {
  run_case(&(icase){"bilinear_interp_v2", false, 1, 3, 0, 4, 6, 0, 32, 64, true, 0, 0}, set_out_attrs);
  run_case(&(icase){"bilinear_interp_v2", false, 2, 2, 0, 5, 7, 0, 9, 4, false, 0, 0}, set_out_attrs);
  run_case(&(icase){"bilinear_interp_v2", false, 2, 2, 0, 5, 7, 0, 9, 4, false, 1, 0}, set_out_attrs);
  run_case(&(icase){"bilinear_interp_v2", false, 1, 2, 0, 4, 6, 0, 6, 9, false, 0, 1.5f}, set_scale_list);
  run_case(&(icase){"bilinear_interp_v2", true, 1, 3, 0, 4, 5, 0, 8, 10, false, 0, 2.0f}, set_scale_list);
  run_case(&(icase){"bilinear_interp_v2", true, 1, 3, 0, 6, 6, 0, 3, 2, true, 1, 0}, set_out_size);
  run_case(&(icase){"bilinear_interp_v2", false, 1, 1, 0, 4, 4, 0, 7, 5, false, 0, 0}, set_size_tensor);
  run_case(&(icase){"bilinear_interp_v2", false, 1, 1, 0, 1, 4, 0, 3, 5, false, 0, 0}, set_out_attrs);
}

Test(interp, bilinear_v1) {
  run_case(&(icase){"bilinear_interp", false, 1, 2, 0, 3, 4, 0, 6, 8, true, 1, 0}, set_out_attrs);
  run_case(&(icase){"bilinear_interp", true, 1, 2, 0, 3, 4, 0, 7, 5, false, 0, 0}, set_out_attrs);
}

static void scale_only_v1(op_harness *h, const icase *k) {
  OK(op_harness_attr_float(h, "scale", k->scale));
}

Test(interp, v1_scale_gives_floor_of_in_times_scale) {
  /* 3 * 1.5 = 4.5 -> 4; 5 * 1.5 = 7.5 -> 7; the ratio stays in / out */
  run_case(&(icase){"nearest_interp", false, 1, 1, 0, 3, 5, 0, 4, 7, false, 1, 0}, set_out_attrs);
  run_case(&(icase){"nearest_interp", false, 1, 1, 0, 3, 5, 0, 4, 7, false, 1, 1.5f}, scale_only_v1);
  /* 7 * 1.7 = 11.9 -> 11: v1's ratio 7/11 and v2's 1/1.7 pick different sources */
  run_case(&(icase){"nearest_interp", false, 1, 1, 0, 7, 7, 0, 11, 11, false, 1, 1.7f}, scale_only_v1);
  run_case(&(icase){"nearest_interp_v2", false, 1, 1, 0, 7, 7, 0, 11, 11, false, 1, 1.7f}, set_scale_list);
}

Test(interp, bad_inputs_name_op_and_variable) {
  op_harness *h = harness("nearest_interp_v2");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(2, 3, 4), NULL);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_attr_int(h, "out_h", 2));
  EXPECT_ERROR(op_harness_run(h), "nearest_interp_v2", "feat", "4-D");
  op_harness_destroy(h);

  h = harness("bilinear_interp_v2");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(1, 1, 2, 2), NULL);
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "bilinear_interp_v2", "feat", "positive");
  op_harness_destroy(h);

  h = harness("bilinear_interp_v2");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(1, 1, 2, 2, 2), NULL);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_attr_int(h, "out_h", 2));
  OK(op_harness_attr_int(h, "out_w", 2));
  EXPECT_ERROR(op_harness_run(h), "bilinear_interp_v2", "feat", "4-D");
  op_harness_destroy(h);
}
