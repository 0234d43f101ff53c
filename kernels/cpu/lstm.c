/* lstm, lstm_grad, lstm_unit and lstm_unit_grad CPU kernels (operators/lstm.c).
 *
 * lstm reorders Input into batch order once (operators/recurrent.h: the sequences
 * sorted by length, batch n the n-th rows of those still running), adds the gate biases,
 * then per time step runs one GEMM of the previous step's hidden rows [batch, D] by
 * Weight [D, 4D] into the step's gates and the elementwise cell update; Hidden and Cell
 * are scattered back to sequence order at the end. lstm_grad runs the steps backwards
 * with two GEMMs each (the previous hidden rows' gradient and Weight@GRAD). The
 * arithmetic, its order and the activations are Paddle 1.8's (math/detail/lstm_kernel.h,
 * lstm_cpu_kernel.h, activation_functions.h). lstmp, lstmp_grad: the same steps with the
 * previous step's projection in place of its hidden state (Paddle's lstmp_op.h). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "operators/recurrent.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/vexp.h"

/* lstmp's sizes; its attributes and those of lstmp_grad share one table. */
typedef struct lstmp_geom {
  int64_t rows, D, P;
  bool peep, reverse, proj_on;
  rill_ract act[3], proj;
  double cell_clip, proj_clip;
} lstmp_geom;

_Static_assert(RILL_SAME_POS(RILL_LSTMP_ATTR_PROJ_ACTIVATION, RILL_LSTMP_GRAD_ATTR_PROJ_ACTIVATION) &&
                   RILL_SAME_POS(RILL_LSTMP_ATTR_PROJ_CLIP, RILL_LSTMP_GRAD_ATTR_PROJ_CLIP),
               "lstmp and lstmp_grad share their attribute table");

/* The slots lstmp_check reads: the gates [T, 4D] (Input, or BatchGate in lstmp_grad),
 * the tensor whose one-level LoD gives the sequences (Input, or Projection), Weight,
 * ProjWeight, Bias, H0 and C0. */
typedef struct lstmp_slots {
  size_t gates, seq, w, pw, b, h0, c0;
} lstmp_slots;

/* gates [T, 4D], Weight [P, 4D], ProjWeight [D, P], Bias 4D (7D with peepholes), seq's
 * one LoD level ending at T, H0 [N, P] and C0 [N, D] when given; the attributes. */
static rill_status *lstmp_check(const rill_kernel_ctx *ctx, const lstmp_slots *sl,
                                const rill_tensor *x, const rill_tensor *seq, const rill_tensor *w,
                                const rill_tensor *pw, const rill_tensor *b, const rill_tensor *h0,
                                const rill_tensor *c0, lstmp_geom *g) {
  g->peep = ctx->attrs[RILL_LSTMP_ATTR_USE_PEEPHOLES].v.b;
  g->reverse = ctx->attrs[RILL_LSTMP_ATTR_IS_REVERSE].v.b;
  g->cell_clip = ctx->attrs[RILL_LSTMP_ATTR_CELL_CLIP].v.f;
  g->proj_clip = ctx->attrs[RILL_LSTMP_ATTR_PROJ_CLIP].v.f;
  RILL_TRY(rill_ract_parse(ctx, "gate_activation", ctx->attrs[RILL_LSTMP_ATTR_GATE_ACTIVATION].v.s,
                           &g->act[RILL_LSTM_ACT_GATE]));
  RILL_TRY(rill_ract_parse(ctx, "cell_activation", ctx->attrs[RILL_LSTMP_ATTR_CELL_ACTIVATION].v.s,
                           &g->act[RILL_LSTM_ACT_CELL]));
  RILL_TRY(rill_ract_parse(ctx, "candidate_activation",
                           ctx->attrs[RILL_LSTMP_ATTR_CANDIDATE_ACTIVATION].v.s, &g->act[RILL_LSTM_ACT_CAND]));
  RILL_TRY(rill_ract_parse(ctx, "proj_activation", ctx->attrs[RILL_LSTMP_ATTR_PROJ_ACTIVATION].v.s,
                           &g->proj));
  /* Paddle 1.8 applies cell_activation's function to the projection whenever
   * proj_activation is not identity. */
  g->proj_on = g->proj != RILL_RACT_IDENTITY;
  g->proj = g->act[RILL_LSTM_ACT_CELL];
  char s[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX], s3[RILL_DIMS_STR_MAX];
  if (x->dims.n != 2 || w->dims.n != 2 || pw->dims.n != 2 || x->dims.d[1] != 4 * pw->dims.d[0] ||
      w->dims.d[0] != pw->dims.d[1] || w->dims.d[1] != x->dims.d[1])
    return rill_kernel_error(ctx, "inputs %s (%s) %s, Weight (%s) %s and ProjWeight (%s) %s do not "
                             "fit: expected [T, 4 * D], [P, 4 * D] and [D, P]",
                             ctx->schema->inputs[sl->gates].name, rill_kin_name(ctx, sl->gates, 0),
                             rill_dims_str(&x->dims, s, sizeof s), rill_kin_name(ctx, sl->w, 0),
                             rill_dims_str(&w->dims, s2, sizeof s2), rill_kin_name(ctx, sl->pw, 0),
                             rill_dims_str(&pw->dims, s3, sizeof s3));
  g->rows = x->dims.d[0];
  g->D = pw->dims.d[0];
  g->P = pw->dims.d[1];
  int64_t nb = (g->peep ? 7 : 4) * g->D;
  if (rill_tensor_numel(b) != nb)
    return rill_kernel_error(ctx, "input Bias (%s) has shape %s, expected [1, %lld]%s",
                             rill_kin_name(ctx, sl->b, 0), rill_dims_str(&b->dims, s, sizeof s),
                             (long long)nb, g->peep ? " (use_peepholes: 4 * D biases, 3 * D peephole "
                                                      "weights)" : "");
  const char *sn = ctx->schema->inputs[sl->seq].name;
  if (seq->lod.nlevels != 1)
    return rill_kernel_error(ctx, "input %s (%s) has %zu LoD levels, expected 1 (the sequences)", sn,
                             rill_kin_name(ctx, sl->seq, 0), seq->lod.nlevels);
  const rill_lod_level *lv = &seq->lod.levels[0];
  if (lv->n < 1 || lv->offsets[lv->n - 1] != (uint64_t)g->rows || seq->dims.n < 1 ||
      seq->dims.d[0] != g->rows)
    return rill_kernel_error(ctx, "input %s (%s): its LoD does not end at the %lld rows of %s", sn,
                             rill_kin_name(ctx, sl->seq, 0), (long long)g->rows,
                             rill_kin_name(ctx, sl->gates, 0));
  if (h0 && !c0)
    return rill_kernel_error(ctx, "input H0 (%s) is given without C0", rill_kin_name(ctx, sl->h0, 0));
  rill_dims hd = {.n = 2, .d = {(int64_t)lv->n - 1, g->P}}, cd = {.n = 2, .d = {(int64_t)lv->n - 1, g->D}};
  if (h0) RILL_TRY(rill_kin_check_dims(ctx, sl->h0, h0, &hd));
  if (c0) RILL_TRY(rill_kin_check_dims(ctx, sl->c0, c0, &cd));
  return NULL;
}

