/* Checkpoint costs, each against a baseline measured in the same run:
 *
 *   1. step ratio: the MLP training step (ckpt_mlp.h: 784-1024-1024-4, batch 256, sgd)
 *      with a checkpoint op due every step, over the same step with the op absent.
 *      Target <= 1.02 when the disk keeps up (the write runs on the executor's
 *      background thread while the next step computes; the run pays for sharing the
 *      large tensors and copying the small ones).
 *   2. blocking ratio: the time the checkpoint op spends inside a run (the snapshot:
 *      large tensors shared, small ones copied into staging buffers,
 *      rill_checkpoint_stats.last_snapshot_s) over a memcpy of the same bytes (the
 *      same variables, right after a step of the model without the op, into a buffer
 *      written before). Target <= 1.2.
 *   3. persist ratio: bytes per second of a checkpoint write (temp directory, one file
 *      per variable, CRC32C, manifest, fsyncs, rename, retention) over a raw
 *      write() + fsync() of the same bytes into one file of the same directory.
 *      Target >= 0.8. Also the CPU time of the thread that writes (file writes into the
 *      page cache, CRC32C; not the kernel's writeback) per checkpoint: what a write
 *      takes from a step that keeps every core busy.
 *
 * Rounds of the two sides are interleaved (the machine is shared). The step ratio is
 * the fastest round of each side (other tenants' load only ever adds time, and a round
 * with a checkpoint every step pays for the write in every round), the medians are
 * printed beside it; the other figures are medians.
 * usage: bench_checkpoint [DIR] (default: a fresh directory under TMPDIR or /tmp; pass
 * one on the disk you care about). */
#include <cblas.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "framework/io/checkpoint.h"
#include "framework/io/file.h"
#include "tests/io/ckpt_mlp.h"

#define BATCH 256
#define IN 784
#define HIDDEN 1024
#define ROUNDS 24
#define STEPS_PER_ROUND 3

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void check(rill_status *st, const char *what) {
  if (!st) return;
  fprintf(stderr, "bench_checkpoint: %s: %s\n", what, rill_status_message(st));
  exit(1);
}
#define CK(expr) check((expr), #expr)

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double least(const double *v, size_t n) {
  double m = v[0];
  for (size_t i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
  return m;
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A raw write of `n` bytes and an fsync, into a new file of `dir`. */
static double raw_write(const char *dir, const void *data, size_t n) {
  char path[800];
  snprintf(path, sizeof path, "%s/raw.bin", dir);
  double t0 = now();
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    perror(path);
    exit(1);
  }
  const char *p = data;
  size_t left = n;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w <= 0) {
      perror("write");
      exit(1);
    }
    p += w;
    left -= (size_t)w;
  }
  if (fsync(fd) != 0) perror("fsync");
  close(fd);
  double t = now() - t0;
  unlink(path);
  return t;
}

typedef struct step_figures {
  double with, without;           /* medians of the rounds */
  double best_with, best_without; /* the fastest round of each side */
  double snap, wait, persist, copy;
} step_figures;

static char *copy_dst;
static size_t copy_cap;

/* The baseline of the op's time in the run: right after a step of the model without
 * the op (so in the cache state the op sees), one memcpy per persistable variable of
 * the same bytes into a buffer written before. */
static double copy_after_step(ckpt_mlp *m) {
  const rill_block_desc *b = &m->main->blocks[0];
  rill_tensor *ts[64];
  size_t n = 0, bytes = 0;
  for (size_t i = 0; i < b->nvars && n < 64; i++) {
    if (!b->vars[i].persistable || !b->vars[i].has_tensor) continue;
    if (rill_scope_get_tensor(m->scope, b->vars[i].name, &ts[n])) continue;
    bytes += rill_tensor_byte_size(ts[n++]);
  }
  if (bytes > copy_cap) {
    free(copy_dst);
    copy_dst = malloc(bytes);
    memset(copy_dst, 1, bytes);
    copy_cap = bytes;
  }
  double t0 = now();
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    size_t nb = rill_tensor_byte_size(ts[i]);
    memcpy(copy_dst + off, rill_tensor_data(ts[i]), nb);
    off += nb;
  }
  double t = now() - t0;
  for (size_t i = 0; i < n; i++) rill_tensor_destroy(ts[i]); /* before the next step */
  return t;
}

