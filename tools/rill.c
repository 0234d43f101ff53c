/* rill -- the command line: inspect a model, run it on .npy inputs, list operators.
 *
 * Exit status: 0 success, 1 a runtime error (message on stderr), 2 a usage error. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "framework/base/alloc.h"
#include "framework/io/file.h"
#include "framework/io/npy.h"
#include "framework/program/program.h"
#include "framework/registry/registry.h"
#include "rill.h"
#include "tools/commands.h"

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

static const char usage_text[] =
    "usage: rill <command> [arguments]\n"
    "\n"
    "commands:\n"
    "  inspect [-v] MODEL              print blocks, variables, ops, feed/fetch targets\n"
    "                                  (-v: also Paddle's op_callstack attributes)\n"
    "  run MODEL --input NAME=FILE.npy [--input ...] [--params FILE] [--output DIR]\n"
    "            [--repeat N] [--threads N] [--sequential | --parallel]\n"
    "                                  run the model; print each output; with --output,\n"
    "                                  write DIR/output_<col>.npy; with --repeat, run N\n"
    "                                  more times and print the time per run; --threads\n"
    "                                  sets the worker count, --sequential/--parallel the\n"
    "                                  schedule (default: chosen per program)\n"
    "  ops [NAME]                      registered operators (or one) and their schemas\n"
    "  dot MODEL [-o FILE]             the program's graph in Graphviz form (ops as boxes,\n"
    "                                  variables as ellipses, parameters grey, shapes on\n"
    "                                  the edges, sub-blocks as clusters); render it with\n"
    "                                  'dot -Tsvg FILE > graph.svg'\n"
    "  --help                          this text\n"
    "  --version                       the version\n"
    "\n"
    "run, ops, dot and inspect take --plugin LIB (repeatable): an op library loaded\n"
    "first, whose ops the model may use (examples/plugin/README.md).\n"
    "MODEL is a model directory, a __model__ file or a .pdmodel path.\n"
    "Exit status: 0 ok, 1 runtime error, 2 usage error.\n";

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "rill: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(run 'rill --help' for usage)\n");
  return EXIT_USAGE;
}

static int fail(rill_status *st) {
  fprintf(stderr, "rill: error: %s: %s\n", rill_code_name(rill_status_code(st)),
          rill_status_message(st));
  rill_status_destroy(st);
  return EXIT_ERROR;
}

/* ------------------------------------------------------------------ inspect ---- */

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The program file of MODEL: DIR/__model__, DIR/<x>.pdmodel, or MODEL itself. */
rill_status *program_path(const char *model, char **out) {
  if (!rill_path_is_dir(model)) {
    if (!rill_path_exists(model)) return rill_error(RILL_NOT_FOUND, "%s: no such file or directory", model);
    *out = rill_strdup(model);
    return *out ? NULL : rill_oom();
  }
  size_t n = strlen(model) + 64;
  char *p = rill_malloc(n);
  if (!p) return rill_oom();
  snprintf(p, n, "%s/__model__", model);
  if (rill_path_is_file(p)) {
    *out = p;
    return NULL;
  }
  rill_free(p);
  DIR *d = opendir(model);
  if (!d) return rill_error(RILL_IO, "%s: cannot open directory: %s", model, strerror(errno));
  char *found = NULL;
  struct dirent *e;
  while ((e = readdir(d)))
    if (has_suffix(e->d_name, ".pdmodel")) {
      size_t m = strlen(model) + strlen(e->d_name) + 2;
      char *cand = rill_malloc(m);
      if (!cand) break;
      snprintf(cand, m, "%s/%s", model, e->d_name);
      if (!found || strcmp(cand, found) < 0) {
        rill_free(found);
        found = cand;
      } else {
        rill_free(cand);
      }
    }
  closedir(d);
  if (!found)
    return rill_error(RILL_NOT_FOUND, "%s: the directory has no __model__ or .pdmodel file", model);
  *out = found;
  return NULL;
}

static const char *var_type_name(int32_t type) {
  switch (type) {
    case RILL_VAR_LOD_TENSOR: return "LOD_TENSOR";
    case RILL_VAR_SELECTED_ROWS: return "SELECTED_ROWS";
    case RILL_VAR_FEED_MINIBATCH: return "FEED_MINIBATCH";
    case RILL_VAR_FETCH_LIST: return "FETCH_LIST";
    case RILL_VAR_STEP_SCOPES: return "STEP_SCOPES";
    case RILL_VAR_LOD_RANK_TABLE: return "LOD_RANK_TABLE";
    case RILL_VAR_LOD_TENSOR_ARRAY: return "LOD_TENSOR_ARRAY";
    case RILL_VAR_READER: return "READER";
    case RILL_VAR_RAW: return "RAW";
    default: return "OTHER";
  }
}

