#define _GNU_SOURCE
/* Cluster snapshots (framework/io/cluster_ckpt.h): a snapshot is complete only when
 * every part is committed; the previous complete snapshot survives until a newer one
 * is complete; recovery skips damaged, incomplete and foreign snapshots naming the
 * file, and drops a process's parts newer than the snapshot it resumes from. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/io/cluster_ckpt.h"
#include "framework/io/file.h"
#include "rill.h"

static char root[256];

static void make_root(void) {
  snprintf(root, sizeof root, "%s/io_cluster_XXXXXX", RILL_BINARY_DIR);
  cr_assert_not_null(mkdtemp(root));
}

static void drop_root(void) { rill_status_destroy(rill_dir_remove_tree(root)); }

TestSuite(cluster_ckpt, .init = make_root, .fini = drop_root);

#define OK(expr)                                                          \
  do {                                                                    \
    rill_status *ok_st_ = (expr);                                         \
    cr_assert_null(ok_st_, "%s: %s", #expr, rill_status_message(ok_st_)); \
  } while (0)

static const rill_cluster_shape SHAPE = {2, 2};

/* Commits part (role, rank) of snapshot k: one tensor whose values encode k and the
 * part, so a part read back tells where it came from. */
static bool commit(rill_cluster_role role, int32_t rank, int64_t k, int32_t keep) {
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  rill_tensor t;
  rill_tensor_init(&t);
  rill_dims d = {.n = 1, .d = {4}};
  OK(rill_tensor_alloc(&t, RILL_DTYPE_FP32, &d));
  float *p = rill_tensor_ptr(&t);
  for (int i = 0; i < 4; i++) p[i] = (float)(k * 100 + role * 10 + rank) + 0.25f * (float)i;
  const char *names[] = {"w"};
  const rill_tensor *ts[] = {&t};
  OK(rill_ckpt_snapshot_take(&s, names, ts, 1, SIZE_MAX));
  s.step = k;
  bool done = false;
  OK(rill_cluster_commit_part(root, &SHAPE, role, rank, &s, keep, &done, NULL));
  rill_ckpt_snapshot_clear(&s);
  rill_tensor_clear(&t);
  return done;
}

static void commit_all(int64_t k, int32_t keep) {
  for (int32_t r = 0; r < 2; r++) commit(RILL_CLUSTER_PSERVER, r, k, keep);
  commit(RILL_CLUSTER_TRAINER, 0, k, keep);
  cr_assert(commit(RILL_CLUSTER_TRAINER, 1, k, keep), "the last part completes snapshot %lld",
            (long long)k);
}

static bool exists(const char *fmt, long long k) {
  char rel[128], path[512];
  snprintf(rel, sizeof rel, fmt, k);
  snprintf(path, sizeof path, "%s/%s", root, rel);
  return rill_path_exists(path);
}

static int64_t recover(rill_cluster_role role, int32_t rank, float *first, char *why,
                       size_t cap) {
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  rill_cluster_listing skipped = {0};
  int64_t k;
  OK(rill_cluster_recover(root, &SHAPE, role, rank, &k, &s, &skipped));
  if (why) {
    why[0] = 0;
    for (size_t i = 0; i < skipped.n; i++) {
      size_t used = strlen(why);
      snprintf(why + used, cap - used, "%s\n", rill_status_message(skipped.items[i].problem));
    }
  }
  if (k >= 0) {
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.step, k);
    if (first) *first = ((const float *)rill_tensor_ptr(&s.tensors[0]))[0];
  }
  rill_cluster_listing_clear(&skipped);
  rill_ckpt_snapshot_clear(&s);
  return k;
}

