/* Crash test of checkpoints: tests/io/driver_ckpt_train (a training process with a
 * checkpoint op every step, adam) is killed with SIGKILL at 120 moments (fixed seed): at a
 * random time, or at a chosen step of the commit protocol (file writes, manifest,
 * sync, rename, commit, retention) or of the training loop. The next process resumes
 * from the newest checkpoint. After every kill:
 *   - every checkpoint_<step> in the directory verifies (a commit is all or nothing);
 *   - the newest one holds exactly what the uninterrupted reference run saved at that
 *     step: the same variables, bytes, step and generator state;
 *   - every loss any process logged equals the reference's loss at that step.
 * At the end a resumed run finishes, and its last checkpoint equals the reference's. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "framework/io/checkpoint.h"
#include "framework/io/file.h"
#include "rill.h"

extern char **environ;

#define STEPS 40
#define KILLS 120

static const char *driver_path(void) { return RILL_BINARY_DIR "/io_driver_ckpt_train"; }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng_state = 0x1234567u;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* Starts the driver; kills it after delay_s (< 0: never). Returns the wait status. */
static int run_driver(const char *dir, const char *log, const char *crash, double delay_s) {
  char steps[16];
  snprintf(steps, sizeof steps, "%d", STEPS);
  char *argv[8] = {(char *)driver_path(), (char *)dir, steps, (char *)log, "--adam", NULL, NULL, NULL};
  if (crash) {
    argv[5] = "--crash";
    argv[6] = (char *)crash;
  }
  pid_t pid;
  int e = posix_spawn(&pid, driver_path(), NULL, NULL, argv, environ);
  cr_assert_eq(e, 0, "cannot start %s: %s", driver_path(), strerror(e));
  int status;
  if (delay_s >= 0) {
    double end = now_s() + delay_s;
    for (;;) {
      pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid) return status;
      if (now_s() >= end) break;
      struct timespec ts = {0, 200000};
      nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
  }
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  return status;
}

static void check_status(int status, const char *what) {
  bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  cr_assert(killed || ok, "%s: driver ended with status 0x%x (an error, not a kill)", what, status);
}

/* loss bits per step from a log; -1 where none. Lines must agree with each other. A
 * line is one write() of "loss <step> <8 hex digits>\n"; a kill during that write may
 * leave it torn (the kernel stops a write at a page boundary for a fatal signal), and
 * the next process appends its own line to the torn one: only whole lines count. */
static void read_log(const char *path, int64_t *bits, bool must_agree_with_ref, const int64_t *ref) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[128];
  while (fgets(line, sizeof line, f)) {
    long long s;
    unsigned b;
    int hex_at = -1, end = -1;
    if (sscanf(line, "loss %lld %n%x%n", &s, &hex_at, &b, &end) != 2 || end - hex_at != 8 ||
        strcmp(line + end, "\n") != 0)
      continue;
    cr_assert(s >= 1 && s <= STEPS, "log step %lld out of range", s);
    if (must_agree_with_ref)
      cr_assert_eq((int64_t)b, ref[s], "loss at step %lld: %08x, the uninterrupted run had %08llx", s, b,
                   (long long)ref[s]);
    else
      bits[s] = b;
  }
  fclose(f);
}

static void same_snapshot(const rill_ckpt_snapshot *a, const rill_ckpt_snapshot *b) {
  cr_assert_eq(a->step, b->step);
  cr_assert_eq(a->n, b->n, "step %lld: %zu vs %zu variables", (long long)a->step, a->n, b->n);
  cr_assert_eq(a->has_rng, b->has_rng);
  cr_assert(memcmp(a->rng, b->rng, sizeof a->rng) == 0, "step %lld: generator states differ",
            (long long)a->step);
  /* program hashes differ: the reference's checkpoint op keeps every checkpoint */
  for (size_t i = 0; i < a->n; i++) {
    cr_assert_str_eq(a->names[i], b->names[i]);
    size_t na = rill_tensor_nbytes(&a->tensors[i]), nb = rill_tensor_nbytes(&b->tensors[i]);
    cr_assert_eq(na, nb);
    cr_assert(memcmp(rill_tensor_ptr(&a->tensors[i]), rill_tensor_ptr(&b->tensors[i]), na) == 0,
              "step %lld: variable '%s' differs from the uninterrupted run", (long long)a->step,
              a->names[i]);
  }
}

static void check_dir(const char *dir, const char *ref_dir, int64_t *latest) {
  rill_ckpt_listing l;
  rill_status *st = rill_ckpt_list(dir, &l);
  cr_assert_null(st, "%s", rill_status_message(st));
  for (size_t i = 0; i < l.n; i++)
    cr_assert_null(l.items[i].problem, "committed checkpoint '%s' does not verify: %s", l.items[i].path,
                   rill_status_message(l.items[i].problem));
  *latest = l.n ? l.items[0].step : 0;
  rill_ckpt_listing_clear(&l);
  if (!*latest) return;
  rill_ckpt_snapshot got, want;
  rill_ckpt_snapshot_init(&got);
  rill_ckpt_snapshot_init(&want);
  cr_assert_null(rill_ckpt_load_latest(dir, &got, NULL));
  char path[512];
  snprintf(path, sizeof path, "%s/checkpoint_%lld", ref_dir, (long long)*latest);
  st = rill_ckpt_read(path, &want);
  cr_assert_null(st, "%s", rill_status_message(st));
  same_snapshot(&got, &want);
  rill_ckpt_snapshot_clear(&got);
  rill_ckpt_snapshot_clear(&want);
}

