/* Every shared program and model validates: all its ops registered with a CPU kernel
 * and compile-time shape inference agreeing with the declared VarDescs. The only
 * exceptions are the programs of the excluded op families, listed below with the reason
 * and the exact ops they lack, so that a program needing any other op fails here.
 *
 * The programs that use the inference ops of issue 5 (interpolation, conv3d,
 * group_norm, grid_sampler, expand_v2, one_hot_v2, fill_constant_batch_size_like,
 * comparisons, set_value, assign_value, prior_box, box_coder, yolo_box,
 * multiclass_nms) are validated twice more: on their declared input shapes (-1 batch
 * and sizes) and with those unknown extents fixed to concrete values, so that inference
 * computes exact output sizes (interp scales, conv3d extents, prior counts, ...) and
 * they must match the declarations. Ops of an excluded family can be renamed to stubs
 * with no inference (`excluded` of a case), so the rest of such a program is checked. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/registry/registry.h"
#include "rill.h"
#include "support/synth_params.h"

#define PROGRAMS RILL_SHARED_DIR "/programs/"

static void expect_ok(rill_status *st, const char *what) {
  cr_assert_null(st, "%s: %s", what, rill_status_message(st));
}

/* Stubs for the excluded ops: any slots, no inference, a kernel that does nothing. */
static const rill_slot_schema any_slots[] = {
    {"X", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE, "stub"},
};
static rill_status *stub_kernel(rill_kernel_ctx *ctx) {
  (void)ctx;
  return NULL;
}

/* Renames every op of type `from` to "stub:<from>" and registers a stub schema whose
 * slots are those the program uses. */
static size_t stub_ops(rill_program *p, const char *from) {
  static char names[4][64];
  static rill_slot_schema ins[4][16], outs[4][16];
  static rill_op_schema schemas[4];
  static size_t nschemas;
  char type[64];
  snprintf(type, sizeof type, "stub:%s", from);
  size_t k = 0;
  while (k < nschemas && strcmp(names[k], type) != 0) k++;
  bool fresh = k == nschemas;
  if (fresh) {
    cr_assert(nschemas < 4);
    snprintf(names[k], sizeof names[k], "%s", type);
    schemas[k] = (rill_op_schema){.type = names[k], .doc = "stub", .inputs = ins[k],
                                  .outputs = outs[k], .kernel_dtype_slot = -1, .dtype_attr = -1};
    nschemas++;
  }
  size_t renamed = 0;
  for (size_t b = 0; b < p->nblocks; b++)
    for (size_t i = 0; i < p->blocks[b].nops; i++) {
      rill_op_desc *op = &p->blocks[b].ops[i];
      if (strcmp(op->type, from) != 0) continue;
      rill_free(op->type);
      op->type = rill_strdup(type);
      cr_assert_not_null(op->type);
      renamed++;
      for (int dir = 0; dir < 2 && fresh; dir++) {
        size_t n = dir ? op->noutputs : op->ninputs;
        for (size_t s = 0; s < n; s++) {
          const char *slot = dir ? op->outputs[s].param : op->inputs[s].param;
          rill_slot_schema *arr = dir ? outs[k] : ins[k];
          size_t *cnt = dir ? &schemas[k].noutputs : &schemas[k].ninputs;
          bool have = false;
          for (size_t j = 0; j < *cnt; j++) have = have || strcmp(arr[j].name, slot) == 0;
          if (!have) {
            cr_assert(*cnt < 16);
            arr[(*cnt)++] = (rill_slot_schema){rill_strdup(slot), any_slots[0].flags, "stub"};
          }
        }
      }
    }
  if (fresh) {
    expect_ok(rill_registry_add_op(&schemas[k]), "stub schema");
    rill_kernel_def kd = {names[k], RILL_DEVICE_CPU, RILL_KERNEL_ANY_DTYPE, stub_kernel, NULL};
    expect_ok(rill_registry_add_kernel(&kd), "stub kernel");
  }
  return renamed;
}

