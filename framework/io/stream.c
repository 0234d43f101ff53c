#include "framework/io/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/io/file.h"
#include "proto/framework.pb-c.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the tensor stream copies raw data as is: rill needs a little-endian host"
#endif

/* Largest tensor description accepted. */
#define STREAM_DESC_MAX (1 << 20)

typedef Paddle__Framework__Proto__VarType__TensorDesc tensor_desc_pb;

/* ---- protobuf-c allocations through the rill allocator ---- */

/* ctx points to a bool set when an allocation fails, so that running out of memory
 * is not reported as a corrupt description. */
static void *pb_alloc(void *ctx, size_t size) {
  void *p = rill_malloc(size);
  if (!p && ctx) *(bool *)ctx = true;
  return p;
}
static void pb_free(void *ctx, void *ptr) {
  (void)ctx;
  rill_free(ptr);
}

/* ---- bytes ---- */

void rill_bytes_init(rill_bytes *b) { memset(b, 0, sizeof *b); }

void rill_bytes_clear(rill_bytes *b) {
  rill_free(b->data);
  rill_bytes_init(b);
}

static rill_status *bytes_reserve(rill_bytes *b, size_t extra) {
  size_t need;
  if (!rill_add_size(b->size, extra, &need))
    return rill_error(RILL_OUT_OF_RANGE, "byte buffer would exceed the address space");
  if (need <= b->cap) return NULL;
  void *p = b->data;
  if (!rill_grow(&p, &b->cap, need, 1)) return rill_oom();
  b->data = p;
  return NULL;
}

rill_status *rill_bytes_appendf(rill_bytes *b, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return rill_error(RILL_INTERNAL, "cannot format text");
  if ((size_t)n < sizeof small) return rill_bytes_append(b, small, (size_t)n);
  char *big = rill_malloc((size_t)n + 1);
  if (!big) return rill_oom();
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  rill_status *st = rill_bytes_append(b, big, (size_t)n);
  rill_free(big);
  return st;
}

rill_status *rill_bytes_append(rill_bytes *b, const void *data, size_t n) {
  if (!n) return NULL;
  RILL_TRY(bytes_reserve(b, n));
  memcpy(b->data + b->size, data, n);
  b->size += n;
  return NULL;
}

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static rill_status *append_u32(rill_bytes *b, uint32_t v) {
  uint8_t buf[4];
  put_u32(buf, v);
  return rill_bytes_append(b, buf, 4);
}
static rill_status *append_u64(rill_bytes *b, uint64_t v) {
  uint8_t buf[8];
  put_u64(buf, v);
  return rill_bytes_append(b, buf, 8);
}

/* ---- reading ---- */

static rill_status *need(const rill_reader *r, size_t n, const char *what) {
  if (rill_reader_left(r) < n)
    return rill_error(RILL_CORRUPT, "truncated %s: need %zu bytes, %zu left", what, n,
                      rill_reader_left(r));
  return NULL;
}

rill_status *rill_reader_open(rill_reader *r, const char *path) {
  struct stat sb;
  int fd = rill_file_open_regular(path, &sb);
  if (fd == -2)
    return rill_error(RILL_INVALID_ARGUMENT, "'%s' is not a regular file (it is %s)", path,
                      rill_file_kind(sb.st_mode));
  if (fd < 0) {
    int e = errno;
    return rill_error(e == ENOENT ? RILL_NOT_FOUND : RILL_IO, "cannot open '%s': %s", path,
                      strerror(e));
  }
  rill_status *st = NULL;
  if (sb.st_size < 0 || (uint64_t)sb.st_size >= (uint64_t)SIZE_MAX)
    st = rill_error(RILL_OUT_OF_RANGE, "'%s' is too large", path);
  if (st) {
    close(fd);
    return st;
  }
  rill_reader_init(r, NULL, (size_t)sb.st_size, path);
  r->is_file = true;
  r->fd = fd;
  return NULL;
}

void rill_reader_close(rill_reader *r) {
  if (r->is_file) close(r->fd);
  r->is_file = false;
  r->fd = -1;
}

