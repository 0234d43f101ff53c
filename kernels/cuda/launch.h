/* The device code's entry points (kernels/cuda/device), callable from C: each
 * enqueues its work on `s` and returns the launch's error (cudaSuccess when enqueued).
 * Sizes are element counts; every pointer is device memory unless it says otherwise. */
#ifndef RILL_KERNELS_CUDA_LAUNCH_H
#define RILL_KERNELS_CUDA_LAUNCH_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/cpu/box_decode.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A broadcast of two operands to an output, collapsed to n dims (the CPU's plan,
 * kernels/cpu/elementwise_binary.c): element strides of X and Y per dim, 0 where an
 * operand broadcasts. */
#define RILL_CUDA_BCAST_DIMS 9
typedef struct rill_cuda_bcast {
  int n;
  int64_t dims[RILL_CUDA_BCAST_DIMS];
  int64_t xs[RILL_CUDA_BCAST_DIMS], ys[RILL_CUDA_BCAST_DIMS];
  int64_t numel;
} rill_cuda_bcast;

enum rill_cuda_binary_op {
  RILL_CUDA_ADD,
  RILL_CUDA_SUB,
  RILL_CUDA_MUL,
  RILL_CUDA_DIV,
  RILL_CUDA_MAX,
  RILL_CUDA_MIN,
  RILL_CUDA_DIV_FROM_OUT, /* gradients only: div's, Out standing for X (y's: -g * out / y) */
  RILL_CUDA_POW,          /* powf(x, y) */
};
cudaError_t rill_cuda_binary_f32(int op, const float *x, const float *y, float *out,
                                 const rill_cuda_bcast *b, cudaStream_t s);

/* The comparisons and logical ops: out[i] = x op y under the broadcast b, one byte a
 * bool (RILL_CUDA_NOT: !x, y unread). */
enum rill_cuda_compare_op {
  RILL_CUDA_LT,
  RILL_CUDA_LE,
  RILL_CUDA_GT,
  RILL_CUDA_GE,
  RILL_CUDA_EQ,
  RILL_CUDA_NE,
  RILL_CUDA_AND,
  RILL_CUDA_OR,
  RILL_CUDA_NOT,
};
/* x and y of rill_dtype `dtype`: float32, float64, int32, int64, or bool (equal and the
 * logical ops). */
cudaError_t rill_cuda_compare(int op, int dtype, const void *x, const void *y, bool *out, const rill_cuda_bcast *b,
                              cudaStream_t s);

/* out[i] = f(x[i]) with parameters a and b. */
enum rill_cuda_unary_op {
  RILL_CUDA_RELU,
  RILL_CUDA_SIGMOID,
  RILL_CUDA_TANH,
  RILL_CUDA_EXP,
  RILL_CUDA_SQUARE,
  RILL_CUDA_SQRT,
  RILL_CUDA_ABS,
  RILL_CUDA_LEAKY_RELU, /* x > 0 ? x : a * x */
  RILL_CUDA_RELU6,      /* min(max(x, 0), a), NaN kept */
  RILL_CUDA_SCALE,      /* a * x + b */
  RILL_CUDA_SCALE_BIAS_FIRST, /* a * (x + b) */
  RILL_CUDA_FILL,       /* a; x unused */
  RILL_CUDA_HARD_SIGMOID, /* clamp(a * x + b, 0, 1) */
  RILL_CUDA_HARD_SWISH,   /* clamp(x + c, 0, a) * x / b */
  RILL_CUDA_SWISH,        /* x / (1 + exp(-a x)) */
  RILL_CUDA_SILU,         /* x / (1 + exp(-x)) */
  RILL_CUDA_GELU_ERF,     /* x Phi(x) */
  RILL_CUDA_GELU_TANH,    /* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
  RILL_CUDA_CLIP,         /* x < a ? a : x > b ? b : x (NaN kept) */
  RILL_CUDA_LOG,          /* ln x */
  RILL_CUDA_RECIPROCAL,   /* 1 / x */
  RILL_CUDA_SOFTPLUS,     /* ln(1 + exp(x)), shifted so that exp never overflows */
  RILL_CUDA_LOGSIGMOID,   /* ln(1 / (1 + exp(-x))), likewise */
  RILL_CUDA_ELU,          /* x > 0 ? x : a (exp(x) - 1) */
  RILL_CUDA_CEIL,
  RILL_CUDA_FLOOR,
  RILL_CUDA_ROUND,        /* halves to even */
  RILL_CUDA_SIGN,         /* 0 at 0 and NaN */
  RILL_CUDA_ZERO_GRAD,    /* gradient only: 0 * Out@GRAD (ceil, floor, round) */
  RILL_CUDA_COS,
  RILL_CUDA_SIN,
  RILL_CUDA_ACOS,
  RILL_CUDA_ASIN,
  RILL_CUDA_ATAN,
  RILL_CUDA_RSQRT,        /* 1 / sqrt(x) */
  RILL_CUDA_SOFTSIGN,     /* x / (1 + |x|) */
  RILL_CUDA_TANH_SHRINK,  /* x - tanh(x) */
  RILL_CUDA_SOFTSHRINK,   /* x - a above a, x + a below -a, else 0 */
  RILL_CUDA_HARD_SHRINK,  /* x where |x| > a, else 0 */
  RILL_CUDA_THRESHOLDED_RELU, /* x where x > a, else 0 */
  RILL_CUDA_SELU,         /* a (x > 0 ? x : b exp(x) - b) */
  RILL_CUDA_BRELU,        /* clamp(x, a, b) */
  RILL_CUDA_SOFT_RELU,    /* ln(1 + exp(clamp(x, -a, a))) */
  RILL_CUDA_STANH,        /* b tanh(a x) */
  RILL_CUDA_ERF,
  RILL_CUDA_MISH,         /* x tanh(softplus(x)), softplus cut at threshold a */
  RILL_CUDA_LOG1P,        /* ln(1 + x), 1 + x rounded first */
  RILL_CUDA_POW_FACTOR,   /* x ^ a */
};
cudaError_t rill_cuda_unary_f32(int op, const float *x, float *out, int64_t n, float a, float b, float c,
                                cudaStream_t s);

