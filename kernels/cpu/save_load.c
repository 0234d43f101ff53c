/* save, load, save_combine, load_combine CPU kernels (any dtype). Writes go through
 * the crash-safe writer (framework/io/file.h): after a crash the file holds the old
 * content or the new, never a mix. Reads check every length (framework/io/stream.h);
 * errors name the op, the variable and the file. */
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/io/file.h"
#include "framework/io/stream.h"
#include "kernels/cpu/kernels.h"

/* The helpers shared by save and save_combine (load and load_combine) read the
 * attributes both have through save's (load's) names. */
_Static_assert(RILL_SAME_POS(RILL_SAVE_ATTR_FILE_PATH, RILL_SAVE_COMBINE_ATTR_FILE_PATH) &&
                   RILL_SAME_POS(RILL_SAVE_ATTR_OVERWRITE, RILL_SAVE_COMBINE_ATTR_OVERWRITE) &&
                   RILL_SAME_POS(RILL_SAVE_ATTR_SAVE_AS_FP16, RILL_SAVE_COMBINE_ATTR_SAVE_AS_FP16),
               "save and save_combine must share their first attributes");
_Static_assert(RILL_SAME_POS(RILL_LOAD_ATTR_FILE_PATH, RILL_LOAD_COMBINE_ATTR_FILE_PATH) &&
                   RILL_SAME_POS(RILL_LOAD_ATTR_LOAD_AS_FP16, RILL_LOAD_COMBINE_ATTR_LOAD_AS_FP16),
               "load and load_combine must share their first attributes");

/* Round to nearest even, overflow to infinity, NaN kept quiet. */
static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds past 65504 */
  if (ax < 0x38800000u) {                                  /* subnormal half or zero */
    if (ax < 0x33000000u) return sign;
    uint32_t man = (ax & 0x7fffff) | 0x800000, shift = 113 - (ax >> 23) + 13;
    uint32_t half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t r = ax - 0x38000000u;
  uint32_t half = r >> 13, rest = r & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) half++;
  return (uint16_t)(sign | half);
}

/* dst := src converted to float16 (src float16, float32 or float64). */
static rill_status *to_fp16(const rill_kernel_ctx *ctx, const char *var, const rill_tensor *src,
                            rill_tensor *dst) {
  if (src->dtype != RILL_DTYPE_FP32 && src->dtype != RILL_DTYPE_FP64 && src->dtype != RILL_DTYPE_FP16)
    return rill_kernel_error(ctx, "variable '%s' is %s: only float32/float64 convert to float16", var,
                             rill_dtype_name(src->dtype));
  RILL_TRY(rill_tensor_alloc(dst, RILL_DTYPE_FP16, &src->dims));
  int64_t n = rill_tensor_numel(src);
  uint16_t *o = rill_tensor_ptr(dst);
  if (src->dtype == RILL_DTYPE_FP16) {
    memcpy(o, rill_tensor_ptr(src), (size_t)n * 2);
  } else if (src->dtype == RILL_DTYPE_FP32) {
    const float *in = rill_tensor_ptr(src);
    for (int64_t i = 0; i < n; i++) o[i] = float_to_half(in[i]);
  } else {
    const double *in = rill_tensor_ptr(src);
    for (int64_t i = 0; i < n; i++) o[i] = float_to_half((float)in[i]);
  }
  if (src->lod.nlevels) RILL_TRY(rill_lod_copy(&dst->lod, &src->lod));
  return NULL;
}

static rill_status *check_target(const rill_kernel_ctx *ctx, const char *path) {
  if (!path || !*path) return rill_kernel_error(ctx, "attribute file_path is empty");
  if (!ctx->attrs[RILL_SAVE_ATTR_OVERWRITE].v.b && rill_path_exists(path))
    return rill_status_wrap(rill_error(RILL_ALREADY_EXISTS,
                                       "'%s' exists and overwrite is false", path),
                            "%s", ctx->schema->type);
  if (rill_path_is_dir(path))
    return rill_kernel_error(ctx, "file_path '%s' is a directory", path);
  char *dir = rill_path_dirname(path);
  if (!dir) return rill_oom();
  rill_status *st = rill_dir_make(dir);
  rill_free(dir);
  return st ? rill_status_wrap(st, "%s: file '%s'", ctx->schema->type, path) : NULL;
}

/* Appends variable (slot 0, i)'s stream to `out`. `fp16` holds a converted copy. */
static rill_status *append_var(const rill_kernel_ctx *ctx, size_t i, rill_bytes *out,
                               rill_tensor *fp16) {
  const char *name = rill_kin_name(ctx, 0, i);
  rill_variable *v = i < ctx->nin[0] ? ctx->in[0][i] : NULL;
  if (!v || v->kind == RILL_VARKIND_EMPTY)
    return rill_kernel_error(ctx, "variable '%s' has no value to save", name);
  bool half = ctx->attrs[RILL_SAVE_ATTR_SAVE_AS_FP16].v.b;
  if (v->kind == RILL_VARKIND_SELECTED_ROWS) {
    if (half) return rill_kernel_error(ctx, "variable '%s': save_as_fp16 takes dense tensors only", name);
    return rill_stream_write_selected_rows(out, &v->u.rows);
  }
  if (v->kind != RILL_VARKIND_TENSOR || !rill_tensor_is_set(&v->u.tensor))
    return rill_kernel_error(ctx, "variable '%s' holds a %s, not a tensor", name,
                             rill_var_kind_name(v->kind));
  const rill_tensor *t = &v->u.tensor;
  if (half) {
    RILL_TRY(to_fp16(ctx, name, t, fp16));
    t = fp16;
  }
  return rill_stream_write_lod_tensor(out, t);
}

