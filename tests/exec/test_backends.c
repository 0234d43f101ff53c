/* Backends as tables: a test-only backend, "fakedev", registered at run time in the
 * device slot of RILL_DEVICE_CUDA (this build has no CUDA backend). Its "device" is host
 * memory it counts, and its kernels (scale and elementwise_add, float32) refuse tensors
 * that are not on its place. The registry takes it through the same path as the CPU
 * backend (api_version, all-or-nothing kernels, one backend per device kind); the
 * executor runs a place only when its backend is registered, runs a program whose ops
 * are placed on both backends (`op_device`), and copies an input (a dense tensor, a
 * tensor array's items, selected rows' values) to the place of the op that reads it, and
 * a fetched output to the host. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/data/scope.h"
#include "framework/registry/registry.h"
#include "framework/rpc/message.h"
#include "kernels/cpu/step_grad.h"
#include "operators/op_index.h"
#include "operators/op_util.h"
#include "rill.h"
#include "support/plugin_infer.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

static void expect_error(rill_status *st, rill_code code, const char *part) {
  cr_assert_not_null(st, "expected an error containing '%s'", part);
  const char *msg = rill_status_message(st);
  cr_assert_eq(rill_status_code(st), code, "code %d, message: %s", (int)rill_status_code(st), msg);
  cr_assert(strstr(msg, part), "message '%s' lacks '%s'", msg, part);
  rill_status_destroy(st);
}

#define FAKE_DEVICE RILL_DEVICE_CUDA

/* The fake backend takes the CUDA device kind: the real CUDA backend, which a build
 * with CUDA would load on first use of that kind, stays unloaded. */
__attribute__((constructor)) static void no_cuda_backend(void) { setenv("RILL_CUDA_LIB", "", 1); }

static atomic_int allocs, frees, to_host, from_host, same_device, kernel_calls;

/* A fake device allocation: host memory behind a tag, so that a pointer the fake
 * device did not hand out (or a host pointer given to its kernels) is caught. */
#define FAKE_TAG 0xfa4ede71ce5ULL
#define FAKE_HEAD 64

static void *fake_alloc(const rill_device_memory *m, rill_place place, size_t bytes) {
  (void)m;
  cr_assert_eq(place.device, FAKE_DEVICE);
  char *p = rill_aligned_alloc(bytes + FAKE_HEAD, RILL_TENSOR_ALIGN);
  if (!p) return NULL;
  *(uint64_t *)p = FAKE_TAG;
  *(uint64_t *)(p + sizeof(uint64_t)) = bytes;
  atomic_fetch_add(&allocs, 1);
  return p + FAKE_HEAD;
}

static bool is_fake(const void *p) { return *(const uint64_t *)((const char *)p - FAKE_HEAD) == FAKE_TAG; }

/* [p, p + n) lies inside an allocation of the fake device (copies address rows inside a
 * tensor's buffer): its header is found at the nearest aligned address at or below p
 * that has one, within 1 MiB. */
static bool inside_fake(const void *p, size_t n) {
  for (const char *base = (const char *)((uintptr_t)p & ~(uintptr_t)(RILL_TENSOR_ALIGN - 1));; base -= RILL_TENSOR_ALIGN) {
    if (is_fake(base)) {
      uint64_t size = *(const uint64_t *)(base - FAKE_HEAD + sizeof(uint64_t));
      return (const char *)p + n <= base + size;
    }
    if ((const char *)p - base > (1 << 20)) return false;
  }
}

static void fake_free(const rill_device_memory *m, rill_place place, void *p) {
  (void)m;
  (void)place;
  if (!p) return;
  cr_assert(is_fake(p), "fake_free of memory the fake device did not allocate");
  *(uint64_t *)((char *)p - FAKE_HEAD) = 0;
  atomic_fetch_add(&frees, 1);
  rill_free((char *)p - FAKE_HEAD);
}

static rill_status *fake_to_host(const rill_backend *b, void *dst, rill_place src_place,
                                 const void *src, size_t n) {
  (void)b;
  cr_assert_eq(src_place.device, FAKE_DEVICE);
  cr_assert(inside_fake(src, n));
  memcpy(dst, src, n);
  atomic_fetch_add(&to_host, 1);
  return NULL;
}

static rill_status *fake_from_host(const rill_backend *b, rill_place dst_place, void *dst,
                                   const void *src, size_t n) {
  (void)b;
  cr_assert_eq(dst_place.device, FAKE_DEVICE);
  cr_assert(inside_fake(dst, n));
  memcpy(dst, src, n);
  atomic_fetch_add(&from_host, 1);
  return NULL;
}

static rill_status *fake_copy(const rill_backend *b, rill_place dst_place, void *dst,
                              rill_place src_place, const void *src, size_t n) {
  (void)b;
  (void)dst_place;
  (void)src_place;
  memcpy(dst, src, n);
  atomic_fetch_add(&same_device, 1);
  return NULL;
}

/* A tensor of the kernel's, which must live on the fake device. */
static rill_status *on_fake(const rill_kernel_ctx *ctx, const rill_tensor *t, const char *what) {
  if (!t || !t->buf) return rill_kernel_error(ctx, "%s is missing", what);
  if (rill_tensor_place(t).device != FAKE_DEVICE || !is_fake(rill_tensor_ptr(t)))
    return rill_kernel_error(ctx, "%s is not on the fake device", what);
  if (t->dtype != RILL_DTYPE_FP32) return rill_kernel_error(ctx, "%s is not float32", what);
  return NULL;
}

static rill_status *fake_scale(rill_kernel_ctx *ctx) {
  const rill_tensor *x = rill_kin(ctx, RILL_SCALE_IN_X, 0);
  rill_tensor *out = rill_kout(ctx, RILL_SCALE_OUT_OUT, 0);
  RILL_TRY(on_fake(ctx, x, "X"));
  RILL_TRY(on_fake(ctx, out, "Out"));
  float s = ctx->attrs[RILL_SCALE_ATTR_SCALE].v.f, bias = ctx->attrs[RILL_SCALE_ATTR_BIAS].v.f;
  const float *a = rill_tensor_ptr(x);
  float *o = rill_tensor_ptr(out);
  for (int64_t i = 0; i < rill_tensor_numel(x); i++) o[i] = a[i] * s + bias;
  atomic_fetch_add(&kernel_calls, 1);
  return NULL;
}

static rill_status *fake_add(rill_kernel_ctx *ctx) {
  const rill_tensor *x = rill_kin(ctx, RILL_ELEMENTWISE_ADD_IN_X, 0);
  const rill_tensor *y = rill_kin(ctx, RILL_ELEMENTWISE_ADD_IN_Y, 0);
  rill_tensor *out = rill_kout(ctx, RILL_ELEMENTWISE_ADD_OUT_OUT, 0);
  RILL_TRY(on_fake(ctx, x, "X"));
  RILL_TRY(on_fake(ctx, y, "Y"));
  RILL_TRY(on_fake(ctx, out, "Out"));
  if (rill_tensor_numel(x) != rill_tensor_numel(y))
    return rill_kernel_error(ctx, "the fake add takes same-shaped inputs only");
  const float *a = rill_tensor_ptr(x), *b = rill_tensor_ptr(y);
  float *o = rill_tensor_ptr(out);
  for (int64_t i = 0; i < rill_tensor_numel(x); i++) o[i] = a[i] + b[i];
  atomic_fetch_add(&kernel_calls, 1);
  return NULL;
}

static const rill_device_memory fake_memory = {.alloc = fake_alloc, .free = fake_free};

/* read_from_array on the fake device: every item of the array that holds a tensor must
 * have been copied there (the index too); Out is allocated on the fake device and gets
 * item I. */
static rill_status *fake_read(rill_kernel_ctx *ctx) {
  rill_variable *arr = ctx->nin[RILL_READ_FROM_ARRAY_IN_X] ? ctx->in[RILL_READ_FROM_ARRAY_IN_X][0] : NULL;
  const rill_tensor *i = rill_kin(ctx, RILL_READ_FROM_ARRAY_IN_I, 0);
  rill_tensor *out = rill_kout(ctx, RILL_READ_FROM_ARRAY_OUT_OUT, 0);
  if (!arr || arr->kind != RILL_VARKIND_TENSOR_ARRAY) return rill_kernel_error(ctx, "X is not an array");
  if (!i || !i->buf || !is_fake(rill_tensor_ptr(i))) return rill_kernel_error(ctx, "I is not on the fake device");
  for (size_t k = 0; k < arr->u.array.n; k++)
    if (arr->u.array.items[k].buf) RILL_TRY(on_fake(ctx, &arr->u.array.items[k], "an item of X"));
  int64_t at = *(const int64_t *)rill_tensor_ptr(i);
  if (at < 0 || (size_t)at >= arr->u.array.n) return rill_kernel_error(ctx, "I out of range");
  const rill_tensor *item = &arr->u.array.items[at];
  RILL_TRY(rill_tensor_alloc_on(out, item->dtype, &item->dims, (rill_place){FAKE_DEVICE, 0}, &fake_memory));
  memcpy(rill_tensor_ptr(out), rill_tensor_ptr(item), rill_tensor_nbytes(item));
  atomic_fetch_add(&kernel_calls, 1);
  return NULL;
}

/* The fake scale kernel computes x * scale + bias: it declines bias_after_scale false,
 * which then runs on the host. */
static bool fake_scale_accepts(const rill_kernel_ctx *ctx) {
  return ctx->attrs[RILL_SCALE_ATTR_BIAS_AFTER_SCALE].v.b;
}

static const rill_kernel_def fake_kernels[] = {
    {"scale", FAKE_DEVICE, RILL_DTYPE_FP32, fake_scale, fake_scale_accepts},
    {"elementwise_add", FAKE_DEVICE, RILL_DTYPE_FP32, fake_add, NULL},
    {"read_from_array", FAKE_DEVICE, RILL_KERNEL_ANY_DTYPE, fake_read, NULL},
};

static const rill_backend fake_backend = {
    .api_version = RILL_BACKEND_API_VERSION,
    .name = "fakedev",
    .device = FAKE_DEVICE,
    .kernels = fake_kernels,
    .nkernels = RILL_COUNTOF(fake_kernels),
    .memory = fake_memory,
    .copy_to_host = fake_to_host,
    .copy_from_host = fake_from_host,
    .copy = fake_copy,
};

