#include "framework/exec/ckpt_async.h"
#include "framework/exec/profiler.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "framework/base/alloc.h"
#include "framework/io/checkpoint.h"
#include "framework/io/cluster_ckpt.h"
#include "framework/program/program.h"
#include "framework/program/program_impl.h"
#include "framework/registry/registry.h"

/* Directories being written by some executor of this process: a write waits until no
 * other is writing the same directory (the same path string). */
typedef struct busy_dir {
  struct busy_dir *next;
  const char *dir;
} busy_dir;

static pthread_mutex_t busy_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t busy_cv = PTHREAD_COND_INITIALIZER;
static busy_dir *busy_list;

static void busy_acquire(busy_dir *self) {
  pthread_mutex_lock(&busy_mu);
  for (;;) {
    busy_dir *b = busy_list;
    while (b && strcmp(b->dir, self->dir) != 0) b = b->next;
    if (!b) break;
    pthread_cond_wait(&busy_cv, &busy_mu);
  }
  self->next = busy_list;
  busy_list = self;
  pthread_mutex_unlock(&busy_mu);
}

static void busy_release(busy_dir *self) {
  pthread_mutex_lock(&busy_mu);
  busy_dir **p = &busy_list;
  while (*p != self) p = &(*p)->next;
  *p = self->next;
  pthread_cond_broadcast(&busy_cv);
  pthread_mutex_unlock(&busy_mu);
}

typedef struct ckpt_dir {
  busy_dir busy; /* this entry while it writes */
  char *dir;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool in_flight;       /* snap is being written: the op must not touch it */
  rill_ckpt_snapshot snap;
  int32_t max_to_keep;
  bool started;         /* the op ran at least once (the seconds clock started) */
  int64_t last_step;    /* step of the last snapshot, -1: none */
  int64_t last_due_ns;  /* monotonic time of the last snapshot (or the first run) */
  rill_status *error;   /* a failed write not yet reported */
  uint64_t hash_id, hash_rev, hash; /* program hash cache */
  bool hash_valid;
  int64_t persist_start_ns;
  rill_checkpoint_stats stats;
  /* A part of cluster snapshots (cluster_ckpt.h) instead of a local checkpoint. */
  bool cluster;
  rill_cluster_shape shape;
  rill_cluster_role role;
  int32_t rank;
  int64_t written;         /* the newest snapshot id handled, -1: none */
  rill_ckpt_snapshot prev; /* sync-mode trainer: its state after the previous step */
  int64_t prev_step;
  /* A part due while snap is still being written waits here, so the step goes on; the
   * write in flight takes it next. A step waits only when both are taken. */
  rill_ckpt_snapshot next;
  bool queued;
} ckpt_dir;

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void dir_destroy(void *state) {
  ckpt_dir *d = state;
  rill_ckpt_snapshot_clear(&d->snap);
  rill_ckpt_snapshot_clear(&d->prev);
  rill_ckpt_snapshot_clear(&d->next);
  rill_status_destroy(d->error);
  pthread_cond_destroy(&d->cv);
  pthread_mutex_destroy(&d->mu);
  rill_free(d->dir);
  rill_free(d);
}

static rill_status *dir_create(const char *key, void **out) {
  ckpt_dir *d = rill_calloc(1, sizeof *d);
  if (!d || !(d->dir = rill_strdup(key))) {
    rill_free(d);
    return rill_oom();
  }
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->cv, NULL);
  rill_ckpt_snapshot_init(&d->snap);
  rill_ckpt_snapshot_init(&d->prev);
  rill_ckpt_snapshot_init(&d->next);
  d->last_step = -1;
  d->written = -1;
  d->prev_step = -1;
  d->stats.last_step = -1;
  *out = d;
  return NULL;
}

/* Writes d->snap, then d->next while one is queued; called with d->in_flight set,
 * without d->mu. A failed write drops the part queued behind it (the failure is
 * reported at the next step). */
static void persist(ckpt_dir *d) {
  for (;;) {
    uint64_t bytes = 0;
    int64_t t0 = mono_ns();
    d->busy.dir = d->dir;
    busy_acquire(&d->busy);
    rill_status *st = d->cluster ? rill_cluster_commit_part(d->dir, &d->shape, d->role, d->rank,
                                                           &d->snap, d->max_to_keep, NULL, &bytes)
                                 : rill_ckpt_write(d->dir, &d->snap, d->max_to_keep, &bytes);
    busy_release(&d->busy);
    int64_t t1 = mono_ns();
    if (rill_prof_active()) rill_prof_span("checkpoint", "checkpoint persist", t0, t1);
    pthread_mutex_lock(&d->mu);
    if (st) {
      d->stats.failed++;
      rill_status_destroy(d->error);
      d->error = st;
      if (d->queued) rill_ckpt_snapshot_unshare(&d->next);
      d->queued = false;
    } else {
      d->stats.saved++;
      d->stats.last_step = d->snap.step;
      d->stats.last_bytes = bytes;
    }
    d->stats.last_persist_s = (double)(t1 - t0) * 1e-9;
    bool more = d->queued;
    if (more) { /* the written snapshot's buffers serve the next part due */
      rill_ckpt_snapshot t = d->snap;
      d->snap = d->next;
      d->next = t;
      d->queued = false;
    } else {
      d->in_flight = false;
      d->stats.in_flight = false;
    }
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    if (!more) return;
  }
}