/* Sets the unknown extents of every feed target: dim 0 to `batch`, others to `size`. */
static void fix_feed_shapes(rill_program *p, int64_t batch, int64_t size) {
  rill_block_desc *b0 = &p->blocks[0];
  size_t fixed = 0;
  for (size_t i = 0; i < b0->nops; i++) {
    rill_op_desc *op = &b0->ops[i];
    if (strcmp(op->type, "feed") != 0) continue;
    for (size_t s = 0; s < op->noutputs; s++)
      for (size_t a = 0; a < op->outputs[s].nargs; a++)
        for (size_t v = 0; v < b0->nvars; v++) {
          rill_var_desc *vd = &b0->vars[v];
          if (strcmp(vd->name, op->outputs[s].args[a]) != 0) continue;
          for (int d = 0; d < vd->dims.n; d++)
            if (vd->dims.d[d] < 0) vd->dims.d[d] = d == 0 ? batch : size;
          fixed++;
        }
  }
  cr_assert_geq(fixed, 1, "no feed target found");
}

typedef struct prog_case {
  const char *file;
  const char *excluded; /* an op of an excluded family to stub, or NULL */
  int64_t batch, size;  /* concrete values for unknown feed extents */
} prog_case;

static const prog_case cases[] = {
    {"rrishkulova_ocr_rec.pdmodel", NULL, 2, 0},      /* bilinear_interp_v2, grid_sampler, expand_v2 */
    {"hextostring_sd_vae_decoder.pdmodel", NULL, 1, 32}, /* group_norm, nearest_interp_v2 */
    {"enesty_det.pdmodel", NULL, 1, 640},              /* nearest_interp_v2 */
    {"fsie_layout_picodet.pdmodel", NULL, 1, 0},       /* nearest_interp_v2 */
    {"ldphu1_det.pdmodel", NULL, 2, 320},              /* nearest_interp_v2 */
    {"lylain_det.pdmodel", NULL, 1, 960},              /* nearest_interp_v2 */
    {"thunder95_tsm__model__", NULL, 1, 0},            /* conv3d */
    {"faccy.pdmodel", NULL, 2, 320},                   /* fill_constant_batch_size_like, rnn */
    {"fsie_table.pdmodel", NULL, 1, 488},              /* while, assign_value, one_hot_v2, set_value */
    {"trash__model__", NULL, 2, 0},                    /* prior_box, box_coder, multiclass_nms */
    {"yzl_paddle_infer__model__", NULL, 1, 0},         /* yolo_box, multiclass_nms */
};

static void check_program(const prog_case *c, bool concrete) {
  expect_ok(rill_registry_init(), "registry");
  char path[1024], what[1200];
  snprintf(path, sizeof path, "%s%s", PROGRAMS, c->file);
  snprintf(what, sizeof what, "%s (%s shapes)", c->file, concrete ? "concrete" : "declared");
  rill_program *p = NULL;
  expect_ok(rill_program_load(path, &p), what);
  if (c->excluded) {
    /* without the stub, only the excluded op is reported missing */
    rill_status *st = rill_program_validate(p);
    cr_assert_not_null(st, "%s: expected the excluded op %s to be missing", what, c->excluded);
    char want[128];
    snprintf(want, sizeof want, "does not have: %s (", c->excluded);
    cr_assert_not_null(strstr(rill_status_message(st), want), "%s: %s", what,
                       rill_status_message(st));
    rill_status_destroy(st);
    cr_assert_geq(stub_ops(p, c->excluded), 1);
  }
  if (concrete) fix_feed_shapes(p, c->batch, c->size);
  expect_ok(rill_program_validate(p), what);
  rill_program_destroy(p);
}

Test(program_ops, programs_validate_on_declared_shapes) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_program(&cases[i], false);
}

