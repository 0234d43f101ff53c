#include "framework/rpc/rpc.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <zmq.h>

#include "framework/base/alloc.h"
#include "framework/base/sha256.h"

/* ---- framing ----
 * Every message starts with a 16-byte envelope: 'R' 'L', version, kind, a status code
 * (little-endian uint32; error replies) and the request id (little-endian uint64) that
 * the reply repeats. Requests: SEND and PREFETCH [env][header][data], GET and NOTICE
 * [env][header], PING [env]. Replies: OK [env], VAR [env][header][data], ERROR [env][message]. In an
 * OK or VAR reply the status field carries the server's tag instead (0 unless the
 * server set one): the pserver's newest cluster snapshot, which trainers learn from
 * any reply. */
enum { ENV_SIZE = 16, ENV_VERSION = 1 };
enum {
  K_SEND = 1,
  K_GET = 2,
  K_NOTICE = 3,
  K_PING = 4,
  K_PREFETCH = 5,
  K_OK = 16,
  K_VAR = 17,
  K_ERROR = 18
};
enum { MAX_PARTS = 4 };

static void env_write(uint8_t e[ENV_SIZE], int kind, uint32_t code, uint64_t id) {
  e[0] = 'R', e[1] = 'L', e[2] = ENV_VERSION, e[3] = (uint8_t)kind;
  for (int i = 0; i < 4; i++) e[4 + i] = (uint8_t)(code >> (8 * i));
  for (int i = 0; i < 8; i++) e[8 + i] = (uint8_t)(id >> (8 * i));
}

static bool env_read(zmq_msg_t *m, int *kind, uint32_t *code, uint64_t *id) {
  if (zmq_msg_size(m) != ENV_SIZE) return false;
  const uint8_t *e = zmq_msg_data(m);
  if (e[0] != 'R' || e[1] != 'L' || e[2] != ENV_VERSION) return false;
  *kind = e[3];
  *code = 0;
  *id = 0;
  for (int i = 0; i < 4; i++) *code |= (uint32_t)e[4 + i] << (8 * i);
  for (int i = 0; i < 8; i++) *id |= (uint64_t)e[8 + i] << (8 * i);
  return true;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Receives every part of one message; keeps the first MAX_PARTS (the caller closes
 * them) and counts the rest in *n. Returns -1 with errno on failure of the first. */
static int recv_parts(void *sock, zmq_msg_t parts[MAX_PARTS], int *n, int flags) {
  *n = 0;
  for (;;) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, sock, *n ? 0 : flags) < 0) {
      zmq_msg_close(&m);
      if (*n == 0) return -1;
      break;
    }
    bool more = zmq_msg_more(&m);
    if (*n < MAX_PARTS) {
      zmq_msg_init(&parts[*n]);
      zmq_msg_move(&parts[*n], &m);
    }
    zmq_msg_close(&m);
    (*n)++;
    if (!more) break;
  }
  return 0;
}

static void close_parts(zmq_msg_t parts[MAX_PARTS], int n) {
  for (int i = 0; i < n && i < MAX_PARTS; i++) zmq_msg_close(&parts[i]);
}

static void free_msg(void *data, void *ctx) {
  (void)data;
  zmq_msg_close(ctx);
  free(ctx);
}

/* A rill buffer that owns a received frame (moved out of *m), so a decoded tensor can
 * share its bytes. NULL when out of memory (*m is left as it was). */
static rill_buffer *wrap_msg(zmq_msg_t *m) {
  zmq_msg_t *h = malloc(sizeof *h);
  if (!h) return NULL;
  zmq_msg_init(h);
  zmq_msg_move(h, m);
  rill_buffer *b = rill_buffer_wrap(zmq_msg_data(h), zmq_msg_size(h),
                                    (rill_place){RILL_DEVICE_CPU, 0}, free_msg, h);
  if (!b) {
    zmq_msg_move(m, h);
    zmq_msg_close(h);
    free(h);
  }
  return b;
}

/* Sends the payload's frames after those already sent with ZMQ_SNDMORE. The data frame
 * takes the payload's reference to the tensor's buffer. */
static int send_payload(void *sock, rill_rpc_payload *p, bool with_data) {
  zmq_msg_t m;
  if (zmq_msg_init_size(&m, p->header_len)) return -1;
  memcpy(zmq_msg_data(&m), p->header, p->header_len);
  if (zmq_msg_send(&m, sock, with_data ? ZMQ_SNDMORE : 0) < 0) {
    zmq_msg_close(&m);
    return -1;
  }
  if (!with_data) return 0;
  if (p->data_len) {
    rill_rpc_payload_hand_over(p);
    if (zmq_msg_init_data(&m, p->data, p->data_len, rill_rpc_payload_release_data, p->keep))
      return -1;
    p->keep = NULL; /* ZeroMQ releases it when the frame is sent or dropped */
  } else {
    zmq_msg_init(&m);
  }
  if (zmq_msg_send(&m, sock, 0) < 0) {
    zmq_msg_close(&m);
    return -1;
  }
  return 0;
}

static int send_bytes(void *sock, const void *data, size_t len, int flags) {
  zmq_msg_t m;
  if (zmq_msg_init_size(&m, len)) return -1;
  if (len) memcpy(zmq_msg_data(&m), data, len);
  if (zmq_msg_send(&m, sock, flags) < 0) {
    zmq_msg_close(&m);
    return -1;
  }
  return 0;
}

/* ---- configuration ---- */

void rill_rpc_config_init(rill_rpc_config *cfg) { memset(cfg, 0, sizeof *cfg); }

/* A positive setting: `set` when positive, else the environment variable `name` when
 * it is a positive number, else `fallback`. */
static int64_t positive_setting(int64_t set, const char *name, int64_t fallback) {
  if (set > 0) return set;
  const char *v = getenv(name);
  if (v && *v) {
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end == '\0' && n > 0) return n;
  }
  return fallback;
}

int64_t rill_rpc_config_deadline(const rill_rpc_config *cfg) {
  return positive_setting(cfg ? cfg->deadline_ms : 0, "RILL_RPC_DEADLINE_MS",
                          RILL_RPC_DEFAULT_DEADLINE_MS);
}

int64_t rill_rpc_config_max_header(const rill_rpc_config *cfg) {
  return positive_setting(cfg ? cfg->max_header_bytes : 0, "RILL_RPC_MAX_HEADER",
                          RILL_RPC_DEFAULT_MAX_HEADER);
}

static rill_status *header_too_big(const char *who, const char *what, size_t len,
                                   int64_t cap) {
  return rill_error(RILL_OUT_OF_RANGE,
                    "rpc %s '%s': its header has %zu bytes, over the cap of %lld "
                    "(RILL_RPC_MAX_HEADER)",
                    who, what, len, (long long)cap);
}

