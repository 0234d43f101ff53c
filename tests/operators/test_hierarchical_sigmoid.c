/* hierarchical_sigmoid against a reference walk of each row's path (default and custom
 * trees, with and without Bias), its gradients against finite differences, the sparse
 * weight gradient against the dense one, and its errors. */
#include "nn_test.h"

#include "support/grad_check.h"

enum { N = 4, D = 3, L = 3 };
static const int64_t LAB[N] = {0, 5, 3, 2};
/* custom paths over 5 nodes; -1 ends the shorter ones */
static const int64_t TABLE[N * L] = {0, 1, 3, 0, 2, -1, 4, -1, -1, 0, 1, 2};
static const int64_t CODE[N * L] = {1, 0, 1, 0, 1, 0, 1, 1, 1, 0, 0, 1};

typedef struct hs_cfg {
  int classes;
  bool custom, bias;
} hs_cfg;

static op_harness *hs_harness(hs_cfg cfg, const double *x, const double *w, const double *b) {
  int64_t nodes = cfg.custom ? 5 : cfg.classes - 1;
  op_harness *h = harness("hierarchical_sigmoid");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(N, D), x);
  bind_input(h, "W", "w", RILL_DTYPE_FP64, (int64_t[]){nodes, D}, 2, w);
  bind_input(h, "Label", "lab", RILL_DTYPE_INT64, DIMS(N, 1), LAB);
  if (cfg.custom) {
    bind_input(h, "PathTable", "ptable", RILL_DTYPE_INT64, DIMS(N, L), TABLE);
    bind_input(h, "PathCode", "pcode", RILL_DTYPE_INT64, DIMS(N, L), CODE);
  }
  if (cfg.bias) bind_input(h, "Bias", "b", RILL_DTYPE_FP64, (int64_t[]){nodes, 1}, 2, b);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "PreOut", "pre"));
  OK(op_harness_attr_int(h, "num_classes", cfg.classes));
  return h;
}

/* The path of row i: its nodes and branches; returns its length. */
static int path(hs_cfg cfg, int i, int64_t *node, int *bit) {
  if (cfg.custom) {
    int k = 0;
    for (; k < L && TABLE[i * L + k] >= 0; k++) {
      node[k] = TABLE[i * L + k];
      bit[k] = (int)CODE[i * L + k];
    }
    return k;
  }
  int64_t c = LAB[i] + cfg.classes;
  int len = 0;
  while ((c >> (len + 1)) > 0) len++;
  for (int k = 0; k < len; k++) {
    node[k] = (c >> (k + 1)) - 1;
    bit[k] = (int)((c >> k) & 1);
  }
  return len;
}

static void check_forward(hs_cfg cfg, int width) {
  double x[N * D], w[6 * D], b[6], out[N], pre[N * L];
  fill_rand(x, N * D, 31);
  fill_rand(w, 6 * D, 32);
  fill_rand(b, 6, 33);
  for (int i = 0; i < N; i++) {
    int64_t node[L];
    int bit[L];
    int len = path(cfg, i, node, bit);
    out[i] = 0;
    for (int j = 0; j < width; j++) {
      double z = 0;
      if (j < len) {
        z = cfg.bias ? b[node[j]] : 0;
        for (int q = 0; q < D; q++) z += w[node[j] * D + q] * x[i * D + q];
        if (bit[j]) out[i] -= z;
      }
      pre[i * width + j] = log(1 + exp(z)); /* log 2 past the path, as Paddle */
      out[i] += pre[i * width + j];
    }
  }
  op_harness *h = hs_harness(cfg, x, w, b);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(N, 1));
  expect_dims(op_harness_tensor(h, "pre"), (int64_t[]){N, width}, 2);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), out, N, 1e-12);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "pre")), pre, N * width, 1e-12);
  op_harness_destroy(h);
}

Test(hierarchical_sigmoid, matches_reference) {
  check_forward((hs_cfg){6, false, true}, 3); /* num_classes - 1 = 0b101: 3 bits */
  check_forward((hs_cfg){7, false, false}, 3);
  check_forward((hs_cfg){5, true, true}, L);
  check_forward((hs_cfg){5, true, false}, L);
}

Test(hierarchical_sigmoid, gradients_match_finite_differences) {
  double x[N * D], w[5 * D], b[5];
  fill_rand(x, N * D, 41);
  fill_rand(w, 5 * D, 42);
  fill_rand(b, 5, 43);
  hs_cfg cfgs[] = {{6, false, true}, {5, true, true}, {5, true, false}};
  for (size_t c = 0; c < RILL_COUNTOF(cfgs); c++) {
    op_harness *h = hs_harness(cfgs[c], x, w, b);
    grad_check_opts o = {.rtol = 1e-6, .atol = 1e-6};
    if (cfgs[c].bias)
      OK(grad_check(h, GC_SLOTS("X", "W", "Bias"), GC_SLOTS("Out"), &o));
    else
      OK(grad_check(h, GC_SLOTS("X", "W"), GC_SLOTS("Out"), &o));
    op_harness_destroy(h);
  }
}

/* is_sparse: W@GRAD holds PathTable's distinct nodes, ascending, each row the dense
 * gradient's row of that node. */
