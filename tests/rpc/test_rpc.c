/* Client and server on 127.0.0.1, the server's loop on a thread of this process. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "framework/rpc/rpc.h"

static int64_t ms_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A toy pserver: keeps what is sent, answers gets with it; with hold_gets, gets wait
 * until a FETCH_BARRIER@RECV notice (deferred replies); with mute, nothing is answered. */
#define SLOTS 64
typedef struct toy {
  rill_rpc_server *srv;
  pthread_t th;
  atomic_bool stop;
  bool hold_gets, mute;
  pthread_mutex_t lock;
  char names[SLOTS][64];
  rill_variable vars[SLOTS];
  int n;
  rill_rpc_request *held[SLOTS];
  int nheld;
  atomic_int notices;
} toy;

static rill_variable *slot(toy *t, const char *name, bool create) {
  for (int i = 0; i < t->n; i++)
    if (strcmp(t->names[i], name) == 0) return &t->vars[i];
  if (!create || t->n == SLOTS) return NULL;
  snprintf(t->names[t->n], sizeof t->names[0], "%s", name);
  rill_variable_init(&t->vars[t->n]);
  return &t->vars[t->n++];
}

static void answer_get(toy *t, rill_rpc_request *r) {
  pthread_mutex_lock(&t->lock);
  rill_variable *v = slot(t, r->meta.varname, false);
  rill_status *st;
  if (v) {
    st = rill_rpc_server_reply_var(t->srv, r, v);
  } else {
    rill_status *nf = rill_error(RILL_NOT_FOUND, "no variable '%s'", r->meta.varname);
    st = rill_rpc_server_reply_error(t->srv, r, nf);
    rill_status_destroy(nf);
  }
  pthread_mutex_unlock(&t->lock);
  cr_assert_null(st, "%s", rill_status_message(st));
}

static void *toy_main(void *arg) {
  toy *t = arg;
  while (!atomic_load(&t->stop)) {
    rill_rpc_request *r;
    cr_assert_null(rill_rpc_server_next(t->srv, 20, &r));
    if (!r) continue;
    if (t->mute) {
      rill_rpc_request_destroy(r);
      continue;
    }
    if (r->kind == RILL_RPC_SEND) {
      pthread_mutex_lock(&t->lock);
      rill_variable *v = slot(t, r->meta.varname, true);
      rill_variable_clear(v);
      *v = r->var;
      rill_variable_init(&r->var);
      pthread_mutex_unlock(&t->lock);
      cr_assert_null(rill_rpc_server_reply_ok(t->srv, r));
    } else if (r->kind == RILL_RPC_GET) {
      if (t->hold_gets) {
        t->held[t->nheld++] = r;
        continue;
      }
      answer_get(t, r);
    } else {
      atomic_fetch_add(&t->notices, 1);
      if (strcmp(r->meta.varname, RILL_RPC_FETCH_BARRIER) == 0) {
        for (int i = 0; i < t->nheld; i++) {
          answer_get(t, t->held[i]);
          rill_rpc_request_destroy(t->held[i]);
        }
        t->nheld = 0;
      }
      cr_assert_null(rill_rpc_server_reply_ok(t->srv, r));
    }
    rill_rpc_request_destroy(r);
  }
  return NULL;
}

static void toy_start(toy *t, const char *endpoint, const rill_rpc_config *cfg) {
  memset(t, 0, sizeof *t);
  pthread_mutex_init(&t->lock, NULL);
  rill_status *st = rill_rpc_server_create(endpoint, cfg, &t->srv);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_gt(rill_rpc_server_port(t->srv), 0);
  pthread_create(&t->th, NULL, toy_main, t);
}

static void toy_stop(toy *t) {
  atomic_store(&t->stop, true);
  pthread_join(t->th, NULL);
  for (int i = 0; i < t->nheld; i++) rill_rpc_request_destroy(t->held[i]);
  rill_rpc_server_destroy(t->srv);
  for (int i = 0; i < t->n; i++) rill_variable_clear(&t->vars[i]);
  pthread_mutex_destroy(&t->lock);
}

static void fill(rill_variable *v, int64_t n, float base) {
  rill_variable_init(v);
  rill_dims d = {2, {n, 4}};
  cr_assert_null(rill_tensor_alloc(rill_variable_tensor(v), RILL_DTYPE_FP32, &d));
  float *p = rill_tensor_ptr(&v->u.tensor);
  for (int64_t i = 0; i < n * 4; i++) p[i] = base + (float)i;
}

static rill_rpc_client *client(int64_t deadline_ms, const char *secret) {
  rill_rpc_config cfg;
  rill_rpc_config_init(&cfg);
  cfg.deadline_ms = deadline_ms;
  cfg.secret = secret ? secret : "";
  rill_rpc_client *c;
  cr_assert_null(rill_rpc_client_create(&cfg, &c));
  return c;
}

