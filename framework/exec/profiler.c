/* The profiler: per-thread event buffers, merged at stop into a Chrome trace-event file
 * and a summary table. See profiler.h and doc/design/profiler.md.
 *
 * Concurrency. Every thread that records has a header (struct tbuf), registered once in
 * a global list and kept until the thread exits. Its event array exists only while the
 * profiler is on: start allocates one per header, stop merges and frees them. A writer
 * marks its header busy, then checks the flag again (both sequentially consistent);
 * start and stop clear the flag, then wait for each busy header: either the writer
 * sees the profiler off and leaves, or stop sees it busy and waits. Events are written
 * only by their thread, so no lock is taken per event. */
#define _GNU_SOURCE
#include "framework/exec/profiler.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/base/status.h"
#include "framework/base/strmap.h"
#include "framework/data/tensor.h"
#include "framework/io/file.h"

#define NAME_MAX_LEN 48
#define ARGS_MAX_LEN 96
#define THREAD_NAME_LEN 32
#define DEFAULT_EVENTS 32768u

enum { EV_OP, EV_ASYNC_OP, EV_SPAN, EV_ASYNC_BEGIN, EV_ASYNC_END };

typedef struct prof_event {
  int64_t t0, t1, t2; /* op/span: t0..t1; async op: enqueue t0, start t1, end t2;
                       * op: t2 = tensor bytes live at its end */
  uint64_t id;        /* async begin/end; op: peak tensor bytes at its end */
  int32_t block, index;
  uint8_t kind;
  char cat[15];
  char name[NAME_MAX_LEN];
  char args[ARGS_MAX_LEN];
} prof_event;

typedef struct tbuf {
  struct tbuf *next;
  atomic_int busy;
  bool dead; /* the thread exited; freed at the next start or stop (under g_mu) */
  int32_t tid;
  char name[THREAD_NAME_LEN];
  prof_event *ev; /* cap entries while the profiler is on, else NULL */
  uint32_t cap;
  atomic_uint n;              /* events written (only the owner writes) */
  atomic_uint_least64_t dropped;
} tbuf;

atomic_int rill_prof_on_flag;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static tbuf *g_bufs;       /* under g_mu */
static uint32_t g_cap;     /* events per thread of the session; under g_mu */
static bool g_session;     /* started and not stopped; under g_mu */
static int64_t g_mono0, g_wall0;
static atomic_uint_least64_t g_async_id;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static _Thread_local tbuf *t_buf;
static _Thread_local char t_name[THREAD_NAME_LEN];

int64_t rill_prof_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void copy_str(char *dst, size_t cap, const char *src) {
  size_t n = src ? strnlen(src, cap - 1) : 0;
  if (n) memcpy(dst, src, n);
  dst[n] = '\0';
}

static void wait_idle(tbuf *b) {
  while (atomic_load_explicit(&b->busy, memory_order_seq_cst)) sched_yield();
}

static void free_dead_locked(void) {
  for (tbuf **pp = &g_bufs; *pp;) {
    tbuf *b = *pp;
    if (b->dead) {
      *pp = b->next;
      rill_free(b->ev);
      rill_free(b);
    } else {
      pp = &b->next;
    }
  }
}

static void thread_exit(void *arg) {
  tbuf *b = arg;
  t_buf = NULL;
  pthread_mutex_lock(&g_mu);
  b->dead = true; /* its events, if any, still go into this session's trace */
  if (!b->ev) free_dead_locked();
  pthread_mutex_unlock(&g_mu);
}

static void make_key(void) { (void)pthread_key_create(&g_key, thread_exit); }

static void default_name(char *out, int32_t tid) {
  if (tid == (int32_t)getpid()) {
    copy_str(out, THREAD_NAME_LEN, "main");
    return;
  }
  char n[16] = "";
  if (pthread_getname_np(pthread_self(), n, sizeof n) == 0 && n[0])
    snprintf(out, THREAD_NAME_LEN, "%s", n);
  else
    snprintf(out, THREAD_NAME_LEN, "thread %d", (int)tid);
}

