/* L2 weight decay and clipping by global norm: the appended ops (Paddle's shape) and
 * their effect on the gradients through the executor. */
#include "framework/registry/registry.h"
#include "framework/transform/backward.h"
#include "transform/prog_util.h"

/* loss[1,1] = ones[1,4] * (relu(x[4,3] * w[3,2]) * v[2,1]): parameters w and v. */
static rill_program *small_net(void) {
  rill_program *p = prog_new();
  rill_dtype f = RILL_DTYPE_FP64;
  prog_var(p, "x", f, "s", 2, (int64_t)4, (int64_t)3);
  prog_var(p, "ones", f, "s", 2, (int64_t)1, (int64_t)4);
  prog_var(p, "w", f, "p", 2, (int64_t)3, (int64_t)2);
  prog_var(p, "v", f, "p", 2, (int64_t)2, (int64_t)1);
  prog_var(p, "o", f, "", 2, (int64_t)4, (int64_t)2);
  prog_var(p, "r", f, "", 2, (int64_t)4, (int64_t)2);
  prog_var(p, "q", f, "", 2, (int64_t)4, (int64_t)1);
  prog_var(p, "loss", f, "", 2, (int64_t)1, (int64_t)1);
  prog_op(p, "mul", "X=x;Y=w", "Out=o");
  prog_op(p, "relu", "X=o", "Out=r");
  prog_op(p, "mul", "X=r;Y=v", "Out=q");
  prog_op(p, "mul", "X=ones;Y=q", "Out=loss");
  return p;
}

typedef struct netdata {
  double x[12], ones[4], w[6], v[2];
} netdata;

static rill_scope *bind_net(netdata *d) {
  fill_det(d->x, 12, 11, 1);
  fill_det(d->w, 6, 12, 1);
  fill_det(d->v, 2, 13, 1);
  for (int i = 0; i < 4; i++) d->ones[i] = 1;
  rill_scope *s = NULL;
  POK(rill_scope_create(NULL, &s));
  scope_bind(s, "x", wrap(RILL_DTYPE_FP64, d->x, 2, (int64_t)4, (int64_t)3));
  scope_bind(s, "ones", wrap(RILL_DTYPE_FP64, d->ones, 2, (int64_t)1, (int64_t)4));
  scope_bind(s, "w", wrap(RILL_DTYPE_FP64, d->w, 2, (int64_t)3, (int64_t)2));
  scope_bind(s, "v", wrap(RILL_DTYPE_FP64, d->v, 2, (int64_t)2, (int64_t)1));
  return s;
}

/* Fetches the gradients of w (6) and v (2) into g. */
static void grads(rill_program *p, rill_scope *s, double g[8]) {
  rill_executor *e = exe_new();
  const char *names[2] = {"w@GRAD", "v@GRAD"};
  rill_tensor *out[2] = {0};
  POK(rill_executor_run(e, p, s, NULL, NULL, 0, names, 2, out));
  memcpy(g, rill_tensor_data(out[0]), 6 * sizeof(double));
  memcpy(g + 6, rill_tensor_data(out[1]), 2 * sizeof(double));
  rill_tensor_destroy(out[0]);
  rill_tensor_destroy(out[1]);
  rill_executor_destroy(e);
}

