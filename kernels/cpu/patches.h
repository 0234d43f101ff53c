/* The image <-> columns walk of unfold and im2sequence (operators/patches.h has the
 * geometry). For one image img [C, H, W] and window (oy, ox), tap (c, i, j) reads pixel
 * (oy * sh - top + i * dh, ox * sw - left + j * dw), 0 outside the image. The columns
 * are laid out [C * kh * kw, OH * OW] (cfo, unfold) or [OH * OW, C * kh * kw]
 * (im2sequence). Forward writes every column entry; backward adds each entry back onto
 * its pixel (img must start zeroed). */
#ifndef RILL_KERNELS_CPU_PATCHES_H
#define RILL_KERNELS_CPU_PATCHES_H

#include <stdbool.h>

#include "operators/patches.h"

#define RILL_PATCH_WALK(T, NAME)                                                               \
  static void NAME(const rill_patch_geom *g, bool cfo, bool backward, T *img, T *col) {        \
    int64_t taps = g->c * g->kh * g->kw, wins = g->oh * g->ow;                                 \
    for (int64_t c = 0; c < g->c; c++)                                                         \
      for (int64_t i = 0; i < g->kh; i++)                                                      \
        for (int64_t j = 0; j < g->kw; j++) {                                                  \
          int64_t tap = (c * g->kh + i) * g->kw + j;                                           \
          for (int64_t oy = 0; oy < g->oh; oy++) {                                             \
            int64_t y = oy * g->sh - g->pt + i * g->dh;                                        \
            for (int64_t ox = 0; ox < g->ow; ox++) {                                           \
              int64_t x = ox * g->sw - g->pl + j * g->dw, win = oy * g->ow + ox;               \
              T *at = col + (cfo ? tap * wins + win : win * taps + tap);                       \
              bool in = y >= 0 && y < g->h && x >= 0 && x < g->w;                              \
              if (backward) {                                                                  \
                if (in) img[(c * g->h + y) * g->w + x] += *at;                                 \
              } else {                                                                         \
                *at = in ? img[(c * g->h + y) * g->w + x] : (T)0;                              \
              }                                                                                \
            }                                                                                  \
          }                                                                                    \
        }                                                                                      \
  }

#endif