/* The calling thread's header, registered on first use; NULL without memory. */
static tbuf *my_buf(void) {
  if (t_buf) return t_buf;
  pthread_once(&g_once, make_key);
  tbuf *b = rill_calloc(1, sizeof *b);
  if (!b) return NULL;
  b->tid = (int32_t)syscall(SYS_gettid);
  if (t_name[0])
    copy_str(b->name, sizeof b->name, t_name);
  else
    default_name(b->name, b->tid);
  pthread_mutex_lock(&g_mu);
  if (g_session && g_cap) b->ev = rill_calloc(g_cap, sizeof *b->ev);
  b->cap = b->ev ? g_cap : 0;
  b->next = g_bufs;
  g_bufs = b;
  pthread_mutex_unlock(&g_mu);
  (void)pthread_setspecific(g_key, b);
  t_buf = b;
  return b;
}

void rill_prof_thread_name(const char *name) {
  copy_str(t_name, sizeof t_name, name);
  if (t_buf) {
    pthread_mutex_lock(&g_mu);
    copy_str(t_buf->name, sizeof t_buf->name, name);
    pthread_mutex_unlock(&g_mu);
  }
}

/* Reserves the next event of the calling thread, or NULL (off, full: counted as
 * dropped). On success the header is busy until commit(). */
static prof_event *reserve(tbuf **out) {
  tbuf *b = my_buf();
  if (!b) return NULL;
  atomic_store_explicit(&b->busy, 1, memory_order_seq_cst);
  if (!atomic_load_explicit(&rill_prof_on_flag, memory_order_seq_cst) || !b->ev) {
    atomic_store_explicit(&b->busy, 0, memory_order_release);
    return NULL;
  }
  unsigned n = atomic_load_explicit(&b->n, memory_order_relaxed);
  if (n >= b->cap) {
    atomic_fetch_add_explicit(&b->dropped, 1, memory_order_relaxed);
    atomic_store_explicit(&b->busy, 0, memory_order_release);
    return NULL;
  }
  *out = b;
  return &b->ev[n];
}

static void commit(tbuf *b) {
  atomic_store_explicit(&b->n, atomic_load_explicit(&b->n, memory_order_relaxed) + 1,
                        memory_order_release);
  atomic_store_explicit(&b->busy, 0, memory_order_release);
}

/* `"var":"<name, JSON-escaped, cut to fit>","bytes":N` into args. */
static void copy_args(char *args, size_t cap, const char *var, size_t bytes) {
  char tail[40];
  int nt = snprintf(tail, sizeof tail, "\",\"bytes\":%zu", bytes);
  size_t room = cap - (size_t)nt - 1, n = 0;
  n += (size_t)snprintf(args, cap, "\"var\":\"");
  for (const char *c = var; *c; c++) {
    unsigned char u = (unsigned char)*c;
    char esc[8];
    int ne = (u == '"' || u == '\\') ? snprintf(esc, sizeof esc, "\\%c", u)
             : u < 0x20               ? snprintf(esc, sizeof esc, "\\u%04x", u)
                                      : snprintf(esc, sizeof esc, "%c", u);
    if (n + (size_t)ne > room) break;
    memcpy(args + n, esc, (size_t)ne);
    n += (size_t)ne;
  }
  memcpy(args + n, tail, (size_t)nt + 1);
}

/* An op's event, or a copy's (args: the variable and its bytes), with the memory
 * track's sample at its end. */
static void op_event(const char *cat, const char *name, int32_t block, int32_t index, int64_t t0, int64_t t1,
                     const char *var, size_t bytes) {
  tbuf *b;
  prof_event *e = reserve(&b);
  if (!e) return;
  e->kind = EV_OP;
  e->t0 = t0;
  e->t1 = t1;
  e->t2 = rill_buffer_bytes_live();
  e->id = (uint64_t)rill_buffer_bytes_peak();
  e->block = block;
  e->index = index;
  copy_str(e->cat, sizeof e->cat, cat);
  copy_str(e->name, sizeof e->name, name);
  if (var)
    copy_args(e->args, sizeof e->args, var, bytes);
  else
    e->args[0] = '\0';
  commit(b);
}

void rill_prof_op(const char *type, int32_t block, int32_t index, int64_t t0, int64_t t1) {
  op_event("op", type, block, index, t0, t1, NULL, 0);
}

void rill_prof_copy(const char *name, int32_t block, int32_t index, const char *var, size_t bytes,
                    int64_t t0, int64_t t1) {
  op_event("memcpy", name, block, index, t0, t1, var, bytes);
}

