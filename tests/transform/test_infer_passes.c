/* The inference passes (framework/transform/infer_passes.c) on hand-built programs: each
 * rewrite gives the same outputs as the program before it (run by the executor), makes
 * the ops it claims, and leaves alone what its conditions exclude. */
#include <criterion/criterion.h>

#include "framework/transform/infer_passes.h"
#include "prog_util.h"

typedef struct fixture {
  rill_program *p;
  rill_scope *params;
  float x[2 * 3 * 6 * 6];
  int64_t xdims[5];
  size_t xnd;
} fixture;

/* Declares `name` as a parameter and gives it deterministic values. */
static void param(fixture *f, const char *name, size_t nd, const int64_t *dims, double scale,
                  uint64_t seed, double offset) {
  POK(rill_block_add_var(f->p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, nd, 0, true));
  rill_tensor *t;
  POK(rill_tensor_create(RILL_DTYPE_FP32, dims, nd, &t));
  size_t n = (size_t)rill_tensor_numel(t);
  double *v = malloc(n * sizeof *v);
  fill_det(v, n, seed, scale);
  float *d = rill_tensor_data(t);
  for (size_t i = 0; i < n; i++) d[i] = (float)(v[i] + offset);
  free(v);
  scope_bind(f->params, name, t);
}

static void tmp(fixture *f, const char *name, size_t nd, const int64_t *dims) {
  POK(rill_block_add_var(f->p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, nd, 0, false));
}

/* A program with feed op "x" (dims) and nothing else yet. */
static void setup(fixture *f, size_t nd, const int64_t *dims) {
  memset(f, 0, sizeof *f);
  f->p = prog_new();
  POK(rill_scope_create(NULL, &f->params));
  f->xnd = nd;
  memcpy(f->xdims, dims, nd * sizeof *dims);
  POK(rill_block_add_var(f->p, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0, 0, true));
  POK(rill_block_add_var(f->p, 0, "fetch", RILL_VAR_FETCH_LIST, RILL_DTYPE_FP32, NULL, 0, 0, true));
  tmp(f, "x", nd, dims);
  rill_op_builder *b = prog_op_begin("feed", "X=feed", "Out=x");
  POK(rill_op_builder_attr_int(b, "col", 0));
  prog_op_end(b, f->p);
  double v[sizeof f->x / sizeof *f->x];
  fill_det(v, sizeof f->x / sizeof *f->x, 7, 1.0);
  for (size_t i = 0; i < sizeof f->x / sizeof *f->x; i++) f->x[i] = (float)v[i];
}

static void fetch(fixture *f, const char *name) {
  rill_op_builder *b = prog_op_begin("fetch", "X=", "Out=fetch");
  const char *a = name;
  POK(rill_op_builder_input(b, "X", &a, 1));
  POK(rill_op_builder_attr_int(b, "col", 0));
  prog_op_end(b, f->p);
}

static void teardown(fixture *f) {
  rill_program_destroy(f->p);
  rill_scope_destroy(f->params);
}

/* Runs the program on f->x and returns the single output. */
static rill_tensor *run(fixture *f, const char *out) {
  rill_executor *e = exe_new();
  rill_scope *s;
  POK(rill_scope_create(f->params, &s));
  rill_tensor *x;
  POK(rill_tensor_create_from_data(RILL_DTYPE_FP32, f->xdims, f->xnd, f->x, sizeof f->x, NULL, NULL, &x));
  const char *fn = "x";
  rill_tensor *y = NULL;
  POK(rill_executor_run(e, f->p, s, &fn, &x, 1, &out, 1, &y));
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  return y;
}

static void same(rill_tensor *a, rill_tensor *b) {
  cr_assert_eq(rill_tensor_numel(a), rill_tensor_numel(b));
  const float *x = rill_tensor_data(a), *y = rill_tensor_data(b);
  for (int64_t i = 0; i < rill_tensor_numel(a); i++)
    cr_assert(fabsf(x[i] - y[i]) <= 1e-5f + 1e-4f * fabsf(x[i]), "[%lld]: %g before, %g after",
              (long long)i, x[i], y[i]);
  rill_tensor_destroy(a);
  rill_tensor_destroy(b);
}

static size_t nops(const fixture *f) { return f->p->blocks[0].nops; }
static const char *type_at(const fixture *f, size_t i) { return f->p->blocks[0].ops[i].type; }
static const char *str_attr(const fixture *f, size_t i, const char *name) {
  const rill_attr *a = rill_op_attr(prog_opd(f->p, i), name);
  cr_assert_not_null(a, "op #%zu lacks %s", i, name);
  return a->value.v.s;
}

/* ---- dropout ---- */

static void dropout_prog(fixture *f, const char *impl, bool mask_read) {
  int64_t d[2] = {4, 9};
  setup(f, 2, d);
  tmp(f, "d", 2, d);
  tmp(f, "mask", 2, d);
  tmp(f, "out", 2, d);
  rill_op_builder *b = prog_op_begin("dropout", "X=x", "Out=d;Mask=mask");
  POK(rill_op_builder_attr_float(b, "dropout_prob", 0.25f));
  POK(rill_op_builder_attr_bool(b, "is_test", true));
  POK(rill_op_builder_attr_string(b, "dropout_implementation", impl));
  prog_op_end(b, f->p);
  prog_op(f->p, mask_read ? "elementwise_add" : "relu", mask_read ? "X=d;Y=mask" : "X=d", "Out=out");
  fetch(f, "out");
}

