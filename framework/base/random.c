#include "framework/base/random.h"

#include <math.h>

double rill_rng_normal(rill_rng *r) {
  double u1 = rill_rng_uniform(r), u2 = rill_rng_uniform(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}