void rill_prof_async_op(const char *type, int32_t block, int32_t index, int64_t t_enq,
                        int64_t t_start, int64_t t_end) {
  tbuf *b;
  prof_event *e = reserve(&b);
  if (!e) return;
  e->kind = EV_ASYNC_OP;
  e->t0 = t_enq;
  e->t1 = t_start;
  e->t2 = t_end;
  e->id = atomic_fetch_add_explicit(&g_async_id, 1, memory_order_relaxed) + 1;
  e->block = block;
  e->index = index;
  copy_str(e->cat, sizeof e->cat, "blocking");
  copy_str(e->name, sizeof e->name, type);
  e->args[0] = '\0';
  commit(b);
}

void rill_prof_span(const char *cat, const char *name, int64_t t0, int64_t t1) {
  tbuf *b;
  prof_event *e = reserve(&b);
  if (!e) return;
  e->kind = EV_SPAN;
  e->t0 = t0;
  e->t1 = t1;
  e->block = e->index = -1;
  copy_str(e->cat, sizeof e->cat, cat);
  copy_str(e->name, sizeof e->name, name);
  e->args[0] = '\0';
  commit(b);
}

/* ------------------------------------------------------------ public hooks ---- */

bool rill_profiler_enabled(void) { return rill_prof_active(); }

void rill_profiler_set_thread_name(const char *name) { rill_prof_thread_name(name); }

static uint64_t async_mark(uint8_t kind, uint64_t id, const char *cat, const char *name,
                           const char *args) {
  if (!rill_prof_active()) return 0;
  tbuf *b;
  prof_event *e = reserve(&b);
  if (!e) return 0;
  if (!id) id = atomic_fetch_add_explicit(&g_async_id, 1, memory_order_relaxed) + 1;
  e->kind = kind;
  e->t0 = rill_prof_now();
  e->id = id;
  e->block = e->index = -1;
  copy_str(e->cat, sizeof e->cat, cat && *cat ? cat : "async");
  copy_str(e->name, sizeof e->name, name ? name : "");
  /* args must be a JSON object ({...}, shorter than ARGS_MAX_LEN); anything else is
   * left out rather than cut or break the file */
  size_t alen = args ? strnlen(args, ARGS_MAX_LEN) : 0;
  bool object = alen >= 2 && alen < ARGS_MAX_LEN && args[0] == '{' && args[alen - 1] == '}';
  copy_str(e->args, sizeof e->args, object ? args : "");
  commit(b);
  return id;
}

uint64_t rill_profiler_async_begin(const char *category, const char *name, const char *args) {
  return async_mark(EV_ASYNC_BEGIN, 0, category, name, args);
}

void rill_profiler_async_end(uint64_t id, const char *category, const char *name,
                             const char *args) {
  if (id) async_mark(EV_ASYNC_END, id, category, name, args);
}

/* ------------------------------------------------------------ start / stop ---- */

rill_profiler_options rill_profiler_default_options(void) {
  rill_profiler_options o = RILL_PROFILER_OPTIONS_INIT;
  return o;
}

/* Turns recording off and waits for writers in flight; under g_mu. */
static void switch_off_locked(void) {
  atomic_store_explicit(&rill_prof_on_flag, 0, memory_order_seq_cst);
  for (tbuf *b = g_bufs; b; b = b->next) wait_idle(b);
}

static void drop_events_locked(void) {
  for (tbuf *b = g_bufs; b; b = b->next) {
    rill_free(b->ev);
    b->ev = NULL;
    b->cap = 0;
    atomic_store_explicit(&b->n, 0, memory_order_relaxed);
    atomic_store_explicit(&b->dropped, 0, memory_order_relaxed);
  }
  free_dead_locked();
}

static rill_status *arm_locked(uint32_t cap) {
  drop_events_locked();
  for (tbuf *b = g_bufs; b; b = b->next) {
    if (!(b->ev = rill_calloc(cap, sizeof *b->ev))) {
      drop_events_locked();
      return rill_error(RILL_OUT_OF_MEMORY, "profiler: cannot allocate %u events for thread %d",
                        cap, (int)b->tid);
    }
    b->cap = cap;
  }
  g_cap = cap;
  g_session = true;
  g_mono0 = rill_prof_now();
  g_wall0 = wall_now();
  rill_buffer_bytes_reset_peak();
  atomic_store_explicit(&rill_prof_on_flag, 1, memory_order_seq_cst);
  return NULL;
}

