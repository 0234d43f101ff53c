/* A bump arena: many small allocations freed together. Objects built once and freed as
 * a whole (an executor plan, the messages of one program encoding) take their tables
 * from one. Blocks are 16-byte aligned and zeroed. A zero-initialised arena is empty. */
#ifndef RILL_FRAMEWORK_BASE_ARENA_H
#define RILL_FRAMEWORK_BASE_ARENA_H

#include <stddef.h>

typedef struct rill_arena_chunk rill_arena_chunk;

typedef struct rill_arena {
  rill_arena_chunk *head;
  size_t chunk_size; /* bytes per chunk (a larger block gets a chunk of its own); 0: 32 KiB */
} rill_arena;

/* count * size zeroed bytes (at least one), or NULL when out of memory or when the
 * size overflows. */
void *rill_arena_alloc(rill_arena *a, size_t count, size_t size);
/* A copy of `s` in the arena, or NULL. */
char *rill_arena_strdup(rill_arena *a, const char *s);
/* Frees every chunk; the arena is empty again. */
void rill_arena_free(rill_arena *a);

#endif
