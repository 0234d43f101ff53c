#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "framework/base/arena.h"
#include "support/fail_alloc.h"

Test(arena, blocks_are_zeroed_aligned_and_distinct) {
  rill_arena a = {0};
  unsigned char *prev = NULL;
  for (size_t i = 1; i < 200; i++) {
    unsigned char *p = rill_arena_alloc(&a, i, 3);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % 16, 0);
    for (size_t k = 0; k < i * 3; k++) cr_assert_eq(p[k], 0);
    memset(p, 0xab, i * 3);
    if (prev) cr_assert_neq(p, prev);
    prev = p;
  }
  rill_arena_free(&a);
  cr_assert_null(a.head);
}

Test(arena, zero_sized_and_large_blocks) {
  rill_arena a = {.chunk_size = 64};
  void *z = rill_arena_alloc(&a, 0, 8);
  void *z2 = rill_arena_alloc(&a, 0, 8);
  cr_assert(z && z2 && z != z2);
  char *big = rill_arena_alloc(&a, 1000, 1); /* over a chunk: a chunk of its own */
  cr_assert_not_null(big);
  memset(big, 1, 1000);
  char *after = rill_arena_alloc(&a, 8, 1);
  cr_assert_not_null(after);
  cr_assert_eq(after[0], 0);
  rill_arena_free(&a);
}

Test(arena, size_overflow_is_refused) {
  rill_arena a = {0};
  cr_assert_null(rill_arena_alloc(&a, SIZE_MAX / 2, 3));
  cr_assert_null(rill_arena_alloc(&a, 1, SIZE_MAX - 8));
  cr_assert_null(a.head, "nothing allocated for a refused size");
}

Test(arena, strdup_copies) {
  rill_arena a = {0};
  char src[] = "conv2d_0.w_0";
  char *d = rill_arena_strdup(&a, src);
  src[0] = 'X';
  cr_assert_str_eq(d, "conv2d_0.w_0");
  rill_arena_free(&a);
}

Test(arena, failed_chunk_allocation_returns_null_and_frees_cleanly) {
  fail_alloc_install();
  rill_arena a = {.chunk_size = 128};
  cr_assert_not_null(rill_arena_alloc(&a, 100, 1));
  fail_alloc_fail_at(1, false);
  cr_assert_null(rill_arena_alloc(&a, 100, 1), "needs a new chunk, which fails");
  cr_assert(fail_alloc_failed());
  cr_assert_not_null(rill_arena_alloc(&a, 16, 1), "the first chunk still has room");
  rill_arena_free(&a);
  cr_assert_eq(fail_alloc_live(), 0);
  fail_alloc_uninstall();
}