rill_status *rill_profiler_start(const rill_profiler_options *options) {
  rill_profiler_options o = RILL_PROFILER_OPTIONS_INIT;
  if (options) {
    if (options->struct_size != sizeof(rill_profiler_options))
      return rill_error(RILL_INVALID_ARGUMENT,
                        "rill_profiler_start: options.struct_size is %u, this library knows %zu "
                        "(initialize the options with RILL_PROFILER_OPTIONS_INIT)",
                        options->struct_size, sizeof(rill_profiler_options));
    o = *options;
  }
  if (o.state != RILL_PROFILER_CPU && o.state != RILL_PROFILER_GPU && o.state != RILL_PROFILER_ALL)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_profiler_start: unknown state %d", (int)o.state);
  uint32_t cap = o.events_per_thread ? o.events_per_thread : DEFAULT_EVENTS;
  if (cap > (1u << 24))
    return rill_error(RILL_INVALID_ARGUMENT,
                      "rill_profiler_start: events_per_thread %u is more than %u", cap, 1u << 24);
  pthread_mutex_lock(&g_mu);
  rill_status *st = NULL;
  if (g_session)
    st = rill_error(RILL_FAILED_PRECONDITION,
                    "rill_profiler_start: the profiler is already on (rill_profiler_stop first)");
  else
    st = arm_locked(cap);
  pthread_mutex_unlock(&g_mu);
  return st;
}

void rill_profiler_reset(void) {
  pthread_mutex_lock(&g_mu);
  if (g_session) {
    switch_off_locked();
    g_session = false;
    rill_status *st = arm_locked(g_cap);
    rill_status_destroy(st); /* out of memory: the profiler stays off */
  } else {
    drop_events_locked();
  }
  pthread_mutex_unlock(&g_mu);
}

/* ------------------------------------------------------------ merged events --- */

typedef struct merged {
  const prof_event *e;
  int32_t tid;
} merged;

static int cmp_merged(const void *a, const void *b) {
  const merged *x = a, *y = b;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  if (x->e->t0 != y->e->t0) return x->e->t0 < y->e->t0 ? -1 : 1;
  /* the longer (enclosing) event first */
  return x->e->t1 > y->e->t1 ? -1 : x->e->t1 < y->e->t1;
}

/* ------------------------------------------------------------ summary --------- */

struct rill_profiler_summary {
  rill_profiler_row *rows[2];
  size_t nrows[2];
  char **names; /* owned strings the rows point to */
  size_t nnames;
  uint64_t dropped, events;
  double wall_ms;
  int32_t threads;
};

static void summary_free(rill_profiler_summary *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nnames; i++) rill_free(s->names[i]);
  rill_free(s->names);
  rill_free(s->rows[0]);
  rill_free(s->rows[1]);
  rill_free(s);
}

void rill_profiler_summary_destroy(rill_profiler_summary *s) { summary_free(s); }

/* Finds or adds the row for (name, block, index) (block -1: per type), through a map
 * from "block/index/name" (or the name) to the row's index. */
static rill_profiler_row *row_for(rill_profiler_summary *s, int table, rill_strmap *map,
                                  const char *name, int32_t block, int32_t index, size_t *cap,
                                  int64_t order) {
  char key[NAME_MAX_LEN + 32];
  if (table)
    snprintf(key, sizeof key, "%d/%d/%s", (int)block, (int)index, name);
  else
    snprintf(key, sizeof key, "%s", name);
  uint64_t h = rill_str_hash(key);
  rill_strmap_value *v = map->n ? rill_strmap_find(map, key, h) : NULL;
  if (v) return &s->rows[table][v->index];
  rill_profiler_row *rows = s->rows[table];
  if (s->nrows[table] == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    rill_profiler_row *r = rill_realloc(rows, nc * sizeof *r);
    if (!r) return NULL;
    s->rows[table] = rows = r;
    *cap = nc;
  }
  char *copy = rill_strdup(name);
  char **nn = copy ? rill_realloc(s->names, (s->nnames + 1) * sizeof *nn) : NULL;
  if (!nn) {
    rill_free(copy);
    return NULL;
  }
  s->names = nn;
  s->names[s->nnames++] = copy;
  rill_status *st = rill_strmap_set(map, key, h, (rill_strmap_value){.index = s->nrows[table]});
  if (st) {
    rill_status_destroy(st);
    return NULL;
  }
  rill_profiler_row *r = &rows[s->nrows[table]++];
  memset(r, 0, sizeof *r);
  r->name = copy;
  r->block = block;
  r->index = index;
  r->min_ms = 1e300;
  r->first_end_ns = order;
  return r;
}

