/* Out-of-memory sweeps over the detection and sequence ops whose kernels allocate
 * (multiclass_nms's candidate lists and output LoD, matrix_nms's IoU matrix,
 * locality_aware_nms's copies, retinanet_detection_output's decoded boxes,
 * distribute_fpn_proposals' and collect_fpn_proposals' levels and LoDs, prior_box's
 * ratio list, bipartite_match's outputs, row marks and sorted pairs, mine_hard_examples'
 * candidates and LoD, sequence_conv's column buffer, sequence_pool's output LoD): every
 * failing allocation gives an error and leaks nothing. */
#include "op_test.h"
#include "support/fail_alloc.h"

static rill_status *bind(op_harness *h, const char *slot, const char *name, rill_dtype dt,
                         const int64_t *d, size_t n, const uint64_t *lod, size_t nlod) {
  float v[256];
  for (int i = 0; i < 256; i++) v[i] = (float)((i * 37) % 101) * 0.01f;
  rill_tensor *t = op_harness_make(dt, d, n, v);
  if (!t) return rill_error(RILL_OUT_OF_MEMORY, "out of memory making %s", name);
  rill_status *st = lod ? rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nlod) : NULL;
  if (!st) st = op_harness_input(h, slot, name, t);
  op_harness_free_tensor(t);
  return st;
}

