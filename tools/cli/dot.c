/* `rill dot MODEL [-o FILE]`: writes a program's graph in Graphviz's dot language.
 *
 * Ops are boxes (feed and fetch ops, found by schema flag, are drawn as houses),
 * variables ellipses (persistable ones filled grey: parameters), edges carry the slot
 * name and the variable's dtype and shape. Each block other than 0 is a cluster nested
 * in its parent's; an op that runs a block points at its cluster with a dashed edge.
 * Only variables that some op uses are drawn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Writes s as the inside of a dot string: quotes, backslashes and control bytes escaped. */
static void put_escaped(FILE *f, const char *s) {
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20 || c == 0x7f) fprintf(f, "\\\\x%02x", c);
    else fputc(c, f);
  }
}

typedef struct dot_state {
  const rill_program *p;
  size_t nblocks;
  FILE *f;
  bool **used;    /* [block][var]: some op reads or writes it */
  bool *emitted;  /* [block]: cluster written */
  size_t *child;  /* [block]: its first child block, or nblocks for none */
  size_t *next;   /* [block]: the next block of the same parent, or nblocks */
  size_t *stack;  /* open clusters, outermost first */
  size_t *cursor; /* [depth]: the next child to open inside stack[depth] */
  size_t undeclared; /* dotted nodes written so far */
} dot_state;

/* The declaring block and index of `name` as seen from `block`; false if undeclared.
 * Walks the parent chain (bounded, as a hand-edited cycle must not loop). */
static bool var_ref(const rill_program *p, int32_t block, const char *name, size_t *b, size_t *i) {
  size_t nblocks = rill_program_num_blocks(p);
  for (size_t steps = 0; steps <= nblocks && block >= 0 && (size_t)block < nblocks; steps++) {
    if (rill_block_var_index(p, block, name, i)) {
      *b = (size_t)block;
      return true;
    }
    block = rill_block_parent(p, block);
  }
  return false;
}

static const char *indent(size_t depth) {
  static const char spaces[] = "                ";
  return &spaces[depth > 8 ? 0 : 16 - 2 * depth];
}

/* Opens block b's cluster and writes its variables and ops. */
static rill_status *open_block(dot_state *s, size_t b, size_t depth) {
  const rill_program *p = s->p;
  FILE *f = s->f;
  const char *ind = indent(depth);
  s->emitted[b] = true;
  if (b > 0) {
    fprintf(f, "%ssubgraph cluster_b%zu {\n%s  label=\"block %zu\"; style=dashed; color=gray40;\n",
            ind, b, ind, b);
  }
  size_t nvars = rill_block_num_vars(p, (int32_t)b), nops = rill_block_num_ops(p, (int32_t)b);
  for (size_t i = 0; i < nvars; i++) {
    rill_var_info v;
    if (!s->used[b][i]) continue;
    CLI_TRY(rill_block_var_info(p, (int32_t)b, i, &v));
    fprintf(f, "%s  v%zu_%zu [shape=ellipse, label=\"", ind, b, i);
    put_escaped(f, v.name);
    bool param = v.persistable && (v.type == RILL_VAR_LOD_TENSOR || v.type == RILL_VAR_SELECTED_ROWS);
    fprintf(f, "\"%s];\n", param ? ", style=filled, fillcolor=gray85" : "");
  }
  for (size_t i = 0; i < nops; i++) {
    rill_op_info op;
    CLI_TRY(rill_block_op_info(p, (int32_t)b, i, &op));
    const char *shape = op.is_feed    ? "invhouse, style=filled, fillcolor=palegreen"
                        : op.is_fetch ? "house, style=filled, fillcolor=lightblue"
                        : op.registered ? "box"
                                        : "box, style=filled, fillcolor=salmon";
    fprintf(f, "%s  op%zu_%zu [shape=%s, label=\"", ind, b, i, shape);
    put_escaped(f, op.type);
    for (size_t k = 0; (op.is_feed || op.is_fetch) && k < op.nattrs; k++) {
      rill_attr_info a;
      CLI_TRY(rill_block_op_attr_info(p, (int32_t)b, i, k, &a));
      if (strcmp(a.name, "col") == 0 && a.type == RILL_PLUGIN_ATTR_INT)
        fprintf(f, "\\ncol %d", (int)a.int_value);
    }
    fprintf(f, "\\n#%zu%s\"];\n", i, op.registered ? "" : " (unsupported)");
  }
  return NULL;
}

/* Writes block `root` and every block under it, children inside their parent's cluster
 * in index order. Depth-first with an explicit stack: a program's nesting never grows the
 * C stack, and each block is visited once. */