/* The forward's per-step product g [cur, 4D] += h_prev [cur, D] W [D, 4D]: in float32
 * through W packed once for rill_sgemm's kernel (NULL where it has none) instead of on
 * every step. */
static rill_sgemm_packed *lstm_pack_fp32(const float *w, int64_t D) {
  return rill_sgemm_pack_b(w, 4 * D, D, 4 * D);
}

static void lstm_recur_fp32(const rill_kernel_ctx *ctx, const rill_sgemm_packed *pk, int64_t cur,
                            int64_t D, const float *ph, const float *w, float *g) {
  if (pk && rill_sgemm_prepacked(ctx->dev, rill_dev_threads(ctx->dev), CblasNoTrans, cur, 1.0f, ph,
                                 D, pk, 1.0f, g, 4 * D))
    return;
  RILL_KERNEL_SGEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)cur, (int)(4 * D), (int)D, 1.0f,
                    ph, (int)D, w, (int)(4 * D), 1.0f, g, (int)(4 * D));
}

static rill_sgemm_packed *lstm_pack_fp64(const double *w, int64_t D) {
  (void)w, (void)D;
  return NULL;
}

static void lstm_recur_fp64(const rill_kernel_ctx *ctx, const rill_sgemm_packed *pk, int64_t cur,
                            int64_t D, const double *ph, const double *w, double *g) {
  (void)ctx, (void)pk;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)cur, (int)(4 * D), (int)D, 1.0, ph,
              (int)D, w, (int)(4 * D), 1.0, g, (int)(4 * D));
}

/* The step's activations in float32 over spans of a row: sigmoid and tanh by vexp.h's
 * 8-lane forms (libm's expf per element was a third of a forward), sigmoid's input
 * clipped to [-40, 13] as rill_ract's is. */
static void act_span_fp32(float *v, int64_t n, rill_ract k) {
  switch (k) {
    case RILL_RACT_SIGMOID:
      for (int64_t i = 0; i < n; i++) v[i] = v[i] < -40.0f ? -40.0f : v[i] > 13.0f ? 13.0f : v[i];
      rill_sigmoid_span_f32(v, v, n);
      break;
    case RILL_RACT_TANH:
      rill_tanh_span_f32(v, v, n);
      break;
    case RILL_RACT_RELU:
      for (int64_t i = 0; i < n; i++) v[i] = v[i] > 0.0f ? v[i] : 0.0f;
      break;
    default:
      break;
  }
}

#define T float
#define DT RILL_DTYPE_FP32
#define SUF fp32
#define GEMM(...) RILL_KERNEL_SGEMM(__VA_ARGS__)
#define EXP expf
#define ACT_SPAN act_span_fp32
#define TANH tanhf
#include "kernels/cpu/lstm_impl.inc"
#undef T
#undef DT
#undef SUF
#undef GEMM
#undef EXP
#undef ACT_SPAN
#undef TANH

#define T double
#define DT RILL_DTYPE_FP64
#define SUF fp64
#define GEMM cblas_dgemm
#define EXP exp
#define TANH tanh
#include "kernels/cpu/lstm_impl.inc"
#undef T
#undef DT
#undef SUF
#undef GEMM
#undef EXP
#undef TANH
