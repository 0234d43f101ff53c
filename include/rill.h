/*
 * rill.h -- the public C API of rill.
 *
 * rill runs PaddlePaddle Fluid programs (ProgramDesc) on the CPU.
 *
 * Conventions
 * -----------
 * - Every public symbol starts with rill_, every macro and enum value with RILL_.
 * - Objects are opaque handles created by rill_<noun>_create (or _load/_parse) and
 *   released by rill_<noun>_destroy, which returns void and accepts NULL.
 * - A function that can fail returns rill_status *: NULL means success. A non-NULL
 *   status carries a code and a message naming the op, the variable and the file
 *   involved; the caller owns it and frees it with rill_status_destroy. On failure, out
 *   parameters are left untouched and nothing leaks.
 * - Inputs are borrowed: the library copies or retains what it keeps. Outputs returned
 *   through out parameters are owned by the caller.
 * - Tensors may wrap caller memory without a copy (rill_tensor_create_from_data); the
 *   deleter runs once, when the last reference inside the library is gone.
 * - Sizes: int64_t for dimensions, size_t for byte counts. Strings are UTF-8, NUL-ended.
 * - Data types use the numbers of Paddle's VarType.Type, so they can be serialized as is.
 * - Thread safety: distinct objects may be used from distinct threads. One executor or
 *   predictor runs one call at a time: a run (or prepare) made while another thread's
 *   call holds it fails at once with FAILED_PRECONDITION and leaves that call alone; give
 *   each thread its own executor, or its own predictor (rill_predictor_clone).
 */
#ifndef RILL_H
#define RILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RILL_API __attribute__((visibility("default")))
#else
#define RILL_API
#endif

/* The version of this header; CMake refuses to configure when it differs from the
 * project version in CMakeLists.txt. rill_version() and rill_version_number() give the
 * version of the library actually loaded, which may be newer than the header a program
 * was compiled with. */
#define RILL_VERSION_MAJOR 0
#define RILL_VERSION_MINOR 1
#define RILL_VERSION_PATCH 0
/* (major << 16) | (minor << 8) | patch: compares in version order. */
#define RILL_VERSION_NUMBER ((RILL_VERSION_MAJOR << 16) | (RILL_VERSION_MINOR << 8) | RILL_VERSION_PATCH)

/* "MAJOR.MINOR.PATCH" of the loaded library (static storage). */
RILL_API const char *rill_version(void);
/* RILL_VERSION_NUMBER of the loaded library. */
RILL_API unsigned rill_version_number(void);

/* Options structs (rill_executor_options, rill_checkpoint_options) start with
 * `struct_size`, the sizeof the caller compiled against, so later versions can append
 * members without breaking programs built earlier. Initialize them with their _INIT
 * macro or _default_options() function, then set the members wanted; a struct whose
 * struct_size the library does not know (0: never initialized, or a size no version
 * had) is refused with INVALID_ARGUMENT. */

/* ---------------------------------------------------------------- status ------ */

/* X(name, text) -- the error codes, in a fixed order. */
#define RILL_CODE_MAP(X)                                                        \
  X(OK, "ok")                                                                   \
  X(INVALID_ARGUMENT, "invalid argument")                                       \
  X(NOT_FOUND, "not found")                                                     \
  X(ALREADY_EXISTS, "already exists")                                           \
  X(OUT_OF_MEMORY, "out of memory")                                             \
  X(IO, "i/o error")                                                            \
  X(CORRUPT, "corrupt data")                                                    \
  X(UNIMPLEMENTED, "unimplemented")                                             \
  X(FAILED_PRECONDITION, "failed precondition")                                 \
  X(OUT_OF_RANGE, "out of range")                                               \
  X(CANCELLED, "cancelled")                                                     \
  X(DEADLINE_EXCEEDED, "deadline exceeded")                                     \
  X(UNAVAILABLE, "unavailable")                                                 \
  X(INTERNAL, "internal error")

typedef enum rill_code {
#define RILL_X_(name, text) RILL_##name,
  RILL_CODE_MAP(RILL_X_)
#undef RILL_X_
  RILL_CODE_COUNT
} rill_code;

typedef struct rill_status rill_status;

RILL_API rill_code rill_status_code(const rill_status *status); /* NULL -> RILL_OK */
RILL_API const char *rill_status_message(const rill_status *status);
RILL_API const char *rill_code_name(rill_code code); /* "INVALID_ARGUMENT" */
RILL_API void rill_status_destroy(rill_status *status);

/* The vector instruction set the CPU kernels take on this machine: "avx512", "avx2" or
 * "generic" (the build's baseline). Chosen once per process from cpuid; the environment
 * variable RILL_CPU_ISA=generic|avx2|avx512 caps it. */
RILL_API const char *rill_cpu_isa(void);

/* ---------------------------------------------------------------- dtypes ------ */

/* Values are Paddle's VarType.Type numbers. */
typedef enum rill_dtype {
  RILL_DTYPE_BOOL = 0,
  RILL_DTYPE_INT16 = 1,
  RILL_DTYPE_INT32 = 2,
  RILL_DTYPE_INT64 = 3,
  RILL_DTYPE_FP16 = 4,
  RILL_DTYPE_FP32 = 5,
  RILL_DTYPE_FP64 = 6,
  RILL_DTYPE_UINT8 = 20,
  RILL_DTYPE_INT8 = 21,
  RILL_DTYPE_BF16 = 22,
  RILL_DTYPE_COMPLEX64 = 23,
  RILL_DTYPE_COMPLEX128 = 24,
  RILL_DTYPE_COUNT = 25 /* one past the largest value */
} rill_dtype;

/* Size in bytes of one element, 0 when dtype is not a tensor element type. */
RILL_API size_t rill_dtype_size(rill_dtype dtype);
/* "float32", "int64", ...; "invalid" when not an element type. */
RILL_API const char *rill_dtype_name(rill_dtype dtype);

/* ---------------------------------------------------------------- places ------ */

typedef enum rill_device { RILL_DEVICE_CPU = 0, RILL_DEVICE_CUDA = 1, RILL_DEVICE_COUNT } rill_device;

typedef struct rill_place {
  rill_device device;
  int32_t id; /* device ordinal; 0 for the CPU */
} rill_place;

/* Parses a place: "cpu", "cuda:0", Paddle's "gpu:1", or a registered backend's name
 * with an optional ":ID". INVALID_ARGUMENT names the text. Does not check that the
 * place can be used (an executor made for it does). */
RILL_API rill_status *rill_parse_place(const char *text, rill_place *out);

/* A device's memory as its backend's allocator sees it. */
typedef struct rill_device_memory_stats {
  int64_t current_bytes;  /* handed out to tensors now */
  int64_t peak_bytes;     /* the most current_bytes has been */
  int64_t cached_bytes;   /* freed and kept for reuse */
  int64_t reserved_bytes; /* obtained from the device and not released */
  int64_t device_allocs;  /* calls to the device's own allocator (cudaMalloc) so far */
} rill_device_memory_stats;

/* The memory statistics of `place`'s backend: UNIMPLEMENTED for a backend that keeps
 * none (the CPU's), and the place's errors. */
RILL_API rill_status *rill_device_memory_stats_get(rill_place place, rill_device_memory_stats *out);

/* Starts or stops the profiler of `place`'s device (the CUDA backend's
 * cudaProfilerStart/cudaProfilerStop, for nsys/ncu/nvprof with a capture range on the
 * profiler API): UNIMPLEMENTED for a backend without one (the CPU's), and the place's
 * errors (no CUDA device: its reason). */
RILL_API rill_status *rill_device_profiler_start(rill_place place);
RILL_API rill_status *rill_device_profiler_stop(rill_place place);

/* `bytes` (> 0) of host memory for data bound to a CUDA device (Paddle's
 * CUDAPinnedPlace): page-locked by the CUDA backend when it is loaded and sees a device
 * (*pinned true), else plain host memory aligned as tensors are (*pinned false).
 * An out-of-memory status when neither can be had. Free with rill_pinned_host_free, passing
 * the same `pinned`. */
RILL_API rill_status *rill_pinned_host_alloc(size_t bytes, void **out, bool *pinned);
RILL_API void rill_pinned_host_free(void *p, bool pinned);

/* True when this build has the CUDA backend (librill_cuda.so, loaded on first use of a
 * CUDA place: doc/design/cuda.md). It says nothing of the machine's driver or devices. */
RILL_API bool rill_is_compiled_with_cuda(void);
/* The CUDA devices this process can use. When it can use none, *count is 0 and the
 * error says why: NOT_FOUND for a build without the backend; UNAVAILABLE for a backend
 * library that does not load, no driver or no device. Loads the backend on first use. */
RILL_API rill_status *rill_cuda_device_count(int32_t *count);

/* ------------------------------------------------------------- allocator ------ */

/* Every allocation the library makes goes through this table. alloc/realloc return
 * memory aligned to at least 16 bytes; aligned_alloc to `align` (a power of two);
 * free releases memory from any of the three and accepts NULL. */
typedef struct rill_allocator {
  void *(*alloc)(void *ctx, size_t size);
  void *(*realloc)(void *ctx, void *ptr, size_t size);
  void *(*aligned_alloc)(void *ctx, size_t size, size_t align);
  void (*free)(void *ctx, void *ptr);
  void *ctx;
} rill_allocator;

/* Installs `allocator` for the whole process (NULL restores the default). Call it
 * while no other rill object is alive: memory must be freed by the allocator that
 * allocated it. */
RILL_API void rill_set_allocator(const rill_allocator *allocator);

/* ---------------------------------------------------------------- tensors ----- */

#define RILL_MAX_DIMS 9

typedef struct rill_tensor rill_tensor;

RILL_API rill_status *rill_tensor_create(rill_dtype dtype, const int64_t *dims, size_t ndim,
                                         rill_tensor **out);
/* Wraps caller memory without copying. `deleter` (may be NULL) is called with
 * (data, deleter_ctx) when the library drops its last reference. On error the deleter
 * is not called: the caller still owns `data`. */
RILL_API rill_status *rill_tensor_create_from_data(rill_dtype dtype, const int64_t *dims,
                                                   size_t ndim, void *data, size_t byte_size,
                                                   void (*deleter)(void *data, void *ctx),
                                                   void *deleter_ctx, rill_tensor **out);
