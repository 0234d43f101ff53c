/* The backward pass: structure of the appended ops (Paddle's conventions), gradients of
 * whole programs against finite differences, renaming + sum, zero-filling, cuts by
 * stop_gradient and the no-grad set, and the errors. Some tests use small ops defined
 * here (bt_*) so that they do not depend on the shape of other ops' gradients. */
#include "framework/registry/registry.h"
#include "transform/fd_util.h"

/* ------------------------------------------------------------ test ops -------- */

static rill_status *meta_like_x(rill_infer_ctx *c, size_t in_slot, size_t out_slot) {
  if (!c->nin[in_slot] || !c->nout[out_slot]) return NULL;
  const rill_tensor_meta *x = &c->in[in_slot][0];
  rill_tensor_meta *o = &c->out[out_slot][0];
  *o = *x;
  o->lod_from[0] = o->lod_from[1] = -1;
  return NULL;
}

/* bt_total: Out[1] = sum(X) */
static rill_status *total_infer(rill_infer_ctx *c) {
  rill_tensor_meta *o = &c->out[0][0];
  memset(o, 0, sizeof *o);
  o->known = true;
  o->dtype = c->in[0][0].dtype;
  o->dims.n = 1;
  o->dims.d[0] = 1;
  o->lod_from[0] = o->lod_from[1] = -1;
  return NULL;
}
static rill_status *total_kernel(rill_kernel_ctx *c) {
  rill_tensor *x = rill_kin(c, 0, 0), *o = rill_kout(c, 0, 0);
  double s = 0;
  for (int64_t i = 0; i < rill_tensor_numel(x); i++) s += ((double *)rill_tensor_ptr(x))[i];
  *(double *)rill_tensor_ptr(o) = s;
  return NULL;
}
static rill_status *total_grad_infer(rill_infer_ctx *c) { return meta_like_x(c, 0, 0); }
static rill_status *total_grad_kernel(rill_kernel_ctx *c) {
  rill_tensor *x = rill_kin(c, 0, 0), *dout = rill_kin(c, 2, 0), *dx = rill_kout(c, 0, 0);
  if (!dx) return NULL;
  double g = *(double *)rill_tensor_ptr(dout);
  for (int64_t i = 0; i < rill_tensor_numel(x); i++) ((double *)rill_tensor_ptr(dx))[i] = g;
  return NULL;
}

/* bt_split: Out1 = X, Out2 = 2 X */
static rill_status *split_infer(rill_infer_ctx *c) {
  meta_like_x(c, 0, 0);
  return meta_like_x(c, 0, 1);
}
static rill_status *split_kernel(rill_kernel_ctx *c) {
  rill_tensor *x = rill_kin(c, 0, 0), *a = rill_kout(c, 0, 0), *b = rill_kout(c, 1, 0);
  for (int64_t i = 0; i < rill_tensor_numel(x); i++) {
    double v = ((double *)rill_tensor_ptr(x))[i];
    ((double *)rill_tensor_ptr(a))[i] = v;
    ((double *)rill_tensor_ptr(b))[i] = 2 * v;
  }
  return NULL;
}
static rill_status *split_grad_infer(rill_infer_ctx *c) { return meta_like_x(c, 0, 0); }
/* inputs: X, Out1, Out1@GRAD, Out2, Out2@GRAD (default maker order) */
static rill_status *split_grad_kernel(rill_kernel_ctx *c) {
  rill_tensor *x = rill_kin(c, 0, 0), *g1 = rill_kin(c, 2, 0), *g2 = rill_kin(c, 4, 0);
  rill_tensor *dx = rill_kout(c, 0, 0);
  if (!dx) return NULL;
  if (!g1 || !g2) return rill_kernel_error(c, "both output gradients must be given");
  for (int64_t i = 0; i < rill_tensor_numel(x); i++)
    ((double *)rill_tensor_ptr(dx))[i] =
        ((double *)rill_tensor_ptr(g1))[i] + 2 * ((double *)rill_tensor_ptr(g2))[i];
  return NULL;
}

