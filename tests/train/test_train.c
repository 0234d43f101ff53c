/* Training end to end (float32): forward program -> backward pass -> optimizer ops,
 * parameters initialised by a seeded startup program, run by the executor on fixed
 * synthetic data. The loss must fall below a fixed threshold, and two runs with the
 * same seeds must give bitwise-identical parameters. */
#include "framework/data/scope.h"
#include "framework/program/program.h"
#include "kernels/cpu/sgemm.h"
#include "train/train_util.h"
#include "transform/prog_util.h"

#define F RILL_DTYPE_FP32

typedef struct net {
  rill_program *main, *startup;
  rill_param_grads *pg;
  const char *feeds[2];
  rill_tensor *feed_t[2];
} net;

static void net_free(net *n) {
  rill_param_grads_destroy(n->pg);
  rill_program_destroy(n->main);
  rill_program_destroy(n->startup);
  for (int i = 0; i < 2; i++) rill_tensor_destroy(n->feed_t[i]);
}

static void add_tmp(rill_program *p, const char *name, rill_dtype dt, size_t nd, const int64_t *d) {
  POK(rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, dt, d, nd, 0, false));
}

static void bias_add(rill_program *p, const char *x, const char *b, const char *out) {
  char ins[128], outs[64];
  snprintf(ins, sizeof ins, "X=%s;Y=%s", x, b);
  snprintf(outs, sizeof outs, "Out=%s", out);
  rill_op_builder *bl = prog_op_begin("elementwise_add", ins, outs);
  POK(rill_op_builder_attr_int(bl, "axis", 1));
  prog_op_end(bl, p);
}

/* ---- data ---- */

#define NS 64 /* samples */
#define ND 8  /* features */
#define NC 3  /* classes */

static float xs[NS * ND];
static int64_t ys[NS];

static void make_regression_data(void) {
  double x[NS * ND], teacher[ND * NC];
  fill_det(x, NS * ND, 101, 1);
  fill_det(teacher, ND * NC, 102, 1);
  for (int i = 0; i < NS * ND; i++) xs[i] = (float)x[i];
  for (int n = 0; n < NS; n++) {
    int best = 0;
    double bv = -1e30;
    for (int c = 0; c < NC; c++) {
      double v = 0;
      for (int k = 0; k < ND; k++) v += x[n * ND + k] * teacher[k * NC + c];
      if (v > bv) {
        bv = v;
        best = c;
      }
    }
    ys[n] = best;
  }
}

/* softmax regression: loss = mean(softmax_with_cross_entropy(x w + b, y)) */
static void build_regression(net *n, tu_opt opt, float lr) {
  memset(n, 0, sizeof *n);
  n->main = prog_new();
  n->startup = prog_new();
  int64_t xd[2] = {NS, ND}, yd[2] = {NS, 1}, wd[2] = {ND, NC}, bd[1] = {NC}, zd[2] = {NS, NC};
  int64_t cd[2] = {NS, 1}, ld[1] = {1};
  add_tmp(n->main, "x", F, 2, xd);
  add_tmp(n->main, "y", RILL_DTYPE_INT64, 2, yd);
  POK(rill_var_set_flags(n->main, 0, "x", false, false, true));
  POK(rill_var_set_flags(n->main, 0, "y", false, false, true));
  POK(tu_param(n->main, n->startup, "fc_0.w_0", F, wd, 2, 0.1f, 7));
  POK(tu_param(n->main, n->startup, "fc_0.b_0", F, bd, 1, 0, 0));
  add_tmp(n->main, "z", F, 2, zd);
  add_tmp(n->main, "logits", F, 2, zd);
  add_tmp(n->main, "sm", F, 2, zd);
  add_tmp(n->main, "ce", F, 2, cd);
  add_tmp(n->main, "loss", F, 1, ld);
  prog_op(n->main, "mul", "X=x;Y=fc_0.w_0", "Out=z");
  bias_add(n->main, "z", "fc_0.b_0", "logits");
  prog_op(n->main, "softmax_with_cross_entropy", "Logits=logits;Label=y", "Softmax=sm;Loss=ce");
  prog_op(n->main, "mean", "X=ce", "Out=loss");
  POK(rill_program_append_backward(n->main, "loss", NULL, 0, &n->pg));
  POK(tu_append_optimizer(n->main, n->startup, n->pg, opt, lr));
  POK(rill_program_validate(n->main));
  n->feeds[0] = "x";
  n->feeds[1] = "y";
  n->feed_t[0] = wrap(F, xs, 2, (int64_t)NS, (int64_t)ND);
  n->feed_t[1] = wrap(RILL_DTYPE_INT64, ys, 2, (int64_t)NS, (int64_t)1);
}