/* Copies the next n bytes to dst (the caller checked that they are there). */
static rill_status *take(rill_reader *r, void *dst, size_t n) {
  if (!r->is_file) {
    if (n) memcpy(dst, r->data + r->pos, n);
    r->pos += n;
    return NULL;
  }
  uint8_t *p = dst;
  while (n) {
    size_t chunk = n > (1u << 30) ? (1u << 30) : n;
    ssize_t got = pread(r->fd, p, chunk, (off_t)r->pos);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return rill_error(RILL_IO, "cannot read: %s", strerror(errno));
    if (got == 0)
      return rill_error(RILL_IO, "file shrank while being read (at byte %zu of %zu)", r->pos,
                        r->size);
    p += got;
    n -= (size_t)got;
    r->pos += (size_t)got;
  }
  return NULL;
}

static rill_status *read_u32(rill_reader *r, const char *what, uint32_t *v) {
  uint8_t b[4];
  RILL_TRY(need(r, 4, what));
  RILL_TRY(take(r, b, 4));
  *v = get_u32(b);
  return NULL;
}

static rill_status *read_u64(rill_reader *r, const char *what, uint64_t *v) {
  uint8_t b[8];
  RILL_TRY(need(r, 8, what));
  RILL_TRY(take(r, b, 8));
  *v = get_u64(b);
  return NULL;
}

static rill_status *check_expect(const rill_tensor_expect *ex, rill_dtype dtype,
                                 const rill_dims *dims) {
  if (!ex) return NULL;
  if (ex->check_dtype && ex->dtype != dtype)
    return rill_error(RILL_INVALID_ARGUMENT, "stored dtype %s does not match the declared %s",
                      rill_dtype_name(dtype), rill_dtype_name(ex->dtype));
  if (ex->check_dims) {
    bool ok = ex->dims.n == dims->n;
    for (int i = 0; ok && i < dims->n; i++)
      ok = ex->dims.d[i] < 0 || ex->dims.d[i] == dims->d[i];
    if (!ok) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_error(RILL_INVALID_ARGUMENT, "stored shape %s does not match the declared %s",
                        rill_dims_str(dims, a, sizeof a), rill_dims_str(&ex->dims, b, sizeof b));
    }
  }
  return NULL;
}

/* Reads the Tensor part (version, desc, data) into `out`, whose LoD is left alone. */
static rill_status *read_tensor(rill_reader *r, const rill_tensor_expect *ex, rill_tensor *out) {
  uint32_t version;
  RILL_TRY(read_u32(r, "tensor header", &version));
  if (version != 0)
    return rill_error(RILL_CORRUPT, "unsupported tensor version %" PRIu32 " (expected 0)", version);
  uint32_t raw_size;
  RILL_TRY(read_u32(r, "tensor header", &raw_size));
  int32_t desc_size = (int32_t)raw_size;
  if (desc_size < 0)
    return rill_error(RILL_CORRUPT, "negative tensor description size %" PRId32, desc_size);
  RILL_TRY(need(r, (size_t)desc_size, "tensor description"));
  /* A real description is a few dozen bytes; the cap bounds the copy a file reader makes. */
  if (desc_size > STREAM_DESC_MAX)
    return rill_error(RILL_CORRUPT, "tensor description of %" PRId32 " bytes (at most %d)",
                      desc_size, STREAM_DESC_MAX);
  const uint8_t *desc_bytes = r->is_file ? NULL : r->data + r->pos;
  uint8_t *copy = NULL;
  if (r->is_file) {
    copy = rill_malloc((size_t)desc_size + 1);
    if (!copy) return rill_oom();
    rill_status *st = take(r, copy, (size_t)desc_size);
    if (st) {
      rill_free(copy);
      return st;
    }
    desc_bytes = copy;
  } else {
    r->pos += (size_t)desc_size;
  }
  bool oom = false;
  ProtobufCAllocator pb_allocator = {pb_alloc, pb_free, &oom};
  tensor_desc_pb *desc = (tensor_desc_pb *)protobuf_c_message_unpack(
      &paddle__framework__proto__var_type__tensor_desc__descriptor, &pb_allocator,
      (size_t)desc_size, desc_bytes);
  rill_free(copy);
  if (!desc && oom) return rill_oom();
  if (!desc)
    return rill_error(RILL_CORRUPT, "invalid tensor description (%" PRId32 " bytes)", desc_size);

  rill_status *st = NULL;
  rill_dtype dtype = (rill_dtype)desc->data_type;
  size_t esize = rill_dtype_size(dtype);
  rill_dims dims = {0, {0}};
  int64_t numel = 0;
  size_t bytes = 0;
  if (!esize) {
    st = rill_error(RILL_CORRUPT, "stored data type %d is not a tensor element type",
                    (int)desc->data_type);
  } else if (desc->n_dims > RILL_MAX_DIMS) {
    st = rill_error(RILL_CORRUPT, "stored tensor has %zu dimensions, at most %d are supported",
                    desc->n_dims, RILL_MAX_DIMS);
  } else {
    rill_dims_set(&dims, desc->dims, desc->n_dims);
    char b[RILL_DIMS_STR_MAX];
    for (int i = 0; i < dims.n && !st; i++)
      if (dims.d[i] < 0)
        st = rill_error(RILL_CORRUPT, "stored shape %s has a negative extent",
                        rill_dims_str(&dims, b, sizeof b));
    if (!st && (!rill_dims_numel(&dims, INT64_MAX, &numel) ||
                !rill_mul_size((size_t)numel, esize, &bytes)))
      st = rill_error(RILL_CORRUPT, "stored shape %s is too large",
                      rill_dims_str(&dims, b, sizeof b));
  }
  protobuf_c_message_free_unpacked(&desc->base, &pb_allocator);
  if (st) return st;
  RILL_TRY(check_expect(ex, dtype, &dims));
  if (rill_reader_left(r) < bytes) {
    char b[RILL_DIMS_STR_MAX];
    return rill_error(RILL_CORRUPT, "truncated data: need %zu bytes, %zu left (%s %s)", bytes,
                      rill_reader_left(r), rill_dtype_name(dtype),
                      rill_dims_str(&dims, b, sizeof b));
  }
  RILL_TRY(rill_tensor_alloc(out, dtype, &dims));
  return take(r, rill_tensor_ptr(out), bytes);
}

