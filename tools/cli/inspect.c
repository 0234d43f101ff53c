/* `rill inspect [-v] MODEL`: blocks, variables, ops and feed/fetch targets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static rill_status *print_slots(const rill_program *p, int32_t b, size_t op, bool output, size_t n) {
  printf("      %s:", output ? "outputs" : "inputs");
  if (!n) printf(" -");
  for (size_t k = 0; k < n; k++) {
    rill_slot_info s;
    CLI_TRY(output ? rill_block_op_output_info(p, b, op, k, &s)
                   : rill_block_op_input_info(p, b, op, k, &s));
    printf(" %s=[", s.name);
    for (size_t a = 0; a < s.nargs; a++) printf("%s%s", a ? ", " : "", s.args[a]);
    printf("]");
  }
  printf("\n");
  return NULL;
}

static rill_status *print_attrs(const rill_program *p, int32_t b, size_t op, size_t n, bool verbose) {
  if (!n) return NULL;
  printf("      attrs:");
  for (size_t k = 0; k < n; k++) {
    rill_attr_info a;
    CLI_TRY(rill_block_op_attr_info(p, b, op, k, &a));
    /* Paddle's Python call stacks are long and say nothing about the model. */
    if (!verbose && strcmp(a.name, "op_callstack") == 0 && a.type == RILL_PLUGIN_ATTR_STRINGS) {
      printf(" op_callstack=<%zu frames>", a.count);
      continue;
    }
    char *s = NULL;
    rill_status *st = rill_block_op_attr_text(p, b, op, k, &s);
    printf(" %s=%s", a.name, st ? "?" : s);
    rill_status_destroy(st);
    rill_free_buffer(s);
  }
  printf("\n");
  return NULL;
}

typedef struct target {
  int64_t col;
  const char *name;
} target;

static int cmp_target(const void *a, const void *b) {
  const target *x = a, *y = b;
  return (x->col > y->col) - (x->col < y->col);
}

/* The op's `col` attribute (0 when absent). */
static rill_status *op_col(const rill_program *p, size_t op, size_t nattrs, int64_t *col) {
  *col = 0;
  for (size_t k = 0; k < nattrs; k++) {
    rill_attr_info a;
    CLI_TRY(rill_block_op_attr_info(p, 0, op, k, &a));
    if (strcmp(a.name, "col") == 0 && a.has_int && a.type != RILL_PLUGIN_ATTR_BOOLEAN)
      *col = (int32_t)a.int_value;
  }
  return NULL;
}

/* Feed (fetch false) or fetch targets of block 0, in col order: the first variable of a
 * feed op's Out, of a fetch op's X. */
static rill_status *print_targets(const rill_program *p, bool fetch) {
  size_t nops = rill_block_num_ops(p, 0), n = 0;
  target *t = calloc(nops ? nops : 1, sizeof *t);
  if (!t) return cli_oom();
  rill_status *st = NULL;
  for (size_t i = 0; !st && i < nops; i++) {
    rill_op_info op;
    if ((st = rill_block_op_info(p, 0, i, &op))) break;
    if (!(fetch ? op.is_fetch : op.is_feed)) continue;
    size_t nslots = fetch ? op.ninputs : op.noutputs;
    const char *want = fetch ? "X" : "Out";
    for (size_t k = 0; !st && k < nslots; k++) {
      rill_slot_info s;
      st = fetch ? rill_block_op_input_info(p, 0, i, k, &s) : rill_block_op_output_info(p, 0, i, k, &s);
      if (st || strcmp(s.name, want) != 0 || !s.nargs) continue;
      t[n].name = s.args[0];
      st = op_col(p, i, op.nattrs, &t[n].col);
      n++;
      break;
    }
  }
  if (!st) {
    qsort(t, n, sizeof *t, cmp_target);
    printf("%s targets (%zu):\n", fetch ? "fetch" : "feed", n);
  }
  for (size_t i = 0; !st && i < n; i++) {
    rill_var_info v = {0};
    size_t vi;
    bool declared = rill_block_var_index(p, 0, t[i].name, &vi) &&
                    !rill_block_var_info(p, 0, vi, &v) && v.has_tensor;
    char dims[DIMS_STR_MAX] = "?";
    if (declared) dims_str(v.dims, v.ndim, dims, sizeof dims);
    printf("  col %d: %s %s %s\n", (int)t[i].col, t[i].name, declared ? rill_dtype_name(v.dtype) : "",
           dims);
  }
  free(t);
  return st;
}

static rill_status *print_block(const rill_program *p, int32_t b, bool verbose, size_t *unsupported) {
  size_t nvars = rill_block_num_vars(p, b), nops = rill_block_num_ops(p, b);
  printf("block %d (parent %d): %zu variables, %zu ops\n", (int)b, (int)rill_block_parent(p, b),
         nvars, nops);
  printf("  variables:\n");
  for (size_t i = 0; i < nvars; i++) {
    rill_var_info v;
    CLI_TRY(rill_block_var_info(p, b, i, &v));
    char dims[DIMS_STR_MAX] = "";
    if (v.has_tensor) dims_str(v.dims, v.ndim, dims, sizeof dims);
    printf("    %s: %s", v.name, var_type_name(v.type));
    if (v.has_tensor) printf(" %s %s", rill_dtype_name(v.dtype), dims);
    if (v.lod_level) printf(" lod_level=%d", (int)v.lod_level);
    if (v.persistable) printf(" persistable");
    printf("\n");
  }
  printf("  ops:\n");
  for (size_t i = 0; i < nops; i++) {
    rill_op_info op;
    CLI_TRY(rill_block_op_info(p, b, i, &op));
    if (!op.registered) (*unsupported)++;
    printf("    #%zu %s%s\n", i, op.type, op.registered ? "" : "  (unsupported)");
    CLI_TRY(print_slots(p, b, i, false, op.ninputs));
    CLI_TRY(print_slots(p, b, i, true, op.noutputs));
    CLI_TRY(print_attrs(p, b, i, op.nattrs, verbose));
  }
  return NULL;
}

int cmd_inspect(int argc, char **argv) {
  bool verbose = false;
  if (argc == 2 && (strcmp(argv[0], "-v") == 0 || strcmp(argv[0], "--verbose") == 0)) {
    verbose = true;
    argc--;
    argv++;
  }
  if (argc != 1 || argv[0][0] == '-') return usage_error("inspect takes one MODEL argument%s", "");
  char *path = NULL;
  rill_program *p = NULL;
  rill_status *st = load_program(argv[0], &p, &path);
  if (st) return fail(st);
  printf("program: %s\n", path);
  free(path);
  int64_t version;
  if (rill_program_file_version(p, &version)) printf("version: %lld\n", (long long)version);
  size_t nblocks = rill_program_num_blocks(p), unsupported = 0;
  printf("blocks: %zu\n", nblocks);
  for (size_t b = 0; !st && b < nblocks; b++) st = print_block(p, (int32_t)b, verbose, &unsupported);
  if (!st && nblocks) st = print_targets(p, false);
  if (!st && nblocks) st = print_targets(p, true);
  if (!st && unsupported) printf("unsupported ops: %zu\n", unsupported);
  rill_program_destroy(p);
  return st ? fail(st) : EXIT_OK;
}
