#include "framework/coord/etcd.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "framework/base/alloc.h"
#include "framework/base/status.h"

/* A response body larger than this is refused: rill's keys hold endpoints and steps. */
#define RILL_ETCD_MAX_BODY ((size_t)64 << 20)
#define RILL_ETCD_MAX_ENDPOINTS 16

struct rill_etcd {
  char *endpoints[RILL_ETCD_MAX_ENDPOINTS];
  size_t nendpoints;
  int64_t timeout_ms;
  /* keepalive thread */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  bool running, stopping;
  int64_t ka_lease, ka_period_ms;
  atomic_bool lost;
};

/* ---------------------------------------------------------------- base64 ---- */

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *rill_base64_encode(const void *data, size_t len) {
  const unsigned char *in = data;
  size_t groups = (len + 2) / 3, n;
  if (!rill_mul_size(groups, 4, &n) || !rill_add_size(n, 1, &n)) return NULL;
  char *out = rill_malloc(n);
  if (!out) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < len; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16;
    if (i + 1 < len) v |= (uint32_t)in[i + 1] << 8;
    if (i + 2 < len) v |= in[i + 2];
    out[o++] = b64_alphabet[(v >> 18) & 63];
    out[o++] = b64_alphabet[(v >> 12) & 63];
    out[o++] = i + 1 < len ? b64_alphabet[(v >> 6) & 63] : '=';
    out[o++] = i + 2 < len ? b64_alphabet[v & 63] : '=';
  }
  out[o] = '\0';
  return out;
}

static int b64_value(char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+') return 62;
  if (ch == '/') return 63;
  return -1;
}

char *rill_base64_decode(const char *text, size_t *len) {
  size_t n = strlen(text);
  if (n % 4) return NULL;
  char *out = rill_malloc(n / 4 * 3 + 1);
  if (!out) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n; i += 4) {
    int v[4], pad = 0;
    for (int k = 0; k < 4; k++) {
      char ch = text[i + k];
      if (ch == '=' && i + 4 == n && k >= 2) {
        v[k] = 0;
        pad++;
      } else if (pad || (v[k] = b64_value(ch)) < 0) {
        rill_free(out);
        return NULL;
      }
    }
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
    out[o++] = (char)(w >> 16);
    if (pad < 2) out[o++] = (char)(w >> 8);
    if (pad < 1) out[o++] = (char)w;
  }
  out[o] = '\0';
  *len = o;
  return out;
}

/* ---------------------------------------------------------------- client ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result = CURLE_OK;

static void curl_init(void) { curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT); }

static bool valid_endpoint(const char *ep) {
  if (strncmp(ep, "http://", 7) != 0) return false;
  const char *hostport = ep + 7;
  const char *colon = strrchr(hostport, ':');
  if (!colon || colon == hostport) return false;
  char *end = NULL;
  errno = 0;
  long port = strtol(colon + 1, &end, 10);
  if (errno || end == colon + 1 || (*end != '\0' && strcmp(end, "/") != 0)) return false;
  return port > 0 && port < 65536;
}

rill_status *rill_etcd_create(const char *endpoints, int64_t timeout_ms, rill_etcd **out) {
  if (!endpoints || !out) return rill_error(RILL_INVALID_ARGUMENT, "etcd: NULL argument");
  if (timeout_ms <= 0)
    return rill_error(RILL_INVALID_ARGUMENT, "etcd %s: timeout %" PRId64 " ms is not positive",
                      endpoints, timeout_ms);
  pthread_once(&curl_once, curl_init);
  if (curl_init_result != CURLE_OK)
    return rill_error(RILL_INTERNAL, "etcd %s: libcurl did not initialize: %s", endpoints,
                      curl_easy_strerror(curl_init_result));
  rill_etcd *c = rill_calloc(1, sizeof *c);
  if (!c) return rill_oom();
  c->timeout_ms = timeout_ms;
  const char *p = endpoints;
  rill_status *st = NULL;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    while (n && (*p == ' ' || *p == '\t')) p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
    if (n) {
      if (c->nendpoints == RILL_ETCD_MAX_ENDPOINTS) {
        st = rill_error(RILL_INVALID_ARGUMENT, "etcd endpoints '%s': more than %d", endpoints,
                        RILL_ETCD_MAX_ENDPOINTS);
        break;
      }
      char *ep = rill_strndup(p, n);
      if (!ep) {
        st = rill_oom();
        break;
      }
      c->endpoints[c->nendpoints++] = ep;
      if (!valid_endpoint(ep)) {
        st = rill_error(RILL_INVALID_ARGUMENT,
                        "etcd endpoints '%s': '%s' is not http://host:port", endpoints, ep);
        break;
      }
      size_t len = strlen(ep);
      if (ep[len - 1] == '/') ep[len - 1] = '\0';
    }
    if (!comma) break;
    p = comma + 1;
  }
  if (!st && c->nendpoints == 0)
    st = rill_error(RILL_INVALID_ARGUMENT, "etcd endpoints '%s': none given", endpoints);
  if (st) {
    for (size_t i = 0; i < c->nendpoints; i++) rill_free(c->endpoints[i]);
    rill_free(c);
    return st;
  }
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &attr);
  pthread_condattr_destroy(&attr);
  atomic_init(&c->lost, false);
  *out = c;
  return NULL;
}

void rill_etcd_destroy(rill_etcd *c) {
  if (!c) return;
  rill_etcd_keepalive_stop(c);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  for (size_t i = 0; i < c->nendpoints; i++) rill_free(c->endpoints[i]);
  rill_free(c);
}

const char *rill_etcd_endpoint(const rill_etcd *c) { return c ? c->endpoints[0] : "(none)"; }

typedef struct body {
  char *data;
  size_t len, cap;
  bool too_big;
} body;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg) {
  body *b = arg;
  size_t n = size * nmemb;
  if (b->len + n + 1 > RILL_ETCD_MAX_BODY) {
    b->too_big = true;
    return 0;
  }
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + n + 1) cap *= 2;
    char *d = rill_realloc(b->data, cap);
    if (!d) return 0;
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, ptr, n);
  b->len += n;
  b->data[b->len] = '\0';
  return n;
}

/* POSTs `req` to path on the first endpoint that answers; *resp gets the parsed body of
 * a 200 reply. `what` ("put /rill/job/saver") names the call in errors. */
