/* Ids read back to the host, checked as the CPU kernels check them, and grouped by the
 * row they address (device/rows.cu): what lookup_table and the sparse optimizer updates
 * need. Reading ids back waits for the device's queue to reach the op that reads them;
 * ids usually come straight from a feed, so little is queued before them. */
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cuda/cuda.h"

rill_status *rill_cuda_ids_to_host(rill_kernel_ctx *ctx, rill_cuda_dev *d, size_t slot, int64_t **out, int64_t *n) {
  *out = NULL;
  rill_tensor *ids = rill_kin(ctx, slot, 0);
  const char *what = ctx->schema->inputs[slot].name;
  if (!ids || !rill_tensor_is_set(ids))
    return rill_kernel_error(ctx, "input %s (%s) is missing or holds no data", what, rill_kin_name(ctx, slot, 0));
  if (ids->dtype != RILL_DTYPE_INT64 && ids->dtype != RILL_DTYPE_INT32)
    return rill_kernel_error(ctx, "input %s (%s) is %s; it must be int64 or int32", what, rill_kin_name(ctx, slot, 0),
                             rill_dtype_name(ids->dtype));
  *n = rill_tensor_numel(ids);
  int64_t *h = rill_malloc((size_t)(*n ? *n : 1) * sizeof *h);
  if (!h) return rill_oom();
  /* int32 ids land in the upper half and are widened in place, from the end. */
  void *land = ids->dtype == RILL_DTYPE_INT64 ? (void *)h : (void *)((int32_t *)h + *n);
  cudaError_t e = *n ? cudaMemcpyAsync(land, rill_tensor_ptr(ids), rill_tensor_nbytes(ids), cudaMemcpyDefault,
                                       d->stream)
                     : cudaSuccess;
  if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream);
  if (e != cudaSuccess) {
    rill_free(h);
    return rill_cuda_kernel_check(ctx, e, "reading Ids back");
  }
  if (ids->dtype == RILL_DTYPE_INT32)
    for (int64_t i = 0; i < *n; i++) h[i] = ((const int32_t *)land)[i];
  *out = h;
  return NULL;
}

rill_status *rill_cuda_check_ids(rill_kernel_ctx *ctx, size_t slot, size_t table_slot, const int64_t *ids,
                                 int64_t n, int64_t rows, const int64_t *pad) {
  for (int64_t i = 0; i < n; i++)
    if ((!pad || ids[i] != *pad) && (ids[i] < 0 || ids[i] >= rows))
      return rill_kernel_error(ctx, "input %s (%s) holds %lld at position %lld; input %s (%s) has %lld rows",
                               ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0), (long long)ids[i],
                               (long long)i, ctx->schema->inputs[table_slot].name,
                               rill_kin_name(ctx, table_slot, 0), (long long)rows);
  return NULL;
}

typedef struct id_at {
  int64_t id, at;
} id_at;

static int by_id_then_position(const void *a, const void *b) {
  const id_at *x = a, *y = b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return (x->at > y->at) - (x->at < y->at);
}

rill_status *rill_cuda_groups_make(rill_kernel_ctx *ctx, rill_cuda_dev *d, const int64_t *ids, int64_t n,
                                   const int64_t *skip, rill_cuda_groups *g) {
  memset(g, 0, sizeof *g);
  id_at *pairs = rill_malloc((size_t)(n ? n : 1) * sizeof *pairs);
  if (!pairs) return rill_oom();
  int64_t kept = 0;
  for (int64_t i = 0; i < n; i++)
    if (!skip || ids[i] != *skip) pairs[kept++] = (id_at){ids[i], i};
  qsort(pairs, (size_t)kept, sizeof *pairs, by_id_then_position);
  int64_t ngroups = 0;
  for (int64_t i = 0; i < kept; i++) ngroups += i == 0 || pairs[i].id != pairs[i - 1].id;
  /* rows[ngroups] | offsets[ngroups + 1] | positions[kept] */
  size_t words = (size_t)(2 * ngroups + 1 + kept);
  int64_t *h = rill_malloc(words * sizeof *h);
  if (!h) {
    rill_free(pairs);
    return rill_oom();
  }
  int64_t *rows = h, *offsets = h + ngroups, *positions = offsets + ngroups + 1, k = -1;
  for (int64_t i = 0; i < kept; i++) {
    if (i == 0 || pairs[i].id != pairs[i - 1].id) {
      rows[++k] = pairs[i].id;
      offsets[k] = i;
    }
    positions[i] = pairs[i].at;
  }
  offsets[ngroups] = kept;
  rill_free(pairs);
  rill_status *st = NULL;
  if (ngroups) {
    g->dev = rill_cuda_mem_alloc(d, words * sizeof *h);
    if (!g->dev)
      st = rill_kernel_error(ctx, "out of device memory for %lld row groups", (long long)ngroups);
    else /* from pageable memory: staged before the call returns, so h may go */
      st = rill_cuda_kernel_check(ctx, cudaMemcpyAsync(g->dev, h, words * sizeof *h, cudaMemcpyHostToDevice, d->stream),
                                  "copying row groups to the device");
  }
  rill_free(h);
  g->ngroups = ngroups;
  if (st) rill_cuda_groups_free(d, g);
  return st;
}

cudaError_t rill_cuda_copy_unless_same(rill_tensor *out, const rill_tensor *in, cudaStream_t s) {
  if (rill_tensor_ptr(out) == rill_tensor_ptr(in) || !rill_tensor_nbytes(in)) return cudaSuccess;
  return cudaMemcpyAsync(rill_tensor_ptr(out), rill_tensor_ptr(in), rill_tensor_nbytes(in), cudaMemcpyDeviceToDevice, s);
}

