/* The INT8 pass (framework/transform/infer_passes.c) and conv2d_int8: a conv over
 * fake-quantized levels and its dequantizer become one int8 op whose output equals the
 * float simulation's bit for bit while every float sum is exact (below 2^24), on every
 * vector path (scalar, AVX2, AVX-512 VNNI); what the pattern's conditions exclude stays;
 * values that are not levels are an error naming the op and the variable. The int8
 * ResNet-50 of Paddle-Lite (53 convs, one fc) runs both ways with synthetic level
 * weights; mul and matmul with a 2-D weight become mul_int8. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "framework/base/isa.h"
#include "framework/inference/predictor.h"
#include "framework/registry/registry.h"
#include "framework/transform/infer_passes.h"
#include "framework/transform/opedit.h"
#include "prog_util.h"
#include "support/synth_params.h"

#define PROGRAMS RILL_SHARED_DIR "/programs/"

/* ------------------------------------------------------------- hand-built ----- */

typedef struct small {
  rill_program *p;
  rill_scope *params;
} small;

/* x [1, 3, 6, 6] -> fake_quantize_moving_average_abs_max (scale s) -> conv2d (w [4, 3,
 * 3, 3], pad 1, stride `stride`) -> fake_dequantize_max_abs (s, 500) -> relu -> out.
 * w_frac: a weight that is not a level; extra_reader: y is also read by a second relu;
 * no_quant: the conv reads x itself. */
static small build(int stride, bool w_frac, bool extra_reader, bool no_quant) {
  small s = {prog_new(), NULL};
  POK(rill_scope_create(NULL, &s.params));
  prog_var(s.p, "x", RILL_DTYPE_FP32, "", 4, 1, 3, 6, 6);
  prog_var(s.p, "xq", RILL_DTYPE_FP32, "", 4, 1, 3, 6, 6);
  prog_var(s.p, "y", RILL_DTYPE_FP32, "", 4, 1, 4, -1, -1);
  prog_var(s.p, "z", RILL_DTYPE_FP32, "", 4, 1, 4, -1, -1);
  prog_var(s.p, "out", RILL_DTYPE_FP32, "", 4, 1, 4, -1, -1);
  prog_var(s.p, "out2", RILL_DTYPE_FP32, "", 4, 1, 4, -1, -1);
  prog_var(s.p, "w", RILL_DTYPE_FP32, "p", 4, 4, 3, 3, 3);
  prog_var(s.p, "s", RILL_DTYPE_FP32, "p", 1, 1);
  rill_tensor *w = NULL, *sc = NULL;
  POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){4, 3, 3, 3}, 4, &w));
  POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){1}, 1, &sc));
  float *wd = rill_tensor_data(w);
  for (int i = 0; i < 108; i++) wd[i] = (float)((i * 37) % 255 - 127);
  if (w_frac) wd[50] = 2.5f;
  *(float *)rill_tensor_data(sc) = 1.5f;
  scope_bind(s.params, "w", w);
  scope_bind(s.params, "s", sc);
  rill_op_builder *b = prog_op_begin("fake_quantize_moving_average_abs_max", "X=x;InScale=s", "Out=xq;OutScale=s");
  POK(rill_op_builder_attr_bool(b, "is_test", true));
  POK(rill_op_builder_attr_int(b, "bit_length", 8));
  prog_op_end(b, s.p);
  b = prog_op_begin("conv2d", no_quant ? "Input=x;Filter=w" : "Input=xq;Filter=w", "Output=y");
  POK(rill_op_builder_attr_ints(b, "strides", (const int32_t[]){stride, stride}, 2));
  POK(rill_op_builder_attr_ints(b, "paddings", (const int32_t[]){1, 1}, 2));
  prog_op_end(b, s.p);
  b = prog_op_begin("fake_dequantize_max_abs", "X=y;Scale=s", "Out=z");
  POK(rill_op_builder_attr_float(b, "max_range", 500.0f));
  prog_op_end(b, s.p);
  prog_op(s.p, "relu", "X=z", "Out=out");
  if (extra_reader) prog_op(s.p, "relu", "X=y", "Out=out2");
  return s;
}

static void small_free(small *s) {
  rill_program_destroy(s->p);
  rill_scope_destroy(s->params);
}

static float *image(void) {
  static float x[108];
  for (int i = 0; i < 108; i++) x[i] = (float)((i * 29) % 61) / 20.0f - 1.5f;
  return x;
}

/* Runs s on the image; the caller frees the result. */
static rill_tensor *run_small(small *s, rill_status **err) {
  rill_executor *e = exe_new();
  rill_tensor *x = wrap(RILL_DTYPE_FP32, image(), 4, 1, 3, 6, 6), *out = NULL;
  const char *feed = "x", *fetch = "out";
  *err = rill_executor_run(e, s->p, s->params, &feed, &x, 1, &fetch, 1, &out);
  rill_tensor_destroy(x);
  rill_executor_destroy(e);
  return out;
}

static void expect_same(rill_tensor *a, rill_tensor *b, const char *what) {
  cr_assert_eq(rill_tensor_byte_size(a), rill_tensor_byte_size(b), "%s: sizes", what);
  const float *x = rill_tensor_data(a), *y = rill_tensor_data(b);
  for (int64_t i = 0; i < rill_tensor_numel(a); i++)
    cr_assert(x[i] == y[i], "%s: [%lld] %.9g vs %.9g", what, (long long)i, (double)x[i], (double)y[i]);
}

Test(int8_pass, conv_between_quantize_and_dequantize_becomes_int8) {
  POK(rill_registry_init());
  for (int stride = 1; stride <= 2; stride++) {
    small s = build(stride, false, false, false);
    rill_status *st = NULL;
    rill_tensor *want = run_small(&s, &st);
    POK(st);
    size_t n = 0;
    POK(rill_pass_int8(s.p, s.params, true, &n));
    cr_assert_eq(n, 1);
    cr_assert_eq(prog_find_op(s.p, "conv2d", 0), -1);
    cr_assert_eq(prog_find_op(s.p, "fake_dequantize_max_abs", 0), -1);
    long f = prog_find_op(s.p, "conv2d_int8", 0);
    cr_assert_geq(f, 0);
    cr_assert_str_eq(prog_arg(s.p, (size_t)f, true, "Input", 0), "xq");
    cr_assert_str_eq(prog_arg(s.p, (size_t)f, true, "Scale", 0), "s");
    cr_assert_str_eq(prog_arg(s.p, (size_t)f, false, "Output", 0), "z");
    rill_tensor *got = run_small(&s, &st);
    POK(st);
    expect_same(want, got, "int8 vs float simulation");
    /* an immutable filter (a predictor's) is packed once and kept with its buffer */
    rill_variable *wv = rill_scope_find(s.params, "w");
    cr_assert(wv && wv->kind == RILL_VARKIND_TENSOR && wv->u.tensor.buf);
    rill_buffer_set_immutable(wv->u.tensor.buf);
    for (int again = 0; again < 2; again++) {
      rill_tensor *kept = run_small(&s, &st);
      POK(st);
      cr_assert_not_null(rill_buffer_derived_get(wv->u.tensor.buf), "the packed filter is kept");
      expect_same(want, kept, "int8 with the kept filter");
      rill_tensor_destroy(kept);
    }
    double nz = 0;
    for (int64_t i = 0; i < rill_tensor_numel(got); i++) nz += ((const float *)rill_tensor_data(got))[i] != 0;
    cr_assert_gt(nz, 0, "the test must compute something");
    rill_tensor_destroy(want);
    rill_tensor_destroy(got);
    small_free(&s);
  }
}

Test(int8_pass, what_the_conditions_exclude_stays) {
  POK(rill_registry_init());
  for (int c = 0; c < 3; c++) {
    small s = build(1, c == 0, c == 1, c == 2);
    size_t n = 7;
    POK(rill_pass_int8(s.p, s.params, true, &n));
    cr_assert_eq(n, 0, "case %d", c);
    cr_assert_geq(prog_find_op(s.p, "conv2d", 0), 0);
    small_free(&s);
  }
  small s = build(1, false, false, false);
  size_t n = 0;
  rill_status *st = rill_pass_int8(s.p, NULL, true, &n);
  cr_assert_not_null(st, "no parameter scope: an error, not a guess");
  rill_status_destroy(st);
  small_free(&s);
}