/* A strided walk: a packed side of dims out_dims, and per dim the stride (in elements)
 * on the other side. A permutation of a tensor's dims, a box of a tensor (slice, from
 * the box's first element), or a broadcast (stride 0 where a dim repeats). */
typedef struct rill_cuda_perm {
  int n;
  int64_t out_dims[RILL_CUDA_BCAST_DIMS], src_strides[RILL_CUDA_BCAST_DIMS];
  int64_t numel;
  bool scatter; /* the strides are dst's and src is packed (slice's gradient) */
} rill_cuda_perm;
/* Gathers the walk into packed dst (scatter: from packed src into the walk over dst);
 * elements of esize bytes: 1, 2, 4 or 8. */
cudaError_t rill_cuda_permute(const void *src, void *dst, const rill_cuda_perm *p, size_t esize, cudaStream_t s);
/* Every element of out (n elements of esize bytes: 1, 4 or 8) := the low esize bytes
 * of bits (a memset when they are all zero). */
cudaError_t rill_cuda_fill_bits(void *out, int64_t n, uint64_t bits, size_t esize, cudaStream_t s);
/* out[i] = mask[i] ? x[i] * k : 0 (dropout's kept elements scaled). */
cudaError_t rill_cuda_masked_scale_f32(const float *x, const uint8_t *mask, float *out, int64_t n, float k,
                                       cudaStream_t s);
/* conv2d_fusion's epilogue on an [N, channels, spatial] output, in place: out =
 * act(out + bias[c] (+ res, when not NULL)), act numbered as rill_fused_act
 * (operators/fused_act.h: identity, relu, relu6, sigmoid, tanh). */
cudaError_t rill_cuda_conv_epilogue_f32(float *out, const float *bias, const float *res, int64_t n, int64_t channels,
                                        int64_t spatial, int act, cudaStream_t s);
/* out[i] += x[i]. */
cudaError_t rill_cuda_accumulate_f32(float *out, const float *x, int64_t n, cudaStream_t s);
/* out[0] = mean of x[0..n), summed in double. */
cudaError_t rill_cuda_mean_f32(const float *x, int64_t n, float *out, cudaStream_t s);
/* A reduction's walk (operators/reduce.h, rill_reduce_plan): X's dims merged into n runs,
 * each all reduced or all kept; per run its extent and its stride in Out, 0 when reduced;
 * count: the X elements that reduce to one output element. */
typedef struct rill_cuda_reduce {
  int n;
  int64_t dims[RILL_CUDA_BCAST_DIMS], os[RILL_CUDA_BCAST_DIMS];
  int64_t xnumel, onumel, count;
} rill_cuda_reduce;
/* out[o] = the sum of the X elements that reduce to o, in double, then divided by count
 * when `mean`: one block an output element. */
cudaError_t rill_cuda_reduce_sum_f32(const float *x, float *out, const rill_cuda_reduce *r, bool mean,
                                     cudaStream_t s);
/* dx[i] = dout[the output element X's element i reduces to] * scale. */
cudaError_t rill_cuda_reduce_grad_f32(const float *dout, float *dx, const rill_cuda_reduce *r, float scale,
                                      cudaStream_t s);
/* The folds of reduce_max, _min, _prod, _all and _any, as the CPU kernels fold: from the
 * identity (-inf or the type's least for max, +inf or its greatest for min, 1, true,
 * false), max and min taking an element only when it compares above (below) what they
 * hold, so NaN never wins; prod multiplies in X's order (one thread an output element,
 * so the products round as the CPU's); one block an output element. */
enum rill_cuda_fold_op { RILL_CUDA_FOLD_MAX, RILL_CUDA_FOLD_MIN, RILL_CUDA_FOLD_PROD, RILL_CUDA_FOLD_ALL, RILL_CUDA_FOLD_ANY };
/* x and out of rill_dtype dtype: float32, float64, int32 or int64 (max, min, prod) or
 * bool (all, any). */
cudaError_t rill_cuda_reduce_fold(const void *x, void *out, int dtype, int op, const rill_cuda_reduce *r,
                                  cudaStream_t s);
/* reduce_max's and reduce_min's gradient (dx[i] = x[i] == out[o] ? dout[o] : 0) or, with
 * prod, reduce_prod's (dout[o] * out[o] / x[i]), o being the output element X's element i
 * reduces to. */
cudaError_t rill_cuda_reduce_out_grad_f32(const float *x, const float *out, const float *dout, float *dx,
                                          const rill_cuda_reduce *r, bool prod, cudaStream_t s);
/* layer_norm of x [left, right] by rows (device/norm.cu): mean and var (each may be NULL)
 * per row in double, y = x * a + b with a = 1 / sqrt(var + eps), b = -mean * a, then
 * times scale[j] and plus bias[j] when given; y may be x. */
cudaError_t rill_cuda_layer_norm_f32(const float *x, const float *scale, const float *bias, float *y, float *mean,
                                     float *var, int64_t left, int64_t right, double eps, cudaStream_t s);
/* layer_norm_grad (device/norm.cu) of x [left, right] from dy, the forward's mean and
 * var per row and scale (NULL when absent): dx, dscale and dbias may each be NULL. dx as
 * the CPU computes it (the row means in double); dscale and dbias summed over the rows in
 * float in their order, as the CPU sums them. */
