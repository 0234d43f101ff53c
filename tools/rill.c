/* rill -- the command line: inspect a model, run it on .npy inputs, list operators,
 * prune a model to chosen outputs (tools/cmd_prune.c), list checkpoints.
 *
 * Exit status: 0 success, 1 a runtime error (message on stderr), 2 a usage error. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "framework/base/alloc.h"
#include "framework/inference/predictor.h"
#include "framework/io/file.h"
#include "framework/io/npy.h"
#include "framework/program/program.h"
#include "framework/registry/registry.h"
#include "rill.h"
#include "tools/lod_arg.h"
#include "tools/cmd_prune.h"
#include "tools/commands.h"

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

static const char usage_text[] =
    "usage: rill <command> [arguments]\n"
    "\n"
    "commands:\n"
    "  inspect [-v] MODEL              print blocks, variables, ops, feed/fetch targets\n"
    "                                  (-v: also Paddle's op_callstack attributes)\n"
    "  run MODEL --input NAME=FILE.npy [--input ...] [--params FILE] [--output DIR]\n"
    "            [--lod NAME=OFFSETS] [--repeat N] [--bench N] [--threads N]\n"
    "            [--sequential | --parallel] [-O LEVEL] [--no-memory-optim]\n"
    "            [--allow-file-ops DIR]\n"
    "                                  run the model; print each output; with --output,\n"
    "                                  write DIR/output_<col>.npy; with --repeat, run N\n"
    "                                  more times and print the time per run; with\n"
    "                                  --bench, run N more times after warm-up runs and\n"
    "                                  print latency p50/p90/p99/mean and peak memory;\n"
    "                                  --threads sets the worker count, --sequential/\n"
    "                                  --parallel the schedule (default: chosen per\n"
    "                                  program); -O 0|1|2 the inference passes (default\n"
    "                                  2: dropout removal, batch_norm folding, fc and\n"
    "                                  conv fusion, in-place activations; 1: the first\n"
    "                                  two; 0: none); --no-memory-optim gives every\n"
    "                                  temporary its own buffer; --lod gives input NAME\n"
    "                                  a LoD: offsets separated by ',', levels by ';'\n"
    "                                  (--lod words=0,3,7, --lod 'x=0,2;0,1,3')\n"
    "                                  A model whose ops read or write files (save, load,\n"
    "                                  checkpoint...) is refused unless --allow-file-ops\n"
    "                                  names a directory holding every path they use\n"
    "  ops [NAME]                      registered operators (or one) and their schemas\n"
    "  prune MODEL --output DIR [--fetch NAME ...] [--feed NAME ...] [--params FILE]\n"
    "              [--combined FILE]\n"
    "                                  write an inference model computing only the fetch\n"
    "                                  variables (default: the model's) from the feeds\n"
    "                                  (default: the model's): DIR/__model__ plus the\n"
    "                                  parameters it needs, one file each or --combined\n"
    "  checkpoint ls DIR               list DIR's checkpoints, newest first: step, time,\n"
    "                                  size, variables, and whether each verifies (manifest\n"
    "                                  and every file's size and CRC32C) or why not\n"
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

static bool parse_level(const char *v, long *level) {
  if (!v[0] || v[1] || v[0] < '0' || v[0] > '2') return false;
  *level = v[0] - '0';
  return true;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Runs the predictor `runs` times and returns the run times in ms (caller frees). */
static rill_status *timed_runs(rill_predictor *p, const char *const *names, rill_tensor *const *feeds,
                               size_t nin, size_t nout, long runs, double **out) {
  double *ms = calloc((size_t)runs + 1, sizeof *ms);
  rill_tensor **again = calloc(nout + 1, sizeof *again);
  rill_status *st = ms && again ? NULL : rill_oom();
  for (long r = 0; r < runs && !st; r++) {
    double t0 = now_ms();
    st = rill_predictor_run(p, names, feeds, nin, again);
    ms[r] = now_ms() - t0;
    for (size_t i = 0; !st && i < nout; i++) rill_tensor_destroy(again[i]);
  }
  free(again);
  if (st) {
    free(ms);
    return st;
  }
  *out = ms;
  return NULL;
}

