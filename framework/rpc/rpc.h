/* The trainer <-> parameter-server transport over ZeroMQ (doc/design/rpc.md).
 *
 * A client sends requests to endpoints ("127.0.0.1:6170", Paddle's form, or a ZeroMQ
 * "tcp://..." address) and waits for each reply until a deadline; a server hands each
 * request to its caller through rill_rpc_server_next and sends the reply whenever the
 * caller answers, from any thread. The transport knows nothing of barriers or
 * optimizers: the pserver loop built on it decides when to answer.
 *
 * Every wait is bounded. Unless set, the deadline is RILL_RPC_DEADLINE_MS from the
 * environment, else RILL_RPC_DEFAULT_DEADLINE_MS; an expired wait returns
 * DEADLINE_EXCEEDED naming the endpoint and the variable.
 *
 * Optional authentication: with a shared secret (config.secret, else the file named by
 * config.secret_file, else RILL_DIST_SECRET, else RILL_DIST_SECRET_FILE) both sides use ZeroMQ's CURVE mechanism
 * with keys derived from the secret (rill_rpc_derive_keys); a peer without the secret
 * gets no service. A pserver must not face an untrusted network even so. */
#ifndef RILL_FRAMEWORK_RPC_RPC_H
#define RILL_FRAMEWORK_RPC_RPC_H

#include <stdbool.h>
#include <stdint.h>

#include "framework/data/scope.h"
#include "framework/rpc/message.h"

#define RILL_RPC_DEFAULT_DEADLINE_MS 180000
/* The largest message header (a packed VariableMessage) either side accepts, unless
 * config.max_header_bytes or RILL_RPC_MAX_HEADER says otherwise. A header holds names,
 * dims, LoD offsets and the row indices of selected rows (8 bytes a row): 16 MiB is two
 * million rows. The cap bounds what decoding a header may allocate (up to eight times
 * its size for packed integers) before anything in it is checked. */
#define RILL_RPC_DEFAULT_MAX_HEADER (16 << 20)
/* Paddle's message names for barriers and a trainer's completion. */
#define RILL_RPC_BATCH_BARRIER "BATCH_BARRIER@RECV"
#define RILL_RPC_FETCH_BARRIER "FETCH_BARRIER@RECV"
#define RILL_RPC_COMPLETE "COMPLETE@RECV"
/* rill's: take a cluster snapshot now (out_varname: its id, in decimal). */
#define RILL_RPC_CHECKPOINT "CHECKPOINT@RECV"

typedef struct rill_rpc_config {
  int64_t deadline_ms;      /* <= 0: RILL_RPC_DEADLINE_MS, else the default */
  const char *secret;       /* NULL: secret_file, else RILL_DIST_SECRET, else the file
                               RILL_DIST_SECRET_FILE names; "": none */
  const char *secret_file;  /* a file whose contents (less a final newline) are the secret */
  int heartbeat_ivl_ms;     /* <= 0: 1000 */
  int heartbeat_timeout_ms; /* <= 0: 10000; a silent peer is dropped after this */
  int64_t max_header_bytes; /* <= 0: RILL_RPC_MAX_HEADER, else RILL_RPC_DEFAULT_MAX_HEADER */
  /* The same-host transport: 0 follows RILL_RPC_IPC ("0" turns it off; on by default),
   * > 0 on, < 0 off. On, a server bound to "HOST:PORT" also binds a Unix-domain socket
   * (ZeroMQ ipc://) at rill_rpc_ipc_path's path, and a client talks to an endpoint
   * through that socket whenever it exists on this machine, else over TCP. */
  int ipc;
} rill_rpc_config;

/* Zeroes: every member takes its default. */
void rill_rpc_config_init(rill_rpc_config *cfg);

/* The deadline a config resolves to (the environment read once per call). */
int64_t rill_rpc_config_deadline(const rill_rpc_config *cfg);
/* The header cap a config resolves to. A header over it is refused unread: a server
 * answers the request with an error naming the peer, the size and the cap, and keeps
 * serving; a client refuses to send one (naming the variable) and fails a reply that
 * carries one. */
int64_t rill_rpc_config_max_header(const rill_rpc_config *cfg);

/* The CURVE keys for `secret`, as 40-character Z85 strings (41 bytes with the NUL):
 * each secret key is SHA-256 of a fixed label ("rill-dist server key" or
 * "rill-dist client key"), a zero byte and the secret; each public key is
 * zmq_curve_public of its secret key. Every process with the secret derives the same. */