static rill_status *summarize(const merged *m, size_t n, rill_profiler_summary *s) {
  size_t cap[2] = {0, 0};
  rill_strmap maps[2] = {{0}, {0}};
  rill_status *st = NULL;
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    const prof_event *e = m[i].e;
    if (e->kind != EV_OP) continue;
    double ms = (double)(e->t1 - e->t0) * 1e-6;
    sum += ms;
    for (int t = 0; t < 2; t++) {
      rill_profiler_row *r = row_for(s, t, &maps[t], e->name, t ? e->block : -1,
                                     t ? e->index : -1, &cap[t], e->t1);
      if (!r) {
        st = rill_oom();
        goto out;
      }
      r->calls++;
      r->total_ms += ms;
      if (ms < r->min_ms) r->min_ms = ms;
      if (ms > r->max_ms) r->max_ms = ms;
      if (e->t1 < r->first_end_ns) r->first_end_ns = e->t1;
    }
  }
  for (int t = 0; t < 2; t++)
    for (size_t i = 0; i < s->nrows[t]; i++) {
      rill_profiler_row *r = &s->rows[t][i];
      r->ave_ms = r->total_ms / (double)r->calls;
      r->ratio = sum > 0 ? r->total_ms / sum : 0;
    }
  rill_profiler_summary_sort(s, RILL_PROFILER_SORT_TOTAL);
out:
  rill_strmap_clear(&maps[0]);
  rill_strmap_clear(&maps[1]);
  return st;
}

static rill_profiler_sort_key g_sort_key;

static double key_of(const rill_profiler_row *r) {
  switch (g_sort_key) {
    case RILL_PROFILER_SORT_CALLS: return (double)r->calls;
    case RILL_PROFILER_SORT_TOTAL: return r->total_ms;
    case RILL_PROFILER_SORT_MAX: return r->max_ms;
    case RILL_PROFILER_SORT_MIN: return r->min_ms;
    case RILL_PROFILER_SORT_AVE: return r->ave_ms;
    default: return -(double)r->first_end_ns; /* first to end first */
  }
}

static int cmp_row(const void *a, const void *b) {
  double x = key_of(a), y = key_of(b);
  if (x != y) return x > y ? -1 : 1;
  const rill_profiler_row *p = a, *q = b;
  int c = strcmp(p->name, q->name);
  if (c) return c;
  return p->block != q->block ? (p->block < q->block ? -1 : 1)
                              : (p->index < q->index ? -1 : p->index > q->index);
}

static pthread_mutex_t g_sort_mu = PTHREAD_MUTEX_INITIALIZER;

void rill_profiler_summary_sort(rill_profiler_summary *s, rill_profiler_sort_key key) {
  if (!s) return;
  pthread_mutex_lock(&g_sort_mu); /* qsort has no context argument */
  g_sort_key = key;
  for (int t = 0; t < 2; t++)
    if (s->nrows[t]) qsort(s->rows[t], s->nrows[t], sizeof *s->rows[t], cmp_row);
  pthread_mutex_unlock(&g_sort_mu);
}

size_t rill_profiler_summary_rows(const rill_profiler_summary *s, rill_profiler_table table) {
  return s && (unsigned)table < 2 ? s->nrows[table] : 0;
}

const rill_profiler_row *rill_profiler_summary_row(const rill_profiler_summary *s,
                                                   rill_profiler_table table, size_t i) {
  return s && (unsigned)table < 2 && i < s->nrows[table] ? &s->rows[table][i] : NULL;
}

uint64_t rill_profiler_summary_dropped(const rill_profiler_summary *s) { return s ? s->dropped : 0; }
uint64_t rill_profiler_summary_events(const rill_profiler_summary *s) { return s ? s->events : 0; }
double rill_profiler_summary_wall_ms(const rill_profiler_summary *s) { return s ? s->wall_ms : 0; }
int32_t rill_profiler_summary_threads(const rill_profiler_summary *s) { return s ? s->threads : 0; }

