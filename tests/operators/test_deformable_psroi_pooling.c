/* deformable_psroi_pooling: shapes, bins against a direct sampling reference (shifted by
 * Trans, position-sensitive channels, samples off the map skipped), no_trans, TopCount;
 * the gradients of Input and Trans against finite differences; the errors naming op and
 * variable. */
#include "op_test.h"
#include "support/grad_check.h"

enum { N = 2, H = 6, W = 7, R = 3 };

static void inputs(op_harness *h, const double *x, int64_t c, const double *rois,
                   const double *trans, int64_t tc, int64_t part) {
  bind_input(h, "Input", "feat", RILL_DTYPE_FP64, DIMS(N, c, H, W), x);
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(R, 4), rois);
  cr_assert_not_null(t);
  const uint64_t lod[] = {0, 2, 3};
  size_t nl = 3;
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nl));
  OK(op_harness_input(h, "ROIs", "rois", t));
  op_harness_free_tensor(t);
  bind_input(h, "Trans", "shift", RILL_DTYPE_FP64, DIMS(R, tc, part, part), trans);
  OK(op_harness_output(h, "Output", "pooled"));
  OK(op_harness_output(h, "TopCount", "count"));
}

static void attrs(op_harness *h, bool no_trans, int od, int group, int pooled, int part,
                  int samples, float scale, float std) {
  OK(op_harness_attr_bool(h, "no_trans", no_trans));
  OK(op_harness_attr_int(h, "output_dim", od));
  OK(op_harness_attr_ints(h, "group_size", (const int32_t[]){group, group}, 2));
  OK(op_harness_attr_int(h, "pooled_height", pooled));
  OK(op_harness_attr_int(h, "pooled_width", pooled));
  OK(op_harness_attr_ints(h, "part_size", (const int32_t[]){part, part}, 2));
  OK(op_harness_attr_int(h, "sample_per_part", samples));
  OK(op_harness_attr_float(h, "spatial_scale", scale));
  OK(op_harness_attr_float(h, "trans_std", std));
}

static const double rois[R * 4] = {1.2, 0.6, 9.4, 8.8, 0, 2, 13, 11, 3.3, -2.2, 16.6, 7.1};

/* Position-sensitive (group 2 = pooled 2), two classes of shifts; the third ROI reaches off
 * the map so some samples are skipped. */
Test(deformable_psroi_pooling, bins_match_direct_sampling) {
  enum { OD = 2, G = 2, P = 2, PART = 2, S = 3, C = OD * G * G, TC = 4 };
  const float scale = 0.5f, std = 0.2f;
  double x[N * C * H * W], trans[R * TC * PART * PART];
  for (int i = 0; i < N * C * H * W; i++) x[i] = sin(i * 0.53) * 2;
  for (int i = 0; i < R * TC * PART * PART; i++) trans[i] = cos(i * 1.7);
  for (int no_trans = 0; no_trans < 2; no_trans++) {
    op_harness *h = harness("deformable_psroi_pooling");
    inputs(h, x, C, rois, trans, TC, PART);
    attrs(h, no_trans, OD, G, P, PART, S, scale, std);
    OK(op_harness_run(h));
    const rill_tensor *o = op_harness_tensor(h, "pooled");
    expect_dims(o, DIMS(R, OD, P, P));
    const double *op = rill_tensor_ptr(o), *cp = rill_tensor_ptr(op_harness_tensor(h, "count"));
    const int img[] = {0, 0, 1};
    int skipped = 0;
    for (int n = 0; n < R; n++) {
      const double *r = rois + 4 * n;
      double sw = round(r[0]) * scale - 0.5, sh = round(r[1]) * scale - 0.5;
      double rw = fmax((round(r[2]) + 1) * scale - 0.5 - sw, 0.1);
      double rh = fmax((round(r[3]) + 1) * scale - 0.5 - sh, 0.1);
      for (int c = 0; c < OD; c++)
        for (int i = 0; i < P; i++)
          for (int j = 0; j < P; j++) {
            int cls = c / (OD / (TC / 2));
            const double *tr = trans + ((n * TC + 2 * cls) * PART + i) * PART + j;
            double dx = no_trans ? 0 : tr[0] * std, dy = no_trans ? 0 : tr[PART * PART] * std;
            const double *plane = x + (img[n] * C + (c * G + i) * G + j) * H * W;
            double sum = 0;
            int cnt = 0;
            for (int a = 0; a < S; a++)
              for (int b = 0; b < S; b++) {
                double yy = sh + i * rh / P + dy * rh + a * rh / P / S;
                double xx = sw + j * rw / P + dx * rw + b * rw / P / S;
                if (xx < -0.5 || xx > W - 0.5 || yy < -0.5 || yy > H - 0.5) continue;
                xx = fmin(fmax(xx, 0), W - 1);
                yy = fmin(fmax(yy, 0), H - 1);
                int x0 = (int)floor(xx), y0 = (int)floor(yy);
                int x1 = x0 + 1 < W ? x0 + 1 : x0, y1 = y0 + 1 < H ? y0 + 1 : y0;
                double fx = xx - x0, fy = yy - y0;
                sum += (1 - fx) * (1 - fy) * plane[y0 * W + x0] + fx * (1 - fy) * plane[y0 * W + x1] +
                       (1 - fx) * fy * plane[y1 * W + x0] + fx * fy * plane[y1 * W + x1];
                cnt++;
              }
            int k = ((n * OD + c) * P + i) * P + j;
            skipped += cnt < S * S;
            cr_assert_float_eq(cp[k], cnt, 0, "count roi %d c %d (%d, %d)", n, c, i, j);
            cr_assert_float_eq(op[k], cnt ? sum / cnt : 0, 1e-12, "roi %d c %d (%d, %d)", n, c, i, j);
          }
    }
    cr_assert_gt(skipped, 0, "some bins lose samples off the map");
    op_harness_destroy(h);
  }
}

