#include <criterion/criterion.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/sha256.h"
#include "framework/rpc/message.h"
#include "framework/rpc/rpc.h"
#include "proto/send_recv.pb-c.h"

static void make_tensor(rill_variable *v, rill_dtype dt, const int64_t *d, int n) {
  rill_variable_init(v);
  rill_tensor *t = rill_variable_tensor(v);
  rill_dims dims;
  rill_dims_set(&dims, d, (size_t)n);
  cr_assert_null(rill_tensor_alloc(t, dt, &dims));
  uint8_t *p = rill_tensor_ptr(t);
  for (size_t i = 0; i < rill_tensor_nbytes(t); i++) p[i] = (uint8_t)(i * 7 + 3);
}

static void round_trip(const rill_variable *in, rill_variable *out, bool share) {
  rill_rpc_payload p;
  cr_assert_null(rill_rpc_encode("w", in, "w.out", 3, &p));
  rill_buffer *owner = NULL;
  if (share && p.data_len) {
    owner = rill_buffer_alloc(p.data_len, (rill_place){RILL_DEVICE_CPU, 0});
    memcpy(owner->data, p.data, p.data_len);
  }
  rill_rpc_meta meta;
  rill_variable_init(out);
  rill_status *st = rill_rpc_decode(p.header, p.header_len, owner ? owner->data : p.data,
                                    p.data_len, owner, "test-peer", &meta, out);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_str_eq(meta.varname, "w");
  cr_assert_str_eq(meta.out_varname, "w.out");
  cr_assert_eq(meta.trainer_id, 3);
  if (owner) {
    const rill_tensor *t = out->kind == RILL_VARKIND_TENSOR ? &out->u.tensor : &out->u.rows.value;
    cr_assert_eq(t->buf, owner, "the decoded tensor shares the received frame");
  }
  rill_buffer_release(owner);
  rill_rpc_meta_clear(&meta);
  rill_rpc_payload_clear(&p);
}

static void assert_tensor_eq(const rill_tensor *a, const rill_tensor *b) {
  cr_assert_eq(a->dtype, b->dtype);
  cr_assert(rill_dims_equal(&a->dims, &b->dims));
  cr_assert_eq(rill_tensor_nbytes(a), rill_tensor_nbytes(b));
  if (rill_tensor_nbytes(a))
    cr_assert_eq(memcmp(rill_tensor_ptr(a), rill_tensor_ptr(b), rill_tensor_nbytes(a)), 0);
  cr_assert_eq(a->lod.nlevels, b->lod.nlevels);
  for (size_t l = 0; l < a->lod.nlevels; l++) {
    cr_assert_eq(a->lod.levels[l].n, b->lod.levels[l].n);
    cr_assert_eq(memcmp(a->lod.levels[l].offsets, b->lod.levels[l].offsets,
                        a->lod.levels[l].n * sizeof(uint64_t)), 0);
  }
}

Test(rpc_message, dense_every_dtype_round_trips) {
  int seen = 0;
  for (int dt = 0; dt < RILL_DTYPE_COUNT; dt++) {
    if (!rill_dtype_size((rill_dtype)dt)) continue;
    for (int share = 0; share < 2; share++) {
      rill_variable in, out;
      make_tensor(&in, (rill_dtype)dt, (int64_t[]){3, 5}, 2);
      round_trip(&in, &out, share);
      cr_assert_eq(out.kind, RILL_VARKIND_TENSOR);
      assert_tensor_eq(&in.u.tensor, &out.u.tensor);
      rill_variable_clear(&in);
      rill_variable_clear(&out);
    }
    seen++;
  }
  cr_assert_geq(seen, 12);
}

Test(rpc_message, lod_tensor_round_trips) {
  rill_variable in, out;
  make_tensor(&in, RILL_DTYPE_INT64, (int64_t[]){6, 2}, 2);
  rill_tensor *t = &in.u.tensor;
  t->lod.nlevels = 2;
  t->lod.levels = rill_calloc(2, sizeof *t->lod.levels);
  uint64_t l0[] = {0, 1, 3}, l1[] = {0, 2, 4, 6};
  t->lod.levels[0].n = 3;
  t->lod.levels[0].offsets = rill_malloc(sizeof l0);
  memcpy(t->lod.levels[0].offsets, l0, sizeof l0);
  t->lod.levels[1].n = 4;
  t->lod.levels[1].offsets = rill_malloc(sizeof l1);
  memcpy(t->lod.levels[1].offsets, l1, sizeof l1);
  round_trip(&in, &out, true);
  assert_tensor_eq(&in.u.tensor, &out.u.tensor);
  rill_variable_clear(&in);
  rill_variable_clear(&out);
}

