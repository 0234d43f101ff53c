/* `rill run MODEL --input NAME=FILE.npy ...`: runs a model through the predictor and
 * prints (and optionally writes) its outputs; --repeat and --bench time further runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "lod_arg.h"

/* What the command line asked for. The strings point into argv. */
typedef struct run_args {
  const char *model, *out_dir, *params, *file_ops_dir, *profile;
  const char *device; /* --device PLACE; NULL: the CPU */
  long repeat, threads, bench, opt_level;
  bool memory_optim, int8, verbose;
  rill_schedule schedule;
  char **in_names; /* NULL: the model's only input (filled in once the model is loaded) */
  char **in_files;
  size_t nin;
  lod_arg *lods;
  size_t nlod;
} run_args;

static void run_args_clear(run_args *a) {
  for (size_t k = 0; k < a->nlod; k++) lod_arg_clear(&a->lods[k]);
  free(a->lods);
  free(a->in_names);
  free(a->in_files);
}

/* ------------------------------------------------------------ arguments ---- */

static bool parse_level(const char *v, long *level) {
  if (!v[0] || v[1] || v[0] < '0' || v[0] > '2') return false;
  *level = v[0] - '0';
  return true;
}

static bool parse_count(const char *v, long max, long *out) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || *end || end == v || n < 1 || n > max) return false;
  *out = n;
  return true;
}

static bool takes_value(const char *a) {
  static const char *const with_value[] = {"--input", "-i",        "--output", "-o",
                                           "--params", "--repeat", "--threads", "--lod",
                                           "--bench", "-O",        "--allow-file-ops",
                                           "--profile", "--device"};
  for (size_t i = 0; i < sizeof with_value / sizeof *with_value; i++)
    if (strcmp(a, with_value[i]) == 0) return true;
  return false;
}

static int add_lod(run_args *r, const char *v) {
  rill_status *st = lod_arg_parse(v, &r->lods[r->nlod]);
  for (size_t k = 0; !st && k < r->nlod; k++)
    if (strcmp(r->lods[k].name, r->lods[r->nlod].name) == 0) {
      st = rill_status_create(RILL_INVALID_ARGUMENT, "--lod %s: input '%s' has a LoD already", v,
                              r->lods[r->nlod].name);
      lod_arg_clear(&r->lods[r->nlod]);
    }
  if (st) {
    int rc = usage_error("%s", rill_status_message(st));
    rill_status_destroy(st);
    return rc;
  }
  r->nlod++;
  return EXIT_OK;
}

/* An option with a value: a = the option, v = its value. */
static int take_option(run_args *r, const char *a, char *v) {
  if (strcmp(a, "--input") == 0 || strcmp(a, "-i") == 0) {
    char *eq = strchr(v, '=');
    if (eq) {
      *eq = 0;
      r->in_names[r->nin] = v;
      r->in_files[r->nin++] = eq + 1;
    } else {
      r->in_names[r->nin] = NULL;
      r->in_files[r->nin++] = v;
    }
  } else if (strcmp(a, "--lod") == 0) {
    return add_lod(r, v);
  } else if (strcmp(a, "--params") == 0) {
    r->params = v;
  } else if (strcmp(a, "--allow-file-ops") == 0) {
    r->file_ops_dir = v;
  } else if (strcmp(a, "--repeat") == 0) {
    if (!parse_count(v, 1000000, &r->repeat))
      return usage_error("--repeat needs a count from 1 to 1000000, not '%s'", v);
  } else if (strcmp(a, "--profile") == 0) {
    r->profile = v;
  } else if (strcmp(a, "--bench") == 0) {
    if (!parse_count(v, 1000000, &r->bench))
      return usage_error("--bench needs a count from 1 to 1000000, not '%s'", v);
  } else if (strcmp(a, "-O") == 0) {
    if (!parse_level(v, &r->opt_level)) return usage_error("-O needs a level 0, 1 or 2, not '%s'", v);
  } else if (strcmp(a, "--device") == 0) {
    rill_place place;
    rill_status *st = rill_parse_place(v, &place);
    if (st) {
      int rc = usage_error("--device: %s", rill_status_message(st));
      rill_status_destroy(st);
      return rc;
    }
    r->device = v;
  } else if (strcmp(a, "--threads") == 0) {
    if (!parse_count(v, 1024, &r->threads))
      return usage_error("--threads needs a count from 1 to 1024, not '%s'", v);
  } else {
    r->out_dir = v;
  }
  return EXIT_OK;
}

