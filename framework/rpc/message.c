#include "framework/rpc/message.h"

#include <stdalign.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/tsan.h"
#include "framework/registry/registry.h"
#include "proto/send_recv.pb-c.h"

/* Row indices travel as little-endian int64 (Paddle's layout); the targets rill builds
 * for are little-endian, so they are copied as they are. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "rpc rows assume little-endian");

void rill_rpc_payload_init(rill_rpc_payload *p) { memset(p, 0, sizeof *p); }

void rill_rpc_payload_hand_over(rill_rpc_payload *p) {
  if (p->keep) RILL_TSAN_RELEASE(p->keep);
}

void rill_rpc_payload_release_data(void *data, void *hint) {
  (void)data;
  rill_buffer *buf = hint;
  if (!buf) return;
  RILL_TSAN_ACQUIRE(buf);
  rill_buffer_unpin(buf);
  rill_buffer_release(buf);
}

void rill_rpc_payload_clear(rill_rpc_payload *p) {
  rill_free(p->header);
  rill_rpc_payload_release_data(p->data, p->keep);
  rill_rpc_payload_init(p);
}

void rill_rpc_meta_init(rill_rpc_meta *m) { memset(m, 0, sizeof *m); }

void rill_rpc_meta_clear(rill_rpc_meta *m) {
  rill_free(m->varname);
  rill_free(m->out_varname);
  rill_rpc_meta_init(m);
}

/* ---- encoding ---- */

typedef struct encoder {
  Sendrecv__VariableMessage msg;
  Sendrecv__VariableMessage__LodData lod_data[RILL_MAX_DIMS];
  Sendrecv__VariableMessage__LodData *lod_ptrs[RILL_MAX_DIMS];
  int64_t dims[RILL_MAX_DIMS];
  int64_t *lod_values; /* every level's offsets, back to back */
} encoder;

static rill_status *encode_tensor(encoder *e, const char *varname, const rill_tensor *t) {
  if (!rill_tensor_is_set(t))
    return rill_error(RILL_FAILED_PRECONDITION, "rpc: variable '%s' has no data to send",
                      varname);
  if (t->lod.nlevels > RILL_MAX_DIMS)
    return rill_error(RILL_INVALID_ARGUMENT, "rpc: variable '%s' has %zu LoD levels (at most %d)",
                      varname, t->lod.nlevels, RILL_MAX_DIMS);
  e->msg.has_data_type = 1;
  e->msg.data_type = (int32_t)t->dtype;
  for (int i = 0; i < t->dims.n; i++) e->dims[i] = t->dims.d[i];
  e->msg.n_dims = (size_t)t->dims.n;
  e->msg.dims = e->dims;
  e->msg.has_lod_level = 1;
  e->msg.lod_level = (int64_t)t->lod.nlevels;
  size_t total = 0;
  for (size_t l = 0; l < t->lod.nlevels; l++) total += t->lod.levels[l].n;
  if (total) {
    e->lod_values = rill_calloc(total, sizeof(int64_t));
    if (!e->lod_values) return rill_oom();
  }
  size_t at = 0;
  for (size_t l = 0; l < t->lod.nlevels; l++) {
    const rill_lod_level *lv = &t->lod.levels[l];
    sendrecv__variable_message__lod_data__init(&e->lod_data[l]);
    e->lod_data[l].n_lod_data = lv->n;
    e->lod_data[l].lod_data = e->lod_values + at;
    for (size_t i = 0; i < lv->n; i++) e->lod_values[at + i] = (int64_t)lv->offsets[i];
    at += lv->n;
    e->lod_ptrs[l] = &e->lod_data[l];
  }
  e->msg.n_lod = t->lod.nlevels;
  e->msg.lod = e->lod_ptrs;
  return NULL;
}

/* *value, when a run on a device left it there: a host copy in `staged`, which the
 * payload keeps (the message carries host bytes). */
static rill_status *host_value(const char *varname, const rill_tensor **value, rill_tensor *staged) {
  const rill_tensor *t = *value;
  if (!rill_tensor_is_set(t) || rill_tensor_place(t).device == RILL_HOST_DEVICE) return NULL;
  RILL_TRY(rill_status_wrap(rill_tensor_copy_at(staged, t, (rill_place){RILL_HOST_DEVICE, 0}),
                            "rpc: variable '%s' copied from the device", varname));
  *value = staged;
  return NULL;
}