Test(cluster_ckpt, complete_only_when_every_part_is_committed) {
  cr_assert_not(commit(RILL_CLUSTER_PSERVER, 0, 5, 2));
  cr_assert_not(commit(RILL_CLUSTER_PSERVER, 1, 5, 2));
  cr_assert_not(commit(RILL_CLUSTER_TRAINER, 1, 5, 2));
  cr_assert_not(exists("snapshot_%lld", 5));
  char why[1024];
  cr_assert_eq(recover(RILL_CLUSTER_PSERVER, 0, NULL, why, sizeof why), -1);
  cr_assert(strstr(why, "snapshot_5' is missing"), "%s", why);
  /* Recovery found nothing: pserver 0 dropped its part of the incomplete snapshot. */
  cr_assert_not(exists("pserver_0/checkpoint_%lld", 5));
  cr_assert(exists("pserver_1/checkpoint_%lld", 5));

  commit_all(6, 2);
  cr_assert(exists("snapshot_%lld", 6));
  float v;
  cr_assert_eq(recover(RILL_CLUSTER_TRAINER, 1, &v, NULL, 0), 6);
  cr_assert_float_eq(v, 611.0f, 0, "trainer 1 gets its own part of snapshot 6");
  cr_assert_eq(recover(RILL_CLUSTER_PSERVER, 1, &v, NULL, 0), 6);
  cr_assert_float_eq(v, 601.0f, 0);
}

Test(cluster_ckpt, previous_complete_snapshot_kept_until_a_newer_is_complete) {
  for (int64_t k = 1; k <= 4; k++) commit_all(k, 1);
  cr_assert(exists("snapshot_%lld", 4));
  for (int64_t k = 1; k <= 3; k++) {
    cr_assert_not(exists("snapshot_%lld", k), "keep 1: snapshot %lld retired", (long long)k);
    cr_assert_not(exists("trainer_1/checkpoint_%lld", k), "the completing part retires at once");
  }
  /* A part committed before its snapshot completed retires the older ones at its next
   * commit. */
  cr_assert_not(exists("pserver_0/checkpoint_%lld", 2));
  cr_assert(exists("pserver_0/checkpoint_%lld", 3));
  /* Three of the four parts of snapshot 5: snapshot 4 must still be whole. */
  commit(RILL_CLUSTER_PSERVER, 0, 5, 1);
  commit(RILL_CLUSTER_PSERVER, 1, 5, 1);
  commit(RILL_CLUSTER_TRAINER, 0, 5, 1);
  cr_assert(exists("pserver_0/checkpoint_%lld", 4));
  cr_assert(exists("trainer_0/checkpoint_%lld", 4));
  cr_assert_not(exists("pserver_0/checkpoint_%lld", 3));
  float v;
  cr_assert_eq(recover(RILL_CLUSTER_TRAINER, 0, &v, NULL, 0), 4);
  cr_assert_float_eq(v, 410.0f, 0);
  /* Trainer 0 resumed from 4: its part of 5 is gone, so 5 can never complete from
   * the parts of the run that died. */
  cr_assert_not(exists("trainer_0/checkpoint_%lld", 5));
  cr_assert_not(commit(RILL_CLUSTER_TRAINER, 1, 5, 1));
  cr_assert_not(exists("snapshot_%lld", 5));
}

static void damage(const char *rel, bool truncate_it) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  int fd = open(path, O_RDWR);
  cr_assert_geq(fd, 0, "%s", path);
  struct stat sb;
  fstat(fd, &sb);
  if (truncate_it) {
    cr_assert_eq(ftruncate(fd, sb.st_size / 2), 0);
  } else {
    unsigned char c;
    cr_assert_eq(pread(fd, &c, 1, sb.st_size - 3), 1);
    c ^= 0x10;
    cr_assert_eq(pwrite(fd, &c, 1, sb.st_size - 3), 1);
  }
  close(fd);
}