static const rill_slot_schema x_in[] = {{"X", 0, ""}};
static const rill_slot_schema out_out[] = {{"Out", 0, ""}};
static const rill_slot_schema total_grad_in[] = {{"X", 0, ""}, {"Out", 0, ""}, {"Out@GRAD", 0, ""}};
static const rill_slot_schema xgrad_out[] = {{"X@GRAD", RILL_SLOT_DISPENSABLE, ""}};
static const rill_slot_schema split_out[] = {{"Out1", 0, ""}, {"Out2", 0, ""}};
static const rill_slot_schema split_grad_in[] = {
    {"X", 0, ""}, {"Out1", 0, ""}, {"Out1@GRAD", 0, ""}, {"Out2", 0, ""}, {"Out2@GRAD", 0, ""}};

static const rill_op_schema test_ops[] = {
    {.type = "bt_total", .inputs = x_in, .ninputs = 1, .outputs = out_out, .noutputs = 1,
     .infer = total_infer, .grad = rill_grad_default, .kernel_dtype_slot = 0, .dtype_attr = -1},
    {.type = "bt_total_grad", .inputs = total_grad_in, .ninputs = 3, .outputs = xgrad_out,
     .noutputs = 1, .infer = total_grad_infer, .kernel_dtype_slot = 0, .dtype_attr = -1},
    {.type = "bt_split", .inputs = x_in, .ninputs = 1, .outputs = split_out, .noutputs = 2,
     .infer = split_infer, .grad = rill_grad_default, .kernel_dtype_slot = 0, .dtype_attr = -1},
    {.type = "bt_split_grad", .inputs = split_grad_in, .ninputs = 5, .outputs = xgrad_out,
     .noutputs = 1, .infer = split_grad_infer, .kernel_dtype_slot = 0, .dtype_attr = -1},
    {.type = "bt_nograd", .inputs = x_in, .ninputs = 1, .outputs = out_out, .noutputs = 1,
     .infer = total_grad_infer, .grad = NULL, .kernel_dtype_slot = 0, .dtype_attr = -1},
    /* as Fluid's ops registered without a gradient (clip_by_norm, yolo_box) */
    {.type = "bt_fluid_nograd", .inputs = x_in, .ninputs = 1, .outputs = out_out, .noutputs = 1,
     .flags = RILL_OP_NO_GRADIENT, .infer = total_grad_infer, .grad = NULL, .kernel_dtype_slot = 0,
     .dtype_attr = -1},
};
static const rill_kernel_def test_kernels[] = {
    {"bt_total", RILL_DEVICE_CPU, RILL_DTYPE_FP64, total_kernel, NULL},
    {"bt_total_grad", RILL_DEVICE_CPU, RILL_DTYPE_FP64, total_grad_kernel, NULL},
    {"bt_split", RILL_DEVICE_CPU, RILL_DTYPE_FP64, split_kernel, NULL},
    {"bt_split_grad", RILL_DEVICE_CPU, RILL_DTYPE_FP64, split_grad_kernel, NULL},
    {"bt_nograd", RILL_DEVICE_CPU, RILL_DTYPE_FP64, total_kernel, NULL},
    {"bt_fluid_nograd", RILL_DEVICE_CPU, RILL_DTYPE_FP64, total_kernel, NULL},
};

static void register_test_ops(void) {
  static bool done;
  if (done) return;
  done = true;
  for (size_t i = 0; i < sizeof test_ops / sizeof *test_ops; i++)
    POK(rill_registry_add_op(&test_ops[i]));
  for (size_t i = 0; i < sizeof test_kernels / sizeof *test_kernels; i++)
    POK(rill_registry_add_kernel(&test_kernels[i]));
}

/* --------------------------------------------------------------- programs ----- */

#define B 3
#define D 4
#define H 5
#define K 2

/* x[B,D] (data, stop_gradient) -> mul w1[D,H] -> h -> relu -> a -> mul w2[H,K] -> o
 * -> bt_total -> loss[1] */
