/* The int8 path (the INT8 pass and conv2d_int8, doc/design/int8.md) against the float
 * simulation on Paddle-Lite's int8 ResNet-50 (/work/shared/programs), in the same run:
 *
 * 1. the whole program on a 224 x 224 image, 2 threads: the program as saved (conv2d
 *    over float levels, then fake_dequantize_max_abs) and after rill_pass_int8, with
 *    synthetic level weights made immutable as a predictor's are (both sides may keep
 *    packed weights). The two alternate in rounds; printed: the median time of each and
 *    the median of the per-round ratios int8 / float (below 1: int8 faster), and that
 *    the outputs are identical; and a third program, after rill_pass_int8_fold too (the
 *    fake quantize ops folded into the int8 ops), in the same rounds: its ratios to the
 *    float simulation and to the int8 program;
 * 2. per conv layer (each distinct shape), 1 thread: rill_i8_conv (im2col of the int8
 *    image, packing, the int8 GEMM and the dequantizing store) against OpenBLAS's
 *    cblas_sgemm and rill_sgemm (the float path's GEMM, kernels.md) of the same
 *    m x n x k on float operands already unfolded (the GEMM alone), the three
 *    alternating; the median ratios int8 / OpenBLAS and int8 / rill_sgemm; and from
 *    float levels (conv2d_int8's input), the conv after a full int8 copy of the image
 *    against the check and the conversion folded into the unfolding (now);
 * 3. per mul shape (2-D weight), 1 thread: mul_int8's GEMM route against rill_sgemm;
 *    then the batch-1 shapes on 2 threads (their weight rows split across the threads)
 *    against the same on 1 thread and against rill_sgemm on the same 2 threads;
 * 4. per depthwise layer of MobileNet-v1 (3x3, 224 x 224 input), 1 thread: the int8
 *    depthwise conv from float levels (the check, the conversion and the dequantizing
 *    store included) against the float depthwise_conv2d kernel on the same levels; and
 *    from the activation before its fake quantize op: the quantize loop (the op's) then
 *    the int8 conv on its levels, and the conv with the quantizer folded in, each
 *    against the float kernel;
 * 5. the fake quantize loop alone at each vector level (quant_levels, below).
 * Each line names the vector path. Run: build/bench_int8 [rounds] [--profile] [--only
 * model|conv|mul|dw|quant] (--profile: also the profiler's table by op type for one run of
 * each program; --only: that section alone). */
#define BENCH_NAME "bench_int8"
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "bench_util.h"
#include "framework/exec/device.h"
#include "framework/base/isa.h"
#include "framework/program/program.h"
#include "framework/registry/registry.h"
#include "framework/transform/infer_passes.h"
#include "kernels/cpu/igemm.h"
#include "kernels/cpu/quant_levels.h"
#include "kernels/cpu/sgemm.h"

#define PROGRAM RILL_SHARED_DIR "/programs/paddlelite_resnet50_int8__model__"

void openblas_set_num_threads(int);

/* Level weights (conv filters and the fc), scales in [0.5, 1.5), variances 1, small biases. */
static float value_of(const char *name, float r) {
  size_t len = strlen(name);
  if ((len > 8 && strcmp(name + len - 8, "_weights") == 0) || strcmp(name, "fc_0.w_0") == 0)
    return (float)((int)(r * 255.0f) - 127);
  if (len > 6 && strcmp(name + len - 6, ".scale") == 0) return 0.5f + r;
  if (strstr(name, "variance")) return 1.0f;
  return (r - 0.5f) * 0.1f;
}

static void fill_params(const rill_program *p, rill_scope *scope) {
  const rill_block_desc *b0 = &p->blocks[0];
  uint32_t seed = 23;
  for (size_t i = 0; i < b0->nvars; i++) {
    const rill_var_desc *v = &b0->vars[i];
    if (!v->persistable || v->type != RILL_VAR_LOD_TENSOR || v->dtype != RILL_DTYPE_FP32) continue;
    rill_tensor *t = NULL;
    check(rill_tensor_create(v->dtype, v->dims.d, (size_t)v->dims.n, &t), v->name);
    float *f = rill_tensor_data(t);
    for (int64_t k = 0; k < rill_tensor_numel(t); k++) {
      seed = seed * 1103515245u + 12345u;
      f[k] = value_of(v->name, (float)((seed >> 16) % 1000) / 1000.0f);
    }
    check(rill_scope_set_tensor(scope, v->name, t), v->name);
    rill_tensor_destroy(t);
    rill_variable *var = rill_scope_find(scope, v->name);
    if (var && var->kind == RILL_VARKIND_TENSOR && var->u.tensor.buf) rill_buffer_set_immutable(var->u.tensor.buf);
  }
}

