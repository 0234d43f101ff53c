/* Every differentiable op's gradient ops have CPU kernels in each dtype its forward op
 * has kernels for. The grad maker of every schema with one runs on a synthetic forward
 * op (one variable per slot, every variable wanting a gradient); each op type it emits
 * must have a kernel for each of the forward's dtypes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "framework/registry/registry.h"

/* Gaps known and accepted: forward op, dtype, and why. */
#define INT_NO_GRAD                                                                    \
  "integer tensors get no gradient (Paddle marks them stop_gradient): the integer " \
  "kernels serve index and shape arithmetic"
static const struct {
  const char *op;
  rill_dtype dtype;
  const char *why;
} allowed[] = {
    {"elementwise_add", RILL_DTYPE_INT32, INT_NO_GRAD},
    {"elementwise_add", RILL_DTYPE_INT64, INT_NO_GRAD},
    {"elementwise_div", RILL_DTYPE_INT32, INT_NO_GRAD},
    {"elementwise_div", RILL_DTYPE_INT64, INT_NO_GRAD},
    {"elementwise_max", RILL_DTYPE_INT32, INT_NO_GRAD},
    {"elementwise_max", RILL_DTYPE_INT64, INT_NO_GRAD},
    {"elementwise_min", RILL_DTYPE_INT32, INT_NO_GRAD},
    {"elementwise_min", RILL_DTYPE_INT64, INT_NO_GRAD},
    {"elementwise_mul", RILL_DTYPE_INT32, INT_NO_GRAD},
    {"elementwise_mul", RILL_DTYPE_INT64, INT_NO_GRAD},
    {"elementwise_sub", RILL_DTYPE_INT32, INT_NO_GRAD},
    {"elementwise_sub", RILL_DTYPE_INT64, INT_NO_GRAD},
    {"reduce_max", RILL_DTYPE_INT32, INT_NO_GRAD},
    {"reduce_max", RILL_DTYPE_INT64, INT_NO_GRAD},
    {"reduce_min", RILL_DTYPE_INT32, INT_NO_GRAD},
    {"reduce_min", RILL_DTYPE_INT64, INT_NO_GRAD},
    {"reduce_prod", RILL_DTYPE_INT32, INT_NO_GRAD},
    {"reduce_prod", RILL_DTYPE_INT64, INT_NO_GRAD},
    {"reduce_sum", RILL_DTYPE_INT32, INT_NO_GRAD},
    {"reduce_sum", RILL_DTYPE_INT64, INT_NO_GRAD},
    {"top_k", RILL_DTYPE_INT32, INT_NO_GRAD},
    {"top_k", RILL_DTYPE_INT64, INT_NO_GRAD},
};

/* Ops whose gradient an INT attribute turns on (off at its default): the value to give. */
static const struct {
  const char *op, *attr;
  int32_t value;
} grad_on[] = {
    {"py_func", "backward_callable_id", 0}, /* -1: no backward callback */
};

static void turn_grad_on(const char *op, const char *attr, rill_attr_value *v) {
  for (size_t i = 0; i < sizeof grad_on / sizeof grad_on[0]; i++)
    if (strcmp(grad_on[i].op, op) == 0 && strcmp(grad_on[i].attr, attr) == 0)
      v->v.i = grad_on[i].value;
}

static bool is_allowed(const char *op, rill_dtype dt) {
  for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
    if (strcmp(allowed[i].op, op) == 0 && allowed[i].dtype == dt) return true;
  return false;
}

static bool wants_all(void *impl, const char *var) {
  (void)impl;
  (void)var;
  return true;
}

static char names[2][16][64];
static char *args[2][16];

static void fill_slots(const rill_slot_schema *s, size_t n, rill_op_slot *out, int side) {
  for (size_t i = 0; i < n && i < 16; i++) {
    snprintf(names[side][i], sizeof names[side][i], "%s_%s", side ? "out" : "in", s[i].name);
    args[side][i] = names[side][i];
    out[i].param = (char *)s[i].name;
    out[i].args = &args[side][i];
    out[i].nargs = 1;
  }
}

