/* The variable messages of the trainer <-> pserver transport (doc/design/rpc.md): a
 * header, Paddle's VariableMessage (proto/send_recv.proto), and the tensor's bytes as a
 * separate frame that is never copied on the way out.
 *
 * Encoding retains and pins the tensor's buffer: the bytes stay alive and unchanged
 * while the transport holds them (a writer in a run copies a buffer that has other
 * references, see rill_buffer), and rill_rpc_payload_release_data drops the reference
 * when ZeroMQ is done with the frame. Decoding checks every field against the data and
 * names the variable and the peer in its errors. */
#ifndef RILL_FRAMEWORK_RPC_MESSAGE_H
#define RILL_FRAMEWORK_RPC_MESSAGE_H

#include <stddef.h>
#include <stdint.h>

#include "framework/data/scope.h"

/* VariableMessage.type */
enum { RILL_RPC_LOD_TENSOR = 0, RILL_RPC_SELECTED_ROWS = 1, RILL_RPC_NCCL_ID = 2 };

/* Longest variable name a header may carry. */
#define RILL_RPC_MAX_NAME 4096

typedef struct rill_rpc_payload {
  uint8_t *header; /* packed VariableMessage (rill_malloc) */
  size_t header_len;
  void *data; /* the tensor's bytes, inside `keep`; NULL when there are none */
  size_t data_len;
  rill_buffer *keep; /* retained and pinned while the payload owns it; else NULL */
} rill_rpc_payload;

void rill_rpc_payload_init(rill_rpc_payload *p);
/* Frees the header and drops `keep` if the payload still owns it. */
void rill_rpc_payload_clear(rill_rpc_payload *p);
/* Called on the sending thread just before the data frame goes to ZeroMQ, whose I/O
 * thread later runs rill_rpc_payload_release_data: orders the two for ThreadSanitizer
 * (framework/base/tsan.h); nothing in other builds. */
void rill_rpc_payload_hand_over(rill_rpc_payload *p);
/* A ZeroMQ free function (zmq_free_fn) for the data frame: `hint` is the payload's
 * `keep`, handed over with the frame (set p->keep to NULL once ZeroMQ owns it). */
void rill_rpc_payload_release_data(void *data, void *hint);

/* Encodes `var` (a LoD tensor or selected rows) named `varname`. out_varname may be
 * NULL. `var` NULL encodes a header with the name alone (requests, notices). */
rill_status *rill_rpc_encode(const char *varname, const rill_variable *var,
                             const char *out_varname, int64_t trainer_id,
                             rill_rpc_payload *out);

/* The header's naming fields. */
typedef struct rill_rpc_meta {
  char *varname;     /* never NULL after a successful decode */
  char *out_varname; /* "" when absent */
  int64_t trainer_id;
  int type; /* RILL_RPC_* */
} rill_rpc_meta;

void rill_rpc_meta_init(rill_rpc_meta *m);
void rill_rpc_meta_clear(rill_rpc_meta *m);

/* Reads the header's names alone (a get request, a notice). `peer` names the sender in
 * errors. */
rill_status *rill_rpc_decode_meta(const void *header, size_t header_len, const char *peer,
                                  rill_rpc_meta *meta);

/* Decodes a header and its data frame into `out` (cleared first; left EMPTY on error).
 * `owner`, when not NULL, is a buffer holding `data` that the tensor may share instead
 * of copying (it is retained, not taken); NULL copies. meta may be NULL. */
rill_status *rill_rpc_decode(const void *header, size_t header_len, const void *data,
                             size_t data_len, rill_buffer *owner, const char *peer,
                             rill_rpc_meta *meta, rill_variable *out);

#endif