static double run_once(rill_executor *e, rill_program *p, rill_scope *scope, rill_tensor *img, rill_tensor **out) {
  const char *feed = "image", *fetch = "save_infer_model/scale_0.tmp_0";
  double t0 = now();
  check(rill_executor_run(e, p, scope, &feed, &img, 1, &fetch, 1, out), "run");
  return now() - t0;
}

static void profile_once(rill_executor *e, rill_program *p, rill_scope *scope, rill_tensor *img,
                         const char *what) {
  check(rill_profiler_start(NULL), "profiler");
  rill_tensor *o = NULL;
  run_once(e, p, scope, img, &o);
  rill_tensor_destroy(o);
  rill_profiler_summary *sum = NULL;
  check(rill_profiler_stop(NULL, &sum), "profiler");
  char *text = NULL;
  check(rill_profiler_summary_format(sum, RILL_PROFILER_SORT_TOTAL, &text), "profile");
  printf("---- %s ----\n%.3000s\n", what, text);
  rill_free_buffer(text);
  rill_profiler_summary_destroy(sum);
}

static void whole_model(int rounds, bool profile) {
  rill_program *pf = NULL, *pi = NULL, *pq = NULL;
  check(rill_program_load(PROGRAM, &pf), "load");
  check(rill_program_load(PROGRAM, &pi), "load");
  check(rill_program_load(PROGRAM, &pq), "load");
  rill_scope *scope = NULL;
  check(rill_scope_create(NULL, &scope), "scope");
  fill_params(pf, scope);
  size_t n = 0, nq = 0, folded = 0;
  check(rill_pass_int8(pi, scope, false, &n), "int8 pass");
  check(rill_pass_int8(pq, scope, false, &nq), "int8 pass");
  check(rill_pass_int8_fold(pq, &folded), "int8 fold");
  const int64_t xd[] = {1, 3, 224, 224};
  rill_tensor *img = NULL;
  check(rill_tensor_create(RILL_DTYPE_FP32, xd, 4, &img), "image");
  float *x = rill_tensor_data(img);
  for (int64_t k = 0; k < 3 * 224 * 224; k++) x[k] = (float)(k % 251) / 125.0f - 1.0f;
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = 2;
  rill_executor *e = NULL;
  check(rill_executor_create(&o, &e), "executor");
  rill_tensor *a = NULL, *b = NULL, *c = NULL;
  run_once(e, pf, scope, img, &a); /* warm: plans, packed weights */
  run_once(e, pi, scope, img, &b);
  run_once(e, pq, scope, img, &c);
  bool same = rill_tensor_byte_size(a) == rill_tensor_byte_size(b) &&
              memcmp(rill_tensor_data(a), rill_tensor_data(b), rill_tensor_byte_size(a)) == 0 &&
              rill_tensor_byte_size(a) == rill_tensor_byte_size(c) &&
              memcmp(rill_tensor_data(a), rill_tensor_data(c), rill_tensor_byte_size(a)) == 0;
  rill_tensor_destroy(a);
  rill_tensor_destroy(b);
  rill_tensor_destroy(c);
  if (profile) {
    profile_once(e, pf, scope, img, "float simulation");
    profile_once(e, pi, scope, img, "int8");
    profile_once(e, pq, scope, img, "int8, quantizers folded");
  }
  double *tf = malloc(sizeof(double) * (size_t)rounds), *ti = malloc(sizeof(double) * (size_t)rounds);
  double *tq = malloc(sizeof(double) * (size_t)rounds), *ratio = malloc(sizeof(double) * (size_t)rounds);
  double *rq = malloc(sizeof(double) * (size_t)rounds), *rqi = malloc(sizeof(double) * (size_t)rounds);
  for (int r = 0; r < rounds; r++) {
    rill_tensor *o1 = NULL, *o2 = NULL, *o3 = NULL;
    tf[r] = run_once(e, pf, scope, img, &o1);
    ti[r] = run_once(e, pi, scope, img, &o2);
    tq[r] = run_once(e, pq, scope, img, &o3);
    ratio[r] = ti[r] / tf[r];
    rq[r] = tq[r] / tf[r];
    rqi[r] = tq[r] / ti[r];
    rill_tensor_destroy(o1);
    rill_tensor_destroy(o2);
    rill_tensor_destroy(o3);
  }
  qsort(tf, (size_t)rounds, sizeof *tf, cmp_double);
  qsort(ti, (size_t)rounds, sizeof *ti, cmp_double);
  qsort(tq, (size_t)rounds, sizeof *tq, cmp_double);
  qsort(ratio, (size_t)rounds, sizeof *ratio, cmp_double);
  qsort(rq, (size_t)rounds, sizeof *rq, cmp_double);
  qsort(rqi, (size_t)rounds, sizeof *rqi, cmp_double);
  int lo = rounds / 4, hi = rounds - 1 - rounds / 4, mid = rounds / 2;
  printf("int8 ResNet-50, 224x224, 2 threads, %zu ops int8 (%s), %d rounds: float simulation %.1f ms, "
         "int8 %.1f ms, ratio int8/float %.2f [%.2f .. %.2f]; %zu quantizers folded: %.1f ms, ratio folded/float "
         "%.2f [%.2f .. %.2f], folded/int8 %.2f [%.2f .. %.2f]; outputs %s\n",
         n, rill_i8_path_name(rill_i8_path_for_cpu()), rounds, tf[mid] * 1e3, ti[mid] * 1e3, ratio[mid],
         ratio[lo], ratio[hi], folded, tq[mid] * 1e3, rq[mid], rq[lo], rq[hi], rqi[mid], rqi[lo], rqi[hi],
         same ? "identical" : "DIFFER");
  free(tf);
  free(ti);
  free(tq);
  free(ratio);
  free(rq);
  free(rqi);
  rill_executor_destroy(e);
  rill_tensor_destroy(img);
  rill_scope_destroy(scope);
  rill_program_destroy(pf);
  rill_program_destroy(pi);
  rill_program_destroy(pq);
}