Test(infer_passes, dropout_downgrade_becomes_scale) {
  fixture f;
  dropout_prog(&f, "downgrade_in_infer", false);
  rill_tensor *before = run(&f, "out");
  size_t n = 0;
  POK(rill_pass_drop_dropout(f.p, &n));
  cr_assert_eq(n, 1);
  cr_assert_str_eq(type_at(&f, 1), "scale");
  const rill_attr *a = rill_op_attr(prog_opd(f.p, 1), "scale");
  cr_assert_float_eq(a->value.v.f, 0.75f, 1e-7);
  same(before, run(&f, "out"));
  teardown(&f);
}

Test(infer_passes, dropout_upscale_is_removed) {
  fixture f;
  dropout_prog(&f, "upscale_in_train", false);
  rill_tensor *before = run(&f, "out");
  size_t n = 0, ops = 0;
  ops = nops(&f);
  POK(rill_pass_drop_dropout(f.p, &n));
  cr_assert_eq(n, 1);
  cr_assert_eq(nops(&f), ops - 1);
  cr_assert_str_eq(type_at(&f, 1), "relu");
  cr_assert_str_eq(prog_arg(f.p, 1, true, "X", 0), "x");
  same(before, run(&f, "out"));
  teardown(&f);
}

Test(infer_passes, dropout_with_a_read_mask_is_kept) {
  fixture f;
  dropout_prog(&f, "downgrade_in_infer", true);
  size_t n = 9;
  uint64_t rev = rill_program_version(f.p);
  POK(rill_pass_drop_dropout(f.p, &n));
  cr_assert_eq(n, 0);
  cr_assert_str_eq(type_at(&f, 1), "dropout");
  cr_assert_eq(rill_program_version(f.p), rev, "an unchanged program keeps its version");
  teardown(&f);
}

/* ---- identity scale (scale 1, bias 0), as saved models end: relu -> scale -> fetch ---- */

static void identity_prog(fixture *f, float scale, float bias, bool fetch_x, bool reader) {
  int64_t d[2] = {4, 9};
  setup(f, 2, d);
  tmp(f, "r", 2, d);
  tmp(f, "out", 2, d);
  tmp(f, "z", 2, d);
  prog_op(f->p, "relu", "X=x", "Out=r");
  rill_op_builder *b = prog_op_begin("scale", "X=r", "Out=out");
  POK(rill_op_builder_attr_float(b, "scale", scale));
  POK(rill_op_builder_attr_float(b, "bias", bias));
  prog_op_end(b, f->p);
  if (reader) {
    prog_op(f->p, "sigmoid", "X=out", "Out=z");
    fetch(f, "z");
  } else {
    fetch(f, "out");
  }
  if (fetch_x) fetch(f, "r");
}

Test(infer_passes, fetched_identity_scale_is_removed_its_producer_writing_the_output) {
  fixture f;
  identity_prog(&f, 1.0f, 0.0f, false, false);
  rill_tensor *before = run(&f, "out");
  size_t n = 0, ops = nops(&f);
  POK(rill_pass_drop_dropout(f.p, &n));
  cr_assert_eq(n, 1);
  cr_assert_eq(nops(&f), ops - 1);
  cr_assert_str_eq(type_at(&f, 1), "relu");
  cr_assert_str_eq(prog_arg(f.p, 1, false, "Out", 0), "out", "the producer writes the fetched name");
  same(before, run(&f, "out"));
  teardown(&f);
}

Test(infer_passes, identity_scale_read_by_an_op_is_removed_its_reader_renamed) {
  fixture f;
  identity_prog(&f, 1.0f, 0.0f, false, true);
  rill_tensor *before = run(&f, "z");
  size_t n = 0;
  POK(rill_pass_drop_dropout(f.p, &n));
  cr_assert_eq(n, 1);
  cr_assert_str_eq(type_at(&f, 2), "sigmoid");
  cr_assert_str_eq(prog_arg(f.p, 2, true, "X", 0), "r");
  same(before, run(&f, "z"));
  teardown(&f);
}

Test(infer_passes, scale_that_changes_values_or_whose_input_is_fetched_is_kept) {
  const float cases[][2] = {{2.0f, 0.0f}, {1.0f, 0.5f}};
  for (size_t c = 0; c < 3; c++) {
    fixture f;
    if (c < 2) identity_prog(&f, cases[c][0], cases[c][1], false, false);
    else identity_prog(&f, 1.0f, 0.0f, true, false); /* r is fetched too: it must stay r */
    size_t n = 9, ops = nops(&f);
    POK(rill_pass_drop_dropout(f.p, &n));
    cr_assert_eq(n, 0, "case %zu", c);
    cr_assert_eq(nops(&f), ops, "case %zu", c);
    cr_assert_str_eq(type_at(&f, 2), "scale", "case %zu", c);
    teardown(&f);
  }
}