typedef struct rill_cuda_ln_grad {
  const float *x, *dy, *scale, *mean, *var;
  float *dx, *dscale, *dbias;
  int64_t left, right;
  double eps;
} rill_cuda_ln_grad;
cudaError_t rill_cuda_layer_norm_grad_f32(const rill_cuda_ln_grad *p, cudaStream_t s);
/* group_norm's forward (device/norm.cu): x as [n, c, s] (NCHW) or [n, s, c] (NHWC), c
 * channels in g groups; per (sample, group) mean and var (each may be NULL) in double,
 * then y per channel with scale and bias (each may be NULL), as the CPU computes it. */
typedef struct rill_cuda_gn {
  const float *x, *scale, *bias;
  float *y, *mean, *var;
  int64_t n, c, s, g;
  bool nhwc;
  float eps;
} rill_cuda_gn;
cudaError_t rill_cuda_group_norm_f32(const rill_cuda_gn *p, cudaStream_t s);
/* group_norm_grad (device/norm.cu) from Y, Variance, Scale and Bias (each of the last two
 * may be NULL) and dy, as the CPU computes it: dx per (sample, group), dscale and dbias
 * per channel, their sums in double; dx, dscale and dbias may each be NULL. */
typedef struct rill_cuda_gn_grad {
  const float *y, *dy, *scale, *bias, *var;
  float *dx, *dscale, *dbias;
  int64_t n, c, s, g;
  bool nhwc;
  double eps;
} rill_cuda_gn_grad;
cudaError_t rill_cuda_group_norm_grad_f32(const rill_cuda_gn_grad *p, cudaStream_t s);
/* ---- metrics (device/metrics.cu) ---- */
/* The k largest of each row of x [rows, n] in descending order, with their positions:
 * ties in Paddle's partial_sort order, NaN above every number (the CPU kernel's order). */
cudaError_t rill_cuda_top_k_f32(const float *x, float *out, int64_t *idx, int64_t rows, int64_t n, int64_t k,
                                cudaStream_t s);
/* accuracy of idx [n, k] against labels (int64, or int32): acc[0] = the share of rows whose
 * label is among their k indices, correct[0] their count, total[0] = n. */
cudaError_t rill_cuda_accuracy(const int64_t *idx, const void *label, bool label_i64, int64_t n, int64_t k,
                               float *acc, int32_t *correct, int32_t *total, cudaStream_t s);
/* arg_max (or, with `min`, arg_min) along the middle dim of x [outer, n, inner] of dtype
 * (float32, float64, int32 or int64): the first position of the largest (smallest), a
 * NaN ranking above (below) every number, as int64 or int32 (out_i64). */
cudaError_t rill_cuda_arg_max(const void *x, int dtype, bool min, int64_t outer, int64_t n, int64_t inner, void *out,
                              bool out_i64, cudaStream_t s);
/* ---- sequence_pool (device/sequence.cu) ----
 * X's rows [rows, width] grouped into nseq sequences by offsets (nseq + 1 of them, on
 * the device); kind a rill_cuda_seqpool_kind (operators/sequence_pool.h's). Each output
 * element as the CPU kernel computes it: the first row, then the others added (or, for
 * MAX, taken when strictly greater) in order, then divided by the length (AVERAGE) or
 * its square root (SQRT); an empty sequence gives pad (and MaxIndex -1). */
enum rill_cuda_seqpool_kind {
  RILL_CUDA_SEQPOOL_AVERAGE,
  RILL_CUDA_SEQPOOL_SUM,
  RILL_CUDA_SEQPOOL_SQRT,
  RILL_CUDA_SEQPOOL_MAX,
  RILL_CUDA_SEQPOOL_LAST,
  RILL_CUDA_SEQPOOL_FIRST
};
typedef struct rill_cuda_seqpool {
  const int64_t *offsets;
  int64_t nseq, width;
  int kind;
  float pad;
} rill_cuda_seqpool;
cudaError_t rill_cuda_seqpool_f32(const float *x, float *out, int32_t *max_index, const rill_cuda_seqpool *p,
                                  cudaStream_t s);
/* Its gradient into dx, which holds zeros: Out@GRAD (dout) back to the rows it came from,
 * divided as the forward divided; for MAX to the rows max_index names. */
cudaError_t rill_cuda_seqpool_grad_f32(const float *dout, const int32_t *max_index, float *dx,
                                       const rill_cuda_seqpool *p, cudaStream_t s);

/* ---- lstm (device/lstm.cu) ----
 * Paddle's lstm over the batch order of operators/recurrent.h: gates [rows, 4D] in the
 * order candidate, input, forget, output; activations as rill_ract numbers. */
typedef struct rill_cuda_lstm {
  int64_t D;
  int act_gate, act_cell, act_cand;
  float cell_clip; /* lstmp's: the cell clipped to [-clip, clip] when above 0 */
} rill_cuda_lstm;
/* g[i][c] = x[rows[i]][c] + bias[c] for n rows of `width` (bias NULL: none). */
cudaError_t rill_cuda_gather_rows_bias_f32(const float *x, const int64_t *rows, const float *bias, int64_t n,
                                           int64_t width, float *g, cudaStream_t s);
/* dst[rows[i]][c] = src[i][c] (rows distinct). */
cudaError_t rill_cuda_scatter_rows_f32(const float *src, const int64_t *rows, int64_t n, int64_t width,
                                       float *dst, cudaStream_t s);
/* One time step of `cur` rows: g (pre-activations in, activated gates out), the previous
 * cells (NULL: zeros), the peephole weights [3D] (NULL: none); writes the cells c, their
 * activation ca and the hidden rows h [cur, D]. */
cudaError_t rill_cuda_lstm_step_f32(float *g, const float *prev_c, float *c, float *ca, float *h,
                                    const float *peep, const rill_cuda_lstm *p, int64_t cur, cudaStream_t s);
