/* Program validation against the op schemas, then compile-time shape inference.
 *
 * First every op type is looked up, so a program using ops rill lacks fails with one
 * message listing all of them. Then, op by op in program order: slots, variables,
 * attributes, and the op's shape inference over the variable descriptions. Inferred
 * outputs go into a side table (one meta per VarDesc) that later ops read; the program
 * itself is modified only by rill_program_infer_shapes, which writes the inferred
 * descriptions back. */
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/registry/registry.h"

#define EMPTY_VAR "@EMPTY@" /* Paddle's placeholder for an unused gradient slot */

/* ---- the list of op types rill lacks ---- */

typedef struct name_set {
  const char **names;
  size_t n, cap;
} name_set;

static rill_status *name_set_add(name_set *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->names[i], name) == 0) return NULL;
  void *items = s->names;
  if (!rill_grow(&items, &s->cap, s->n + 1, sizeof *s->names)) return rill_oom();
  s->names = items;
  s->names[s->n++] = name;
  return NULL;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "a, b, c" in sorted order. */
static char *name_set_join(name_set *s) {
  qsort(s->names, s->n, sizeof *s->names, cmp_str);
  size_t len = 1;
  for (size_t i = 0; i < s->n; i++) len += strlen(s->names[i]) + 2;
  char *out = rill_malloc(len), *at = out;
  if (!out) return NULL;
  for (size_t i = 0; i < s->n; i++) {
    if (i) {
      memcpy(at, ", ", 2);
      at += 2;
    }
    size_t l = strlen(s->names[i]);
    memcpy(at, s->names[i], l);
    at += l;
  }
  *at = 0;
  return out;
}

/* Whether some registered backend has a kernel for op (every registered kernel is a
 * backend's); which place runs it is the executor's concern. */
static rill_status *has_kernel(const char *op, bool *found) {
  *found = rill_registry_kernels(op, NULL, 0) > 0;
  return NULL;
}

static rill_status *note_op_type(name_set *unknown, name_set *no_kernel, const char *type) {
  if (!type) type = "";
  bool kernel = false;
  rill_status *st = NULL;
  if (!rill_schema_find(type)) st = name_set_add(unknown, type);
  else if (!(st = has_kernel(type, &kernel)) && !kernel) st = name_set_add(no_kernel, type);
  return st;
}

/* The ops of `ops` (n of them) rill lacks, named in one error. */
static rill_status *check_types_of(const rill_op_desc *const *ops, size_t n);

static rill_status *check_op_types(const rill_program *p) {
  size_t n = 0;
  for (size_t b = 0; b < p->nblocks; b++) n += p->blocks[b].nops;
  const rill_op_desc **ops = rill_calloc(n ? n : 1, sizeof *ops);
  if (!ops) return rill_oom();
  n = 0;
  for (size_t b = 0; b < p->nblocks; b++)
    for (size_t i = 0; i < p->blocks[b].nops; i++) ops[n++] = &p->blocks[b].ops[i];
  rill_status *st = check_types_of(ops, n);
  rill_free(ops);
  return st;
}

static rill_status *check_types_of(const rill_op_desc *const *ops, size_t n) {
  name_set unknown = {0}, no_kernel = {0};
  rill_status *st = NULL;
  for (size_t i = 0; i < n && !st; i++) st = note_op_type(&unknown, &no_kernel, ops[i]->type);
  if (!st && (unknown.n || no_kernel.n)) {
    name_set *set = unknown.n ? &unknown : &no_kernel;
    char *list = name_set_join(set);
    if (!list) st = rill_oom();
    else if (unknown.n)
      st = rill_error(RILL_UNIMPLEMENTED,
                      "program uses ops rill does not have: %s (load an op library that "
                      "registers them: 'rill run --plugin LIB' or rill_load_op_library(), see "
                      "examples/plugin/README.md; or add them to operators/ and kernels/cpu/)",
                      list);
    else
      st = rill_error(RILL_UNIMPLEMENTED,
                      "program uses ops that no registered backend has a kernel for: %s (add "
                      "one to a backend's kernel list, such as kernels/cpu/kernels.def)",
                      list);
    rill_free(list);
  }
  rill_free(unknown.names);
  rill_free(no_kernel.names);
  return st;
}

/* ---- per-op checks and inference ---- */

typedef struct vstate {
  const rill_program *p;
  rill_tensor_meta **metas; /* [block][var] */
  /* One-op inference (rill_block_infer_op) keeps metas of just the op's variables. */
  const rill_var_desc **few;
  rill_tensor_meta *few_metas;
  size_t nfew;
} vstate;