Test(int8_pass, values_that_are_not_levels_are_errors_naming_op_and_variable) {
  POK(rill_registry_init());
  /* conv2d_int8 reading x directly: x holds fractions */
  small s = build(1, false, false, true);
  size_t n = 0;
  POK(rill_pass_int8(s.p, s.params, true, &n));
  cr_assert_eq(n, 0);
  rill_program_destroy(s.p);
  s.p = prog_new();
  prog_var(s.p, "x", RILL_DTYPE_FP32, "", 4, 1, 3, 6, 6);
  prog_var(s.p, "out", RILL_DTYPE_FP32, "", 4, 1, 4, -1, -1);
  prog_var(s.p, "w", RILL_DTYPE_FP32, "p", 4, 4, 3, 3, 3);
  prog_var(s.p, "s", RILL_DTYPE_FP32, "p", 1, 1);
  rill_op_builder *b = prog_op_begin("conv2d_int8", "Input=x;Filter=w;Scale=s", "Output=out");
  POK(rill_op_builder_attr_float(b, "max_range", 500.0f));
  prog_op_end(b, s.p);
  rill_status *st = NULL;
  rill_tensor *out = run_small(&s, &st);
  cr_assert_null(out);
  cr_assert_not_null(st);
  const char *msg = rill_status_message(st);
  cr_assert(strstr(msg, "conv2d_int8") && strstr(msg, "Input (x)") && strstr(msg, "not an integer level"),
            "%s", msg);
  rill_status_destroy(st);
  small_free(&s);
}

/* More products per output than int32 sums exactly (K = 132,105 > 132,104): refused,
 * naming the filter, before anything is computed. */
Test(int8_pass, a_k_too_large_for_int32_is_refused) {
  POK(rill_registry_init());
  enum { C = 132105 };
  rill_program *p = prog_new();
  rill_scope *params = NULL;
  POK(rill_scope_create(NULL, &params));
  prog_var(p, "x", RILL_DTYPE_FP32, "", 4, 1, C, 1, 1);
  prog_var(p, "out", RILL_DTYPE_FP32, "", 4, 1, 1, 1, 1);
  prog_var(p, "wbig", RILL_DTYPE_FP32, "p", 4, 1, C, 1, 1);
  prog_var(p, "s", RILL_DTYPE_FP32, "p", 1, 1);
  rill_tensor *w = NULL, *sc = NULL;
  POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){1, C, 1, 1}, 4, &w));
  POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){1}, 1, &sc));
  memset(rill_tensor_data(w), 0, sizeof(float) * C);
  *(float *)rill_tensor_data(sc) = 1.0f;
  scope_bind(params, "wbig", w);
  scope_bind(params, "s", sc);
  rill_op_builder *b = prog_op_begin("conv2d_int8", "Input=x;Filter=wbig;Scale=s", "Output=out");
  POK(rill_op_builder_attr_float(b, "max_range", 500.0f));
  prog_op_end(b, p);
  float *xv = calloc(C, sizeof *xv);
  rill_tensor *x = wrap(RILL_DTYPE_FP32, xv, 4, 1, C, 1, 1), *out = NULL;
  rill_executor *e = exe_new();
  const char *feed = "x", *fetch = "out";
  rill_status *st = rill_executor_run(e, p, params, &feed, &x, 1, &fetch, 1, &out);
  cr_assert_null(out);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "Filter (wbig)") && strstr(rill_status_message(st), "132105"), "%s",
            rill_status_message(st));
  rill_status_destroy(st);
  rill_executor_destroy(e);
  rill_tensor_destroy(x);
  free(xv);
  rill_scope_destroy(params);
  rill_program_destroy(p);
}

/* The predictor with RILL_PASS_ALL | RILL_PASS_INT8 (memory plan on, weights
 * immutable) gives the bits of the predictor without passes, and counts one rewrite
 * where the CPU runs AVX2 (none at RILL_CPU_ISA=generic). */
Test(int8_pass, predictor_takes_the_pass_by_mask) {
  POK(rill_registry_init());
  small s = build(1, false, false, false);
  POK(rill_block_add_var(s.p, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0, 0, true));
  POK(rill_block_add_var(s.p, 0, "fetch", RILL_VAR_FETCH_LIST, RILL_DTYPE_FP32, NULL, 0, 0, true));
  rill_op_builder *b = prog_op_begin("feed", "X=feed", "Out=x");
  POK(rill_op_builder_attr_int(b, "col", 0));
  prog_op_end(b, s.p);
  /* the feed op first: move it to the front */
  rill_block_desc *blk = &s.p->blocks[0];
  rill_op_desc feed = blk->ops[blk->nops - 1];
  memmove(&blk->ops[1], &blk->ops[0], (blk->nops - 1) * sizeof feed);
  blk->ops[0] = feed;
  b = prog_op_begin("fetch", "X=out", "Out=fetch");
  POK(rill_op_builder_attr_int(b, "col", 0));
  prog_op_end(b, s.p);
  char dir[] = "/tmp/rill_int8_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/__model__", dir);
  POK(rill_program_save(s.p, path));
  const char *names[] = {"s", "w"};
  POK(rill_program_save_vars(s.p, s.params, dir, names, 2, NULL));
  rill_tensor *outs[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) {
    rill_predictor_config *c = NULL;
    POK(rill_predictor_config_create(dir, &c));
    POK(rill_predictor_config_set_passes(c, k ? RILL_PASS_ALL | RILL_PASS_INT8 : 0));
    rill_predictor *pr = NULL;
    POK(rill_predictor_create(c, &pr));
    /* below AVX2 the predictor leaves the float simulation as it is */
    cr_assert_eq(rill_predictor_pass_stats(pr)->int8, (size_t)(k && rill_cpu_avx2()));
    /* and the quantizer, whose levels only the int8 conv reads, folds into it */
    cr_assert_eq(rill_predictor_pass_stats(pr)->int8_folded, (size_t)(k && rill_cpu_avx2()));
    rill_tensor *x = wrap(RILL_DTYPE_FP32, image(), 4, 1, 3, 6, 6);
    const char *in = "x";
    for (int run = 0; run < 2; run++) {
      rill_tensor_destroy(outs[k]);
      outs[k] = NULL;
      POK(rill_predictor_run(pr, &in, &x, 1, &outs[k]));
    }
    rill_tensor_destroy(x);
    rill_predictor_destroy(pr);
    rill_predictor_config_destroy(c);
  }
  expect_same(outs[0], outs[1], "predictor with the INT8 pass");
  rill_tensor_destroy(outs[0]);
  rill_tensor_destroy(outs[1]);
  unlink(path);
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
  small_free(&s);
}

/* ------------------------------------------------------------- ResNet-50 ----- */

/* Conv filters and the fc weight: integer levels in [-127, 127]; scales in [0.5, 1.5);
 * variances 1; the folded batch-norm biases small values around 0. */
static float level_value(const char *name, float r) {
  size_t len = strlen(name);
  if (len > 8 && strcmp(name + len - 8, "_weights") == 0) return (float)((int)(r * 255.0f) - 127);
  if (strcmp(name, "fc_0.w_0") == 0) return (float)((int)(r * 255.0f) - 127);
  if (len > 6 && strcmp(name + len - 6, ".scale") == 0) return 0.5f + r;
  if (strstr(name, "variance")) return 1.0f;
  return (r - 0.5f) * 0.1f;
}

#define NFETCH 3
static const char *const fetches[NFETCH] = {"save_infer_model/scale_0.tmp_0",
                                            "conv1.conv2d.output.1.tmp_0.dequantized",
                                            "res5c_branch2c.conv2d.output.1.tmp_0.dequantized"};