RILL_API void rill_tensor_destroy(rill_tensor *tensor);
RILL_API rill_dtype rill_tensor_dtype(const rill_tensor *tensor);
RILL_API size_t rill_tensor_ndim(const rill_tensor *tensor);
RILL_API const int64_t *rill_tensor_dims(const rill_tensor *tensor);
RILL_API int64_t rill_tensor_numel(const rill_tensor *tensor);
RILL_API size_t rill_tensor_byte_size(const rill_tensor *tensor);
RILL_API void *rill_tensor_data(rill_tensor *tensor);
/* Level-of-detail offsets (sequence boundaries). levels[i] has counts[i] offsets. */
RILL_API size_t rill_tensor_lod_levels(const rill_tensor *tensor);
RILL_API const uint64_t *rill_tensor_lod(const rill_tensor *tensor, size_t level, size_t *count);
RILL_API rill_status *rill_tensor_set_lod(rill_tensor *tensor, size_t nlevels,
                                          const uint64_t *const *levels, const size_t *counts);

/* ----------------------------------------------------------------- scopes ----- */

typedef struct rill_scope rill_scope;

RILL_API rill_status *rill_scope_create(rill_scope *parent, rill_scope **out);
RILL_API void rill_scope_destroy(rill_scope *scope);
/* A new reference to the dense tensor held by variable `name` (looked up through the
 * parent chain); NOT_FOUND if there is none. Writing through rill_tensor_data of the
 * reference writes the variable until a run replaces or privatizes its buffer. While a
 * checkpoint of the variable is still being written, the variable first gets its own
 * copy of the bytes, so such writes never reach the checkpoint; a reference kept from
 * before the run has no such guard (rill_executor_flush first). A variable that lives on
 * a device (a run on a CUDA place left it there) is copied to the host instead: the
 * reference holds its values at the call, and writes through it do not reach the
 * variable (rill_scope_set_tensor does). */
RILL_API rill_status *rill_scope_get_tensor(rill_scope *scope, const char *name, rill_tensor **out);
/* Makes variable `name` (created in `scope` if absent) share `tensor`'s data. */
RILL_API rill_status *rill_scope_set_tensor(rill_scope *scope, const char *name,
                                            const rill_tensor *tensor);

/* ---------------------------------------------------------------- programs ---- */

typedef struct rill_program rill_program;

RILL_API rill_status *rill_program_create(rill_program **out);
RILL_API void rill_program_destroy(rill_program *program);
RILL_API rill_status *rill_program_parse(const void *bytes, size_t size, rill_program **out);
RILL_API rill_status *rill_program_load(const char *path, rill_program **out);
/* Serializes to ProgramDesc bytes; *out is freed with rill_free_buffer. */
RILL_API rill_status *rill_program_serialize(const rill_program *program, void **out, size_t *size);
RILL_API void rill_free_buffer(void *buffer);
/* Checks every op against its schema (inputs, outputs, attributes) and runs compile-time
 * shape inference. Messages name block, op index, op type and slot. */
RILL_API rill_status *rill_program_validate(const rill_program *program);
RILL_API size_t rill_program_num_blocks(const rill_program *program);
/* Increments on every edit; plans prepared for an older version are rebuilt. */
RILL_API uint64_t rill_program_version(const rill_program *program);

/* Block nesting: block 0 and blocks with no parent are at depth 0, a block one deeper
 * than its parent. Loading, parsing and rill_program_append_block refuse a block nested
 * deeper than this (real programs nest a few levels: a while inside a conditional). */
#define RILL_MAX_BLOCK_DEPTH 256

/* Reading a program's description, as `rill inspect` and `rill dot` show it. Blocks,
 * variables, ops, slots and attributes are addressed by index; the strings and arrays
 * handed out stay valid until the program is edited or destroyed. The _info functions
 * fail with OUT_OF_RANGE naming the block and the index when either does not exist. */

/* The parent of `block`; -1 for none, and for a block that does not exist. */
RILL_API int32_t rill_block_parent(const rill_program *program, int32_t block);
/* Paddle's ProgramDesc.version of a parsed file; false when the file had none. */
RILL_API bool rill_program_file_version(const rill_program *program, int64_t *out);

typedef struct rill_var_info {
  const char *name;
  int32_t type;         /* VarType.Type: a rill_var_type, or another number kept as read */
  bool has_tensor;      /* dtype, dims and lod_level below are declared */
  rill_dtype dtype;
  size_t ndim;
  const int64_t *dims;  /* -1: an extent known only at run time */
  int32_t lod_level;
  bool persistable;
  bool is_parameter;
} rill_var_info;

RILL_API rill_status *rill_block_var_info(const rill_program *program, int32_t block, size_t i,
                                          rill_var_info *out);
/* The index of the variable `name` declared in `block` itself (parents are not searched:
 * walk rill_block_parent for that); false when there is none. */
RILL_API bool rill_block_var_index(const rill_program *program, int32_t block, const char *name,
                                   size_t *index);

/* The descriptions of variables #from.. of `block` in one buffer, for bindings whose
 * calls cost more than the reading (Python over ctypes): per variable ten NUL-terminated
 * fields, NAME DIMS TYPE HAS_TENSOR DTYPE LOD_LEVEL PERSISTABLE IS_PARAMETER
 * STOP_GRADIENT NEED_CHECK_FEED, DIMS the extents joined by ',' (empty without a tensor
 * description or for a scalar), the rest decimal (flags 0 or 1). `*out` (free with
 * rill_free_buffer) holds `*size` bytes; none for `from` == the variable count.
 * OUT_OF_RANGE names a `from` past it. */
RILL_API rill_status *rill_block_vars_packed(const rill_program *program, int32_t block,
                                             size_t from, void **out, size_t *size);

typedef struct rill_op_info {
  const char *type;
  size_t ninputs;   /* input slots */
  size_t noutputs;  /* output slots */
  size_t nattrs;
  bool registered;  /* rill has a schema for this type (built in or from a plugin) */
  bool is_feed;     /* its schema marks it as a feed op (binds input `col`) */
  bool is_fetch;    /* ... as a fetch op (binds output `col`) */
} rill_op_info;

RILL_API rill_status *rill_block_op_info(const rill_program *program, int32_t block, size_t i,
                                         rill_op_info *out);

/* One input or output slot of an op: its name ("X", "Out") and its variables. */
typedef struct rill_slot_info {
  const char *name;
  size_t nargs;
  const char *const *args;
} rill_slot_info;

RILL_API rill_status *rill_block_op_input_info(const rill_program *program, int32_t block,
                                               size_t op, size_t slot, rill_slot_info *out);
RILL_API rill_status *rill_block_op_output_info(const rill_program *program, int32_t block,
                                                size_t op, size_t slot, rill_slot_info *out);

typedef struct rill_attr_info {
  const char *name;
  int32_t type;     /* Paddle's AttrType: rill_plugin_attr_type, 8 a block, 10 blocks, ... */
  size_t count;     /* items of a list type; 1 for a scalar */
  bool has_int;     /* int_value holds the value (an INT, LONG or BOOLEAN attribute) */
  int64_t int_value;
  size_t nblocks;   /* the blocks a BLOCK (1) or BLOCKS attribute names; 0 for others */
  const int32_t *blocks;
} rill_attr_info;

RILL_API rill_status *rill_block_op_attr_info(const rill_program *program, int32_t block,
                                              size_t op, size_t attr, rill_attr_info *out);
/* The attribute's value as text: "[1, 2]", "0.5", "\"NCHW\"", "block 2". *out is freed
 * with rill_free_buffer. */
RILL_API rill_status *rill_block_op_attr_text(const rill_program *program, int32_t block,
                                              size_t op, size_t attr, char **out);

/* An attribute's value, typed: i holds an INT, LONG, BOOLEAN or BLOCK; f a FLOAT or
 * FLOAT64; s a STRING or VAR; a list type has `count` items at `items`: int32_t for
 * INTS and BLOCKS, int64_t for LONGS, float for FLOATS, double for FLOAT64S, bool for
 * BOOLEANS, const char * for STRINGS and VARS. */
typedef struct rill_attr_value_info {
  const char *name;
  int32_t type;
  size_t count;
  int64_t i;
  double f;
  const char *s;
  const void *items;
} rill_attr_value_info;

RILL_API rill_status *rill_block_op_attr_value(const rill_program *program, int32_t block,
                                               size_t op, size_t attr,
                                               rill_attr_value_info *out);

/* The variable flags rill_var_info leaves out. */
typedef struct rill_var_flags {
  bool stop_gradient;
  bool need_check_feed;
} rill_var_flags;

RILL_API rill_status *rill_block_var_flags(const rill_program *program, int32_t block, size_t i,
                                           rill_var_flags *out);

/* Editing: blocks, variables and ops are addressed by index. */
RILL_API rill_status *rill_program_append_block(rill_program *program, int32_t parent_idx,
                                                int32_t *out_idx);
RILL_API size_t rill_block_num_vars(const rill_program *program, int32_t block);
RILL_API size_t rill_block_num_ops(const rill_program *program, int32_t block);

/* VarType.Type numbers for variables (a subset; others pass through files unchanged). */
typedef enum rill_var_type {
  RILL_VAR_LOD_TENSOR = 7,
  RILL_VAR_SELECTED_ROWS = 8,
  RILL_VAR_FEED_MINIBATCH = 9,
  RILL_VAR_FETCH_LIST = 10,
  RILL_VAR_STEP_SCOPES = 11,
  RILL_VAR_LOD_RANK_TABLE = 12,
  RILL_VAR_LOD_TENSOR_ARRAY = 13,
  RILL_VAR_READER = 15,
  RILL_VAR_RAW = 17
} rill_var_type;

RILL_API rill_status *rill_block_add_var(rill_program *program, int32_t block, const char *name,
                                         rill_var_type type, rill_dtype dtype,
                                         const int64_t *dims, size_t ndim, int32_t lod_level,
                                         bool persistable);
RILL_API rill_status *rill_var_set_flags(rill_program *program, int32_t block, const char *name,
                                         bool persistable, bool is_parameter, bool stop_gradient);
/* Replaces the tensor description of variable `name` of `block`: with has_tensor false
 * the variable is declared without one, and the next op writing it infers it
 * (rill_block_infer_op). NOT_FOUND names a missing variable. */
RILL_API rill_status *rill_var_set_tensor(rill_program *program, int32_t block, const char *name,
                                          bool has_tensor, rill_dtype dtype, const int64_t *dims,
                                          size_t ndim, int32_t lod_level);
/* Paddle's need_check_feed: a feed of the variable must match its declared shape. */
RILL_API rill_status *rill_var_set_need_check_feed(rill_program *program, int32_t block,
                                                   const char *name, bool need_check_feed);