static const char *key_sentence(rill_profiler_sort_key key) {
  switch (key) {
    case RILL_PROFILER_SORT_CALLS: return "Sorted by number of calls in descending order";
    case RILL_PROFILER_SORT_TOTAL: return "Sorted by total time in descending order";
    case RILL_PROFILER_SORT_MAX: return "Sorted by number of max in descending order";
    case RILL_PROFILER_SORT_MIN: return "Sorted by number of min in descending order";
    case RILL_PROFILER_SORT_AVE: return "Sorted by number of avg in descending order";
    default: return "Sorted by event first end time in descending order";
  }
}

rill_status *rill_profiler_summary_format(rill_profiler_summary *s, rill_profiler_sort_key key,
                                          char **text) {
  if (!s || !text)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_profiler_summary_format: NULL argument");
  *text = NULL;
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  if (!out) return rill_oom();
  rill_profiler_summary_sort(s, key);
  fprintf(out, "------------------------->     Profiling Report     <-------------------------\n\n");
  fprintf(out, "Place: CPU\nTime unit: ms\n%s\n", key_sentence(key));
  fprintf(out, "Wall time: %.6g ms, threads: %d, events: %llu, dropped: %llu\n", s->wall_ms,
          (int)s->threads, (unsigned long long)s->events, (unsigned long long)s->dropped);
  for (int t = 0; t < 2; t++) {
    fprintf(out, "\n%-36s%-12s%-12s%-12s%-12s%-12s%-12s\n", t ? "Op instance" : "Event", "Calls",
            "Total", "Min.", "Max.", "Ave.", "Ratio.");
    for (size_t i = 0; i < s->nrows[t]; i++) {
      const rill_profiler_row *r = &s->rows[t][i];
      char name[96];
      if (t)
        snprintf(name, sizeof name, "%s (block %d, op #%d)", r->name, (int)r->block, (int)r->index);
      else
        snprintf(name, sizeof name, "%s", r->name);
      fprintf(out, "%-36s%-12llu%-12.6g%-12.6g%-12.6g%-12.6g%-12.6g\n", name,
              (unsigned long long)r->calls, r->total_ms, r->min_ms, r->max_ms, r->ave_ms, r->ratio);
    }
  }
  bool bad = ferror(out) != 0;
  if (fclose(out) || bad || !buf) {
    free(buf);
    return rill_oom();
  }
  /* the caller frees with rill_free_buffer, which pairs with rill_malloc */
  *text = rill_strdup(buf);
  free(buf);
  return *text ? NULL : rill_oom();
}

/* ------------------------------------------------------------ trace file ------ */

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static double us_of(int64_t t) { return (double)(t - g_mono0) * 1e-3; }

