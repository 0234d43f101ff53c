/* Inference passes: rewrites of block 0 of a loaded model (and, for the folds, of its
 * weights in the parameter scope) that keep the outputs and make a run cheaper. Each
 * pass is all-or-nothing: it edits a copy of the program and commits it on success; a
 * weight it rewrites is replaced in the scope only after every check passed. Which ops
 * a pass touches comes from the tables in infer_passes.c (producers that carry a
 * per-channel weight, activations a fused op can apply), never from the executor.
 * doc/design/inference.md lists each pass and its conditions. */
#ifndef RILL_FRAMEWORK_TRANSFORM_INFER_PASSES_H
#define RILL_FRAMEWORK_TRANSFORM_INFER_PASSES_H

#include <stdbool.h>
#include "framework/data/scope.h"
#include "framework/program/program.h"

/* What the passes did, for tests and `rill run`. */
typedef struct rill_pass_stats {
  size_t dropouts;   /* dropout ops removed or turned into scale, identity scale ops removed */
  size_t bn_folded;  /* batch_norm ops folded into a producer's weights */
  size_t fc_fused;   /* mul + elementwise_add (+ relu) -> fc */
  size_t conv_fused; /* conv + elementwise_add (+ activation) -> conv2d_fusion */
  size_t inplace;    /* activations made to write over their input */
  size_t int8;       /* conv, mul or matmul over fake-quantized levels + dequantize -> conv2d_int8, mul_int8 */
  size_t int8_folded; /* fake quantize ops folded into the int8 ops that read them */
} rill_pass_stats;

/* Runs the passes of `mask` (rill_pass bits) in a fixed order: DROPOUT, FOLD_BN, INT8
 * (only where the CPU runs AVX2: rill_cpu_avx2()), FUSE_CONV, FUSE_FC, INPLACE. `params` holds the persistable variables (the folds read
 * and replace weights there). stats may be NULL. */
rill_status *rill_infer_passes(rill_program *program, rill_scope *params, uint32_t mask,
                               rill_pass_stats *stats);

rill_status *rill_pass_drop_dropout(rill_program *program, size_t *count);
rill_status *rill_pass_fold_batch_norm(rill_program *program, rill_scope *params, size_t *count);
rill_status *rill_pass_fuse_conv(rill_program *program, size_t *count);
rill_status *rill_pass_fuse_fc(rill_program *program, size_t *count);
rill_status *rill_pass_inplace(rill_program *program, size_t *count);
/* INT8: the patterns of int8_patterns (a float op over fake-quantized levels and its
 * dequantizer) -> one int8 op, where the weight in `params` holds integer levels; a
 * depthwise conv (groups each reading one input channel) only when `depthwise`. Called
 * directly it rewrites whatever the CPU (the int8 op runs everywhere); rill_infer_passes
 * leaves depthwise convs as they are, where the int8 kernel is slower. */
rill_status *rill_pass_int8(rill_program *program, rill_scope *params, bool depthwise, size_t *count);
/* INT8, second step: a fake quantize op with a given scale (is_test) whose levels only
 * int8 ops read is removed, and those ops read its float input and its scale
 * (InScale), quantizing as they read (doc/design/int8.md). */
rill_status *rill_pass_int8_fold(rill_program *program, size_t *count);

#endif