static rill_program *two_layer(void) {
  register_test_ops();
  rill_program *p = prog_new();
  rill_dtype f = RILL_DTYPE_FP64;
  prog_var(p, "x", f, "s", 2, (int64_t)B, (int64_t)D);
  prog_var(p, "w1", f, "p", 2, (int64_t)D, (int64_t)H);
  prog_var(p, "w2", f, "p", 2, (int64_t)H, (int64_t)K);
  prog_var(p, "h", f, "", 2, (int64_t)B, (int64_t)H);
  prog_var(p, "a", f, "", 2, (int64_t)B, (int64_t)H);
  prog_var(p, "o", f, "", 2, (int64_t)B, (int64_t)K);
  prog_var(p, "loss", f, "", 1, (int64_t)1);
  prog_op(p, "mul", "X=x;Y=w1", "Out=h");
  prog_op(p, "relu", "X=h", "Out=a");
  prog_op(p, "mul", "X=a;Y=w2", "Out=o");
  prog_op(p, "bt_total", "X=o", "Out=loss");
  return p;
}

typedef struct data2 {
  double x[B * D], w1[D * H], w2[H * K], w3[H * K];
} data2;

static rill_scope *bind2(data2 *d) {
  fill_det(d->x, B * D, 1, 1);
  fill_det(d->w1, D * H, 2, 1);
  fill_det(d->w2, H * K, 3, 1);
  fill_det(d->w3, H * K, 4, 1);
  rill_scope *s = NULL;
  POK(rill_scope_create(NULL, &s));
  scope_bind(s, "x", wrap(RILL_DTYPE_FP64, d->x, 2, (int64_t)B, (int64_t)D));
  scope_bind(s, "w1", wrap(RILL_DTYPE_FP64, d->w1, 2, (int64_t)D, (int64_t)H));
  scope_bind(s, "w2", wrap(RILL_DTYPE_FP64, d->w2, 2, (int64_t)H, (int64_t)K));
  scope_bind(s, "w3", wrap(RILL_DTYPE_FP64, d->w3, 2, (int64_t)H, (int64_t)K));
  return s;
}

static bool has_pair(const rill_param_grads *pg, const char *param) {
  for (size_t i = 0; i < rill_param_grads_count(pg); i++)
    if (strcmp(rill_param_grads_param(pg, i), param) == 0) return true;
  return false;
}

/* ------------------------------------------------------------------ tests ----- */

