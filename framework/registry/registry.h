/* Op schemas and kernels. An op's schema says everything the core needs to know about
 * it: slots, attributes with defaults, flags, shape inference, gradient. The core never
 * looks at an op's name to decide anything. */
#ifndef RILL_FRAMEWORK_REGISTRY_REGISTRY_H
#define RILL_FRAMEWORK_REGISTRY_REGISTRY_H

#include "framework/data/scope.h"
#include "framework/program/program.h"

/* Slot flags. */
#define RILL_SLOT_DUPLICABLE 1u   /* takes any number of variables */
#define RILL_SLOT_DISPENSABLE 2u  /* may be absent or empty */
#define RILL_SLOT_NO_GRAD 4u      /* no gradient flows through this input */
#define RILL_SLOT_INTERMEDIATE 8u /* an output kept only for the gradient */
/* An output whose dtype the op fixes whatever the program declares: validation accepts a
 * declared dtype that differs and checks the ops after it against the declaration (older
 * Paddle versions declared crf_decoding's int64 ViterbiPath, and what follows it, with
 * the input's float dtype); at run time the kernel's dtype flows on. */
#define RILL_SLOT_DTYPE_FIXED 16u
/* An input read for its declaration alone (dims and dtype): it may hold no data, as a
 * variable fake_init declared does, and a run does not require it to. */
#define RILL_SLOT_DECL_ONLY 32u
/* An input whose elements the kernel never reads or writes in place: it reads the
 * tensor's shape, dtype and LoD, shares its buffer under another shape (a view), copies
 * its elements through the backends (rill_tensor_copy_at, rill_tensor_read_host), or
 * leaves it to a sub-block, whose ops stage it themselves. The input may be on any
 * place: a run never copies it to the op's place, and its reads do not choose where the
 * variable lives. So a view op without a device kernel runs on the host over a device
 * tensor's metadata, and its output shares the device buffer; and a sub-block op (while,
 * conditional_block, recurrent) hands its block the variables where they are. */
#define RILL_SLOT_ANY_PLACE 64u
/* An input whose elements the kernel reads on the host wherever the op runs: a few
 * numbers that size or place the work (slice's bounds, an interpolation's output size).
 * A run copies it to the host, not to the op's place, and its reads count as the
 * host's when choosing where the variable lives; so bounds a host op made never travel
 * to a device op and back. */
#define RILL_SLOT_HOST_DATA 128u
/* An input whose elements the op's run-time shape inference reads (an op with
 * RILL_OP_INFER_READS_DATA: concat's AxisTensor). When a schema marks some of its input
 * slots so, a device op copies only those inputs to the host for its inference, and an
 * op given none of them infers from the metadata alone; a schema that marks none has
 * every input copied there (every built-in op marks them). A mark on an op without
 * RILL_OP_INFER_READS_DATA is refused at registration. */
#define RILL_SLOT_INFER_DATA 256u

typedef struct rill_slot_schema {
  const char *name;
  unsigned flags;
  const char *doc;
} rill_slot_schema;

/* Attribute flags. */
#define RILL_ATTR_REQUIRED 1u /* no default: a program must set it */
#define RILL_ATTR_EXTRA 2u    /* Paddle's "extra" attrs: tuning hints, never required */
#define RILL_ATTR_FILE_PATH 4u /* a STRING naming the file or directory the op reads or
                                  writes (ops flagged READS_FILES / WRITES_FILES) */
#define RILL_ATTR_POLICY 8u   /* where or when the op does its work (a path, a schedule,
                                 a retention count), not what the program computes: left
                                 out of the program's identity (rill_ckpt_program_hash) */
