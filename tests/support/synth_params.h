/* Synthetic parameters for running a loaded program without its weights: every
 * persistable float32 LoD tensor of block 0 is created in a scope and filled, element by
 * element, with value(name, r), r in [0, 1) drawn from a fixed linear congruential
 * sequence that starts at seed and runs on across the variables in block order. */
#ifndef RILL_TESTS_SUPPORT_SYNTH_PARAMS_H
#define RILL_TESTS_SUPPORT_SYNTH_PARAMS_H

#include <stdint.h>

#include "rill.h"

typedef float (*synth_value_fn)(const char *name, float r);

/* Fails the running Criterion test on an error. */
void synth_params(const rill_program *p, rill_scope *scope, uint32_t seed, synth_value_fn value);

#endif
