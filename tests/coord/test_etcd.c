/* The etcd client (framework/coord/etcd.h) and the process's coordination
 * (rill_coord_*, rill.h) against a real etcd server: each test that needs one starts
 * /usr/bin/etcd (or $RILL_ETCD_BIN) on loopback ports picked at run time, with its data in
 * a fresh temporary folder, and stops it at the end. Without the binary those tests are
 * skipped, saying so. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "framework/coord/coord.h"
#include "framework/coord/etcd.h"
#include "support/shell.h"

#define POK(expr)                                                                 \
  do {                                                                            \
    rill_status *st_ = (expr);                                                    \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));               \
  } while (0)

static pid_t etcd_pid = -1;
static char etcd_url[64];
static char etcd_dir[128];

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* A loopback port nothing listens on now; *fd keeps a listening socket on it when fd is
 * not NULL (a server that accepts connections and never answers). */
static int loopback_port(int *fd) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  cr_assert(s >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t len = sizeof a;
  cr_assert_eq(getsockname(s, (struct sockaddr *)&a, &len), 0);
  if (fd) {
    cr_assert_eq(listen(s, 16), 0);
    *fd = s;
  } else {
    close(s);
  }
  return ntohs(a.sin_port);
}

static const char *etcd_binary(void) {
  const char *b = getenv("RILL_ETCD_BIN");
  if (b && *b) return access(b, X_OK) == 0 ? b : NULL;
  return access("/usr/bin/etcd", X_OK) == 0 ? "/usr/bin/etcd" : NULL;
}

/* Starts etcd and waits until it answers (at most 20 s); skips the test without it. */
static void etcd_start(void) {
  const char *bin = etcd_binary();
  if (!bin) cr_skip_test("no etcd binary (/usr/bin/etcd, or RILL_ETCD_BIN): apt-get install etcd-server");
  snprintf(etcd_dir, sizeof etcd_dir, "/tmp/rill-etcd-XXXXXX");
  cr_assert_not_null(mkdtemp(etcd_dir));
  int client = loopback_port(NULL), peer = loopback_port(NULL);
  char curl[64], purl[64], cluster[96], data[160], log[160];
  snprintf(etcd_url, sizeof etcd_url, "http://127.0.0.1:%d", client);
  snprintf(curl, sizeof curl, "http://127.0.0.1:%d", client);
  snprintf(purl, sizeof purl, "http://127.0.0.1:%d", peer);
  snprintf(cluster, sizeof cluster, "t=%s", purl);
  snprintf(data, sizeof data, "%s/data", etcd_dir);
  snprintf(log, sizeof log, "%s/log", etcd_dir);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
    if (!freopen(log, "w", stdout) || !freopen(log, "w", stderr)) _exit(126);
    execl(bin, bin, "--name", "t", "--data-dir", data, "--listen-client-urls", curl,
          "--advertise-client-urls", curl, "--listen-peer-urls", purl,
          "--initial-advertise-peer-urls", purl, "--initial-cluster", cluster, (char *)NULL);
    _exit(127);
  }
  etcd_pid = pid;
  rill_etcd *c;
  POK(rill_etcd_create(etcd_url, 500, &c));
  int64_t until = now_ms() + 20000;
  for (;;) {
    rill_etcd_kv *kvs = NULL;
    size_t n = 0;
    rill_status *st = rill_etcd_get(c, "/ready", false, false, &kvs, &n);
    rill_etcd_kvs_free(kvs, n);
    if (!st) break;
    if (now_ms() > until) {
      char *out = NULL;
      sh(&out, "tail -n 20 %s", log);
      cr_assert_fail("etcd did not answer within 20 s: %s\n%s", rill_status_message(st), out);
    }
    rill_status_destroy(st);
    sleep_ms(50);
  }
  rill_etcd_destroy(c);
}