#define RILL_ATTR_ON_HOST 16u /* a BOOLEAN that, true, runs the op on the host whatever
                                 the executor's place, so its outputs stay there
                                 (Paddle's force_cpu: loop counters, their conditions) */

typedef struct rill_attr_schema {
  const char *name;
  rill_attr_type type;
  unsigned flags;
  rill_attr_value def; /* default; .type must equal `type` */
  const char *doc;
} rill_attr_schema;

/* Op flags. */
#define RILL_OP_BLOCKING 1u      /* may wait on I/O or peers: runs on the I/O pool */
#define RILL_OP_SIDE_EFFECT 2u   /* effects beyond its outputs: never pruned */
#define RILL_OP_FEED 4u          /* copies feed list item `col` into Out */
#define RILL_OP_FETCH 8u         /* copies X into fetch list item `col` */
#define RILL_OP_KERNEL_SHAPES 16u /* output shapes depend on data: kernel allocates */
#define RILL_OP_SUBBLOCK 32u     /* runs a sub-block (attr of type BLOCK) */
#define RILL_OP_RANDOM 64u       /* draws from the device generator: such ops keep
                                    their relative order in every schedule */
#define RILL_OP_WRITES_FILES 128u /* writes, creates or removes files at the paths its
                                     RILL_ATTR_FILE_PATH attributes name */
#define RILL_OP_READS_FILES 256u  /* reads the files its RILL_ATTR_FILE_PATH attributes name */
#define RILL_OP_INFER_READS_DATA 512u /* run-time shape inference reads input values or LoD
                                         offsets (rill_infer_tensor), not only their metas:
                                         a run re-infers it even when no input meta changed */
#define RILL_OP_INFER_READS_LOD 131072u /* run-time shape inference reads its inputs' LoD
                                           offsets (rill_infer_tensor), which are on the host
                                           wherever the elements are, and no element: a run
                                           re-infers it every time, copying nothing for it */
/* Flags the inference passes (framework/transform/infer_passes.c) read, so that they
 * never test an op's name for these properties: */
#define RILL_OP_INPLACE 1024u     /* one input X, one output Out, each output element from
                                     the input element at its position: Out may be X */
#define RILL_OP_CONV_FUSABLE 2048u /* a 2-D convolution conv2d_fusion can replace: slots
                                      Input/Filter/Bias?/Output, conv2d's attributes */
#define RILL_OP_FUSABLE_ACT 4096u /* an activation (X -> Out) conv2d_fusion can apply; its
                                     type is the name the fused op's attribute takes */
#define RILL_OP_FC_ACT 8192u      /* such an activation fc can apply too (fc knows relu) */
#define RILL_OP_LOOP 16384u       /* runs its sub-block once per step (while): the backward
                                     pass keeps the gradients its gradient block reads
                                     before writing in the enclosing block, where they
                                     carry from one reversed step to the next */
#define RILL_OP_CONCURRENT_EFFECT 32768u /* with SIDE_EFFECT: its effect commutes with
                                           those of the other ops so flagged (a transfer of
                                           another variable), so among them only their data
                                           orders them; every other side-effect op still
                                           waits for them, and they for it */
#define RILL_OP_NO_GRADIENT 65536u /* Fluid defines no gradient for it (clip_by_norm,
                                      yolo_box, the fake quantizers): the backward pass
                                      lets none through it, as Fluid's skips such ops,
                                      where an op merely lacking a grad maker is refused */
#define RILL_OP_PLACE_OF_INPUT 262144u /* runs where its first input is kept: on the host
                                           when an op placed there by a RILL_ATTR_ON_HOST
                                           attribute writes that variable and every other
                                           writer in the program is an op so flagged
                                           (increment of a force_cpu counter), else at
                                           the executor's place */

/* Shapes and dtypes of one variable, as known at compile time (dims may hold -1) or at
 * run time (exact). */
typedef struct rill_tensor_meta {
  rill_dtype dtype;
  rill_dims dims;
  int32_t lod_level;
  bool known;          /* false: no tensor description (or not a dense tensor) */
  int16_t lod_from[2]; /* output only: (input slot, index) whose LoD it takes; -1 none */
} rill_tensor_meta;

/* What shape inference sees. Inputs and outputs are indexed by slot position in the
 * schema and then by argument position. The same function runs at compile time
 * (validation, prepare) and at run time (before each kernel, to size outputs). */
typedef struct rill_infer_ctx {
  const struct rill_op_schema *schema;
  const rill_attr_value *attrs; /* schema order, defaults applied */
  const size_t *nin;            /* per input slot */
  const rill_tensor_meta *const *in;
  const size_t *nout;
  rill_tensor_meta *const *out;
  const rill_tensor *const *const *in_tensors; /* run time only, else NULL */
  const char *const *const *in_names;
  const char *const *const *out_names;
} rill_infer_ctx;

/* Error naming the op and variable: "mul: input X (x) has rank 1, ...". */
rill_status *rill_infer_error(const rill_infer_ctx *ctx, const char *fmt, ...) RILL_PRINTF(2, 3);

