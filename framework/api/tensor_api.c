/* The public tensor and scope API (include/rill.h, "tensors" and "scopes").
 *
 * A public rill_tensor handle is a heap-allocated struct rill_tensor (tensor.h). Handles
 * never share the struct itself: a handle handed out by the library is a new view whose
 * buffer is shared by reference count, so destroying a handle never invalidates another
 * one, and a caller's deleter runs only once the last view anywhere is gone. */
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/data/scope.h"
#include "framework/data/tensor.h"
#include "framework/registry/registry.h"

/* Checks dtype and dims of a tensor to be created and returns its size in bytes. */
static rill_status *check_shape(rill_dtype dtype, const int64_t *dims, size_t ndim,
                                rill_dims *out_dims, size_t *out_bytes) {
  size_t esize = rill_dtype_size(dtype);
  if (!esize) return rill_error(RILL_INVALID_ARGUMENT, "invalid tensor dtype %d", (int)dtype);
  if (ndim > RILL_MAX_DIMS)
    return rill_error(RILL_INVALID_ARGUMENT, "a tensor has at most %d dimensions, got %zu",
                      RILL_MAX_DIMS, ndim);
  if (ndim && !dims) return rill_error(RILL_INVALID_ARGUMENT, "dims is NULL");
  rill_dims d;
  rill_dims_set(&d, dims, ndim);
  for (size_t i = 0; i < ndim; i++)
    if (dims[i] < 0)
      return rill_error(RILL_INVALID_ARGUMENT, "dimension %zu is negative (%lld)", i,
                        (long long)dims[i]);
  int64_t numel;
  size_t bytes;
  if (!rill_dims_numel(&d, INT64_MAX, &numel) || !rill_mul_size((size_t)numel, esize, &bytes)) {
    char b[RILL_DIMS_STR_MAX];
    return rill_error(RILL_INVALID_ARGUMENT, "tensor shape %s is too large",
                      rill_dims_str(&d, b, sizeof b));
  }
  *out_dims = d;
  *out_bytes = bytes;
  return NULL;
}

rill_status *rill_tensor_create(rill_dtype dtype, const int64_t *dims, size_t ndim,
                                rill_tensor **out) {
  if (!out) return rill_error(RILL_INVALID_ARGUMENT, "rill_tensor_create: out is NULL");
  rill_dims d;
  size_t bytes;
  RILL_TRY(check_shape(dtype, dims, ndim, &d, &bytes));
  rill_tensor *t = rill_malloc(sizeof *t);
  if (!t) return rill_oom();
  rill_tensor_init(t);
  rill_status *st = rill_tensor_alloc(t, dtype, &d);
  if (st) {
    rill_free(t);
    return st;
  }
  if (bytes) memset(rill_tensor_ptr(t), 0, bytes);
  *out = t;
  return NULL;
}

rill_status *rill_tensor_create_from_data(rill_dtype dtype, const int64_t *dims, size_t ndim,
                                          void *data, size_t byte_size,
                                          void (*deleter)(void *data, void *ctx),
                                          void *deleter_ctx, rill_tensor **out) {
  if (!out) return rill_error(RILL_INVALID_ARGUMENT, "rill_tensor_create_from_data: out is NULL");
  rill_dims d;
  size_t bytes;
  RILL_TRY(check_shape(dtype, dims, ndim, &d, &bytes));
  if (byte_size < bytes)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "tensor of %s needs %zu bytes but the data holds %zu", rill_dtype_name(dtype),
                      bytes, byte_size);
  if (!data && byte_size)
    return rill_error(RILL_INVALID_ARGUMENT, "data is NULL but byte_size is %zu", byte_size);
  /* The handle first: once the buffer exists, a failure would have to undo it without
   * running the deleter. */
  rill_tensor *t = rill_malloc(sizeof *t);
  if (!t) return rill_oom();
  rill_tensor_init(t);
  t->buf = rill_buffer_wrap(data, byte_size, (rill_place){RILL_DEVICE_CPU, 0}, deleter,
                            deleter_ctx);
  if (!t->buf) {
    rill_free(t);
    return rill_oom();
  }
  t->dtype = dtype;
  t->dims = d;
  *out = t;
  return NULL;
}

void rill_tensor_destroy(rill_tensor *tensor) {
  if (!tensor) return;
  rill_tensor_clear(tensor);
  rill_free(tensor);
}

rill_dtype rill_tensor_dtype(const rill_tensor *tensor) {
  return tensor ? tensor->dtype : RILL_DTYPE_FP32;
}

size_t rill_tensor_ndim(const rill_tensor *tensor) {
  return tensor ? (size_t)tensor->dims.n : 0;
}

const int64_t *rill_tensor_dims(const rill_tensor *tensor) {
  return tensor ? tensor->dims.d : NULL;
}

/* rill_tensor_numel is shared with the internal API (framework/data/tensor.c). */

size_t rill_tensor_byte_size(const rill_tensor *tensor) {
  return tensor ? rill_tensor_nbytes(tensor) : 0;
}