/* The step backwards: from the activated gates g, cells c, their activation ca, the
 * previous cells (NULL: zeros), the hidden gradient dh and the cell gradient so far dc
 * (made whole in place), writes the gate gradients dg, prev_dc (when not NULL) and, when
 * dpeep_rows is not NULL, each row's peephole gradient terms there [cur, 3D]. */
cudaError_t rill_cuda_lstm_step_grad_f32(const float *g, const float *c, const float *ca,
                                         const float *prev_c, const float *dh, float *dc, float *dg,
                                         float *prev_dc, const float *peep, float *dpeep_rows,
                                         const rill_cuda_lstm *p, int64_t cur, cudaStream_t s);
/* out[c] += rows[r][c] over the batch rows, steps from the last to the first (starts:
 * steps + 1 offsets on the device), each step's rows in order. */
cudaError_t rill_cuda_lstm_peephole_grad_f32(const float *rows, const int64_t *starts, int64_t steps,
                                             int64_t width, float *out, cudaStream_t s);
/* lstmp's projection of one step's n values in place: the plain activation `act` (a
 * rill_ract number: sigmoid and tanh unclipped) when act_on, then clipped to
 * [-clip, clip] when clip > 0 (Paddle 1.8's lstmp). */
cudaError_t rill_cuda_lstmp_proj_f32(float *v, int64_t n, bool act_on, int act, float clip, cudaStream_t s);
/* Its gradient in place: dv zeroed where the projection v reached the clip, then through
 * the activation from its output v when act_on. */
cudaError_t rill_cuda_lstmp_proj_grad_f32(float *dv, const float *v, int64_t n, bool act_on, int act, float clip,
                                          cudaStream_t s);
/* lstm_unit, one step of n rows: gates x [n, 4D] in the order input, forget, output,
 * candidate (Paddle's sigmoid unclipped and tanh 2 sigmoid(2x) - 1), forget_bias added
 * to the forget gate's input; c = f c_prev + i g, h = o tanh(c). */
cudaError_t rill_cuda_lstm_unit_f32(const float *x, const float *c_prev, float *c, float *h, int64_t n, int64_t D,
                                    float forget_bias, cudaStream_t s);
/* Its gradient from H@GRAD dh and C@GRAD dc: X@GRAD dx and C_prev@GRAD dc_prev, each
 * when not NULL. */
cudaError_t rill_cuda_lstm_unit_grad_f32(const float *x, const float *c_prev, const float *c, const float *dh,
                                         const float *dc, float *dx, float *dc_prev, int64_t n, int64_t D,
                                         float forget_bias, cudaStream_t s);
/* out[c] += v[r][c] for r from 0 to rows - 1, in order. */
cudaError_t rill_cuda_column_sums_f32(const float *v, int64_t rows, int64_t width, float *out,
                                      cudaStream_t s);

/* ---- gru (device/gru.cu) ----
 * Paddle's gru over the same batch order: gates [rows, 3D] in the order update, reset,
 * candidate; `act` the candidate's activation and `gate` the gates', rill_ract numbers;
 * origin_mode's output h = u * h_prev + (1 - u) * c, else (1 - u) * h_prev + u * c. */
typedef struct rill_cuda_gru {
  int64_t D;
  int act, gate;
  bool origin;
} rill_cuda_gru;
/* A step's gates: g's update and reset gates activated in place, and the reset hidden
 * rh = h_prev * r [cur, D] (prev NULL: zeros). */
cudaError_t rill_cuda_gru_gates_f32(float *g, const float *prev, float *rh, const rill_cuda_gru *p, int64_t cur,
                                    cudaStream_t s);
/* The step's output: the candidate activated in place and the hidden rows h [cur, D]. */
cudaError_t rill_cuda_gru_output_f32(float *g, const float *prev, float *h, const rill_cuda_gru *p, int64_t cur,
                                     cudaStream_t s);
/* Backwards through the output, from the activated gates g, prev (NULL: zeros) and the
 * hidden gradient dh: dg's update and candidate parts (the update's before its gate
 * activation, the candidate's after), and prev_dh (when not NULL) += its share. */
cudaError_t rill_cuda_gru_grad_output_f32(const float *g, const float *prev, const float *dh, float *dg,
                                          float *prev_dh, const rill_cuda_gru *p, int64_t cur, cudaStream_t s);
/* Backwards through the gates, from the reset hidden's gradient drh (read when prev is
 * given): prev_dh (when not NULL) += drh * r, and dg's update and reset parts through the
 * gate activation. */
cudaError_t rill_cuda_gru_grad_gates_f32(const float *g, const float *prev, const float *drh, float *dg,
                                         float *prev_dh, const rill_cuda_gru *p, int64_t cur, cudaStream_t s);
/* gru_unit's elementwise parts over n rows; its activations are integer codes (0
 * identity, 1 sigmoid, 2 tanh, 3 relu). RILL_CUDA_GRU_UNIT_GATES: g's update and reset
 * gates activated in place and out = r * hp; RILL_CUDA_GRU_UNIT_OUTPUT: the candidate
 * activated in place and out = the hidden rows. */
enum { RILL_CUDA_GRU_UNIT_GATES, RILL_CUDA_GRU_UNIT_OUTPUT };
cudaError_t rill_cuda_gru_unit_f32(int part, float *g, const float *hp, float *out, const rill_cuda_gru *p,
                                   int64_t n, cudaStream_t s);
/* Its gradient's parts, writing into the gate gradients out [n, 3D]: GRAD_OUTPUT the
 * update's and the candidate's from in = Hidden@GRAD, GRAD_RESET the reset gate's from
 * in = the reset hidden's gradient. */
enum { RILL_CUDA_GRU_UNIT_GRAD_OUTPUT, RILL_CUDA_GRU_UNIT_GRAD_RESET };
cudaError_t rill_cuda_gru_unit_grad_f32(int part, const float *g, const float *hp, const float *in, float *out,
                                        const rill_cuda_gru *p, int64_t n, cudaStream_t s);