/* ---- device services ----
 *
 * What a kernel may ask of the device it runs on, as a table of functions the executor
 * fills in for its device (framework/exec/device.h for the CPU). A kernel reaches the
 * device only through this table (ctx->dev): it never includes framework/exec/, so a
 * new device is a new table, and a plugin kernel gets the same services. `dev` may be
 * NULL (a kernel called outside an executor): the rill_dev_* helpers below then run
 * the work on the calling thread. */

/* The most threads one parallel_for uses. */
#define RILL_DEVICE_MAX_THREADS 16

typedef bool (*rill_part_fn)(void *arg, int64_t part, int slot);

/* Blocking work a kernel hands the device to do after the run (submit_blocking). */
typedef enum rill_job_kind {
  RILL_JOB_CALL,       /* call(arg) on the device's background thread after the run */
  RILL_JOB_CHECKPOINT, /* the checkpoint op's asynchronous save (doc/design/checkpoint.md) */
} rill_job_kind;

typedef struct rill_checkpoint_job {
  const char *dir;
  int64_t every_n_steps;
  double every_n_seconds;
  int32_t max_to_keep;
  bool skip_when_busy;
  int64_t step;
  const char *const *names;
  const rill_tensor *const *tensors;
  size_t n;
  bool *saved; /* may be NULL: set when a snapshot was taken */
  /* A trainer's part of cluster snapshots (doc/design/cluster-checkpoint.md) when
   * cluster_newest is set: the coordinator announces a due snapshot to the pservers
   * (cluster_announce), every trainer writes its part of the newest one announced. */
  int32_t cluster_pservers, cluster_trainers, cluster_rank;
  bool cluster_sync, cluster_coordinator;
  rill_status *(*cluster_announce)(void *arg, int64_t step);
  int64_t (*cluster_newest)(void *arg);
  void *cluster_arg;
} rill_checkpoint_job;

typedef struct rill_job {
  rill_job_kind kind;
  union {
    struct {
      void (*call)(void *arg);
      void *arg;
    } call;
    rill_checkpoint_job checkpoint;
  } u;
} rill_job;

typedef struct rill_device_services rill_device_services;
struct rill_device_services {
  int32_t num_threads; /* >= 1: the threads the executor gives its kernels */
  /* Runs fn(arg, part, slot) for every part of [0, n) on up to `threads` threads
   * (clamped to RILL_DEVICE_MAX_THREADS and n); slot numbers the thread (0: the caller)
   * so fn may keep scratch per slot. Which thread runs a part is not fixed, so fn must
   * give a part the same result on any thread. False when any fn returned false. */
  bool (*parallel_for)(const rill_device_services *dev, int64_t threads, int64_t n,
                       rill_part_fn fn, void *arg);
  /* Lets the threads of parallel_for sleep now, before a library call that runs
   * threads of its own (OpenBLAS). */
  void (*quiet)(const rill_device_services *dev);
  /* Scratch memory aligned for vector loads (RILL_TENSOR_ALIGN); NULL when out of
   * memory. Freed with scratch_free, on any thread. */
  void *(*scratch_alloc)(const rill_device_services *dev, size_t bytes);
  void (*scratch_free)(const rill_device_services *dev, void *p);
  /* The next draw of the device's seeded generator (random ops flagged RILL_OP_RANDOM:
   * the schedule keeps their draws in program order). */
  uint64_t (*random_u64)(const rill_device_services *dev);
  /* Takes blocking work to do after the run returns, in submission order (a device
   * without a background thread does it before returning). */
  rill_status *(*submit_blocking)(const rill_device_services *dev, const rill_job *job);
  /* Runs block `block` (> 0) of the program being run, in `scope` (one the kernel made,
   * such as a child of ctx->scope): the block's own variables are created in `scope`,
   * its ancestors' are found (and written) through the scope chain. The ops run in
   * order on the calling thread (kernels inside may still use parallel_for). Several
   * threads may run different blocks at once; a block already running (on another
   * thread, or itself through its own ops) is FAILED_PRECONDITION, as is a plan run
   * without its program; block 0 or a block the program lacks is INVALID_ARGUMENT. */
  rill_status *(*run_block)(const rill_device_services *dev, int32_t block, rill_scope *scope);
};

