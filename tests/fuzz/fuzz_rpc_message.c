/* libFuzzer target: the rpc message decoder over arbitrary bytes. Input: one byte of
 * flags (bit 0: let the tensor share the data frame), a little-endian uint16 header
 * length, the header, then the data frame. Whatever decodes must encode again and
 * decode to the same variable. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "framework/rpc/message.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const rill_tensor *value_of(const rill_variable *v) {
  return v->kind == RILL_VARKIND_TENSOR ? &v->u.tensor : &v->u.rows.value;
}

static void check_round_trip(const rill_rpc_meta *meta, const rill_variable *v) {
  rill_rpc_payload p;
  if (rill_rpc_encode(meta->varname, v, meta->out_varname, meta->trainer_id, &p)) abort();
  rill_variable back;
  rill_variable_init(&back);
  rill_rpc_meta m2;
  if (rill_rpc_decode(p.header, p.header_len, p.data, p.data_len, NULL, "again", &m2, &back))
    abort();
  const rill_tensor *a = value_of(v), *b = value_of(&back);
  if (back.kind != v->kind || a->dtype != b->dtype || !rill_dims_equal(&a->dims, &b->dims) ||
      a->lod.nlevels != b->lod.nlevels || strcmp(m2.varname, meta->varname) != 0 ||
      (rill_tensor_nbytes(a) &&
       memcmp(rill_tensor_ptr(a), rill_tensor_ptr(b), rill_tensor_nbytes(a)) != 0))
    abort();
  if (v->kind == RILL_VARKIND_SELECTED_ROWS &&
      (back.u.rows.nrows != v->u.rows.nrows || back.u.rows.height != v->u.rows.height))
    abort();
  rill_rpc_meta_clear(&m2);
  rill_variable_clear(&back);
  rill_rpc_payload_clear(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  bool share = data[0] & 1;
  size_t hlen = (size_t)data[1] | (size_t)data[2] << 8;
  if (hlen > size - 3) hlen = size - 3;
  const uint8_t *header = data + 3, *frame = header + hlen;
  size_t flen = size - 3 - hlen;
  rill_buffer *owner = NULL;
  void *copy = NULL;
  if (share) {
    /* The frame as the transport hands it over: a buffer of its own. */
    copy = malloc(flen ? flen : 1);
    if (flen) memcpy(copy, frame, flen);
    owner = rill_buffer_wrap(copy, flen, (rill_place){RILL_DEVICE_CPU, 0}, NULL, NULL);
    if (!owner) abort();
    frame = copy;
  }
  rill_variable v;
  rill_variable_init(&v);
  rill_rpc_meta meta;
  rill_status *st = rill_rpc_decode(header, hlen, frame, flen, owner, "fuzz", &meta, &v);
  if (st) {
    if (!rill_status_message(st)[0] || v.kind != RILL_VARKIND_EMPTY) abort();
    rill_status_destroy(st);
  } else {
    if (rill_tensor_nbytes(value_of(&v)) != flen) abort();
    check_round_trip(&meta, &v);
    rill_rpc_meta_clear(&meta);
  }
  rill_variable_clear(&v);
  rill_buffer_release(owner);
  free(copy);
  return 0;
}
