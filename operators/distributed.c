/* The ops of parameter-server training (doc/design/distributed.md), with Paddle 1.8's
 * slots, attributes and defaults, so that a program transpiled by rill or by Paddle
 * (rill_program_transpile, Paddle's DistributeTranspiler) validates and reads the same:
 *
 *   send(X...) -> Out             gradients (or gradient blocks) to the pservers of epmap
 *   send_barrier(X...) -> Out     "this trainer has sent everything of this step"
 *   recv(X) -> Out...             parameters (or blocks) back from the pservers of epmap
 *   fetch_barrier(X) -> Out...    "this trainer has received everything of this step"
 *   listen_and_serv(X...)         the pserver loop: receive X, run optimize_blocks
 *   split_selected_rows(X) -> Out...  a SelectedRows gradient cut by height_sections
 *   distributed_lookup_table(Ids..., W) -> Outputs...  embedding rows looked up on the
 *                                 pservers holding the table's row blocks (prefetch)
 *
 * Out of send and of the barriers are control variables (no tensor): they only order
 * the ops. All but split_selected_rows block on the network and have effects outside
 * their outputs; their kernels belong to the distributed runtime, which is not built
 * yet, so validation lists them among the ops without a CPU kernel.
 * split_selected_rows is ordinary compute (kernels/cpu/split_selected_rows.c). */
#include "operators/op_util.h"

#define DEFAULT_EP ((char *[]){"127.0.0.1:6164"})
#define DEF_EPS {.type = RILL_ATTR_STRINGS, .n = 1, .list.strings = DEFAULT_EP}

/* Inputs and outputs are control variables or tensors whose descriptions the program
 * already declares: nothing to infer. */
static rill_status *declared_infer(rill_infer_ctx *ctx) {
  for (size_t s = 0; s < ctx->schema->noutputs; s++)
    for (size_t i = 0; i < ctx->nout[s]; i++) rill_meta_unknown(&ctx->out[s][i]);
  return NULL;
}

/* ---- send ---- */

static const rill_slot_schema send_inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE, "tensors (or SelectedRows) to send, one per epmap entry"}};
static const rill_slot_schema send_outputs[] = {
    {"Out", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE, "control variable ordering later ops"}};
static const rill_attr_schema send_attrs[] = {
    {"trainer_id", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "the sending trainer (0 .. trainers-1)"},
    {"epmap", RILL_ATTR_STRINGS, 0, DEF_EPS, "endpoint (ip:port) receiving each X"},
    {"sections", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS),
     "rows of each part when the op splits X itself (empty: X is already split)"},
    {"send_varnames", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "names the parts travel under when the op splits X itself"},
    {"num", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "number of equal parts (0: sections)"},
    {"merge_add", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "the receiver adds the values instead of replacing them"},
    {"use_send_handler", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "the receiver applies its send handler (false: plain store)"},
};

const rill_op_schema rill_schema_send = {
    .type = "send",
    .doc = "Sends each X to the pserver at the same position of epmap.",
    .inputs = send_inputs,
    .ninputs = RILL_COUNTOF(send_inputs),
    .outputs = send_outputs,
    .noutputs = RILL_COUNTOF(send_outputs),
    .attrs = send_attrs,
    .nattrs = RILL_COUNTOF(send_attrs),
    .flags = RILL_OP_BLOCKING | RILL_OP_SIDE_EFFECT | RILL_OP_CONCURRENT_EFFECT,
    .infer = declared_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- recv ---- */

static const rill_slot_schema recv_inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "control variables the receive waits for (send_barrier's or send's Out)"}};
static const rill_slot_schema recv_outputs[] = {
    {"Out", RILL_SLOT_DUPLICABLE, "the received tensors, one per epmap entry"}};
static const rill_attr_schema recv_attrs[] = {
    {"epmap", RILL_ATTR_STRINGS, 0, DEF_EPS, "endpoint (ip:port) holding each Out"},
    {"trainer_id", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "the receiving trainer"},
    {"with_barrier", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "wait for the step's barrier on the pserver (false: read at once)"},
    {"varnames", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "names to receive when they differ from Out's"},
    {"recv_varnames", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "the parts to receive and join when the op joins them itself"},
    {"do_not_run", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "nonzero: the op does nothing"},
};

