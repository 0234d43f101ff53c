/* A string-keyed hash map: FNV-1a hashes, open addressing with linear probing, at most
 * half full. Each slot keeps the key's hash, so a probe compares strings only when the
 * hashes agree.
 *
 * Keys are copied by default (a zero-initialised map owns copies of its keys and frees
 * them); with `borrow_keys` set the map stores the caller's pointers, which must stay
 * valid and unchanged while they are in the map (names that live in the owning object:
 * a scope entry, a schema, a variable description).
 *
 * Values are a pointer or an index (rill_strmap_value). Lookups do not write, so any
 * number of threads may look up a map that nobody changes. */
#ifndef RILL_FRAMEWORK_BASE_STRMAP_H
#define RILL_FRAMEWORK_BASE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "framework/base/status.h"

typedef union rill_strmap_value {
  void *ptr;
  size_t index;
} rill_strmap_value;

typedef struct rill_strmap_slot {
  const char *key; /* NULL: empty */
  uint64_t hash;
  rill_strmap_value val;
} rill_strmap_slot;

typedef struct rill_strmap {
  rill_strmap_slot *slots;
  size_t cap; /* number of slots: 0 or a power of two */
  size_t n;   /* keys present */
  bool borrow_keys;
} rill_strmap;

/* The 64-bit FNV-1a hash of a NUL-terminated string, its high bits folded into the low
 * ones (the map indexes slots by the low bits). */
uint64_t rill_str_hash(const char *s);

/* The value of `key` whose rill_str_hash is `hash`, or NULL. */
rill_strmap_value *rill_strmap_find(const rill_strmap *m, const char *key, uint64_t hash);
static inline rill_strmap_value *rill_strmap_lookup(const rill_strmap *m, const char *key) {
  return m->n ? rill_strmap_find(m, key, rill_str_hash(key)) : NULL;
}
/* Sets key -> val, inserting or replacing. On error (out of memory) the map is unchanged. */
rill_status *rill_strmap_set(rill_strmap *m, const char *key, uint64_t hash, rill_strmap_value val);
/* Removes `key`; returns whether it was there, and its value in *old (may be NULL). */
bool rill_strmap_erase(rill_strmap *m, const char *key, uint64_t hash, rill_strmap_value *old);
/* Makes room for `n` keys in all, so that inserting up to n keys allocates nothing. */
rill_status *rill_strmap_reserve(rill_strmap *m, size_t n);
/* Frees the slots (and copied keys); the map is empty and may be used again. */
void rill_strmap_clear(rill_strmap *m);

/* Index-valued shorthands: a pointer to the index of `key` (or NULL), and key -> index. */
static inline size_t *rill_strmap_get(const rill_strmap *m, const char *key) {
  rill_strmap_value *v = rill_strmap_lookup(m, key);
  return v ? &v->index : NULL;
}
static inline rill_status *rill_strmap_put(rill_strmap *m, const char *key, size_t index) {
  return rill_strmap_set(m, key, rill_str_hash(key), (rill_strmap_value){.index = index});
}

#endif
