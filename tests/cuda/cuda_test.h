/* What the CUDA tests share: whether this process can use a CUDA device (and why not),
 * and the skip message every GPU test gives on a machine without one. */
#ifndef RILL_TESTS_CUDA_CUDA_TEST_H
#define RILL_TESTS_CUDA_CUDA_TEST_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rill.h"

#define OK(expr)                                                                 \
  do {                                                                           \
    rill_status *st_ = (expr);                                                   \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));              \
  } while (0)

/* After its tests, a test program says how many it skipped for want of a device. */
#define REPORT_GPU_SKIPS(name)                                                   \
  ReportHook(POST_ALL)(struct criterion_global_stats *stats) {                   \
    printf("%s: %zu GPU test(s) skipped\n", name, stats->tests_skipped);         \
  }

/* The reason no CUDA device can be used, in `why`; false when one can. */
static inline bool cuda_missing(char *why, size_t cap) {
  int32_t n = 0;
  rill_status *st = rill_cuda_device_count(&n);
  if (!st && n > 0) return false;
  snprintf(why, cap, "%s", st ? rill_status_message(st) : "no device reported");
  rill_status_destroy(st);
  return true;
}

/* The shared models' and the build's folders: as compiled, unless the environment names
 * them (scripts/gpu-check.sh runs a build made on another machine). */
static inline const char *shared_dir(void) {
  const char *d = getenv("RILL_SHARED_DIR");
  return d && *d ? d : RILL_SHARED_DIR;
}
static inline const char *binary_dir(void) {
  const char *d = getenv("RILL_BINARY_DIR");
  return d && *d ? d : RILL_BINARY_DIR;
}

/* Skips the calling test, saying so, when there is no CUDA device. */
#define NEED_CUDA_DEVICE()                                                         \
  do {                                                                             \
    char why_[512];                                                                \
    if (cuda_missing(why_, sizeof why_)) cr_skip_test("no CUDA device: %s", why_); \
  } while (0)

#endif