static rill_status *emit_tree(dot_state *s, size_t root) {
  size_t nb = s->nblocks, top = 0;
  CLI_TRY(open_block(s, root, 0));
  s->stack[0] = root;
  s->cursor[0] = s->child[root];
  for (;;) {
    size_t c = s->cursor[top];
    while (c < nb && s->emitted[c]) c = s->next[c];
    if (c < nb) {
      s->cursor[top] = s->next[c];
      CLI_TRY(open_block(s, c, top + 1));
      top++;
      s->stack[top] = c;
      s->cursor[top] = s->child[c];
      continue;
    }
    if (s->stack[top] > 0) fprintf(s->f, "%s}\n", indent(top));
    if (top == 0) return NULL;
    top--;
  }
}

static void emit_edge_label(FILE *f, const char *slot, const rill_var_info *v) {
  fprintf(f, " [label=\"");
  put_escaped(f, slot);
  if (v && v->has_tensor) {
    char dims[DIMS_STR_MAX];
    dims_str(v->dims, v->ndim, dims, sizeof dims);
    fprintf(f, "\\n%s %s", rill_dtype_name(v->dtype), dims);
  }
  fprintf(f, "\"];\n");
}

/* Calls fn(s, b, i, side, slot, variable) for every variable of the input (side 0) and
 * output (side 1) slots of op i of block b. */
typedef rill_status *(*arg_fn)(dot_state *s, size_t b, size_t i, int side, const char *slot,
                                const char *name);

static rill_status *op_args(dot_state *s, size_t b, size_t i, const rill_op_info *op, arg_fn fn) {
  for (int side = 0; side < 2; side++)
    for (size_t k = 0; k < (side ? op->noutputs : op->ninputs); k++) {
      rill_slot_info slot;
      CLI_TRY(side ? rill_block_op_output_info(s->p, (int32_t)b, i, k, &slot)
                   : rill_block_op_input_info(s->p, (int32_t)b, i, k, &slot));
      for (size_t a = 0; a < slot.nargs; a++)
        CLI_TRY(fn(s, b, i, side, slot.name ? slot.name : "", slot.args[a]));
    }
  return NULL;
}

static rill_status *mark_used(dot_state *s, size_t b, size_t i, int side, const char *slot,
                              const char *name) {
  size_t vb, vi;
  if (name && var_ref(s->p, (int32_t)b, name, &vb, &vi)) s->used[vb][vi] = true;
  return NULL;
}

static rill_status *emit_edge(dot_state *s, size_t b, size_t i, int side, const char *slot,
                              const char *name) {
  FILE *f = s->f;
  size_t vb, vi;
  rill_var_info v;
  bool declared = name && var_ref(s->p, (int32_t)b, name, &vb, &vi);
  char node[64];
  if (declared) {
    CLI_TRY(rill_block_var_info(s->p, (int32_t)vb, vi, &v));
    snprintf(node, sizeof node, "v%zu_%zu", vb, vi);
  } else {
    /* Not declared (a placeholder such as @EMPTY@): a dotted node of its own. */
    snprintf(node, sizeof node, "u%zu", s->undeclared++);
    fprintf(f, "  %s [shape=ellipse, style=dotted, label=\"", node);
    put_escaped(f, name ? name : "");
    fprintf(f, "\"];\n");
  }
  if (side) fprintf(f, "  op%zu_%zu -> %s", b, i, node);
  else fprintf(f, "  %s -> op%zu_%zu", node, b, i);
  emit_edge_label(f, slot, declared ? &v : NULL);
  return NULL;
}

/* Dashed edges from op i of block b to the clusters of the blocks its attributes name. */
static rill_status *emit_block_edges(dot_state *s, size_t b, size_t i, const rill_op_info *op) {
  for (size_t k = 0; k < op->nattrs; k++) {
    rill_attr_info a;
    CLI_TRY(rill_block_op_attr_info(s->p, (int32_t)b, i, k, &a));
    for (size_t j = 0; j < a.nblocks; j++) {
      int32_t sub = a.blocks[j];
      if (sub <= 0 || (size_t)sub >= s->nblocks || rill_block_num_ops(s->p, sub) == 0) continue;
      fprintf(s->f, "  op%zu_%zu -> op%d_0 [style=dashed, lhead=cluster_b%d, label=\"", b, i,
              (int)sub, (int)sub);
      put_escaped(s->f, a.name);
      fprintf(s->f, "\"];\n");
    }
  }
  return NULL;
}

