/* Real programs from ../shared/programs on the GPU against the CPU: each loads with
 * synthetic parameters (tests/support/synth_params.h), runs once at cpu:0 and once at
 * cuda:0 on the same input, and its outputs must agree within the program's tolerance
 * (|gpu - cpu| <= tol (1 + |cpu|), and NaN where the CPU has NaN). The programs are
 * those whose ops the device kernels of slice, assign, layer_norm, the interpolations,
 * conv2d_transpose, clip, expand_v2, grid_sampler, rnn and set_value serve, on small
 * inputs; the ops without a device kernel run on the host with copies, as a user's
 * program would. Without a CUDA device each test skips, saying so. */
#include <math.h>
#include <string.h>

#include "cuda_test.h"
#include "support/synth_params.h"

REPORT_GPU_SKIPS("cuda_programs")

/* Small values around 0, and for batch_norm's variances (named "...var..." or, by
 * Paddle's layer helper, "batch_norm_N.w_2") values in [0.5, 1.5), so that it stays
 * finite. */
static float program_value(const char *name, float r) {
  size_t n = strlen(name);
  bool variance = strstr(name, "var") != NULL || (strncmp(name, "batch_norm", 10) == 0 && n > 4 &&
                                                  strcmp(name + n - 4, ".w_2") == 0);
  return variance ? 0.5f + r : (r - 0.5f) * 0.2f;
}

/* The same, but every variance too: negative ones make batch_norm's outputs NaN, which
 * must flow through the device's ops as through the CPU's. */
static float nan_value(const char *name, float r) {
  (void)name;
  return (r - 0.5f) * 0.2f;
}

typedef struct program_case {
  const char *file, *feed, *fetch;
  int64_t dims[4];
  double tol;
  synth_value_fn value; /* NULL: program_value */
} program_case;

/* The program's output on `place`, on an image of program_case.dims. */
static rill_tensor *run_on(const program_case *c, rill_place place) {
  char path[1024];
  snprintf(path, sizeof path, "%s/programs/%s", shared_dir(), c->file);
  rill_program *p;
  OK(rill_program_load(path, &p));
  rill_scope *scope;
  OK(rill_scope_create(NULL, &scope));
  synth_params(p, scope, 7, c->value ? c->value : program_value);
  rill_tensor *x;
  OK(rill_tensor_create(RILL_DTYPE_FP32, c->dims, 4, &x));
  float *xd = rill_tensor_data(x);
  for (int64_t k = 0; k < rill_tensor_numel(x); k++) xd[k] = (float)(k % 251) / 251.0f - 0.5f;
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.place = place;
  rill_executor *e;
  OK(rill_executor_create(&o, &e));
  rill_tensor *out;
  OK(rill_executor_run(e, p, scope, &c->feed, &x, 1, &c->fetch, 1, &out));
  rill_executor_destroy(e);
  rill_tensor_destroy(x);
  rill_scope_destroy(scope);
  rill_program_destroy(p);
  return out;
}

static void compare_program(const program_case *c) {
  NEED_CUDA_DEVICE();
  rill_tensor *cpu = run_on(c, (rill_place){RILL_DEVICE_CPU, 0});
  rill_tensor *gpu = run_on(c, (rill_place){RILL_DEVICE_CUDA, 0});
  cr_assert_eq(rill_tensor_numel(gpu), rill_tensor_numel(cpu), "%s", c->file);
  cr_assert_eq(rill_tensor_dtype(cpu), RILL_DTYPE_FP32);
  const float *a = rill_tensor_data(cpu), *g = rill_tensor_data(gpu);
  for (int64_t i = 0; i < rill_tensor_numel(cpu); i++)
    cr_assert(isnan(a[i]) ? isnan(g[i]) : fabs((double)g[i] - a[i]) <= c->tol * (1.0 + fabs((double)a[i])),
              "%s: %s[%lld]: cpu %.9g, cuda %.9g (tolerance %g)", c->file, c->fetch, (long long)i, a[i], g[i],
              c->tol);
  rill_tensor_destroy(cpu);
  rill_tensor_destroy(gpu);
}

/* PP-OCRv3's recognizer: an SVTR neck (layer_norm, slice, assign, matmul, softmax). */
Test(cuda_programs, ppocr_v3_recognizer) {
  program_case c = {"en_PP-OCRv3_rec.pdmodel", "x", "softmax_2.tmp_0", {1, 3, 48, 64}, 1e-4, NULL};
  compare_program(&c);
}

/* A DB text detector: its FPN upsamples with nearest_interp_v2 and its head with
 * conv2d_transpose. */
Test(cuda_programs, db_text_detector) {
  program_case c = {"lylain_det.pdmodel", "x", "sigmoid_0.tmp_0", {1, 3, 64, 64}, 1e-4, NULL};
  compare_program(&c);
}

/* The detector with negative batch_norm variances: NaN wherever the CPU has NaN. */
Test(cuda_programs, nan_flows_as_on_the_cpu) {
  program_case c = {"lylain_det.pdmodel", "x", "sigmoid_0.tmp_0", {1, 3, 64, 64}, 1e-4, nan_value};
  compare_program(&c);
}

/* A recognizer with a rectifying front end: bilinear_interp_v2, clip and expand_v2
 * around grid_sampler, every one of them on the device. */
Test(cuda_programs, rectifying_recognizer) {
  program_case c = {"rrishkulova_ocr_rec.pdmodel", "x", "softmax_12.tmp_0", {1, 3, 64, 256}, 1e-4, NULL};
  compare_program(&c);
}

/* A PP-OCR recognizer (MobileNetV3, then a neck of two bidirectional LSTM layers, Paddle
 * 2.x's rnn op) on a 32 x 100 text line. */
Test(cuda_programs, lstm_text_recognizer) {
  program_case c = {"faccy.pdmodel", "x", "save_infer_model/scale_0.tmp_1", {1, 3, 32, 100}, 1e-4, NULL};
  compare_program(&c);
}

/* A table-structure recognizer (fsie_table): an attention decoder in a While loop whose
 * steps write their outputs into the sequence with set_value, the bounds bound tensors
 * of the loop counter. */
Test(cuda_programs, table_structure_decoder) {
  program_case c = {"fsie_table.pdmodel", "x", "fill_constant_15.tmp_0", {1, 3, 64, 64}, 1e-4, NULL};
  compare_program(&c);
}