Test(backends, cpu_backend_is_built_in) {
  OK(rill_registry_init());
  cr_assert_eq(rill_backend_count(), 1);
  const rill_backend *cpu = rill_backend_find(RILL_DEVICE_CPU);
  cr_assert_not_null(cpu);
  cr_assert_str_eq(cpu->name, "cpu");
  cr_assert_eq(cpu->api_version, RILL_BACKEND_API_VERSION);
  cr_assert_gt(cpu->nkernels, 100);
  cr_assert_null(rill_backend_find(FAKE_DEVICE));
  cr_assert_not_null(rill_kernel_find("scale", RILL_DEVICE_CPU, RILL_DTYPE_FP32));
  cr_assert_null(rill_kernel_find("scale", FAKE_DEVICE, RILL_DTYPE_FP32));
}

Test(backends, registered_backend_is_found) {
  OK(rill_registry_add_backend(&fake_backend));
  cr_assert_eq(rill_backend_count(), 2);
  cr_assert_eq(rill_backend_find(FAKE_DEVICE), &fake_backend);
  cr_assert_eq(rill_backend_at(1), &fake_backend);
  cr_assert_eq(rill_kernel_find("scale", FAKE_DEVICE, RILL_DTYPE_FP32), fake_scale);
  cr_assert_eq(rill_kernel_find("elementwise_add", FAKE_DEVICE, RILL_DTYPE_FP32), fake_add);
  cr_assert_null(rill_kernel_find("scale", FAKE_DEVICE, RILL_DTYPE_FP64));
  cr_assert_null(rill_kernel_find("relu", FAKE_DEVICE, RILL_DTYPE_FP32));
  /* The CPU's kernels are untouched. */
  cr_assert_neq(rill_kernel_find("scale", RILL_DEVICE_CPU, RILL_DTYPE_FP32), fake_scale);
  char *text = NULL;
  OK(rill_op_describe("scale", &text));
  cr_assert(strstr(text, "  cpu: "), "%s", text);
  cr_assert(strstr(text, "  fakedev: float32\n"), "%s", text);
  rill_free_buffer(text);
  rill_place place;
  OK(rill_place_parse("fakedev:0", &place));
  cr_assert_eq(place.device, FAKE_DEVICE);
  OK(rill_place_parse("cpu", &place));
  cr_assert_eq(place.device, RILL_DEVICE_CPU);
  expect_error(rill_place_parse("tpu:0", &place), RILL_INVALID_ARGUMENT,
               "registered backends: cpu, fakedev");
}

Test(backends, api_version_mismatch_registers_nothing) {
  rill_backend old = fake_backend;
  old.api_version = RILL_BACKEND_API_VERSION + 1;
  char want[128];
  snprintf(want, sizeof want, "backend 'fakedev' was built for backend API version %u; this rill has version %u",
           RILL_BACKEND_API_VERSION + 1, RILL_BACKEND_API_VERSION);
  expect_error(rill_registry_add_backend(&old), RILL_FAILED_PRECONDITION, want);
  cr_assert_null(rill_backend_find(FAKE_DEVICE));
  cr_assert_null(rill_kernel_find("scale", FAKE_DEVICE, RILL_DTYPE_FP32));
}

Test(backends, bad_tables_register_nothing) {
  static const rill_kernel_def unknown_op[] = {
      {"scale", FAKE_DEVICE, RILL_DTYPE_FP32, fake_scale, NULL},
      {"no_such_op", FAKE_DEVICE, RILL_DTYPE_FP32, fake_add, NULL},
  };
  rill_backend b = fake_backend;
  b.kernels = unknown_op;
  b.nkernels = 2;
  expect_error(rill_registry_add_backend(&b), RILL_NOT_FOUND, "'no_such_op', which has no schema");
  cr_assert_null(rill_kernel_find("scale", FAKE_DEVICE, RILL_DTYPE_FP32));

  static const rill_kernel_def wrong_device[] = {{"scale", RILL_DEVICE_CPU, RILL_DTYPE_FP32, fake_scale, NULL}};
  b.kernels = wrong_device;
  b.nkernels = 1;
  expect_error(rill_registry_add_backend(&b), RILL_INVALID_ARGUMENT, "not the backend's");

  static const rill_kernel_def twice[] = {
      {"scale", FAKE_DEVICE, RILL_DTYPE_FP32, fake_scale, NULL},
      {"scale", FAKE_DEVICE, RILL_DTYPE_FP32, fake_scale, NULL},
  };
  b.kernels = twice;
  b.nkernels = 2;
  expect_error(rill_registry_add_backend(&b), RILL_ALREADY_EXISTS, "two kernels for float32");

  b = fake_backend;
  b.copy_to_host = NULL;
  expect_error(rill_registry_add_backend(&b), RILL_INVALID_ARGUMENT, "lacks its allocator or a copy");
  cr_assert_null(rill_backend_find(FAKE_DEVICE));

  b = fake_backend;
  b.device = RILL_DEVICE_CPU;
  b.nkernels = 0;
  expect_error(rill_registry_add_backend(&b), RILL_ALREADY_EXISTS, "cpu:0 already has backend 'cpu'");
  OK(rill_registry_add_backend(&fake_backend));
  expect_error(rill_registry_add_backend(&fake_backend), RILL_ALREADY_EXISTS, "already has backend 'fakedev'");
}

Test(backends, executor_needs_a_registered_backend) {
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.place = (rill_place){FAKE_DEVICE, 0};
  rill_executor *e = NULL;
  expect_error(rill_executor_create(&o, &e), RILL_UNIMPLEMENTED,
               "place cuda:0 has no registered backend (registered backends: cpu)");
  cr_assert_null(e);
  OK(rill_registry_add_backend(&fake_backend));
  OK(rill_executor_create(&o, &e));
  rill_executor_destroy(e);
}

/* ---- programs across both backends ---- */

/* The fake device's copies since the test's start (from the host, to the host), and
 * every allocation on it freed. */
static void expect_copies(int from_host_n, int to_host_n) {
  cr_assert_eq(atomic_load(&from_host), from_host_n, "copies to the fake device: %d, expected %d",
               atomic_load(&from_host), from_host_n);
  cr_assert_eq(atomic_load(&to_host), to_host_n, "copies to the host: %d, expected %d", atomic_load(&to_host),
               to_host_n);
  cr_assert_eq(atomic_load(&frees), atomic_load(&allocs));
}

static const int64_t D4[] = {4};

static void var(rill_program *p, const char *name) {
  OK(rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D4, 1, 0, false));
}

/* A new program declaring x, y and z ([4] float32 each). */
static rill_program *xyz_program(void) {
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, "x");
  var(p, "y");
  var(p, "z");
  return p;
}

