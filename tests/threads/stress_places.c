/* Copies between places from several threads at once: four executors on a second
 * backend ("stressdev": host memory under the CUDA device kind, counted), each on the
 * parallel schedule, share a parent scope whose weight is immutable. Every run moves a
 * host op's output to the device once (after its writer, while the executors' other
 * workers wait for it) and stages the weight through its buffer's one mirror, which
 * the first run of any executor adds and every other run shares. Under ThreadSanitizer
 * this checks the mirror's lock-free add and the move's hand-off to the readers. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "framework/base/alloc.h"
#include "framework/data/scope.h"
#include "framework/registry/registry.h"
#include "operators/op_index.h"
#include "rill.h"

#define DEV RILL_DEVICE_CUDA
enum { THREADS = 4, ROUNDS = 8, RUNS = 40, N = 64 };

static pthread_barrier_t start_together;

static atomic_int live_allocs, to_device;

static void *dev_alloc(const rill_device_memory *m, rill_place place, size_t bytes) {
  (void)m;
  (void)place;
  void *p = rill_aligned_alloc(bytes, RILL_TENSOR_ALIGN);
  if (p) atomic_fetch_add(&live_allocs, 1);
  return p;
}

static void dev_free(const rill_device_memory *m, rill_place place, void *p) {
  (void)m;
  (void)place;
  if (!p) return;
  atomic_fetch_sub(&live_allocs, 1);
  rill_free(p);
}

static rill_status *dev_to_host(const rill_backend *b, void *dst, rill_place src_place, const void *src, size_t n) {
  (void)b;
  (void)src_place;
  memcpy(dst, src, n);
  return NULL;
}

static rill_status *dev_from_host(const rill_backend *b, rill_place dst_place, void *dst, const void *src, size_t n) {
  (void)b;
  (void)dst_place;
  memcpy(dst, src, n);
  atomic_fetch_add(&to_device, 1);
  return NULL;
}

static rill_status *dev_copy(const rill_backend *b, rill_place dst_place, void *dst, rill_place src_place,
                             const void *src, size_t n) {
  (void)b;
  (void)dst_place;
  (void)src_place;
  memcpy(dst, src, n);
  return NULL;
}

static rill_status *on_dev(const rill_kernel_ctx *ctx, const rill_tensor *t) {
  if (!t || !t->buf || rill_tensor_place(t).device != DEV) return rill_kernel_error(ctx, "a tensor is not on the device");
  return NULL;
}

static rill_status *dev_scale(rill_kernel_ctx *ctx) {
  const rill_tensor *x = rill_kin(ctx, RILL_SCALE_IN_X, 0);
  rill_tensor *out = rill_kout(ctx, RILL_SCALE_OUT_OUT, 0);
  RILL_TRY(on_dev(ctx, x));
  RILL_TRY(on_dev(ctx, out));
  float s = ctx->attrs[RILL_SCALE_ATTR_SCALE].v.f;
  const float *a = rill_tensor_ptr(x);
  float *o = rill_tensor_ptr(out);
  for (int64_t i = 0; i < rill_tensor_numel(x); i++) o[i] = a[i] * s;
  return NULL;
}

static rill_status *dev_add(rill_kernel_ctx *ctx) {
  const rill_tensor *x = rill_kin(ctx, RILL_ELEMENTWISE_ADD_IN_X, 0);
  const rill_tensor *y = rill_kin(ctx, RILL_ELEMENTWISE_ADD_IN_Y, 0);
  rill_tensor *out = rill_kout(ctx, RILL_ELEMENTWISE_ADD_OUT_OUT, 0);
  RILL_TRY(on_dev(ctx, x));
  RILL_TRY(on_dev(ctx, y));
  RILL_TRY(on_dev(ctx, out));
  const float *a = rill_tensor_ptr(x), *b = rill_tensor_ptr(y);
  float *o = rill_tensor_ptr(out);
  for (int64_t i = 0; i < rill_tensor_numel(x); i++) o[i] = a[i] + b[i];
  return NULL;
}

static const rill_kernel_def dev_kernels[] = {
    {"scale", DEV, RILL_DTYPE_FP32, dev_scale, NULL},
    {"elementwise_add", DEV, RILL_DTYPE_FP32, dev_add, NULL},
};

static const rill_backend dev_backend = {
    .api_version = RILL_BACKEND_API_VERSION,
    .name = "stressdev",
    .device = DEV,
    .kernels = dev_kernels,
    .nkernels = RILL_COUNTOF(dev_kernels),
    .memory = {.alloc = dev_alloc, .free = dev_free},
    .copy_to_host = dev_to_host,
    .copy_from_host = dev_from_host,
    .copy = dev_copy,
};

static void add_op(rill_program *p, const char *type, const char *x, const char *y, const char *out, float scale,
                   const char *device) {
  rill_op_builder *b;
  CHECK(!rill_op_builder_create(type, &b), "%s", type);
  CHECK(!rill_op_builder_input(b, "X", &x, 1), "X");
  if (y) CHECK(!rill_op_builder_input(b, "Y", &y, 1), "Y");
  CHECK(!rill_op_builder_output(b, "Out", &out, 1), "Out");
  if (!y) CHECK(!rill_op_builder_attr_float(b, "scale", scale), "scale");
  if (device) CHECK(!rill_op_builder_attr_string(b, "op_device", device), "op_device");
  CHECK(!rill_op_builder_append(b, p, 0), "append %s", type);
  rill_op_builder_destroy(b);
}

typedef struct {
  const rill_program *program;
  rill_scope *weights;
  int id, errors;
} worker;

static void *run(void *arg) {
  worker *w = arg;
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.place = (rill_place){DEV, 0};
  o.num_threads = 2;
  rill_executor *e = NULL;
  rill_scope *scope = NULL;
  rill_tensor *x = NULL;
  const int64_t dims[] = {N};
  if (rill_executor_create(&o, &e) || rill_executor_set_schedule(e, RILL_SCHEDULE_PARALLEL) ||
      rill_scope_create(w->weights, &scope) || rill_tensor_create(RILL_DTYPE_FP32, dims, 1, &x)) {
    w->errors++;
    pthread_barrier_wait(&start_together);
    goto done;
  }
  const char *feed = "x", *fetch = "v";
  pthread_barrier_wait(&start_together); /* the first runs race to add the weight's mirror */
  for (int r = 0; r < RUNS; r++) {
    float *xd = rill_tensor_data(x);
    for (int i = 0; i < N; i++) xd[i] = (float)(w->id * 1000 + r + i);
    rill_tensor *out = NULL;
    rill_status *st = rill_executor_run(e, w->program, scope, &feed, &x, 1, &fetch, 1, &out);
    if (st) {
      fprintf(stderr, "thread %d run %d: %s\n", w->id, r, rill_status_message(st));
      rill_status_destroy(st);
      w->errors++;
      break;
    }
    /* y = 2x (host), z = 3y, u = y + z = 8x, v = u + wt (device) */
    const float *v = rill_tensor_data(out);
    for (int i = 0; i < N; i++)
      if (v[i] != 8.0f * xd[i] + (float)(i % 7)) w->errors++;
    rill_tensor_destroy(out);
  }
