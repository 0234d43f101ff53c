#include "framework/coord/coord.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/base/status.h"
#include "framework/coord/etcd.h"

#define COORD_MAX_REGISTRATIONS 8
#define COORD_DEFAULT_TTL_S 10
#define COORD_DEFAULT_TIMEOUT_MS 5000
#define COORD_POLL_MS 100

typedef struct registration {
  char key[512];
  char value[256];
} registration;

static pthread_mutex_t coord_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  bool ready;  /* the environment was read */
  pid_t owner; /* the process that read it: a forked child starts again */
  rill_etcd *client;
  char prefix[160]; /* "/rill/<job>/" */
  int64_t ttl_s;
  int64_t lease;
  registration regs[COORD_MAX_REGISTRATIONS];
  size_t nregs;
} coord;

static int64_t env_i64(const char *name, int64_t fallback, int64_t low) {
  const char *v = getenv(name);
  if (!v || !*v) return fallback;
  char *end = NULL;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || *end || x < low) return -1;
  return x;
}

/* Reads the environment once per process; *on false without RILL_ETCD_ENDPOINTS. */
static rill_status *coord_ready(bool *on) {
  if (coord.ready && coord.owner != getpid()) {
    /* A forked child: the parent's keepalive thread did not come along and the lease is
     * the parent's. Its memory is left alone (the parent owns the same objects). */
    memset(&coord, 0, sizeof coord);
  }
  if (!coord.ready) {
    const char *eps = getenv("RILL_ETCD_ENDPOINTS");
    if (eps && *eps) {
      const char *job = getenv("RILL_JOB");
      if (!job || !*job) job = "default";
      if (strchr(job, '/') || strlen(job) > 128)
        return rill_error(RILL_INVALID_ARGUMENT,
                          "RILL_JOB='%s': expected a name of at most 128 bytes without '/'", job);
      int64_t ttl = env_i64("RILL_ETCD_TTL", COORD_DEFAULT_TTL_S, 1);
      if (ttl < 1)
        return rill_error(RILL_INVALID_ARGUMENT, "RILL_ETCD_TTL='%s': expected seconds >= 1",
                          getenv("RILL_ETCD_TTL"));
      int64_t timeout = env_i64("RILL_ETCD_TIMEOUT_MS", COORD_DEFAULT_TIMEOUT_MS, 1);
      if (timeout < 1)
        return rill_error(RILL_INVALID_ARGUMENT,
                          "RILL_ETCD_TIMEOUT_MS='%s': expected milliseconds >= 1",
                          getenv("RILL_ETCD_TIMEOUT_MS"));
      RILL_TRY(rill_status_wrap(rill_etcd_create(eps, timeout, &coord.client),
                                "RILL_ETCD_ENDPOINTS"));
      snprintf(coord.prefix, sizeof coord.prefix, "/rill/%s/", job);
      coord.ttl_s = ttl;
    }
    coord.ready = true;
    coord.owner = getpid();
  }
  *on = coord.client != NULL;
  return NULL;
}

/* This process's lease, granted (again, when the last one expired) on demand. */
static rill_status *coord_lease(void) {
  if (coord.lease && !rill_etcd_keepalive_lost(coord.client)) return NULL;
  rill_etcd_keepalive_stop(coord.client);
  coord.lease = 0;
  int64_t lease = 0;
  RILL_TRY(rill_etcd_lease_grant(coord.client, coord.ttl_s, &lease));
  int64_t period = coord.ttl_s * 1000 / 3;
  rill_status *st = rill_etcd_keepalive_start(coord.client, lease, period > 0 ? period : 1);
  if (st) {
    rill_status_destroy(rill_etcd_lease_revoke(coord.client, lease));
    return st;
  }
  coord.lease = lease;
  for (size_t i = 0; i < coord.nregs; i++)
    RILL_TRY(rill_etcd_put(coord.client, coord.regs[i].key, coord.regs[i].value,
                           strlen(coord.regs[i].value), lease));
  return NULL;
}

bool rill_coord_enabled(void) {
  pthread_mutex_lock(&coord_mu);
  bool on = false;
  rill_status_destroy(coord_ready(&on));
  pthread_mutex_unlock(&coord_mu);
  return on;
}

static bool valid_role(const char *role) {
  if (!role || !*role || strlen(role) > 32) return false;
  for (const char *p = role; *p; p++)
    if (*p < 'a' || *p > 'z') return false;
  return true;
}