static rill_status *call(rill_etcd *c, const char *path, json_object *req, const char *what,
                         json_object **resp) {
  const char *text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
  if (!text) return rill_oom();
  rill_status *st = NULL;
  for (size_t i = 0; i < c->nendpoints; i++) {
    const char *ep = c->endpoints[i];
    rill_status_destroy(st);
    st = NULL;
    char url[512];
    snprintf(url, sizeof url, "%s%s", ep, path);
    CURL *h = curl_easy_init();
    if (!h) return rill_oom();
    body b = {0};
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
    CURLcode rc = curl_easy_perform(h);
    long http = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http);
    curl_easy_cleanup(h);
    curl_slist_free_all(headers);
    if (rc != CURLE_OK) {
      const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
      if (b.too_big)
        st = rill_error(RILL_INTERNAL, "etcd %s: %s: reply larger than %zu bytes", ep, what,
                        RILL_ETCD_MAX_BODY);
      else if (rc == CURLE_OPERATION_TIMEDOUT)
        st = rill_error(RILL_DEADLINE_EXCEEDED, "etcd %s: %s: no answer within %" PRId64 " ms (%s)",
                        ep, what, c->timeout_ms, why);
      else
        st = rill_error(RILL_UNAVAILABLE, "etcd %s: %s: cannot reach the server (%s)", ep, what,
                        why);
      rill_free(b.data);
      continue; /* the next endpoint may answer */
    }
    json_object *j = b.data ? json_tokener_parse(b.data) : NULL;
    if (!j || !json_object_is_type(j, json_type_object)) {
      st = rill_error(RILL_INTERNAL, "etcd %s: %s: HTTP %ld with a reply that is not a JSON object",
                      ep, what, http);
      json_object_put(j);
      rill_free(b.data);
      return st;
    }
    rill_free(b.data);
    if (http != 200) {
      json_object *m = NULL, *code = NULL;
      const char *msg = "(no message)";
      if (json_object_object_get_ex(j, "message", &m) || json_object_object_get_ex(j, "error", &m))
        msg = json_object_get_string(m);
      int grpc = json_object_object_get_ex(j, "code", &code) ? json_object_get_int(code) : -1;
      /* gRPC's NotFound is 5 (a lease that is unknown or expired). */
      st = rill_error(grpc == 5 ? RILL_NOT_FOUND : RILL_INTERNAL, "etcd %s: %s: HTTP %ld: %s", ep,
                      what, http, msg);
      json_object_put(j);
      return st;
    }
    *resp = j;
    return NULL;
  }
  return st;
}

static int64_t get_i64(json_object *o, const char *name) {
  json_object *v;
  if (!o || !json_object_object_get_ex(o, name, &v)) return 0;
  if (json_object_is_type(v, json_type_string)) return strtoll(json_object_get_string(v), NULL, 10);
  return json_object_get_int64(v);
}

