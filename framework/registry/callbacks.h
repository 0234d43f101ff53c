/* The process's host callbacks (rill_host_callback_register, rill.h): functions of the
 * application that the py_func op calls by id. */
#ifndef RILL_FRAMEWORK_REGISTRY_CALLBACKS_H
#define RILL_FRAMEWORK_REGISTRY_CALLBACKS_H

#include "rill.h"

/* A callback taken for one call: its function, user pointer and name (valid until
 * rill_host_callback_release). */
typedef struct rill_host_callback_ref {
  int64_t id;
  rill_host_callback_fn fn;
  void *user;
  const char *name;
} rill_host_callback_ref;

/* Takes callback `id` for a call (it cannot be unregistered until released); NOT_FOUND,
 * naming the id, when there is none. */
rill_status *rill_host_callback_acquire(int64_t id, rill_host_callback_ref *out);
void rill_host_callback_release(const rill_host_callback_ref *ref);

#endif
