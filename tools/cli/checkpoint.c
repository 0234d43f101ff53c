/* `rill checkpoint ls DIR`: a directory's checkpoints, newest first, each verified. */
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

static int checkpoint_ls(const char *dir) {
  if (!path_is_dir(dir))
    return fail(rill_status_create(RILL_NOT_FOUND, "'%s' is not a directory", dir));
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