static inline int64_t rill_dev_threads(const rill_device_services *dev) {
  return dev ? dev->num_threads : 1;
}
static inline bool rill_dev_parallel_for(const rill_device_services *dev, int64_t threads,
                                         int64_t n, rill_part_fn fn, void *arg) {
  if (dev && threads > 1 && n > 1) return dev->parallel_for(dev, threads, n, fn, arg);
  bool ok = true;
  for (int64_t i = 0; i < n; i++) ok &= fn(arg, i, 0);
  return ok;
}
static inline void rill_dev_quiet(const rill_device_services *dev) {
  if (dev) dev->quiet(dev);
}
/* dev->run_block, or FAILED_PRECONDITION where the device cannot run blocks. */
rill_status *rill_dev_run_block(const rill_device_services *dev, int32_t block, rill_scope *scope);

/* What a kernel sees: its attributes, its input and output variables by slot/argument
 * position, and the device's services. */
typedef struct rill_kernel_ctx {
  const struct rill_op_schema *schema;
  const rill_attr_value *attrs;
  const size_t *nin;
  rill_variable *const *const *in;
  const size_t *nout;
  rill_variable *const *const *out;
  const char *const *const *in_names;
  const char *const *const *out_names;
  const rill_device_services *dev; /* threads, scratch, generator, background work */
  rill_scope *scope;              /* the run's local scope */
} rill_kernel_ctx;

/* The dense tensor of input/output (slot, i); NULL when absent. */
static inline rill_tensor *rill_kin(const rill_kernel_ctx *c, size_t slot, size_t i) {
  return i < c->nin[slot] && c->in[slot][i] ? rill_variable_tensor(c->in[slot][i]) : NULL;
}
static inline rill_tensor *rill_kout(const rill_kernel_ctx *c, size_t slot, size_t i) {
  return i < c->nout[slot] && c->out[slot][i] ? rill_variable_tensor(c->out[slot][i]) : NULL;
}
rill_status *rill_kernel_error(const rill_kernel_ctx *ctx, const char *fmt, ...) RILL_PRINTF(2, 3);

typedef rill_status *(*rill_infer_fn)(rill_infer_ctx *ctx);
typedef rill_status *(*rill_kernel_fn)(rill_kernel_ctx *ctx);
struct rill_grad_ctx;
typedef rill_status *(*rill_grad_fn)(struct rill_grad_ctx *ctx);

typedef struct rill_op_schema {
  const char *type;
  const char *doc;
  const rill_slot_schema *inputs;
  size_t ninputs;
  const rill_slot_schema *outputs;
  size_t noutputs;
  const rill_attr_schema *attrs;
  size_t nattrs;
  unsigned flags;
  rill_infer_fn infer; /* NULL: outputs unknown at compile time */
  rill_grad_fn grad;   /* NULL: not differentiable */
  /* Input slot whose first tensor picks the kernel dtype; -1: attr `dtype_attr`. */
  int kernel_dtype_slot;
  int dtype_attr; /* index of an INT attr holding a dtype, or -1 */
  /* SUBBLOCK ops that carry sub-block variables from one step to the next (recurrent):
   * the name of a STRINGS attribute listing them. The backward pass wants their
   * gradients in the gradient block and never zero-fills them there, since the gradient
   * op hands each step the gradient the step after it computed. NULL: none. */
  const char *step_states_attr;
} rill_op_schema;

#define RILL_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

/* dtype RILL_KERNEL_ANY_DTYPE: the kernel takes any element type. */
#define RILL_KERNEL_ANY_DTYPE ((rill_dtype)-1)

/* Whether a kernel takes an op as the plan sees it before any run: ctx's schema,
 * attributes, argument counts (nin, nout) and names, but no tensors. */
typedef bool (*rill_kernel_accepts_fn)(const rill_kernel_ctx *ctx);

typedef struct rill_kernel_def {
  const char *op;
  rill_device device;
  rill_dtype dtype;
  rill_kernel_fn fn;
  /* Optional (NULL: it takes every op of its type and dtype). An op whose place's
   * kernel declines it runs on the host, as an op with no kernel there: a device
   * kernel that covers the common cases leaves the rare ones (an attribute value, an
   * optional input) to the CPU rather than failing them. */
  rill_kernel_accepts_fn accepts;
} rill_kernel_def;

/* ---- backends ----
 *
 * A backend is one device kind's table: its kernels, its tensor memory and the copies
 * between its memory and the host's. Each kernel folder exports one
 * (kernels/cpu/backend.c: rill_cpu_backend); kernels/backends.c lists those linked into
 * the library, and the registry adds them when it builds its tables, through the same
 * rill_registry_add_backend an application or a test calls at run time. The core knows
 * no backend by name: the executor runs any place whose device kind has a registered
 * backend and looks kernels up by (op, device kind, dtype). */
