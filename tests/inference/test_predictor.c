/* The predictor (rill_predictor_*): every shared model reproduces its reference at every
 * optimization level, with and without the memory plan; bad inputs fail naming the
 * input and the model; clones answer like the original; the passes report what they
 * did; the memory plan holds fewer bytes than one buffer per temporary. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "framework/inference/predictor.h"
#include "framework/io/npy.h"
#include "support/fail_alloc.h"
#include "rill.h"

#include "predictor_test.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)


static const char *const all_models[] = {
    "abalone_bn_mlp",          "fit_a_line_raftliu",    "luotao1_example_mlp_2018",
    "mnist_conv_bn_etienne",   "mnist_mlp_handwriting", "paddlejs_gesture_rec",
    "paddlelite_simple_model", "pureboys_word2vec",
};

static rill_predictor *open_model(const char *name, int level, bool memopt) {
  rill_predictor_config *c = model_config(name);
  OK(rill_predictor_config_set_opt_level(c, level));
  OK(rill_predictor_config_set_memory_optim(c, memopt));
  return open_config(c);
}

static void load_inputs(const char *name, const rill_predictor *p, inputs *in) {
  in->n = rill_predictor_num_inputs(p);
  cr_assert(in->n > 0 && in->n <= 8);
  /* Given in reverse col order: the predictor matches them by name. */
  for (size_t i = 0; i < in->n; i++) {
    char path[1024];
    in->names[i] = rill_predictor_input_name(p, in->n - 1 - i);
    snprintf(path, sizeof path, MODELS "%s/refs/input_%s.npy", name, in->names[i]);
    OK(rill_npy_load(path, &in->t[i]));
  }
}

static void compare(const char *name, size_t col, rill_tensor *got, const char *what) {
  char path[1024];
  rill_tensor *want;
  snprintf(path, sizeof path, MODELS "%s/refs/output_%zu.npy", name, col);
  OK(rill_npy_load(path, &want));
  cr_assert_eq(rill_tensor_numel(got), rill_tensor_numel(want), "%s %s: %lld elements, want %lld",
               name, what, (long long)rill_tensor_numel(got), (long long)rill_tensor_numel(want));
  const float *g = rill_tensor_data(got), *w = rill_tensor_data(want);
  for (int64_t i = 0; i < rill_tensor_numel(got); i++)
    cr_assert(fabsf(g[i] - w[i]) <= 1e-5f + 1e-4f * fabsf(w[i]), "%s %s output %zu [%lld]: %g, want %g",
              name, what, col, (long long)i, g[i], w[i]);
  rill_tensor_destroy(want);
}

static void check(const char *name, int level, bool memopt) {
  char what[64];
  snprintf(what, sizeof what, "-O%d%s", level, memopt ? "" : " no-memopt");
  rill_predictor *p = open_model(name, level, memopt);
  inputs in;
  load_inputs(name, p, &in);
  size_t nout = rill_predictor_num_outputs(p);
  cr_assert(nout >= 1 && nout <= 8);
  for (int run = 0; run < 2; run++) { /* the second run reuses the plan and buffers */
    rill_tensor *outs[8] = {NULL};
    OK(rill_predictor_run(p, in.names, in.t, in.n, outs));
    for (size_t i = 0; i < nout; i++) {
      compare(name, i, outs[i], what);
      rill_tensor_destroy(outs[i]);
    }
  }
  if (level == 0) /* at -O2 some models keep nothing but their output */
    cr_assert_gt(rill_predictor_memory_bytes(p), 0, "%s %s: no temporaries held", name, what);
  free_inputs(&in);
  rill_predictor_destroy(p);
}

Test(predictor, every_model_matches_reference_at_every_level) {
  for (size_t m = 0; m < sizeof all_models / sizeof *all_models; m++)
    for (int level = 0; level <= 2; level++)
      for (int memopt = 0; memopt < 2; memopt++) check(all_models[m], level, memopt);
}