bool rill_rpc_has_curve(void) { return zmq_has("curve"); }

static void derive_one(const char *label, const char *secret, char pub[41], char sec[41]) {
  size_t ll = strlen(label), sl = strlen(secret);
  uint8_t *buf = rill_malloc(ll + 1 + sl);
  uint8_t key[32];
  if (buf) {
    memcpy(buf, label, ll + 1);
    memcpy(buf + ll + 1, secret, sl);
    rill_sha256(buf, ll + 1 + sl, key);
    rill_free(buf);
  } else {
    memset(key, 0, sizeof key);
  }
  zmq_z85_encode(sec, key, sizeof key);
  zmq_curve_public(pub, sec);
}

rill_status *rill_rpc_derive_keys(const char *secret, char server_public[41],
                                  char server_secret[41], char client_public[41],
                                  char client_secret[41]) {
  if (!rill_rpc_has_curve())
    return rill_error(RILL_UNIMPLEMENTED, "rpc: this libzmq has no CURVE security; "
                      "RILL_DIST_SECRET cannot be used");
  derive_one("rill-dist server key", secret, server_public, server_secret);
  derive_one("rill-dist client key", secret, client_public, client_secret);
  return NULL;
}

typedef struct keys {
  bool on;
  char server_public[41], server_secret[41], client_public[41], client_secret[41];
} keys;

static rill_status *resolve_secret(const rill_rpc_config *cfg, keys *k) {
  memset(k, 0, sizeof *k);
  const char *secret = cfg ? cfg->secret : NULL;
  const char *path = !secret && cfg ? cfg->secret_file : NULL;
  if (!secret && !path) {
    secret = getenv("RILL_DIST_SECRET");
    if (!secret) path = getenv("RILL_DIST_SECRET_FILE");
  }
  char *owned = NULL;
  if (path && path[0]) {
    FILE *f = fopen(path, "rb");
    if (!f)
      return rill_error(RILL_IO, "rpc: cannot read the secret file '%s': %s", path,
                        strerror(errno));
    owned = rill_calloc(1, 4097);
    size_t n = owned ? fread(owned, 1, 4096, f) : 0;
    fclose(f);
    if (!owned) return rill_oom();
    while (n && (owned[n - 1] == '\n' || owned[n - 1] == '\r')) owned[--n] = '\0';
    if (!n) {
      rill_free(owned);
      return rill_error(RILL_INVALID_ARGUMENT, "rpc: the secret file '%s' is empty", path);
    }
    secret = owned;
  }
  rill_status *st = NULL;
  if (secret && secret[0]) {
    st = rill_rpc_derive_keys(secret, k->server_public, k->server_secret, k->client_public,
                              k->client_secret);
    k->on = !st;
  }
  rill_free(owned);
  return st;
}

static void set_common(void *sock, const rill_rpc_config *cfg) {
  int zero = 0;
  int ivl = cfg && cfg->heartbeat_ivl_ms > 0 ? cfg->heartbeat_ivl_ms : 1000;
  int tmo = cfg && cfg->heartbeat_timeout_ms > 0 ? cfg->heartbeat_timeout_ms : 10000;
  zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(sock, ZMQ_HEARTBEAT_IVL, &ivl, sizeof ivl);
  zmq_setsockopt(sock, ZMQ_HEARTBEAT_TIMEOUT, &tmo, sizeof tmo);
  zmq_setsockopt(sock, ZMQ_HEARTBEAT_TTL, &tmo, sizeof tmo);
}

/* "host:port" -> "tcp://host:port"; a "tcp://", "ipc://" or "inproc://" address as is. */
static rill_status *zmq_address(const char *endpoint, bool bind, char *out, size_t size) {
  if (!endpoint || !endpoint[0])
    return rill_error(RILL_INVALID_ARGUMENT, "rpc: empty endpoint");
  int n;
  if (strstr(endpoint, "://")) {
    n = snprintf(out, size, "%s", endpoint);
  } else {
    const char *colon = strrchr(endpoint, ':');
    if (!colon || !colon[1])
      return rill_error(RILL_INVALID_ARGUMENT, "rpc: endpoint '%s' is not HOST:PORT", endpoint);
    if (bind && strcmp(colon + 1, "0") == 0)
      n = snprintf(out, size, "tcp://%.*s:*", (int)(colon - endpoint), endpoint);
    else
      n = snprintf(out, size, "tcp://%s", endpoint);
  }
  if (n < 0 || (size_t)n >= size)
    return rill_error(RILL_INVALID_ARGUMENT, "rpc: endpoint '%.64s...' is too long", endpoint);
  return NULL;
}

/* ---- the same-host transport ---- */

static bool ipc_wanted(const rill_rpc_config *cfg) {
  if (cfg && cfg->ipc) return cfg->ipc > 0;
  const char *v = getenv("RILL_RPC_IPC");
  return !(v && !strcmp(v, "0"));
}

/* The directory of the same-host sockets, made 0700 when absent; false unless it is a
 * directory of this user that nobody else may enter (another user could otherwise put
 * a socket there that trainers would talk to). */
static bool ipc_dir(char *out, size_t size) {
  const char *env = getenv("RILL_RPC_IPC_DIR");
  int n = env && *env ? snprintf(out, size, "%s", env)
                      : snprintf(out, size, "/tmp/rill-ipc-%u", (unsigned)getuid());
  if (n < 0 || (size_t)n >= size) return false;
  if (mkdir(out, 0700) && errno != EEXIST) return false;
  struct stat st;
  return lstat(out, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
         (st.st_mode & 077) == 0;
}

bool rill_rpc_ipc_path(const char *endpoint, char *out, size_t size) {
  if (!endpoint || strstr(endpoint, "://")) return false;
  const char *colon = strrchr(endpoint, ':');
  if (!colon || colon == endpoint || !colon[1]) return false;
  char dir[160];
  if (!ipc_dir(dir, sizeof dir)) return false;
  char name[128];
  int n = snprintf(name, sizeof name, "%.*s-%s", (int)(colon - endpoint), endpoint, colon + 1);
  if (n < 0 || (size_t)n >= sizeof name) return false;
  for (char *c = name; *c; c++)
    if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
          *c == '.' || *c == '-' || *c == '_'))
      *c = '_';
  /* A Unix-domain socket path has room for sizeof sun_path - 1 bytes. */
  struct sockaddr_un un;
  n = snprintf(out, size, "ipc://%s/%s", dir, name);
  return n > 0 && (size_t)n < size && strlen(out) - 6 < sizeof un.sun_path;
}

