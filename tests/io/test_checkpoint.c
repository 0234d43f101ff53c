#define _GNU_SOURCE
/* Checkpoints: CRC32C, the commit protocol and retention, verification (every
 * truncation and bit flip is caught, naming the file), write failures leave the
 * previous checkpoint intact, the asynchronous path (wait / skip policies, flush,
 * destroy waits), exact resume in one process, the C API. The crash test is
 * test_checkpoint_crash.c. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/io/checkpoint.h"
#include "framework/io/crc32c.h"
#include "framework/io/file.h"
#include "support/fail_alloc.h"
#include "tests/io/ckpt_mlp.h"

static char root[256];

static void make_root(void) {
  snprintf(root, sizeof root, "%s/io_ckpt_XXXXXX", RILL_BINARY_DIR);
  cr_assert_not_null(mkdtemp(root));
}

static void drop_root(void) { rill_status_destroy(rill_dir_remove_tree(root)); }

TestSuite(checkpoint, .init = make_root, .fini = drop_root);

#define OK(expr)                                                   \
  do {                                                             \
    rill_status *ok_st_ = (expr);                                  \
    cr_assert_null(ok_st_, "%s: %s", #expr, rill_status_message(ok_st_)); \
  } while (0)

static void sub(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", root, name); }

/* Hidden entries other than the spares retention may keep, two at most (temp, old,
 * trash). */
static int count_hidden(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0, spares = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, ".spare-", 7) == 0)
      spares++;
    else if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      n++;
  }
  closedir(d);
  cr_assert_leq(spares, 2, "more than two spares in %s", dir);
  return n;
}

/* Trains `steps` steps with a checkpoint op; returns the losses. */
static void train(const char *dir, const rill_checkpoint_options *o, int64_t from, int64_t to,
                  tu_opt opt, rill_schedule sched, float *losses, ckpt_mlp *keep) {
  ckpt_mlp m;
  OK(ckpt_mlp_create(&m, 8, 16, 32, opt, dir, o, sched));
  if (from > 1) {
    rill_checkpoint_manager *mgr;
    OK(rill_checkpoint_manager_create(dir, o, &mgr));
    int64_t step = -1;
    OK(rill_checkpoint_manager_load(mgr, m.main, m.scope, m.exe, &step, NULL));
    cr_assert_eq(step, from - 1);
    rill_checkpoint_manager_destroy(mgr);
  }
  for (int64_t s = from; s <= to; s++) OK(ckpt_mlp_step(&m, s, &losses[s]));
  OK(rill_executor_flush(m.exe));
  if (keep)
    *keep = m;
  else
    ckpt_mlp_destroy(&m);
}

Test(checkpoint, crc32c_known_values_and_both_implementations_agree) {
  cr_assert_eq(rill_crc32c(0, "123456789", 9), 0xE3069283u);
  cr_assert_eq(rill_crc32c_portable(0, "123456789", 9), 0xE3069283u);
  cr_assert_eq(rill_crc32c(0, "", 0), 0u);
  uint8_t buf[1031];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 131 + 7);
  for (size_t off = 0; off < 9; off++)
    for (size_t n = 0; n < 100; n += 7) {
      uint32_t a = rill_crc32c(0, buf + off, n), b = rill_crc32c_portable(0, buf + off, n);
      cr_assert_eq(a, b, "offset %zu length %zu", off, n);
      /* extending over two calls equals one call */
      cr_assert_eq(rill_crc32c(rill_crc32c(0, buf + off, n / 2), buf + off + n / 2, n - n / 2), a);
    }
  /* Long inputs go through three chains over 12 KiB blocks: lengths around one, two
   * and three blocks, at every alignment, against the table version. */
  enum { BIG = 3 * 12288 + 64 };
  uint8_t *big = malloc(BIG);
  cr_assert_not_null(big);
  for (size_t i = 0; i < BIG; i++) big[i] = (uint8_t)((i * 2654435761u) >> 13);
  static const size_t lens[] = {12287, 12288, 12289, 12295, 24575, 24576, 24583, 36863, 36864, 36871};
  for (size_t off = 0; off < 9; off++)
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
      size_t n = lens[k];
      uint32_t a = rill_crc32c(0, big + off, n), b = rill_crc32c_portable(0, big + off, n);
      cr_assert_eq(a, b, "offset %zu length %zu", off, n);
      cr_assert_eq(rill_crc32c(rill_crc32c(0x12345678u, big + off, 5), big + off + 5, n - 5),
                   rill_crc32c_portable(0x12345678u, big + off, n), "offset %zu length %zu, from a crc", off, n);
    }
  free(big);
}

Test(checkpoint, commits_every_step_and_keeps_the_newest) {
  char dir[300];
  sub(dir, sizeof dir, "ck");
  rill_checkpoint_options o = rill_checkpoint_default_options();
  o.max_to_keep = 3;
  float losses[16];
  train(dir, &o, 1, 10, TU_ADAM, RILL_SCHEDULE_SEQUENTIAL, losses, NULL);
  rill_checkpoint_list *l;
  OK(rill_checkpoint_list_dir(dir, &l));
  cr_assert_eq(rill_checkpoint_list_count(l), 3);
  for (size_t i = 0; i < 3; i++) {
    rill_checkpoint_info info;
    OK(rill_checkpoint_list_get(l, i, &info));
    cr_assert_eq(info.step, 10 - (int64_t)i);
    cr_assert(info.verified, "%s: %s", info.path, info.problem);
    cr_assert_null(info.problem);
    cr_assert_gt(info.bytes, 1000);
    /* 6 params, 12 moments, 6+6 beta pows, learning rate, step counter */
    cr_assert_eq(info.num_vars, 32);
    cr_assert_gt(info.time_unix_ns, 0);
  }
  rill_checkpoint_info info;
  rill_status *st = rill_checkpoint_list_get(l, 3, &info);
  cr_assert_eq(rill_status_code(st), RILL_OUT_OF_RANGE);
  rill_status_destroy(st);
  rill_checkpoint_list_destroy(l);
  cr_assert_eq(count_hidden(dir), 0, "temp or trash directories left behind");
}

Test(checkpoint, every_n_steps_and_seconds) {
  char dir[300];
  sub(dir, sizeof dir, "ck");
  rill_checkpoint_options o = rill_checkpoint_default_options();
  o.every_n_steps = 4;
  o.max_to_keep = 0;
  float losses[16];
  ckpt_mlp m;
  train(dir, &o, 1, 10, TU_SGD, RILL_SCHEDULE_SEQUENTIAL, losses, &m);
  rill_checkpoint_stats stats;
  OK(rill_executor_checkpoint_stats(m.exe, dir, &stats));
  cr_assert_eq(stats.saved, 2);
  cr_assert_eq(stats.last_step, 8);
  cr_assert_eq(stats.skipped, 0);
  cr_assert_eq(stats.failed, 0);
  cr_assert(!stats.in_flight);
  rill_status *st = rill_executor_checkpoint_stats(m.exe, "elsewhere", &stats);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  rill_status_destroy(st);
  ckpt_mlp_destroy(&m);
  rill_checkpoint_list *l;
  OK(rill_checkpoint_list_dir(dir, &l));
  cr_assert_eq(rill_checkpoint_list_count(l), 2);
  rill_checkpoint_list_destroy(l);

  /* by time: a long period saves nothing after the clock starts */
  char dir2[300];
  sub(dir2, sizeof dir2, "ck2");
  o.every_n_steps = 0;
  o.every_n_seconds = 3600;
  train(dir2, &o, 1, 5, TU_SGD, RILL_SCHEDULE_SEQUENTIAL, losses, NULL);
  cr_assert(!rill_path_exists(dir2));

  /* a short period: due on every step that comes 20 ms after the last checkpoint */
  char dir3[300];
  sub(dir3, sizeof dir3, "ck3");
  o.every_n_seconds = 0.02;
  o.max_to_keep = 0;
  OK(ckpt_mlp_create(&m, 8, 16, 32, TU_SGD, dir3, &o, RILL_SCHEDULE_SEQUENTIAL));
  struct timespec ts = {0, 30 * 1000 * 1000};
  for (int64_t s = 1; s <= 5; s++) {
    OK(ckpt_mlp_step(&m, s, &losses[s]));
    nanosleep(&ts, NULL);
  }
  OK(rill_executor_flush(m.exe));
  OK(rill_executor_checkpoint_stats(m.exe, dir3, &stats));
  cr_assert_eq(stats.saved, 4, "steps 2..5 are each 30 ms after the last (saved %llu)",
               (unsigned long long)stats.saved);
  cr_assert_eq(stats.last_step, 5);
  ckpt_mlp_destroy(&m);
}