/* Each pass alone keeps every model's answer. */
Test(predictor, every_pass_alone_matches_reference) {
  static const uint32_t passes[] = {RILL_PASS_DROPOUT, RILL_PASS_FOLD_BN, RILL_PASS_FUSE_CONV,
                                    RILL_PASS_FUSE_FC, RILL_PASS_INPLACE};
  for (size_t m = 0; m < sizeof all_models / sizeof *all_models; m++)
    for (size_t k = 0; k < sizeof passes / sizeof *passes; k++) {
      char path[1024], what[32];
      snprintf(path, sizeof path, MODELS "%s", all_models[m]);
      snprintf(what, sizeof what, "pass 0x%x", (unsigned)passes[k]);
      rill_predictor_config *c;
      OK(rill_predictor_config_create(path, &c));
      OK(rill_predictor_config_set_passes(c, passes[k]));
      rill_predictor *p = NULL;
      OK(rill_predictor_create(c, &p));
      rill_predictor_config_destroy(c);
      inputs in;
      load_inputs(all_models[m], p, &in);
      rill_tensor *outs[8] = {NULL};
      OK(rill_predictor_run(p, in.names, in.t, in.n, outs));
      for (size_t i = 0; i < rill_predictor_num_outputs(p); i++) {
        compare(all_models[m], i, outs[i], what);
        rill_tensor_destroy(outs[i]);
      }
      free_inputs(&in);
      rill_predictor_destroy(p);
    }
}

Test(predictor, passes_rewrite_the_models) {
  struct {
    const char *model;
    size_t dropouts, bn, fc, conv;
  } want[] = {
      {"abalone_bn_mlp", 3, 1, 6, 0},
      {"mnist_conv_bn_etienne", 0, 1, 1, 2}, /* its batch_norm follows a pool2d: into the next conv */
      {"mnist_mlp_handwriting", 0, 0, 3, 0},
      {"paddlejs_gesture_rec", 0, 52, 2, 52},
      {"paddlelite_simple_model", 0, 1, 0, 1},
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    rill_predictor *p = open_model(want[i].model, 2, true);
    const rill_pass_stats *s = rill_predictor_pass_stats(p);
    cr_assert_geq(s->dropouts, want[i].dropouts, "%s: %zu dropouts", want[i].model, s->dropouts);
    cr_assert_geq(s->bn_folded, want[i].bn, "%s: %zu batch_norms folded", want[i].model, s->bn_folded);
    cr_assert_geq(s->fc_fused, want[i].fc, "%s: %zu fc", want[i].model, s->fc_fused);
    cr_assert_geq(s->conv_fused, want[i].conv, "%s: %zu conv2d_fusion", want[i].model, s->conv_fused);
    rill_predictor_destroy(p);
    rill_predictor *p0 = open_model(want[i].model, 0, true);
    const rill_pass_stats *s0 = rill_predictor_pass_stats(p0);
    cr_assert_eq(s0->dropouts + s0->bn_folded + s0->fc_fused + s0->conv_fused + s0->inplace, 0);
    rill_predictor_destroy(p0);
  }
}

Test(predictor, names_and_declared_shapes) {
  rill_predictor *p = open_model("mnist_mlp_handwriting", 2, true);
  cr_assert_eq(rill_predictor_num_inputs(p), 1);
  cr_assert_str_eq(rill_predictor_input_name(p, 0), "image");
  cr_assert_null(rill_predictor_input_name(p, 1));
  rill_dtype dt;
  const int64_t *dims;
  size_t nd;
  OK(rill_predictor_input_info(p, 0, &dt, &dims, &nd));
  cr_assert_eq(dt, RILL_DTYPE_FP32);
  cr_assert_eq(nd, 4);
  cr_assert_eq(dims[0], -1);
  cr_assert_eq(dims[1], 1);
  OK(rill_predictor_output_info(p, 0, &dt, &dims, &nd));
  cr_assert_eq(dims[nd - 1], 10);
  rill_status *st = rill_predictor_input_info(p, 3, &dt, &dims, &nd);
  cr_assert_eq(rill_status_code(st), RILL_OUT_OF_RANGE);
  rill_status_destroy(st);
  cr_assert_gt(rill_predictor_param_bytes(p), 0);
  rill_predictor_destroy(p);
}

static void expect_model_error(rill_predictor *p, const char *model, const char *const *names,
                               rill_tensor *const *t, size_t n, const char *needle) {
  rill_tensor *out = (rill_tensor *)0x1;
  rill_status *st = rill_predictor_run(p, names, t, n, &out);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT, "%s", rill_status_message(st));
  const char *msg = rill_status_message(st);
  cr_assert(strstr(msg, needle), "'%s' does not say '%s'", msg, needle);
  cr_assert(strstr(msg, model), "'%s' does not name the model", msg);
  cr_assert_eq(out, (rill_tensor *)0x1, "outputs are untouched on error");
  rill_status_destroy(st);
}