Test(cluster_ckpt, damaged_parts_and_manifests_fall_back_to_the_previous_snapshot) {
  for (int64_t k = 1; k <= 4; k++) commit_all(k, 0);
  char why[2048];
  damage("pserver_1/checkpoint_4/w", false);
  cr_assert_eq(recover(RILL_CLUSTER_PSERVER, 0, NULL, why, sizeof why), 3);
  cr_assert(strstr(why, "pserver_1/checkpoint_4/w"), "names the flipped file: %s", why);
  damage("trainer_0/checkpoint_3/w", true);
  cr_assert_eq(recover(RILL_CLUSTER_TRAINER, 1, NULL, why, sizeof why), 2);
  cr_assert(strstr(why, "trainer_0/checkpoint_3/w"), "names the truncated file: %s", why);
  damage("snapshot_2", false);
  cr_assert_eq(recover(RILL_CLUSTER_PSERVER, 1, NULL, why, sizeof why), 1);
  cr_assert(strstr(why, "snapshot_2"), "names the manifest: %s", why);
  char m[512];
  snprintf(m, sizeof m, "%s/snapshot_1", root);
  cr_assert_eq(unlink(m), 0);
  cr_assert_eq(recover(RILL_CLUSTER_PSERVER, 1, NULL, why, sizeof why), -1);
  cr_assert(strstr(why, "snapshot_1' is missing"), "%s", why);
}

Test(cluster_ckpt, a_snapshot_of_another_job_shape_is_skipped) {
  commit_all(3, 0);
  rill_cluster_shape other = {3, 2};
  rill_cluster_listing skipped = {0};
  int64_t k;
  OK(rill_cluster_recover(root, &other, RILL_CLUSTER_PSERVER, 2, &k, NULL, &skipped));
  cr_assert_eq(k, -1);
  cr_assert_eq(skipped.n, 1);
  cr_assert(strstr(rill_status_message(skipped.items[0].problem), "2 pservers and 2 trainers"),
            "%s", rill_status_message(skipped.items[0].problem));
  rill_cluster_listing_clear(&skipped);
}

Test(cluster_ckpt, listing_shows_parts_present_and_verified) {
  commit_all(1, 0);
  commit(RILL_CLUSTER_PSERVER, 0, 2, 0);
  damage("pserver_1/checkpoint_1/w", false);
  cr_assert(rill_cluster_dir_is_cluster_impl(root));
  rill_cluster_listing l;
  OK(rill_cluster_scan(root, &l));
  cr_assert_eq(l.n, 2);
  cr_assert_eq(l.items[0].step, 2);
  cr_assert_not(l.items[0].has_manifest);
  cr_assert_eq(l.items[0].nparts, 4);
  cr_assert(l.items[0].parts[0].present);
  cr_assert_not(l.items[0].parts[1].present);
  cr_assert_eq(l.items[1].step, 1);
  cr_assert(l.items[1].has_manifest);
  cr_assert_not(l.items[1].complete);
  cr_assert_null(l.items[1].parts[0].problem);
  cr_assert_not_null(l.items[1].parts[1].problem);
  cr_assert_eq(l.shape.pservers, 2);
  rill_cluster_listing_clear(&l);
}

Test(cluster_ckpt, bad_shapes_and_ranks_are_errors) {
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  rill_cluster_shape none = {0, 2};
  rill_status *st = rill_cluster_commit_part(root, &none, RILL_CLUSTER_PSERVER, 0, &s, 0, NULL, NULL);
  cr_assert_not_null(st);
  rill_status_destroy(st);
  st = rill_cluster_commit_part(root, &SHAPE, RILL_CLUSTER_TRAINER, 2, &s, 0, NULL, NULL);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "trainer rank 2"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  cr_assert_not(rill_cluster_dir_is_cluster_impl(root));
}

/* One part of `floats` values; the status of the commit (not asserted). */
static rill_status *commit_big(rill_cluster_role role, int32_t rank, int64_t k, size_t floats) {
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  rill_tensor t;
  rill_tensor_init(&t);
  rill_dims d = {.n = 1, .d = {(int64_t)floats}};
  OK(rill_tensor_alloc(&t, RILL_DTYPE_FP32, &d));
  float *p = rill_tensor_ptr(&t);
  for (size_t i = 0; i < floats; i++) p[i] = (float)(k + (int64_t)i);
  const char *names[] = {"w"};
  const rill_tensor *ts[] = {&t};
  OK(rill_ckpt_snapshot_take(&s, names, ts, 1, SIZE_MAX));
  s.step = k;
  rill_status *st = rill_cluster_commit_part(root, &SHAPE, role, rank, &s, 2, NULL, NULL);
  rill_ckpt_snapshot_clear(&s);
  rill_tensor_clear(&t);
  return st;
}

