#include "framework/io/crc32c.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static bool have_sse42;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) && defined(__GNUC__)
static void init_shift(void);
#endif

static void init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
    table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++) table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  have_sse42 = __builtin_cpu_supports("sse4.2");
  if (have_sse42) init_shift();
#endif
}

static uint32_t crc_table(uint32_t c, const uint8_t *p, size_t n) {
  while (n && ((uintptr_t)p & 7)) {
    c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    n--;
  }
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    w ^= c;
    c = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
        table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
        table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The crc32 instruction takes 3 cycles and can start one every cycle: one chain of
 * them runs at a third of what the CPU can do. So blocks of 3 * LANE bytes are
 * checksummed as three independent chains, then combined. The register update is
 * linear: the register after A then B (|B| = LANE) is shift(register after A) ^ (the
 * register over B from 0), where shift runs the register through LANE zero bytes, a
 * linear map of 32 bits kept as four 256-entry tables. */
#define LANE 4096

static uint32_t shift_table[4][256];

static inline uint32_t shift(uint32_t c) {
  return shift_table[0][c & 0xff] ^ shift_table[1][(c >> 8) & 0xff] ^ shift_table[2][(c >> 16) & 0xff] ^
         shift_table[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw1(uint64_t c64, const uint8_t *p, size_t n) {
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    c64 = __builtin_ia32_crc32di(c64, w);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = (uint32_t)c64;
  while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}

static void init_shift(void) {
  static const uint8_t zeros[LANE];
  uint32_t basis[32];
  for (int i = 0; i < 32; i++) basis[i] = crc_hw1(1u << i, zeros, LANE);
  for (int k = 0; k < 4; k++)
    for (uint32_t b = 0; b < 256; b++) {
      uint32_t v = 0;
      for (int j = 0; j < 8; j++)
        if (b >> j & 1) v ^= basis[8 * k + j];
      shift_table[k][b] = v;
    }
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t n) {
  while (n && ((uintptr_t)p & 7)) {
    c = __builtin_ia32_crc32qi(c, *p++);
    n--;
  }
  while (n >= 3 * LANE) {
    uint64_t c0 = c, c1 = 0, c2 = 0;
    for (size_t i = 0; i < LANE; i += 8) {
      uint64_t w0, w1, w2;
      memcpy(&w0, p + i, 8);
      memcpy(&w1, p + LANE + i, 8);
      memcpy(&w2, p + 2 * LANE + i, 8);
      c0 = __builtin_ia32_crc32di(c0, w0);
      c1 = __builtin_ia32_crc32di(c1, w1);
      c2 = __builtin_ia32_crc32di(c2, w2);
    }
    c = shift(shift((uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;
    p += 3 * LANE;
    n -= 3 * LANE;
  }
  return crc_hw1(c, p, n);
}
#endif

uint32_t rill_crc32c_portable(uint32_t crc, const void *data, size_t n) {
  pthread_once(&once, init);
  return ~crc_table(~crc, data, n);
}

uint32_t rill_crc32c(uint32_t crc, const void *data, size_t n) {
  pthread_once(&once, init);
#if defined(__x86_64__) && defined(__GNUC__)
  if (have_sse42) return ~crc_hw(~crc, data, n);
#endif
  return ~crc_table(~crc, data, n);
}