Test(rpc, send_then_get_round_trip) {
  toy t;
  toy_start(&t, "127.0.0.1:0", NULL);
  const char *ep = rill_rpc_server_endpoint(t.srv);
  rill_rpc_client *c = client(10000, NULL);
  rill_variable w, back;
  fill(&w, 1000, 0.25f);
  rill_status *st = rill_rpc_send_var(c, ep, "w@GRAD", &w, NULL, 1);
  cr_assert_null(st, "%s", rill_status_message(st));
  rill_variable_init(&back);
  st = rill_rpc_get_var(c, ep, "w@GRAD", NULL, 1, &back);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_eq(back.kind, RILL_VARKIND_TENSOR);
  cr_assert_eq(back.u.tensor.dims.d[0], 1000);
  cr_assert_eq(memcmp(rill_tensor_ptr(&back.u.tensor), rill_tensor_ptr(&w.u.tensor), 16000), 0);
  st = rill_rpc_get_var(c, ep, "missing", NULL, 1, &back);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  cr_assert(strstr(rill_status_message(st), "no variable 'missing'"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  cr_assert_null(rill_rpc_send_notice(c, ep, RILL_RPC_COMPLETE, 1));
  cr_assert_eq(atomic_load(&t.notices), 1);
  rill_variable_clear(&w);
  rill_variable_clear(&back);
  rill_rpc_client_destroy(c);
  toy_stop(&t);
}

/* Two toy servers on free ports, and their endpoints. */
static void two_toys(toy t[2], const char *eps[2]) {
  for (int i = 0; i < 2; i++) {
    toy_start(&t[i], "127.0.0.1:0", NULL);
    eps[i] = rill_rpc_server_endpoint(t[i].srv);
  }
}

/* One notice to several servers: every server gets it; a server that never answers
 * fails the call by the deadline, naming it, after the others were answered. */
Test(rpc, a_notice_to_each_server_overlaps_the_round_trips) {
  toy t[2];
  const char *eps[2];
  two_toys(t, eps);
  rill_rpc_client *c = client(300, NULL);
  size_t failed = 9;
  rill_status *st = rill_rpc_send_notice_each(c, eps, 2, RILL_RPC_CHECKPOINT, "7", 0, &failed);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_eq(atomic_load(&t[0].notices), 1);
  cr_assert_eq(atomic_load(&t[1].notices), 1);
  t[1].mute = true;
  st = rill_rpc_send_notice_each(c, eps, 2, RILL_RPC_CHECKPOINT, "8", 0, &failed);
  cr_assert_eq(rill_status_code(st), RILL_DEADLINE_EXCEEDED);
  cr_assert(strstr(rill_status_message(st), eps[1]), "%s", rill_status_message(st));
  cr_assert_eq(failed, 1);
  rill_status_destroy(st);
  cr_assert_eq(atomic_load(&t[0].notices), 2);
  cr_assert_null(rill_rpc_send_notice_each(c, eps, 1, RILL_RPC_CHECKPOINT, "9", 0, NULL));
  cr_assert_eq(atomic_load(&t[0].notices), 3);
  cr_assert_null(rill_rpc_send_notice_each(c, eps, 0, RILL_RPC_CHECKPOINT, "9", 0, NULL));
  rill_rpc_client_destroy(c);
  toy_stop(&t[1]);
  toy_stop(&t[0]);
}

typedef struct each_get {
  rill_rpc_client *c;
  const char *eps[2], *names[2];
  rill_variable outs[2];
  rill_status *st;
} each_get;

static void *each_get_main(void *arg) {
  each_get *g = arg;
  rill_variable *outs[2] = {&g->outs[0], &g->outs[1]};
  g->st = rill_rpc_get_var_each(g->c, 2, g->eps, g->names, outs, 0, NULL, NULL, NULL);
  return NULL;
}

static void count_done(void *arg, size_t i) { ((int *)arg)[i]++; }

/* Many variables to two servers in one call: more than the window in flight, each
 * completion reported once; gets to two servers are in flight together; a failure names
 * its index and the other transfers still complete. */
Test(rpc, transfers_to_each_server_run_at_once) {
  toy t[2];
  const char *two[2];
  two_toys(t, two);
  rill_rpc_client *c = client(5000, NULL);
  enum { N = 20 };
  const char *eps[N], *names[N];
  char buf[N][16];
  rill_variable vars[N], back[N];
  const rill_variable *vp[N];
  rill_variable *bp[N];
  int done[N] = {0};
  for (int i = 0; i < N; i++) {
    snprintf(buf[i], sizeof buf[i], "v%d", i);
    names[i] = buf[i];
    eps[i] = two[i % 2];
    fill(&vars[i], 10 + i, (float)i);
    rill_variable_init(&back[i]);
    vp[i] = &vars[i];
    bp[i] = &back[i];
  }
  size_t failed = 99;
  rill_status *st = rill_rpc_send_var_each(c, N, eps, names, vp, 0, count_done, done, &failed);
  cr_assert_null(st, "%s", rill_status_message(st));
  for (int i = 0; i < N; i++) cr_assert_eq(done[i], 1, "send %d reported %d times", i, done[i]);
  cr_assert(t[0].n == N / 2 && t[1].n == N / 2, "servers hold %d and %d", t[0].n, t[1].n);
  st = rill_rpc_get_var_each(c, N, eps, names, bp, 0, NULL, NULL, NULL);
  cr_assert_null(st, "%s", rill_status_message(st));
  for (int i = 0; i < N; i++)
    cr_assert(back[i].u.tensor.dims.d[0] == 10 + i &&
                  !memcmp(rill_tensor_ptr(&back[i].u.tensor), rill_tensor_ptr(&vars[i].u.tensor),
                          (size_t)(10 + i) * 16),
              "v%d came back different", i);

  /* Both servers hold their get until a barrier: both requests must be out at once. */
  t[0].hold_gets = t[1].hold_gets = true;
  each_get g = {.c = c, .eps = {two[0], two[1]}, .names = {"v0", "v1"}};
  rill_variable_init(&g.outs[0]);
  rill_variable_init(&g.outs[1]);
  pthread_t th;
  pthread_create(&th, NULL, each_get_main, &g);
  for (int i = 0; i < 2000 && (t[0].nheld < 1 || t[1].nheld < 1); i++) usleep(1000);
  cr_assert(t[0].nheld == 1 && t[1].nheld == 1, "the second get waited for the first");
  cr_assert_null(rill_rpc_send_notice_each(c, two, 2, RILL_RPC_FETCH_BARRIER, NULL, 0, NULL));
  pthread_join(th, NULL);
  cr_assert_null(g.st, "%s", rill_status_message(g.st));
  cr_assert_eq(memcmp(rill_tensor_ptr(&g.outs[1].u.tensor), rill_tensor_ptr(&vars[1].u.tensor), 16 * 11), 0);
  t[0].hold_gets = t[1].hold_gets = false;

  names[2] = "missing";
  for (int i = 0; i < N; i++) rill_variable_clear(&back[i]);
  st = rill_rpc_get_var_each(c, N, eps, names, bp, 0, NULL, NULL, &failed);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND, "%s", rill_status_message(st));
  cr_assert_eq(failed, 2);
  cr_assert(strstr(rill_status_message(st), "'missing'"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  cr_assert(rill_tensor_is_set(&back[0].u.tensor) && rill_tensor_is_set(&back[3].u.tensor),
            "the transfers in flight beside the failure were not completed");
  cr_assert(!rill_tensor_is_set(&back[N - 1].u.tensor), "a transfer started after the failure");
  for (int i = 0; i < N; i++) {
    rill_variable_clear(&vars[i]);
    rill_variable_clear(&back[i]);
  }
  rill_variable_clear(&g.outs[0]);
  rill_variable_clear(&g.outs[1]);
  rill_rpc_client_destroy(c);
  toy_stop(&t[1]);
  toy_stop(&t[0]);
}

typedef struct getter {
  rill_rpc_client *c;
  const char *ep;
  rill_variable out;
  rill_status *st;
  atomic_bool done;
} getter;

static void *get_main(void *arg) {
  getter *g = arg;
  rill_variable_init(&g->out);
  g->st = rill_rpc_get_var(g->c, g->ep, "p", NULL, 0, &g->out);
  atomic_store(&g->done, true);
  return NULL;
}

Test(rpc, deferred_get_waits_for_the_barrier) {
  toy t;
  toy_start(&t, "127.0.0.1:0", NULL);
  t.hold_gets = true;
  const char *ep = rill_rpc_server_endpoint(t.srv);
  rill_rpc_client *c = client(10000, NULL);
  rill_variable p;
  fill(&p, 8, 1.0f);
  cr_assert_null(rill_rpc_send_var(c, ep, "p", &p, NULL, 0));
  getter g = {.c = c, .ep = ep};
  pthread_t th;
  pthread_create(&th, NULL, get_main, &g);
  usleep(300 * 1000);
  cr_assert_not(atomic_load(&g.done), "the get must wait for the server's deferred reply");
  cr_assert_null(rill_rpc_send_notice(c, ep, RILL_RPC_FETCH_BARRIER, 0));
  pthread_join(th, NULL);
  cr_assert_null(g.st, "%s", rill_status_message(g.st));
  cr_assert_float_eq(((float *)rill_tensor_ptr(&g.out.u.tensor))[31], 32.0f, 0);
  rill_variable_clear(&g.out);
  rill_variable_clear(&p);
  rill_rpc_client_destroy(c);
  toy_stop(&t);
}

typedef struct worker {
  rill_rpc_client *c;
  const char *ep;
  int id;
  int ok;
} worker;

static void *worker_main(void *arg) {
  worker *w = arg;
  char name[32];
  snprintf(name, sizeof name, "v%d", w->id);
  for (int i = 0; i < 40; i++) {
    rill_variable v, back;
    fill(&v, 64 + w->id, (float)(w->id * 1000 + i));
    rill_variable_init(&back);
    rill_status *st = rill_rpc_send_var(w->c, w->ep, name, &v, NULL, w->id);
    if (!st) st = rill_rpc_get_var(w->c, w->ep, name, NULL, w->id, &back);
    if (!st && back.u.tensor.dims.d[0] == 64 + w->id &&
        ((float *)rill_tensor_ptr(&back.u.tensor))[0] == (float)(w->id * 1000 + i))
      w->ok++;
    rill_status_destroy(st);
    rill_variable_clear(&v);
    rill_variable_clear(&back);
  }
  return NULL;
}

Test(rpc, four_threads_share_one_client) {
  toy t;
  toy_start(&t, "127.0.0.1:0", NULL);
  rill_rpc_client *c = client(10000, NULL);
  worker w[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker){.c = c, .ep = rill_rpc_server_endpoint(t.srv), .id = i};
    pthread_create(&th[i], NULL, worker_main, &w[i]);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 4; i++) cr_assert_eq(w[i].ok, 40, "thread %d: %d of 40", i, w[i].ok);
  rill_rpc_client_destroy(c);
  toy_stop(&t);
}

Test(rpc, deadline_names_endpoint_and_variable) {
  toy t;
  toy_start(&t, "127.0.0.1:0", NULL);
  t.mute = true;
  const char *ep = rill_rpc_server_endpoint(t.srv);
  rill_rpc_client *c = client(300, NULL);
  cr_assert_eq(rill_rpc_client_deadline(c), 300);
  rill_variable w;
  fill(&w, 4, 0);
  int64_t t0 = ms_now();
  rill_status *st = rill_rpc_send_var(c, ep, "fc_0.w_0@GRAD", &w, NULL, 0);
  int64_t took = ms_now() - t0;
  cr_assert_eq(rill_status_code(st), RILL_DEADLINE_EXCEEDED);
  cr_assert(strstr(rill_status_message(st), ep), "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), "'fc_0.w_0@GRAD'"), "%s", rill_status_message(st));
  cr_assert_geq(took, 290);
  cr_assert_lt(took, 2000, "took %lld ms", (long long)took);
  rill_status_destroy(st);
  rill_variable_clear(&w);
  rill_rpc_client_destroy(c);
  toy_stop(&t);
}

typedef struct late {
  char endpoint[64];
  toy t;
} late;

static void *late_main(void *arg) {
  late *l = arg;
  usleep(600 * 1000);
  toy_start(&l->t, l->endpoint, NULL);
  return NULL;
}

Test(rpc, wait_for_a_server_that_starts_late) {
  rill_rpc_server *probe;
  cr_assert_null(rill_rpc_server_create("127.0.0.1:0", NULL, &probe));
  late l;
  snprintf(l.endpoint, sizeof l.endpoint, "%s", rill_rpc_server_endpoint(probe));
  rill_rpc_server_destroy(probe); /* the port is free again; nothing listens */
  rill_rpc_client *c = client(10000, NULL);
  rill_status *st = rill_rpc_wait_server(c, l.endpoint, 200);
  cr_assert_eq(rill_status_code(st), RILL_DEADLINE_EXCEEDED);
  cr_assert(strstr(rill_status_message(st), l.endpoint));
  rill_status_destroy(st);
  pthread_t th;
  pthread_create(&th, NULL, late_main, &l);
  int64_t t0 = ms_now();
  st = rill_rpc_wait_server(c, l.endpoint, 10000);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_geq(ms_now() - t0, 300);
  pthread_join(th, NULL);
  rill_variable w;
  fill(&w, 2, 0);
  cr_assert_null(rill_rpc_send_var(c, l.endpoint, "w", &w, NULL, 0));
  rill_variable_clear(&w);
  rill_rpc_client_destroy(c);
  toy_stop(&l.t);
}

/* Raw frames from a DEALER: one message, one reply (or none within 2 s). */
/* A peer that speaks ZeroMQ to the server directly, bypassing rill's client. */
static void *raw_peer(void *ctx, const char *ep) {
  void *raw = zmq_socket(ctx, ZMQ_DEALER);
  int zero = 0;
  zmq_setsockopt(raw, ZMQ_LINGER, &zero, sizeof zero);
  char addr[80];
  snprintf(addr, sizeof addr, "tcp://%s", ep);
  cr_assert_eq(zmq_connect(raw, addr), 0);
  return raw;
}

static int raw_exchange(void *sock, const void *const *frames, const size_t *lens, int n,
                        uint8_t *env_out, char *text, size_t text_size) {
  for (int i = 0; i < n; i++)
    cr_assert_geq(zmq_send(sock, frames[i], lens[i], i + 1 < n ? ZMQ_SNDMORE : 0), 0);
  zmq_pollitem_t it = {sock, 0, ZMQ_POLLIN, 0};
  if (zmq_poll(&it, 1, 2000) <= 0) return -1;
  int got = 0;
  int more = 1;
  text[0] = '\0';
  while (more) {
    char buf[1024];
    int len = zmq_recv(sock, buf, sizeof buf - 1, 0);
    cr_assert_geq(len, 0);
    if (len > (int)sizeof buf - 1) len = sizeof buf - 1;
    if (got == 0) memcpy(env_out, buf, 16);
    if (got == 1) snprintf(text, text_size, "%.*s", len, buf);
    got++;
    size_t sz = sizeof more;
    zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &sz);
  }
  return got;
}

Test(rpc, malformed_requests_get_errors_and_the_server_keeps_serving) {
  toy t;
  toy_start(&t, "127.0.0.1:0", NULL);
  const char *ep = rill_rpc_server_endpoint(t.srv);
  rill_rpc_client *c = client(10000, NULL);
  rill_variable w;
  fill(&w, 16, 5.0f);
  cr_assert_null(rill_rpc_send_var(c, ep, "w", &w, NULL, 0));

  void *ctx = zmq_ctx_new();
  void *raw = raw_peer(ctx, ep);
  uint8_t env[16], send_env[16] = {'R', 'L', 1, 1, 0, 0, 0, 0, 42};
  char text[512];
  /* 1. garbage */
  const void *f1[] = {"hello"};
  size_t l1[] = {5};
  cr_assert_eq(raw_exchange(raw, f1, l1, 1, env, text, sizeof text), 2);
  cr_assert_eq(env[3], 18, "an error reply");
  cr_assert(strstr(text, "envelope"), "%s", text);
  /* 2. a send whose header is not a VariableMessage */
  uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff};
  const void *f2[] = {send_env, junk, "abcd"};
  size_t l2[] = {16, sizeof junk, 4};
  cr_assert_eq(raw_exchange(raw, f2, l2, 3, env, text, sizeof text), 2);
  cr_assert_eq(env[3], 18);
  cr_assert_eq(env[8], 42, "the reply carries the request id");
  cr_assert(strstr(text, "not a VariableMessage"), "%s", text);
  /* 3. a send of "w" whose data frame is too short for its dims: must not touch "w" */
  rill_rpc_payload p;
  cr_assert_null(rill_rpc_encode("w", &w, NULL, 0, &p));
  const void *f3[] = {send_env, p.header, "short"};
  size_t l3[] = {16, p.header_len, 5};
  cr_assert_eq(raw_exchange(raw, f3, l3, 3, env, text, sizeof text), 2);
  cr_assert_eq(env[3], 18);
  cr_assert(strstr(text, "'w'") && strstr(text, "data frame has 5"), "%s", text);
  /* 4. a get with a missing header frame */
  uint8_t get_env[16] = {'R', 'L', 1, 2};
  const void *f4[] = {get_env};
  size_t l4[] = {16};
  cr_assert_eq(raw_exchange(raw, f4, l4, 1, env, text, sizeof text), 2);
  cr_assert(strstr(text, "1 frames") || strstr(text, "frames"), "%s", text);
  rill_rpc_payload_clear(&p);
  zmq_close(raw);
  zmq_ctx_term(ctx);

  cr_assert_eq(rill_rpc_server_rejected(t.srv), 4);
  rill_variable back;
  rill_variable_init(&back);
  rill_status *st = rill_rpc_get_var(c, ep, "w", NULL, 0, &back);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_eq(back.u.tensor.dims.d[0], 16);
  cr_assert_eq(memcmp(rill_tensor_ptr(&back.u.tensor), rill_tensor_ptr(&w.u.tensor), 256), 0,
               "the stored variable is unchanged");
  rill_variable_clear(&back);
  rill_variable_clear(&w);
  rill_rpc_client_destroy(c);
  toy_stop(&t);
}

Test(rpc, curve_refuses_clients_without_the_secret) {
  if (!rill_rpc_has_curve()) cr_skip_test("this libzmq has no CURVE: authentication not tested");
  rill_rpc_config cfg;
  rill_rpc_config_init(&cfg);
  cfg.secret = "correct horse";
  toy t;
  toy_start(&t, "127.0.0.1:0", &cfg);
  const char *ep = rill_rpc_server_endpoint(t.srv);
  rill_variable w;
  fill(&w, 4, 1.0f);

  const char *wrong[] = {NULL, "battery staple"};
  for (int i = 0; i < 2; i++) {
    rill_rpc_client *bad = client(400, wrong[i]);
    int64_t t0 = ms_now();
    rill_status *st = rill_rpc_send_var(bad, ep, "w", &w, NULL, 0);
    cr_assert_eq(rill_status_code(st), RILL_DEADLINE_EXCEEDED, "client %d: %s", i,
                 rill_status_message(st));
    cr_assert_lt(ms_now() - t0, 3000);
    rill_status_destroy(st);
    rill_rpc_client_destroy(bad);
  }
  pthread_mutex_lock(&t.lock);
  cr_assert_eq(t.n, 0, "nothing reached the server");
  pthread_mutex_unlock(&t.lock);

  rill_rpc_client *good = client(10000, "correct horse");
  rill_status *st = rill_rpc_send_var(good, ep, "w", &w, NULL, 0);
  cr_assert_null(st, "%s", rill_status_message(st));
  rill_variable back;
  rill_variable_init(&back);
  cr_assert_null(rill_rpc_get_var(good, ep, "w", NULL, 0, &back));
  cr_assert_float_eq(((float *)rill_tensor_ptr(&back.u.tensor))[3], 4.0f, 0);
  rill_variable_clear(&back);
  rill_variable_clear(&w);
  rill_rpc_client_destroy(good);
  toy_stop(&t);
}

Test(rpc, secret_file_and_bad_endpoints) {
  char path[] = "/tmp/rill-rpc-secret-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, "abc\n", 4), 4);
  close(fd);
  rill_rpc_config cfg;
  rill_rpc_config_init(&cfg);
  cfg.secret_file = "/nonexistent/rill-secret";
  rill_rpc_client *c;
  rill_status *st = rill_rpc_client_create(&cfg, &c);
  cr_assert_eq(rill_status_code(st), RILL_IO);
  cr_assert(strstr(rill_status_message(st), "/nonexistent/rill-secret"));
  rill_status_destroy(st);
  cfg.secret_file = path;
  cr_assert_null(rill_rpc_client_create(&cfg, &c));
  rill_rpc_client_destroy(c);
  unlink(path);
  rill_rpc_server *s;
  st = rill_rpc_server_create("no-port-here", NULL, &s);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
}

Test(rpc, deadline_comes_from_the_environment) {
  setenv("RILL_RPC_DEADLINE_MS", "1234", 1);
  rill_rpc_config cfg;
  rill_rpc_config_init(&cfg);
  cfg.secret = "";
  rill_rpc_client *c;
  cr_assert_null(rill_rpc_client_create(&cfg, &c));
  cr_assert_eq(rill_rpc_client_deadline(c), 1234);
  rill_rpc_client_set_deadline(c, 50);
  cr_assert_eq(rill_rpc_client_deadline(c), 50);
  rill_rpc_client_destroy(c);
  setenv("RILL_RPC_DEADLINE_MS", "soon", 1);
  cr_assert_eq(rill_rpc_config_deadline(&cfg), RILL_RPC_DEFAULT_DEADLINE_MS);
  cfg.deadline_ms = 77;
  cr_assert_eq(rill_rpc_config_deadline(&cfg), 77);
  unsetenv("RILL_RPC_DEADLINE_MS");
  cfg.deadline_ms = 0;
  cr_assert_eq(rill_rpc_config_deadline(&cfg), RILL_RPC_DEFAULT_DEADLINE_MS);
}

Test(rpc, secret_from_the_environment_turns_on_curve) {
  if (!rill_rpc_has_curve()) cr_skip_test("this libzmq has no CURVE: authentication not tested");
  setenv("RILL_DIST_SECRET", "from-env", 1);
  toy t;
  toy_start(&t, "127.0.0.1:0", NULL); /* secret from the environment */
  const char *ep = rill_rpc_server_endpoint(t.srv);
  rill_rpc_client *env_client;
  cr_assert_null(rill_rpc_client_create(NULL, &env_client));
  rill_status *st = rill_rpc_wait_server(env_client, ep, 5000);
  cr_assert_null(st, "%s", rill_status_message(st));
  rill_rpc_client *plain = client(300, ""); /* "" overrides the environment: no secret */
  st = rill_rpc_send_notice(plain, ep, RILL_RPC_COMPLETE, 0);
  cr_assert_eq(rill_status_code(st), RILL_DEADLINE_EXCEEDED);
  rill_status_destroy(st);
  cr_assert_eq(atomic_load(&t.notices), 0);
  unsetenv("RILL_DIST_SECRET");
  rill_rpc_client_destroy(plain);
  rill_rpc_client_destroy(env_client);
  toy_stop(&t);
}

/* RILL_DIST_SECRET_FILE names a file holding the secret: a client reading it reaches a
 * server given the same secret, and one without a secret is told why it may have failed. */
Test(rpc, secret_file_from_the_environment) {
  if (!rill_rpc_has_curve()) cr_skip_test("this libzmq has no CURVE: authentication not tested");
  char path[] = "/tmp/rill-rpc-secret-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, "from-file\n", 10), 10);
  close(fd);
  rill_rpc_config cfg;
  rill_rpc_config_init(&cfg);
  cfg.secret = "from-file";
  toy t;
  toy_start(&t, "127.0.0.1:0", &cfg);
  const char *ep = rill_rpc_server_endpoint(t.srv);
  setenv("RILL_DIST_SECRET_FILE", path, 1);
  rill_rpc_client *file_client;
  cr_assert_null(rill_rpc_client_create(NULL, &file_client));
  unsetenv("RILL_DIST_SECRET_FILE");
  unlink(path);
  rill_status *st = rill_rpc_wait_server(file_client, ep, 5000);
  cr_assert_null(st, "%s", rill_status_message(st));
  rill_rpc_client *plain = client(300, "");
  st = rill_rpc_wait_server(plain, ep, 300);
  cr_assert_eq(rill_status_code(st), RILL_DEADLINE_EXCEEDED);
  cr_assert(strstr(rill_status_message(st), "authentication"), "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), "has no secret"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_rpc_client_destroy(plain);
  rill_rpc_client_destroy(file_client);
  toy_stop(&t);
}

/* A peer that knows the server's public key but not the client key derived from the
 * secret is refused by the server's authentication handler. */
static bool curve_ping(const char *ep, const char *server_pub, const char *pub, const char *sec) {
  void *ctx = zmq_ctx_new();
  void *s = zmq_socket(ctx, ZMQ_DEALER);
  int zero = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, server_pub, 41);
  zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, pub, 41);
  zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, sec, 41);
  char addr[80];
  snprintf(addr, sizeof addr, "tcp://%s", ep);
  cr_assert_eq(zmq_connect(s, addr), 0);
  uint8_t ping[16] = {'R', 'L', 1, 4, 0, 0, 0, 0, 7};
  cr_assert_eq(zmq_send(s, ping, sizeof ping, 0), 16);
  zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
  bool answered = zmq_poll(&it, 1, 700) == 1;
  zmq_close(s);
  zmq_ctx_term(ctx);
  return answered;
}

