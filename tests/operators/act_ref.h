/* The activations the recurrent ops take by name (gate_activation, cell_activation,
 * candidate_activation, ...), with a double-precision reference of each, for the naive
 * step-by-step references of the lstm, lstmp and gru tests. */
#ifndef RILL_TESTS_OPERATORS_ACT_REF_H
#define RILL_TESTS_OPERATORS_ACT_REF_H

#include <math.h>

enum { SIG, TANH_, RELU, IDENT };
static const char *const act_names[] = {"sigmoid", "tanh", "relu", "identity"};

static inline double act(double v, int k) {
  switch (k) {
    case SIG: return 1.0 / (1.0 + exp(-v));
    case TANH_: return tanh(v);
    case RELU: return v > 0 ? v : 0;
    default: return v;
  }
}

#endif