Test(checkpoint, resume_is_bitwise_exact_under_both_schedules) {
  float ref[20], got[20];
  char dir_ref[300], dir[300];
  sub(dir_ref, sizeof dir_ref, "ref");
  sub(dir, sizeof dir, "ck");
  rill_checkpoint_options o = rill_checkpoint_default_options();
  o.every_n_steps = 3;
  ckpt_mlp a, b;
  train(dir_ref, &o, 1, 16, TU_ADAM, RILL_SCHEDULE_SEQUENTIAL, ref, &a);
  /* interrupted after step 8 (the newest checkpoint is step 6), resumed in parallel */
  train(dir, &o, 1, 8, TU_ADAM, RILL_SCHEDULE_SEQUENTIAL, got, NULL);
  train(dir, &o, 7, 16, TU_ADAM, RILL_SCHEDULE_PARALLEL, got, &b);
  for (int s = 7; s <= 16; s++)
    cr_assert(memcmp(&ref[s], &got[s], sizeof(float)) == 0, "loss at step %d: %.9g vs %.9g", s,
              (double)ref[s], (double)got[s]);
  static const char *params[] = {"fc_0.w_0", "fc_1.w_0", "fc_2.b_0", "fc_0.w_0_moment2_0",
                                 "fc_2.w_0_beta1_pow_acc_0", CKPT_MLP_STEP_VAR};
  for (size_t i = 0; i < sizeof params / sizeof *params; i++) {
    rill_tensor *x, *y;
    OK(rill_scope_get_tensor(a.scope, params[i], &x));
    OK(rill_scope_get_tensor(b.scope, params[i], &y));
    cr_assert_eq(rill_tensor_byte_size(x), rill_tensor_byte_size(y));
    cr_assert(memcmp(rill_tensor_data(x), rill_tensor_data(y), rill_tensor_byte_size(x)) == 0,
              "%s differs after resuming", params[i]);
    rill_tensor_destroy(x);
    rill_tensor_destroy(y);
  }
  uint64_t ra[4], rb[4];
  rill_executor_get_rng_state(a.exe, ra);
  rill_executor_get_rng_state(b.exe, rb);
  cr_assert(memcmp(ra, rb, sizeof ra) == 0, "generator states differ");
  ckpt_mlp_destroy(&a);
  ckpt_mlp_destroy(&b);
}

/* A snapshot of a few variables (one with a name that needs escaping) at `step`. */
static void make_snapshot(rill_ckpt_snapshot *s, int64_t step) {
  float w[6] = {1, 2, 3, 4, 5, (float)step};
  double b[3] = {0.5, -1, (double)step};
  int64_t wd[2] = {2, 3}, bd[1] = {3}, one = 1;
  rill_tensor *t[3];
  OK(rill_tensor_create_from_data(RILL_DTYPE_FP32, wd, 2, w, sizeof w, NULL, NULL, &t[0]));
  OK(rill_tensor_create_from_data(RILL_DTYPE_FP64, bd, 1, b, sizeof b, NULL, NULL, &t[1]));
  OK(rill_tensor_create_from_data(RILL_DTYPE_INT64, &one, 1, &step, 8, NULL, NULL, &t[2]));
  const char *names[3] = {"w", "odd/name %..", "MANIFEST"};
  const rill_tensor *ts[3] = {t[0], t[1], t[2]};
  rill_ckpt_snapshot_init(s);
  OK(rill_ckpt_snapshot_take(s, names, ts, 3, SIZE_MAX));
  s->step = step;
  s->time_ns = 1;
  s->has_rng = true;
  for (int k = 0; k < 4; k++) s->rng[k] = (uint64_t)(k + 1) * 0x0101010101010101ull + (uint64_t)step;
  for (int k = 0; k < 3; k++) rill_tensor_destroy(t[k]);
}

static void write_step(const char *dir, int64_t step, int32_t keep) {
  rill_ckpt_snapshot s;
  make_snapshot(&s, step);
  OK(rill_ckpt_write(dir, &s, keep, NULL));
  rill_ckpt_snapshot_clear(&s);
}

static void assert_latest(const char *dir, int64_t want, size_t want_skipped, const char *file) {
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  rill_ckpt_listing skipped = {0};
  rill_status *st = rill_ckpt_load_latest(dir, &s, &skipped);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_eq(s.step, want);
  cr_assert_eq(skipped.n, want_skipped);
  if (want_skipped && file)
    cr_assert(strstr(rill_status_message(skipped.items[0].problem), file),
              "the problem does not name '%s': %s", file, rill_status_message(skipped.items[0].problem));
  rill_ckpt_snapshot_clear(&s);
  rill_ckpt_listing_clear(&skipped);
}

/* A named pipe in place of a manifest or a variable file: the checkpoint is damaged
 * (named as such), never waited on (opening a pipe for reading waits for a writer; the
 * timeout fails the test instead of hanging it). */
Test(checkpoint, named_pipes_in_a_checkpoint_are_refused_without_blocking, .timeout = 30) {
  char dir[300], p[400];
  sub(dir, sizeof dir, "ck");
  for (int64_t s = 1; s <= 3; s++) write_step(dir, s, 0);
  snprintf(p, sizeof p, "%s/checkpoint_3/" RILL_CKPT_MANIFEST, dir);
  cr_assert_eq(unlink(p), 0);
  cr_assert_eq(mkfifo(p, 0600), 0);
  snprintf(p, sizeof p, "%s/checkpoint_2/w", dir);
  cr_assert_eq(unlink(p), 0);
  cr_assert_eq(mkfifo(p, 0600), 0);
  assert_latest(dir, 1, 2, "checkpoint_3/" RILL_CKPT_MANIFEST "' is not a regular file (it is a named pipe)");
  rill_ckpt_listing l = {0};
  OK(rill_ckpt_list(dir, &l));
  cr_assert_eq(l.n, 3);
  cr_assert(l.items[0].problem && strstr(rill_status_message(l.items[0].problem), "named pipe"));
  cr_assert(l.items[1].problem && strstr(rill_status_message(l.items[1].problem), "checkpoint_2/w"),
            "%s", rill_status_message(l.items[1].problem));
  cr_assert_null(l.items[2].problem, "%s", rill_status_message(l.items[2].problem));
  rill_ckpt_listing_clear(&l);
  /* the manager resumes from the one that verifies */
  rill_checkpoint_manager *mgr;
  OK(rill_checkpoint_manager_create(dir, NULL, &mgr));
  rill_scope *scope;
  OK(rill_scope_create(NULL, &scope));
  int64_t step = -1;
  char *report = NULL;
  OK(rill_checkpoint_manager_load(mgr, NULL, scope, NULL, &step, &report));
  cr_assert_eq(step, 1);
  cr_assert(report && strstr(report, "named pipe"), "%s", report ? report : "(no report)");
  rill_free_buffer(report);
  rill_scope_destroy(scope);
  rill_checkpoint_manager_destroy(mgr);
}

