/* Host callbacks: a table indexed by id, grown under a mutex. Entries are never moved
 * out of their chunk, so a reference taken under the lock stays valid while the entry's
 * call count keeps unregister away. */
#include "framework/registry/callbacks.h"

#include <pthread.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/status.h"

enum { CHUNK = 64, MAX_CHUNKS = 4096 }; /* at most 262144 registrations a process */

typedef struct entry {
  rill_host_callback_fn fn; /* NULL: unregistered */
  void *user;
  char *name;
  int64_t calls; /* calls running */
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *chunks[MAX_CHUNKS];
static int64_t next_id;

static entry *slot(int64_t id) {
  if (id < 0 || id >= next_id) return NULL;
  return &chunks[id / CHUNK][id % CHUNK];
}

rill_status *rill_host_callback_register(const char *name, rill_host_callback_fn fn, void *user,
                                         int64_t *id) {
  if (!fn || !id)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_host_callback_register: %s is NULL",
                      fn ? "id" : "fn");
  char *copy = rill_strdup(name ? name : "");
  if (!copy) return rill_oom();
  pthread_mutex_lock(&lock);
  int64_t n = next_id;
  rill_status *st = NULL;
  if (n / CHUNK >= MAX_CHUNKS) {
    st = rill_error(RILL_OUT_OF_RANGE, "rill_host_callback_register: %d callbacks registered "
                    "already, the most a process may have", CHUNK * MAX_CHUNKS);
  } else if (!chunks[n / CHUNK]) {
    chunks[n / CHUNK] = rill_calloc(CHUNK, sizeof(entry));
    if (!chunks[n / CHUNK]) st = rill_oom();
  }
  if (!st) {
    entry *e = &chunks[n / CHUNK][n % CHUNK];
    e->fn = fn;
    e->user = user;
    e->name = copy;
    e->calls = 0;
    next_id = n + 1;
    *id = n;
  }
  pthread_mutex_unlock(&lock);
  if (st) rill_free(copy);
  return st;
}

rill_status *rill_host_callback_unregister(int64_t id) {
  rill_status *st = NULL;
  char *name = NULL;
  pthread_mutex_lock(&lock);
  entry *e = slot(id);
  if (!e || !e->fn) {
    st = rill_error(RILL_NOT_FOUND, "host callback %lld is not registered", (long long)id);
  } else if (e->calls) {
    st = rill_error(RILL_FAILED_PRECONDITION,
                    "host callback %lld ('%s') is running; unregister it after the run",
                    (long long)id, e->name);
  } else {
    name = e->name;
    memset(e, 0, sizeof *e);
  }
  pthread_mutex_unlock(&lock);
  rill_free(name);
  return st;
}

rill_status *rill_host_callback_acquire(int64_t id, rill_host_callback_ref *out) {
  rill_status *st = NULL;
  pthread_mutex_lock(&lock);
  entry *e = slot(id);
  if (!e || !e->fn) {
    st = rill_error(RILL_NOT_FOUND,
                    "host callback %lld is not registered in this process (callbacks are "
                    "registered by the process that runs the program: fluid.layers.py_func "
                    "or rill_host_callback_register)",
                    (long long)id);
  } else {
    e->calls++;
    *out = (rill_host_callback_ref){id, e->fn, e->user, e->name};
  }
  pthread_mutex_unlock(&lock);
  return st;
}

void rill_host_callback_release(const rill_host_callback_ref *ref) {
  pthread_mutex_lock(&lock);
  entry *e = slot(ref->id);
  if (e && e->calls > 0) e->calls--;
  pthread_mutex_unlock(&lock);
}