/* Interleaved rounds of steps with and without the checkpoint op; medians. */
static step_figures measure_steps(ckpt_mlp *with, ckpt_mlp *without, const char *dir, int64_t *sw,
                                  int64_t *swo) {
  double t_with[ROUNDS], t_without[ROUNDS], snap[ROUNDS * STEPS_PER_ROUND],
      persist[ROUNDS * STEPS_PER_ROUND], wait[ROUNDS * STEPS_PER_ROUND], copy[ROUNDS];
  size_t ns = 0;
  float loss;
  rill_checkpoint_stats stats;
  for (int r = 0; r < ROUNDS; r++) {
    double t0 = now();
    for (int k = 0; k < STEPS_PER_ROUND; k++) CK(ckpt_mlp_step(without, ++*swo, &loss));
    t_without[r] = (now() - t0) / STEPS_PER_ROUND;
    copy[r] = copy_after_step(without);
    t0 = now();
    for (int k = 0; k < STEPS_PER_ROUND; k++) {
      CK(ckpt_mlp_step(with, ++*sw, &loss));
      CK(rill_executor_checkpoint_stats(with->exe, dir, &stats));
      snap[ns] = stats.last_snapshot_s;
      wait[ns] = stats.last_wait_s;
      persist[ns++] = stats.last_persist_s; /* of the one before (or this one) */
    }
    t_with[r] = (now() - t0) / STEPS_PER_ROUND;
  }
  CK(rill_executor_flush(with->exe));
  step_figures f = {median(t_with, ROUNDS), median(t_without, ROUNDS), least(t_with, ROUNDS),
                    least(t_without, ROUNDS), median(snap, ns), median(wait, ns), median(persist, ns),
                    median(copy, ROUNDS)};
  return f;
}

static void print_steps(const step_figures *f, int threads, const char *what) {
  printf("step with a checkpoint every step: %.2f ms, without: %.2f ms, ratio %.3f (target <= 1.02; "
         "medians %.2f / %.2f ms, ratio %.3f) [%d BLAS thread%s, %s; the op waited for the previous "
         "write: median %.2f ms; background write %.1f ms]\n",
         f->best_with * 1e3, f->best_without * 1e3, f->best_with / f->best_without, f->with * 1e3,
         f->without * 1e3, f->with / f->without, threads, threads == 1 ? "" : "s", what, f->wait * 1e3,
         f->persist * 1e3);
}