static rill_status *do_register(const char *role, int32_t rank, const char *endpoint) {
  bool on;
  RILL_TRY(coord_ready(&on));
  if (!on) return NULL;
  if (!valid_role(role))
    return rill_error(RILL_INVALID_ARGUMENT, "coord register: role '%s' is not a lowercase word",
                      role ? role : "(null)");
  if (rank < 0 && (!endpoint || !*endpoint))
    return rill_error(RILL_INVALID_ARGUMENT,
                      "coord register %s: needs a rank >= 0 or an endpoint", role);
  if (endpoint && (strlen(endpoint) >= sizeof coord.regs[0].value || strchr(endpoint, '/')))
    return rill_error(RILL_INVALID_ARGUMENT, "coord register %s %d: endpoint '%s' is not host:port",
                      role, rank, endpoint);
  registration r;
  int n = rank >= 0 ? snprintf(r.key, sizeof r.key, "%s%ss/%06" PRId32, coord.prefix, role, rank)
                    : snprintf(r.key, sizeof r.key, "%s%ss/%s", coord.prefix, role, endpoint);
  if (n < 0 || (size_t)n >= sizeof r.key)
    return rill_error(RILL_INVALID_ARGUMENT, "coord register %s %d: the key is too long", role,
                      rank);
  if (endpoint && *endpoint)
    snprintf(r.value, sizeof r.value, "%s", endpoint);
  else
    snprintf(r.value, sizeof r.value, "pid %ld", (long)getpid());
  RILL_TRY(coord_lease());
  RILL_TRY(rill_etcd_put(coord.client, r.key, r.value, strlen(r.value), coord.lease));
  for (size_t i = 0; i < coord.nregs; i++) {
    if (strcmp(coord.regs[i].key, r.key) == 0) {
      coord.regs[i] = r;
      return NULL;
    }
  }
  if (coord.nregs < COORD_MAX_REGISTRATIONS) coord.regs[coord.nregs++] = r;
  return NULL;
}