/* ---- batch_norm folding ---- */

static void bn_layout(fixture *f, const char *x, const char *y, int64_t c, const char *layout) {
  int64_t d[1] = {c};
  char n[5][32];
  const char *what[] = {"scale", "bias", "mean", "var", "saved"};
  for (int i = 0; i < 5; i++) snprintf(n[i], sizeof n[i], "%s_%s", y, what[i]);
  param(f, n[0], 1, d, 0.5, 11, 1.0);
  param(f, n[1], 1, d, 0.5, 12, 0.0);
  param(f, n[2], 1, d, 0.5, 13, 0.0);
  param(f, n[3], 1, d, 0.4, 14, 0.6); /* variances in (0.2, 1.0) */
  tmp(f, n[4], 1, d);
  char ins[256], outs[256];
  snprintf(ins, sizeof ins, "X=%s;Scale=%s;Bias=%s;Mean=%s;Variance=%s", x, n[0], n[1], n[2], n[3]);
  snprintf(outs, sizeof outs, "Y=%s;MeanOut=%s;VarianceOut=%s;SavedMean=%s", y, n[2], n[3], n[4]);
  rill_op_builder *b = prog_op_begin("batch_norm", ins, outs);
  POK(rill_op_builder_attr_bool(b, "is_test", true));
  POK(rill_op_builder_attr_float(b, "epsilon", 1e-3f));
  if (layout) POK(rill_op_builder_attr_string(b, "data_layout", layout));
  prog_op_end(b, f->p);
}

static void bn(fixture *f, const char *x, const char *y, int64_t c) { bn_layout(f, x, y, c, NULL); }

static void conv(fixture *f, const char *type, const char *x, const char *w, const char *y, int64_t cin,
                 int64_t cout, int groups) {
  int64_t wd[4] = {cout, cin / groups, 3, 3};
  param(f, w, 4, wd, 0.3, 21, 0.0);
  int64_t od[4] = {2, cout, 6, 6};
  tmp(f, y, 4, od);
  char ins[128], outs[64];
  snprintf(ins, sizeof ins, "Input=%s;Filter=%s", x, w);
  snprintf(outs, sizeof outs, "Output=%s", y);
  rill_op_builder *b = prog_op_begin(type, ins, outs);
  const int32_t pads[2] = {1, 1};
  POK(rill_op_builder_attr_ints(b, "paddings", pads, 2));
  POK(rill_op_builder_attr_int(b, "groups", groups));
  prog_op_end(b, f->p);
}

static void add_bias(fixture *f, const char *x, const char *bias, const char *y, int64_t c, int axis,
                     size_t ynd, const int64_t *ydims) {
  int64_t d[1] = {c};
  param(f, bias, 1, d, 0.5, 31, 0.0);
  tmp(f, y, ynd, ydims);
  char ins[128], outs[64];
  snprintf(ins, sizeof ins, "X=%s;Y=%s", x, bias);
  snprintf(outs, sizeof outs, "Out=%s", y);
  rill_op_builder *b = prog_op_begin("elementwise_add", ins, outs);
  POK(rill_op_builder_attr_int(b, "axis", axis));
  prog_op_end(b, f->p);
}

static const int64_t img[4] = {2, 3, 6, 6}, act4[4] = {2, 4, 6, 6};

Test(infer_passes, batch_norm_folds_into_conv_without_bias) {
  fixture f;
  setup(&f, 4, img);
  conv(&f, "conv2d", "x", "w", "c", 3, 4, 1);
  tmp(&f, "y", 4, act4);
  bn(&f, "c", "y", 4);
  tmp(&f, "out", 4, act4);
  prog_op(f.p, "relu", "X=y", "Out=out");
  fetch(&f, "out");
  rill_tensor *before = run(&f, "out");
  size_t n = 0;
  POK(rill_pass_fold_batch_norm(f.p, f.params, &n));
  cr_assert_eq(n, 1);
  cr_assert_eq(prog_find_op(f.p, "batch_norm", 0), -1);
  long add = prog_find_op(f.p, "elementwise_add", 0);
  cr_assert_geq(add, 0);
  cr_assert_str_eq(prog_arg(f.p, (size_t)add, false, "Out", 0), "y");
  same(before, run(&f, "out"));
  teardown(&f);
}

Test(infer_passes, batch_norm_folds_into_depthwise_conv_and_its_bias) {
  fixture f;
  setup(&f, 4, img);
  conv(&f, "depthwise_conv2d", "x", "w", "c", 3, 3, 3);
  int64_t d3[4] = {2, 3, 6, 6};
  add_bias(&f, "c", "b", "cb", 3, 1, 4, d3);
  tmp(&f, "y", 4, d3);
  bn(&f, "cb", "y", 3);
  fetch(&f, "y");
  rill_tensor *before = run(&f, "y");
  size_t n = 0;
  POK(rill_pass_fold_batch_norm(f.p, f.params, &n));
  cr_assert_eq(n, 1);
  cr_assert_eq(prog_find_op(f.p, "batch_norm", 0), -1);
  same(before, run(&f, "y"));
  teardown(&f);
}

