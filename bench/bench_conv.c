/* conv2d 3x3 (stride 1, padding 1, N = 1, C_out = C_in) through its CPU kernel vs
 * cblas_sgemm on the equivalent GEMM (M = C_out, K = C_in * 9, N = H * W) in the same
 * run. Prints "conv2d 3x3 C=64 H=56: rill X GFLOPS, sgemm Y GFLOPS, ratio Z"; the target
 * is a ratio >= 0.7 (the kernel adds the unfolding of the image). Then, for a few
 * MobileNet / ResNet shapes, the time of each engine path, to show where the automatic
 * choice lands, and the direct path against its generic loops (the baseline of the
 * specialised depthwise 3x3 kernel; "direct / generic" below 1 is the gain), and the
 * direct path with a device of 2 threads against 1 (the threads inside large convs). Rounds of each side are short, many and interleaved, and the best round
 * of each kept, since the machine is shared and noisy.
 * Usage: bench_conv [seconds per shape, default 1] */
#include <cblas.h>

#define BENCH_NAME "bench_conv"
#include "bench/bench_util.h"
#include "framework/base/alloc.h"
#include "framework/exec/device.h"
#include "framework/registry/registry.h"
#include "kernels/cpu/conv.h"

/* conv2d of C_in = c to C_out = m on an hw x hw image, k x k, padding k / 2. */
static rill_status *conv_setup(bench_conv_call *r, int64_t c, int64_t m, int64_t hw, int64_t k,
                               int64_t stride, int64_t groups) {
  int64_t oh = (hw + 2 * (k / 2) - k) / stride + 1;
  rill_dims xd = {4, {1, c, hw, hw}}, wd = {4, {m, c / groups, k, k}}, yd = {4, {1, m, oh, oh}};
  const int32_t pads[2] = {(int32_t)(k / 2), (int32_t)(k / 2)}, strides[2] = {(int32_t)stride, (int32_t)stride};
  RILL_TRY(bench_conv_call_setup(r, "conv2d", &xd, &wd, &yd, pads, strides, (int32_t)groups));
  float *xp = bench_conv_call_data(r, 0), *wp = bench_conv_call_data(r, 1);
  int64_t nx = rill_tensor_numel(rill_variable_tensor(&r->xv)), nw = rill_tensor_numel(rill_variable_tensor(&r->wv));
  for (int64_t i = 0; i < nx; i++) xp[i] = (float)((i * 7) % 13) * 0.1f - 0.6f;
  for (int64_t i = 0; i < nw; i++) wp[i] = (float)((i * 5) % 11) * 0.1f - 0.5f;
  return NULL;
}

static rill_status *call_conv(void *arg) { return bench_conv_call_run(arg); }

typedef struct gemm_args {
  int m, n, k;
  const float *a, *b;
  float *c;
} gemm_args;

static rill_status *call_gemm(void *arg) {
  gemm_args *g = arg;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->m, g->n, g->k, 1, g->a, g->k, g->b,
              g->n, 0, g->c, g->n);
  return NULL;
}

typedef struct path_run {
  bench_conv_call *r;
  int path;
  struct rill_device_ctx *device; /* threads the kernel may use; NULL: one */
} path_run;

static rill_status *call_path(void *arg) {
  path_run *p = arg;
  rill_conv_force_path = p->path;
  p->r->ctx.dev = p->device ? &p->device->services : NULL;
  rill_status *st = call_conv(p->r);
  p->r->ctx.dev = NULL;
  rill_conv_force_path = RILL_CONV_PATH_AUTO;
  return st;
}

