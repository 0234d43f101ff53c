/* Reference-counted buffers, dense tensors with level-of-detail (LoD) offsets, and
 * selected rows (a sparse set of rows of a taller tensor). */
#ifndef RILL_FRAMEWORK_DATA_TENSOR_H
#define RILL_FRAMEWORK_DATA_TENSOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "framework/base/dims.h"
#include "framework/base/status.h"

/* How a device allocates tensor memory: a backend's `memory` member
 * (framework/registry/registry.h). A buffer keeps the table it came from and frees its
 * data through it; NULL stands for the library's allocator on the host. Tables live for
 * the process. */
typedef struct rill_device_memory rill_device_memory;
struct rill_device_memory {
  void *(*alloc)(const rill_device_memory *m, rill_place place, size_t bytes);
  void (*free)(const rill_device_memory *m, rill_place place, void *p);
};

/* Data a kernel computes once from an immutable buffer's bytes and keeps with it (fc's
 * weight packed for the GEMM's microkernel): a struct whose first member is this header,
 * destroyed through `destroy` when the buffer is freed. */
typedef struct rill_buffer_derived rill_buffer_derived;
struct rill_buffer_derived {
  void (*destroy)(rill_buffer_derived *self);
};

/* Memory shared by tensors. The deleter (NULL: the library's allocator owns `data`)
 * runs when the last reference is released. */
typedef struct rill_buffer {
  atomic_int refs;
  void *data;
  size_t size;
  rill_place place;
  void (*deleter)(void *data, void *ctx);
  void *deleter_ctx;
  bool owned; /* data came from the library's allocator, or from `mem` */
  const rill_device_memory *mem; /* owned device memory's allocator; NULL: the host's */
  /* Readers outside any run that need the bytes unchanged while they hold a reference
   * (a checkpoint being written from the buffer). Writers inside a run already copy a
   * buffer with other references before writing it (rill_tensor_alloc, the executor's
   * in-place outputs); the pin tells the public API to do the same. */
  atomic_int pins;
  /* Set once, before any run reads the buffer, by the owner that knows its bytes will
   * never change (the predictor, for the weights no op of its program writes): every
   * writer then copies it first, as for a pin, and kernels may keep data derived from
   * its bytes in `derived`. */
  bool immutable;
  /* NULL, RILL_BUFFER_DERIVED_BUSY while one thread builds it, or the derived data,
   * destroyed with the buffer (rill_buffer_derived_get / _claim / _publish). */
  _Atomic(rill_buffer_derived *) derived;
  /* Copies of an immutable buffer's bytes on other places (a device's copy of a
   * predictor's weights), newest first, each linked to the next by its own
   * `mirror_next`; the buffer holds a reference to each (rill_buffer_mirror_*). */
  _Atomic(struct rill_buffer *) mirrors;
  struct rill_buffer *mirror_next;
} rill_buffer;

/* A new buffer of `size` bytes, RILL_TENSOR_ALIGN-aligned; NULL when out of memory. */
rill_buffer *rill_buffer_alloc(size_t size, rill_place place);
/* A new buffer of `size` bytes on `place`, from `mem` (NULL: the host allocator, as
 * rill_buffer_alloc). */
rill_buffer *rill_buffer_alloc_on(size_t size, rill_place place, const rill_device_memory *mem);
/* Wraps caller memory; NULL when out of memory (the deleter is then not called). */
rill_buffer *rill_buffer_wrap(void *data, size_t size, rill_place place,
                              void (*deleter)(void *data, void *ctx), void *ctx);
void rill_buffer_retain(rill_buffer *buf);
void rill_buffer_release(rill_buffer *buf);

/* Bytes held by the buffers the library allocated (rill_buffer_alloc*, every place),
 * now and at most since the last rill_buffer_bytes_reset_peak(): the profiler's memory
 * track. One relaxed atomic add per allocation and per release. */
int64_t rill_buffer_bytes_live(void);
int64_t rill_buffer_bytes_peak(void);
void rill_buffer_bytes_reset_peak(void);
void rill_buffer_pin(rill_buffer *buf);
void rill_buffer_unpin(rill_buffer *buf);
/* True while the buffer is pinned, or for good once it is immutable: a writer must copy
 * its bytes first. */
bool rill_buffer_pinned(const rill_buffer *buf);

/* Marks `buf` immutable (see rill_buffer). Call before the buffer is shared between
 * threads; it cannot be undone. */
void rill_buffer_set_immutable(rill_buffer *buf);
static inline bool rill_buffer_immutable(const rill_buffer *buf) { return buf && buf->immutable; }