rill_status *rill_rpc_encode(const char *varname, const rill_variable *var,
                             const char *out_varname, int64_t trainer_id,
                             rill_rpc_payload *out) {
  rill_rpc_payload_init(out);
  if (!varname || !varname[0])
    return rill_error(RILL_INVALID_ARGUMENT, "rpc: a message needs a variable name");
  if (strlen(varname) > RILL_RPC_MAX_NAME || (out_varname && strlen(out_varname) > RILL_RPC_MAX_NAME))
    return rill_error(RILL_INVALID_ARGUMENT, "rpc: variable name '%.64s...' is longer than %d bytes",
                      varname, RILL_RPC_MAX_NAME);
  encoder e;
  memset(&e, 0, sizeof e);
  sendrecv__variable_message__init(&e.msg);
  e.msg.varname = (char *)varname;
  e.msg.out_varname = out_varname && out_varname[0] ? (char *)out_varname : NULL;
  e.msg.has_trainer_id = 1;
  e.msg.trainer_id = trainer_id;
  const rill_tensor *value = NULL;
  rill_tensor staged;
  rill_tensor_init(&staged);
  rill_status *st = NULL;
  if (var) {
    switch (var->kind) {
      case RILL_VARKIND_TENSOR:
        e.msg.has_type = 1;
        e.msg.type = SENDRECV__VAR_TYPE__LOD_TENSOR;
        value = &var->u.tensor;
        st = host_value(varname, &value, &staged);
        if (!st) st = encode_tensor(&e, varname, value);
        break;
      case RILL_VARKIND_SELECTED_ROWS: {
        const rill_selected_rows *sr = &var->u.rows;
        e.msg.has_type = 1;
        e.msg.type = SENDRECV__VAR_TYPE__SELECTED_ROWS;
        e.msg.has_slr_height = 1;
        e.msg.slr_height = sr->height;
        e.msg.has_rows = 1;
        e.msg.rows.len = sr->nrows * sizeof(int64_t);
        e.msg.rows.data = (uint8_t *)sr->rows;
        value = &sr->value;
        st = host_value(varname, &value, &staged);
        if (!st) st = encode_tensor(&e, varname, value);
        if (!st && (value->dims.n < 1 || value->dims.d[0] != (int64_t)sr->nrows))
          st = rill_error(RILL_INVALID_ARGUMENT,
                          "rpc: selected rows '%s' have %zu rows but a value of %d dims "
                          "starting with %lld", varname, sr->nrows, value->dims.n,
                          value->dims.n ? (long long)value->dims.d[0] : 0LL);
        break;
      }
      default:
        st = rill_error(RILL_UNIMPLEMENTED, "rpc: variable '%s' is a %s; only LoD tensors and "
                        "selected rows can be sent", varname, rill_var_kind_name(var->kind));
    }
  }
  if (!st) {
    out->header_len = sendrecv__variable_message__get_packed_size(&e.msg);
    out->header = rill_malloc(out->header_len ? out->header_len : 1);
    if (!out->header)
      st = rill_oom();
    else
      sendrecv__variable_message__pack(&e.msg, out->header);
  }
  rill_free(e.lod_values);
  if (st) {
    rill_tensor_clear(&staged);
    rill_rpc_payload_clear(out);
    return st;
  }
  if (value) {
    out->data_len = rill_tensor_nbytes(value);
    if (out->data_len) {
      out->data = rill_tensor_ptr(value);
      out->keep = value->buf;
      rill_buffer_retain(out->keep);
      rill_buffer_pin(out->keep);
    }
  }
  rill_tensor_clear(&staged);
  return NULL;
}

/* ---- decoding ---- */

static Sendrecv__VariableMessage *unpack(const void *header, size_t len, const char *peer,
                                         rill_status **st) {
  Sendrecv__VariableMessage *m = sendrecv__variable_message__unpack(NULL, len, header);
  if (!m) {
    *st = rill_error(RILL_CORRUPT, "rpc message from %s: the header (%zu bytes) is not a "
                     "VariableMessage", peer, len);
    return NULL;
  }
  if (!m->varname || !m->varname[0]) {
    *st = rill_error(RILL_INVALID_ARGUMENT, "rpc message from %s: the header names no variable",
                     peer);
  } else if (strlen(m->varname) > RILL_RPC_MAX_NAME ||
             (m->out_varname && strlen(m->out_varname) > RILL_RPC_MAX_NAME)) {
    *st = rill_error(RILL_INVALID_ARGUMENT, "rpc message from %s: variable name '%.64s...' is "
                     "longer than %d bytes", peer, m->varname, RILL_RPC_MAX_NAME);
  } else {
    return m;
  }
  sendrecv__variable_message__free_unpacked(m, NULL);
  return NULL;
}