static rill_status *write_trace(const char *path, const merged *m, size_t n, uint64_t dropped) {
  /* Built in memory, then written as one file the crash-safe way (file.h), which also
   * writes into a device or pipe in place of replacing it. */
  char *text = NULL;
  size_t text_len = 0;
  FILE *f = open_memstream(&text, &text_len);
  if (!f) return rill_oom();
  int pid = (int)getpid();
  fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"rill %s\","
             "\"pid\":%d,\"mono_start_ns\":%lld,\"wall_start_ns\":%lld,\"dropped\":%llu},\n"
             "\"traceEvents\":[\n",
          rill_version(), pid, (long long)g_mono0, (long long)g_wall0, (unsigned long long)dropped);
  fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":"
             "\"rill %d\"}}",
          pid, pid);
  for (tbuf *b = g_bufs; b; b = b->next) {
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
            pid, (int)b->tid);
    json_str(f, b->name);
    fprintf(f, "}}");
  }
  for (size_t i = 0; i < n; i++) {
    const prof_event *e = m[i].e;
    int tid = (int)m[i].tid;
    switch (e->kind) {
      case EV_OP:
      case EV_SPAN:
        fprintf(f, ",\n{\"ph\":\"X\",\"cat\":");
        json_str(f, e->cat);
        fprintf(f, ",\"name\":");
        json_str(f, e->name);
        fprintf(f, ",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f", pid, tid, us_of(e->t0),
                (double)(e->t1 - e->t0) * 1e-3);
        if (e->kind == EV_OP)
          fprintf(f, ",\"args\":{\"block\":%d,\"op\":%d%s%s}", (int)e->block, (int)e->index,
                  e->args[0] ? "," : "", e->args);
        fputc('}', f);
        if (e->kind == EV_OP) /* the memory track: a counter sample at the op's end */
          fprintf(f, ",\n{\"ph\":\"C\",\"name\":\"tensor memory\",\"pid\":%d,\"tid\":%d,"
                     "\"ts\":%.3f,\"args\":{\"live_bytes\":%lld,\"peak_bytes\":%lld}}",
                  pid, tid, us_of(e->t1), (long long)e->t2, (long long)e->id);
        break;
      case EV_ASYNC_OP:
        /* enqueue -> finish as one async slice, with the wait before the start marked */
        fprintf(f, ",\n{\"ph\":\"b\",\"cat\":\"blocking\",\"name\":");
        json_str(f, e->name);
        fprintf(f, ",\"id\":\"0x%llx\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"args\":{\"block\":%d,"
                   "\"op\":%d,\"queued_us\":%.3f}}",
                (unsigned long long)e->id, pid, tid, us_of(e->t0), (int)e->block, (int)e->index,
                (double)(e->t1 - e->t0) * 1e-3);
        fprintf(f, ",\n{\"ph\":\"n\",\"cat\":\"blocking\",\"name\":\"start\",\"id\":\"0x%llx\","
                   "\"pid\":%d,\"tid\":%d,\"ts\":%.3f}",
                (unsigned long long)e->id, pid, tid, us_of(e->t1));
        fprintf(f, ",\n{\"ph\":\"e\",\"cat\":\"blocking\",\"name\":");
        json_str(f, e->name);
        fprintf(f, ",\"id\":\"0x%llx\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f}", (unsigned long long)e->id,
                pid, tid, us_of(e->t2));
        break;
      default:
        fprintf(f, ",\n{\"ph\":\"%c\",\"cat\":", e->kind == EV_ASYNC_BEGIN ? 'b' : 'e');
        json_str(f, e->cat);
        fprintf(f, ",\"name\":");
        json_str(f, e->name);
        fprintf(f, ",\"id\":\"0x%llx\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f", (unsigned long long)e->id,
                pid, tid, us_of(e->t0));
        if (e->args[0]) fprintf(f, ",\"args\":%s", e->args);
        fputc('}', f);
    }
  }
  fprintf(f, "\n]}\n");
  bool bad = ferror(f) != 0;
  if (fclose(f) || bad || !text) {
    free(text);
    return rill_oom();
  }
  rill_status *st = rill_file_write(path, text, text_len);
  free(text);
  return rill_status_wrap(st, "profiler: writing the trace");
}

rill_status *rill_profiler_stop(const char *trace_path, rill_profiler_summary **summary) {
  if (summary) *summary = NULL;
  pthread_mutex_lock(&g_mu);
  if (!g_session) {
    pthread_mutex_unlock(&g_mu);
    return rill_error(RILL_FAILED_PRECONDITION, "rill_profiler_stop: the profiler is not on");
  }
  switch_off_locked();
  g_session = false;
  double wall_ms = (double)(rill_prof_now() - g_mono0) * 1e-6;
  size_t n = 0;
  uint64_t dropped = 0;
  int32_t threads = 0;
  for (tbuf *b = g_bufs; b; b = b->next) {
    size_t k = atomic_load_explicit(&b->n, memory_order_acquire);
    n += k;
    dropped += atomic_load_explicit(&b->dropped, memory_order_relaxed);
    threads += k > 0;
  }
  rill_status *st = NULL;
  merged *m = rill_calloc(n ? n : 1, sizeof *m);
  rill_profiler_summary *s = NULL;
  if (!m) {
    st = rill_oom();
    goto out;
  }
  size_t j = 0;
  for (tbuf *b = g_bufs; b; b = b->next) {
    size_t k = atomic_load_explicit(&b->n, memory_order_acquire);
    for (size_t i = 0; i < k; i++) m[j++] = (merged){&b->ev[i], b->tid};
  }
  qsort(m, n, sizeof *m, cmp_merged);
  if (trace_path && (st = write_trace(trace_path, m, n, dropped))) goto out;
  if (summary) {
    if (!(s = rill_calloc(1, sizeof *s))) {
      st = rill_oom();
      goto out;
    }
    s->dropped = dropped;
    s->events = n;
    s->wall_ms = wall_ms;
    s->threads = threads;
    if ((st = summarize(m, n, s))) goto out;
    *summary = s;
    s = NULL;
  }
out:
  summary_free(s);
  rill_free(m);
  drop_events_locked();
  pthread_mutex_unlock(&g_mu);
  return st;
}
