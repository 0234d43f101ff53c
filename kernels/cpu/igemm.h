/* int8 convolution with int32 sums (doc/design/int8.md).
 *
 * y = conv(x, w) over signed 8-bit levels: activations x in [-128, 127], weights w in
 * [-127, 127] (Paddle's symmetric weight quantization never makes -128), summed in
 * int32, which is exact for any K up to RILL_I8_MAX_K. The product runs as a GEMM per
 * image and group, c [M, N] = w [M, K] x im2col(x) [K, N], on one of three paths chosen
 * from cpuid at run time; each gives the same int32 sums bit for bit:
 *   VNNI   (AVX-512 VNNI: vpdpbusd) 8 x 32 tiles; x is offset to unsigned (x + 128) and
 *          the weights' row sums times 128 are subtracted at the end;
 *   AVX2   (vpmaddubsw + vpmaddwd) 8 x 8 tiles; |x| times sign(x) w, so each pair sum
 *          is at most 2 * 128 * 127 = 32512 and the 16-bit step never saturates;
 *   scalar the same tiles in plain C.
 * Both operands are packed with K in groups of 4 bytes (zero-padded): the weights once
 * per filter, in blocks of 8 rows; the activations per call in panels of NR columns.
 * One column (a batch-1 mul) takes a matrix-vector kernel on the VNNI path, and where
 * the parts are few the weight rows split across threads too. A depthwise conv (groups
 * == C) runs direct instead, on int16 images of its channels with int32 sums. */
#ifndef RILL_KERNELS_CPU_IGEMM_H
#define RILL_KERNELS_CPU_IGEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "framework/data/tensor.h"
#include "framework/registry/registry.h"
#include "operators/nn.h"

/* Rows of a weight block. */
#define RILL_I8_MR 8
/* The largest K whose int32 sums cannot overflow: K * 128 * 127 < 2^31. */
#define RILL_I8_MAX_K 132104

typedef enum rill_i8_path { RILL_I8_SCALAR = 0, RILL_I8_AVX2 = 1, RILL_I8_VNNI = 2 } rill_i8_path;

/* The widest path this CPU runs at the process's level (framework/base/isa.h): VNNI at
 * avx512 where the CPU has it, AVX2 at avx2 or avx512 without VNNI, else scalar. */
rill_i8_path rill_i8_path_for_cpu(void);
const char *rill_i8_path_name(rill_i8_path path);

/* A filter packed for the kernels. Its header lets it live in an immutable buffer's
 * derived slot (framework/data/tensor.h). */
typedef struct rill_i8_weights {
  rill_buffer_derived hdr;
  const void *src;     /* the float levels it was packed from */
  bool trans;           /* src was [k, m] (a mul's weight), not [m, k] */
  int64_t m, k, groups; /* rows (all groups), K per row, groups */
  int64_t mg, mgp, kp;  /* rows per group, that rounded up to RILL_I8_MR, K rounded up to 4 */
  int8_t *a;            /* groups * mgp * kp bytes */
  int32_t *rowsum;      /* groups * mgp: each row's sum of levels */
} rill_i8_weights;

typedef enum rill_i8_pack_result { RILL_I8_PACKED, RILL_I8_NOT_LEVEL, RILL_I8_OOM } rill_i8_pack_result;

/* Packs w, float levels [m, k] (groups * (m / groups) rows), or [k, m] with `trans`
 * (one group), into *out. RILL_I8_NOT_LEVEL with *bad the index in w of a value that is
 * not an integer in [-127, 127]. */
rill_i8_pack_result rill_i8_weights_pack(const float *w, int64_t m, int64_t k, int64_t groups, bool trans,
                                         rill_i8_weights *out, int64_t *bad);
void rill_i8_weights_free(rill_i8_weights *w);

/* Float levels to int8: false with *bad the index of the first value that is not an
 * integer in [-128, 127]. */
bool rill_i8_from_levels(const float *x, int64_t n, int8_t *out, int64_t *bad);

/* Whether every one of the n floats is an integer in [-128, 127]; false with *bad the
 * index of the first that is not. */
bool rill_i8_check_levels(const float *x, int64_t n, int64_t *bad);

/* Where the sums go: i32 as they are, or f32 = (float)sum * row_scale[r] * scale / range
 * for output row (channel) r, each factor only where present (row_scale NULL: none;
 * no_scale: no per-tensor scale), in the order of fake_dequantize_max_abs (per-tensor)
 * and fake_channel_wise_dequantize_max_abs (per channel, then the activation's scale),
 * so the float results equal theirs on the float sums. */