/* Whether the same-host socket `address` ("ipc://PATH") is there to talk to. */
static bool ipc_present(const char *address) {
  struct stat st;
  return address[0] && stat(address + 6, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* ---- client ---- */

typedef struct pool {
  struct pool *next;
  char *endpoint;
  char address[256];
  char ipc[256]; /* the endpoint's same-host socket, "" when not used */
  bool on_ipc;   /* a socket over it was opened: TCP ones are not kept */
  void **idle;
  size_t n, cap;
} pool;

struct rill_rpc_client {
  void *ctx;
  pthread_mutex_t lock;
  pool *pools;
  rill_rpc_config cfg;
  keys keys;
  _Atomic int64_t deadline_ms;
  int64_t max_header;
  bool ipc;
  _Atomic uint64_t next_id;
  _Atomic uint32_t tag; /* the highest tag a reply carried */
};

rill_status *rill_rpc_client_create(const rill_rpc_config *cfg, rill_rpc_client **out) {
  *out = NULL;
  rill_rpc_client *c = rill_calloc(1, sizeof *c);
  if (!c) return rill_oom();
  if (cfg) c->cfg = *cfg;
  c->cfg.secret = NULL; /* resolved below; the caller's strings are not kept */
  c->cfg.secret_file = NULL;
  rill_status *st = resolve_secret(cfg, &c->keys);
  if (st) {
    rill_free(c);
    return st;
  }
  c->ctx = zmq_ctx_new();
  if (!c->ctx) {
    rill_free(c);
    return rill_error(RILL_INTERNAL, "rpc: zmq_ctx_new failed: %s", zmq_strerror(errno));
  }
  pthread_mutex_init(&c->lock, NULL);
  atomic_init(&c->deadline_ms, rill_rpc_config_deadline(cfg));
  c->max_header = rill_rpc_config_max_header(cfg);
  c->ipc = ipc_wanted(cfg);
  atomic_init(&c->next_id, 1);
  *out = c;
  return NULL;
}

void rill_rpc_client_destroy(rill_rpc_client *c) {
  if (!c) return;
  for (pool *p = c->pools, *next; p; p = next) {
    next = p->next;
    for (size_t i = 0; i < p->n; i++) zmq_close(p->idle[i]);
    rill_free(p->idle);
    rill_free(p->endpoint);
    rill_free(p);
  }
  zmq_ctx_term(c->ctx);
  pthread_mutex_destroy(&c->lock);
  rill_free(c);
}

void rill_rpc_client_set_deadline(rill_rpc_client *c, int64_t deadline_ms) {
  atomic_store(&c->deadline_ms, deadline_ms > 0 ? deadline_ms : rill_rpc_config_deadline(NULL));
}

int64_t rill_rpc_client_deadline(const rill_rpc_client *c) {
  return atomic_load(&((rill_rpc_client *)c)->deadline_ms);
}

/* Borrows a connected socket to `endpoint` from the pool (or opens one). */
static rill_status *borrow(rill_rpc_client *c, const char *endpoint, pool **pp, void **out) {
  pthread_mutex_lock(&c->lock);
  pool *p = c->pools;
  while (p && strcmp(p->endpoint, endpoint) != 0) p = p->next;
  if (!p) {
    p = rill_calloc(1, sizeof *p);
    rill_status *st = p ? NULL : rill_oom();
    if (!st) st = zmq_address(endpoint, false, p->address, sizeof p->address);
    if (!st && !(p->endpoint = rill_strdup(endpoint))) st = rill_oom();
    if (!st && (!c->ipc || !rill_rpc_ipc_path(endpoint, p->ipc, sizeof p->ipc))) p->ipc[0] = 0;
    if (st) {
      if (p) rill_free(p->endpoint);
      rill_free(p);
      pthread_mutex_unlock(&c->lock);
      return st;
    }
    p->next = c->pools;
    c->pools = p;
  }
  *pp = p;
  *out = p->n ? p->idle[--p->n] : NULL;
  /* A server on this machine is reached through its Unix-domain socket once that is
   * there (it may come up after the first attempt over TCP). */
  const char *address = ipc_present(p->ipc) ? p->ipc : p->address;
  if (address == p->ipc) p->on_ipc = true;
  pthread_mutex_unlock(&c->lock);
  if (*out) return NULL;
  void *s = zmq_socket(c->ctx, ZMQ_DEALER);
  if (!s) return rill_error(RILL_INTERNAL, "rpc: cannot open a socket to %s: %s", endpoint,
                            zmq_strerror(errno));
  set_common(s, &c->cfg);
  /* A trainer started before its pserver connects within tens of milliseconds of the
   * pserver binding (a job's start, a restarted job's resume wait on it); the backoff
   * keeps a peer that stays away to five attempts a second. */
  int ivl = 10, ivl_max = 200;
  zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
  zmq_setsockopt(s, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
  if (c->keys.on) {
    zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, c->keys.server_public, 41);
    zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, c->keys.client_public, 41);
    zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, c->keys.client_secret, 41);
  }
  if (zmq_connect(s, address)) {
    int e = errno;
    zmq_close(s);
    return rill_error(RILL_INVALID_ARGUMENT, "rpc: cannot connect to %s: %s", endpoint,
                      zmq_strerror(e));
  }
  *out = s;
  return NULL;
}

/* Returns a socket after a complete exchange; after a failure the socket is closed, so
 * a late reply cannot reach the next borrower. */
static void give_back(rill_rpc_client *c, pool *p, void *s, bool ok) {
  if (!ok) {
    zmq_close(s);
    return;
  }
  if (p->ipc[0]) {
    /* A TCP socket is not kept once the same-host socket is there. */
    char last[256];
    size_t len = sizeof last;
    bool tcp = !zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, last, &len) && !strncmp(last, "tcp://", 6);
    if (tcp && (p->on_ipc || ipc_present(p->ipc))) {
      zmq_close(s);
      return;
    }
  }
  pthread_mutex_lock(&c->lock);
  if (rill_grow((void **)&p->idle, &p->cap, p->n + 1, sizeof *p->idle)) {
    p->idle[p->n++] = s;
    s = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  if (s) zmq_close(s);
}

static const char *kind_word(int kind) {
  switch (kind) {
    case K_SEND: return "send";
    case K_GET: return "get";
    case K_NOTICE: return "notice";
    case K_PREFETCH: return "prefetch";
    default: return "ping";
  }
}

typedef struct reply {
  zmq_msg_t parts[MAX_PARTS];
  int n;
  int kind;
  uint32_t code;
} reply;

/* A request sent and not yet answered: call_send starts it, call_wait takes its reply. */
typedef struct pending {
  pool *pl;
  void *s;
  uint64_t id;
  int64_t end;
} pending;