/* Runs startup, then `steps` training steps; returns the first and last loss. */
static void train(net *n, rill_scope *s, int steps, float *first, float *last) {
  rill_executor *e = exe_new();
  POK(rill_executor_run(e, n->startup, s, NULL, NULL, 0, NULL, 0, NULL));
  const char *fetch[1] = {"loss"};
  for (int i = 0; i < steps; i++) {
    rill_tensor *out = NULL;
    POK(rill_executor_run(e, n->main, s, n->feeds, n->feed_t, 2, fetch, 1, &out));
    float l = *(float *)rill_tensor_data(out);
    cr_assert(isfinite(l), "step %d: loss %g", i, l);
    if (i == 0) *first = l;
    *last = l;
    rill_tensor_destroy(out);
  }
  rill_executor_destroy(e);
}

/* Copies every parameter's bytes out of the scope (malloc'd, concatenated). */
static unsigned char *snapshot(net *n, rill_scope *s, size_t *size) {
  unsigned char *buf = NULL;
  *size = 0;
  for (size_t i = 0; i < rill_param_grads_count(n->pg); i++) {
    rill_tensor *t = NULL;
    POK(rill_scope_get_tensor(s, rill_param_grads_param(n->pg, i), &t));
    size_t b = rill_tensor_byte_size(t);
    buf = realloc(buf, *size + b);
    memcpy(buf + *size, rill_tensor_data(t), b);
    *size += b;
    rill_tensor_destroy(t);
  }
  return buf;
}

static void regression_case(tu_opt opt, float lr, int steps, float threshold) {
  make_regression_data();
  net n;
  build_regression(&n, opt, lr);
  unsigned char *snap[2];
  size_t size[2];
  for (int run = 0; run < 2; run++) {
    rill_scope *s = NULL;
    POK(rill_scope_create(NULL, &s));
    float first, last;
    train(&n, s, steps, &first, &last);
    cr_assert_gt(first, 0.9f, "initial loss %g should be near ln 3", first);
    cr_assert_lt(last, threshold, "optimizer %d: loss %g after %d steps (from %g)", (int)opt, last,
                 steps, first);
    cr_log_info("optimizer %d: loss %g -> %g after %d steps", (int)opt, first, last, steps);
    snap[run] = snapshot(&n, s, &size[run]);
    rill_scope_destroy(s);
  }
  cr_assert_eq(size[0], size[1]);
  cr_assert(memcmp(snap[0], snap[1], size[0]) == 0, "two runs with the same seeds differ");
  free(snap[0]);
  free(snap[1]);
  net_free(&n);
}

Test(train, softmax_regression_sgd) { regression_case(TU_SGD, 1.0f, 150, 0.35f); }
Test(train, softmax_regression_momentum) { regression_case(TU_MOMENTUM, 0.2f, 100, 0.3f); }
Test(train, softmax_regression_adam) { regression_case(TU_ADAM, 0.1f, 100, 0.3f); }

/* Training writes its parameters (the optimizer ops): no weight of a training program
 * is marked immutable, so no product runs on a packed copy that would go stale. */
