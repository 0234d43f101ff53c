/* Kernel-side helpers of the tensor-manipulation ops: views that share the input's
 * buffer, Paddle's XShape, and element-size-generic copies (transpose, regions, concat
 * and split), so one kernel serves every dtype. */
#ifndef RILL_KERNELS_CPU_TENSOR_OPS_H
#define RILL_KERNELS_CPU_TENSOR_OPS_H

#include "kernels/cpu/kernels.h"
#include "operators/tensor_ops.h"

/* Makes output (slot, 0) a view of x with dims d, sharing x's buffer (when output and x
 * are the same variable only the dims change). x's LoD is kept when the first extent
 * is unchanged, else dropped. Element counts must agree (checked). */
rill_status *rill_cpu_view(rill_kernel_ctx *ctx, size_t slot, rill_tensor *x, const rill_dims *d);
/* Sets output XShape (slot, 0), when bound, to an empty tensor of dims [0] + x's dims.
 * Call before rill_cpu_view when the view may be x itself. */
rill_status *rill_cpu_xshape(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *x);

/* Output variable (out_slot, out_i) := input variable (in_slot, in_i), whatever it holds:
 * a dense tensor (with its LoD), selected rows, or a tensor array (every item). An output
 * holding another kind, or an input holding nothing, is an error naming both variables. */
rill_status *rill_cpu_copy_variable(rill_kernel_ctx *ctx, size_t in_slot, size_t in_i,
                                    size_t out_slot, size_t out_i);

/* dst (dims sd permuted by perm: dst dim i = sd dim perm[i]) := src transposed. */
void rill_cpu_transpose_bytes(const void *src, const rill_dims *sd, const int *perm, void *dst,
                              size_t esize);
/* Copies the box [start, start + len) of a tensor of dims `full` between the full
 * tensor and a packed tensor of dims len: to_packed true reads full, writes packed. */
void rill_cpu_box_copy(void *full, const rill_dims *full_dims, const int64_t *start,
                       const int64_t *len, void *packed, size_t esize, bool to_packed);
/* Concatenation along one axis, viewed as [outer, parts[i] * inner] pieces: gather
 * (pieces -> whole) or scatter (whole -> pieces; NULL pieces are skipped). */
void rill_cpu_concat_bytes(void *whole, void *const *pieces, const int64_t *parts, size_t n,
                           int64_t outer, int64_t inner, size_t esize, bool gather);

/* dst[i] += src[i] for n elements of dtype dt (float32/64, int32/64); false for other
 * dtypes. */
bool rill_cpu_add_elems(void *dst, const void *src, int64_t n, rill_dtype dt);

/* The start of a gradient kernel whose output 0 takes the shape of forward input xslot
 * and the dtype of the incoming gradient gslot: *dx is NULL (nothing to do) when that
 * gradient is not wanted, else allocated and checked. */
rill_status *rill_cpu_grad_like_input(rill_kernel_ctx *ctx, size_t xslot, size_t gslot,
                                      rill_tensor **x, rill_tensor **g, rill_tensor **dx);

/* Fills n elements of dtype dt with v (bool: v != 0); false for a dtype that holds no
 * numbers. */
bool rill_cpu_fill_elems(void *p, int64_t n, rill_dtype dt, double v);

/* Seed of the random ops when their `seed` attribute is 0 (mixed with the output's name). */
#define RILL_RANDOM_DEFAULT_SEED 0x5eed5eedULL
/* The seed a random kernel uses: seed_attr when nonzero, else RILL_RANDOM_DEFAULT_SEED
 * mixed with the FNV-1a hash of output (0, 0)'s name. */
uint64_t rill_random_seed(const rill_kernel_ctx *ctx, int32_t seed_attr);
/* A seed for a kernel run that must differ from the run before (an unseeded dropout
 * mask, dpsgd's noise): from the next draw of the executor's generator (such ops are
 * flagged RILL_OP_RANDOM, so the parallel schedule keeps the draws in program order), so
 * the same executor seed gives the same runs; outside an executor a process-wide count
 * stands in. */
uint64_t rill_random_run_seed(const rill_kernel_ctx *ctx);
/* The seed of a run of an op with a `seed` attribute (dpsgd, the sampling ops): a nonzero
 * attribute gives the same draws every run, 0 a new seed each run (rill_random_run_seed). */
uint64_t rill_random_seed_or_run(const rill_kernel_ctx *ctx, int32_t seed_attr);

#endif
