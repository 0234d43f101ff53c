/* Damaged ProgramDesc bytes -- cut at every offset, or with random bytes flipped --
 * give an error or a valid program, never a crash, and leak nothing (the counting
 * allocator checks it here; ASan checks it again in the sanitizer build). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/program/program.h"
#include "support/fail_alloc.h"
#include "support/slurp.h"

static const char *const small_models[] = {
    RILL_SHARED_DIR "/models/fit_a_line_raftliu/__model__",
    RILL_SHARED_DIR "/models/luotao1_example_mlp_2018/__model__",
};

/* Decodes; a program that comes out must survive encode -> decode equal. Returns
 * whether it decoded. */
static bool decode_checked(const uint8_t *bytes, size_t size, const char *what) {
  rill_program *p = NULL;
  rill_status *st = rill_program_decode(bytes, size, &p);
  if (st) {
    cr_assert_neq(rill_status_code(st), RILL_OK);
    cr_assert_not_null(rill_status_message(st));
    cr_assert_null(p, "%s: an out parameter was set on error", what);
    rill_status_destroy(st);
    return false;
  }
  uint8_t *e = NULL;
  size_t n = 0;
  st = rill_program_encode(p, &e, &n);
  cr_assert_null(st, "%s: decoded but does not encode: %s", what, rill_status_message(st));
  rill_program *q = NULL;
  st = rill_program_decode(e, n, &q);
  cr_assert_null(st, "%s: re-decode: %s", what, rill_status_message(st));
  cr_assert(rill_program_equal(p, q), "%s: round trip differs", what);
  rill_free(e);
  rill_program_destroy(p);
  rill_program_destroy(q);
  return true;
}

Test(program, truncation_at_every_offset_is_handled) {
  for (size_t m = 0; m < sizeof small_models / sizeof *small_models; m++) {
    size_t size = 0;
    unsigned char *bytes = slurp_file(small_models[m], &size);
    cr_assert_not_null(bytes, "%s", small_models[m]);
    fail_alloc_install();
    size_t decoded = 0;
    for (size_t cut = 0; cut < size; cut++) {
      /* a private copy of exactly `cut` bytes, so ASan sees any read past the end */
      unsigned char *part = malloc(cut ? cut : 1);
      memcpy(part, bytes, cut);
      decoded += decode_checked(part, cut, small_models[m]);
      free(part);
      cr_assert_eq(fail_alloc_live(), 0, "%s cut at %zu: %lld allocations leaked", small_models[m],
                   cut, (long long)fail_alloc_live());
    }
    fail_alloc_uninstall();
    /* cutting inside the one block always breaks the message; the empty prefix has no
     * blocks, which is an error too */
    cr_assert_lt(decoded, size / 4, "%s: %zu of %zu prefixes decoded", small_models[m], decoded, size);
    cr_assert(decode_checked(bytes, size, small_models[m]));
    free(bytes);
  }
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void) { /* xorshift64*: fixed seed, reproducible */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}

Test(program, flipped_bytes_are_handled) {
  for (size_t m = 0; m < sizeof small_models / sizeof *small_models; m++) {
    size_t size = 0;
    unsigned char *bytes = slurp_file(small_models[m], &size);
    cr_assert_not_null(bytes);
    unsigned char *copy = malloc(size);
    fail_alloc_install();
    size_t decoded = 0, runs = 1500;
    for (size_t r = 0; r < runs; r++) {
      memcpy(copy, bytes, size);
      size_t flips = 1 + rng() % 3;
      for (size_t k = 0; k < flips; k++) copy[rng() % size] ^= (unsigned char)(1 + rng() % 255);
      decoded += decode_checked(copy, size, small_models[m]);
      cr_assert_eq(fail_alloc_live(), 0, "%s flip run %zu: %lld allocations leaked",
                   small_models[m], r, (long long)fail_alloc_live());
    }
    fail_alloc_uninstall();
    /* many flips land in names and values and still parse: both outcomes must occur */
    cr_assert_gt(decoded, 0);
    cr_assert_lt(decoded, runs);
    free(copy);
    free(bytes);
  }
}

Test(program, garbage_is_corrupt) {
  static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  rill_program *p = NULL;
  rill_status *st = rill_program_decode(junk, sizeof junk, &p);
  cr_assert_eq(rill_status_code(st), RILL_CORRUPT);
  cr_assert_null(p);
  rill_status_destroy(st);
  st = rill_program_decode("", 0, &p);
  cr_assert_eq(rill_status_code(st), RILL_CORRUPT, "an empty file has no blocks");
  cr_assert(strstr(rill_status_message(st), "no blocks"), "%s", rill_status_message(st));
  rill_status_destroy(st);
}

/* An unknown field numbered beyond protobuf's largest (2^29 - 1): protobuf-c reads it,
 * but no protobuf writer can, and rill could not write it back. The fuzzer found such a
 * program decoding and then failing to encode; it is now refused on decode, naming the
 * number, at the top level and inside an op. */
Test(program, field_number_beyond_protobufs_range_is_corrupt) {
  /* block 0 {parent -1}, then key = (2^29 << 3) | varint as a 5-byte varint, and 1 */
#define BLOCK0 0x08, 0x00, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
  static const uint8_t top[] = {0x0a, 0x0d, BLOCK0, 0x80, 0x80, 0x80, 0x80, 0x10, 0x01};
  rill_program *p = NULL;
  rill_status *st = rill_program_decode(top, sizeof top, &p);
  cr_assert_not_null(st);
  cr_assert_eq(rill_status_code(st), RILL_CORRUPT);
  cr_assert(strstr(rill_status_message(st), "536870912"), "%s", rill_status_message(st));
  cr_assert_null(p);
  rill_status_destroy(st);
  /* The largest valid number is kept and written back. */
  static const uint8_t edge[] = {0x0a, 0x0d, BLOCK0, 0xf8, 0xff, 0xff, 0xff, 0x0f, 0x01};
  cr_assert(decode_checked(edge, sizeof edge, "field 2^29 - 1"));
  /* block 0 { op { type "x", field 2^30 = 5 } } */
  static const uint8_t nested[] = {0x0a, 0x18, BLOCK0, 0x22, 0x09, 0x1a, 0x01, 0x78, 0x80, 0x80, 0x80, 0x80, 0x20, 0x05};
#undef BLOCK0
  st = rill_program_decode(nested, sizeof nested, &p);
  cr_assert_not_null(st, "decoded a program with an op field numbered 2^30");
  cr_assert(strstr(rill_status_message(st), "1073741824"), "%s", rill_status_message(st));
  rill_status_destroy(st);
}