/* Flags of rill_block_declare_var. */
enum {
  RILL_DECLARE_PERSISTABLE = 1,
  RILL_DECLARE_IS_PARAMETER = 2,
  RILL_DECLARE_STOP_GRADIENT = 4,
  RILL_DECLARE_NEED_CHECK_FEED = 8,
  RILL_DECLARE_NO_TENSOR = 16 /* no tensor description yet: the next op writing it infers it */
};
/* Declares variable `name` of `block` with its whole description in one call, as
 * rill_block_add_var followed by rill_var_set_flags (when IS_PARAMETER or STOP_GRADIENT
 * is given), rill_var_set_need_check_feed (NEED_CHECK_FEED) and rill_var_set_tensor with
 * has_tensor false (NO_TENSOR, for a tensor type) would, leaving the same description.
 * `flags` ORs the RILL_DECLARE_ values. rill_block_add_var's errors, and
 * INVALID_ARGUMENT for an unknown flag; on error nothing is declared. */
RILL_API rill_status *rill_block_declare_var(rill_program *program, int32_t block,
                                             const char *name, rill_var_type type,
                                             rill_dtype dtype, const int64_t *dims, size_t ndim,
                                             int32_t lod_level, uint32_t flags);
/* Removes variable `name` from `block` (ops naming it are not changed). */
RILL_API rill_status *rill_block_remove_var(rill_program *program, int32_t block,
                                            const char *name);
/* A deep copy of `program` (every modelled and unknown field). */
RILL_API rill_status *rill_program_copy(const rill_program *program, rill_program **out);

typedef struct rill_op_builder rill_op_builder;
/* Starts an op of `type`; nothing is added to the program until rill_op_builder_append. */
RILL_API rill_status *rill_op_builder_create(const char *type, rill_op_builder **out);
RILL_API void rill_op_builder_destroy(rill_op_builder *builder);
RILL_API rill_status *rill_op_builder_input(rill_op_builder *b, const char *slot,
                                            const char *const *args, size_t nargs);
RILL_API rill_status *rill_op_builder_output(rill_op_builder *b, const char *slot,
                                             const char *const *args, size_t nargs);
RILL_API rill_status *rill_op_builder_attr_int(rill_op_builder *b, const char *name, int32_t v);
RILL_API rill_status *rill_op_builder_attr_long(rill_op_builder *b, const char *name, int64_t v);
RILL_API rill_status *rill_op_builder_attr_float(rill_op_builder *b, const char *name, float v);
RILL_API rill_status *rill_op_builder_attr_double(rill_op_builder *b, const char *name, double v);
RILL_API rill_status *rill_op_builder_attr_bool(rill_op_builder *b, const char *name, bool v);
RILL_API rill_status *rill_op_builder_attr_string(rill_op_builder *b, const char *name,
                                                  const char *v);
RILL_API rill_status *rill_op_builder_attr_ints(rill_op_builder *b, const char *name,
                                                const int32_t *v, size_t n);
RILL_API rill_status *rill_op_builder_attr_longs(rill_op_builder *b, const char *name,
                                                 const int64_t *v, size_t n);
RILL_API rill_status *rill_op_builder_attr_floats(rill_op_builder *b, const char *name,
                                                  const float *v, size_t n);
RILL_API rill_status *rill_op_builder_attr_strings(rill_op_builder *b, const char *name,
                                                   const char *const *v, size_t n);
RILL_API rill_status *rill_op_builder_attr_bools(rill_op_builder *b, const char *name,
                                                 const bool *v, size_t n);
RILL_API rill_status *rill_op_builder_attr_block(rill_op_builder *b, const char *name, int32_t idx);
/* Appends the op at the end of `block` (or at `index` with _insert); attributes are
 * checked against the op's schema (names, types) and the builder is left reusable. */
RILL_API rill_status *rill_op_builder_append(rill_op_builder *b, rill_program *program,
                                             int32_t block);
RILL_API rill_status *rill_op_builder_insert(rill_op_builder *b, rill_program *program,
                                             int32_t block, size_t index);
RILL_API rill_status *rill_block_remove_op(rill_program *program, int32_t block, size_t index);
/* strict (the default): _append and _insert refuse attributes the op's schema lacks or
 * types it cannot take. Not strict: attributes are stored as given (a binding forwarding
 * Fluid's op_role, op_namescope and attributes of other frameworks), and
 * rill_block_infer_op or validation check those the schema declares, converting
 * numbers as when a file is loaded. */
RILL_API rill_status *rill_op_builder_set_strict(rill_op_builder *b, bool strict);
/* Sets the builder's attributes on op #index of `block` (replacing those of the same
 * name; its slots and type are not used), checked as _insert checks them. */
RILL_API rill_status *rill_op_builder_set_attrs_of(const rill_op_builder *b,
                                                   rill_program *program, int32_t block,
                                                   size_t index);
/* Checks op #index of `block` against its schema (type, slots, attributes) and writes
 * its inferred outputs' dtype, dims and LoD level into their variable descriptions: the
 * step of rill_program_infer_shapes for one op, costing what that op touches. Errors
 * name the block, the op index and type, the slot and the variable; nothing is changed
 * on error. An output declared with a tensor description is checked against what is
 * inferred. */
RILL_API rill_status *rill_block_infer_op(rill_program *program, int32_t block, size_t index);
/* Builds an op from `spec`, a packed description of `len` bytes, inserts it at `index`
 * of `block` (SIZE_MAX: at the end) and, with `infer`, infers its outputs as
 * rill_block_infer_op does; if inference fails the op is removed again, so nothing is
 * changed. One call in place of the builder's one per slot and attribute, for bindings
 * whose calls cost more than the work (Python over ctypes). Attributes are stored as a
 * non-strict builder stores them. `spec` is a run of NUL-terminated fields:
 *   TYPE  NIN {SLOT NARGS ARG...}  NOUT {SLOT NARGS ARG...}  NATTRS {NAME ATYPE VALUE}
 * Counts and integers are decimal; ATYPE is Paddle's AttrType number; FLOAT and FLOAT64
 * values are decimal text (read as a double, FLOAT then rounded to float); BOOLEAN is 0
 * or 1; a STRING is the field itself; a list (INTS, LONGS, FLOATS, FLOAT64S, BOOLEANS,
 * STRINGS, BLOCKS) is its item count followed by its items. A malformed description is
 * refused with the field that is wrong. */
RILL_API rill_status *rill_block_insert_op_packed(rill_program *program, int32_t block,
                                                  size_t index, const char *spec, size_t len,
                                                  bool infer);

/* ---------------------------------------------------------------- models ------ */

/* A model: a program plus its persistable parameters, loaded from
 *   - a 1.x directory: DIR/__model__ + one file per persistable variable, or a combined
 *     file named by params_file ("params", "__params__", ...);
 *   - a `__model__` file path (its directory holds the parameters);
 *   - a 2.x PREFIX.pdmodel path (with PREFIX.pdiparams beside it).
 * params_file may be NULL: then a combined file is looked for by the usual names, and
 * otherwise one file per variable is read. */
typedef struct rill_model rill_model;

RILL_API rill_status *rill_model_load(const char *path, const char *params_file, rill_model **out);
RILL_API void rill_model_destroy(rill_model *model);
RILL_API const rill_program *rill_model_program(const rill_model *model);
/* The scope holding the parameters (owned by the model). */
RILL_API rill_scope *rill_model_scope(rill_model *model);
/* Feed and fetch targets in `col` order. */
RILL_API size_t rill_model_num_inputs(const rill_model *model);
RILL_API const char *rill_model_input_name(const rill_model *model, size_t i);
RILL_API size_t rill_model_num_outputs(const rill_model *model);
RILL_API const char *rill_model_output_name(const rill_model *model, size_t i);

/* Reads / writes one variable in Paddle's tensor stream format. */
RILL_API rill_status *rill_tensor_load_file(const char *path, rill_tensor **out);
RILL_API rill_status *rill_tensor_save_file(const rill_tensor *tensor, const char *path);

/* Reads / writes a NumPy .npy file (format versions 1 to 3 read, 1 written; C order,
 * little-endian; float16/32/64, int8/16/32/64, uint8, bool). Every size in the header is
 * checked against the data before anything is allocated; errors name the file. The
 * write is crash-safe (a temp file beside it, fsync, rename). */
RILL_API rill_status *rill_tensor_load_npy(const char *path, rill_tensor **out);
RILL_API rill_status *rill_tensor_save_npy(const rill_tensor *tensor, const char *path);

/* --------------------------------------------------------------- executor ----- */

typedef struct rill_executor rill_executor;

typedef struct rill_executor_options {
  uint32_t struct_size; /* sizeof(rill_executor_options), set by the initializers below */
  rill_place place;
  int32_t num_threads; /* 0: one per core */
} rill_executor_options;

/* The defaults: the CPU, one thread per core. */
#define RILL_EXECUTOR_OPTIONS_INIT {sizeof(rill_executor_options), {RILL_DEVICE_CPU, 0}, 0}
RILL_API rill_executor_options rill_executor_default_options(void);

/* options may be NULL (the defaults). INVALID_ARGUMENT for an unknown struct_size or a
 * negative num_threads, UNIMPLEMENTED for a device other than the CPU. */

RILL_API rill_status *rill_executor_create(const rill_executor_options *options, rill_executor **out);
RILL_API void rill_executor_destroy(rill_executor *executor);

/* Runs block 0 of `program` in `scope`. Feeds are borrowed (bound without a copy) and
 * placed by feed op `col` (if the program has feed ops) or into variables of those
 * names. fetch_names are read after the run (by fetch op `col`, or by name);
 * outputs[i] receives a new reference the caller destroys. Persistable variables live
 * in `scope`, temporaries in a scope local to the run. Plans are cached per
 * (program version, feed names, fetch names). One run at a time per executor (whatever
 * the program): a call while another thread's run, prepare or plan-cache resize holds
 * it fails with FAILED_PRECONDITION naming the program and the executor. */
RILL_API rill_status *rill_executor_run(rill_executor *executor, const rill_program *program,
                                        rill_scope *scope, const char *const *feed_names,
                                        rill_tensor *const *feeds, size_t nfeeds,
                                        const char *const *fetch_names, size_t nfetch,
                                        rill_tensor **outputs);

/* Prepares (and caches) the plan for (program, feed names, fetch names) without running
 * it: schemas, kernels, attributes and compile-time shapes are checked, so a program
 * with ops rill lacks fails here, naming them. A later rill_executor_run with the same
 * program version and names reuses the plan. */
RILL_API rill_status *rill_executor_prepare(rill_executor *executor, const rill_program *program,
                                            const char *const *feed_names, size_t nfeeds,
                                            const char *const *fetch_names, size_t nfetch);
/* Bounds the number of cached plans (default 16, at least 1); the least recently used
 * plans beyond it are freed with their temporaries. */
RILL_API rill_status *rill_executor_set_plan_cache_size(rill_executor *executor, size_t n);