Test(rpc, curve_server_admits_only_the_derived_client_key) {
  if (!rill_rpc_has_curve()) cr_skip_test("this libzmq has no CURVE: authentication not tested");
  rill_rpc_config cfg;
  rill_rpc_config_init(&cfg);
  cfg.secret = "k";
  toy t;
  toy_start(&t, "127.0.0.1:0", &cfg);
  char k[4][41];
  cr_assert_null(rill_rpc_derive_keys("k", k[0], k[1], k[2], k[3]));
  char rnd_pub[41], rnd_sec[41];
  cr_assert_eq(zmq_curve_keypair(rnd_pub, rnd_sec), 0);
  const char *ep = rill_rpc_server_endpoint(t.srv);
  cr_assert_not(curve_ping(ep, k[0], rnd_pub, rnd_sec), "a foreign client key got service");
  cr_assert(curve_ping(ep, k[0], k[2], k[3]), "the derived client key is refused");
  toy_stop(&t);
}

Test(rpc, each_request_is_answered_once) {
  rill_rpc_server *s;
  cr_assert_null(rill_rpc_server_create("127.0.0.1:0", NULL, &s));
  rill_rpc_client *c = client(5000, NULL);
  getter g = {.c = c, .ep = rill_rpc_server_endpoint(s)};
  pthread_t th;
  pthread_create(&th, NULL, get_main, &g);
  rill_rpc_request *r = NULL;
  for (int i = 0; i < 100 && !r; i++) cr_assert_null(rill_rpc_server_next(s, 50, &r));
  cr_assert_not_null(r);
  cr_assert_eq(r->kind, RILL_RPC_GET);
  cr_assert_str_eq(r->meta.varname, "p");
  rill_status *st = rill_rpc_server_reply_var(s, r, NULL);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  rill_status *why = rill_error(RILL_OUT_OF_RANGE, "step 7 is over");
  cr_assert_null(rill_rpc_server_reply_error(s, r, why));
  rill_status_destroy(why);
  st = rill_rpc_server_reply_ok(s, r);
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION);
  rill_status_destroy(st);
  rill_rpc_request_destroy(r);
  pthread_join(th, NULL);
  cr_assert_eq(rill_status_code(g.st), RILL_OUT_OF_RANGE);
  cr_assert(strstr(rill_status_message(g.st), "step 7 is over"), "%s", rill_status_message(g.st));
  cr_assert(strstr(rill_status_message(g.st), "'p'"));
  rill_status_destroy(g.st);
  rill_variable_clear(&g.out);
  rill_rpc_client_destroy(c);
  rill_rpc_server_destroy(s);
}