static void scale_op(rill_program *p, const char *x, const char *out, float scale, float bias,
                     const char *device) {
  rill_op_builder *b;
  OK(rill_op_builder_create("scale", &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_output(b, "Out", &out, 1));
  OK(rill_op_builder_attr_float(b, "scale", scale));
  OK(rill_op_builder_attr_float(b, "bias", bias));
  if (device) OK(rill_op_builder_attr_string(b, "op_device", device));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
}

static void add_op(rill_program *p, const char *x, const char *y, const char *out,
                   const char *device) {
  rill_op_builder *b;
  OK(rill_op_builder_create("elementwise_add", &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_input(b, "Y", &y, 1));
  OK(rill_op_builder_output(b, "Out", &out, 1));
  if (device) OK(rill_op_builder_attr_string(b, "op_device", device));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
}

/* out = type(x), an op of slots X and Out, placed by the executor. */
static void x_to_out_op(rill_program *p, const char *type, const char *x, const char *out) {
  rill_op_builder *b;
  OK(rill_op_builder_create(type, &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_output(b, "Out", &out, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
}

/* Runs p on an executor at `place` with x = {1, 2, 3, 4} fed and `fetch` fetched. */
static rill_status *run(const rill_program *p, rill_place place, rill_schedule schedule,
                        const char *fetch, float *got) {
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.place = place;
  o.num_threads = 2;
  rill_executor *e = NULL;
  rill_scope *scope = NULL;
  rill_tensor *x = NULL, *out = NULL;
  RILL_TRY(rill_executor_create(&o, &e));
  OK(rill_executor_set_schedule(e, schedule));
  OK(rill_scope_create(NULL, &scope));
  OK(rill_tensor_create(RILL_DTYPE_FP32, D4, 1, &x));
  float *xd = rill_tensor_data(x);
  for (int i = 0; i < 4; i++) xd[i] = (float)(i + 1);
  const char *feed = "x";
  rill_status *st = rill_executor_run(e, p, scope, &feed, &x, 1, &fetch, 1, &out);
  if (!st) {
    memcpy(got, rill_tensor_data(out), 4 * sizeof *got);
    rill_tensor_destroy(out);
  }
  rill_tensor_destroy(x);
  rill_scope_destroy(scope);
  rill_executor_destroy(e);
  return st;
}

static void run_across(rill_schedule schedule) {
  OK(rill_registry_add_backend(&fake_backend));
  rill_program *p = xyz_program();
  var(p, "w");
  scale_op(p, "x", "y", 2.0f, 1.0f, "fakedev");  /* y = 2x + 1, on the fake device */
  add_op(p, "y", "x", "z", "cpu");                 /* z = y + x, on the CPU */
  scale_op(p, "z", "w", 10.0f, 0.0f, "fakedev:0"); /* w = 10 z, on the fake device */
  float got[4];
  OK(run(p, (rill_place){RILL_DEVICE_CPU, 0}, schedule, "w", got));
  for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], 10.0f * (3.0f * (float)(i + 1) + 1.0f), 1e-5);
  cr_assert_eq(atomic_load(&kernel_calls), 2);
  /* x to the fake device for the first scale, z for the second; y to the host for the
   * add, w for the fetch. */
  cr_assert_eq(atomic_load(&from_host), 2);
  cr_assert_eq(atomic_load(&to_host), 2);
  cr_assert_eq(atomic_load(&same_device), 0);
  cr_assert_geq(atomic_load(&allocs), 4); /* y, w, and the copies of x and z */
  cr_assert_eq(atomic_load(&frees), atomic_load(&allocs), "fake memory left: %d allocs, %d frees",
               atomic_load(&allocs), atomic_load(&frees));
  rill_program_destroy(p);
}

Test(backends, program_runs_across_two_backends) { run_across(RILL_SCHEDULE_SEQUENTIAL); }

Test(backends, program_runs_across_two_backends_in_parallel) { run_across(RILL_SCHEDULE_PARALLEL); }

/* A tensor array written on the CPU and read by an op on the fake device: the array
 * reaches the op with every item (and the index) copied to the fake place, and the
 * copies are freed after the op. */
static void array_across(rill_schedule schedule) {
  OK(rill_registry_add_backend(&fake_backend));
  rill_program *p = xyz_program();
  const int64_t one[] = {1};
  OK(rill_block_add_var(p, 0, "i", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, one, 1, 0, false));
  OK(rill_block_add_var(p, 0, "arr", RILL_VAR_LOD_TENSOR_ARRAY, RILL_DTYPE_FP32, D4, 1, 0, false));
  scale_op(p, "x", "y", 2.0f, 0.0f, "cpu"); /* y = 2x on the CPU */
  rill_op_builder *b;
  const char *i = "i", *x = "x", *y = "y", *arr = "arr", *z = "z";
  OK(rill_op_builder_create("fill_constant", &b));
  OK(rill_op_builder_output(b, "Out", &i, 1));
  OK(rill_op_builder_attr_longs(b, "shape", (const int64_t[]){1}, 1));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_INT64));
  OK(rill_op_builder_attr_float(b, "value", 1.0f));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  for (int k = 0; k < 2; k++) { /* arr[1] = y (and arr[0] stays empty), then arr[1] = x */
    OK(rill_op_builder_create("write_to_array", &b));
    OK(rill_op_builder_input(b, "X", k ? &x : &y, 1));
    OK(rill_op_builder_input(b, "I", &i, 1));
    OK(rill_op_builder_output(b, "Out", &arr, 1));
    OK(rill_op_builder_append(b, p, 0));
    rill_op_builder_destroy(b);
  }
  OK(rill_op_builder_create("read_from_array", &b));
  OK(rill_op_builder_input(b, "X", &arr, 1));
  OK(rill_op_builder_input(b, "I", &i, 1));
  OK(rill_op_builder_output(b, "Out", &z, 1));
  OK(rill_op_builder_attr_string(b, "op_device", "fakedev"));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  float got[4];
  OK(run(p, (rill_place){RILL_DEVICE_CPU, 0}, schedule, "z", got));
  for (int k = 0; k < 4; k++) cr_assert_float_eq(got[k], (float)(k + 1), 0.0f, "item %d", k);
  cr_assert_eq(atomic_load(&kernel_calls), 1);
  cr_assert_eq(atomic_load(&from_host), 2, "want the array's item and the index copied");
  cr_assert_eq(atomic_load(&to_host), 1);
  cr_assert_eq(atomic_load(&frees), atomic_load(&allocs), "fake memory left: %d allocs, %d frees",
               atomic_load(&allocs), atomic_load(&frees));
  rill_program_destroy(p);
}

Test(backends, tensor_array_is_copied_to_the_place_of_its_reader) { array_across(RILL_SCHEDULE_SEQUENTIAL); }

Test(backends, tensor_array_is_copied_to_the_place_of_its_reader_in_parallel) {
  array_across(RILL_SCHEDULE_PARALLEL);
}

/* An op of the test's own that reads selected rows on the fake device: their values
 * must have been copied there, the rows and height kept; Out gets the values. */
static rill_status *fake_rows(rill_kernel_ctx *ctx) {
  rill_variable *v = ctx->nin[0] ? ctx->in[0][0] : NULL;
  rill_tensor *out = rill_kout(ctx, 0, 0);
  if (!v || v->kind != RILL_VARKIND_SELECTED_ROWS) return rill_kernel_error(ctx, "X is not selected rows");
  const rill_selected_rows *sr = &v->u.rows;
  RILL_TRY(on_fake(ctx, &sr->value, "X's values"));
  if (sr->nrows != 2 || sr->rows[0] != 3 || sr->rows[1] != 1 || sr->height != 5)
    return rill_kernel_error(ctx, "X's rows or height changed on the way");
  RILL_TRY(rill_tensor_alloc_on(out, sr->value.dtype, &sr->value.dims, (rill_place){FAKE_DEVICE, 0}, &fake_memory));
  memcpy(rill_tensor_ptr(out), rill_tensor_ptr(&sr->value), rill_tensor_nbytes(&sr->value));
  atomic_fetch_add(&kernel_calls, 1);
  return NULL;
}

Test(backends, selected_rows_are_copied_to_the_place_of_their_reader) {
  OK(rill_registry_add_backend(&fake_backend));
  static const rill_slot_schema in[] = {{"X", 0, ""}}, out[] = {{"Out", 0, ""}};
  static const rill_op_schema op = {.type = "test_fake_rows", .inputs = in, .ninputs = 1, .outputs = out,
                                    .noutputs = 1, .flags = RILL_OP_KERNEL_SHAPES, .kernel_dtype_slot = 0,
                                    .dtype_attr = -1};
  static const rill_kernel_def k = {"test_fake_rows", FAKE_DEVICE, RILL_KERNEL_ANY_DTYPE, fake_rows, NULL};
  const rill_op_schema *ops[] = {&op};
  OK(rill_registry_add_batch(ops, 1, &k, 1));
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t d2[] = {2, 2};
  OK(rill_block_add_var(p, 0, "sr", RILL_VAR_SELECTED_ROWS, RILL_DTYPE_FP32, d2, 2, 0, true));
  var(p, "z");
  rill_op_builder *b;
  const char *x = "sr", *z = "z";
  OK(rill_op_builder_create("test_fake_rows", &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_output(b, "Out", &z, 1));
  OK(rill_op_builder_attr_string(b, "op_device", "fakedev"));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_scope *scope;
  OK(rill_scope_create(NULL, &scope));
  rill_variable *v;
  OK(rill_scope_var(scope, "sr", &v));
  rill_selected_rows *sr = rill_variable_selected_rows(v);
  cr_assert(sr);
  OK(rill_selected_rows_set_rows(sr, (const int64_t[]){3, 1}, 2));
  sr->height = 5;
  rill_dims dims;
  cr_assert(rill_dims_set(&dims, d2, 2));
  OK(rill_tensor_alloc(&sr->value, RILL_DTYPE_FP32, &dims));
  float *vals = rill_tensor_ptr(&sr->value);
  for (int i = 0; i < 4; i++) vals[i] = 0.5f * (float)(i + 1);
  rill_executor *e;
  OK(rill_executor_create(NULL, &e));
  rill_tensor *got;
  OK(rill_executor_run(e, p, scope, NULL, NULL, 0, &z, 1, &got));
  const float *g = rill_tensor_data(got);
  for (int i = 0; i < 4; i++) cr_assert_float_eq(g[i], 0.5f * (float)(i + 1), 0.0f, "value %d", i);
  cr_assert_eq(atomic_load(&kernel_calls), 1);
  cr_assert_eq(atomic_load(&from_host), 1, "want the values copied once");
  rill_tensor_destroy(got);
  rill_executor_destroy(e);
  rill_scope_destroy(scope);
  cr_assert_eq(atomic_load(&frees), atomic_load(&allocs), "fake memory left: %d allocs, %d frees",
               atomic_load(&allocs), atomic_load(&frees));
  rill_program_destroy(p);
}

/* A program x -> y through one op of `type` placed on the fake device. */
/* Appends op `type` (X -> Out) to block 0 of p; `device` (may be NULL) its op_device. */
static void unary_op(rill_program *p, const char *type, const char *x, const char *out, const char *device) {
  rill_op_builder *b;
  OK(rill_op_builder_create(type, &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_output(b, "Out", &out, 1));
  if (device) OK(rill_op_builder_attr_string(b, "op_device", device));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
}

static rill_program *unary_on_fake(const char *type) {
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, "x");
  var(p, "y");
  unary_op(p, type, "x", "y", "fakedev");
  return p;
}

/* A plugin's kernel for the fake device: it gets its input copied there and writes its
 * output there, through the public op context. */
static rill_status *plug_double(rill_op_context *ctx, void *user) {
  (void)user;
  rill_tensor *x = rill_op_context_input(ctx, 0, 0), *y = rill_op_context_output(ctx, 0, 0);
  if (!is_fake(rill_tensor_data(x)) || !is_fake(rill_tensor_data(y)))
    return rill_op_context_error(ctx, "a tensor is not on the fake device");
  const float *a = rill_tensor_data(x);
  float *o = rill_tensor_data(y);
  for (int64_t i = 0; i < rill_tensor_numel(x); i++) o[i] = 2.0f * a[i];
  atomic_fetch_add(&kernel_calls, 1);
  return NULL;
}

static rill_status *fake_plugin_init(rill_plugin *pl) {
  static const rill_plugin_slot in[] = {{"X", 0, NULL}}, out[] = {{"Out", 0, NULL}};
  rill_plugin_op op = {.api_version = RILL_PLUGIN_API_VERSION, .type = "plug_fake_double", .inputs = in,
                       .ninputs = 1, .outputs = out, .noutputs = 1, .kernel_dtype_input = 0,
                       .infer = plugin_infer_same};
  rill_status *st = rill_plugin_add_op(pl, &op);
  if (st) return st;
  rill_plugin_kernel k = {RILL_PLUGIN_API_VERSION, "plug_fake_double", FAKE_DEVICE, RILL_DTYPE_FP32,
                          plug_double, NULL};
  return rill_plugin_add_kernel(pl, &k);
}

Test(backends, a_plugin_kernel_runs_on_the_fake_device) {
  expect_error(rill_register_op_library("fake-plugin", fake_plugin_init), RILL_UNIMPLEMENTED,
               "no registered backend");
  cr_assert_null(rill_kernel_find("plug_fake_double", FAKE_DEVICE, RILL_DTYPE_FP32));
  OK(rill_registry_add_backend(&fake_backend));
  OK(rill_register_op_library("fake-plugin", fake_plugin_init));
  cr_assert_not_null(rill_kernel_find("plug_fake_double", FAKE_DEVICE, RILL_DTYPE_FP32));
  cr_assert_null(rill_kernel_find("plug_fake_double", RILL_DEVICE_CPU, RILL_DTYPE_FP32));
  rill_program *p = unary_on_fake("plug_fake_double");
  float got[4];
  OK(run(p, (rill_place){RILL_DEVICE_CPU, 0}, RILL_SCHEDULE_SEQUENTIAL, "y", got));
  for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], 2.0f * (float)(i + 1), 0.0f);
  cr_assert_eq(atomic_load(&kernel_calls), 1);
  cr_assert_eq(atomic_load(&from_host), 1);
  cr_assert_eq(atomic_load(&to_host), 1);
  rill_program_destroy(p);
}

Test(backends, program_runs_on_the_fake_place) {
  OK(rill_registry_add_backend(&fake_backend));
  rill_program *p = xyz_program();
  scale_op(p, "x", "y", 3.0f, 0.0f, NULL);
  add_op(p, "y", "x", "z", NULL);
  float got[4];
  OK(run(p, (rill_place){FAKE_DEVICE, 0}, RILL_SCHEDULE_SEQUENTIAL, "z", got));
  for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], 4.0f * (float)(i + 1), 1e-5);
  cr_assert_eq(atomic_load(&kernel_calls), 2);
  /* x is copied once, when fed, since both its readers run on the fake device; z comes
   * back for the fetch. */
  expect_copies(1, 1);
  rill_program_destroy(p);
}