static void run_resnet(rill_program *p, rill_scope *scope, rill_tensor **outs) {
  const int64_t xd[] = {1, 3, 64, 64};
  rill_tensor *img = NULL;
  POK(rill_tensor_create(RILL_DTYPE_FP32, xd, 4, &img));
  float *x = rill_tensor_data(img);
  for (int64_t k = 0; k < 3 * 64 * 64; k++) x[k] = (float)(k % 251) / 125.0f - 1.0f;
  const char *feed = "image";
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = 2;
  rill_executor *e = NULL;
  POK(rill_executor_create(&o, &e));
  POK(rill_executor_run(e, p, scope, &feed, &img, 1, (const char **)fetches, NFETCH, outs));
  rill_executor_destroy(e);
  rill_tensor_destroy(img);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The model saved (program + one combined parameter file) and run by two predictors,
 * -O2 with and without INT8 (memory plan on, weights immutable): the probabilities
 * equal `want` (the int8 executor run) both ways, and INT8 rewrote all 53 convs and the
 * fc's mul where the CPU runs AVX2. */
static void predictor_matches(rill_program *p, rill_scope *scope, rill_tensor *want) {
  char dir[] = "/tmp/rill_int8_resnet_XXXXXX", model[256], params[256];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(model, sizeof model, "%s/__model__", dir);
  snprintf(params, sizeof params, "%s/params", dir);
  const rill_block_desc *b0 = &p->blocks[0];
  /* the temporaries' declared 224 x 224 shapes go (inferred from the 64 x 64 image);
   * the fetched probabilities keep theirs, [-1, 1000] */
  for (size_t i = 0; i < b0->nvars; i++) {
    const rill_var_desc *v = &b0->vars[i];
    if (!v->persistable && v->type == RILL_VAR_LOD_TENSOR && strcmp(v->name, "image") != 0 &&
        strcmp(v->name, fetches[0]) != 0)
      POK(rill_var_set_tensor(p, 0, v->name, false, v->dtype, NULL, 0, v->lod_level));
  }
  POK(rill_program_save(p, model));
  const char **names = calloc(b0->nvars, sizeof *names);
  size_t n = 0;
  for (size_t i = 0; i < b0->nvars; i++)
    if (b0->vars[i].persistable && b0->vars[i].type == RILL_VAR_LOD_TENSOR) names[n++] = b0->vars[i].name;
  qsort(names, n, sizeof *names, by_name);
  POK(rill_program_save_vars(p, scope, dir, names, n, "params"));
  free(names);
  for (int k = 0; k < 2; k++) {
    rill_predictor_config *c = NULL;
    POK(rill_predictor_config_create(model, &c));
    POK(rill_predictor_config_set_params_file(c, params));
    POK(rill_predictor_config_set_threads(c, 2));
    POK(rill_predictor_config_set_passes(c, k ? RILL_PASS_ALL | RILL_PASS_INT8 : RILL_PASS_ALL));
    rill_predictor *pr = NULL;
    POK(rill_predictor_create(c, &pr));
    cr_assert_eq(rill_predictor_pass_stats(pr)->int8, k && rill_cpu_avx2() ? 54u : 0u);
    /* the 50 fake_quantize_moving_average_abs_max ops: every one's levels only int8 ops read */
    cr_assert_eq(rill_predictor_pass_stats(pr)->int8_folded, k && rill_cpu_avx2() ? 50u : 0u);
    const int64_t xd[] = {1, 3, 64, 64};
    rill_tensor *img = NULL, *out = NULL;
    POK(rill_tensor_create(RILL_DTYPE_FP32, xd, 4, &img));
    float *x = rill_tensor_data(img);
    for (int64_t i = 0; i < 3 * 64 * 64; i++) x[i] = (float)(i % 251) / 125.0f - 1.0f;
    const char *in = "image";
    POK(rill_predictor_run(pr, &in, &img, 1, &out));
    expect_same(want, out, k ? "predictor -O2 + INT8" : "predictor -O2");
    rill_tensor_destroy(out);
    rill_tensor_destroy(img);
    rill_predictor_destroy(pr);
    rill_predictor_config_destroy(c);
  }
  unlink(model);
  unlink(params);
  rmdir(dir);
}

Test(int8_pass, int8_resnet50_equals_the_float_simulation_on_every_path) {
  POK(rill_registry_init());
  rill_program *pf = NULL, *pi = NULL;
  POK(rill_program_load(PROGRAMS "paddlelite_resnet50_int8__model__", &pf));
  POK(rill_program_load(PROGRAMS "paddlelite_resnet50_int8__model__", &pi));
  /* 64 x 64 images: a twelfth of the work of 224 x 224, every layer still there */
  const int64_t small_image[] = {-1, 3, 64, 64};
  POK(rill_var_set_tensor(pf, 0, "image", true, RILL_DTYPE_FP32, small_image, 4, 0));
  POK(rill_var_set_tensor(pi, 0, "image", true, RILL_DTYPE_FP32, small_image, 4, 0));
  rill_scope *scope = NULL;
  POK(rill_scope_create(NULL, &scope));
  synth_params(pf, scope, 23, level_value);
  size_t n = 0;
  POK(rill_pass_int8(pi, scope, true, &n));
  cr_assert_eq(n, 54, "every conv and the fc's mul read levels: %zu rewritten", n);
  cr_assert_eq(prog_find_op(pi, "conv2d", 0), -1);
  cr_assert_eq(prog_find_op(pi, "mul", 0), -1);
  cr_assert_geq(prog_find_op(pi, "mul_int8", 0), 0);
  cr_assert_eq(prog_find_op(pi, "fake_dequantize_max_abs", 0), -1);

  rill_tensor *want[NFETCH] = {NULL}, *got[NFETCH] = {NULL};
  run_resnet(pf, scope, want);
  run_resnet(pi, scope, got);
  const float *prob = rill_tensor_data(want[0]);
  double sum = 0;
  for (int k = 0; k < 1000; k++) sum += prob[k];
  cr_assert(fabs(sum - 1) < 1e-4, "probabilities sum to %g", sum);
  for (int i = 0; i < NFETCH; i++) expect_same(want[i], got[i], fetches[i]);

  /* Every lower vector level: the int8 program equals the float one run at that level
   * (softmax sums in another order on each level, so the probabilities are compared
   * within a level), and the convs' outputs equal the top level's. */
  rill_cpu_isa_level top = rill_cpu_isa_level_get();
  for (int level = (int)top - 1; level >= RILL_CPU_ISA_GENERIC; level--) {
    rill_cpu_isa_level_set((rill_cpu_isa_level)level);
    const char *name = rill_cpu_isa_level_name((rill_cpu_isa_level)level);
    rill_tensor *f[NFETCH] = {NULL}, *q[NFETCH] = {NULL};
    run_resnet(pf, scope, f);
    run_resnet(pi, scope, q);
    for (int i = 0; i < NFETCH; i++) {
      expect_same(f[i], q[i], name);
      if (i > 0) expect_same(got[i], q[i], name);
      rill_tensor_destroy(f[i]);
      rill_tensor_destroy(q[i]);
    }
  }
  rill_cpu_isa_level_set(top);
  predictor_matches(pf, scope, got[0]);
  for (int i = 0; i < NFETCH; i++) {
    rill_tensor_destroy(want[i]);
    rill_tensor_destroy(got[i]);
  }
  rill_scope_destroy(scope);
  rill_program_destroy(pf);
  rill_program_destroy(pi);
}

/* ------------------------------------------------ per-channel weight scales ----- */

/* A hand-built program with the channel-wise dequantizer: conv2d_int8 takes the
 * per-output-channel scales (and the activation's where the dequantizer has two) and
 * equals the float simulation bit for bit; a FilterScale of the wrong length is an
 * error naming it. */
static small build_channel_wise(int nscales) {
  small s = build(1, false, false, false);
  /* the per-tensor dequantizer becomes a channel-wise one over the same conv output */
  rill_block_desc *b = &s.p->blocks[0];
  long dq = prog_find_op(s.p, "fake_dequantize_max_abs", 0);
  cr_assert_geq(dq, 0);
  rill_op_desc_clear(&b->ops[dq]);
  memmove(&b->ops[dq], &b->ops[dq + 1], (b->nops - (size_t)dq - 1) * sizeof b->ops[0]);
  b->nops--;
  prog_var(s.p, "ws", RILL_DTYPE_FP32, "p", 1, 4);
  rill_tensor *ws = NULL;
  POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){4}, 1, &ws));
  float *wsd = rill_tensor_data(ws);
  for (int c = 0; c < 4; c++) wsd[c] = 0.25f + 0.375f * (float)c;
  scope_bind(s.params, "ws", ws);
  rill_op_builder *ob = prog_op_begin("fake_channel_wise_dequantize_max_abs",
                                      nscales == 2 ? "X=y;Scales=ws,s" : "X=y;Scales=ws", "Out=z");
  POK(rill_op_builder_attr_ints(ob, "quant_bits", (const int32_t[]){8, 8}, 2));
  if (nscales == 1) POK(rill_op_builder_attr_int(ob, "quant_axis", 1));
  prog_op_end(ob, s.p);
  /* relu(z) after the dequantizer */
  rill_op_desc last = b->ops[b->nops - 1];
  long relu = prog_find_op(s.p, "relu", 0);
  memmove(&b->ops[relu + 1], &b->ops[relu], (b->nops - 1 - (size_t)relu) * sizeof last);
  b->ops[relu] = last;
  return s;
}

