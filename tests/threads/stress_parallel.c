/* The parallel schedule against the sequential one on random programs: thousands of
 * random DAGs (random ops over a small pool of variables, so every kind of dependency
 * and in-place op occurs; some ops blocking with tiny sleeps), each run by a sequential
 * and a parallel executor and compared bit for bit; some with a failing op (both
 * schedules must return that op's error); some long ones cancelled mid-run from another
 * thread or stopped by a deadline. Plain C so it runs under ThreadSanitizer. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "rill.h"
#include "test_ops.h"

enum { POOL = 8, FED = 2, N = 16, DAGS = 1500, MAXOPS = 40 };

static unsigned rnd(unsigned *seed, unsigned n) { return (unsigned)rand_r(seed) % n; }

static const char *vname(unsigned i) {
  static const char *names[POOL] = {"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"};
  return names[i];
}

static rill_status *add2(rill_program *p, const char *type, const char *x, const char *y,
                         const char *out) {
  rill_op_builder *b;
  RILL_TRY(rill_op_builder_create(type, &b));
  rill_status *st = rill_op_builder_input(b, "X", &x, 1);
  if (!st && y) st = rill_op_builder_input(b, "Y", &y, 1);
  if (!st) st = rill_op_builder_output(b, "Out", &out, 1);
  if (!st && !y) st = rill_op_builder_attr_float(b, "scale", 0.75f);
  if (!st) st = rill_op_builder_append(b, p, 0);
  rill_op_builder_destroy(b);
  return st;
}

/* A random program over the pool; *defined gets the variables holding a value at the
 * end; *failing the index of the failing op or -1. */
static rill_program *random_dag(unsigned *seed, bool inject, bool *defined, int *failing) {
  rill_program *p;
  if (rill_program_create(&p)) return NULL;
  const int64_t d[] = {N};
  for (unsigned v = 0; v < POOL; v++)
    if (rill_block_add_var(p, 0, vname(v), RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 1, 0, false)) {
      rill_program_destroy(p);
      return NULL;
    }
  for (unsigned v = 0; v < POOL; v++) defined[v] = v < FED;
  int nops = 1 + (int)rnd(seed, MAXOPS);
  *failing = inject ? (int)rnd(seed, (unsigned)nops) : -1;
  for (int i = 0; i < nops; i++) {
    unsigned x, y, out = rnd(seed, POOL);
    do x = rnd(seed, POOL); while (!defined[x]);
    do y = rnd(seed, POOL); while (!defined[y]);
    unsigned kind = rnd(seed, 10);
    rill_status *st;
    if (i == *failing)
      st = test_op(p, "test_add", vname(x), vname(out), 0.5f, 1, true);
    else if (kind < 4)
      st = test_op(p, "test_add", vname(x), vname(out), (float)rnd(seed, 7), 1 + (int32_t)rnd(seed, 20), false);
    else if (kind < 5)
      st = test_op(p, "test_sleep", vname(x), vname(out), 0.25f, 20 + (int32_t)rnd(seed, 80), false);
    else if (kind < 8)
      st = add2(p, "elementwise_add", vname(x), vname(y), vname(out));
    else
      st = add2(p, "scale", vname(x), NULL, vname(out));
    if (st) {
      fprintf(stderr, "build: %s\n", rill_status_message(st));
      rill_status_destroy(st);
      rill_program_destroy(p);
      return NULL;
    }
    defined[out] = true;
  }
  return p;
}

static rill_status *run(rill_executor *e, rill_program *p, rill_scope *s, rill_tensor **feeds,
                        const bool *defined, rill_tensor **outs, size_t *nout) {
  const char *feed_names[FED], *fetch[POOL];
  for (unsigned v = 0; v < FED; v++) feed_names[v] = vname(v);
  size_t n = 0;
  for (unsigned v = 0; v < POOL; v++)
    if (defined[v]) fetch[n++] = vname(v);
  *nout = n;
  return rill_executor_run(e, p, s, feed_names, feeds, FED, fetch, n, outs);
}

typedef struct canceller {
  rill_executor *e;
  int after;
} canceller;

