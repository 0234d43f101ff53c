/* Sliding-window geometry shared by unfold and im2sequence (schemas and CPU kernels):
 * the attributes [kernel, strides, paddings (top, left, bottom, right) (, dilations)]
 * stand at `first` onwards in the op's attribute table, in that order. An output extent
 * is (in + before + after - (dilation * (k - 1) + 1)) / stride + 1; it is -1 while the
 * input extent is unknown. */
#ifndef RILL_OPERATORS_PATCHES_H
#define RILL_OPERATORS_PATCHES_H

#include <string.h>

#include "framework/registry/registry.h"

typedef struct rill_patch_geom {
  int64_t c, h, w;    /* one image */
  int64_t kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  int64_t oh, ow;     /* windows per column / row */
} rill_patch_geom;

/* Output extent of one axis; -1 when `in` is unknown, -2 when no window fits. */
static inline int64_t rill_patch_extent(int64_t in, int64_t k, int64_t d, int64_t before,
                                        int64_t after, int64_t stride) {
  if (in < 0) return -1;
  int64_t span = in + before + after - (d * (k - 1) + 1);
  return span < 0 ? -2 : span / stride + 1;
}

/* Fills g from the attributes and X's dims [N, C, H, W] (dilations are 1 unless
 * `dilated`). Returns NULL or a message naming the attribute at fault. */
static inline const char *rill_patch_geom_get(const rill_attr_value *a, size_t first, bool dilated,
                                              const rill_dims *x, rill_patch_geom *g) {
  memset(g, 0, sizeof *g);
  const rill_attr_value *k = &a[first], *s = &a[first + 1], *p = &a[first + 2];
  if (k->n != 2 || k->list.ints[0] <= 0 || k->list.ints[1] <= 0)
    return "the kernel size attribute must hold 2 positive ints";
  if (s->n != 2 || s->list.ints[0] <= 0 || s->list.ints[1] <= 0)
    return "attribute strides must hold 2 positive ints";
  if (p->n != 4 || p->list.ints[0] < 0 || p->list.ints[1] < 0 || p->list.ints[2] < 0 ||
      p->list.ints[3] < 0)
    return "attribute paddings must hold 4 non-negative ints (top, left, bottom, right)";
  g->dh = g->dw = 1;
  if (dilated) {
    const rill_attr_value *d = &a[first + 3];
    if (d->n != 2 || d->list.ints[0] <= 0 || d->list.ints[1] <= 0)
      return "attribute dilations must hold 2 positive ints";
    g->dh = d->list.ints[0];
    g->dw = d->list.ints[1];
  }
  g->kh = k->list.ints[0];
  g->kw = k->list.ints[1];
  g->sh = s->list.ints[0];
  g->sw = s->list.ints[1];
  g->pt = p->list.ints[0];
  g->pl = p->list.ints[1];
  g->pb = p->list.ints[2];
  g->pr = p->list.ints[3];
  g->c = x->d[1];
  g->h = x->d[2];
  g->w = x->d[3];
  g->oh = rill_patch_extent(g->h, g->kh, g->dh, g->pt, g->pb, g->sh);
  g->ow = rill_patch_extent(g->w, g->kw, g->dw, g->pl, g->pr, g->sw);
  if (g->oh == -2 || g->ow == -2) return "the padded image is smaller than one window";
  return NULL;
}

#endif
