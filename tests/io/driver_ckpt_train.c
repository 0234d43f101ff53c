/* Crash driver for tests/io/test_checkpoint_crash.c: trains the checkpointed MLP of
 * ckpt_mlp.h, resuming from the newest verified checkpoint in DIR if there is one,
 * up to STEPS steps, and appends one line per step to LOG:
 *   loss <step> <float bits in hex>
 * Options:
 *   --crash PHASE:N  SIGKILL itself at the Nth time the commit protocol reaches PHASE
 *                    (write, manifest, sync, rename, committed, retention), or at the
 *                    end of the Nth step this process runs with PHASE "step" (the
 *                    write of that step is then queued or running)
 *   --keep K         max_to_keep (default 2)
 *   --every N        every_n_steps (default 1)
 *   --adam           adam instead of sgd
 *   --parallel       the parallel schedule
 * Exit status 0 when STEPS were reached, 1 on any error (printed). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "framework/io/checkpoint.h"
#include "tests/io/ckpt_mlp.h"

static const char *crash_phase;
static long crash_at, crash_seen;

static void crash_hook(const char *phase, int64_t step) {
  (void)step;
  if (crash_phase && strcmp(phase, crash_phase) == 0 && ++crash_seen == crash_at) raise(SIGKILL);
}

static int fail(rill_status *st, const char *what) {
  fprintf(stderr, "driver_ckpt_train: %s: %s\n", what, rill_status_message(st));
  rill_status_destroy(st);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s DIR STEPS LOG [--crash PHASE:N] [--keep K] [--every N] [--adam] [--parallel]\n",
            argv[0]);
    return 2;
  }
  const char *dir = argv[1], *log_path = argv[3];
  int64_t steps = strtoll(argv[2], NULL, 10);
  rill_checkpoint_options opt = rill_checkpoint_default_options();
  opt.max_to_keep = 2;
  opt.every_n_steps = 1;
  tu_opt kind = TU_SGD;
  rill_schedule sched = RILL_SCHEDULE_SEQUENTIAL;
  static char phase[32];
  for (int i = 4; i < argc; i++) {
    if (strcmp(argv[i], "--crash") == 0 && i + 1 < argc) {
      const char *colon = strchr(argv[++i], ':');
      if (!colon || (size_t)(colon - argv[i]) >= sizeof phase) return 2;
      memcpy(phase, argv[i], (size_t)(colon - argv[i]));
      crash_phase = phase;
      crash_at = strtol(colon + 1, NULL, 10);
    } else if (strcmp(argv[i], "--keep") == 0 && i + 1 < argc) {
      opt.max_to_keep = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--every") == 0 && i + 1 < argc) {
      opt.every_n_steps = atoll(argv[++i]);
    } else if (strcmp(argv[i], "--adam") == 0) {
      kind = TU_ADAM;
    } else if (strcmp(argv[i], "--parallel") == 0) {
      sched = RILL_SCHEDULE_PARALLEL;
    } else {
      fprintf(stderr, "driver_ckpt_train: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  if (crash_phase) rill_ckpt_set_test_hook(crash_hook);
  int log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    perror(log_path);
    return 1;
  }
  ckpt_mlp m;
  rill_status *st = ckpt_mlp_create(&m, 8, 16, 32, kind, dir, &opt, sched);
  if (st) return fail(st, "build");
  rill_checkpoint_manager *mgr = NULL;
  if ((st = rill_checkpoint_manager_create(dir, &opt, &mgr))) return fail(st, "manager");
  int64_t start = 0;
  char *report = NULL;
  st = rill_checkpoint_manager_load(mgr, m.main, m.scope, m.exe, &start, &report);
  if (st && rill_status_code(st) == RILL_NOT_FOUND) {
    rill_status_destroy(st);
    st = NULL;
    start = 0;
  }
  if (st) return fail(st, "load");
  if (report) {
    fputs(report, stderr);
    rill_free_buffer(report);
  }
  if (ckpt_mlp_counter(&m) != start) {
    fprintf(stderr, "driver_ckpt_train: counter %lld after loading step %lld\n",
            (long long)ckpt_mlp_counter(&m), (long long)start);
    return 1;
  }
  for (int64_t s = start + 1; s <= steps; s++) {
    float loss;
    if ((st = ckpt_mlp_step(&m, s, &loss))) return fail(st, "step");
    uint32_t bits;
    memcpy(&bits, &loss, 4);
    char line[64];
    int n = snprintf(line, sizeof line, "loss %lld %08x\n", (long long)s, bits);
    if (write(log_fd, line, (size_t)n) != n) {
      perror("log");
      return 1;
    }
    if (crash_phase && strcmp(crash_phase, "step") == 0 && s - start == crash_at) raise(SIGKILL);
  }
  if ((st = rill_executor_flush(m.exe))) return fail(st, "flush");
  rill_checkpoint_manager_destroy(mgr);
  ckpt_mlp_destroy(&m);
  close(log_fd);
  return 0;
}