static double percentile(const double *sorted, long n, double q) {
  long i = (long)(q * (double)(n - 1) + 0.5);
  return sorted[i < n ? i : n - 1];
}

static double max_rss_mib(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return (double)ru.ru_maxrss / 1024.0;
}

static int cmd_run(int argc, char **argv) {
  const char *model_path = NULL, *out_dir = NULL, *params = NULL, *file_ops_dir = NULL;
  long repeat = 0, threads = 0, bench = 0, opt_level = 2;
  bool memory_optim = true;
  rill_schedule schedule = RILL_SCHEDULE_AUTO;
  char **in_names = calloc((size_t)argc + 1, sizeof *in_names);
  char **in_files = calloc((size_t)argc + 1, sizeof *in_files);
  lod_arg *lods = calloc((size_t)argc + 1, sizeof *lods);
  size_t nin = 0, nlod = 0;
  int rc = EXIT_OK;
  if (!in_names || !in_files || !lods) {
    free(in_names);
    free(in_files);
    free(lods);
    fprintf(stderr, "rill: out of memory\n");
    return EXIT_ERROR;
  }
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--input") == 0 || strcmp(a, "-i") == 0 || strcmp(a, "--output") == 0 ||
        strcmp(a, "-o") == 0 || strcmp(a, "--params") == 0 || strcmp(a, "--repeat") == 0 ||
        strcmp(a, "--threads") == 0 || strcmp(a, "--lod") == 0 || strcmp(a, "--bench") == 0 ||
        strcmp(a, "-O") == 0 || strcmp(a, "--allow-file-ops") == 0) {
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
      } else if (strcmp(a, "--lod") == 0) {
        rill_status *lst = lod_arg_parse(v, &lods[nlod]);
        for (size_t k = 0; !lst && k < nlod; k++)
          if (strcmp(lods[k].name, lods[nlod].name) == 0) {
            lst = rill_error(RILL_INVALID_ARGUMENT, "--lod %s: input '%s' has a LoD already", v,
                             lods[nlod].name);
            lod_arg_clear(&lods[nlod]);
          }
        if (lst) {
          rc = usage_error("%s", rill_status_message(lst));
          rill_status_destroy(lst);
          goto done;
        }
        nlod++;
      } else if (strcmp(a, "--params") == 0) {
        params = v;
      } else if (strcmp(a, "--allow-file-ops") == 0) {
        file_ops_dir = v;
      } else if (strcmp(a, "--repeat") == 0) {
        char *end;
        errno = 0;
        repeat = strtol(v, &end, 10);
        if (errno || *end || repeat < 1 || repeat > 1000000) {
          rc = usage_error("--repeat needs a count from 1 to 1000000, not '%s'", v);
          goto done;
        }
      } else if (strcmp(a, "--bench") == 0) {
        char *end;
        errno = 0;
        bench = strtol(v, &end, 10);
        if (errno || *end || bench < 1 || bench > 1000000) {
          rc = usage_error("--bench needs a count from 1 to 1000000, not '%s'", v);
          goto done;
        }
      } else if (strcmp(a, "-O") == 0) {
        if (!parse_level(v, &opt_level)) {
          rc = usage_error("-O needs a level 0, 1 or 2, not '%s'", v);
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
    } else if (strncmp(a, "-O", 2) == 0) {
      if (!parse_level(a + 2, &opt_level)) {
        rc = usage_error("-O needs a level 0, 1 or 2, not '%s'", a + 2);
        goto done;
      }
    } else if (strcmp(a, "--no-memory-optim") == 0) {
      memory_optim = false;
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

  rill_predictor_config *config = NULL;
  rill_predictor *pred = NULL;
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
  if ((st = rill_predictor_config_create(model_path, &config))) goto run_done;
  if ((st = rill_predictor_config_set_params_file(config, params))) goto run_done;
  if ((st = rill_predictor_config_set_threads(config, (int32_t)threads))) goto run_done;
  if ((st = rill_predictor_config_set_opt_level(config, (int32_t)opt_level))) goto run_done;
  if ((st = rill_predictor_config_set_memory_optim(config, memory_optim))) goto run_done;
  if ((st = rill_predictor_config_set_schedule(config, schedule))) goto run_done;
  if (file_ops_dir && (st = rill_predictor_config_allow_file_ops(config, file_ops_dir)))
    goto run_done;
  if ((st = rill_predictor_create(config, &pred))) goto run_done;
  for (size_t i = 0; i < nin; i++)
    if (!in_names[i]) {
      if (rill_predictor_num_inputs(pred) != 1) {
        st = rill_error(RILL_INVALID_ARGUMENT,
                        "--input %s has no NAME= but the model has %zu inputs; use NAME=FILE",
                        in_files[i], rill_predictor_num_inputs(pred));
        goto run_done;
      }
      in_names[i] = (char *)rill_predictor_input_name(pred, 0);
    }
  nout = rill_predictor_num_outputs(pred);
  fetch = calloc(nout + 1, sizeof *fetch);
  outs = calloc(nout + 1, sizeof *outs);
  if (!fetch || !outs) {
    st = rill_oom();
    goto run_done;
  }
  for (size_t i = 0; i < nout; i++) fetch[i] = rill_predictor_output_name(pred, i);
  for (size_t i = 0; i < nin; i++)
    if ((st = rill_npy_load(in_files[i], &feeds[i]))) {
      st = rill_status_wrap(st, "input '%s'", in_names[i]);
      goto run_done;
    }
  for (size_t k = 0; k < nlod; k++) {
    size_t i = 0;
    while (i < nin && strcmp(in_names[i], lods[k].name) != 0) i++;
    if (i == nin) {
      st = rill_error(RILL_INVALID_ARGUMENT, "--lod %s: there is no --input %s", lods[k].name,
                      lods[k].name);
      goto run_done;
    }
    if ((st = lod_arg_apply(&lods[k], feeds[i]))) goto run_done;
  }
  if ((st = rill_predictor_run(pred, (const char *const *)in_names, feeds, nin, outs))) goto run_done;
  if (repeat) {
    double *ms = NULL;
    if ((st = timed_runs(pred, (const char *const *)in_names, feeds, nin, nout, repeat, &ms)))
      goto run_done;
    double total = 0;
    for (long r = 0; r < repeat; r++) total += ms[r];
    free(ms);
    printf("time: %.4f ms/run (%ld runs after the first)\n", total / (double)repeat, repeat);
  }
  if (bench) {
    /* Warm-up: caches, the plan's buffers and BLAS's threads settle first. */
    long warm = bench / 10 < 3 ? 3 : (bench / 10 > 50 ? 50 : bench / 10);
    double *ms = NULL;
    if ((st = timed_runs(pred, (const char *const *)in_names, feeds, nin, nout, warm, &ms)))
      goto run_done;
    free(ms);
    if ((st = timed_runs(pred, (const char *const *)in_names, feeds, nin, nout, bench, &ms)))
      goto run_done;
    double total = 0;
    for (long r = 0; r < bench; r++) total += ms[r];
    qsort(ms, (size_t)bench, sizeof *ms, cmp_double);
    printf("latency: %ld runs after %ld warm-up runs: p50 %.6f ms, p90 %.6f ms, p99 %.6f ms, "
           "mean %.6f ms\n",
           bench, warm, percentile(ms, bench, 0.5), percentile(ms, bench, 0.9),
           percentile(ms, bench, 0.99), total / (double)bench);
    free(ms);
    printf("cpu: %s kernels (RILL_CPU_ISA caps them)\n", rill_cpu_isa());
    const rill_pass_stats *ps = rill_predictor_pass_stats(pred);
    printf("passes: %zu dropout removed, %zu batch_norm folded, %zu conv2d_fusion, %zu fc, "
           "%zu in place\n",
           ps->dropouts, ps->bn_folded, ps->conv_fused, ps->fc_fused, ps->inplace);
    printf("memory: temporaries %.3f MiB (peak, -O%ld, memory plan %s), parameters %.3f MiB, "
           "process max RSS %.1f MiB\n",
           (double)rill_predictor_memory_bytes(pred) / 1048576.0, opt_level,
           memory_optim ? "on" : "off", (double)rill_predictor_param_bytes(pred) / 1048576.0,
           max_rss_mib());
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
  rill_predictor_destroy(pred);
  rill_predictor_config_destroy(config);
done:
  for (size_t k = 0; k < nlod; k++) lod_arg_clear(&lods[k]);
  free(lods);
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

/* ------------------------------------------------------------- checkpoint ---- */

static void human_size(uint64_t n, char *out, size_t cap) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)n;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  if (u == 0)
    snprintf(out, cap, "%llu B", (unsigned long long)n);
  else
    snprintf(out, cap, "%.1f %s", v, units[u]);
}

static int checkpoint_ls(const char *dir) {
  if (!rill_path_is_dir(dir))
    return fail(rill_error(RILL_NOT_FOUND, "'%s' is not a directory", dir));
  rill_checkpoint_list *list;
  rill_status *st = rill_checkpoint_list_dir(dir, &list);
  if (st) return fail(st);
  size_t n = rill_checkpoint_list_count(list), damaged = 0;
  printf("%zu checkpoint%s in %s\n", n, n == 1 ? "" : "s", dir);
  if (n) printf("%-12s %-20s %10s %5s  %s\n", "STEP", "TIME (UTC)", "SIZE", "VARS", "STATUS");
  for (size_t i = 0; i < n; i++) {
    rill_checkpoint_info info;
    if ((st = rill_checkpoint_list_get(list, i, &info))) {
      rill_checkpoint_list_destroy(list);
      return fail(st);
    }
    char when[32] = "-", size[32];
    if (info.time_unix_ns > 0) {
      time_t t = (time_t)(info.time_unix_ns / 1000000000);
      struct tm tm;
      if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    }
    human_size(info.bytes, size, sizeof size);
    if (info.verified) {
      printf("%-12lld %-20s %10s %5llu  verified\n", (long long)info.step, when, size,
             (unsigned long long)info.num_vars);
    } else {
      damaged++;
      printf("%-12lld %-20s %10s %5s  damaged: %s\n", (long long)info.step, when, size, "-",
             info.problem);
    }
  }
  if (damaged)
    printf("%zu damaged: loading takes the newest verified checkpoint and skips them\n", damaged);
  size_t retired = rill_checkpoint_list_retired(list);
  if (retired)
    printf("%zu more retired by a writer while being listed (not damaged)\n", retired);
  rill_checkpoint_list_destroy(list);
  return EXIT_OK;
}

static int cmd_checkpoint(int argc, char **argv) {
  if (argc < 1) return usage_error("checkpoint needs a subcommand (ls DIR)%s", "");
  if (strcmp(argv[0], "ls") == 0) {
    if (argc != 2) return usage_error("checkpoint ls takes one DIR%s", "");
    return checkpoint_ls(argv[1]);
  }
  return usage_error("unknown checkpoint subcommand '%s' (known: ls)", argv[0]);
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
    printf("rill %s\n", rill_version());
    return EXIT_OK;
  }
  int nargs = argc - 2, prc = take_plugins(&nargs, argv + 2);
  if (prc) return prc;
  if (strcmp(cmd, "dot") == 0) return cmd_dot(nargs, argv + 2);
  argc = nargs + 2;
  if (strcmp(cmd, "inspect") == 0) return cmd_inspect(argc - 2, argv + 2);
  if (strcmp(cmd, "run") == 0) return cmd_run(argc - 2, argv + 2);
  if (strcmp(cmd, "ops") == 0) return cmd_ops(argc - 2, argv + 2);
  if (strcmp(cmd, "prune") == 0) return rill_cmd_prune(argc - 2, argv + 2);
  if (strcmp(cmd, "checkpoint") == 0) return cmd_checkpoint(argc - 2, argv + 2);
  return usage_error("unknown command '%s'", cmd);
}
