/* Predictor clones sharing the cores: 4 clones of one model, each run by a thread of its
 * own as fast as it can, on 2 cores, with the process-wide compute pool (the default)
 * against the layout before it, measured in the same run, rounds alternating:
 *
 *   - shared: every clone's ops and kernel parts go to the one pool (one worker per
 *     core beyond the first, and none of them start while the clones' own threads
 *     hold the cores), OpenBLAS on one thread;
 *   - per executor: each clone's executor has num_threads - 1 workers of its own, the
 *     kernels' parts a second pool of workers without the core limit, and OpenBLAS its
 *     default thread count (RILL_POOL_PER_EXECUTOR, pool.h).
 *
 * Each clone has the predictor's default thread count (one per core), so each would
 * use both cores if it ran alone.
 *
 *   build/bench_clones [MODELS_DIR] [ROUNDS] [BATCH] [MODEL...]
 *
 * The process is first confined to 2 of the CPUs it may run on (sched_setaffinity),
 * so the pool, sized from the affinity mask, has 2 cores. Prints, per model, the
 * throughput (runs per second, all clones together) of each layout in its median round
 * and the median over rounds of shared / per-executor (above 1: the shared pool is
 * faster), and the CPU time the process spent per run under each (every thread's:
 * spinning workers count), with their ratio (below 1: the shared pool burns less). */
#define _GNU_SOURCE
#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "framework/exec/pool.h"
#include "framework/io/npy.h"
#include "rill.h"

#define BENCH_NAME "bench_clones"
#include "bench/bench_util.h"

enum { CLONES = 4, CORES = 2 };

static const char *const default_models[] = {"mnist_conv_bn_etienne", "paddlejs_gesture_rec",
                                             "pureboys_word2vec", "luotao1_example_mlp_2018"};

typedef struct clone_run {
  rill_predictor *p;
  const char **names;
  rill_tensor **in;
  size_t nin;
  int runs;
  pthread_barrier_t *start;
  double t0, t1; /* when this clone started and finished its runs */
} clone_run;

static void *clone_main(void *arg) {
  clone_run *c = arg;
  rill_tensor *out[8];
  size_t nout = rill_predictor_num_outputs(c->p);
  pthread_barrier_wait(c->start);
  c->t0 = now();
  for (int r = 0; r < c->runs; r++) {
    check(rill_predictor_run(c->p, c->names, c->in, c->nin, out), "run");
    for (size_t i = 0; i < nout; i++) rill_tensor_destroy(out[i]);
  }
  c->t1 = now();
  return NULL;
}

/* CPU seconds the process has used, every thread together. */
static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
         ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) * 1e-6;
}

/* Seconds for every clone to do `runs` runs, all at once: from the first clone's start
 * to the last one's end (the main thread may be descheduled meanwhile). *cpu (may be
 * NULL): the CPU seconds the process used meanwhile, the pool's workers' included. */
static double round_time(clone_run *cs, int runs, double *cpu) {
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, CLONES + 1);
  pthread_t t[CLONES];
  double c0 = cpu_seconds();
  for (int i = 0; i < CLONES; i++) {
    cs[i].runs = runs;
    cs[i].start = &start;
    if (pthread_create(&t[i], NULL, clone_main, &cs[i])) {
      fprintf(stderr, "bench_clones: cannot start a thread\n");
      exit(1);
    }
  }
  pthread_barrier_wait(&start);
  for (int i = 0; i < CLONES; i++) pthread_join(t[i], NULL);
  if (cpu) *cpu = cpu_seconds() - c0;
  double t0 = cs[0].t0, t1 = cs[0].t1;
  for (int i = 1; i < CLONES; i++) {
    if (cs[i].t0 < t0) t0 = cs[i].t0;
    if (cs[i].t1 > t1) t1 = cs[i].t1;
  }
  pthread_barrier_destroy(&start);
  return t1 - t0;
}