Test(program_ops, programs_validate_on_concrete_shapes) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_program(&cases[i], true);
}

/* A concrete shape that contradicts a declaration is caught by these ops' inference:
 * the OCR model declares its bilinear_interp_v2 output [-1, 3, 32, 64] from out_h/out_w;
 * an interp that ignored them would give the input's 64 x 256. */
Test(program_ops, interp_output_checked_against_declaration) {
  expect_ok(rill_registry_init(), "registry");
  rill_program *p = NULL;
  expect_ok(rill_program_load(PROGRAMS "rrishkulova_ocr_rec.pdmodel", &p), "load");
  rill_block_desc *b0 = &p->blocks[0];
  bool found = false;
  for (size_t i = 0; i < b0->nops && !found; i++) {
    rill_op_desc *op = &b0->ops[i];
    if (strcmp(op->type, "bilinear_interp_v2") != 0) continue;
    for (size_t a = 0; a < op->nattrs; a++)
      if (strcmp(op->attrs[a].name, "out_w") == 0) {
        op->attrs[a].value.v.i = 65; /* now disagrees with the declared 64 */
        found = true;
      }
  }
  cr_assert(found);
  rill_status *st = rill_program_validate(p);
  cr_assert_not_null(st);
  cr_assert_not_null(strstr(rill_status_message(st), "bilinear_interp_v2"), "%s",
                     rill_status_message(st));
  rill_status_destroy(st);
  rill_program_destroy(p);
}

/* The programs rill does not run, each with the ops it lacks (exactly as validation
 * lists them) and why they are out of scope; the list ends with a NULL entry. None at
 * present: the last ones lacked the recurrent ops (gru, lstm, rnn) and crf_decoding. */
static const struct excluded {
  const char *file, *missing, *why;
} excluded[] = {
    {NULL, NULL, NULL},
};

static size_t count_excluded(void) {
  size_t n = 0;
  while (excluded[n].file) n++;
  return n;
}

static const struct excluded *find_excluded(const char *file) {
  for (size_t i = 0; excluded[i].file; i++)
    if (strcmp(excluded[i].file, file) == 0) return &excluded[i];
  return NULL;
}

/* Validates one program file; returns true when it was an excluded one. */
static bool check_any(const char *dir, const char *file, const char *label) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  rill_program *p = NULL;
  expect_ok(rill_program_load(path, &p), path);
  const struct excluded *ex = find_excluded(label);
  rill_status *st = rill_program_validate(p);
  if (!ex) {
    cr_assert_null(st, "%s: %s", label, rill_status_message(st));
  } else {
    char want[512];
    snprintf(want, sizeof want, "does not have: %s (", ex->missing);
    cr_assert_not_null(st, "%s (excluded: %s) now validates: drop it from the list", label, ex->why);
    cr_assert_not_null(strstr(rill_status_message(st), want), "%s: expected only %s missing: %s",
                       label, ex->missing, rill_status_message(st));
    rill_status_destroy(st);
  }
  rill_program_destroy(p);
  return ex != NULL;
}

Test(program_ops, every_shared_program_validates_but_the_excluded_families) {
  expect_ok(rill_registry_init(), "registry");
  size_t programs = 0, skipped = 0;
  DIR *d = opendir(RILL_SHARED_DIR "/programs");
  cr_assert_not_null(d, "cannot open %s", RILL_SHARED_DIR "/programs");
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    skipped += check_any(RILL_SHARED_DIR "/programs", e->d_name, e->d_name);
    programs++;
  }
  closedir(d);
  cr_assert_geq(programs, 32, "only %zu programs found", programs);
  cr_assert_eq(skipped, count_excluded(), "an excluded program is missing");
  /* the models with parameters: a __model__ or model.pdmodel in each folder */
  size_t models = 0;
  d = opendir(RILL_SHARED_DIR "/models");
  cr_assert_not_null(d);
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || strchr(e->d_name, '.')) continue;
    char dir[1024], probe[1200];
    snprintf(dir, sizeof dir, "%s/%s", RILL_SHARED_DIR "/models", e->d_name);
    snprintf(probe, sizeof probe, "%s/__model__", dir);
    FILE *f = fopen(probe, "rb");
    const char *name = f ? "__model__" : "model.pdmodel";
    if (f) fclose(f);
    check_any(dir, name, e->d_name);
    models++;
  }
  closedir(d);
  cr_assert_geq(models, 8, "only %zu models found", models);
}