static rill_status *read_lod(rill_reader *r, rill_lod *lod) {
  uint64_t nlevels;
  RILL_TRY(read_u64(r, "LoD level count", &nlevels));
  /* Each level takes at least its 8-byte size: bounds the allocation by the data. */
  if (nlevels > rill_reader_left(r) / 8)
    return rill_error(RILL_CORRUPT, "LoD level count %" PRIu64 " exceeds the %zu bytes left",
                      nlevels, rill_reader_left(r));
  if (!nlevels) return NULL;
  lod->levels = rill_calloc((size_t)nlevels, sizeof *lod->levels);
  if (!lod->levels) return rill_oom();
  lod->nlevels = (size_t)nlevels;
  for (size_t l = 0; l < lod->nlevels; l++) {
    uint64_t byte_size;
    RILL_TRY(read_u64(r, "LoD level size", &byte_size));
    if (byte_size % 8)
      return rill_error(RILL_CORRUPT, "LoD level %zu byte size %" PRIu64 " is not a multiple of 8",
                        l, byte_size);
    if (byte_size > rill_reader_left(r))
      return rill_error(RILL_CORRUPT, "truncated LoD level %zu: need %" PRIu64 " bytes, %zu left",
                        l, byte_size, rill_reader_left(r));
    size_t n = (size_t)(byte_size / 8);
    lod->levels[l].offsets = rill_malloc(n ? n * 8 : 1);
    if (!lod->levels[l].offsets) return rill_oom();
    lod->levels[l].n = n;
    RILL_TRY(take(r, lod->levels[l].offsets, n * 8)); /* little-endian host: as stored */
  }
  return NULL;
}

static rill_status *wrap_var(rill_status *st, const rill_reader *r, const char *var) {
  if (!st) return NULL;
  if (var) st = rill_status_wrap(st, "variable '%s'", var);
  if (r->file) st = rill_status_wrap(st, "%s", r->file);
  return st;
}