Test(regularize, l2_decay_adds_coeff_times_param) {
  rill_program *p = small_net();
  rill_param_grads *pg = NULL;
  POK(rill_program_append_backward(p, "loss", NULL, 0, &pg));
  netdata d;
  rill_scope *s = bind_net(&d);
  double raw[8], reg[8];
  grads(p, s, raw);
  size_t before = rill_block_num_ops(p, 0);
  POK(rill_program_append_l2_decay(p, pg, 0.5f));
  cr_assert_eq(rill_block_num_ops(p, 0), before + 4);
  /* scale(param) -> l2_decay_0.tmp_0, then sum(grad, decay) -> grad in place */
  const rill_op_desc *sc = prog_opd(p, before), *sm = prog_opd(p, before + 1);
  cr_assert_str_eq(sc->type, "scale");
  cr_assert_str_eq(prog_arg(p, before, true, "X", 0), "w");
  cr_assert_str_eq(prog_arg(p, before, false, "Out", 0), "l2_decay_0.tmp_0");
  cr_assert_str_eq(sm->type, "sum");
  cr_assert_str_eq(prog_arg(p, before + 1, true, "X", 0), "w@GRAD");
  cr_assert_str_eq(prog_arg(p, before + 1, true, "X", 1), "l2_decay_0.tmp_0");
  cr_assert_str_eq(prog_arg(p, before + 1, false, "Out", 0), "w@GRAD");
  cr_assert_eq(prog_attr_int(p, before, "op_role"), 2);
  const rill_attr *rv = rill_op_attr(sm, "op_role_var");
  cr_assert_str_eq(rv->value.list.strings[0], "w");
  cr_assert_str_eq(rv->value.list.strings[1], "w@GRAD");
  cr_assert_not_null(rill_block_find_var(p, 0, "l2_decay_1.tmp_0"));
  POK(rill_program_validate(p));
  grads(p, s, reg);
  for (int i = 0; i < 6; i++) cr_assert_float_eq(reg[i], raw[i] + 0.5 * d.w[i], 1e-12);
  for (int i = 0; i < 2; i++) cr_assert_float_eq(reg[6 + i], raw[6 + i] + 0.5 * d.v[i], 1e-12);
  rill_scope_destroy(s);
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

Test(regularize, clip_by_global_norm_is_built_from_paddle_ops) {
  rill_program *p = small_net();
  rill_param_grads *pg = NULL;
  POK(rill_program_append_backward(p, "loss", NULL, 0, &pg));
  size_t before = rill_block_num_ops(p, 0);
  POK(rill_program_append_clip_by_global_norm(p, pg, 0.25f));
  const char *want[] = {"square", "reduce_sum", "square", "reduce_sum", "sum", "sqrt",
                        "fill_constant", "elementwise_max", "elementwise_div", "elementwise_mul",
                        "elementwise_mul"};
  cr_assert_eq(rill_block_num_ops(p, 0), before + 11);
  for (size_t i = 0; i < 11; i++) {
    cr_assert_str_eq(prog_opd(p, before + i)->type, want[i]);
    cr_assert_eq(prog_attr_int(p, before + i, "op_role"), 2);
  }
  cr_assert_str_eq(prog_arg(p, before + 9, true, "X", 0), "w@GRAD");
  cr_assert_str_eq(prog_arg(p, before + 9, false, "Out", 0), "w@GRAD");
  cr_assert_str_eq(prog_arg(p, before + 9, true, "Y", 0), "elementwise_div_0.tmp_0");
  cr_assert_str_eq(prog_arg(p, before + 4, true, "X", 1), "reduce_sum_1.tmp_0");
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

Test(regularize, clip_by_global_norm_scales_gradients) {
  if (!rill_schema_find("square") || !rill_schema_find("reduce_sum") || !rill_schema_find("sqrt") ||
      !rill_schema_find("elementwise_max") || !rill_schema_find("elementwise_div") ||
      !rill_schema_find("elementwise_mul"))
    cr_skip_test("the math ops of the clip are not in this build yet");
  for (int big = 0; big < 2; big++) {
    rill_program *p = small_net();
    rill_param_grads *pg = NULL;
    POK(rill_program_append_backward(p, "loss", NULL, 0, &pg));
    netdata d;
    rill_scope *s = bind_net(&d);
    double raw[8], clipped[8], norm = 0;
    grads(p, s, raw);
    for (int i = 0; i < 8; i++) norm += raw[i] * raw[i];
    norm = sqrt(norm);
    double clip = big ? norm * 10 : norm / 3;
    POK(rill_program_append_clip_by_global_norm(p, pg, (float)clip));
    POK(rill_program_validate(p));
    grads(p, s, clipped);
    double f = (float)clip / fmax((float)clip, norm);
    for (int i = 0; i < 8; i++) cr_assert_float_eq(clipped[i], raw[i] * f, 1e-9);
    rill_scope_destroy(s);
    rill_param_grads_destroy(pg);
    rill_program_destroy(p);
  }
}

Test(regularize, bad_pairs_are_named_and_leave_the_program_alone) {
  rill_program *p = small_net();
  rill_param_grads *pg = NULL;
  POK(rill_program_append_backward(p, "loss", NULL, 0, &pg));
  uint64_t rev = rill_program_version(p);
  /* make the second gradient unknown */
  char *keep = pg->grad[1];
  pg->grad[1] = "nope@GRAD";
  rill_status *st = rill_program_append_l2_decay(p, pg, 0.1f);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "nope@GRAD"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  pg->grad[1] = keep;
  cr_assert_eq(rill_program_version(p), rev);
  cr_assert_null(rill_block_find_var(p, 0, "l2_decay_0.tmp_0"), "no partial edit");
  st = rill_program_append_clip_by_global_norm(p, pg, 0);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "clip_norm"));
  rill_status_destroy(st);
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

/* loss[1,1] = ones[1,4] * lookup_table(table[5,2], ids {1, 3, 1, 0}, is_sparse) * v[2,1]:
 * table@GRAD is selected rows with row 1 twice. */
static rill_program *sparse_net(void) {
  rill_program *p = prog_new();
  rill_dtype f = RILL_DTYPE_FP64;
  prog_var(p, "ids", RILL_DTYPE_INT64, "s", 2, (int64_t)4, (int64_t)1);
  prog_var(p, "ones", f, "s", 2, (int64_t)1, (int64_t)4);
  prog_var(p, "table", f, "p", 2, (int64_t)5, (int64_t)2);
  prog_var(p, "v", f, "p", 2, (int64_t)2, (int64_t)1);
  prog_var(p, "e", f, "", 2, (int64_t)4, (int64_t)2);
  prog_var(p, "s", f, "", 2, (int64_t)1, (int64_t)2);
  prog_var(p, "loss", f, "", 2, (int64_t)1, (int64_t)1);
  rill_op_builder *b = prog_op_begin("lookup_table", "W=table;Ids=ids", "Out=e");
  POK(rill_op_builder_attr_bool(b, "is_sparse", true));
  prog_op_end(b, p);
  prog_op(p, "mul", "X=ones;Y=e", "Out=s");
  prog_op(p, "mul", "X=s;Y=v", "Out=loss");
  return p;
}

Test(regularize, clip_by_global_norm_merges_selected_rows_for_the_norm) {
  rill_program *p = sparse_net();
  rill_param_grads *pg = NULL;
  POK(rill_program_append_backward(p, "loss", NULL, 0, &pg));
  cr_assert_eq(rill_block_find_var(p, 0, "table@GRAD")->type, RILL_VAR_SELECTED_ROWS);
  /* weight decay of selected rows stays an error naming the gradient */
  rill_status *st = rill_program_append_l2_decay(p, pg, 0.1f);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "table@GRAD"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  size_t before = rill_block_num_ops(p, 0);
  double v[2] = {0.5, -2}, table[10], ones[4] = {1, 1, 1, 1};
  int64_t ids[4] = {1, 3, 1, 0};
  fill_det(table, 10, 5, 1);
  rill_scope *s = NULL;
  POK(rill_scope_create(NULL, &s));
  scope_bind(s, "ids", wrap(RILL_DTYPE_INT64, ids, 2, (int64_t)4, (int64_t)1));
  scope_bind(s, "ones", wrap(RILL_DTYPE_FP64, ones, 2, (int64_t)1, (int64_t)4));
  scope_bind(s, "table", wrap(RILL_DTYPE_FP64, table, 2, (int64_t)5, (int64_t)2));
  scope_bind(s, "v", wrap(RILL_DTYPE_FP64, v, 2, (int64_t)2, (int64_t)1));
  /* the gradients: every looked-up row gets v, v@GRAD the column sums of e */
  double gv[2] = {0, 0};
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++) gv[j] += table[ids[i] * 2 + j];
  /* the norm of the merged rows: row 1 holds 2v, rows 3 and 0 v */
  double vv = v[0] * v[0] + v[1] * v[1];
  double norm = sqrt(6 * vv + gv[0] * gv[0] + gv[1] * gv[1]);
  POK(rill_program_append_clip_by_global_norm(p, pg, (float)(norm / 4)));
  POK(rill_program_validate(p));
  long m = prog_find_op(p, "merge_selected_rows", before);
  cr_assert(m >= 0, "no merge_selected_rows");
  cr_assert_str_eq(prog_arg(p, (size_t)m, true, "X", 0), "table@GRAD");
  cr_assert_str_eq(prog_opd(p, (size_t)m + 1)->type, "get_tensor_from_selected_rows");
  cr_assert_str_eq(prog_opd(p, (size_t)m + 2)->type, "square");
  rill_executor *e = exe_new();
  const char *names[1] = {"v@GRAD"};
  rill_tensor *out[1] = {0};
  POK(rill_executor_run(e, p, s, NULL, NULL, 0, names, 1, out));
  const double *got = rill_tensor_data(out[0]);
  double f = (float)(norm / 4) / norm;
  for (int j = 0; j < 2; j++) cr_assert_float_eq(got[j], gv[j] * f, 1e-6, "[%d]", j);
  rill_tensor_destroy(out[0]);
  rill_executor_destroy(e);
  rill_scope_destroy(s);
  rill_param_grads_destroy(pg);
  rill_program_destroy(p);
}