/* The conv geometries of the program's conv2d ops at batch 1 (declared shapes: 224). */
static size_t conv_shapes(rill_conv_geom *out, size_t cap) {
  rill_program *p = NULL;
  check(rill_program_load(PROGRAM, &p), "load");
  const rill_op_schema *s = rill_schema_find("conv2d");
  size_t n = 0;
  for (size_t i = 0; i < p->blocks[0].nops && n < cap; i++) {
    const rill_op_desc *op = &p->blocks[0].ops[i];
    if (strcmp(op->type, "conv2d") != 0) continue;
    const rill_var_desc *x = rill_block_find_var(p, 0, rill_op_input(op, "Input")->args[0]);
    const rill_var_desc *f = rill_block_find_var(p, 0, rill_op_input(op, "Filter")->args[0]);
    rill_attr_value *attrs = calloc(s->nattrs, sizeof *attrs);
    check(rill_resolve_attrs(s, op, attrs), op->type);
    rill_dims xd = x->dims;
    xd.d[0] = 1;
    char err[256];
    rill_conv_geom g;
    if (rill_nn_conv_geom(attrs, false, &xd, &f->dims, &g, err, sizeof err)) {
      bool seen = false;
      for (size_t k = 0; k < n; k++) seen |= memcmp(&out[k], &g, sizeof g) == 0;
      if (!seen) out[n++] = g;
    }
    rill_attrs_clear(attrs, s->nattrs);
    free(attrs);
  }
  rill_program_destroy(p);
  return n;
}