rill_status *rill_rpc_derive_keys(const char *secret, char server_public[41],
                                  char server_secret[41], char client_public[41],
                                  char client_secret[41]);

/* The same-host socket of endpoint "HOST:PORT": ipc://DIR/HOST-PORT, DIR being
 * RILL_RPC_IPC_DIR or /tmp/rill-ipc-<uid>, a directory of this user's that nobody else
 * may enter (made so when absent; any other directory is not used). False for a
 * ZeroMQ address ("tcp://..."), a name too long for a socket path, or a directory that
 * is not safe. */
bool rill_rpc_ipc_path(const char *endpoint, char *out, size_t size);

/* Whether this libzmq has CURVE. */
bool rill_rpc_has_curve(void);

/* ---- client ---- */

typedef struct rill_rpc_client rill_rpc_client;

/* cfg may be NULL (defaults). A client may be used from any number of threads at once:
 * each call borrows a socket to its endpoint from a pool. */
rill_status *rill_rpc_client_create(const rill_rpc_config *cfg, rill_rpc_client **out);
/* Closes every socket without waiting for unsent messages. Accepts NULL. No call may be
 * in flight. */
void rill_rpc_client_destroy(rill_rpc_client *c);
void rill_rpc_client_set_deadline(rill_rpc_client *c, int64_t deadline_ms);
int64_t rill_rpc_client_deadline(const rill_rpc_client *c);

/* Sends `var` (a LoD tensor or selected rows, not copied: its buffer is shared until
 * ZeroMQ has sent it) as `varname`, and waits for the server's acknowledgement.
 * out_varname may be NULL. */
rill_status *rill_rpc_send_var(rill_rpc_client *c, const char *endpoint, const char *varname,
                               const rill_variable *var, const char *out_varname,
                               int64_t trainer_id);
/* Asks for `varname` and decodes the reply into `out` (cleared first). The tensor shares
 * the received frame when its address suits the dtype, else it is copied. */
rill_status *rill_rpc_get_var(rill_rpc_client *c, const char *endpoint, const char *varname,
                              const char *out_varname, int64_t trainer_id, rill_variable *out);
/* rill_rpc_send_var / rill_rpc_get_var of n variables at once (endpoints[i] and
 * varnames[i] for vars[i] or outs[i]): up to 8 requests are in flight, so transfers to
 * different pservers, and the round trips to one, overlap. Every request sent is waited
 * for; after a failure no new one is sent. Returns the first failure, *failed (may be
 * NULL) its index. done(arg, i) (may be NULL) is called as each request completes. */
rill_status *rill_rpc_send_var_each(rill_rpc_client *c, size_t n, const char *const *endpoints,
                                    const char *const *varnames,
                                    const rill_variable *const *vars, int64_t trainer_id,
                                    void (*done)(void *arg, size_t i), void *arg, size_t *failed);
rill_status *rill_rpc_get_var_each(rill_rpc_client *c, size_t n, const char *const *endpoints,
                                   const char *const *varnames, rill_variable *const *outs,
                                   int64_t trainer_id, void (*done)(void *arg, size_t i),
                                   void *arg, size_t *failed);
/* A remote lookup: sends `ids` (an int64 tensor) as `varname` and decodes the server's
 * answer, the variable it names `out_varname` after running its prefetch block, into
 * `out` (cleared first). */
rill_status *rill_rpc_prefetch(rill_rpc_client *c, const char *endpoint, const char *varname,
                               const rill_variable *ids, const char *out_varname,
                               int64_t trainer_id, rill_variable *out);
/* Sends a notice with no data (RILL_RPC_BATCH_BARRIER, RILL_RPC_FETCH_BARRIER,
 * RILL_RPC_COMPLETE, ...) and waits for its acknowledgement. */
rill_status *rill_rpc_send_notice(rill_rpc_client *c, const char *endpoint, const char *name,
                                  int64_t trainer_id);
/* The highest tag any OK or VAR reply to this client carried (0: none;
 * rill_rpc_server_set_tag). */
uint32_t rill_rpc_client_tag(rill_rpc_client *c);
/* A notice with an argument (carried as out_varname): RILL_RPC_CHECKPOINT. */
rill_status *rill_rpc_send_notice_arg(rill_rpc_client *c, const char *endpoint, const char *name,
                                      const char *arg, int64_t trainer_id);
