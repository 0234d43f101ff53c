/* Checkpoint costs, each against a baseline measured in the same run:
 *
 *   1. step ratio: the MLP training step (ckpt_mlp.h: 784-1024-1024-4, batch 256, sgd)
 *      with a checkpoint op due every step, over the same step with the op absent.
 *      Target <= 1.02 when the disk keeps up (the write runs on the executor's
 *      background thread while the next step computes; the run pays the snapshot).
 *   2. blocking ratio: the time the checkpoint op spends inside a run (snapshot into
 *      the staging buffers, rill_checkpoint_stats.last_snapshot_s) over one memcpy of
 *      the same bytes between buffers allocated and touched before (caches swept, as
 *      after a training step). Target <= 1.2.
 *   3. persist ratio: bytes per second of a checkpoint write (temp directory, one file
 *      per variable, CRC32C, manifest, fsyncs, rename, retention) over a raw
 *      write() + fsync() of the same bytes into one file of the same directory.
 *      Target >= 0.8.
 *
 * Rounds of the two sides are interleaved; medians are printed (the machine is shared).
 * usage: bench_checkpoint [DIR] (default: a fresh directory under TMPDIR or /tmp; pass
 * one on the disk you care about). */
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
#define ROUNDS 12
#define STEPS_PER_ROUND 3

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
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

  double t_with[ROUNDS], t_without[ROUNDS], snap[ROUNDS * STEPS_PER_ROUND], persist[ROUNDS * STEPS_PER_ROUND],
      wait[ROUNDS * STEPS_PER_ROUND];
  size_t ns = 0;
  rill_checkpoint_stats stats;
  for (int r = 0; r < ROUNDS; r++) {
    double t0 = now();
    for (int k = 0; k < STEPS_PER_ROUND; k++) CK(ckpt_mlp_step(&without, ++step_without, &loss));
    t_without[r] = (now() - t0) / STEPS_PER_ROUND;
    t0 = now();
    for (int k = 0; k < STEPS_PER_ROUND; k++) {
      CK(ckpt_mlp_step(&with, ++step_with, &loss));
      CK(rill_executor_checkpoint_stats(with.exe, dir, &stats));
      snap[ns] = stats.last_snapshot_s;
      wait[ns] = stats.last_wait_s;
      persist[ns++] = stats.last_persist_s; /* of the one before (or this one) */
    }
    t_with[r] = (now() - t0) / STEPS_PER_ROUND;
  }
  CK(rill_executor_flush(with.exe));
  CK(rill_executor_checkpoint_stats(with.exe, dir, &stats));
  uint64_t bytes = stats.last_bytes;
  double m_with = median(t_with, ROUNDS), m_without = median(t_without, ROUNDS);
  double m_snap = median(snap, ns), m_wait = median(wait, ns), m_persist_train = median(persist, ns);
  printf("bench_checkpoint: MLP %d-%d-%d-%d, batch %d, sgd; checkpoint %.1f MiB in %s\n", IN, HIDDEN,
         HIDDEN, CKPT_MLP_CLASSES, BATCH, (double)bytes / (1 << 20), dir);
  printf("step with a checkpoint every step: %.2f ms, without: %.2f ms, ratio %.3f (target <= 1.02)"
         " [op waited for the previous write: median %.2f ms; background write %.1f ms]\n",
         m_with * 1e3, m_without * 1e3, m_with / m_without, m_wait * 1e3, m_persist_train * 1e3);

  /* 2. blocking time vs memcpy of the same bytes (warm destination) */
  size_t data_bytes = 0;
  rill_ckpt_snapshot probe;
  rill_ckpt_snapshot_init(&probe);
  {
    char last[700];
    snprintf(last, sizeof last, "%s/checkpoint_%lld", dir, (long long)stats.last_step);
    CK(rill_ckpt_read(last, &probe));
    for (size_t i = 0; i < probe.n; i++) data_bytes += rill_tensor_nbytes(&probe.tensors[i]);
  }
  char *src = malloc(data_bytes), *dst = malloc(data_bytes);
  memset(src, 1, data_bytes);
  memset(dst, 2, data_bytes);
  double mc[ROUNDS * STEPS_PER_ROUND];
  /* The snapshot copies after a training step has gone through 100+ MiB: the cache
   * holds neither side. The baseline copies in the same state. */
  size_t sweep_n = (size_t)128 << 20;
  char *sweep = malloc(sweep_n);
  for (size_t i = 0; i < ns; i++) {
    memset(sweep, (int)i, sweep_n);
    double t0 = now();
    memcpy(dst, src, data_bytes);
    mc[i] = now() - t0;
    src[i % data_bytes] = dst[(i * 7) % data_bytes]; /* keep the copies */
  }
  double m_mc = median(mc, ns);
  free(sweep);
  printf("blocking time per checkpoint: %.3f ms, memcpy of the same %.1f MiB: %.3f ms, ratio %.3f "
         "(target <= 1.2)\n",
         m_snap * 1e3, (double)data_bytes / (1 << 20), m_mc * 1e3, m_snap / m_mc);

  /* 3. the write itself, alone, vs raw write + fsync of the same bytes */
  char pdir[600];
  snprintf(pdir, sizeof pdir, "%s/persist", root);
  CK(rill_dir_make(pdir));
  double tp[ROUNDS], tr[ROUNDS];
  uint64_t pbytes = 0;
  for (int r = 0; r < ROUNDS; r++) {
    probe.step = r + 1;
    double t0 = now();
    CK(rill_ckpt_write(pdir, &probe, 2, &pbytes));
    tp[r] = now() - t0;
    tr[r] = raw_write(pdir, src, (size_t)pbytes);
  }
  double m_tp = median(tp, ROUNDS), m_tr = median(tr, ROUNDS);
  double bw_p = (double)pbytes / m_tp / (1 << 20), bw_r = (double)pbytes / m_tr / (1 << 20);
  printf("persist: %.1f MiB/s (%.1f ms per checkpoint), raw write+fsync: %.1f MiB/s, ratio %.3f "
         "(target >= 0.8)\n",
         bw_p, m_tp * 1e3, bw_r, bw_p / bw_r);
  printf("RESULT step_ratio=%.3f blocking_ratio=%.3f persist_ratio=%.3f\n", m_with / m_without,
         m_snap / m_mc, bw_p / bw_r);
  rill_ckpt_snapshot_clear(&probe);
  free(src);
  free(dst);
  ckpt_mlp_destroy(&with);
  ckpt_mlp_destroy(&without);
  rill_status_destroy(rill_dir_remove_tree(root));
  return 0;
}
