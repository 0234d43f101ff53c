/* The channel-rearranging ops (pixel_shuffle, shuffle_channel, space_to_depth): where
 * each element of a 4-D NCHW input X goes in the output, as one flat index map shared
 * by the schemas' shape inference (operators/rearrange.c) and the CPU kernels
 * (kernels/cpu/rearrange.c). Each map is a bijection between X and Out. */
#ifndef RILL_OPERATORS_REARRANGE_H
#define RILL_OPERATORS_REARRANGE_H

#include <stdint.h>

enum { REARRANGE_PIXEL_SHUFFLE, REARRANGE_SHUFFLE_CHANNEL, REARRANGE_SPACE_TO_DEPTH };

/* Output flat index of X's element (n, c, h, w); x holds X's dims [N, C, H, W] and f the
 * op's factor (upscale_factor, group, blocksize). */
static inline int64_t rearrange_dst(int kind, const int64_t *x, int64_t f, int64_t n, int64_t c,
                                    int64_t h, int64_t w) {
  int64_t C = x[1], H = x[2], W = x[3];
  switch (kind) {
    case REARRANGE_PIXEL_SHUFFLE: {
      /* channel c = oc r^2 + i r + j goes to (oc, h r + i, w r + j) of [N, C/r^2, H r, W r] */
      int64_t oc = c / (f * f), i = c % (f * f) / f, j = c % f;
      return ((n * (C / (f * f)) + oc) * H * f + h * f + i) * W * f + w * f + j;
    }
    case REARRANGE_SHUFFLE_CHANNEL: {
      /* channel c = a (C/g) + b goes to channel b g + a */
      int64_t per = C / f, oc = (c % per) * f + c / per;
      return ((n * C + oc) * H + h) * W + w;
    }
    default: {
      /* Paddle's space_to_depth (Darknet's reorg): the output buffer read as
       * [N, C/bs^2, H bs, W bs] takes (n, c, h, w) at (c mod C/bs^2, h bs + o / bs,
       * w bs + o mod bs), o = c div (C/bs^2) */
      int64_t oc = C / (f * f), c2 = c % oc, o = c / oc;
      int64_t w2 = w * f + o % f, h2 = h * f + o / f;
      return w2 + W * f * (h2 + H * f * (c2 + oc * n));
    }
  }
}

#endif