static void per_layer(int rounds) {
  rill_conv_geom gs[64];
  size_t ng = conv_shapes(gs, 64);
  openblas_set_num_threads(1);
  rill_i8_path path = rill_i8_path_for_cpu();
  double lsum = 0, lsum2 = 0, lsum3 = 0;
  for (size_t l = 0; l < ng; l++) {
    const rill_conv_geom *g = &gs[l];
    int64_t k = g->c / g->groups * g->kh * g->kw, npos = g->oh * g->ow, nx = g->c * g->h * g->w;
    int8_t *xq = malloc((size_t)nx);
    float *w = malloc(sizeof(float) * (size_t)(g->m * k)), *y = malloc(sizeof(float) * (size_t)(g->m * npos));
    float *bf = malloc(sizeof(float) * (size_t)(k * npos));
    for (int64_t i = 0; i < nx; i++) xq[i] = (int8_t)((i * 7) % 255 - 127);
    for (int64_t i = 0; i < g->m * k; i++) w[i] = (float)((i * 13) % 255 - 127);
    for (int64_t i = 0; i < k * npos; i++) bf[i] = (float)((i * 7) % 255 - 127);
    rill_i8_weights pw;
    int64_t bad;
    if (rill_i8_weights_pack(w, g->m, k, g->groups, false, &pw, &bad) != RILL_I8_PACKED) exit(1);
    rill_i8_out out = {.f32 = y, .scale = 1.0f, .range = 16129.0f};
    double *ratio = malloc(sizeof(double) * (size_t)rounds), *ratio2 = malloc(sizeof(double) * (size_t)rounds);
    double *ratio3 = malloc(sizeof(double) * (size_t)rounds);
    float *xf = malloc(sizeof(float) * (size_t)nx);
    int8_t *xc = malloc((size_t)nx);
    for (int64_t i = 0; i < nx; i++) xf[i] = (float)xq[i];
    double ti = 1e9, tf = 1e9, tr = 1e9, tcopy = 1e9, tfold = 1e9;
    for (int r = 0; r < rounds; r++) {
      /* conv2d_int8's input: a full int8 copy then the conv (before), or a check and
       * the conversion folded into the unfolding (now) */
      double c0 = now();
      if (!rill_i8_from_levels(xf, nx, xc, &bad)) exit(1);
      rill_i8_conv(NULL, 1, path, g, xc, &pw, &out);
      double c1 = now();
      if (!rill_i8_check_levels(xf, nx, &bad)) exit(1);
      rill_i8_conv_levels(NULL, 1, path, g, xf, &pw, &out);
      double c2 = now();
      ratio3[r] = (c2 - c1) / (c1 - c0);
      if (c1 - c0 < tcopy) tcopy = c1 - c0;
      if (c2 - c1 < tfold) tfold = c2 - c1;
      double t0 = now();
      rill_i8_conv(NULL, 1, path, g, xq, &pw, &out);
      double t1 = now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g->m, (int)npos, (int)k, 1.0f, w, (int)k,
                  bf, (int)npos, 0.0f, y, (int)npos);
      double t2 = now();
      rill_sgemm(NULL, 1, CblasNoTrans, CblasNoTrans, g->m, npos, k, 1.0f, w, k, bf, npos, 0.0f, y, npos);
      double t3 = now();
      ratio[r] = (t1 - t0) / (t2 - t1);
      ratio2[r] = (t1 - t0) / (t3 - t2);
      if (t1 - t0 < ti) ti = t1 - t0;
      if (t2 - t1 < tf) tf = t2 - t1;
      if (t3 - t2 < tr) tr = t3 - t2;
    }
    qsort(ratio, (size_t)rounds, sizeof *ratio, cmp_double);
    qsort(ratio2, (size_t)rounds, sizeof *ratio2, cmp_double);
    qsort(ratio3, (size_t)rounds, sizeof *ratio3, cmp_double);
    lsum += log(ratio[rounds / 2]);
    lsum2 += log(ratio2[rounds / 2]);
    lsum3 += log(ratio3[rounds / 2]);
    printf("conv %4lld x %5lld x %4lld (%lldx%lld s%lld): int8 conv %7.3f ms, OpenBLAS sgemm %7.3f ms, "
           "rill_sgemm %7.3f ms (fastest rounds); ratios %.2f, %.2f; from float levels: copy %7.3f ms, "
           "folded %7.3f ms, ratio %.2f\n",
           (long long)g->m, (long long)npos, (long long)k, (long long)g->kh, (long long)g->kw, (long long)g->sh,
           ti * 1e3, tf * 1e3, tr * 1e3, ratio[rounds / 2], ratio2[rounds / 2], tcopy * 1e3, tfold * 1e3,
           ratio3[rounds / 2]);
    free(ratio);
    free(ratio2);
    free(ratio3);
    free(xf);
    free(xc);
    rill_i8_weights_free(&pw);
    free(xq);
    free(w);
    free(y);
    free(bf);
  }
  double d = (double)(ng ? ng : 1);
  printf("per layer (m x n x k, 1 thread, %s): geometric mean of the median ratios over %zu shapes: "
         "int8 / OpenBLAS sgemm (%s kernels) %.2f, int8 / rill_sgemm %.2f\n",
         rill_i8_path_name(path), ng, openblas_get_corename(), exp(lsum / d), exp(lsum2 / d));
  printf("conv2d_int8's input (1 thread): geometric mean of the median ratios folded conversion / full int8 "
         "copy: %.2f\n", exp(lsum3 / d));
}

/* mul / matmul by a 2-D weight (mul_int8's route: Out^T [N, B] = W^T x X^T as the 1 x 1
 * conv of one image of K channels and B pixels, X already int8 and transposed) against
 * rill_sgemm of X [B, K] x W [K, N], 1 thread, alternating. Shapes: ResNet-50's fc at
 * batches 1, 8 and 64, and transformer-sized projections at 128 rows. */