/* A peer that freezes (SIGSTOP: its socket stays open, nothing answers) is found dead by
 * the heartbeats and counted out; without them the connection would stay up. */
Test(rpc, heartbeats_drop_a_frozen_peer) {
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    char ep[64] = {0};
    close(fds[1]);
    if (read(fds[0], ep, sizeof ep - 1) <= 0) _exit(1);
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    char addr[80];
    snprintf(addr, sizeof addr, "tcp://%s", ep);
    zmq_connect(s, addr);
    uint8_t ping[16] = {'R', 'L', 1, 4};
    zmq_send(s, ping, sizeof ping, 0);
    for (;;) pause();
  }
  close(fds[0]);
  rill_rpc_config cfg;
  rill_rpc_config_init(&cfg);
  cfg.secret = "";
  cfg.heartbeat_ivl_ms = 100;
  cfg.heartbeat_timeout_ms = 500;
  rill_rpc_server *s;
  cr_assert_null(rill_rpc_server_create("127.0.0.1:0", &cfg, &s));
  const char *ep = rill_rpc_server_endpoint(s);
  cr_assert_eq(write(fds[1], ep, strlen(ep)), (ssize_t)strlen(ep));
  close(fds[1]);
  int64_t t0 = ms_now();
  while (rill_rpc_server_peers(s) < 1 && ms_now() - t0 < 5000) usleep(10 * 1000);
  cr_assert_eq(rill_rpc_server_peers(s), 1, "the child never connected");
  usleep(700 * 1000); /* alive: it answers the heartbeats */
  cr_assert_eq(rill_rpc_server_peers(s), 1, "a live peer was dropped");
  kill(child, SIGSTOP);
  t0 = ms_now();
  while (rill_rpc_server_peers(s) > 0 && ms_now() - t0 < 5000) usleep(10 * 1000);
  int64_t took = ms_now() - t0;
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  cr_assert_eq(rill_rpc_server_peers(s), 0, "the frozen peer is still counted");
  cr_assert_lt(took, 3000, "took %lld ms", (long long)took);
  rill_rpc_server_destroy(s);
}