static rill_status *run_nms(void *ctx) {
  (void)ctx;
  op_harness *h;
  RILL_TRY(op_harness_create("multiclass_nms3", &h));
  const uint64_t lod[] = {0, 5, 8};
  rill_status *st = bind(h, "BBoxes", "rois", RILL_DTYPE_FP32, DIMS(8, 3, 4), lod, 3);
  if (!st) st = bind(h, "Scores", "probs", RILL_DTYPE_FP32, DIMS(8, 3), NULL, 0);
  if (!st) st = op_harness_output(h, "Out", "o");
  if (!st) st = op_harness_output(h, "Index", "i");
  if (!st) st = op_harness_output(h, "NmsRoisNum", "n");
  if (!st) st = op_harness_attr_float(h, "score_threshold", 0.1f);
  if (!st) st = op_harness_attr_int(h, "nms_top_k", -1);
  if (!st) st = op_harness_attr_int(h, "keep_top_k", 4);
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

static rill_status *run_prior_box(void *ctx) {
  (void)ctx;
  op_harness *h;
  RILL_TRY(op_harness_create("prior_box", &h));
  rill_status *st = bind(h, "Input", "feat", RILL_DTYPE_FP32, DIMS(1, 1, 2, 2), NULL, 0);
  if (!st) st = bind(h, "Image", "img", RILL_DTYPE_FP32, DIMS(1, 1, 8, 8), NULL, 0);
  if (!st) st = op_harness_output(h, "Boxes", "b");
  if (!st) st = op_harness_output(h, "Variances", "v");
  float mins[] = {2}, vars[] = {0.1f, 0.1f, 0.2f, 0.2f}, ratios[] = {2};
  rill_attr_value a = {.type = RILL_ATTR_FLOATS, .n = 1};
  a.list.floats = mins;
  if (!st) st = op_harness_attr(h, "min_sizes", &a);
  a.list.floats = ratios;
  if (!st) st = op_harness_attr(h, "aspect_ratios", &a);
  a.list.floats = vars;
  a.n = 4;
  if (!st) st = op_harness_attr(h, "variances", &a);
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

static rill_status *run_sequence_conv(void *ctx) {
  (void)ctx;
  op_harness *h;
  RILL_TRY(op_harness_create("sequence_conv", &h));
  const uint64_t lod[] = {0, 2, 5};
  rill_status *st = bind(h, "X", "x", RILL_DTYPE_FP32, DIMS(5, 3), lod, 3);
  if (!st) st = bind(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(9, 2), NULL, 0);
  if (!st) st = op_harness_output(h, "Out", "o");
  if (!st) st = op_harness_attr_int(h, "contextLength", 3);
  if (!st) st = op_harness_attr_int(h, "contextStart", -1);
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

static rill_status *run_sequence_pool(void *ctx) {
  (void)ctx;
  op_harness *h;
  RILL_TRY(op_harness_create("sequence_pool", &h));
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(4, 2), NULL);
  if (!t) {
    op_harness_destroy(h);
    return rill_error(RILL_OUT_OF_MEMORY, "out of memory making x");
  }
  const uint64_t l0[] = {0, 1, 3}, l1[] = {0, 1, 3, 4};
  const uint64_t *levels[] = {l0, l1};
  size_t counts[] = {3, 4};
  rill_status *st = rill_tensor_set_lod(t, 2, levels, counts);
  if (!st) st = op_harness_input(h, "X", "x", t);
  op_harness_free_tensor(t);
  if (!st) st = op_harness_output(h, "Out", "o");
  if (!st) st = op_harness_output(h, "MaxIndex", "mi");
  if (!st) st = op_harness_attr_string(h, "pooltype", "MAX");
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

static rill_status *run_bipartite_match(void *ctx) {
  (void)ctx;
  op_harness *h;
  RILL_TRY(op_harness_create("bipartite_match", &h));
  const uint64_t lod[] = {0, 2, 5};
  rill_status *st = bind(h, "DistMat", "iou", RILL_DTYPE_FP32, DIMS(5, 6), lod, 3);
  if (!st) st = op_harness_output(h, "ColToRowMatchIndices", "i");
  if (!st) st = op_harness_output(h, "ColToRowMatchDist", "d");
  if (!st) st = op_harness_attr_string(h, "match_type", "per_prediction");
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

/* 130 rows or more take the sorted path, which allocates its pair list */
static rill_status *run_bipartite_match_sorted(void *ctx) {
  (void)ctx;
  op_harness *h;
  RILL_TRY(op_harness_create("bipartite_match", &h));
  rill_status *st = bind(h, "DistMat", "iou", RILL_DTYPE_FP32, DIMS(130, 1), NULL, 0);
  if (!st) st = op_harness_output(h, "ColToRowMatchIndices", "i");
  if (!st) st = op_harness_output(h, "ColToRowMatchDist", "d");
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

static rill_status *run_mine_hard_examples(void *ctx) {
  (void)ctx;
  op_harness *h;
  RILL_TRY(op_harness_create("mine_hard_examples", &h));
  const int32_t match[2 * 4] = {0, -1, -1, 1, -1, 2, -1, -1};
  rill_status *st = bind(h, "ClsLoss", "conf_loss", RILL_DTYPE_FP32, DIMS(2, 4), NULL, 0);
  if (!st) st = bind(h, "MatchDist", "dist", RILL_DTYPE_FP32, DIMS(2, 4), NULL, 0);
  if (!st) {
    rill_tensor *t = op_harness_make(RILL_DTYPE_INT32, DIMS(2, 4), match);
    st = t ? op_harness_input(h, "MatchIndices", "match", t)
           : rill_error(RILL_OUT_OF_MEMORY, "out of memory making match");
    op_harness_free_tensor(t);
  }
  if (!st) st = op_harness_output(h, "NegIndices", "neg");
  if (!st) st = op_harness_output(h, "UpdatedMatchIndices", "upd");
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

/* BBoxes [2, 6, 4] and Scores [2, 3, 6] into matrix_nms or locality_aware_nms. */
static rill_status *run_batched_nms(void *ctx) {
  op_harness *h;
  RILL_TRY(op_harness_create((const char *)ctx, &h));
  rill_status *st = bind(h, "BBoxes", "boxes", RILL_DTYPE_FP32, DIMS(2, 6, 4), NULL, 0);
  if (!st) st = bind(h, "Scores", "scores", RILL_DTYPE_FP32, DIMS(2, 3, 6), NULL, 0);
  if (!st) st = op_harness_output(h, "Out", "o");
  if (!st && !strcmp((const char *)ctx, "matrix_nms")) st = op_harness_output(h, "Index", "i");
  if (!st) st = op_harness_attr_float(h, "score_threshold", 0.1f);
  if (!st) st = op_harness_attr_int(h, "nms_top_k", -1);
  if (!st) st = op_harness_attr_int(h, "keep_top_k", 4);
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

static rill_status *run_retinanet(void *ctx) {
  (void)ctx;
  op_harness *h;
  RILL_TRY(op_harness_create("retinanet_detection_output", &h));
  rill_status *st = bind(h, "BBoxes", "d0", RILL_DTYPE_FP32, DIMS(1, 4, 4), NULL, 0);
  if (!st) st = bind(h, "Scores", "s0", RILL_DTYPE_FP32, DIMS(1, 4, 2), NULL, 0);
  if (!st) st = bind(h, "Anchors", "a0", RILL_DTYPE_FP32, DIMS(4, 4), NULL, 0);
  if (!st) st = bind(h, "ImInfo", "info", RILL_DTYPE_FP32, DIMS(1, 3), NULL, 0);
  if (!st) st = op_harness_output(h, "Out", "o");
  if (!st) st = op_harness_attr_float(h, "score_threshold", 0.1f);
  if (!st) st = op_harness_attr_int(h, "nms_top_k", -1);
  if (!st) st = op_harness_attr_int(h, "keep_top_k", 3);
  if (!st) st = op_harness_attr_float(h, "nms_threshold", 0.3f);
  if (!st) st = op_harness_attr_float(h, "nms_eta", 1.0f);
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

static rill_status *run_fpn(void *ctx) {
  (void)ctx;
  op_harness *h;
  RILL_TRY(op_harness_create("distribute_fpn_proposals", &h));
  const uint64_t lod[] = {0, 2, 5};
  rill_status *st = bind(h, "FpnRois", "rois", RILL_DTYPE_FP32, DIMS(5, 4), lod, 3);
  if (!st) st = op_harness_output(h, "MultiFpnRois", "l0");
  if (!st) st = op_harness_output(h, "MultiFpnRois", "l1");
  if (!st) st = op_harness_output(h, "RestoreIndex", "r");
  if (!st) st = op_harness_attr_int(h, "min_level", 0);
  if (!st) st = op_harness_attr_int(h, "max_level", 1);
  if (!st) st = op_harness_attr_int(h, "refer_level", 1);
  if (!st) st = op_harness_attr_int(h, "refer_scale", 1);
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  if (st) return st;
  RILL_TRY(op_harness_create("collect_fpn_proposals", &h));
  st = bind(h, "MultiLevelRois", "r0", RILL_DTYPE_FP32, DIMS(5, 4), lod, 3);
  if (!st) st = bind(h, "MultiLevelScores", "s0", RILL_DTYPE_FP32, DIMS(5, 1), lod, 3);
  if (!st) st = op_harness_output(h, "FpnRois", "o");
  if (!st) st = op_harness_attr_int(h, "post_nms_topN", 3);
  if (!st) st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

Test(detection_ops_alloc, kernels_fail_cleanly_at_every_allocation) {
  cr_assert_null(rill_registry_init());
  struct {
    const char *name;
    fail_alloc_op op;
    const char *arg;
  } runs[] = {{"multiclass_nms3", run_nms, NULL},
              {"prior_box", run_prior_box, NULL},
              {"sequence_conv", run_sequence_conv, NULL},
              {"sequence_pool", run_sequence_pool, NULL},
              {"bipartite_match", run_bipartite_match, NULL},
              {"bipartite_match (sorted)", run_bipartite_match_sorted, NULL},
              {"mine_hard_examples", run_mine_hard_examples, NULL},
              {"matrix_nms", run_batched_nms, "matrix_nms"},
              {"locality_aware_nms", run_batched_nms, "locality_aware_nms"},
              {"retinanet_detection_output", run_retinanet, NULL},
              {"distribute_fpn_proposals, collect_fpn_proposals", run_fpn, NULL}};
  for (size_t i = 0; i < RILL_COUNTOF(runs); i++) {
    char why[512] = "";
    long n = fail_alloc_sweep(runs[i].op, NULL, (void *)runs[i].arg, 5000, false, why,
                              sizeof why);
    fail_alloc_uninstall();
    cr_assert_geq(n, 5, "%s: %ld failing runs: %s", runs[i].name, n, why);
  }
}