Test(int8_pass, channel_wise_dequantizer_gives_per_filter_scales) {
  POK(rill_registry_init());
  for (int ns = 1; ns <= 2; ns++) {
    small s = build_channel_wise(ns);
    rill_status *st = NULL;
    rill_tensor *want = run_small(&s, &st);
    POK(st);
    size_t n = 0;
    POK(rill_pass_int8(s.p, s.params, true, &n));
    cr_assert_eq(n, 1, "%d scales", ns);
    long f = prog_find_op(s.p, "conv2d_int8", 0);
    cr_assert_geq(f, 0);
    cr_assert_eq(prog_find_op(s.p, "fake_channel_wise_dequantize_max_abs", 0), -1);
    cr_assert_str_eq(prog_arg(s.p, (size_t)f, true, "FilterScale", 0), "ws");
    if (ns == 2) cr_assert_str_eq(prog_arg(s.p, (size_t)f, true, "Scale", 0), "s");
    rill_tensor *got = run_small(&s, &st);
    POK(st);
    expect_same(want, got, "per-channel int8 vs float simulation");
    /* the channels really differ: channel 3's outputs are not channel 0's scaled by 1 */
    const float *z = rill_tensor_data(got);
    double c0 = 0, c3 = 0;
    for (int k = 0; k < 36; k++) {
      c0 += fabs(z[k]);
      c3 += fabs(z[3 * 36 + k]);
    }
    cr_assert(c0 > 0 && c3 > 0);
    rill_tensor_destroy(want);
    rill_tensor_destroy(got);
    /* a FilterScale of 3 values for 4 output channels */
    rill_tensor *bad = NULL;
    POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){3}, 1, &bad));
    memset(rill_tensor_data(bad), 0, 3 * sizeof(float));
    scope_bind(s.params, "ws", bad);
    rill_tensor *none = run_small(&s, &st);
    cr_assert_null(none);
    cr_assert_not_null(st);
    cr_assert(strstr(rill_status_message(st), "FilterScale (ws)") && strstr(rill_status_message(st), "conv2d_int8"),
              "%s", rill_status_message(st));
    rill_status_destroy(st);
    small_free(&s);
  }
  /* a one-scale dequantizer along another axis than the output channel stays */
  small s = build_channel_wise(1);
  long dq = prog_find_op(s.p, "fake_channel_wise_dequantize_max_abs", 0);
  rill_attr_value ax = {.type = RILL_ATTR_INT, .v.i = 0};
  POK(rill_opd_attr(&s.p->blocks[0].ops[dq], "quant_axis", &ax));
  size_t n = 9;
  POK(rill_pass_int8(s.p, s.params, true, &n));
  cr_assert_eq(n, 0);
  small_free(&s);
}

/* The float MNIST model of ../shared/models quantized as Paddle's quantization-aware
 * training freezes a model with channel-wise weights: before each conv an abs-max
 * quantizer of the activation (8 bits, per tensor), the filter replaced by its levels
 * round(127 w / max|w_c|) per output channel c (symmetric), and after it the two-scale
 * channel-wise dequantizer. `per_tensor`: one scale max|w| for every channel instead. */
#define MNIST RILL_SHARED_DIR "/models/mnist_conv_bn_etienne"

static void quantize_mnist(rill_program *p, rill_scope *params, rill_scope *float_params, bool per_tensor) {
  rill_block_desc *b = &p->blocks[0];
  for (size_t i = 0; i < b->nops; i++) {
    if (strcmp(b->ops[i].type, "conv2d") != 0) continue;
    char a[128], w[128], y[128], aq[160], as[160], wl[160], ws[160], yi[160];
    snprintf(a, sizeof a, "%s", rill_op_input(&b->ops[i], "Input")->args[0]);
    snprintf(w, sizeof w, "%s", rill_op_input(&b->ops[i], "Filter")->args[0]);
    snprintf(y, sizeof y, "%s", rill_op_output(&b->ops[i], "Output")->args[0]);
    snprintf(aq, sizeof aq, "%s.levels", a);
    snprintf(as, sizeof as, "%s.scale", a);
    snprintf(wl, sizeof wl, "%s.levels", w);
    snprintf(ws, sizeof ws, "%s.scales", w);
    snprintf(yi, sizeof yi, "%s.sums", y);
    rill_tensor *wf = NULL;
    POK(rill_scope_get_tensor(float_params, w, &wf));
    const rill_dims *d = &wf->dims;
    int64_t m = d->d[0], k = rill_tensor_numel(wf) / m;
    rill_tensor *lv = NULL, *sc = NULL;
    POK(rill_tensor_create(RILL_DTYPE_FP32, d->d, d->n, &lv));
    POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){m}, 1, &sc));
    const float *src = rill_tensor_data(wf);
    float *l = rill_tensor_data(lv), *s = rill_tensor_data(sc), all = 0;
    for (int64_t e = 0; e < m * k; e++) all = fmaxf(all, fabsf(src[e]));
    for (int64_t c = 0; c < m; c++) {
      float mx = 0;
      for (int64_t e = 0; e < k; e++) mx = fmaxf(mx, fabsf(src[c * k + e]));
      s[c] = per_tensor ? all : mx;
      for (int64_t e = 0; e < k; e++) l[c * k + e] = s[c] > 0 ? roundf(src[c * k + e] / s[c] * 127.0f) : 0.0f;
    }
    prog_var(p, aq, RILL_DTYPE_FP32, "", 4, (int64_t)-1, (int64_t)-1, (int64_t)-1, (int64_t)-1);
    prog_var(p, as, RILL_DTYPE_FP32, "", 1, 1);
    prog_var(p, yi, RILL_DTYPE_FP32, "", 4, (int64_t)-1, (int64_t)-1, (int64_t)-1, (int64_t)-1);
    POK(rill_block_add_var(p, 0, wl, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d->d, d->n, 0, true));
    POK(rill_var_set_flags(p, 0, wl, true, true, false));
    prog_var(p, ws, RILL_DTYPE_FP32, "p", 1, m);
    rill_tensor_destroy(wf);
    scope_bind(params, wl, lv);
    scope_bind(params, ws, sc);
    char spec[512];
    rill_op_builder *ob;
    snprintf(spec, sizeof spec, "Out=%s;OutScale=%s", aq, as);
    ob = prog_op_begin("fake_quantize_abs_max", NULL, spec);
    const char *xa[] = {a};
    POK(rill_op_builder_input(ob, "X", xa, 1));
    POK(rill_op_builder_attr_int(ob, "bit_length", 8));
    prog_op_end(ob, p);
    snprintf(spec, sizeof spec, "X=%s;Scales=%s,%s", yi, ws, as);
    char outs[200];
    snprintf(outs, sizeof outs, "Out=%s", y);
    ob = prog_op_begin("fake_channel_wise_dequantize_max_abs", spec, outs);
    POK(rill_op_builder_attr_ints(ob, "quant_bits", (const int32_t[]){8, 8}, 2));
    POK(rill_op_builder_attr_int(ob, "x_num_col_dims", 1));
    prog_op_end(ob, p);
    /* the two new ops (at the end) go before and after the conv */
    b = &p->blocks[0];
    rill_op_desc q = b->ops[b->nops - 2], dq = b->ops[b->nops - 1];
    memmove(&b->ops[i + 3], &b->ops[i + 1], (b->nops - 2 - i - 1) * sizeof q);
    b->ops[i + 2] = dq;
    b->ops[i + 1] = b->ops[i];
    b->ops[i] = q;
    POK(rill_opd_rename(&b->ops[i + 1], a, aq, true, false));
    POK(rill_opd_rename(&b->ops[i + 1], w, wl, true, false));
    POK(rill_opd_rename(&b->ops[i + 1], y, yi, false, true));
    i += 2;
  }
}

#define MNIST_IMAGES 8