/* Derived data of an immutable buffer, made at most once however many threads ask:
 * _get answers what is there (NULL: nothing yet, or another thread is building it);
 * _claim is true for the one caller that is to build it (the buffer immutable, nothing
 * there, nobody building), which then calls _publish with the data, or with NULL when it
 * could not make it (a later caller may try again). The buffer owns published data. */
rill_buffer_derived *rill_buffer_derived_get(rill_buffer *buf);
bool rill_buffer_derived_claim(rill_buffer *buf);
void rill_buffer_derived_publish(rill_buffer *buf, rill_buffer_derived *d);

/* The copy of immutable `buf` on `place` (same size, the same bytes at the same
 * offsets), owned by `buf`: NULL when none was added. */
rill_buffer *rill_buffer_mirror_find(rill_buffer *buf, rill_place place);
/* Adds `copy` (a buffer of buf->size bytes on a place other than buf's, holding its
 * bytes; the caller's reference passes to `buf`) as the mirror of immutable `buf` on
 * its place, and marks it immutable. Returns the mirror to use: `copy`, or the one
 * another thread added first for that place (`copy` is then released). A mutable
 * `buf` takes no mirror: `copy` is returned and stays the caller's. */
rill_buffer *rill_buffer_mirror_add(rill_buffer *buf, rill_buffer *copy);

typedef struct rill_lod_level {
  size_t n;
  uint64_t *offsets;
} rill_lod_level;

typedef struct rill_lod {
  size_t nlevels;
  rill_lod_level *levels;
} rill_lod;

void rill_lod_clear(rill_lod *lod);
rill_status *rill_lod_copy(rill_lod *dst, const rill_lod *src);
/* Checks offsets: each level starts at 0 and never decreases, a level's last offset
 * equals the next level's count of sequences, and the last level ends at `rows`. */
rill_status *rill_lod_check(const rill_lod *lod, int64_t rows);

/* A dense tensor: a view of `dims` elements of `dtype` at `offset` in `buf`. The
 * public handle rill_tensor is this struct, heap-allocated. */
struct rill_tensor {
  rill_dtype dtype;
  rill_dims dims;
  rill_buffer *buf; /* NULL until allocated or shared */
  size_t offset;
  rill_lod lod;
};

void rill_tensor_init(rill_tensor *t);
/* Releases buffer and LoD; back to the state after init. */
void rill_tensor_clear(rill_tensor *t);
bool rill_tensor_is_set(const rill_tensor *t);
/* Sets dtype and dims and makes sure the data is writable by this tensor alone and
 * holds the bytes: the buffer is kept when this tensor is its only user and it is large
 * enough, else a new one is allocated (old contents are not preserved). Keeps LoD. */
rill_status *rill_tensor_alloc(rill_tensor *t, rill_dtype dtype, const rill_dims *dims);
/* rill_tensor_alloc on a device: the buffer is kept only when it is on `place` and from
 * `mem`, else a new one comes from `mem` (NULL: the host allocator, and `place` must be
 * the host's). */
rill_status *rill_tensor_alloc_on(rill_tensor *t, rill_dtype dtype, const rill_dims *dims,
                                  rill_place place, const rill_device_memory *mem);
/* Where the tensor's data lives: its buffer's place (the host's when it has none). */
static inline rill_place rill_tensor_place(const rill_tensor *t) {
  return t->buf ? t->buf->place : (rill_place){RILL_DEVICE_CPU, 0};
}
/* Makes dst a view sharing src's buffer, dims, dtype and LoD. */
rill_status *rill_tensor_share(rill_tensor *dst, const rill_tensor *src);
/* Deep copy into dst's own buffer. */
rill_status *rill_tensor_copy(rill_tensor *dst, const rill_tensor *src);
/* Element count; 0 for an unset tensor. */
int64_t rill_tensor_numel(const rill_tensor *t);
size_t rill_tensor_nbytes(const rill_tensor *t);
static inline void *rill_tensor_ptr(const rill_tensor *t) {
  return t->buf ? (char *)t->buf->data + t->offset : NULL;
}
/* Gives `t` a private copy of its bytes when its buffer is pinned (see rill_buffer), so
 * that writes through `t` do not reach the pinned reader. */
rill_status *rill_tensor_unshare_pinned(rill_tensor *t);
/* Exchanges the contents of two tensors. */
void rill_tensor_swap(rill_tensor *a, rill_tensor *b);

typedef struct rill_selected_rows {
  int64_t *rows;
  size_t nrows;
  int64_t height;
  rill_tensor value; /* [nrows, ...] */
} rill_selected_rows;

void rill_selected_rows_init(rill_selected_rows *sr);
void rill_selected_rows_clear(rill_selected_rows *sr);
rill_status *rill_selected_rows_set_rows(rill_selected_rows *sr, const int64_t *rows, size_t n);

#endif
