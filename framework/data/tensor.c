#include "framework/data/tensor.h"

#include <string.h>

#include "framework/base/alloc.h"

static atomic_int_least64_t bytes_live, bytes_peak;

/* The value of rill_buffer.derived while a thread builds the derived data. */
static rill_buffer_derived derived_busy;

static void count_alloc(size_t size) {
  int64_t now = atomic_fetch_add_explicit(&bytes_live, (int64_t)size, memory_order_relaxed) +
                (int64_t)size;
  int64_t peak = atomic_load_explicit(&bytes_peak, memory_order_relaxed);
  while (now > peak && !atomic_compare_exchange_weak_explicit(&bytes_peak, &peak, now,
                                                              memory_order_relaxed,
                                                              memory_order_relaxed)) {
  }
}

int64_t rill_buffer_bytes_live(void) { return atomic_load_explicit(&bytes_live, memory_order_relaxed); }
int64_t rill_buffer_bytes_peak(void) { return atomic_load_explicit(&bytes_peak, memory_order_relaxed); }
void rill_buffer_bytes_reset_peak(void) {
  atomic_store_explicit(&bytes_peak, rill_buffer_bytes_live(), memory_order_relaxed);
}

rill_buffer *rill_buffer_alloc(size_t size, rill_place place) {
  return rill_buffer_alloc_on(size, place, NULL);
}

rill_buffer *rill_buffer_alloc_on(size_t size, rill_place place, const rill_device_memory *mem) {
  rill_buffer *b = rill_malloc(sizeof *b);
  if (!b) return NULL;
  b->data = mem ? mem->alloc(mem, place, size ? size : 1) : rill_aligned_alloc(size, RILL_TENSOR_ALIGN);
  if (!b->data) {
    rill_free(b);
    return NULL;
  }
  atomic_init(&b->refs, 1);
  atomic_init(&b->pins, 0);
  b->immutable = false;
  atomic_init(&b->derived, NULL);
  atomic_init(&b->mirrors, NULL);
  b->mirror_next = NULL;
  b->size = size;
  b->place = place;
  b->deleter = NULL;
  b->deleter_ctx = NULL;
  b->owned = true;
  b->mem = mem;
  count_alloc(size);
  return b;
}

rill_buffer *rill_buffer_wrap(void *data, size_t size, rill_place place,
                              void (*deleter)(void *, void *), void *ctx) {
  rill_buffer *b = rill_malloc(sizeof *b);
  if (!b) return NULL;
  atomic_init(&b->refs, 1);
  atomic_init(&b->pins, 0);
  b->immutable = false;
  atomic_init(&b->derived, NULL);
  atomic_init(&b->mirrors, NULL);
  b->mirror_next = NULL;
  b->data = data;
  b->size = size;
  b->place = place;
  b->deleter = deleter;
  b->deleter_ctx = ctx;
  b->owned = false;
  b->mem = NULL;
  return b;
}

void rill_buffer_retain(rill_buffer *buf) {
  atomic_fetch_add_explicit(&buf->refs, 1, memory_order_relaxed);
}

void rill_buffer_release(rill_buffer *buf) {
  if (!buf) return;
  if (atomic_fetch_sub_explicit(&buf->refs, 1, memory_order_acq_rel) != 1) return;
  rill_buffer_derived *d = atomic_load_explicit(&buf->derived, memory_order_acquire);
  if (d && d != &derived_busy) d->destroy(d);
  for (rill_buffer *m = atomic_load_explicit(&buf->mirrors, memory_order_acquire), *next; m; m = next) {
    next = m->mirror_next;
    rill_buffer_release(m);
  }
  if (buf->deleter)
    buf->deleter(buf->data, buf->deleter_ctx);
  else if (buf->owned && buf->mem)
    buf->mem->free(buf->mem, buf->place, buf->data);
  else if (buf->owned)
    rill_free(buf->data);
  if (buf->owned && !buf->deleter)
    atomic_fetch_sub_explicit(&bytes_live, (int64_t)buf->size, memory_order_relaxed);
  rill_free(buf);
}

void rill_buffer_pin(rill_buffer *buf) { atomic_fetch_add_explicit(&buf->pins, 1, memory_order_relaxed); }

void rill_buffer_unpin(rill_buffer *buf) { atomic_fetch_sub_explicit(&buf->pins, 1, memory_order_release); }

bool rill_buffer_pinned(const rill_buffer *buf) {
  return buf && (buf->immutable || atomic_load_explicit(&buf->pins, memory_order_acquire) > 0);
}

void rill_buffer_set_immutable(rill_buffer *buf) {
  if (buf) buf->immutable = true;
}