static rill_tensor_meta *meta_of(vstate *v, const rill_var_desc *d) {
  if (v->few) {
    for (size_t i = 0; i < v->nfew; i++)
      if (v->few[i] == d) return &v->few_metas[i];
    return NULL;
  }
  for (size_t b = 0; b < v->p->nblocks; b++) {
    const rill_block_desc *blk = &v->p->blocks[b];
    if (d >= blk->vars && d < blk->vars + blk->nvars) return &v->metas[b][d - blk->vars];
  }
  return NULL;
}

static const rill_op_slot *desc_slot(const rill_op_slot *slots, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (slots[i].param && strcmp(slots[i].param, name) == 0) return &slots[i];
  return NULL;
}

/* Slot structure and variable references of one side (inputs or outputs). */
static rill_status *check_slots(vstate *v, int32_t block, const rill_op_schema *s,
                                const rill_op_desc *op, bool inputs) {
  const char *side = inputs ? "input" : "output";
  const rill_slot_schema *ss = inputs ? s->inputs : s->outputs;
  size_t nss = inputs ? s->ninputs : s->noutputs;
  const rill_op_slot *ds = inputs ? op->inputs : op->outputs;
  size_t nds = inputs ? op->ninputs : op->noutputs;
  for (size_t i = 0; i < nds; i++) {
    if (!ds[i].param) return rill_error(RILL_INVALID_ARGUMENT, "%s slot without a name", side);
    int at = inputs ? rill_schema_input_index(s, ds[i].param) : rill_schema_output_index(s, ds[i].param);
    if (at < 0 && ds[i].nargs > 0)
      return rill_error(RILL_INVALID_ARGUMENT, "unknown %s slot '%s' (variable '%s')", side,
                        ds[i].param, ds[i].args[0] ? ds[i].args[0] : "");
  }
  for (size_t i = 0; i < nss; i++) {
    const rill_op_slot *d = desc_slot(ds, nds, ss[i].name);
    size_t n = d ? d->nargs : 0;
    if (n == 0 && !(ss[i].flags & RILL_SLOT_DISPENSABLE))
      return rill_error(RILL_INVALID_ARGUMENT, "missing %s slot %s", side, ss[i].name);
    if (n > 1 && !(ss[i].flags & RILL_SLOT_DUPLICABLE))
      return rill_error(RILL_INVALID_ARGUMENT, "%s slot %s takes one variable, has %zu", side,
                        ss[i].name, n);
    for (size_t k = 0; k < n; k++) {
      const char *name = d->args[k];
      if (!name) return rill_error(RILL_INVALID_ARGUMENT, "%s slot %s: unnamed variable", side, ss[i].name);
      if (strcmp(name, EMPTY_VAR) == 0) continue;
      if (!rill_program_find_var(v->p, block, name))
        return rill_error(RILL_NOT_FOUND,
                          "%s slot %s: variable '%s' is not declared in block %d or its parents",
                          side, ss[i].name, name, (int)block);
    }
  }
  return NULL;
}

static rill_status *check_block_attrs(const rill_program *p, const rill_op_schema *s,
                                      const rill_attr_value *attrs) {
  for (size_t i = 0; i < s->nattrs; i++) {
    const rill_attr_value *a = &attrs[i];
    if (a->type == RILL_ATTR_BLOCK && (a->v.block < 0 || (size_t)a->v.block >= p->nblocks))
      return rill_error(RILL_INVALID_ARGUMENT, "attribute '%s' names block %d of %zu",
                        s->attrs[i].name, (int)a->v.block, p->nblocks);
    if (a->type == RILL_ATTR_BLOCKS)
      for (size_t k = 0; k < a->n; k++)
        if (a->list.blocks[k] < 0 || (size_t)a->list.blocks[k] >= p->nblocks)
          return rill_error(RILL_INVALID_ARGUMENT, "attribute '%s' names block %d of %zu",
                            s->attrs[i].name, (int)a->list.blocks[k], p->nblocks);
  }
  return NULL;
}

/* Compile-time compatibility of an inferred meta with the declared one. */
static bool dims_compatible(const rill_dims *a, const rill_dims *b) {
  if (a->n == b->n) {
    for (int i = 0; i < a->n; i++)
      if (a->d[i] >= 0 && b->d[i] >= 0 && a->d[i] != b->d[i]) return false;
    return true;
  }
  /* ranks differ: accept equal known element counts ([] vs [1], Paddle 2.x 0-D) or any
   * unknown extent */
  int64_t na, nb;
  if (!rill_dims_numel(a, INT64_MAX, &na) || !rill_dims_numel(b, INT64_MAX, &nb)) return true;
  return na == nb;
}