static char *make_root(void) {
  static char root[256];
  const char *base = rill_path_is_dir("/dev/shm") && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(root, sizeof root, "%s/rill-ckpt-crash-XXXXXX", base);
  cr_assert_not_null(mkdtemp(root));
  return root;
}

Test(checkpoint_crash, every_kill_leaves_a_verified_checkpoint_and_resume_is_exact, .timeout = 600) {
  char *root = make_root();
  char ref_dir[300], ref_log[300], dir[300], log[300];
  snprintf(ref_dir, sizeof ref_dir, "%s/ref", root);
  snprintf(ref_log, sizeof ref_log, "%s/ref.log", root);
  snprintf(dir, sizeof dir, "%s/run", root);
  snprintf(log, sizeof log, "%s/run.log", root);
  double t0 = now_s();
  /* The reference keeps every checkpoint (--keep 0); the killed runs keep 2, so their
   * retention runs too. */
  {
    char steps[16];
    snprintf(steps, sizeof steps, "%d", STEPS);
    char *argv[] = {(char *)driver_path(), ref_dir, steps, ref_log, "--adam", "--keep", "0", NULL};
    pid_t pid;
    cr_assert_eq(posix_spawn(&pid, driver_path(), NULL, NULL, argv, environ), 0);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reference run failed (0x%x)", status);
  }
  double ref_time = now_s() - t0;
  int64_t ref[STEPS + 1];
  for (int i = 0; i <= STEPS; i++) ref[i] = -1;
  read_log(ref_log, ref, false, NULL);
  for (int i = 1; i <= STEPS; i++) cr_assert_neq(ref[i], -1, "reference logged no loss at step %d", i);

  static const char *phases[] = {"write", "manifest", "sync", "rename", "committed", "retention", "step"};
  int by_phase[7] = {0}, by_time = 0, completed = 0, resumed_from_checkpoint = 0;
  for (int k = 0; k < KILLS; k++) {
    char crash[48];
    const char *crash_arg = NULL;
    double delay = -1;
    int ph = -1;
    int64_t before;
    check_dir(dir, ref_dir, &before);
    if (rnd() % 2) {
      delay = (double)(rnd() % 1000) / 1000.0 * ref_time;
      by_time++;
    } else {
      /* Phases are counted from the process's start, and N stays within the steps this
       * process has left (it resumes after `before`), so every phase kill lands
       * whatever the timed kills before it left behind. */
      ph = (int)(rnd() % 7);
      long left = STEPS - (long)before > 0 ? STEPS - (long)before : 1;
      long span = left < STEPS / 3 ? left : STEPS / 3;
      long n = 1 + (long)(rnd() % (unsigned long)(ph == 0 ? left * 8 : span));
      snprintf(crash, sizeof crash, "%s:%ld", phases[ph], n);
      crash_arg = crash;
    }
    int status = run_driver(dir, log, crash_arg, delay);
    check_status(status, crash_arg ? crash_arg : "timed kill");
    if (WIFSIGNALED(status) && ph >= 0) by_phase[ph]++;
    if (before) resumed_from_checkpoint++;
    int64_t latest;
    check_dir(dir, ref_dir, &latest);
    read_log(log, NULL, true, ref);
    if (WIFEXITED(status)) {
      /* Finished: start over so later kills land in a run again. */
      completed++;
      cr_assert_eq(latest, STEPS);
      cr_assert_null(rill_dir_remove_tree(dir));
    }
  }
  /* Finish from wherever the last kill left it. */
  int status = run_driver(dir, log, NULL, -1);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "final resumed run failed (0x%x)", status);
  int64_t latest;
  check_dir(dir, ref_dir, &latest);
  cr_assert_eq(latest, STEPS);
  read_log(log, NULL, true, ref);
  double total = now_s() - t0;
  fprintf(stderr,
          "checkpoint_crash: %d kills (%d timed; by phase: write %d, manifest %d, sync %d, rename %d, "
          "committed %d, retention %d, step %d), %d resumed from a checkpoint, %d runs finished, "
          "%.1f s (reference run %.0f ms)\n",
          KILLS, by_time, by_phase[0], by_phase[1], by_phase[2], by_phase[3], by_phase[4], by_phase[5],
          by_phase[6], resumed_from_checkpoint, completed, total, ref_time * 1e3);
  cr_assert_gt(resumed_from_checkpoint, KILLS / 2);
  for (int p = 0; p < 7; p++) cr_assert_gt(by_phase[p], 0, "no kill landed in phase %s", phases[p]);
  cr_assert_null(rill_dir_remove_tree(root));
}