static void per_layer_mul(int rounds) {
  static const int64_t shapes[][3] = {{1, 2048, 1000}, {8, 2048, 1000}, {64, 2048, 1000},
                                      {128, 768, 768}, {128, 768, 3072}, {128, 3072, 768}};
  rill_i8_path path = rill_i8_path_for_cpu();
  double lsum = 0;
  size_t ns = sizeof shapes / sizeof shapes[0];
  for (size_t l = 0; l < ns; l++) {
    int64_t b = shapes[l][0], k = shapes[l][1], n = shapes[l][2];
    int8_t *xt = malloc((size_t)(b * k));
    float *xf = malloc(sizeof(float) * (size_t)(b * k)), *w = malloc(sizeof(float) * (size_t)(k * n));
    float *y = malloc(sizeof(float) * (size_t)(b * n));
    for (int64_t i = 0; i < b * k; i++) xf[i] = (float)(xt[i] = (int8_t)((i * 7) % 255 - 127));
    for (int64_t i = 0; i < k * n; i++) w[i] = (float)((i * 13) % 255 - 127);
    rill_i8_weights pw;
    int64_t bad;
    if (rill_i8_weights_pack(w, n, k, 1, true, &pw, &bad) != RILL_I8_PACKED) exit(1);
    rill_i8_out out = {.f32 = y, .scale = 1.0f, .range = 16129.0f};
    rill_conv_geom g = {.n = 1, .c = k, .h = 1, .w = b, .m = n, .oh = 1, .ow = b, .kh = 1, .kw = 1,
                        .groups = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1};
    double *ratio = malloc(sizeof(double) * (size_t)rounds), ti = 1e9, tr = 1e9;
    for (int r = 0; r < rounds; r++) {
      double t0 = now();
      rill_i8_conv(NULL, 1, path, &g, xt, &pw, &out);
      double t1 = now();
      rill_sgemm(NULL, 1, CblasNoTrans, CblasNoTrans, b, n, k, 1.0f, xf, k, w, n, 0.0f, y, n);
      double t2 = now();
      ratio[r] = (t1 - t0) / (t2 - t1);
      if (t1 - t0 < ti) ti = t1 - t0;
      if (t2 - t1 < tr) tr = t2 - t1;
    }
    qsort(ratio, (size_t)rounds, sizeof *ratio, cmp_double);
    lsum += log(ratio[rounds / 2]);
    printf("mul  B %4lld x K %5lld x N %5lld: int8 mul %7.3f ms, rill_sgemm %7.3f ms (fastest rounds); "
           "ratio %.2f\n",
           (long long)b, (long long)k, (long long)n, ti * 1e3, tr * 1e3, ratio[rounds / 2]);
    free(ratio);
    rill_i8_weights_free(&pw);
    free(xt);
    free(xf);
    free(w);
    free(y);
  }
  printf("mul per layer (1 thread, %s): geometric mean of the median ratios int8 / rill_sgemm over %zu shapes: "
         "%.2f\n",
         rill_i8_path_name(path), ns, exp(lsum / (double)ns));
}

/* The batch-1 mul on 2 threads (rows split in runs of weight blocks where there are at
 * least ROW_RUN_MIN products per run, conv_run) against 1 thread, and against
 * rill_sgemm given the same 2 threads, alternating. */
static void mul_batch1_threads(int rounds) {
  static const int64_t shapes[][2] = {{2048, 1000}, {1024, 1000}, {4096, 4096}, {768, 3072}};
  rill_i8_path path = rill_i8_path_for_cpu();
  struct rill_device_ctx dev2;
  rill_device_ctx_init(&dev2, (rill_place){RILL_DEVICE_CPU, 0}, 2, 1);
  const rill_device_services *d2 = &dev2.services;
  for (size_t l = 0; l < sizeof shapes / sizeof shapes[0]; l++) {
    int64_t k = shapes[l][0], n = shapes[l][1];
    int8_t *xq = malloc((size_t)k);
    float *xf = malloc(sizeof(float) * (size_t)k), *w = malloc(sizeof(float) * (size_t)(k * n));
    float *y1 = malloc(sizeof(float) * (size_t)n), *y2 = malloc(sizeof(float) * (size_t)n);
    float *ys = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < k; i++) xf[i] = (float)(xq[i] = (int8_t)((i * 7) % 255 - 127));
    for (int64_t i = 0; i < k * n; i++) w[i] = (float)((i * 13) % 255 - 127);
    rill_i8_weights pw;
    int64_t bad;
    if (rill_i8_weights_pack(w, n, k, 1, true, &pw, &bad) != RILL_I8_PACKED) exit(1);
    rill_i8_out o1 = {.f32 = y1, .scale = 1.0f, .range = 16129.0f}, o2 = o1;
    o2.f32 = y2;
    rill_conv_geom g = {.n = 1, .c = k, .h = 1, .w = 1, .m = n, .oh = 1, .ow = 1, .kh = 1, .kw = 1,
                        .groups = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1};
    double *r1 = malloc(sizeof(double) * (size_t)rounds), *rs = malloc(sizeof(double) * (size_t)rounds);
    double t1b = 1e9, t2b = 1e9, tsb = 1e9;
    for (int r = 0; r < rounds; r++) {
      /* the two int8 runs swap places every round: the second finds the weights warm */
      double ta = now();
      if (r % 2) rill_i8_conv(d2, 2, path, &g, xq, &pw, &o2);
      else rill_i8_conv(NULL, 1, path, &g, xq, &pw, &o1);
      double tb = now();
      if (r % 2) rill_i8_conv(NULL, 1, path, &g, xq, &pw, &o1);
      else rill_i8_conv(d2, 2, path, &g, xq, &pw, &o2);
      double tc = now();
      rill_sgemm(d2, 2, CblasNoTrans, CblasNoTrans, 1, n, k, 1.0f, xf, k, w, n, 0.0f, ys, n);
      double td = now();
      double one = r % 2 ? tc - tb : tb - ta, two = r % 2 ? tb - ta : tc - tb;
      r1[r] = two / one;
      rs[r] = two / (td - tc);
      if (one < t1b) t1b = one;
      if (two < t2b) t2b = two;
      if (td - tc < tsb) tsb = td - tc;
    }
    if (memcmp(y1, y2, sizeof(float) * (size_t)n) != 0) {
      fprintf(stderr, "bench_int8: the batch-1 mul differs between 1 and 2 threads\n");
      exit(1);
    }
    qsort(r1, (size_t)rounds, sizeof *r1, cmp_double);
    qsort(rs, (size_t)rounds, sizeof *rs, cmp_double);
    printf("mul  B 1 x K %5lld x N %5lld, 2 threads (%s): int8 %7.3f ms, int8 1 thread %7.3f ms, rill_sgemm "
           "2 threads %7.3f ms (fastest rounds); ratios / 1 thread %.2f, / rill_sgemm %.2f; outputs identical\n",
           (long long)k, (long long)n, rill_i8_path_name(path), t2b * 1e3, t1b * 1e3, tsb * 1e3, r1[rounds / 2],
           rs[rounds / 2]);
    free(r1);
    free(rs);
    rill_i8_weights_free(&pw);
    free(xq);
    free(xf);
    free(w);
    free(y1);
    free(y2);
    free(ys);
  }
}