/* Pairs made by hand (the order and subset an optimizer chooses) drive the passes as the
 * backward pass's own do; bad arguments are errors. */
Test(regularize, pairs_of_ones_own_drive_the_passes) {
  rill_program *p = small_net();
  POK(rill_program_append_backward(p, "loss", NULL, 0, NULL));
  const char *params[1] = {"v"}, *grads_of[1] = {"v@GRAD"};
  rill_param_grads *pg = NULL;
  POK(rill_param_grads_create(params, grads_of, 1, &pg));
  cr_assert_eq(rill_param_grads_count(pg), 1);
  cr_assert_str_eq(rill_param_grads_param(pg, 0), "v");
  cr_assert_str_eq(rill_param_grads_grad(pg, 0), "v@GRAD");
  netdata d;
  rill_scope *s = bind_net(&d);
  double raw[8], reg[8];
  grads(p, s, raw);
  POK(rill_program_append_l2_decay(p, pg, 0.25f));
  grads(p, s, reg);
  for (int i = 0; i < 6; i++) cr_assert_eq(reg[i], raw[i], "w@GRAD[%d] changed", i);
  for (int i = 0; i < 2; i++) cr_assert_float_eq(reg[6 + i], raw[6 + i] + 0.25 * d.v[i], 1e-12);
  rill_param_grads_destroy(pg);
  rill_param_grads *bad = (rill_param_grads *)1;
  const char *holes[1] = {NULL};
  const struct {
    const char *const *params;
    size_t n;
    const char *says;
  } cases[2] = {{holes, 1, "pair 0 has no name"}, {NULL, 2, "2 pairs without names"}};
  for (int k = 0; k < 2; k++) {
    rill_status *st = rill_param_grads_create(cases[k].params, cases[k].params ? grads_of : NULL,
                                              cases[k].n, &bad);
    cr_assert_not_null(st);
    cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
    cr_assert(strstr(rill_status_message(st), cases[k].says), "%s", rill_status_message(st));
    cr_assert_null(bad);
    rill_status_destroy(st);
  }
  POK(rill_param_grads_create(NULL, NULL, 0, &bad));
  cr_assert_eq(rill_param_grads_count(bad), 0);
  rill_param_grads_destroy(bad);
  rill_scope_destroy(s);
  rill_program_destroy(p);
}
