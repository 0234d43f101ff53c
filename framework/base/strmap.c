#include "framework/base/strmap.h"

#include <string.h>

#include "framework/base/alloc.h"

#define STRMAP_MIN_SLOTS 16

uint64_t rill_str_hash(const char *s) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h ^ (h >> 29);
}

/* The slot holding `key`, or the empty slot that ends its probe run. cap > 0. */
static rill_strmap_slot *probe(const rill_strmap *m, const char *key, uint64_t hash) {
  size_t mask = m->cap - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    rill_strmap_slot *s = &m->slots[i];
    if (!s->key || (s->hash == hash && strcmp(s->key, key) == 0)) return s;
  }
}

rill_strmap_value *rill_strmap_find(const rill_strmap *m, const char *key, uint64_t hash) {
  if (!m->cap) return NULL;
  rill_strmap_slot *s = probe(m, key, hash);
  return s->key ? &s->val : NULL;
}

static void place(rill_strmap_slot *slots, size_t cap, const rill_strmap_slot *from) {
  size_t i = from->hash & (cap - 1);
  while (slots[i].key) i = (i + 1) & (cap - 1);
  slots[i] = *from;
}

static bool rehash(rill_strmap *m, size_t cap) {
  rill_strmap_slot *slots = rill_calloc(cap, sizeof *slots);
  if (!slots) return false;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].key) place(slots, cap, &m->slots[i]);
  rill_free(m->slots);
  m->slots = slots;
  m->cap = cap;
  return true;
}

rill_status *rill_strmap_reserve(rill_strmap *m, size_t n) {
  if (n > SIZE_MAX / 4 / sizeof(rill_strmap_slot)) return rill_oom();
  size_t cap = m->cap ? m->cap : STRMAP_MIN_SLOTS;
  while (cap < n * 2) cap *= 2;
  if (cap != m->cap && !rehash(m, cap)) return rill_oom();
  return NULL;
}

rill_status *rill_strmap_set(rill_strmap *m, const char *key, uint64_t hash, rill_strmap_value val) {
  rill_strmap_value *have = rill_strmap_find(m, key, hash);
  if (have) {
    *have = val;
    return NULL;
  }
  RILL_TRY(rill_strmap_reserve(m, m->n + 1));
  const char *k = key;
  if (!m->borrow_keys && !(k = rill_strdup(key))) return rill_oom();
  rill_strmap_slot *s = probe(m, key, hash);
  *s = (rill_strmap_slot){.key = k, .hash = hash, .val = val};
  m->n++;
  return NULL;
}

bool rill_strmap_erase(rill_strmap *m, const char *key, uint64_t hash, rill_strmap_value *old) {
  if (!m->cap) return false;
  rill_strmap_slot *s = probe(m, key, hash);
  if (!s->key) return false;
  if (old) *old = s->val;
  if (!m->borrow_keys) rill_free((void *)s->key);
  s->key = NULL;
  m->n--;
  /* Re-place the rest of the probe run so that lookups past the hole still succeed. */
  size_t mask = m->cap - 1;
  for (size_t i = ((size_t)(s - m->slots) + 1) & mask; m->slots[i].key; i = (i + 1) & mask) {
    rill_strmap_slot e = m->slots[i];
    m->slots[i].key = NULL;
    place(m->slots, m->cap, &e);
  }
  return true;
}

void rill_strmap_clear(rill_strmap *m) {
  if (!m->borrow_keys)
    for (size_t i = 0; i < m->cap; i++) rill_free((void *)m->slots[i].key);
  rill_free(m->slots);
  m->slots = NULL;
  m->cap = m->n = 0;
}
