/* CUDA kernels of elementwise_add / _sub / _mul / _div / _max / _min / _pow, float32, and
 * of the comparisons, with Paddle's broadcasting (operators/elementwise.h): each operand
 * gets an element stride per output dim, 0 where it broadcasts. */
#include "kernels/cuda/cuda.h"
#include "operators/elementwise.h"

/* The plan of X (dims xd) and Y (dims yd) broadcast together (`axis`); *o gets the
 * output's dims. */
static rill_status *bcast_plan(rill_kernel_ctx *ctx, const rill_dims *xd, const char *xname,
                               const rill_dims *yd, const char *yname, int axis, rill_dims *o,
                               rill_cuda_bcast *b) {
  rill_dims xa, ya;
  char why[160], a[RILL_DIMS_STR_MAX], c[RILL_DIMS_STR_MAX];
  if (!rill_elementwise_broadcast(xd, yd, axis, &xa, &ya, o, why, sizeof why))
    return rill_kernel_error(ctx, "input X (%s) of shape %s does not broadcast with input Y (%s) of shape %s: %s",
                             xname, rill_dims_str(xd, a, sizeof a), yname, rill_dims_str(yd, c, sizeof c), why);
  b->n = o->n ? o->n : 1;
  b->numel = 1;
  int64_t sx = 1, sy = 1;
  for (int i = b->n - 1; i >= 0; i--) {
    int64_t ext = o->n ? o->d[i] : 1, ex = o->n ? xa.d[i] : 1, ey = o->n ? ya.d[i] : 1;
    b->dims[i] = ext;
    b->xs[i] = ex == 1 && ext != 1 ? 0 : sx;
    b->ys[i] = ey == 1 && ext != 1 ? 0 : sy;
    sx *= ex;
    sy *= ey;
    b->numel *= ext;
  }
  return NULL;
}

static rill_status *binary(rill_kernel_ctx *ctx, int op) {
  rill_tensor *x = NULL, *y = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, 0, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &out));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  rill_cuda_bcast b;
  rill_dims o;
  RILL_TRY(bcast_plan(ctx, &x->dims, rill_kin_name(ctx, 0, 0), &y->dims, rill_kin_name(ctx, 1, 0),
                      (int)ctx->attrs[RILL_ELEMENTWISE_ADD_ATTR_AXIS].v.i, &o, &b));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &o));
  return rill_cuda_kernel_check(
      ctx, rill_cuda_binary_f32(op, rill_tensor_ptr(x), rill_tensor_ptr(y), rill_tensor_ptr(out), &b, d->stream),
      "elementwise launch");
}

rill_status *rill_cuda_elementwise_add_fp32(rill_kernel_ctx *ctx) { return binary(ctx, RILL_CUDA_ADD); }
rill_status *rill_cuda_elementwise_sub_fp32(rill_kernel_ctx *ctx) { return binary(ctx, RILL_CUDA_SUB); }
/* A selected-rows X (a sparse gradient scaled by gradient clipping) times a one-element
 * Y, as the CPU kernel takes it: Out is selected rows with X's rows and height, its
 * values X's times Y (in place when Out is X's variable). */
static rill_status *mul_rows(rill_kernel_ctx *ctx, const rill_selected_rows *xr) {
  rill_tensor *y = NULL;
  RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_FP32, &y));
  if (rill_tensor_numel(y) != 1)
    return rill_kernel_error(ctx, "input X (%s) is selected rows, so input Y (%s) must hold one element, not %lld",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0), (long long)rill_tensor_numel(y));
  if (!rill_tensor_is_set(&xr->value) || xr->value.dtype != RILL_DTYPE_FP32)
    return rill_kernel_error(ctx, "input X (%s) holds selected rows without float32 values", rill_kin_name(ctx, 0, 0));
  rill_variable *ov = ctx->nout[0] ? ctx->out[0][0] : NULL;
  rill_selected_rows *o = ov ? rill_variable_selected_rows(ov) : NULL;
  if (!o) return rill_kernel_error(ctx, "output Out (%s) cannot hold selected rows", rill_kout_name(ctx, 0, 0));
  if (o != xr) {
    RILL_TRY(rill_selected_rows_set_rows(o, xr->rows, xr->nrows));
    o->height = xr->height;
    RILL_TRY(rill_cuda_kernel_status(ctx, rill_tensor_alloc_on(&o->value, RILL_DTYPE_FP32, &xr->value.dims,
                                                               rill_tensor_place(&xr->value), &rill_cuda_backend.memory)));
  }
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, &o->value, &d));
  rill_cuda_bcast b;
  rill_dims od;
  RILL_TRY(bcast_plan(ctx, &xr->value.dims, rill_kin_name(ctx, 0, 0), &y->dims, rill_kin_name(ctx, 1, 0), -1, &od, &b));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_binary_f32(RILL_CUDA_MUL, rill_tensor_ptr(&xr->value), rill_tensor_ptr(y),
                                                     rill_tensor_ptr(&o->value), &b, d->stream),
                                "elementwise launch");
}

