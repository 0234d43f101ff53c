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

#include "framework/base/alloc.h"
#include "framework/io/file.h"
#include "framework/program/program.h"
#include "framework/registry/registry.h"
#include "tools/commands.h"

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
  FILE *f;
  bool **used;    /* [block][var]: some op reads or writes it */
  bool *emitted;  /* [block]: cluster written */
  size_t *child;  /* [block]: its first child block, or nblocks for none */
  size_t *next;   /* [block]: the next block of the same parent, or nblocks */
  size_t *stack;  /* open clusters, outermost first */
  size_t *cursor; /* [depth]: the next child to open inside stack[depth] */
} dot_state;

/* The declaring block and index of `name` as seen from `block`; false if undeclared.
 * Walks the parent chain (bounded, as a hand-edited cycle must not loop). */
static bool var_ref(const rill_program *p, int32_t block, const char *name, size_t *b, size_t *i) {
  for (size_t steps = 0; steps <= p->nblocks && block >= 0 && (size_t)block < p->nblocks; steps++) {
    const rill_var_desc *v = rill_block_find_var(p, block, name);
    if (v) {
      *b = (size_t)block;
      *i = (size_t)(v - p->blocks[block].vars);
      return true;
    }
    block = p->blocks[block].parent_idx;
  }
  return false;
}

static void var_label(FILE *f, const rill_var_desc *v) {
  put_escaped(f, v->name);
}

static const char *indent(size_t depth) {
  static const char spaces[] = "                ";
  return &spaces[depth > 8 ? 0 : 16 - 2 * depth];
}

/* Opens block b's cluster and writes its variables and ops. */
static void open_block(dot_state *s, size_t b, size_t depth) {
  const rill_program *p = s->p;
  const rill_block_desc *blk = &p->blocks[b];
  FILE *f = s->f;
  const char *ind = indent(depth);
  s->emitted[b] = true;
  if (b > 0) {
    fprintf(f, "%ssubgraph cluster_b%zu {\n%s  label=\"block %zu\"; style=dashed; color=gray40;\n",
            ind, b, ind, b);
  }
  for (size_t i = 0; i < blk->nvars; i++) {
    const rill_var_desc *v = &blk->vars[i];
    if (!s->used[b][i]) continue;
    fprintf(f, "%s  v%zu_%zu [shape=ellipse, label=\"", ind, b, i);
    var_label(f, v);
    bool param = v->persistable && (v->type == RILL_VAR_LOD_TENSOR || v->type == RILL_VAR_SELECTED_ROWS);
    fprintf(f, "\"%s];\n", param ? ", style=filled, fillcolor=gray85" : "");
  }
  for (size_t i = 0; i < blk->nops; i++) {
    const rill_op_desc *op = &blk->ops[i];
    const rill_op_schema *sc = rill_schema_find(op->type);
    unsigned fl = sc ? sc->flags : 0;
    const char *shape = fl & RILL_OP_FEED    ? "invhouse, style=filled, fillcolor=palegreen"
                        : fl & RILL_OP_FETCH ? "house, style=filled, fillcolor=lightblue"
                        : sc                 ? "box"
                                             : "box, style=filled, fillcolor=salmon";
    fprintf(f, "%s  op%zu_%zu [shape=%s, label=\"", ind, b, i, shape);
    put_escaped(f, op->type);
    const rill_attr *col = rill_op_attr(op, "col");
    if ((fl & (RILL_OP_FEED | RILL_OP_FETCH)) && col && col->value.type == RILL_ATTR_INT)
      fprintf(f, "\\ncol %d", (int)col->value.v.i);
    fprintf(f, "\\n#%zu%s\"];\n", i, sc ? "" : " (unsupported)");
  }
}

/* Writes block `root` and every block under it, children inside their parent's cluster
 * in index order. Depth-first with an explicit stack: a program's nesting never grows the
 * C stack, and each block is visited once. */
