/* The convolution engine shared by conv2d, depthwise_conv2d, conv2d_transpose and their
 * gradients. Three primitives over a rill_conv_geom (operators/nn.h): the forward conv
 * (image -> columns side), its data gradient (columns side -> image, also the forward of
 * a transposed conv) and its filter gradient. Each picks a path per shape:
 *   1x1  - 1x1 filter, stride 1, no padding: one GEMM per image and group, no copies;
 *   im2col - the image unfolded a block of output rows at a time into a cache-sized
 *            buffer, then GEMM (col2im for the data gradient);
 *   direct - loops over filter taps with contiguous inner loops over output columns;
 *            used for depthwise groups (one input channel, at most two output
 *            channels), where GEMM would be a matrix-vector product. The forward of a
 *            3x3 depthwise channel with stride 1 or 2 (MobileNet's) runs a kernel of
 *            its own: 8 output columns at a time with AVX2 FMA, the three input rows
 *            read once per output row, stride 2 by deinterleaving.
 * The forward of one image is cut into fixed parts (ranges of depthwise channels, of a 1x1
 * conv's columns or rows, of a first layer's output rows) run over the executor's threads
 * on the kernel pool (parts.c), conv2d_fusion's epilogue (conv_epi.h) applied by each
 * part. conv2d and conv2d_grad split a batch of small images on the im2col path by images
 * over the executor's threads, the filter gradient over fixed chunks of images (conv2d.c).
 * RILL_CONV_PATH_DIRECT_GENERIC (forced only: tests, benchmarks) is the direct path
 * without the specialised kernels, the baseline they are checked and timed against. */
#ifndef RILL_KERNELS_CPU_CONV_H
#define RILL_KERNELS_CPU_CONV_H

#include <stdbool.h>
#include <stddef.h>

#include "operators/nn.h"

enum { RILL_CONV_PATH_AUTO, RILL_CONV_PATH_IM2COL, RILL_CONV_PATH_1X1, RILL_CONV_PATH_DIRECT,
       RILL_CONV_PATH_DIRECT_GENERIC };

/* Tests and benchmarks only: forces a path (1X1 falls back to IM2COL where it does not
 * apply). Not synchronised: set it only while no conv runs. */
extern int rill_conv_force_path;
/* Bytes of the im2col block buffer; tests lower it to exercise several blocks. */
extern size_t rill_conv_col_budget;
/* Tests and benchmarks only: false turns off the split of batches of small images
 * (conv2d.c), so that each image runs through the general path. Not synchronised. */
extern bool rill_conv_split_images;

#endif
