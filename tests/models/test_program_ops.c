/* The inference ops of issue 5 (interpolation, conv3d, group_norm, grid_sampler,
 * expand_v2, one_hot_v2, fill_constant_batch_size_like, comparisons, set_value,
 * assign_value) let these shared programs validate: every op registered with a kernel
 * and compile-time shape inference agreeing with the declared VarDescs. Each program is
 * validated twice: on its declared input shapes (-1 batch and sizes) and with those
 * unknown extents fixed to concrete values, so that inference computes exact output
 * sizes (interp scales, conv3d extents, ...) and they must match the declarations.
 * Ops of the excluded families (while, rnn) are renamed to stubs with no inference,
 * so the rest of faccy and fsie_table is checked too. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/registry/registry.h"
#include "rill.h"

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
    rill_kernel_def kd = {names[k], RILL_DEVICE_CPU, RILL_KERNEL_ANY_DTYPE, stub_kernel};
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
    {"faccy.pdmodel", "rnn", 2, 320},                  /* fill_constant_batch_size_like */
    {"fsie_table.pdmodel", "while", 1, 488},           /* assign_value, one_hot_v2, set_value, less_than */
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