static void emit_tree(dot_state *s, size_t root) {
  const rill_program *p = s->p;
  size_t top = 0;
  open_block(s, root, 0);
  s->stack[0] = root;
  s->cursor[0] = s->child[root];
  for (;;) {
    size_t c = s->cursor[top];
    while (c < p->nblocks && s->emitted[c]) c = s->next[c];
    if (c < p->nblocks) {
      s->cursor[top] = s->next[c];
      open_block(s, c, top + 1);
      top++;
      s->stack[top] = c;
      s->cursor[top] = s->child[c];
      continue;
    }
    if (s->stack[top] > 0) fprintf(s->f, "%s}\n", indent(top));
    if (top == 0) return;
    top--;
  }
}

static void emit_edge_label(FILE *f, const char *slot, const rill_var_desc *v) {
  fprintf(f, " [label=\"");
  put_escaped(f, slot);
  if (v && v->has_tensor) {
    char dims[RILL_DIMS_STR_MAX];
    rill_dims_str(&v->dims, dims, sizeof dims);
    fprintf(f, "\\n%s %s", rill_dtype_name(v->dtype), dims);
  }
  fprintf(f, "\"];\n");
}

static void emit_edges(dot_state *s) {
  const rill_program *p = s->p;
  FILE *f = s->f;
  size_t undeclared = 0;
  for (size_t b = 0; b < p->nblocks; b++) {
    const rill_block_desc *blk = &p->blocks[b];
    for (size_t i = 0; i < blk->nops; i++) {
      const rill_op_desc *op = &blk->ops[i];
      for (int side = 0; side < 2; side++) {
        const rill_op_slot *slots = side ? op->outputs : op->inputs;
        size_t n = side ? op->noutputs : op->ninputs;
        for (size_t k = 0; k < n; k++)
          for (size_t a = 0; a < slots[k].nargs; a++) {
            size_t vb, vi;
            const char *name = slots[k].args[a];
            const rill_var_desc *v = NULL;
            char node[64];
            if (name && var_ref(p, (int32_t)b, name, &vb, &vi)) {
              v = &p->blocks[vb].vars[vi];
              snprintf(node, sizeof node, "v%zu_%zu", vb, vi);
            } else {
              /* Not declared (a placeholder such as @EMPTY@): a dotted node of its own. */
              snprintf(node, sizeof node, "u%zu", undeclared++);
              fprintf(f, "  %s [shape=ellipse, style=dotted, label=\"", node);
              put_escaped(f, name ? name : "");
              fprintf(f, "\"];\n");
            }
            if (side) fprintf(f, "  op%zu_%zu -> %s", b, i, node);
            else fprintf(f, "  %s -> op%zu_%zu", node, b, i);
            emit_edge_label(f, slots[k].param ? slots[k].param : "", v);
          }
      }
      for (size_t k = 0; k < op->nattrs; k++) {
        const rill_attr_value *av = &op->attrs[k].value;
        int32_t sub = av->type == RILL_ATTR_BLOCK ? av->v.block : -1;
        for (size_t j = 0; av->type == RILL_ATTR_BLOCKS ? j < av->n : j < 1; j++) {
          if (av->type == RILL_ATTR_BLOCKS) sub = av->list.blocks[j];
          if (sub <= 0 || (size_t)sub >= p->nblocks || p->blocks[sub].nops == 0) continue;
          fprintf(f, "  op%zu_%zu -> op%d_0 [style=dashed, lhead=cluster_b%d, label=\"", b, i,
                  (int)sub, (int)sub);
          put_escaped(f, op->attrs[k].name);
          fprintf(f, "\"];\n");
        }
      }
    }
  }
}