rill_status *rill_stream_read_lod_tensor(rill_reader *r, const char *var,
                                         const rill_tensor_expect *expect, rill_tensor *out) {
  rill_tensor t;
  rill_tensor_init(&t);
  uint32_t version;
  rill_status *st = read_u32(r, "LoD tensor header", &version);
  if (!st && version != 0)
    st = rill_error(RILL_CORRUPT, "unsupported LoD tensor version %" PRIu32 " (expected 0)",
                    version);
  if (!st) st = read_lod(r, &t.lod);
  if (!st) st = read_tensor(r, expect, &t);
  if (!st && t.lod.nlevels) {
    if (t.dims.n == 0)
      st = rill_error(RILL_CORRUPT, "a rank-0 tensor carries %zu LoD levels", t.lod.nlevels);
    else
      st = rill_status_wrap(rill_lod_check(&t.lod, t.dims.d[0]), "invalid LoD");
    if (st && st != rill_oom()) st->code = RILL_CORRUPT;
  }
  if (st) {
    rill_tensor_clear(&t);
    return wrap_var(st, r, var);
  }
  rill_tensor_clear(out);
  *out = t;
  return NULL;
}

rill_status *rill_stream_read_selected_rows(rill_reader *r, const char *var,
                                            const rill_tensor_expect *expect,
                                            rill_selected_rows *out) {
  rill_selected_rows sr;
  rill_selected_rows_init(&sr);
  uint32_t version;
  uint64_t nrows = 0, height = 0;
  rill_status *st = read_u32(r, "selected rows header", &version);
  if (!st && version != 0)
    st = rill_error(RILL_CORRUPT, "unsupported selected rows version %" PRIu32 " (expected 0)",
                    version);
  if (!st) st = read_u64(r, "selected rows count", &nrows);
  if (!st && nrows > rill_reader_left(r) / 8)
    st = rill_error(RILL_CORRUPT, "truncated row ids: need %" PRIu64 " rows of 8 bytes, %zu bytes left",
                    nrows, rill_reader_left(r));
  if (!st) {
    sr.rows = rill_malloc(nrows ? (size_t)nrows * 8 : 1);
    if (!sr.rows) st = rill_oom();
  }
  if (!st) {
    sr.nrows = (size_t)nrows;
    st = take(r, sr.rows, sr.nrows * 8); /* little-endian host: as stored */
  }
  if (!st) {
    st = read_u64(r, "selected rows height", &height);
  }
  if (!st) {
    sr.height = (int64_t)height;
    if (sr.height < 0)
      st = rill_error(RILL_CORRUPT, "negative selected rows height %" PRId64, sr.height);
    for (size_t i = 0; i < sr.nrows && !st; i++)
      if (sr.rows[i] < 0 || sr.rows[i] >= sr.height)
        st = rill_error(RILL_CORRUPT, "row id %" PRId64 " at position %zu is outside [0, %" PRId64 ")",
                        sr.rows[i], i, sr.height);
  }
  if (!st) st = read_tensor(r, expect, &sr.value);
  if (!st && (sr.value.dims.n < 1 || (uint64_t)sr.value.dims.d[0] != nrows))
    st = rill_error(RILL_CORRUPT, "selected rows value has %" PRId64 " rows but %" PRIu64 " row ids",
                    sr.value.dims.n ? sr.value.dims.d[0] : 0, nrows);
  if (st) {
    rill_selected_rows_clear(&sr);
    return wrap_var(st, r, var);
  }
  rill_selected_rows_clear(out);
  *out = sr;
  return NULL;
}

/* ---- writing ---- */

static rill_status *write_tensor_header(rill_bytes *out, const rill_tensor *t) {
  if (!rill_tensor_is_set(t)) return rill_error(RILL_FAILED_PRECONDITION, "tensor holds no data");
  if (!rill_dtype_size(t->dtype))
    return rill_error(RILL_INVALID_ARGUMENT, "cannot write a tensor of dtype %d", (int)t->dtype);
  tensor_desc_pb desc = PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TENSOR_DESC__INIT;
  desc.data_type = (Paddle__Framework__Proto__VarType__Type)t->dtype;
  desc.n_dims = (size_t)t->dims.n;
  desc.dims = (int64_t *)t->dims.d;
  size_t dsize = protobuf_c_message_get_packed_size(&desc.base);
  if (dsize > INT32_MAX) return rill_error(RILL_INTERNAL, "tensor description too large");
  RILL_TRY(append_u32(out, 0));
  RILL_TRY(append_u32(out, (uint32_t)dsize));
  RILL_TRY(bytes_reserve(out, dsize));
  size_t packed = protobuf_c_message_pack(&desc.base, out->data + out->size);
  if (packed != dsize) return rill_error(RILL_INTERNAL, "tensor description packed to %zu of %zu bytes", packed, dsize);
  out->size += dsize;
  return NULL;
}

