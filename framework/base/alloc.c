#include "framework/base/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static void *sys_alloc(void *ctx, size_t size) {
  (void)ctx;
  return malloc(size ? size : 1);
}
static void *sys_realloc(void *ctx, void *ptr, size_t size) {
  (void)ctx;
  return realloc(ptr, size ? size : 1);
}
static void *sys_aligned(void *ctx, size_t size, size_t align) {
  (void)ctx;
  void *p = NULL;
  if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1))
    return NULL;
  return p;
}
static void sys_free(void *ctx, void *ptr) {
  (void)ctx;
  free(ptr);
}

static const rill_allocator system_allocator = {sys_alloc, sys_realloc, sys_aligned, sys_free,
                                                NULL};
static rill_allocator current = {sys_alloc, sys_realloc, sys_aligned, sys_free, NULL};

void rill_set_allocator(const rill_allocator *allocator) {
  current = allocator ? *allocator : system_allocator;
}

void *rill_malloc(size_t size) { return current.alloc(current.ctx, size); }

void *rill_calloc(size_t count, size_t size) {
  size_t n;
  if (!rill_mul_size(count, size, &n)) return NULL;
  void *p = current.alloc(current.ctx, n);
  if (p) memset(p, 0, n);
  return p;
}

void *rill_realloc(void *ptr, size_t size) { return current.realloc(current.ctx, ptr, size); }

void *rill_aligned_alloc(size_t size, size_t align) {
  return current.aligned_alloc(current.ctx, size, align);
}

void rill_free(void *ptr) {
  if (ptr) current.free(current.ctx, ptr);
}

char *rill_strndup(const char *s, size_t n) {
  char *d = rill_malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = 0;
  return d;
}

char *rill_strdup(const char *s) { return rill_strndup(s, strlen(s)); }

char *rill_vstrprintf(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return NULL;
  char *s = rill_malloc((size_t)n + 1);
  if (!s) return NULL;
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

char *rill_strprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = rill_vstrprintf(fmt, ap);
  va_end(ap);
  return s;
}

int rill_grow(void **items, size_t *cap, size_t need, size_t elem_size) {
  if (need <= *cap) return 1;
  size_t ncap = *cap ? *cap : 4;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2) return 0;
    ncap *= 2;
  }
  size_t bytes;
  if (!rill_mul_size(ncap, elem_size, &bytes)) return 0;
  void *p = rill_realloc(*items, bytes);
  if (!p) return 0;
  *items = p;
  *cap = ncap;
  return 1;
}