static void etcd_stop(void) {
  if (etcd_pid > 0) {
    kill(etcd_pid, SIGTERM);
    int64_t until = now_ms() + 5000;
    while (waitpid(etcd_pid, NULL, WNOHANG) == 0) {
      if (now_ms() > until) {
        kill(etcd_pid, SIGKILL);
        waitpid(etcd_pid, NULL, 0);
        break;
      }
      sleep_ms(20);
    }
    etcd_pid = -1;
  }
  if (etcd_dir[0]) {
    char *out = NULL;
    sh(&out, "rm -rf '%s'", etcd_dir);
    free(out);
    etcd_dir[0] = '\0';
  }
}

TestSuite(coord, .fini = etcd_stop, .timeout = 60);

static rill_etcd *client(void) {
  rill_etcd *c;
  POK(rill_etcd_create(etcd_url, 2000, &c));
  return c;
}

static bool has_key(rill_etcd *c, const char *key) {
  rill_etcd_kv *kvs = NULL;
  size_t n = 0;
  POK(rill_etcd_get(c, key, false, false, &kvs, &n));
  rill_etcd_kvs_free(kvs, n);
  return n == 1;
}

Test(coord, base64_round_trips_every_length) {
  unsigned char bytes[40];
  for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i * 37 + 250);
  for (size_t n = 0; n <= sizeof bytes; n++) {
    char *enc = rill_base64_encode(bytes, n);
    cr_assert_eq(strlen(enc), (n + 2) / 3 * 4);
    size_t len = 99;
    char *dec = rill_base64_decode(enc, &len);
    cr_assert_not_null(dec, "length %zu: %s", n, enc);
    cr_assert_eq(len, n);
    cr_assert_eq(memcmp(dec, bytes, n), 0);
    rill_free_buffer(enc);
    rill_free_buffer(dec);
  }
  char *hi = rill_base64_encode("hi", 2);
  cr_assert_str_eq(hi, "aGk=");
  rill_free_buffer(hi);
  size_t len;
  cr_assert_null(rill_base64_decode("aGk", &len));
  cr_assert_null(rill_base64_decode("a=Gk", &len));
  cr_assert_null(rill_base64_decode("aG!k", &len));
}

Test(coord, bad_endpoints_are_refused) {
  rill_etcd *c = NULL;
  const char *bad[] = {"", "127.0.0.1:2379", "http://127.0.0.1", "http://h:0", "http://h:x",
                       "http://h:1,ftp://h:2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    rill_status *st = rill_etcd_create(bad[i], 1000, &c);
    cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT, "'%s'", bad[i]);
    rill_status_destroy(st);
    cr_assert_null(c);
  }
}

Test(coord, put_get_prefix_delete) {
  etcd_start();
  rill_etcd *c = client();
  POK(rill_etcd_put(c, "/t/a/1", "one", 3, 0));
  POK(rill_etcd_put(c, "/t/a/2", "two\0x", 5, 0)); /* values are bytes */
  POK(rill_etcd_put(c, "/t/b", "bee", 3, 0));
  rill_etcd_kv *kvs = NULL;
  size_t n = 0;
  POK(rill_etcd_get(c, "/t/a/1", false, false, &kvs, &n));
  cr_assert_eq(n, 1);
  cr_assert_str_eq(kvs[0].key, "/t/a/1");
  cr_assert_str_eq(kvs[0].value, "one");
  cr_assert_eq(kvs[0].lease, 0);
  cr_assert_gt(kvs[0].create_revision, 0);
  rill_etcd_kvs_free(kvs, n);
  POK(rill_etcd_get(c, "/t/a/", true, false, &kvs, &n));
  cr_assert_eq(n, 2);
  cr_assert_str_eq(kvs[0].key, "/t/a/1");
  cr_assert_str_eq(kvs[1].key, "/t/a/2");
  cr_assert_eq(kvs[1].value_len, 5);
  cr_assert_eq(memcmp(kvs[1].value, "two\0x", 5), 0);
  rill_etcd_kvs_free(kvs, n);
  POK(rill_etcd_get(c, "/t/none", false, false, &kvs, &n));
  cr_assert_eq(n, 0);
  cr_assert_null(kvs);
  int64_t deleted = -1;
  POK(rill_etcd_delete(c, "/t/a/", true, &deleted));
  cr_assert_eq(deleted, 2);
  POK(rill_etcd_get(c, "/t/", true, true, &kvs, &n));
  cr_assert_eq(n, 1);
  cr_assert_str_eq(kvs[0].key, "/t/b");
  cr_assert_eq(kvs[0].value_len, 0, "keys_only reads no value");
  rill_etcd_kvs_free(kvs, n);
  POK(rill_etcd_delete(c, "/t/b", false, &deleted));
  cr_assert_eq(deleted, 1);
  cr_assert_not(has_key(c, "/t/b"));
  rill_etcd_destroy(c);
}