static rill_status *call_send(rill_rpc_client *c, const char *endpoint, int kind,
                              rill_rpc_payload *p, const char *what, int64_t deadline_ms,
                              pending *q) {
  if (p && (int64_t)p->header_len > c->max_header)
    return header_too_big("message for", what, p->header_len, c->max_header);
  int64_t end = now_ms() + deadline_ms;
  pool *pl;
  void *s;
  RILL_TRY(borrow(c, endpoint, &pl, &s));
  uint64_t id = atomic_fetch_add(&c->next_id, 1);
  *q = (pending){pl, s, id, end};
  uint8_t env[ENV_SIZE];
  env_write(env, kind, 0, id);
  int tmo = (int)(deadline_ms > INT32_MAX ? INT32_MAX : deadline_ms);
  zmq_setsockopt(s, ZMQ_SNDTIMEO, &tmo, sizeof tmo);
  int rc = send_bytes(s, env, sizeof env, p ? ZMQ_SNDMORE : 0);
  if (!rc && p) rc = send_payload(s, p, kind == K_SEND || kind == K_PREFETCH);
  if (rc) {
    int e = errno;
    give_back(c, pl, s, false);
    if (e == EAGAIN)
      return rill_error(RILL_DEADLINE_EXCEEDED, "rpc: could not %s '%s' to %s within %lld ms",
                        kind_word(kind), what, endpoint, (long long)deadline_ms);
    return rill_error(RILL_UNAVAILABLE, "rpc: %s '%s' to %s failed: %s", kind_word(kind), what,
                      endpoint, zmq_strerror(e));
  }
  return NULL;
}

static rill_status *call_wait(rill_rpc_client *c, const char *endpoint, int kind,
                              const char *what, int64_t deadline_ms, pending *q, reply *r) {
  r->n = 0;
  pool *pl = q->pl;
  void *s = q->s;
  uint64_t id = q->id;
  int64_t end = q->end;
  for (;;) {
    int64_t left = end - now_ms();
    zmq_pollitem_t item = {s, 0, ZMQ_POLLIN, 0};
    int n = left > 0 ? zmq_poll(&item, 1, (long)left) : 0;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      give_back(c, pl, s, false);
      return rill_error(RILL_DEADLINE_EXCEEDED,
                        "rpc: no reply from %s to the %s of '%s' within %lld ms", endpoint,
                        kind_word(kind), what, (long long)deadline_ms);
    }
    if (recv_parts(s, r->parts, &r->n, ZMQ_DONTWAIT)) continue;
    uint64_t rid;
    if (r->n >= 1 && r->n <= MAX_PARTS && env_read(&r->parts[0], &r->kind, &r->code, &rid) &&
        rid == id)
      break;
    close_parts(r->parts, r->n); /* a late reply to an abandoned request */
    r->n = 0;
  }
  give_back(c, pl, s, true);
  if (r->kind == K_ERROR) {
    rill_code code = r->code > RILL_OK && r->code < RILL_CODE_COUNT ? (rill_code)r->code
                                                                   : RILL_INTERNAL;
    int len = r->n >= 2 ? (int)zmq_msg_size(&r->parts[1]) : 0;
    const char *text = r->n >= 2 ? zmq_msg_data(&r->parts[1]) : "";
    rill_status *st = rill_error(code, "rpc: %s refused the %s of '%s': %.*s", endpoint,
                                 kind_word(kind), what, len, text);
    close_parts(r->parts, r->n);
    r->n = 0;
    return st;
  }
  int want = kind == K_GET || kind == K_PREFETCH ? K_VAR : K_OK;
  if (r->kind != want || r->n != (want == K_VAR ? 3 : 1)) {
    close_parts(r->parts, r->n);
    r->n = 0;
    return rill_error(RILL_CORRUPT, "rpc: %s sent a malformed reply to the %s of '%s'", endpoint,
                      kind_word(kind), what);
  }
  if (want == K_VAR && (int64_t)zmq_msg_size(&r->parts[1]) > c->max_header) {
    size_t len = zmq_msg_size(&r->parts[1]);
    close_parts(r->parts, r->n);
    r->n = 0;
    return rill_status_wrap(header_too_big("reply for", what, len, c->max_header), "from %s",
                            endpoint);
  }
  uint32_t seen = atomic_load(&c->tag);
  while (r->code > seen && !atomic_compare_exchange_weak(&c->tag, &seen, r->code)) {
  }
  return NULL;
}

/* One request and its reply, within deadline_ms. */
static rill_status *call(rill_rpc_client *c, const char *endpoint, int kind, rill_rpc_payload *p,
                         const char *what, int64_t deadline_ms, reply *r) {
  r->n = 0;
  pending q;
  RILL_TRY(call_send(c, endpoint, kind, p, what, deadline_ms, &q));
  return call_wait(c, endpoint, kind, what, deadline_ms, &q, r);
}

rill_status *rill_rpc_send_var(rill_rpc_client *c, const char *endpoint, const char *varname,
                               const rill_variable *var, const char *out_varname,
                               int64_t trainer_id) {
  if (!var)
    return rill_error(RILL_INVALID_ARGUMENT, "rpc: no variable to send as '%s' to %s",
                      varname ? varname : "", endpoint);
  rill_rpc_payload p;
  RILL_TRY(rill_rpc_encode(varname, var, out_varname, trainer_id, &p));
  reply r;
  rill_status *st = call(c, endpoint, K_SEND, &p, varname, rill_rpc_client_deadline(c), &r);
  if (!st) close_parts(r.parts, r.n);
  rill_rpc_payload_clear(&p);
  return st;
}

/* Decodes a VAR reply into `out` and closes it. */
static rill_status *decode_reply(reply *r, const char *endpoint, rill_variable *out) {
  rill_buffer *owner = wrap_msg(&r->parts[2]);
  rill_status *st = rill_rpc_decode(zmq_msg_data(&r->parts[1]), zmq_msg_size(&r->parts[1]),
                                    owner ? owner->data : zmq_msg_data(&r->parts[2]),
                                    owner ? owner->size : zmq_msg_size(&r->parts[2]), owner,
                                    endpoint, NULL, out);
  rill_buffer_release(owner);
  close_parts(r->parts, r->n);
  return st;
}

/* A request answered with a variable (GET, PREFETCH): sends `p` (cleared after) and
 * decodes the reply into `out`. */
static rill_status *get_reply(rill_rpc_client *c, const char *endpoint, int kind,
                              rill_rpc_payload *p, const char *what, rill_variable *out) {
  reply r;
  rill_status *st = call(c, endpoint, kind, p, what, rill_rpc_client_deadline(c), &r);
  rill_rpc_payload_clear(p);
  if (st) return st;
  return decode_reply(&r, endpoint, out);
}

/* Requests in flight at once in the *_each calls. */
#define EACH_WINDOW 8

/* n requests of `kind` with up to EACH_WINDOW in flight: SEND of vars[i] as names[i],
 * GET of names[i] into outs[i], or NOTICE `name` (names NULL) with `arg`. */
