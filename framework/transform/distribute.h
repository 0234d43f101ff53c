/* The distribute transpiler's pieces that tests and benchmarks use directly
 * (doc/design/distributed.md): the block layout of one variable and the stable hash of
 * HashName placement. The transpiler itself is rill_program_transpile (rill.h). */
#ifndef RILL_FRAMEWORK_TRANSFORM_DISTRIBUTE_H
#define RILL_FRAMEWORK_TRANSFORM_DISTRIBUTE_H

#include <stddef.h>
#include <stdint.h>

#include "framework/base/status.h"

/* Paddle's slice_variable for one variable of `ndims` dims: at most
 * min(slice_count, numel / min_block_size) blocks (at least 1), each a whole number of
 * rows of dims[1:], the last one smaller. Writes the rows of each block into rows[] (at
 * most `cap`) and their number into *nblocks. INVALID_ARGUMENT for a dim < 1, a
 * slice_count < 1, a min_block_size < 1 or more blocks than `cap`. */
rill_status *rill_dist_slice(const int64_t *dims, int ndims, int64_t slice_count,
                             int64_t min_block_size, int64_t *rows, size_t cap, size_t *nblocks);

/* HashName's hash: 64-bit FNV-1a of the name's bytes. The same in every process, on
 * every machine and in every run; the pserver of a block is hash % #pservers. */
uint64_t rill_dist_hash(const char *name);

#endif