Test(coord, lease_expiry_removes_key_and_keepalive_keeps_it) {
  etcd_start();
  rill_etcd *c = client();
  int64_t kept, dropped;
  POK(rill_etcd_lease_grant(c, 2, &kept));
  POK(rill_etcd_lease_grant(c, 2, &dropped));
  cr_assert_neq(kept, dropped);
  POK(rill_etcd_put(c, "/t/kept", "k", 1, kept));
  POK(rill_etcd_put(c, "/t/dropped", "d", 1, dropped));
  POK(rill_etcd_keepalive_start(c, kept, 600));
  rill_status *st = rill_etcd_keepalive_start(c, kept, 600);
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION);
  rill_status_destroy(st);
  int64_t t0 = now_ms();
  while (has_key(c, "/t/dropped") && now_ms() - t0 < 10000) sleep_ms(100);
  int64_t gone_after = now_ms() - t0;
  cr_assert_not(has_key(c, "/t/dropped"), "the key of an unrenewed 2 s lease is still there");
  cr_assert_geq(gone_after, 1000, "gone after %lld ms, before its TTL", (long long)gone_after);
  st = rill_etcd_lease_keepalive(c, dropped);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND, "%s", rill_status_message(st));
  rill_status_destroy(st);
  st = rill_etcd_put(c, "/t/late", "x", 1, dropped);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND, "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), "/t/late"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  /* the renewed lease outlives its TTL */
  while (now_ms() - t0 < 3500) sleep_ms(100);
  cr_assert(has_key(c, "/t/kept"), "the renewed lease's key expired");
  cr_assert_not(rill_etcd_keepalive_lost(c));
  rill_etcd_keepalive_stop(c);
  rill_etcd_keepalive_stop(c); /* a second stop does nothing */
  POK(rill_etcd_lease_revoke(c, kept));
  cr_assert_not(has_key(c, "/t/kept"), "revoking the lease leaves its key");
  rill_etcd_destroy(c);
}

typedef struct contender {
  rill_etcd *c;
  int64_t lease;
  const char *name;
  bool created;
  rill_etcd_kv *holder;
  rill_status *st;
  pthread_barrier_t *start;
} contender;

static void *contend(void *arg) {
  contender *k = arg;
  pthread_barrier_wait(k->start);
  k->st = rill_etcd_create_if_absent(k->c, "/t/saver", k->name, strlen(k->name), k->lease,
                                     &k->created, &k->holder);
  return NULL;
}