/* rill_rpc_send_notice_arg to every endpoint at once: the notices are sent (up to 8 in
 * flight), then every reply is awaited, so the round trips overlap. Returns the first
 * failure, in endpoint order of sending then of replies; *failed (may be NULL): the
 * index of the endpoint it names. */
rill_status *rill_rpc_send_notice_each(rill_rpc_client *c, const char *const *endpoints,
                                       size_t n, const char *name, const char *arg,
                                       int64_t trainer_id, size_t *failed);
/* Waits until the server at `endpoint` answers (a ping retried while its port comes
 * up), at most timeout_ms (<= 0: the client's deadline). */
rill_status *rill_rpc_wait_server(rill_rpc_client *c, const char *endpoint, int64_t timeout_ms);

/* ---- server ---- */

typedef enum rill_rpc_kind {
  RILL_RPC_SEND = 1,   /* a variable for the server: var is set */
  RILL_RPC_GET = 2,    /* a request for the variable meta.varname */
  RILL_RPC_NOTICE = 3, /* a barrier or completion named meta.varname */
  RILL_RPC_PREFETCH = 5, /* ids for a lookup: var is set; answered with a variable */
} rill_rpc_kind;

typedef struct rill_rpc_request {
  rill_rpc_kind kind;
  rill_rpc_meta meta; /* varname, out_varname, trainer_id */
  rill_variable var;  /* RILL_RPC_SEND: the decoded variable (may be moved out) */
  char peer[64];      /* the sender's address, for messages */
  /* private to the transport */
  void *route; /* the ROUTER identity frame */
  uint64_t id;
  bool replied;
} rill_rpc_request;

typedef struct rill_rpc_server rill_rpc_server;

/* Binds exactly `endpoint` ("127.0.0.1:6170"; port 0 picks a free port, see
 * rill_rpc_server_port) and starts the server's I/O thread. cfg may be NULL. */
rill_status *rill_rpc_server_create(const char *endpoint, const rill_rpc_config *cfg,
                                    rill_rpc_server **out);
/* Stops the I/O thread and closes the sockets without waiting; requests not yet taken
 * are answered with nothing. Requests taken and not destroyed must be destroyed after.
 * Accepts NULL. */
void rill_rpc_server_destroy(rill_rpc_server *s);
int rill_rpc_server_port(const rill_rpc_server *s);
/* "127.0.0.1:PORT": the address bound. */
const char *rill_rpc_server_endpoint(const rill_rpc_server *s);
/* "ipc://...": the same-host socket also bound, or "" when none. */
const char *rill_rpc_server_ipc(const rill_rpc_server *s);
/* Peers connected now. A peer that stops answering ZeroMQ's heartbeats (a frozen or
 * unplugged process) is dropped after heartbeat_timeout_ms and no longer counted. */
int rill_rpc_server_peers(const rill_rpc_server *s);
/* Malformed requests answered with an error so far. */
uint64_t rill_rpc_server_rejected(const rill_rpc_server *s);

/* The next well-formed request, waiting at most timeout_ms (< 0: forever, 0: no wait).
 * *out is NULL when none came in time (and the status is NULL). The caller owns the
 * request: it answers it once (any thread, any time) and destroys it. */
rill_status *rill_rpc_server_next(rill_rpc_server *s, int64_t timeout_ms, rill_rpc_request **out);
/* The tag every later OK and VAR reply carries (the pserver's newest cluster snapshot,
 * announced to trainers this way). */
void rill_rpc_server_set_tag(rill_rpc_server *s, uint32_t tag);
/* Answers a request (reply_var answers GET and PREFETCH); each fails with FAILED_PRECONDITION on a second answer. The
 * variable is shared, not copied, until sent. */
rill_status *rill_rpc_server_reply_ok(rill_rpc_server *s, rill_rpc_request *req);
rill_status *rill_rpc_server_reply_var(rill_rpc_server *s, rill_rpc_request *req,
                                       const rill_variable *var);
/* Answers with `error`'s code and message (the status stays the caller's). */
rill_status *rill_rpc_server_reply_error(rill_rpc_server *s, rill_rpc_request *req,
                                         const rill_status *error);
void rill_rpc_request_destroy(rill_rpc_request *req);

#endif
