/* Kernels reach the device only through the services of their context
 * (rill_kernel_ctx.dev): no file under kernels/ includes the executor's headers. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Appends to `bad` every "path:line" under dir that includes framework/exec/; returns
 * how many files it read. */
static int scan(const char *dir, char *bad, size_t cap) {
  DIR *d = opendir(dir);
  cr_assert(d, "cannot open %s", dir);
  int files = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      files += scan(path, bad, cap);
      continue;
    }
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot read %s", path);
    files++;
    char line[4096];
    for (int no = 1; fgets(line, sizeof line, f); no++) {
      const char *p = line;
      while (*p == ' ' || *p == '\t') p++;
      if (*p != '#') continue;
      p++;
      while (*p == ' ' || *p == '\t') p++;
      if (strncmp(p, "include", 7) != 0) continue;
      if (strstr(p, "framework/exec/")) {
        size_t len = strlen(bad);
        snprintf(bad + len, cap - len, " %s:%d", path, no);
      }
    }
    fclose(f);
  }
  closedir(d);
  return files;
}

Test(layering, no_kernel_includes_the_executor) {
  static char bad[16384];
  bad[0] = '\0';
  int files = scan(RILL_SOURCE_DIR "/kernels", bad, sizeof bad);
  cr_assert_gt(files, 10, "read only %d files under kernels/", files);
  cr_assert_str_empty(bad, "kernels include framework/exec/ (use rill_kernel_ctx.dev):%s", bad);
}