/* Fills *r from argv; returns 0 or the exit status of a usage error (printed). */
static int parse_run_args(int argc, char **argv, run_args *r) {
  *r = (run_args){.opt_level = 2, .memory_optim = true, .schedule = RILL_SCHEDULE_AUTO};
  r->in_names = calloc((size_t)argc + 1, sizeof *r->in_names);
  r->in_files = calloc((size_t)argc + 1, sizeof *r->in_files);
  r->lods = calloc((size_t)argc + 1, sizeof *r->lods);
  if (!r->in_names || !r->in_files || !r->lods) return fail(cli_oom());
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    int rc = EXIT_OK;
    if (takes_value(a)) {
      if (i + 1 >= argc) return usage_error("%s needs a value", a);
      rc = take_option(r, a, argv[++i]);
    } else if (strcmp(a, "--sequential") == 0 || strcmp(a, "--parallel") == 0) {
      rill_schedule want = a[2] == 's' ? RILL_SCHEDULE_SEQUENTIAL : RILL_SCHEDULE_PARALLEL;
      if (r->schedule != RILL_SCHEDULE_AUTO && r->schedule != want)
        return usage_error("--sequential and --parallel exclude each other%s", "");
      r->schedule = want;
    } else if (strncmp(a, "-O", 2) == 0) {
      if (!parse_level(a + 2, &r->opt_level))
        return usage_error("-O needs a level 0, 1 or 2, not '%s'", a + 2);
    } else if (strcmp(a, "--no-memory-optim") == 0) {
      r->memory_optim = false;
    } else if (strcmp(a, "--int8") == 0) {
      r->int8 = true;
    } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
      r->verbose = true;
    } else if (a[0] == '-' && a[1]) {
      return usage_error("unknown option %s", a);
    } else if (!r->model) {
      r->model = a;
    } else {
      return usage_error("unexpected argument %s", a);
    }
    if (rc) return rc;
  }
  if (!r->model) return usage_error("run needs a MODEL%s", "");
  return EXIT_OK;
}

/* ------------------------------------------------------------ the model ---- */

/* Checks the ops before the parameters: a program rill cannot run fails naming the ops
 * it lacks, even when its parameter files are missing too. */
static rill_status *check_ops(const char *model) {
  rill_program *p = NULL;
  CLI_TRY(load_program(model, &p, NULL));
  rill_status *st = rill_program_validate(p);
  rill_program_destroy(p);
  return st;
}

static rill_status *create_predictor(const run_args *r, rill_predictor **out) {
  CLI_TRY(check_ops(r->model));
  rill_predictor_config *config = NULL;
  CLI_TRY(rill_predictor_config_create(r->model, &config));
  rill_status *st = rill_predictor_config_set_params_file(config, r->params);
  if (!st) st = rill_predictor_config_set_threads(config, (int32_t)r->threads);
  if (!st) st = rill_predictor_config_set_opt_level(config, (int32_t)r->opt_level);
  /* --int8: the level's passes and the opt-in INT8 pass (doc/design/int8.md) */
  static const uint32_t level_passes[] = {0, RILL_PASS_DROPOUT | RILL_PASS_FOLD_BN, RILL_PASS_ALL};
  if (!st && r->int8) st = rill_predictor_config_set_passes(config, level_passes[r->opt_level] | RILL_PASS_INT8);
  if (!st) st = rill_predictor_config_set_memory_optim(config, r->memory_optim);
  if (!st) st = rill_predictor_config_set_schedule(config, r->schedule);
  if (!st && r->device) {
    rill_place place;
    st = rill_parse_place(r->device, &place);
    if (!st) st = rill_status_wrap(rill_predictor_config_set_place(config, place), "--device %s", r->device);
  }
  if (!st && r->file_ops_dir) st = rill_predictor_config_allow_file_ops(config, r->file_ops_dir);
  if (!st) st = rill_predictor_create(config, out);
  rill_predictor_config_destroy(config);
  return st;
}