Test(infer_passes, batch_norm_folds_into_mul_columns) {
  fixture f;
  int64_t xd[2] = {5, 7}, wd[2] = {7, 6}, od[2] = {5, 6};
  setup(&f, 2, xd);
  param(&f, "w", 2, wd, 0.4, 41, 0.0);
  tmp(&f, "m", 2, od);
  prog_op(f.p, "mul", "X=x;Y=w", "Out=m");
  add_bias(&f, "m", "b", "mb", 6, 1, 2, od);
  tmp(&f, "y", 2, od);
  bn(&f, "mb", "y", 6);
  fetch(&f, "y");
  rill_tensor *before = run(&f, "y");
  size_t n = 0;
  POK(rill_pass_fold_batch_norm(f.p, f.params, &n));
  cr_assert_eq(n, 1);
  same(before, run(&f, "y"));
  teardown(&f);
}

Test(infer_passes, batch_norm_after_a_shared_output_is_kept) {
  fixture f;
  setup(&f, 4, img);
  conv(&f, "conv2d", "x", "w", "c", 3, 4, 1);
  tmp(&f, "y", 4, act4);
  bn(&f, "c", "y", 4);
  tmp(&f, "out", 4, act4);
  prog_op(f.p, "elementwise_add", "X=y;Y=c", "Out=out"); /* c is read twice */
  fetch(&f, "out");
  size_t n = 9;
  POK(rill_pass_fold_batch_norm(f.p, f.params, &n));
  cr_assert_eq(n, 0);
  cr_assert_geq(prog_find_op(f.p, "batch_norm", 0), 0);
  teardown(&f);
}

/* x -> relu -> batch_norm -> conv (3x3, padding `pad`, `groups`) -> bias add: the
 * batch_norm has no producer to fold into, so it folds into the conv after it when the
 * conv pads nothing. */
static void bn_before_conv(int32_t pad, int groups, size_t want_folded) {
  fixture f;
  setup(&f, 4, img);
  tmp(&f, "r", 4, img);
  prog_op(f.p, "relu", "X=x", "Out=r");
  tmp(&f, "y", 4, img);
  bn(&f, "r", "y", 3);
  int64_t cout = 6, o = 6 - 2 + 2 * pad, wd[4] = {cout, 3 / groups, 3, 3}, od[4] = {2, cout, o, o};
  param(&f, "w", 4, wd, 0.3, 21, 0.0);
  tmp(&f, "c", 4, od);
  rill_op_builder *b = prog_op_begin("conv2d", "Input=y;Filter=w", "Output=c");
  const int32_t pads[2] = {pad, pad};
  POK(rill_op_builder_attr_ints(b, "paddings", pads, 2));
  POK(rill_op_builder_attr_int(b, "groups", groups));
  prog_op_end(b, f.p);
  add_bias(&f, "c", "b", "cb", cout, 1, 4, od);
  fetch(&f, "cb");
  rill_tensor *before = run(&f, "cb");
  size_t n = 9;
  POK(rill_pass_fold_batch_norm(f.p, f.params, &n));
  cr_assert_eq(n, want_folded);
  if (want_folded) {
    cr_assert_eq(prog_find_op(f.p, "batch_norm", 0), -1);
    long ci = prog_find_op(f.p, "conv2d", 0);
    cr_assert_geq(ci, 0);
    cr_assert_str_eq(prog_arg(f.p, (size_t)ci, true, "Input", 0), "r");
  } else {
    cr_assert_geq(prog_find_op(f.p, "batch_norm", 0), 0);
  }
  same(before, run(&f, "cb"));
  teardown(&f);
}

Test(infer_passes, batch_norm_folds_into_the_next_unpadded_conv) {
  bn_before_conv(0, 1, 1);
  bn_before_conv(0, 3, 1); /* grouped: each output channel sees its group's channels */
}

Test(infer_passes, batch_norm_before_a_padded_conv_is_kept) {
  bn_before_conv(1, 1, 0); /* the padded border would be the shift, not 0 */
}

/* ---- conv fusion ---- */

static void conv_act(const char *act, const char *want) {
  fixture f;
  setup(&f, 4, img);
  conv(&f, "conv2d", "x", "w", "c", 3, 4, 1);
  add_bias(&f, "c", "b", "cb", 4, 1, 4, act4);
  const char *out = "cb";
  if (act) {
    tmp(&f, "out", 4, act4);
    prog_op(f.p, act, "X=cb", "Out=out");
    out = "out";
  }
  fetch(&f, out);
  rill_tensor *before = run(&f, out);
  size_t n = 0;
  POK(rill_pass_fuse_conv(f.p, &n));
  cr_assert_eq(n, 1, "%s", act ? act : "no activation");
  cr_assert_eq(nops(&f), 3, "feed, conv2d_fusion, fetch");
  cr_assert_str_eq(type_at(&f, 1), "conv2d_fusion");
  cr_assert_str_eq(str_attr(&f, 1, "activation"), want);
  same(before, run(&f, out));
  teardown(&f);
}

Test(infer_passes, conv_bias_activation_fuse) {
  conv_act("relu", "relu");
  conv_act("relu6", "relu6");
  conv_act("sigmoid", "sigmoid");
  conv_act("tanh", "tanh");
  conv_act(NULL, "identity");
}