#define RILL_BACKEND_API_VERSION 3u

typedef struct rill_backend rill_backend;
struct rill_backend {
  uint32_t api_version; /* RILL_BACKEND_API_VERSION */
  const char *name;     /* "cpu": names the backend in messages and `rill ops` */
  rill_device device;   /* the device kind it serves; one backend per kind */
  const rill_kernel_def *kernels; /* every one with .device == device */
  size_t nkernels;
  /* Tensor memory on `place`: `bytes` (> 0) aligned to RILL_TENSOR_ALIGN, NULL when
   * out of memory; free accepts NULL. */
  rill_device_memory memory;
  /* Byte copies; n may be 0. A backend whose memory is the host's may copy with memcpy. */
  rill_status *(*copy_to_host)(const rill_backend *b, void *dst, rill_place src_place,
                               const void *src, size_t n);
  rill_status *(*copy_from_host)(const rill_backend *b, rill_place dst_place, void *dst,
                                 const void *src, size_t n);
  rill_status *(*copy)(const rill_backend *b, rill_place dst_place, void *dst,
                       rill_place src_place, const void *src, size_t n);
  /* Optional. NULL when the backend can serve `place` (its id names a device it has);
   * else an error naming the place and saying why. NULL: every id is served. */
  rill_status *(*check_place)(const rill_backend *b, rill_place place);
  /* Optional. How many devices of its kind the backend sees; NULL: one. */
  int32_t (*device_count)(const rill_backend *b);
  /* Optional. Its allocator's statistics for `place` (rill_device_memory_stats_get). */
  rill_status *(*memory_stats)(const rill_backend *b, rill_place place, rill_device_memory_stats *out);
  /* Optional (NULL: none): called once when the backend is registered, before any of
   * its kernels runs. The CPU backend hands its BLAS library's threading over to the
   * compute pool there (OpenBLAS on one thread: the pool splits the work). */
  void (*start)(const rill_backend *b);
  /* Optional (NULL: the backend has no profiler): starts (start true) or stops the
   * device's own profiler for `place` (the CUDA backend: cudaProfilerStart/Stop, which
   * a profiling tool attached to the process records between);
   * rill_device_profiler_start/stop. */
  rill_status *(*profiler)(const rill_backend *b, rill_place place, bool start);
  /* Optional, both or neither: page-locked host memory the backend copies from and to
   * without staging (the CUDA backend: cudaHostAlloc/cudaFreeHost), NULL when it cannot
   * give `bytes`; rill_pinned_host_alloc. */
  void *(*pinned_alloc)(const rill_backend *b, size_t bytes);
  void (*pinned_free)(const rill_backend *b, void *p);
  /* Optional (NULL: none): dst[i] += src[i] for n elements of `dtype`, both on `place`,
   * ordered after the place's kernels and copies queued before it; UNIMPLEMENTED for a
   * dtype it does not add. The sub-block gradient ops sum their steps' gradients with
   * it where the steps left them (rill_tensor_accumulate). */
  rill_status *(*accumulate)(const rill_backend *b, rill_place place, rill_dtype dtype, void *dst,
                             const void *src, size_t n);
  /* Optional (NULL: zeros are copied from the host): n bytes at dst on `place` := 0,
   * ordered as accumulate is; rill_tensor_zeros_at. */
  rill_status *(*zero)(const rill_backend *b, rill_place place, void *dst, size_t n);
};

/* Registers a backend and its kernels, all or nothing: FAILED_PRECONDITION for another
 * api_version, ALREADY_EXISTS when its device kind or name is taken or a kernel exists,
 * INVALID_ARGUMENT for a table with a member missing or a kernel for another device,
 * NOT_FOUND for a kernel of an op without a schema. The table (and its kernels) must
 * outlive the process. */
rill_status *rill_registry_add_backend(const rill_backend *backend);
/* The backend of a device kind; NULL when none is registered. */
const rill_backend *rill_backend_find(rill_device device);
/* Registered backends, in registration order (the built-in ones first). */
size_t rill_backend_count(void);
const rill_backend *rill_backend_at(size_t i);
/* NULL when `place` has a registered backend that serves it (its check_place); else
 * UNIMPLEMENTED naming the place and listing the registered backends, with the reason
 * when the device kind's lazy backend (backend_host.h) could not be loaded, or the
 * backend's own error for an id it does not serve. Loads a lazy backend on first use. */