const rill_op_schema rill_schema_recv = {
    .type = "recv",
    .doc = "Receives each Out from the pserver at the same position of epmap.",
    .inputs = recv_inputs,
    .ninputs = RILL_COUNTOF(recv_inputs),
    .outputs = recv_outputs,
    .noutputs = RILL_COUNTOF(recv_outputs),
    .attrs = recv_attrs,
    .nattrs = RILL_COUNTOF(recv_attrs),
    .flags = RILL_OP_BLOCKING | RILL_OP_SIDE_EFFECT | RILL_OP_CONCURRENT_EFFECT,
    .infer = declared_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

/* ---- distributed_lookup_table ---- */

static const rill_slot_schema dlt_inputs[] = {
    {"Ids", RILL_SLOT_DUPLICABLE | RILL_SLOT_NO_GRAD, "row ids of the whole table (int64)"},
    {"W", RILL_SLOT_NO_GRAD | RILL_SLOT_DECL_ONLY,
     "the table as the trainer declares it (its shape alone is read: a trainer holds no data "
     "for it)"}};
static const rill_slot_schema dlt_outputs[] = {
    {"Outputs", RILL_SLOT_DUPLICABLE, "the rows of each Ids, as lookup_table gives them"}};
static const rill_attr_schema dlt_attrs[] = {
    {"table_names", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "the table's row blocks, in row order"},
    {"endpoints", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "the pserver holding each block"},
    {"height_sections", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS),
     "rows of each block"},
    {"padding_idx", RILL_ATTR_LONG, 0, RILL_DEF_LONG(-1), "id whose rows are zeros (-1: none)"},
    {"trainer_id", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "the asking trainer"},
    {"lookup_table_version", RILL_ATTR_STRING, 0, RILL_DEF_STRING("lookup_table"),
     "the lookup replaced: lookup_table (Ids [..., 1]) or lookup_table_v2"},
};

const rill_op_schema rill_schema_distributed_lookup_table = {
    .type = "distributed_lookup_table",
    .doc = "Looks the rows of Ids up in a table cut into row blocks on the pservers: the ids "
           "of each block go to its pserver, whose prefetch block answers with the rows.",
    .inputs = dlt_inputs,
    .ninputs = RILL_COUNTOF(dlt_inputs),
    .outputs = dlt_outputs,
    .noutputs = RILL_COUNTOF(dlt_outputs),
    .attrs = dlt_attrs,
    .nattrs = RILL_COUNTOF(dlt_attrs),
    .flags = RILL_OP_BLOCKING,
    .infer = declared_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

/* ---- send_barrier, fetch_barrier ---- */

static const rill_slot_schema barrier_inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE, "control variables waited for"}};
static const rill_slot_schema barrier_outputs[] = {
    {"Out", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "control variable (send_barrier) or the received parameters (fetch_barrier)"}};
static const rill_attr_schema send_barrier_attrs[] = {
    {"trainer_id", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "the trainer"},
    {"endpoints", RILL_ATTR_STRINGS, 0, DEF_EPS, "every pserver"},
    {"half_async", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "Paddle's half-async mode"},
};
static const rill_attr_schema fetch_barrier_attrs[] = {
    {"trainer_id", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "the trainer"},
    {"endpoints", RILL_ATTR_STRINGS, 0, DEF_EPS, "every pserver"},
};