rill_status *rill_cuda_elementwise_mul_fp32(rill_kernel_ctx *ctx) {
  rill_variable *xv = ctx->nin[0] ? ctx->in[0][0] : NULL;
  if (xv && xv->kind == RILL_VARKIND_SELECTED_ROWS) return mul_rows(ctx, &xv->u.rows);
  return binary(ctx, RILL_CUDA_MUL);
}
rill_status *rill_cuda_elementwise_div_fp32(rill_kernel_ctx *ctx) { return binary(ctx, RILL_CUDA_DIV); }
rill_status *rill_cuda_elementwise_max_fp32(rill_kernel_ctx *ctx) { return binary(ctx, RILL_CUDA_MAX); }
rill_status *rill_cuda_elementwise_pow_fp32(rill_kernel_ctx *ctx) { return binary(ctx, RILL_CUDA_POW); }
rill_status *rill_cuda_elementwise_min_fp32(rill_kernel_ctx *ctx) { return binary(ctx, RILL_CUDA_MIN); }

/* The comparisons (less_than ... not_equal), float32/64, int32/64 and (equal) bool, with
 * the same broadcasting: a bool output. */
_Static_assert(RILL_SAME_POS(RILL_LESS_THAN_ATTR_AXIS, RILL_EQUAL_ATTR_AXIS) &&
                   RILL_SAME_POS(RILL_NOT_EQUAL_ATTR_AXIS, RILL_EQUAL_ATTR_AXIS) &&
                   RILL_SAME_POS(RILL_GREATER_EQUAL_ATTR_AXIS, RILL_EQUAL_ATTR_AXIS),
               "the comparisons read their axis at the same position");
static rill_status *compare(rill_kernel_ctx *ctx, int op) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *y = rill_kin(ctx, 1, 0), *out = NULL;
  if (!x || !y || !rill_tensor_is_set(x) || !rill_tensor_is_set(y) || x->dtype != y->dtype)
    return rill_kernel_error(ctx, "inputs X (%s) and Y (%s) must be tensors of one dtype with data",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_BOOL, &out));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  rill_cuda_bcast b;
  rill_dims o;
  RILL_TRY(bcast_plan(ctx, &x->dims, rill_kin_name(ctx, 0, 0), &y->dims, rill_kin_name(ctx, 1, 0),
                      (int)ctx->attrs[RILL_EQUAL_ATTR_AXIS].v.i, &o, &b));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &o));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_compare(op, (int)x->dtype, rill_tensor_ptr(x), rill_tensor_ptr(y),
                                                  rill_tensor_ptr(out), &b, d->stream),
                                "comparison launch");
}

rill_status *rill_cuda_less_than_kernel(rill_kernel_ctx *ctx) { return compare(ctx, RILL_CUDA_LT); }
rill_status *rill_cuda_less_equal_kernel(rill_kernel_ctx *ctx) { return compare(ctx, RILL_CUDA_LE); }
rill_status *rill_cuda_greater_than_kernel(rill_kernel_ctx *ctx) { return compare(ctx, RILL_CUDA_GT); }
rill_status *rill_cuda_greater_equal_kernel(rill_kernel_ctx *ctx) { return compare(ctx, RILL_CUDA_GE); }
rill_status *rill_cuda_equal_kernel(rill_kernel_ctx *ctx) { return compare(ctx, RILL_CUDA_EQ); }
rill_status *rill_cuda_not_equal_kernel(rill_kernel_ctx *ctx) { return compare(ctx, RILL_CUDA_NE); }

/* The logical ops over bool tensors, X and Y of one shape (logical_not: X alone), as the
 * CPU kernels take them: the same map. */
_Static_assert(RILL_SAME_POS(RILL_LOGICAL_AND_IN_X, RILL_LOGICAL_NOT_IN_X) &&
                   RILL_SAME_POS(RILL_LOGICAL_AND_OUT_OUT, RILL_LOGICAL_NOT_OUT_OUT),
               "the logical ops share X and Out positions");
