/* average_accumulates (Paddle's op behind ModelAverage): the running sums of a parameter
 * over a sliding window of steps, in three buffers (sum_1 the recent steps, sum_2 every
 * 16384 steps' worth moved out of sum_1 to keep precision, sum_3 the previous window)
 * and three int64 counters. */
#include "operators/optimizer.h"

static const rill_slot_schema inputs[] = {
    {"param", 0, "the parameter being averaged"},
    {"in_sum_1", 0, "sum of the current window's recent steps, param's shape"},
    {"in_sum_2", 0, "older part of the current window's sum, param's shape"},
    {"in_sum_3", 0, "sum of the previous window, param's shape"},
    {"in_num_accumulates", 0, "int64 [1]: steps in the current window"},
    {"in_old_num_accumulates", 0, "int64 [1]: steps in the previous window"},
    {"in_num_updates", 0, "int64 [1]: steps so far"},
};
static const rill_slot_schema outputs[] = {
    {"out_sum_1", 0, "updated sum_1 (usually in_sum_1 itself)"},
    {"out_sum_2", 0, "updated sum_2"},
    {"out_sum_3", 0, "updated sum_3"},
    {"out_num_accumulates", 0, "updated num_accumulates"},
    {"out_old_num_accumulates", 0, "updated old_num_accumulates"},
    {"out_num_updates", 0, "updated num_updates"},
};
enum { A_WINDOW, A_MAX, A_MIN };

static const rill_attr_schema attrs[] = {
    [A_WINDOW] = {"average_window", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f),
     "window length as a fraction of the steps so far"},
    [A_MAX] = {"max_average_window", RILL_ATTR_LONG, 0, RILL_DEF_LONG(INT64_MAX), "longest window"},
    [A_MIN] = {"min_average_window", RILL_ATTR_LONG, 0, RILL_DEF_LONG(10000), "shortest window"},
};

static const rill_opt_io io[] = {
    {0, -1, false, false}, {1, 0, true, false}, {2, 1, true, false}, {3, 2, true, false},
    {4, 3, false, true},   {5, 4, false, true}, {6, 5, false, true},
};

static rill_status *average_accumulates_infer(rill_infer_ctx *ctx) {
  for (size_t s = 4; s < 7; s++) {
    const rill_tensor_meta *m = rill_infer_in(ctx, s, 0);
    if (m && m->known && m->dtype != RILL_DTYPE_INT64)
      return rill_infer_error(ctx, "input %s (%s) is %s; the counters are int64",
                              ctx->schema->inputs[s].name, rill_infer_in_name(ctx, s, 0),
                              rill_dtype_name(m->dtype));
  }
  if (ctx->attrs[A_MIN].v.l > ctx->attrs[A_MAX].v.l)
    return rill_infer_error(ctx, "min_average_window %lld is above max_average_window %lld "
                            "(param %s)", (long long)ctx->attrs[A_MIN].v.l,
                            (long long)ctx->attrs[A_MAX].v.l, rill_infer_in_name(ctx, 0, 0));
  return rill_opt_infer(ctx, io, RILL_COUNTOF(io));
}

const rill_op_schema rill_schema_average_accumulates = {
    .type = "average_accumulates",
    .doc = "n += 1, k += 1, sum_1 += param; every 16384th n: sum_2 += sum_1, sum_1 = 0; when "
           "k >= min_average_window and k >= min(max_average_window, (int64)(n * "
           "average_window)): sum_3 = sum_1 + sum_2, sum_1 = sum_2 = 0, old_k = k, k = 0 "
           "(Paddle's kernel run in place).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = average_accumulates_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(average_accumulates);