Test(deformable_psroi_pooling, gradients_match_finite_differences) {
  enum { C = 3, TC = 2, PART = 3 };
  double x[N * C * H * W], trans[R * TC * PART * PART];
  for (int i = 0; i < N * C * H * W; i++) x[i] = sin(i * 0.37) * 2;
  for (int i = 0; i < R * TC * PART * PART; i++) trans[i] = sin(i * 2.3 + 0.4);
  op_harness *h = harness("deformable_psroi_pooling");
  inputs(h, x, C, rois, trans, TC, PART);
  attrs(h, false, C, 1, 3, PART, 2, 0.45f, 0.1f);
  OK(grad_check(h, GC_SLOTS("Input", "Trans"), GC_SLOTS("Output"), NULL));
  op_harness_destroy(h);
}

Test(deformable_psroi_pooling, errors_name_op_and_variable) {
  double x[N * 4 * H * W] = {0}, trans[R * 6 * 2 * 2] = {0};
  op_harness *h = harness("deformable_psroi_pooling");
  inputs(h, x, 4, rois, trans, 2, 2);
  attrs(h, false, 2, 2, 2, 2, 1, 1.0f, 0.1f);
  EXPECT_ERROR(op_harness_infer(h), "deformable_psroi_pooling", "feat", "4 channels", "8");
  op_harness_destroy(h);
  h = harness("deformable_psroi_pooling");
  inputs(h, x, 4, rois, trans, 6, 2);
  attrs(h, false, 4, 1, 2, 2, 1, 1.0f, 0.1f);
  EXPECT_ERROR(op_harness_infer(h), "deformable_psroi_pooling", "shift", "multiple of classes");
  op_harness_destroy(h);
  h = harness("deformable_psroi_pooling");
  inputs(h, x, 4, rois, trans, 2, 2);
  attrs(h, false, 4, 1, 2, 3, 1, 1.0f, 0.1f);
  EXPECT_ERROR(op_harness_infer(h), "deformable_psroi_pooling", "shift", ">= 3");
  op_harness_destroy(h);
  h = harness("deformable_psroi_pooling");
  inputs(h, x, 4, rois, trans, 2, 2);
  attrs(h, false, 4, 1, 2, 2, 0, 1.0f, 0.1f);
  EXPECT_ERROR(op_harness_infer(h), "deformable_psroi_pooling", "sample_per_part");
  op_harness_destroy(h);
}