Test(rpc_message, selected_rows_round_trip) {
  rill_variable in, out;
  rill_variable_init(&in);
  rill_selected_rows *sr = rill_variable_selected_rows(&in);
  int64_t rows[] = {7, 2, 9};
  cr_assert_null(rill_selected_rows_set_rows(sr, rows, 3));
  sr->height = 10;
  rill_dims d = {2, {3, 4}};
  cr_assert_null(rill_tensor_alloc(&sr->value, RILL_DTYPE_FP32, &d));
  float *v = rill_tensor_ptr(&sr->value);
  for (int i = 0; i < 12; i++) v[i] = (float)i * 0.5f;
  round_trip(&in, &out, false);
  cr_assert_eq(out.kind, RILL_VARKIND_SELECTED_ROWS);
  cr_assert_eq(out.u.rows.nrows, 3);
  cr_assert_eq(out.u.rows.height, 10);
  cr_assert_eq(memcmp(out.u.rows.rows, rows, sizeof rows), 0);
  assert_tensor_eq(&in.u.rows.value, &out.u.rows.value);
  rill_variable_clear(&in);
  rill_variable_clear(&out);
}

Test(rpc_message, empty_tensor_round_trips) {
  rill_variable in, out;
  make_tensor(&in, RILL_DTYPE_FP32, (int64_t[]){0, 3}, 2);
  round_trip(&in, &out, false);
  cr_assert_eq(rill_tensor_numel(&out.u.tensor), 0);
  assert_tensor_eq(&in.u.tensor, &out.u.tensor);
  rill_variable_clear(&in);
  rill_variable_clear(&out);
}

Test(rpc_message, encode_shares_and_pins_the_buffer) {
  rill_variable in;
  make_tensor(&in, RILL_DTYPE_FP32, (int64_t[]){4}, 1);
  rill_rpc_payload p;
  cr_assert_null(rill_rpc_encode("w", &in, NULL, 0, &p));
  cr_assert_eq(p.data, rill_tensor_ptr(&in.u.tensor), "no copy of the bytes");
  cr_assert_eq(atomic_load(&in.u.tensor.buf->refs), 2);
  cr_assert(rill_buffer_pinned(in.u.tensor.buf));
  rill_rpc_payload_clear(&p);
  cr_assert_eq(atomic_load(&in.u.tensor.buf->refs), 1);
  cr_assert_not(rill_buffer_pinned(in.u.tensor.buf));
  rill_variable_clear(&in);
}

Test(rpc_message, encode_refuses_unset_and_arrays) {
  rill_variable v;
  rill_variable_init(&v);
  rill_variable_tensor(&v);
  rill_rpc_payload p;
  rill_status *st = rill_rpc_encode("x", &v, NULL, 0, &p);
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION);
  cr_assert(strstr(rill_status_message(st), "'x'"));
  rill_status_destroy(st);
  rill_variable_clear(&v);
  rill_variable_array(&v);
  st = rill_rpc_encode("arr", &v, NULL, 0, &p);
  cr_assert_eq(rill_status_code(st), RILL_UNIMPLEMENTED);
  rill_status_destroy(st);
  rill_variable_clear(&v);
}

/* ---- malformed headers: every one is refused with the variable and the peer named ---- */

typedef struct bad {
  Sendrecv__VariableMessage m;
  Sendrecv__VariableMessage__LodData ld;
  Sendrecv__VariableMessage__LodData *ldp;
  int64_t dims[12];
  int64_t lod[4];
  int64_t rows[4];
} bad;

static void bad_init(bad *b) {
  memset(b, 0, sizeof *b);
  sendrecv__variable_message__init(&b->m);
  b->m.varname = "victim";
  b->m.has_data_type = 1;
  b->m.data_type = RILL_DTYPE_FP32;
  b->dims[0] = 2;
  b->dims[1] = 3;
  b->m.n_dims = 2;
  b->m.dims = b->dims;
}

