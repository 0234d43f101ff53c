/* print's CPU kernel (every dtype): copies In to Out (LoD included) and, when the phase
 * matches, writes In to stderr in Paddle's layout:
 *   <unix seconds>\t<message>\tThe place is:CPUPlace
 *   Tensor[<name>]
 *   \tshape: [2,3,]
 *   \tdtype: f
 *   \tlod: {{0,2,3,}}      (when In has LoD)
 *   \tdata: 0,1,2,3,
 * The dtype letters are C++'s typeid names, as Paddle prints them. One fprintf per
 * line block keeps concurrent prints from interleaving mid-line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

static const char *typeid_name(rill_dtype dt) {
  switch (dt) {
  case RILL_DTYPE_FP32: return "f";
  case RILL_DTYPE_FP64: return "d";
  case RILL_DTYPE_INT32: return "i";
  case RILL_DTYPE_INT64: return "l";
  case RILL_DTYPE_BOOL: return "b";
  case RILL_DTYPE_INT16: return "s";
  case RILL_DTYPE_INT8: return "a";
  case RILL_DTYPE_UINT8: return "h";
  default: return rill_dtype_name(dt);
  }
}

/* Appends printf-formatted text to a growing buffer; false on allocation failure. */
typedef struct text {
  char *p;
  size_t n, cap;
} text;

static bool add(text *t, const char *fmt, ...) RILL_PRINTF(2, 3);
static bool add(text *t, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) return false;
    if (t->p && t->n + (size_t)k < t->cap) {
      t->n += (size_t)k;
      return true;
    }
    size_t cap = (t->cap + (size_t)k + 1) * 2;
    char *q = rill_realloc(t->p, cap);
    if (!q) return false;
    t->p = q;
    t->cap = cap;
  }
}

static bool add_value(text *t, const rill_tensor *x, int64_t i) {
  const void *p = rill_tensor_ptr(x);
  switch (x->dtype) {
  case RILL_DTYPE_FP32: return add(t, "%g,", (double)((const float *)p)[i]);
  case RILL_DTYPE_FP64: return add(t, "%g,", ((const double *)p)[i]);
  case RILL_DTYPE_INT32: return add(t, "%d,", ((const int32_t *)p)[i]);
  case RILL_DTYPE_INT64: return add(t, "%lld,", (long long)((const int64_t *)p)[i]);
  case RILL_DTYPE_BOOL: return add(t, "%d,", (int)((const bool *)p)[i]);
  case RILL_DTYPE_INT16: return add(t, "%d,", ((const int16_t *)p)[i]);
  case RILL_DTYPE_INT8: return add(t, "%d,", ((const int8_t *)p)[i]);
  case RILL_DTYPE_UINT8: return add(t, "%d,", ((const uint8_t *)p)[i]);
  default: return add(t, "?,");
  }
}

static rill_status *print_tensor(rill_kernel_ctx *ctx, const rill_tensor *x) {
  const rill_attr_value *a = ctx->attrs;
  text t = {0};
  bool ok = add(&t, "%lld\t%s\tThe place is:CPUPlace\n", (long long)time(NULL),
                a[RILL_PRINT_ATTR_MESSAGE].v.s ? a[RILL_PRINT_ATTR_MESSAGE].v.s : "");
  if (ok && a[RILL_PRINT_ATTR_PRINT_TENSOR_NAME].v.b)
    ok = add(&t, "Tensor[%s]\n", rill_kin_name(ctx, 0, 0));
  if (ok && a[RILL_PRINT_ATTR_PRINT_TENSOR_SHAPE].v.b) {
    ok = add(&t, "\tshape: [");
    for (int i = 0; ok && i < x->dims.n; i++) ok = add(&t, "%lld,", (long long)x->dims.d[i]);
    ok = ok && add(&t, "]\n");
  }
  if (ok && a[RILL_PRINT_ATTR_PRINT_TENSOR_TYPE].v.b)
    ok = add(&t, "\tdtype: %s\n", typeid_name(x->dtype));
  if (ok && a[RILL_PRINT_ATTR_PRINT_TENSOR_LOD].v.b && x->lod.nlevels > 0) {
    ok = add(&t, "\tlod: {");
    for (size_t l = 0; ok && l < x->lod.nlevels; l++) {
      ok = add(&t, "{");
      for (size_t j = 0; ok && j < x->lod.levels[l].n; j++)
        ok = add(&t, "%llu,", (unsigned long long)x->lod.levels[l].offsets[j]);
      ok = ok && add(&t, "}");
    }
    ok = ok && add(&t, "}\n");
  }
  int64_t n = rill_tensor_numel(x), k = a[RILL_PRINT_ATTR_SUMMARIZE].v.i;
  if (k < 0 || k > n) k = n;
  ok = ok && add(&t, "\tdata: ");
  for (int64_t i = 0; ok && i < k; i++) ok = add_value(&t, x, i);
  ok = ok && add(&t, "\n");
  if (!ok) {
    rill_free(t.p);
    return rill_oom();
  }
  fputs(t.p, stderr);
  fflush(stderr);
  rill_free(t.p);
  return NULL;
}

rill_status *rill_cpu_print(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = rill_kout(ctx, 0, 0);
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input In (%s) is missing or holds no data",
                             rill_kin_name(ctx, 0, 0));
  const char *phase = ctx->attrs[RILL_PRINT_ATTR_PRINT_PHASE].v.s;
  bool fwd = ctx->attrs[RILL_PRINT_ATTR_IS_FORWARD].v.b;
  bool both = phase && strcmp(phase, "BOTH") == 0;
  if (both || (phase && strcmp(phase, fwd ? "FORWARD" : "BACKWARD") == 0))
    RILL_TRY(print_tensor(ctx, x));
  if (!out || out == x) return NULL;
  return rill_tensor_copy(out, x);
}