const rill_op_schema rill_schema_send_barrier = {
    .type = "send_barrier",
    .doc = "Tells every pserver that this trainer has sent all gradients of the step "
           "(BATCH_BARRIER@RECV).",
    .inputs = barrier_inputs,
    .ninputs = RILL_COUNTOF(barrier_inputs),
    .outputs = barrier_outputs,
    .noutputs = RILL_COUNTOF(barrier_outputs),
    .attrs = send_barrier_attrs,
    .nattrs = RILL_COUNTOF(send_barrier_attrs),
    .flags = RILL_OP_BLOCKING | RILL_OP_SIDE_EFFECT,
    .infer = declared_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_fetch_barrier = {
    .type = "fetch_barrier",
    .doc = "Tells every pserver that this trainer has received all parameters of the step "
           "(FETCH_BARRIER@RECV).",
    .inputs = barrier_inputs,
    .ninputs = RILL_COUNTOF(barrier_inputs),
    .outputs = barrier_outputs,
    .noutputs = RILL_COUNTOF(barrier_outputs),
    .attrs = fetch_barrier_attrs,
    .nattrs = RILL_COUNTOF(fetch_barrier_attrs),
    .flags = RILL_OP_BLOCKING | RILL_OP_SIDE_EFFECT,
    .infer = declared_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

/* ---- listen_and_serv ---- */

static const rill_slot_schema las_inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "the gradient variables trainers send (one per trainer in sync mode)"}};
static const rill_attr_schema las_attrs[] = {
    {"endpoint", RILL_ATTR_STRING, 0, RILL_DEF_STRING("127.0.0.1:6164"), "ip:port to listen on"},
    {"pserver_id", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "index of this pserver"},
    {"grad_to_block_id", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "\"grad:block\" pairs: the optimize block each received gradient feeds"},
    {"distributed_mode", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "0 sync, 1 async, 2 half-async"},
    {"dc_asgd", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "delay-compensated async SGD"},
    {"optimize_blocks", RILL_ATTR_BLOCKS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_BLOCKS),
     "blocks run when gradients arrive (one per parameter block, the LR schedule's first)"},
    {"prefetch_var_name_to_block_id", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "\"var:block\" pairs of prefetch blocks"},
    {"sparse_grad_to_param", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "\"grad:param\" pairs of SelectedRows gradients"},
    {"Fanin", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "number of trainers sending here"},
    {"checkpint_block_id", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "block saving a checkpoint (-1 none)"},
    {"lr_decay_block_id", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "the LR schedule's block (-1 none)"},
    {"checkpoint_dir", RILL_ATTR_STRING, RILL_ATTR_FILE_PATH | RILL_ATTR_POLICY, RILL_DEF_STRING(""),
     "cluster snapshots: where this pserver writes its part and resumes from (empty: none)"},
    {"checkpoint_vars", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "the variables of this pserver's part: its blocks, optimizer state, LR"},
    {"checkpoint_max_to_keep", RILL_ATTR_INT, RILL_ATTR_POLICY, RILL_DEF_INT(3),
     "complete cluster snapshots kept (0: all)"},
    {"checkpoint_every_n_steps", RILL_ATTR_LONG, RILL_ATTR_POLICY, RILL_DEF_LONG(0),
     "sync mode: snapshot k is taken after the round of step k when k % n == 0, without "
     "the coordinator's announcement (0: only when announced)"},
    {"pservers", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "pservers in the job (cluster snapshots)"},
    {"rpc_get_thread_num", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(12), "Paddle's tuning"},
    {"rpc_send_thread_num", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(12), "Paddle's tuning"},
    {"rpc_prefetch_thread_num", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(12),
     "Paddle's tuning"},
};

static rill_status *no_outputs_infer(rill_infer_ctx *ctx) {
  (void)ctx;
  return NULL;
}

const rill_op_schema rill_schema_listen_and_serv = {
    .type = "listen_and_serv",
    .doc = "The pserver loop: listens on endpoint, stores gradients as they arrive, runs "
           "their optimize blocks and serves the parameters.",
    .inputs = las_inputs,
    .ninputs = RILL_COUNTOF(las_inputs),
    .outputs = NULL,
    .noutputs = 0,
    .attrs = las_attrs,
    .nattrs = RILL_COUNTOF(las_attrs),
    .flags = RILL_OP_BLOCKING | RILL_OP_SIDE_EFFECT | RILL_OP_SUBBLOCK,
    .infer = no_outputs_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

/* ---- split_selected_rows ---- */

static const rill_slot_schema ssr_inputs[] = {{"X", 0, "SelectedRows gradient"}};
static const rill_slot_schema ssr_outputs[] = {
    {"Out", RILL_SLOT_DUPLICABLE, "one SelectedRows per section, rows relative to it"}};
static const rill_attr_schema ssr_attrs[] = {
    {"height_sections", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS),
     "height of each output"},
};

const rill_op_schema rill_schema_split_selected_rows = {
    .type = "split_selected_rows",
    .doc = "Cuts a SelectedRows value into height_sections: rows in section i go to Out i, "
           "renumbered from the section's first row.",
    .inputs = ssr_inputs,
    .ninputs = RILL_COUNTOF(ssr_inputs),
    .outputs = ssr_outputs,
    .noutputs = RILL_COUNTOF(ssr_outputs),
    .attrs = ssr_attrs,
    .nattrs = RILL_COUNTOF(ssr_attrs),
    .flags = 0,
    .infer = declared_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(distributed);