typedef struct op_io {
  size_t *nin, *nout;
  rill_tensor_meta **in, **out;
  rill_tensor_meta ***out_decl; /* side-table entries of the outputs (NULL: none) */
  const char ***in_names, ***out_names;
} op_io;

static void op_io_free(op_io *io, const rill_op_schema *s) {
  for (size_t i = 0; i < s->ninputs; i++) {
    if (io->in) rill_free(io->in[i]);
    if (io->in_names) rill_free(io->in_names[i]);
  }
  for (size_t i = 0; i < s->noutputs; i++) {
    if (io->out) rill_free(io->out[i]);
    if (io->out_decl) rill_free(io->out_decl[i]);
    if (io->out_names) rill_free(io->out_names[i]);
  }
  rill_free(io->nin);
  rill_free(io->nout);
  rill_free(io->in);
  rill_free(io->out);
  rill_free(io->out_decl);
  rill_free(io->in_names);
  rill_free(io->out_names);
}

#define CALLOC_OR_FAIL(p, n)                                                              \
  do {                                                                                    \
    (p) = rill_calloc((n) ? (n) : 1, sizeof *(p));                                        \
    if (!(p)) return rill_oom();                                                          \
  } while (0)

static void meta_unknown(rill_tensor_meta *m) {
  memset(m, 0, sizeof *m);
  m->lod_from[0] = m->lod_from[1] = -1;
}

static rill_status *op_io_build(vstate *v, int32_t block, const rill_op_schema *s,
                                const rill_op_desc *op, op_io *io) {
  CALLOC_OR_FAIL(io->nin, s->ninputs);
  CALLOC_OR_FAIL(io->in, s->ninputs);
  CALLOC_OR_FAIL(io->in_names, s->ninputs);
  CALLOC_OR_FAIL(io->nout, s->noutputs);
  CALLOC_OR_FAIL(io->out, s->noutputs);
  CALLOC_OR_FAIL(io->out_decl, s->noutputs);
  CALLOC_OR_FAIL(io->out_names, s->noutputs);
  for (size_t i = 0; i < s->ninputs; i++) {
    const rill_op_slot *d = desc_slot(op->inputs, op->ninputs, s->inputs[i].name);
    size_t n = d ? d->nargs : 0;
    io->nin[i] = n;
    CALLOC_OR_FAIL(io->in[i], n);
    CALLOC_OR_FAIL(io->in_names[i], n);
    for (size_t k = 0; k < n; k++) {
      io->in_names[i][k] = d->args[k];
      const rill_var_desc *vd = rill_program_find_var(v->p, block, d->args[k]);
      const rill_tensor_meta *m = vd ? meta_of(v, vd) : NULL;
      if (m) io->in[i][k] = *m;
      else meta_unknown(&io->in[i][k]);
    }
  }
  for (size_t i = 0; i < s->noutputs; i++) {
    const rill_op_slot *d = desc_slot(op->outputs, op->noutputs, s->outputs[i].name);
    size_t n = d ? d->nargs : 0;
    io->nout[i] = n;
    CALLOC_OR_FAIL(io->out[i], n);
    CALLOC_OR_FAIL(io->out_decl[i], n);
    CALLOC_OR_FAIL(io->out_names[i], n);
    for (size_t k = 0; k < n; k++) {
      io->out_names[i][k] = d->args[k];
      const rill_var_desc *vd = rill_program_find_var(v->p, block, d->args[k]);
      rill_tensor_meta *m = vd ? meta_of(v, vd) : NULL;
      io->out_decl[i][k] = m;
      if (m) io->out[i][k] = *m;
      else meta_unknown(&io->out[i][k]);
      io->out[i][k].lod_from[0] = io->out[i][k].lod_from[1] = -1;
    }
  }
  return NULL;
}