/* Schedules. SEQUENTIAL runs ops in program order on the calling thread. PARALLEL runs
 * every op as soon as the ops it depends on (read-after-write, write-after-read,
 * write-after-write) are done: compute ops on a pool of num_threads threads (the calling
 * thread among them), ops flagged blocking on libuv's thread pool. Both give bitwise
 * identical results. AUTO (the default) picks per program when it is prepared: PARALLEL
 * when the program has blocking ops, or enough independent ops to keep two threads busy
 * (at least 16 ops and a longest dependency chain at most half of them) and num_threads
 * is more than 1; SEQUENTIAL otherwise (chains, tiny programs). See
 * doc/design/scheduler.md. */
typedef enum rill_schedule {
  RILL_SCHEDULE_AUTO = 0,
  RILL_SCHEDULE_SEQUENTIAL = 1,
  RILL_SCHEDULE_PARALLEL = 2
} rill_schedule;

/* Sets the schedule of later runs. The thread count is rill_executor_options.num_threads. */
RILL_API rill_status *rill_executor_set_schedule(rill_executor *executor, rill_schedule schedule);
/* Gives every later run a deadline `timeout_us` microseconds after it starts (0: none).
 * A run past its deadline starts no more ops, waits for the running ones and fails with
 * DEADLINE_EXCEEDED. */
RILL_API rill_status *rill_executor_set_timeout(rill_executor *executor, int64_t timeout_us);
/* Cancels the run in progress on `executor`, if any; callable from any thread. The run
 * starts no more ops, waits for the running ones and fails with CANCELLED. Nothing
 * happens when no run is in progress. */
RILL_API void rill_executor_cancel(rill_executor *executor);
/* true: every temporary (not persistable, not fed, not fetched) is released as soon as
 * the last op that uses it finishes, so peak memory is what the live temporaries need;
 * a warm run then allocates them again. false (the default): temporaries keep their
 * buffers between runs, so a warm run allocates nothing but the fetched handles. */
RILL_API rill_status *rill_executor_set_release_temporaries(rill_executor *executor, bool release);
/* true: plan memory at prepare (doc/design/inference.md): temporaries whose lifetimes do
 * not overlap share one buffer, handed from one to the next as the last op using it
 * finishes, in both schedules; a warm run with unchanged shapes still allocates nothing
 * but the fetched outputs. false (the default): each temporary keeps its own buffer. */
RILL_API rill_status *rill_executor_set_memory_plan(rill_executor *executor, bool enabled);
/* Bytes of the distinct buffers the temporaries of the most recently used plan hold. */
RILL_API size_t rill_executor_temporary_bytes(const rill_executor *executor);

/* -------------------------------------------------------------- predictor ----- */

/* Inference on a saved model: load once, optimize the program for inference, run many
 * times. A config names the model and the options; a predictor owns an executor, its
 * plan and the run's temporaries; rill_predictor_clone gives another thread its own
 * predictor over the same loaded weights (shared read-only, never copied).
 * doc/design/inference.md describes the passes and the memory plan. */
typedef struct rill_predictor_config rill_predictor_config;
typedef struct rill_predictor rill_predictor;

/* Optimization passes applied at load (bits of a mask). */
typedef enum rill_pass {
  RILL_PASS_DROPOUT = 1u << 0,  /* dropout -> scale by (1 - p), or nothing */
  RILL_PASS_FOLD_BN = 1u << 1,  /* inference batch_norm folded into conv / mul weights */
  RILL_PASS_FUSE_FC = 1u << 2,  /* mul + elementwise_add (+ relu) -> fc */
  RILL_PASS_FUSE_CONV = 1u << 3, /* conv + elementwise_add (+ activation) -> conv2d_fusion */
  RILL_PASS_INPLACE = 1u << 4,  /* activations write over their input when nothing else reads it */
  RILL_PASS_ALL = (1u << 5) - 1, /* the passes of level 2 */
  /* Opt-in, in no level: conv2d, mul or matmul (2-D weight) over fake-quantized levels +
   * fake_dequantize_max_abs or fake_channel_wise_dequantize_max_abs -> conv2d_int8 or
   * mul_int8 (int8 products, exact int32 sums; doc/design/int8.md). */
  RILL_PASS_INT8 = 1u << 5
} rill_pass;

/* model_path: a model directory, a `__model__` file, a `.pdmodel` file or a 2.x prefix
 * (PREFIX.pdmodel + PREFIX.pdiparams), as rill_model_load takes. Defaults: threads 0
 * (one per core), optimization level 2, memory optimization on. */
RILL_API rill_status *rill_predictor_config_create(const char *model_path,
                                                   rill_predictor_config **out);
RILL_API void rill_predictor_config_destroy(rill_predictor_config *config);
/* The combined parameter file (model file + params file layout); NULL: look for it. */
RILL_API rill_status *rill_predictor_config_set_params_file(rill_predictor_config *config,
                                                            const char *params_file);
RILL_API rill_status *rill_predictor_config_set_threads(rill_predictor_config *config,
                                                        int32_t num_threads);
/* 0: run the program as saved; 1: DROPOUT and FOLD_BN; 2: every pass. */
RILL_API rill_status *rill_predictor_config_set_opt_level(rill_predictor_config *config,
                                                          int32_t level);
/* Overrides the level with an explicit mask of rill_pass bits. */
RILL_API rill_status *rill_predictor_config_set_passes(rill_predictor_config *config,
                                                       uint32_t passes);
/* true: temporaries share buffers by liveness (the executor's memory plan). */
RILL_API rill_status *rill_predictor_config_set_memory_optim(rill_predictor_config *config,
                                                             bool enabled);

/* Where the predictor runs (default the CPU): a place another backend serves, such as
 * {RILL_DEVICE_CUDA, 0}. Checked here: UNIMPLEMENTED with the reason when the place
 * cannot be used (no backend, driver or device), INVALID_ARGUMENT for a device id the
 * machine lacks. */
RILL_API rill_status *rill_predictor_config_set_place(rill_predictor_config *config,
                                                      rill_place place);

/* The executor's schedule (rill_executor_set_schedule; default AUTO). */
RILL_API rill_status *rill_predictor_config_set_schedule(rill_predictor_config *config,
                                                         rill_schedule schedule);

/* Ops whose schema says they read or write files (save, save_combine, load,
 * load_combine, checkpoint) make rill_predictor_create fail, naming the op and its path,
 * unless allowed here: then only where every such path resolves inside `dir` (an
 * existing directory; symbolic links followed, relative paths taken from the working
 * directory). NULL refuses them again (the default). */
RILL_API rill_status *rill_predictor_config_allow_file_ops(rill_predictor_config *config,
                                                          const char *dir);

/* Loads the model, applies the passes and prepares the plan. Errors name the model file,
 * the op and the variable. */
RILL_API rill_status *rill_predictor_create(const rill_predictor_config *config,
                                            rill_predictor **out);
/* A new predictor over the same optimized program and weights, with its own executor and
 * temporaries: one predictor per thread. The weights stay alive until the last predictor
 * sharing them is destroyed. */
RILL_API rill_status *rill_predictor_clone(const rill_predictor *predictor, rill_predictor **out);
RILL_API void rill_predictor_destroy(rill_predictor *predictor);

/* Inputs (feed targets) and outputs (fetch targets) in `col` order, with their declared
 * dtype and dims (-1: any extent). */
RILL_API size_t rill_predictor_num_inputs(const rill_predictor *predictor);
RILL_API const char *rill_predictor_input_name(const rill_predictor *predictor, size_t i);
RILL_API size_t rill_predictor_num_outputs(const rill_predictor *predictor);
RILL_API const char *rill_predictor_output_name(const rill_predictor *predictor, size_t i);
/* Declared dtype and dims of input / output i; *dims stays valid while the predictor lives. */
RILL_API rill_status *rill_predictor_input_info(const rill_predictor *predictor, size_t i,
                                                rill_dtype *dtype, const int64_t **dims,
                                                size_t *ndim);
RILL_API rill_status *rill_predictor_output_info(const rill_predictor *predictor, size_t i,
                                                 rill_dtype *dtype, const int64_t **dims,
                                                 size_t *ndim);

/* Runs the model. Every input is given once, by name, in any order (inputs are borrowed,
 * not copied); outputs[i] (rill_predictor_num_outputs of them, in `col` order) receive new
 * tensors the caller destroys. A wrong name, a missing input, a dtype or a shape the model
 * does not declare fail with INVALID_ARGUMENT naming the input and the model file. A run
 * while another thread's run of the same predictor is in progress fails with
 * FAILED_PRECONDITION ("predictor is in use by another thread; use rill_predictor_clone")
 * and changes nothing; the other run goes on. */
RILL_API rill_status *rill_predictor_run(rill_predictor *predictor, const char *const *input_names,
                                         rill_tensor *const *inputs, size_t ninputs,
                                         rill_tensor **outputs);

/* Bytes of the buffers the predictor's temporaries held after the last run (with the
 * memory plan, the buffers every temporary of a run shared: the run's peak of
 * temporaries); 0 before the first run. */
RILL_API size_t rill_predictor_memory_bytes(const rill_predictor *predictor);
/* Bytes of the loaded (and folded) weights, shared by every clone. */
RILL_API size_t rill_predictor_param_bytes(const rill_predictor *predictor);
/* The program the predictor runs (after the passes). */
RILL_API const rill_program *rill_predictor_program(const rill_predictor *predictor);

/* What the inference passes changed when the predictor was created (its clones share
 * the counts). */
typedef struct rill_pass_counts {
  size_t dropouts;   /* dropout ops removed or turned into scale, identity scale ops removed */
  size_t bn_folded;  /* batch_norm ops folded into a producer's weights */
  size_t fc_fused;   /* mul + elementwise_add (+ relu) -> fc */
  size_t conv_fused; /* conv + elementwise_add (+ activation) -> conv2d_fusion */
  size_t inplace;    /* activations made to write over their input */
  size_t int8;       /* float ops over levels and their dequantizers -> int8 ops */
  size_t int8_folded; /* fake quantize ops folded into the int8 ops that read their levels */
} rill_pass_counts;

RILL_API rill_status *rill_predictor_pass_counts(const rill_predictor *predictor,
                                                 rill_pass_counts *out);

/* --------------------------------------------------------------- training ----- */

/* (parameter, gradient) name pairs, as returned by the backward pass. */
typedef struct rill_param_grads rill_param_grads;

/* Pairs of one's own: n (params[i], grads[i]) names copied, as the clipping and weight
 * decay passes below take them (the optimizer applies those passes to the pairs it is
 * given, which need not come from the backward pass as they are). */
RILL_API rill_status *rill_param_grads_create(const char *const *params, const char *const *grads,
                                             size_t n, rill_param_grads **out);
