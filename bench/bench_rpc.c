/* The rpc transport against raw ZeroMQ moving the same bytes (doc/design/rpc.md).
 *
 * One exchange is what a trainer does per parameter block and step: send a block (the
 * gradient) and get a block of the same size back (the parameter). rill_rpc: the
 * client's rill_rpc_send_var then rill_rpc_get_var against a server thread that keeps
 * the sent variable and answers the get with it. Raw ZeroMQ: a DEALER and a ROUTER on
 * the same kind of endpoint, the same two threads, the same frames' bytes (a zero-copy
 * frame out, a one-byte acknowledgement; a small request, a zero-copy frame back) and
 * nothing else: no header, no checks, no decoding.
 *
 * Two processes, as in a job: this one is the client (trainer) of both sides, a forked
 * child serves both (rill's server and its serving thread; the raw ROUTER on a thread).
 * Each side runs over TCP on 127.0.0.1 and over the same-host transport (a Unix-domain
 * socket, ZeroMQ ipc://; rill's clients pick it by themselves when the server's socket
 * is on this machine, a client with config.ipc < 0 keeps to TCP). Each raw or rill
 * server keeps the last block it received and sends it back on a get without copying.
 * Rounds of the four alternate and each keeps its fastest round (the machine is
 * shared). Prints MB/s of each and the ratios: raw time / rill time on each transport
 * (target >= 0.8), and rill over TCP time / rill over the socket time (what a job on
 * one machine gains). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "framework/base/alloc.h"
#include "framework/rpc/rpc.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- rill side ---- */

typedef struct rill_side {
  rill_rpc_server *srv;
  pthread_t th;
  atomic_bool stop;
  rill_variable kept;
} rill_side;

static void *rill_server(void *arg) {
  rill_side *s = arg;
  while (!atomic_load(&s->stop)) {
    rill_rpc_request *r;
    if (rill_rpc_server_next(s->srv, 20, &r) || !r) continue;
    rill_status *st;
    if (r->kind == RILL_RPC_SEND) {
      rill_variable_clear(&s->kept);
      s->kept = r->var;
      rill_variable_init(&r->var);
      st = rill_rpc_server_reply_ok(s->srv, r);
    } else if (r->kind == RILL_RPC_GET) {
      st = rill_rpc_server_reply_var(s->srv, r, &s->kept);
    } else {
      st = rill_rpc_server_reply_ok(s->srv, r);
      if (strcmp(r->meta.varname, "stop") == 0) atomic_store(&s->stop, true);
    }
    if (st) {
      fprintf(stderr, "bench_rpc: %s\n", rill_status_message(st));
      exit(1);
    }
    rill_rpc_request_destroy(r);
  }
  return NULL;
}

/* ---- raw side ---- */

typedef struct raw_side {
  void *ctx, *router;
  pthread_t th;
} raw_side;

static void *raw_server(void *arg) {
  raw_side *s = arg;
  zmq_msg_t kept;
  zmq_msg_init(&kept);
  for (;;) {
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    if (zmq_msg_recv(&id, s->router, 0) < 0) break;
    if (zmq_msg_recv(&body, s->router, 0) < 0) break;
    size_t n = zmq_msg_size(&body);
    if (n == 4 && memcmp(zmq_msg_data(&body), "stop", 4) == 0) {
      zmq_msg_close(&id);
      zmq_msg_close(&body);
      break;
    }
    zmq_msg_send(&id, s->router, ZMQ_SNDMORE);
    if (n > 4) { /* a block: keep it, acknowledge */
      zmq_msg_move(&kept, &body);
      zmq_send(s->router, "k", 1, 0);
    } else { /* a get: the kept block back, not copied */
      zmq_msg_t m;
      zmq_msg_init(&m);
      zmq_msg_copy(&m, &kept);
      zmq_msg_send(&m, s->router, 0);
    }
    zmq_msg_close(&body);
  }
  zmq_msg_close(&kept);
  return NULL;
}

/* The child: serves both sides until each is told to stop. Writes the two endpoints
 * to `fd` first. */