static void print_slots(const char *what, const rill_op_slot *slots, size_t n) {
  printf("      %s:", what);
  if (!n) printf(" -");
  for (size_t i = 0; i < n; i++) {
    printf(" %s=[", slots[i].param);
    for (size_t k = 0; k < slots[i].nargs; k++) printf("%s%s", k ? ", " : "", slots[i].args[k]);
    printf("]");
  }
  printf("\n");
}

typedef struct target {
  int32_t col;
  const char *name;
} target;

static int cmp_target(const void *a, const void *b) {
  const target *x = a, *y = b;
  return (x->col > y->col) - (x->col < y->col);
}

static int32_t op_col(const rill_op_desc *op) {
  const rill_attr *a = rill_op_attr(op, "col");
  if (!a) return 0;
  if (a->value.type == RILL_ATTR_INT) return a->value.v.i;
  if (a->value.type == RILL_ATTR_LONG) return (int32_t)a->value.v.l;
  return 0;
}

/* Feed (want = RILL_OP_FEED) or fetch targets of block 0, in col order. */
static void print_targets(const rill_program *p, unsigned want) {
  const rill_block_desc *b = &p->blocks[0];
  target *t = rill_calloc(b->nops ? b->nops : 1, sizeof *t);
  if (!t) return;
  size_t n = 0;
  for (size_t i = 0; i < b->nops; i++) {
    const rill_op_schema *s = rill_schema_find(b->ops[i].type);
    if (!s || !(s->flags & want)) continue;
    const rill_op_slot *slot = want == RILL_OP_FEED ? rill_op_output(&b->ops[i], "Out")
                                                    : rill_op_input(&b->ops[i], "X");
    if (!slot || !slot->nargs) continue;
    t[n++] = (target){op_col(&b->ops[i]), slot->args[0]};
  }
  qsort(t, n, sizeof *t, cmp_target);
  printf("%s targets (%zu):\n", want == RILL_OP_FEED ? "feed" : "fetch", n);
  for (size_t i = 0; i < n; i++) {
    const rill_var_desc *v = rill_block_find_var(p, 0, t[i].name);
    char dims[RILL_DIMS_STR_MAX] = "?";
    if (v && v->has_tensor) rill_dims_str(&v->dims, dims, sizeof dims);
    printf("  col %d: %s %s %s\n", (int)t[i].col, t[i].name,
           v && v->has_tensor ? rill_dtype_name(v->dtype) : "", dims);
  }
  rill_free(t);
}

static int cmd_inspect(int argc, char **argv) {
  bool verbose = false;
  if (argc == 2 && (strcmp(argv[0], "-v") == 0 || strcmp(argv[0], "--verbose") == 0)) {
    verbose = true;
    argc--;
    argv++;
  }
  if (argc != 1 || argv[0][0] == '-') return usage_error("inspect takes one MODEL argument%s", "");
  char *path = NULL;
  rill_status *st = program_path(argv[0], &path);
  if (st) return fail(st);
  rill_program *p = NULL;
  st = rill_program_load(path, &p);
  if (st) {
    rill_free(path);
    return fail(st);
  }
  printf("program: %s\n", path);
  rill_free(path);
  if (p->has_version) printf("version: %lld\n", (long long)p->version);
  printf("blocks: %zu\n", p->nblocks);
  size_t unsupported = 0;
  for (size_t bi = 0; bi < p->nblocks; bi++) {
    const rill_block_desc *b = &p->blocks[bi];
    printf("block %d (parent %d): %zu variables, %zu ops\n", (int)b->idx, (int)b->parent_idx,
           b->nvars, b->nops);
    printf("  variables:\n");
    for (size_t i = 0; i < b->nvars; i++) {
      const rill_var_desc *v = &b->vars[i];
      char dims[RILL_DIMS_STR_MAX] = "";
      if (v->has_tensor) rill_dims_str(&v->dims, dims, sizeof dims);
      printf("    %s: %s", v->name, var_type_name(v->type));
      if (v->has_tensor) printf(" %s %s", rill_dtype_name(v->dtype), dims);
      if (v->lod_level) printf(" lod_level=%d", (int)v->lod_level);
      if (v->persistable) printf(" persistable");
      printf("\n");
    }
    printf("  ops:\n");
    for (size_t i = 0; i < b->nops; i++) {
      const rill_op_desc *op = &b->ops[i];
      bool known = rill_schema_find(op->type) != NULL;
      if (!known) unsupported++;
      printf("    #%zu %s%s\n", i, op->type, known ? "" : "  (unsupported)");
      print_slots("inputs", op->inputs, op->ninputs);
      print_slots("outputs", op->outputs, op->noutputs);
      if (op->nattrs) {
        printf("      attrs:");
        for (size_t k = 0; k < op->nattrs; k++) {
          const rill_attr_value *av = &op->attrs[k].value;
          /* Paddle's Python call stacks are long and say nothing about the model. */
          if (!verbose && strcmp(op->attrs[k].name, "op_callstack") == 0 &&
              av->type == RILL_ATTR_STRINGS) {
            printf(" op_callstack=<%zu frames>", av->n);
            continue;
          }
          char *s = NULL;
          rill_status *ast = rill_attr_value_str(&op->attrs[k].value, &s);
          printf(" %s=%s", op->attrs[k].name, ast ? "?" : s);
          rill_status_destroy(ast);
          rill_free(s);
        }
        printf("\n");
      }
    }
  }
  if (p->nblocks) {
    print_targets(p, RILL_OP_FEED);
    print_targets(p, RILL_OP_FETCH);
  }
  if (unsupported) printf("unsupported ops: %zu\n", unsupported);
  rill_program_destroy(p);
  return EXIT_OK;
}