RILL_API size_t rill_param_grads_count(const rill_param_grads *pairs);
RILL_API const char *rill_param_grads_param(const rill_param_grads *pairs, size_t i);
RILL_API const char *rill_param_grads_grad(const rill_param_grads *pairs, size_t i);
RILL_API void rill_param_grads_destroy(rill_param_grads *pairs);

/* Appends the backward pass of `loss` (a one-element float variable of block 0) to
 * block 0, as Paddle's append_backward does: a fill_constant seeds `loss@GRAD` with 1,
 * the gradient ops of every op on the path from the parameters to the loss follow in
 * reverse order, repeated writes of a gradient are renamed `x@GRAD@RENAME@block0@k` and
 * added by a `sum` op, gradients nothing produced are zero-filled (fill_zeros_like).
 * Variables with stop_gradient set and those named in no_grad_names get no gradient and
 * cut the paths through them. *pairs (may be NULL) receives (parameter, gradient) for
 * every trainable parameter (is_parameter and not stop_gradient; all persistable float
 * tensors when no variable is marked is_parameter) that the loss depends on. The
 * program is left unchanged on error. */
RILL_API rill_status *rill_program_append_backward(rill_program *program, const char *loss,
                                                   const char *const *no_grad_names,
                                                   size_t n_no_grad, rill_param_grads **pairs);
/* As rill_program_append_backward, with the loss's gradient seeded under the name `seed`
 * (NULL: loss@GRAD), which must be new: Paddle's gradients() seeds a target whose
 * target@GRAD exists as target@GRAD_<n>. Every backward pass after a program's first
 * writes a gradient whose name already exists (an earlier pass's x@GRAD) as
 * grad/.../x@GRAD, one "grad/" per pass (grad/grad/x@GRAD in the second), as Paddle 1.8
 * does; the pairs name those. */
RILL_API rill_status *rill_program_append_gradients(rill_program *program, const char *loss,
                                                    const char *seed,
                                                    const char *const *no_grad_names,
                                                    size_t n_no_grad, rill_param_grads **pairs);

/* L2 weight decay (Paddle's append_regularization_ops with L2Decay): for each pair,
 * grad = grad + coeff * param, through a `scale` and an in-place `sum` op appended to
 * block 0 (op_role Optimize, op_role_var [param, grad]). Dense gradients only. */
RILL_API rill_status *rill_program_append_l2_decay(rill_program *program,
                                                   const rill_param_grads *pairs, float coeff);

/* Gradient clipping by global norm (Paddle's ClipGradByGlobalNorm): global_norm =
 * sqrt(sum over grads of sum(square(g))), and every grad is scaled in place by
 * clip_norm / max(global_norm, clip_norm); built from square, reduce_sum, sum, sqrt,
 * fill_constant, elementwise_max, elementwise_div and elementwise_mul ops appended to
 * block 0 (op_role Optimize, op_role_var [param, grad]). Dense gradients only. Paddle
 * clips before it regularizes. */
RILL_API rill_status *rill_program_append_clip_by_global_norm(rill_program *program,
                                                             const rill_param_grads *pairs,
                                                             float clip_norm);

/* ------------------------------------------------------ distribute transpiler --- */

/* Parameter-server training (doc/design/distributed.md), as Fluid 1.x's
 * DistributeTranspiler: each parameter (and its gradient) is cut into row blocks,
 * the blocks are placed on the pservers, and the training program becomes one trainer
 * program plus, per pserver, a pserver program and its startup program. */

typedef enum rill_split_method {
  RILL_SPLIT_ROUND_ROBIN = 0, /* blocks dealt to the pservers in order (Paddle's RoundRobin) */
  RILL_SPLIT_HASH_NAME = 1,   /* pserver = FNV-1a-64(block name) % #pservers: the same in
                                 every process and run (Paddle's HashName used Python's
                                 per-process randomised hash) */
  RILL_SPLIT_METHOD_COUNT
} rill_split_method;

typedef struct rill_transpile_config {
  uint32_t struct_size;           /* sizeof(rill_transpile_config), set by the initializers */
  const char *pservers;           /* "ip:port,ip:port,..." (required) */
  int32_t trainers;               /* number of trainers (>= 1); default 1 */
  int32_t trainer_id;             /* this trainer (0 .. trainers-1); default 0 */
  bool sync_mode;                 /* default true */
  bool slice_var_up;              /* cut variables into blocks; default true */
  rill_split_method split_method; /* default RILL_SPLIT_ROUND_ROBIN */
  int64_t min_block_size;         /* fewest elements in a block; default 8192, less is
                                     refused */
} rill_transpile_config;

#define RILL_TRANSPILE_CONFIG_INIT                                                    \
  {sizeof(rill_transpile_config), NULL, 1, 0, true, true, RILL_SPLIT_ROUND_ROBIN, 8192}
RILL_API rill_transpile_config rill_transpile_default_config(void);

typedef struct rill_transpiled rill_transpiled;

/* Transpiles `main` (a training program with optimizer ops: op_role Optimize, inputs
 * Param, Grad and LearningRate, op_role_var [param, grad]) and its `startup` program.
 * Both are borrowed and left unchanged. INVALID_ARGUMENT for a bad config (no
 * pservers, an empty or repeated endpoint, trainers < 1, trainer_id out of range,
 * min_block_size < 8192, unknown struct_size) or a program without optimizer ops;
 * UNIMPLEMENTED for what the transpiler does not handle (named in the message). */
RILL_API rill_status *rill_program_transpile(const rill_program *main,
                                             const rill_program *startup,
                                             const rill_transpile_config *config,
                                             rill_transpiled **out);
RILL_API void rill_transpiled_destroy(rill_transpiled *transpiled);

/* The trainer program: optimizer and LR-schedule ops removed; split_byref /
 * split_selected_rows, send, send_barrier (sync), recv, fetch_barrier (sync) and
 * concat added. Owned by `transpiled`. */
RILL_API const rill_program *rill_transpiled_trainer_program(const rill_transpiled *transpiled);
/* The trainer's startup program: `startup` with each op that writes nothing but a
 * distributed lookup table (a table some lookup reads with is_distributed) replaced by
 * a fake_init of it, which gives the table its declared shape and dtype and no data:
 * the table lives on the pservers. NULL when the startup program needs no change (no
 * such table, or no startup program given). Owned by `transpiled`. */
RILL_API const rill_program *rill_transpiled_trainer_startup(const rill_transpiled *transpiled);
/* The endpoints, in the order of config->pservers. */
RILL_API size_t rill_transpiled_num_pservers(const rill_transpiled *transpiled);
RILL_API const char *rill_transpiled_pserver_endpoint(const rill_transpiled *transpiled,
                                                      size_t i);
/* The pserver program of `endpoint` (one listen_and_serv op in block 0, one optimize
 * block per parameter block) and its startup program. NOT_FOUND for an endpoint not in
 * config->pservers. Owned by `transpiled`. */
RILL_API rill_status *rill_transpiled_pserver_program(const rill_transpiled *transpiled,
                                                      const char *endpoint,
                                                      const rill_program **out);
RILL_API rill_status *rill_transpiled_pserver_startup(const rill_transpiled *transpiled,
                                                      const char *endpoint,
                                                      const rill_program **out);

/* -------------------------------------------------------- program support ---- */

/* What the Python package (python/rill) and `rill prune` need beyond the sections
 * above, usable from any C caller: compile-time shapes, pruning for inference, a schema
 * question, and saving programs and chosen variables in Paddle's layouts. */

/* Runs validation (rill_program_validate) and writes the inferred dtype, dims and LoD
 * level of every LoD tensor variable back into its description. A variable declared
 * without a tensor description takes what its producer infers; a declared one is
 * checked against it. The program is left unchanged on error. */
RILL_API rill_status *rill_program_infer_shapes(rill_program *program);

/* A copy of `program` holding only the block-0 ops needed to compute `targets` from
 * `feeds` (Paddle's prune before save_inference_model): fed variables cut the walk, feed
 * and fetch ops are dropped, ops flagged side-effect are kept, and block-0 variables
 * nothing uses any more are removed. Names must be declared in block 0. */
RILL_API rill_status *rill_program_prune(const rill_program *program, const char *const *feeds,
                                         size_t nfeeds, const char *const *targets,
                                         size_t ntargets, rill_program **out);

/* Whether op `type` is registered and its schema declares attribute `attr` (a binding
 * sets is_test on exactly the ops that have it when it clones a program for testing). */
RILL_API bool rill_op_has_attribute(const char *type, const char *attr);

/* Writes the program's ProgramDesc bytes (rill_program_serialize) to `path`
 * crash-safely: a temp file beside it, fsync, rename, fsync of the directory. */
RILL_API rill_status *rill_program_save(const rill_program *program, const char *path);

/* Saves the variables `names` (declared in block 0 of `program`) from `scope` into
 * directory `dir` (which must exist): one tensor-stream file per variable named as the
 * variable when `filename` is NULL, else one combined file `dir/filename` with the
 * streams in the order given (Paddle sorts by name). Each file is written
 * crash-safely; names never escape `dir`. */
RILL_API rill_status *rill_program_save_vars(const rill_program *program, rill_scope *scope,
                                             const char *dir, const char *const *names,
                                             size_t n, const char *filename);
/* Loads what rill_program_save_vars (or Paddle's save/save_combine) wrote. Each stored
 * tensor must match its declaration (dtype, dims where known) and a combined file must
 * end after the last variable. All or nothing: on error the scope is left as it was. */
RILL_API rill_status *rill_program_load_vars(const rill_program *program, rill_scope *scope,
                                             const char *dir, const char *const *names,
                                             size_t n, const char *filename);
/* ------------------------------------------------------------- checkpoints ---- */

/* Checkpoints (doc/design/checkpoint.md). A `checkpoint` op in a training program
 * saves its input variables (parameters, optimizer state, the step counter) and the
 * executor's random generator state into DIR/checkpoint_<step>: when it is due, it
 * copies them into staging buffers inside the run (a memcpy's cost) and the executor
 * writes them on its background thread after the run returns, while training goes on.
 * A checkpoint is committed atomically (temp directory, fsync, rename, fsync of DIR)
 * with a manifest holding every file's size and CRC32C; loading takes the newest one
 * that verifies and reports each damaged one it skips.
 *
 * A manager holds a directory and the settings of the checkpoint ops it appends. */
typedef struct rill_checkpoint_manager rill_checkpoint_manager;