/* A real full disk (a 256 KiB tmpfs; a snapshot takes about 100 KiB): the part that
 * does not fit fails naming its file, and the newest complete snapshot stays whole and
 * is the one recovery uses. Needs a private mount namespace; skipped where mounting is
 * not allowed. */
Test(cluster_ckpt, full_disk_fails_the_part_and_keeps_the_last_complete_snapshot) {
  if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
    cr_skip_test("cannot make a private mount namespace");
  if (mount("tmpfs", root, "tmpfs", 0, "size=256k") != 0) cr_skip_test("cannot mount a tmpfs");
  rill_status *failed = NULL;
  int64_t k = 1, last_complete = -1;
  for (; k <= 20 && !failed; k++) {
    for (int32_t i = 0; i < 4 && !failed; i++)
      failed = commit_big(i < 2 ? RILL_CLUSTER_PSERVER : RILL_CLUSTER_TRAINER, i % 2, k, 6000);
    if (!failed) last_complete = k;
  }
  cr_assert_not_null(failed, "the tmpfs never filled up");
  const char *msg = rill_status_message(failed);
  cr_assert(strstr(msg, "space") && strstr(msg, root), "names the file and the cause: %s", msg);
  rill_status_destroy(failed);
  cr_assert_geq(last_complete, 1);
  float v;
  cr_assert_eq(recover(RILL_CLUSTER_PSERVER, 1, &v, NULL, 0), last_complete);
  cr_assert_float_eq(v, (float)last_complete, 0);
  umount(root);
}

/* The pserver's writing thread: each submit commits a part in the background; a failed
 * write is reported by a later submit (at the latest the one that has to wait for it)
 * or by close, naming the directory. */