/* HiddenPrev@GRAD's elementwise part: dhp = drp * r + dh * (origin ? u : 1 - u). */
cudaError_t rill_cuda_gru_unit_grad_prev_f32(const float *g, const float *drp, const float *dh, float *dhp,
                                             const rill_cuda_gru *p, int64_t n, cudaStream_t s);

/* ---- Paddle 2.x's rnn and Fluid 1.x's cudnn_lstm (device/rnn.cu) ---- */
/* The input projection's biases: g [rows, gh] += b_ih, then += b_hh over its first nbh
 * columns (GRU's candidate bias of the hidden side goes inside the reset product). */
cudaError_t rill_cuda_rnn_bias_f32(float *g, const float *bih, const float *bhh, int64_t rows, int64_t gh,
                                   int64_t nbh, cudaStream_t s);
/* One time step of one direction for n rows, a thread a (row, unit): from the input
 * projection gx [n, G H] and the hidden one ph [n, G H] (h W_hh^T), the cell of `mode`
 * (LSTM i, f, c~, o; GRU r, z, c with bhh_c, the hidden side's candidate bias; RELU,
 * TANH: the simple RNNs) updates h [n, H] (and c for LSTM) in place and writes the new h
 * to out, ldo elements between its rows. With lens (each row's sequence length, on the
 * device), a row whose length is at most the step t writes zeros and keeps its state.
 * kept (NULL: inference): the step's rows of Reserve's gates section, kept_row elements
 * a row (operators/rnn.h), written as the CPU writes them (zeros past a length). */
enum { RILL_CUDA_RNN_LSTM, RILL_CUDA_RNN_GRU, RILL_CUDA_RNN_RELU, RILL_CUDA_RNN_TANH };
cudaError_t rill_cuda_rnn_step_f32(int mode, const float *gx, const float *ph, const float *bhh_c, float *h, float *c,
                                   float *out, int64_t ldo, int64_t n, int64_t hidden, const int64_t *lens, int64_t t,
                                   float *kept, int64_t kept_row, cudaStream_t s);
/* m = v != 0: cudnn_lstm's dropout mask as its Reserve keeps it, 0 / 1 floats. */
cudaError_t rill_cuda_rnn_mask_of_f32(uint8_t *m, const float *v, int64_t n, cudaStream_t s);
/* y = x * mask / keep (y may be x): the dropout between layers and its gradient. */
cudaError_t rill_cuda_rnn_dropout_f32(float *y, const float *x, const uint8_t *mask, float keep, int64_t n,
                                      cudaStream_t s);
/* One layer and direction of the backward: kept, its Reserve rows [T, n, S]; y its
 * output at the direction's columns and dy that output's gradient (NULL: zeros), ldy
 * elements between rows; h0 and c0 (LSTM) its initial states [n, H]. */
typedef struct rill_cuda_rnn_back {
  int mode, dir;
  int64_t T, n, hidden, S, ldy;
  const float *kept, *y, *dy, *h0, *c0;
  const int64_t *lens; /* NULL: every row has T steps */
} rill_cuda_rnn_back;
/* Step t's gate gradients, a thread a (row, unit), as kernels/cpu/rnn_impl.inc's
 * backward forms them: from dh (and dc, updated in place for the step before), the
 * step's rows gx [n, G H] (and gh, GRU's hidden side; gx otherwise), the previous h of
 * each row into hp [n, H], and tb [n, H]: dh of the step before, less the gates'
 * product by W_hh that the caller adds. */
cudaError_t rill_cuda_rnn_back_step_f32(const rill_cuda_rnn_back *p, int64_t t, const float *dh, float *dc, float *tb,
                                        float *gx, float *gh, float *hp, cudaStream_t s);

/* ---- detection boxes (device/detection.cu) ---- */
/* yolo_box of x [n, an (5 + classes) (+ an with iou_aware), h, w]: a thread a cell of an
 * anchor writes its box [4] into boxes [n, an h w, 4] and its class scores into scores
 * [n, an h w, classes] by the CPU kernel's functions (kernels/cpu/box_decode.h), zeros
 * below conf_thresh. img_size [n, 2] (height, width; int32, or int64 with img_i64) and
 * anchors [2 an] (width, height) are on the device. dtype: float32 or float64. */
typedef struct rill_cuda_yolo_box {
  rill_yolo_geom g;
  int64_t n, an;
} rill_cuda_yolo_box;
cudaError_t rill_cuda_decode_yolo(int dtype, const void *x, const void *img_size, bool img_i64, const int32_t *anchors,
                                  void *boxes, void *scores, const rill_cuda_yolo_box *p, cudaStream_t s);
/* box_coder: a thread a box of out [rows, cols, 4], from prior [m, 4] (row j, or i when
 * decoding with axis 1), its variances (pvar [m, 4] on the device, else var, the
 * attribute's 4 values, or ones) and target ([rows, 4] encoding, else out's shape). */
typedef struct rill_cuda_box_coder {
  int64_t rows, cols;
  int axis;
  bool encode, normalized, var_attr;
  float var[4];
} rill_cuda_box_coder;
cudaError_t rill_cuda_code_boxes(int dtype, const void *prior, const void *pvar, const void *target, void *out,
                                const rill_cuda_box_coder *p, cudaStream_t s);

/* ---- grid sampling (device/grid_sample.cu) ---- */
/* grid_sampler of x [n, c, h, w] at grid [n, oh, ow, 2] ((x, y) in [-1, 1]) into out
 * [n, c, oh, ow]: a thread an output element, its source coordinates unnormalised and
 * padded in double as the CPU kernel does, bilinear (the four corners blended in double,
 * out-of-range corners weighing 0 with zeros padding) or nearest. */
