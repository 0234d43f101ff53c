/* The gradient checker itself: it must catch a wrong gradient (naming the worst
 * element), a gradient written although not wanted, and a gradient op overwriting a
 * forward variable. The faulty ops are elementwise_mul with bad gradient makers. */
#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "op_test.h"
#include "support/grad_check.h"

extern const rill_op_schema rill_schema_elementwise_mul;

static bool always(void *impl, const char *var) {
  (void)impl;
  (void)var;
  return true;
}

/* Emits elementwise_add_grad: X@GRAD = dOut instead of dOut * Y. */
static rill_status *wrong_maker(rill_grad_ctx *ctx) {
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "elementwise_add_grad", &op));
  RILL_TRY(rill_grad_forward(ctx, op, "X"));
  RILL_TRY(rill_grad_forward(ctx, op, "Y"));
  RILL_TRY(rill_grad_of_output(ctx, op, "Out"));
  RILL_TRY(rill_grad_of_input(ctx, op, "X"));
  return rill_grad_of_input(ctx, op, "Y");
}

/* Names Y's gradient whether or not it is wanted. */
static rill_status *leaky_maker(rill_grad_ctx *ctx) {
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "elementwise_mul_grad", &op));
  RILL_TRY(rill_grad_forward(ctx, op, "X"));
  RILL_TRY(rill_grad_forward(ctx, op, "Y"));
  RILL_TRY(rill_grad_of_output(ctx, op, "Out"));
  RILL_TRY(rill_grad_of_input(ctx, op, "X"));
  rill_grad_ctx all = *ctx;
  all.wants_grad = always;
  return rill_grad_of_input(&all, op, "Y");
}

/* Writes X's gradient into the forward variable Y. */
static rill_status *clobber_maker(rill_grad_ctx *ctx) {
  RILL_TRY(rill_grad_default(ctx));
  rill_op_desc *op = &ctx->ops[ctx->nops - 1];
  for (size_t i = 0; i < op->noutputs; i++)
    if (!strcmp(op->outputs[i].param, "X@GRAD")) {
      char *name = rill_strdup(rill_op_input(ctx->fwd, "Y")->args[0]);
      if (!name) return rill_oom();
      rill_free(op->outputs[i].args[0]);
      op->outputs[i].args[0] = name;
    }
  return NULL;
}

static rill_op_schema faulty[3];

static void register_faulty(void) {
  static const char *names[3] = {"gc_wrong_mul", "gc_leaky_mul", "gc_clobber_mul"};
  static const rill_grad_fn makers[3] = {wrong_maker, leaky_maker, clobber_maker};
  if (rill_schema_find("gc_wrong_mul")) return;
  for (int i = 0; i < 3; i++) {
    faulty[i] = rill_schema_elementwise_mul;
    faulty[i].type = names[i];
    faulty[i].grad = makers[i];
    OK(rill_registry_add_op(&faulty[i]));
    rill_kernel_def k = {names[i], RILL_DEVICE_CPU, RILL_DTYPE_FP64, rill_cpu_elementwise_mul_fp64, NULL};
    OK(rill_registry_add_kernel(&k));
  }
}

static op_harness *faulty_harness(const char *type) {
  register_faulty();
  double x[6] = {1, 2, 3, 4, 5, 6}, y[3] = {0.5, -1, 2};
  op_harness *h = harness(type);
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), x);
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, DIMS(3), y);
  OK(op_harness_output(h, "Out", "out"));
  return h;
}

Test(grad_check, reports_the_worst_element_of_a_wrong_gradient) {
  op_harness *h = faulty_harness("gc_wrong_mul");
  /* X@GRAD = dOut instead of dOut * Y: the worst error is where |1 - y| is largest, y = -1
   * or y = 2 in column 1 or 2 */
  EXPECT_ERROR(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL), "grad_check(gc_wrong_mul)",
               "input X (x)", "analytic", "numeric", "element");
  op_harness_destroy(h);
}

Test(grad_check, catches_an_unwanted_gradient_being_written) {
  op_harness *h = faulty_harness("gc_leaky_mul");
  OK(grad_check(h, GC_SLOTS("X", "Y"), GC_SLOTS("Out"), &(grad_check_opts){.no_subsets = true}));
  EXPECT_ERROR(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL), "gc_leaky_mul",
               "input Y (y)", "not wanted", "y@GRAD");
  op_harness_destroy(h);
}

Test(grad_check, catches_a_gradient_op_writing_a_forward_variable) {
  op_harness *h = faulty_harness("gc_clobber_mul");
  EXPECT_ERROR(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL), "gc_clobber_mul",
               "writes forward variable y");
  op_harness_destroy(h);
}

Test(grad_check, rejects_float32_inputs) {
  float x[2] = {1, 2};
  op_harness *h = harness("square");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2), x);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL), "square", "X (x)", "float64");
  op_harness_destroy(h);
}