/* The images: the model's reference input and 7 noisy copies of it in [-1, 1]. */
static rill_tensor *mnist_image(int k) {
  rill_tensor *x = NULL;
  POK(rill_tensor_load_npy(MNIST "/refs/input_img.npy", &x));
  float *v = rill_tensor_data(x);
  uint64_t r = 0x9e3779b97f4a7c15ull * (uint64_t)(k + 1);
  for (int64_t i = 0; k && i < rill_tensor_numel(x); i++) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    float u = (float)((r >> 40) & 0xffff) / 65536.0f - 0.5f;
    v[i] = fminf(1.0f, fmaxf(-1.0f, v[i] + 0.6f * u));
  }
  return x;
}

/* Runs p on every image; logits[k * 10 + j] (the softmax's input), prob likewise. */
static void run_mnist(const rill_program *p, rill_scope *scope, const char *logits_name, float *logits,
                      float *prob) {
  rill_executor *e = exe_new();
  for (int k = 0; k < MNIST_IMAGES; k++) {
    rill_tensor *x = mnist_image(k), *outs[2] = {NULL, NULL};
    const char *feed = "img", *fetch[2] = {logits_name, NULL};
    const rill_block_desc *b = &p->blocks[0];
    for (size_t i = 0; i < b->nops; i++)
      if (strcmp(b->ops[i].type, "softmax") == 0) fetch[1] = rill_op_output(&b->ops[i], "Out")->args[0];
    POK(rill_executor_run(e, p, scope, &feed, &x, 1, fetch, 2, outs));
    cr_assert_eq(rill_tensor_numel(outs[0]), 10);
    memcpy(logits + k * 10, rill_tensor_data(outs[0]), 10 * sizeof(float));
    memcpy(prob + k * 10, rill_tensor_data(outs[1]), 10 * sizeof(float));
    rill_tensor_destroy(outs[0]);
    rill_tensor_destroy(outs[1]);
    rill_tensor_destroy(x);
  }
  rill_executor_destroy(e);
}

static int argmax10(const float *v) {
  int a = 0;
  for (int j = 1; j < 10; j++)
    if (v[j] > v[a]) a = j;
  return a;
}

/* The largest logit error over the images relative to each image's largest logit. */
static double rel_err(const float *a, const float *b) {
  double worst = 0;
  for (int k = 0; k < MNIST_IMAGES; k++) {
    double mx = 0, d = 0;
    for (int j = 0; j < 10; j++) {
      mx = fmax(mx, fabs(b[k * 10 + j]));
      d = fmax(d, fabs(a[k * 10 + j] - b[k * 10 + j]));
    }
    worst = fmax(worst, d / mx);
  }
  return worst;
}

/* Accuracy against float: with per-channel weight scales the int8 MNIST model's logits
 * are within 2% of the float model's largest logit on every image and its class is the
 * float model's; the int8 program equals its float simulation bit for bit (K <= 500
 * products of levels: every float sum is exact); per-tensor weight scales are no
 * closer than per-channel ones. */
Test(int8_pass, mnist_with_per_channel_weight_scales_stays_close_to_float) {
  POK(rill_registry_init());
  rill_model *m = NULL;
  POK(rill_model_load(MNIST, NULL, &m));
  const rill_program *pf = rill_model_program(m);
  const char *logits_name = NULL;
  for (size_t i = 0; i < pf->blocks[0].nops; i++)
    if (strcmp(pf->blocks[0].ops[i].type, "softmax") == 0)
      logits_name = rill_op_input(&pf->blocks[0].ops[i], "X")->args[0];
  cr_assert_not_null(logits_name);
  float lf[MNIST_IMAGES * 10], pfl[MNIST_IMAGES * 10];
  run_mnist(pf, rill_model_scope(m), logits_name, lf, pfl);
  double err[2];
  for (int per_tensor = 0; per_tensor < 2; per_tensor++) {
    rill_program *pq = NULL;
    POK(rill_program_load(MNIST "/__model__", &pq));
    rill_scope *params = NULL;
    POK(rill_scope_create(rill_model_scope(m), &params));
    quantize_mnist(pq, params, rill_model_scope(m), per_tensor);
    float ls[MNIST_IMAGES * 10], ps[MNIST_IMAGES * 10], lq[MNIST_IMAGES * 10], pq8[MNIST_IMAGES * 10];
    run_mnist(pq, params, logits_name, ls, ps);
    size_t n = 0;
    POK(rill_pass_int8(pq, params, true, &n));
    cr_assert_eq(n, 2, "both convs rewritten: %zu", n);
    run_mnist(pq, params, logits_name, lq, pq8);
    for (int e = 0; e < MNIST_IMAGES * 10; e++)
      cr_assert(lq[e] == ls[e] && pq8[e] == ps[e], "int8 vs its float simulation at %d: %.9g vs %.9g", e,
                (double)lq[e], (double)ls[e]);
    err[per_tensor] = rel_err(lq, lf);
    for (int k = 0; k < MNIST_IMAGES; k++)
      cr_assert_eq(argmax10(pq8 + k * 10), argmax10(pfl + k * 10), "image %d", k);
    cr_log_info("mnist int8, %s weight scales: largest logit error %.4f of the largest logit",
                per_tensor ? "per-tensor" : "per-channel", err[per_tensor]);
    rill_scope_destroy(params);
    rill_program_destroy(pq);
  }
  cr_assert_eq(argmax10(pfl), 3, "the reference image is a 3");
  cr_assert_lt(err[0], 0.02, "per-channel: %g", err[0]);
  cr_assert_leq(err[0], err[1], "per-channel %g, per-tensor %g", err[0], err[1]);
  rill_model_destroy(m);
}

/* ------------------------------------------------------------ mul, matmul ----- */

/* x [2, 3, 10] (or [1, 10] with `one_row`) -> fake_quantize_abs_max -> mul
 * (x_num_col_dims = rank - 1) or matmul by w [10, 7] -> the per-tensor dequantizer, or
 * the two-scale channel-wise one (a scale per output column) -> out. */
static small build_mm(const char *type, bool one_row, bool channel_wise) {
  small s = {prog_new(), NULL};
  POK(rill_scope_create(NULL, &s.params));
  const char *const names[] = {"x", "xq", "y", "out"};
  for (int v = 0; v < 4; v++) { /* [1, 10] or [2, 3, 10]; the outputs 7 wide */
    int64_t last = v < 2 ? 10 : 7;
    if (one_row) prog_var(s.p, names[v], RILL_DTYPE_FP32, "", 2, (int64_t)1, last);
    else prog_var(s.p, names[v], RILL_DTYPE_FP32, "", 3, (int64_t)2, (int64_t)3, last);
  }
  prog_var(s.p, "w", RILL_DTYPE_FP32, "p", 2, 10, 7);
  prog_var(s.p, "ws", RILL_DTYPE_FP32, "p", 1, 7);
  prog_var(s.p, "s", RILL_DTYPE_FP32, "", 1, 1);
  rill_tensor *w = NULL, *ws = NULL;
  POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){10, 7}, 2, &w));
  POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){7}, 1, &ws));
  float *wd = rill_tensor_data(w), *wsd = rill_tensor_data(ws);
  for (int i = 0; i < 70; i++) wd[i] = (float)((i * 53) % 255 - 127);
  for (int i = 0; i < 7; i++) wsd[i] = 0.125f * (float)(i + 1);
  scope_bind(s.params, "w", w);
  scope_bind(s.params, "ws", ws);
  rill_op_builder *b = prog_op_begin("fake_quantize_abs_max", "X=x", "Out=xq;OutScale=s");
  POK(rill_op_builder_attr_int(b, "bit_length", 8));
  prog_op_end(b, s.p);
  b = prog_op_begin(type, "X=xq;Y=w", "Out=y");
  if (strcmp(type, "mul") == 0) POK(rill_op_builder_attr_int(b, "x_num_col_dims", one_row ? 1 : 2));
  prog_op_end(b, s.p);
  if (channel_wise) {
    b = prog_op_begin("fake_channel_wise_dequantize_max_abs", "X=y;Scales=ws,s", "Out=out");
    POK(rill_op_builder_attr_ints(b, "quant_bits", (const int32_t[]){8, 8}, 2));
    POK(rill_op_builder_attr_int(b, "x_num_col_dims", one_row ? 1 : 2));
  } else {
    b = prog_op_begin("fake_dequantize_max_abs", "X=y;Scale=s", "Out=out");
    POK(rill_op_builder_attr_float(b, "max_range", 127.0f));
  }
  prog_op_end(b, s.p);
  return s;
}