Test(train, parameters_are_never_packed_as_constants) {
  make_regression_data();
  net n;
  build_regression(&n, TU_SGD, 1.0f);
  rill_scope *s = NULL;
  POK(rill_scope_create(NULL, &s));
  rill_sgemm_packed_stats before = rill_sgemm_packed_counters();
  float first, last;
  train(&n, s, 20, &first, &last);
  rill_sgemm_packed_stats after = rill_sgemm_packed_counters();
  cr_assert_lt(last, first, "the loss falls: the products see the updated weights");
  cr_assert_eq(after.packs_made, before.packs_made, "a training run packed a parameter");
  cr_assert_eq(after.packed_calls, before.packed_calls);
  rill_variable *w = rill_scope_find(s, "fc_0.w_0");
  cr_assert(w && w->kind == RILL_VARKIND_TENSOR);
  cr_assert_not(rill_buffer_immutable(w->u.tensor.buf));
  cr_assert_null(rill_buffer_derived_get(w->u.tensor.buf));
  rill_scope_destroy(s);
  net_free(&n);
}

/* ---- a small CNN on synthetic 8x8 images: class = orientation of a bar ---- */

#define CB 24
static float imgs[CB * 64];
static int64_t img_labels[CB];

static void make_images(void) {
  double noise[CB * 64];
  fill_det(noise, CB * 64, 201, 0.15);
  for (int n = 0; n < CB; n++) {
    int c = n % 3, pos = 1 + (n * 5) % 6;
    for (int i = 0; i < 8; i++)
      for (int j = 0; j < 8; j++) {
        bool on = c == 0 ? i == pos : c == 1 ? j == pos : i == j;
        imgs[n * 64 + i * 8 + j] = (float)((on ? 1.0 : 0.0) + noise[n * 64 + i * 8 + j]);
      }
    img_labels[n] = c;
  }
}

static void build_cnn(net *n, tu_opt opt, float lr) {
  memset(n, 0, sizeof *n);
  n->main = prog_new();
  n->startup = prog_new();
  rill_program *m = n->main;
  int64_t xd[4] = {CB, 1, 8, 8}, yd[2] = {CB, 1}, cw[4] = {4, 1, 3, 3}, cb[1] = {4};
  int64_t cd[4] = {CB, 4, 8, 8}, pd[4] = {CB, 4, 4, 4}, fw[2] = {64, 3}, fb[1] = {3};
  int64_t zd[2] = {CB, 3}, ced[2] = {CB, 1}, ld[1] = {1};
  add_tmp(m, "img", F, 4, xd);
  add_tmp(m, "label", RILL_DTYPE_INT64, 2, yd);
  POK(rill_var_set_flags(m, 0, "img", false, false, true));
  POK(rill_var_set_flags(m, 0, "label", false, false, true));
  POK(tu_param(m, n->startup, "conv2d_0.w_0", F, cw, 4, 0.5f, 11));
  POK(tu_param(m, n->startup, "conv2d_0.b_0", F, cb, 1, 0, 0));
  POK(tu_param(m, n->startup, "fc_0.w_0", F, fw, 2, 0.2f, 12));
  POK(tu_param(m, n->startup, "fc_0.b_0", F, fb, 1, 0, 0));
  add_tmp(m, "c", F, 4, cd);
  add_tmp(m, "cb", F, 4, cd);
  add_tmp(m, "r", F, 4, cd);
  add_tmp(m, "p", F, 4, pd);
  add_tmp(m, "f", F, 2, zd);
  add_tmp(m, "logits", F, 2, zd);
  add_tmp(m, "sm", F, 2, zd);
  add_tmp(m, "ce", F, 2, ced);
  add_tmp(m, "loss", F, 1, ld);
  int32_t one2[2] = {1, 1}, two2[2] = {2, 2}, zero2[2] = {0, 0};
  rill_op_builder *b = prog_op_begin("conv2d", "Input=img;Filter=conv2d_0.w_0", "Output=c");
  POK(rill_op_builder_attr_ints(b, "strides", one2, 2));
  POK(rill_op_builder_attr_ints(b, "paddings", one2, 2));
  prog_op_end(b, m);
  bias_add(m, "c", "conv2d_0.b_0", "cb");
  prog_op(m, "relu", "X=cb", "Out=r");
  b = prog_op_begin("pool2d", "X=r", "Out=p");
  POK(rill_op_builder_attr_string(b, "pooling_type", "max"));
  POK(rill_op_builder_attr_ints(b, "ksize", two2, 2));
  POK(rill_op_builder_attr_ints(b, "strides", two2, 2));
  POK(rill_op_builder_attr_ints(b, "paddings", zero2, 2));
  prog_op_end(b, m);
  prog_op(m, "mul", "X=p;Y=fc_0.w_0", "Out=f");
  bias_add(m, "f", "fc_0.b_0", "logits");
  prog_op(m, "softmax_with_cross_entropy", "Logits=logits;Label=label", "Softmax=sm;Loss=ce");
  prog_op(m, "mean", "X=ce", "Out=loss");
  POK(rill_program_append_backward(m, "loss", NULL, 0, &n->pg));
  cr_assert_eq(rill_param_grads_count(n->pg), 4);
  POK(tu_append_optimizer(m, n->startup, n->pg, opt, lr));
  POK(rill_program_validate(m));
  n->feeds[0] = "img";
  n->feeds[1] = "label";
  n->feed_t[0] = wrap(F, imgs, 4, (int64_t)CB, (int64_t)1, (int64_t)8, (int64_t)8);
  n->feed_t[1] = wrap(RILL_DTYPE_INT64, img_labels, 2, (int64_t)CB, (int64_t)1);
}