/* conv + bias + a residual input (+ relu): ResidualData. */
static void conv_residual(bool relu, bool residual_first) {
  fixture f;
  setup(&f, 4, img);
  tmp(&f, "r", 4, img);
  prog_op(f.p, "sigmoid", "X=x", "Out=r"); /* the residual, computed before the conv */
  conv(&f, "conv2d", "x", "w", "c", 3, 3, 1);
  add_bias(&f, "c", "b", "cb", 3, 1, 4, img);
  tmp(&f, "s", 4, img);
  prog_op(f.p, "elementwise_add", residual_first ? "X=r;Y=cb" : "X=cb;Y=r", "Out=s");
  const char *out = "s";
  if (relu) {
    tmp(&f, "out", 4, img);
    prog_op(f.p, "relu", "X=s", "Out=out");
    out = "out";
  }
  fetch(&f, out);
  rill_tensor *before = run(&f, out);
  size_t n = 0;
  POK(rill_pass_fuse_conv(f.p, &n));
  cr_assert_eq(n, 1);
  cr_assert_eq(nops(&f), 4, "feed, sigmoid, conv2d_fusion, fetch");
  cr_assert_str_eq(type_at(&f, 2), "conv2d_fusion");
  cr_assert_str_eq(prog_arg(f.p, 2, true, "ResidualData", 0), "r");
  cr_assert_str_eq(str_attr(&f, 2, "activation"), relu ? "relu" : "identity");
  same(before, run(&f, out));
  teardown(&f);
}

Test(infer_passes, conv_bias_residual_activation_fuse) {
  conv_residual(true, false);
  conv_residual(false, true);
}

Test(infer_passes, residual_computed_after_the_conv_is_not_fused) {
  fixture f;
  setup(&f, 4, img);
  conv(&f, "conv2d", "x", "w", "c", 3, 3, 1);
  tmp(&f, "r", 4, img);
  prog_op(f.p, "sigmoid", "X=x", "Out=r"); /* after the conv: the fused op could not read it */
  add_bias(&f, "c", "b", "cb", 3, 1, 4, img);
  tmp(&f, "s", 4, img);
  prog_op(f.p, "elementwise_add", "X=cb;Y=r", "Out=s");
  fetch(&f, "s");
  rill_tensor *before = run(&f, "s");
  size_t n = 0;
  POK(rill_pass_fuse_conv(f.p, &n));
  cr_assert_eq(n, 1, "conv + bias still fuse");
  long fi = prog_find_op(f.p, "conv2d_fusion", 0);
  cr_assert_geq(fi, 0);
  cr_assert_null(prog_arg(f.p, (size_t)fi, true, "ResidualData", 0));
  cr_assert_geq(prog_find_op(f.p, "elementwise_add", 0), 0);
  same(before, run(&f, "s"));
  teardown(&f);
}

Test(infer_passes, conv_with_bias_on_the_wrong_axis_is_kept) {
  fixture f;
  setup(&f, 4, img);
  conv(&f, "conv2d", "x", "w", "c", 3, 4, 1);
  int64_t d[1] = {6};
  param(&f, "b", 1, d, 0.5, 31, 0.0);
  tmp(&f, "cb", 4, act4);
  prog_op(f.p, "elementwise_add", "X=c;Y=b", "Out=cb"); /* axis -1: per column */
  fetch(&f, "cb");
  size_t n = 9;
  POK(rill_pass_fuse_conv(f.p, &n));
  cr_assert_eq(n, 0);
  teardown(&f);
}

/* An NHWC conv whose output height equals its channel count (6): a bias on axis 1 or an
 * NCHW batch_norm would line up with the filter's channels by shape only, so neither
 * FUSE_CONV nor FOLD_BN may touch it. */
static void nhwc_conv(fixture *f) {
  static const int64_t xd[4] = {2, 6, 6, 3}, wd[4] = {6, 3, 3, 3}, od[4] = {2, 6, 6, 6};
  setup(f, 4, xd);
  param(f, "w", 4, wd, 0.3, 21, 0.0);
  tmp(f, "c", 4, od);
  rill_op_builder *b = prog_op_begin("conv2d", "Input=x;Filter=w", "Output=c");
  const int32_t pads[2] = {1, 1};
  POK(rill_op_builder_attr_ints(b, "paddings", pads, 2));
  POK(rill_op_builder_attr_string(b, "data_format", "NHWC"));
  prog_op_end(b, f->p);
}

/* The conv fusion pass fuses nothing into the conv writing `out` (fetched), and the
 * program's result stays the same; then the fixture is torn down. */
static void expect_not_fused(fixture *f, const char *out) {
  fetch(f, out);
  rill_tensor *before = run(f, out);
  size_t n = 9;
  POK(rill_pass_fuse_conv(f->p, &n));
  cr_assert_eq(n, 0);
  same(before, run(f, out));
  teardown(f);
}

/* The batch_norm folding pass folds nothing (`out` fetched) and the batch_norm stays;
 * then the fixture is torn down. */
