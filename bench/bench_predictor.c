/* Predictor latency per shared model: the inference passes and the memory plan (-O2,
 * the default) against the program as saved (-O0, every temporary in its own buffer),
 * both measured in the same run, batch 1, one thread.
 *
 *   build/bench_predictor [MODELS_DIR] [ROUNDS]
 *
 * MODELS_DIR (empty: the default) defaults to ../shared/models beside the source tree. Rounds alternate the
 * two predictors; each figure is the best round (on a loaded machine the minimum is the
 * one least disturbed by other processes) and the median round. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "framework/io/npy.h"
#include "rill.h"

#define BENCH_NAME "bench_predictor"
#include "bench/bench_util.h"

static const char *const models[] = {
    "abalone_bn_mlp",          "fit_a_line_raftliu",    "luotao1_example_mlp_2018",
    "mnist_conv_bn_etienne",   "mnist_mlp_handwriting", "paddlejs_gesture_rec",
    "paddlelite_simple_model", "pureboys_word2vec",
};

static rill_predictor *open_model(const char *path, int level, bool memopt) {
  rill_predictor_config *c;
  check(rill_predictor_config_create(path, &c), path);
  check(rill_predictor_config_set_threads(c, 1), "threads");
  check(rill_predictor_config_set_opt_level(c, level), "level");
  check(rill_predictor_config_set_memory_optim(c, memopt), "memory");
  rill_predictor *p;
  check(rill_predictor_create(c, &p), path);
  rill_predictor_config_destroy(c);
  return p;
}

/* Seconds per run over `runs` runs. */
static double time_runs(rill_predictor *p, const char **names, rill_tensor **in, size_t nin, int runs) {
  rill_tensor *out[8];
  size_t nout = rill_predictor_num_outputs(p);
  double t0 = now();
  for (int r = 0; r < runs; r++) {
    check(rill_predictor_run(p, names, in, nin, out), "run");
    for (size_t i = 0; i < nout; i++) rill_tensor_destroy(out[i]);
  }
  return (now() - t0) / runs;
}

int main(int argc, char **argv) {
  char dir[1024];
  if (argc > 1 && argv[1][0]) {
    snprintf(dir, sizeof dir, "%s", argv[1]);
  } else {
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    strncat(dir, "/../../shared/models", sizeof dir - strlen(dir) - 1);
  }
  int rounds = argc > 2 ? atoi(argv[2]) : 15;
  if (rounds < 1) rounds = 1;
  printf("predictor latency, batch 1, 1 thread, %d rounds: -O2 + memory plan vs -O0 without\n", rounds);
  printf("%-26s %10s %10s %10s %10s %8s %8s %10s %10s\n", "model", "O0 best", "O2 best", "O0 median",
         "O2 median", "ratio", "median", "O0 temp", "O2 temp");
  double geo = 1;
  int n = 0;
  for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, models[m]);
    rill_predictor *p[2] = {open_model(path, 0, false), open_model(path, 2, true)};
    size_t nin = rill_predictor_num_inputs(p[0]);
    const char *names[8];
    rill_tensor *in[8];
    for (size_t i = 0; i < nin && i < 8; i++) {
      char f[1400];
      names[i] = rill_predictor_input_name(p[0], i);
      snprintf(f, sizeof f, "%s/refs/input_%s.npy", path, names[i]);
      check(rill_npy_load(f, &in[i]), f);
    }
    /* Runs per round: about 20 ms of work. */
    double one = time_runs(p[0], names, in, nin, 3);
    int runs = (int)(0.02 / (one > 1e-7 ? one : 1e-7));
    if (runs < 1) runs = 1;
    if (runs > 20000) runs = 20000;
    time_runs(p[1], names, in, nin, 3);
    double *t[2] = {calloc((size_t)rounds, sizeof(double)), calloc((size_t)rounds, sizeof(double))};
    for (int r = 0; r < rounds; r++)
      for (int k = 0; k < 2; k++) t[k][r] = time_runs(p[k], names, in, nin, runs);
    qsort(t[0], (size_t)rounds, sizeof(double), cmp_double);
    qsort(t[1], (size_t)rounds, sizeof(double), cmp_double);
    double ratio = t[1][0] / t[0][0], mratio = t[1][rounds / 2] / t[0][rounds / 2];
    printf("%-26s %8.4fms %8.4fms %8.4fms %8.4fms %8.3f %8.3f %8.1fKB %8.1fKB\n", models[m], t[0][0] * 1e3,
           t[1][0] * 1e3, t[0][rounds / 2] * 1e3, t[1][rounds / 2] * 1e3, ratio, mratio,
           (double)rill_predictor_memory_bytes(p[0]) / 1024, (double)rill_predictor_memory_bytes(p[1]) / 1024);
    geo *= ratio;
    n++;
    free(t[0]);
    free(t[1]);
    for (size_t i = 0; i < nin; i++) rill_tensor_destroy(in[i]);
    rill_predictor_destroy(p[0]);
    rill_predictor_destroy(p[1]);
  }
  double g = 1;
  if (n) {
    /* geometric mean of the best-round ratios */
    double lo = 0, hi = 10;
    for (int it = 0; it < 60; it++) {
      double mid = (lo + hi) / 2, pw = 1;
      for (int k = 0; k < n; k++) pw *= mid;
      if (pw < geo) lo = mid;
      else hi = mid;
    }
    g = lo;
  }
  printf("geometric mean of the best-round ratios (O2 / O0, lower is better): %.3f\n", g);
  return 0;
}
