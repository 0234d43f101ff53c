#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/strmap.h"
#include "support/fail_alloc.h"

Test(strmap, empty_map_finds_nothing) {
  rill_strmap m = {0};
  cr_assert_null(rill_strmap_get(&m, "x"));
  cr_assert_not(rill_strmap_erase(&m, "x", rill_str_hash("x"), NULL));
  rill_strmap_clear(&m);
}

Test(strmap, put_replaces_and_copies_keys) {
  rill_strmap m = {0};
  char key[8] = "alpha";
  cr_assert_null(rill_strmap_put(&m, key, 1));
  strcpy(key, "beta"); /* the map holds its own copy of "alpha" */
  cr_assert_null(rill_strmap_put(&m, "alpha", 2));
  cr_assert_eq(m.n, 1);
  cr_assert_eq(*rill_strmap_get(&m, "alpha"), 2);
  cr_assert_null(rill_strmap_get(&m, "beta"));
  rill_strmap_clear(&m);
  cr_assert_eq(m.n, 0);
  cr_assert_null(rill_strmap_get(&m, "alpha"));
}

Test(strmap, grows_and_keeps_every_key) {
  rill_strmap m = {0};
  char k[32];
  for (size_t i = 0; i < 5000; i++) {
    snprintf(k, sizeof k, "var_%zu", i);
    cr_assert_null(rill_strmap_put(&m, k, i));
    cr_assert_leq(m.n * 2, m.cap, "at most half full");
  }
  cr_assert_eq(m.n, 5000);
  for (size_t i = 0; i < 5000; i++) {
    snprintf(k, sizeof k, "var_%zu", i);
    const size_t *v = rill_strmap_get(&m, k);
    cr_assert_not_null(v, "%s", k);
    cr_assert_eq(*v, i);
  }
  cr_assert_null(rill_strmap_get(&m, "var_5000"));
  rill_strmap_clear(&m);
}

/* Keys whose hashes agree in the low bits share a probe run; erasing from the middle of
 * the run must keep the keys after it reachable. */
Test(strmap, erase_keeps_colliding_keys_reachable) {
  rill_strmap m = {0};
  cr_assert_null(rill_strmap_reserve(&m, 4));
  size_t mask = m.cap - 1;
  char keys[6][16];
  size_t nk = 0;
  uint64_t want = rill_str_hash("k0") & mask;
  for (int i = 0; nk < 6 && i < 100000; i++) {
    char k[16];
    snprintf(k, sizeof k, "k%d", i);
    if ((rill_str_hash(k) & mask) == want) strcpy(keys[nk++], k);
  }
  cr_assert_eq(nk, 6);
  for (size_t i = 0; i < nk; i++) cr_assert_null(rill_strmap_put(&m, keys[i], i));
  cr_assert_geq(m.cap, 16);
  rill_strmap_value old;
  cr_assert(rill_strmap_erase(&m, keys[2], rill_str_hash(keys[2]), &old));
  cr_assert_eq(old.index, 2);
  cr_assert_not(rill_strmap_erase(&m, keys[2], rill_str_hash(keys[2]), NULL));
  cr_assert_eq(m.n, 5);
  for (size_t i = 0; i < nk; i++) {
    const size_t *v = rill_strmap_get(&m, keys[i]);
    if (i == 2) {
      cr_assert_null(v);
    } else {
      cr_assert_not_null(v, "%s lost after erasing %s", keys[i], keys[2]);
      cr_assert_eq(*v, i);
    }
  }
  cr_assert(rill_strmap_erase(&m, keys[0], rill_str_hash(keys[0]), NULL));
  cr_assert_eq(*rill_strmap_get(&m, keys[5]), 5);
  rill_strmap_clear(&m);
}

Test(strmap, borrowed_keys_and_pointer_values) {
  static const char *const names[] = {"x", "y", "z"};
  int vals[3];
  rill_strmap m = {.borrow_keys = true};
  for (int i = 0; i < 3; i++)
    cr_assert_null(rill_strmap_set(&m, names[i], rill_str_hash(names[i]), (rill_strmap_value){.ptr = &vals[i]}));
  for (int i = 0; i < 3; i++) {
    rill_strmap_value *v = rill_strmap_lookup(&m, names[i]);
    cr_assert_not_null(v);
    cr_assert_eq(v->ptr, &vals[i]);
  }
  size_t found = 0;
  for (size_t i = 0; i < m.cap; i++)
    if (m.slots[i].key) {
      found++;
      cr_assert(m.slots[i].key == names[0] || m.slots[i].key == names[1] || m.slots[i].key == names[2],
                "borrowed keys are the caller's pointers");
    }
  cr_assert_eq(found, 3);
  rill_strmap_clear(&m);
}

Test(strmap, reserve_makes_puts_allocation_free) {
  rill_strmap m = {.borrow_keys = true};
  cr_assert_null(rill_strmap_reserve(&m, 100));
  static char keys[100][8];
  fail_alloc_install();
  fail_alloc_fail_at(1, true);
  for (int i = 0; i < 100; i++) {
    snprintf(keys[i], sizeof keys[i], "n%d", i);
    cr_assert_null(rill_strmap_put(&m, keys[i], (size_t)i));
  }
  cr_assert_not(fail_alloc_failed(), "a reserved map allocated");
  fail_alloc_fail_at(0, false);
  rill_strmap_clear(&m);
  fail_alloc_uninstall();
}

typedef struct fill_ctx {
  rill_strmap m;
} fill_ctx;

static rill_status *fill(void *ctx) {
  fill_ctx *c = ctx;
  c->m = (rill_strmap){0};
  char k[16];
  for (size_t i = 0; i < 40; i++) {
    snprintf(k, sizeof k, "key%zu", i);
    rill_status *st = rill_strmap_put(&c->m, k, i);
    if (st) {
      /* what was put before the failure is intact */
      for (size_t j = 0; j < i; j++) {
        snprintf(k, sizeof k, "key%zu", j);
        const size_t *v = rill_strmap_get(&c->m, k);
        if (!v || *v != j) {
          rill_status_destroy(st);
          return rill_error(RILL_INTERNAL, "key%zu lost after a failed put", j);
        }
      }
      if (rill_strmap_get(&c->m, "key39") || c->m.n != i) {
        rill_status_destroy(st);
        return rill_error(RILL_INTERNAL, "a failed put changed the map");
      }
      return st;
    }
  }
  return NULL;
}

static void fill_cleanup(void *ctx) { rill_strmap_clear(&((fill_ctx *)ctx)->m); }

Test(strmap, failed_puts_leave_the_map_unchanged_and_leak_nothing) {
  fill_ctx c;
  char why[256] = "";
  long runs = fail_alloc_sweep(fill, fill_cleanup, &c, 1000, false, why, sizeof why);
  cr_assert_geq(runs, 40, "%s", why); /* every copied key and every growth can fail */
}