static rill_status *each(rill_rpc_client *c, int kind, size_t n, const char *const *endpoints,
                         const char *const *names, const char *name, const char *arg,
                         const rill_variable *const *vars, rill_variable *const *outs,
                         int64_t trainer_id, void (*done)(void *arg, size_t i), void *done_arg,
                         size_t *failed) {
  int64_t deadline = rill_rpc_client_deadline(c);
  pending q[EACH_WINDOW];
  size_t idx[EACH_WINDOW], head = 0, inflight = 0, next = 0, bad = 0;
  rill_status *st = NULL;
  if (failed) *failed = 0;
  while (next < n || inflight) {
    if (next < n && !st && inflight < EACH_WINDOW) {
      size_t i = next++;
      const char *what = names ? names[i] : name;
      if (kind == K_SEND && !vars[i]) {
        st = rill_error(RILL_INVALID_ARGUMENT, "rpc: no variable to send as '%s' to %s",
                        what ? what : "", endpoints[i]);
        bad = i;
        continue;
      }
      if (outs) rill_variable_clear(outs[i]);
      rill_rpc_payload p;
      rill_status *e = rill_rpc_encode(what, vars ? vars[i] : NULL, arg, trainer_id, &p);
      if (!e) {
        size_t slot = (head + inflight) % EACH_WINDOW;
        e = call_send(c, endpoints[i], kind, &p, what, deadline, &q[slot]);
        rill_rpc_payload_clear(&p);
        if (!e) {
          idx[slot] = i;
          inflight++;
        }
      }
      if (e) {
        st = e;
        bad = i;
      }
      continue;
    }
    if (!inflight) break; /* a failure stopped the sending and nothing is left */
    /* The oldest request's reply (every reply sent for is taken, or its socket closed). */
    size_t i = idx[head];
    reply r;
    rill_status *e = call_wait(c, endpoints[i], kind, names ? names[i] : name, deadline,
                               &q[head], &r);
    head = (head + 1) % EACH_WINDOW;
    inflight--;
    if (!e) {
      if (outs) e = decode_reply(&r, endpoints[i], outs[i]);
      else close_parts(r.parts, r.n);
    }
    if (done) done(done_arg, i);
    if (e && !st) {
      st = e;
      bad = i;
    } else {
      rill_status_destroy(e);
    }
  }
  if (st && failed) *failed = bad;
  return st;
}

rill_status *rill_rpc_send_var_each(rill_rpc_client *c, size_t n, const char *const *endpoints,
                                    const char *const *varnames,
                                    const rill_variable *const *vars, int64_t trainer_id,
                                    void (*done)(void *arg, size_t i), void *arg, size_t *failed) {
  return each(c, K_SEND, n, endpoints, varnames, NULL, NULL, vars, NULL, trainer_id, done, arg,
              failed);
}

rill_status *rill_rpc_get_var_each(rill_rpc_client *c, size_t n, const char *const *endpoints,
                                   const char *const *varnames, rill_variable *const *outs,
                                   int64_t trainer_id, void (*done)(void *arg, size_t i),
                                   void *arg, size_t *failed) {
  return each(c, K_GET, n, endpoints, varnames, NULL, NULL, NULL, outs, trainer_id, done, arg,
              failed);
}

rill_status *rill_rpc_get_var(rill_rpc_client *c, const char *endpoint, const char *varname,
                              const char *out_varname, int64_t trainer_id, rill_variable *out) {
  rill_variable_clear(out);
  rill_rpc_payload p;
  RILL_TRY(rill_rpc_encode(varname, NULL, out_varname, trainer_id, &p));
  return get_reply(c, endpoint, K_GET, &p, varname, out);
}

rill_status *rill_rpc_prefetch(rill_rpc_client *c, const char *endpoint, const char *varname,
                               const rill_variable *ids, const char *out_varname,
                               int64_t trainer_id, rill_variable *out) {
  rill_variable_clear(out);
  if (!ids)
    return rill_error(RILL_INVALID_ARGUMENT, "rpc: no ids to prefetch as '%s' from %s",
                      varname ? varname : "", endpoint);
  rill_rpc_payload p;
  RILL_TRY(rill_rpc_encode(varname, ids, out_varname, trainer_id, &p));
  return get_reply(c, endpoint, K_PREFETCH, &p, varname, out);
}

rill_status *rill_rpc_send_notice(rill_rpc_client *c, const char *endpoint, const char *name,
                                  int64_t trainer_id) {
  return rill_rpc_send_notice_arg(c, endpoint, name, NULL, trainer_id);
}

rill_status *rill_rpc_send_notice_arg(rill_rpc_client *c, const char *endpoint, const char *name,
                                      const char *arg, int64_t trainer_id) {
  rill_rpc_payload p;
  RILL_TRY(rill_rpc_encode(name, NULL, arg, trainer_id, &p));
  reply r;
  rill_status *st = call(c, endpoint, K_NOTICE, &p, name, rill_rpc_client_deadline(c), &r);
  if (!st) close_parts(r.parts, r.n);
  rill_rpc_payload_clear(&p);
  return st;
}

rill_status *rill_rpc_send_notice_each(rill_rpc_client *c, const char *const *endpoints,
                                       size_t n, const char *name, const char *arg,
                                       int64_t trainer_id, size_t *failed) {
  return each(c, K_NOTICE, n, endpoints, NULL, name, arg, NULL, NULL, trainer_id, NULL, NULL,
              failed);
}

rill_status *rill_rpc_wait_server(rill_rpc_client *c, const char *endpoint, int64_t timeout_ms) {
  if (timeout_ms <= 0) timeout_ms = rill_rpc_client_deadline(c);
  int64_t end = now_ms() + timeout_ms;
  for (;;) {
    int64_t left = end - now_ms();
    if (left <= 0) break;
    reply r;
    rill_status *st = call(c, endpoint, K_PING, NULL, "(ping)", left < 1000 ? left : 1000, &r);
    if (!st) {
      close_parts(r.parts, r.n);
      return NULL;
    }
    rill_code code = rill_status_code(st);
    rill_status_destroy(st);
    if (code != RILL_DEADLINE_EXCEEDED && code != RILL_UNAVAILABLE) break;
  }
  return rill_error(RILL_DEADLINE_EXCEEDED,
                    "rpc: the server at %s did not answer within %lld ms: it is not up, not "
                    "reachable, or it refused this client's authentication (this client %s; "
                    "both sides need the same RILL_DIST_SECRET or RILL_DIST_SECRET_FILE)",
                    endpoint, (long long)timeout_ms,
                    c->keys.on ? "has a secret" : "has no secret");
}

/* ---- server ---- */

typedef struct queued {
  struct queued *next;
  rill_rpc_request *req;
} queued;