/* The input of the reference run, repeated `batch` times along the first dimension. */
static rill_tensor *load_input(const char *path, const char *name, int batch) {
  char f[1400];
  snprintf(f, sizeof f, "%s/refs/input_%s.npy", path, name);
  rill_tensor *one;
  check(rill_npy_load(f, &one), f);
  if (batch <= 1 || rill_tensor_ndim(one) == 0 || rill_tensor_dims(one)[0] != 1) return one;
  int64_t dims[RILL_MAX_DIMS];
  size_t nd = rill_tensor_ndim(one);
  memcpy(dims, rill_tensor_dims(one), nd * sizeof *dims);
  dims[0] = batch;
  rill_tensor *t;
  check(rill_tensor_create(rill_tensor_dtype(one), dims, nd, &t), f);
  size_t bytes = rill_tensor_byte_size(one);
  for (int b = 0; b < batch; b++) memcpy((char *)rill_tensor_data(t) + (size_t)b * bytes, rill_tensor_data(one), bytes);
  rill_tensor_destroy(one);
  return t;
}

/* The predictor and its clones, made under `layout` (an executor takes its workers
 * when it is created). */
static void open_clones(const char *path, rill_pool_mode layout, rill_predictor **p) {
  rill_pool_layout = layout;
  rill_predictor_config *c;
  check(rill_predictor_config_create(path, &c), path);
  check(rill_predictor_create(c, &p[0]), path);
  rill_predictor_config_destroy(c);
  for (int i = 1; i < CLONES; i++) check(rill_predictor_clone(p[0], &p[i]), "clone");
}

/* Sets the layout of the next round: the parts pool and OpenBLAS's threads. */
static void use_layout(rill_pool_mode layout, int blas_threads) {
  rill_pool_layout = layout;
  openblas_set_num_threads(layout == RILL_POOL_PER_EXECUTOR ? blas_threads : 1);
}

/* Keeps the process on the first CORES CPUs of its affinity mask; returns how many it
 * has now. */
static int confine(void) {
  cpu_set_t set, mine;
  if (sched_getaffinity(0, sizeof set, &set)) return 0;
  CPU_ZERO(&mine);
  int n = 0;
  for (int c = 0; c < CPU_SETSIZE && n < CORES; c++)
    if (CPU_ISSET(c, &set)) {
      CPU_SET(c, &mine);
      n++;
    }
  if (sched_setaffinity(0, sizeof mine, &mine)) return CPU_COUNT(&set);
  return n;
}