Test(coord, create_if_absent_has_exactly_one_winner) {
  etcd_start();
  for (int round = 0; round < 5; round++) {
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    contender k[2] = {{.name = "a", .start = &start}, {.name = "b", .start = &start}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
      k[i].c = client();
      POK(rill_etcd_lease_grant(k[i].c, 30, &k[i].lease));
    }
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, contend, &k[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < 2; i++) POK(k[i].st);
    cr_assert_eq(k[0].created + k[1].created, 1, "round %d: %d winners", round,
                 k[0].created + k[1].created);
    int w = k[0].created ? 0 : 1;
    for (int i = 0; i < 2; i++) {
      cr_assert_eq(k[i].holder->lease, k[w].lease, "round %d: contender %d sees another holder",
                   round, i);
      cr_assert_str_eq(k[i].holder->value, k[w].name);
    }
    /* the winner's lease goes: the loser takes the key at its next try */
    POK(rill_etcd_lease_revoke(k[w].c, k[w].lease));
    bool created = false;
    rill_etcd_kv *holder = NULL;
    POK(rill_etcd_create_if_absent(k[1 - w].c, "/t/saver", "again", 5, k[1 - w].lease, &created,
                                   &holder));
    cr_assert(created);
    cr_assert_eq(holder->lease, k[1 - w].lease);
    rill_etcd_kvs_free(holder, 1);
    POK(rill_etcd_lease_revoke(k[1 - w].c, k[1 - w].lease));
    for (int i = 0; i < 2; i++) {
      rill_etcd_kvs_free(k[i].holder, 1);
      rill_etcd_destroy(k[i].c);
    }
  }
}

Test(coord, unreachable_endpoint_fails_in_time_naming_it) {
  int port = loopback_port(NULL);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  rill_etcd *c;
  POK(rill_etcd_create(url, 300, &c));
  int64_t t0 = now_ms();
  rill_status *st = rill_etcd_put(c, "/rill/j/saver", "x", 1, 0);
  cr_assert_lt(now_ms() - t0, 2000);
  cr_assert_eq(rill_status_code(st), RILL_UNAVAILABLE, "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), url), "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), "/rill/j/saver"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_etcd_destroy(c);

  /* a server that accepts the connection and never answers */
  int fd = -1;
  port = loopback_port(&fd);
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  POK(rill_etcd_create(url, 300, &c));
  t0 = now_ms();
  int64_t lease = 0;
  st = rill_etcd_lease_grant(c, 5, &lease);
  int64_t took = now_ms() - t0;
  cr_assert_eq(rill_status_code(st), RILL_DEADLINE_EXCEEDED, "%s", rill_status_message(st));
  cr_assert_geq(took, 250);
  cr_assert_lt(took, 2000, "took %lld ms against a 300 ms timeout", (long long)took);
  cr_assert(strstr(rill_status_message(st), url), "%s", rill_status_message(st));
  cr_assert_eq(lease, 0, "out parameter changed on failure");
  rill_status_destroy(st);
  rill_etcd_destroy(c);
  close(fd);
}

Test(coord, a_dead_first_endpoint_fails_over_to_the_next) {
  etcd_start();
  char urls[160];
  snprintf(urls, sizeof urls, "http://127.0.0.1:%d, %s", loopback_port(NULL), etcd_url);
  rill_etcd *c;
  POK(rill_etcd_create(urls, 1000, &c));
  POK(rill_etcd_put(c, "/t/x", "1", 1, 0));
  cr_assert(has_key(c, "/t/x"));
  rill_etcd_destroy(c);
}

static void coord_env_job(void) {
  setenv("RILL_ETCD_ENDPOINTS", etcd_url, 1);
  setenv("RILL_JOB", "jobA", 1);
  setenv("RILL_ETCD_TTL", "2", 1);
  rill_coord_shutdown(); /* read the environment again */
}

Test(coord, without_etcd_the_static_roles_hold) {
  unsetenv("RILL_ETCD_ENDPOINTS");
  rill_coord_shutdown();
  cr_assert_not(rill_coord_enabled());
  bool saver = false;
  POK(rill_coord_elect_saver(0, &saver));
  cr_assert(saver);
  POK(rill_coord_elect_saver(1, &saver));
  cr_assert_not(saver);
  POK(rill_coord_note_snapshot(7));
  POK(rill_coord_register("pserver", 0, "127.0.0.1:1"));
  int64_t step = 5;
  POK(rill_coord_newest_snapshot(&step));
  cr_assert_eq(step, -1);
  char *eps = NULL;
  rill_status *st = rill_coord_wait_pservers(1, 10, &eps);
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION);
  cr_assert(strstr(rill_status_message(st), "RILL_ETCD_ENDPOINTS"));
  rill_status_destroy(st);
}