static json_object *i64_string(int64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%" PRId64, v);
  return json_object_new_string(buf);
}

/* Adds name = base64(data) to o; false when out of memory. */
static bool add_b64(json_object *o, const char *name, const void *data, size_t len) {
  char *enc = rill_base64_encode(data, len);
  if (!enc) return false;
  json_object_object_add(o, name, json_object_new_string(enc));
  rill_free(enc);
  return true;
}

/* The end of the range of keys starting with `key`: the prefix with its last byte that
 * is not 0xff incremented ("\0" for all keys when every byte is 0xff). */
static size_t prefix_end(const char *key, char *out, size_t cap) {
  size_t n = strlen(key);
  if (n >= cap) n = cap - 1;
  memcpy(out, key, n);
  while (n > 0) {
    unsigned char last = (unsigned char)out[n - 1];
    if (last < 0xff) {
      out[n - 1] = (char)(last + 1);
      return n;
    }
    n--;
  }
  out[0] = '\0';
  return 1;
}

rill_status *rill_etcd_lease_grant(rill_etcd *c, int64_t ttl_s, int64_t *lease) {
  if (ttl_s <= 0)
    return rill_error(RILL_INVALID_ARGUMENT, "etcd %s: lease TTL %" PRId64 " s is not positive",
                      rill_etcd_endpoint(c), ttl_s);
  json_object *req = json_object_new_object(), *resp = NULL;
  if (!req) return rill_oom();
  json_object_object_add(req, "TTL", i64_string(ttl_s));
  rill_status *st = call(c, "/v3/lease/grant", req, "lease grant", &resp);
  json_object_put(req);
  if (st) return st;
  int64_t id = get_i64(resp, "ID");
  json_object_put(resp);
  if (id == 0)
    return rill_error(RILL_INTERNAL, "etcd %s: lease grant: the reply has no lease ID",
                      rill_etcd_endpoint(c));
  *lease = id;
  return NULL;
}

rill_status *rill_etcd_lease_keepalive(rill_etcd *c, int64_t lease) {
  char what[64];
  snprintf(what, sizeof what, "keepalive of lease %" PRId64, lease);
  json_object *req = json_object_new_object(), *resp = NULL;
  if (!req) return rill_oom();
  json_object_object_add(req, "ID", i64_string(lease));
  rill_status *st = call(c, "/v3/lease/keepalive", req, what, &resp);
  json_object_put(req);
  if (st) return st;
  json_object *result = NULL;
  json_object_object_get_ex(resp, "result", &result);
  int64_t ttl = get_i64(result, "TTL");
  json_object_put(resp);
  if (ttl <= 0)
    return rill_error(RILL_NOT_FOUND, "etcd %s: %s: the lease has expired", rill_etcd_endpoint(c),
                      what);
  return NULL;
}

rill_status *rill_etcd_lease_revoke(rill_etcd *c, int64_t lease) {
  char what[64];
  snprintf(what, sizeof what, "revoke of lease %" PRId64, lease);
  json_object *req = json_object_new_object(), *resp = NULL;
  if (!req) return rill_oom();
  json_object_object_add(req, "ID", i64_string(lease));
  rill_status *st = call(c, "/v3/lease/revoke", req, what, &resp);
  json_object_put(req);
  json_object_put(resp);
  return st;
}

static void deadline_after(struct timespec *ts, int64_t ms) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

