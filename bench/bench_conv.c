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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "framework/base/alloc.h"
#include "framework/exec/device.h"
#include "framework/registry/registry.h"
#include "kernels/cpu/conv.h"

#define ROUND_SECONDS 0.005
#define MIN_ROUNDS 15

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(rill_status *st) {
  fprintf(stderr, "bench_conv: %s\n", rill_status_message(st));
  rill_status_destroy(st);
  return 1;
}

/* One conv2d kernel invocation set up on its own variables. */
typedef struct conv_run {
  rill_variable xv, wv, yv;
  rill_attr_value *attrs;
  int32_t pads[2], strides[2];
  size_t nin[4], nout[1];
  rill_variable *in0[1], *in1[1], *out0[1];
  rill_variable *const *ins[4];
  rill_variable *const *outs[1];
  rill_kernel_ctx ctx;
  rill_kernel_fn fn;
} conv_run;

static rill_status *conv_setup(conv_run *r, int64_t c, int64_t m, int64_t hw, int64_t k,
                               int64_t stride, int64_t groups) {
  memset(r, 0, sizeof *r);
  const rill_op_schema *s = rill_schema_find("conv2d");
  r->fn = rill_kernel_find("conv2d", RILL_DEVICE_CPU, RILL_DTYPE_FP32);
  if (!s || !r->fn) return rill_error(RILL_NOT_FOUND, "no conv2d schema or fp32 CPU kernel");
  r->attrs = calloc(s->nattrs, sizeof *r->attrs);
  for (size_t i = 0; i < s->nattrs; i++) r->attrs[i] = s->attrs[i].def; /* shallow: shared */
  r->pads[0] = r->pads[1] = (int32_t)(k / 2);
  r->strides[0] = r->strides[1] = (int32_t)stride;
  rill_attr_value *a = &r->attrs[rill_schema_attr_index(s, "paddings")];
  a->n = 2;
  a->list.ints = r->pads;
  a = &r->attrs[rill_schema_attr_index(s, "strides")];
  a->n = 2;
  a->list.ints = r->strides;
  r->attrs[rill_schema_attr_index(s, "groups")].v.i = (int32_t)groups;
  int64_t oh = (hw + 2 * (k / 2) - k) / stride + 1;
  rill_dims xd = {4, {1, c, hw, hw}}, wd = {4, {m, c / groups, k, k}}, yd = {4, {1, m, oh, oh}};
  rill_variable_init(&r->xv);
  rill_variable_init(&r->wv);
  rill_variable_init(&r->yv);
  rill_tensor *x = rill_variable_tensor(&r->xv), *w = rill_variable_tensor(&r->wv);
  RILL_TRY(rill_tensor_alloc(x, RILL_DTYPE_FP32, &xd));
  RILL_TRY(rill_tensor_alloc(w, RILL_DTYPE_FP32, &wd));
  RILL_TRY(rill_tensor_alloc(rill_variable_tensor(&r->yv), RILL_DTYPE_FP32, &yd));
  float *xp = rill_tensor_ptr(x), *wp = rill_tensor_ptr(w);
  for (int64_t i = 0; i < rill_tensor_numel(x); i++) xp[i] = (float)((i * 7) % 13) * 0.1f - 0.6f;
  for (int64_t i = 0; i < rill_tensor_numel(w); i++) wp[i] = (float)((i * 5) % 11) * 0.1f - 0.5f;
  r->nin[0] = r->nin[1] = 1;
  r->nout[0] = 1;
  r->in0[0] = &r->xv;
  r->in1[0] = &r->wv;
  r->out0[0] = &r->yv;
  r->ins[0] = r->in0;
  r->ins[1] = r->in1;
  r->outs[0] = r->out0;
  r->ctx = (rill_kernel_ctx){.schema = s, .attrs = r->attrs, .nin = r->nin, .in = r->ins,
                             .nout = r->nout, .out = r->outs};
  return NULL;
}

static void conv_teardown(conv_run *r) {
  rill_variable_clear(&r->xv);
  rill_variable_clear(&r->wv);
  rill_variable_clear(&r->yv);
  free(r->attrs);
}

/* Best time of one call, with the rounds interleaved across `n` contenders. */
typedef rill_status *(*contender)(void *arg);

