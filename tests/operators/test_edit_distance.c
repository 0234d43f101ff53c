/* edit_distance against the recursive definition of the Levenshtein distance (memoised
 * over the full table), on LoD and on padded inputs; and the errors. */
#include "op_test.h"

static int64_t memo[16][16];

static int64_t lev(const int64_t *a, int64_t na, const int64_t *b, int64_t nb) {
  if (na == 0) return nb;
  if (nb == 0) return na;
  if (memo[na][nb] >= 0) return memo[na][nb];
  int64_t best = lev(a, na - 1, b, nb - 1) + (a[na - 1] != b[nb - 1]);
  int64_t del = lev(a, na - 1, b, nb) + 1, ins = lev(a, na, b, nb - 1) + 1;
  if (del < best) best = del;
  if (ins < best) best = ins;
  return memo[na][nb] = best;
}

static double ref(const int64_t *a, int64_t na, const int64_t *b, int64_t nb) {
  memset(memo, 0xff, sizeof memo);
  return (double)lev(a, na, b, nb);
}

static void bind_lod(op_harness *h, const char *slot, const char *name, const int64_t *v,
                     int64_t n, const uint64_t *lod, size_t nlod) {
  rill_tensor *t = op_harness_make(RILL_DTYPE_INT64, DIMS(n, 1), v);
  cr_assert_not_null(t);
  const uint64_t *levels[1] = {lod};
  size_t counts[1] = {nlod};
  OK(rill_tensor_set_lod(t, 1, levels, counts));
  OK(op_harness_input(h, slot, name, t));
  op_harness_free_tensor(t);
}

Test(edit_distance, lod_pairs_plain_and_normalized) {
  const int64_t hyp[] = {1, 2, 3, 4, 5, 7, 1, 1, 2, 2, 9, 8, 7, 6, 5, 4, 3};
  const int64_t rf[] = {1, 3, 3, 4, 4, 5, 8, 9, 2, 3, 2, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const uint64_t hl[] = {0, 3, 5, 6, 6, 10, 17}, rl[] = {0, 4, 6, 8, 10, 13, 20};
  for (int norm = 0; norm < 2; norm++) {
    op_harness *h = harness("edit_distance");
    bind_lod(h, "Hyps", "hyps", hyp, 17, hl, 7);
    bind_lod(h, "Refs", "refs", rf, 20, rl, 7);
    OK(op_harness_attr_bool(h, "normalized", norm));
    OK(op_harness_output(h, "Out", "d"));
    OK(op_harness_output(h, "SequenceNum", "n"));
    OK(op_harness_run(h));
    rill_tensor *d = op_harness_tensor(h, "d");
    expect_dims(d, DIMS(6, 1));
    cr_assert_eq(*(int64_t *)rill_tensor_ptr(op_harness_tensor(h, "n")), 6);
    for (int i = 0; i < 6; i++) {
      int64_t na = (int64_t)(hl[i + 1] - hl[i]), nb = (int64_t)(rl[i + 1] - rl[i]);
      double want = ref(hyp + hl[i], na, rf + rl[i], nb);
      float w = norm ? (float)want / (float)nb : (float)want;
      cr_assert_eq(((float *)rill_tensor_ptr(d))[i], w, "pair %d normalized %d", i, norm);
    }
    op_harness_destroy(h);
  }
}

Test(edit_distance, padded_rows_with_lengths) {
  const int64_t hyp[] = {1, 2, 3, 9, 5, 6, 0, 0, 1, 1, 1, 1}, rf[] = {1, 3, 0, 5, 6, 7, 1, 1, 0};
  op_harness *h = harness("edit_distance");
  bind_input(h, "Hyps", "hyps", RILL_DTYPE_INT64, DIMS(3, 4), hyp);
  bind_input(h, "Refs", "refs", RILL_DTYPE_INT64, DIMS(3, 3), rf);
  bind_input(h, "HypsLength", "hl", RILL_DTYPE_INT64, DIMS(3), (const int64_t[]){3, 2, 4});
  bind_input(h, "RefsLength", "rl", RILL_DTYPE_INT64, DIMS(3), (const int64_t[]){2, 3, 2});
  OK(op_harness_output(h, "Out", "d"));
  OK(op_harness_output(h, "SequenceNum", "n"));
  OK(op_harness_run(h));
  const float *d = rill_tensor_ptr(op_harness_tensor(h, "d"));
  cr_assert(d[0] == 1.0f && d[1] == 1.0f && d[2] == 2.0f, "%g %g %g", d[0], d[1], d[2]);
  bind_input(h, "RefsLength", "rl", RILL_DTYPE_INT64, DIMS(3), (const int64_t[]){2, 4, 2});
  EXPECT_ERROR(op_harness_run(h), "edit_distance", "Refs", "refs", "length 4");
  op_harness_destroy(h);
}

Test(edit_distance, normalized_refuses_an_empty_reference) {
  const int64_t v[] = {1, 2};
  const uint64_t hl[] = {0, 1, 2}, rl[] = {0, 2, 2};
  op_harness *h = harness("edit_distance");
  bind_lod(h, "Hyps", "hyps", v, 2, hl, 3);
  bind_lod(h, "Refs", "refs", v, 2, rl, 3);
  OK(op_harness_attr_bool(h, "normalized", true));
  OK(op_harness_output(h, "Out", "d"));
  OK(op_harness_output(h, "SequenceNum", "n"));
  EXPECT_ERROR(op_harness_run(h), "edit_distance", "Refs", "refs", "reference 1 is empty");
  op_harness_destroy(h);
}