rill_buffer_derived *rill_buffer_derived_get(rill_buffer *buf) {
  if (!buf) return NULL;
  rill_buffer_derived *d = atomic_load_explicit(&buf->derived, memory_order_acquire);
  return d == &derived_busy ? NULL : d;
}

bool rill_buffer_derived_claim(rill_buffer *buf) {
  if (!buf || !buf->immutable) return false;
  rill_buffer_derived *none = NULL;
  return atomic_compare_exchange_strong_explicit(&buf->derived, &none, &derived_busy,
                                                 memory_order_acquire, memory_order_relaxed);
}

void rill_buffer_derived_publish(rill_buffer *buf, rill_buffer_derived *d) {
  atomic_store_explicit(&buf->derived, d, memory_order_release);
}

static bool same_place(rill_place a, rill_place b) { return a.device == b.device && a.id == b.id; }

rill_buffer *rill_buffer_mirror_find(rill_buffer *buf, rill_place place) {
  if (!buf) return NULL;
  for (rill_buffer *m = atomic_load_explicit(&buf->mirrors, memory_order_acquire); m; m = m->mirror_next)
    if (same_place(m->place, place)) return m;
  return NULL;
}

rill_buffer *rill_buffer_mirror_add(rill_buffer *buf, rill_buffer *copy) {
  if (!buf->immutable || same_place(buf->place, copy->place)) return copy;
  copy->immutable = true;
  rill_buffer *head = atomic_load_explicit(&buf->mirrors, memory_order_acquire);
  for (;;) {
    for (rill_buffer *m = head; m; m = m->mirror_next)
      if (same_place(m->place, copy->place)) {
        rill_buffer_release(copy);
        return m;
      }
    copy->mirror_next = head;
    if (atomic_compare_exchange_weak_explicit(&buf->mirrors, &head, copy, memory_order_acq_rel,
                                              memory_order_acquire))
      return copy;
  }
}

void rill_lod_clear(rill_lod *lod) {
  for (size_t i = 0; i < lod->nlevels; i++) rill_free(lod->levels[i].offsets);
  rill_free(lod->levels);
  lod->levels = NULL;
  lod->nlevels = 0;
}

rill_status *rill_lod_copy(rill_lod *dst, const rill_lod *src) {
  if (dst == src) return NULL;
  rill_lod tmp = {0, NULL};
  if (src->nlevels) {
    tmp.levels = rill_calloc(src->nlevels, sizeof *tmp.levels);
    if (!tmp.levels) return rill_oom();
    tmp.nlevels = src->nlevels;
    for (size_t i = 0; i < src->nlevels; i++) {
      size_t n = src->levels[i].n;
      tmp.levels[i].offsets = rill_calloc(n ? n : 1, sizeof(uint64_t));
      if (!tmp.levels[i].offsets) {
        rill_lod_clear(&tmp);
        return rill_oom();
      }
      if (n) memcpy(tmp.levels[i].offsets, src->levels[i].offsets, n * sizeof(uint64_t));
      tmp.levels[i].n = n;
    }
  }
  rill_lod_clear(dst);
  *dst = tmp;
  return NULL;
}

rill_status *rill_lod_check(const rill_lod *lod, int64_t rows) {
  for (size_t l = 0; l < lod->nlevels; l++) {
    const rill_lod_level *lv = &lod->levels[l];
    if (lv->n < 1 || lv->offsets[0] != 0)
      return rill_error(RILL_INVALID_ARGUMENT, "LoD level %zu must start with offset 0", l);
    for (size_t i = 1; i < lv->n; i++)
      if (lv->offsets[i] < lv->offsets[i - 1])
        return rill_error(RILL_INVALID_ARGUMENT,
                          "LoD level %zu decreases at position %zu (%llu after %llu)", l, i,
                          (unsigned long long)lv->offsets[i],
                          (unsigned long long)lv->offsets[i - 1]);
    uint64_t last = lv->offsets[lv->n - 1];
    uint64_t want = l + 1 < lod->nlevels ? (uint64_t)(lod->levels[l + 1].n - 1) : (uint64_t)rows;
    if (last != want)
      return rill_error(RILL_INVALID_ARGUMENT,
                        "LoD level %zu ends at %llu but %s has %llu", l,
                        (unsigned long long)last,
                        l + 1 < lod->nlevels ? "the next level" : "the tensor",
                        (unsigned long long)want);
  }
  return NULL;
}

void rill_tensor_init(rill_tensor *t) {
  memset(t, 0, sizeof *t);
  t->dtype = RILL_DTYPE_FP32;
}

void rill_tensor_clear(rill_tensor *t) {
  rill_buffer_release(t->buf);
  rill_lod_clear(&t->lod);
  rill_tensor_init(t);
}

bool rill_tensor_is_set(const rill_tensor *t) { return t->buf != NULL; }