static void cnn_case(tu_opt opt, float lr, int steps, float threshold) {
  make_images();
  net n;
  build_cnn(&n, opt, lr);
  unsigned char *snap[2];
  size_t size[2];
  for (int run = 0; run < 2; run++) {
    rill_scope *s = NULL;
    POK(rill_scope_create(NULL, &s));
    float first, last;
    train(&n, s, steps, &first, &last);
    cr_assert_lt(last, threshold, "optimizer %d: loss %g after %d steps (from %g)", (int)opt, last,
                 steps, first);
    cr_assert_lt(last, first / 3);
    cr_log_info("optimizer %d: loss %g -> %g after %d steps", (int)opt, first, last, steps);
    snap[run] = snapshot(&n, s, &size[run]);
    rill_scope_destroy(s);
  }
  cr_assert(size[0] == size[1] && memcmp(snap[0], snap[1], size[0]) == 0,
            "two runs with the same seeds differ");
  free(snap[0]);
  free(snap[1]);
  net_free(&n);
}

Test(train, small_cnn_sgd) { cnn_case(TU_SGD, 0.3f, 80, 0.2f); }
Test(train, small_cnn_momentum) { cnn_case(TU_MOMENTUM, 0.05f, 60, 0.2f); }
Test(train, small_cnn_adam) { cnn_case(TU_ADAM, 0.02f, 60, 0.2f); }

/* ---- a sparse embedding: lookup_table(is_sparse) gives a SELECTED_ROWS gradient ---- */

#define NV 10 /* vocabulary */
#define NE 4  /* embedding width */
#define NB 20 /* batch */

static int64_t ids[NB], id_labels[NB];