Test(cluster_ckpt, writer_commits_in_the_background_and_reports_failures) {
  rill_cluster_writer *w;
  OK(rill_cluster_writer_create(root, &SHAPE, RILL_CLUSTER_PSERVER, 1, 0, &w));
  rill_tensor t;
  rill_tensor_init(&t);
  rill_dims d = {.n = 1, .d = {100000}};
  OK(rill_tensor_alloc(&t, RILL_DTYPE_FP32, &d));
  float *p = rill_tensor_ptr(&t);
  for (int i = 0; i < 100000; i++) p[i] = (float)i;
  const char *names[] = {"w"};
  const rill_tensor *ts[] = {&t};
  OK(rill_cluster_writer_submit(w, 1, names, ts, 1));
  OK(rill_cluster_writer_submit(w, 2, names, ts, 1));
  OK(rill_cluster_writer_close(w));
  cr_assert(exists("pserver_1/checkpoint_%lld", 1));
  cr_assert(exists("pserver_1/checkpoint_%lld", 2));
  /* A part directory that cannot be made: a file stands where it would go. */
  char blocker[512];
  snprintf(blocker, sizeof blocker, "%s/pserver_0", root);
  FILE *f = fopen(blocker, "w");
  cr_assert_not_null(f);
  fclose(f);
  OK(rill_cluster_writer_create(root, &SHAPE, RILL_CLUSTER_PSERVER, 0, 0, &w));
  OK(rill_cluster_writer_submit(w, 3, names, ts, 1));
  /* 4 may queue behind 3; 5 cannot before 3's write has ended, so by then one of them
   * reports it. */
  rill_status *st = NULL;
  int64_t step = 4;
  for (; step <= 5 && !st; step++) st = rill_cluster_writer_submit(w, step, names, ts, 1);
  cr_assert_not_null(st, "the failed write of 3 is reported by submit 4 or 5");
  cr_assert(strstr(rill_status_message(st), "pserver_0"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  /* A submit that reports a failure takes nothing; one queued before it fails too, and
   * close reports that, naming the directory again. */
  st = rill_cluster_writer_close(w);
  if (st) cr_assert(strstr(rill_status_message(st), "pserver_0"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_tensor_clear(&t);
}

/* A snapshot submitted while the previous one is still being written waits in the
 * second slot: the round that submits it does not wait for the disk. Only a third, with
 * both slots taken, waits, until the write in flight ends. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open, gate_entered;

static void gate_hook(const char *phase, int64_t step) {
  if (strcmp(phase, "write") != 0 || step != 1) return;
  pthread_mutex_lock(&gate_mu);
  gate_entered = true;
  pthread_cond_broadcast(&gate_cv);
  while (!gate_open) pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
}

typedef struct submit_job {
  rill_cluster_writer *w;
  const char *const *names;
  const rill_tensor *const *ts;
  int64_t step;
  atomic_bool done;
  rill_status *st;
} submit_job;

static void *submit_one(void *arg) {
  submit_job *j = arg;
  j->st = rill_cluster_writer_submit(j->w, j->step, j->names, j->ts, 1);
  atomic_store(&j->done, true);
  return NULL;
}

/* Whether the job ends within `ms` milliseconds. */
static bool ends_within(submit_job *j, int ms) {
  for (int i = 0; i < ms && !atomic_load(&j->done); i++) {
    struct timespec ts = {0, 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return atomic_load(&j->done);
}

Test(cluster_ckpt, writer_queues_one_snapshot_behind_the_write_in_flight) {
  rill_ckpt_set_test_hook(gate_hook);
  rill_cluster_writer *w;
  OK(rill_cluster_writer_create(root, &SHAPE, RILL_CLUSTER_PSERVER, 0, 0, &w));
  rill_tensor t;
  rill_tensor_init(&t);
  rill_dims d = {.n = 1, .d = {1 << 20}};
  OK(rill_tensor_alloc(&t, RILL_DTYPE_FP32, &d));
  memset(rill_tensor_ptr(&t), 0, rill_tensor_nbytes(&t));
  const char *names[] = {"w"};
  const rill_tensor *ts[] = {&t};
  OK(rill_cluster_writer_submit(w, 1, names, ts, 1));
  pthread_mutex_lock(&gate_mu);
  while (!gate_entered) pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  /* 1 is held inside its write: 2 is taken at once, 3 waits. */
  submit_job j2 = {.w = w, .names = names, .ts = ts, .step = 2};
  submit_job j3 = {.w = w, .names = names, .ts = ts, .step = 3};
  atomic_init(&j2.done, false);
  atomic_init(&j3.done, false);
  pthread_t th2, th3;
  cr_assert_eq(pthread_create(&th2, NULL, submit_one, &j2), 0);
  bool second_at_once = ends_within(&j2, 2000);
  bool third_waited = false;
  if (second_at_once) {
    cr_assert_eq(pthread_create(&th3, NULL, submit_one, &j3), 0);
    third_waited = !ends_within(&j3, 100);
  }
  pthread_mutex_lock(&gate_mu);
  gate_open = true;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  pthread_join(th2, NULL);
  if (second_at_once) pthread_join(th3, NULL);
  cr_assert(second_at_once, "a snapshot submitted during a write waited for it");
  cr_assert(third_waited, "a third snapshot did not wait while both slots were taken");
  OK(j2.st);
  OK(j3.st);
  OK(rill_cluster_writer_close(w));
  rill_ckpt_set_test_hook(NULL);
  for (long long k = 1; k <= 3; k++) cr_assert(exists("pserver_0/checkpoint_%lld", k), "part %lld", k);
  rill_tensor_clear(&t);
}

/* A trainer's part due while its previous part is still being written waits behind it:
 * the step goes on instead of waiting for the disk; both parts are then committed. The
 * write of step 1 is held at the gate above. */
typedef struct run_arg {
  rill_executor *exe;
  rill_program *prog;
  rill_scope *scope;
  rill_status *st;
  bool done;
} run_arg;

static void *run_once(void *arg) {
  run_arg *r = arg;
  rill_status *st = rill_executor_run(r->exe, r->prog, r->scope, NULL, NULL, 0, NULL, 0, NULL);
  pthread_mutex_lock(&gate_mu);
  r->st = st;
  r->done = true;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  return NULL;
}

Test(cluster_ckpt, a_trainer_part_due_during_the_previous_write_waits_behind_it) {
  rill_program *p = NULL;
  OK(rill_program_create(&p));
  int64_t one = 1, four = 4;
  OK(rill_block_add_var(p, 0, "step", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, &one, 1, 0, true));
  OK(rill_block_add_var(p, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, &four, 1, 0, true));
  rill_op_builder *b = NULL;
  const char *step[] = {"step"}, *w[] = {"w"}, *eps[] = {"127.0.0.1:9"};
  OK(rill_op_builder_create("increment", &b));
  OK(rill_op_builder_input(b, "X", step, 1));
  OK(rill_op_builder_output(b, "Out", step, 1));
  OK(rill_op_builder_attr_float(b, "step", 1.0f));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  /* Trainer 1 of 2 in sync mode: a part due by the step count is written at once. */
  OK(rill_op_builder_create("checkpoint", &b));
  OK(rill_op_builder_input(b, "X", w, 1));
  OK(rill_op_builder_input(b, "Step", step, 1));
  OK(rill_op_builder_attr_string(b, "directory", root));
  OK(rill_op_builder_attr_long(b, "every_n_steps", 1));
  OK(rill_op_builder_attr_int(b, "max_to_keep", 0));
  OK(rill_op_builder_attr_strings(b, "cluster_endpoints", eps, 1));
  OK(rill_op_builder_attr_int(b, "cluster_trainer_id", 1));
  OK(rill_op_builder_attr_int(b, "cluster_trainers", 2));
  OK(rill_op_builder_attr_bool(b, "cluster_sync", true));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);

  rill_scope *sc = NULL;
  OK(rill_scope_create(NULL, &sc));
  rill_tensor *t = NULL;
  OK(rill_tensor_create(RILL_DTYPE_INT64, &one, 1, &t));
  *(int64_t *)rill_tensor_data(t) = 0;
  OK(rill_scope_set_tensor(sc, "step", t));
  rill_tensor_destroy(t);
  OK(rill_tensor_create(RILL_DTYPE_FP32, &four, 1, &t));
  memset(rill_tensor_data(t), 0, 4 * sizeof(float));
  OK(rill_scope_set_tensor(sc, "w", t));
  rill_tensor_destroy(t);
  rill_executor *exe = NULL;
  OK(rill_executor_create(NULL, &exe));

  gate_open = false;
  gate_entered = false;
  rill_ckpt_set_test_hook(gate_hook);
  OK(rill_executor_run(exe, p, sc, NULL, NULL, 0, NULL, 0, NULL)); /* step 1: its write holds */
  pthread_mutex_lock(&gate_mu);
  while (!gate_entered) pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);

  /* Step 2 is due while step 1's part is held in its write: the run must end without
   * waiting for it. Bounded wait (released either way, so nothing hangs). */
  run_arg r = {exe, p, sc, NULL, false};
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, run_once, &r), 0);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 120;
  pthread_mutex_lock(&gate_mu);
  while (!r.done && pthread_cond_timedwait(&gate_cv, &gate_mu, &until) == 0) {
  }
  bool went_on = r.done;
  gate_open = true;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  pthread_join(th, NULL);
  OK(r.st);
  cr_assert(went_on, "step 2 waited for the write of step 1's part");
  OK(rill_executor_flush(exe));
  rill_ckpt_set_test_hook(NULL);
  cr_assert(exists("trainer_1/checkpoint_%lld", 1));
  cr_assert(exists("trainer_1/checkpoint_%lld", 2));
  rill_checkpoint_stats stats;
  OK(rill_executor_checkpoint_stats(exe, root, &stats));
  cr_assert_eq(stats.saved, 2);
  cr_assert_eq(stats.last_step, 2);
  cr_assert_eq(stats.skipped, 0);
  rill_executor_destroy(exe);
  rill_scope_destroy(sc);
  rill_program_destroy(p);
}