static rill_status *fill_meta(const Sendrecv__VariableMessage *m, rill_rpc_meta *meta) {
  rill_rpc_meta_init(meta);
  meta->varname = rill_strdup(m->varname);
  meta->out_varname = rill_strdup(m->out_varname ? m->out_varname : "");
  meta->trainer_id = m->has_trainer_id ? m->trainer_id : 0;
  meta->type = m->has_type ? (int)m->type : RILL_RPC_LOD_TENSOR;
  if (!meta->varname || !meta->out_varname) {
    rill_rpc_meta_clear(meta);
    return rill_oom();
  }
  return NULL;
}

rill_status *rill_rpc_decode_meta(const void *header, size_t header_len, const char *peer,
                                  rill_rpc_meta *meta) {
  rill_status *st = NULL;
  Sendrecv__VariableMessage *m = unpack(header, header_len, peer, &st);
  if (!m) return st;
  st = fill_meta(m, meta);
  sendrecv__variable_message__free_unpacked(m, NULL);
  return st;
}

#define BAD(code, ...) rill_status_wrap(rill_error(code, __VA_ARGS__), \
                                        "rpc message for variable '%s' from %s", m->varname, peer)

/* The dense part: dtype, dims, LoD and the data frame, into t. */
static rill_status *decode_value(const Sendrecv__VariableMessage *m, const void *data,
                                 size_t data_len, rill_buffer *owner, const char *peer,
                                 rill_tensor *t) {
  int32_t dt = m->has_data_type ? m->data_type : 0;
  size_t esize = dt >= 0 && dt < RILL_DTYPE_COUNT ? rill_dtype_size((rill_dtype)dt) : 0;
  if (!esize) return BAD(RILL_INVALID_ARGUMENT, "unknown data_type %d", (int)dt);
  if (m->n_dims > RILL_MAX_DIMS)
    return BAD(RILL_INVALID_ARGUMENT, "%zu dims (at most %d)", m->n_dims, RILL_MAX_DIMS);
  rill_dims dims;
  rill_dims_set(&dims, m->dims, m->n_dims);
  int64_t numel;
  size_t nbytes;
  char dbuf[RILL_DIMS_STR_MAX];
  if (!rill_dims_numel(&dims, INT64_MAX, &numel) ||
      !rill_mul_size((size_t)numel, esize, &nbytes))
    return BAD(RILL_INVALID_ARGUMENT, "dims %s are negative or too large",
               rill_dims_str(&dims, dbuf, sizeof dbuf));
  if (nbytes != data_len)
    return BAD(RILL_INVALID_ARGUMENT, "dims %s of %s need %zu bytes but the data frame has %zu",
               rill_dims_str(&dims, dbuf, sizeof dbuf), rill_dtype_name((rill_dtype)dt), nbytes,
               data_len);
  if (m->has_serialized && m->serialized.len)
    return BAD(RILL_UNIMPLEMENTED, "tensor bytes inside the header (field 'serialized') are not "
               "read; they travel as a separate frame");
  int64_t lod_level = m->has_lod_level ? m->lod_level : (int64_t)m->n_lod;
  if (lod_level != (int64_t)m->n_lod)
    return BAD(RILL_INVALID_ARGUMENT, "lod_level %lld but %zu LoD levels", (long long)lod_level,
               m->n_lod);
  if (m->n_lod > RILL_MAX_DIMS)
    return BAD(RILL_INVALID_ARGUMENT, "%zu LoD levels (at most %d)", m->n_lod, RILL_MAX_DIMS);
  if (m->n_lod && dims.n < 1)
    return BAD(RILL_INVALID_ARGUMENT, "a LoD on a tensor of rank 0");

  rill_tensor_init(t);
  t->dtype = (rill_dtype)dt;
  t->dims = dims;
  if (m->n_lod) {
    t->lod.levels = rill_calloc(m->n_lod, sizeof *t->lod.levels);
    if (!t->lod.levels) return rill_oom();
    t->lod.nlevels = m->n_lod;
    for (size_t l = 0; l < m->n_lod; l++) {
      const Sendrecv__VariableMessage__LodData *ld = m->lod[l];
      rill_lod_level *lv = &t->lod.levels[l];
      lv->n = ld->n_lod_data;
      if (lv->n) {
        lv->offsets = rill_calloc(lv->n, sizeof *lv->offsets);
        if (!lv->offsets) return rill_oom();
      }
      for (size_t i = 0; i < lv->n; i++) {
        if (ld->lod_data[i] < 0)
          return BAD(RILL_INVALID_ARGUMENT, "LoD level %zu has a negative offset", l);
        lv->offsets[i] = (uint64_t)ld->lod_data[i];
      }
    }
    rill_status *st = rill_lod_check(&t->lod, dims.d[0]);
    if (st) return rill_status_wrap(st, "rpc message for variable '%s' from %s", m->varname, peer);
  }
  if (owner && data && ((uintptr_t)data % (esize < alignof(max_align_t) ? esize : 8)) == 0 &&
      (const char *)data >= (const char *)owner->data &&
      (const char *)data + data_len <= (const char *)owner->data + owner->size) {
    rill_buffer_retain(owner);
    t->buf = owner;
    t->offset = (size_t)((const char *)data - (const char *)owner->data);
    return NULL;
  }
  t->buf = rill_buffer_alloc(nbytes ? nbytes : 1, (rill_place){RILL_DEVICE_CPU, 0});
  if (!t->buf) return rill_oom();
  if (nbytes) memcpy(t->buf->data, data, nbytes);
  return NULL;
}

