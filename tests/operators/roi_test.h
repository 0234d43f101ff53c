/* Input and attribute helpers of the ROI pooling op tests (roi_align, roi_pool,
 * psroi_pool, prroi_pool). */
#ifndef RILL_TESTS_OPERATORS_ROI_TEST_H
#define RILL_TESTS_OPERATORS_ROI_TEST_H

#include "op_test.h"

/* Binds X ("feat") and ROIs ("rois", [r, 4], one LoD level when lod is given). */
static inline void roi_inputs(op_harness *h, rill_dtype dt, const void *x, const int64_t *xd,
                              size_t nx, const void *rois, int64_t r, const uint64_t *lod,
                              size_t nl) {
  bind_input(h, "X", "feat", dt, xd, nx, x);
  rill_tensor *t = op_harness_make(dt, DIMS(r, 4), rois);
  cr_assert_not_null(t);
  if (lod) OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nl));
  OK(op_harness_input(h, "ROIs", "rois", t));
  op_harness_free_tensor(t);
}

static inline void pooled(op_harness *h, int ph, int pw, float scale) {
  OK(op_harness_attr_int(h, "pooled_height", ph));
  OK(op_harness_attr_int(h, "pooled_width", pw));
  OK(op_harness_attr_float(h, "spatial_scale", scale));
}

#endif
