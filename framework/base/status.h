/* Status values: every failure a user, a file or a peer can cause is returned as one. */
#ifndef RILL_FRAMEWORK_BASE_STATUS_H
#define RILL_FRAMEWORK_BASE_STATUS_H

#include "rill.h"

struct rill_status {
  rill_code code;
  char *message;
};

#if defined(__GNUC__)
#define RILL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define RILL_NODISCARD __attribute__((warn_unused_result))
#else
#define RILL_PRINTF(a, b)
#define RILL_NODISCARD
#endif

/* A new error status. If the message cannot be allocated, a static out-of-memory
 * status is returned instead (rill_status_destroy ignores it). */
RILL_NODISCARD rill_status *rill_error(rill_code code, const char *fmt, ...) RILL_PRINTF(2, 3);

/* rill_status_wrap (rill.h) prefixes an error's message with context ("op 'mul' #3 in
 * block 0: ..."). */

/* The shared out-of-memory status. */
rill_status *rill_oom(void);

/* Checks the struct_size member of a public options struct (rill.h): INVALID_ARGUMENT
 * naming `what` unless `size` is one the library knows, from `min` (the struct of the
 * first version that had it) to `max` (sizeof the struct now). */
rill_status *rill_check_struct_size(const char *what, uint32_t size, size_t min, size_t max);

/* Evaluates `expr`; on error returns it from the enclosing function. */
#define RILL_TRY(expr)                                                                 \
  do {                                                                                 \
    rill_status *rill_try_st_ = (expr);                                                \
    if (rill_try_st_) return rill_try_st_;                                             \
  } while (0)

#endif