rill_status *rill_place_check(rill_place place);
/* "cpu:0", "cuda:1", "device 7:0": a place for messages (buf of RILL_PLACE_STR_MAX). */
#define RILL_PLACE_STR_MAX 48
const char *rill_place_str(rill_place place, char *buf, size_t cap);
/* The host: where feeds come from and fetches go, and whose tensors come from the
 * library's allocator (rill_tensor_alloc). Its backend's memory is that allocator. */
#define RILL_HOST_DEVICE RILL_DEVICE_CPU
/* The memory a backend's tensors come from, for rill_tensor_alloc_on: NULL (the
 * library's allocator) for the host's backend, else the backend's table. */
static inline const rill_device_memory *rill_backend_tensor_memory(const rill_backend *b) {
  return !b || b->device == RILL_HOST_DEVICE ? NULL : &b->memory;
}
/* The attribute by which any op names its place (Paddle's "op_device": "cpu", "gpu:0",
 * or a backend's name, parsed by rill_place_parse); absent or empty: the executor's. */
#define RILL_OP_DEVICE_ATTR "op_device"
/* Parses a place: "NAME" or "NAME:ID", NAME a registered backend's name or a device
 * kind ("cpu", "cuda", and Paddle's "gpu" for cuda). INVALID_ARGUMENT names the text
 * and lists the registered backends. */
rill_status *rill_place_parse(const char *text, rill_place *out);
/* Copies n bytes between two places through their backends (the host is the CPU
 * backend's place); UNIMPLEMENTED for a place without a backend. */
rill_status *rill_backend_copy(rill_place dst_place, void *dst, rill_place src_place,
                               const void *src, size_t n);

/* Tensors on any place, through their backends: for a kernel that reaches tensors other
 * than its staged inputs (a sub-block op reading its step scopes, whose ops may run on a
 * device) and for the public API. A host kernel must never dereference such a tensor's
 * data where it lies: on a GPU that faults or reads garbage. */
/* `t` := a new buffer for dtype and dims on `place`, from that place's backend (an
 * existing buffer is kept when it is already there and large enough). */
rill_status *rill_tensor_alloc_at(rill_tensor *t, rill_dtype dtype, const rill_dims *dims, rill_place place);
/* `t` := zeros of dtype and dims on `place` (no LoD): by the place's backend's `zero`,
 * else copied from the host. */
rill_status *rill_tensor_zeros_at(rill_tensor *t, rill_dtype dtype, const rill_dims *dims, rill_place place);
/* The first `n` bytes of t's elements, wherever they lie, into host memory `dst`;
 * OUT_OF_RANGE when t holds fewer. */
rill_status *rill_tensor_read_host(const rill_tensor *t, void *dst, size_t n);
/* `dst` := a deep copy of `src` (its elements, dtype, dims and LoD) on `place`, wherever
 * src lies; dst == src copies nothing when src is there already. */
rill_status *rill_tensor_copy_at(rill_tensor *dst, const rill_tensor *src, rill_place place);
/* rill_tensor_copy_at with dst's memory from `mem` (an executor's device memory, which
 * only a checked place has, so the place is not checked again; NULL: the place's
 * default, after rill_place_check) and a copy always made, also when dst == src: the
 * executor's staging of an op's inputs and its private copies of shared buffers. dst is
 * unchanged on error. */
rill_status *rill_tensor_copy_on(rill_tensor *dst, const rill_tensor *src, rill_place place,
                                 const rill_device_memory *mem);
/* dst += src elementwise on dst's place, by its backend's `accumulate` (src is first
 * copied there when it lies elsewhere): INVALID_ARGUMENT when their dtypes or element
 * counts differ, UNIMPLEMENTED when that backend does not add the dtype (the CPU's adds
 * float32, float64, int32 and int64); dst is unchanged then. */
rill_status *rill_tensor_accumulate(rill_tensor *dst, const rill_tensor *src);
/* `n` bytes from byte `src_off` of src's elements to byte `dst_off` of dst's, each on
 * its own place; OUT_OF_RANGE when a range passes the end of its tensor. */
rill_status *rill_tensor_copy_bytes(rill_tensor *dst, size_t dst_off, const rill_tensor *src, size_t src_off,
                                    size_t n);