done:
  rill_tensor_destroy(x);
  rill_scope_destroy(scope);
  rill_executor_destroy(e);
  return NULL;
}

int main(void) {
  CHECK(!rill_registry_add_backend(&dev_backend), "register the backend");
  rill_program *p;
  CHECK(!rill_program_create(&p), "program");
  const int64_t dims[] = {N};
  for (const char *const *n = (const char *const[]){"x", "y", "z", "u", "v", NULL}; *n; n++)
    CHECK(!rill_block_add_var(p, 0, *n, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false), "%s", *n);
  CHECK(!rill_block_add_var(p, 0, "wt", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, true), "wt");
  add_op(p, "scale", "x", NULL, "y", 2.0f, "cpu");
  add_op(p, "scale", "y", NULL, "z", 3.0f, NULL);
  add_op(p, "elementwise_add", "y", "z", "u", 0, NULL);
  add_op(p, "elementwise_add", "u", "wt", "v", 0, NULL);
  CHECK(!pthread_barrier_init(&start_together, NULL, THREADS), "barrier");
  /* Each round: a new immutable weight, four new executors started together. */
  for (int round = 0; round < ROUNDS; round++) {
    atomic_store(&to_device, 0);
    rill_scope *weights;
    CHECK(!rill_scope_create(NULL, &weights), "scope");
    rill_variable *wv;
    CHECK(!rill_scope_var(weights, "wt", &wv), "wt");
    rill_tensor *wt = rill_variable_tensor(wv);
    CHECK(!rill_tensor_alloc(wt, RILL_DTYPE_FP32, &(rill_dims){.n = 1, .d = {N}}), "alloc wt");
    for (int i = 0; i < N; i++) ((float *)rill_tensor_ptr(wt))[i] = (float)(i % 7);
    rill_buffer_set_immutable(wt->buf);
    worker ws[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
      ws[t] = (worker){.program = p, .weights = weights, .id = t};
      CHECK(!pthread_create(&th[t], NULL, run, &ws[t]), "thread %d", t);
    }
    for (int t = 0; t < THREADS; t++) {
      pthread_join(th[t], NULL);
      CHECK(ws[t].errors == 0, "round %d, thread %d: %d wrong values or failed runs", round, t, ws[t].errors);
    }
    /* x is read on the host and goes nowhere; y moves once a run; the weight once in
     * all (a thread that lost the race to add the mirror copied it once more). */
    int copies = atomic_load(&to_device);
    CHECK(copies >= THREADS * RUNS + 1 && copies <= THREADS * RUNS + THREADS, "round %d: %d copies to the device",
          round, copies);
    CHECK(rill_buffer_mirror_find(wt->buf, (rill_place){DEV, 0}) != NULL, "the weight keeps its mirror");
    rill_scope_destroy(weights);
  }
  pthread_barrier_destroy(&start_together);
  rill_program_destroy(p);
  CHECK(atomic_load(&live_allocs) == 0, "%d device blocks left", atomic_load(&live_allocs));
  return check_report();
}