static void *keepalive_main(void *arg) {
  rill_etcd *c = arg;
  pthread_mutex_lock(&c->mu);
  while (!c->stopping) {
    struct timespec ts;
    deadline_after(&ts, c->ka_period_ms);
    while (!c->stopping && pthread_cond_timedwait(&c->cv, &c->mu, &ts) != ETIMEDOUT) {
    }
    if (c->stopping) break;
    int64_t lease = c->ka_lease;
    pthread_mutex_unlock(&c->mu);
    rill_status *st = rill_etcd_lease_keepalive(c, lease);
    bool gone = rill_status_code(st) == RILL_NOT_FOUND;
    rill_status_destroy(st); /* other failures: try again next period */
    pthread_mutex_lock(&c->mu);
    if (gone) {
      atomic_store(&c->lost, true);
      break;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

rill_status *rill_etcd_keepalive_start(rill_etcd *c, int64_t lease, int64_t period_ms) {
  if (period_ms <= 0)
    return rill_error(RILL_INVALID_ARGUMENT, "etcd %s: keepalive period %" PRId64 " ms",
                      rill_etcd_endpoint(c), period_ms);
  pthread_mutex_lock(&c->mu);
  if (c->running) {
    pthread_mutex_unlock(&c->mu);
    return rill_error(RILL_FAILED_PRECONDITION, "etcd %s: a keepalive thread runs already",
                      rill_etcd_endpoint(c));
  }
  c->ka_lease = lease;
  c->ka_period_ms = period_ms;
  c->stopping = false;
  atomic_store(&c->lost, false);
  int rc = pthread_create(&c->thread, NULL, keepalive_main, c);
  if (rc == 0) c->running = true;
  pthread_mutex_unlock(&c->mu);
  if (rc != 0)
    return rill_error(RILL_INTERNAL, "etcd %s: cannot start the keepalive thread: %s",
                      rill_etcd_endpoint(c), strerror(rc));
  return NULL;
}

void rill_etcd_keepalive_stop(rill_etcd *c) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  if (!c->running) {
    pthread_mutex_unlock(&c->mu);
    return;
  }
  c->stopping = true;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  pthread_join(c->thread, NULL);
  pthread_mutex_lock(&c->mu);
  c->running = false;
  pthread_mutex_unlock(&c->mu);
}

bool rill_etcd_keepalive_lost(rill_etcd *c) { return c && atomic_load(&c->lost); }

rill_status *rill_etcd_put(rill_etcd *c, const char *key, const void *value, size_t len,
                           int64_t lease) {
  json_object *req = json_object_new_object(), *resp = NULL;
  if (!req) return rill_oom();
  if (!add_b64(req, "key", key, strlen(key)) || !add_b64(req, "value", value, len)) {
    json_object_put(req);
    return rill_oom();
  }
  if (lease) json_object_object_add(req, "lease", i64_string(lease));
  char what[320];
  snprintf(what, sizeof what, "put %s", key);
  rill_status *st = call(c, "/v3/kv/put", req, what, &resp);
  json_object_put(req);
  json_object_put(resp);
  return st;
}

void rill_etcd_kvs_free(rill_etcd_kv *kvs, size_t count) {
  if (!kvs) return;
  for (size_t i = 0; i < count; i++) {
    rill_free(kvs[i].key);
    rill_free(kvs[i].value);
  }
  rill_free(kvs);
}

/* The "kvs" array of a range reply -> rill_etcd_kv[]. */
static rill_status *read_kvs(rill_etcd *c, json_object *range, const char *what,
                             rill_etcd_kv **out, size_t *count) {
  json_object *arr = NULL;
  *out = NULL;
  *count = 0;
  if (!json_object_object_get_ex(range, "kvs", &arr) || !json_object_is_type(arr, json_type_array))
    return NULL;
  size_t n = json_object_array_length(arr);
  if (n == 0) return NULL;
  rill_etcd_kv *kvs = rill_calloc(n, sizeof *kvs);
  if (!kvs) return rill_oom();
  for (size_t i = 0; i < n; i++) {
    json_object *kv = json_object_array_get_idx(arr, i), *k = NULL, *v = NULL;
    size_t klen = 0;
    kvs[i].value_len = 0;
    if (!json_object_object_get_ex(kv, "key", &k) ||
        !(kvs[i].key = rill_base64_decode(json_object_get_string(k), &klen))) {
      rill_etcd_kvs_free(kvs, n);
      return rill_error(RILL_INTERNAL, "etcd %s: %s: entry %zu has no base64 key",
                        rill_etcd_endpoint(c), what, i);
    }
    const char *vtext = json_object_object_get_ex(kv, "value", &v) ? json_object_get_string(v) : "";
    if (!(kvs[i].value = rill_base64_decode(vtext, &kvs[i].value_len))) {
      rill_etcd_kvs_free(kvs, n);
      return rill_error(RILL_INTERNAL, "etcd %s: %s: the value of %s is not base64",
                        rill_etcd_endpoint(c), what, kvs[i].key);
    }
    kvs[i].lease = get_i64(kv, "lease");
    kvs[i].create_revision = get_i64(kv, "create_revision");
    kvs[i].mod_revision = get_i64(kv, "mod_revision");
  }
  *out = kvs;
  *count = n;
  return NULL;
}

/* Sets key (and range_end for a prefix) of a range or delete request. */
static bool add_range(json_object *req, const char *key, bool prefix) {
  if (!add_b64(req, "key", key, strlen(key))) return false;
  if (!prefix) return true;
  char end[512];
  size_t n = prefix_end(key, end, sizeof end);
  return add_b64(req, "range_end", end, n);
}

rill_status *rill_etcd_get(rill_etcd *c, const char *key, bool prefix, bool keys_only,
                           rill_etcd_kv **kvs, size_t *count) {
  json_object *req = json_object_new_object(), *resp = NULL;
  if (!req) return rill_oom();
  if (!add_range(req, key, prefix)) {
    json_object_put(req);
    return rill_oom();
  }
  if (keys_only) json_object_object_add(req, "keys_only", json_object_new_boolean(1));
  char what[320];
  snprintf(what, sizeof what, "get %s%s", key, prefix ? "*" : "");
  rill_status *st = call(c, "/v3/kv/range", req, what, &resp);
  json_object_put(req);
  if (st) return st;
  st = read_kvs(c, resp, what, kvs, count);
  json_object_put(resp);
  return st;
}

rill_status *rill_etcd_delete(rill_etcd *c, const char *key, bool prefix, int64_t *deleted) {
  json_object *req = json_object_new_object(), *resp = NULL;
  if (!req) return rill_oom();
  if (!add_range(req, key, prefix)) {
    json_object_put(req);
    return rill_oom();
  }
  char what[320];
  snprintf(what, sizeof what, "delete %s%s", key, prefix ? "*" : "");
  rill_status *st = call(c, "/v3/kv/deleterange", req, what, &resp);
  json_object_put(req);
  if (st) return st;
  if (deleted) *deleted = get_i64(resp, "deleted");
  json_object_put(resp);
  return NULL;
}

rill_status *rill_etcd_create_if_absent(rill_etcd *c, const char *key, const void *value,
                                        size_t len, int64_t lease, bool *created,
                                        rill_etcd_kv **holder) {
  json_object *req = json_object_new_object(), *resp = NULL;
  json_object *cmp = json_object_new_object(), *put = json_object_new_object();
  json_object *get = json_object_new_object();
  if (!req || !cmp || !put || !get) goto oom;
  if (!add_b64(cmp, "key", key, strlen(key))) goto oom;
  json_object_object_add(cmp, "target", json_object_new_string("CREATE"));
  json_object_object_add(cmp, "result", json_object_new_string("EQUAL"));
  json_object_object_add(cmp, "create_revision", json_object_new_string("0"));
  if (!add_b64(put, "key", key, strlen(key)) || !add_b64(put, "value", value, len)) goto oom;
  if (lease) json_object_object_add(put, "lease", i64_string(lease));
  if (!add_b64(get, "key", key, strlen(key))) goto oom;
  json_object *compare = json_object_new_array(), *success = json_object_new_array();
  json_object *failure = json_object_new_array(), *op_put = json_object_new_object();
  json_object *op_get = json_object_new_object(), *op_get2 = json_object_new_object();
  json_object *get2 = json_object_get(get);
  json_object_array_add(compare, cmp);
  json_object_object_add(op_put, "request_put", put);
  json_object_object_add(op_get, "request_range", get);
  json_object_object_add(op_get2, "request_range", get2);
  json_object_array_add(success, op_put);
  json_object_array_add(success, op_get2); /* the new key, with its revisions */
  json_object_array_add(failure, op_get);
  json_object_object_add(req, "compare", compare);
  json_object_object_add(req, "success", success);
  json_object_object_add(req, "failure", failure);
  char what[320];
  snprintf(what, sizeof what, "create-if-absent %s", key);
  rill_status *st = call(c, "/v3/kv/txn", req, what, &resp);
  json_object_put(req);
  if (st) return st;
  json_object *ok = NULL, *responses = NULL;
  bool won = json_object_object_get_ex(resp, "succeeded", &ok) && json_object_get_boolean(ok);
  rill_etcd_kv *kvs = NULL;
  size_t n = 0;
  if (json_object_object_get_ex(resp, "responses", &responses) &&
      json_object_is_type(responses, json_type_array)) {
    size_t nr = json_object_array_length(responses);
    json_object *range = NULL;
    if (nr > 0 &&
        json_object_object_get_ex(json_object_array_get_idx(responses, nr - 1), "response_range",
                                  &range))
      st = read_kvs(c, range, what, &kvs, &n);
  }
  json_object_put(resp);
  if (st) return st;
  if (holder && n != 1) {
    rill_etcd_kvs_free(kvs, n);
    /* none: the holder's lease expired between the compare and the read */
    return rill_error(n ? RILL_INTERNAL : RILL_UNAVAILABLE,
                      "etcd %s: %s: %zu entries read back for the key", rill_etcd_endpoint(c),
                      what, n);
  }
  *created = won;
  if (holder)
    *holder = kvs;
  else
    rill_etcd_kvs_free(kvs, n);
  return NULL;
oom:
  json_object_put(req);
  json_object_put(cmp);
  json_object_put(put);
  json_object_put(get);
  return rill_oom();
}