static int serve(int fd) {
  rill_side rs;
  memset(&rs, 0, sizeof rs);
  rill_variable_init(&rs.kept);
  rill_rpc_config cfg;
  rill_rpc_config_init(&cfg);
  cfg.secret = "";
  rill_status *st = rill_rpc_server_create("127.0.0.1:0", &cfg, &rs.srv);
  if (st) {
    fprintf(stderr, "bench_rpc: %s\n", rill_status_message(st));
    return 1;
  }
  raw_side raw;
  raw.ctx = zmq_ctx_new();
  raw.router = zmq_socket(raw.ctx, ZMQ_ROUTER);
  int zero = 0;
  zmq_setsockopt(raw.router, ZMQ_LINGER, &zero, sizeof zero);
  zmq_bind(raw.router, "tcp://127.0.0.1:*");
  char eps[3][256];
  size_t len = sizeof eps[1];
  zmq_getsockopt(raw.router, ZMQ_LAST_ENDPOINT, eps[1], &len);
  snprintf(eps[0], sizeof eps[0], "%s", rill_rpc_server_endpoint(rs.srv));
  /* The raw side's own Unix-domain socket, beside rill's. */
  char raw_ep[64];
  snprintf(raw_ep, sizeof raw_ep, "127.0.0.1:raw%d", (int)getpid());
  if (!rill_rpc_ipc_path(raw_ep, eps[2], sizeof eps[2]) || zmq_bind(raw.router, eps[2])) {
    fprintf(stderr, "bench_rpc: no same-host socket for the raw side\n");
    return 1;
  }
  if (!rill_rpc_server_ipc(rs.srv)[0]) {
    fprintf(stderr, "bench_rpc: rill's server has no same-host socket (RILL_RPC_IPC=0?)\n");
    return 1;
  }
  if (write(fd, eps, sizeof eps) != (ssize_t)sizeof eps) return 1;
  close(fd);
  pthread_create(&rs.th, NULL, rill_server, &rs);
  pthread_create(&raw.th, NULL, raw_server, &raw);
  pthread_join(raw.th, NULL);
  pthread_join(rs.th, NULL);
  rill_variable_clear(&rs.kept);
  rill_rpc_server_destroy(rs.srv);
  zmq_close(raw.router);
  zmq_ctx_term(raw.ctx);
  unlink(eps[2] + 6);
  return 0;
}

static void no_free(void *data, void *hint) { (void)data, (void)hint; }

static void raw_exchange(void *dealer, void *block, size_t bytes) {
  zmq_msg_t m;
  zmq_msg_init_data(&m, block, bytes, no_free, NULL);
  zmq_msg_send(&m, dealer, 0);
  zmq_msg_init(&m);
  zmq_msg_recv(&m, dealer, 0);
  zmq_msg_close(&m);
  zmq_send(dealer, "g", 1, 0);
  zmq_msg_init(&m);
  zmq_msg_recv(&m, dealer, 0);
  if (zmq_msg_size(&m) != bytes) {
    fprintf(stderr, "bench_rpc: raw reply of %zu bytes\n", zmq_msg_size(&m));
    exit(1);
  }
  zmq_msg_close(&m);
}

/* Times `iters` send+get exchanges of `v` through `client`. */
static double time_rill(rill_rpc_client *client, const char *ep, rill_variable *v,
                        rill_variable *back, size_t bytes, int iters) {
  double t0 = now_s();
  for (int i = 0; i < iters; i++) {
    rill_status *st = rill_rpc_send_var(client, ep, "w.block0", v, NULL, 0);
    if (!st) st = rill_rpc_get_var(client, ep, "w.block0", NULL, 0, back);
    if (st || rill_tensor_nbytes(&back->u.tensor) != bytes) {
      fprintf(stderr, "bench_rpc: %s\n", st ? rill_status_message(st) : "short reply");
      exit(1);
    }
  }
  return now_s() - t0;
}

static double time_raw(void *dealer, void *block, size_t bytes, int iters) {
  double t0 = now_s();
  for (int i = 0; i < iters; i++) raw_exchange(dealer, block, bytes);
  return now_s() - t0;
}

static rill_rpc_client *make_client(int ipc, const char *ep) {
  rill_rpc_config cfg;
  rill_rpc_config_init(&cfg);
  cfg.secret = "";
  cfg.deadline_ms = 60000;
  cfg.ipc = ipc;
  rill_rpc_client *client = NULL;
  rill_status *st = rill_rpc_client_create(&cfg, &client);
  if (!st) st = rill_rpc_wait_server(client, ep, 10000);
  if (st) {
    fprintf(stderr, "bench_rpc: %s\n", rill_status_message(st));
    exit(1);
  }
  return client;
}