/* Names the inputs given without NAME=, reads every .npy and applies the --lod offsets. */
static rill_status *load_inputs(run_args *r, const rill_predictor *pred, rill_tensor **feeds) {
  for (size_t i = 0; i < r->nin; i++)
    if (!r->in_names[i]) {
      if (rill_predictor_num_inputs(pred) != 1)
        return rill_status_create(RILL_INVALID_ARGUMENT,
                                  "--input %s has no NAME= but the model has %zu inputs; use NAME=FILE",
                                  r->in_files[i], rill_predictor_num_inputs(pred));
      r->in_names[i] = (char *)rill_predictor_input_name(pred, 0);
    }
  for (size_t i = 0; i < r->nin; i++) {
    rill_status *st = rill_tensor_load_npy(r->in_files[i], &feeds[i]);
    if (st) return rill_status_wrap(st, "input '%s'", r->in_names[i]);
  }
  for (size_t k = 0; k < r->nlod; k++) {
    size_t i = 0;
    while (i < r->nin && strcmp(r->in_names[i], r->lods[k].name) != 0) i++;
    if (i == r->nin)
      return rill_status_create(RILL_INVALID_ARGUMENT, "--lod %s: there is no --input %s",
                                r->lods[k].name, r->lods[k].name);
    CLI_TRY(lod_arg_apply(&r->lods[k], feeds[i]));
  }
  return NULL;
}