/* An op whose place's backend has no kernel for it runs on the host, with its input
 * copied there and its output staying there for the fetch. */
Test(backends, op_without_a_kernel_on_its_place_runs_on_the_host) {
  OK(rill_registry_add_backend(&fake_backend));
  rill_program *p = xyz_program();
  scale_op(p, "x", "y", -1.0f, 3.0f, NULL); /* y = 3 - x, on the fake device */
  x_to_out_op(p, "relu", "y", "z");
  float got[4];
  OK(run(p, (rill_place){FAKE_DEVICE, 0}, RILL_SCHEDULE_SEQUENTIAL, "z", got));
  static const float want[4] = {2.0f, 1.0f, 0.0f, 0.0f};
  for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], want[i], 0.0f);
  cr_assert_eq(atomic_load(&kernel_calls), 1, "only scale ran on the fake device");
  /* x to the device for scale; y back to the host for relu; z is on the host already. */
  expect_copies(1, 1);
  rill_program_destroy(p);
}

/* An op its place's kernel declines (rill_kernel_def.accepts) runs on the host as one
 * without a kernel there, and the ops around it stay on the device: y = (x + 1) * 2 on
 * the host (bias before scale, which the fake kernel declines), z = 10 y on the fake
 * device. */
Test(backends, op_its_kernel_declines_runs_on_the_host) {
  OK(rill_registry_add_backend(&fake_backend));
  rill_program *p = xyz_program();
  rill_op_builder *b;
  const char *x = "x", *y = "y";
  OK(rill_op_builder_create("scale", &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_output(b, "Out", &y, 1));
  OK(rill_op_builder_attr_float(b, "scale", 2.0f));
  OK(rill_op_builder_attr_float(b, "bias", 1.0f));
  OK(rill_op_builder_attr_bool(b, "bias_after_scale", false));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  scale_op(p, "y", "z", 10.0f, 0.0f, NULL);
  float got[4];
  OK(run(p, (rill_place){FAKE_DEVICE, 0}, RILL_SCHEDULE_SEQUENTIAL, "z", got));
  for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], ((float)i + 2.0f) * 20.0f, 0.0f, "z[%d] = %g", i, got[i]);
  cr_assert_eq(atomic_load(&kernel_calls), 1, "only the second scale ran on the fake device");
  rill_program_destroy(p);
}

/* out = reshape2(x) to `shape` (with its XShape, x_shape_of_<out>), on the host: the
 * fake backend has no reshape2 kernel. */
static void reshape_op(rill_program *p, const char *x, const char *out, const int32_t *shape, size_t n) {
  char xs[64];
  snprintf(xs, sizeof xs, "x_shape_of_%s", out);
  int64_t d[RILL_MAX_DIMS], xd[] = {0, 4};
  for (size_t i = 0; i < n; i++) d[i] = shape[i];
  OK(rill_block_add_var(p, 0, out, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, n, 0, false));
  OK(rill_block_add_var(p, 0, xs, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 0, false));
  rill_op_builder *b;
  const char *xsp = xs;
  OK(rill_op_builder_create("reshape2", &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_output(b, "Out", &out, 1));
  OK(rill_op_builder_output(b, "XShape", &xsp, 1));
  OK(rill_op_builder_attr_ints(b, "shape", shape, n));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
}

/* A view op reads only its input's shape (RILL_SLOT_ANY_PLACE): between two device ops
 * it runs on the host over the device tensor's metadata, and its output shares the
 * device buffer. No copy goes either way for it; before, each reshape cost a copy to
 * the host and one back. */
Test(backends, view_op_between_device_ops_copies_nothing) {
  OK(rill_registry_add_backend(&fake_backend));
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, "x");
  var(p, "y");
  static const int32_t square[] = {2, 2}, flat[] = {4};
  scale_op(p, "x", "y", 2.0f, 0.0f, NULL); /* y = 2x on the fake device */
  reshape_op(p, "y", "r", square, 2);      /* r = y as [2, 2], on the host */
  int64_t d22[] = {2, 2};
  OK(rill_block_add_var(p, 0, "z", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d22, 2, 0, false));
  scale_op(p, "r", "z", 3.0f, 1.0f, NULL); /* z = 3r + 1 on the fake device */
  reshape_op(p, "z", "w", flat, 1);        /* w = z as [4] */
  for (int sched = 0; sched < 2; sched++) {
    atomic_store(&from_host, 0);
    atomic_store(&to_host, 0);
    atomic_store(&kernel_calls, 0);
    float got[4];
    OK(run(p, (rill_place){FAKE_DEVICE, 0}, sched ? RILL_SCHEDULE_PARALLEL : RILL_SCHEDULE_SEQUENTIAL,
           "w", got));
    for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], 6.0f * (float)(i + 1) + 1.0f, 0.0f);
    /* the fake scale refuses a tensor not on its device: r and z were there */
    cr_assert_eq(atomic_load(&kernel_calls), 2);
    /* x to the device for the first scale, w back for the fetch: nothing for the views */
    expect_copies(1, 1);
  }
  rill_program_destroy(p);
}

/* fill_zeros_like reads X's shape only: a device X is not copied to the host op. */
Test(backends, shape_only_input_on_the_device_is_not_copied) {
  OK(rill_registry_add_backend(&fake_backend));
  rill_program *p = xyz_program();
  scale_op(p, "x", "y", 2.0f, 0.0f, NULL); /* y on the fake device */
  x_to_out_op(p, "fill_zeros_like", "y", "z"); /* on the host: no fake kernel */
  float got[4];
  OK(run(p, (rill_place){FAKE_DEVICE, 0}, RILL_SCHEDULE_SEQUENTIAL, "z", got));
  for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], 0.0f, 0.0f);
  cr_assert_eq(atomic_load(&kernel_calls), 1);
  /* x to the device; y stays on the device; z is made on the host */
  expect_copies(1, 0);
  rill_program_destroy(p);
}

/* As in Paddle built without CUDA, an op marked for a device no backend serves runs
 * on the executor's place. */
Test(backends, op_on_an_unregistered_place_runs_on_the_executors_place) {
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, "x");
  var(p, "y");
  scale_op(p, "x", "y", 2.0f, 0.0f, "gpu:0");
  float got[4];
  OK(run(p, (rill_place){RILL_DEVICE_CPU, 0}, RILL_SCHEDULE_SEQUENTIAL, "y", got));
  for (int i = 0; i < 4; i++) cr_expect_float_eq(got[i], 2.0f * (float)(i + 1), 0.0f);
  rill_program_destroy(p);
}

/* Kernels added one by one or in a plugin's batch pass the check a backend's kernels
 * pass: their device kind must have a registered backend. */
Test(backends, kernels_need_a_registered_backend) {
  rill_kernel_def k = {"scale", FAKE_DEVICE, RILL_DTYPE_FP64, fake_scale, NULL};
  expect_error(rill_registry_add_kernel(&k), RILL_UNIMPLEMENTED,
               "kernel of op 'scale' for cuda:0, which has no registered backend (registered: cpu)");
  cr_assert_null(rill_kernel_find("scale", FAKE_DEVICE, RILL_DTYPE_FP64));
  static const rill_slot_schema io[] = {{"X", 0, ""}};
  static const rill_op_schema op = {.type = "test_backend_batch_op", .inputs = io, .ninputs = 1,
                                    .outputs = io, .noutputs = 1, .kernel_dtype_slot = 0,
                                    .dtype_attr = -1};
  const rill_op_schema *ops[] = {&op};
  rill_kernel_def bk = {"test_backend_batch_op", FAKE_DEVICE, RILL_DTYPE_FP32, fake_scale, NULL};
  expect_error(rill_registry_add_batch(ops, 1, &bk, 1), RILL_UNIMPLEMENTED,
               "which has no registered backend");
  cr_assert_null(rill_schema_find("test_backend_batch_op"));
  OK(rill_registry_add_backend(&fake_backend));
  OK(rill_registry_add_kernel(&k));
  cr_assert_eq(rill_kernel_find("scale", FAKE_DEVICE, RILL_DTYPE_FP64), fake_scale);
  OK(rill_registry_add_batch(ops, 1, &bk, 1));
  cr_assert_eq(rill_kernel_find("test_backend_batch_op", FAKE_DEVICE, RILL_DTYPE_FP32), fake_scale);
}

/* w, a weight in a parent scope whose buffer is immutable (as a predictor's are) or not,
 * read by two ops on the fake device; runs the program `runs` times with x fed, checking
 * z = x + w each time. Returns the copies made to the device. */
/* Runs a program whose two device ops read the persistable w (and, with host_reader, a
 * host op too), `runs` times; returns the copies to the device. */
static int copies_of_a_weight(bool immutable, bool host_reader, int runs) {
  OK(rill_registry_add_backend(&fake_backend));
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, "x");
  OK(rill_block_add_var(p, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D4, 1, 0, true));
  var(p, "y");
  var(p, "z");
  scale_op(p, "w", "y", 2.0f, 0.0f, NULL);
  add_op(p, "x", "w", "z", NULL);
  if (host_reader) {
    var(p, "h");
    x_to_out_op(p, "relu", "w", "h"); /* no fake kernel: on the host */
  }
  rill_scope *weights, *scope;
  OK(rill_scope_create(NULL, &weights));
  rill_variable *wv;
  OK(rill_scope_var(weights, "w", &wv));
  rill_tensor *wt = rill_variable_tensor(wv);
  OK(rill_tensor_alloc(wt, RILL_DTYPE_FP32, &(rill_dims){.n = 1, .d = {4}}));
  for (int i = 0; i < 4; i++) ((float *)rill_tensor_ptr(wt))[i] = 10.0f * (float)(i + 1);
  if (immutable) rill_buffer_set_immutable(wt->buf);
  OK(rill_scope_create(weights, &scope));
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.place = (rill_place){FAKE_DEVICE, 0};
  o.num_threads = 2;
  rill_executor *e;
  OK(rill_executor_create(&o, &e));
  rill_tensor *x;
  OK(rill_tensor_create(RILL_DTYPE_FP32, D4, 1, &x));
  const char *feed = "x", *fetch = "z";
  for (int r = 0; r < runs; r++) {
    for (int i = 0; i < 4; i++) ((float *)rill_tensor_data(x))[i] = (float)(r + i);
    rill_tensor *out;
    OK(rill_executor_run(e, p, scope, &feed, &x, 1, &fetch, 1, &out));
    for (int i = 0; i < 4; i++)
      cr_assert_float_eq(((const float *)rill_tensor_data(out))[i], (float)(r + i) + 10.0f * (float)(i + 1), 0.0f,
                         "run %d, z[%d]", r, i);
    rill_tensor_destroy(out);
  }
  cr_assert_eq(atomic_load(&kernel_calls), 2 * runs);
  /* wt is the scope variable's tensor: an immutable weight stays where it was; a mutable
   * one, which only device ops read, now lives on the device, its values kept */
  wt = rill_variable_tensor(wv);
  cr_assert_eq(rill_tensor_place(wt).device, immutable || host_reader ? RILL_DEVICE_CPU : FAKE_DEVICE);
  for (int i = 0; i < 4; i++) cr_assert_float_eq(((const float *)rill_tensor_ptr(wt))[i], 10.0f * (float)(i + 1), 0.0f);
  rill_tensor_destroy(x);
  rill_executor_destroy(e);
  rill_scope_destroy(scope);
  rill_scope_destroy(weights);
  cr_assert_eq(atomic_load(&frees), atomic_load(&allocs), "fake memory left: %d allocs, %d frees",
               atomic_load(&allocs), atomic_load(&frees));
  rill_program_destroy(p);
  return atomic_load(&from_host);
}

