/* `rill checkpoint ls DIR`: a directory's checkpoints, newest first, each verified; for a
 * parameter-server job's directory, its cluster snapshots and their parts. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static void human_size(uint64_t n, char *out, size_t cap) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)n;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  if (u == 0)
    snprintf(out, cap, "%llu B", (unsigned long long)n);
  else
    snprintf(out, cap, "%.1f %s", v, units[u]);
}

static void print_info(const rill_checkpoint_info *info) {
  char when[32] = "-", size[32];
  if (info->time_unix_ns > 0) {
    time_t t = (time_t)(info->time_unix_ns / 1000000000);
    struct tm tm;
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  }
  human_size(info->bytes, size, sizeof size);
  if (info->verified)
    printf("%-12lld %-20s %10s %5llu  verified\n", (long long)info->step, when, size,
           (unsigned long long)info->num_vars);
  else
    printf("%-12lld %-20s %10s %5s  damaged: %s\n", (long long)info->step, when, size, "-",
           info->problem);
}

/* A parameter-server job's directory: its snapshots, with each part's state. */
static int cluster_ls(const char *dir) {
  rill_cluster_list *list;
  rill_status *st = rill_cluster_list_dir(dir, &list);
  if (st) return fail(st);
  size_t n = rill_cluster_list_count(list), complete = 0;
  rill_cluster_snapshot_info info = {0};
  if (n) rill_status_destroy(rill_cluster_list_get(list, 0, &info));
  printf("%zu cluster snapshot%s in %s (%d pservers, %d trainers)\n", n, n == 1 ? "" : "s", dir,
         (int)info.pservers, (int)info.trainers);
  if (n) printf("%-12s %-20s %10s  %s\n", "STEP", "TIME (UTC)", "SIZE", "STATUS");
  for (size_t i = 0; i < n; i++) {
    if ((st = rill_cluster_list_get(list, i, &info))) {
      rill_cluster_list_destroy(list);
      return fail(st);
    }
    char when[32] = "-", size[32];
    if (info.time_unix_ns > 0) {
      time_t t = (time_t)(info.time_unix_ns / 1000000000);
      struct tm tm;
      if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    }
    human_size(info.bytes, size, sizeof size);
    complete += info.complete;
    printf("%-12lld %-20s %10s  %s\n", (long long)info.step, when, size,
           info.complete ? "complete" : info.has_manifest ? "damaged" : "incomplete");
    for (size_t j = 0; j < info.num_parts; j++) {
      rill_cluster_part_info part;
      if (rill_cluster_list_part(list, i, j, &part)) continue;
      const char *state = !part.present ? "missing"
                          : part.problem ? "damaged"
                          : info.has_manifest ? "verified"
                                              : "present";
      printf("    %-14s %s%s%s\n", part.name, state, part.problem ? ": " : "",
             part.problem && part.present ? part.problem : "");
    }
    if (!info.complete && info.problem) printf("    why: %s\n", info.problem);
  }
  if (n && !complete) printf("no complete snapshot: a restarted job starts from step 0\n");
  rill_cluster_list_destroy(list);
  return EXIT_OK;
}

static int checkpoint_ls(const char *dir) {
  if (!path_is_dir(dir))
    return fail(rill_status_create(RILL_NOT_FOUND, "'%s' is not a directory", dir));
  if (rill_cluster_dir_is_cluster(dir)) return cluster_ls(dir);
  rill_checkpoint_list *list;
  rill_status *st = rill_checkpoint_list_dir(dir, &list);
  if (st) return fail(st);
  size_t n = rill_checkpoint_list_count(list), damaged = 0;
  printf("%zu checkpoint%s in %s\n", n, n == 1 ? "" : "s", dir);
  if (n) printf("%-12s %-20s %10s %5s  %s\n", "STEP", "TIME (UTC)", "SIZE", "VARS", "STATUS");
  for (size_t i = 0; i < n; i++) {
    rill_checkpoint_info info;
    if ((st = rill_checkpoint_list_get(list, i, &info))) {
      rill_checkpoint_list_destroy(list);
      return fail(st);
    }
    print_info(&info);
    damaged += !info.verified;
  }
  if (damaged)
    printf("%zu damaged: loading takes the newest verified checkpoint and skips them\n", damaged);
  size_t retired = rill_checkpoint_list_retired(list);
  if (retired)
    printf("%zu more retired by a writer while being listed (not damaged)\n", retired);
  rill_checkpoint_list_destroy(list);
  return EXIT_OK;
}

int cmd_checkpoint(int argc, char **argv) {
  if (argc < 1) return usage_error("checkpoint needs a subcommand (ls DIR)%s", "");
  if (strcmp(argv[0], "ls") == 0) {
    if (argc != 2) return usage_error("checkpoint ls takes one DIR%s", "");
    return checkpoint_ls(argv[1]);
  }
  return usage_error("unknown checkpoint subcommand '%s' (known: ls)", argv[0]);
}
