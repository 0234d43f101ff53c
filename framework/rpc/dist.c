/* The trainer side of the distributed runtime: the process's rpc client and the record
 * of which pservers each executor's ops talked to (dist.h). */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/rpc/dist.h"

typedef struct contact {
  const void *owner;
  char *endpoint;
  int64_t trainer_id;
} contact;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static rill_rpc_client *g_client;
static contact *g_contacts;
static size_t g_ncontacts, g_cap;
/* Endpoints whose server has answered once. */
static char **g_ready;
static size_t g_nready, g_ready_cap;

rill_status *rill_dist_client(rill_rpc_client **out) {
  pthread_mutex_lock(&g_lock);
  rill_status *st = NULL;
  if (!g_client) st = rill_rpc_client_create(NULL, &g_client);
  *out = g_client;
  pthread_mutex_unlock(&g_lock);
  return st;
}

static bool is_ready(const char *endpoint) {
  for (size_t i = 0; i < g_nready; i++)
    if (!strcmp(g_ready[i], endpoint)) return true;
  return false;
}

static rill_status *push_str(char ***list, size_t *n, size_t *cap, const char *s) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 8;
    char **p = rill_realloc(*list, nc * sizeof *p);
    if (!p) return rill_oom();
    *list = p, *cap = nc;
  }
  if (!((*list)[*n] = rill_strdup(s))) return rill_oom();
  (*n)++;
  return NULL;
}

rill_status *rill_dist_contact(const void *owner, const char *endpoint, int64_t trainer_id) {
  rill_rpc_client *c;
  RILL_TRY(rill_dist_client(&c));
  pthread_mutex_lock(&g_lock);
  bool ready = is_ready(endpoint);
  bool known = false;
  for (size_t i = 0; i < g_ncontacts && !known; i++)
    known = g_contacts[i].owner == owner && g_contacts[i].trainer_id == trainer_id &&
            !strcmp(g_contacts[i].endpoint, endpoint);
  pthread_mutex_unlock(&g_lock);
  if (known) return NULL;
  /* Waiting happens outside the lock: other endpoints' calls go on meanwhile. */
  if (!ready) RILL_TRY(rill_rpc_wait_server(c, endpoint, 0));
  pthread_mutex_lock(&g_lock);
  rill_status *st = NULL;
  if (!is_ready(endpoint)) st = push_str(&g_ready, &g_nready, &g_ready_cap, endpoint);
  known = false;
  for (size_t i = 0; i < g_ncontacts && !known; i++)
    known = g_contacts[i].owner == owner && g_contacts[i].trainer_id == trainer_id &&
            !strcmp(g_contacts[i].endpoint, endpoint);
  if (!st && !known) {
    if (g_ncontacts == g_cap) {
      size_t nc = g_cap ? g_cap * 2 : 8;
      contact *p = rill_realloc(g_contacts, nc * sizeof *p);
      if (!p) st = rill_oom();
      else g_contacts = p, g_cap = nc;
    }
    char *ep = st ? NULL : rill_strdup(endpoint);
    if (!st && !ep) st = rill_oom();
    if (!st) g_contacts[g_ncontacts++] = (contact){owner, ep, trainer_id};
  }
  pthread_mutex_unlock(&g_lock);
  return st;
}

/* Takes `owner`'s contacts out of the list; *mine is NULL when there are none. */
static rill_status *take(const void *owner, contact **mine, size_t *n) {
  pthread_mutex_lock(&g_lock);
  size_t k = 0, j = 0;
  for (size_t i = 0; i < g_ncontacts; i++) k += g_contacts[i].owner == owner;
  *mine = k ? rill_malloc(k * sizeof **mine) : NULL;
  *n = *mine ? k : 0;
  if (k && !*mine) {
    pthread_mutex_unlock(&g_lock);
    return rill_oom();
  }
  k = 0;
  for (size_t i = 0; i < g_ncontacts; i++) {
    if (g_contacts[i].owner == owner) (*mine)[k++] = g_contacts[i];
    else g_contacts[j++] = g_contacts[i];
  }
  g_ncontacts = j;
  pthread_mutex_unlock(&g_lock);
  return NULL;
}

void rill_dist_forget(const void *owner) {
  contact *mine;
  size_t n;
  rill_status *st = take(owner, &mine, &n);
  rill_status_destroy(st);
  for (size_t i = 0; i < n; i++) rill_free(mine[i].endpoint);
  rill_free(mine);
}

rill_status *rill_dist_complete(const void *owner) {
  contact *mine;
  size_t n;
  RILL_TRY(take(owner, &mine, &n));
  rill_rpc_client *c = NULL;
  rill_status *first = n ? rill_dist_client(&c) : NULL;
  for (size_t i = 0; i < n; i++) {
    rill_status *st = c ? rill_rpc_send_notice(c, mine[i].endpoint, RILL_RPC_COMPLETE,
                                               mine[i].trainer_id)
                        : NULL;
    if (st && !first)
      first = rill_status_wrap(st, "trainer %lld telling pserver %s it has completed",
                               (long long)mine[i].trainer_id, mine[i].endpoint);
    else rill_status_destroy(st);
    rill_free(mine[i].endpoint);
  }
  rill_free(mine);
  return first;
}

void rill_dist_shutdown(void) {
  pthread_mutex_lock(&g_lock);
  rill_rpc_client_destroy(g_client);
  g_client = NULL;
  for (size_t i = 0; i < g_ncontacts; i++) rill_free(g_contacts[i].endpoint);
  rill_free(g_contacts);
  g_contacts = NULL, g_ncontacts = g_cap = 0;
  for (size_t i = 0; i < g_nready; i++) rill_free(g_ready[i]);
  rill_free(g_ready);
  g_ready = NULL, g_nready = g_ready_cap = 0;
  pthread_mutex_unlock(&g_lock);
}