typedef struct rill_cuda_grid_sample {
  int64_t n, c, h, w, oh, ow;
  int pad; /* RILL_GRID_PAD_* (kernels/cpu/grid_sample_coord.h) */
  bool align_corners, nearest;
} rill_cuda_grid_sample;
cudaError_t rill_cuda_grid_sample_f32(const float *x, const float *grid, float *out, const rill_cuda_grid_sample *p,
                                      cudaStream_t s);
/* Its gradient (zeros or border padding; reflection is cudaErrorInvalidValue). dx (NULL:
 * not wanted) is written whole: a thread an (n, c) plane zeroes it and adds each sampled
 * position's share back, positions in raster order and corners in the CPU's order, so
 * the sums are the CPU's, bit for bit up to contraction. dgrid (NULL: not wanted): a
 * thread a sampled position sums over its corners and channels in double, 0 for nearest. */
cudaError_t rill_cuda_grid_sample_grad_f32(const float *x, const float *grid, const float *dout, float *dx,
                                           float *dgrid, const rill_cuda_grid_sample *p, cudaStream_t s);

/* ---- interpolation (device/interp.cu) ---- */
/* nearest or bilinear interpolation of x [n, c, d, h, w] (channel_last: [n, d, h, w,
 * c]) to [.., od, oh, ow], from per-axis tables made on the host as the CPU kernel makes
 * them (operators/interp.h): for output index k along axis a, its source indices lo and
 * hi and the weight of hi (bilinear only, along h and w). `tables` is the device copy of
 * lo[d] lo[h] lo[w] hi[d] hi[h] hi[w] (int64), then the float weights w[d] w[h] w[w]. */
typedef struct rill_cuda_interp {
  int64_t n, c, d, h, w, od, oh, ow;
  bool bilinear, trilinear, channel_last; /* trilinear: along d too, 5-D x */
  const int64_t *tables;
} rill_cuda_interp;
cudaError_t rill_cuda_interp_f32(const float *x, float *out, const rill_cuda_interp *p, cudaStream_t s);
/* Their gradient, one thread an element of X@GRAD [n, c, d, h, w] (channel_last:
 * [n, d, h, w, c]): the sum of the Out@GRAD elements whose sources it is, in the CPU
 * kernel's order (outputs in raster order; within one, its sources lo-lo, hi-lo, lo-hi,
 * hi-hi along (h, w)), each times its weight. Per axis a (d, h, w), from inverted tables
 * made on the host: input index i's entries are entry[a][first[a][i] .. first[a][i + 1]),
 * each 2 k + 1 where i is output index k's hi source and 2 k where it is its lo one,
 * ascending; weight[a][k] is the weight of k's hi source. Bilinear along h and w only,
 * trilinear along all three, its sources of one output in the CPU's order (d, then h,
 * then w, lo before hi); nearest has lo entries alone. */
typedef struct rill_cuda_interp_grad {
  int64_t n, c, d, h, w, od, oh, ow;
  bool bilinear, trilinear, channel_last;
  const int64_t *first[3], *entry[3];
  const float *weight[3];
} rill_cuda_interp_grad;
cudaError_t rill_cuda_interp_grad_f32(const float *dout, float *dx, const rill_cuda_interp_grad *p, cudaStream_t s);
/* softmax (or, with `log`, log_softmax) of x viewed as [outer, n, inner] along n, as the
 * CPU kernels compute them: the maximum, the sum of exp(x - max), then the quotients
 * (log: x - max - log(sum)). inner 1: a block a row; else a thread an (outer, inner)
 * position walking n in the CPU's order. */
cudaError_t rill_cuda_softmax_f32(const float *x, float *out, int64_t outer, int64_t n, int64_t inner, bool log,
                                  cudaStream_t s);
/* Their X@GRAD from Out and g = Out@GRAD: softmax's (g - sum(g out)) out, log_softmax's
 * g - exp(out) sum(g); dx may be g. */
cudaError_t rill_cuda_softmax_grad_f32(const float *out, const float *g, float *dx, int64_t outer, int64_t n,
                                       int64_t inner, bool log, cudaStream_t s);
/* out[r][c] += bias[c] (bias may be NULL), then relu when `relu`. */
cudaError_t rill_cuda_bias_act_f32(float *out, const float *bias, int64_t rows, int64_t cols,
                                   bool relu, cudaStream_t s);
/* out[i][ids[i]] = 1 for each id within [0, depth) (ids int64 or int32); out, of rill_dtype
 * out_dtype (float32/64, int32/64), is zeroed by the caller. */
cudaError_t rill_cuda_one_hot(const void *ids, bool ids_i64, int64_t n, int64_t depth, void *out, int out_dtype,
                              cudaStream_t s);
/* out[i][c] = table[ids[i]][c] (ids int64 or int32, checked on the host), or 0 where
 * ids[i] == pad. */
cudaError_t rill_cuda_gather_rows_f32(const float *table, const void *ids, bool ids_i64, int64_t n,
                                      int64_t width, int64_t pad, float *out, cudaStream_t s);
/* Grouped row sums (kernels/cuda/rows.c, rill_cuda_groups): for each group g and column
 * c, sum = the values vals[p][c] of its positions p, added in order from 0; then
 * out[rows[g]][c] = sum, or with lr, out[rows[g]][c] -= lr[0] * sum. `groups` is the
 * device copy of rows, offsets and positions. */
cudaError_t rill_cuda_sum_groups_f32(const float *vals, const int64_t *groups, int64_t ngroups, int64_t width,
                                     const float *lr, float *out, cudaStream_t s);
/* The same groups, each value added to out[rows[g]][c] in turn (a selected-rows input
 * added into a dense sum, as the CPU adds it). */