typedef struct rill_i8_out {
  int32_t *i32;
  float *f32;
  const float *row_scale; /* one per output row (all groups), or NULL */
  bool no_scale;
  float scale, range;
} rill_i8_out;

/* The packed weight of kernel input `slot` (float levels f: [m, k], or [k, m] with
 * `trans`): the one kept with an immutable buffer (packed on first use), else packed
 * into *local, which the caller frees with rill_i8_weights_free. A value that is not a
 * level is an error naming the op, the slot and the variable. */
rill_status *rill_i8_weights_for(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *f, int64_t m, int64_t k,
                                 int64_t groups, bool trans, rill_i8_weights *local, const rill_i8_weights **out);

/* The kernel input `slot`'s float levels as a new int8 array (rill_free), into *out;
 * a value that is not an integer in [-128, 127] is an error naming the op, the slot, the
 * variable, the index and the value. */
rill_status *rill_i8_input_levels(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *x, int8_t **out);
/* The same check without the copy. */
rill_status *rill_i8_input_check(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *x);

/* The dequantizing store of an int8 op with a per-tensor input `scale_slot` ([1]) and a
 * per-output-row one `row_slot` ([rows]), each optional but not both absent, and the
 * divisor max_range: fills y (all but its destination), or an error naming the slot. */
rill_status *rill_i8_dequant_of(rill_kernel_ctx *ctx, size_t scale_slot, size_t row_slot, int64_t rows,
                                float max_range, rill_i8_out *y);

/* The NCHW conv of g (g->n images) of x [n, c, h, w] with w packed from the filter
 * [m, c / groups, kh, kw], into y [n, m, oh, ow], on `path` (capped at what the CPU
 * runs), over up to `threads` threads of dev; groups == c > 1 (depthwise, m / c filters
 * per channel) on the direct path. The result does not depend on the path or the
 * threads. False when scratch could not be allocated. */
bool rill_i8_conv(const rill_device_services *dev, int64_t threads, rill_i8_path path,
                  const rill_conv_geom *g, const int8_t *x, const rill_i8_weights *w,
                  const rill_i8_out *y);

/* rill_i8_conv of float levels x (every value an integer in [-128, 127], checked by the
 * caller): each part converts the columns it unfolds, so no int8 copy of the whole
 * image is made. The same results as rill_i8_conv on the converted image. */
bool rill_i8_conv_levels(const rill_device_services *dev, int64_t threads, rill_i8_path path,
                         const rill_conv_geom *g, const float *x, const rill_i8_weights *w,
                         const rill_i8_out *y);

/* A fake quantize op folded into an int8 op: the float input's level under scale s is
 * rill_quant_one(x, s, inv, bin, round_type) (kernels/cpu/quant_levels.h), the one the
 * fake quantize kernel writes. */
typedef struct rill_i8_quant {
  float s, inv, bin;
  int round_type;
} rill_i8_quant;

/* The quantization of scale s with bit_length bits (2..8) and round_type 0 or 1. */
rill_i8_quant rill_i8_quant_make(float s, int bit_length, int round_type);

/* n floats to their int8 levels under q: false with *bad the index of the first whose
 * level is not in [-128, 127] (a NaN, or a scale that maps outside). */
bool rill_i8_quant_to_i8(const float *x, int64_t n, const rill_i8_quant *q, int8_t *out, int64_t *bad);

/* rill_i8_conv of floats x quantized under q as each part reads them (the fake
 * quantize op folded in): the same results as rill_i8_conv on the levels. False when
 * scratch could not be allocated; *bad_level true (the outputs then unspecified) when a
 * level fell outside [-128, 127]: rill_i8_quant_to_i8 finds the first. */
bool rill_i8_conv_quant(const rill_device_services *dev, int64_t threads, rill_i8_path path,
                        const rill_conv_geom *g, const float *x, const rill_i8_quant *q,
                        const rill_i8_weights *w, const rill_i8_out *y, bool *bad_level);

/* The folded quantizer of an int8 op: the scale of input `scale_slot` ([1]) with the
 * op's bit_length and round_type, into *q; errors name the op and the slot. */
rill_status *rill_i8_quant_of(rill_kernel_ctx *ctx, size_t scale_slot, int bits, int round_type, rill_i8_quant *q);

/* The error of a folded quantizer whose level of input `slot`'s value `bad` is not in
 * int8's range, naming the op, the slot, the variable, the index and the value. */
rill_status *rill_i8_quant_error(rill_kernel_ctx *ctx, size_t slot, size_t scale_slot, const rill_tensor *x,
                                 const rill_i8_quant *q, int64_t bad);

#endif
