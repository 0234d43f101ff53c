/* The schema flags that say what an op's run-time shape inference reads
 * (RILL_OP_INFER_READS_DATA, RILL_SLOT_INFER_DATA): on a device place, each input its
 * inference reads is copied to the host on every run, so a flag an op does not need
 * costs a copy and a wait per run. */
#include <criterion/criterion.h>
#include <string.h>

#include "framework/registry/registry.h"

static bool marks_a_slot(const rill_op_schema *s) {
  for (size_t i = 0; i < s->ninputs; i++)
    if (s->inputs[i].flags & RILL_SLOT_INFER_DATA) return true;
  return false;
}

/* A schema that marks none of its slots has every input copied to the host for its
 * inference; each built-in op names the few it reads (a shape tensor, K, an axis). */
Test(infer_marks, every_builtin_op_that_infers_from_data_names_the_inputs_it_reads) {
  cr_assert_null(rill_registry_init());
  size_t flagged = 0;
  for (size_t i = 0; i < rill_registry_count(); i++) {
    const rill_op_schema *s = rill_registry_at(i);
    if (!(s->flags & RILL_OP_INFER_READS_DATA)) continue;
    flagged++;
    cr_expect(marks_a_slot(s), "op '%s' infers from data but marks no input RILL_SLOT_INFER_DATA", s->type);
  }
  cr_assert_geq(flagged, 20);
}

/* Inference that reads metadata alone (shapes, dtypes) carries no flag: these ops ran
 * every run's inference over host copies of all their inputs when they did. */
Test(infer_marks, ops_that_infer_from_shapes_alone_carry_no_data_flag) {
  cr_assert_null(rill_registry_init());
  static const char *const metas_only[] = {
      "accuracy", "arg_max", "arg_min", "top_k_grad", "fill_constant_batch_size_like",
      "uniform_random_batch_size_like", "gaussian_random_batch_size_like", "squeeze2"};
  for (size_t i = 0; i < sizeof metas_only / sizeof *metas_only; i++) {
    const rill_op_schema *s = rill_schema_find(metas_only[i]);
    cr_assert_not_null(s, "%s", metas_only[i]);
    cr_expect_eq(s->flags & RILL_OP_INFER_READS_DATA, 0u, "%s", metas_only[i]);
  }
  /* LoD offsets are on the host wherever the elements are: nothing is copied for them. */
  static const char *const lod_only[] = {"edit_distance", "linear_chain_crf", "sequence_pool"};
  for (size_t i = 0; i < sizeof lod_only / sizeof *lod_only; i++) {
    const rill_op_schema *s = rill_schema_find(lod_only[i]);
    cr_assert_not_null(s, "%s", lod_only[i]);
    cr_expect_eq(s->flags & RILL_OP_INFER_READS_DATA, 0u, "%s", lod_only[i]);
    cr_expect_neq(s->flags & RILL_OP_INFER_READS_LOD, 0u, "%s", lod_only[i]);
  }
}

static rill_status *no_infer(rill_infer_ctx *ctx) {
  (void)ctx;
  return NULL;
}

/* A mark without the op flag would say the inference reads a slot while the executor
 * skips the inference whenever the metas are unchanged: registration refuses it. */
Test(infer_marks, a_marked_slot_without_the_op_flag_is_refused_naming_op_and_slot) {
  cr_assert_null(rill_registry_init());
  static const rill_slot_schema in[] = {{"X", 0, ""}, {"Size", RILL_SLOT_DISPENSABLE | RILL_SLOT_INFER_DATA, ""}};
  static const rill_slot_schema out[] = {{"Out", 0, ""}};
  static const rill_op_schema bad = {.type = "test_marked_without_flag", .inputs = in, .ninputs = 2,
                                     .outputs = out, .noutputs = 1, .infer = no_infer,
                                     .kernel_dtype_slot = 0, .dtype_attr = -1};
  size_t before = rill_registry_count();
  rill_status *st = rill_registry_add_op(&bad);
  cr_assert_not_null(st);
  cr_expect_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  const char *msg = rill_status_message(st);
  cr_expect(strstr(msg, "'test_marked_without_flag'") && strstr(msg, "'Size'") &&
                strstr(msg, "RILL_OP_INFER_READS_DATA"),
            "%s", msg);
  rill_status_destroy(st);
  cr_expect_eq(rill_registry_count(), before);
  cr_expect_null(rill_schema_find("test_marked_without_flag"));

  static const rill_op_schema good = {.type = "test_marked_with_flag", .inputs = in, .ninputs = 2,
                                      .outputs = out, .noutputs = 1, .flags = RILL_OP_INFER_READS_DATA,
                                      .infer = no_infer, .kernel_dtype_slot = 0, .dtype_attr = -1};
  st = rill_registry_add_op(&good);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_expect_not_null(rill_schema_find("test_marked_with_flag"));
}