int main(int argc, char **argv) {
  char root[512];
  if (argc > 1) {
    snprintf(root, sizeof root, "%s", argv[1]);
    CK(rill_dir_make(root));
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/bench_checkpoint_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) {
      perror(root);
      return 1;
    }
  }
  char dir[600];
  snprintf(dir, sizeof dir, "%s/ckpt", root);
  rill_checkpoint_options o = rill_checkpoint_default_options();
  o.max_to_keep = 2;
  ckpt_mlp with, without;
  CK(ckpt_mlp_create(&with, BATCH, IN, HIDDEN, TU_SGD, dir, &o, RILL_SCHEDULE_SEQUENTIAL));
  CK(ckpt_mlp_create(&without, BATCH, IN, HIDDEN, TU_SGD, NULL, NULL, RILL_SCHEDULE_SEQUENTIAL));
  float loss;
  int64_t step_with = 0, step_without = 0;
  for (int w = 0; w < 2; w++) { /* warm up: plans, buffers, staging */
    CK(ckpt_mlp_step(&with, ++step_with, &loss));
    CK(ckpt_mlp_step(&without, ++step_without, &loss));
  }
  CK(rill_executor_flush(with.exe));

  step_figures f1 = measure_steps(&with, &without, dir, &step_with, &step_without);
  rill_checkpoint_stats stats;
  CK(rill_executor_checkpoint_stats(with.exe, dir, &stats));
  uint64_t bytes = stats.last_bytes;
  printf("bench_checkpoint: MLP %d-%d-%d-%d, batch %d, sgd; checkpoint %.1f MiB in %s\n", IN, HIDDEN,
         HIDDEN, CKPT_MLP_CLASSES, BATCH, (double)bytes / (1 << 20), dir);
  int blas = openblas_get_num_threads();
  print_steps(&f1, blas, "every core");
  step_figures f2 = f1;
  if (blas > 1) {
    /* The write needs some CPU (CRC32C, copying into the page cache): with a core left
     * to it, it overlaps the step instead of taking from it. */
    openblas_set_num_threads(blas - 1);
    f2 = measure_steps(&with, &without, dir, &step_with, &step_without);
    print_steps(&f2, blas - 1, "one core left for the write");
    openblas_set_num_threads(blas);
  }
  double m_snap = f1.snap;
  CK(rill_executor_checkpoint_stats(with.exe, dir, &stats)); /* the newest checkpoint */

  /* 2. blocking time vs memcpy of the same bytes */
  size_t data_bytes = 0;
  rill_ckpt_snapshot probe;
  rill_ckpt_snapshot_init(&probe);
  {
    char last[700];
    snprintf(last, sizeof last, "%s/checkpoint_%lld", dir, (long long)stats.last_step);
    CK(rill_ckpt_read(last, &probe));
    for (size_t i = 0; i < probe.n; i++) data_bytes += rill_tensor_nbytes(&probe.tensors[i]);
  }
  double m_mc = f1.copy;
  printf("blocking time per checkpoint: %.3f ms, memcpy of the same %.1f MiB: %.3f ms, ratio %.3f "
         "(target <= 1.2)\n",
         m_snap * 1e3, (double)data_bytes / (1 << 20), m_mc * 1e3, m_snap / m_mc);

  /* 3. the write itself, alone, vs raw write + fsync of the same bytes */
  char pdir[600];
  snprintf(pdir, sizeof pdir, "%s/persist", root);
  CK(rill_dir_make(pdir));
  double tp[ROUNDS], tr[ROUNDS], tc[ROUNDS];
  uint64_t pbytes = 0;
  char *src = malloc(data_bytes + (1 << 20)); /* raw write side: the same byte count */
  memset(src, 1, data_bytes + (1 << 20));
  for (int r = 0; r < ROUNDS; r++) {
    probe.step = r + 1;
    double t0 = now(), c0 = thread_cpu();
    CK(rill_ckpt_write(pdir, &probe, 2, &pbytes));
    tp[r] = now() - t0;
    tc[r] = thread_cpu() - c0;
    tr[r] = raw_write(pdir, src, (size_t)pbytes);
  }
  double m_tp = median(tp, ROUNDS), m_tr = median(tr, ROUNDS);
  double bw_p = (double)pbytes / m_tp / (1 << 20), bw_r = (double)pbytes / m_tr / (1 << 20);
  printf("persist: %.1f MiB/s (%.1f ms per checkpoint), raw write+fsync: %.1f MiB/s, ratio %.3f "
         "(target >= 0.8)\n",
         bw_p, m_tp * 1e3, bw_r, bw_p / bw_r);
  double m_tc = median(tc, ROUNDS);
  printf("CPU time of the writing thread per checkpoint: %.2f ms\n", m_tc * 1e3);
  printf("RESULT step_ratio=%.3f step_ratio_core_left=%.3f step_ratio_median=%.3f "
         "step_ratio_core_left_median=%.3f blocking_ratio=%.3f persist_ratio=%.3f write_cpu_ms=%.2f\n",
         f1.best_with / f1.best_without, f2.best_with / f2.best_without, f1.with / f1.without,
         f2.with / f2.without, m_snap / m_mc, bw_p / bw_r, m_tc * 1e3);
  rill_ckpt_snapshot_clear(&probe);
  free(src);
  free(copy_dst);
  ckpt_mlp_destroy(&with);
  ckpt_mlp_destroy(&without);
  rill_status_destroy(rill_dir_remove_tree(root));
  return 0;
}