/* The SSD program declares prior_box_1's boxes [10, 10, 6, 4]: min 105 / max 150 with
 * ratios [2, 3] flipped give 1 + 4 + 1 = 6 priors. Dropping the ratio 3 makes inference
 * say 4, which validation must report against the declaration. */
Test(program_ops, prior_count_checked_against_declaration) {
  expect_ok(rill_registry_init(), "registry");
  rill_program *p = NULL;
  expect_ok(rill_program_load(PROGRAMS "trash__model__", &p), "load");
  rill_block_desc *b0 = &p->blocks[0];
  bool found = false;
  for (size_t i = 0; i < b0->nops && !found; i++) {
    rill_op_desc *op = &b0->ops[i];
    if (strcmp(op->type, "prior_box") != 0) continue;
    for (size_t a = 0; a < op->nattrs; a++)
      if (strcmp(op->attrs[a].name, "aspect_ratios") == 0 && op->attrs[a].value.n == 2) {
        op->attrs[a].value.n = 1;
        found = true;
      }
  }
  cr_assert(found);
  rill_status *st = rill_program_validate(p);
  cr_assert_not_null(st);
  cr_assert_not_null(strstr(rill_status_message(st), "prior_box"), "%s", rill_status_message(st));
  cr_assert_not_null(strstr(rill_status_message(st), "prior_box_1.tmp_0"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_program_destroy(p);
}

/* 1 for variance-like parameters, else small values around 0. */
static float detection_value(const char *name, float r) {
  return strstr(name, "var") != NULL ? 1.0f : (r - 0.5f) * 0.2f;
}

/* Runs a detection program end to end with synthetic parameters (small deterministic
 * values; every variance-like parameter 1 so batch_norm stays finite) and checks the
 * multiclass_nms output the way Paddle defines it: [K, 6] rows with a one-level LoD ending
 * at K, at most keep_top_k of them, labels ascending and never the background, scores
 * above the threshold and non-increasing within a label. */
static rill_tensor *run_synthetic(const char *file, const char *fetch, int64_t size,
                                  bool im_size, rill_schedule schedule) {
  char path[1024];
  snprintf(path, sizeof path, "%s%s", PROGRAMS, file);
  rill_program *p = NULL;
  expect_ok(rill_program_load(path, &p), path);
  rill_scope *scope = NULL;
  expect_ok(rill_scope_create(NULL, &scope), "scope");
  synth_params(p, scope, 7, detection_value);
  const int64_t xd[] = {1, 3, size, size}, sd[] = {1, 2};
  rill_tensor *feeds[2] = {NULL, NULL};
  expect_ok(rill_tensor_create(RILL_DTYPE_FP32, xd, 4, &feeds[0]), "image");
  float *x = rill_tensor_data(feeds[0]);
  for (int64_t k = 0; k < 3 * size * size; k++) x[k] = (float)(k % 255) / 255.0f;
  if (im_size) {
    expect_ok(rill_tensor_create(RILL_DTYPE_INT32, sd, 2, &feeds[1]), "im_size");
    int32_t *s = rill_tensor_data(feeds[1]);
    s[0] = s[1] = (int32_t)size;
  }
  const char *names[] = {"image", "im_size"};
  rill_executor *exe = NULL;
  rill_executor_options opts = RILL_EXECUTOR_OPTIONS_INIT;
  opts.num_threads = 2;
  expect_ok(rill_executor_create(&opts, &exe), "executor");
  expect_ok(rill_executor_set_schedule(exe, schedule), "schedule");
  rill_tensor *out = NULL;
  expect_ok(rill_executor_run(exe, p, scope, names, feeds, im_size ? 2 : 1, &fetch, 1, &out), file);
  rill_executor_destroy(exe);
  rill_tensor_destroy(feeds[0]);
  rill_tensor_destroy(feeds[1]);
  rill_scope_destroy(scope);
  rill_program_destroy(p);
  return out;
}

static void check_detections(const rill_tensor *out, int64_t keep_top_k, int background,
                             float score_t, float box_max) {
  const int64_t *d = rill_tensor_dims(out);
  cr_assert_eq(rill_tensor_ndim(out), 2);
  int64_t k = d[0];
  cr_assert(k >= 1 && k <= keep_top_k && d[1] == 6, "%lld x %lld detections", (long long)k,
            (long long)d[1]);
  size_t n = 0;
  cr_assert_eq(rill_tensor_lod_levels(out), 1);
  const uint64_t *lod = rill_tensor_lod(out, 0, &n);
  cr_assert(n == 2 && lod[0] == 0 && lod[1] == (uint64_t)k);
  const float *o = rill_tensor_data((rill_tensor *)out);
  for (int64_t r = 0; r < k; r++) {
    const float *row = o + r * 6;
    cr_assert(row[0] != (float)background && row[1] > score_t, "row %lld", (long long)r);
    if (r) {
      cr_assert_geq(row[0], row[-6], "labels ascend");
      if (row[0] == row[-6]) cr_assert_leq(row[1], row[-5], "scores descend within a label");
    }
    if (box_max > 0)
      for (int c = 2; c < 6; c++) cr_assert(row[c] >= 0 && row[c] <= box_max, "row %lld box", (long long)r);
  }
}

Test(program_ops, ssd_program_runs_with_synthetic_parameters) {
  expect_ok(rill_registry_init(), "registry");
  rill_tensor *out = run_synthetic("trash__model__", "detection_output_0.tmp_0", 300, false,
                                   RILL_SCHEDULE_SEQUENTIAL);
  check_detections(out, 200, 0, 0.01f, 0); /* background 0, keep_top_k 200 */
  /* the parallel schedule gives the same detections, bit for bit */
  rill_tensor *par = run_synthetic("trash__model__", "detection_output_0.tmp_0", 300, false,
                                   RILL_SCHEDULE_PARALLEL);
  cr_assert_eq(rill_tensor_byte_size(par), rill_tensor_byte_size(out));
  cr_assert(memcmp(rill_tensor_data(par), rill_tensor_data(out), rill_tensor_byte_size(out)) == 0);
  rill_tensor_destroy(par);
  rill_tensor_destroy(out);
}

Test(program_ops, yolov3_program_runs_with_synthetic_parameters) {
  expect_ok(rill_registry_init(), "registry");
  rill_tensor *out = run_synthetic("yzl_paddle_infer__model__", "multiclass_nms_0.tmp_0", 608, true,
                                   RILL_SCHEDULE_AUTO);
  check_detections(out, 100, -1, 0.01f, 607); /* clip_bbox: within the 608 x 608 image */
  rill_tensor_destroy(out);
}

/* Two recurrent programs run with synthetic parameters (one LCG over every float32
 * persistable in the file's order, as run_synthetic, in [-scale / 2, scale / 2)) on five
 * sequences of lengths 7, 12, 3, 12 and 1, and give Paddle 1.8.5's output for the same
 * parameters and inputs (tests/models/gen_program_references.py printed the arrays):
 * the RNA secondary-structure model (12 `lstm` ops: stacked bidirectional layers with
 * peepholes, D = 256, after lookup_table_v2 and fc) and the lexical analysis model (a
 * bidirectional pair of `gru` ops, then crf_decoding, whose int64 tags it declares
 * float32). */
/* Paddle 1.8.5: ['seq', 'dot'], LoD [[0, 7, 19, 22, 34, 35]] */
static const float rna_paddle[35] = {
    5.060091019e-01f, 5.045314431e-01f, 5.029745102e-01f, 5.014986396e-01f, 5.004851818e-01f, 4.995685220e-01f,
    4.958103299e-01f, 5.059252977e-01f, 5.049493313e-01f, 5.035561919e-01f, 5.024815202e-01f, 5.017783046e-01f,
    5.012125969e-01f, 5.006731749e-01f, 5.000737906e-01f, 5.000000000e-01f, 5.000000000e-01f, 4.998702705e-01f,
    4.955609143e-01f, 5.044463277e-01f, 5.030666590e-01f, 4.995274544e-01f, 5.059221983e-01f, 5.049501061e-01f,
    5.035573840e-01f, 5.024817586e-01f, 5.017811656e-01f, 5.012142658e-01f, 5.006728172e-01f, 5.000750422e-01f,
    5.000000000e-01f, 5.000000000e-01f, 4.998664558e-01f, 4.955591559e-01f, 5.009223223e-01f,
};
/* Paddle 1.8.5: ['words'], LoD [[0, 7, 19, 22, 34, 35]] */
static const int64_t bondh_paddle[35] = {
    54, 9, 9, 53, 4, 6, 0, 22, 22, 22, 51, 51,
    51, 4, 54, 1, 11, 22, 15, 45, 45, 51, 24, 23,
    23, 47, 21, 56, 23, 23, 20, 10, 10, 16, 55,
};

typedef struct lcg_run {
  const char *file, *fetch;
  float scale;
  size_t nfeeds;
  const char *feeds[2];
  int feed_rank;                  /* 1: ids [T]; 2: ids [T, 1] */
  int64_t (*id)(int feed, int64_t k);
} lcg_run;

static int64_t rna_id(int feed, int64_t k) { return feed ? (3 * k + 1) % 5 : k % 6; }
static int64_t bondh_id(int feed, int64_t k) {
  (void)feed;
  return (37 * k + 11) % 20942;
}

static rill_tensor *run_lcg(const lcg_run *r, rill_schedule schedule) {
  char path[1024];
  snprintf(path, sizeof path, "%s%s", PROGRAMS, r->file);
  rill_program *p = NULL;
  expect_ok(rill_program_load(path, &p), path);
  rill_scope *scope = NULL;
  expect_ok(rill_scope_create(NULL, &scope), "scope");
  const rill_block_desc *b0 = &p->blocks[0];
  uint32_t seed = 7;
  for (size_t i = 0; i < b0->nvars; i++) {
    const rill_var_desc *v = &b0->vars[i];
    if (!v->persistable || v->type != RILL_VAR_LOD_TENSOR || v->dtype != RILL_DTYPE_FP32) continue;
    rill_tensor *t = NULL;
    expect_ok(rill_tensor_create(v->dtype, v->dims.d, (size_t)v->dims.n, &t), v->name);
    float *f = rill_tensor_data(t);
    for (int64_t k = 0; k < rill_tensor_numel(t); k++) {
      seed = seed * 1103515245u + 12345u;
      f[k] = ((float)((seed >> 16) % 1000) / 1000.0f - 0.5f) * r->scale;
    }
    expect_ok(rill_scope_set_tensor(scope, v->name, t), v->name);
    rill_tensor_destroy(t);
  }
  const uint64_t lod[] = {0, 7, 19, 22, 34, 35};
  const size_t nlod = 6;
  const int64_t dims[] = {35, 1};
  rill_tensor *feeds[2] = {NULL, NULL};
  for (size_t f = 0; f < r->nfeeds; f++) {
    expect_ok(rill_tensor_create(RILL_DTYPE_INT64, dims, (size_t)r->feed_rank, &feeds[f]), "feed");
    int64_t *ids = rill_tensor_data(feeds[f]);
    for (int64_t k = 0; k < 35; k++) ids[k] = r->id((int)f, k);
    expect_ok(rill_tensor_set_lod(feeds[f], 1, (const uint64_t *const[]){lod}, &nlod), "lod");
  }
  rill_executor *exe = NULL;
  rill_executor_options opts = RILL_EXECUTOR_OPTIONS_INIT;
  opts.num_threads = 2;
  expect_ok(rill_executor_create(&opts, &exe), "executor");
  expect_ok(rill_executor_set_schedule(exe, schedule), "schedule");
  rill_tensor *out = NULL;
  expect_ok(rill_executor_run(exe, p, scope, r->feeds, feeds, r->nfeeds, &r->fetch, 1, &out),
            r->file);
  rill_executor_destroy(exe);
  for (size_t f = 0; f < r->nfeeds; f++) rill_tensor_destroy(feeds[f]);
  rill_scope_destroy(scope);
  rill_program_destroy(p);
  return out;
}

Test(program_ops, rna_lstm_program_matches_paddle_with_synthetic_parameters) {
  expect_ok(rill_registry_init(), "registry");
  const lcg_run r = {"rna_predictions__model__", "save_infer_model/scale_0.tmp_0", 0.2f, 2,
                     {"seq", "dot"}, 1, rna_id};
  for (int sched = 0; sched < 2; sched++) {
    rill_tensor *out = run_lcg(&r, sched ? RILL_SCHEDULE_PARALLEL : RILL_SCHEDULE_SEQUENTIAL);
    cr_assert_eq(rill_tensor_ndim(out), 1);
    cr_assert_eq(rill_tensor_dims(out)[0], 35);
    const float *o = rill_tensor_data(out);
    /* the outputs sit near 0.5: their distance from it is what the LSTMs computed */
    for (int i = 0; i < 35; i++)
      cr_assert(fabsf(o[i] - rna_paddle[i]) <= 1e-6f, "output %d: %.9g, Paddle %.9g", i,
                (double)o[i], (double)rna_paddle[i]);
    rill_tensor_destroy(out);
  }
}

Test(program_ops, lac_gru_crf_program_matches_paddle_with_synthetic_parameters) {
  expect_ok(rill_registry_init(), "registry");
  const lcg_run r = {"bondh_lac_gru_crf__model__", "save_infer_model/scale_0", 2.0f, 1,
                     {"words"}, 2, bondh_id};
  for (int sched = 0; sched < 2; sched++) {
    rill_tensor *out = run_lcg(&r, sched ? RILL_SCHEDULE_PARALLEL : RILL_SCHEDULE_SEQUENTIAL);
    cr_assert_eq(rill_tensor_dtype(out), RILL_DTYPE_INT64);
    cr_assert_eq(rill_tensor_ndim(out), 2);
    cr_assert_eq(rill_tensor_dims(out)[0], 35);
    const int64_t *o = rill_tensor_data(out);
    for (int i = 0; i < 35; i++)
      cr_assert_eq(o[i], bondh_paddle[i], "tag %d: %lld, Paddle %lld", i, (long long)o[i],
                   (long long)bondh_paddle[i]);
    rill_tensor_destroy(out);
  }
}

/* 1 for variances, scales in [0.5, 1.5), else small values around 0. */
static float quant_value(const char *name, float r) {
  size_t len = strlen(name);
  bool scale = len > 6 && strcmp(name + len - 6, ".scale") == 0;
  bool var = strstr(name, "variance") != NULL;
  return var ? 1.0f : scale ? 0.5f + r : (r - 0.5f) * 0.1f;
}

/* The int8 ResNet-50 of Paddle-Lite (fake quantize / dequantize ops around every conv2d
 * and mul, is_test scales stored as persistables) runs with synthetic parameters: weights
 * small deterministic values, every scale positive, every variance 1. Checked: the
 * probabilities are finite and sum to 1, two runs agree bit for bit, and the first
 * quantize op's output (image.quantized) equals a reference computed here from the image
 * and image.scale (clip to the scale, round half away from zero, 8 bits). */
static void run_int8(rill_tensor **outs, float *image_scale) {
  rill_program *p = NULL;
  expect_ok(rill_program_load(PROGRAMS "paddlelite_resnet50_int8__model__", &p), "load");
  rill_scope *scope = NULL;
  expect_ok(rill_scope_create(NULL, &scope), "scope");
  synth_params(p, scope, 11, quant_value);
  rill_tensor *st = NULL;
  expect_ok(rill_scope_get_tensor(scope, "image.scale", &st), "image.scale");
  *image_scale = *(const float *)rill_tensor_data(st);
  rill_tensor_destroy(st);
  const int64_t xd[] = {1, 3, 224, 224};
  rill_tensor *image = NULL;
  expect_ok(rill_tensor_create(RILL_DTYPE_FP32, xd, 4, &image), "image");
  float *x = rill_tensor_data(image);
  for (int64_t k = 0; k < 3 * 224 * 224; k++) x[k] = (float)(k % 251) / 125.0f - 1.0f;
  const char *feed = "image";
  const char *fetch[] = {"save_infer_model/scale_0.tmp_0", "image.quantized"};
  rill_executor *exe = NULL;
  rill_executor_options opts = RILL_EXECUTOR_OPTIONS_INIT;
  opts.num_threads = 2;
  expect_ok(rill_executor_create(&opts, &exe), "executor");
  expect_ok(rill_executor_run(exe, p, scope, &feed, &image, 1, fetch, 2, outs), "int8 run");
  rill_executor_destroy(exe);
  rill_tensor_destroy(image);
  rill_scope_destroy(scope);
  rill_program_destroy(p);
}

Test(program_ops, int8_resnet50_runs_with_synthetic_parameters) {
  expect_ok(rill_registry_init(), "registry");
  rill_tensor *a[2] = {NULL, NULL}, *b[2] = {NULL, NULL};
  float s = 0;
  run_int8(a, &s);
  run_int8(b, &s);
  cr_assert_eq(rill_tensor_ndim(a[0]), 2);
  cr_assert_eq(rill_tensor_dims(a[0])[1], 1000);
  const float *prob = rill_tensor_data(a[0]);
  double sum = 0;
  for (int k = 0; k < 1000; k++) {
    cr_assert(isfinite(prob[k]) && prob[k] >= 0, "prob[%d] = %g", k, (double)prob[k]);
    sum += prob[k];
  }
  cr_assert(fabs(sum - 1) < 1e-4, "probabilities sum to %g", sum);
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(rill_tensor_byte_size(a[i]), rill_tensor_byte_size(b[i]));
    cr_assert(memcmp(rill_tensor_data(a[i]), rill_tensor_data(b[i]), rill_tensor_byte_size(a[i])) == 0,
              "fetch %d differs between runs", i);
  }
  cr_assert_eq(rill_tensor_numel(a[1]), 3 * 224 * 224);
  const float *q = rill_tensor_data(a[1]);
  for (int64_t k = 0; k < 3 * 224 * 224; k++) {
    float x = (float)(k % 251) / 125.0f - 1.0f;
    float c = x > s ? s : x < -s ? -s : x;
    float inv = s <= 1e-30f ? 1.0f / (s + 1e-6f) : 1.0f / s;
    float want = roundf(127.0f * inv * c);
    cr_assert(q[k] == want, "image.quantized[%lld] = %g, expected %g", (long long)k, (double)q[k],
              (double)want);
  }
  for (int i = 0; i < 2; i++) {
    rill_tensor_destroy(a[i]);
    rill_tensor_destroy(b[i]);
  }
}
