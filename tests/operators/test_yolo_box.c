/* yolo_box against a naive reference written from Paddle's description (channel
 * c of anchor a is X[n, a * (5 + classes) + c], after an_num IoU channels with
 * iou_aware), with and without clipping, scale_x_y, iou_aware, non-square images; a
 * hand-computed box; the errors. */
#include "op_test.h"

static double sig(double v) { return 1 / (1 + exp(-v)); }

typedef struct yb_case {
  int64_t n, h, w;
  const int32_t *anchors;
  size_t nanchors; /* values, pairs * 2 */
  int classes, down;
  float conf, scale, iou_f;
  bool clip, iou_aware;
} yb_case;

static void ref_yolo(const yb_case *c, const float *x, const int32_t *img, float *boxes, float *scores) {
  int64_t an = (int64_t)c->nanchors / 2, per = 5 + c->classes, hw = c->h * c->w;
  int64_t nb = an * hw, chans = an * per + (c->iou_aware ? an : 0);
  memset(boxes, 0, (size_t)(c->n * nb * 4) * sizeof *boxes);
  memset(scores, 0, (size_t)(c->n * nb * c->classes) * sizeof *scores);
  for (int64_t i = 0; i < c->n; i++)
    for (int64_t a = 0; a < an; a++)
      for (int64_t y = 0; y < c->h; y++)
        for (int64_t xx = 0; xx < c->w; xx++) {
          int64_t base = (c->iou_aware ? an : 0) + a * per;
#define X(ch) ((double)x[((i * chans + (ch)) * c->h + y) * c->w + xx])
          double conf = sig(X(base + 4));
          if (c->iou_aware) conf = pow(conf, 1 - c->iou_f) * pow(sig(X(a)), c->iou_f);
          if (conf < c->conf) continue;
          double ih = img[2 * i], iw = img[2 * i + 1];
          double bias = -0.5 * (c->scale - 1);
          double cx = (xx + sig(X(base)) * c->scale + bias) * iw / c->w;
          double cy = (y + sig(X(base + 1)) * c->scale + bias) * ih / c->h;
          double bw = exp(X(base + 2)) * c->anchors[2 * a] * iw / (c->down * c->w);
          double bh = exp(X(base + 3)) * c->anchors[2 * a + 1] * ih / (c->down * c->h);
          double b[4] = {cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2};
          if (c->clip) {
            b[0] = fmax(b[0], 0);
            b[1] = fmax(b[1], 0);
            b[2] = fmin(b[2], iw - 1);
            b[3] = fmin(b[3], ih - 1);
          }
          int64_t k = i * nb + a * hw + y * c->w + xx;
          for (int q = 0; q < 4; q++) boxes[k * 4 + q] = (float)b[q];
          for (int cl = 0; cl < c->classes; cl++)
            scores[k * c->classes + cl] = (float)(conf * sig(X(base + 5 + cl)));
#undef X
        }
}

static op_harness *yb_harness(const yb_case *c, const float *x, const int32_t *img) {
  int64_t an = (int64_t)c->nanchors / 2;
  int64_t chans = an * (5 + c->classes) + (c->iou_aware ? an : 0);
  op_harness *h = harness("yolo_box");
  bind_input(h, "X", "head", RILL_DTYPE_FP32, DIMS(c->n, chans, c->h, c->w), x);
  bind_input(h, "ImgSize", "im_size", RILL_DTYPE_INT32, DIMS(c->n, 2), img);
  OK(op_harness_output(h, "Boxes", "boxes"));
  OK(op_harness_output(h, "Scores", "scores"));
  OK(op_harness_attr_ints(h, "anchors", c->anchors, c->nanchors));
  OK(op_harness_attr_int(h, "class_num", c->classes));
  OK(op_harness_attr_int(h, "downsample_ratio", c->down));
  OK(op_harness_attr_float(h, "conf_thresh", c->conf));
  OK(op_harness_attr_bool(h, "clip_bbox", c->clip));
  OK(op_harness_attr_float(h, "scale_x_y", c->scale));
  OK(op_harness_attr_bool(h, "iou_aware", c->iou_aware));
  OK(op_harness_attr_float(h, "iou_aware_factor", c->iou_f));
  return h;
}