/* ------------------------------------------------------------------ run -------- */

static double value_at(const rill_tensor *t, int64_t i) {
  const void *d = rill_tensor_ptr(t);
  switch (t->dtype) {
    case RILL_DTYPE_FP32: return ((const float *)d)[i];
    case RILL_DTYPE_FP64: return ((const double *)d)[i];
    case RILL_DTYPE_INT32: return ((const int32_t *)d)[i];
    case RILL_DTYPE_INT64: return (double)((const int64_t *)d)[i];
    case RILL_DTYPE_INT16: return ((const int16_t *)d)[i];
    case RILL_DTYPE_INT8: return ((const int8_t *)d)[i];
    case RILL_DTYPE_UINT8: return ((const uint8_t *)d)[i];
    case RILL_DTYPE_BOOL: return ((const uint8_t *)d)[i] != 0;
    default: return 0.0;
  }
}

static bool printable(rill_dtype d) {
  switch (d) {
    case RILL_DTYPE_FP32: case RILL_DTYPE_FP64: case RILL_DTYPE_INT32: case RILL_DTYPE_INT64:
    case RILL_DTYPE_INT16: case RILL_DTYPE_INT8: case RILL_DTYPE_UINT8: case RILL_DTYPE_BOOL:
      return true;
    default: return false;
  }
}

static void print_output(size_t col, const char *name, const rill_tensor *t) {
  char dims[RILL_DIMS_STR_MAX];
  int64_t n = rill_tensor_numel(t);
  printf("output %zu: %s %s %s\n", col, name, rill_dtype_name(t->dtype),
         rill_dims_str(&t->dims, dims, sizeof dims));
  if (!printable(t->dtype)) return;
  printf("  first:");
  for (int64_t i = 0; i < n && i < 10; i++) printf(" %.6g", value_at(t, i));
  printf("%s\n", n > 10 ? " ..." : "");
  double sum = 0;
  for (int64_t i = 0; i < n; i++) sum += value_at(t, i);
  printf("  sum: %.6g\n", sum);
  if (t->dims.n == 2 && t->dims.d[1] > 0) {
    printf("  argmax per row:");
    int64_t rows = t->dims.d[0], cols = t->dims.d[1];
    for (int64_t r = 0; r < rows && r < 32; r++) {
      int64_t best = 0;
      for (int64_t c = 1; c < cols; c++)
        if (value_at(t, r * cols + c) > value_at(t, r * cols + best)) best = c;
      printf(" %lld", (long long)best);
    }
    printf("%s\n", rows > 32 ? " ..." : "");
  }
}