/* An immutable weight goes to the device once, as its buffer's mirror there, which both
 * of its readers share in every later run; the mirror goes with the weight. */
Test(backends, immutable_weight_is_copied_to_the_device_once) {
  /* x once a run, w once in all. */
  cr_assert_eq(copies_of_a_weight(true, false, 3), 3 + 1);
}

/* A persistable that no op of the program writes and that only device ops read (a
 * frozen weight) moves to the device, in the caller's scope, when the first run starts:
 * it is copied once in all, not by each reader in each run. */
Test(backends, mutable_weight_read_only_on_the_device_moves_there_once) {
  cr_assert_eq(copies_of_a_weight(false, false, 3), 3 + 1);
}

/* A weight also read on the host stays there, and is copied for each device reader in
 * each run (a move would only bounce it between the places). */
Test(backends, mutable_weight_read_on_both_places_stays_and_is_copied_per_reader) {
  cr_assert_eq(copies_of_a_weight(false, true, 3), 3 + 3 * 2);
}

/* The mirror API: one mirror per place however many threads add one, none for a
 * mutable buffer, and each released with its buffer. */
Test(backends, a_buffer_keeps_one_mirror_per_place) {
  OK(rill_registry_add_backend(&fake_backend));
  const rill_place fake = {FAKE_DEVICE, 0}, fake1 = {FAKE_DEVICE, 1};
  rill_buffer *host = rill_buffer_alloc(16, (rill_place){RILL_DEVICE_CPU, 0});
  cr_assert_not_null(host);
  rill_buffer *c = rill_buffer_alloc_on(16, fake, &fake_memory);
  cr_assert_eq(rill_buffer_mirror_add(host, c), c, "a mutable buffer returns the copy");
  cr_assert_null(rill_buffer_mirror_find(host, fake), "and keeps no mirror");
  rill_buffer_release(c);
  rill_buffer_set_immutable(host);
  rill_buffer *a = rill_buffer_alloc_on(16, fake, &fake_memory), *b = rill_buffer_alloc_on(16, fake, &fake_memory);
  rill_buffer *d = rill_buffer_alloc_on(16, fake1, &fake_memory);
  cr_assert_eq(rill_buffer_mirror_add(host, a), a);
  cr_assert(rill_buffer_immutable(a), "a mirror is immutable: writers copy it first");
  cr_assert_eq(rill_buffer_mirror_add(host, b), a, "the first mirror on a place wins; the second is released");
  cr_assert_eq(rill_buffer_mirror_add(host, d), d);
  cr_assert_eq(rill_buffer_mirror_find(host, fake), a);
  cr_assert_eq(rill_buffer_mirror_find(host, fake1), d);
  cr_assert_null(rill_buffer_mirror_find(host, (rill_place){RILL_DEVICE_CPU, 0}));
  cr_assert_eq(atomic_load(&allocs) - atomic_load(&frees), 2);
  rill_buffer_release(host);
  cr_assert_eq(atomic_load(&frees), atomic_load(&allocs));
}

/* A value written on the host and read only on the fake device moves there once, right
 * after its writer, however many ops read it; a value read on both places is copied for
 * each reader on the other place. The profiler shows each copy as a "memcpy" row, and
 * in the trace with the variable and its bytes. */
Test(backends, value_read_only_on_the_device_moves_there_once) {
  OK(rill_registry_add_backend(&fake_backend));
  rill_program *p = xyz_program();
  var(p, "w");
  scale_op(p, "x", "y", 2.0f, 0.0f, "cpu");  /* y = 2x on the host */
  scale_op(p, "y", "z", 3.0f, 0.0f, NULL);   /* z = 3y on the fake device */
  add_op(p, "y", "z", "w", NULL);            /* w = y + z there */
  OK(rill_profiler_start(NULL));
  float got[4];
  OK(run(p, (rill_place){FAKE_DEVICE, 0}, RILL_SCHEDULE_PARALLEL, "w", got));
  char trace[] = "/tmp/rill_copies_XXXXXX";
  int fd = mkstemp(trace);
  cr_assert_geq(fd, 0);
  close(fd);
  rill_profiler_summary *sum;
  OK(rill_profiler_stop(trace, &sum));
  for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], 8.0f * (float)(i + 1), 1e-5);
  cr_assert_eq(atomic_load(&kernel_calls), 2);
  /* x goes to the host op as it is; y to the device once; w back for the fetch. */
  expect_copies(1, 1);
  char dev[RILL_PLACE_STR_MAX], host[RILL_PLACE_STR_MAX], to_dev[2 * RILL_PLACE_STR_MAX + 16],
      to_host_name[2 * RILL_PLACE_STR_MAX + 16];
  rill_place_str((rill_place){FAKE_DEVICE, 0}, dev, sizeof dev);
  rill_place_str((rill_place){RILL_DEVICE_CPU, 0}, host, sizeof host);
  snprintf(to_dev, sizeof to_dev, "memcpy %s->%s", host, dev);
  snprintf(to_host_name, sizeof to_host_name, "memcpy %s->%s", dev, host);
  int seen = 0;
  for (size_t r = 0; r < rill_profiler_summary_rows(sum, RILL_PROFILER_BY_INSTANCE); r++) {
    const rill_profiler_row *row = rill_profiler_summary_row(sum, RILL_PROFILER_BY_INSTANCE, r);
    if (strcmp(row->name, to_dev) == 0) {
      cr_assert_eq(row->calls, 1);
      cr_assert_eq(row->index, 0, "y moves after its writer, op #0");
      seen |= 1;
    } else if (strcmp(row->name, to_host_name) == 0) {
      cr_assert_eq(row->calls, 1);
      cr_assert_eq(row->index, -1, "the fetch");
      seen |= 2;
    }
  }
  cr_assert_eq(seen, 3, "want both copies in the profiler's summary");
  rill_profiler_summary_destroy(sum);
  FILE *f = fopen(trace, "r");
  cr_assert_not_null(f);
  char text[1 << 16];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = 0;
  fclose(f);
  unlink(trace);
  cr_assert(strstr(text, "\"cat\":\"memcpy\""), "trace: %s", text);
  cr_assert(strstr(text, "\"var\":\"y\",\"bytes\":16"), "trace: %s", text);
  cr_assert(strstr(text, "\"var\":\"w\",\"bytes\":16"), "trace: %s", text);
  rill_program_destroy(p);
}

static void file_op(rill_program *p, const char *type, const char *slot, const char *var, const char *path) {
  rill_op_builder *b;
  OK(rill_op_builder_create(type, &b));
  if (strcmp(type, "save") == 0)
    OK(rill_op_builder_input(b, slot, &var, 1));
  else
    OK(rill_op_builder_output(b, slot, &var, 1));
  OK(rill_op_builder_attr_string(b, "file_path", path));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
}

static char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  char *buf = malloc(1 << 16);
  *n = fread(buf, 1, 1 << 16, f);
  fclose(f);
  return buf;
}

/* save has no kernel on the fake device: it runs on the host with the device tensor
 * copied there, and writes the same bytes as from the CPU. A load on the host feeds a
 * device op, which gets the value copied there once. */
Test(backends, save_and_load_through_the_device_write_the_cpus_bytes) {
  OK(rill_registry_add_backend(&fake_backend));
  char dir[] = "/tmp/rill_backends_save_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char on_dev[96], on_cpu[96];
  snprintf(on_dev, sizeof on_dev, "%s/y_dev", dir);
  snprintf(on_cpu, sizeof on_cpu, "%s/y_cpu", dir);
  for (int dev = 0; dev < 2; dev++) {
    rill_program *p;
    OK(rill_program_create(&p));
    var(p, "x");
    var(p, "y");
    scale_op(p, "x", "y", 3.0f, 0.5f, NULL);
    file_op(p, "save", "X", "y", dev ? on_dev : on_cpu);
    float got[4];
    OK(run(p, (rill_place){dev ? FAKE_DEVICE : RILL_DEVICE_CPU, 0}, RILL_SCHEDULE_PARALLEL, "x", got));
    rill_program_destroy(p);
  }
  cr_assert_eq(atomic_load(&kernel_calls), 1, "scale ran on the fake device once");
  size_t na, nb;
  char *a = read_all(on_dev, &na), *b = read_all(on_cpu, &nb);
  cr_assert_eq(na, nb);
  cr_assert(na > 16 && memcmp(a, b, na) == 0, "the files differ");
  free(a);
  free(b);
  /* Load what the device saved, on the host, and read it on the device. */
  atomic_store(&from_host, 0);
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, "x");
  var(p, "w");
  var(p, "z");
  file_op(p, "load", "Out", "w", on_dev);
  add_op(p, "w", "x", "z", NULL);
  float got[4];
  OK(run(p, (rill_place){FAKE_DEVICE, 0}, RILL_SCHEDULE_SEQUENTIAL, "z", got));
  for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], 4.0f * (float)(i + 1) + 0.5f, 1e-6);
  cr_assert_eq(atomic_load(&from_host), 2, "x when fed, w once after the load");
  cr_assert_eq(atomic_load(&frees), atomic_load(&allocs));
  rill_program_destroy(p);
  remove(on_dev);
  remove(on_cpu);
  rmdir(dir);
}

/* An op whose inference reads an input's data, on the fake device: Out's length is the
 * first value of Shape. The inference checks that it reads host memory (a real
 * device's memory cannot be read there); the kernel that Shape is on the device. */
static atomic_int infer_saw_device;