void rill_cuda_groups_free(rill_cuda_dev *d, rill_cuda_groups *g) {
  if (g->dev) rill_cuda_mem_free(d, g->dev);
  g->dev = NULL;
  g->ngroups = 0;
}

rill_status *rill_cuda_grad_rows_check(rill_kernel_ctx *ctx, size_t slot, const rill_selected_rows *sr,
                                       const rill_tensor *param, int64_t *width) {
  int64_t prow = param->dims.n ? param->dims.d[0] : 1;
  *width = prow ? rill_tensor_numel(param) / prow : 0;
  const char *name = rill_kin_name(ctx, slot, 0);
  if (sr->value.dtype != RILL_DTYPE_FP32)
    return rill_kernel_error(ctx, "input Grad (%s) is %s, Param is float32", name, rill_dtype_name(sr->value.dtype));
  if (sr->nrows && rill_tensor_numel(&sr->value) != (int64_t)sr->nrows * *width)
    return rill_kernel_error(ctx, "input Grad (%s): %zu rows of %lld values do not match Param's rows of %lld", name,
                             sr->nrows, (long long)(rill_tensor_numel(&sr->value) / (int64_t)sr->nrows),
                             (long long)*width);
  for (size_t i = 0; i < sr->nrows; i++)
    if (sr->rows[i] < 0 || sr->rows[i] >= prow)
      return rill_kernel_error(ctx, "input Grad (%s): row %lld outside Param's %lld rows", name, (long long)sr->rows[i],
                               (long long)prow);
  if (sr->nrows && rill_tensor_place(&sr->value).device != RILL_DEVICE_CUDA)
    return rill_kernel_error(ctx, "input Grad (%s): its values are not on the device", name);
  return NULL;
}

rill_status *rill_cuda_grad_rows_densify(rill_kernel_ctx *ctx, rill_cuda_dev *d, size_t slot,
                                         const rill_selected_rows *sr, const rill_tensor *param, float **dense) {
  *dense = NULL;
  int64_t width;
  RILL_TRY(rill_cuda_grad_rows_check(ctx, slot, sr, param, &width));
  size_t bytes = rill_tensor_nbytes(param);
  float *g = rill_cuda_mem_alloc(d, bytes ? bytes : 1);
  if (!g) return rill_kernel_error(ctx, "out of device memory for a %zu-byte dense gradient", bytes);
  rill_cuda_groups gr;
  rill_status *st = rill_cuda_groups_make(ctx, d, sr->rows, (int64_t)sr->nrows, NULL, &gr);
  if (!st) {
    cudaError_t e = bytes ? cudaMemsetAsync(g, 0, bytes, d->stream) : cudaSuccess;
    if (e == cudaSuccess)
      e = rill_cuda_sum_groups_f32(rill_tensor_ptr(&sr->value), gr.dev, gr.ngroups, width, NULL, g, d->stream);
    rill_cuda_groups_free(d, &gr);
    st = rill_cuda_kernel_check(ctx, e, "densifying the gradient");
  }
  if (st) {
    rill_cuda_mem_free(d, g);
    return st;
  }
  *dense = g;
  return NULL;
}

/* Position of v in the ascending, distinct rows[0..n). */
static int64_t rank_of(const int64_t *rows, int64_t n, int64_t v) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (rows[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int by_value(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

rill_status *rill_cuda_rows_merge(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_selected_rows *in,
                                  rill_selected_rows *out) {
  int64_t n = (int64_t)in->nrows, width = 1;
  for (int k = 1; k < in->value.dims.n; k++) width *= in->value.dims.d[k];
  if (in->value.dtype != RILL_DTYPE_FP32)
    return rill_kernel_error(ctx, "input X (%s) holds %s rows; merging takes float32", rill_kin_name(ctx, 0, 0),
                             rill_dtype_name(in->value.dtype));
  if (n && rill_tensor_numel(&in->value) != n * width)
    return rill_kernel_error(ctx, "input X (%s): %lld rows but %lld values", rill_kin_name(ctx, 0, 0), (long long)n,
                             (long long)rill_tensor_numel(&in->value));
  int64_t *rows = rill_malloc((size_t)(n ? n : 1) * 2 * sizeof *rows);
  if (!rows) return rill_oom();
  int64_t *rank = rows + n, m = 0;
  if (n) memcpy(rows, in->rows, (size_t)n * sizeof *rows);
  qsort(rows, (size_t)n, sizeof *rows, by_value);
  for (int64_t i = 0; i < n; i++)
    if (m == 0 || rows[m - 1] != rows[i]) rows[m++] = rows[i];
  for (int64_t i = 0; i < n; i++) rank[i] = rank_of(rows, m, in->rows[i]);
  rill_status *st = rill_selected_rows_set_rows(out, rows, (size_t)m);
  rill_dims vd = in->value.dims;
  if (vd.n == 0) vd = (rill_dims){.n = 1, .d = {0}};
  vd.d[0] = m;
  if (!st) st = rill_tensor_alloc_on(&out->value, RILL_DTYPE_FP32, &vd, (rill_place){RILL_DEVICE_CUDA, d->id},
                                     &rill_cuda_backend.memory);
  rill_cuda_groups g = {0};
  if (!st) st = rill_cuda_groups_make(ctx, d, rank, n, NULL, &g);
  rill_free(rows);
  if (st) return rill_cuda_kernel_status(ctx, st);
  out->height = in->height;
  rill_lod_clear(&out->value.lod);
  cudaError_t e = rill_cuda_sum_groups_f32(rill_tensor_ptr(&in->value), g.dev, g.ngroups, width, NULL,
                                           rill_tensor_ptr(&out->value), d->stream);
  rill_cuda_groups_free(d, &g);
  return rill_cuda_kernel_check(ctx, e, "merging rows");
}