static rill_tensor *run_mm(small *s, bool one_row, int threads, rill_status **err) {
  static float x[60];
  for (int i = 0; i < 60; i++) x[i] = (float)((i * 31) % 47) / 10.0f - 2.3f;
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = threads;
  rill_executor *e = NULL;
  POK(rill_executor_create(&o, &e));
  rill_tensor *xt = one_row ? wrap(RILL_DTYPE_FP32, x, 2, 1, 10) : wrap(RILL_DTYPE_FP32, x, 3, 2, 3, 10), *out = NULL;
  const char *feed = "x", *fetch = "out";
  *err = rill_executor_run(e, s->p, s->params, &feed, &xt, 1, &fetch, 1, &out);
  rill_tensor_destroy(xt);
  rill_executor_destroy(e);
  return out;
}

/* mul and matmul by a 2-D weight, one row and 6 rows (X [2, 3, 10]), per-tensor and
 * per-column scales (the channel-wise dequantizer along the output's last axis):
 * rewritten to mul_int8, whose output equals the float simulation bit for bit on 1 and
 * 3 threads; a channel-wise dequantizer along another axis, transpose_Y or a fractional
 * weight leave the program alone. */
Test(int8_pass, mul_and_matmul_become_mul_int8) {
  POK(rill_registry_init());
  const char *types[] = {"mul", "matmul"};
  for (int t = 0; t < 2; t++)
    for (int one_row = 0; one_row < 2; one_row++)
      for (int cw = 0; cw < 2; cw++) {
        small s = build_mm(types[t], one_row, cw);
        rill_status *st = NULL;
        rill_tensor *want = run_mm(&s, one_row, 1, &st);
        POK(st);
        size_t n = 0;
        POK(rill_pass_int8(s.p, s.params, true, &n));
        cr_assert_eq(n, 1u, "%s rows %d channel-wise %d", types[t], !one_row, cw);
        long f = prog_find_op(s.p, "mul_int8", 0);
        cr_assert_geq(f, 0);
        cr_assert_eq(prog_find_op(s.p, types[t], 0), -1);
        if (cw) cr_assert_str_eq(prog_arg(s.p, (size_t)f, true, "FilterScale", 0), "ws");
        for (int threads = 1; threads <= 3; threads += 2) {
          rill_tensor *got = run_mm(&s, one_row, threads, &st);
          POK(st);
          expect_same(want, got, "mul_int8 vs float simulation");
          rill_tensor_destroy(got);
        }
        double nz = 0;
        for (int64_t i = 0; i < rill_tensor_numel(want); i++) nz += fabsf(((const float *)rill_tensor_data(want))[i]);
        cr_assert_gt(nz, 0);
        rill_tensor_destroy(want);
        small_free(&s);
      }
  /* transpose_Y, a fractional weight, channels along axis 1 of [2, 3, 7]: left alone */
  for (int c = 0; c < 3; c++) {
    small s = build_mm("matmul", false, c == 2);
    long mm = prog_find_op(s.p, "matmul", 0);
    if (c == 2) {
      long dq = prog_find_op(s.p, "fake_channel_wise_dequantize_max_abs", 0);
      POK(rill_opd_attr_int(&s.p->blocks[0].ops[dq], "x_num_col_dims", 1));
    } else if (c == 0) {
      rill_attr_value tv = {.type = RILL_ATTR_BOOLEAN, .v.b = true};
      POK(rill_opd_attr(&s.p->blocks[0].ops[mm], "transpose_Y", &tv));
    } else {
      rill_tensor *w = NULL;
      POK(rill_scope_get_tensor(s.params, "w", &w));
      ((float *)rill_tensor_data(w))[3] = 0.5f;
      rill_tensor_destroy(w);
    }
    size_t n = 9;
    POK(rill_pass_int8(s.p, s.params, true, &n));
    cr_assert_eq(n, 0, "case %d", c);
    small_free(&s);
  }
}

/* mul_int8 on values that are not levels: an error naming the op, the slot and the
 * variable, and nothing computed. */
Test(int8_pass, mul_int8_refuses_values_that_are_not_levels) {
  POK(rill_registry_init());
  for (int c = 0; c < 2; c++) {
    small s = {prog_new(), NULL};
    POK(rill_scope_create(NULL, &s.params));
    prog_var(s.p, "x", RILL_DTYPE_FP32, "", 2, 1, 10);
    prog_var(s.p, "out", RILL_DTYPE_FP32, "", 0);
    prog_var(s.p, "w", RILL_DTYPE_FP32, "p", 2, 10, 7);
    prog_var(s.p, "s", RILL_DTYPE_FP32, "p", 1, 1);
    rill_tensor *w = NULL, *sc = NULL;
    POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){10, 7}, 2, &w));
    POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){1}, 1, &sc));
    float *wd = rill_tensor_data(w);
    for (int i = 0; i < 70; i++) wd[i] = (float)(i % 9 - 4);
    if (c == 1) wd[12] = 128.0f;
    *(float *)rill_tensor_data(sc) = 1.0f;
    scope_bind(s.params, "w", w);
    scope_bind(s.params, "s", sc);
    rill_op_builder *b = prog_op_begin("mul_int8", "X=x;Y=w;Scale=s", "Out=out");
    POK(rill_op_builder_attr_float(b, "max_range", 127.0f));
    prog_op_end(b, s.p);
    float xv[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, c == 0 ? 0.5f : 10};
    rill_executor *e = exe_new();
    rill_tensor *x = wrap(RILL_DTYPE_FP32, xv, 2, 1, 10), *out = NULL;
    const char *feed = "x", *fetch = "out";
    rill_status *st = rill_executor_run(e, s.p, s.params, &feed, &x, 1, &fetch, 1, &out);
    cr_assert_null(out);
    cr_assert_not_null(st);
    const char *msg = rill_status_message(st);
    cr_assert(strstr(msg, "mul_int8") && strstr(msg, c == 0 ? "X (x)" : "Y (w)") &&
                  strstr(msg, "not an integer level"),
              "%s", msg);
    rill_status_destroy(st);
    rill_tensor_destroy(x);
    rill_executor_destroy(e);
    small_free(&s);
  }
}

/* ------------------------------------------------------------- depthwise ----- */

typedef struct dw_case {
  const char *type; /* depthwise_conv2d, or conv2d with groups = C */
  int mult;         /* filters per channel */
  int sh, sw, dh, dw, ph, pw;
  bool channel_wise;
} dw_case;

enum { DW_C = 6, DW_H = 11, DW_W = 13 };

/* x [1, 6, 11, 13] -> fake_quantize_abs_max -> the depthwise conv (w [6 mult, 1, 3, 3])
 * -> fake_dequantize_max_abs (s, 127), or the two-scale channel-wise dequantizer (a
 * scale per output channel, then s) -> out. */