int main(int argc, char **argv) {
  rill_status *st = rill_registry_init();
  if (st) return fail(st);
  double budget = argc > 1 ? atof(argv[1]) : 1.0;
  const int64_t shapes[][2] = {{64, 56}, {128, 28}, {256, 14}, {512, 7}};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    int64_t c = shapes[si][0], hw = shapes[si][1];
    bench_conv_call r;
    if ((st = conv_setup(&r, c, c, hw, 3, 1, 1))) return fail(st);
    gemm_args g = {(int)c, (int)(hw * hw), (int)(c * 9), NULL, NULL, NULL};
    float *b = rill_aligned_alloc((size_t)g.k * (size_t)g.n * sizeof(float), RILL_TENSOR_ALIGN);
    float *cm = rill_aligned_alloc((size_t)g.m * (size_t)g.n * sizeof(float), RILL_TENSOR_ALIGN);
    if (!b || !cm) return fail(rill_oom());
    for (int64_t i = 0; i < (int64_t)g.k * g.n; i++) b[i] = (float)((i * 3) % 7) * 0.1f - 0.3f;
    g.a = bench_conv_call_data(&r, 1);
    g.b = b;
    g.c = cm;
    bench_contender fns[2] = {call_conv, call_gemm};
    void *args[2] = {&r, &g};
    double best[2];
    if ((st = bench_best_times(fns, args, 2, budget, best))) return fail(st);
    double flops = 2.0 * g.m * (double)g.k * g.n;
    double gr = flops / best[0] * 1e-9, gb = flops / best[1] * 1e-9;
    printf("conv2d 3x3 C=%lld H=%lld: rill %.1f GFLOPS, sgemm %.1f GFLOPS, ratio %.2f\n",
           (long long)c, (long long)hw, gr, gb, gr / gb);
    rill_free(b);
    rill_free(cm);
    bench_conv_call_teardown(&r);
  }

  /* Engine paths on other shapes: {C_in, C_out, H, k, stride, groups}. */
  struct rill_device_ctx dev2;
  rill_device_ctx_init(&dev2, (rill_place){RILL_DEVICE_CPU, 0}, 2, 1);
  const int64_t others[][6] = {
      {32, 32, 112, 3, 1, 32},  /* MobileNet depthwise */
      {96, 96, 112, 3, 2, 96},  /* strided depthwise, MobileNetV2's first */
      {144, 144, 28, 3, 2, 144}, /* strided depthwise */
      {384, 384, 14, 3, 1, 384}, /* deep depthwise */
      {3, 32, 224, 3, 2, 1},    /* first layer */
      {64, 64, 56, 3, 1, 16},   /* grouped, 4 output channels per group */
  };
  for (size_t si = 0; si < sizeof others / sizeof others[0]; si++) {
    const int64_t *o = others[si];
    bench_conv_call r;
    if ((st = conv_setup(&r, o[0], o[1], o[2], o[3], o[4], o[5]))) return fail(st);
    path_run pr[4] = {{&r, RILL_CONV_PATH_IM2COL, NULL}, {&r, RILL_CONV_PATH_DIRECT, NULL},
                      {&r, RILL_CONV_PATH_DIRECT_GENERIC, NULL}, {&r, RILL_CONV_PATH_DIRECT, &dev2}};
    bench_contender fns[4] = {call_path, call_path, call_path, call_path};
    void *args[4] = {&pr[0], &pr[1], &pr[2], &pr[3]};
    double best[4];
    if ((st = bench_best_times(fns, args, 4, budget / 2, best))) return fail(st);
    bool direct = o[0] / o[5] == 1 && o[1] / o[5] <= 2; /* conv_pick's rule */
    printf("conv2d %lldx%lld C=%lld->%lld H=%lld stride %lld groups %lld: im2col %.3f ms, "
           "direct %.3f ms, generic direct %.3f ms (direct / generic %.2f), direct on 2 "
           "threads %.3f ms (/ 1 thread %.2f); auto picks %s\n",
           (long long)o[3], (long long)o[3], (long long)o[0], (long long)o[1], (long long)o[2],
           (long long)o[4], (long long)o[5], best[0] * 1e3, best[1] * 1e3, best[2] * 1e3,
           best[1] / best[2], best[3] * 1e3, best[3] / best[1], direct ? "direct" : "im2col");
    bench_conv_call_teardown(&r);
  }
  return 0;
}