rill_status *rill_coord_register(const char *role, int32_t rank, const char *endpoint) {
  pthread_mutex_lock(&coord_mu);
  rill_status *st = do_register(role, rank, endpoint);
  pthread_mutex_unlock(&coord_mu);
  return st;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The values of the first `count` entries joined by ','; NULL when out of memory. */
static char *join_values(const rill_etcd_kv *kvs, size_t count) {
  size_t len = 1;
  for (size_t i = 0; i < count; i++) len += kvs[i].value_len + 1;
  char *out = rill_malloc(len), *p = out;
  if (!out) return NULL;
  for (size_t i = 0; i < count; i++) {
    if (i) *p++ = ',';
    memcpy(p, kvs[i].value, kvs[i].value_len);
    p += kvs[i].value_len;
  }
  *p = '\0';
  return out;
}

rill_status *rill_coord_wait_pservers(int32_t count, int64_t timeout_ms, char **endpoints) {
  if (count < 1 || !endpoints)
    return rill_error(RILL_INVALID_ARGUMENT, "coord wait for pservers: count %d (expected >= 1)",
                      count);
  pthread_mutex_lock(&coord_mu);
  bool on = false;
  rill_status *st = coord_ready(&on);
  char key[200] = "";
  rill_etcd *client = coord.client;
  if (!st && !on)
    st = rill_error(RILL_FAILED_PRECONDITION,
                    "coord wait for %d pservers: RILL_ETCD_ENDPOINTS is not set", count);
  if (!st) snprintf(key, sizeof key, "%spservers/", coord.prefix);
  pthread_mutex_unlock(&coord_mu);
  if (st) return st;
  /* Polls without the lock: the client is thread-safe, and another thread may register
   * meanwhile. The client lives until rill_coord_shutdown, which must not race this. */
  int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  rill_status *last = NULL;
  size_t seen = 0;
  char *seen_list = NULL;
  for (;;) {
    rill_etcd_kv *kvs = NULL;
    size_t n = 0;
    rill_status *e = rill_etcd_get(client, key, true, false, &kvs, &n);
    if (!e && n >= (size_t)count) {
      char *joined = join_values(kvs, (size_t)count);
      rill_etcd_kvs_free(kvs, n);
      rill_status_destroy(last);
      rill_free(seen_list);
      if (!joined) return rill_oom();
      *endpoints = joined;
      return NULL;
    }
    if (e) {
      rill_status_destroy(last);
      last = e;
    } else {
      seen = n;
      rill_free(seen_list);
      seen_list = join_values(kvs, n);
    }
    rill_etcd_kvs_free(kvs, n);
    int64_t left = deadline - now_ms();
    if (left <= 0) break;
    struct timespec ts = {0, (long)(left < COORD_POLL_MS ? left : COORD_POLL_MS) * 1000000L};
    nanosleep(&ts, NULL);
  }
  st = rill_error(RILL_DEADLINE_EXCEEDED,
                  "etcd %s: waited %" PRId64 " ms for %d pserver(s) under %s: %zu published (%s)%s%s",
                  rill_etcd_endpoint(client), timeout_ms, count, key, seen,
                  seen_list ? seen_list : "", last ? "; last error: " : "",
                  last ? rill_status_message(last) : "");
  rill_status_destroy(last);
  rill_free(seen_list);
  return st;
}

static rill_status *do_elect(int32_t trainer_id, bool *is_saver) {
  bool on;
  RILL_TRY(coord_ready(&on));
  if (!on) {
    *is_saver = trainer_id == 0;
    return NULL;
  }
  RILL_TRY(coord_lease());
  char key[200], value[64];
  snprintf(key, sizeof key, "%ssaver", coord.prefix);
  snprintf(value, sizeof value, "trainer %" PRId32, trainer_id);
  bool created = false;
  rill_etcd_kv *holder = NULL;
  RILL_TRY(rill_etcd_create_if_absent(coord.client, key, value, strlen(value), coord.lease,
                                      &created, &holder));
  *is_saver = holder->lease == coord.lease;
  rill_etcd_kvs_free(holder, 1);
  return NULL;
}

rill_status *rill_coord_elect_saver(int32_t trainer_id, bool *is_saver) {
  if (!is_saver) return rill_error(RILL_INVALID_ARGUMENT, "coord elect saver: NULL is_saver");
  pthread_mutex_lock(&coord_mu);
  rill_status *st = do_elect(trainer_id, is_saver);
  pthread_mutex_unlock(&coord_mu);
  return st;
}

rill_status *rill_coord_note_snapshot(int64_t step) {
  if (step < 0)
    return rill_error(RILL_INVALID_ARGUMENT, "coord note snapshot: step %" PRId64 " < 0", step);
  pthread_mutex_lock(&coord_mu);
  bool on = false;
  rill_status *st = coord_ready(&on);
  if (!st && on) {
    char key[200], value[32];
    snprintf(key, sizeof key, "%ssnapshots/%" PRId64, coord.prefix, step);
    snprintf(value, sizeof value, "%" PRId64, step);
    st = rill_etcd_put(coord.client, key, value, strlen(value), 0);
  }
  pthread_mutex_unlock(&coord_mu);
  return st;
}

bool rill_coord_snapshot_step(const char *key, const char *prefix, int64_t *step) {
  size_t n = strlen(prefix);
  if (strncmp(key, prefix, n) != 0) return false;
  const char *d = key + n;
  size_t len = strlen(d);
  if (len == 0 || len > 18) return false;
  int64_t v = 0;
  for (const char *p = d; *p; p++) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + (*p - '0');
  }
  *step = v;
  return true;
}

rill_status *rill_coord_newest_snapshot(int64_t *step) {
  if (!step) return rill_error(RILL_INVALID_ARGUMENT, "coord newest snapshot: NULL step");
  pthread_mutex_lock(&coord_mu);
  bool on = false;
  rill_status *st = coord_ready(&on);
  int64_t best = -1;
  if (!st && on) {
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%ssnapshots/", coord.prefix);
    rill_etcd_kv *kvs = NULL;
    size_t n = 0;
    st = rill_etcd_get(coord.client, prefix, true, true, &kvs, &n);
    for (size_t i = 0; !st && i < n; i++) {
      int64_t s;
      if (rill_coord_snapshot_step(kvs[i].key, prefix, &s) && s > best) best = s;
    }
    rill_etcd_kvs_free(kvs, n);
  }
  pthread_mutex_unlock(&coord_mu);
  if (!st) *step = best;
  return st;
}

void rill_coord_shutdown(void) {
  pthread_mutex_lock(&coord_mu);
  if (coord.ready && coord.owner == getpid() && coord.client) {
    rill_etcd_keepalive_stop(coord.client);
    if (coord.lease) rill_status_destroy(rill_etcd_lease_revoke(coord.client, coord.lease));
    rill_etcd_destroy(coord.client);
  }
  memset(&coord, 0, sizeof coord);
  pthread_mutex_unlock(&coord_mu);
}