static small build_dw(const dw_case *c) {
  small s = {prog_new(), NULL};
  POK(rill_scope_create(NULL, &s.params));
  int64_t m = DW_C * c->mult;
  prog_var(s.p, "x", RILL_DTYPE_FP32, "", 4, 1, DW_C, DW_H, DW_W);
  prog_var(s.p, "xq", RILL_DTYPE_FP32, "", 4, 1, DW_C, DW_H, DW_W);
  prog_var(s.p, "y", RILL_DTYPE_FP32, "", 4, 1, m, -1, -1);
  prog_var(s.p, "out", RILL_DTYPE_FP32, "", 4, 1, m, -1, -1);
  prog_var(s.p, "wd", RILL_DTYPE_FP32, "p", 4, m, 1, 3, 3);
  prog_var(s.p, "ws", RILL_DTYPE_FP32, "p", 1, m);
  prog_var(s.p, "s", RILL_DTYPE_FP32, "", 1, 1);
  rill_tensor *w = NULL, *ws = NULL;
  POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){m, 1, 3, 3}, 4, &w));
  POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){m}, 1, &ws));
  float *wd = rill_tensor_data(w), *wsd = rill_tensor_data(ws);
  for (int64_t i = 0; i < m * 9; i++) wd[i] = (float)((i * 41) % 255 - 127);
  for (int64_t i = 0; i < m; i++) wsd[i] = 0.125f + 0.0625f * (float)i;
  scope_bind(s.params, "wd", w);
  scope_bind(s.params, "ws", ws);
  rill_op_builder *b = prog_op_begin("fake_quantize_abs_max", "X=x", "Out=xq;OutScale=s");
  POK(rill_op_builder_attr_int(b, "bit_length", 8));
  prog_op_end(b, s.p);
  b = prog_op_begin(c->type, "Input=xq;Filter=wd", "Output=y");
  POK(rill_op_builder_attr_ints(b, "strides", (const int32_t[]){c->sh, c->sw}, 2));
  POK(rill_op_builder_attr_ints(b, "paddings", (const int32_t[]){c->ph, c->pw}, 2));
  POK(rill_op_builder_attr_ints(b, "dilations", (const int32_t[]){c->dh, c->dw}, 2));
  POK(rill_op_builder_attr_int(b, "groups", DW_C));
  prog_op_end(b, s.p);
  if (c->channel_wise) {
    b = prog_op_begin("fake_channel_wise_dequantize_max_abs", "X=y;Scales=ws,s", "Out=out");
    POK(rill_op_builder_attr_ints(b, "quant_bits", (const int32_t[]){8, 8}, 2));
    POK(rill_op_builder_attr_int(b, "x_num_col_dims", 1));
  } else {
    b = prog_op_begin("fake_dequantize_max_abs", "X=y;Scale=s", "Out=out");
    POK(rill_op_builder_attr_float(b, "max_range", 127.0f));
  }
  prog_op_end(b, s.p);
  return s;
}

static rill_tensor *run_dw(small *s, int threads, rill_status **err) {
  static float x[DW_C * DW_H * DW_W];
  for (int i = 0; i < DW_C * DW_H * DW_W; i++) x[i] = (float)((i * 37) % 101) / 25.0f - 2.0f;
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = threads;
  rill_executor *e = NULL;
  POK(rill_executor_create(&o, &e));
  rill_tensor *xt = wrap(RILL_DTYPE_FP32, x, 4, 1, DW_C, DW_H, DW_W), *out = NULL;
  const char *feed = "x", *fetch = "out";
  *err = rill_executor_run(e, s->p, s->params, &feed, &xt, 1, &fetch, 1, &out);
  rill_tensor_destroy(xt);
  rill_executor_destroy(e);
  return out;
}

/* depthwise_conv2d and conv2d with groups = C, one and two filters per channel,
 * strides, paddings and dilations, per-tensor and per-filter scales: rewritten to
 * conv2d_int8, whose output equals the float simulation bit for bit on 1 and 3 threads. */
Test(int8_pass, depthwise_convs_become_int8) {
  POK(rill_registry_init());
  const dw_case cases[] = {
      {"depthwise_conv2d", 1, 1, 1, 1, 1, 1, 1, false}, {"depthwise_conv2d", 1, 2, 2, 1, 1, 1, 1, true},
      {"depthwise_conv2d", 2, 1, 2, 2, 1, 2, 0, false}, {"conv2d", 1, 1, 1, 1, 1, 1, 1, true},
      {"conv2d", 1, 2, 1, 1, 2, 0, 3, false},           {"depthwise_conv2d", 1, 3, 3, 2, 2, 3, 2, true},
  };
  for (size_t k = 0; k < RILL_COUNTOF(cases); k++) {
    const dw_case *c = &cases[k];
    small s = build_dw(c);
    rill_status *st = NULL;
    rill_tensor *want = run_dw(&s, 1, &st);
    POK(st);
    size_t n = 0;
    POK(rill_pass_int8(s.p, s.params, true, &n));
    cr_assert_eq(n, 1u, "case %zu (%s)", k, c->type);
    long f = prog_find_op(s.p, "conv2d_int8", 0);
    cr_assert_geq(f, 0);
    cr_assert_eq(prog_find_op(s.p, c->type, 0), -1);
    if (c->channel_wise) cr_assert_str_eq(prog_arg(s.p, (size_t)f, true, "FilterScale", 0), "ws");
    for (int threads = 1; threads <= 3; threads += 2) {
      rill_tensor *got = run_dw(&s, threads, &st);
      POK(st);
      expect_same(want, got, "depthwise conv2d_int8 vs float simulation");
      rill_tensor_destroy(got);
    }
    double nz = 0;
    for (int64_t i = 0; i < rill_tensor_numel(want); i++) nz += fabsf(((const float *)rill_tensor_data(want))[i]);
    cr_assert_gt(nz, 0);
    rill_tensor_destroy(want);
    small_free(&s);
  }
}

/* The predictor's passes (rill_infer_passes with RILL_PASS_INT8) leave every depthwise
 * conv on the float simulation, where the int8 kernel is slower: no op is rewritten,
 * and rill_pass_int8 without `depthwise` leaves them too. */
Test(int8_pass, predictor_passes_leave_depthwise_convs_float) {
  POK(rill_registry_init());
  const dw_case cases[] = {{"depthwise_conv2d", 1, 1, 1, 1, 1, 1, 1, false},
                           {"conv2d", 2, 1, 1, 1, 1, 1, 1, true}};
  for (size_t k = 0; k < RILL_COUNTOF(cases); k++) {
    small s = build_dw(&cases[k]);
    rill_pass_stats stats = {0};
    POK(rill_infer_passes(s.p, s.params, RILL_PASS_INT8, &stats));
    cr_assert_eq(stats.int8, 0u, "case %zu (%s)", k, cases[k].type);
    cr_assert_geq(prog_find_op(s.p, cases[k].type, 0), 0);
    cr_assert_eq(prog_find_op(s.p, "conv2d_int8", 0), -1);
    size_t n = 7;
    POK(rill_pass_int8(s.p, s.params, false, &n));
    cr_assert_eq(n, 0u);
    small_free(&s);
  }
}

/* A depthwise conv2d_int8 over values that are not levels: an error naming the op, the
 * slot and the variable, and nothing computed. */
Test(int8_pass, depthwise_conv2d_int8_refuses_values_that_are_not_levels) {
  POK(rill_registry_init());
  for (int c = 0; c < 2; c++) {
    const dw_case dc = {"depthwise_conv2d", 1, 1, 1, 1, 1, 1, 1, false};
    small s = build_dw(&dc);
    size_t n = 0;
    POK(rill_pass_int8(s.p, s.params, true, &n));
    cr_assert_eq(n, 1u);
    long f = prog_find_op(s.p, "conv2d_int8", 0);
    if (c == 0) { /* the int8 op reads x itself: fractions */
      const char *xa[] = {"x"};
      POK(rill_opd_input(&s.p->blocks[0].ops[f], "Input", xa, 1));
    } else {
      rill_tensor *w = NULL;
      POK(rill_scope_get_tensor(s.params, "wd", &w));
      ((float *)rill_tensor_data(w))[20] = 128.0f;
      rill_tensor_destroy(w);
    }
    rill_status *st = NULL;
    rill_tensor *out = run_dw(&s, 3, &st);
    cr_assert_null(out);
    cr_assert_not_null(st);
    const char *msg = rill_status_message(st);
    cr_assert(strstr(msg, "conv2d_int8") && strstr(msg, c == 0 ? "Input (x)" : "Filter (wd)") &&
                  strstr(msg, "not an integer level"),
              "%s", msg);
    rill_status_destroy(st);
    small_free(&s);
  }
}

/* ------------------------------------------------------- folded quantizer ----- */

/* The fake_quantize_abs_max of build_mm / build_dw (op 0, OutScale s) replaced by a
 * fake_quantize_moving_average_abs_max with a given scale (is_test, InScale = OutScale
 * = qs, a parameter holding `scale`) writing the same levels: the form a quantization-
 * aware-trained model is saved in, which the fold takes. */