static rill_status *best_times(contender *fns, void **args, int n, double budget, double *best) {
  double one = 0;
  for (int i = 0; i < n; i++) {
    RILL_TRY(fns[i](args[i])); /* warm up */
    double t0 = now();
    RILL_TRY(fns[i](args[i]));
    double t = now() - t0;
    if (t > one) one = t;
    best[i] = 1e30;
  }
  int reps = one > 0 ? (int)(ROUND_SECONDS / one) : 1000;
  if (reps < 1) reps = 1;
  int rounds = (int)(budget / (n * reps * (one > 0 ? one : 1e-6)));
  if (rounds < MIN_ROUNDS) rounds = MIN_ROUNDS;
  for (int round = 0; round < rounds; round++)
    for (int i = 0; i < n; i++) {
      double t0 = now();
      for (int r = 0; r < reps; r++) RILL_TRY(fns[i](args[i]));
      double t = (now() - t0) / reps;
      if (t < best[i]) best[i] = t;
    }
  return NULL;
}

static rill_status *call_conv(void *arg) {
  conv_run *r = arg;
  return r->fn(&r->ctx);
}

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
  conv_run *r;
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
    conv_run r;
    if ((st = conv_setup(&r, c, c, hw, 3, 1, 1))) return fail(st);
    gemm_args g = {(int)c, (int)(hw * hw), (int)(c * 9), NULL, NULL, NULL};
    float *b = rill_aligned_alloc((size_t)g.k * (size_t)g.n * sizeof(float), RILL_TENSOR_ALIGN);
    float *cm = rill_aligned_alloc((size_t)g.m * (size_t)g.n * sizeof(float), RILL_TENSOR_ALIGN);
    if (!b || !cm) return fail(rill_oom());
    for (int64_t i = 0; i < (int64_t)g.k * g.n; i++) b[i] = (float)((i * 3) % 7) * 0.1f - 0.3f;
    g.a = rill_tensor_ptr(rill_variable_tensor(&r.wv));
    g.b = b;
    g.c = cm;
    contender fns[2] = {call_conv, call_gemm};
    void *args[2] = {&r, &g};
    double best[2];
    if ((st = best_times(fns, args, 2, budget, best))) return fail(st);
    double flops = 2.0 * g.m * (double)g.k * g.n;
    double gr = flops / best[0] * 1e-9, gb = flops / best[1] * 1e-9;
    printf("conv2d 3x3 C=%lld H=%lld: rill %.1f GFLOPS, sgemm %.1f GFLOPS, ratio %.2f\n",
           (long long)c, (long long)hw, gr, gb, gr / gb);
    rill_free(b);
    rill_free(cm);
    conv_teardown(&r);
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
    conv_run r;
    if ((st = conv_setup(&r, o[0], o[1], o[2], o[3], o[4], o[5]))) return fail(st);
    path_run pr[4] = {{&r, RILL_CONV_PATH_IM2COL, NULL}, {&r, RILL_CONV_PATH_DIRECT, NULL},
                      {&r, RILL_CONV_PATH_DIRECT_GENERIC, NULL}, {&r, RILL_CONV_PATH_DIRECT, &dev2}};
    contender fns[4] = {call_path, call_path, call_path, call_path};
    void *args[4] = {&pr[0], &pr[1], &pr[2], &pr[3]};
    double best[4];
    if ((st = best_times(fns, args, 4, budget / 2, best))) return fail(st);
    bool direct = o[0] / o[5] == 1 && o[1] / o[5] <= 2; /* conv_pick's rule */
    printf("conv2d %lldx%lld C=%lld->%lld H=%lld stride %lld groups %lld: im2col %.3f ms, "
           "direct %.3f ms, generic direct %.3f ms (direct / generic %.2f), direct on 2 "
           "threads %.3f ms (/ 1 thread %.2f); auto picks %s\n",
           (long long)o[3], (long long)o[3], (long long)o[0], (long long)o[1], (long long)o[2],
           (long long)o[4], (long long)o[5], best[0] * 1e3, best[1] * 1e3, best[2] * 1e3,
           best[1] / best[2], best[3] * 1e3, best[3] / best[1], direct ? "direct" : "im2col");
    conv_teardown(&r);
  }
  return 0;
}