static void expect_not_folded(fixture *f, const char *out) {
  fetch(f, out);
  size_t n = 9;
  POK(rill_pass_fold_batch_norm(f->p, f->params, &n));
  cr_assert_eq(n, 0);
  cr_assert_geq(prog_find_op(f->p, "batch_norm", 0), 0);
  teardown(f);
}

Test(infer_passes, nhwc_conv_is_neither_fused_nor_folded) {
  static const int64_t od[4] = {2, 6, 6, 6};
  fixture f;
  nhwc_conv(&f);
  add_bias(&f, "c", "b", "cb", 6, 1, 4, od);
  expect_not_fused(&f, "cb");

  nhwc_conv(&f);
  tmp(&f, "y", 4, od);
  bn(&f, "c", "y", 6);
  expect_not_folded(&f, "y");
}

/* An NHWC conv under an NHWC batch_norm folds as an NCHW pair does: its filter (OIHW in
 * both layouts) scaled per output channel, the bias add on the last axis (3 or -1, or a
 * new one on axis 3), the results unchanged. 6 channels over [2, 6, 6, 6] would also fit
 * dim 1, so a wrong axis would run and give other numbers. */
static void nhwc_fold(int bias_axis) {
  static const int64_t od[4] = {2, 6, 6, 6};
  fixture f;
  nhwc_conv(&f);
  const char *bn_in = "c";
  if (bias_axis != 0) {
    add_bias(&f, "c", "b", "cb", 6, bias_axis, 4, od);
    bn_in = "cb";
  }
  tmp(&f, "y", 4, od);
  bn_layout(&f, bn_in, "y", 6, "NHWC");
  tmp(&f, "out", 4, od);
  prog_op(f.p, "relu", "X=y", "Out=out");
  fetch(&f, "out");
  rill_tensor *before = run(&f, "out");
  size_t n = 0;
  POK(rill_pass_fold_batch_norm(f.p, f.params, &n));
  cr_assert_eq(n, 1, "bias axis %d", bias_axis);
  cr_assert_eq(prog_find_op(f.p, "batch_norm", 0), -1);
  long add = prog_find_op(f.p, "elementwise_add", 0);
  cr_assert_geq(add, 0);
  cr_assert_str_eq(prog_arg(f.p, (size_t)add, false, "Out", 0), "y");
  if (bias_axis == 0) {
    const rill_attr *a = rill_op_attr(&f.p->blocks[0].ops[add], "axis");
    cr_assert(a && a->value.v.i == 3);
  }
  same(before, run(&f, "out"));
  teardown(&f);
}

Test(infer_passes, nhwc_batch_norm_folds_into_nhwc_conv) {
  nhwc_fold(0);
  nhwc_fold(3);
  nhwc_fold(-1);
}

/* An NDHWC conv3d over x [2, 3, 3, 4, 3] (channels last) into y [2, 3, 3, 4, 3] (3x3x3,
 * padding 1, or 1x1x1 unpadded): its output's dim 1 and its filter's channels are both 3,
 * so only the op and layout guards keep the NCHW rewrites off it. */
static const int64_t vol[5] = {2, 3, 3, 4, 3};

static void ndhwc_conv3d(fixture *f, const char *x, const char *y, int k) {
  int64_t wd[5] = {3, 3, k, k, k};
  param(f, "w3", 5, wd, 0.3, 23, 0.0);
  tmp(f, y, 5, vol);
  char ins[64];
  snprintf(ins, sizeof ins, "Input=%s;Filter=w3", x);
  char outs[64];
  snprintf(outs, sizeof outs, "Output=%s", y);
  rill_op_builder *b = prog_op_begin("conv3d", ins, outs);
  const int32_t pads[3] = {k / 2, k / 2, k / 2};
  POK(rill_op_builder_attr_ints(b, "paddings", pads, 3));
  POK(rill_op_builder_attr_string(b, "data_format", "NDHWC"));
  prog_op_end(b, f->p);
}

Test(infer_passes, ndhwc_conv3d_is_neither_fused_nor_folded) {
  fixture f;
  setup(&f, 5, vol);
  ndhwc_conv3d(&f, "x", "c", 3);
  add_bias(&f, "c", "b", "cb", 3, 4, 5, vol);
  expect_not_fused(&f, "cb");

  /* batch_norm after the conv (its dim 1 is 3 like the filter's output channels) */
  setup(&f, 5, vol);
  ndhwc_conv3d(&f, "x", "c", 3);
  tmp(&f, "y", 5, vol);
  bn(&f, "c", "y", 3);
  expect_not_folded(&f, "y");

  /* batch_norm before an unpadded conv (dim 1 of x is 3 like the conv's input channels) */
  setup(&f, 5, vol);
  tmp(&f, "y", 5, vol);
  bn(&f, "x", "y", 3);
  ndhwc_conv3d(&f, "y", "c", 1);
  add_bias(&f, "c", "b", "cb", 3, 4, 5, vol);
  expect_not_folded(&f, "cb");
}

/* ---- fc fusion ---- */