static void sparse_case(tu_opt opt, float lr, int steps) {
  for (int i = 0; i < NB; i++) {
    ids[i] = (i * 7) % (NV - 2); /* rows NV-2, NV-1 are never looked up */
    id_labels[i] = ids[i] % 2;
  }
  net n;
  memset(&n, 0, sizeof n);
  n.main = prog_new();
  n.startup = prog_new();
  rill_program *m = n.main;
  int64_t idd[2] = {NB, 1}, wd[2] = {NV, NE}, ed[2] = {NB, NE}, fw[2] = {NE, 2}, fb[1] = {2};
  int64_t zd[2] = {NB, 2}, ced[2] = {NB, 1}, ld[1] = {1};
  add_tmp(m, "ids", RILL_DTYPE_INT64, 2, idd);
  add_tmp(m, "label", RILL_DTYPE_INT64, 2, idd);
  POK(rill_var_set_flags(m, 0, "ids", false, false, true));
  POK(rill_var_set_flags(m, 0, "label", false, false, true));
  POK(tu_param(m, n.startup, "emb", F, wd, 2, 0.5f, 21));
  POK(tu_param(m, n.startup, "fc_w", F, fw, 2, 0.5f, 22));
  POK(tu_param(m, n.startup, "fc_b", F, fb, 1, 0, 0));
  add_tmp(m, "e", F, 2, ed);
  add_tmp(m, "f", F, 2, zd);
  add_tmp(m, "logits", F, 2, zd);
  add_tmp(m, "sm", F, 2, zd);
  add_tmp(m, "ce", F, 2, ced);
  add_tmp(m, "loss", F, 1, ld);
  rill_op_builder *b = prog_op_begin("lookup_table", "W=emb;Ids=ids", "Out=e");
  POK(rill_op_builder_attr_bool(b, "is_sparse", true));
  prog_op_end(b, m);
  prog_op(m, "mul", "X=e;Y=fc_w", "Out=f");
  bias_add(m, "f", "fc_b", "logits");
  prog_op(m, "softmax_with_cross_entropy", "Logits=logits;Label=label", "Softmax=sm;Loss=ce");
  prog_op(m, "mean", "X=ce", "Out=loss");
  POK(rill_program_append_backward(m, "loss", NULL, 0, &n.pg));
  cr_assert_eq(rill_param_grads_count(n.pg), 3);
  const rill_var_desc *g = rill_block_find_var(m, 0, "emb@GRAD");
  cr_assert_not_null(g);
  cr_assert_eq(g->type, RILL_VAR_SELECTED_ROWS, "a sparse lookup's gradient is SELECTED_ROWS");
  POK(tu_append_optimizer(m, n.startup, n.pg, opt, lr));
  POK(rill_program_validate(m));
  n.feeds[0] = "ids";
  n.feeds[1] = "label";
  n.feed_t[0] = wrap(RILL_DTYPE_INT64, ids, 2, (int64_t)NB, (int64_t)1);
  n.feed_t[1] = wrap(RILL_DTYPE_INT64, id_labels, 2, (int64_t)NB, (int64_t)1);
  rill_scope *s = NULL;
  POK(rill_scope_create(NULL, &s));
  rill_executor *e = exe_new();
  POK(rill_executor_run(e, n.startup, s, NULL, NULL, 0, NULL, 0, NULL));
  rill_tensor *w0 = NULL;
  POK(rill_scope_get_tensor(s, "emb", &w0));
  float before[NV * NE];
  memcpy(before, rill_tensor_data(w0), sizeof before);
  rill_tensor_destroy(w0);
  float first = 0, last = 0;
  const char *fetch[1] = {"loss"};
  for (int i = 0; i < steps; i++) {
    rill_tensor *out = NULL;
    POK(rill_executor_run(e, m, s, n.feeds, n.feed_t, 2, fetch, 1, &out));
    last = *(float *)rill_tensor_data(out);
    if (i == 0) first = last;
    rill_tensor_destroy(out);
  }
  cr_log_info("sparse, optimizer %d: loss %g -> %g", (int)opt, first, last);
  cr_assert_lt(last, 0.2f, "loss %g (from %g)", last, first);
  POK(rill_scope_get_tensor(s, "emb", &w0));
  const float *after = rill_tensor_data(w0);
  for (int r = NV - 2; r < NV; r++)
    for (int j = 0; j < NE; j++)
      cr_assert_eq(after[r * NE + j], before[r * NE + j], "row %d was never looked up", r);
  cr_assert_neq(after[0], before[0]);
  rill_tensor_destroy(w0);
  rill_executor_destroy(e);
  rill_scope_destroy(s);
  net_free(&n);
}

Test(train, sparse_embedding_sgd) { sparse_case(TU_SGD, 1.0f, 60); }
Test(train, sparse_embedding_adam) { sparse_case(TU_ADAM, 0.1f, 60); }
