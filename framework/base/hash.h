/* The 64-bit FNV-1a hash, of bytes and of NUL-terminated strings. Its values are part of
 * rill's behaviour (random seeds from names, parameter placement on pservers, checkpoint
 * checksums), so it never changes. */
#ifndef RILL_BASE_HASH_H
#define RILL_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define RILL_FNV1A64_OFFSET 0xcbf29ce484222325ULL
#define RILL_FNV1A64_PRIME 0x100000001b3ULL

static inline uint64_t rill_fnv1a64(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = RILL_FNV1A64_OFFSET;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * RILL_FNV1A64_PRIME;
  return h;
}

static inline uint64_t rill_fnv1a64_str(const char *s) {
  uint64_t h = RILL_FNV1A64_OFFSET;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) h = (h ^ *p) * RILL_FNV1A64_PRIME;
  return h;
}

#endif