static void persist_job(void *arg) { persist(arg); }

static bool is_due(ckpt_dir *d, const rill_ckpt_policy *p, int64_t step, int64_t now) {
  if (step == d->last_step) return false;
  bool by_steps = p->every_n_steps > 0, by_time = p->every_n_seconds > 0;
  if (!by_steps && !by_time) return true;
  if (by_steps && step % p->every_n_steps == 0) return true;
  return by_time && (double)(now - d->last_due_ns) * 1e-9 >= p->every_n_seconds;
}

static bool is_policy_attr(const rill_op_schema *schema, const char *name) {
  for (size_t i = 0; schema && i < schema->nattrs; i++)
    if (strcmp(schema->attrs[i].name, name) == 0) return (schema->attrs[i].flags & RILL_ATTR_POLICY) != 0;
  return false;
}

rill_status *rill_ckpt_program_hash(const rill_program *prog, uint64_t *out) {
  RILL_TRY(rill_registry_init());
  rill_program *copy;
  RILL_TRY(rill_program_clone(prog, &copy));
  for (size_t b = 0; b < copy->nblocks; b++) {
    for (size_t o = 0; o < copy->blocks[b].nops; o++) {
      rill_op_desc *op = &copy->blocks[b].ops[o];
      const rill_op_schema *schema = rill_schema_find(op->type);
      size_t kept = 0;
      for (size_t i = 0; i < op->nattrs; i++) {
        if (is_policy_attr(schema, op->attrs[i].name))
          rill_attr_clear(&op->attrs[i]);
        else
          op->attrs[kept++] = op->attrs[i];
      }
      op->nattrs = kept;
    }
  }
  uint8_t *bytes;
  size_t n;
  rill_status *st = rill_program_encode(copy, &bytes, &n);
  rill_program_free(copy);
  RILL_TRY(st);
  *out = rill_ckpt_hash_bytes(bytes, n);
  rill_free(bytes);
  return NULL;
}

static rill_status *program_hash(ckpt_dir *d, const rill_program *prog, uint64_t *out) {
  if (!prog) {
    *out = 0;
    return NULL;
  }
  if (!d->hash_valid || d->hash_id != prog->id || d->hash_rev != prog->revision) {
    RILL_TRY(rill_ckpt_program_hash(prog, &d->hash));
    d->hash_id = prog->id;
    d->hash_rev = prog->revision;
    d->hash_valid = true;
  }
  *out = d->hash;
  return NULL;
}

/* The start of a checkpoint op's run (d->mu held): a failed earlier write is reported
 * (once); the seconds clock starts at the first run. */
static rill_status *step_begin(ckpt_dir *d, int64_t now) {
  if (!d->started) {
    d->started = true;
    d->last_due_ns = now;
  }
  if (!d->error) return NULL;
  rill_status *st = rill_status_wrap(d->error, "checkpoint: the previous write failed");
  d->error = NULL;
  return st;
}