cudaError_t rill_cuda_add_groups_f32(const float *vals, const int64_t *groups, int64_t ngroups, int64_t width,
                                     float *out, cudaStream_t s);
/* param_out = param - lr[0] * grad. */
cudaError_t rill_cuda_sgd_f32(float *param_out, const float *param, const float *grad,
                              const float *lr, int64_t n, cudaStream_t s);
/* Paddle's momentum: g = rescale * grad + l2 * param; v' = mu * v + g;
 * param' = param - lr * (nesterov ? g + mu * v' : v'). */
cudaError_t rill_cuda_momentum_f32(float *param_out, float *velocity_out, const float *param,
                                   const float *grad, const float *velocity, const float *lr,
                                   int64_t n, float mu, float rescale, float l2, bool nesterov,
                                   cudaStream_t s);
/* adagrad: m' = m + g^2; param' = param - lr[0] * g / (sqrt(m') + eps). */
cudaError_t rill_cuda_adagrad_f32(float *param_out, float *moment_out, const float *param, const float *grad,
                                  const float *moment, const float *lr, int64_t n, float eps, cudaStream_t s);
/* The same in place on the rows of groups (rill_cuda_groups) only, each with its merged
 * gradient: a selected-rows gradient's update. */
cudaError_t rill_cuda_adagrad_rows_f32(float *param, float *moment, const float *vals, const int64_t *groups,
                                       int64_t ngroups, int64_t width, const float *lr, float eps, cudaStream_t s);
/* Fluid 1.x's adam on dense gradients, the scalars read on the device:
 * lr_t = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow); m1' = b1 m1 + (1 - b1) g;
 * m2' = b2 m2 + (1 - b2) g^2; param' = param - lr_t m1' / (sqrt(m2') + eps). */
cudaError_t rill_cuda_adam_f32(float *param_out, float *m1_out, float *m2_out, const float *param,
                               const float *grad, const float *m1, const float *m2, const float *lr,
                               const float *beta1_pow, const float *beta2_pow, int64_t n, float b1,
                               float b2, float eps, cudaStream_t s);
/* Lazy adam (a selected-rows gradient with lazy_mode): the same update in place on the
 * rows of groups (rill_cuda_groups) only, each with its merged gradient. */
cudaError_t rill_cuda_adam_rows_f32(float *param, float *m1, float *m2, const float *vals, const int64_t *groups,
                                    int64_t ngroups, int64_t width, const float *lr, const float *beta1_pow,
                                    const float *beta2_pow, float b1, float b2, float eps, cudaStream_t s);
/* out[0] = in[0] * factor, after the work queued before it (in and out may be one). */
cudaError_t rill_cuda_scale_scalar_f32(float *out, const float *in, float factor, cudaStream_t s);
/* pool2d's geometry (operators/nn.h's rill_pool_geom, as the CPU kernel takes it). */
typedef struct rill_cuda_pool {
  int64_t n, c, h, w, oh, ow, kh, kw, sh, sw, pt, pl;
  bool max, adaptive, exclusive;
  bool last; /* NHWC */
} rill_cuda_pool;
/* y = pool2d of x: max, or the average over the window clipped to the image (divided by
 * the clipped area when exclusive or adaptive, else by kh * kw). */
cudaError_t rill_cuda_pool2d_f32(const float *x, float *y, const rill_cuda_pool *g,
                                 cudaStream_t s);
/* dx = pool2d's X@GRAD from x, y = Out and dy = Out@GRAD: an average spreads dy over
 * its window, a max gives it to the window's first element (row-major) equal to y.
 * Gathered per input element in the outputs' order: the CPU kernel's sums, bit for bit. */
cudaError_t rill_cuda_pool2d_grad_f32(const float *x, const float *y, const float *dy, float *dx,
                                      const rill_cuda_pool *g, cudaStream_t s);

/* batch_norm's forward on X viewed as [n, c, s] (NCHW), as the CPU kernel computes it:
 * with `global` the running Mean and Variance normalise (and are copied to MeanOut and
 * VarianceOut), else the batch's (summed in double) do, and the running ones are
 * updated with the momentum (read on the device from momentum_f32 or momentum_f64 when
 * one is set). SavedMean gets the mean used, SavedVariance 1 / sqrt(var + eps). Outputs
 * other than y may be NULL; y may be x, mean_out mean and var_out var. */
typedef struct rill_cuda_bn {
  const float *x, *scale, *bias, *mean, *var;
  float *y, *mean_out, *var_out, *saved_mean, *saved_inv_std;
  const float *momentum_f32;
  const double *momentum_f64;
  int64_t n, c, s;
  double eps, momentum;
  bool global;
  bool nhwc; /* channels last: x [n, s, c]; else x [n, c, s] */
} rill_cuda_bn;
cudaError_t rill_cuda_batch_norm_f32(const rill_cuda_bn *p, cudaStream_t s);
/* batch_norm_grad: with `global` (use_global_stats or is_test) the running mean and
 * var normalised, else the forward's SavedMean (mean) and SavedVariance (inv_std, 1 /
 * sqrt(var + eps)) did. ScaleGrad = sum(dy * x_hat), BiasGrad = sum(dy) (in double);
 * X@GRAD = scale * inv * dy (global) or scale * inv * (dy - mean(dy) - x_hat *
 * mean(dy * x_hat)). dx, dscale and dbias may be NULL; dx may be dy. */
typedef struct rill_cuda_bn_grad {
  const float *x, *dy, *scale, *mean, *var, *inv_std;
  float *dx, *dscale, *dbias;
  int64_t n, c, s;
  double eps;
  bool global;
  bool nhwc; /* as rill_cuda_bn's */
} rill_cuda_bn_grad;
cudaError_t rill_cuda_batch_norm_grad_f32(const rill_cuda_bn_grad *p, cudaStream_t s);

