/* Pserver balance of the distribute transpiler's placement: bytes of parameters per
 * pserver, max over mean, for VGG16's and ResNet-50's trainable parameters over 2, 4
 * and 8 pservers (target <= 1.05), with slice_var_up (Paddle's slice_variable blocks)
 * and, for comparison, without (whole variables). Parameters are taken in name order,
 * the order Fluid's optimizers append their ops in, and dealt RoundRobin as
 * rill_program_transpile deals them. ResNet-50 is read from
 * ../shared/programs/paddle_inference_demo_resnet50.pdmodel (batch-norm running
 * statistics, which no optimizer updates, left out); VGG16's shapes are written here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/program/program.h"
#include "framework/transform/distribute.h"
#include "rill.h"

#ifndef RILL_SHARED_DIR
#define RILL_SHARED_DIR "../shared"
#endif

typedef struct shape {
  char name[128];
  int64_t d[4];
  int nd;
} shape;

static int by_name(const void *a, const void *b) {
  return strcmp(((const shape *)a)->name, ((const shape *)b)->name);
}

static double balance(const shape *s, size_t n, int64_t ps, int slice) {
  double bytes[8] = {0};
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t rows[8], width = 1;
    size_t nb;
    rill_status *st = rill_dist_slice(s[i].d, s[i].nd, slice ? ps : 1, 8192, rows, 8, &nb);
    if (st) {
      fprintf(stderr, "%s: %s\n", s[i].name, rill_status_message(st));
      exit(1);
    }
    for (int j = 1; j < s[i].nd; j++) width *= s[i].d[j];
    for (size_t b = 0; b < nb; b++) bytes[k++ % (size_t)ps] += (double)(rows[b] * width) * 4.0;
  }
  double max = 0, sum = 0;
  for (int64_t e = 0; e < ps; e++) {
    sum += bytes[e];
    if (bytes[e] > max) max = bytes[e];
  }
  return max / (sum / (double)ps);
}

static void report(const char *model, shape *s, size_t n) {
  qsort(s, n, sizeof *s, by_name);
  double total = 0;
  for (size_t i = 0; i < n; i++) {
    double e = 4;
    for (int j = 0; j < s[i].nd; j++) e *= (double)s[i].d[j];
    total += e;
  }
  printf("%-10s %3zu params %7.1f MiB |", model, n, total / 1048576.0);
  for (int64_t ps = 2; ps <= 8; ps *= 2)
    printf("  %d ps: %.4f (whole vars %.3f)", (int)ps, balance(s, n, ps, 1), balance(s, n, ps, 0));
  printf("\n");
}

static const int64_t vgg16[][4] = {
    {64, 3, 3, 3},    {64, 64, 3, 3},   {128, 64, 3, 3},  {128, 128, 3, 3}, {256, 128, 3, 3},
    {256, 256, 3, 3}, {256, 256, 3, 3}, {512, 256, 3, 3}, {512, 512, 3, 3}, {512, 512, 3, 3},
    {512, 512, 3, 3}, {512, 512, 3, 3}, {512, 512, 3, 3}, {25088, 4096, 0, 0},
    {4096, 4096, 0, 0}, {4096, 1000, 0, 0}};

int main(void) {
  printf("pserver balance: bytes per pserver, max / mean (target <= 1.05), RoundRobin\n");
  shape v[32];
  size_t nv = 0;
  for (size_t i = 0; i < sizeof vgg16 / sizeof vgg16[0]; i++) {
    int nd = vgg16[i][2] ? 4 : 2;
    const char *kind = nd == 4 ? "conv" : "fc";
    snprintf(v[nv].name, sizeof v[nv].name, "%s%02zu.w_0", kind, i);
    memcpy(v[nv].d, vgg16[i], sizeof v[nv].d);
    v[nv++].nd = nd;
    snprintf(v[nv].name, sizeof v[nv].name, "%s%02zu.b_0", kind, i);
    v[nv].d[0] = vgg16[i][0];
    v[nv++].nd = 1;
  }
  report("VGG16", v, nv);

  rill_program *p = NULL;
  rill_status *st =
      rill_program_load(RILL_SHARED_DIR "/programs/paddle_inference_demo_resnet50.pdmodel", &p);
  if (st) {
    printf("ResNet-50: skipped (%s)\n", rill_status_message(st));
    rill_status_destroy(st);
    return 0;
  }
  shape *r = calloc(p->blocks[0].nvars, sizeof *r);
  size_t nr = 0;
  for (size_t i = 0; r && i < p->blocks[0].nvars; i++) {
    const rill_var_desc *d = &p->blocks[0].vars[i];
    size_t len = strlen(d->name);
    if (!d->persistable || !d->has_tensor || d->dims.n < 1 || d->dims.n > 4) continue;
    if ((len > 5 && !strcmp(d->name + len - 5, "_mean")) ||
        (len > 9 && !strcmp(d->name + len - 9, "_variance")))
      continue;
    snprintf(r[nr].name, sizeof r[nr].name, "%s", d->name);
    memcpy(r[nr].d, d->dims.d, (size_t)d->dims.n * sizeof(int64_t));
    r[nr++].nd = d->dims.n;
  }
  if (r) report("ResNet-50", r, nr);
  free(r);
  rill_program_destroy(p);
  return 0;
}