Test(coord, process_registers_elects_and_records_snapshots) {
  etcd_start();
  coord_env_job();
  cr_assert(rill_coord_enabled());
  char *eps = NULL;
  int64_t t0 = now_ms();
  rill_status *st = rill_coord_wait_pservers(2, 300, &eps);
  cr_assert_eq(rill_status_code(st), RILL_DEADLINE_EXCEEDED, "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), "/rill/jobA/pservers/"), "%s",
            rill_status_message(st));
  cr_assert_lt(now_ms() - t0, 2000);
  rill_status_destroy(st);
  POK(rill_coord_register("pserver", 1, "127.0.0.1:7001"));
  POK(rill_coord_register("pserver", 0, "127.0.0.1:7000"));
  POK(rill_coord_wait_pservers(2, 5000, &eps));
  cr_assert_str_eq(eps, "127.0.0.1:7000,127.0.0.1:7001", "ordered by rank");
  rill_free_buffer(eps);

  bool saver = false;
  POK(rill_coord_elect_saver(3, &saver));
  cr_assert(saver, "the only contender is not the saver");
  POK(rill_coord_elect_saver(3, &saver));
  cr_assert(saver, "the saver lost its role on a second call");
  rill_etcd *c = client();
  rill_etcd_kv *kvs = NULL;
  size_t n = 0;
  POK(rill_etcd_get(c, "/rill/jobA/saver", false, false, &kvs, &n));
  cr_assert_eq(n, 1);
  cr_assert_str_eq(kvs[0].value, "trainer 3");
  cr_assert_neq(kvs[0].lease, 0);
  rill_etcd_kvs_free(kvs, n);

  int64_t step = 0;
  POK(rill_coord_newest_snapshot(&step));
  cr_assert_eq(step, -1);
  POK(rill_coord_note_snapshot(5));
  POK(rill_coord_note_snapshot(120));
  POK(rill_coord_note_snapshot(30)); /* numeric order, not the keys' */
  POK(rill_coord_newest_snapshot(&step));
  cr_assert_eq(step, 120);

  /* the keys outlive the 2 s TTL while the process lives */
  sleep_ms(3000);
  cr_assert(has_key(c, "/rill/jobA/pservers/000000"));
  rill_coord_shutdown(); /* revokes: the saver and the registrations go at once */
  cr_assert_not(has_key(c, "/rill/jobA/saver"));
  cr_assert_not(has_key(c, "/rill/jobA/pservers/000001"));
  cr_assert(has_key(c, "/rill/jobA/snapshots/120"), "snapshot records have no lease");
  rill_etcd_destroy(c);
  unsetenv("RILL_ETCD_ENDPOINTS");
}

Test(coord, snapshot_keys_parse_strictly) {
  int64_t s = -1;
  cr_assert(rill_coord_snapshot_step("/rill/j/snapshots/42", "/rill/j/snapshots/", &s));
  cr_assert_eq(s, 42);
  cr_assert_not(rill_coord_snapshot_step("/rill/j/snapshots/", "/rill/j/snapshots/", &s));
  cr_assert_not(rill_coord_snapshot_step("/rill/j/snapshots/4x", "/rill/j/snapshots/", &s));
  cr_assert_not(rill_coord_snapshot_step("/rill/k/snapshots/4", "/rill/j/snapshots/", &s));
  cr_assert_not(
      rill_coord_snapshot_step("/rill/j/snapshots/1234567890123456789", "/rill/j/snapshots/", &s));
}