typedef struct rill_checkpoint_options {
  uint32_t struct_size;   /* sizeof(rill_checkpoint_options), set by the initializers below */
  int64_t every_n_steps;  /* due when step % n == 0 (0: not by steps) */
  double every_n_seconds; /* due when this long has passed since the last one (0: not by
                             time); with neither set, every step is due */
  int32_t max_to_keep;    /* newest checkpoints kept, older ones removed after each
                             commit (0: keep all); default 3 */
  bool skip_when_busy;    /* a due checkpoint while the previous one is still being
                             written: false (default) waits for it, true skips this one
                             (counted in rill_checkpoint_stats.skipped) */
} rill_checkpoint_options;

/* Default options: every step, keep 3, wait when busy. */
#define RILL_CHECKPOINT_OPTIONS_INIT {sizeof(rill_checkpoint_options), 0, 0.0, 3, false}
RILL_API rill_checkpoint_options rill_checkpoint_default_options(void);

/* options may be NULL (the defaults). INVALID_ARGUMENT for an unknown struct_size or a
 * negative setting. */

RILL_API rill_status *rill_checkpoint_manager_create(const char *dir,
                                                     const rill_checkpoint_options *options,
                                                     rill_checkpoint_manager **out);
RILL_API void rill_checkpoint_manager_destroy(rill_checkpoint_manager *manager);
RILL_API const char *rill_checkpoint_manager_dir(const rill_checkpoint_manager *manager);
/* Changes the options of the ops appended from now on. */
RILL_API rill_status *rill_checkpoint_manager_configure(rill_checkpoint_manager *manager,
                                                        const rill_checkpoint_options *options);

/* Appends to block 0 of `program` an `increment` of the step counter `step_var` (an
 * int64 [1] persistable variable, declared when absent) and a `checkpoint` op with the
 * manager's directory and options, saving `vars` (NULL / 0: every persistable dense
 * tensor of block 0 except feed and fetch lists) and the step counter. `startup` (may
 * be NULL) gets a fill_constant setting the counter to 0. */
RILL_API rill_status *rill_checkpoint_manager_append_op(rill_checkpoint_manager *manager,
                                                        rill_program *program,
                                                        rill_program *startup,
                                                        const char *step_var,
                                                        const char *const *vars, size_t nvars);

/* The step of the newest checkpoint that verifies; NOT_FOUND when there is none. */
RILL_API rill_status *rill_checkpoint_manager_latest(const rill_checkpoint_manager *manager,
                                                     int64_t *step);

/* Loads the newest checkpoint that verifies: its variables into `scope` (created there
 * when absent) and, when `executor` is not NULL, its generator state into the executor.
 * When `program` is not NULL, a checkpoint written by a different program is an error.
 * *step (may be NULL) receives its step; *report (may be NULL; free with
 * rill_free_buffer) one line per newer damaged checkpoint that was skipped, or NULL
 * when none was. NOT_FOUND when no checkpoint verifies. Nothing changes on error. */
RILL_API rill_status *rill_checkpoint_manager_load(rill_checkpoint_manager *manager,
                                                   const rill_program *program, rill_scope *scope,
                                                   rill_executor *executor, int64_t *step,
                                                   char **report);

/* The checkpoints of a directory, newest first, each verified. */
typedef struct rill_checkpoint_list rill_checkpoint_list;
typedef struct rill_checkpoint_info {
  int64_t step;
  int64_t time_unix_ns; /* when the snapshot was taken (for a damaged checkpoint, when
                           its directory was last modified) */
  uint64_t bytes;       /* on disk */
  uint64_t num_vars;
  bool verified;
  const char *path;
  const char *problem; /* why it does not verify; NULL when verified */
} rill_checkpoint_info;

RILL_API rill_status *rill_checkpoint_list_dir(const char *dir, rill_checkpoint_list **out);
RILL_API size_t rill_checkpoint_list_count(const rill_checkpoint_list *list);
/* Checkpoints that a writer retired while the listing was reading them: left out of the
 * list (they are not damaged, they are gone). */
RILL_API size_t rill_checkpoint_list_retired(const rill_checkpoint_list *list);
/* Strings stay valid until the list is destroyed. */
RILL_API rill_status *rill_checkpoint_list_get(const rill_checkpoint_list *list, size_t i,
                                               rill_checkpoint_info *out);
RILL_API void rill_checkpoint_list_destroy(rill_checkpoint_list *list);

/* The cluster snapshots of a parameter-server job's checkpoint directory
 * (doc/design/cluster-checkpoint.md), newest first, every part verified. */
typedef struct rill_cluster_list rill_cluster_list;
typedef struct rill_cluster_snapshot_info {
  int64_t step;
  int64_t time_unix_ns; /* the newest part's snapshot time (0: unknown) */
  uint64_t bytes;       /* the tensors of the parts that verified */
  bool has_manifest;    /* DIR/snapshot_<step> exists (every part was committed) */
  bool complete;        /* the manifest and every part verify: recovery may use it */
  const char *problem;  /* why it does not count; NULL when complete */
  size_t num_parts;
  int32_t pservers, trainers; /* the job's shape, from the newest manifest */
} rill_cluster_snapshot_info;
typedef struct rill_cluster_part_info {
  const char *name; /* "pserver_<i>" / "trainer_<t>" */
  bool present;
  const char *problem; /* NULL: verified (or, without a manifest, not checked) */
} rill_cluster_part_info;

/* Whether DIR holds cluster snapshots (a snapshot manifest or a part directory). */
RILL_API bool rill_cluster_dir_is_cluster(const char *dir);
RILL_API rill_status *rill_cluster_list_dir(const char *dir, rill_cluster_list **out);
RILL_API size_t rill_cluster_list_count(const rill_cluster_list *list);
/* Strings stay valid until the list is destroyed. */
RILL_API rill_status *rill_cluster_list_get(const rill_cluster_list *list, size_t i,
                                            rill_cluster_snapshot_info *out);
RILL_API rill_status *rill_cluster_list_part(const rill_cluster_list *list, size_t i, size_t j,
                                             rill_cluster_part_info *out);
RILL_API void rill_cluster_list_destroy(rill_cluster_list *list);

/* What an executor's checkpoint ops did for one directory. */
typedef struct rill_checkpoint_stats {
  uint64_t saved;   /* committed */
  uint64_t skipped; /* due while the previous one was being written (skip_when_busy) */
  uint64_t failed;  /* writes that failed (each reported once, see below) */
  int64_t last_step;      /* step of the last committed checkpoint, -1: none */
  uint64_t last_bytes;    /* its size */
  double last_snapshot_s; /* time the op spent inside the run for the last one, not
                             counting last_wait_s */
  double last_wait_s;     /* time it waited for the previous write (skip_when_busy off) */
  double last_persist_s;  /* time the background write of the last one took */
  bool in_flight;         /* a write is in progress */
} rill_checkpoint_stats;

/* NOT_FOUND when no checkpoint op of `executor` has used `dir`. */
RILL_API rill_status *rill_executor_checkpoint_stats(rill_executor *executor, const char *dir,
                                                     rill_checkpoint_stats *out);
/* Waits until the background writes of `executor` are done and returns the first
 * failure not yet reported. A failed write is otherwise reported by the next run of the
 * checkpoint op of that directory (the run fails with it). rill_executor_destroy waits
 * for the write in flight too. */
RILL_API rill_status *rill_executor_flush(rill_executor *executor);

/* Tells every parameter server this executor's send, recv and barrier ops talked to
 * that its trainer is done (COMPLETE@RECV, with the ops' trainer id), so pservers stop
 * counting it and exit once every trainer has completed (doc/design/distributed.md).
 * Idempotent: a second call, or one on an executor that talked to no pserver, does
 * nothing. The first failure is returned after every pserver was tried. Python's
 * Executor.close() calls it. */
RILL_API rill_status *rill_executor_dist_complete(rill_executor *executor);

/* The executor's random generator state (xoshiro256**), which random ops and dropout
 * draw from: saved in checkpoints so that a resumed run draws what an uninterrupted
 * one would. */
RILL_API void rill_executor_get_rng_state(const rill_executor *executor, uint64_t state[4]);
RILL_API rill_status *rill_executor_set_rng_state(rill_executor *executor, const uint64_t state[4]);

/* ---------------------------------------------------------------- registry ---- */

/* Number of registered op types, and their names in sorted order. */
RILL_API size_t rill_op_count(void);
RILL_API const char *rill_op_name(size_t i);
/* A human-readable description of an op's schema (inputs, outputs, attributes with
 * defaults, flags, kernels); NOT_FOUND if the op is unknown. */
RILL_API rill_status *rill_op_describe(const char *type, char **out); /* free: rill_free_buffer */


/* ------------------------------------------------------------ op plugins ---- */

/* Out-of-tree operators. A plugin is a shared library that exports one function,
 *
 *     rill_status *rill_plugin_init(rill_plugin *plugin);
 *
 * which describes its ops and their CPU kernels with rill_plugin_add_op and
 * rill_plugin_add_kernel. rill_load_op_library dlopens the library, calls the function
 * and, when it returns NULL, registers everything it added at once; when anything fails
 * (the init function's own error, a bad description, an op that already exists),
 * nothing is registered and the library is closed again. Registered ops are used
 * exactly like built-in ones: validation, the executor (both schedules), the backward
 * pass and rill_op_describe find them. Ops cannot be unregistered; a loaded library
 * stays loaded. Registration is thread-safe and may run while other threads prepare
 * or run programs. A plugin needs nothing but this header: it is linked without rill
 * and takes rill's symbols from the process that loads it (an executable linked with
 * the static library must export them: -rdynamic). examples/plugin/ is a complete one.
 *
 * Every description struct starts with api_version = RILL_PLUGIN_API_VERSION; a
 * library built for another version is refused. Strings and arrays in descriptions
 * are copied: they need not outlive the call. */
#define RILL_PLUGIN_API_VERSION 1u
#define RILL_PLUGIN_INIT_SYMBOL "rill_plugin_init"

typedef struct rill_plugin rill_plugin;         /* a library being registered */
typedef struct rill_op_context rill_op_context; /* what infer and kernels see */
typedef rill_status *(*rill_plugin_init_fn)(rill_plugin *plugin);

/* Slot flags. */
#define RILL_PLUGIN_SLOT_DUPLICABLE 1u   /* takes any number of variables */
#define RILL_PLUGIN_SLOT_DISPENSABLE 2u  /* may be absent or empty */
#define RILL_PLUGIN_SLOT_NO_GRAD 4u      /* no gradient flows through this input */
#define RILL_PLUGIN_SLOT_INTERMEDIATE 8u /* an output kept only for the gradient */

typedef struct rill_plugin_slot {
  const char *name; /* Paddle's slot name: "X", "Out", ... */
  uint32_t flags;
  const char *doc; /* may be NULL */
} rill_plugin_slot;