int main(int argc, char **argv) {
  /* OpenBLAS's own thread count, before the CPU backend sets it to one */
  int blas_threads = openblas_get_num_threads();
  int cores = confine();
  if (blas_threads > cores) blas_threads = cores;
  char dir[1024];
  if (argc > 1 && argv[1][0]) {
    snprintf(dir, sizeof dir, "%s", argv[1]);
  } else {
    snprintf(dir, sizeof dir, "%s", RILL_SHARED_DIR "/models");
  }
  int rounds = argc > 2 ? atoi(argv[2]) : 9;
  if (rounds < 1) rounds = 1;
  int batch = argc > 3 ? atoi(argv[3]) : 1;
  if (batch < 1) batch = 1;
  const char *const *models = default_models;
  size_t nmodels = sizeof default_models / sizeof *default_models;
  if (argc > 4) {
    models = (const char *const *)argv + 4;
    nmodels = (size_t)(argc - 4);
  }
  printf("%d predictor clones on %d cores (pool: %d cores, %d workers; OpenBLAS per executor: %d threads), "
         "batch %d, %d rounds\n",
         CLONES, cores, rill_pool_cores(), rill_pool_workers(rill_pool_shared()), blas_threads, batch, rounds);
  printf("%-26s %14s %14s %8s %8s %8s %10s %10s %8s\n", "model", "per-exec run/s", "shared run/s", "ratio", "low",
         "high", "old cpu ms", "new cpu ms", "cpu");
  for (size_t m = 0; m < nmodels; m++) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, models[m]);
    rill_predictor *old[CLONES], *neu[CLONES];
    open_clones(path, RILL_POOL_PER_EXECUTOR, old);
    open_clones(path, RILL_POOL_SHARED, neu);
    size_t nin = rill_predictor_num_inputs(neu[0]);
    if (nin > 8) nin = 8;
    const char *names[8];
    rill_tensor *in[8];
    for (size_t i = 0; i < nin; i++) {
      names[i] = rill_predictor_input_name(neu[0], i);
      in[i] = load_input(path, names[i], batch);
    }
    clone_run cs_old[CLONES], cs_new[CLONES];
    for (int i = 0; i < CLONES; i++) {
      cs_old[i] = (clone_run){.p = old[i], .names = names, .in = in, .nin = nin};
      cs_new[i] = (clone_run){.p = neu[i], .names = names, .in = in, .nin = nin};
    }
    /* Runs per clone per round: about 0.5 s of a round under the shared pool. */
    use_layout(RILL_POOL_SHARED, blas_threads);
    round_time(cs_new, 2, NULL);
    double one = round_time(cs_new, 5, NULL) / 5;
    int runs = (int)(0.5 / (one > 1e-7 ? one : 1e-7));
    if (runs < 2) runs = 2;
    if (runs > 100000) runs = 100000;
    use_layout(RILL_POOL_PER_EXECUTOR, blas_threads);
    round_time(cs_old, 2, NULL);
    double *t_old = calloc((size_t)rounds, sizeof(double)), *t_new = calloc((size_t)rounds, sizeof(double));
    double *ratio = calloc((size_t)rounds, sizeof(double));
    double *cpu_old = calloc((size_t)rounds, sizeof(double)), *cpu_new = calloc((size_t)rounds, sizeof(double));
    double *cpu_ratio = calloc((size_t)rounds, sizeof(double));
    for (int r = 0; r < rounds; r++) {
      use_layout(RILL_POOL_PER_EXECUTOR, blas_threads);
      t_old[r] = round_time(cs_old, runs, &cpu_old[r]);
      use_layout(RILL_POOL_SHARED, blas_threads);
      t_new[r] = round_time(cs_new, runs, &cpu_new[r]);
      ratio[r] = t_old[r] / t_new[r];
      cpu_ratio[r] = cpu_new[r] / cpu_old[r];
    }
    qsort(t_old, (size_t)rounds, sizeof(double), cmp_double);
    qsort(t_new, (size_t)rounds, sizeof(double), cmp_double);
    qsort(ratio, (size_t)rounds, sizeof(double), cmp_double);
    qsort(cpu_old, (size_t)rounds, sizeof(double), cmp_double);
    qsort(cpu_new, (size_t)rounds, sizeof(double), cmp_double);
    qsort(cpu_ratio, (size_t)rounds, sizeof(double), cmp_double);
    double total = (double)runs * CLONES;
    printf("%-26s %14.1f %14.1f %8.3f %8.3f %8.3f %10.3f %10.3f %8.3f\n", models[m], total / t_old[rounds / 2],
           total / t_new[rounds / 2], ratio[rounds / 2], ratio[rounds / 4], ratio[rounds - 1 - rounds / 4],
           cpu_old[rounds / 2] / total * 1e3, cpu_new[rounds / 2] / total * 1e3, cpu_ratio[rounds / 2]);
    fflush(stdout);
    free(t_old);
    free(t_new);
    free(ratio);
    free(cpu_old);
    free(cpu_new);
    free(cpu_ratio);
    for (size_t i = 0; i < nin; i++) rill_tensor_destroy(in[i]);
    for (int i = 0; i < CLONES; i++) {
      rill_predictor_destroy(old[i]);
      rill_predictor_destroy(neu[i]);
    }
  }
  use_layout(RILL_POOL_SHARED, blas_threads);
  printf("ratio: shared-pool throughput / per-executor throughput, median over rounds (low, high: "
         "quartiles); cpu ms: CPU time per run, all threads (median round); cpu: shared / per-executor CPU "
         "time, median over rounds\n");
  return 0;
}