static rill_status *write_lod_header(rill_bytes *out, const rill_tensor *t) {
  RILL_TRY(append_u32(out, 0));
  RILL_TRY(append_u64(out, (uint64_t)t->lod.nlevels));
  for (size_t l = 0; l < t->lod.nlevels; l++) {
    const rill_lod_level *lv = &t->lod.levels[l];
    RILL_TRY(append_u64(out, (uint64_t)lv->n * 8));
    for (size_t i = 0; i < lv->n; i++) RILL_TRY(append_u64(out, lv->offsets[i]));
  }
  return write_tensor_header(out, t);
}

rill_status *rill_stream_write_lod_tensor_header(rill_bytes *out, const rill_tensor *t) {
  size_t old = out->size;
  rill_status *st = write_lod_header(out, t);
  if (st) out->size = old;
  return st;
}

rill_status *rill_stream_write_lod_tensor(rill_bytes *out, const rill_tensor *t) {
  size_t old = out->size;
  rill_status *st = write_lod_header(out, t);
  if (!st) st = rill_bytes_append(out, rill_tensor_ptr(t), rill_tensor_nbytes(t));
  if (st) out->size = old;
  return st;
}

static rill_status *write_selected_rows(rill_bytes *out, const rill_selected_rows *sr) {
  RILL_TRY(append_u32(out, 0));
  RILL_TRY(append_u64(out, (uint64_t)sr->nrows));
  for (size_t i = 0; i < sr->nrows; i++) RILL_TRY(append_u64(out, (uint64_t)sr->rows[i]));
  RILL_TRY(append_u64(out, (uint64_t)sr->height));
  RILL_TRY(write_tensor_header(out, &sr->value));
  return rill_bytes_append(out, rill_tensor_ptr(&sr->value), rill_tensor_nbytes(&sr->value));
}

rill_status *rill_stream_write_selected_rows(rill_bytes *out, const rill_selected_rows *sr) {
  size_t old = out->size;
  rill_status *st = write_selected_rows(out, sr);
  if (st) out->size = old;
  return st;
}

/* ---- files ---- */

rill_status *rill_stream_load_file(const char *path, const char *var,
                                   const rill_tensor_expect *expect, rill_tensor *out) {
  rill_reader r;
  RILL_TRY(rill_status_wrap(rill_reader_open(&r, path), var ? "variable '%s'" : "%s",
                            var ? var : "tensor"));
  rill_tensor t;
  rill_tensor_init(&t);
  rill_status *st = rill_stream_read_lod_tensor(&r, var, expect, &t);
  if (!st && rill_reader_left(&r)) {
    st = rill_error(RILL_CORRUPT, "%zu unexpected bytes after the tensor", rill_reader_left(&r));
    st = wrap_var(st, &r, var);
  }
  rill_reader_close(&r);
  if (st) {
    rill_tensor_clear(&t);
    return st;
  }
  rill_tensor_clear(out);
  *out = t;
  return NULL;
}

rill_status *rill_stream_save_file(const char *path, const rill_tensor *t) {
  rill_bytes header;
  rill_bytes_init(&header);
  rill_status *st = rill_stream_write_lod_tensor_header(&header, t);
  if (!st) {
    rill_file_part parts[2] = {{header.data, header.size},
                               {rill_tensor_ptr(t), rill_tensor_nbytes(t)}};
    st = rill_file_write_parts(path, parts, 2);
  }
  rill_bytes_clear(&header);
  return st;
}

/* ---- public API (include/rill.h, "models") ---- */

rill_status *rill_tensor_load_file(const char *path, rill_tensor **out) {
  if (!path || !out) return rill_error(RILL_INVALID_ARGUMENT, "rill_tensor_load_file: NULL argument");
  rill_tensor *t = rill_malloc(sizeof *t);
  if (!t) return rill_oom();
  rill_tensor_init(t);
  rill_status *st = rill_stream_load_file(path, NULL, NULL, t);
  if (st) {
    rill_free(t);
    return st;
  }
  *out = t;
  return NULL;
}

rill_status *rill_tensor_save_file(const rill_tensor *tensor, const char *path) {
  if (!path || !tensor) return rill_error(RILL_INVALID_ARGUMENT, "rill_tensor_save_file: NULL argument");
  return rill_stream_save_file(path, tensor);
}