rill_status *rill_ckpt_async_step(struct rill_device_ctx *dev, const char *dir,
                                  const rill_ckpt_policy *policy, int64_t step,
                                  const char *const *names, const rill_tensor *const *tensors,
                                  size_t n, bool *saved) {
  int64_t now = mono_ns(), waited = 0;
  if (saved) *saved = false;
  if (!dir || !*dir) return rill_error(RILL_INVALID_ARGUMENT, "checkpoint: empty directory");
  if (step < 0) return rill_error(RILL_INVALID_ARGUMENT, "checkpoint: step %lld is negative", (long long)step);
  rill_bg *bg = dev ? dev->bg : NULL;
  ckpt_dir *d;
  if (bg) {
    void *state;
    RILL_TRY(rill_bg_state(bg, dir, dir_create, dir_destroy, &state));
    d = state;
  } else {
    void *state;
    RILL_TRY(dir_create(dir, &state));
    d = state;
  }
  rill_status *st = NULL;
  pthread_mutex_lock(&d->mu);
  if ((st = step_begin(d, now))) goto out;
  if (!is_due(d, policy, step, now)) goto out;
  if (d->in_flight) {
    if (policy->skip_when_busy) {
      d->stats.skipped++;
      goto out;
    }
    /* The write in flight may still be held until the end of a run (two checkpoint
     * ops of one directory in a run): let it start, then wait. */
    int64_t w0 = mono_ns();
    pthread_mutex_unlock(&d->mu);
    rill_bg_release(bg);
    pthread_mutex_lock(&d->mu);
    while (d->in_flight) pthread_cond_wait(&d->cv, &d->mu);
    waited = mono_ns() - w0;
    if (d->error) {
      st = rill_status_wrap(d->error, "checkpoint: the previous write failed");
      d->error = NULL;
      goto out;
    }
  }
  {
    int64_t ts0 = rill_prof_active() ? rill_prof_now() : 0;
    if ((st = rill_ckpt_snapshot_take(&d->snap, names, tensors, n, RILL_CKPT_SHARE_MIN_BYTES))) goto out;
    if ((st = program_hash(d, dev ? dev->program : NULL, &d->snap.program_hash))) goto out;
    d->snap.step = step;
    d->snap.time_ns = wall_ns();
    d->snap.has_rng = dev != NULL;
    if (dev) memcpy(d->snap.rng, dev->rng.s, sizeof d->snap.rng);
    d->max_to_keep = policy->max_to_keep;
    d->last_step = step;
    d->last_due_ns = now;
    if (ts0) rill_prof_span("checkpoint", "checkpoint snapshot", ts0, rill_prof_now());
  }
  if (saved) *saved = true;
  d->in_flight = true;
  d->stats.in_flight = true;
  if (bg) {
    st = rill_bg_submit(bg, persist_job, d);
    if (st) {
      d->in_flight = false;
      d->stats.in_flight = false;
    }
    d->stats.last_wait_s = (double)waited * 1e-9;
    d->stats.last_snapshot_s = (double)(mono_ns() - now - waited) * 1e-9;
    goto out;
  }
  pthread_mutex_unlock(&d->mu);
  persist(d);
  pthread_mutex_lock(&d->mu);
  st = d->error;
  d->error = NULL;
out:
  pthread_mutex_unlock(&d->mu);
  if (!bg) dir_destroy(d);
  return st ? rill_status_wrap(st, "checkpoint '%s' at step %lld", dir, (long long)step) : NULL;
}

/* ---- cluster snapshot parts ---- */

/* Makes room for a part (d->mu held): none to wait for while a write is in flight and
 * nothing is queued behind it; else waits until the queued part is taken. False when
 * skip_when_busy skipped. */
static bool make_room(ckpt_dir *d, rill_bg *bg, bool skip) {
  if (!d->in_flight || !d->queued) return true;
  if (skip) {
    d->stats.skipped++;
    return false;
  }
  pthread_mutex_unlock(&d->mu);
  rill_bg_release(bg);
  pthread_mutex_lock(&d->mu);
  while (d->in_flight && d->queued) pthread_cond_wait(&d->cv, &d->mu);
  return true;
}