/* Writes the dot text of `p` to f. */
static rill_status *write_dot(const rill_program *p, const char *title, FILE *f) {
  size_t nb = p->nblocks;
  dot_state s = {p,
                 f,
                 rill_calloc(nb + 1, sizeof(bool *)),
                 rill_calloc(nb + 1, 1),
                 rill_calloc(nb + 1, sizeof(size_t)),
                 rill_calloc(nb + 1, sizeof(size_t)),
                 rill_calloc(nb + 1, sizeof(size_t)),
                 rill_calloc(nb + 1, sizeof(size_t))};
  rill_status *st = NULL;
  if (!s.used || !s.emitted || !s.child || !s.next || !s.stack || !s.cursor) st = rill_oom();
  for (size_t b = 0; !st && b < nb; b++)
    if (!(s.used[b] = rill_calloc(p->blocks[b].nvars + 1, 1))) st = rill_oom();
  /* Children lists, built from the last block down so that each list is in index order. */
  for (size_t b = 0; !st && b < nb; b++) s.child[b] = nb;
  for (size_t b = nb; !st && b-- > 0;) {
    int32_t parent = p->blocks[b].parent_idx;
    s.next[b] = nb;
    if (b > 0 && parent >= 0 && (size_t)parent < nb && (size_t)parent != b) {
      s.next[b] = s.child[parent];
      s.child[parent] = b;
    }
  }
  for (size_t b = 0; !st && b < nb; b++)
    for (size_t i = 0; i < p->blocks[b].nops; i++) {
      const rill_op_desc *op = &p->blocks[b].ops[i];
      for (int side = 0; side < 2; side++) {
        const rill_op_slot *slots = side ? op->outputs : op->inputs;
        size_t n = side ? op->noutputs : op->ninputs;
        for (size_t k = 0; k < n; k++)
          for (size_t a = 0; a < slots[k].nargs; a++) {
            size_t vb, vi;
            if (slots[k].args[a] && var_ref(p, (int32_t)b, slots[k].args[a], &vb, &vi))
              s.used[vb][vi] = true;
          }
      }
    }
  if (!st) {
    fprintf(f, "digraph \"");
    put_escaped(f, title);
    fprintf(f, "\" {\n  compound=true;\n  rankdir=TB;\n"
               "  node [fontname=\"Helvetica\", fontsize=10];\n"
               "  edge [fontname=\"Helvetica\", fontsize=8];\n");
    for (size_t b = 0; b < nb; b++)
      if (!s.emitted[b] && (b == 0 || p->blocks[b].parent_idx < 0 ||
                            (size_t)p->blocks[b].parent_idx >= nb))
        emit_tree(&s, b);
    for (size_t b = 0; b < nb; b++) /* parent chains that never reach a root */
      if (!s.emitted[b]) emit_tree(&s, b);
    emit_edges(&s);
    fprintf(f, "}\n");
  }
  for (size_t b = 0; s.used && b < nb; b++) rill_free(s.used[b]);
  rill_free(s.used);
  rill_free(s.emitted);
  rill_free(s.child);
  rill_free(s.next);
  rill_free(s.stack);
  rill_free(s.cursor);
  return st;
}

static int dot_usage(const char *msg, const char *arg) {
  fprintf(stderr, "rill: ");
  fprintf(stderr, msg, arg);
  fprintf(stderr, "\n(run 'rill --help' for usage)\n");
  return 2;
}

static int dot_fail(rill_status *st) {
  fprintf(stderr, "rill: error: %s: %s\n", rill_code_name(rill_status_code(st)),
          rill_status_message(st));
  rill_status_destroy(st);
  return 1;
}

int cmd_dot(int argc, char **argv) {
  const char *model = NULL, *out = NULL;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
      if (i + 1 >= argc) return dot_usage("%s needs a FILE", argv[i]);
      out = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return dot_usage("unknown option %s", argv[i]);
    } else if (!model) {
      model = argv[i];
    } else {
      return dot_usage("unexpected argument %s", argv[i]);
    }
  }
  if (!model) return dot_usage("dot needs a MODEL%s", "");
  rill_status *st = rill_registry_init();
  if (st) return dot_fail(st);
  char *path = NULL;
  rill_program *p = NULL;
  if ((st = program_path(model, &path)) || (st = rill_program_load(path, &p))) {
    rill_free(path);
    return dot_fail(st);
  }
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) st = rill_error(RILL_OUT_OF_MEMORY, "dot: cannot open a memory stream");
  if (!st) {
    st = write_dot(p, model, mem);
    if (fclose(mem) != 0 && !st) st = rill_error(RILL_OUT_OF_MEMORY, "dot: writing the graph failed");
  }
  if (!st) {
    if (out) {
      st = rill_file_write(out, text, len);
      if (!st) fprintf(stderr, "wrote %s (%zu blocks)\n", out, p->nblocks);
    } else if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
      st = rill_error(RILL_IO, "dot: writing to standard output failed");
    }
  }
  free(text);
  rill_free(path);
  rill_program_destroy(p);
  return st ? dot_fail(st) : 0;
}
