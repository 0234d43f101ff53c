/* Real programs from ../shared/programs on the GPU against the CPU: each loads with
 * synthetic parameters (tests/support/synth_params.h), runs once at cpu:0 and once at
 * cuda:0 on the same input, and its outputs must agree within the program's tolerance
 * (|gpu - cpu| <= tol (1 + |cpu|), and NaN where the CPU has NaN). The programs are
 * those whose ops the device kernels of slice, assign, layer_norm, the interpolations,
 * conv2d_transpose, clip, expand_v2, grid_sampler, rnn, set_value, box_coder and yolo_box
 * serve, on small inputs (the detectors' images, declared at a fixed size, redeclared
 * any size); the ops without a device kernel run on the host with copies, as a user's
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

#define MAX_FETCH 3

typedef struct program_case {
  const char *file, *feed, *fetch;
  int64_t dims[4];
  double tol;
  synth_value_fn value; /* NULL: program_value */
  const char *im_size;  /* NULL, or a second feed: int32 [N, 2], the image's height and width */
  const char *more[MAX_FETCH - 1]; /* more variables to fetch and compare */
  bool any_size;        /* the image's height and width redeclared -1: any size may be fed */
} program_case;

/* The fetch list: c->fetch, then c->more up to the first NULL. */
static size_t fetches_of(const program_case *c, const char **names) {
  size_t n = 0;
  names[n++] = c->fetch;
  for (size_t i = 0; i < MAX_FETCH - 1 && c->more[i]; i++) names[n++] = c->more[i];
  return n;
}

/* The program's fetched outputs on `place`, on an image of program_case.dims. */
static void run_on(const program_case *c, rill_place place, rill_tensor **outs) {
  char path[1024];
  snprintf(path, sizeof path, "%s/programs/%s", shared_dir(), c->file);
  rill_program *p;
  OK(rill_program_load(path, &p));
  if (c->any_size)
    OK(rill_var_set_tensor(p, 0, c->feed, true, RILL_DTYPE_FP32, (const int64_t[]){-1, c->dims[1], -1, -1}, 4, 0));
  rill_scope *scope;
  OK(rill_scope_create(NULL, &scope));
  synth_params(p, scope, 7, c->value ? c->value : program_value);
  rill_tensor *feeds[2];
  const char *feed_names[2] = {c->feed, c->im_size};
  OK(rill_tensor_create(RILL_DTYPE_FP32, c->dims, 4, &feeds[0]));
  float *xd = rill_tensor_data(feeds[0]);
  for (int64_t k = 0; k < rill_tensor_numel(feeds[0]); k++) xd[k] = (float)(k % 251) / 251.0f - 0.5f;
  size_t nfeed = 1;
  if (c->im_size) {
    OK(rill_tensor_create(RILL_DTYPE_INT32, (const int64_t[]){c->dims[0], 2}, 2, &feeds[nfeed]));
    int32_t *sz = rill_tensor_data(feeds[nfeed++]);
    for (int64_t k = 0; k < c->dims[0]; k++) {
      sz[2 * k] = (int32_t)c->dims[2];
      sz[2 * k + 1] = (int32_t)c->dims[3];
    }
  }
  const char *fetch[MAX_FETCH];
  size_t nfetch = fetches_of(c, fetch);
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.place = place;
  rill_executor *e;
  OK(rill_executor_create(&o, &e));
  OK(rill_executor_run(e, p, scope, feed_names, feeds, nfeed, fetch, nfetch, outs));
  rill_executor_destroy(e);
  for (size_t k = 0; k < nfeed; k++) rill_tensor_destroy(feeds[k]);
  rill_scope_destroy(scope);
  rill_program_destroy(p);
}

static void compare_program(const program_case *c) {
  NEED_CUDA_DEVICE();
  const char *fetch[MAX_FETCH];
  size_t nfetch = fetches_of(c, fetch);
  rill_tensor *cpu[MAX_FETCH], *gpu[MAX_FETCH];
  run_on(c, (rill_place){RILL_DEVICE_CPU, 0}, cpu);
  run_on(c, (rill_place){RILL_DEVICE_CUDA, 0}, gpu);
  for (size_t f = 0; f < nfetch; f++) {
    cr_assert_eq(rill_tensor_numel(gpu[f]), rill_tensor_numel(cpu[f]), "%s: %s", c->file, fetch[f]);
    cr_assert_eq(rill_tensor_dtype(cpu[f]), RILL_DTYPE_FP32);
    const float *a = rill_tensor_data(cpu[f]), *g = rill_tensor_data(gpu[f]);
    for (int64_t i = 0; i < rill_tensor_numel(cpu[f]); i++)
      cr_assert(isnan(a[i]) ? isnan(g[i]) : fabs((double)g[i] - a[i]) <= c->tol * (1.0 + fabs((double)a[i])),
                "%s: %s[%lld]: cpu %.9g, cuda %.9g (tolerance %g)", c->file, fetch[f], (long long)i, a[i], g[i],
                c->tol);
    rill_tensor_destroy(cpu[f]);
    rill_tensor_destroy(gpu[f]);
  }
}