static void *cancel_later(void *arg) {
  canceller *c = arg;
  while (atomic_load(&test_ops_started) < c->after) {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  rill_executor_cancel(c->e);
  return NULL;
}

/* A chain of 200 sleeps of 0.5 ms beside compute, stopped early. */
static void long_runs(rill_executor *par, rill_executor *seq, rill_scope *s, rill_tensor **feeds) {
  rill_program *p;
  CHECK(!rill_program_create(&p), "program");
  const int64_t d[] = {N};
  char prev[16] = "v0", name[16];
  bool defined[POOL] = {true, true};
  for (unsigned v = 0; v < POOL; v++)
    CHECK(!rill_block_add_var(p, 0, vname(v), RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 1, 0, false), "var");
  for (int i = 0; i < 200; i++) {
    snprintf(name, sizeof name, "s%d", i);
    CHECK(!rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 1, 0, false), "var");
    CHECK(!test_op(p, "test_sleep", prev, name, 1, 500, false), "sleep op");
    CHECK(!test_op(p, "test_add", "v1", "v2", 1, 5, false), "add op");
    snprintf(prev, sizeof prev, "%s", name);
  }
  defined[2] = true;
  rill_executor *es[2] = {par, seq};
  for (int k = 0; k < 2; k++) {
    rill_tensor *outs[POOL];
    size_t n;
    atomic_store(&test_ops_started, 0);
    canceller c = {es[k], 10};
    pthread_t th;
    CHECK(!pthread_create(&th, NULL, cancel_later, &c), "thread");
    rill_status *st = run(es[k], p, s, feeds, defined, outs, &n);
    pthread_join(th, NULL);
    CHECK(rill_status_code(st) == RILL_CANCELLED, "cancel: %s", rill_status_message(st));
    CHECK(atomic_load(&test_ops_started) < 400, "cancelled run kept going");
    rill_status_destroy(st);

    CHECK(!rill_executor_set_timeout(es[k], 5000), "timeout");
    st = run(es[k], p, s, feeds, defined, outs, &n);
    CHECK(rill_status_code(st) == RILL_DEADLINE_EXCEEDED, "deadline: %s", rill_status_message(st));
    rill_status_destroy(st);
    CHECK(!rill_executor_set_timeout(es[k], 0), "timeout");
  }
  rill_program_destroy(p);
}

int main(int argc, char **argv) {
  unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 12345u;
  int dags = argc > 2 ? atoi(argv[2]) : DAGS;
  CHECK(test_ops_register(), "register test ops");
  rill_executor_options two = RILL_EXECUTOR_OPTIONS_INIT, four = RILL_EXECUTOR_OPTIONS_INIT;
  two.num_threads = 2;
  four.num_threads = 4;
  rill_executor *seq = NULL, *par[2] = {NULL, NULL};
  rill_scope *s = NULL;
  CHECK(!rill_executor_create(NULL, &seq), "executor");
  CHECK(!rill_executor_create(&two, &par[0]), "executor");
  CHECK(!rill_executor_create(&four, &par[1]), "executor");
  CHECK(!rill_scope_create(NULL, &s), "scope");
  if (check_failed) return check_report();
  CHECK(!rill_executor_set_schedule(seq, RILL_SCHEDULE_SEQUENTIAL), "schedule");
  for (int k = 0; k < 2; k++) CHECK(!rill_executor_set_schedule(par[k], RILL_SCHEDULE_PARALLEL), "schedule");
  rill_tensor *feeds[FED];
  const int64_t d[] = {N};
  for (int f = 0; f < FED; f++) {
    CHECK(!rill_tensor_create(RILL_DTYPE_FP32, d, 1, &feeds[f]), "feed");
    float *v = rill_tensor_data(feeds[f]);
    for (int i = 0; i < N; i++) v[i] = sinf((float)(i + 7 * f));
  }

  int mismatches = 0, errors = 0, injected = 0;
  for (int g = 0; g < dags; g++) {
    bool defined[POOL];
    int failing;
    bool inject = rnd(&seed, 8) == 0;
    rill_program *p = random_dag(&seed, inject, defined, &failing);
    if (!p) {
      errors++;
      continue;
    }
    rill_executor *pe = par[g & 1];
    CHECK(!rill_executor_set_release_temporaries(pe, rnd(&seed, 2)), "release");
    rill_tensor *want[POOL], *got[POOL];
    size_t n = 0;
    rill_status *sst = run(seq, p, s, feeds, defined, want, &n);
    rill_status *pst = run(pe, p, s, feeds, defined, got, &n);
    if (inject) {
      injected++;
      char needle[64];
      snprintf(needle, sizeof needle, "op #%d 'test_add': injected failure", failing);
      CHECK(sst && strstr(rill_status_message(sst), needle), "dag %d sequential: %s", g, rill_status_message(sst));
      CHECK(pst && strstr(rill_status_message(pst), needle), "dag %d parallel: %s", g, rill_status_message(pst));
    } else if (sst || pst) {
      fprintf(stderr, "dag %d: %s / %s\n", g, rill_status_message(sst), rill_status_message(pst));
      errors++;
    } else {
      for (size_t i = 0; i < n; i++) {
        if (rill_tensor_byte_size(want[i]) != rill_tensor_byte_size(got[i]) ||
            memcmp(rill_tensor_data(want[i]), rill_tensor_data(got[i]), rill_tensor_byte_size(want[i])))
          mismatches++;
        rill_tensor_destroy(want[i]);
        rill_tensor_destroy(got[i]);
      }
    }
    rill_status_destroy(sst);
    rill_status_destroy(pst);
    rill_program_destroy(p);
  }
  CHECK(mismatches == 0, "%d outputs differ between the schedules", mismatches);
  CHECK(errors == 0, "%d runs failed", errors);
  CHECK(injected > dags / 20, "only %d runs with an injected error", injected);
  long_runs(par[0], seq, s, feeds);
  long_runs(par[1], seq, s, feeds);

  for (int f = 0; f < FED; f++) rill_tensor_destroy(feeds[f]);
  rill_scope_destroy(s);
  rill_executor_destroy(seq);
  rill_executor_destroy(par[0]);
  rill_executor_destroy(par[1]);
  return check_report();
}