static rill_status *logical(rill_kernel_ctx *ctx, int op) {
  rill_tensor *x = NULL, *y = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_LOGICAL_AND_IN_X, 0, RILL_DTYPE_BOOL, &x));
  if (op != RILL_CUDA_NOT) {
    RILL_TRY(rill_kin_need(ctx, RILL_LOGICAL_AND_IN_Y, 0, RILL_DTYPE_BOOL, &y));
    RILL_TRY(rill_kin_check_dims(ctx, RILL_LOGICAL_AND_IN_Y, y, &x->dims));
  }
  RILL_TRY(rill_kout_need(ctx, RILL_LOGICAL_AND_OUT_OUT, 0, RILL_DTYPE_BOOL, &out));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LOGICAL_AND_OUT_OUT, 0, out, &x->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  rill_cuda_bcast b = {.n = 1, .dims = {rill_tensor_numel(x)}, .xs = {1}, .ys = {1}, .numel = rill_tensor_numel(x)};
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_compare(op, RILL_DTYPE_BOOL, rill_tensor_ptr(x),
                                                  rill_tensor_ptr(y ? y : x), rill_tensor_ptr(out), &b, d->stream),
                                "logical launch");
}

rill_status *rill_cuda_logical_and_kernel(rill_kernel_ctx *ctx) { return logical(ctx, RILL_CUDA_AND); }
rill_status *rill_cuda_logical_or_kernel(rill_kernel_ctx *ctx) { return logical(ctx, RILL_CUDA_OR); }
rill_status *rill_cuda_logical_xor_kernel(rill_kernel_ctx *ctx) { return logical(ctx, RILL_CUDA_NE); }
rill_status *rill_cuda_logical_not_kernel(rill_kernel_ctx *ctx) { return logical(ctx, RILL_CUDA_NOT); }

/* The gradients of add, sub, mul, div, max, min and pow, float32: X@GRAD and Y@GRAD (either
 * may be absent) from Out@GRAD, summed over the dims an operand was broadcast along. add
 * and sub do not read X (it may be absent; Out@GRAD's shape stands for it); div may lack
 * it too (Paddle 1.x's div gradient has Y, Out and Out@GRAD), Out then standing for it
 * in Y@GRAD (-g * out / y), as on the CPU; mul, max and min read both. */