static int cmd_run(int argc, char **argv) {
  const char *model_path = NULL, *out_dir = NULL, *params = NULL;
  long repeat = 0, threads = 0;
  rill_schedule schedule = RILL_SCHEDULE_AUTO;
  char **in_names = calloc((size_t)argc + 1, sizeof *in_names);
  char **in_files = calloc((size_t)argc + 1, sizeof *in_files);
  size_t nin = 0;
  int rc = EXIT_OK;
  if (!in_names || !in_files) {
    free(in_names);
    free(in_files);
    fprintf(stderr, "rill: out of memory\n");
    return EXIT_ERROR;
  }
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--input") == 0 || strcmp(a, "-i") == 0 || strcmp(a, "--output") == 0 ||
        strcmp(a, "-o") == 0 || strcmp(a, "--params") == 0 || strcmp(a, "--repeat") == 0 ||
        strcmp(a, "--threads") == 0) {
      if (i + 1 >= argc) {
        rc = usage_error("%s needs a value", a);
        goto done;
      }
      char *v = argv[++i];
      if (a[1] == 'i' || strcmp(a, "--input") == 0) {
        char *eq = strchr(v, '=');
        if (eq) {
          *eq = 0;
          in_names[nin] = v;
          in_files[nin++] = eq + 1;
        } else {
          in_names[nin] = NULL; /* the model's only input */
          in_files[nin++] = v;
        }
      } else if (strcmp(a, "--params") == 0) {
        params = v;
      } else if (strcmp(a, "--repeat") == 0) {
        char *end;
        errno = 0;
        repeat = strtol(v, &end, 10);
        if (errno || *end || repeat < 1 || repeat > 1000000) {
          rc = usage_error("--repeat needs a count from 1 to 1000000, not '%s'", v);
          goto done;
        }
      } else if (strcmp(a, "--threads") == 0) {
        char *end;
        errno = 0;
        threads = strtol(v, &end, 10);
        if (errno || *end || threads < 1 || threads > 1024) {
          rc = usage_error("--threads needs a count from 1 to 1024, not '%s'", v);
          goto done;
        }
      } else {
        out_dir = v;
      }
    } else if (strcmp(a, "--sequential") == 0 || strcmp(a, "--parallel") == 0) {
      rill_schedule want = a[2] == 's' ? RILL_SCHEDULE_SEQUENTIAL : RILL_SCHEDULE_PARALLEL;
      if (schedule != RILL_SCHEDULE_AUTO && schedule != want) {
        rc = usage_error("--sequential and --parallel exclude each other%s", "");
        goto done;
      }
      schedule = want;
    } else if (a[0] == '-' && a[1]) {
      rc = usage_error("unknown option %s", a);
      goto done;
    } else if (!model_path) {
      model_path = a;
    } else {
      rc = usage_error("unexpected argument %s", a);
      goto done;
    }
  }
  if (!model_path) {
    rc = usage_error("run needs a MODEL%s", "");
    goto done;
  }

  rill_model *m = NULL;
  rill_executor *exe = NULL;
  rill_scope *scope = NULL;
  rill_tensor **feeds = calloc(nin + 1, sizeof *feeds), **outs = NULL;
  const char **fetch = NULL;
  size_t nout = 0;
  rill_status *st = NULL;
  if (!feeds) {
    st = rill_oom();
    goto run_done;
  }
  {
    /* Check the ops before the parameters: a program rill cannot run fails naming the
     * ops it lacks, even when its parameter files are missing too. */
    char *ppath = NULL;
    rill_program *pre = NULL;
    if ((st = program_path(model_path, &ppath))) goto run_done;
    st = rill_program_load(ppath, &pre);
    rill_free(ppath);
    if (!st) st = rill_program_validate(pre);
    rill_program_destroy(pre);
    if (st) goto run_done;
  }
  if ((st = rill_model_load(model_path, params, &m))) goto run_done;
  const rill_program *prog = rill_model_program(m);
  for (size_t i = 0; i < nin; i++)
    if (!in_names[i]) {
      if (rill_model_num_inputs(m) != 1) {
        st = rill_error(RILL_INVALID_ARGUMENT,
                        "--input %s has no NAME= but the model has %zu inputs; use NAME=FILE",
                        in_files[i], rill_model_num_inputs(m));
        goto run_done;
      }
      in_names[i] = (char *)rill_model_input_name(m, 0);
    }
  if ((st = rill_program_validate(prog))) goto run_done;
  nout = rill_model_num_outputs(m);
  fetch = calloc(nout + 1, sizeof *fetch);
  outs = calloc(nout + 1, sizeof *outs);
  if (!fetch || !outs) {
    st = rill_oom();
    goto run_done;
  }
  for (size_t i = 0; i < nout; i++) fetch[i] = rill_model_output_name(m, i);
  for (size_t i = 0; i < nin; i++)
    if ((st = rill_npy_load(in_files[i], &feeds[i]))) {
      st = rill_status_wrap(st, "input '%s'", in_names[i]);
      goto run_done;
    }
  {
    rill_executor_options opts = {{RILL_DEVICE_CPU, 0}, (int32_t)threads};
    if ((st = rill_executor_create(&opts, &exe))) goto run_done;
    if ((st = rill_executor_set_schedule(exe, schedule))) goto run_done;
  }
  /* A child scope over the parameters, so the run's variables don't pollute the model. */
  if ((st = rill_scope_create(rill_model_scope(m), &scope))) goto run_done;
  if ((st = rill_executor_run(exe, prog, scope, (const char *const *)in_names, feeds, nin, fetch,
                              nout, outs)))
    goto run_done;
  if (repeat) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long r = 0; r < repeat && !st; r++) {
      rill_tensor **again = calloc(nout + 1, sizeof *again);
      if (!again) {
        st = rill_oom();
        break;
      }
      st = rill_executor_run(exe, prog, scope, (const char *const *)in_names, feeds, nin, fetch,
                             nout, again);
      for (size_t i = 0; !st && i < nout; i++) rill_tensor_destroy(again[i]);
      free(again);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st) goto run_done;
    double ms = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6);
    printf("time: %.4f ms/run (%ld runs after the first)\n", ms / (double)repeat, repeat);
  }
  if (out_dir && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
    st = rill_error(RILL_IO, "%s: cannot create the output directory: %s", out_dir, strerror(errno));
    goto run_done;
  }
  for (size_t i = 0; i < nout; i++) {
    print_output(i, fetch[i], outs[i]);
    if (out_dir) {
      size_t len = strlen(out_dir) + 32;
      char *path = rill_malloc(len);
      if (!path) {
        st = rill_oom();
        goto run_done;
      }
      snprintf(path, len, "%s/output_%zu.npy", out_dir, i);
      st = rill_npy_save(path, outs[i]);
      if (!st) printf("  wrote %s\n", path);
      rill_free(path);
      if (st) goto run_done;
    }
  }