/* cross_entropy on probabilities x [rows, n]: soft labels (soft, [rows, n]) or hard
 * ones (labels, int64 or int32 per labels_i64, one a row; ignore_index gives a loss and
 * gradient of 0). A hard label outside [0, n) that is not ignore_index is skipped and
 * the first such row stored in *bad (atomicMin; the caller sets it to all ones first).
 * loss[r] = -sum_k log(x[r, k]) soft[r, k] or -log(x[r, label]), log(0) taken as -1e20;
 * X@GRAD = -soft dy / x, or -dy / x at the label and 0 elsewhere. */
typedef struct rill_cuda_ce {
  const float *x, *soft;
  const void *labels;
  bool labels_i64;
  int64_t ignore_index;
  int64_t rows, n;
  unsigned long long *bad;
} rill_cuda_ce;
cudaError_t rill_cuda_cross_entropy_f32(const rill_cuda_ce *p, float *loss, cudaStream_t s);
cudaError_t rill_cuda_cross_entropy_grad_f32(const rill_cuda_ce *p, const float *dy, float *dx, cudaStream_t s);
/* softmax_with_cross_entropy as the CPU kernel computes it, on x [outer, n, inner] (the
 * class dim in the middle): with use_softmax, Softmax of each row, its shifted logits
 * clipped at -64, and Loss = log(sum) - the label's shifted logit (soft: label-weighted);
 * without, x already holds probabilities (Softmax a copy, Loss cross entropy). Labels,
 * ignore_index and *bad as rill_cuda_ce, one label a row (outer x inner). The gradient
 * reads x = Softmax: (Softmax - label) * Loss@GRAD. */
typedef struct rill_cuda_swce {
  const float *x, *soft;
  const void *labels;
  bool labels_i64, use_softmax;
  int64_t ignore_index;
  int64_t outer, n, inner;
  unsigned long long *bad;
} rill_cuda_swce;
cudaError_t rill_cuda_swce_f32(const rill_cuda_swce *p, float *softmax, float *loss, cudaStream_t s);
cudaError_t rill_cuda_swce_grad_f32(const rill_cuda_swce *p, const float *loss_grad, float *dx, cudaStream_t s);
/* sigmoid_cross_entropy_with_logits as the CPU kernel computes it, element by element:
 * 0 where the label truncated to int is ignore_index, else max(x, 0) - x l +
 * log(1 + exp(-|x|)); with dout, its gradient dout (sigmoid(x) - l) instead. With
 * `norm` (device scratch for one float), each is divided by the count of labels farther
 * than 1e-6 from ignore_index (0 divides by 0, as Paddle). */
cudaError_t rill_cuda_sce_f32(const float *x, const float *label, const float *dout, float *out, int64_t n,
                              int32_t ignore_index, float *norm, cudaStream_t s);

/* ---- gradients (device/grad.cu) ---- */
/* dx = X@GRAD of an activation from v and g = Out@GRAD; dx may be g. v is the forward's
 * Out for relu, sigmoid, tanh, relu6 (a: its threshold), exp, sqrt, hard_sigmoid (a:
 * slope) and reciprocal, and its X for leaky_relu (a: alpha), square, hard_swish (a, b,
 * c: threshold, scale, offset), swish (a: beta), silu, gelu (both forms), log, abs,
 * softplus, logsigmoid and elu (a: alpha). */
cudaError_t rill_cuda_act_grad_f32(int op, const float *v, const float *g, float *dx, int64_t n, float a, float b,
                                   float c, cudaStream_t s);
/* The gradient dz (zn elements) of X (for_y false) or Y of the binary op (RILL_CUDA_ADD,
 * _SUB, _MUL, _DIV, _DIV_FROM_OUT, _MAX or _MIN) planned by b, from g = Out@GRAD, each
 * element's contribution written as the CPU kernel writes it: element by element when
 * zn is the output's size, else each element the sum (in double) over the output
 * elements it was broadcast to. x may be NULL for add, sub and div's X@GRAD, which do not
 * read it; for RILL_CUDA_DIV_FROM_OUT it is Out. pow's: g y x^(y - 1) and g ln(x) x^y. */
cudaError_t rill_cuda_binary_grad_f32(int op, bool for_y, const float *x, const float *y,
                                      const float *g, float *dz, int64_t zn,
                                      const rill_cuda_bcast *b, cudaStream_t s);
/* out[i] = g[0] / divisor, g read on the device (mean's gradient). */
cudaError_t rill_cuda_fill_from_scalar_f32(float *out, int64_t n, const float *g, float divisor,
                                           cudaStream_t s);
/* *out = *x + step on one element of int32, int64, float32 or float64 (a rill dtype), as
 * the CPU's increment computes it. */
cudaError_t rill_cuda_increment(const void *x, void *out, int dtype, double step, cudaStream_t s);
/* Element conversion between float32, float64, int32, int64 and bool (rill_dtype
 * numbers); false when a dtype is not one of them. */
bool rill_cuda_cast_supported(int dtype);
cudaError_t rill_cuda_cast(const void *x, int from, void *out, int to, int64_t n, cudaStream_t s);

/* ---- quantization simulation (device/quant.cu) ---- */
/* out = the level of each x under the scale *scale (one float on the device), as
 * kernels/cpu/fake_quantize.c computes it (round_type 0: halves to even and clamped to
 * [-bin - 1, bin]; 1: x clipped to the scale, halves away from zero), times s / bin when
 * dq; out may be x. */
cudaError_t rill_cuda_quant_f32(const float *x, float *out, int64_t n, const float *scale, float bin, int round_type,
                                bool dq, cudaStream_t s);
/* out = x * *scale / range. */
cudaError_t rill_cuda_dequant_f32(const float *x, float *out, int64_t n, const float *scale, float range,
                                  cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