static void expect_error(rill_predictor *p, const char *const *names, rill_tensor *const *t, size_t n,
                         const char *needle) {
  expect_model_error(p, "mnist_mlp_handwriting", names, t, n, needle);
}

Test(predictor, bad_inputs_fail_clearly_and_leave_it_usable) {
  rill_predictor *p = open_model("mnist_mlp_handwriting", 2, true);
  inputs in;
  load_inputs("mnist_mlp_handwriting", p, &in);
  const char *wrong[] = {"img"};
  expect_error(p, wrong, in.t, 1, "'img' is not an input");
  expect_error(p, in.names, in.t, 0, "input 'image' is missing");
  const char *twice[] = {"image", "image"};
  rill_tensor *two[] = {in.t[0], in.t[0]};
  expect_error(p, twice, two, 2, "given twice");
  rill_tensor *bad;
  int64_t dims[4] = {1, 1, 28, 27};
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 4, &bad));
  /* image does not ask for its feeds' shapes to be checked (need_check_feed): the first
   * op that cannot take the shape says so */
  expect_error(p, in.names, &bad, 1, "op 'fc': Input (image) of shape [1, 1, 28, 27] flattens to 756 columns");
  rill_tensor_destroy(bad);
  dims[3] = 28;
  OK(rill_tensor_create(RILL_DTYPE_INT64, dims, 4, &bad));
  expect_error(p, in.names, &bad, 1, "feed 'image': dtype int64");
  rill_tensor_destroy(bad);
  /* Still answers right. */
  rill_tensor *out = NULL;
  OK(rill_predictor_run(p, in.names, in.t, in.n, &out));
  compare("mnist_mlp_handwriting", 0, out, "after errors");
  rill_tensor_destroy(out);
  free_inputs(&in);
  rill_predictor_destroy(p);
}

/* A feed whose variable has need_check_feed must match the declared shape, as Paddle's
 * Executor checks: paddlejs_gesture_rec's img is [-1, 3, 224, 224]. */
Test(predictor, a_checked_feed_must_match_the_declared_shape) {
  rill_predictor *p = open_model("paddlejs_gesture_rec", 2, true);
  const char *name = rill_predictor_input_name(p, 0);
  rill_tensor *bad;
  OK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){1, 3, 224, 200}, 4, &bad));
  expect_model_error(p, "paddlejs_gesture_rec", &name, &bad, 1, "shape [1, 3, 224, 200] does not match the variable's");
  rill_tensor_destroy(bad);
  rill_predictor_destroy(p);
}

/* Other feeds take any shape the ops accept, as Paddle's inference does: the convolution
 * of paddlelite_simple_model (3 x 3, stride 2, padding 1, then batch_norm and relu),
 * declared at 224 x 224, runs on the top-left 40 x 56 of its reference input and gives
 * the top-left 20 x 28 of its reference output; then the full input again gives the
 * whole reference (the run re-infers after each change of shape). */
Test(predictor, an_unchecked_feed_takes_any_shape_its_ops_accept) {
  rill_predictor *p = open_model("paddlelite_simple_model", 2, true);
  inputs in;
  load_inputs("paddlelite_simple_model", p, &in);
  rill_tensor *crop, *out, *want;
  OK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){1, 3, 40, 56}, 4, &crop));
  const float *src = rill_tensor_data(in.t[0]);
  float *dst = rill_tensor_data(crop);
  for (int c = 0; c < 3; c++)
    for (int i = 0; i < 40; i++)
      for (int j = 0; j < 56; j++) dst[(c * 40 + i) * 56 + j] = src[(c * 224 + i) * 224 + j];
  OK(rill_predictor_run(p, in.names, &crop, 1, &out));
  int64_t od[4];
  size_t nd = rill_tensor_ndim(out);
  cr_assert_eq(nd, 4);
  for (size_t k = 0; k < 4; k++) od[k] = rill_tensor_dims(out)[k];
  cr_assert(od[0] == 1 && od[1] == 32 && od[2] == 20 && od[3] == 28, "output [%lld, %lld, %lld, %lld]",
            (long long)od[0], (long long)od[1], (long long)od[2], (long long)od[3]);
  OK(rill_npy_load(MODELS "paddlelite_simple_model/refs/output_0.npy", &want));
  const float *g = rill_tensor_data(out), *w = rill_tensor_data(want);
  for (int c = 0; c < 32; c++)
    for (int i = 0; i < 20; i++)
      for (int j = 0; j < 28; j++) {
        float a = g[(c * 20 + i) * 28 + j], b = w[(c * 112 + i) * 112 + j];
        cr_assert(fabsf(a - b) <= 1e-5f + 1e-4f * fabsf(b), "[%d, %d, %d]: %g, want %g", c, i, j, a, b);
      }
  rill_tensor_destroy(want);
  rill_tensor_destroy(out);
  rill_tensor_destroy(crop);
  OK(rill_predictor_run(p, in.names, in.t, in.n, &out));
  compare("paddlelite_simple_model", 0, out, "at the declared size again");
  rill_tensor_destroy(out);
  free_inputs(&in);
  rill_predictor_destroy(p);
}

