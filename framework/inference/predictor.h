/* Internal view of a predictor (include/rill.h has the API), for tests and tools. */
#ifndef RILL_FRAMEWORK_INFERENCE_PREDICTOR_H
#define RILL_FRAMEWORK_INFERENCE_PREDICTOR_H

#include "framework/transform/infer_passes.h"
#include "rill.h"

/* What the passes did while the predictor's model was loaded. */
const rill_pass_stats *rill_predictor_pass_stats(const rill_predictor *predictor);
/* The plan the predictor prepared when it was created and runs every time. */
const struct rill_plan *rill_predictor_plan(const rill_predictor *predictor);
/* Its executor, private to it (for tests: plan-cache counters). */
const rill_executor *rill_predictor_executor(const rill_predictor *predictor);

/* Whether the weights no op writes are marked immutable, so that kernels keep derived
 * forms of them (fc's packed GEMM panels); on by default. Off, every product reads the
 * weights as a training run does (tests compare the two bit for bit). */
rill_status *rill_predictor_config_set_constant_weights(rill_predictor_config *config, bool constant);

#endif