run_done:
  if (st) rc = fail(st);
  if (outs)
    for (size_t i = 0; i < nout; i++) rill_tensor_destroy(outs[i]);
  if (feeds)
    for (size_t i = 0; i < nin; i++) rill_tensor_destroy(feeds[i]);
  free(outs);
  free(feeds);
  free(fetch);
  rill_scope_destroy(scope);
  rill_executor_destroy(exe);
  rill_model_destroy(m);
done:
  free(in_names);
  free(in_files);
  return rc;
}

/* ------------------------------------------------------------------ ops -------- */

static int describe(const char *name) {
  char *text = NULL;
  rill_status *st = rill_op_describe(name, &text);
  if (st) return fail(st);
  if (!text) return fail(rill_error(RILL_NOT_FOUND, "unknown op '%s'", name));
  fputs(text, stdout);
  if (text[0] && text[strlen(text) - 1] != '\n') putchar('\n');
  rill_free_buffer(text);
  return EXIT_OK;
}

static int cmd_ops(int argc, char **argv) {
  if (argc > 1) return usage_error("ops takes at most one NAME%s", "");
  rill_status *st = rill_registry_init();
  if (st) return fail(st);
  if (argc == 1) return describe(argv[0]);
  size_t n = rill_op_count();
  printf("%zu operators\n\n", n);
  for (size_t i = 0; i < n; i++) {
    int rc = describe(rill_op_name(i));
    if (rc) return rc;
    putchar('\n');
  }
  return EXIT_OK;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage_text, stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    fputs(usage_text, stdout);
    return EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("rill %d.%d.%d\n", RILL_VERSION_MAJOR, RILL_VERSION_MINOR, RILL_VERSION_PATCH);
    return EXIT_OK;
  }
  int nargs = argc - 2, prc = take_plugins(&nargs, argv + 2);
  if (prc) return prc;
  if (strcmp(cmd, "dot") == 0) return cmd_dot(nargs, argv + 2);
  argc = nargs + 2;
  if (strcmp(cmd, "inspect") == 0) return cmd_inspect(argc - 2, argv + 2);
  if (strcmp(cmd, "run") == 0) return cmd_run(argc - 2, argv + 2);
  if (strcmp(cmd, "ops") == 0) return cmd_ops(argc - 2, argv + 2);
  return usage_error("unknown command '%s'", cmd);
}