struct rill_rpc_server {
  void *ctx;
  void *router; /* I/O thread only */
  void *pull;   /* I/O thread only: replies from any thread */
  void *push;   /* under push_lock */
  void *zap;    /* I/O thread only; NULL without a secret */
  void *monitor; /* I/O thread only: the ROUTER's connection events */
  pthread_mutex_t push_lock;
  pthread_mutex_t lock; /* queue */
  pthread_cond_t cond;
  queued *head, *tail;
  pthread_t thread;
  bool started;
  atomic_bool stop;
  _Atomic uint64_t rejected;
  _Atomic uint32_t tag; /* carried by every OK and VAR reply */
  atomic_int peers;
  int64_t max_header;
  keys keys;
  uint8_t client_key[32];
  int port;
  char endpoint[256];
  char ipc[256]; /* the same-host socket bound, "" when none */
};

int rill_rpc_server_port(const rill_rpc_server *s) { return s->port; }
const char *rill_rpc_server_endpoint(const rill_rpc_server *s) { return s->endpoint; }
const char *rill_rpc_server_ipc(const rill_rpc_server *s) { return s->ipc; }
int rill_rpc_server_peers(const rill_rpc_server *s) {
  return atomic_load(&((rill_rpc_server *)s)->peers);
}

uint64_t rill_rpc_server_rejected(const rill_rpc_server *s) {
  return atomic_load(&((rill_rpc_server *)s)->rejected);
}

static void peer_of(zmq_msg_t *m, char *out, size_t size) {
  const char *a = zmq_msg_gets(m, "Peer-Address");
  snprintf(out, size, "%s", a ? a : "unknown peer");
}

/* Answers a malformed message from the I/O thread and logs one line. */
static void reject(rill_rpc_server *s, zmq_msg_t *route, uint64_t id, const char *peer,
                   rill_status *st) {
  atomic_fetch_add(&s->rejected, 1);
  (void)peer; /* the message names it */
  fprintf(stderr, "rill rpc server %s: rejected: %s\n", s->endpoint, rill_status_message(st));
  uint8_t env[ENV_SIZE];
  env_write(env, K_ERROR, (uint32_t)rill_status_code(st), id);
  const char *text = rill_status_message(st);
  zmq_msg_t r;
  zmq_msg_init(&r);
  if (zmq_msg_copy(&r, route) == 0) {
    if (zmq_msg_send(&r, s->router, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&r);
    } else if (send_bytes(s->router, env, sizeof env, ZMQ_SNDMORE | ZMQ_DONTWAIT) == 0) {
      send_bytes(s->router, text, strlen(text), ZMQ_DONTWAIT);
    }
  }
  rill_status_destroy(st);
}

static void handle_incoming(rill_rpc_server *s) {
  zmq_msg_t parts[MAX_PARTS];
  int n;
  if (recv_parts(s->router, parts, &n, ZMQ_DONTWAIT)) return;
  char peer[64];
  peer_of(&parts[n > 1 ? 1 : 0], peer, sizeof peer); /* the identity frame has no metadata */
  int kind = 0;
  uint32_t code;
  uint64_t id = 0;
  rill_status *st = NULL;
  rill_rpc_request *req = NULL;
  if (n < 2 || !env_read(&parts[1], &kind, &code, &id)) {
    st = rill_error(RILL_CORRUPT, "rpc message from %s: not a rill rpc envelope", peer);
  } else if (n > MAX_PARTS || ((kind == K_SEND || kind == K_PREFETCH) && n != 4) ||
             ((kind == K_GET || kind == K_NOTICE) && n != 3) || (kind == K_PING && n != 2)) {
    st = rill_error(RILL_CORRUPT, "rpc message from %s: %d frames for a %s request", peer, n,
                    kind_word(kind));
  } else if (kind == K_PING) {
    uint8_t env[ENV_SIZE];
    env_write(env, K_OK, 0, id);
    if (zmq_msg_send(&parts[0], s->router, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0)
      send_bytes(s->router, env, sizeof env, ZMQ_DONTWAIT);
  } else if (kind != K_SEND && kind != K_GET && kind != K_NOTICE && kind != K_PREFETCH) {
    st = rill_error(RILL_CORRUPT, "rpc message from %s: unknown request kind %d", peer, kind);
  } else if ((int64_t)zmq_msg_size(&parts[2]) > s->max_header) {
    st = rill_error(RILL_OUT_OF_RANGE,
                    "rpc message from %s: the %s request's header has %zu bytes, over the cap "
                    "of %lld (RILL_RPC_MAX_HEADER)",
                    peer, kind_word(kind), zmq_msg_size(&parts[2]), (long long)s->max_header);
  } else {
    req = rill_calloc(1, sizeof *req);
    zmq_msg_t *route = malloc(sizeof *route);
    if (!req || !route) {
      free(route);
      st = rill_oom();
    } else {
      rill_variable_init(&req->var);
      req->kind = (rill_rpc_kind)kind;
      req->id = id;
      snprintf(req->peer, sizeof req->peer, "%s", peer);
      zmq_msg_init(route);
      zmq_msg_copy(route, &parts[0]);
      req->route = route;
      if (kind == K_SEND || kind == K_PREFETCH) {
        rill_buffer *owner = wrap_msg(&parts[3]);
        if (!owner) {
          st = rill_oom();
        } else {
          st = rill_rpc_decode(zmq_msg_data(&parts[2]), zmq_msg_size(&parts[2]), owner->data,
                               owner->size, owner, peer, &req->meta, &req->var);
          rill_buffer_release(owner);
        }
      } else {
        st = rill_rpc_decode_meta(zmq_msg_data(&parts[2]), zmq_msg_size(&parts[2]), peer,
                                  &req->meta);
      }
    }
  }
  if (st) {
    reject(s, &parts[0], id, peer, st);
    if (req) {
      req->replied = true;
      rill_rpc_request_destroy(req);
    }
  } else if (req) {
    queued *q = rill_malloc(sizeof *q);
    if (!q) {
      reject(s, &parts[0], id, peer, rill_oom());
      req->replied = true;
      rill_rpc_request_destroy(req);
    } else {
      q->next = NULL;
      q->req = req;
      pthread_mutex_lock(&s->lock);
      if (s->tail)
        s->tail->next = q;
      else
        s->head = q;
      s->tail = q;
      pthread_cond_signal(&s->cond);
      pthread_mutex_unlock(&s->lock);
    }
  }
  close_parts(parts, n);
}

/* Moves the replies queued by rill_rpc_server_reply_* to their peers. */
static void forward_replies(rill_rpc_server *s) {
  for (;;) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, s->pull, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&m);
      return;
    }
    bool more;
    do {
      more = zmq_msg_more(&m);
      if (zmq_msg_send(&m, s->router, more ? ZMQ_SNDMORE : 0) < 0) zmq_msg_close(&m);
      if (more) {
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s->pull, 0) < 0) {
          zmq_msg_close(&m);
          return;
        }
      }
    } while (more);
  }
}