static void check(const yb_case *c) {
  int64_t an = (int64_t)c->nanchors / 2, nb = an * c->h * c->w;
  int64_t nx = c->n * (an * (5 + c->classes) + (c->iou_aware ? an : 0)) * c->h * c->w;
  float *x = malloc((size_t)nx * sizeof *x), *wb = malloc((size_t)(c->n * nb * 4) * sizeof *wb);
  float *ws = malloc((size_t)(c->n * nb * c->classes) * sizeof *ws);
  int32_t img[8] = {416, 416, 320, 608, 100, 50, 7, 9};
  for (int64_t i = 0; i < nx; i++) x[i] = (float)(sin((double)i * 0.77) * 2.5);
  ref_yolo(c, x, img, wb, ws);
  op_harness *h = yb_harness(c, x, img);
  OK(op_harness_run(h));
  rill_tensor *b = op_harness_tensor(h, "boxes"), *s = op_harness_tensor(h, "scores");
  expect_dims(b, DIMS(c->n, nb, 4));
  expect_dims(s, DIMS(c->n, nb, c->classes));
  expect_close_f32(rill_tensor_ptr(b), wb, c->n * nb * 4, 1e-4f);
  expect_close_f32(rill_tensor_ptr(s), ws, c->n * nb * c->classes, 1e-5f);
  int64_t zero = 0; /* some boxes fall under the threshold, so the zero path is covered */
  for (int64_t i = 0; i < c->n * nb * 4; i++) zero += wb[i] == 0;
  cr_assert(c->conf <= 0 || zero > 0);
  op_harness_destroy(h);
  free(x); free(wb); free(ws);
}

Test(yolo_box, matches_reference) {
  const int32_t a3[] = {116, 90, 156, 198, 373, 326}, a1[] = {10, 13};
  check(&(yb_case){1, 13, 13, a3, 6, 3, 32, 0.3f, 1.0f, 0.5f, true, false}); /* the program's */
  check(&(yb_case){2, 4, 6, a3, 6, 2, 16, 0.5f, 1.0f, 0.5f, false, false});
  check(&(yb_case){3, 5, 3, a1, 2, 4, 8, 0.4f, 1.05f, 0.5f, true, false});  /* scale_x_y */
  check(&(yb_case){2, 3, 3, a3, 6, 1, 32, 0.2f, 1.0f, 0.4f, true, true});   /* iou_aware */
  check(&(yb_case){4, 2, 2, a1, 2, 2, 32, 0.0f, 1.0f, 0.5f, true, false});  /* no threshold */
}

/* One anchor (8 x 16), one cell of a 2 x 2 map (downsample 32) of a 64 x 64 image, all
 * logits 0: the centre is at half a cell (16, 16), the box 8 x 16 pixels, confidence
 * 0.5. */
Test(yolo_box, hand_computed_box) {
  float x[6 * 4] = {0};
  int32_t img[2] = {64, 64};
  yb_case c = {1, 2, 2, (const int32_t[]){8, 16}, 2, 1, 32, 0.1f, 1.0f, 0.5f, true, false};
  op_harness *h = yb_harness(&c, x, img);
  OK(op_harness_run(h));
  const float *b = rill_tensor_ptr(op_harness_tensor(h, "boxes"));
  const float *s = rill_tensor_ptr(op_harness_tensor(h, "scores"));
  float want[] = {12, 8, 20, 24};
  expect_close_f32(b, want, 4, 1e-6f);
  cr_assert_float_eq(s[0], 0.25f, 1e-7f); /* 0.5 * sigmoid(0) */
  op_harness_destroy(h);
}

Test(yolo_box, errors_name_op_and_variable) {
  float x[2 * 8 * 2 * 2] = {0};
  int32_t img[2] = {64, 64};
  op_harness *h = harness("yolo_box");
  bind_input(h, "X", "head", RILL_DTYPE_FP32, DIMS(1, 8, 2, 2), x);
  bind_input(h, "ImgSize", "im_size", RILL_DTYPE_INT32, DIMS(1, 2), img);
  OK(op_harness_output(h, "Boxes", "b"));
  OK(op_harness_output(h, "Scores", "s"));
  OK(op_harness_attr_ints(h, "anchors", (const int32_t[]){8, 16}, 2));
  OK(op_harness_attr_int(h, "class_num", 2)); /* 1 anchor * (5 + 2) = 7 channels, not 8 */
  EXPECT_ERROR(op_harness_run(h), "yolo_box", "head", "[N, 7, H, W]");
  OK(op_harness_attr_int(h, "class_num", 3));
  OK(op_harness_run(h));
  OK(op_harness_attr_ints(h, "anchors", (const int32_t[]){8, 16, 3}, 3));
  EXPECT_ERROR(op_harness_run(h), "yolo_box", "anchors", "pairs");
  op_harness_destroy(h);
  h = harness("yolo_box");
  bind_input(h, "X", "head", RILL_DTYPE_FP32, DIMS(1, 8, 2, 2), x);
  bind_input(h, "ImgSize", "im_size", RILL_DTYPE_FP32, DIMS(1, 2), x);
  OK(op_harness_output(h, "Boxes", "b"));
  OK(op_harness_output(h, "Scores", "s"));
  OK(op_harness_attr_ints(h, "anchors", (const int32_t[]){8, 16}, 2));
  OK(op_harness_attr_int(h, "class_num", 3));
  EXPECT_ERROR(op_harness_run(h), "yolo_box", "im_size", "int32 [N, 2]");
  op_harness_destroy(h);
}
