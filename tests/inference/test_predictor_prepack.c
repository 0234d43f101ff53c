/* The predictor's constant weights (framework/inference/predictor.c, freeze_weights):
 * the shared MLP models answer at batch 16 bit for bit as with weights that may change,
 * on 1 and 2 threads; each weight is packed once, on the first run, reused by every
 * later run and by clones, and freed with the last predictor (the sanitizer builds check
 * that nothing leaks); a fetched weight is a copy the caller may write. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "framework/data/tensor.h"
#include "framework/inference/predictor.h"
#include "framework/io/npy.h"
#include "kernels/cpu/sgemm.h"
#include "rill.h"

#include "predictor_test.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

#define BATCH 16

static rill_predictor *open_model(const char *name, bool constant, int threads) {
  rill_predictor_config *c = model_config(name);
  OK(rill_predictor_config_set_threads(c, threads));
  OK(rill_predictor_config_set_constant_weights(c, constant));
  return open_config(c);
}

/* The model's reference inputs, their rows repeated to BATCH rows. */
static void batch_inputs(const char *name, const rill_predictor *p, inputs *in) {
  in->n = rill_predictor_num_inputs(p);
  cr_assert(in->n > 0 && in->n <= 8);
  for (size_t i = 0; i < in->n; i++) {
    char path[1024];
    rill_tensor *ref;
    in->names[i] = rill_predictor_input_name(p, i);
    snprintf(path, sizeof path, MODELS "%s/refs/input_%s.npy", name, in->names[i]);
    OK(rill_npy_load(path, &ref));
    size_t nd = rill_tensor_ndim(ref);
    int64_t dims[RILL_MAX_DIMS];
    memcpy(dims, rill_tensor_dims(ref), nd * sizeof *dims);
    cr_assert(nd >= 1 && dims[0] >= 1);
    size_t row = rill_tensor_byte_size(ref) / (size_t)dims[0];
    int64_t rows = dims[0];
    dims[0] = BATCH;
    OK(rill_tensor_create(rill_tensor_dtype(ref), dims, nd, &in->t[i]));
    for (int64_t r = 0; r < BATCH; r++)
      memcpy((char *)rill_tensor_data(in->t[i]) + (size_t)r * row,
             (const char *)rill_tensor_data(ref) + (size_t)(r % rows) * row, row);
    rill_tensor_destroy(ref);
  }
}

static rill_tensor *run_once(rill_predictor *p, const inputs *in) {
  rill_tensor *out[8] = {NULL};
  cr_assert_eq(rill_predictor_num_outputs(p), 1);
  OK(rill_predictor_run(p, in->names, in->t, in->n, out));
  return out[0];
}

static void expect_same(const char *what, rill_tensor *a, rill_tensor *b) {
  cr_assert_eq(rill_tensor_byte_size(a), rill_tensor_byte_size(b), "%s: sizes differ", what);
  cr_assert(memcmp(rill_tensor_data(a), rill_tensor_data(b), rill_tensor_byte_size(a)) == 0,
            "%s: outputs differ", what);
}

Test(predictor_prepack, outputs_are_unchanged_bit_for_bit) {
  static const char *const models[] = {"pureboys_word2vec", "luotao1_example_mlp_2018", "mnist_mlp_handwriting"};
  for (size_t m = 0; m < sizeof models / sizeof *models; m++)
    for (int threads = 1; threads <= 2; threads++) {
      rill_predictor *plain = open_model(models[m], false, threads), *packed = open_model(models[m], true, threads);
      inputs in;
      batch_inputs(models[m], plain, &in);
      rill_tensor *want = run_once(plain, &in);
      for (int run = 0; run < 3; run++) { /* the first run packs, the others reuse */
        char what[128];
        snprintf(what, sizeof what, "%s, %d threads, run %d", models[m], threads, run);
        rill_tensor *got = run_once(packed, &in);
        expect_same(what, want, got);
        rill_tensor_destroy(got);
      }
      rill_tensor_destroy(want);
      free_inputs(&in);
      rill_predictor_destroy(plain);
      rill_predictor_destroy(packed);
    }
}

Test(predictor_prepack, packed_once_reused_by_clones_and_freed_with_the_last) {
  rill_sgemm_packed_stats s0 = rill_sgemm_packed_counters();
  rill_predictor *p = open_model("pureboys_word2vec", true, 1);
  inputs in;
  batch_inputs("pureboys_word2vec", p, &in);
  rill_tensor *first = run_once(p, &in);
  rill_sgemm_packed_stats s1 = rill_sgemm_packed_counters();
  if (!rill_sgemm_has_kernels()) {
    /* OpenBLAS runs the products: nothing is packed, nothing is held */
    cr_assert_eq(s1.packs_made, s0.packs_made);
    cr_assert_eq(s1.bytes_live, s0.bytes_live);
  } else {
    /* word2vec's two fc layers: [128, 256] and [256, 2074] */
    cr_assert_eq(s1.packs_made - s0.packs_made, 2, "packed %ld weights", (long)(s1.packs_made - s0.packs_made));
    cr_assert_eq(s1.bytes_live - s0.bytes_live, (int64_t)sizeof(float) * (128 * 256 + 256 * 2080));
  }
  rill_predictor *clone = NULL;
  OK(rill_predictor_clone(p, &clone));
  for (int run = 0; run < 4; run++) {
    rill_tensor *a = run_once(p, &in), *b = run_once(clone, &in);
    expect_same("original", first, a);
    expect_same("clone", first, b);
    rill_tensor_destroy(a);
    rill_tensor_destroy(b);
  }
  rill_sgemm_packed_stats s2 = rill_sgemm_packed_counters();
  cr_assert_eq(s2.packs_made, s1.packs_made, "the clone and later runs pack nothing");
  cr_assert_eq(s2.bytes_live, s1.bytes_live);
  if (rill_sgemm_has_kernels())
    cr_assert_eq(s2.packed_calls - s1.packed_calls, 2 * 8, "every run of either uses the packed forms");
  rill_predictor_destroy(p);
  cr_assert_eq(rill_sgemm_packed_counters().bytes_live, s1.bytes_live, "the clone keeps the weights");
  rill_tensor *c = run_once(clone, &in);
  expect_same("clone alone", first, c);
  rill_tensor_destroy(c);
  rill_predictor_destroy(clone);
  cr_assert_eq(rill_sgemm_packed_counters().bytes_live, s0.bytes_live, "freed with the last predictor");
  rill_tensor_destroy(first);
  free_inputs(&in);
}