rill_status *rill_rpc_decode(const void *header, size_t header_len, const void *data,
                             size_t data_len, rill_buffer *owner, const char *peer,
                             rill_rpc_meta *meta, rill_variable *out) {
  rill_variable_clear(out);
  if (meta) rill_rpc_meta_init(meta);
  rill_status *st = NULL;
  Sendrecv__VariableMessage *m = unpack(header, header_len, peer, &st);
  if (!m) return st;
  int type = m->has_type ? (int)m->type : RILL_RPC_LOD_TENSOR;
  if (type == RILL_RPC_LOD_TENSOR) {
    out->kind = RILL_VARKIND_TENSOR;
    st = decode_value(m, data, data_len, owner, peer, &out->u.tensor);
  } else if (type == RILL_RPC_SELECTED_ROWS) {
    out->kind = RILL_VARKIND_SELECTED_ROWS;
    rill_selected_rows *sr = &out->u.rows;
    rill_selected_rows_init(sr);
    size_t rows_len = m->has_rows ? m->rows.len : 0;
    int64_t height = m->has_slr_height ? m->slr_height : 0;
    if (rows_len % sizeof(int64_t))
      st = BAD(RILL_INVALID_ARGUMENT, "rows field of %zu bytes is not a whole number of int64",
               rows_len);
    else if (height < 0)
      st = BAD(RILL_INVALID_ARGUMENT, "negative height %lld", (long long)height);
    else if (m->n_lod)
      st = BAD(RILL_INVALID_ARGUMENT, "selected rows with a LoD");
    else
      st = decode_value(m, data, data_len, owner, peer, &sr->value);
    size_t nrows = rows_len / sizeof(int64_t);
    if (!st && (sr->value.dims.n < 1 || sr->value.dims.d[0] != (int64_t)nrows))
      st = BAD(RILL_INVALID_ARGUMENT, "%zu rows but a value of dims starting with %lld", nrows,
               sr->value.dims.n ? (long long)sr->value.dims.d[0] : -1LL);
    if (!st && nrows) {
      sr->rows = rill_malloc(rows_len);
      if (!sr->rows) st = rill_oom();
    }
    if (!st) {
      if (nrows) memcpy(sr->rows, m->rows.data, rows_len);
      sr->nrows = nrows;
      sr->height = height;
      for (size_t i = 0; i < nrows && !st; i++)
        if (sr->rows[i] < 0 || sr->rows[i] >= height)
          st = BAD(RILL_INVALID_ARGUMENT, "row %zu is %lld, outside [0, %lld)", i,
                   (long long)sr->rows[i], (long long)height);
    }
  } else if (type == RILL_RPC_NCCL_ID) {
    st = BAD(RILL_UNIMPLEMENTED, "NCCL_ID variables are not supported");
  } else {
    st = BAD(RILL_INVALID_ARGUMENT, "unknown variable type %d", type);
  }
  if (!st && meta) st = fill_meta(m, meta);
  sendrecv__variable_message__free_unpacked(m, NULL);
  if (st) rill_variable_clear(out);
  return st;
}