/* One float depthwise_conv2d kernel call on its own variables (3x3, padding 1). */
typedef struct dw_float {
  rill_variable xv, wv, yv;
  rill_attr_value *attrs;
  int32_t pads[2], strides[2];
  size_t nin[4], nout[1];
  rill_variable *in0[1], *in1[1], *out0[1];
  rill_variable *const *ins[4];
  rill_variable *const *outs[1];
  rill_kernel_ctx ctx;
  rill_kernel_fn fn;
} dw_float;

static void dw_float_setup(dw_float *r, const rill_conv_geom *g, const float *x, const float *w) {
  memset(r, 0, sizeof *r);
  const rill_op_schema *s = rill_schema_find("depthwise_conv2d");
  r->fn = rill_kernel_find("depthwise_conv2d", RILL_DEVICE_CPU, RILL_DTYPE_FP32);
  if (!s || !r->fn) exit(1);
  r->attrs = calloc(s->nattrs, sizeof *r->attrs);
  for (size_t i = 0; i < s->nattrs; i++) r->attrs[i] = s->attrs[i].def; /* shallow: shared */
  r->pads[0] = (int32_t)g->pt;
  r->pads[1] = (int32_t)g->pl;
  r->strides[0] = (int32_t)g->sh;
  r->strides[1] = (int32_t)g->sw;
  rill_attr_value *a = &r->attrs[rill_schema_attr_index(s, "paddings")];
  a->n = 2;
  a->list.ints = r->pads;
  a = &r->attrs[rill_schema_attr_index(s, "strides")];
  a->n = 2;
  a->list.ints = r->strides;
  r->attrs[rill_schema_attr_index(s, "groups")].v.i = (int32_t)g->groups;
  rill_dims xd = {4, {g->n, g->c, g->h, g->w}}, wd = {4, {g->m, g->c / g->groups, g->kh, g->kw}};
  rill_dims yd = {4, {g->n, g->m, g->oh, g->ow}};
  rill_variable_init(&r->xv);
  rill_variable_init(&r->wv);
  rill_variable_init(&r->yv);
  rill_tensor *xt = rill_variable_tensor(&r->xv), *wt = rill_variable_tensor(&r->wv);
  check(rill_tensor_alloc(xt, RILL_DTYPE_FP32, &xd), "x");
  check(rill_tensor_alloc(wt, RILL_DTYPE_FP32, &wd), "w");
  check(rill_tensor_alloc(rill_variable_tensor(&r->yv), RILL_DTYPE_FP32, &yd), "y");
  memcpy(rill_tensor_ptr(xt), x, (size_t)rill_tensor_nbytes(xt));
  memcpy(rill_tensor_ptr(wt), w, (size_t)rill_tensor_nbytes(wt));
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
}

static void dw_float_teardown(dw_float *r) {
  rill_variable_clear(&r->xv);
  rill_variable_clear(&r->wv);
  rill_variable_clear(&r->yv);
  free(r->attrs);
}

/* The fake quantize op's levels (round_type 1, the op's loop: quant_levels.h). */
static void fake_quantize(const float *x, int64_t n, float s, float *out) {
  rill_quant_span(x, out, n, s, rill_quant_bin_count(8), 1, false);
}

/* 5. The fake quantize(-dequantize) loop alone (round_type 1, 8 bits) on ResNet-50's
 * largest activation (64 x 112 x 112), 1 thread, at each vector level this CPU runs
 * (generic: SSE2's 4 lanes; avx2: 8; avx512: 16), the levels alternating in rounds:
 * the median time of each and the median per-round ratio to the generic loop; the
 * outputs of every level are the same bits. */