static void *make_dealer(void *ctx, const char *address) {
  void *dealer = zmq_socket(ctx, ZMQ_DEALER);
  int zero = 0;
  zmq_setsockopt(dealer, ZMQ_LINGER, &zero, sizeof zero);
  zmq_connect(dealer, address);
  return dealer;
}

int main(void) {
  const size_t mib[] = {1, 8, 64};
  const int iters[] = {40, 8, 2};
  const int rounds = 7;

  int fds[2];
  if (pipe(fds)) return 1;
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    close(fds[0]);
    _exit(serve(fds[1]));
  }
  close(fds[1]);
  char eps[3][256];
  if (read(fds[0], eps, sizeof eps) != (ssize_t)sizeof eps) {
    fprintf(stderr, "bench_rpc: the server process did not start\n");
    return 1;
  }
  close(fds[0]);
  const char *ep = eps[0];
  rill_rpc_client *over_tcp = make_client(-1, ep), *over_ipc = make_client(1, ep);
  void *ctx = zmq_ctx_new();
  void *raw_tcp = make_dealer(ctx, eps[1]), *raw_ipc = make_dealer(ctx, eps[2]);

  printf("rill_rpc send+get vs raw ZeroMQ, same bytes, client and server in two processes, "
         "over TCP on 127.0.0.1 and over a Unix-domain socket (ipc); fastest of %d "
         "alternating rounds\n", rounds);
  printf("%8s %10s %10s %10s %10s %9s %9s %9s\n", "block", "rill tcp", "raw tcp", "rill ipc",
         "raw ipc", "tcp/raw", "ipc/raw", "ipc/tcp");
  printf("%8s %10s %10s %10s %10s %9s %9s %9s\n", "", "MB/s", "MB/s", "MB/s", "MB/s", "", "",
         "(rill)");
  bool ok = true;
  for (size_t k = 0; k < sizeof mib / sizeof mib[0]; k++) {
    size_t bytes = mib[k] << 20;
    rill_variable v;
    rill_variable_init(&v);
    rill_dims d = {1, {(int64_t)(bytes / 4)}};
    if (rill_tensor_alloc(rill_variable_tensor(&v), RILL_DTYPE_FP32, &d)) return 1;
    memset(rill_tensor_ptr(&v.u.tensor), 1, bytes);
    void *block = rill_tensor_ptr(&v.u.tensor);
    rill_variable back;
    rill_variable_init(&back);
    double best[4] = {1e9, 1e9, 1e9, 1e9};
    for (int r = 0; r < rounds + 1; r++) { /* round 0 warms every path up */
      double t[4] = {time_rill(over_tcp, ep, &v, &back, bytes, iters[k]),
                     time_raw(raw_tcp, block, bytes, iters[k]),
                     time_rill(over_ipc, ep, &v, &back, bytes, iters[k]),
                     time_raw(raw_ipc, block, bytes, iters[k])};
      for (int i = 0; i < 4 && r > 0; i++)
        if (t[i] < best[i]) best[i] = t[i];
    }
    double moved = 2.0 * (double)bytes * iters[k] / 1e6;
    double tcp_ratio = best[1] / best[0], ipc_ratio = best[3] / best[2];
    printf("%5zu MiB %10.0f %10.0f %10.0f %10.0f %9.2f %9.2f %9.2f\n", mib[k], moved / best[0],
           moved / best[1], moved / best[2], moved / best[3], tcp_ratio, ipc_ratio,
           best[0] / best[2]);
    if (tcp_ratio < 0.8 || ipc_ratio < 0.8) ok = false;
    rill_variable_clear(&back);
    rill_variable_clear(&v);
  }
  printf("target: rill / raw >= 0.8 on each transport for every block size: %s\n",
         ok ? "met" : "NOT met");
  rill_status *st = rill_rpc_send_notice(over_tcp, ep, "stop", 0);
  rill_status_destroy(st);
  zmq_send(raw_tcp, "stop", 4, 0);
  int status = 0;
  waitpid(child, &status, 0);
  rill_rpc_client_destroy(over_tcp);
  rill_rpc_client_destroy(over_ipc);
  zmq_close(raw_tcp);
  zmq_close(raw_ipc);
  zmq_ctx_term(ctx);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