rill_status *rill_ckpt_cluster_step(struct rill_device_ctx *dev, const char *dir,
                                    const rill_ckpt_policy *policy,
                                    const rill_ckpt_cluster_part *part, int64_t step,
                                    const char *const *names, const rill_tensor *const *tensors,
                                    size_t n, bool *saved) {
  int64_t now = mono_ns();
  if (saved) *saved = false;
  if (!dir || !*dir) return rill_error(RILL_INVALID_ARGUMENT, "checkpoint: empty directory");
  if (!dev || !dev->bg)
    return rill_error(RILL_FAILED_PRECONDITION,
                      "checkpoint '%s': a cluster snapshot part needs an executor", dir);
  void *state;
  RILL_TRY(rill_bg_state(dev->bg, dir, dir_create, dir_destroy, &state));
  ckpt_dir *d = state;
  rill_status *st = NULL;
  pthread_mutex_lock(&d->mu);
  d->cluster = true;
  d->shape = part->shape;
  d->role = part->role;
  d->rank = part->rank;
  if ((st = step_begin(d, now))) goto out;
  /* Sync mode: a snapshot due by the step count is due for every process at the same
   * step: each trainer writes its part at once instead of waiting to be told (the last
   * step's snapshot completes too), and each pserver takes its part after the round of
   * that step by itself (listen_and_serv's checkpoint_every_n_steps). The coordinator
   * announces only the snapshots due by time. */
  bool by_count = part->sync && policy->every_n_steps > 0 && step % policy->every_n_steps == 0;
  if (part->coordinator && is_due(d, policy, step, now)) {
    d->last_step = step;
    d->last_due_ns = now;
    if (!by_count) {
      pthread_mutex_unlock(&d->mu);
      st = part->announce(part->arg, step);
      pthread_mutex_lock(&d->mu);
      if (st) goto out;
    }
  }
  int64_t k = part->newest(part->arg);
  if (by_count && step > k) k = step;
  if (k > d->written) {
    d->written = k;
    /* Sync mode: the part must hold this trainer's state after step k, which is now
     * (k == step) or the previous step's, kept below. Async: the state now. */
    bool cur = k == step || !part->sync, prev = !cur && d->prev_step == k;
    if ((cur || prev) && make_room(d, dev->bg, policy->skip_when_busy)) {
      if (d->error) {
        st = rill_status_wrap(d->error, "checkpoint: the previous write failed");
        d->error = NULL;
        goto out;
      }
      /* The part goes behind the write in flight, or is written now. */
      bool behind = d->in_flight;
      rill_ckpt_snapshot *slot = behind ? &d->next : &d->snap;
      if (prev) {
        rill_ckpt_snapshot t = *slot;
        *slot = d->prev;
        d->prev = t;
        d->prev_step = -1;
      } else {
        if ((st = rill_ckpt_snapshot_take(slot, names, tensors, n, RILL_CKPT_SHARE_MIN_BYTES)))
          goto out;
        slot->time_ns = wall_ns();
        slot->has_rng = true;
        memcpy(slot->rng, dev->rng.s, sizeof slot->rng);
      }
      slot->step = k;
      slot->program_hash = 0;
      d->max_to_keep = policy->max_to_keep;
      if (behind) {
        d->queued = true;
      } else {
        d->in_flight = true;
        d->stats.in_flight = true;
        if ((st = rill_bg_submit(dev->bg, persist_job, d))) {
          d->in_flight = false;
          d->stats.in_flight = false;
          goto out;
        }
      }
      if (saved) *saved = true;
    } else if (!cur && !prev) {
      d->stats.skipped++; /* learned too late to hold the state of step k */
    }
  }
  /* The previous step's state serves a snapshot learned a step late: one announced,
   * which a policy of the step count alone never does in sync mode. */
  bool announced = policy->every_n_steps <= 0 || policy->every_n_seconds > 0;
  if (part->sync && !part->coordinator && announced) {
    if ((st = rill_ckpt_snapshot_take(&d->prev, names, tensors, n, SIZE_MAX))) goto out;
    d->prev.time_ns = wall_ns();
    d->prev.has_rng = true;
    memcpy(d->prev.rng, dev->rng.s, sizeof d->prev.rng);
    d->prev.step = step;
    d->prev_step = step;
  }
out:
  pthread_mutex_unlock(&d->mu);
  return st ? rill_status_wrap(st, "checkpoint '%s' at step %lld", dir, (long long)step) : NULL;
}

rill_status *rill_ckpt_cluster_resumed(rill_bg *bg, const char *dir, int64_t step) {
  void *state;
  RILL_TRY(rill_bg_state(bg, dir, dir_create, dir_destroy, &state));
  ckpt_dir *d = state;
  pthread_mutex_lock(&d->mu);
  d->written = step;
  d->last_step = step;
  pthread_mutex_unlock(&d->mu);
  return NULL;
}

static rill_status *take_error(void *state, void *arg) {
  ckpt_dir *d = state;
  pthread_mutex_lock(&d->mu);
  rill_status *st = d->error;
  d->error = NULL;
  pthread_mutex_unlock(&d->mu);
  return st ? rill_status_wrap(st, "checkpoint '%s'", d->dir) : NULL;
}

rill_status *rill_ckpt_async_flush(rill_bg *bg) {
  if (!bg) return NULL;
  rill_bg_wait_idle(bg);
  return rill_bg_each_state(bg, dir_destroy, take_error, NULL);
}

typedef struct find_ctx {
  const char *dir;
  rill_checkpoint_stats *out;
  bool found;
} find_ctx;

static rill_status *find_stats(void *state, void *arg) {
  ckpt_dir *d = state;
  find_ctx *f = arg;
  if (strcmp(d->dir, f->dir) != 0) return NULL;
  pthread_mutex_lock(&d->mu);
  *f->out = d->stats;
  pthread_mutex_unlock(&d->mu);
  f->found = true;
  return NULL;
}

rill_status *rill_ckpt_async_stats(rill_bg *bg, const char *dir, rill_checkpoint_stats *out) {
  find_ctx f = {dir, out, false};
  if (bg) RILL_TRY(rill_bg_each_state(bg, dir_destroy, find_stats, &f));
  if (!f.found)
    return rill_error(RILL_NOT_FOUND, "no checkpoint op of this executor has used '%s'", dir);
  return NULL;
}