static void expect_refused(bad *b, size_t data_len, rill_code code, const char *words) {
  size_t len = sendrecv__variable_message__get_packed_size(&b->m);
  uint8_t *hdr = malloc(len + 1);
  sendrecv__variable_message__pack(&b->m, hdr);
  uint8_t *data = calloc(1, data_len + 1);
  rill_variable out;
  rill_variable_init(&out);
  rill_status *st = rill_rpc_decode(hdr, len, data, data_len, NULL, "10.0.0.9:5555", NULL, &out);
  cr_assert_not_null(st, "accepted a header that should fail with: %s", words);
  const char *msg = rill_status_message(st);
  cr_assert_eq(rill_status_code(st), code, "%s", msg);
  cr_assert(strstr(msg, "'victim'"), "%s", msg);
  cr_assert(strstr(msg, "10.0.0.9:5555"), "%s", msg);
  cr_assert(strstr(msg, words), "'%s' not in: %s", words, msg);
  cr_assert_eq(out.kind, RILL_VARKIND_EMPTY);
  rill_status_destroy(st);
  free(hdr);
  free(data);
}

Test(rpc_message, short_data_frame) {
  bad b;
  bad_init(&b);
  expect_refused(&b, 20, RILL_INVALID_ARGUMENT, "need 24 bytes but the data frame has 20");
}

Test(rpc_message, long_data_frame) {
  bad b;
  bad_init(&b);
  expect_refused(&b, 28, RILL_INVALID_ARGUMENT, "data frame has 28");
}

Test(rpc_message, unknown_dtype) {
  bad b;
  bad_init(&b);
  b.m.data_type = 17;
  expect_refused(&b, 24, RILL_INVALID_ARGUMENT, "unknown data_type 17");
  b.m.data_type = -1;
  expect_refused(&b, 24, RILL_INVALID_ARGUMENT, "unknown data_type -1");
}

Test(rpc_message, negative_and_overflowing_dims) {
  bad b;
  bad_init(&b);
  b.dims[0] = -2;
  expect_refused(&b, 24, RILL_INVALID_ARGUMENT, "negative or too large");
  b.dims[0] = INT64_MAX / 2;
  expect_refused(&b, 24, RILL_INVALID_ARGUMENT, "negative or too large");
}

Test(rpc_message, too_many_dims) {
  bad b;
  bad_init(&b);
  for (int i = 0; i < 12; i++) b.dims[i] = 1;
  b.m.n_dims = 12;
  expect_refused(&b, 4, RILL_INVALID_ARGUMENT, "12 dims");
}

Test(rpc_message, lod_not_ending_at_rows) {
  bad b;
  bad_init(&b);
  b.lod[0] = 0, b.lod[1] = 1, b.lod[2] = 3;
  sendrecv__variable_message__lod_data__init(&b.ld);
  b.ld.n_lod_data = 3;
  b.ld.lod_data = b.lod;
  b.ldp = &b.ld;
  b.m.n_lod = 1;
  b.m.lod = &b.ldp;
  b.m.has_lod_level = 1;
  b.m.lod_level = 1;
  expect_refused(&b, 24, RILL_INVALID_ARGUMENT, "ends at 3 but the tensor has 2");
  b.m.lod_level = 2;
  expect_refused(&b, 24, RILL_INVALID_ARGUMENT, "lod_level 2 but 1 LoD levels");
  b.m.lod_level = 1;
  b.lod[1] = -1;
  expect_refused(&b, 24, RILL_INVALID_ARGUMENT, "negative offset");
}

Test(rpc_message, selected_rows_checks) {
  bad b;
  bad_init(&b);
  b.m.has_type = 1;
  b.m.type = SENDRECV__VAR_TYPE__SELECTED_ROWS;
  b.m.has_slr_height = 1;
  b.m.slr_height = 5;
  b.rows[0] = 1, b.rows[1] = 4;
  b.m.has_rows = 1;
  b.m.rows.data = (uint8_t *)b.rows;
  b.m.rows.len = 12;
  expect_refused(&b, 24, RILL_INVALID_ARGUMENT, "not a whole number of int64");
  b.m.rows.len = 8;
  expect_refused(&b, 24, RILL_INVALID_ARGUMENT, "1 rows but a value of dims starting with 2");
  b.m.rows.len = 16;
  b.rows[1] = 5;
  expect_refused(&b, 24, RILL_INVALID_ARGUMENT, "row 1 is 5, outside [0, 5)");
  b.rows[1] = -1;
  expect_refused(&b, 24, RILL_INVALID_ARGUMENT, "row 1 is -1");
  b.rows[1] = 0;
  b.m.slr_height = -4;
  expect_refused(&b, 24, RILL_INVALID_ARGUMENT, "negative height");
}