/* The lists linked into the library, outside framework/: operators/op_table.c (every
 * schema of operators/ops.def) and kernels/backends.c (every built-in backend). */
extern const rill_op_schema *const rill_builtin_schemas[];
extern const size_t rill_builtin_schema_count;
extern const rill_backend *const rill_builtin_backends[];
extern const size_t rill_builtin_backend_count;

/* Builds the tables once (thread-safe, idempotent). */
rill_status *rill_registry_init(void);
/* Same, without building an error: true when the tables failed to build. */
bool rill_registry_init_quiet(void);
const rill_op_schema *rill_schema_find(const char *type);
/* Kernel for (op, device, dtype), falling back to an ANY_DTYPE kernel; NULL if none. */
rill_kernel_fn rill_kernel_find(const char *op, rill_device device, rill_dtype dtype);
/* The same lookup; *accepts is the kernel's accepts function (NULL when it has none, or
 * when there is no kernel). */
rill_kernel_fn rill_kernel_find_accepts(const char *op, rill_device device, rill_dtype dtype,
                                        rill_kernel_accepts_fn *accepts);
/* Registers an out-of-tree op / kernel (plugins). The schema must outlive the process. */
rill_status *rill_registry_add_op(const rill_op_schema *schema);
rill_status *rill_registry_add_kernel(const rill_kernel_def *kernel);
/* Registers ops and their kernels all at once, or nothing (plugins). Kernels must be for
 * ops of the batch. The schemas must outlive the process. */
rill_status *rill_registry_add_batch(const rill_op_schema *const *schemas, size_t n,
                                     const rill_kernel_def *kernels, size_t nk);
size_t rill_registry_count(void);
const rill_op_schema *rill_registry_at(size_t i); /* sorted by type */
/* Copies up to `max` of op's kernels into out; returns how many it has. */
size_t rill_registry_kernels(const char *op, rill_kernel_def *out, size_t max);

/* Index of a slot / attribute in a schema, or -1. */
int rill_schema_input_index(const rill_op_schema *s, const char *name);
int rill_schema_output_index(const rill_op_schema *s, const char *name);
int rill_schema_attr_index(const rill_op_schema *s, const char *name);

/* Resolves an op's attributes into schema order: defaults for missing ones, Paddle's
 * INT-for-BOOLEAN (and LONG-for-INT where it fits) accepted and converted, unknown
 * attributes ignored, wrong types and missing required ones reported. `out` has
 * schema->nattrs entries; free with rill_attrs_clear. */
rill_status *rill_resolve_attrs(const rill_op_schema *s, const rill_op_desc *op,
                                rill_attr_value *out);
void rill_attrs_clear(rill_attr_value *attrs, size_t n);

/* ---- gradients ----
 *
 * The backward pass calls the `grad` maker of each forward op on the loss path, last op
 * first. A maker appends gradient ops (ordinary ops with schemas and kernels, usually
 * "<type>_grad") to ctx->ops through the helpers below. Conventions are Paddle's
 * (FORMATS.md sec 4): the gradient of `x` is `x@GRAD`; a gradient nobody wants is written
 * to RILL_EMPTY_VAR, which the executor binds as an absent argument, so a gradient kernel
 * skips outputs for which rill_kout returns NULL. The backward pass guarantees that the
 * gradient of every output of an op on the loss path exists (zeros when nothing
 * downstream used it) and renames and sums gradients written more than once. */
#define RILL_GRAD_SUFFIX "@GRAD"
#define RILL_EMPTY_VAR "@EMPTY@"

typedef struct rill_grad_ctx {
  const rill_op_desc *fwd;
  const rill_op_schema *schema;
  /* Whether forward variable `var` needs a gradient (not stop_gradient, not in the
   * no-grad set, on the path from the parameters to the loss). */
  bool (*wants_grad)(void *impl, const char *var);
  void *impl;
  rill_op_desc *ops; /* emitted gradient ops, in execution order */
  size_t nops, capops;
} rill_grad_ctx;

/* Starts a gradient op of `type`, with the forward op's attributes copied; *op points
 * into ctx->ops and stays valid until the next rill_grad_begin. */