static int count_prefix(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "cannot open %s", dir);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  closedir(d);
  return n;
}

/* Retiring several checkpoints at once (as a cluster snapshot's part does when two
 * snapshots complete between two of its writes) keeps two as spares and deletes the
 * rest; the next writes take the spares back instead of creating directories. */
Test(checkpoint, retiring_several_keeps_two_spares_for_the_next_writes) {
  char dir[300];
  sub(dir, sizeof dir, "ck");
  for (int64_t k = 1; k <= 4; k++) write_step(dir, k, 0);
  OK(rill_ckpt_retire_outside(dir, 4, 4));
  cr_assert_eq(count_prefix(dir, ".spare-"), 2);
  cr_assert_eq(count_prefix(dir, "checkpoint_"), 1);
  cr_assert_eq(count_hidden(dir), 0, "the third retired one was not removed");
  write_step(dir, 5, 0);
  cr_assert_eq(count_prefix(dir, ".spare-"), 1);
  write_step(dir, 6, 0);
  cr_assert_eq(count_prefix(dir, ".spare-"), 0);
  assert_latest(dir, 6, 0, NULL);
  /* one retired per write: one spare, taken back by the next write */
  write_step(dir, 7, 3);
  cr_assert_eq(count_prefix(dir, ".spare-"), 1);
  cr_assert_eq(count_prefix(dir, "checkpoint_"), 3);
  write_step(dir, 8, 3);
  cr_assert_eq(count_prefix(dir, ".spare-"), 1);
  assert_latest(dir, 8, 0, NULL);
}

Test(checkpoint, roundtrip_escapes_names_and_keeps_rng) {
  char dir[300];
  sub(dir, sizeof dir, "ck");
  write_step(dir, 7, 0);
  char p[400];
  snprintf(p, sizeof p, "%s/checkpoint_7/odd%%2Fname%%20%%25..", dir);
  cr_assert(rill_path_is_file(p), "escaped file name missing: %s", p);
  snprintf(p, sizeof p, "%s/checkpoint_7/%%4DANIFEST", dir);
  cr_assert(rill_path_is_file(p), "a variable named MANIFEST must not clash with the manifest");
  rill_ckpt_snapshot a, b;
  make_snapshot(&a, 7);
  rill_ckpt_snapshot_init(&b);
  snprintf(p, sizeof p, "%s/checkpoint_7", dir);
  OK(rill_ckpt_read(p, &b));
  cr_assert_eq(b.n, 3);
  cr_assert_eq(b.step, 7);
  cr_assert(memcmp(a.rng, b.rng, sizeof a.rng) == 0);
  for (size_t i = 0; i < 3; i++) {
    cr_assert_str_eq(a.names[i], b.names[i]);
    cr_assert_eq(a.tensors[i].dtype, b.tensors[i].dtype);
    cr_assert(rill_dims_equal(&a.tensors[i].dims, &b.tensors[i].dims));
    cr_assert(memcmp(rill_tensor_ptr(&a.tensors[i]), rill_tensor_ptr(&b.tensors[i]),
                     rill_tensor_nbytes(&a.tensors[i])) == 0);
  }
  rill_ckpt_snapshot_clear(&a);
  rill_ckpt_snapshot_clear(&b);
  /* the same step again replaces it */
  write_step(dir, 7, 0);
  assert_latest(dir, 7, 0, NULL);
  cr_assert_eq(count_hidden(dir), 0);
}

Test(checkpoint, snapshot_refuses_bad_names) {
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  int64_t one = 1, v = 3;
  rill_tensor *t;
  OK(rill_tensor_create_from_data(RILL_DTYPE_INT64, &one, 1, &v, 8, NULL, NULL, &t));
  const rill_tensor *ts[2] = {t, t};
  const char *dup[2] = {"a", "a"}, *ctl[1] = {"line\nbreak"};
  rill_status *st = rill_ckpt_snapshot_take(&s, dup, ts, 2, SIZE_MAX);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  cr_assert(strstr(rill_status_message(st), "'a' is listed twice"));
  rill_status_destroy(st);
  st = rill_ckpt_snapshot_take(&s, ctl, ts, 1, SIZE_MAX);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  rill_ckpt_snapshot_clear(&s);
  rill_tensor_destroy(t);
}

static uint8_t *slurp(const char *path, size_t *n) {
  uint8_t *d;
  OK(rill_file_read_all(path, 1 << 20, &d, n));
  return d;
}

static void put(const char *path, const void *d, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(d, 1, n, f), n);
  cr_assert_eq(fclose(f), 0);
}

Test(checkpoint, every_truncation_and_bit_flip_is_detected_naming_the_file) {
  char dir[300];
  sub(dir, sizeof dir, "ck");
  write_step(dir, 1, 0);
  write_step(dir, 2, 0);
  char cdir[400];
  snprintf(cdir, sizeof cdir, "%s/checkpoint_2", dir);
  const char *files[] = {"MANIFEST", "w", "odd%2Fname%20%25..", "%4DANIFEST"};
  uint64_t r = 12345;
  int cases = 0, want_cases = 0;
  for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", cdir, files[f]);
    size_t n;
    uint8_t *orig = slurp(path, &n);
    uint8_t *bad = malloc(n);
    want_cases += 2 * (int)n;
    for (size_t cut = 0; cut < n; cut++) { /* every truncation */
      put(path, orig, cut);
      assert_latest(dir, 1, 1, files[f]);
      cases++;
    }
    for (size_t pos = 0; pos < n; pos++) { /* a flipped bit at every byte */
      memcpy(bad, orig, n);
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      bad[pos] ^= (uint8_t)(1u << (r >> 61));
      put(path, bad, n);
      assert_latest(dir, 1, 1, files[f]);
      cases++;
    }
    put(path, orig, n);
    assert_latest(dir, 2, 0, NULL);
    free(bad);
    rill_free(orig);
  }
  /* a missing file, an extra byte */
  char path[600];
  snprintf(path, sizeof path, "%s/w", cdir);
  size_t n;
  uint8_t *orig = slurp(path, &n);
  unlink(path);
  assert_latest(dir, 1, 1, "/w");
  uint8_t *longer = malloc(n + 1);
  memcpy(longer, orig, n);
  longer[n] = 0;
  put(path, longer, n + 1);
  assert_latest(dir, 1, 1, "/w");
  free(longer);
  rill_free(orig);
  /* the listing shows it damaged, and why */
  rill_checkpoint_list *l;
  OK(rill_checkpoint_list_dir(dir, &l));
  rill_checkpoint_info info;
  OK(rill_checkpoint_list_get(l, 0, &info));
  cr_assert_eq(info.step, 2);
  cr_assert(!info.verified);
  cr_assert(strstr(info.problem, "checkpoint_2/w"), "%s", info.problem);
  OK(rill_checkpoint_list_get(l, 1, &info));
  cr_assert(info.verified);
  rill_checkpoint_list_destroy(l);
  cr_assert_eq(cases, want_cases);
  cr_assert_gt(cases, 600);
}