Test(rpc_message, other_types_refused) {
  bad b;
  bad_init(&b);
  b.m.has_type = 1;
  b.m.type = SENDRECV__VAR_TYPE__NCCL_ID;
  expect_refused(&b, 24, RILL_UNIMPLEMENTED, "NCCL_ID");
  b.m.type = (Sendrecv__VarType)9;
  expect_refused(&b, 24, RILL_INVALID_ARGUMENT, "unknown variable type 9");
  b.m.type = SENDRECV__VAR_TYPE__LOD_TENSOR;
  uint8_t junk[24] = {0};
  b.m.has_serialized = 1;
  b.m.serialized.data = junk;
  b.m.serialized.len = 24;
  expect_refused(&b, 24, RILL_UNIMPLEMENTED, "serialized");
}

Test(rpc_message, garbage_and_nameless_headers) {
  uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12};
  rill_variable out;
  rill_variable_init(&out);
  rill_status *st = rill_rpc_decode(garbage, sizeof garbage, NULL, 0, NULL, "peer-x", NULL, &out);
  cr_assert_eq(rill_status_code(st), RILL_CORRUPT);
  cr_assert(strstr(rill_status_message(st), "peer-x"));
  rill_status_destroy(st);
  bad b;
  bad_init(&b);
  b.m.varname = NULL;
  size_t len = sendrecv__variable_message__get_packed_size(&b.m);
  uint8_t hdr[64];
  sendrecv__variable_message__pack(&b.m, hdr);
  st = rill_rpc_decode(hdr, len, NULL, 0, NULL, "peer-y", NULL, &out);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  cr_assert(strstr(rill_status_message(st), "names no variable"));
  rill_status_destroy(st);
}

/* A header written by Paddle's VariableMessage (protobuf's encoder, fields 1, 2, 3, 4
 * packed, 5, 12) for "fc_0.w_0@GRAD", fp32 [2, 3], trainer 1. */
Test(rpc_message, reads_a_paddle_header) {
  const uint8_t hdr[] = {0x0a, 0x0d, 'f', 'c', '_', '0', '.', 'w', '_', '0', '@', 'G', 'R', 'A',
                         'D', 0x10, 0x00, 0x18, 0x05, 0x22, 0x02, 0x02, 0x03, 0x28, 0x00, 0x60,
                         0x01};
  float data[6] = {1, 2, 3, 4, 5, 6};
  rill_variable out;
  rill_variable_init(&out);
  rill_rpc_meta meta;
  rill_status *st = rill_rpc_decode(hdr, sizeof hdr, data, sizeof data, NULL, "p", &meta, &out);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_str_eq(meta.varname, "fc_0.w_0@GRAD");
  cr_assert_eq(meta.trainer_id, 1);
  cr_assert_eq(out.u.tensor.dims.n, 2);
  cr_assert_eq(out.u.tensor.dims.d[1], 3);
  cr_assert_float_eq(((float *)rill_tensor_ptr(&out.u.tensor))[5], 6.0f, 0);
  rill_rpc_meta_clear(&meta);
  rill_variable_clear(&out);
}

Test(rpc_message, sha256_known_vectors) {
  uint8_t h[32];
  rill_sha256("abc", 3, h);
  const uint8_t abc[4] = {0xba, 0x78, 0x16, 0xbf};
  cr_assert_eq(memcmp(h, abc, 4), 0);
  cr_assert_eq(h[31], 0xad);
  const char *m56 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  rill_sha256(m56, strlen(m56), h);
  cr_assert_eq(h[0], 0x24);
  cr_assert_eq(h[1], 0x8d);
  cr_assert_eq(h[31], 0xc1);
}

Test(rpc_message, keys_follow_the_secret) {
  if (!rill_rpc_has_curve()) cr_skip_test("libzmq has no CURVE");
  char a[4][41], b[4][41], c[4][41];
  cr_assert_null(rill_rpc_derive_keys("s3cret", a[0], a[1], a[2], a[3]));
  cr_assert_null(rill_rpc_derive_keys("s3cret", b[0], b[1], b[2], b[3]));
  cr_assert_null(rill_rpc_derive_keys("other", c[0], c[1], c[2], c[3]));
  for (int i = 0; i < 4; i++) {
    cr_assert_str_eq(a[i], b[i]);
    cr_assert_str_neq(a[i], c[i]);
    cr_assert_eq(strlen(a[i]), 40);
  }
  cr_assert_str_neq(a[0], a[2]);
}