int64_t rill_tensor_numel(const rill_tensor *t) {
  int64_t n;
  if (!t->buf) return 0;
  return rill_dims_numel(&t->dims, INT64_MAX, &n) ? n : 0;
}

size_t rill_tensor_nbytes(const rill_tensor *t) {
  return (size_t)rill_tensor_numel(t) * rill_dtype_size(t->dtype);
}

rill_status *rill_tensor_alloc(rill_tensor *t, rill_dtype dtype, const rill_dims *dims) {
  return rill_tensor_alloc_on(t, dtype, dims, (rill_place){RILL_DEVICE_CPU, 0}, NULL);
}

rill_status *rill_tensor_alloc_on(rill_tensor *t, rill_dtype dtype, const rill_dims *dims,
                                  rill_place place, const rill_device_memory *mem) {
  size_t esize = rill_dtype_size(dtype);
  if (!esize) return rill_error(RILL_INVALID_ARGUMENT, "cannot allocate a tensor of dtype %d", dtype);
  int64_t numel;
  size_t bytes;
  if (!rill_dims_numel(dims, INT64_MAX, &numel) || !rill_mul_size((size_t)numel, esize, &bytes)) {
    char b[RILL_DIMS_STR_MAX];
    return rill_error(RILL_INVALID_ARGUMENT, "cannot allocate a tensor of shape %s",
                      rill_dims_str(dims, b, sizeof b));
  }
  rill_buffer *buf = t->buf;
  bool reuse = buf && atomic_load_explicit(&buf->refs, memory_order_acquire) == 1 &&
               buf->owned && !buf->immutable && buf->mem == mem && buf->place.device == place.device &&
               buf->place.id == place.id && t->offset == 0 && buf->size >= bytes &&
               buf->size <= 2 * bytes + 4096;
  if (!reuse) {
    rill_buffer *nb = rill_buffer_alloc_on(bytes, place, mem);
    if (!nb) return rill_error(RILL_OUT_OF_MEMORY, "out of memory allocating %zu bytes", bytes);
    rill_buffer_release(t->buf);
    t->buf = nb;
    t->offset = 0;
  }
  t->dtype = dtype;
  t->dims = *dims;
  return NULL;
}

rill_status *rill_tensor_unshare_pinned(rill_tensor *t) {
  if (!rill_buffer_pinned(t->buf)) return NULL;
  rill_tensor tmp;
  rill_tensor_init(&tmp);
  RILL_TRY(rill_tensor_copy(&tmp, t));
  rill_tensor_swap(&tmp, t);
  rill_tensor_clear(&tmp);
  return NULL;
}

rill_status *rill_tensor_share(rill_tensor *dst, const rill_tensor *src) {
  if (dst == src) return NULL;
  RILL_TRY(rill_lod_copy(&dst->lod, &src->lod));
  if (src->buf) rill_buffer_retain(src->buf);
  rill_buffer_release(dst->buf);
  dst->buf = src->buf;
  dst->offset = src->offset;
  dst->dtype = src->dtype;
  dst->dims = src->dims;
  return NULL;
}

rill_status *rill_tensor_copy(rill_tensor *dst, const rill_tensor *src) {
  if (dst == src) return NULL;
  if (!src->buf) {
    rill_tensor_clear(dst);
    return NULL;
  }
  rill_lod lod = {0, NULL};
  RILL_TRY(rill_lod_copy(&lod, &src->lod));
  rill_status *st = rill_tensor_alloc(dst, src->dtype, &src->dims);
  if (st) {
    rill_lod_clear(&lod);
    return st;
  }
  size_t n = rill_tensor_nbytes(src);
  if (n) memmove(rill_tensor_ptr(dst), rill_tensor_ptr(src), n);
  rill_lod_clear(&dst->lod);
  dst->lod = lod;
  return NULL;
}

void rill_tensor_swap(rill_tensor *a, rill_tensor *b) {
  rill_tensor t = *a;
  *a = *b;
  *b = t;
}

void rill_selected_rows_init(rill_selected_rows *sr) {
  memset(sr, 0, sizeof *sr);
  rill_tensor_init(&sr->value);
}

void rill_selected_rows_clear(rill_selected_rows *sr) {
  rill_free(sr->rows);
  rill_tensor_clear(&sr->value);
  rill_selected_rows_init(sr);
}

rill_status *rill_selected_rows_set_rows(rill_selected_rows *sr, const int64_t *rows, size_t n) {
  int64_t *r = rill_calloc(n ? n : 1, sizeof *r);
  if (!r) return rill_oom();
  if (n) memcpy(r, rows, n * sizeof *r);
  rill_free(sr->rows);
  sr->rows = r;
  sr->nrows = n;
  return NULL;
}