static rill_status *infer_op(vstate *v, int32_t block, const rill_op_schema *s,
                             const rill_op_desc *op, const rill_attr_value *attrs) {
  if (!s->infer) return NULL;
  op_io io = {0};
  rill_status *st = op_io_build(v, block, s, op, &io);
  if (!st) {
    rill_infer_ctx ctx = {
        .schema = s,
        .attrs = attrs,
        .nin = io.nin,
        .in = (const rill_tensor_meta *const *)io.in,
        .nout = io.nout,
        .out = io.out,
        .in_tensors = NULL,
        .in_names = (const char *const *const *)io.in_names,
        .out_names = (const char *const *const *)io.out_names,
    };
    st = s->infer(&ctx);
  }
  for (size_t i = 0; !st && i < s->noutputs; i++)
    for (size_t k = 0; !st && k < io.nout[i]; k++) {
      rill_tensor_meta *got = &io.out[i][k], *decl = io.out_decl[i][k];
      if (!got->known || !decl) continue;
      /* A rank-0 declaration is a shape the saving framework never recorded (Paddle
       * 2.x declares batch_norm's SavedMean as [] in inference programs, and Paddle
       * itself replaces declared output shapes with inferred ones): the inferred shape
       * stands. Real contradictions of recorded shapes are still errors. */
      if (decl->known && !(decl->dims.n == 0 && got->dims.n > 0 && got->dtype == decl->dtype)) {
        char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
        bool dtype_ok = got->dtype == decl->dtype || (s->outputs[i].flags & RILL_SLOT_DTYPE_FIXED);
        if (!dtype_ok || !dims_compatible(&got->dims, &decl->dims)) {
          st = rill_error(RILL_INVALID_ARGUMENT,
                          "output %s (%s) is inferred as %s %s but declared as %s %s",
                          s->outputs[i].name, io.out_names[i][k], rill_dtype_name(got->dtype),
                          rill_dims_str(&got->dims, a, sizeof a), rill_dtype_name(decl->dtype),
                          rill_dims_str(&decl->dims, b, sizeof b));
          break;
        }
        if (got->dims.n == decl->dims.n)
          for (int d = 0; d < got->dims.n; d++)
            if (got->dims.d[d] < 0) got->dims.d[d] = decl->dims.d[d];
      }
      rill_tensor_meta merged = *got;
      merged.lod_from[0] = merged.lod_from[1] = -1;
      /* A fixed-dtype output declared otherwise keeps its declaration for the ops after it
       * (their outputs were declared from it too); run-time inference follows the tensor
       * the kernel writes. */
      if (decl->known && got->dtype != decl->dtype) merged.dtype = decl->dtype;
      /* The LoD level an op propagates cannot be below the declared one. */
      if (decl->known && decl->lod_level > merged.lod_level) merged.lod_level = decl->lod_level;
      *decl = merged;
    }
  op_io_free(&io, s);
  return st;
}

static rill_status *check_op(vstate *v, int32_t block, const rill_op_desc *op) {
  const rill_op_schema *s = rill_schema_find(op->type);
  if (!s) return rill_error(RILL_INTERNAL, "op has no schema"); /* ruled out earlier */
  RILL_TRY(check_slots(v, block, s, op, true));
  RILL_TRY(check_slots(v, block, s, op, false));
  rill_attr_value *attrs = rill_calloc(s->nattrs ? s->nattrs : 1, sizeof *attrs);
  if (!attrs) return rill_oom();
  rill_status *st = rill_resolve_attrs(s, op, attrs);
  if (st) {
    rill_free(attrs);
    return st;
  }
  st = check_block_attrs(v->p, s, attrs);
  if (!st) st = infer_op(v, block, s, op, attrs);
  rill_attrs_clear(attrs, s->nattrs);
  rill_free(attrs);
  return st;
}

static void meta_from_desc(rill_tensor_meta *m, const rill_var_desc *d) {
  meta_unknown(m);
  if (d->type != RILL_VAR_LOD_TENSOR || !d->has_tensor) return;
  m->dtype = d->dtype;
  m->dims = d->dims;
  m->lod_level = d->lod_level;
  m->known = true;
}

static rill_status *init_metas(vstate *v) {
  const rill_program *p = v->p;
  v->metas = rill_calloc(p->nblocks ? p->nblocks : 1, sizeof *v->metas);
  if (!v->metas) return rill_oom();
  for (size_t b = 0; b < p->nblocks; b++) {
    const rill_block_desc *blk = &p->blocks[b];
    v->metas[b] = rill_calloc(blk->nvars ? blk->nvars : 1, sizeof **v->metas);
    if (!v->metas[b]) return rill_oom();
    for (size_t k = 0; k < blk->nvars; k++) meta_from_desc(&v->metas[b][k], &blk->vars[k]);
  }
  return NULL;
}

/* Writes an inferred meta back into its variable description. */
static void desc_from_meta(rill_var_desc *d, const rill_tensor_meta *m) {
  if (d->type != RILL_VAR_LOD_TENSOR || !m->known) return;
  d->has_tensor = true;
  d->dtype = m->dtype;
  d->dims = m->dims;
  d->lod_level = m->lod_level;
  if (m->lod_level) d->has_flags |= RILL_VARDESC_HAS_LOD_LEVEL;
}