static rill_status *shape_reader_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = ctx->out[0];
  out->known = true;
  out->dtype = RILL_DTYPE_FP32;
  out->dims = (rill_dims){.n = 1, .d = {1}};
  if (!ctx->in_tensors) return NULL; /* compile time: no data */
  const rill_tensor *s = ctx->in_tensors[0][0];
  if (!s || !s->buf) return rill_infer_error(ctx, "Shape holds no data");
  if (rill_tensor_place(s).device == FAKE_DEVICE) {
    atomic_fetch_add(&infer_saw_device, 1);
    return rill_infer_error(ctx, "inference was given device memory");
  }
  out->dims.d[0] = (int64_t)((const float *)rill_tensor_ptr(s))[0];
  return NULL;
}

static rill_status *fake_shape_reader(rill_kernel_ctx *ctx) {
  const rill_tensor *s = rill_kin(ctx, 0, 0);
  rill_tensor *out = rill_kout(ctx, 0, 0);
  RILL_TRY(on_fake(ctx, s, "Shape"));
  RILL_TRY(on_fake(ctx, out, "Out"));
  float *o = rill_tensor_ptr(out);
  for (int64_t i = 0; i < rill_tensor_numel(out); i++) o[i] = (float)i;
  atomic_fetch_add(&kernel_calls, 1);
  return NULL;
}

/* Registers the fake backend and op `type` on it: the input slots given, one output
 * Out, the schema's flags and inference, and `fn` as its kernel for every dtype. One op
 * a test (each runs in its own process). */
static void add_fake_op(const char *type, const rill_slot_schema *in, size_t nin, unsigned flags,
                        rill_infer_fn infer, rill_kernel_fn fn) {
  static const rill_slot_schema out[] = {{"Out", 0, ""}};
  static rill_op_schema op;
  static rill_kernel_def k;
  op = (rill_op_schema){.type = type, .inputs = in, .ninputs = nin, .outputs = out, .noutputs = 1,
                        .flags = flags, .infer = infer, .kernel_dtype_slot = 0, .dtype_attr = -1};
  k = (rill_kernel_def){type, FAKE_DEVICE, RILL_KERNEL_ANY_DTYPE, fn, NULL};
  OK(rill_registry_add_backend(&fake_backend));
  const rill_op_schema *ops[] = {&op};
  OK(rill_registry_add_batch(ops, 1, &k, 1));
}

Test(backends, inference_that_reads_data_reads_it_on_the_host) {
  static const rill_slot_schema in[] = {{"Shape", 0, ""}};
  add_fake_op("test_shape_reader", in, 1, RILL_OP_INFER_READS_DATA, shape_reader_infer, fake_shape_reader);
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, "x");
  var(p, "s");
  OK(rill_block_add_var(p, 0, "z", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, NULL, 0, 0, false));
  scale_op(p, "x", "s", 0.0f, 3.0f, NULL); /* s = {3, 3, 3, 3}, on the fake device */
  rill_op_builder *b;
  const char *s = "s", *z = "z";
  OK(rill_op_builder_create("test_shape_reader", &b));
  OK(rill_op_builder_input(b, "Shape", &s, 1));
  OK(rill_op_builder_output(b, "Out", &z, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  for (int schedule = 0; schedule < 2; schedule++) {
    rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
    o.place = (rill_place){FAKE_DEVICE, 0};
    rill_executor *e;
    rill_scope *scope;
    rill_tensor *x, *got;
    OK(rill_executor_create(&o, &e));
    OK(rill_executor_set_schedule(e, schedule ? RILL_SCHEDULE_PARALLEL : RILL_SCHEDULE_SEQUENTIAL));
    OK(rill_scope_create(NULL, &scope));
    OK(rill_tensor_create(RILL_DTYPE_FP32, D4, 1, &x));
    const char *feed = "x";
    OK(rill_executor_run(e, p, scope, &feed, &x, 1, &z, 1, &got));
    cr_assert_eq(rill_tensor_numel(got), 3, "Out sized from Shape's value");
    for (int i = 0; i < 3; i++) cr_assert_float_eq(((const float *)rill_tensor_data(got))[i], (float)i, 0.0f);
    rill_tensor_destroy(got);
    rill_tensor_destroy(x);
    rill_scope_destroy(scope);
    rill_executor_destroy(e);
  }
  cr_assert_eq(atomic_load(&infer_saw_device), 0);
  cr_assert_eq(atomic_load(&kernel_calls), 4, "scale and the reader, twice");
  /* Each run: s back to the host for the inference (the device keeps its own). */
  cr_assert_eq(atomic_load(&to_host), 2 + 2, "s for the inference and z for the fetch, per run");
  cr_assert_eq(atomic_load(&frees), atomic_load(&allocs));
  rill_program_destroy(p);
}

/* An op whose schema marks the slot its inference reads the elements of
 * (RILL_SLOT_INFER_DATA): Out has Shape[0] elements when Shape is given, else X's
 * shape. Only Shape goes to the host for the inference; X stays on the device, which
 * the inference checks. */
static atomic_int infer_calls, infer_saw_x_on_device;

static rill_status *marked_reader_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = ctx->out[0];
  rill_meta_set(out, RILL_DTYPE_FP32, &x->dims, 0, -1, -1);
  if (!ctx->in_tensors) return NULL;
  atomic_fetch_add(&infer_calls, 1);
  const rill_tensor *xt = ctx->in_tensors[0][0];
  if (xt && xt->buf && rill_tensor_place(xt).device == FAKE_DEVICE) atomic_fetch_add(&infer_saw_x_on_device, 1);
  if (!rill_infer_in(ctx, 1, 0)) return NULL;
  const rill_tensor *s = ctx->in_tensors[1][0];
  if (!s || !s->buf || rill_tensor_place(s).device == FAKE_DEVICE)
    return rill_infer_error(ctx, "Shape is not on the host");
  out->dims = (rill_dims){.n = 1, .d = {(int64_t)((const float *)rill_tensor_ptr(s))[0]}};
  return NULL;
}

static rill_status *fake_fill_index(rill_kernel_ctx *ctx) {
  rill_tensor *out = rill_kout(ctx, 0, 0);
  RILL_TRY(on_fake(ctx, rill_kin(ctx, 0, 0), "X"));
  RILL_TRY(on_fake(ctx, out, "Out"));
  float *o = rill_tensor_ptr(out);
  for (int64_t i = 0; i < rill_tensor_numel(out); i++) o[i] = (float)i;
  atomic_fetch_add(&kernel_calls, 1);
  return NULL;
}

/* Runs z = op(s = scale(x), [t = scale(x)]) twice on the fake device: s and t are
 * device tensors; *numel: z's elements. */
/* An executor on the fake device, a scope, and x, a [4] float32 tensor to feed. */
static void fake_executor(rill_executor **e, rill_scope **scope, rill_tensor **x) {
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.place = (rill_place){FAKE_DEVICE, 0};
  OK(rill_executor_create(&o, e));
  OK(rill_scope_create(NULL, scope));
  OK(rill_tensor_create(RILL_DTYPE_FP32, D4, 1, x));
}

/* Runs z = type(s = x, [Shape t = 3]) twice on the fake device, x fed with LoD {0, 1, 4}
 * when with_lod; *numel is z's size, and *lod_out (may be NULL) z's LoD offsets joined into
 * one number, 0 for none (014 for {0, 1, 4}). */
