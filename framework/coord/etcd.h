/* A small etcd v3 client over the JSON gateway (HTTP POST /v3/..., libcurl and json-c),
 * enough for rill's coordination (doc/design/distributed.md, "Coordination through
 * etcd"): leases with a keepalive thread, put, get (one key or a prefix), delete, and
 * the transaction "create if absent".
 *
 * Keys and values are bytes; the gateway carries them base64-encoded and 64-bit
 * numbers as JSON strings. Every call is bounded by the client's timeout and tries the
 * endpoints in order until one answers; errors name the endpoint and the key:
 * UNAVAILABLE when no endpoint could be reached, DEADLINE_EXCEEDED when one did not
 * answer in time, NOT_FOUND for an unknown or expired lease, INTERNAL for any other
 * error the server reports. One client may be used from several threads at once. */
#ifndef RILL_FRAMEWORK_COORD_ETCD_H
#define RILL_FRAMEWORK_COORD_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rill.h"

typedef struct rill_etcd rill_etcd;

/* endpoints: "http://host:port[,http://host:port...]"; timeout_ms > 0 bounds each call
 * (connecting included). INVALID_ARGUMENT for an empty list or an endpoint that is not
 * http://host:port. Nothing is contacted yet. */
rill_status *rill_etcd_create(const char *endpoints, int64_t timeout_ms, rill_etcd **out);
/* Stops the keepalive thread (without revoking its lease) and frees the client. */
void rill_etcd_destroy(rill_etcd *c);
/* The first endpoint, for messages. */
const char *rill_etcd_endpoint(const rill_etcd *c);

/* A new lease of ttl_s seconds (the server may round it up to its minimum). */
rill_status *rill_etcd_lease_grant(rill_etcd *c, int64_t ttl_s, int64_t *lease);
/* One renewal; NOT_FOUND when the lease has expired or was revoked. */
rill_status *rill_etcd_lease_keepalive(rill_etcd *c, int64_t lease);
/* Revokes the lease: the keys put with it are deleted at once. */
rill_status *rill_etcd_lease_revoke(rill_etcd *c, int64_t lease);

/* Starts a thread that renews `lease` every period_ms (a third of its TTL is usual)
 * until rill_etcd_keepalive_stop; FAILED_PRECONDITION when one runs already. Failed
 * renewals are retried at the next period; once the server says the lease is gone the
 * thread stops renewing and rill_etcd_keepalive_lost turns true. */
rill_status *rill_etcd_keepalive_start(rill_etcd *c, int64_t lease, int64_t period_ms);
/* Stops and joins the thread (at most one call's timeout); nothing when none runs. */
void rill_etcd_keepalive_stop(rill_etcd *c);
/* True once the keepalive thread found its lease expired. */
bool rill_etcd_keepalive_lost(rill_etcd *c);

/* Puts key = value (len bytes), attached to `lease` (0: none). */
rill_status *rill_etcd_put(rill_etcd *c, const char *key, const void *value, size_t len,
                           int64_t lease);

typedef struct rill_etcd_kv {
  char *key;
  char *value; /* value_len bytes and a NUL */
  size_t value_len;
  int64_t lease; /* 0: none */
  int64_t create_revision, mod_revision;
} rill_etcd_kv;

/* The key (prefix false) or every key starting with it (prefix true), in key order;
 * *count 0 and *kvs NULL when none. keys_only leaves the values empty. Free with
 * rill_etcd_kvs_free. */
rill_status *rill_etcd_get(rill_etcd *c, const char *key, bool prefix, bool keys_only,
                           rill_etcd_kv **kvs, size_t *count);
void rill_etcd_kvs_free(rill_etcd_kv *kvs, size_t count);

/* Deletes the key (or every key with the prefix); *deleted (may be NULL) gets the
 * count. */
rill_status *rill_etcd_delete(rill_etcd *c, const char *key, bool prefix, int64_t *deleted);

/* One transaction: if `key` does not exist (create_revision == 0) put value with
 * `lease` and set *created; else read it. *holder (may be NULL) gets the key as it is
 * now (the new one when created; free it with rill_etcd_kvs_free(holder, 1)). Of
 * several clients racing, exactly one creates. */
rill_status *rill_etcd_create_if_absent(rill_etcd *c, const char *key, const void *value,
                                        size_t len, int64_t lease, bool *created,
                                        rill_etcd_kv **holder);

/* Base64 (RFC 4648, with padding). encode: a new NUL-ended string; decode: a new buffer
 * of *len bytes and a NUL, NULL for text that is not base64 (or out of memory). */
char *rill_base64_encode(const void *data, size_t len);
char *rill_base64_decode(const char *text, size_t *len);

#endif