rill_status *rill_grad_begin(rill_grad_ctx *ctx, const char *type, rill_op_desc **op);
/* op's input `slot` := the forward op's input or output slot of the same name. */
rill_status *rill_grad_forward(rill_grad_ctx *ctx, rill_op_desc *op, const char *slot);
/* op's input `<slot>@GRAD` := gradients of the forward output slot `slot`. */
rill_status *rill_grad_of_output(rill_grad_ctx *ctx, rill_op_desc *op, const char *slot);
/* op's output `<slot>@GRAD` := gradients of the forward input slot `slot`, with
 * RILL_EMPTY_VAR for those not wanted. */
rill_status *rill_grad_of_input(rill_grad_ctx *ctx, rill_op_desc *op, const char *slot);
/* Appends slot `param` to op's inputs (output false) or outputs with the `n` variable
 * names given, for makers whose slots do not follow a forward slot. */
rill_status *rill_grad_slot(rill_op_desc *op, bool output, const char *param,
                            const char *const *names, size_t n);
/* Sets (or replaces) an attribute on a gradient op. */
rill_status *rill_grad_attr(rill_op_desc *op, const char *name, const rill_attr_value *v);
/* The same three under another slot name `param` of the gradient op: for makers whose
 * gradient is another forward op (split -> concat, cast -> cast: the gradients of Out
 * read as X), and for double gradients, whose slots Paddle names DOut, DDX, DDOut: the
 * gradient op of a gradient op reads its `Out@GRAD` input as `DOut`, the gradient of its
 * `X@GRAD` output as `DDX`, and writes its `Out@GRAD` input's gradient as `DDOut`. */
rill_status *rill_grad_forward_as(rill_grad_ctx *ctx, rill_op_desc *op, const char *slot,
                                  const char *param);
rill_status *rill_grad_of_output_as(rill_grad_ctx *ctx, rill_op_desc *op, const char *slot,
                                    const char *param);
rill_status *rill_grad_of_input_as(rill_grad_ctx *ctx, rill_op_desc *op, const char *slot,
                                   const char *param);
/* True when no input of forward slot `slot` wants a gradient. */
bool rill_grad_none_wanted(rill_grad_ctx *ctx, const char *slot);
void rill_grad_ctx_clear(rill_grad_ctx *ctx); /* frees the emitted ops */

/* A maker for any one-op layout: emits `type` (NULL: "<forward type>_grad") whose inputs
 * are the forward slots `fwd` (inputs or outputs of the forward op, by name; absent ones
 * skipped) and `<o>@GRAD` for each forward output slot in `out_grads`, and whose outputs
 * are `<i>@GRAD` for each forward input slot in `in_grads` (RILL_EMPTY_VAR where
 * unwanted). Emits nothing when no slot of `in_grads` wants a gradient. */
rill_status *rill_grad_emit(rill_grad_ctx *ctx, const char *type, const char *const *fwd,
                            size_t nfwd, const char *const *out_grads, size_t nout_grads,
                            const char *const *in_grads, size_t nin_grads);

/* rill_grad_emit for the makers of double gradients: emits "<gradient op>_grad" with
 * every list given as pairs {slot of the gradient op, slot of the new op}: `fwd` its
 * slots read as they are ({"Out@GRAD", "DOut"}), `out_grads` the gradients of its
 * outputs ({"X@GRAD", "DDX"}), `in_grads` the gradients of its inputs ({"X", "DX"},
 * {"Out@GRAD", "DDOut"}). Emits nothing when no input of `in_grads` wants a gradient. */
rill_status *rill_grad_emit_as(rill_grad_ctx *ctx, const char *const *fwd, size_t nfwd,
                               const char *const *out_grads, size_t nout_grads,
                               const char *const *in_grads, size_t nin_grads);

/* Paddle's default maker: one op "<type>_grad" whose inputs are every forward input and
 * output under the same slot names plus `<out>@GRAD` for every output slot, whose
 * outputs are `<in>@GRAD` for every input slot, and whose attributes are the forward
 * op's. Emits nothing when no input wants a gradient. */
rill_status *rill_grad_default(rill_grad_ctx *ctx);

/* Checks every op of every block against its schema and runs compile-time shape
 * inference. Messages name block, op index, op type and slot. */
rill_status *rill_validate_program(const rill_program *p);
/* Validates op #index of `block` alone (type, slots, attributes) and writes its
 * inferred outputs into their variable descriptions, as rill_program_infer_shapes does
 * for a whole program; nothing is written on error. The caller bumps the revision. */
rill_status *rill_validate_infer_op(rill_program *program, int32_t block, size_t index);

#endif
