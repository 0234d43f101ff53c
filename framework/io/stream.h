/* Paddle's tensor stream (FORMATS.md section 2): one LoD tensor or selected-rows
 * variable as bytes, byte-identical to what Paddle's save / save_combine ops write.
 *
 *   LoDTensor:    u32 version (0), u64 lod_level, per level u64 byte_size + offsets, Tensor
 *   Tensor:       u32 version (0), i32 desc_size, VarType.TensorDesc, raw data
 *   SelectedRows: u32 version (0), u64 n_rows, n_rows x i64, i64 height, Tensor
 *
 * Reading never trusts a length: every size is checked against the bytes left before
 * anything is allocated for it, so a cut or corrupted file gives an error, not a crash
 * or a huge allocation. Errors name the file and the variable:
 *   "params: variable 'fc_0.w_0': truncated data: need 313600 bytes, 120 left". */
#ifndef RILL_FRAMEWORK_IO_STREAM_H
#define RILL_FRAMEWORK_IO_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "framework/data/tensor.h"

/* A position in a memory range or an open file. Combined files hold several streams
 * back to back: read them one after the other from the same reader. A file-backed
 * reader reads tensor data straight into the tensor's buffer, so loading a model needs
 * no second copy of its parameter files in memory. */
typedef struct rill_reader {
  const uint8_t *data; /* memory range (when !is_file) */
  bool is_file;        /* read `fd` with pread; a zeroed reader is a memory one */
  int fd;
  size_t size;
  size_t pos;
  const char *file; /* named in errors; NULL for plain memory */
} rill_reader;

static inline void rill_reader_init(rill_reader *r, const void *data, size_t size,
                                    const char *file) {
  r->data = data;
  r->is_file = false;
  r->fd = -1;
  r->size = size;
  r->pos = 0;
  r->file = file;
}
/* Opens `path` for reading (its size is taken once, at open). */
rill_status *rill_reader_open(rill_reader *r, const char *path);
/* Closes the file of a reader from rill_reader_open; memory readers are left alone. */
void rill_reader_close(rill_reader *r);
static inline size_t rill_reader_left(const rill_reader *r) { return r->size - r->pos; }

/* What a declared variable expects of a stored one; dims of -1 match any extent. */
typedef struct rill_tensor_expect {
  bool check_dtype;
  rill_dtype dtype;
  bool check_dims;
  rill_dims dims;
} rill_tensor_expect;

/* Reads one LoD tensor stream at the reader's position into `out` (replacing what it
 * held). `var` names the variable in errors (may be NULL); `expect` may be NULL. On
 * error `out` is untouched and the reader's position is unspecified. */
rill_status *rill_stream_read_lod_tensor(rill_reader *r, const char *var,
                                         const rill_tensor_expect *expect, rill_tensor *out);
/* Reads one selected-rows stream; the value tensor's first extent must equal the row
 * count and every row id must lie in [0, height). */
rill_status *rill_stream_read_selected_rows(rill_reader *r, const char *var,
                                            const rill_tensor_expect *expect,
                                            rill_selected_rows *out);

/* A growable byte buffer (rill allocator). */
typedef struct rill_bytes {
  uint8_t *data;
  size_t size, cap;
} rill_bytes;

void rill_bytes_init(rill_bytes *b);
void rill_bytes_clear(rill_bytes *b);
rill_status *rill_bytes_append(rill_bytes *b, const void *data, size_t n);
/* Appends printf-formatted text (no terminating NUL). */
rill_status *rill_bytes_appendf(rill_bytes *b, const char *fmt, ...) RILL_PRINTF(2, 3);

/* Appends the stream of a LoD tensor / selected rows to `out`. On error `out` keeps its
 * old size (its capacity may have grown). */
rill_status *rill_stream_write_lod_tensor(rill_bytes *out, const rill_tensor *t);
rill_status *rill_stream_write_selected_rows(rill_bytes *out, const rill_selected_rows *sr);
/* Appends everything of a LoD tensor stream but the raw data, which follows it as
 * rill_tensor_ptr(t) / rill_tensor_nbytes(t) bytes: lets a writer send the data from
 * where it lies without copying it. */
rill_status *rill_stream_write_lod_tensor_header(rill_bytes *out, const rill_tensor *t);

/* Reads a file holding exactly one LoD tensor stream (nothing after it). */
rill_status *rill_stream_load_file(const char *path, const char *var,
                                   const rill_tensor_expect *expect, rill_tensor *out);
/* Writes one LoD tensor stream to `path` crash-safely (file.h). */
rill_status *rill_stream_save_file(const char *path, const rill_tensor *t);

#endif