static void fc_case(int64_t rows, int64_t cols, const char *act) {
  fixture f;
  int64_t xd[3] = {rows, 2, 4}, wd[2] = {8, cols}, od[2] = {rows, cols};
  setup(&f, 3, xd);
  param(&f, "w", 2, wd, 0.4, 41, 0.0);
  tmp(&f, "m", 2, od);
  rill_op_builder *b = prog_op_begin("mul", "X=x;Y=w", "Out=m");
  POK(rill_op_builder_attr_int(b, "x_num_col_dims", 1));
  prog_op_end(b, f.p);
  add_bias(&f, "m", "b", "mb", cols, -1, 2, od);
  const char *out = "mb";
  if (act) {
    tmp(&f, "out", 2, od);
    prog_op(f.p, act, "X=mb", "Out=out");
    out = "out";
  }
  fetch(&f, out);
  rill_tensor *before = run(&f, out);
  size_t n = 0;
  POK(rill_pass_fuse_fc(f.p, &n));
  cr_assert_eq(n, 1);
  cr_assert_str_eq(type_at(&f, 1), "fc");
  bool relu = act && strcmp(act, "relu") == 0;
  cr_assert_str_eq(str_attr(&f, 1, "activation_type"), relu ? "relu" : "");
  cr_assert_eq(nops(&f), act && !relu ? 4 : 3);
  same(before, run(&f, out));
  teardown(&f);
}

Test(infer_passes, mul_add_relu_fuse_into_fc) {
  fc_case(1, 200, "relu"); /* one row, a wide W: the matrix-vector path */
  fc_case(1, 5, "relu");   /* one row, a narrow W: GEMM */
  fc_case(2, 5, "relu");
  fc_case(1, 5, NULL);
  fc_case(2, 5, "tanh"); /* fc knows only relu: tanh stays */
}

/* ---- in place ---- */

Test(infer_passes, activations_run_in_place) {
  fixture f;
  int64_t d[2] = {3, 8};
  setup(&f, 2, d);
  tmp(&f, "a", 2, d);
  tmp(&f, "b", 2, d);
  tmp(&f, "c", 2, d);
  tmp(&f, "out", 2, d);
  prog_op(f.p, "scale", "X=x", "Out=a"); /* x comes from the feed op: not overwritten */
  prog_op(f.p, "tanh", "X=a", "Out=b");
  prog_op(f.p, "sigmoid", "X=b", "Out=c");
  prog_op(f.p, "relu", "X=c", "Out=out"); /* out is fetched: keeps its name */
  fetch(&f, "out");
  rill_tensor *before = run(&f, "out");
  size_t n = 0;
  POK(rill_pass_inplace(f.p, &n));
  cr_assert_eq(n, 2, "tanh and sigmoid (relu writes the fetched output)");
  cr_assert_str_eq(prog_arg(f.p, 1, true, "X", 0), "x");
  cr_assert_str_eq(prog_arg(f.p, 1, false, "Out", 0), "a");
  cr_assert_str_eq(prog_arg(f.p, 2, false, "Out", 0), "a");
  cr_assert_str_eq(prog_arg(f.p, 3, true, "X", 0), "a");
  cr_assert_str_eq(prog_arg(f.p, 3, false, "Out", 0), "a");
  cr_assert_str_eq(prog_arg(f.p, 4, true, "X", 0), "a");
  cr_assert_str_eq(prog_arg(f.p, 4, false, "Out", 0), "out");
  same(before, run(&f, "out"));
  teardown(&f);
}

/* ---- all passes, both schedules, memory plan ---- */

Test(infer_passes, all_passes_then_parallel_with_memory_plan) {
  fixture f;
  setup(&f, 4, img);
  conv(&f, "conv2d", "x", "w1", "c1", 3, 4, 1);
  tmp(&f, "y1", 4, act4);
  bn(&f, "c1", "y1", 4);
  tmp(&f, "r1", 4, act4);
  prog_op(f.p, "relu", "X=y1", "Out=r1");
  conv(&f, "conv2d", "r1", "w2", "c2", 4, 4, 1);
  add_bias(&f, "c2", "b2", "cb2", 4, 1, 4, act4);
  tmp(&f, "s", 4, act4);
  prog_op(f.p, "elementwise_add", "X=cb2;Y=r1", "Out=s");
  tmp(&f, "out", 4, act4);
  prog_op(f.p, "sigmoid", "X=s", "Out=out");
  fetch(&f, "out");
  rill_tensor *before = run(&f, "out");
  rill_pass_stats st;
  POK(rill_infer_passes(f.p, f.params, RILL_PASS_ALL, &st));
  cr_assert_eq(st.bn_folded, 1);
  cr_assert_eq(st.conv_fused, 2);
  for (int sched = RILL_SCHEDULE_SEQUENTIAL; sched <= RILL_SCHEDULE_PARALLEL; sched++) {
    rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
    o.num_threads = 2;
    rill_executor *e;
    POK(rill_executor_create(&o, &e));
    POK(rill_executor_set_schedule(e, (rill_schedule)sched));
    POK(rill_executor_set_memory_plan(e, true));
    rill_scope *s;
    POK(rill_scope_create(f.params, &s));
    rill_tensor *x;
    POK(rill_tensor_create_from_data(RILL_DTYPE_FP32, f.xdims, 4, f.x, sizeof f.x, NULL, NULL, &x));
    const char *fn = "x", *on = "out";
    rill_tensor *y = NULL, *y2 = NULL;
    POK(rill_executor_run(e, f.p, s, &fn, &x, 1, &on, 1, &y));
    POK(rill_executor_run(e, f.p, s, &fn, &x, 1, &on, 1, &y2));
    rill_tensor *copy;
    POK(rill_tensor_create(RILL_DTYPE_FP32, rill_tensor_dims(before), rill_tensor_ndim(before), &copy));
    memcpy(rill_tensor_data(copy), rill_tensor_data(before), rill_tensor_byte_size(before));
    same(copy, y);
    POK(rill_tensor_create(RILL_DTYPE_FP32, rill_tensor_dims(before), rill_tensor_ndim(before), &copy));
    memcpy(rill_tensor_data(copy), rill_tensor_data(before), rill_tensor_byte_size(before));
    same(copy, y2);
    rill_tensor_destroy(x);
    rill_scope_destroy(s);
    rill_executor_destroy(e);
  }
  rill_tensor_destroy(before);
  teardown(&f);
}

