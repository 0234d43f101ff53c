/* Pruning (rill.h, "program support"): a copy of a program with only the block-0 ops
 * that the targets depend on, as Paddle's Program._prune_with_input does before
 * save_inference_model writes a model.
 *
 * Walking block 0 backwards from the targets, an op is kept when it writes a needed
 * variable (or is flagged SIDE_EFFECT); its inputs then become needed. Fed variables
 * cut the walk: the ops that computed them are not needed, since the caller supplies
 * them. Ops flagged FEED or FETCH are dropped (save_inference_model adds its own).
 * Variables of block 0 that no kept op, no other block and no feed or target uses are
 * removed. Other blocks are copied as they are. */
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/program/program_impl.h"
#include "framework/registry/registry.h"
#include "rill.h"

static void mark_args(const rill_block_desc *b, const rill_op_slot *slots, size_t n, bool *mark) {
  for (size_t s = 0; s < n; s++)
    for (size_t k = 0; k < slots[s].nargs; k++) {
      ptrdiff_t pos = rill_block_var_pos(b, slots[s].args[k]);
      if (pos >= 0) mark[pos] = true;
    }
}

static bool writes_needed(const rill_block_desc *b, const rill_op_desc *op, const bool *needed,
                          const bool *fed) {
  for (size_t s = 0; s < op->noutputs; s++)
    for (size_t k = 0; k < op->outputs[s].nargs; k++) {
      ptrdiff_t pos = rill_block_var_pos(b, op->outputs[s].args[k]);
      if (pos >= 0 && needed[pos] && !fed[pos]) return true;
    }
  return false;
}

static rill_status *find_names(const rill_block_desc *b, const char *what,
                               const char *const *names, size_t n, bool *mark) {
  for (size_t i = 0; i < n; i++) {
    if (!names[i]) return rill_error(RILL_INVALID_ARGUMENT, "prune: %s name %zu is NULL", what, i);
    ptrdiff_t pos = rill_block_var_pos(b, names[i]);
    if (pos < 0)
      return rill_error(RILL_NOT_FOUND, "prune: %s variable '%s' is not declared in block 0", what,
                        names[i]);
    mark[pos] = true;
  }
  return NULL;
}

static rill_status *prune_block0(rill_program *p, const char *const *feeds, size_t nfeeds,
                                 const char *const *targets, size_t ntargets) {
  rill_block_desc *b = &p->blocks[0];
  RILL_TRY(rill_block_index_build(b));
  size_t nv = b->nvars ? b->nvars : 1, no = b->nops ? b->nops : 1;
  bool *needed = rill_calloc(nv, sizeof *needed);
  bool *fed = rill_calloc(nv, sizeof *fed);
  bool *used = rill_calloc(nv, sizeof *used);
  bool *keep = rill_calloc(no, sizeof *keep);
  rill_status *st = NULL;
  if (!needed || !fed || !used || !keep) st = rill_oom();
  if (!st) st = find_names(b, "feed", feeds, nfeeds, fed);
  if (!st) st = find_names(b, "target", targets, ntargets, needed);
  for (size_t i = b->nops; i-- > 0 && !st;) {
    const rill_op_desc *op = &b->ops[i];
    const rill_op_schema *s = rill_schema_find(op->type);
    unsigned flags = s ? s->flags : 0;
    if (flags & (RILL_OP_FEED | RILL_OP_FETCH)) continue;
    if (!(flags & RILL_OP_SIDE_EFFECT) && !writes_needed(b, op, needed, fed)) continue;
    keep[i] = true;
    mark_args(b, op->inputs, op->ninputs, needed);
  }
  if (!st) {
    /* Variables still in use: by kept ops, by other blocks (whose ops may read block 0's
     * variables through the parent chain), and the feeds and targets. */
    for (size_t i = 0; i < b->nops; i++)
      if (keep[i]) {
        mark_args(b, b->ops[i].inputs, b->ops[i].ninputs, used);
        mark_args(b, b->ops[i].outputs, b->ops[i].noutputs, used);
      }
    for (size_t blk = 1; blk < p->nblocks; blk++)
      for (size_t i = 0; i < p->blocks[blk].nops; i++) {
        mark_args(b, p->blocks[blk].ops[i].inputs, p->blocks[blk].ops[i].ninputs, used);
        mark_args(b, p->blocks[blk].ops[i].outputs, p->blocks[blk].ops[i].noutputs, used);
      }
    for (size_t k = 0; k < b->nvars; k++) used[k] = used[k] || fed[k];
    for (size_t i = 0; i < ntargets; i++) used[rill_block_var_pos(b, targets[i])] = true;
    size_t w = 0;
    for (size_t i = 0; i < b->nops; i++) {
      if (keep[i]) b->ops[w++] = b->ops[i];
      else rill_op_desc_clear(&b->ops[i]);
    }
    b->nops = w;
    w = 0;
    for (size_t k = 0; k < b->nvars; k++) {
      if (used[k]) b->vars[w++] = b->vars[k];
      else rill_var_desc_clear(&b->vars[k]);
    }
    b->nvars = w;
    rill_block_index_drop(b);
    rill_program_touch(p);
  }
  rill_free(needed);
  rill_free(fed);
  rill_free(used);
  rill_free(keep);
  return st;
}

rill_status *rill_program_prune(const rill_program *program, const char *const *feeds,
                                size_t nfeeds, const char *const *targets, size_t ntargets,
                                rill_program **out) {
  if (!program || !out || (nfeeds && !feeds) || (ntargets && !targets))
    return rill_error(RILL_INVALID_ARGUMENT, "rill_program_prune: NULL argument");
  if (program->nblocks == 0)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_program_prune: the program has no blocks");
  if (ntargets == 0)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_program_prune: no targets to keep");
  RILL_TRY(rill_registry_init());
  rill_program *p;
  RILL_TRY(rill_program_clone(program, &p));
  rill_status *st = prune_block0(p, feeds, nfeeds, targets, ntargets);
  if (st) {
    rill_program_free(p);
    return st;
  }
  *out = p;
  return NULL;
}