/* Writes the inferred metas back into the variable descriptions of `p`. */
static void write_back(rill_program *p, vstate *v) {
  for (size_t b = 0; b < p->nblocks; b++)
    for (size_t k = 0; k < p->blocks[b].nvars; k++)
      desc_from_meta(&p->blocks[b].vars[k], &v->metas[b][k]);
  rill_program_touch(p);
}

static rill_status *validate(const rill_program *p, rill_program *write) {
  if (!p) return rill_error(RILL_INVALID_ARGUMENT, "no program to validate");
  RILL_TRY(rill_registry_init());
  RILL_TRY(check_op_types(p));
  vstate v = {.p = p, .metas = NULL};
  rill_status *st = init_metas(&v);
  for (size_t b = 0; b < p->nblocks && !st; b++)
    for (size_t i = 0; i < p->blocks[b].nops && !st; i++) {
      const rill_op_desc *op = &p->blocks[b].ops[i];
      st = rill_status_wrap(check_op(&v, (int32_t)b, op), "block %zu, op #%zu (%s)", b, i,
                            op->type);
    }
  if (!st && write) write_back(write, &v);
  if (v.metas)
    for (size_t b = 0; b < p->nblocks; b++) rill_free(v.metas[b]);
  rill_free(v.metas);
  return st;
}

rill_status *rill_validate_program(const rill_program *p) { return validate(p, NULL); }

rill_status *rill_program_infer_shapes(rill_program *program) {
  return validate(program, program);
}

rill_status *rill_program_validate(const rill_program *program) {
  return rill_validate_program(program);
}

/* Adds the description of variable `name` (seen from `block`) to the one-op table. */
static rill_status *few_add(vstate *v, int32_t block, const char *name, size_t *cap) {
  const rill_var_desc *d = rill_program_find_var(v->p, block, name);
  if (!d) return NULL; /* check_slots names it */
  for (size_t i = 0; i < v->nfew; i++)
    if (v->few[i] == d) return NULL;
  if (v->nfew == *cap) {
    size_t c = *cap ? *cap * 2 : 8;
    void *a = rill_realloc(v->few, c * sizeof *v->few);
    if (!a) return rill_oom();
    v->few = a;
    void *m = rill_realloc(v->few_metas, c * sizeof *v->few_metas);
    if (!m) return rill_oom();
    v->few_metas = m;
    *cap = c;
  }
  v->few[v->nfew] = d;
  meta_from_desc(&v->few_metas[v->nfew], d);
  v->nfew++;
  return NULL;
}

rill_status *rill_validate_infer_op(rill_program *program, int32_t block, size_t index) {
  if (block < 0 || (size_t)block >= program->nblocks)
    return rill_error(RILL_INVALID_ARGUMENT, "block %d does not exist (the program has %zu blocks)",
                      (int)block, program->nblocks);
  const rill_block_desc *blk = &program->blocks[block];
  if (index >= blk->nops)
    return rill_error(RILL_OUT_OF_RANGE, "block %d has %zu ops, no op #%zu", (int)block, blk->nops,
                      index);
  RILL_TRY(rill_registry_init());
  const rill_op_desc *op = &blk->ops[index];
  RILL_TRY(check_types_of(&op, 1));
  vstate v = {.p = program};
  size_t cap = 0;
  rill_status *st = NULL;
  for (int side = 0; side < 2 && !st; side++) {
    const rill_op_slot *slots = side ? op->outputs : op->inputs;
    size_t ns = side ? op->noutputs : op->ninputs;
    for (size_t i = 0; i < ns && !st; i++)
      for (size_t k = 0; k < slots[i].nargs && !st; k++)
        if (slots[i].args[k]) st = few_add(&v, block, slots[i].args[k], &cap);
  }
  if (!v.few && !st) {
    /* an op with no variables: the table must still mark one-op mode */
    v.few = rill_calloc(1, sizeof *v.few);
    v.few_metas = rill_calloc(1, sizeof *v.few_metas);
    if (!v.few || !v.few_metas) st = rill_oom();
  }
  if (!st)
    st = rill_status_wrap(check_op(&v, block, op), "block %d, op #%zu (%s)", (int)block, index,
                          op->type);
  if (!st) {
    for (size_t i = 0; i < v.nfew; i++)
      desc_from_meta((rill_var_desc *)v.few[i], &v.few_metas[i]);
  }
  rill_free(v.few);
  rill_free(v.few_metas);
  return st;
}
