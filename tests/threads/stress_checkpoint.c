/* Checkpoints under threads (run under ThreadSanitizer by `make test`): the MLP of
 * tests/io/ckpt_mlp.h trains under the PARALLEL schedule (the checkpoint op on libuv's
 * pool, the writes on the executor's background thread) while another thread polls the
 * statistics; once with the wait policy, once skipping while a write is in flight; then
 * both again with a hidden layer whose tensors (256 KiB) the snapshot shares instead of
 * copying, so the next steps' optimizer writes race the background write's reads unless
 * the executor copies a buffer the snapshot still holds. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "framework/io/checkpoint.h"
#include "framework/io/file.h"
#include "tests/io/ckpt_mlp.h"

#define STEPS 40

typedef struct poller {
  rill_executor *exe;
  const char *dir;
  atomic_bool stop;
  long polls;
} poller;

static void *poll_stats(void *arg) {
  poller *p = arg;
  while (!atomic_load(&p->stop)) {
    rill_checkpoint_stats s;
    rill_status *st = rill_executor_checkpoint_stats(p->exe, p->dir, &s);
    rill_status_destroy(st);
    p->polls++;
    usleep(100);
  }
  return NULL;
}

static void run(const char *root, bool skip, int64_t hidden) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/%s%lld", root, skip ? "skip" : "wait", (long long)hidden);
  rill_checkpoint_options o = rill_checkpoint_default_options();
  o.skip_when_busy = skip;
  ckpt_mlp m;
  rill_status *st = ckpt_mlp_create(&m, 8, 16, hidden, TU_ADAM, dir, &o, RILL_SCHEDULE_PARALLEL);
  CHECK(!st, "%s", rill_status_message(st));
  if (st) return;
  poller p = {m.exe, dir, false, 0};
  pthread_t t;
  pthread_create(&t, NULL, poll_stats, &p);
  float loss;
  for (int s = 1; s <= STEPS && !st; s++) st = ckpt_mlp_step(&m, s, &loss);
  CHECK(!st, "%s", rill_status_message(st));
  st = rill_executor_flush(m.exe);
  CHECK(!st, "flush: %s", rill_status_message(st));
  atomic_store(&p.stop, true);
  pthread_join(t, NULL);
  rill_checkpoint_stats stats;
  st = rill_executor_checkpoint_stats(m.exe, dir, &stats);
  CHECK(!st, "stats");
  CHECK(stats.saved + stats.skipped == STEPS, "saved %llu + skipped %llu", (unsigned long long)stats.saved,
        (unsigned long long)stats.skipped);
  if (!skip) CHECK(stats.last_step == STEPS, "last step %lld", (long long)stats.last_step);
  ckpt_mlp_destroy(&m);
  rill_ckpt_listing l;
  st = rill_ckpt_list(dir, &l);
  CHECK(!st && l.n > 0, "listing");
  for (size_t i = 0; !st && i < l.n; i++)
    CHECK(!l.items[i].problem, "%s: %s", l.items[i].path, rill_status_message(l.items[i].problem));
  if (!st) rill_ckpt_listing_clear(&l);
  rill_status_destroy(st);
}

int main(void) {
  char root[] = "/tmp/rill_stress_ckpt_XXXXXX";
  if (!mkdtemp(root)) return 1;
  run(root, false, 32);
  run(root, true, 32);
  run(root, false, 256);
  run(root, true, 256);
  rill_status_destroy(rill_dir_remove_tree(root));
  return check_report();
}