Test(hierarchical_sigmoid, sparse_weight_gradient_is_selected_rows) {
  double x[N * D], w[5 * D], b[5], dout[N] = {1, -0.5, 2, 0.25};
  fill_rand(x, N * D, 51);
  fill_rand(w, 5 * D, 52);
  fill_rand(b, 5, 53);
  op_harness *f = hs_harness((hs_cfg){5, true, true}, x, w, b);
  OK(op_harness_run(f));
  const rill_tensor *pre = op_harness_tensor(f, "pre");
  double dense[5 * D];
  for (int sparse = 0; sparse < 2; sparse++) {
    op_harness *h = harness("hierarchical_sigmoid_grad");
    bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(N, D), x);
    bind_input(h, "W", "w", RILL_DTYPE_FP64, DIMS(5, D), w);
    bind_input(h, "Label", "lab", RILL_DTYPE_INT64, DIMS(N, 1), LAB);
    bind_input(h, "PathTable", "ptable", RILL_DTYPE_INT64, DIMS(N, L), TABLE);
    bind_input(h, "PathCode", "pcode", RILL_DTYPE_INT64, DIMS(N, L), CODE);
    bind_input(h, "Bias", "b", RILL_DTYPE_FP64, DIMS(5, 1), b);
    OK(op_harness_input(h, "PreOut", "pre", pre));
    bind_input(h, "Out@GRAD", "out@GRAD", RILL_DTYPE_FP64, DIMS(N, 1), dout);
    OK(op_harness_output(h, "W@GRAD", "w@GRAD"));
    OK(op_harness_attr_int(h, "num_classes", 5));
    OK(op_harness_attr_bool(h, "is_sparse", sparse));
    OK(op_harness_run(h));
    rill_variable *v = rill_scope_find(op_harness_scope(h), "w@GRAD");
    if (!sparse) {
      memcpy(dense, rill_tensor_ptr(op_harness_tensor(h, "w@GRAD")), sizeof dense);
    } else {
      cr_assert_eq(v->kind, RILL_VARKIND_SELECTED_ROWS, "kind %s", rill_var_kind_name(v->kind));
      const rill_selected_rows *sr = &v->u.rows;
      cr_assert_eq(sr->nrows, 5);
      cr_assert_eq(sr->height, 5);
      for (int r = 0; r < 5; r++) cr_assert_eq(sr->rows[r], r);
      expect_close_f64(rill_tensor_ptr(&sr->value), dense, 5 * D, 1e-15);
    }
    op_harness_destroy(h);
  }
  op_harness_destroy(f);
}

Test(hierarchical_sigmoid, bad_input_fails_naming_op_and_variable) {
  double x[N * D] = {0}, w[5 * D] = {0};
  op_harness *h = harness("hierarchical_sigmoid");
  bind_input(h, "X", "feat", RILL_DTYPE_FP64, DIMS(N, D), x);
  bind_input(h, "W", "tree_w", RILL_DTYPE_FP64, DIMS(3, D), w);
  bind_input(h, "Label", "lab", RILL_DTYPE_INT64, DIMS(N, 1), LAB);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "PreOut", "pre"));
  OK(op_harness_attr_int(h, "num_classes", 6));
  EXPECT_ERROR(op_harness_infer(h), "hierarchical_sigmoid", "W (tree_w)", "needs 5");
  op_harness_destroy(h);

  h = harness("hierarchical_sigmoid");
  bind_input(h, "X", "feat", RILL_DTYPE_FP64, DIMS(N, D), x);
  bind_input(h, "W", "tree_w", RILL_DTYPE_FP64, DIMS(5, D), w);
  bind_input(h, "Label", "lab", RILL_DTYPE_INT64, DIMS(N, 1), LAB);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "PreOut", "pre"));
  OK(op_harness_attr_int(h, "num_classes", 5)); /* label 5 is out of range */
  EXPECT_ERROR(op_harness_run(h), "hierarchical_sigmoid", "Label (lab)", "class 5 in row 1");
  op_harness_destroy(h);

  static const int64_t far[N * L] = {0, 7, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1};
  h = harness("hierarchical_sigmoid");
  bind_input(h, "X", "feat", RILL_DTYPE_FP64, DIMS(N, D), x);
  bind_input(h, "W", "tree_w", RILL_DTYPE_FP64, DIMS(5, D), w);
  bind_input(h, "Label", "lab", RILL_DTYPE_INT64, DIMS(N, 1), LAB);
  bind_input(h, "PathTable", "ptable", RILL_DTYPE_INT64, DIMS(N, L), far);
  bind_input(h, "PathCode", "pcode", RILL_DTYPE_INT64, DIMS(N, L), CODE);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "PreOut", "pre"));
  EXPECT_ERROR(op_harness_run(h), "hierarchical_sigmoid", "PathTable (ptable)", "node 7");
  op_harness_destroy(h);

  h = harness("hierarchical_sigmoid");
  bind_input(h, "X", "feat", RILL_DTYPE_FP64, DIMS(N, D), x);
  bind_input(h, "W", "tree_w", RILL_DTYPE_FP64, DIMS(5, D), w);
  bind_input(h, "Label", "lab", RILL_DTYPE_INT64, DIMS(N, 1), LAB);
  bind_input(h, "PathTable", "ptable", RILL_DTYPE_INT64, DIMS(N, L), TABLE);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "PreOut", "pre"));
  EXPECT_ERROR(op_harness_infer(h), "hierarchical_sigmoid", "PathCode");
  op_harness_destroy(h);
}