/* Every op's edges, op by op: with `emit` false only marks the variables used. */
static rill_status *walk_ops(dot_state *s, bool emit) {
  for (size_t b = 0; b < s->nblocks; b++)
    for (size_t i = 0; i < rill_block_num_ops(s->p, (int32_t)b); i++) {
      rill_op_info op;
      CLI_TRY(rill_block_op_info(s->p, (int32_t)b, i, &op));
      CLI_TRY(op_args(s, b, i, &op, emit ? emit_edge : mark_used));
      if (emit) CLI_TRY(emit_block_edges(s, b, i, &op));
    }
  return NULL;
}

/* Writes the dot text of `p` to f. */
static rill_status *write_dot(const rill_program *p, const char *title, FILE *f) {
  size_t nb = rill_program_num_blocks(p);
  dot_state s = {.p = p,
                 .nblocks = nb,
                 .f = f,
                 .used = calloc(nb + 1, sizeof(bool *)),
                 .emitted = calloc(nb + 1, 1),
                 .child = calloc(nb + 1, sizeof(size_t)),
                 .next = calloc(nb + 1, sizeof(size_t)),
                 .stack = calloc(nb + 1, sizeof(size_t)),
                 .cursor = calloc(nb + 1, sizeof(size_t))};
  rill_status *st = NULL;
  if (!s.used || !s.emitted || !s.child || !s.next || !s.stack || !s.cursor) st = cli_oom();
  for (size_t b = 0; !st && b < nb; b++)
    if (!(s.used[b] = calloc(rill_block_num_vars(p, (int32_t)b) + 1, 1))) st = cli_oom();
  /* Children lists, built from the last block down so that each list is in index order. */
  for (size_t b = 0; !st && b < nb; b++) s.child[b] = nb;
  for (size_t b = nb; !st && b-- > 0;) {
    int32_t parent = rill_block_parent(p, (int32_t)b);
    s.next[b] = nb;
    if (b > 0 && parent >= 0 && (size_t)parent < nb && (size_t)parent != b) {
      s.next[b] = s.child[parent];
      s.child[parent] = b;
    }
  }
  if (!st) st = walk_ops(&s, false);
  if (!st) {
    fprintf(f, "digraph \"");
    put_escaped(f, title);
    fprintf(f, "\" {\n  compound=true;\n  rankdir=TB;\n"
               "  node [fontname=\"Helvetica\", fontsize=10];\n"
               "  edge [fontname=\"Helvetica\", fontsize=8];\n");
  }
  for (size_t b = 0; !st && b < nb; b++) {
    int32_t parent = rill_block_parent(p, (int32_t)b);
    if (!s.emitted[b] && (b == 0 || parent < 0 || (size_t)parent >= nb)) st = emit_tree(&s, b);
  }
  for (size_t b = 0; !st && b < nb; b++) /* parent chains that never reach a root */
    if (!s.emitted[b]) st = emit_tree(&s, b);
  if (!st) st = walk_ops(&s, true);
  if (!st) fprintf(f, "}\n");
  for (size_t b = 0; s.used && b < nb; b++) free(s.used[b]);
  free(s.used);
  free(s.emitted);
  free(s.child);
  free(s.next);
  free(s.stack);
  free(s.cursor);
  return st;
}

int cmd_dot(int argc, char **argv) {
  const char *model = NULL, *out = NULL;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
      if (i + 1 >= argc) return usage_error("%s needs a FILE", argv[i]);
      out = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return usage_error("unknown option %s", argv[i]);
    } else if (!model) {
      model = argv[i];
    } else {
      return usage_error("unexpected argument %s", argv[i]);
    }
  }
  if (!model) return usage_error("dot needs a MODEL%s", "");
  rill_program *p = NULL;
  rill_status *st = load_program(model, &p, NULL);
  if (st) return fail(st);
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) st = rill_status_create(RILL_OUT_OF_MEMORY, "dot: cannot open a memory stream");
  if (!st) {
    st = write_dot(p, model, mem);
    if (fclose(mem) != 0 && !st)
      st = rill_status_create(RILL_OUT_OF_MEMORY, "dot: writing the graph failed");
  }
  if (!st) {
    if (out) {
      st = write_file(out, text, len);
      if (!st) fprintf(stderr, "wrote %s (%zu blocks)\n", out, rill_program_num_blocks(p));
    } else if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
      st = rill_status_create(RILL_IO, "dot: writing to standard output failed");
    }
  }
  free(text);
  rill_program_destroy(p);
  return st ? fail(st) : EXIT_OK;
}
