/* py_func: calls the host callback forward_callable_id with X's tensors and makes each
 * Out variable share the tensor the callback returned for it. */
#include "framework/base/alloc.h"
#include "framework/registry/callbacks.h"
#include "kernels/cpu/kernels.h"

rill_status *rill_cpu_py_func(rill_kernel_ctx *ctx) {
  int64_t id = ctx->attrs[RILL_PY_FUNC_ATTR_FORWARD_CALLABLE_ID].v.i;
  size_t nin = ctx->nin[RILL_PY_FUNC_IN_X], nout = ctx->nout[RILL_PY_FUNC_OUT_OUT];
  rill_host_callback_ref cb;
  rill_status *st = rill_host_callback_acquire(id, &cb);
  if (st) return rill_status_wrap(st, "forward_callable_id %lld", (long long)id);
  rill_tensor **ins = rill_calloc(nin + 1, sizeof *ins);
  rill_tensor **outs = rill_calloc(nout + 1, sizeof *outs);
  if (!ins || !outs) {
    st = rill_oom();
    goto done;
  }
  for (size_t i = 0; i < nin; i++) {
    rill_tensor *t = rill_kin(ctx, RILL_PY_FUNC_IN_X, i);
    ins[i] = t && rill_tensor_is_set(t) ? t : NULL;
  }
  st = cb.fn(cb.user, ins, nin, outs, nout);
  if (st) {
    st = rill_status_wrap(st, "callback %lld ('%s')", (long long)id, cb.name);
    goto done;
  }
  for (size_t i = 0; i < nout && !st; i++) {
    rill_tensor *o = rill_kout(ctx, RILL_PY_FUNC_OUT_OUT, i);
    if (!o) continue; /* no variable here (an unwanted gradient): what came back is dropped */
    if (!outs[i])
      st = rill_kernel_error(ctx,
                             "callback %lld ('%s') returned no tensor for output Out #%zu (%s)",
                             (long long)id, cb.name, i,
                             rill_kout_name(ctx, RILL_PY_FUNC_OUT_OUT, i));
    else
      st = rill_tensor_share(o, outs[i]);
  }
done:
  if (outs)
    for (size_t i = 0; i < nout; i++) rill_tensor_destroy(outs[i]);
  rill_free(outs);
  rill_free(ins);
  rill_host_callback_release(&cb);
  return st;
}