/* Attribute types: the numbers of Paddle's AttrType. */
typedef enum rill_plugin_attr_type {
  RILL_PLUGIN_ATTR_INT = 0,      /* int32 */
  RILL_PLUGIN_ATTR_FLOAT = 1,    /* float */
  RILL_PLUGIN_ATTR_STRING = 2,
  RILL_PLUGIN_ATTR_INTS = 3,     /* int32_t[] */
  RILL_PLUGIN_ATTR_FLOATS = 4,   /* float[] */
  RILL_PLUGIN_ATTR_STRINGS = 5,  /* const char *[] */
  RILL_PLUGIN_ATTR_BOOLEAN = 6,
  RILL_PLUGIN_ATTR_BOOLEANS = 7, /* bool[] */
  RILL_PLUGIN_ATTR_BLOCK = 8,    /* a block of the program (int32 index; default def_int) */
  RILL_PLUGIN_ATTR_LONG = 9,     /* int64 */
  RILL_PLUGIN_ATTR_LONGS = 11,   /* int64_t[] */
  RILL_PLUGIN_ATTR_FLOAT64 = 15  /* double */
} rill_plugin_attr_type;

typedef struct rill_plugin_attr {
  const char *name;
  rill_plugin_attr_type type;
  bool required;          /* true: no default, a program must set it */
  int64_t def_int;        /* default of INT, LONG, BOOLEAN (0 / 1) */
  double def_float;       /* default of FLOAT, FLOAT64 */
  const char *def_string; /* default of STRING (NULL: "") */
  const void *def_list;   /* default of a list type, in the element type noted above */
  size_t def_count;       /* its length */
  const char *doc;        /* may be NULL */
} rill_plugin_attr;

/* Op flags. */
#define RILL_PLUGIN_OP_BLOCKING 1u    /* may wait on I/O or peers: runs on the I/O pool */
#define RILL_PLUGIN_OP_SIDE_EFFECT 2u /* effects beyond its outputs: never pruned */
#define RILL_PLUGIN_OP_RANDOM 4u      /* draws random numbers: keeps its order among such ops */

/* Shape inference: reads the inputs' metadata (rill_op_context_input_meta) and sets
 * every output's (rill_op_context_set_output_meta). It runs at compile time
 * (validation, prepare: dims may hold -1) and before each kernel call at run time
 * (exact dims); the executor allocates the outputs from what it sets. */
typedef rill_status *(*rill_plugin_infer_fn)(rill_op_context *ctx, void *user);
/* A kernel: reads rill_op_context_input, writes rill_op_context_output (already
 * allocated with the shapes infer set). */
typedef rill_status *(*rill_plugin_kernel_fn)(rill_op_context *ctx, void *user);

typedef struct rill_plugin_op {
  uint32_t api_version; /* RILL_PLUGIN_API_VERSION */
  const char *type;     /* the op type programs use; [A-Za-z0-9_.]+ */
  const char *doc;      /* may be NULL */
  const rill_plugin_slot *inputs;
  size_t ninputs;
  const rill_plugin_slot *outputs;
  size_t noutputs;
  const rill_plugin_attr *attrs;
  size_t nattrs;
  uint32_t flags; /* RILL_PLUGIN_OP_* */
  /* The kernel's dtype is that of the first tensor of input slot kernel_dtype_input;
   * -1: the value of the INT attribute named dtype_attr (a rill_dtype); neither:
   * float32. */
  int32_t kernel_dtype_input;
  const char *dtype_attr;
  rill_plugin_infer_fn infer; /* required */
  /* The gradient op (NULL: not differentiable). The backward pass emits it with
   * Paddle's default layout, kept to the slots the gradient op declares: inputs are the
   * forward op's inputs and outputs under the same slot names and "<Out>@GRAD" for
   * each output slot, outputs "<In>@GRAD" for each input slot without
   * RILL_PLUGIN_SLOT_NO_GRAD, attributes the forward op's. The gradient op is an op
   * like any other (usually "<type>_grad", from the same plugin). */
  const char *grad_op;
  void *user; /* passed to infer */
} rill_plugin_op;

typedef struct rill_plugin_kernel {
  uint32_t api_version; /* RILL_PLUGIN_API_VERSION */
  const char *op;       /* an op added by the same plugin */
  rill_device device;   /* a device kind whose backend is registered by the time the library is */
  rill_dtype dtype;
  rill_plugin_kernel_fn fn;
  void *user; /* passed to fn */
} rill_plugin_kernel;

/* Called by an init function, with the rill_plugin it was given (valid only during that
 * call). Errors (INVALID_ARGUMENT for a bad description,
 * ALREADY_EXISTS for a name taken, FAILED_PRECONDITION for another api_version) name
 * the library and the op; the init function returns them (or its own). */
RILL_API rill_status *rill_plugin_add_op(rill_plugin *plugin, const rill_plugin_op *op);
RILL_API rill_status *rill_plugin_add_kernel(rill_plugin *plugin, const rill_plugin_kernel *kernel);
/* The name the plugin is registered under (the library's path). */
RILL_API const char *rill_plugin_name(const rill_plugin *plugin);

/* dlopens the shared library at `path` and registers its ops (see above). A path without
 * a '/' names a file in the working directory; the library search path is not used.
 * Errors: NOT_FOUND (no such file, or no rill_plugin_init symbol), IO (dlopen failed),
 * and those of registration; each names the library. */
RILL_API rill_status *rill_load_op_library(const char *path);
/* Registers the ops of an init function compiled into the application, under `name`,
 * with the same checks and all-or-nothing effect as rill_load_op_library. */
RILL_API rill_status *rill_register_op_library(const char *name, rill_plugin_init_fn init);

/* The op's type, for messages. */
RILL_API const char *rill_op_context_op_type(const rill_op_context *ctx);
/* Number of variables in input / output slot `slot` (index in the op's slot array). */
RILL_API size_t rill_op_context_num_inputs(const rill_op_context *ctx, size_t slot);
RILL_API size_t rill_op_context_num_outputs(const rill_op_context *ctx, size_t slot);
/* Variable names, for messages; NULL when out of range. */
RILL_API const char *rill_op_context_input_name(const rill_op_context *ctx, size_t slot, size_t i);
RILL_API const char *rill_op_context_output_name(const rill_op_context *ctx, size_t slot, size_t i);
/* Attributes by name, defaults applied. _int reads INT, LONG, BOOLEAN and BLOCK; _float reads
 * FLOAT and FLOAT64; _list reads a list type and gives its elements in the element type
 * of rill_plugin_attr_type. NOT_FOUND for an attribute the op does not declare,
 * INVALID_ARGUMENT for one of another type. */
RILL_API rill_status *rill_op_context_attr_int(const rill_op_context *ctx, const char *name,
                                               int64_t *out);
RILL_API rill_status *rill_op_context_attr_float(const rill_op_context *ctx, const char *name,
                                                 double *out);
RILL_API rill_status *rill_op_context_attr_string(const rill_op_context *ctx, const char *name,
                                                  const char **out);
RILL_API rill_status *rill_op_context_attr_list(const rill_op_context *ctx, const char *name,
                                                rill_plugin_attr_type *type, const void **items,
                                                size_t *count);
/* An input's dtype and dims (dims has room for RILL_MAX_DIMS; -1 marks an extent unknown
 * at compile time). false when the input is absent or its shape is not known. Works in
 * infer and in kernels. */
RILL_API bool rill_op_context_input_meta(const rill_op_context *ctx, size_t slot, size_t i,
                                         rill_dtype *dtype, int64_t *dims, size_t *ndim);
/* Infer only: output (slot, i) gets dtype and dims; it takes the LoD of the first
 * variable of input slot lod_from_input (-1: none). */
RILL_API rill_status *rill_op_context_set_output_meta(rill_op_context *ctx, size_t slot, size_t i,
                                                      rill_dtype dtype, const int64_t *dims,
                                                      size_t ndim, int32_t lod_from_input);
/* Kernels only: the tensors of input / output (slot, i), borrowed for the call; NULL
 * when absent. Outputs are allocated already. */
RILL_API rill_tensor *rill_op_context_input(rill_op_context *ctx, size_t slot, size_t i);
RILL_API rill_tensor *rill_op_context_output(rill_op_context *ctx, size_t slot, size_t i);
/* Kernels only: the device's services, as built-in kernels have them.
 *
 * The threads the executor gives the kernel (>= 1; 1 in infer). */
RILL_API int32_t rill_op_context_num_threads(const rill_op_context *ctx);
/* Runs fn(arg, part, slot) for every part of [0, n) on up to `threads` threads of the
 * process-wide compute pool (the calling thread is slot 0; slot < threads, so fn may
 * keep scratch per slot). Which thread runs a part is not fixed: fn must give a part
 * the same result on any thread. Returns false when any call of fn returned false
 * (after every part ran). Outside a kernel the parts run on the calling thread. */
typedef bool (*rill_op_part_fn)(void *arg, int64_t part, int slot);
RILL_API bool rill_op_context_parallel_for(rill_op_context *ctx, int64_t threads, int64_t n,
                                           rill_op_part_fn fn, void *arg);
/* Scratch memory aligned for vector loads; NULL when out of memory. Free it with
 * rill_op_context_scratch_free, on any thread. */
RILL_API void *rill_op_context_scratch_alloc(rill_op_context *ctx, size_t bytes);
RILL_API void rill_op_context_scratch_free(rill_op_context *ctx, void *p);
/* Blocking work to do after the run returns (a write to disk, a wait on a peer): fn(arg)
 * runs on the executor's background thread once the run has returned, in submission
 * order; rill_executor_destroy waits for it. arg must stay valid until fn has run.
 * FAILED_PRECONDITION in infer, INVALID_ARGUMENT for a NULL fn. */
RILL_API rill_status *rill_op_context_submit_blocking(rill_op_context *ctx, void (*fn)(void *arg),
                                                      void *arg);
/* Kernels of ops flagged RILL_PLUGIN_OP_RANDOM: the next draw of the executor's seeded
 * generator, the one built-in random ops seed themselves from. Each run draws on from
 * the last, the schedule keeps such ops in program order, and checkpoints save the
 * generator's state, so a fresh executor running the same program draws the same
 * numbers and a resumed job draws what the uninterrupted one would have.
 * FAILED_PRECONDITION in infer, outside a run, or for an op without the flag. */
RILL_API rill_status *rill_op_context_random_u64(rill_op_context *ctx, uint64_t *out);
/* Kernels only: the run's scope, where the op's variables live (NULL in infer). A kernel
 * running a block usually gives it a child: rill_scope_create(rill_op_context_scope(ctx)). */