Test(predictor, config_errors) {
  rill_predictor_config *c;
  OK(rill_predictor_config_create(MODELS "no_such_model", &c));
  rill_status *st = rill_predictor_config_set_opt_level(c, 3);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  st = rill_predictor_config_set_threads(c, -1);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  st = rill_predictor_config_set_passes(c, 1u << 20);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  rill_predictor *p = (rill_predictor *)0x1;
  st = rill_predictor_create(c, &p);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND, "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), "no_such_model"));
  cr_assert_eq(p, (rill_predictor *)0x1);
  rill_status_destroy(st);
  rill_predictor_config_destroy(c);
  rill_predictor_config_destroy(NULL);
  rill_predictor_destroy(NULL);
}

Test(predictor, clone_shares_weights_and_answers_alike) {
  rill_predictor *p = open_model("mnist_conv_bn_etienne", 2, true), *q = NULL;
  OK(rill_predictor_clone(p, &q));
  cr_assert_eq(rill_predictor_program(p), rill_predictor_program(q));
  inputs in;
  load_inputs("mnist_conv_bn_etienne", p, &in);
  rill_predictor_destroy(p); /* the clone keeps the model alive */
  rill_tensor *out = NULL;
  OK(rill_predictor_run(q, in.names, in.t, in.n, &out));
  compare("mnist_conv_bn_etienne", 0, out, "clone");
  rill_tensor_destroy(out);
  free_inputs(&in);
  rill_predictor_destroy(q);
}

Test(predictor, memory_plan_shares_buffers) {
  const char *models[] = {"paddlejs_gesture_rec", "mnist_conv_bn_etienne", "mnist_mlp_handwriting"};
  for (size_t m = 0; m < 3; m++) {
    size_t bytes[2];
    for (int memopt = 0; memopt < 2; memopt++) {
      rill_predictor *p = open_model(models[m], 2, memopt);
      inputs in;
      load_inputs(models[m], p, &in);
      rill_tensor *out = NULL;
      OK(rill_predictor_run(p, in.names, in.t, in.n, &out));
      rill_tensor_destroy(out);
      bytes[memopt] = rill_predictor_memory_bytes(p);
      free_inputs(&in);
      rill_predictor_destroy(p);
    }
    cr_assert_lt(bytes[1], bytes[0], "%s: %zu bytes with the memory plan, %zu without", models[m],
                 bytes[1], bytes[0]);
  }
}

static long warm_run_allocations(const char *model, bool memopt) {
  rill_predictor *p = open_model(model, 2, memopt);
  inputs in;
  load_inputs(model, p, &in);
  rill_tensor *out = NULL;
  for (int i = 0; i < 2; i++) {
    OK(rill_predictor_run(p, in.names, in.t, in.n, &out));
    rill_tensor_destroy(out);
  }
  fail_alloc_install();
  rill_status *st = rill_predictor_run(p, in.names, in.t, in.n, &out);
  long calls = (long)fail_alloc_calls();
  fail_alloc_uninstall();
  cr_assert_null(st, "%s", rill_status_message(st));
  rill_tensor_destroy(out);
  free_inputs(&in);
  rill_predictor_destroy(p);
  return calls;
}

/* Sharing buffers costs no allocation in a warm run: the output's handle (and what the
 * kernels allocate as scratch, the same with or without the plan). */