static void given_scale(small *s, float scale) {
  prog_var(s->p, "qs", RILL_DTYPE_FP32, "p", 1, 1);
  rill_tensor *t = NULL;
  POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){1}, 1, &t));
  *(float *)rill_tensor_data(t) = scale;
  scope_bind(s->params, "qs", t);
  rill_op_builder *b = prog_op_begin("fake_quantize_moving_average_abs_max", "X=x;InScale=qs", "Out=xq;OutScale=qs");
  POK(rill_op_builder_attr_bool(b, "is_test", true));
  POK(rill_op_builder_attr_int(b, "bit_length", 8));
  prog_op_end(b, s->p);
  rill_block_desc *blk = &s->p->blocks[0];
  cr_assert_str_eq(blk->ops[0].type, "fake_quantize_abs_max");
  rill_op_desc_clear(&blk->ops[0]);
  blk->ops[0] = blk->ops[blk->nops - 1];
  blk->nops--;
  for (size_t i = 1; i < blk->nops; i++) POK(rill_opd_rename(&blk->ops[i], "s", "qs", true, true));
}

/* Runs the INT8 pass then the fold on s; returns the folds. */
static size_t int8_and_fold(small *s, size_t want_rewrites) {
  size_t n = 0, folded = 0;
  POK(rill_pass_int8(s->p, s->params, true, &n));
  cr_assert_eq(n, want_rewrites);
  POK(rill_pass_int8_fold(s->p, &folded));
  return folded;
}

/* A fake quantize op with a given scale whose levels only int8 ops read goes: the int8
 * op reads its float input and its scale (InScale) and quantizes as it reads; the
 * outputs equal the float simulation bit for bit on 1 and 3 threads, for the conv
 * (strides 1 and 2: the 3x3 conv's bands of rows), mul and matmul (one row and six,
 * per-tensor and per-column scales) and the depthwise direct path. */
Test(int8_pass, quantizer_folds_into_the_int8_op) {
  POK(rill_registry_init());
  for (int stride = 1; stride <= 2; stride++) {
    small s = build(stride, false, false, false);
    rill_status *st = NULL;
    rill_tensor *want = run_small(&s, &st);
    POK(st);
    cr_assert_eq(int8_and_fold(&s, 1), 1u);
    cr_assert_eq(prog_find_op(s.p, "fake_quantize_moving_average_abs_max", 0), -1);
    long f = prog_find_op(s.p, "conv2d_int8", 0);
    cr_assert_geq(f, 0);
    cr_assert_str_eq(prog_arg(s.p, (size_t)f, true, "Input", 0), "x");
    cr_assert_str_eq(prog_arg(s.p, (size_t)f, true, "InScale", 0), "s");
    rill_tensor *got = run_small(&s, &st);
    POK(st);
    expect_same(want, got, "folded conv2d_int8 vs float simulation");
    rill_tensor_destroy(want);
    rill_tensor_destroy(got);
    small_free(&s);
  }
  const char *types[] = {"mul", "matmul"};
  for (int t = 0; t < 2; t++)
    for (int one_row = 0; one_row < 2; one_row++)
      for (int cw = 0; cw < 2; cw++) {
        small s = build_mm(types[t], one_row, cw);
        given_scale(&s, 1.7f); /* below max |x| (2.3): some values clip */
        rill_status *st = NULL;
        rill_tensor *want = run_mm(&s, one_row, 1, &st);
        POK(st);
        cr_assert_eq(int8_and_fold(&s, 1), 1u, "%s", types[t]);
        long f = prog_find_op(s.p, "mul_int8", 0);
        cr_assert_geq(f, 0);
        cr_assert_str_eq(prog_arg(s.p, (size_t)f, true, "X", 0), "x");
        for (int threads = 1; threads <= 3; threads += 2) {
          rill_tensor *got = run_mm(&s, one_row, threads, &st);
          POK(st);
          expect_same(want, got, "folded mul_int8 vs float simulation");
          rill_tensor_destroy(got);
        }
        rill_tensor_destroy(want);
        small_free(&s);
      }
  const dw_case cases[] = {{"depthwise_conv2d", 1, 1, 1, 1, 1, 1, 1, false},
                           {"depthwise_conv2d", 2, 2, 2, 1, 1, 1, 1, true},
                           {"conv2d", 1, 3, 3, 2, 2, 3, 2, false}};
  for (size_t k = 0; k < RILL_COUNTOF(cases); k++) {
    small s = build_dw(&cases[k]);
    given_scale(&s, 1.5f);
    rill_status *st = NULL;
    rill_tensor *want = run_dw(&s, 1, &st);
    POK(st);
    cr_assert_eq(int8_and_fold(&s, 1), 1u, "case %zu", k);
    cr_assert_eq(prog_find_op(s.p, "fake_quantize_moving_average_abs_max", 0), -1);
    for (int threads = 1; threads <= 3; threads += 2) {
      rill_tensor *got = run_dw(&s, threads, &st);
      POK(st);
      expect_same(want, got, "folded depthwise conv2d_int8 vs float simulation");
      rill_tensor_destroy(got);
    }
    rill_tensor_destroy(want);
    small_free(&s);
  }
}

/* The quantizer stays where something else needs its levels or its run: a second
 * reader that is not an int8 op, a fetch of the levels, the training form (is_test
 * false), and a quantizer whose scale is computed from the data (fake_quantize_abs_max). */
Test(int8_pass, quantizer_stays_when_other_ops_need_it) {
  POK(rill_registry_init());
  for (int c = 0; c < 3; c++) {
    small s = build(1, false, false, false);
    if (c == 0) prog_op(s.p, "relu", "X=xq", "Out=out2");
    if (c == 1) {
      POK(rill_block_add_var(s.p, 0, "fetch", RILL_VAR_FETCH_LIST, RILL_DTYPE_FP32, NULL, 0, 0, true));
      rill_op_builder *b = prog_op_begin("fetch", "X=xq", "Out=fetch");
      POK(rill_op_builder_attr_int(b, "col", 0));
      prog_op_end(b, s.p);
    }
    if (c == 2) {
      rill_attr_value f = {.type = RILL_ATTR_BOOLEAN, .v.b = false};
      POK(rill_opd_attr(&s.p->blocks[0].ops[0], "is_test", &f));
    }
    cr_assert_eq(int8_and_fold(&s, 1), 0u, "case %d", c);
    cr_assert_eq(prog_find_op(s.p, "fake_quantize_moving_average_abs_max", 0), 0, "case %d", c);
    cr_assert_str_eq(prog_arg(s.p, (size_t)prog_find_op(s.p, "conv2d_int8", 0), true, "Input", 0), "xq");
    small_free(&s);
  }
  small s = build_mm("mul", false, false); /* fake_quantize_abs_max */
  cr_assert_eq(int8_and_fold(&s, 1), 0u);
  small_free(&s);
}

/* A folded int8 op whose input has a NaN (no level under any scale): an error naming
 * the op, the slot, the variable and the scale's variable. */
Test(int8_pass, folded_quantizer_reports_values_without_a_level) {
  POK(rill_registry_init());
  small s = build(1, false, false, false);
  cr_assert_eq(int8_and_fold(&s, 1), 1u);
  float x[108];
  memcpy(x, image(), sizeof x);
  x[40] = NAN;
  rill_tensor *xt = wrap(RILL_DTYPE_FP32, x, 4, 1, 3, 6, 6), *out = NULL;
  rill_executor *e = exe_new();
  const char *feed = "x", *fetch = "out";
  rill_status *st = rill_executor_run(e, s.p, s.params, &feed, &xt, 1, &fetch, 1, &out);
  rill_tensor_destroy(xt);
  rill_executor_destroy(e);
  cr_assert_null(out);
  cr_assert_not_null(st);
  const char *msg = rill_status_message(st);
  cr_assert(strstr(msg, "conv2d_int8") && strstr(msg, "Input (x) value 40") && strstr(msg, "InScale (s)"), "%s",
            msg);
  rill_status_destroy(st);
  small_free(&s);
  s = build_mm("mul", true, false);
  given_scale(&s, 1.7f);
  cr_assert_eq(int8_and_fold(&s, 1), 1u);
  xt = wrap(RILL_DTYPE_FP32, (float[10]){1, 2, 3, NAN, 0, 0, 0, 0, 0, 0}, 2, 1, 10);
  e = exe_new();
  st = rill_executor_run(e, s.p, s.params, &feed, &xt, 1, &fetch, 1, &out);
  cr_assert_not_null(st);
  msg = rill_status_message(st);
  cr_assert(strstr(msg, "mul_int8") && strstr(msg, "X (x) value 3") && strstr(msg, "InScale (qs)"), "%s", msg);
  rill_status_destroy(st);
  rill_tensor_destroy(xt);
  rill_executor_destroy(e);
  small_free(&s);
}