Test(checkpoint, loading_with_nothing_verified_is_not_found_and_says_why) {
  char dir[300];
  sub(dir, sizeof dir, "ck");
  write_step(dir, 3, 0);
  char path[600];
  snprintf(path, sizeof path, "%s/checkpoint_3/MANIFEST", dir);
  put(path, "rill checkpoint 1\n", 18);
  rill_checkpoint_manager *m;
  OK(rill_checkpoint_manager_create(dir, NULL, &m));
  rill_scope *scope;
  OK(rill_scope_create(NULL, &scope));
  int64_t step = 99;
  rill_status *st = rill_checkpoint_manager_load(m, NULL, scope, NULL, &step, NULL);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  cr_assert(strstr(rill_status_message(st), "checkpoint_3/MANIFEST"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  cr_assert_eq(step, 99);
  cr_assert_eq(rill_scope_size(scope), 0);
  st = rill_checkpoint_manager_latest(m, &step);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  rill_status_destroy(st);
  /* an empty or missing directory */
  rill_checkpoint_manager *m2;
  char none[300];
  sub(none, sizeof none, "none");
  OK(rill_checkpoint_manager_create(none, NULL, &m2));
  st = rill_checkpoint_manager_latest(m2, &step);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  rill_status_destroy(st);
  rill_checkpoint_manager_destroy(m2);
  rill_scope_destroy(scope);
  rill_checkpoint_manager_destroy(m);
}

/* Every step of a write fails in turn (as a full disk or an I/O error would): the
 * write reports it, and the previous checkpoint stays the newest, verified. */
Test(checkpoint, write_failures_leave_the_previous_checkpoint_intact) {
  char dir[300];
  sub(dir, sizeof dir, "ck");
  write_step(dir, 1, 1);
  static const rill_file_fault faults[] = {RILL_FILE_FAULT_OPEN, RILL_FILE_FAULT_WRITE,
                                           RILL_FILE_FAULT_FSYNC, RILL_FILE_FAULT_RENAME};
  static const char *names[] = {"open", "write", "fsync", "rename"};
  for (size_t f = 0; f < 4; f++) {
    int failures = 0;
    for (long nth = 1;; nth++) {
      rill_ckpt_snapshot s;
      make_snapshot(&s, 2);
      rill_file_inject_fault_at(faults[f], nth);
      rill_status *st = rill_ckpt_write(dir, &s, 1, NULL);
      bool fired = rill_path_exists(dir) && st != NULL;
      rill_file_inject_fault(RILL_FILE_FAULT_NONE);
      rill_ckpt_snapshot_clear(&s);
      if (!st) break; /* the fault was past the last step: the write succeeded */
      cr_assert(fired);
      failures++;
      cr_assert(strstr(rill_status_message(st), dir), "%s", rill_status_message(st));
      cr_assert_eq(rill_status_code(st), RILL_IO, "%s", rill_status_message(st));
      rill_status_destroy(st);
      cr_assert_eq(count_hidden(dir), 0, "%s fault %ld left a temp directory", names[f], nth);
      char c2[400];
      snprintf(c2, sizeof c2, "%s/checkpoint_2", dir);
      if (rill_path_exists(c2)) {
        /* failed after the commit (syncing the parent, retention): 2 is complete;
         * retention may have removed 1 already. Back to only step 1. */
        assert_latest(dir, 2, 0, NULL);
        cr_assert_null(rill_dir_remove_tree(c2));
        write_step(dir, 1, 1);
      }
      assert_latest(dir, 1, 0, NULL);
      cr_assert_lt(nth, 50);
    }
    cr_assert_gt(failures, 0, "no %s fault fired", names[f]);
    assert_latest(dir, 2, 0, NULL);
    /* back to only step 1 for the next kind */
    char c2[400];
    snprintf(c2, sizeof c2, "%s/checkpoint_2", dir);
    cr_assert_null(rill_dir_remove_tree(c2));
    write_step(dir, 1, 1);
  }
}

/* The checkpoint op's write fails in the background: flush reports it once; the op of
 * a later run would report it too. */
Test(checkpoint, background_failure_is_reported_by_flush_and_next_run) {
  char dir[300];
  sub(dir, sizeof dir, "ck");
  rill_checkpoint_options o = rill_checkpoint_default_options();
  ckpt_mlp m;
  OK(ckpt_mlp_create(&m, 8, 16, 32, TU_SGD, dir, &o, RILL_SCHEDULE_SEQUENTIAL));
  float loss;
  OK(ckpt_mlp_step(&m, 1, &loss));
  OK(rill_executor_flush(m.exe));
  rill_file_inject_fault_at(RILL_FILE_FAULT_WRITE, 3);
  OK(ckpt_mlp_step(&m, 2, &loss)); /* the snapshot succeeds; the write fails later */
  rill_status *st = rill_executor_flush(m.exe);
  cr_assert_eq(rill_status_code(st), RILL_IO);
  cr_assert(strstr(rill_status_message(st), "checkpoint 2"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  OK(rill_executor_flush(m.exe)); /* reported once */
  rill_checkpoint_stats stats;
  OK(rill_executor_checkpoint_stats(m.exe, dir, &stats));
  cr_assert_eq(stats.failed, 1);
  cr_assert_eq(stats.saved, 1);
  assert_latest(dir, 1, 0, NULL);
  /* again, now reported by the next run */
  rill_file_inject_fault_at(RILL_FILE_FAULT_FSYNC, 2);
  OK(ckpt_mlp_step(&m, 3, &loss));
  struct timespec ts = {0, 50 * 1000 * 1000};
  for (int i = 0; i < 100; i++) { /* until the background write finished */
    OK(rill_executor_checkpoint_stats(m.exe, dir, &stats));
    if (!stats.in_flight) break;
    nanosleep(&ts, NULL);
  }
  st = ckpt_mlp_step(&m, 4, &loss);
  cr_assert_eq(rill_status_code(st), RILL_IO);
  cr_assert(strstr(rill_status_message(st), "previous write failed"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  ckpt_mlp_destroy(&m);
  assert_latest(dir, 1, 0, NULL);
  cr_assert_eq(count_hidden(dir), 0);
}

/* A real full disk: a 200 KiB tmpfs (one checkpoint of the MLP takes about 130 KiB) (needs a private mount namespace; skipped where
 * mounting is not allowed). */
Test(checkpoint, full_tmpfs_fails_the_write_and_keeps_the_last_checkpoint) {
  if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
    cr_skip_test("cannot make a private mount namespace");
  char dir[300];
  sub(dir, sizeof dir, "tfs");
  mkdir(dir, 0755);
  if (mount("tmpfs", dir, "tmpfs", 0, "size=200k") != 0) cr_skip_test("cannot mount a tmpfs");
  rill_checkpoint_options o = rill_checkpoint_default_options();
  o.max_to_keep = 0; /* keep all: the disk fills */
  ckpt_mlp m;
  OK(ckpt_mlp_create(&m, 8, 16, 32, TU_ADAM, dir, &o, RILL_SCHEDULE_SEQUENTIAL));
  rill_status *st = NULL;
  int64_t s = 1;
  float loss;
  for (; s <= 20 && !st; s++) {
    st = ckpt_mlp_step(&m, s, &loss);
    if (!st) st = rill_executor_flush(m.exe);
  }
  cr_assert_not_null(st, "a 200 KiB disk held 20 checkpoints");
  cr_assert_eq(rill_status_code(st), RILL_IO);
  cr_assert(strstr(rill_status_message(st), "No space left"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_checkpoint_list *l;
  OK(rill_checkpoint_list_dir(dir, &l));
  size_t n = rill_checkpoint_list_count(l);
  cr_assert_gt(n, 0);
  for (size_t i = 0; i < n; i++) {
    rill_checkpoint_info info;
    OK(rill_checkpoint_list_get(l, i, &info));
    cr_assert(info.verified, "%s: %s", info.path, info.problem);
  }
  rill_checkpoint_list_destroy(l);
  cr_assert_eq(count_hidden(dir), 0);
  ckpt_mlp_destroy(&m);
  umount(dir);
}

static void slow_hook(const char *phase, int64_t step) {
  (void)step;
  if (strcmp(phase, "rename") == 0) {
    struct timespec ts = {0, 30 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

Test(checkpoint, busy_policy_waits_or_skips_and_counts_skips) {
  rill_ckpt_set_test_hook(slow_hook);
  float losses[16];
  for (int skip = 0; skip < 2; skip++) {
    char dir[300];
    sub(dir, sizeof dir, skip ? "skip" : "wait");
    rill_checkpoint_options o = rill_checkpoint_default_options();
    o.skip_when_busy = skip;
    o.max_to_keep = 0;
    ckpt_mlp m;
    train(dir, &o, 1, 10, TU_SGD, RILL_SCHEDULE_SEQUENTIAL, losses, &m);
    rill_checkpoint_stats stats;
    OK(rill_executor_checkpoint_stats(m.exe, dir, &stats));
    if (skip) {
      cr_assert_gt(stats.skipped, 0);
      cr_assert_lt(stats.saved, 10);
    } else {
      cr_assert_eq(stats.skipped, 0);
      cr_assert_eq(stats.saved, 10);
    }
    cr_assert_eq(stats.saved + stats.skipped, 10);
    cr_assert_gt(stats.last_persist_s, 0.02);
    ckpt_mlp_destroy(&m);
  }
  rill_ckpt_set_test_hook(NULL);
}

Test(checkpoint, destroying_the_executor_waits_for_the_write) {
  rill_ckpt_set_test_hook(slow_hook);
  char dir[300];
  sub(dir, sizeof dir, "ck");
  ckpt_mlp m;
  OK(ckpt_mlp_create(&m, 8, 16, 32, TU_SGD, dir, NULL, RILL_SCHEDULE_PARALLEL));
  float loss;
  OK(ckpt_mlp_step(&m, 1, &loss));
  rill_checkpoint_stats stats;
  OK(rill_executor_checkpoint_stats(m.exe, dir, &stats));
  cr_assert(stats.in_flight, "the write should still be running (the hook sleeps 30 ms)");
  ckpt_mlp_destroy(&m);
  rill_ckpt_set_test_hook(NULL);
  assert_latest(dir, 1, 0, NULL);
}

Test(checkpoint, load_refuses_another_program_and_bad_scopes) {
  char dir[300];
  sub(dir, sizeof dir, "ck");
  float losses[4];
  train(dir, NULL, 1, 2, TU_SGD, RILL_SCHEDULE_SEQUENTIAL, losses, NULL);
  ckpt_mlp other;
  OK(ckpt_mlp_create(&other, 8, 16, 24, TU_SGD, dir, NULL, RILL_SCHEDULE_SEQUENTIAL));
  rill_checkpoint_manager *mgr;
  OK(rill_checkpoint_manager_create(dir, NULL, &mgr));
  int64_t step = -1;
  rill_status *st = rill_checkpoint_manager_load(mgr, other.main, other.scope, other.exe, &step, NULL);
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION);
  cr_assert(strstr(rill_status_message(st), "another program"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  cr_assert_eq(step, -1);
  /* without a program the variables load (the caller vouches for them) */
  OK(rill_checkpoint_manager_load(mgr, NULL, other.scope, other.exe, &step, NULL));
  cr_assert_eq(step, 2);
  ckpt_mlp_destroy(&other);
  rill_checkpoint_manager_destroy(mgr);
}

/* ---- listing while a writer retires ---- */

#define RETIRE_DAMAGED_STEP 1000000000

typedef struct retire_ctx {
  const char *dir;
  atomic_bool done;
  atomic_long written;
} retire_ctx;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Four variables of 128 KiB: verifying one checkpoint takes long enough for the writer
 * to retire it meanwhile. */
static void write_big_step(const char *dir, int64_t step, int32_t keep) {
  static float data[4][32768];
  for (int k = 0; k < 4; k++)
    for (int i = 0; i < 32768; i++) data[k][i] = (float)(step * 7 + k + i);
  int64_t d = 32768;
  rill_tensor *t[4];
  const rill_tensor *ts[4];
  for (int k = 0; k < 4; k++) {
    OK(rill_tensor_create_from_data(RILL_DTYPE_FP32, &d, 1, data[k], sizeof data[k], NULL, NULL, &t[k]));
    ts[k] = t[k];
  }
  const char *names[4] = {"w0", "w1", "w2", "w3"};
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  OK(rill_ckpt_snapshot_take(&s, names, ts, 4, SIZE_MAX));
  s.step = step;
  s.time_ns = 1;
  OK(rill_ckpt_write(dir, &s, keep, NULL));
  rill_ckpt_snapshot_clear(&s);
  for (int k = 0; k < 4; k++) rill_tensor_destroy(t[k]);
}

static void *retiring_writer(void *arg) {
  retire_ctx *c = arg;
  double end = now_s() + 2.0;
  /* keeps the damaged one (the highest step) and the two newest */
  for (int64_t step = 1; step <= 2000 && now_s() < end; step++) {
    write_big_step(c->dir, step, 3);
    atomic_store(&c->written, (long)step);
  }
  atomic_store(&c->done, true);
  return NULL;
}

/* `rill checkpoint ls` during training: a writer commits a checkpoint and retires the
 * oldest (renamed to a spare or to trash, then reused or deleted) again and again while
 * this thread lists the directory and loads from it. No listing calls a checkpoint that
 * was retired meanwhile damaged, the newest listed always verifies, every load finds
 * one, and the one checkpoint truly damaged is reported as damaged every time. */
Test(checkpoint, listing_while_a_writer_retires_reports_no_false_damage, .timeout = 120) {
  char dir[300], p[400];
  sub(dir, sizeof dir, "ck");
  write_big_step(dir, RETIRE_DAMAGED_STEP, 0);
  snprintf(p, sizeof p, "%s/checkpoint_%d/w2", dir, RETIRE_DAMAGED_STEP);
  size_t len;
  uint8_t *bytes = slurp(p, &len);
  bytes[len / 2] ^= 0x10;
  put(p, bytes, len);
  rill_free(bytes);
  retire_ctx c = {.dir = dir};
  atomic_init(&c.done, false);
  atomic_init(&c.written, 0);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, retiring_writer, &c), 0);
  long listings = 0, loads = 0, listed = 0;
  size_t retired = 0;
  while (!atomic_load(&c.done)) {
    if (atomic_load(&c.written) < 1) continue;
    rill_ckpt_listing l = {0};
    OK(rill_ckpt_list(dir, &l));
    listings++;
    retired += l.vanished;
    cr_assert_geq(l.n, 1);
    cr_assert_eq(l.items[0].step, RETIRE_DAMAGED_STEP);
    cr_assert(l.items[0].problem && strstr(rill_status_message(l.items[0].problem), "w2': checksum mismatch"),
              "the damaged checkpoint: %s", rill_status_message(l.items[0].problem));
    for (size_t i = 1; i < l.n; i++)
      cr_assert_null(l.items[i].problem, "listing %ld: checkpoint %lld called damaged: %s", listings,
                     (long long)l.items[i].step, rill_status_message(l.items[i].problem));
    listed += (long)l.n - 1;
    rill_ckpt_listing_clear(&l);
    if (listings % 4 == 0) {
      rill_ckpt_snapshot s;
      rill_ckpt_snapshot_init(&s);
      rill_ckpt_listing skipped = {0};
      OK(rill_ckpt_load_latest(dir, &s, &skipped));
      cr_assert_eq(skipped.n, 1, "load skipped %zu checkpoints", skipped.n);
      cr_assert_eq(skipped.items[0].step, RETIRE_DAMAGED_STEP);
      cr_assert_lt(s.step, RETIRE_DAMAGED_STEP);
      rill_ckpt_listing_clear(&skipped);
      rill_ckpt_snapshot_clear(&s);
      loads++;
    }
  }
  pthread_join(th, NULL);
  cr_log_info("%ld listings (%ld good checkpoints listed, %zu retired meanwhile), %ld loads, %ld written",
              listings, listed, retired, loads, atomic_load(&c.written));
  cr_assert_geq(listings, 10);
  cr_assert_geq(atomic_load(&c.written), 10);
}

/* Loads the newest checkpoint of `dir` into a fresh MLP built with the checkpoint op
 * writing to `op_dir` (options `o`); returns the load's status (the step in *step). */
static rill_status *load_into(const char *dir, const char *op_dir, const rill_checkpoint_options *o,
                              tu_opt opt, int64_t hidden, int64_t *step) {
  ckpt_mlp m;
  OK(ckpt_mlp_create(&m, 8, 16, hidden, opt, op_dir, o, RILL_SCHEDULE_SEQUENTIAL));
  rill_checkpoint_manager *mgr;
  OK(rill_checkpoint_manager_create(dir, o, &mgr));
  rill_status *st = rill_checkpoint_manager_load(mgr, m.main, m.scope, m.exe, step, NULL);
  rill_checkpoint_manager_destroy(mgr);
  ckpt_mlp_destroy(&m);
  return st;
}

static void assert_refused_as_another_program(rill_status *st) {
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION, "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), "another program"), "%s", rill_status_message(st));
  rill_status_destroy(st);
}

/* Where the checkpoints go (relative or absolute, before or after the directory moved)
 * and how often and how many (every_n_steps / seconds, max_to_keep, skip_when_busy)
 * are no part of the program a checkpoint belongs to: a resume across each change is
 * accepted and continues bitwise as the uninterrupted run; another layer size or
 * optimizer is still refused. */
Test(checkpoint, resume_ignores_the_directory_path_and_the_schedule) {
  cr_assert_eq(chdir(root), 0);
  char abs_ck[300], abs_moved[300];
  sub(abs_ck, sizeof abs_ck, "ck");
  sub(abs_moved, sizeof abs_moved, "moved");
  rill_checkpoint_options o = rill_checkpoint_default_options();
  o.every_n_steps = 2;
  o.max_to_keep = 3;
  float ref[16], got[16];
  train("ref", &o, 1, 12, TU_ADAM, RILL_SCHEDULE_SEQUENTIAL, ref, NULL);
  train("ck", &o, 1, 4, TU_ADAM, RILL_SCHEDULE_SEQUENTIAL, got, NULL); /* relative */
  train(abs_ck, &o, 5, 6, TU_ADAM, RILL_SCHEDULE_SEQUENTIAL, got, NULL); /* absolute: resumes at 4 */
  cr_assert_eq(rename(abs_ck, abs_moved), 0);
  rill_checkpoint_options o2 = o;
  o2.every_n_steps = 3;
  o2.every_n_seconds = 3600;
  o2.max_to_keep = 1;
  o2.skip_when_busy = true;
  train("moved", &o2, 7, 9, TU_ADAM, RILL_SCHEDULE_SEQUENTIAL, got, NULL); /* moved, resumes at 6 */
  train(abs_moved, &o, 10, 12, TU_ADAM, RILL_SCHEDULE_SEQUENTIAL, got, NULL); /* resumes at 9 */
  for (int s = 5; s <= 12; s++)
    cr_assert(memcmp(&ref[s], &got[s], sizeof(float)) == 0, "loss at step %d: %.9g vs %.9g", s,
              (double)ref[s], (double)got[s]);
  int64_t step = -1;
  OK(load_into("moved", "./moved/", &o2, TU_ADAM, 32, &step));
  cr_assert_eq(step, 12);
  assert_refused_as_another_program(load_into("moved", "moved", &o, TU_ADAM, 24, &step));
  assert_refused_as_another_program(load_into("moved", "moved", &o, TU_SGD, 32, &step));
  assert_refused_as_another_program(load_into("moved", "moved", &o, TU_MOMENTUM, 32, &step));
}

/* Checkpoints whose manifest holds the hash of the whole program, policy attributes
 * included, still load into that same program (and not into one with other settings). */
Test(checkpoint, whole_program_hash_of_older_checkpoints_still_loads) {
  char dir[300], mpath[400];
  sub(dir, sizeof dir, "ck");
  rill_checkpoint_options o = rill_checkpoint_default_options();
  float losses[4];
  ckpt_mlp m;
  train(dir, &o, 1, 2, TU_SGD, RILL_SCHEDULE_SEQUENTIAL, losses, &m);
  void *bytes;
  size_t n;
  OK(rill_program_serialize(m.main, &bytes, &n));
  uint64_t whole = rill_ckpt_hash_bytes(bytes, n);
  rill_free_buffer(bytes);
  ckpt_mlp_destroy(&m);
  /* rewrite the manifest's program line and its end line */
  snprintf(mpath, sizeof mpath, "%s/checkpoint_2/" RILL_CKPT_MANIFEST, dir);
  size_t len;
  uint8_t *man = slurp(mpath, &len);
  char *prog = strstr((char *)man, "\nprogram ");
  cr_assert_not_null(prog);
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)whole);
  memcpy(prog + 9, hex, 16);
  char *end = strstr((char *)man, "\nend ") + 1;
  snprintf(end, 15, "end %08x\n", (unsigned)rill_crc32c(0, man, (size_t)(end - (char *)man)));
  put(mpath, man, len);
  rill_free(man);
  int64_t step = -1;
  OK(load_into(dir, dir, &o, TU_SGD, 32, &step));
  cr_assert_eq(step, 2);
  o.every_n_steps = 7;
  assert_refused_as_another_program(load_into(dir, dir, &o, TU_SGD, 32, &step));
}

Test(checkpoint, api_argument_checks) {
  rill_checkpoint_manager *m = NULL;
  rill_checkpoint_options o = rill_checkpoint_default_options();
  o.max_to_keep = -1;
  rill_status *st = rill_checkpoint_manager_create("d", &o, &m);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  st = rill_checkpoint_manager_create("", NULL, &m);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  cr_assert_null(m);
  OK(rill_checkpoint_manager_create("d", NULL, &m));
  cr_assert_str_eq(rill_checkpoint_manager_dir(m), "d");
  o.max_to_keep = 2;
  o.every_n_seconds = -1;
  st = rill_checkpoint_manager_configure(m, &o);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  rill_checkpoint_manager_destroy(m);
  rill_checkpoint_manager_destroy(NULL);
  rill_checkpoint_list_destroy(NULL);
  rill_executor *exe;
  OK(rill_executor_create(NULL, &exe));
  uint64_t zero[4] = {0, 0, 0, 0}, s[4] = {1, 2, 3, 4}, got[4];
  st = rill_executor_set_rng_state(exe, zero);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  OK(rill_executor_set_rng_state(exe, s));
  rill_executor_get_rng_state(exe, got);
  cr_assert(memcmp(s, got, sizeof s) == 0);
  OK(rill_executor_flush(exe));
  rill_executor_destroy(exe);
}

Test(checkpoint, append_op_refuses_unknown_variables_and_changes_nothing) {
  rill_program *p;
  OK(rill_program_create(&p));
  int64_t d = 3;
  OK(rill_block_add_var(p, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, &d, 1, 0, true));
  rill_checkpoint_manager *m;
  OK(rill_checkpoint_manager_create("dir", NULL, &m));
  const char *vars[2] = {"w", "nope"};
  rill_status *st = rill_checkpoint_manager_append_op(m, p, NULL, "step", vars, 2);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  cr_assert(strstr(rill_status_message(st), "'nope'"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  cr_assert_eq(rill_block_num_ops(p, 0), 0);
  cr_assert_eq(rill_block_num_vars(p, 0), 1);
  /* a step counter of the wrong type */
  OK(rill_block_add_var(p, 0, "fstep", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, &d, 1, 0, true));
  st = rill_checkpoint_manager_append_op(m, p, NULL, "fstep", vars, 1);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  cr_assert_eq(rill_block_num_ops(p, 0), 0);
  /* all persistable tensors when no list is given */
  OK(rill_checkpoint_manager_append_op(m, p, NULL, "step", NULL, 0));
  cr_assert_eq(rill_block_num_ops(p, 0), 2); /* increment, checkpoint */
  OK(rill_program_validate(p));
  rill_checkpoint_manager_destroy(m);
  rill_program_destroy(p);
}

/* Allocation failures: failing the 1st, 2nd, ... allocation of a write, a verified
 * load and a listing gives an error (or, for a write, a complete checkpoint) each time
 * and leaks nothing. */
typedef struct alloc_ctx {
  char dir[300];
  rill_ckpt_snapshot snap, out;
  rill_ckpt_listing list;
  int what; /* 0 write, 1 load, 2 list */
} alloc_ctx;

static rill_status *alloc_op(void *arg) {
  alloc_ctx *c = arg;
  if (c->what == 0) return rill_ckpt_write(c->dir, &c->snap, 2, NULL);
  if (c->what == 1) return rill_ckpt_load_latest(c->dir, &c->out, NULL);
  return rill_ckpt_list(c->dir, &c->list);
}

static void alloc_cleanup(void *arg) {
  alloc_ctx *c = arg;
  if (c->what == 1) rill_ckpt_snapshot_clear(&c->out);
  if (c->what == 2) rill_ckpt_listing_clear(&c->list);
  rill_ckpt_snapshot_init(&c->out);
  memset(&c->list, 0, sizeof c->list);
}

Test(checkpoint, failing_each_allocation_leaks_nothing) {
  static alloc_ctx c;
  sub(c.dir, sizeof c.dir, "ck");
  write_step(c.dir, 1, 0);
  make_snapshot(&c.snap, 2); /* allocated before the counter is installed */
  rill_ckpt_snapshot_init(&c.out);
  char why[512];
  for (c.what = 0; c.what < 3; c.what++) {
    /* A write may recover: without memory to take the spare or to clean up after dead
     * writers it writes a new directory and leaves the leftovers for next time. */
    long runs = fail_alloc_sweep(alloc_op, alloc_cleanup, &c, 10000, c.what == 0, why, sizeof why);
    cr_assert_gt(runs, 3, "%d: %s", c.what, why);
    cr_assert_eq(count_hidden(c.dir), 0);
  }
  rill_ckpt_snapshot_clear(&c.snap);
  assert_latest(c.dir, 2, 0, NULL);
}

/* Two executors checkpointing into one directory from two threads: their writes never
 * overlap, and every checkpoint left verifies. */
static atomic_int writers_inside, writers_max;

static void overlap_hook(const char *phase, int64_t step) {
  (void)step;
  if (strcmp(phase, "manifest") == 0) {
    int now = atomic_fetch_add(&writers_inside, 1) + 1;
    int max = atomic_load(&writers_max);
    while (now > max && !atomic_compare_exchange_weak(&writers_max, &max, now)) {
    }
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  } else if (strcmp(phase, "committed") == 0) {
    atomic_fetch_sub(&writers_inside, 1);
  }
}

typedef struct trainer_arg {
  const char *dir;
  rill_status *st;
} trainer_arg;

static void *trainer(void *arg) {
  trainer_arg *a = arg;
  rill_checkpoint_options o = rill_checkpoint_default_options();
  o.max_to_keep = 0;
  ckpt_mlp m;
  a->st = ckpt_mlp_create(&m, 8, 16, 32, TU_SGD, a->dir, &o, RILL_SCHEDULE_SEQUENTIAL);
  float loss;
  for (int64_t s = 1; s <= 8 && !a->st; s++) a->st = ckpt_mlp_step(&m, s, &loss);
  if (!a->st) a->st = rill_executor_flush(m.exe);
  ckpt_mlp_destroy(&m);
  return NULL;
}

Test(checkpoint, writes_of_one_directory_never_overlap) {
  char dir[300];
  sub(dir, sizeof dir, "shared");
  rill_ckpt_set_test_hook(overlap_hook);
  trainer_arg a = {dir, NULL}, b = {dir, NULL};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, trainer, &a);
  pthread_create(&tb, NULL, trainer, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  rill_ckpt_set_test_hook(NULL);
  OK(a.st);
  OK(b.st);
  cr_assert_eq(atomic_load(&writers_max), 1, "two writes of one directory overlapped");
  rill_ckpt_listing l;
  OK(rill_ckpt_list(dir, &l));
  cr_assert_eq(l.n, 8);
  for (size_t i = 0; i < l.n; i++) cr_assert_null(l.items[i].problem);
  rill_ckpt_listing_clear(&l);
}

/* Large tensors are not copied in the run: the snapshot shares their buffers until the
 * write has them. A write held back while the next step updates the parameters in
 * place (the executor copies a buffer with other references before an in-place write)
 * and while the API hands out the variables (rill_scope_get_tensor gives the variable a
 * copy) still saves the values of the moment of the snapshot. */
static atomic_int hold_entered, hold_release;

static void hold_hook(const char *phase, int64_t step) {
  if (strcmp(phase, "write") != 0 || step != 1) return;
  if (atomic_exchange(&hold_entered, 1)) return; /* the first file only */
  struct timespec ts = {0, 1000 * 1000};
  while (!atomic_load(&hold_release)) nanosleep(&ts, NULL);
}

static void read_var(rill_scope *scope, const char *name, rill_tensor **out) {
  OK(rill_scope_get_tensor(scope, name, out));
}

Test(checkpoint, shared_snapshot_keeps_the_values_of_its_step) {
  char dir[300];
  sub(dir, sizeof dir, "shared_snap");
  rill_checkpoint_options o = rill_checkpoint_default_options();
  o.skip_when_busy = true; /* step 2's checkpoint must not wait for the held write */
  ckpt_mlp m, ref;
  /* hidden 256: fc_1.w_0 and its Adam moments are 256 KiB, above the share threshold */
  OK(ckpt_mlp_create(&m, 8, 16, 256, TU_ADAM, dir, &o, RILL_SCHEDULE_SEQUENTIAL));
  OK(ckpt_mlp_create(&ref, 8, 16, 256, TU_ADAM, NULL, NULL, RILL_SCHEDULE_SEQUENTIAL));
  atomic_store(&hold_entered, 0);
  atomic_store(&hold_release, 0);
  rill_ckpt_set_test_hook(hold_hook);
  float loss, ref_loss;
  OK(ckpt_mlp_step(&m, 1, &loss));
  OK(ckpt_mlp_step(&ref, 1, &ref_loss));
  cr_assert_eq(loss, ref_loss);
  /* what checkpoint 1 must hold: the reference's variables after step 1 */
  rill_ckpt_snapshot want;
  rill_ckpt_snapshot_init(&want);
  {
    const char *names[] = {"fc_1.w_0", "fc_0.w_0", "fc_1.w_0_moment1_0"};
    rill_tensor *ts[3];
    for (int i = 0; i < 3; i++) read_var(ref.scope, names[i], &ts[i]);
    OK(rill_ckpt_snapshot_take(&want, names, (const rill_tensor *const *)ts, 3, SIZE_MAX));
    for (int i = 0; i < 3; i++) rill_tensor_destroy(ts[i]);
  }
  struct timespec ts = {0, 1000 * 1000};
  for (int i = 0; i < 5000 && !atomic_load(&hold_entered); i++) nanosleep(&ts, NULL);
  cr_assert(atomic_load(&hold_entered), "the write of checkpoint 1 did not start");
  /* a caller writes a variable through the API while the write is held (the reference
   * model gets the same write) */
  rill_tensor *w;
  read_var(m.scope, "fc_1.w_0", &w);
  ((float *)rill_tensor_data(w))[0] = 0.5f;
  rill_tensor_destroy(w);
  read_var(ref.scope, "fc_1.w_0", &w);
  ((float *)rill_tensor_data(w))[0] = 0.5f;
  rill_tensor_destroy(w);
  /* step 2 updates every parameter in place while checkpoint 1 is being written */
  OK(ckpt_mlp_step(&m, 2, &loss));
  OK(ckpt_mlp_step(&ref, 2, &ref_loss));
  cr_assert_eq(loss, ref_loss);
  rill_checkpoint_stats stats;
  OK(rill_executor_checkpoint_stats(m.exe, dir, &stats));
  cr_assert(stats.in_flight);
  cr_assert_eq(stats.skipped, 1);
  atomic_store(&hold_release, 1);
  OK(rill_executor_flush(m.exe));
  rill_ckpt_set_test_hook(NULL);
  /* the scope holds step 2's values, the checkpoint step 1's, bit for bit */
  for (size_t i = 0; i < want.n; i++) {
    rill_tensor *now, *r2;
    read_var(m.scope, want.names[i], &now);
    read_var(ref.scope, want.names[i], &r2);
    cr_assert(memcmp(rill_tensor_data(now), rill_tensor_data(r2), rill_tensor_byte_size(r2)) == 0,
              "%s after step 2", want.names[i]);
    cr_assert(memcmp(rill_tensor_data(now), rill_tensor_ptr(&want.tensors[i]), rill_tensor_byte_size(r2)) != 0,
              "%s did not change in step 2", want.names[i]);
    rill_tensor_destroy(now);
    rill_tensor_destroy(r2);
  }
  char path[400];
  snprintf(path, sizeof path, "%s/checkpoint_1", dir);
  rill_ckpt_snapshot got;
  rill_ckpt_snapshot_init(&got);
  OK(rill_ckpt_read(path, &got));
  for (size_t i = 0; i < want.n; i++) {
    size_t j = 0;
    while (j < got.n && strcmp(got.names[j], want.names[i]) != 0) j++;
    cr_assert_lt(j, got.n, "%s is not in checkpoint 1", want.names[i]);
    cr_assert_eq(rill_tensor_nbytes(&got.tensors[j]), rill_tensor_nbytes(&want.tensors[i]));
    cr_assert(memcmp(rill_tensor_ptr(&got.tensors[j]), rill_tensor_ptr(&want.tensors[i]),
                     rill_tensor_nbytes(&want.tensors[i])) == 0,
              "checkpoint 1 holds other values of %s than step 1 left", want.names[i]);
  }
  rill_ckpt_snapshot_clear(&got);
  rill_ckpt_snapshot_clear(&want);
  ckpt_mlp_destroy(&m);
  ckpt_mlp_destroy(&ref);
}

/* Shared entries are pinned while the snapshot holds them and let go by the write. */
Test(checkpoint, snapshot_shares_large_tensors_until_written) {
  int64_t big_d[1] = {1 << 15}, small_d[1] = {4};
  rill_tensor *big, *small;
  OK(rill_tensor_create(RILL_DTYPE_FP32, big_d, 1, &big));
  OK(rill_tensor_create(RILL_DTYPE_FP32, small_d, 1, &small));
  float *bd = rill_tensor_data(big), *sd = rill_tensor_data(small);
  for (int i = 0; i < (1 << 15); i++) bd[i] = (float)i;
  for (int i = 0; i < 4; i++) sd[i] = (float)-i;
  const char *names[2] = {"big", "small"};
  const rill_tensor *ts[2] = {big, small};
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  OK(rill_ckpt_snapshot_take(&s, names, ts, 2, RILL_CKPT_SHARE_MIN_BYTES));
  cr_assert(s.shared[0] && !s.shared[1]);
  cr_assert_eq(rill_tensor_ptr(&s.tensors[0]), rill_tensor_ptr(big), "the large tensor was copied");
  cr_assert_neq(rill_tensor_ptr(&s.tensors[1]), rill_tensor_ptr(small));
  cr_assert(rill_buffer_pinned(big->buf));
  cr_assert_eq(atomic_load(&big->buf->refs), 2);
  /* an in-place writer sees the other reference and copies */
  rill_dims d = big->dims;
  rill_buffer *before = big->buf;
  OK(rill_tensor_alloc(big, RILL_DTYPE_FP32, &d));
  cr_assert_neq(big->buf, before, "rill_tensor_alloc kept a buffer the snapshot holds");
  char dir[300];
  sub(dir, sizeof dir, "shares");
  s.step = 3;
  OK(rill_ckpt_write(dir, &s, 0, NULL));
  cr_assert(!s.shared[0] && !rill_tensor_is_set(&s.tensors[0]), "the write kept its reference");
  rill_ckpt_snapshot got;
  rill_ckpt_snapshot_init(&got);
  char path[400];
  snprintf(path, sizeof path, "%s/checkpoint_3", dir);
  OK(rill_ckpt_read(path, &got));
  cr_assert_eq(got.n, 2);
  const float *gb = rill_tensor_ptr(&got.tensors[0]);
  cr_assert_eq(gb[12345], 12345.0f);
  rill_ckpt_snapshot_clear(&got);
  /* a snapshot cleared without a write lets go too */
  OK(rill_ckpt_snapshot_take(&s, names, ts, 2, RILL_CKPT_SHARE_MIN_BYTES));
  rill_buffer *held = big->buf;
  cr_assert(rill_buffer_pinned(held));
  rill_ckpt_snapshot_clear(&s);
  cr_assert(!rill_buffer_pinned(held));
  cr_assert_eq(atomic_load(&held->refs), 1);
  rill_tensor_destroy(big);
  rill_tensor_destroy(small);
}