static void run_reader_twice(const char *type, bool with_shape, bool with_lod, int64_t *numel, uint64_t *lod_out) {
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, "x");
  var(p, "s");
  var(p, "t");
  OK(rill_block_add_var(p, 0, "z", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, NULL, 0, 0, false));
  scale_op(p, "x", "s", 1.0f, 0.0f, NULL);
  scale_op(p, "x", "t", 0.0f, 3.0f, NULL); /* t = {3, 3, 3, 3} */
  rill_op_builder *b;
  const char *s = "s", *t = "t", *z = "z";
  OK(rill_op_builder_create(type, &b));
  OK(rill_op_builder_input(b, "X", &s, 1));
  if (with_shape) OK(rill_op_builder_input(b, "Shape", &t, 1));
  OK(rill_op_builder_output(b, "Out", &z, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_executor *e;
  rill_scope *scope;
  rill_tensor *x, *got;
  fake_executor(&e, &scope, &x);
  if (with_lod) {
    static const uint64_t lod[] = {0, 1, 4};
    const uint64_t *levels[] = {lod};
    const size_t counts[] = {3};
    OK(rill_tensor_set_lod(x, 1, levels, counts));
  }
  const char *feed = "x";
  for (int run = 0; run < 2; run++) {
    OK(rill_executor_run(e, p, scope, &feed, &x, 1, &z, 1, &got));
    *numel = rill_tensor_numel(got);
    if (lod_out) {
      *lod_out = 0;
      size_t n = 0;
      const uint64_t *offs = rill_tensor_lod_levels(got) ? rill_tensor_lod(got, 0, &n) : NULL;
      for (size_t i = 0; i < n; i++) *lod_out = *lod_out * 10 + offs[i];
    }
    rill_tensor_destroy(got);
  }
  rill_tensor_destroy(x);
  rill_scope_destroy(scope);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(backends, inference_copies_only_the_inputs_whose_elements_it_reads) {
  static const rill_slot_schema in[] = {{"X", 0, ""}, {"Shape", RILL_SLOT_DISPENSABLE | RILL_SLOT_INFER_DATA, ""}};
  add_fake_op("test_marked_reader", in, 2, RILL_OP_INFER_READS_DATA, marked_reader_infer, fake_fill_index);
  int64_t numel = 0;
  run_reader_twice("test_marked_reader", true, false, &numel, NULL);
  cr_assert_eq(numel, 3, "Out sized from Shape's value");
  cr_assert_eq(atomic_load(&infer_calls), 2, "inferred again on each run: it reads Shape's elements");
  cr_assert_eq(atomic_load(&infer_saw_x_on_device), 2, "X is not copied for the inference");
  cr_assert_eq(atomic_load(&to_host), 2 + 2, "Shape for the inference and z for the fetch, per run");
  /* Without Shape, the inference reads metas alone: once, and nothing is copied for it. */
  atomic_store(&infer_calls, 0);
  atomic_store(&to_host, 0);
  run_reader_twice("test_marked_reader", false, false, &numel, NULL);
  cr_assert_eq(numel, 4, "Out has X's shape");
  cr_assert_eq(atomic_load(&infer_calls), 1, "inferred once: its input metas did not change");
  cr_assert_eq(atomic_load(&to_host), 2, "z for the fetch, per run");
  cr_assert_eq(atomic_load(&frees), atomic_load(&allocs));
}

/* An op whose inference reads its input's LoD offsets (RILL_OP_INFER_READS_LOD): one
 * output row per sequence. The LoD is on the host wherever the elements are: it infers
 * again on every run (the offsets may change with the metas the same), from X on the
 * device, and nothing is copied for it. */
static rill_status *lod_reader_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_meta_set(ctx->out[0], RILL_DTYPE_FP32, &x->dims, 0, -1, -1);
  if (!ctx->in_tensors) return NULL;
  atomic_fetch_add(&infer_calls, 1);
  const rill_tensor *xt = ctx->in_tensors[0][0];
  if (!xt || xt->lod.nlevels != 1) return rill_infer_error(ctx, "X has no LoD");
  if (rill_tensor_place(xt).device == FAKE_DEVICE) atomic_fetch_add(&infer_saw_x_on_device, 1);
  ctx->out[0]->dims = (rill_dims){.n = 1, .d = {(int64_t)xt->lod.levels[0].n - 1}};
  return NULL;
}

Test(backends, inference_that_reads_lod_copies_nothing) {
  static const rill_slot_schema in[] = {{"X", 0, ""}};
  add_fake_op("test_lod_reader", in, 1, RILL_OP_INFER_READS_LOD, lod_reader_infer, fake_fill_index);
  int64_t numel = 0;
  run_reader_twice("test_lod_reader", false, true, &numel, NULL);
  cr_assert_eq(numel, 2, "one row per sequence of X's LoD");
  cr_assert_eq(atomic_load(&infer_calls), 2, "inferred again on each run");
  cr_assert_eq(atomic_load(&infer_saw_x_on_device), 2, "from X where it is");
  cr_assert_eq(atomic_load(&to_host), 2, "z for the fetch, per run");
  cr_assert_eq(atomic_load(&frees), atomic_load(&allocs));
}

/* An op whose Bounds input is RILL_SLOT_HOST_DATA (a few numbers its kernel reads on the
 * host, as slice's bounds): Out = X * Bounds[0] on the fake device. The kernel fails
 * unless X is on the device and Bounds on the host. */
static rill_status *fake_bounds_reader(rill_kernel_ctx *ctx) {
  const rill_tensor *x = rill_kin(ctx, 0, 0), *bounds = rill_kin(ctx, 1, 0);
  rill_tensor *out = rill_kout(ctx, 0, 0);
  RILL_TRY(on_fake(ctx, x, "X"));
  RILL_TRY(on_fake(ctx, out, "Out"));
  if (!bounds || !bounds->buf || rill_tensor_place(bounds).device != RILL_HOST_DEVICE)
    return rill_kernel_error(ctx, "Bounds is not on the host");
  float k = ((const float *)rill_tensor_ptr(bounds))[0];
  const float *a = rill_tensor_ptr(x);
  float *o = rill_tensor_ptr(out);
  for (int64_t i = 0; i < rill_tensor_numel(x); i++) o[i] = a[i] * k;
  atomic_fetch_add(&kernel_calls, 1);
  return NULL;
}

static rill_status *like_x_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x->known) rill_meta_unknown(ctx->out[0]);
  else rill_meta_set(ctx->out[0], x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

static void register_bounds_reader(void) {
  static const rill_slot_schema in[] = {{"X", 0, ""}, {"Bounds", RILL_SLOT_HOST_DATA, ""}}, out[] = {{"Out", 0, ""}};
  static const rill_op_schema op = {.type = "test_bounds_reader", .inputs = in, .ninputs = 2, .outputs = out,
                                    .noutputs = 1, .infer = like_x_infer, .kernel_dtype_slot = 0,
                                    .dtype_attr = -1};
  static const rill_kernel_def k = {"test_bounds_reader", FAKE_DEVICE, RILL_KERNEL_ANY_DTYPE, fake_bounds_reader, NULL};
  const rill_op_schema *ops[] = {&op};
  if (!rill_schema_find("test_bounds_reader")) OK(rill_registry_add_batch(ops, 1, &k, 1));
}

/* z = reader(y on the device, b): b made by a host op (bounds_on_device false) or by a
 * device op; returns z. */
static void bounds_program(rill_program **out, bool bounds_on_device) {
  OK(rill_registry_add_backend(&fake_backend));
  register_bounds_reader();
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, "x");
  var(p, "y");
  var(p, "b");
  var(p, "z");
  scale_op(p, "x", "b", 0.0f, 2.0f, bounds_on_device ? NULL : "cpu"); /* b = {2, 2, 2, 2} */
  scale_op(p, "x", "y", 1.0f, 1.0f, NULL);                             /* y = x + 1, on the device */
  rill_op_builder *b;
  const char *y = "y", *bn = "b", *z = "z";
  OK(rill_op_builder_create("test_bounds_reader", &b));
  OK(rill_op_builder_input(b, "X", &y, 1));
  OK(rill_op_builder_input(b, "Bounds", &bn, 1));
  OK(rill_op_builder_output(b, "Out", &z, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  *out = p;
}

/* Bounds a host op made stay on the host: x goes to the device once and z comes back,
 * and nothing else moves (before the flag, b went to the device as well). */
Test(backends, host_data_made_on_the_host_is_never_copied) {
  rill_program *p;
  bounds_program(&p, false);
  for (int sched = 0; sched < 2; sched++) {
    atomic_store(&from_host, 0);
    atomic_store(&to_host, 0);
    float got[4];
    OK(run(p, (rill_place){FAKE_DEVICE, 0}, sched ? RILL_SCHEDULE_PARALLEL : RILL_SCHEDULE_SEQUENTIAL, "z", got));
    for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], 2.0f * (float)(i + 2), 0.0f);
    expect_copies(1, 1);
  }
  rill_program_destroy(p);
}

/* Bounds a device op made move to the host once, where their reader reads them. */
Test(backends, host_data_made_on_the_device_moves_to_the_host_once) {
  rill_program *p;
  bounds_program(&p, true);
  atomic_store(&from_host, 0);
  atomic_store(&to_host, 0);
  float got[4];
  OK(run(p, (rill_place){FAKE_DEVICE, 0}, RILL_SCHEDULE_SEQUENTIAL, "z", got));
  for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], 2.0f * (float)(i + 2), 0.0f);
  expect_copies(1, 2); /* x to the device; b to the host, z for the fetch */
  rill_program_destroy(p);
}

/* The helpers for tensors on any place (registry.h) go through the backends: a copy to
 * the fake device lands in its memory, one back reads it there, a byte range moves
 * between places, zeros on the device come from the host, and a range past a tensor's
 * end is refused. */
Test(backends, tensors_move_between_places_through_the_backends) {
  OK(rill_registry_add_backend(&fake_backend));
  const rill_place fake = {FAKE_DEVICE, 0}, host = {RILL_DEVICE_CPU, 0};
  rill_dims d = {.n = 2, .d = {2, 3}};
  rill_tensor h, dev, back, zeros;
  rill_tensor_init(&h);
  rill_tensor_init(&dev);
  rill_tensor_init(&back);
  rill_tensor_init(&zeros);
  OK(rill_tensor_alloc(&h, RILL_DTYPE_FP32, &d));
  float *hv = rill_tensor_ptr(&h);
  for (int i = 0; i < 6; i++) hv[i] = (float)i + 0.5f;
  OK(rill_tensor_copy_at(&dev, &h, fake));
  cr_assert_eq(rill_tensor_place(&dev).device, FAKE_DEVICE);
  cr_assert(is_fake(rill_tensor_ptr(&dev)));
  cr_assert(rill_dims_equal(&dev.dims, &d));
  cr_assert_eq(atomic_load(&from_host), 1);
  /* Row 1 of dev := row 0 of h, through the device's copy from the host. */
  OK(rill_tensor_copy_bytes(&dev, 3 * sizeof(float), &h, 0, 3 * sizeof(float)));
  float first = 0;
  OK(rill_tensor_read_host(&dev, &first, sizeof first));
  cr_assert_float_eq(first, 0.5f, 0.0f);
  cr_assert_eq(atomic_load(&to_host), 1);
  OK(rill_tensor_copy_at(&back, &dev, host));
  cr_assert_eq(rill_tensor_place(&back).device, RILL_DEVICE_CPU);
  const float *bv = rill_tensor_ptr(&back);
  for (int i = 0; i < 6; i++) cr_assert_float_eq(bv[i], (float)(i % 3) + 0.5f, 0.0f, "element %d", i);
  /* Already there: nothing moves. */
  int copies = atomic_load(&to_host) + atomic_load(&from_host) + atomic_load(&same_device);
  OK(rill_tensor_copy_at(&dev, &dev, fake));
  cr_assert_eq(atomic_load(&to_host) + atomic_load(&from_host) + atomic_load(&same_device), copies);
  OK(rill_tensor_zeros_at(&zeros, RILL_DTYPE_FP32, &d, fake));
  cr_assert(is_fake(rill_tensor_ptr(&zeros)));
  OK(rill_tensor_copy_at(&back, &zeros, host));
  for (int i = 0; i < 6; i++) cr_assert_float_eq(((const float *)rill_tensor_ptr(&back))[i], 0.0f, 0.0f);
  expect_error(rill_tensor_copy_bytes(&dev, 4 * sizeof(float), &h, 0, 3 * sizeof(float)), RILL_OUT_OF_RANGE,
               "to byte 16 of 24");
  float many[7];
  expect_error(rill_tensor_read_host(&dev, many, sizeof many), RILL_OUT_OF_RANGE, "reading 28 bytes of a tensor of 24");
  rill_tensor_clear(&zeros);
  rill_tensor_clear(&back);
  rill_tensor_clear(&dev);
  rill_tensor_clear(&h);
}

/* rill_tensor_accumulate adds on dst's place through its backend: the CPU's adds its
 * dtypes, a src elsewhere is copied there first, and a backend without `accumulate` (the
 * fake one) or a dtype its backend does not add is refused with dst unchanged. */
