#include "framework/base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"

static rill_status oom_status = {RILL_OUT_OF_MEMORY, "out of memory"};

rill_status *rill_oom(void) { return &oom_status; }

rill_code rill_status_code(const rill_status *status) { return status ? status->code : RILL_OK; }

const char *rill_status_message(const rill_status *status) {
  return status ? status->message : "ok";
}

const char *rill_code_name(rill_code code) {
  static const char *const names[] = {
#define RILL_X_(name, text) #name,
      RILL_CODE_MAP(RILL_X_)
#undef RILL_X_
  };
  if ((unsigned)code >= RILL_CODE_COUNT) return "UNKNOWN";
  return names[code];
}

void rill_status_destroy(rill_status *status) {
  if (!status || status == &oom_status) return;
  rill_free(status->message);
  rill_free(status);
}

rill_status *rill_error(rill_code code, const char *fmt, ...) {
  if (code == RILL_OUT_OF_MEMORY && strcmp(fmt, "out of memory") == 0) return &oom_status;
  rill_status *st = rill_malloc(sizeof *st);
  if (!st) return &oom_status;
  va_list ap;
  va_start(ap, fmt);
  st->message = rill_vstrprintf(fmt, ap);
  va_end(ap);
  if (!st->message) {
    rill_free(st);
    return &oom_status;
  }
  st->code = code;
  return st;
}

rill_status *rill_status_wrap(rill_status *status, const char *fmt, ...) {
  if (!status || status == &oom_status) return status;
  va_list ap;
  va_start(ap, fmt);
  char *prefix = rill_vstrprintf(fmt, ap);
  va_end(ap);
  if (!prefix) return status;
  size_t a = strlen(prefix), b = strlen(status->message);
  char *msg = rill_malloc(a + 2 + b + 1);
  if (msg) {
    memcpy(msg, prefix, a);
    memcpy(msg + a, ": ", 2);
    memcpy(msg + a + 2, status->message, b + 1);
    rill_free(status->message);
    status->message = msg;
  }
  rill_free(prefix);
  return status;
}

rill_status *rill_check_struct_size(const char *what, uint32_t size, size_t min, size_t max) {
  if (size >= min && size <= max) return NULL;
  if (size == 0)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "%s: struct_size is 0; initialize the struct with its _INIT macro or "
                      "_default_options()",
                      what);
  return rill_error(RILL_INVALID_ARGUMENT,
                    "%s: struct_size %u is not one this library (rill %s) knows: %zu to %zu "
                    "bytes",
                    what, (unsigned)size, rill_version(), min, max);
}