Test(rpc, oversized_headers_are_refused_unread_and_the_server_keeps_serving) {
  rill_rpc_config cfg;
  rill_rpc_config_init(&cfg);
  cfg.max_header_bytes = 4096;
  toy t;
  toy_start(&t, "127.0.0.1:0", &cfg);
  const char *ep = rill_rpc_server_endpoint(t.srv);
  rill_rpc_client *c = client(10000, NULL);
  rill_variable w;
  fill(&w, 16, 5.0f);
  cr_assert_null(rill_rpc_send_var(c, ep, "w", &w, NULL, 0));

  /* A hostile peer: a send of "w" whose header is one byte over the cap (a valid
   * VariableMessage prefix padded with a long out_varname would decode; this one is
   * refused by its size alone). */
  void *ctx = zmq_ctx_new();
  void *raw = raw_peer(ctx, ep);
  uint8_t env[16], send_env[16] = {'R', 'L', 1, 1, 0, 0, 0, 0, 7};
  static uint8_t big[4097];
  memset(big, 0x08, sizeof big);
  const void *f[] = {send_env, big, "abcd"};
  size_t l[] = {16, sizeof big, 4};
  char text[512];
  cr_assert_eq(raw_exchange(raw, f, l, 3, env, text, sizeof text), 2);
  cr_assert_eq(env[3], 18, "an error reply");
  cr_assert_eq(env[8], 7, "the reply carries the request id");
  cr_assert(strstr(text, "4097 bytes") && strstr(text, "cap of 4096") &&
                strstr(text, "RILL_RPC_MAX_HEADER"),
            "%s", text);
  zmq_close(raw);
  zmq_ctx_term(ctx);
  cr_assert_eq(rill_rpc_server_rejected(t.srv), 1);

  /* The server still serves, and "w" is unchanged. */
  rill_variable back;
  rill_variable_init(&back);
  rill_status *st = rill_rpc_get_var(c, ep, "w", NULL, 0, &back);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_eq(memcmp(rill_tensor_ptr(&back.u.tensor), rill_tensor_ptr(&w.u.tensor), 256), 0);
  rill_variable_clear(&back);

  /* A client with the same cap refuses to send selected rows whose row indices alone
   * exceed it, naming the variable, before anything reaches the wire. */
  rill_rpc_client *small = NULL;
  cr_assert_null(rill_rpc_client_create(&cfg, &small));
  rill_variable sr;
  rill_variable_init(&sr);
  sr.kind = RILL_VARKIND_SELECTED_ROWS;
  rill_selected_rows_init(&sr.u.rows);
  int64_t rows[600];
  for (int i = 0; i < 600; i++) rows[i] = i;
  cr_assert_null(rill_selected_rows_set_rows(&sr.u.rows, rows, 600));
  sr.u.rows.height = 1000;
  rill_dims d = {2, {600, 1}};
  cr_assert_null(rill_tensor_alloc(&sr.u.rows.value, RILL_DTYPE_FP32, &d));
  st = rill_rpc_send_var(small, ep, "emb@GRAD", &sr, NULL, 0);
  cr_assert_eq(rill_status_code(st), RILL_OUT_OF_RANGE);
  cr_assert(strstr(rill_status_message(st), "'emb@GRAD'") &&
                strstr(rill_status_message(st), "cap of 4096"),
            "%s", rill_status_message(st));
  rill_status_destroy(st);
  cr_assert_eq(rill_rpc_server_rejected(t.srv), 1, "nothing reached the server");
  rill_variable_clear(&sr);
  rill_rpc_client_destroy(small);
  rill_variable_clear(&w);
  rill_rpc_client_destroy(c);
  toy_stop(&t);
}

