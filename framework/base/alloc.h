/* The library's allocator: every allocation goes through the installed rill_allocator,
 * so tests can make the Nth allocation fail. */
#ifndef RILL_FRAMEWORK_BASE_ALLOC_H
#define RILL_FRAMEWORK_BASE_ALLOC_H

#include <stdarg.h>
#include <stddef.h>

#include "rill.h"

/* Alignment of tensor data. */
#define RILL_TENSOR_ALIGN 64

void *rill_malloc(size_t size);
/* Zeroed; NULL if count * size overflows. */
void *rill_calloc(size_t count, size_t size);
void *rill_realloc(void *ptr, size_t size);
void *rill_aligned_alloc(size_t size, size_t align);
void rill_free(void *ptr);
char *rill_strdup(const char *s);
/* A new string formatted as by printf (NULL when out of memory). */
char *rill_strprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *rill_vstrprintf(const char *fmt, va_list ap);
char *rill_strndup(const char *s, size_t n);

/* Grows *items (capacity *cap elements of elem_size bytes) to hold at least `need`. */
int rill_grow(void **items, size_t *cap, size_t need, size_t elem_size);

/* Overflow-checked arithmetic; return 0 on overflow. */
static inline int rill_mul_size(size_t a, size_t b, size_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}
static inline int rill_add_size(size_t a, size_t b, size_t *out) {
  return !__builtin_add_overflow(a, b, out);
}

#endif
