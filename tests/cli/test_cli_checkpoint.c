/* `rill checkpoint ls DIR`, run as a process. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "framework/io/checkpoint.h"
#include "framework/io/cluster_ckpt.h"
#include "framework/io/file.h"
#include "rill.h"

#define RILL RILL_BINARY_DIR "/rill"

static int run(char **out, const char *cmd) {
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(f);
  size_t cap = 1 << 16, n = 0, got;
  char *buf = malloc(cap);
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) n += got;
  buf[n] = 0;
  int status = pclose(f);
  *out = buf;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void write_step(const char *dir, int64_t step) {
  float w[4] = {1, 2, 3, (float)step};
  int64_t d = 4;
  rill_tensor *t;
  cr_assert_null(rill_tensor_create_from_data(RILL_DTYPE_FP32, &d, 1, w, sizeof w, NULL, NULL, &t));
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  const char *name = "w";
  const rill_tensor *ts[1] = {t};
  cr_assert_null(rill_ckpt_snapshot_take(&s, &name, ts, 1, SIZE_MAX));
  s.step = step;
  s.time_ns = (int64_t)1700000000 * 1000000000;
  cr_assert_null(rill_ckpt_write(dir, &s, 0, NULL));
  rill_ckpt_snapshot_clear(&s);
  rill_tensor_destroy(t);
}

Test(cli_checkpoint, ls_lists_verified_and_damaged_checkpoints) {
  char dir[256];
  snprintf(dir, sizeof dir, "%s/cli_ckpt_XXXXXX", RILL_BINARY_DIR);
  cr_assert_not_null(mkdtemp(dir));
  write_step(dir, 10);
  write_step(dir, 20);
  char cmd[512], path[400];
  snprintf(path, sizeof path, "%s/checkpoint_20/w", dir);
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f);
  fseek(f, 30, SEEK_SET);
  fputc(0x55, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "'%s' checkpoint ls '%s' 2>&1", RILL, dir);
  char *out;
  int rc = run(&out, cmd);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "2 checkpoints in"), "%s", out);
  const char *l20 = strstr(out, "\n20 "), *l10 = strstr(out, "\n10 ");
  cr_assert(l20 && l10 && l20 < l10, "newest first:\n%s", out);
  cr_assert(strstr(l10, "2023-11-14 22:13:20"), "time of step 10:\n%s", out);
  cr_assert(strstr(l10, "verified"), "%s", out);
  cr_assert(strstr(l20, "damaged: ") && strstr(l20, "checkpoint_20/w") && strstr(l20, "checksum mismatch"),
            "%s", out);
  cr_assert(strstr(out, "1 damaged"), "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "'%s' checkpoint ls '%s/none' 2>&1", RILL, dir);
  rc = run(&out, cmd);
  cr_assert_eq(rc, 1);
  cr_assert(strstr(out, "not a directory"), "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "'%s' checkpoint rm x 2>&1", RILL);
  rc = run(&out, cmd);
  cr_assert_eq(rc, 2);
  cr_assert(strstr(out, "unknown checkpoint subcommand 'rm'"), "%s", out);
  free(out);
  cr_assert_null(rill_dir_remove_tree(dir));
}

static void write_part(const char *dir, rill_cluster_role role, int32_t rank, int64_t step) {
  float w[4] = {1, 2, (float)rank, (float)step};
  int64_t d = 4;
  rill_tensor *t;
  cr_assert_null(rill_tensor_create_from_data(RILL_DTYPE_FP32, &d, 1, w, sizeof w, NULL, NULL, &t));
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  const char *name = "w";
  const rill_tensor *ts[1] = {t};
  cr_assert_null(rill_ckpt_snapshot_take(&s, &name, ts, 1, SIZE_MAX));
  s.step = step;
  s.time_ns = (int64_t)1700000000 * 1000000000;
  rill_cluster_shape shape = {2, 1};
  cr_assert_null(rill_cluster_commit_part(dir, &shape, role, rank, &s, 0, NULL, NULL));
  rill_ckpt_snapshot_clear(&s);
  rill_tensor_destroy(t);
}

Test(cli_checkpoint, ls_shows_cluster_snapshots_and_their_parts) {
  char dir[256];
  snprintf(dir, sizeof dir, "%s/cli_cluster_XXXXXX", RILL_BINARY_DIR);
  cr_assert_not_null(mkdtemp(dir));
  for (int64_t k = 5; k <= 10; k += 5) {
    write_part(dir, RILL_CLUSTER_PSERVER, 0, k);
    write_part(dir, RILL_CLUSTER_PSERVER, 1, k);
    write_part(dir, RILL_CLUSTER_TRAINER, 0, k);
  }
  write_part(dir, RILL_CLUSTER_PSERVER, 1, 15);
  char path[400], cmd[512];
  snprintf(path, sizeof path, "%s/pserver_0/checkpoint_10/w", dir);
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f);
  fseek(f, 30, SEEK_SET);
  fputc(0x55, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "'%s' checkpoint ls '%s' 2>&1", RILL, dir);
  char *out;
  int rc = run(&out, cmd);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "3 cluster snapshots in") && strstr(out, "(2 pservers, 1 trainers)"), "%s", out);
  const char *l15 = strstr(out, "\n15 "), *l10 = strstr(out, "\n10 "), *l5 = strstr(out, "\n5 ");
  cr_assert(l15 && l10 && l5 && l15 < l10 && l10 < l5, "newest first:\n%s", out);
  cr_assert(strstr(l15, "incomplete") && strstr(l15, "pserver_0      missing") &&
                strstr(l15, "pserver_1      present"),
            "%s", out);
  cr_assert(strstr(l10, "damaged") && strstr(l10, "pserver_0      damaged: ") &&
                strstr(l10, "checkpoint_10/w"),
            "%s", out);
  cr_assert(strstr(l5, "complete") && strstr(l5, "trainer_0      verified"), "%s", out);
  cr_assert(strstr(l5, "2023-11-14 22:13:20"), "%s", out);
  free(out);
  cr_assert_null(rill_dir_remove_tree(dir));
}