/* A server this machine can reach through its Unix-domain socket gets same-host
 * clients that way (RILL_RPC_IPC, on by default); a client told to keep to TCP, and one
 * whose server came up late, work as well. Where each request came from is the
 * request's peer: an address over TCP, none over the socket. */
static void *one_peer(void *arg) {
  rill_rpc_server *srv = ((void **)arg)[0];
  char *peer = ((void **)arg)[1];
  rill_rpc_request *r = NULL;
  while (!r) cr_assert_null(rill_rpc_server_next(srv, 100, &r));
  snprintf(peer, 64, "%s", r->peer);
  cr_assert_null(rill_rpc_server_reply_ok(srv, r));
  rill_rpc_request_destroy(r);
  return NULL;
}

static void peer_of_a_notice(rill_rpc_server *srv, rill_rpc_client *c, char *peer) {
  void *arg[2] = {srv, peer};
  pthread_t th;
  pthread_create(&th, NULL, one_peer, arg);
  rill_status *st = rill_rpc_send_notice(c, rill_rpc_server_endpoint(srv), "n", 0);
  cr_assert_null(st, "%s", rill_status_message(st));
  pthread_join(th, NULL);
}

Test(rpc, same_host_clients_use_the_unix_socket) {
  char dir[] = "/tmp/rill-ipc-test-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  setenv("RILL_RPC_IPC_DIR", dir, 1);
  rill_rpc_server *srv = NULL;
  cr_assert_null(rill_rpc_server_create("127.0.0.1:0", NULL, &srv));
  const char *ipc = rill_rpc_server_ipc(srv);
  char want[256];
  snprintf(want, sizeof want, "ipc://%s/127.0.0.1-%d", dir, rill_rpc_server_port(srv));
  cr_assert_str_eq(ipc, want);
  cr_assert_eq(access(ipc + 6, F_OK), 0, "the socket file is there");

  char peer[64];
  rill_rpc_client *c = client(5000, NULL);
  peer_of_a_notice(srv, c, peer);
  cr_assert(!strstr(peer, "127.0.0.1"), "over the socket, not TCP: peer '%s'", peer);
  rill_rpc_client_destroy(c);

  rill_rpc_config cfg;
  rill_rpc_config_init(&cfg);
  cfg.deadline_ms = 5000;
  cfg.secret = "";
  cfg.ipc = -1;
  cr_assert_null(rill_rpc_client_create(&cfg, &c));
  peer_of_a_notice(srv, c, peer);
  cr_assert(strstr(peer, "127.0.0.1"), "told to keep to TCP: peer '%s'", peer);
  rill_rpc_client_destroy(c);

  /* The socket file goes with the server. */
  rill_rpc_server_destroy(srv);
  cr_assert_neq(access(want + 6, F_OK), 0);

  /* A directory others may enter is not used. */
  cr_assert_eq(chmod(dir, 0777), 0);
  char path[256];
  cr_assert(!rill_rpc_ipc_path("127.0.0.1:6170", path, sizeof path));
  cr_assert_eq(chmod(dir, 0700), 0);
  cr_assert(rill_rpc_ipc_path("127.0.0.1:6170", path, sizeof path));
  cr_assert(!rill_rpc_ipc_path("tcp://127.0.0.1:6170", path, sizeof path));
  unsetenv("RILL_RPC_IPC_DIR");
  rmdir(dir);
}
