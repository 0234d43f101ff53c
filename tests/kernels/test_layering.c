/* Kernels reach the device only through the services of their context
 * (rill_kernel_ctx.dev): no file under kernels/ includes the executor's headers. The
 * core knows kernels and ops only through the registry's tables: no file under
 * framework/ includes anything under kernels/ or operators/ (the lists of built-in
 * schemas and backends, operators/op_table.c and kernels/backends.c, live outside it). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Appends to `bad` every "path:line" under dir that includes a path starting with one
 * of the npat prefixes in pat; returns how many files it read. */
static int scan(const char *dir, const char *const *pat, size_t npat, char *bad, size_t cap) {
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
      files += scan(path, pat, npat, bad, cap);
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
      p += 7;
      while (*p == ' ' || *p == '\t' || *p == '"' || *p == '<') p++;
      for (size_t i = 0; i < npat; i++)
        if (strncmp(p, pat[i], strlen(pat[i])) == 0) {
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
  static const char *const exec[] = {"framework/exec/"};
  int files = scan(RILL_SOURCE_DIR "/kernels", exec, 1, bad, sizeof bad);
  cr_assert_gt(files, 10, "read only %d files under kernels/", files);
  cr_assert_str_empty(bad, "kernels include framework/exec/ (use rill_kernel_ctx.dev):%s", bad);
}

Test(layering, core_includes_no_kernel_or_operator) {
  static char bad[16384];
  bad[0] = '\0';
  static const char *const outside[] = {"kernels/", "operators/"};
  int files = scan(RILL_SOURCE_DIR "/framework", outside, 2, bad, sizeof bad);
  cr_assert_gt(files, 40, "read only %d files under framework/", files);
  cr_assert_str_empty(bad, "framework/ includes kernels/ or operators/ (register through the "
                      "backend and schema lists instead):%s", bad);
}