Test(backward, appends_paddle_shaped_ops) {
  rill_program *p = two_layer();
  uint64_t rev = rill_program_version(p);
  rill_param_grads *pg = NULL;
  POK(rill_program_append_backward(p, "loss", NULL, 0, &pg));
  cr_assert_gt(rill_program_version(p), rev);
  cr_assert_eq(rill_param_grads_count(pg), 2);
  cr_assert_str_eq(rill_param_grads_param(pg, 0), "w1");
  cr_assert_str_eq(rill_param_grads_grad(pg, 0), "w1@GRAD");
  cr_assert_str_eq(rill_param_grads_param(pg, 1), "w2");
  cr_assert_str_eq(rill_param_grads_grad(pg, 1), "w2@GRAD");
  cr_assert_null(rill_param_grads_param(pg, 2));
  /* forward 4 ops, then seed + 4 gradient ops */
  cr_assert_eq(rill_block_num_ops(p, 0), 9);
  const char *types[] = {"fill_constant", "bt_total_grad", "mul_grad", "relu_grad", "mul_grad"};
  for (size_t i = 0; i < 5; i++) cr_assert_str_eq(prog_opd(p, 4 + i)->type, types[i]);
  cr_assert_str_eq(prog_arg(p, 4, false, "Out", 0), "loss@GRAD");
  cr_assert_eq(prog_attr_int(p, 4, "op_role"), 257);
  cr_assert_eq(prog_attr_int(p, 3, "op_role"), 256, "the loss op is marked Forward|Loss");
  for (size_t i = 5; i < 9; i++) cr_assert_eq(prog_attr_int(p, i, "op_role"), 1);
  /* x is stop_gradient: its gradient slot is @EMPTY@ */
  cr_assert_str_eq(prog_arg(p, 8, false, "X@GRAD", 0), "@EMPTY@");
  cr_assert_str_eq(prog_arg(p, 8, false, "Y@GRAD", 0), "w1@GRAD");
  /* op_role_var on the op writing each parameter gradient */
  const rill_attr *rv = rill_op_attr(prog_opd(p, 8), "op_role_var");
  cr_assert_not_null(rv);
  cr_assert_eq(rv->value.n, 2);
  cr_assert_str_eq(rv->value.list.strings[0], "w1");
  cr_assert_str_eq(rv->value.list.strings[1], "w1@GRAD");
  /* gradient variables declared like their forward variables */
  const rill_var_desc *g = rill_block_find_var(p, 0, "w1@GRAD");
  cr_assert_not_null(g);
  cr_assert_eq(g->dtype, RILL_DTYPE_FP64);
  cr_assert_eq(g->dims.n, 2);
  cr_assert_eq(g->dims.d[0], D);
  cr_assert_eq(g->dims.d[1], H);
  cr_assert(!g->persistable);
  cr_assert_null(rill_block_find_var(p, 0, "x@GRAD"));
  POK(rill_program_validate(p));
  /* the program survives a round trip through Paddle's format */
  void *bytes;
  size_t size;
  rill_program *q = NULL;
  POK(rill_program_serialize(p, &bytes, &size));
  POK(rill_program_parse(bytes, size, &q));
  cr_assert(rill_program_equal(p, q));
  rill_free_buffer(bytes);
  rill_program_destroy(q);
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

Test(backward, two_layer_gradients_match_finite_differences) {
  rill_program *p = two_layer();
  rill_param_grads *pg = NULL;
  POK(rill_program_append_backward(p, "loss", NULL, 0, &pg));
  data2 d;
  rill_scope *s = bind2(&d);
  fd_param params[] = {{"w1", d.w1, D * H}, {"w2", d.w2, H * K}};
  fd_check(p, s, "loss", pg, params, 2, 1e-6);
  rill_scope_destroy(s);
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

Test(backward, variable_used_twice_is_renamed_and_summed) {
  rill_program *p = two_layer();
  /* a feeds a second branch: o2 = a * w3, loss2 = total(o) + ... via bt_total on o2 */
  prog_var(p, "w3", RILL_DTYPE_FP64, "p", 2, (int64_t)H, (int64_t)K);
  prog_var(p, "o2", RILL_DTYPE_FP64, "", 2, (int64_t)B, (int64_t)K);
  prog_var(p, "l2", RILL_DTYPE_FP64, "", 1, (int64_t)1);
  prog_var(p, "both", RILL_DTYPE_FP64, "", 1, (int64_t)1);
  prog_op(p, "mul", "X=a;Y=w3", "Out=o2");
  prog_op(p, "bt_total", "X=o2", "Out=l2");
  prog_op(p, "sum", "X=loss,l2", "Out=both");
  rill_param_grads *pg = NULL;
  POK(rill_program_append_backward(p, "both", NULL, 0, &pg));
  cr_assert_eq(rill_param_grads_count(pg), 3);
  /* a@GRAD is written by both mul_grads: renamed, then summed before relu_grad */
  long s = prog_find_op(p, "sum", 7);
  cr_assert_geq(s, 0, "no sum op appended");
  cr_assert_str_eq(prog_arg(p, (size_t)s, true, "X", 0), "a@GRAD@RENAME@block0@0");
  cr_assert_str_eq(prog_arg(p, (size_t)s, true, "X", 1), "a@GRAD@RENAME@block0@1");
  cr_assert_str_eq(prog_arg(p, (size_t)s, false, "Out", 0), "a@GRAD");
  cr_assert_eq(prog_attr_int(p, (size_t)s, "op_role"), 1);
  long r = prog_find_op(p, "relu_grad", 0);
  cr_assert_gt(r, s, "the sum must come before relu_grad reads a@GRAD");
  cr_assert_str_eq(prog_arg(p, (size_t)r, true, "Out@GRAD", 0), "a@GRAD");
  cr_assert_not_null(rill_block_find_var(p, 0, "a@GRAD@RENAME@block0@1"));
  POK(rill_program_validate(p));
  data2 d;
  rill_scope *sc = bind2(&d);
  fd_param params[] = {{"w1", d.w1, D * H}, {"w2", d.w2, H * K}, {"w3", d.w3, H * K}};
  fd_check(p, sc, "both", pg, params, 3, 1e-6);
  rill_scope_destroy(sc);
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

Test(backward, output_not_leading_to_loss_is_zero_filled) {
  register_test_ops();
  rill_program *p = prog_new();
  rill_dtype f = RILL_DTYPE_FP64;
  prog_var(p, "x", f, "s", 2, (int64_t)B, (int64_t)D);
  prog_var(p, "w1", f, "p", 2, (int64_t)D, (int64_t)H);
  prog_var(p, "h", f, "", 2, (int64_t)B, (int64_t)H);
  prog_var(p, "u", f, "", 2, (int64_t)B, (int64_t)H);
  prog_var(p, "v", f, "", 2, (int64_t)B, (int64_t)H);
  prog_var(p, "loss", f, "", 1, (int64_t)1);
  prog_op(p, "mul", "X=x;Y=w1", "Out=h");
  prog_op(p, "bt_split", "X=h", "Out1=u;Out2=v");
  prog_op(p, "bt_total", "X=u", "Out=loss");
  rill_param_grads *pg = NULL;
  POK(rill_program_append_backward(p, "loss", NULL, 0, &pg));
  long z = prog_find_op(p, "fill_zeros_like", 0);
  cr_assert_geq(z, 0, "v@GRAD must be zero-filled");
  cr_assert_str_eq(prog_arg(p, (size_t)z, true, "X", 0), "v");
  cr_assert_str_eq(prog_arg(p, (size_t)z, false, "Out", 0), "v@GRAD");
  cr_assert_lt(z, prog_find_op(p, "bt_split_grad", 0));
  data2 d;
  rill_scope *s = bind2(&d);
  fd_param params[] = {{"w1", d.w1, D * H}};
  fd_check(p, s, "loss", pg, params, 1, 1e-6);
  rill_scope_destroy(s);
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

Test(backward, stop_gradient_cuts_the_path) {
  rill_program *p = two_layer();
  POK(rill_var_set_flags(p, 0, "a", false, false, true));
  rill_param_grads *pg = NULL;
  POK(rill_program_append_backward(p, "loss", NULL, 0, &pg));
  cr_assert_eq(rill_param_grads_count(pg), 1);
  cr_assert(has_pair(pg, "w2"));
  cr_assert_eq(prog_find_op(p, "relu_grad", 0), -1, "nothing flows through a");
  cr_assert_null(rill_block_find_var(p, 0, "w1@GRAD"));
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

Test(backward, no_grad_names_cut_paths_and_drop_parameters) {
  rill_program *p = two_layer();
  const char *ng[] = {"w2"};
  rill_param_grads *pg = NULL;
  POK(rill_program_append_backward(p, "loss", ng, 1, &pg));
  cr_assert_eq(rill_param_grads_count(pg), 1);
  cr_assert(has_pair(pg, "w1"));
  long m = prog_find_op(p, "mul_grad", 0);
  cr_assert_str_eq(prog_arg(p, (size_t)m, false, "Y@GRAD", 0), "@EMPTY@");
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);

  p = two_layer();
  const char *ng2[] = {"h"};
  POK(rill_program_append_backward(p, "loss", ng2, 1, &pg));
  cr_assert_eq(rill_param_grads_count(pg), 1);
  cr_assert(has_pair(pg, "w2"));
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

Test(backward, non_trainable_parameter_gets_no_pair) {
  rill_program *p = two_layer();
  POK(rill_var_set_flags(p, 0, "w1", true, true, true)); /* trainable = false */
  rill_param_grads *pg = NULL;
  POK(rill_program_append_backward(p, "loss", NULL, 0, &pg));
  cr_assert_eq(rill_param_grads_count(pg), 1);
  cr_assert(has_pair(pg, "w2"));
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

Test(backward, op_without_gradient_on_the_path_is_named) {
  rill_program *p = two_layer();
  prog_var(p, "n", RILL_DTYPE_FP64, "", 2, (int64_t)B, (int64_t)K);
  prog_var(p, "loss2", RILL_DTYPE_FP64, "", 1, (int64_t)1);
  prog_op(p, "bt_nograd", "X=o", "Out=n");
  prog_op(p, "bt_total", "X=n", "Out=loss2");
  uint64_t rev = rill_program_version(p);
  size_t nops = rill_block_num_ops(p, 0);
  rill_param_grads *pg = NULL;
  rill_status *st = rill_program_append_backward(p, "loss2", NULL, 0, &pg);
  cr_assert_not_null(st);
  const char *msg = rill_status_message(st);
  cr_assert(strstr(msg, "bt_nograd") && strstr(msg, "#4") && strstr(msg, "no gradient") &&
                strstr(msg, "loss2"),
            "message: %s", msg);
  rill_status_destroy(st);
  cr_assert_null(pg);
  cr_assert_eq(rill_program_version(p), rev, "the program is untouched on error");
  cr_assert_eq(rill_block_num_ops(p, 0), nops);
  /* off the path the same op is fine */
  POK(rill_program_append_backward(p, "loss", NULL, 0, &pg));
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

/* An op Fluid defines without a gradient passes none: on a path of its own to the loss
 * (o -> bt_fluid_nograd -> n, beside o -> bt_total), o's gradient comes from the other
 * path alone, and alone on the path it leaves the parameters without gradients, as
 * Fluid's backward pass skips such ops. */
Test(backward, op_fluid_defines_without_gradient_passes_none) {
  rill_program *p = two_layer();
  prog_var(p, "n", RILL_DTYPE_FP64, "", 2, (int64_t)B, (int64_t)K);
  prog_var(p, "m", RILL_DTYPE_FP64, "", 1, (int64_t)1);
  prog_var(p, "loss2", RILL_DTYPE_FP64, "", 1, (int64_t)1);
  prog_op(p, "bt_fluid_nograd", "X=o", "Out=n");
  prog_op(p, "bt_total", "X=n", "Out=m");
  prog_op(p, "elementwise_add", "X=m;Y=loss", "Out=loss2");
  rill_param_grads *pg = NULL;
  POK(rill_program_append_backward(p, "loss2", NULL, 0, &pg));
  cr_assert_eq(rill_param_grads_count(pg), 2);
  cr_assert_eq(prog_find_op(p, "bt_fluid_nograd_grad", 0), -1);
  /* one bt_total_grad only: the one of loss's bt_total, so n gets no gradient */
  long first = prog_find_op(p, "bt_total_grad", 0);
  cr_assert_geq(first, 0);
  cr_assert_eq(prog_find_op(p, "bt_total_grad", (size_t)first + 1), -1);
  cr_assert_null(rill_block_find_var(p, 0, "n@GRAD"));
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);

  p = two_layer();
  prog_var(p, "n", RILL_DTYPE_FP64, "", 2, (int64_t)B, (int64_t)K);
  prog_var(p, "loss3", RILL_DTYPE_FP64, "", 1, (int64_t)1);
  prog_op(p, "bt_fluid_nograd", "X=o", "Out=n");
  prog_op(p, "bt_total", "X=n", "Out=loss3");
  POK(rill_program_append_backward(p, "loss3", NULL, 0, &pg));
  cr_assert_eq(rill_param_grads_count(pg), 0);
  cr_assert_eq(prog_find_op(p, "mul_grad", 0), -1);
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

static void expect_msg(rill_status *st, const char *a, const char *b) {
  cr_assert_not_null(st, "expected an error");
  const char *msg = rill_status_message(st);
  cr_assert(strstr(msg, a) && strstr(msg, b), "message \"%s\" lacks \"%s\" or \"%s\"", msg, a, b);
  rill_status_destroy(st);
}

Test(backward, bad_losses_are_named) {
  rill_program *p = two_layer();
  rill_param_grads *pg = NULL;
  expect_msg(rill_program_append_backward(p, "nope", NULL, 0, &pg), "nope", "not in block 0");
  expect_msg(rill_program_append_backward(p, "o", NULL, 0, &pg), "'o'", "exactly one element");
  prog_var(p, "orphan", RILL_DTYPE_FP64, "", 1, (int64_t)1);
  expect_msg(rill_program_append_backward(p, "orphan", NULL, 0, &pg), "orphan", "no op");
  prog_var(p, "ids", RILL_DTYPE_INT64, "", 1, (int64_t)1);
  expect_msg(rill_program_append_backward(p, "ids", NULL, 0, &pg), "ids", "float");
  const char *bad[] = {NULL};
  expect_msg(rill_program_append_backward(p, "loss", bad, 1, &pg), "no_grad_names", "NULL");
  cr_assert_null(pg);
  POK(rill_program_append_backward(p, "loss", NULL, 0, NULL));
  expect_msg(rill_program_append_gradients(p, "loss", "loss@GRAD", NULL, 0, &pg), "loss@GRAD",
             "must be a new variable name");
  expect_msg(rill_program_append_gradients(p, "loss", "", NULL, 0, &pg), "loss", "new variable");
  cr_assert_null(pg);
  rill_program_destroy(p);
}

/* Two losses over one program, then the first again: each pass keeps its gradients,
 * the later passes' existing names prefixed grad/ once per pass (Paddle 1.8). */
Test(backward, later_passes_rename_the_gradients_that_exist) {
  rill_program *p = two_layer();
  prog_var(p, "w3", RILL_DTYPE_FP64, "p", 2, (int64_t)H, (int64_t)K);
  prog_var(p, "o2", RILL_DTYPE_FP64, "", 2, (int64_t)B, (int64_t)K);
  prog_var(p, "l2", RILL_DTYPE_FP64, "", 1, (int64_t)1);
  prog_op(p, "mul", "X=a;Y=w3", "Out=o2");
  prog_op(p, "bt_total", "X=o2", "Out=l2");
  rill_param_grads *pg1 = NULL, *pg2 = NULL, *pg3 = NULL;
  POK(rill_program_append_backward(p, "loss", NULL, 0, &pg1));
  POK(rill_program_append_backward(p, "l2", NULL, 0, &pg2));
  cr_assert_eq(rill_param_grads_count(pg2), 2);
  cr_assert_str_eq(rill_param_grads_param(pg2, 0), "w1");
  cr_assert_str_eq(rill_param_grads_grad(pg2, 0), "grad/grad/w1@GRAD");
  cr_assert_str_eq(rill_param_grads_param(pg2, 1), "w3");
  cr_assert_str_eq(rill_param_grads_grad(pg2, 1), "w3@GRAD", "a new gradient keeps its name");
  const rill_var_desc *g = rill_block_find_var(p, 0, "grad/grad/a@GRAD");
  cr_assert_not_null(g, "a@GRAD existed: the second pass writes grad/grad/a@GRAD");
  cr_assert_eq(g->dims.d[1], H, "declared like a");
  long r = prog_find_op(p, "relu_grad", 11); /* after the first pass's */
  cr_assert_geq(r, 0);
  cr_assert_str_eq(prog_arg(p, (size_t)r, true, "Out@GRAD", 0), "grad/grad/a@GRAD");
  cr_assert_str_eq(prog_arg(p, (size_t)r, false, "X@GRAD", 0), "grad/grad/h@GRAD");
  /* the same loss again: seeded again, third-pass names */
  POK(rill_program_append_gradients(p, "loss", NULL, NULL, 0, &pg3));
  cr_assert_str_eq(rill_param_grads_grad(pg3, 0), "grad/grad/grad/w1@GRAD");
  cr_assert_str_eq(rill_param_grads_grad(pg3, 1), "grad/grad/grad/w2@GRAD");
  POK(rill_program_validate(p));
  data2 d;
  rill_scope *sc = bind2(&d);
  fd_param params[] = {{"w1", d.w1, D * H}, {"w2", d.w2, H * K}, {"w3", d.w3, H * K}};
  fd_check(p, sc, "loss", pg1, params, 3, 1e-6);
  fd_check(p, sc, "l2", pg2, params, 3, 1e-6);
  fd_check(p, sc, "loss", pg3, params, 3, 1e-6);
  rill_scope_destroy(sc);
  rill_param_grads_destroy(pg1);
  rill_param_grads_destroy(pg2);
  rill_param_grads_destroy(pg3);
  rill_program_destroy(p);
}

/* A seed under another name: the gradient ops read it. */
Test(backward, a_named_seed_is_read_by_the_gradient_ops) {
  rill_program *p = two_layer();
  rill_param_grads *pg = NULL;
  POK(rill_program_append_gradients(p, "loss", "loss@GRAD_0", NULL, 0, &pg));
  cr_assert_str_eq(prog_arg(p, 4, false, "Out", 0), "loss@GRAD_0");
  cr_assert_str_eq(prog_arg(p, 5, true, "Out@GRAD", 0), "loss@GRAD_0");
  cr_assert_null(rill_block_find_var(p, 0, "loss@GRAD"));
  data2 d;
  rill_scope *sc = bind2(&d);
  fd_param params[] = {{"w1", d.w1, D * H}, {"w2", d.w2, H * K}};
  fd_check(p, sc, "loss", pg, params, 2, 1e-6);
  rill_scope_destroy(sc);
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

/* ------------------------------------------------------- out of memory -------- */

#include "support/fail_alloc.h"

typedef struct oom_ctx {
  const rill_program *tmpl;
  rill_program *p;
  rill_param_grads *pg;
} oom_ctx;

static rill_status *oom_op(void *vctx) {
  oom_ctx *c = vctx;
  RILL_TRY(rill_program_clone(c->tmpl, &c->p));
  uint64_t rev = rill_program_version(c->p);
  size_t nops = rill_block_num_ops(c->p, 0);
  rill_status *st = rill_program_append_backward(c->p, "both", NULL, 0, &c->pg);
  if (st) {
    /* all or nothing */
    if (rill_program_version(c->p) != rev || rill_block_num_ops(c->p, 0) != nops || c->pg)
      return rill_status_wrap(st, "program changed on error");
    return st;
  }
  RILL_TRY(rill_program_append_clip_by_global_norm(c->p, c->pg, 1.0f));
  return rill_program_append_l2_decay(c->p, c->pg, 0.01f);
}

static void oom_cleanup(void *vctx) {
  oom_ctx *c = vctx;
  rill_param_grads_destroy(c->pg);
  rill_program_destroy(c->p);
  c->pg = NULL;
  c->p = NULL;
}

Test(backward, out_of_memory_anywhere_is_an_error_and_leaks_nothing) {
  rill_program *p = two_layer();
  prog_var(p, "w3", RILL_DTYPE_FP64, "p", 2, (int64_t)H, (int64_t)K);
  prog_var(p, "o2", RILL_DTYPE_FP64, "", 2, (int64_t)B, (int64_t)K);
  prog_var(p, "l2", RILL_DTYPE_FP64, "", 1, (int64_t)1);
  prog_var(p, "both", RILL_DTYPE_FP64, "", 1, (int64_t)1);
  prog_op(p, "mul", "X=a;Y=w3", "Out=o2");
  prog_op(p, "bt_total", "X=o2", "Out=l2");
  prog_op(p, "sum", "X=loss,l2", "Out=both");
  oom_ctx c = {.tmpl = p};
  char why[512];
  /* recovery allowed: the program's name index degrades to a scan when it cannot grow */
  long runs = fail_alloc_sweep(oom_op, oom_cleanup, &c, 20000, true, why, sizeof why);
  cr_assert_gt(runs, 10, "sweep failed: %s", why);
  rill_program_destroy(p);
}