/* ------------------------------------------------------------- timing ------ */

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
static rill_status *timed_runs(rill_predictor *p, const run_args *r, rill_tensor *const *feeds,
                               long runs, double **out) {
  size_t nout = rill_predictor_num_outputs(p);
  double *ms = calloc((size_t)runs + 1, sizeof *ms);
  rill_tensor **again = calloc(nout + 1, sizeof *again);
  rill_status *st = ms && again ? NULL : cli_oom();
  for (long i = 0; i < runs && !st; i++) {
    double t0 = now_ms();
    st = rill_predictor_run(p, (const char *const *)r->in_names, feeds, r->nin, again);
    ms[i] = now_ms() - t0;
    for (size_t k = 0; !st && k < nout; k++) rill_tensor_destroy(again[k]);
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

/* ------------------------------------------------------------ profiling ---- */

static rill_status *profile_start(const run_args *r) {
  return r->profile || r->verbose ? rill_profiler_start(NULL) : NULL;
}

/* --verbose: the copies between places the profiled runs made ("memcpy FROM->TO" rows),
 * each with the op it was made for. */
static void print_copies(const rill_profiler_summary *s, long runs) {
  size_t n = rill_profiler_summary_rows(s, RILL_PROFILER_BY_INSTANCE), copies = 0;
  for (size_t i = 0; i < n; i++) {
    const rill_profiler_row *row = rill_profiler_summary_row(s, RILL_PROFILER_BY_INSTANCE, i);
    if (strncmp(row->name, "memcpy ", 7) != 0) continue;
    if (!copies++) printf("copies between places (%ld run%s):\n", runs, runs == 1 ? "" : "s");
    if (row->index >= 0)
      printf("  %-34s for block %d, op #%d: %llu\n", row->name, (int)row->block, (int)row->index,
             (unsigned long long)row->calls);
    else
      printf("  %-34s for a feed or fetch: %llu\n", row->name, (unsigned long long)row->calls);
  }
  if (!copies) printf("copies between places: none (%ld run%s)\n", runs, runs == 1 ? "" : "s");
}

/* Writes the trace and prints the report (sorted by total time), and with --verbose
 * the copies between places. */
static rill_status *profile_stop(const run_args *r, long runs) {
  if (!(r->profile || r->verbose) || !rill_profiler_enabled()) return NULL;
  rill_profiler_summary *s = NULL;
  CLI_TRY(rill_profiler_stop(r->profile, &s));
  char *text = NULL;
  rill_status *st = r->profile ? rill_profiler_summary_format(s, RILL_PROFILER_SORT_TOTAL, &text) : NULL;
  if (!st && r->profile) {
    fputs(text, stdout);
    printf("trace: wrote %s (open it in ui.perfetto.dev or chrome://tracing)\n", r->profile);
  }
  if (!st && r->verbose) print_copies(s, runs);
  rill_free_buffer(text);
  rill_profiler_summary_destroy(s);
  return st;
}

static rill_status *report_repeat(rill_predictor *pred, const run_args *r, rill_tensor *const *feeds) {
  double *ms = NULL;
  CLI_TRY(timed_runs(pred, r, feeds, r->repeat, &ms));
  double total = 0;
  for (long i = 0; i < r->repeat; i++) total += ms[i];
  free(ms);
  printf("time: %.4f ms/run (%ld runs after the first)\n", total / (double)r->repeat, r->repeat);
  return NULL;
}

static rill_status *report_bench(rill_predictor *pred, const run_args *r, rill_tensor *const *feeds) {
  /* Warm-up: caches, the plan's buffers and BLAS's threads settle first. */
  long bench = r->bench, warm = bench / 10 < 3 ? 3 : (bench / 10 > 50 ? 50 : bench / 10);
  double *ms = NULL;
  CLI_TRY(timed_runs(pred, r, feeds, warm, &ms));
  free(ms);
  CLI_TRY(profile_start(r)); /* the timed runs only */
  rill_status *pst = timed_runs(pred, r, feeds, bench, &ms);
  if (!pst) pst = profile_stop(r, bench);
  if (pst) {
    if (rill_profiler_enabled()) rill_status_destroy(rill_profiler_stop(NULL, NULL));
    return pst;
  }
  double total = 0;
  for (long i = 0; i < bench; i++) total += ms[i];
  qsort(ms, (size_t)bench, sizeof *ms, cmp_double);
  printf("latency: %ld runs after %ld warm-up runs: p50 %.6f ms, p90 %.6f ms, p99 %.6f ms, "
         "mean %.6f ms\n",
         bench, warm, percentile(ms, bench, 0.5), percentile(ms, bench, 0.9),
         percentile(ms, bench, 0.99), total / (double)bench);
  free(ms);
  printf("cpu: %s kernels (RILL_CPU_ISA caps them)\n", rill_cpu_isa());
  rill_pass_counts pc;
  CLI_TRY(rill_predictor_pass_counts(pred, &pc));
  printf("passes: %zu dropout/identity removed, %zu batch_norm folded, %zu conv2d_fusion, %zu fc, "
         "%zu in place, %zu int8\n",
         pc.dropouts, pc.bn_folded, pc.conv_fused, pc.fc_fused, pc.inplace, pc.int8);
  printf("memory: temporaries %.3f MiB (peak, -O%ld, memory plan %s), parameters %.3f MiB, "
         "process max RSS %.1f MiB\n",
         (double)rill_predictor_memory_bytes(pred) / 1048576.0, r->opt_level,
         r->memory_optim ? "on" : "off", (double)rill_predictor_param_bytes(pred) / 1048576.0,
         max_rss_mib());
  return NULL;
}

/* ------------------------------------------------------------- outputs ----- */

static double value_at(rill_tensor *t, int64_t i) {
  const void *d = rill_tensor_data(t);
  switch (rill_tensor_dtype(t)) {
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

static void print_output(size_t col, const char *name, rill_tensor *t) {
  char dims[DIMS_STR_MAX];
  int64_t n = rill_tensor_numel(t);
  size_t ndim = rill_tensor_ndim(t);
  const int64_t *d = rill_tensor_dims(t);
  printf("output %zu: %s %s %s\n", col, name, rill_dtype_name(rill_tensor_dtype(t)),
         dims_str(d, ndim, dims, sizeof dims));
  if (!printable(rill_tensor_dtype(t))) return;
  printf("  first:");
  for (int64_t i = 0; i < n && i < 10; i++) printf(" %.6g", value_at(t, i));
  printf("%s\n", n > 10 ? " ..." : "");
  double sum = 0;
  for (int64_t i = 0; i < n; i++) sum += value_at(t, i);
  printf("  sum: %.6g\n", sum);
  if (ndim == 2 && d[1] > 0) {
    printf("  argmax per row:");
    int64_t rows = d[0], cols = d[1];
    for (int64_t row = 0; row < rows && row < 32; row++) {
      int64_t best = 0;
      for (int64_t c = 1; c < cols; c++)
        if (value_at(t, row * cols + c) > value_at(t, row * cols + best)) best = c;
      printf(" %lld", (long long)best);
    }
    printf("%s\n", rows > 32 ? " ..." : "");
  }
}

/* Prints every output; with --output, writes DIR/output_<col>.npy too. */
static rill_status *emit_outputs(const rill_predictor *pred, const char *out_dir, rill_tensor **outs) {
  if (out_dir && mkdir(out_dir, 0777) != 0 && errno != EEXIST)
    return rill_status_create(RILL_IO, "%s: cannot create the output directory: %s", out_dir,
                              strerror(errno));
  size_t nout = rill_predictor_num_outputs(pred);
  for (size_t i = 0; i < nout; i++) {
    print_output(i, rill_predictor_output_name(pred, i), outs[i]);
    if (!out_dir) continue;
    size_t len = strlen(out_dir) + 32;
    char *path = malloc(len);
    if (!path) return cli_oom();
    snprintf(path, len, "%s/output_%zu.npy", out_dir, i);
    rill_status *st = rill_tensor_save_npy(outs[i], path);
    if (!st) printf("  wrote %s\n", path);
    free(path);
    if (st) return st;
  }
  return NULL;
}

/* ---------------------------------------------------------------- run ------ */

static rill_status *run_model(run_args *r) {
  rill_predictor *pred = NULL;
  CLI_TRY(create_predictor(r, &pred));
  size_t nout = rill_predictor_num_outputs(pred);
  rill_tensor **feeds = calloc(r->nin + 1, sizeof *feeds), **outs = calloc(nout + 1, sizeof *outs);
  rill_status *st = feeds && outs ? NULL : cli_oom();
  if (!st) st = load_inputs(r, pred, feeds);
  /* --profile: the first run and the --repeat runs, or with --bench the timed runs */
  if (!st && !r->bench) st = profile_start(r);
  if (!st) st = rill_predictor_run(pred, (const char *const *)r->in_names, feeds, r->nin, outs);
  if (!st && r->repeat) st = report_repeat(pred, r, feeds);
  if (!st && !r->bench) st = profile_stop(r, 1 + r->repeat);
  if (st && rill_profiler_enabled()) rill_status_destroy(rill_profiler_stop(NULL, NULL));
  if (!st && r->bench) st = report_bench(pred, r, feeds);
  if (!st) st = emit_outputs(pred, r->out_dir, outs);
  for (size_t i = 0; outs && i < nout; i++) rill_tensor_destroy(outs[i]);
  for (size_t i = 0; feeds && i < r->nin; i++) rill_tensor_destroy(feeds[i]);
  free(outs);
  free(feeds);
  rill_predictor_destroy(pred);
  return st;
}

int cmd_run(int argc, char **argv) {
  run_args r;
  int rc = parse_run_args(argc, argv, &r);
  if (!rc) {
    rill_status *st = run_model(&r);
    if (st) rc = fail(st);
  }
  run_args_clear(&r);
  return rc;
}
