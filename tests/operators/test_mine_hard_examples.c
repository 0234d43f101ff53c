/* mine_hard_examples: max_negative picks the num_pos * ratio highest-loss unmatched priors
 * under the distance threshold, listed in prior order with a LoD per image; hard_example
 * selects sample_size priors by ClsLoss + LocLoss and unmatches the matched ones left
 * out; the errors. */
#include "op_test.h"

static op_harness *mh_harness(const float *cls, const float *loc, const int32_t *match,
                              const float *dist, int64_t n, int64_t np) {
  op_harness *h = harness("mine_hard_examples");
  bind_input(h, "ClsLoss", "conf_loss", RILL_DTYPE_FP32, DIMS(n, np), cls);
  if (loc) bind_input(h, "LocLoss", "loc_loss", RILL_DTYPE_FP32, DIMS(n, np), loc);
  bind_input(h, "MatchIndices", "match", RILL_DTYPE_INT32, DIMS(n, np), match);
  bind_input(h, "MatchDist", "dist", RILL_DTYPE_FP32, DIMS(n, np), dist);
  OK(op_harness_output(h, "NegIndices", "neg"));
  OK(op_harness_output(h, "UpdatedMatchIndices", "upd"));
  return h;
}

static void expect_ints(const rill_tensor *t, const int32_t *want, int64_t n) {
  cr_assert_eq(rill_tensor_numel(t), n);
  const int32_t *got = rill_tensor_ptr(t);
  for (int64_t i = 0; i < n; i++) cr_assert_eq(got[i], want[i], "[%lld] %d != %d", (long long)i, got[i], want[i]);
}

Test(mine_hard_examples, max_negative) {
  enum { N = 2, NP = 6 };
  const float cls[N * NP] = {0.9f, 0.1f, 0.8f, 0.7f, 0.3f, 0.95f,
                             0.2f, 0.4f, 0.6f, 0.5f, 0.1f, 0.3f};
  const int32_t match[N * NP] = {0, -1, -1, -1, -1, -1,
                                 -1, -1, -1, -1, -1, -1};
  const float dist[N * NP] = {0.8f, 0.1f, 0.2f, 0.6f, 0.0f, 0.3f,
                              0, 0, 0, 0, 0, 0};
  op_harness *h = mh_harness(cls, NULL, match, dist, N, NP);
  OK(op_harness_attr_float(h, "neg_pos_ratio", 2.0f));
  OK(op_harness_attr_float(h, "neg_dist_threshold", 0.5f));
  OK(op_harness_run(h));
  /* image 0: 1 positive, 2 negatives among priors 1, 2, 4, 5 (3 is over the threshold):
   * losses 0.95 (5) and 0.8 (2), listed 2, 5; image 1: no positive, no negative */
  const rill_tensor *neg = op_harness_tensor(h, "neg");
  expect_dims(neg, DIMS(2, 1));
  expect_ints(neg, (const int32_t[]){2, 5}, 2);
  cr_assert(neg->lod.nlevels == 1 && neg->lod.levels[0].n == 3);
  cr_assert(neg->lod.levels[0].offsets[1] == 2 && neg->lod.levels[0].offsets[2] == 2);
  expect_ints(op_harness_tensor(h, "upd"), match, N * NP);
  op_harness_destroy(h);
}

Test(mine_hard_examples, hard_example) {
  enum { NP = 5 };
  const float cls[NP] = {0.1f, 0.5f, 0.2f, 0.9f, 0.3f};
  const float loc[NP] = {0.05f, 0.0f, 0.5f, 0.0f, 0.0f};
  const int32_t match[NP] = {1, 0, -1, -1, 2};
  const float dist[NP] = {0.9f, 0.8f, 0.1f, 0.2f, 0.7f};
  op_harness *h = mh_harness(cls, loc, match, dist, 1, NP);
  OK(op_harness_attr_string(h, "mining_type", "hard_example"));
  OK(op_harness_attr_int(h, "sample_size", 3));
  OK(op_harness_run(h));
  /* losses 0.15, 0.5, 0.7, 0.9, 0.3: selected 3, 2, 1; matched 0 and 4 are dropped */
  expect_ints(op_harness_tensor(h, "neg"), (const int32_t[]){2, 3}, 2);
  expect_ints(op_harness_tensor(h, "upd"), (const int32_t[]){-1, 0, -1, -1, -1}, NP);
  op_harness_destroy(h);
}

Test(mine_hard_examples, errors_name_op_and_variable) {
  float f[12] = {0}; /* room for the int64 MatchIndices too */
  int32_t m[6] = {0};
  op_harness *h = mh_harness(f, NULL, m, f, 2, 3);
  OK(op_harness_attr_string(h, "mining_type", "random"));
  EXPECT_ERROR(op_harness_run(h), "mine_hard_examples", "mining_type", "random");
  op_harness_destroy(h);
  h = harness("mine_hard_examples");
  bind_input(h, "ClsLoss", "conf_loss", RILL_DTYPE_FP32, DIMS(2, 3), f);
  bind_input(h, "MatchIndices", "match64", RILL_DTYPE_INT64, DIMS(2, 3), f);
  bind_input(h, "MatchDist", "dist", RILL_DTYPE_FP32, DIMS(2, 3), f);
  OK(op_harness_output(h, "NegIndices", "neg"));
  OK(op_harness_output(h, "UpdatedMatchIndices", "upd"));
  EXPECT_ERROR(op_harness_run(h), "mine_hard_examples", "match64", "int32");
  op_harness_destroy(h);
  h = mh_harness(f, NULL, m, f, 2, 3);
  OK(op_harness_attr_float(h, "neg_dist_threshold", 1.5f));
  EXPECT_ERROR(op_harness_run(h), "mine_hard_examples", "neg_dist_threshold");
  op_harness_destroy(h);
}