static void quant_levels(int rounds) {
  const int64_t n = 64 * 112 * 112;
  const float s = 2.54f, bin = rill_quant_bin_count(8);
  float *x = malloc(sizeof(float) * (size_t)n), *out[3];
  for (int64_t i = 0; i < n; i++) x[i] = (float)((i * 7) % 263 - 131) / 50.0f;
  const rill_cpu_isa_level was = rill_cpu_isa_level_get();
  const rill_cpu_isa_level levels[3] = {RILL_CPU_ISA_GENERIC, RILL_CPU_ISA_AVX2, RILL_CPU_ISA_AVX512};
  int nl = 0;
  while (nl < 3 && levels[nl] <= rill_cpu_isa_level_native()) nl++;
  for (int dq = 0; dq < 2; dq++) {
    double *t[3], *ratio[3];
    for (int l = 0; l < nl; l++) {
      out[l] = malloc(sizeof(float) * (size_t)n);
      t[l] = malloc(sizeof(double) * (size_t)rounds);
      ratio[l] = malloc(sizeof(double) * (size_t)rounds);
    }
    for (int r = 0; r < rounds; r++) {
      for (int l = 0; l < nl; l++) {
        rill_cpu_isa_level_set(levels[l]);
        double t0 = now();
        rill_quant_span(x, out[l], n, s, bin, 1, dq);
        t[l][r] = now() - t0;
      }
      for (int l = 0; l < nl; l++) ratio[l][r] = t[l][r] / t[0][r];
    }
    rill_cpu_isa_level_set(was);
    printf("quant %s, %lld floats (1 thread):", dq ? "dequantized" : "levels", (long long)n);
    for (int l = 0; l < nl; l++) {
      if (memcmp(out[l], out[0], sizeof(float) * (size_t)n) != 0) {
        fprintf(stderr, "bench_int8: the %s quantize loop differs from the generic one\n",
                rill_cpu_isa_level_name(levels[l]));
        exit(1);
      }
      qsort(t[l], (size_t)rounds, sizeof(double), cmp_double);
      qsort(ratio[l], (size_t)rounds, sizeof(double), cmp_double);
      printf(" %s %.3f ms (ratio to generic %.2f)%s", rill_cpu_isa_level_name(levels[l]), t[l][rounds / 2] * 1e3,
             ratio[l][rounds / 2], l + 1 < nl ? ";" : "\n");
    }
    for (int l = 0; l < nl; l++) {
      free(t[l]);
      free(ratio[l]);
      free(out[l]);
    }
  }
  free(x);
}

/* MobileNet-v1's 13 depthwise layers (3x3, padding 1) at 224 x 224: the 9 distinct
 * (channels, input size, stride). 1 thread, alternating; the float outputs of the
 * int8 conv (scale 1, range 1: the sums) equal the float kernel's. */