#define SAME_GRAD_SLOTS(OP)                                                                              \
  (RILL_SAME_POS(RILL_ELEMENTWISE_##OP##_GRAD_IN_X, RILL_ELEMENTWISE_ADD_GRAD_IN_X) &&                    \
   RILL_SAME_POS(RILL_ELEMENTWISE_##OP##_GRAD_IN_Y, RILL_ELEMENTWISE_ADD_GRAD_IN_Y) &&                    \
   RILL_SAME_POS(RILL_ELEMENTWISE_##OP##_GRAD_IN_OUT, RILL_ELEMENTWISE_ADD_GRAD_IN_OUT) &&                \
   RILL_SAME_POS(RILL_ELEMENTWISE_##OP##_GRAD_IN_OUT_GRAD, RILL_ELEMENTWISE_ADD_GRAD_IN_OUT_GRAD) &&      \
   RILL_SAME_POS(RILL_ELEMENTWISE_##OP##_GRAD_OUT_X_GRAD, RILL_ELEMENTWISE_ADD_GRAD_OUT_X_GRAD) &&        \
   RILL_SAME_POS(RILL_ELEMENTWISE_##OP##_GRAD_OUT_Y_GRAD, RILL_ELEMENTWISE_ADD_GRAD_OUT_Y_GRAD) &&        \
   RILL_SAME_POS(RILL_ELEMENTWISE_##OP##_GRAD_ATTR_AXIS, RILL_ELEMENTWISE_ADD_GRAD_ATTR_AXIS))
_Static_assert(SAME_GRAD_SLOTS(SUB) && SAME_GRAD_SLOTS(MUL) && SAME_GRAD_SLOTS(DIV) && SAME_GRAD_SLOTS(MAX) &&
                   SAME_GRAD_SLOTS(MIN) && SAME_GRAD_SLOTS(POW),
               "elementwise gradient slots differ");

static rill_status *binary_grad(rill_kernel_ctx *ctx, int op) {
  enum { X = RILL_ELEMENTWISE_ADD_GRAD_IN_X, Y = RILL_ELEMENTWISE_ADD_GRAD_IN_Y,
         OUT = RILL_ELEMENTWISE_ADD_GRAD_IN_OUT, G = RILL_ELEMENTWISE_ADD_GRAD_IN_OUT_GRAD,
         DX = RILL_ELEMENTWISE_ADD_GRAD_OUT_X_GRAD, DY = RILL_ELEMENTWISE_ADD_GRAD_OUT_Y_GRAD };
  rill_tensor *x = NULL, *y = NULL, *g = NULL, *dx = NULL, *dy = NULL;
  bool x_optional = op == RILL_CUDA_ADD || op == RILL_CUDA_SUB || op == RILL_CUDA_DIV;
  if (!x_optional || rill_kin(ctx, X, 0)) RILL_TRY(rill_kin_need(ctx, X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, Y, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kin_need(ctx, G, 0, RILL_DTYPE_FP32, &g));
  if (rill_kout(ctx, DX, 0)) RILL_TRY(rill_kout_need(ctx, DX, 0, RILL_DTYPE_FP32, &dx));
  if (rill_kout(ctx, DY, 0)) RILL_TRY(rill_kout_need(ctx, DY, 0, RILL_DTYPE_FP32, &dy));
  const rill_dims *xd = x ? &x->dims : &g->dims;
  rill_cuda_bcast b;
  rill_dims o;
  RILL_TRY(bcast_plan(ctx, xd, rill_kin_name(ctx, x ? X : G, 0), &y->dims, rill_kin_name(ctx, Y, 0),
                      (int)ctx->attrs[RILL_ELEMENTWISE_ADD_GRAD_ATTR_AXIS].v.i, &o, &b));
  RILL_TRY(rill_kin_check_dims(ctx, G, g, &o));
  if (dx) RILL_TRY(rill_kout_check_dims(ctx, DX, 0, dx, xd));
  if (dy) RILL_TRY(rill_kout_check_dims(ctx, DY, 0, dy, &y->dims));
  if (!dx && !dy) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx ? dx : dy, &d));
  const float *xp = x ? rill_tensor_ptr(x) : NULL, *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(g);
  int yop = op;
  if (op == RILL_CUDA_DIV && !x && dy) {
    rill_tensor *out = NULL;
    RILL_TRY(rill_kin_need(ctx, OUT, 0, RILL_DTYPE_FP32, &out));
    RILL_TRY(rill_kin_check_dims(ctx, OUT, out, &o));
    xp = rill_tensor_ptr(out);
    yop = RILL_CUDA_DIV_FROM_OUT;
  }
  if (dx)
    RILL_TRY(rill_cuda_kernel_check(ctx,
                                    rill_cuda_binary_grad_f32(op, false, xp, yp, gp, rill_tensor_ptr(dx),
                                                              rill_tensor_numel(dx), &b, d->stream),
                                    "X@GRAD launch"));
  if (dy)
    RILL_TRY(rill_cuda_kernel_check(ctx,
                                    rill_cuda_binary_grad_f32(yop, true, xp, yp, gp, rill_tensor_ptr(dy),
                                                              rill_tensor_numel(dy), &b, d->stream),
                                    "Y@GRAD launch"));
  return NULL;
}

rill_status *rill_cuda_elementwise_add_grad_fp32(rill_kernel_ctx *ctx) { return binary_grad(ctx, RILL_CUDA_ADD); }
rill_status *rill_cuda_elementwise_sub_grad_fp32(rill_kernel_ctx *ctx) { return binary_grad(ctx, RILL_CUDA_SUB); }
rill_status *rill_cuda_elementwise_mul_grad_fp32(rill_kernel_ctx *ctx) { return binary_grad(ctx, RILL_CUDA_MUL); }
rill_status *rill_cuda_elementwise_div_grad_fp32(rill_kernel_ctx *ctx) { return binary_grad(ctx, RILL_CUDA_DIV); }
rill_status *rill_cuda_elementwise_max_grad_fp32(rill_kernel_ctx *ctx) { return binary_grad(ctx, RILL_CUDA_MAX); }
rill_status *rill_cuda_elementwise_min_grad_fp32(rill_kernel_ctx *ctx) { return binary_grad(ctx, RILL_CUDA_MIN); }
rill_status *rill_cuda_elementwise_pow_grad_fp32(rill_kernel_ctx *ctx) { return binary_grad(ctx, RILL_CUDA_POW); }