static bool has_kernel(const char *op, rill_dtype dt) {
  rill_kernel_def k[64];
  size_t n = rill_registry_kernels(op, k, 64);
  for (size_t i = 0; i < n && i < 64; i++)
    if (k[i].device == RILL_DEVICE_CPU && (k[i].dtype == dt || k[i].dtype == RILL_KERNEL_ANY_DTYPE))
      return true;
  return false;
}

Test(registry, grad_ops_have_kernels_for_every_forward_dtype) {
  cr_assert_null(rill_registry_init());
  size_t checked = 0, missing = 0;
  char report[4096] = "";
  for (size_t i = 0; i < rill_registry_count(); i++) {
    const rill_op_schema *s = rill_registry_at(i);
    if (!s->grad) continue;
    cr_assert(s->ninputs <= 16 && s->noutputs <= 16, "%s has too many slots for the test", s->type);
    rill_op_slot in[16], out[16];
    fill_slots(s->inputs, s->ninputs, in, 0);
    fill_slots(s->outputs, s->noutputs, out, 1);
    /* Attributes at their defaults; required INT ones (cast's dtypes) as fp32. */
    rill_attr at[64] = {{0}};
    cr_assert(s->nattrs <= 64, "%s has too many attributes for the test", s->type);
    for (size_t k = 0; k < s->nattrs; k++) {
      at[k].name = (char *)s->attrs[k].name;
      at[k].value = s->attrs[k].def;
      at[k].value.type = s->attrs[k].type;
      if ((s->attrs[k].flags & RILL_ATTR_REQUIRED) && s->attrs[k].type == RILL_ATTR_INT)
        at[k].value.v.i = RILL_DTYPE_FP32;
      if (s->attrs[k].type == RILL_ATTR_INT) turn_grad_on(s->type, at[k].name, &at[k].value);
    }
    rill_op_desc fwd = {.type = (char *)s->type, .inputs = in, .ninputs = s->ninputs,
                        .outputs = out, .noutputs = s->noutputs, .attrs = at,
                        .nattrs = s->nattrs};
    rill_grad_ctx g = {.fwd = &fwd, .schema = s, .wants_grad = wants_all};
    rill_status *st = s->grad(&g);
    cr_assert_null(st, "%s: grad maker failed: %s", s->type, st ? rill_status_message(st) : "");
    cr_assert_gt(g.nops, 0, "%s: grad maker emitted no op", s->type);
    rill_kernel_def fk[64];
    size_t nf = rill_registry_kernels(s->type, fk, 64);
    for (size_t k = 0; k < nf && k < 64; k++) {
      if (fk[k].device != RILL_DEVICE_CPU || is_allowed(s->type, fk[k].dtype)) continue;
      for (size_t j = 0; j < g.nops; j++) {
        checked++;
        if (fk[k].dtype == RILL_KERNEL_ANY_DTYPE || has_kernel(g.ops[j].type, fk[k].dtype)) continue;
        missing++;
        size_t len = strlen(report);
        snprintf(report + len, sizeof report - len, " %s->%s(%s)", s->type, g.ops[j].type,
                 rill_dtype_name(fk[k].dtype));
      }
    }
    rill_grad_ctx_clear(&g);
  }
  cr_assert_gt(checked, 50, "only %zu (op, grad op, dtype) triples checked", checked);
  cr_assert_eq(missing, 0, "gradient ops without a kernel:%s", report);
}

Test(registry, grad_allow_list_entries_are_real_gaps) {
  cr_assert_null(rill_registry_init());
  for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
    const rill_op_schema *s = rill_schema_find(allowed[i].op);
    cr_assert_not_null(s, "%s: no such op", allowed[i].op);
    cr_assert(has_kernel(allowed[i].op, allowed[i].dtype), "%s has no forward %s kernel",
              allowed[i].op, rill_dtype_name(allowed[i].dtype));
    char grad[128];
    snprintf(grad, sizeof grad, "%s_grad", allowed[i].op);
    cr_assert(!has_kernel(grad, allowed[i].dtype), "%s(%s) is no gap any more: drop it (%s)",
              allowed[i].op, rill_dtype_name(allowed[i].dtype), allowed[i].why);
  }
}