static void per_layer_dw(int rounds) {
  static const int64_t shapes[][3] = {{32, 112, 1},  {64, 112, 2},  {128, 56, 1}, {128, 56, 2}, {256, 28, 1},
                                      {256, 28, 2},  {512, 14, 1},  {512, 14, 2}, {1024, 7, 1}};
  rill_i8_path path = rill_i8_path_for_cpu();
  double lsum = 0, lsum_before = 0, lsum_after = 0;
  size_t ns = sizeof shapes / sizeof shapes[0];
  for (size_t l = 0; l < ns; l++) {
    int64_t c = shapes[l][0], hw = shapes[l][1], st = shapes[l][2];
    rill_conv_geom g = {.n = 1, .c = c, .h = hw, .w = hw, .m = c, .kh = 3, .kw = 3, .groups = c,
                        .sh = st, .sw = st, .dh = 1, .dw = 1, .pt = 1, .pb = 1, .pl = 1, .pr = 1};
    g.oh = (hw + 2 - 3) / st + 1;
    g.ow = g.oh;
    int64_t nx = c * hw * hw, ny = c * g.oh * g.ow;
    float *xf = malloc(sizeof(float) * (size_t)nx), *w = malloc(sizeof(float) * (size_t)(c * 9));
    float *y = malloc(sizeof(float) * (size_t)ny);
    for (int64_t i = 0; i < nx; i++) xf[i] = (float)((i * 7) % 255 - 127);
    for (int64_t i = 0; i < c * 9; i++) w[i] = (float)((i * 13) % 255 - 127);
    rill_i8_weights pw;
    int64_t bad;
    if (rill_i8_weights_pack(w, c, 9, c, false, &pw, &bad) != RILL_I8_PACKED) exit(1);
    rill_i8_out out = {.f32 = y, .scale = 1.0f, .range = 1.0f};
    dw_float fr;
    dw_float_setup(&fr, &g, xf, w);
    double *ratio = malloc(sizeof(double) * (size_t)rounds), ti = 1e9, tf = 1e9;
    const float *fy = rill_tensor_ptr(rill_variable_tensor(&fr.yv));
    /* the activation before its fake quantize op (scale 2.54: levels round(50 x)), its
     * levels, and the outputs of the quantizer + int8 conv and of the folded conv */
    float *xa = malloc(sizeof(float) * (size_t)nx), *xl = malloc(sizeof(float) * (size_t)nx);
    float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
    for (int64_t i = 0; i < nx; i++) xa[i] = (float)((i * 7) % 263 - 131) / 50.0f;
    rill_i8_quant q = rill_i8_quant_make(2.54f, 8, 1);
    rill_i8_out o1 = out, o2 = out;
    o1.f32 = y1;
    o2.f32 = y2;
    double *rb = malloc(sizeof(double) * (size_t)rounds), *ra = malloc(sizeof(double) * (size_t)rounds);
    double tb = 1e9, ta = 1e9;
    for (int r = 0; r < rounds; r++) {
      double t0 = now();
      if (!rill_i8_check_levels(xf, nx, &bad)) exit(1);
      rill_i8_conv_levels(NULL, 1, path, &g, xf, &pw, &out);
      double t1 = now();
      check(fr.fn(&fr.ctx), "depthwise_conv2d");
      double t2 = now();
      fake_quantize(xa, nx, 2.54f, xl); /* before: the quantize op, then the int8 conv */
      if (!rill_i8_check_levels(xl, nx, &bad)) exit(1);
      rill_i8_conv_levels(NULL, 1, path, &g, xl, &pw, &o1);
      double t3 = now();
      bool bad_level = false; /* after: the quantize op folded in */
      rill_i8_conv_quant(NULL, 1, path, &g, xa, &q, &pw, &o2, &bad_level);
      double t4 = now();
      if (bad_level) exit(1);
      ratio[r] = (t1 - t0) / (t2 - t1);
      rb[r] = (t3 - t2) / (t2 - t1);
      ra[r] = (t4 - t3) / (t2 - t1);
      if (t1 - t0 < ti) ti = t1 - t0;
      if (t2 - t1 < tf) tf = t2 - t1;
      if (t3 - t2 < tb) tb = t3 - t2;
      if (t4 - t3 < ta) ta = t4 - t3;
    }
    if (memcmp(y, fy, sizeof(float) * (size_t)ny) != 0 || memcmp(y1, y2, sizeof(float) * (size_t)ny) != 0) {
      fprintf(stderr, "bench_int8: the int8 depthwise conv differs from the float kernel or the folded one\n");
      exit(1);
    }
    qsort(ratio, (size_t)rounds, sizeof *ratio, cmp_double);
    qsort(rb, (size_t)rounds, sizeof *rb, cmp_double);
    qsort(ra, (size_t)rounds, sizeof *ra, cmp_double);
    lsum += log(ratio[rounds / 2]);
    lsum_before += log(rb[rounds / 2]);
    lsum_after += log(ra[rounds / 2]);
    printf("dw   C %4lld x %3lld x %3lld s%lld: int8 %7.3f ms, float depthwise_conv2d %7.3f ms (fastest rounds); "
           "ratio %.2f; with the fake quantize op: op + int8 %7.3f ms, folded %7.3f ms, ratios / float %.2f, "
           "%.2f\n",
           (long long)c, (long long)hw, (long long)hw, (long long)st, ti * 1e3, tf * 1e3, ratio[rounds / 2],
           tb * 1e3, ta * 1e3, rb[rounds / 2], ra[rounds / 2]);
    free(rb);
    free(ra);
    free(xa);
    free(xl);
    free(y1);
    free(y2);
    free(ratio);
    dw_float_teardown(&fr);
    rill_i8_weights_free(&pw);
    free(xf);
    free(w);
    free(y);
  }
  printf("depthwise per layer (1 thread, %s): geometric mean of the median ratios int8 / float depthwise_conv2d "
         "over %zu shapes: %.2f; fake quantize op + int8 / float %.2f, folded / float %.2f\n",
         rill_i8_path_name(path), ns, exp(lsum / (double)ns), exp(lsum_before / (double)ns),
         exp(lsum_after / (double)ns));
}

int main(int argc, char **argv) {
  int rounds = 7;
  bool profile = false;
  const char *only = NULL; /* --only model|conv|mul|dw|quant: one section */
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--profile") == 0) profile = true;
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    else rounds = atoi(argv[i]);
  }
  if (rounds < 1) rounds = 1;
  check(rill_registry_init(), "registry");
  printf("cpu: %s\n", rill_cpu_isa_level_name(rill_cpu_isa_level_get()));
  if (!only || strcmp(only, "model") == 0) whole_model(rounds, profile);
  if (!only || strcmp(only, "conv") == 0) per_layer(rounds);
  if (!only || strcmp(only, "mul") == 0) {
    per_layer_mul(rounds);
    mul_batch1_threads(rounds);
  }
  if (!only || strcmp(only, "dw") == 0) per_layer_dw(rounds);
  if (!only || strcmp(only, "quant") == 0) quant_levels(rounds);
  return 0;
}
