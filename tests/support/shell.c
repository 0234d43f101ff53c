#include "support/shell.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

int sh(char **out, const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(f, "popen %s", cmd);
  size_t cap = 1 << 16, n = 0, got;
  char *buf = malloc(cap);
  cr_assert_not_null(buf);
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (cap - n < 4096) {
      char *more = realloc(buf, cap *= 2);
      cr_assert_not_null(more);
      buf = more;
    }
  }
  buf[n] = 0;
  int status = pclose(f);
  *out = buf;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