Test(backends, tensors_add_on_their_place_through_the_backends) {
  OK(rill_registry_add_backend(&fake_backend));
  const rill_place fake = {FAKE_DEVICE, 0};
  rill_dims d = {.n = 2, .d = {2, 3}};
  rill_tensor a, b, dev, i64, flags;
  rill_tensor_init(&a);
  rill_tensor_init(&b);
  rill_tensor_init(&dev);
  rill_tensor_init(&i64);
  rill_tensor_init(&flags);
  OK(rill_tensor_alloc(&a, RILL_DTYPE_FP32, &d));
  OK(rill_tensor_alloc(&b, RILL_DTYPE_FP32, &d));
  float *av = rill_tensor_ptr(&a), *bv = rill_tensor_ptr(&b);
  for (int i = 0; i < 6; i++) {
    av[i] = (float)i;
    bv[i] = 0.25f * (float)i;
  }
  OK(rill_tensor_accumulate(&a, &b));
  for (int i = 0; i < 6; i++) cr_assert_float_eq(av[i], 1.25f * (float)i, 0.0f, "element %d", i);
  /* From the device: b's copy there comes back to the host and is added. */
  OK(rill_tensor_copy_at(&dev, &b, fake));
  int to = atomic_load(&to_host);
  OK(rill_tensor_accumulate(&a, &dev));
  cr_assert_eq(atomic_load(&to_host), to + 1);
  for (int i = 0; i < 6; i++) cr_assert_float_eq(av[i], 1.5f * (float)i, 0.0f, "element %d", i);
  /* Onto the device: its backend has no accumulate, and dst keeps its values. */
  expect_error(rill_tensor_accumulate(&dev, &b), RILL_UNIMPLEMENTED, "backend 'fakedev' does not add tensors");
  float first[2];
  OK(rill_tensor_read_host(&dev, first, sizeof first));
  cr_assert_float_eq(first[1], 0.25f, 0.0f);
  /* int64 adds; bool is refused, as are another dtype or element count. */
  rill_dims three = {.n = 1, .d = {3}};
  OK(rill_tensor_alloc(&i64, RILL_DTYPE_INT64, &three));
  int64_t *iv = rill_tensor_ptr(&i64);
  for (int i = 0; i < 3; i++) iv[i] = (int64_t)1 << 40;
  OK(rill_tensor_accumulate(&i64, &i64));
  cr_assert_eq(iv[2], (int64_t)1 << 41);
  OK(rill_tensor_alloc(&flags, RILL_DTYPE_BOOL, &three));
  memset(rill_tensor_ptr(&flags), 1, 3);
  expect_error(rill_tensor_accumulate(&flags, &flags), RILL_UNIMPLEMENTED, "not bool");
  expect_error(rill_tensor_accumulate(&a, &i64), RILL_INVALID_ARGUMENT, "adding 3 int64 elements into 6 float32 ones");
  for (int i = 0; i < 6; i++) cr_assert_float_eq(av[i], 1.5f * (float)i, 0.0f, "element %d", i);
  rill_tensor_clear(&flags);
  rill_tensor_clear(&i64);
  rill_tensor_clear(&dev);
  rill_tensor_clear(&b);
  rill_tensor_clear(&a);
}

/* A variable a run left on a device (a pserver's parameter after its optimizer ran
 * there) goes out in an rpc message as host bytes: the encoder copies it to the host,
 * and the message decodes to the same values. */
Test(backends, an_rpc_message_carries_a_device_variable_as_host_bytes) {
  OK(rill_registry_add_backend(&fake_backend));
  rill_dims d = {.n = 2, .d = {2, 2}};
  rill_tensor h;
  rill_tensor_init(&h);
  OK(rill_tensor_alloc(&h, RILL_DTYPE_FP32, &d));
  for (int i = 0; i < 4; i++) ((float *)rill_tensor_ptr(&h))[i] = 1.5f * (float)i;
  rill_variable dev, back;
  rill_variable_init(&dev);
  rill_variable_init(&back);
  dev.kind = RILL_VARKIND_TENSOR;
  rill_tensor_init(&dev.u.tensor);
  OK(rill_tensor_copy_at(&dev.u.tensor, &h, (rill_place){FAKE_DEVICE, 0}));
  int to = atomic_load(&to_host);
  rill_rpc_payload p;
  OK(rill_rpc_encode("fc_0.w_0", &dev, NULL, 0, &p));
  cr_assert_eq(atomic_load(&to_host), to + 1);
  cr_assert_eq(p.data_len, 4 * sizeof(float));
  cr_assert_not_null(p.keep);
  cr_assert_eq(p.keep->place.device, RILL_DEVICE_CPU, "the message's bytes are a host copy");
  cr_assert_eq(memcmp(p.data, rill_tensor_ptr(&h), p.data_len), 0);
  OK(rill_rpc_decode(p.header, p.header_len, p.data, p.data_len, NULL, "test", NULL, &back));
  cr_assert_eq(back.kind, RILL_VARKIND_TENSOR);
  cr_assert(rill_dims_equal(&back.u.tensor.dims, &d));
  cr_assert_eq(memcmp(rill_tensor_ptr(&back.u.tensor), rill_tensor_ptr(&h), p.data_len), 0);
  rill_rpc_payload_clear(&p);
  rill_variable_clear(&back);
  rill_variable_clear(&dev);
  rill_tensor_clear(&h);
}

/* The sub-block gradient ops' sum (step_grad.h) starts where the first step's gradient
 * lies; on a device whose backend does not add (the fake one), the sum moves to the
 * host once and goes on there. */
Test(backends, step_gradients_sum_on_the_host_when_their_device_does_not_add) {
  OK(rill_registry_add_backend(&fake_backend));
  const rill_place fake = {FAKE_DEVICE, 0};
  rill_dims d = {.n = 1, .d = {4}};
  rill_tensor h, g1, g2, sum;
  rill_tensor_init(&h);
  rill_tensor_init(&g1);
  rill_tensor_init(&g2);
  rill_tensor_init(&sum);
  OK(rill_tensor_alloc(&h, RILL_DTYPE_FP32, &d));
  float *hv = rill_tensor_ptr(&h);
  for (int i = 0; i < 4; i++) hv[i] = (float)(i + 1);
  OK(rill_tensor_copy_at(&g1, &h, fake));
  OK(rill_tensor_copy_at(&g2, &h, fake));
  OK(rill_cpu_step_grad_start(&sum, &g1, "w@GRAD"));
  cr_assert_eq(rill_tensor_place(&sum).device, FAKE_DEVICE, "the first step's gradient stays on its place");
  rill_kernel_ctx ctx = {0};
  OK(rill_cpu_step_grad_add(&ctx, &sum, &g2, "w@GRAD"));
  cr_assert_eq(rill_tensor_place(&sum).device, RILL_DEVICE_CPU, "the sum moved to the host");
  OK(rill_cpu_step_grad_add(&ctx, &sum, &h, "w@GRAD"));
  const float *sv = rill_tensor_ptr(&sum);
  for (int i = 0; i < 4; i++) cr_assert_float_eq(sv[i], 3.0f * (float)(i + 1), 0.0f, "element %d", i);
  rill_tensor_clear(&sum);
  rill_tensor_clear(&g2);
  rill_tensor_clear(&g1);
  rill_tensor_clear(&h);
}

/* An op whose inference reads every input's elements (RILL_OP_INFER_READS_DATA, no slot
 * marked) runs on the device: its inference reads host copies of its inputs, gone by
 * the time the kernel runs, and its output still takes X's LoD, from X itself. */
static rill_status *data_reader_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_meta_set(ctx->out[0], RILL_DTYPE_FP32, &x->dims, x->lod_level, 0, 0);
  if (ctx->in_tensors) atomic_fetch_add(&infer_calls, 1);
  return NULL;
}

Test(backends, an_output_takes_its_lod_from_an_input_copied_for_the_inference) {
  static const rill_slot_schema in[] = {{"X", 0, ""}};
  add_fake_op("test_data_reader", in, 1, RILL_OP_INFER_READS_DATA, data_reader_infer, fake_fill_index);
  int64_t numel = 0;
  uint64_t lod = 0;
  run_reader_twice("test_data_reader", false, true, &numel, &lod);
  cr_assert_eq(numel, 4);
  cr_assert_eq(atomic_load(&infer_calls), 2, "inferred on each run, from host copies");
  cr_assert_eq(lod, 14, "Out's LoD is X's {0, 1, 4}, not %llu", (unsigned long long)lod);
}

/* An op that updates its input in place (Out is X) and has a host kernel only, run on
 * the fake device: its output gets a new host buffer for the variable, which lives on
 * the device. When the kernel fails, the variable keeps its values and its place, as it
 * does on the CPU (bad input loses nothing). */
static const rill_slot_schema inplace_in[] = {{"X", 0, ""}};
static const rill_slot_schema inplace_out[] = {{"Out", 0, ""}};
static rill_status *inplace_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_meta_set(ctx->out[0], x->dtype, &x->dims, 0, -1, -1);
  return NULL;
}
static rill_status *failing_inplace(rill_kernel_ctx *ctx) {
  float *o = rill_tensor_ptr(rill_kout(ctx, 0, 0));
  o[0] = -1.0f; /* a partial write into the new buffer, then the failure */
  return rill_kernel_error(ctx, "bad input");
}

Test(backends, a_failing_host_op_keeps_the_device_variable_it_updates_in_place) {
  static rill_op_schema op = {.type = "test_failing_inplace", .inputs = inplace_in, .ninputs = 1,
                              .outputs = inplace_out, .noutputs = 1, .infer = inplace_infer,
                              .kernel_dtype_slot = 0, .dtype_attr = -1};
  static rill_kernel_def k = {"test_failing_inplace", RILL_DEVICE_CPU, RILL_DTYPE_FP32, failing_inplace, NULL};
  OK(rill_registry_add_backend(&fake_backend));
  const rill_op_schema *ops[] = {&op};
  OK(rill_registry_add_batch(ops, 1, &k, 1));
  rill_program *init, *update;
  OK(rill_program_create(&init));
  OK(rill_program_create(&update));
  var(init, "x");
  OK(rill_block_add_var(init, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D4, 1, 0, true));
  OK(rill_block_add_var(update, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D4, 1, 0, true));
  scale_op(init, "x", "w", 2.0f, 0.0f, NULL); /* w = 2x on the fake device */
  unary_op(update, "test_failing_inplace", "w", "w", NULL);
  rill_executor *e;
  rill_scope *scope;
  rill_tensor *x, *got;
  fake_executor(&e, &scope, &x);
  float *xd = rill_tensor_data(x);
  for (int i = 0; i < 4; i++) xd[i] = (float)i + 1.0f;
  const char *feed = "x";
  OK(rill_executor_run(e, init, scope, &feed, &x, 1, NULL, 0, NULL));
  rill_variable *wv = rill_scope_find(scope, "w");
  cr_assert(wv && is_fake(rill_tensor_ptr(&wv->u.tensor)), "w lives on the fake device");
  expect_error(rill_executor_run(e, update, scope, NULL, NULL, 0, NULL, 0, NULL), RILL_INVALID_ARGUMENT,
               "bad input");
  cr_assert(is_fake(rill_tensor_ptr(&wv->u.tensor)), "w still lives on the fake device");
  OK(rill_scope_get_tensor(scope, "w", &got));
  for (int i = 0; i < 4; i++)
    cr_assert_float_eq(((const float *)rill_tensor_data(got))[i], 2.0f * ((float)i + 1.0f), 0.0f, "w[%d]", i);
  rill_tensor_destroy(got);
  rill_tensor_destroy(x);
  rill_scope_destroy(scope);
  rill_executor_destroy(e);
  rill_program_destroy(update);
  rill_program_destroy(init);
}
