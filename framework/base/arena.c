#include "framework/base/arena.h"

#include <stdint.h>
#include <string.h>

#include "framework/base/alloc.h"

#define ARENA_ALIGN 16
#define ARENA_DEFAULT_CHUNK 32768

struct rill_arena_chunk {
  rill_arena_chunk *next;
  size_t used, cap;
  max_align_t data[];
};

void *rill_arena_alloc(rill_arena *a, size_t count, size_t size) {
  size_t bytes;
  if (!rill_mul_size(count, size, &bytes) || bytes > SIZE_MAX - 64) return NULL;
  bytes = (bytes + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (!bytes) bytes = ARENA_ALIGN;
  if (!a->head || a->head->cap - a->head->used < bytes) {
    size_t chunk = a->chunk_size ? a->chunk_size : ARENA_DEFAULT_CHUNK;
    size_t cap = bytes > chunk ? bytes : chunk;
    rill_arena_chunk *c = rill_malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->next = a->head;
    c->used = 0;
    c->cap = cap;
    a->head = c;
  }
  void *p = (char *)a->head->data + a->head->used;
  a->head->used += bytes;
  memset(p, 0, bytes);
  return p;
}

char *rill_arena_strdup(rill_arena *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = rill_arena_alloc(a, n, 1);
  if (d) memcpy(d, s, n);
  return d;
}

void rill_arena_free(rill_arena *a) {
  while (a->head) {
    rill_arena_chunk *next = a->head->next;
    rill_free(a->head);
    a->head = next;
  }
}
