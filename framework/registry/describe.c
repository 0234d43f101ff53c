/* rill_op_describe: an op's schema for humans (`rill ops <type>`). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/registry/registry.h"

typedef struct sbuf {
  char *s;
  size_t n, cap;
  bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) RILL_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (len < 0) {
      b->oom = true;
      return;
    }
    if (b->s && b->n + (size_t)len < b->cap) {
      b->n += (size_t)len;
      return;
    }
    void *items = b->s;
    if (!rill_grow(&items, &b->cap, b->n + (size_t)len + 1, 1)) {
      b->oom = true;
      return;
    }
    b->s = items;
  }
}

static void slot_flags(sbuf *b, unsigned f) {
  static const struct {
    unsigned bit;
    const char *name;
  } names[] = {{RILL_SLOT_DUPLICABLE, "duplicable"},
               {RILL_SLOT_DISPENSABLE, "dispensable"},
               {RILL_SLOT_NO_GRAD, "no gradient"},
               {RILL_SLOT_INTERMEDIATE, "intermediate"},
               {RILL_SLOT_DECL_ONLY, "declaration only"},
               {RILL_SLOT_ANY_PLACE, "any place"},
               {RILL_SLOT_HOST_DATA, "read on the host"}};
  bool any = false;
  for (size_t i = 0; i < RILL_COUNTOF(names); i++)
    if (f & names[i].bit) {
      sb_printf(b, "%s%s", any ? ", " : " [", names[i].name);
      any = true;
    }
  if (any) sb_printf(b, "]");
}

static void slots(sbuf *b, const char *title, const rill_slot_schema *s, size_t n) {
  sb_printf(b, "%s:%s\n", title, n ? "" : " none");
  for (size_t i = 0; i < n; i++) {
    sb_printf(b, "  %s", s[i].name);
    slot_flags(b, s[i].flags);
    if (s[i].doc && *s[i].doc) sb_printf(b, ": %s", s[i].doc);
    sb_printf(b, "\n");
  }
}

static rill_status *attrs(sbuf *b, const rill_op_schema *s) {
  sb_printf(b, "attributes:%s\n", s->nattrs ? "" : " none");
  for (size_t i = 0; i < s->nattrs; i++) {
    const rill_attr_schema *a = &s->attrs[i];
    sb_printf(b, "  %s: %s", a->name, rill_attr_type_name(a->type));
    if (a->flags & RILL_ATTR_REQUIRED) {
      sb_printf(b, " (required)");
    } else {
      char *def = NULL;
      RILL_TRY(rill_attr_value_str(&a->def, &def));
      sb_printf(b, " = %s", def ? def : "?");
      rill_free(def);
    }
    if (a->flags & RILL_ATTR_EXTRA) sb_printf(b, " [extra]");
    if (a->flags & RILL_ATTR_FILE_PATH) sb_printf(b, " [file path]");
    if (a->flags & RILL_ATTR_POLICY) sb_printf(b, " [policy]");
    if (a->flags & RILL_ATTR_ON_HOST) sb_printf(b, " [places on the host]");
    if (a->doc && *a->doc) sb_printf(b, ": %s", a->doc);
    sb_printf(b, "\n");
  }
  return NULL;
}

static void op_flags(sbuf *b, unsigned f) {
  static const struct {
    unsigned bit;
    const char *name;
  } names[] = {{RILL_OP_BLOCKING, "blocking"},         {RILL_OP_SIDE_EFFECT, "side effect"},
               {RILL_OP_FEED, "feed"},                 {RILL_OP_FETCH, "fetch"},
               {RILL_OP_KERNEL_SHAPES, "kernel shapes"}, {RILL_OP_SUBBLOCK, "sub-block"},
               {RILL_OP_RANDOM, "random"},             {RILL_OP_WRITES_FILES, "writes files"},
               {RILL_OP_READS_FILES, "reads files"},  {RILL_OP_INFER_READS_DATA, "infers from data"},
               {RILL_OP_INFER_READS_LOD, "infers from LoD"}, {RILL_OP_PLACE_OF_INPUT, "runs where its input is kept"},
               {RILL_OP_INPLACE, "in place"},         {RILL_OP_CONV_FUSABLE, "conv fusable"},
               {RILL_OP_FUSABLE_ACT, "fusable activation"}, {RILL_OP_FC_ACT, "fc activation"},
               {RILL_OP_LOOP, "loop"},               {RILL_OP_CONCURRENT_EFFECT, "concurrent effect"},
               {RILL_OP_NO_GRADIENT, "no gradient (as in Fluid)"}};
  sb_printf(b, "flags:");
  bool any = false;
  for (size_t i = 0; i < RILL_COUNTOF(names); i++)
    if (f & names[i].bit) {
      sb_printf(b, "%s%s", any ? ", " : " ", names[i].name);
      any = true;
    }
  sb_printf(b, "%s\n", any ? "" : " none");
}

static rill_status *kernels(sbuf *b, const char *type) {
  size_t n = rill_registry_kernels(type, NULL, 0);
  sb_printf(b, "kernels:%s\n", n ? "" : " none");
  if (!n) return NULL;
  rill_kernel_def *ks = rill_calloc(n, sizeof *ks);
  if (!ks) return rill_oom();
  size_t got = rill_registry_kernels(type, ks, n);
  if (got < n) n = got;
  for (size_t bi = 0; bi < rill_backend_count(); bi++) {
    const rill_backend *be = rill_backend_at(bi);
    bool any = false;
    for (size_t i = 0; be && i < n; i++) {
      if (ks[i].device != be->device) continue;
      if (!any) sb_printf(b, "  %s: ", be->name);
      sb_printf(b, "%s%s", any ? ", " : "",
                ks[i].dtype == RILL_KERNEL_ANY_DTYPE ? "any dtype" : rill_dtype_name(ks[i].dtype));
      any = true;
    }
    if (any) sb_printf(b, "\n");
  }
  rill_free(ks);
  return NULL;
}

rill_status *rill_op_describe(const char *type, char **out) {
  if (!type || !out) return rill_error(RILL_INVALID_ARGUMENT, "rill_op_describe: no op type");
  RILL_TRY(rill_registry_init());
  const rill_op_schema *s = rill_schema_find(type);
  if (!s) return rill_error(RILL_NOT_FOUND, "no op '%s' is registered", type);
  sbuf b = {0};
  sb_printf(&b, "%s\n", s->type);
  if (s->doc && *s->doc) sb_printf(&b, "  %s\n", s->doc);
  slots(&b, "inputs", s->inputs, s->ninputs);
  slots(&b, "outputs", s->outputs, s->noutputs);
  rill_status *st = attrs(&b, s);
  if (!st) {
    op_flags(&b, s->flags);
    st = kernels(&b, s->type);
  }
  if (!st) sb_printf(&b, "gradient: %s\n", s->grad ? "yes" : "no");
  if (!st && b.oom) st = rill_oom();
  if (st) {
    rill_free(b.s);
    return st;
  }
  *out = b.s;
  return NULL;
}
