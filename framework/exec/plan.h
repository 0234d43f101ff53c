/* The plan's layout, shared by the files that build and run it (plan.c: layout and
 * feed binding; graph.c: the dependency graph; memplan.c: the memory plan;
 * plan_cache.c; run.c). Not a contract: other components use executor.h. */
#ifndef RILL_FRAMEWORK_EXEC_PLAN_H
#define RILL_FRAMEWORK_EXEC_PLAN_H

#include <stdatomic.h>

#include "framework/base/alloc.h"
#include "framework/base/arena.h"
#include "framework/base/strmap.h"
#include "framework/exec/executor.h"

typedef enum var_kind {
  VAR_LOCAL,    /* temporary: the plan's scope */
  VAR_FED,      /* fed directly by name: the plan's scope, shares the caller's buffer */
  VAR_PERSIST,  /* persistable: the caller's scope (created when absent) */
  VAR_EXTERNAL, /* read before written, not fed: the caller's scope chain */
  VAR_LIST,     /* feed / fetch list: the plan's scope */
  /* Sub-block plans only (every variable binds to the run's scope at each run): */
  VAR_STEP,     /* declared in the sub-block: created in the run's scope */
  VAR_OUTER     /* declared in an ancestor block (or nowhere): through the scope chain */
} var_kind;

typedef struct plan_var {
  const char *name;
  var_kind kind;
  rill_variable *var;   /* bound variable (re-bound each run for caller-scope kinds) */
  rill_variable *local; /* the plan scope's variable of that name, if any */
  bool has_desc;        /* the plan's block (or, for a sub-block, an ancestor) declares it */
  bool outer_persist;   /* a sub-block's VAR_OUTER that its ancestor declares persistable */
  bool desc_tensor;     /* ... with a tensor description */
  bool need_check_feed; /* ... whose feeds must match its declared shape (Paddle's flag) */
  bool desc_array;      /* ... as a LOD_TENSOR_ARRAY: an empty array from the run's start */
  bool desc_scopes;     /* ... as STEP_SCOPES: the kept scopes are freed when the run ends */
  rill_dtype dtype;
  rill_dims dims;
  int32_t first_read, first_write; /* op indices; INT32_MAX: never */
  int32_t required_by;             /* op that needs a value on entry, or -1 */
  const char *required_slot;
  /* A temporary or a fed variable whose readers all run on one place (`home`), and
   * which is not fetched: when written (or fed) elsewhere, the run copies it there once,
   * right after the writer whose value is read next (rill_plan.out_move; move_fed for
   * the feed), instead of once for each reader. home_mem: that place's memory. */
  bool has_home, move_fed;
  /* A persistable that no op of the plan writes, whose readers all run on one device
   * (`home`), and which is not fetched: a run starts by moving it there, in the caller's
   * scope, when it is elsewhere (rill_plan.persist_homes). So a frozen weight read on a
   * device is copied there once, not by every reader on every run. A buffer marked
   * immutable (a predictor's weights) keeps its per-place mirrors instead. */
  bool move_persist;
  rill_place home;
  const rill_device_memory *home_mem;
  bool feed_out; /* written by a feed op */
  bool absent;   /* RILL_EMPTY_VAR: bound as NULL */
} plan_var;

typedef struct plan_op {
  const rill_op_schema *schema;
  rill_kernel_fn kernel;
  rill_dtype kernel_dtype;
  const char *type;
  int32_t index;
  bool kernel_shapes, has_alias;
  /* The output metas hold what run-time inference gave for the input metas in in_meta
   * (which the next run compares against): inference is skipped while they match,
   * unless it reads more than the metas (infer_reads, plan_infer). */
  bool infer_valid;
  uint8_t infer_reads;
  int32_t dtype_arg; /* flat input index whose dtype picks the kernel, or -1 */
  /* Where the op runs: the executor's place, or the op's `op_device` attribute, or the
   * host when that place's backend has no kernel for the op and the host's has. Inputs
   * on another place are copied here before the kernel runs; outputs are allocated here
   * by the backend's memory. */
  rill_place place;
  const rill_backend *backend;
  uint32_t in_begin, in_end, out_begin, out_end;
  rill_attr_value *attrs;
  rill_infer_ctx ictx;
  rill_kernel_ctx kctx;
} plan_op;

/* Where a run puts an op's input before the kernel, by its slot's flags. */
typedef enum plan_stage {
  STAGE_AT_OP,   /* on the op's place */
  STAGE_NONE,    /* nowhere: RILL_SLOT_ANY_PLACE or DECL_ONLY, the elements are not read */
  STAGE_ON_HOST, /* on the host: RILL_SLOT_HOST_DATA */
} plan_stage;