void *rill_tensor_data(rill_tensor *tensor) { return tensor ? rill_tensor_ptr(tensor) : NULL; }

size_t rill_tensor_lod_levels(const rill_tensor *tensor) {
  return tensor ? tensor->lod.nlevels : 0;
}

const uint64_t *rill_tensor_lod(const rill_tensor *tensor, size_t level, size_t *count) {
  if (!tensor || level >= tensor->lod.nlevels) {
    if (count) *count = 0;
    return NULL;
  }
  if (count) *count = tensor->lod.levels[level].n;
  return tensor->lod.levels[level].offsets;
}

rill_status *rill_tensor_set_lod(rill_tensor *tensor, size_t nlevels,
                                 const uint64_t *const *levels, const size_t *counts) {
  if (!tensor) return rill_error(RILL_INVALID_ARGUMENT, "rill_tensor_set_lod: tensor is NULL");
  if (nlevels && (!levels || !counts))
    return rill_error(RILL_INVALID_ARGUMENT, "rill_tensor_set_lod: levels or counts is NULL");
  if (nlevels && tensor->dims.n == 0)
    return rill_error(RILL_INVALID_ARGUMENT, "a rank-0 tensor cannot carry a LoD");
  for (size_t l = 0; l < nlevels; l++)
    if (counts[l] && !levels[l])
      return rill_error(RILL_INVALID_ARGUMENT, "LoD level %zu is NULL", l);
  /* Validate on a borrowed view first, so a bad LoD costs no allocation. */
  rill_lod view = {0, NULL};
  rill_lod_level stack_levels[16];
  rill_lod_level *lv = stack_levels;
  if (nlevels > 16) {
    lv = rill_calloc(nlevels, sizeof *lv);
    if (!lv) return rill_oom();
  }
  for (size_t l = 0; l < nlevels; l++) {
    lv[l].n = counts[l];
    lv[l].offsets = (uint64_t *)levels[l];
  }
  view.nlevels = nlevels;
  view.levels = nlevels ? lv : NULL;
  rill_status *st = rill_lod_check(&view, tensor->dims.n ? tensor->dims.d[0] : 0);
  if (!st) {
    rill_lod copy = {0, NULL};
    st = rill_lod_copy(&copy, &view);
    if (!st) {
      rill_lod_clear(&tensor->lod);
      tensor->lod = copy;
    }
  }
  if (lv != stack_levels) rill_free(lv);
  return st;
}

/* ---- scopes (create/destroy live in framework/data/scope.c) ---- */

rill_status *rill_scope_get_tensor(rill_scope *scope, const char *name, rill_tensor **out) {
  if (!scope || !name || !out)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_scope_get_tensor: NULL argument");
  rill_variable *v = rill_scope_find(scope, name);
  if (!v || v->kind == RILL_VARKIND_EMPTY ||
      (v->kind == RILL_VARKIND_TENSOR && !rill_tensor_is_set(&v->u.tensor)))
    return rill_error(RILL_NOT_FOUND, "variable '%s' holds no tensor", name);
  if (v->kind != RILL_VARKIND_TENSOR)
    return rill_error(RILL_INVALID_ARGUMENT, "variable '%s' holds %s, not a dense tensor", name,
                      rill_var_kind_name(v->kind));
  /* A checkpoint still writing the variable's bytes keeps them; the variable (and so
   * the caller, who may write through rill_tensor_data) gets a copy. */
  RILL_TRY(rill_status_wrap(rill_tensor_unshare_pinned(&v->u.tensor), "variable '%s'", name));
  rill_tensor *t = rill_malloc(sizeof *t);
  if (!t) return rill_oom();
  rill_tensor_init(t);
  /* rill_tensor_data is host memory: a variable on a device is copied here. */
  rill_place at = rill_tensor_place(&v->u.tensor);
  rill_status *st = at.device == RILL_HOST_DEVICE
                        ? rill_tensor_share(t, &v->u.tensor)
                        : rill_tensor_copy_at(t, &v->u.tensor, (rill_place){RILL_HOST_DEVICE, 0});
  if (st) {
    rill_tensor_clear(t);
    rill_free(t);
    return rill_status_wrap(st, "variable '%s'", name);
  }
  *out = t;
  return NULL;
}

rill_status *rill_scope_set_tensor(rill_scope *scope, const char *name, const rill_tensor *tensor) {
  if (!scope || !name || !tensor)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_scope_set_tensor: NULL argument");
  if (!*name) return rill_error(RILL_INVALID_ARGUMENT, "rill_scope_set_tensor: empty name");
  rill_tensor view;
  rill_tensor_init(&view);
  RILL_TRY(rill_tensor_share(&view, tensor));
  rill_variable *v;
  rill_status *st = rill_scope_var(scope, name, &v);
  if (st) {
    rill_tensor_clear(&view);
    return st;
  }
  if (v->kind != RILL_VARKIND_TENSOR) rill_variable_clear(v);
  rill_tensor *dst = rill_variable_tensor(v);
  rill_tensor_clear(dst);
  *dst = view;
  return NULL;
}