Test(predictor, warm_run_with_memory_plan_allocates_no_temporaries) {
  cr_assert_eq(warm_run_allocations("mnist_mlp_handwriting", true), 1);
  const char *models[] = {"paddlejs_gesture_rec", "abalone_bn_mlp", "pureboys_word2vec"};
  for (size_t m = 0; m < 3; m++) {
    long with = warm_run_allocations(models[m], true), without = warm_run_allocations(models[m], false);
    cr_assert_eq(with, without, "%s: %ld allocations with the memory plan, %ld without", models[m],
                 with, without);
  }
}

/* Out of memory at every allocation of create (load, passes, plan) and of a first run:
 * each failure is reported and leaves nothing allocated. */
typedef struct sweep_ctx {
  const char *model;
  rill_predictor_config *config;
  rill_predictor *p;
  rill_tensor *input;
  const char *name;
} sweep_ctx;

static rill_status *create_and_run(void *arg) {
  sweep_ctx *c = arg;
  rill_status *st = rill_predictor_create(c->config, &c->p);
  if (st) return st;
  rill_tensor *out = NULL;
  st = rill_predictor_run(c->p, &c->name, &c->input, 1, &out);
  rill_tensor_destroy(out);
  return st;
}

static void sweep_cleanup(void *arg) {
  sweep_ctx *c = arg;
  rill_predictor_destroy(c->p);
  c->p = NULL;
}

Test(predictor, out_of_memory_anywhere_is_reported_and_leaks_nothing) {
  const char *models[][2] = {{"abalone_bn_mlp", "x"}, {"paddlelite_simple_model", "image"}};
  for (size_t m = 0; m < 2; m++) {
    char path[1024];
    sweep_ctx c = {.model = models[m][0], .name = models[m][1]};
    snprintf(path, sizeof path, MODELS "%s", c.model);
    OK(rill_predictor_config_create(path, &c.config));
    snprintf(path, sizeof path, MODELS "%s/refs/input_%s.npy", c.model, c.name);
    OK(rill_npy_load(path, &c.input));
    { /* the registry and BLAS settle outside the sweep */
      rill_predictor *warm = NULL;
      OK(rill_predictor_create(c.config, &warm));
      rill_predictor_destroy(warm);
    }
    char why[512];
    /* Recovery allowed: a program's name index that cannot be built falls back to a scan. */
    long n = fail_alloc_sweep(create_and_run, sweep_cleanup, &c, 20000, true, why, sizeof why);
    cr_assert_geq(n, 1, "%s: %s", c.model, why);
    rill_tensor_destroy(c.input);
    rill_predictor_config_destroy(c.config);
  }
}

/* The model's location in each form the config takes: a 2.x prefix, a model file plus a
 * params file. */
Test(predictor, config_takes_a_prefix_and_a_model_file_with_params) {
  struct {
    const char *path, *params, *model;
  } forms[] = {
      {MODELS "paddlelite_simple_model/model", NULL, "paddlelite_simple_model"},
      {MODELS "paddlelite_simple_model/model.pdmodel", NULL, "paddlelite_simple_model"},
      {MODELS "paddlejs_gesture_rec/__model__", MODELS "paddlejs_gesture_rec/params",
       "paddlejs_gesture_rec"},
  };
  for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
    rill_predictor_config *c;
    OK(rill_predictor_config_create(forms[i].path, &c));
    OK(rill_predictor_config_set_params_file(c, forms[i].params));
    OK(rill_predictor_config_set_threads(c, 1));
    rill_predictor *p = NULL;
    OK(rill_predictor_create(c, &p));
    rill_predictor_config_destroy(c);
    inputs in;
    load_inputs(forms[i].model, p, &in);
    rill_tensor *out = NULL;
    OK(rill_predictor_run(p, in.names, in.t, in.n, &out));
    compare(forms[i].model, 0, out, forms[i].path);
    rill_tensor_destroy(out);
    free_inputs(&in);
    rill_predictor_destroy(p);
  }
  rill_predictor_config *c;
  OK(rill_predictor_config_create(MODELS "paddlejs_gesture_rec/__model__", &c));
  OK(rill_predictor_config_set_params_file(c, MODELS "mnist_mlp_handwriting/fc_0.w_0"));
  rill_predictor *p = NULL;
  rill_status *st = rill_predictor_create(c, &p);
  cr_assert_not_null(st, "a wrong params file must fail");
  cr_assert(strstr(rill_status_message(st), "paddlejs_gesture_rec"), "%s", rill_status_message(st));
  cr_assert_null(p);
  rill_status_destroy(st);
  rill_predictor_config_destroy(c);
}