static rill_status *save_vars(rill_kernel_ctx *ctx, size_t n) {
  const char *path = ctx->attrs[RILL_SAVE_ATTR_FILE_PATH].v.s;
  RILL_TRY(check_target(ctx, path));
  rill_bytes out;
  rill_bytes_init(&out);
  rill_tensor fp16;
  rill_tensor_init(&fp16);
  rill_status *st = NULL;
  for (size_t i = 0; i < n && !st; i++) st = append_var(ctx, i, &out, &fp16);
  if (!st) st = rill_file_write(path, out.data, out.size);
  rill_tensor_clear(&fp16);
  rill_bytes_clear(&out);
  return st ? rill_status_wrap(st, "%s to '%s'", ctx->schema->type, path) : NULL;
}

rill_status *rill_cpu_save(rill_kernel_ctx *ctx) {
  if (ctx->nin[0] != 1) return rill_kernel_error(ctx, "takes exactly one input X");
  return save_vars(ctx, 1);
}

rill_status *rill_cpu_save_combine(rill_kernel_ctx *ctx) {
  if (ctx->attrs[RILL_SAVE_COMBINE_ATTR_SAVE_TO_MEMORY].v.b)
    return rill_error(RILL_UNIMPLEMENTED, "save_combine: save_to_memory is not supported");
  return save_vars(ctx, ctx->nin[0]);
}

/* Reads one variable at the reader's position into `tmp`, in the kind output (0, i)
 * holds (selected rows, else a dense tensor). */
static rill_status *read_var(rill_kernel_ctx *ctx, rill_reader *r, size_t i, rill_variable *tmp) {
  const char *name = rill_kout_name(ctx, 0, i);
  rill_variable *v = i < ctx->nout[0] ? ctx->out[0][i] : NULL;
  if (!v) return rill_kernel_error(ctx, "output Out #%zu is missing", i);
  if (v->kind == RILL_VARKIND_SELECTED_ROWS) {
    rill_selected_rows *sr = rill_variable_selected_rows(tmp);
    if (!sr) return rill_oom();
    return rill_stream_read_selected_rows(r, name, NULL, sr);
  }
  if (v->kind != RILL_VARKIND_EMPTY && v->kind != RILL_VARKIND_TENSOR)
    return rill_kernel_error(ctx, "variable '%s' holds a %s, not a tensor", name,
                             rill_var_kind_name(v->kind));
  rill_tensor *t = rill_variable_tensor(tmp);
  if (!t) return rill_oom();
  RILL_TRY(rill_stream_read_lod_tensor(r, name, NULL, t));
  if (ctx->attrs[RILL_LOAD_ATTR_LOAD_AS_FP16].v.b && t->dtype != RILL_DTYPE_FP16) {
    rill_tensor h;
    rill_tensor_init(&h);
    rill_status *st = to_fp16(ctx, name, t, &h);
    if (!st) rill_tensor_swap(&h, t);
    rill_tensor_clear(&h);
    return st;
  }
  return NULL;
}

/* Reads every output into temporaries first: a bad file leaves the outputs as they
 * were. */
static rill_status *load_vars(rill_kernel_ctx *ctx, size_t n) {
  const char *path = ctx->attrs[RILL_LOAD_ATTR_FILE_PATH].v.s;
  if (!path || !*path) return rill_kernel_error(ctx, "attribute file_path is empty");
  rill_variable *tmp = rill_calloc(n ? n : 1, sizeof *tmp);
  if (!tmp) return rill_oom();
  for (size_t i = 0; i < n; i++) rill_variable_init(&tmp[i]);
  rill_reader r;
  rill_status *st = rill_reader_open(&r, path);
  if (!st) {
    for (size_t i = 0; i < n && !st; i++) st = read_var(ctx, &r, i, &tmp[i]);
    if (!st && rill_reader_left(&r))
      st = rill_error(RILL_CORRUPT,
                      "'%s': %zu bytes left after the last variable (%s): the file holds more "
                      "than the op's %zu variable%s",
                      path, rill_reader_left(&r), rill_kout_name(ctx, 0, n ? n - 1 : 0), n,
                      n == 1 ? "" : "s");
    rill_reader_close(&r);
  }
  for (size_t i = 0; i < n && !st; i++) {
    rill_variable *v = ctx->out[0][i];
    if (tmp[i].kind == RILL_VARKIND_SELECTED_ROWS) {
      rill_selected_rows swap = v->u.rows;
      v->u.rows = tmp[i].u.rows;
      tmp[i].u.rows = swap;
    } else {
      rill_tensor_swap(rill_variable_tensor(v), &tmp[i].u.tensor);
    }
  }
  for (size_t i = 0; i < n; i++) rill_variable_clear(&tmp[i]);
  rill_free(tmp);
  return st ? rill_status_wrap(st, "%s", ctx->schema->type) : NULL;
}

rill_status *rill_cpu_load(rill_kernel_ctx *ctx) {
  if (ctx->nout[0] != 1) return rill_kernel_error(ctx, "takes exactly one output Out");
  if (ctx->attrs[RILL_LOAD_ATTR_SEEK].v.l != -1)
    return rill_error(RILL_UNIMPLEMENTED, "load: partial loads (seek %lld) are not supported",
                      (long long)ctx->attrs[RILL_LOAD_ATTR_SEEK].v.l);
  return load_vars(ctx, 1);
}

rill_status *rill_cpu_load_combine(rill_kernel_ctx *ctx) {
  if (ctx->attrs[RILL_LOAD_COMBINE_ATTR_MODEL_FROM_MEMORY].v.b)
    return rill_error(RILL_UNIMPLEMENTED,
                      "load_combine: model_from_memory is not supported (string attributes end "
                      "at the first NUL byte); load the parameters from a file");
  return load_vars(ctx, ctx->nout[0]);
}