/* ZeroMQ's authentication protocol (ZAP, RFC 27): a CURVE client is let in only with
 * the client key derived from the shared secret. */
static void handle_zap(rill_rpc_server *s) {
  zmq_msg_t f[8];
  int n = 0;
  bool more = true;
  while (more) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, s->zap, n ? 0 : ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&m);
      if (!n) return;
      break;
    }
    more = zmq_msg_more(&m);
    if (n < 8) {
      zmq_msg_init(&f[n]);
      zmq_msg_move(&f[n++], &m);
    }
    zmq_msg_close(&m);
  }
  /* version, request id, domain, address, identity, mechanism, credentials... */
  bool ok = n >= 7 && zmq_msg_size(&f[5]) == 5 && memcmp(zmq_msg_data(&f[5]), "CURVE", 5) == 0 &&
            zmq_msg_size(&f[6]) == 32 && memcmp(zmq_msg_data(&f[6]), s->client_key, 32) == 0;
  const char *status = ok ? "200" : "400", *text = ok ? "OK" : "unknown key";
  send_bytes(s->zap, "1.0", 3, ZMQ_SNDMORE);
  if (n >= 2) {
    zmq_msg_send(&f[1], s->zap, ZMQ_SNDMORE);
  } else {
    send_bytes(s->zap, "", 0, ZMQ_SNDMORE);
  }
  send_bytes(s->zap, status, 3, ZMQ_SNDMORE);
  send_bytes(s->zap, text, strlen(text), ZMQ_SNDMORE);
  send_bytes(s->zap, "", 0, ZMQ_SNDMORE);
  send_bytes(s->zap, "", 0, 0);
  if (!ok) fprintf(stderr, "rill rpc server %s: refused a peer without the shared key\n", s->endpoint);
  for (int i = 0; i < n; i++) zmq_msg_close(&f[i]);
}

/* Connection events of the ROUTER: [uint16 event, uint32 value][address]. A peer whose
 * heartbeats stop is disconnected by ZeroMQ and counted out here. */
static void handle_monitor(rill_rpc_server *s) {
  zmq_msg_t parts[MAX_PARTS];
  int n;
  while (recv_parts(s->monitor, parts, &n, ZMQ_DONTWAIT) == 0) {
    if (n >= 1 && zmq_msg_size(&parts[0]) >= 2) {
      const uint8_t *e = zmq_msg_data(&parts[0]);
      uint16_t event = (uint16_t)(e[0] | e[1] << 8); /* host order: little-endian */
      if (event == ZMQ_EVENT_ACCEPTED) atomic_fetch_add(&s->peers, 1);
      if (event == ZMQ_EVENT_DISCONNECTED) atomic_fetch_sub(&s->peers, 1);
    }
    close_parts(parts, n);
  }
}

static void *server_main(void *arg) {
  rill_rpc_server *s = arg;
  zmq_pollitem_t items[4] = {{s->router, 0, ZMQ_POLLIN, 0},
                             {s->pull, 0, ZMQ_POLLIN, 0},
                             {s->monitor, 0, ZMQ_POLLIN, 0},
                             {s->zap, 0, ZMQ_POLLIN, 0}};
  int nitems = s->zap ? 4 : 3;
  while (!atomic_load(&s->stop)) {
    int n = zmq_poll(items, nitems, 50);
    if (n < 0) {
      if (errno == ETERM) break;
      continue;
    }
    if (items[1].revents & ZMQ_POLLIN) forward_replies(s);
    if (items[2].revents & ZMQ_POLLIN) handle_monitor(s);
    if (nitems > 3 && (items[3].revents & ZMQ_POLLIN)) handle_zap(s);
    if (items[0].revents & ZMQ_POLLIN)
      for (int i = 0; i < 64; i++) {
        int ev = 0;
        size_t len = sizeof ev;
        if (zmq_getsockopt(s->router, ZMQ_EVENTS, &ev, &len) || !(ev & ZMQ_POLLIN)) break;
        handle_incoming(s);
      }
  }
  return NULL;
}

void rill_rpc_server_destroy(rill_rpc_server *s) {
  if (!s) return;
  if (s->started) {
    atomic_store(&s->stop, true);
    pthread_join(s->thread, NULL);
  }
  if (s->router) zmq_close(s->router);
  if (s->ipc[0]) unlink(s->ipc + 6);
  if (s->pull) zmq_close(s->pull);
  if (s->push) zmq_close(s->push);
  if (s->zap) zmq_close(s->zap);
  if (s->monitor) zmq_close(s->monitor);
  if (s->ctx) zmq_ctx_term(s->ctx);
  for (queued *q = s->head, *next; q; q = next) {
    next = q->next;
    q->req->replied = true;
    rill_rpc_request_destroy(q->req);
    rill_free(q);
  }
  pthread_mutex_destroy(&s->push_lock);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  rill_free(s);
}

