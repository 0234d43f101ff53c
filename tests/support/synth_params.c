#include "support/synth_params.h"

#include <criterion/criterion.h>

#include "framework/program/program.h"

static void expect_ok(rill_status *st, const char *what) {
  cr_assert_null(st, "%s: %s", what, rill_status_message(st));
}

void synth_params(const rill_program *p, rill_scope *scope, uint32_t seed, synth_value_fn value) {
  const rill_block_desc *b0 = &p->blocks[0];
  for (size_t i = 0; i < b0->nvars; i++) {
    const rill_var_desc *v = &b0->vars[i];
    if (!v->persistable || v->type != RILL_VAR_LOD_TENSOR || v->dtype != RILL_DTYPE_FP32) continue;
    rill_tensor *t = NULL;
    expect_ok(rill_tensor_create(v->dtype, v->dims.d, (size_t)v->dims.n, &t), v->name);
    float *f = rill_tensor_data(t);
    for (int64_t k = 0; k < rill_tensor_numel(t); k++) {
      seed = seed * 1103515245u + 12345u;
      f[k] = value(v->name, (float)((seed >> 16) % 1000) / 1000.0f);
    }
    expect_ok(rill_scope_set_tensor(scope, v->name, t), v->name);
    rill_tensor_destroy(t);
  }
}