Test(infer_passes, failed_fold_leaves_program_and_weights_alone) {
  fixture f;
  setup(&f, 4, img);
  conv(&f, "conv2d", "x", "w", "c", 3, 4, 1);
  tmp(&f, "y", 4, act4);
  bn(&f, "c", "y", 4);
  fetch(&f, "y");
  /* The Scale parameter is missing from the scope: nothing can be folded. */
  rill_scope *empty;
  POK(rill_scope_create(NULL, &empty));
  uint64_t rev = rill_program_version(f.p);
  size_t n = 9;
  POK(rill_pass_fold_batch_norm(f.p, empty, &n));
  cr_assert_eq(n, 0);
  cr_assert_eq(rill_program_version(f.p), rev);
  cr_assert_eq(rill_scope_size(empty), 0);
  rill_scope_destroy(empty);
  teardown(&f);
}

/* ---- sub-blocks ---- */

/* x -> mul(w) -> m -> elementwise_add(b) -> mb -> relu -> out in block 0, with a
 * conditional_block (runs when x has elements; its slots do not name m) whose block 1
 * reads m (and, when `add_in_sub`, computes mb there instead of block 0) and writes
 * block 0's s = 2m + 1. out + s is fetched. */
static void sub_block_case(bool add_in_sub) {
  fixture f;
  int64_t xd[2] = {2, 8}, wd[2] = {8, 5}, od[2] = {2, 5};
  setup(&f, 2, xd);
  param(&f, "w", 2, wd, 0.4, 41, 0.0);
  tmp(&f, "m", 2, od);
  tmp(&f, "s", 2, od);
  tmp(&f, "out", 2, od);
  tmp(&f, "sum", 2, od);
  int32_t b1 = -1;
  POK(rill_program_append_block(f.p, 0, &b1));
  prog_op(f.p, "mul", "X=x;Y=w", "Out=m");
  const int64_t bd[1] = {5};
  if (add_in_sub) {
    param(&f, "b", 1, bd, 0.5, 31, 0.0);
    tmp(&f, "mb", 2, od);
  } else {
    add_bias(&f, "m", "b", "mb", 5, -1, 2, od);
  }
  rill_op_builder *b =
      prog_op_begin("conditional_block", "Cond=x;Input=x", add_in_sub ? "Out=s,mb" : "Out=s");
  POK(rill_op_builder_attr_block(b, "sub_block", b1));
  prog_op_end(b, f.p);
  b = prog_op_begin("scale", "X=m", "Out=s");
  POK(rill_op_builder_attr_float(b, "scale", 2.0f));
  POK(rill_op_builder_attr_float(b, "bias", 1.0f));
  POK(rill_op_builder_append(b, f.p, b1));
  rill_op_builder_destroy(b);
  if (add_in_sub) {
    b = prog_op_begin("elementwise_add", "X=m;Y=b", "Out=mb");
    POK(rill_op_builder_attr_int(b, "axis", -1));
    POK(rill_op_builder_append(b, f.p, b1));
    rill_op_builder_destroy(b);
  }
  prog_op(f.p, "relu", "X=mb", "Out=out");
  prog_op(f.p, "elementwise_add", "X=out;Y=s", "Out=sum");
  fetch(&f, "sum");
  rill_tensor *before = run(&f, "sum");
  rill_pass_stats stats;
  POK(rill_infer_passes(f.p, f.params, RILL_PASS_ALL, &stats));
  /* m has a reader in block 1 (or the add is there): no fc, and relu does not write over
   * a variable a sub-block may name. */
  cr_assert_eq(stats.fc_fused, 0);
  cr_assert_eq(stats.inplace, 0);
  cr_assert_eq(prog_find_op(f.p, "fc", 0), -1);
  cr_assert_eq(f.p->blocks[b1].nops, add_in_sub ? 2u : 1u);
  same(before, run(&f, "sum"));
  teardown(&f);
}

Test(infer_passes, no_fusion_across_or_around_a_sub_block) {
  sub_block_case(false); /* mul and add in block 0, m also read in block 1 */
  sub_block_case(true);  /* mul in block 0, its add in block 1 */
}