RILL_API rill_scope *rill_op_context_scope(rill_op_context *ctx);
/* Kernels only: runs block `block` (> 0; an op's BLOCK attribute names it, read with
 * rill_op_context_attr_int) of the program being run, in `scope`: the block's own
 * variables are created there, its ancestors' found and written through the scope
 * chain, and its ops run in order on the calling thread. The executor counts the
 * variables the block reads and writes as the op's own when it orders ops.
 * FAILED_PRECONDITION in infer, outside a run, or for a block already running;
 * INVALID_ARGUMENT for block 0 or a block the program lacks. */
RILL_API rill_status *rill_op_context_run_block(rill_op_context *ctx, int32_t block,
                                                rill_scope *scope);
/* A new INVALID_ARGUMENT status "op '<type>': <message>". */
RILL_API rill_status *rill_op_context_error(const rill_op_context *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prefixes the message of `status` with printf-formatted context and ": " ("input 'x':
 * ..."); returns `status` (NULL stays NULL). If the longer message cannot be
 * allocated, the status keeps its original message. */
RILL_API rill_status *rill_status_wrap(rill_status *status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A new status with `code` and a printf-formatted message, for plugins and callbacks. */
RILL_API rill_status *rill_status_create(rill_code code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* --------------------------------------------------------- host callbacks ---- */

/* Functions of the application that programs call: the op `py_func` (Paddle's) calls
 * the callback whose id its attribute forward_callable_id holds, with the tensors of its
 * inputs X, and makes its outputs Out share the tensors the callback returns. The
 * Python package registers Python functions this way (fluid.layers.py_func); a C
 * program registers C functions the same way.
 *
 * A callback receives its inputs borrowed for the call (NULL for an input that is
 * absent or holds no data; read them, never write them) and fills outputs[i] with a
 * tensor it creates (rill_tensor_create, rill_tensor_create_from_data), whose ownership
 * passes to the library, for every output; outputs[i] may stay NULL only where the op
 * has no variable there (an unwanted gradient). Tensors left in `outputs` are taken
 * even when the callback fails. It returns NULL or a status (rill_status_create),
 * which fails the run with the op, the id and the callback's name prefixed.
 *
 * A callback runs on whichever executor thread runs the op, possibly at the same time as
 * other ops and other callbacks: it must be thread-safe, and it must not run the
 * executor that called it. doc/design/py_func.md describes the Python side. */
typedef rill_status *(*rill_host_callback_fn)(void *user, rill_tensor *const *inputs,
                                              size_t ninputs, rill_tensor **outputs,
                                              size_t noutputs);
/* Registers fn (called with `user`) under a new id, >= 0 and never reused in the
 * process; `name` (copied; NULL: "") names it in messages. INVALID_ARGUMENT for a NULL fn
 * or id, OUT_OF_MEMORY. */
RILL_API rill_status *rill_host_callback_register(const char *name, rill_host_callback_fn fn,
                                                  void *user, int64_t *id);
/* Removes callback `id`: a py_func op naming it fails from then on (NOT_FOUND). NOT_FOUND
 * for an id never registered or removed already; FAILED_PRECONDITION while a call of it
 * is running (try again after that run), so `user` may be freed once this succeeds. */
RILL_API rill_status *rill_host_callback_unregister(int64_t id);

/* --------------------------------------------------------------- profiler ----- */

/* A process-wide profiler (doc/design/profiler.md): while it is on, every op run by any
 * executor or predictor, every blocking op (queued, started, finished), checkpoint
 * phases and events added through rill_profiler_async_begin/end are recorded, per
 * thread, into fixed-size buffers (events beyond a thread's buffer are dropped and
 * counted). rill_profiler_stop merges them into a Chrome/Perfetto trace-event file and
 * a summary. Off (the default), an op pays one relaxed load and branch. */
typedef enum rill_profiler_state {
  RILL_PROFILER_CPU = 0,
  RILL_PROFILER_GPU = 1, /* no GPU backend yet: records what CPU does */
  RILL_PROFILER_ALL = 2,
} rill_profiler_state;

typedef struct rill_profiler_options {
  uint32_t struct_size; /* sizeof(rill_profiler_options), set by the initializers below */
  rill_profiler_state state;
  uint32_t events_per_thread; /* 0: 32768 (about 5 MB a thread); at most 2^24 */
} rill_profiler_options;

#define RILL_PROFILER_OPTIONS_INIT {sizeof(rill_profiler_options), RILL_PROFILER_ALL, 0}
RILL_API rill_profiler_options rill_profiler_default_options(void);

typedef struct rill_profiler_summary rill_profiler_summary;

/* options may be NULL. FAILED_PRECONDITION when already on, INVALID_ARGUMENT for an
 * unknown struct_size or state, OUT_OF_MEMORY when the buffers cannot be had. */
RILL_API rill_status *rill_profiler_start(const rill_profiler_options *options);
/* Stops recording; writes the trace to trace_path (NULL: none) and, when summary is not
 * NULL, returns the summary (destroyed with rill_profiler_summary_destroy).
 * FAILED_PRECONDITION when the profiler is not on. */
RILL_API rill_status *rill_profiler_stop(const char *trace_path, rill_profiler_summary **summary);
/* Drops the events recorded so far; the profiler stays as it was (on or off). */
RILL_API void rill_profiler_reset(void);
RILL_API bool rill_profiler_enabled(void);
/* The name of the calling thread's track in the trace. */
RILL_API void rill_profiler_set_thread_name(const char *name);
/* An asynchronous interval (an RPC's send or recv, a transfer) that may begin on one
 * thread and end on another. args: NULL or a JSON object text under 96 bytes
 * ("{\"bytes\":4096,\"peer\":\"127.0.0.1:6170\"}"), copied into the trace. begin returns
 * the interval's id (0 when the profiler is off; end ignores 0). Callable from kernels. */
RILL_API uint64_t rill_profiler_async_begin(const char *category, const char *name,
                                            const char *args);
RILL_API void rill_profiler_async_end(uint64_t id, const char *category, const char *name,
                                      const char *args);

typedef enum rill_profiler_table {
  RILL_PROFILER_BY_TYPE = 0,     /* one row per op type */
  RILL_PROFILER_BY_INSTANCE = 1, /* one row per (block, op index, type) */
} rill_profiler_table;

typedef enum rill_profiler_sort_key {
  RILL_PROFILER_SORT_DEFAULT = 0, /* by the first end time */
  RILL_PROFILER_SORT_CALLS,
  RILL_PROFILER_SORT_TOTAL,
  RILL_PROFILER_SORT_MAX,
  RILL_PROFILER_SORT_MIN,
  RILL_PROFILER_SORT_AVE,
} rill_profiler_sort_key;

typedef struct rill_profiler_row {
  const char *name; /* op type; owned by the summary */
  int32_t block, index; /* -1 in the per-type table */
  uint64_t calls;
  double total_ms, min_ms, max_ms, ave_ms;
  double ratio;          /* share of all ops' time */
  int64_t first_end_ns;  /* monotonic time the first call ended */
} rill_profiler_row;

RILL_API void rill_profiler_summary_sort(rill_profiler_summary *summary, rill_profiler_sort_key key);
RILL_API size_t rill_profiler_summary_rows(const rill_profiler_summary *summary,
                                           rill_profiler_table table);
/* NULL past the end. Valid until the next sort or the destroy. */
RILL_API const rill_profiler_row *rill_profiler_summary_row(const rill_profiler_summary *summary,
                                                            rill_profiler_table table, size_t i);
RILL_API uint64_t rill_profiler_summary_dropped(const rill_profiler_summary *summary);
RILL_API uint64_t rill_profiler_summary_events(const rill_profiler_summary *summary);
RILL_API double rill_profiler_summary_wall_ms(const rill_profiler_summary *summary);
/* Threads that recorded at least one event. */
RILL_API int32_t rill_profiler_summary_threads(const rill_profiler_summary *summary);
/* The report as Fluid printed it (both tables, sorted by key); *out is freed with
 * rill_free_buffer. */
RILL_API rill_status *rill_profiler_summary_format(rill_profiler_summary *summary,
                                                   rill_profiler_sort_key key, char **out);
RILL_API void rill_profiler_summary_destroy(rill_profiler_summary *summary);

/* ----------------------------------------------------------- coordination ----- */

/* Optional coordination of a parameter-server job through etcd
 * (doc/design/distributed.md, "Coordination through etcd"). With RILL_ETCD_ENDPOINTS
 * ("http://host:port[,...]") set, the process keeps one etcd client and one lease
 * (RILL_ETCD_TTL seconds, default 10, renewed by a thread), created on first use, and its
 * keys live under /rill/<RILL_JOB, default "default">/; every call is bounded by
 * RILL_ETCD_TIMEOUT_MS (default 5000), and errors name the etcd endpoint and the key.
 * Without it each function below keeps to the static PADDLE_* environment as stated. */

/* Whether RILL_ETCD_ENDPOINTS is set (and RILL_JOB is valid). */
RILL_API bool rill_coord_enabled(void);
/* Publishes this process under /rill/<job>/<role>s/<rank> (6 digits; with rank < 0 the
 * key ends in the endpoint) with value `endpoint` (NULL: "pid N"), attached to the
 * process's lease. role is a lowercase word ("pserver", "trainer"). No-op without etcd. */
RILL_API rill_status *rill_coord_register(const char *role, int32_t rank, const char *endpoint);
/* Waits (polling, at most timeout_ms) until `count` pservers have registered; *endpoints
 * gets the first `count` of them in key order, "host:port,host:port" (free it with
 * rill_free_buffer). DEADLINE_EXCEEDED naming how many were published; without etcd
 * FAILED_PRECONDITION. */
RILL_API rill_status *rill_coord_wait_pservers(int32_t count, int64_t timeout_ms, char **endpoints);
/* The saver election: exactly one process of the job holds /rill/<job>/saver, under its
 * lease. Tries to take the key when it is free (its holder died and its lease expired, or
 * nobody took it yet) and sets *is_saver when this process holds it. Call it whenever the
 * answer is needed: a survivor takes over at its next call. Without etcd *is_saver is
 * trainer_id == 0. */
RILL_API rill_status *rill_coord_elect_saver(int32_t trainer_id, bool *is_saver);
/* Records that the snapshot of `step` is complete: puts /rill/<job>/snapshots/<step>
 * (no lease: it outlives the process). Returns NULL and does nothing without etcd. */
RILL_API rill_status *rill_coord_note_snapshot(int64_t step);
/* The largest step recorded by rill_coord_note_snapshot, -1 when none (always -1 without
 * etcd). */
RILL_API rill_status *rill_coord_newest_snapshot(int64_t *step);
/* Stops the keepalive thread, revokes the lease (this process's keys and saver role go
 * at once) and forgets the client; the next call reads the environment again. */
RILL_API void rill_coord_shutdown(void);

#ifdef __cplusplus
}
#endif
#endif /* RILL_H */