rill_status *rill_rpc_server_create(const char *endpoint, const rill_rpc_config *cfg,
                                    rill_rpc_server **out) {
  *out = NULL;
  rill_rpc_server *s = rill_calloc(1, sizeof *s);
  if (!s) return rill_oom();
  pthread_mutex_init(&s->push_lock, NULL);
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  char address[256], inproc[64];
  s->max_header = rill_rpc_config_max_header(cfg);
  rill_status *st = zmq_address(endpoint, true, address, sizeof address);
  if (!st) st = resolve_secret(cfg, &s->keys);
  if (!st && !(s->ctx = zmq_ctx_new()))
    st = rill_error(RILL_INTERNAL, "rpc: zmq_ctx_new failed: %s", zmq_strerror(errno));
  if (st) {
    rill_rpc_server_destroy(s);
    return st;
  }
  if (s->keys.on) {
    zmq_z85_decode(s->client_key, s->keys.client_public);
    s->zap = zmq_socket(s->ctx, ZMQ_REP);
    if (!s->zap || zmq_bind(s->zap, "inproc://zeromq.zap.01"))
      st = rill_error(RILL_INTERNAL, "rpc: cannot start the authentication handler: %s",
                      zmq_strerror(errno));
  }
  snprintf(inproc, sizeof inproc, "inproc://rill-rpc-replies-%p", (void *)s);
  if (!st) {
    s->router = zmq_socket(s->ctx, ZMQ_ROUTER);
    s->pull = zmq_socket(s->ctx, ZMQ_PULL);
    s->push = zmq_socket(s->ctx, ZMQ_PUSH);
    if (!s->router || !s->pull || !s->push)
      st = rill_error(RILL_INTERNAL, "rpc: cannot open the server's sockets: %s",
                      zmq_strerror(errno));
  }
  if (!st) {
    set_common(s->router, cfg);
    int zero = 0, one = 1;
    zmq_setsockopt(s->pull, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s->push, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s->pull, ZMQ_RCVHWM, &zero, sizeof zero); /* no limit: never drop a reply */
    zmq_setsockopt(s->push, ZMQ_SNDHWM, &zero, sizeof zero);
    if (s->keys.on) {
      zmq_setsockopt(s->router, ZMQ_CURVE_SERVER, &one, sizeof one);
      zmq_setsockopt(s->router, ZMQ_CURVE_SECRETKEY, s->keys.server_secret, 41);
    }
    char mon[64];
    snprintf(mon, sizeof mon, "inproc://rill-rpc-monitor-%p", (void *)s);
    if (zmq_bind(s->pull, inproc) || zmq_connect(s->push, inproc))
      st = rill_error(RILL_INTERNAL, "rpc: cannot connect the reply channel: %s",
                      zmq_strerror(errno));
    else if (zmq_socket_monitor(s->router, mon, ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) ||
             !(s->monitor = zmq_socket(s->ctx, ZMQ_PAIR)) || zmq_connect(s->monitor, mon))
      st = rill_error(RILL_INTERNAL, "rpc: cannot watch the server's connections: %s",
                      zmq_strerror(errno));
    else if (zmq_bind(s->router, address))
      st = rill_error(RILL_UNAVAILABLE, "rpc: cannot bind %s: %s", endpoint, zmq_strerror(errno));
  }
  if (!st) {
    char last[256];
    size_t len = sizeof last;
    zmq_getsockopt(s->router, ZMQ_LAST_ENDPOINT, last, &len);
    const char *colon = strrchr(last, ':');
    s->port = colon ? atoi(colon + 1) : 0;
    const char *host = strstr(last, "://");
    host = host ? host + 3 : last;
    snprintf(s->endpoint, sizeof s->endpoint, "%s", host);
    /* The same-host socket, named after the address bound (a port picked by the
     * system included). Without it, clients on this machine use TCP as others do. */
    if (!strstr(endpoint, "://") && ipc_wanted(cfg) &&
        rill_rpc_ipc_path(s->endpoint, s->ipc, sizeof s->ipc) && zmq_bind(s->router, s->ipc))
      s->ipc[0] = 0;
    if (pthread_create(&s->thread, NULL, server_main, s))
      st = rill_error(RILL_INTERNAL, "rpc: cannot start the server thread");
    else
      s->started = true;
  }
  if (st) {
    rill_rpc_server_destroy(s);
    return st;
  }
  *out = s;
  return NULL;
}

rill_status *rill_rpc_server_next(rill_rpc_server *s, int64_t timeout_ms, rill_rpc_request **out) {
  *out = NULL;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  if (timeout_ms > 0) {
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (timeout_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
  }
  pthread_mutex_lock(&s->lock);
  while (!s->head && timeout_ms != 0) {
    int rc = timeout_ms < 0 ? pthread_cond_wait(&s->cond, &s->lock)
                            : pthread_cond_timedwait(&s->cond, &s->lock, &until);
    if (rc == ETIMEDOUT) break;
  }
  queued *q = s->head;
  if (q) {
    s->head = q->next;
    if (!s->head) s->tail = NULL;
  }
  pthread_mutex_unlock(&s->lock);
  if (q) {
    *out = q->req;
    rill_free(q);
  }
  return NULL;
}

/* Queues a reply's frames for the I/O thread: [route][env][extra...]. */
static rill_status *send_reply(rill_rpc_server *s, rill_rpc_request *req, int kind, uint32_t code,
                               rill_rpc_payload *p, const char *text) {
  if (req->replied)
    return rill_error(RILL_FAILED_PRECONDITION, "rpc: the %s of '%s' from %s was already answered",
                      kind_word((int)req->kind), req->meta.varname, req->peer);
  uint8_t env[ENV_SIZE];
  env_write(env, kind, code, req->id);
  zmq_msg_t route;
  zmq_msg_init(&route);
  zmq_msg_copy(&route, req->route);
  pthread_mutex_lock(&s->push_lock);
  int rc = zmq_msg_send(&route, s->push, ZMQ_SNDMORE) < 0 ? -1 : 0;
  bool tail = p || text;
  if (!rc) rc = send_bytes(s->push, env, sizeof env, tail ? ZMQ_SNDMORE : 0);
  if (!rc && p) rc = send_payload(s->push, p, true);
  if (!rc && text) rc = send_bytes(s->push, text, strlen(text), 0);
  pthread_mutex_unlock(&s->push_lock);
  if (rc) {
    zmq_msg_close(&route);
    return rill_error(RILL_INTERNAL, "rpc: cannot queue the reply to %s for '%s': %s", req->peer,
                      req->meta.varname, zmq_strerror(errno));
  }
  req->replied = true;
  return NULL;
}

void rill_rpc_server_set_tag(rill_rpc_server *s, uint32_t tag) { atomic_store(&s->tag, tag); }

uint32_t rill_rpc_client_tag(rill_rpc_client *c) { return atomic_load(&c->tag); }

rill_status *rill_rpc_server_reply_ok(rill_rpc_server *s, rill_rpc_request *req) {
  return send_reply(s, req, K_OK, atomic_load(&s->tag), NULL, NULL);
}

rill_status *rill_rpc_server_reply_var(rill_rpc_server *s, rill_rpc_request *req,
                                       const rill_variable *var) {
  if (req->replied) return send_reply(s, req, K_VAR, 0, NULL, NULL);
  uint32_t tag = atomic_load(&s->tag);
  if (!var)
    return rill_error(RILL_INVALID_ARGUMENT, "rpc: no variable to answer the get of '%s' from %s",
                      req->meta.varname, req->peer);
  rill_rpc_payload p;
  RILL_TRY(rill_rpc_encode(req->meta.varname, var, req->meta.out_varname, req->meta.trainer_id,
                           &p));
  if ((int64_t)p.header_len > s->max_header) {
    size_t len = p.header_len;
    rill_rpc_payload_clear(&p);
    return header_too_big("reply with", req->meta.varname, len, s->max_header);
  }
  rill_status *st = send_reply(s, req, K_VAR, tag, &p, NULL);
  rill_rpc_payload_clear(&p);
  return st;
}

rill_status *rill_rpc_server_reply_error(rill_rpc_server *s, rill_rpc_request *req,
                                         const rill_status *error) {
  rill_code code = rill_status_code(error);
  if (code == RILL_OK) code = RILL_INTERNAL;
  const char *text = error ? rill_status_message(error) : "error";
  return send_reply(s, req, K_ERROR, (uint32_t)code, NULL, text ? text : "error");
}

void rill_rpc_request_destroy(rill_rpc_request *req) {
  if (!req) return;
  rill_rpc_meta_clear(&req->meta);
  rill_variable_clear(&req->var);
  if (req->route) {
    zmq_msg_close(req->route);
    free(req->route);
  }
  rill_free(req);
}