/* PP-OCRv3's recognizer: an SVTR neck (layer_norm, slice, assign, matmul, softmax). */
Test(cuda_programs, ppocr_v3_recognizer) {
  program_case c = {.file = "en_PP-OCRv3_rec.pdmodel", .feed = "x", .fetch = "softmax_2.tmp_0", .dims = {1, 3, 48, 64},
                    .tol = 1e-4};
  compare_program(&c);
}

/* A DB text detector: its FPN upsamples with nearest_interp_v2 and its head with
 * conv2d_transpose. */
Test(cuda_programs, db_text_detector) {
  program_case c = {.file = "lylain_det.pdmodel", .feed = "x", .fetch = "sigmoid_0.tmp_0", .dims = {1, 3, 64, 64},
                    .tol = 1e-4};
  compare_program(&c);
}

/* The detector with negative batch_norm variances: NaN wherever the CPU has NaN. */
Test(cuda_programs, nan_flows_as_on_the_cpu) {
  program_case c = {.file = "lylain_det.pdmodel", .feed = "x", .fetch = "sigmoid_0.tmp_0", .dims = {1, 3, 64, 64},
                    .tol = 1e-4, .value = nan_value};
  compare_program(&c);
}

/* A recognizer with a rectifying front end: bilinear_interp_v2, clip and expand_v2
 * around grid_sampler, every one of them on the device. */
Test(cuda_programs, rectifying_recognizer) {
  program_case c = {.file = "rrishkulova_ocr_rec.pdmodel", .feed = "x", .fetch = "softmax_12.tmp_0",
                    .dims = {1, 3, 64, 256}, .tol = 1e-4};
  compare_program(&c);
}

/* A PP-OCR recognizer (MobileNetV3, then a neck of two bidirectional LSTM layers, Paddle
 * 2.x's rnn op) on a 32 x 100 text line. */
Test(cuda_programs, lstm_text_recognizer) {
  program_case c = {.file = "faccy.pdmodel", .feed = "x", .fetch = "save_infer_model/scale_0.tmp_1",
                    .dims = {1, 3, 32, 100}, .tol = 1e-4};
  compare_program(&c);
}

/* A table-structure recognizer (fsie_table): an attention decoder in a While loop whose
 * steps write their outputs into the sequence with set_value, the bounds bound tensors
 * of the loop counter. */
Test(cuda_programs, table_structure_decoder) {
  program_case c = {.file = "fsie_table.pdmodel", .feed = "x", .fetch = "fill_constant_15.tmp_0",
                    .dims = {1, 3, 64, 64}, .tol = 1e-4};
  compare_program(&c);
}

/* An SSD detector (MobileNet, prior_box on six feature maps, box_coder decoding): the
 * priors are made on the host from the maps' shapes alone, no map copied there for
 * them, and the boxes are decoded on the device. multiclass_nms, after them, runs on
 * the host, as Paddle's does. */
Test(cuda_programs, ssd_detector_boxes) {
  program_case c = {.file = "trash__model__", .feed = "image", .fetch = "box_coder_0.tmp_0", .dims = {1, 3, 96, 96},
                    .tol = 1e-4, .any_size = true};
  compare_program(&c);
}

/* A YOLOv3 detector: three yolo_box heads decode on the device, reading the image size
 * fed beside the image there. */
Test(cuda_programs, yolo_detector_boxes) {
  program_case c = {.file = "yzl_paddle_infer__model__", .feed = "image", .fetch = "yolo_box0.tmp_0",
                    .dims = {1, 3, 128, 96}, .tol = 1e-4, .any_size = true, .im_size = "im_size",
                    .more = {"yolo_box1.tmp_1", "yolo_box2.tmp_0"}};
  compare_program(&c);
}