/* What an op's run-time inference reads beyond its inputs' metas. */
typedef enum plan_infer {
  INFER_METAS,  /* nothing: inferred again only when an input meta changed */
  INFER_LOD,    /* LoD offsets (RILL_OP_INFER_READS_LOD): every run, from the inputs where they are */
  INFER_VALUES, /* elements (RILL_OP_INFER_READS_DATA): every run, from host copies of the
                   inputs in rill_plan.in_infer */
} plan_infer;

typedef struct plan_feed {
  uint32_t var;  /* fed variable, or the feed list */
  int32_t col;   /* -1: direct */
  uint32_t desc; /* variable whose VarDesc checks the fed tensor */
} plan_feed;

typedef struct plan_fetch {
  uint32_t var; /* fetched variable, or the fetch list */
  int32_t col;  /* -1: by name */
  const char *name;
} plan_fetch;

struct rill_plan {
  rill_arena mem; /* the plan itself and its tables */
  uint64_t program_id, revision;
  int32_t block; /* the block it runs: 0, or a sub-block (no feeds or fetches) */
  char **feed_names; /* key, in the caller's order */
  size_t nfeeds;
  char **fetch_names;
  size_t nfetch;

  plan_op *ops;
  size_t nops;
  plan_var *vars;
  size_t nvars;
  plan_feed *feeds;
  plan_fetch *fetches;

  /* Flat argument tables, op by op, schema slot by slot. */
  rill_variable **in_var, **out_var;
  uint32_t *in_id, *out_id;
  rill_tensor_meta *in_meta, *out_meta;
  const rill_tensor **in_tensor;
  bool *out_alias;
  uint8_t *in_stage; /* per input, where a run stages it (plan_stage) */
  bool *in_infer;    /* per input, whether an INFER_VALUES op's inference reads its elements */
  bool *out_move; /* the output is moved to its variable's home after the op (plan_var) */
  size_t nin, nout;

  uint32_t *caller_vars; /* ids of VAR_PERSIST / VAR_EXTERNAL variables */
  uint32_t *persist_homes; /* ids of the variables marked move_persist */
  size_t npersist_homes;
  size_t ncaller;
  /* A sub-block plan's last binding: the scope's serial and rill_scope_erasures() then
   * (0: none). A block run again in the same scope (a while loop's steps) skips the
   * lookups. */
  uint64_t bound_serial, bound_erasures;
  uint32_t *required; /* ids of variables that must hold a value on entry */
  size_t nrequired;
  uint32_t *cleanup; /* ids of variables cleared after every run (lists, step scopes) */
  size_t ncleanup;
  uint32_t *arrays; /* ids of the tensor arrays declared (desc_array) */
  size_t narrays;

  rill_scope *local;

  /* The parallel schedule's dependency graph, and the schedule AUTO picks. */
  rill_sched_graph graph;
  uint32_t crit_path;
  rill_schedule auto_schedule;
  /* Release of temporaries after their last use: per op, the releasable variables it
   * touches (each once); per variable, how many ops touch it (0: never released) and
   * the per-run countdown. */
  uint32_t *touch_start, *touch;
  uint32_t *rel_init;
  atomic_uint *rel_count;
  /* The memory plan (memplan): temporaries whose lifetimes do not overlap share one
   * buffer, passed from one to the next through the group's holder. group[v] is the
   * group of variable v, or -1. */
  bool memplan;
  int32_t *group;
  rill_tensor *holders;
  uint32_t ngroups;
  atomic_uint_fast64_t infer_runs; /* run-time inferences made, for tests */
};

#define OP_CONTEXT_FMT "block %d, op #%d '%s'"

/* Name -> variable id while a plan is built (keys: the variables' names, in the arena). */
typedef rill_strmap name_table;

/* A growable array of uint32_t, freed by the caller. */
typedef struct u32vec {
  uint32_t *v;
  size_t n, cap;
} u32vec;

static inline bool u32_push(u32vec *a, uint32_t x) {
  if (a->n == a->cap) {
    void *items = a->v;
    if (!rill_grow(&items, &a->cap, a->n + 1, sizeof *a->v)) return false;
    a->v = items;
  }
  a->v[a->n++] = x;
  return true;
}

/* Builds the plan of block `block` of `prog` for these feeds and fetches (plan.c). A
 * sub-block's plan (block > 0) has no feeds or fetches, no memory plan, and binds every
 * variable to the scope of each run (rill_exec_run_subplan). */
rill_status *rill_plan_build(rill_executor *exe, const rill_program *prog, int32_t block,
                             const char *const *feed_names, size_t nfeeds,
                             const char *const *fetch_names, size_t nfetch, rill_plan **out);
/* Frees a plan and everything it holds. Accepts NULL. */
void rill_plan_destroy(rill_plan *p);
/* The id of variable `name` in the plan being built, or -1. */
long rill_plan_var_id(name_table *names, const char *name);

#endif
