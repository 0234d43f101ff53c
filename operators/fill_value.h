/* The value a fill_constant writes, read as its kernels read it on every backend:
 * ValueTensor's first element when the input is bound, else str_value parsed exactly
 * (an int64 output takes it through strtoll, so large integers keep every digit; "inf"
 * and "nan" through strtod), else attribute value. */
#ifndef RILL_OPERATORS_FILL_VALUE_H
#define RILL_OPERATORS_FILL_VALUE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "framework/base/dims.h"

typedef struct rill_fill_value {
  double d;
  int64_t l;
  bool exact_long; /* l holds the exact int64 value */
} rill_fill_value;

/* From ValueTensor's first element (vt: its bytes, of dtype vt_dtype; NULL when the
 * input is not bound), else str_value (NULL or "" when unset), else attr_value. False
 * when the tensor's dtype is not a number, or (no tensor) str_value does not parse. */
static inline bool rill_fill_value_get(double attr_value, const char *str_value, const void *vt, rill_dtype vt_dtype,
                                       bool want_long, rill_fill_value *v) {
  v->exact_long = false;
  v->l = 0;
  v->d = attr_value;
  if (vt) {
    switch (vt_dtype) {
      case RILL_DTYPE_FP32: v->d = *(const float *)vt; return true;
      case RILL_DTYPE_FP64: v->d = *(const double *)vt; return true;
      case RILL_DTYPE_INT32: v->d = *(const int32_t *)vt; return true;
      case RILL_DTYPE_INT64:
        v->l = *(const int64_t *)vt;
        v->d = (double)v->l;
        v->exact_long = true;
        return true;
      case RILL_DTYPE_BOOL: v->d = *(const bool *)vt; return true;
      default: return false;
    }
  }
  if (!str_value || !*str_value) return true;
  char *end;
  errno = 0;
  if (want_long) {
    long long l = strtoll(str_value, &end, 10);
    if (end != str_value && !*end && errno == 0) {
      v->l = l;
      v->d = (double)l;
      v->exact_long = true;
      return true;
    }
    errno = 0;
  }
  double d = strtod(str_value, &end);
  if (end == str_value || *end) return false;
  v->d = d;
  return true;
}

/* The value as one element of dtype dt, in the low bytes of the result (the element's
 * size: 1, 4 or 8 bytes); false for a dtype fill_constant does not make. */
static inline bool rill_fill_value_bits(const rill_fill_value *v, rill_dtype dt, uint64_t *bits) {
  *bits = 0;
  switch (dt) {
    case RILL_DTYPE_BOOL: {
      bool b = (bool)v->d;
      memcpy(bits, &b, sizeof b);
      return true;
    }
    case RILL_DTYPE_FP32: {
      float f = (float)v->d;
      memcpy(bits, &f, sizeof f);
      return true;
    }
    case RILL_DTYPE_FP64: memcpy(bits, &v->d, sizeof v->d); return true;
    case RILL_DTYPE_INT32: {
      int32_t i = (int32_t)v->d;
      memcpy(bits, &i, sizeof i);
      return true;
    }
    case RILL_DTYPE_INT64: {
      int64_t l = v->exact_long ? v->l : (int64_t)v->d;
      memcpy(bits, &l, sizeof l);
      return true;
    }
    default: return false;
  }
}

#endif
