/* Op registration while other threads look ops up: readers list, describe and validate
 * against the registry while the main thread registers op libraries one by one. Run
 * under ThreadSanitizer by `make test`. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "rill.h"

enum { LIBS = 40, READERS = 3 };

static atomic_bool done;
static atomic_long reader_failures, reader_lookups; /* CHECK's counters are not atomic */

static rill_status *infer_copy(rill_op_context *ctx, void *user) {
  (void)user;
  rill_dtype dt;
  int64_t dims[RILL_MAX_DIMS];
  size_t n;
  if (!rill_op_context_input_meta(ctx, 0, 0, &dt, dims, &n)) return NULL;
  return rill_op_context_set_output_meta(ctx, 0, 0, dt, dims, n, 0);
}

static rill_status *kernel_noop(rill_op_context *ctx, void *user) {
  (void)ctx;
  (void)user;
  return NULL;
}

static int lib_index;
static rill_status *init_one(rill_plugin *pl) {
  static const rill_plugin_slot in[] = {{"X", 0, NULL}}, out[] = {{"Out", 0, NULL}};
  char name[32];
  snprintf(name, sizeof name, "stress_op_%02d", lib_index);
  rill_plugin_op op = {.api_version = RILL_PLUGIN_API_VERSION, .type = name, .inputs = in,
                       .ninputs = 1, .outputs = out, .noutputs = 1, .infer = infer_copy};
  rill_status *st = rill_plugin_add_op(pl, &op);
  if (st) return st;
  rill_plugin_kernel k = {RILL_PLUGIN_API_VERSION, name, RILL_DEVICE_CPU, RILL_DTYPE_FP32,
                          kernel_noop, NULL};
  return rill_plugin_add_kernel(pl, &k);
}

static void *reader(void *arg) {
  (void)arg;
  long rounds = 0;
  while (!atomic_load(&done) || rounds < 10) {
    size_t n = rill_op_count();
    for (size_t i = 0; i < n; i += 7) {
      const char *name = rill_op_name(i);
      char *text = NULL;
      rill_status *st = name ? rill_op_describe(name, &text) : NULL;
      if (!name || st) {
        atomic_fetch_add(&reader_failures, 1);
        fprintf(stderr, "op %zu of %zu: %s\n", i, n, st ? rill_status_message(st) : "no name");
      }
      atomic_fetch_add(&reader_lookups, 1);
      rill_status_destroy(st);
      rill_free_buffer(text);
    }
    char *text = NULL;
    rill_status *st = rill_op_describe("stress_op_00", &text);
    rill_status_destroy(st);
    rill_free_buffer(text);
    rounds++;
  }
  return NULL;
}

int main(void) {
  pthread_t t[READERS];
  size_t before = rill_op_count();
  for (int i = 0; i < READERS; i++) pthread_create(&t[i], NULL, reader, NULL);
  for (lib_index = 0; lib_index < LIBS; lib_index++) {
    char lib[32];
    snprintf(lib, sizeof lib, "libstress%02d.so", lib_index);
    rill_status *st = rill_register_op_library(lib, init_one);
    CHECK(!st, "%s: %s", lib, st ? rill_status_message(st) : "");
    rill_status_destroy(st);
  }
  atomic_store(&done, true);
  for (int i = 0; i < READERS; i++) pthread_join(t[i], NULL);
  CHECK(rill_op_count() == before + LIBS, "%zu ops, want %zu", rill_op_count(), before + LIBS);
  CHECK(atomic_load(&reader_failures) == 0, "%ld of %ld lookups failed", atomic_load(&reader_failures),
        atomic_load(&reader_lookups));
  CHECK(atomic_load(&reader_lookups) > 0, "the readers looked nothing up");
  return check_report();
}
