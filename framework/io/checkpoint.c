/* Checkpoints on disk: snapshot, commit protocol, retention, listing, verified load.
 * See checkpoint.h and doc/design/checkpoint.md. */
#include "framework/io/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/base/hash.h"
#include "framework/io/crc32c.h"
#include "framework/io/file.h"
#include "framework/io/stream.h"

#define MANIFEST_MAGIC "rill checkpoint 1"

static void (*_Atomic test_hook)(const char *phase, int64_t step);

void rill_ckpt_set_test_hook(void (*hook)(const char *phase, int64_t step)) {
  atomic_store(&test_hook, hook);
}

static void hook_in(const char *dir, const char *phase, int64_t step) {
  void (*h)(const char *, int64_t) = atomic_load(&test_hook);
  if (h) h(phase, step);
  rill_ckpt_crash_point(dir, phase, step);
}

void rill_ckpt_crash_point(const char *dir, const char *phase, int64_t step) {
  /* RILL_CKPT_CRASH_AT=PART:PHASE:STEP: the crash tests of multi-process jobs kill the
   * process writing into a directory named PART at that point of the protocol. */
  const char *spec = getenv("RILL_CKPT_CRASH_AT");
  if (!spec || !*spec || !dir) return;
  const char *base = strrchr(dir, '/');
  base = base ? base + 1 : dir;
  char want[256];
  snprintf(want, sizeof want, "%s:%s:%lld", base, phase, (long long)step);
  if (!strcmp(spec, want)) raise(SIGKILL);
}

uint64_t rill_ckpt_hash_bytes(const void *data, size_t n) {
  return rill_fnv1a64(data, n);
}

/* ------------------------------------------------------------- snapshot ------- */

void rill_ckpt_snapshot_init(rill_ckpt_snapshot *s) { memset(s, 0, sizeof *s); }

static void entry_unshare(rill_ckpt_snapshot *s, size_t i) {
  if (!s->shared || !s->shared[i]) return;
  if (s->tensors[i].buf) rill_buffer_unpin(s->tensors[i].buf);
  rill_tensor_clear(&s->tensors[i]);
  s->shared[i] = false;
}

void rill_ckpt_snapshot_unshare(rill_ckpt_snapshot *s) {
  for (size_t i = 0; i < s->cap; i++) entry_unshare(s, i);
}

void rill_ckpt_snapshot_clear(rill_ckpt_snapshot *s) {
  rill_ckpt_snapshot_unshare(s);
  for (size_t i = 0; i < s->cap; i++) {
    rill_free(s->names ? s->names[i] : NULL);
    if (s->tensors) rill_tensor_clear(&s->tensors[i]);
  }
  rill_free(s->names);
  rill_free(s->tensors);
  rill_free(s->shared);
  rill_ckpt_snapshot_init(s);
}

static rill_status *snapshot_reserve(rill_ckpt_snapshot *s, size_t n) {
  if (n <= s->cap) return NULL;
  char **names = rill_calloc(n, sizeof *names);
  rill_tensor *ts = rill_calloc(n, sizeof *ts);
  bool *shared = rill_calloc(n, sizeof *shared);
  if (!names || !ts || !shared) {
    rill_free(names);
    rill_free(ts);
    rill_free(shared);
    return rill_oom();
  }
  for (size_t i = 0; i < n; i++) rill_tensor_init(&ts[i]);
  if (s->cap) {
    memcpy(names, s->names, s->cap * sizeof *names);
    memcpy(ts, s->tensors, s->cap * sizeof *ts);
    memcpy(shared, s->shared, s->cap * sizeof *shared);
  }
  rill_free(s->names);
  rill_free(s->tensors);
  rill_free(s->shared);
  s->names = names;
  s->tensors = ts;
  s->shared = shared;
  s->cap = n;
  return NULL;
}

static rill_status *check_name(const char *name) {
  if (!name || !*name) return rill_error(RILL_INVALID_ARGUMENT, "checkpoint: empty variable name");
  for (const unsigned char *c = (const unsigned char *)name; *c; c++)
    if (*c < 0x20 || *c == 0x7f)
      return rill_error(RILL_INVALID_ARGUMENT,
                        "checkpoint: variable name '%s' holds a control character", name);
  return NULL;
}

rill_status *rill_ckpt_snapshot_take(rill_ckpt_snapshot *s, const char *const *names,
                                     const rill_tensor *const *tensors, size_t n,
                                     size_t share_min_bytes) {
  rill_ckpt_snapshot_unshare(s); /* a snapshot that was never written */
  RILL_TRY(snapshot_reserve(s, n));
  for (size_t i = 0; i < n; i++) {
    RILL_TRY(check_name(names[i]));
    for (size_t j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0)
        return rill_error(RILL_INVALID_ARGUMENT, "checkpoint: variable '%s' is listed twice",
                          names[i]);
    const rill_tensor *src = tensors[i];
    if (!src || !rill_tensor_is_set(src))
      return rill_error(RILL_FAILED_PRECONDITION, "checkpoint: variable '%s' has no value", names[i]);
    if (!s->names[i] || strcmp(s->names[i], names[i]) != 0) {
      char *copy = rill_strdup(names[i]);
      if (!copy) return rill_oom();
      rill_free(s->names[i]);
      s->names[i] = copy;
    }
    rill_tensor *dst = &s->tensors[i];
    size_t nb = rill_tensor_nbytes(src);
    if (nb >= share_min_bytes && src->buf->owned) {
      RILL_TRY(rill_status_wrap(rill_tensor_share(dst, src), "checkpoint: variable '%s'", names[i]));
      rill_buffer_pin(dst->buf);
      s->shared[i] = true;
      continue;
    }
    RILL_TRY(rill_status_wrap(rill_tensor_alloc(dst, src->dtype, &src->dims), "checkpoint: variable '%s'",
                              names[i]));
    if (nb) memcpy(rill_tensor_ptr(dst), rill_tensor_ptr(src), nb);
    if (src->lod.nlevels)
      RILL_TRY(rill_lod_copy(&dst->lod, &src->lod));
    else if (dst->lod.nlevels)
      rill_lod_clear(&dst->lod);
  }
  s->n = n;
  return NULL;
}

/* ------------------------------------------------------------- file names ----- */

/* A variable name as a file name inside the checkpoint: bytes other than
 * [A-Za-z0-9._@-] become %XX, a leading '.' too, and a name that would be the
 * manifest's gets its first byte escaped. Never contains '/', never "." or "..". */
static char *file_name_of(const char *name) {
  size_t n = strlen(name);
  char *out = rill_malloc(3 * n + 1);
  if (!out) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)name[i];
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-' || c == '@' || (c == '.' && i > 0);
    if (i == 0 && strcmp(name, RILL_CKPT_MANIFEST) == 0) plain = false;
    if (plain) {
      out[k++] = (char)c;
    } else {
      static const char hex[] = "0123456789ABCDEF";
      out[k++] = '%';
      out[k++] = hex[c >> 4];
      out[k++] = hex[c & 15];
    }
  }
  out[k] = 0;
  return out;
}

static char *join2(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *p = rill_malloc(n);
  if (p) snprintf(p, n, "%s/%s", a, b);
  return p;
}

/* ------------------------------------------------------------- writing -------- */


static rill_status *manifest_header(rill_bytes *m, const rill_ckpt_snapshot *s) {
  RILL_TRY(rill_bytes_appendf(m, "%s\nstep %" PRId64 "\ntime_ns %" PRId64 "\nprogram %016" PRIx64 "\n",
                      MANIFEST_MAGIC, s->step, s->time_ns, s->program_hash));
  if (s->has_rng)
    return rill_bytes_appendf(m, "rng %016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64 "\n",
                      s->rng[0], s->rng[1], s->rng[2], s->rng[3]);
  return rill_bytes_appendf(m, "rng none\n");
}

static rill_status *manifest_var(rill_bytes *m, const char *file, uint64_t bytes, uint32_t crc,
                                 const rill_tensor *t, const char *name) {
  RILL_TRY(rill_bytes_appendf(m, "var %s %" PRIu64 " %08" PRIx32 " %d ", file, bytes, crc, (int)t->dtype));
  if (!t->dims.n) RILL_TRY(rill_bytes_appendf(m, "-"));
  for (int k = 0; k < t->dims.n; k++)
    RILL_TRY(rill_bytes_appendf(m, "%s%" PRId64, k ? "," : "", t->dims.d[k]));
  return rill_bytes_appendf(m, " %s\n", name);
}

/* Removes leftovers of writers that died: .tmp-, .old- and .trash- directories whose
 * process is gone. */
static void remove_stale(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  static const char *prefixes[] = {".tmp-" RILL_CKPT_PREFIX, ".old-" RILL_CKPT_PREFIX,
                                   ".trash-" RILL_CKPT_PREFIX}; /* not .spare-: reused */
  struct dirent *e;
  char *victims[64];
  size_t nv = 0;
  while ((e = readdir(d)) && nv < 64) {
    for (size_t k = 0; k < 3; k++) {
      size_t pl = strlen(prefixes[k]);
      if (strncmp(e->d_name, prefixes[k], pl) != 0) continue;
      /* <step>-<pid>-<n> */
      const char *dash = strchr(e->d_name + pl, '-');
      if (!dash) break;
      long pid = strtol(dash + 1, NULL, 10);
      if (pid <= 0 || pid == (long)getpid()) break;
      if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) break;
      victims[nv] = join2(dir, e->d_name);
      if (victims[nv]) nv++;
      break;
    }
  }
  closedir(d);
  for (size_t i = 0; i < nv; i++) {
    rill_status_destroy(rill_dir_remove_tree(victims[i]));
    rill_free(victims[i]);
  }
}

static int cmp_step_desc(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* The steps of DIR's checkpoint_<step> entries, newest first. */
static rill_status *scan_steps(const char *dir, int64_t **steps, size_t *n) {
  *steps = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT) return NULL;
    return rill_error(RILL_IO, "cannot open checkpoint directory '%s': %s", dir, strerror(errno));
  }
  rill_status *st = NULL;
  size_t cap = 0;
  struct dirent *e;
  size_t pl = strlen(RILL_CKPT_PREFIX);
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, RILL_CKPT_PREFIX, pl) != 0) continue;
    const char *num = e->d_name + pl;
    if (!*num || strlen(num) > 18 || (num[0] == '0' && num[1])) continue;
    bool digits = true;
    for (const char *c = num; *c; c++) digits &= *c >= '0' && *c <= '9';
    if (!digits) continue;
    if (*n == cap) {
      void *items = *steps;
      if (!rill_grow(&items, &cap, *n + 1, sizeof **steps)) {
        st = rill_oom();
        break;
      }
      *steps = items;
    }
    (*steps)[(*n)++] = strtoll(num, NULL, 10);
  }
  closedir(d);
  if (st) {
    rill_free(*steps);
    *steps = NULL;
    *n = 0;
    return st;
  }
  if (*n) qsort(*steps, *n, sizeof **steps, cmp_step_desc);
  return NULL;
}

static char *step_dir(const char *dir, int64_t step) {
  char name[64];
  snprintf(name, sizeof name, RILL_CKPT_PREFIX "%" PRId64, step);
  return join2(dir, name);
}

static atomic_uint tmp_counter;

static char *hidden_dir(const char *dir, const char *kind, int64_t step) {
  char name[128];
  snprintf(name, sizeof name, ".%s-" RILL_CKPT_PREFIX "%" PRId64 "-%ld-%u", kind, step,
           (long)getpid(), atomic_fetch_add(&tmp_counter, 1));
  return join2(dir, name);
}

/* Spare directories. Instead of deleting the oldest checkpoint, retention keeps it
 * (up to SPARES_MAX of them) as DIR/.spare-checkpoint_<step>-<pid>-<n>; the next write
 * renames one to its temp directory and writes its files over the old ones in place,
 * so the file system neither frees nor allocates the blocks (deleting and recreating
 * megabytes of files costs more than writing them). Hidden, so never taken for a
 * checkpoint. */
#define SPARE_PREFIX ".spare-" RILL_CKPT_PREFIX

/* Spares kept at most. Retention usually retires one checkpoint per write, which the
 * next write takes back; but the parts of cluster snapshots retire two at once whenever
 * two snapshots complete between two of a process's writes, and a second spare spares
 * the file system deleting one and creating another a step later. */
#define SPARES_MAX 2

static size_t count_spares(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d))) n += strncmp(e->d_name, SPARE_PREFIX, strlen(SPARE_PREFIX)) == 0;
  closedir(d);
  return n;
}

/* Renames a spare of this process or of one that is gone to `tmp`; false if none. */
static bool take_spare(const char *dir, const char *tmp) {
  DIR *d = opendir(dir);
  if (!d) return false;
  bool taken = false;
  struct dirent *e;
  size_t pl = strlen(SPARE_PREFIX);
  while (!taken && (e = readdir(d))) {
    if (strncmp(e->d_name, SPARE_PREFIX, pl) != 0) continue;
    const char *dash = strchr(e->d_name + pl, '-');
    long pid = dash ? strtol(dash + 1, NULL, 10) : 0;
    if (pid <= 0 || (pid != (long)getpid() && !(kill((pid_t)pid, 0) != 0 && errno == ESRCH))) continue;
    char *from = join2(dir, e->d_name);
    rill_status *st = from ? rill_file_rename(from, tmp) : rill_oom();
    taken = st == NULL;
    rill_status_destroy(st);
    rill_free(from);
  }
  closedir(d);
  return taken;
}

/* Removes the files of a reused spare that the new checkpoint will not write.
 * *same: the spare already holds exactly the files the checkpoint writes (so writing
 * it changes no directory entry). */
static rill_status *prune_spare(const char *tmp, const rill_ckpt_snapshot *s, bool *same) {
  size_t matched = 0;
  bool manifest = false, pruned = false;
  DIR *d = opendir(tmp);
  if (!d) return rill_error(RILL_IO, "cannot open '%s': %s", tmp, strerror(errno));
  rill_status *st = NULL;
  struct dirent *e;
  while (!st && (e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (strcmp(e->d_name, RILL_CKPT_MANIFEST) == 0) {
      manifest = true;
      continue;
    }
    bool keep = false;
    for (size_t i = 0; i < s->n && !keep && !st; i++) {
      char *f = file_name_of(s->names[i]);
      if (!f) st = rill_oom();
      else keep = strcmp(f, e->d_name) == 0;
      rill_free(f);
    }
    if (keep) matched++;
    if (!keep && !st) {
      char *p = join2(tmp, e->d_name);
      st = p ? rill_dir_remove_tree(p) : rill_oom();
      rill_free(p);
      pruned = true;
    }
  }
  closedir(d);
  *same = manifest && !pruned && matched == s->n;
  return st;
}

/* Retires steps[from..n): the first ones become spares while there are fewer than
 * SPARES_MAX, the others are renamed away and removed. */
static rill_status *retire_steps(const char *dir, const int64_t *steps, size_t first, size_t n,
                                 int64_t step) {
  rill_status *st = NULL;
  char **trash = n > first ? rill_calloc(n - first, sizeof *trash) : NULL;
  size_t nt = 0;
  if (n > first && !trash) st = rill_oom();
  size_t spares = n > first ? count_spares(dir) : 0;
  size_t retired = 0;
  for (size_t i = first; i < n && !st; i++) {
    bool spare = spares < SPARES_MAX;
    char *from = step_dir(dir, steps[i]);
    char *to = hidden_dir(dir, spare ? "spare" : "trash", steps[i]);
    if (!from || !to)
      st = rill_oom();
    else if (!(st = rill_file_rename(from, to)) && !spare)
      trash[nt++] = to, to = NULL;
    spares += spare;
    retired++;
    rill_free(from);
    rill_free(to);
  }
  /* The removal is not made durable (no fsync of DIR): after a power loss an old
   * checkpoint may come back, whole or in part; the newer ones are durable already,
   * and loading skips a damaged one. */
  if (retired) hook_in(dir, "retention", step);
  for (size_t i = 0; i < nt; i++) {
    rill_status *s2 = rill_dir_remove_tree(trash[i]);
    if (!st) st = s2;
    else rill_status_destroy(s2);
    rill_free(trash[i]);
  }
  rill_free(trash);
  return st ? rill_status_wrap(st, "checkpoint retention in '%s'", dir) : NULL;
}

/* Keeps the newest `keep` checkpoints. */
static rill_status *retain(const char *dir, int32_t keep, int64_t step) {
  if (keep <= 0) return NULL;
  int64_t *steps;
  size_t n;
  RILL_TRY(scan_steps(dir, &steps, &n));
  rill_status *st = retire_steps(dir, steps, (size_t)keep, n, step);
  rill_free(steps);
  return st;
}

rill_status *rill_ckpt_retire_outside(const char *dir, int64_t low, int64_t high) {
  int64_t *steps;
  size_t n;
  RILL_TRY(scan_steps(dir, &steps, &n));
  int64_t *order = n ? rill_malloc(n * sizeof *order) : NULL;
  rill_status *st = n && !order ? rill_oom() : NULL;
  if (!st && n) {
    /* Those kept first (newest first), then those retired. */
    size_t kept = 0, m = 0;
    for (size_t i = 0; i < n; i++)
      if (steps[i] >= low && steps[i] <= high) order[m++] = steps[i];
    kept = m;
    for (size_t i = 0; i < n; i++)
      if (steps[i] < low || steps[i] > high) order[m++] = steps[i];
    if (kept < n) st = retire_steps(dir, order, kept, n, kept ? order[0] : -1);
  }
  rill_free(order);
  rill_free(steps);
  return st;
}

/* Files whose writeback is under way, finished (synced, closed) in order. */
#define MAX_PENDING 64

typedef struct pending_files {
  int fd[MAX_PENDING];
  char *path[MAX_PENDING];
  size_t n;
  uint64_t bytes; /* written into the files pending */
} pending_files;

/* Below this many bytes pending, the syncs run on the writing thread one after the
 * other: starting threads costs more than a small checkpoint's flushes gain from
 * overlapping (a trainer's part of a cluster snapshot is a few hundred bytes). */
#define SYNC_THREADS_MIN_BYTES ((uint64_t)1 << 20)

static rill_status *finish_oldest(pending_files *p) {
  rill_status *st = rill_file_write_finish(p->fd[0], p->path[0]);
  rill_free(p->path[0]);
  p->n--;
  memmove(p->fd, p->fd + 1, p->n * sizeof *p->fd);
  memmove(p->path, p->path + 1, p->n * sizeof *p->path);
  return st;
}

/* Finishing (fdatasync) the pending files from a few threads at once: each fdatasync
 * ends with a flush of the device's cache, and the block layer merges flushes that
 * wait at the same time, so n files cost about as much as one. */
#define SYNC_THREADS 4

typedef struct sync_work {
  pending_files *p;
  atomic_size_t next;
  rill_status *errors[MAX_PENDING];
} sync_work;

static void *sync_worker(void *arg) {
  sync_work *w = arg;
  for (size_t i; (i = atomic_fetch_add(&w->next, 1)) < w->p->n;)
    w->errors[i] = rill_file_write_finish(w->p->fd[i], w->p->path[i]);
  return NULL;
}

static rill_status *finish_all(pending_files *p, rill_status *st) {
  uint64_t bytes = p->bytes;
  p->bytes = 0;
  if (p->n > 1 && bytes >= SYNC_THREADS_MIN_BYTES) {
    sync_work w = {.p = p};
    atomic_init(&w.next, 0);
    pthread_t th[SYNC_THREADS - 1];
    size_t started = 0;
    for (size_t k = 0; k + 1 < SYNC_THREADS && k + 1 < p->n; k++)
      if (pthread_create(&th[started], NULL, sync_worker, &w) == 0) started++;
    sync_worker(&w); /* this thread too; alone if no thread could start */
    for (size_t k = 0; k < started; k++) pthread_join(th[k], NULL);
    for (size_t i = 0; i < p->n; i++) {
      if (!st) st = w.errors[i];
      else rill_status_destroy(w.errors[i]);
      rill_free(p->path[i]);
    }
    p->n = 0;
    return st;
  }
  while (p->n) {
    rill_status *s2 = finish_oldest(p);
    if (!st) st = s2;
    else rill_status_destroy(s2);
  }
  return st;
}

/* Writes one file and adds it to `p` (finishing the oldest when full); takes `path`. */
static rill_status *write_pending(pending_files *p, char *path, const rill_file_part *parts, size_t n,
                                  bool overwrite, uint32_t *crc) {
  if (p->n == MAX_PENDING) {
    rill_status *st = finish_oldest(p);
    if (st) {
      rill_free(path);
      return st;
    }
  }
  int fd;
  rill_status *st = rill_file_write_start(path, parts, n, overwrite, crc, &fd);
  if (st) {
    rill_free(path);
    return st;
  }
  for (size_t i = 0; i < n; i++) p->bytes += parts[i].size;
  p->fd[p->n] = fd;
  p->path[p->n++] = path;
  return NULL;
}

static rill_status *write_files(const char *tmp, rill_ckpt_snapshot *s, rill_bytes *man,
                                pending_files *pend, bool reuse, uint64_t *total) {
  rill_bytes head;
  rill_bytes_init(&head);
  rill_status *st = NULL;
  for (size_t i = 0; i < s->n && !st; i++) {
    const rill_tensor *t = &s->tensors[i];
    head.size = 0;
    char *file = file_name_of(s->names[i]);
    char *path = file ? join2(tmp, file) : NULL;
    if (!path) st = rill_oom();
    if (!st) st = rill_stream_write_lod_tensor_header(&head, t);
    if (!st) {
      size_t nb = rill_tensor_nbytes(t);
      uint32_t crc = 0; /* of the file's bytes, taken as they are written */
      rill_file_part parts[2] = {{head.data, head.size}, {rill_tensor_ptr(t), nb}};
      hook_in(NULL, "write", s->step);
      st = write_pending(pend, path, parts, 2, reuse, &crc);
      path = NULL;
      if (!st) st = manifest_var(man, file, head.size + nb, crc, t, s->names[i]);
      *total += head.size + nb;
      entry_unshare(s, i); /* its bytes are in the file system's hands */
    }
    if (st) st = rill_status_wrap(st, "variable '%s'", s->names[i]);
    rill_free(file);
    rill_free(path);
  }
  rill_bytes_clear(&head);
  return st;
}

static rill_status *write_checkpoint(const char *dir, rill_ckpt_snapshot *s, int32_t max_to_keep,
                                     uint64_t *bytes);

rill_status *rill_ckpt_write(const char *dir, rill_ckpt_snapshot *s, int32_t max_to_keep,
                             uint64_t *bytes) {
  rill_status *st = write_checkpoint(dir, s, max_to_keep, bytes);
  rill_ckpt_snapshot_unshare(s);
  return st;
}

static rill_status *write_checkpoint(const char *dir, rill_ckpt_snapshot *s, int32_t max_to_keep,
                                     uint64_t *bytes) {
  if (s->step < 0)
    return rill_error(RILL_INVALID_ARGUMENT, "checkpoint: step %" PRId64 " is negative", s->step);
  RILL_TRY(rill_status_wrap(rill_dir_make(dir), "checkpoint directory"));
  remove_stale(dir);
  char *tmp = hidden_dir(dir, "tmp", s->step);
  char *final = step_dir(dir, s->step);
  char *old = NULL, *mpath = tmp ? join2(tmp, RILL_CKPT_MANIFEST) : NULL;
  rill_bytes man;
  rill_bytes_init(&man);
  pending_files pend = {.n = 0};
  uint64_t total = 0;
  bool made = false, reused = false, same_entries = false;
  rill_status *st = NULL;
  if (!tmp || !final || !mpath) {
    st = rill_oom();
    goto fail;
  }
  reused = take_spare(dir, tmp);
  if (reused) {
    if ((st = prune_spare(tmp, s, &same_entries))) goto fail;
  } else if ((st = rill_dir_make(tmp))) {
    goto fail;
  }
  made = true;
  if ((st = manifest_header(&man, s))) goto fail;
  rill_ckpt_crash_point(dir, "write", s->step);
  if ((st = write_files(tmp, s, &man, &pend, reused, &total))) goto fail;
  {
    uint32_t crc = rill_crc32c(0, man.data, man.size);
    if ((st = rill_bytes_appendf(&man, "end %08" PRIx32 "\n", crc))) goto fail;
  }
  hook_in(dir, "manifest", s->step);
  {
    rill_file_part part = {man.data, man.size};
    char *mp = rill_strdup(mpath);
    if (!mp) {
      st = rill_oom();
      goto fail;
    }
    if ((st = write_pending(&pend, mp, &part, 1, reused, NULL))) goto fail;
  }
  if ((st = finish_all(&pend, NULL))) goto fail;
  total += man.size;
  hook_in(dir, "sync", s->step);
  /* New entries in the temp directory must be durable before it is renamed; a reused
   * spare that got no new entry has nothing to sync. */
  if (!same_entries && (st = rill_dir_sync(tmp))) goto fail;
  if (rill_path_exists(final)) {
    /* The same step again (a run resumed from an older checkpoint): move the old one
     * aside; until the rename below, the newest checkpoint is the previous step's. */
    if (!(old = hidden_dir(dir, "old", s->step))) {
      st = rill_oom();
      goto fail;
    }
    if ((st = rill_file_rename(final, old))) goto fail;
  }
  hook_in(dir, "rename", s->step);
  if ((st = rill_file_rename(tmp, final))) goto fail;
  made = false;
  if ((st = rill_dir_sync(dir))) goto fail;
  hook_in(dir, "committed", s->step);
  if (old) rill_status_destroy(rill_dir_remove_tree(old));
  st = retain(dir, max_to_keep, s->step);
  if (bytes) *bytes = total;
  goto done;
fail:
  st = finish_all(&pend, st);
  if (made) rill_status_destroy(rill_dir_remove_tree(tmp));
  if (old && !rill_path_exists(final)) rill_status_destroy(rill_file_rename(old, final));
  st = rill_status_wrap(st, "writing checkpoint %" PRId64 " into '%s'", s->step, dir);
done:
  rill_bytes_clear(&man);
  rill_free(tmp);
  rill_free(final);
  rill_free(old);
  rill_free(mpath);
  return st;
}

/* ------------------------------------------------------------- reading -------- */

static rill_status *parse_i64(const char *tok, const char *what, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(tok, &end, 10);
  if (!*tok || *end || errno) return rill_error(RILL_CORRUPT, "bad %s '%s'", what, tok);
  *out = v;
  return NULL;
}

static rill_status *parse_hex(const char *tok, size_t digits, const char *what, uint64_t *out) {
  if (strlen(tok) != digits) return rill_error(RILL_CORRUPT, "bad %s '%s'", what, tok);
  uint64_t v = 0;
  for (const char *c = tok; *c; c++) {
    int d = *c >= '0' && *c <= '9' ? *c - '0' : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10 : -1;
    if (d < 0) return rill_error(RILL_CORRUPT, "bad %s '%s'", what, tok);
    v = v << 4 | (uint64_t)d;
  }
  *out = v;
  return NULL;
}

/* Splits the next space-separated token off *line (NUL-terminated in place). */
static char *token(char **line) {
  char *p = *line;
  if (!p || !*p) return NULL;
  char *sp = strchr(p, ' ');
  if (sp) {
    *sp = 0;
    *line = sp + 1;
  } else {
    *line = p + strlen(p);
  }
  return p;
}

static rill_status *parse_dims(char *tok, rill_dims *dims) {
  dims->n = 0;
  if (strcmp(tok, "-") == 0) return NULL;
  for (char *p = tok;;) {
    char *comma = strchr(p, ',');
    if (comma) *comma = 0;
    int64_t v;
    RILL_TRY(parse_i64(p, "dimension", &v));
    if (v < 0 || dims->n >= RILL_MAX_DIMS) return rill_error(RILL_CORRUPT, "bad dimensions");
    dims->d[dims->n++] = v;
    if (!comma) return NULL;
    p = comma + 1;
  }
}

static rill_status *read_var(const char *path, char *rest, rill_ckpt_snapshot *out, size_t idx) {
  char *file = token(&rest), *bytes_s = token(&rest), *crc_s = token(&rest), *dt_s = token(&rest),
       *dims_s = token(&rest);
  const char *name = rest;
  if (!dims_s || !*name) return rill_error(RILL_CORRUPT, "%s/" RILL_CKPT_MANIFEST ": a var line is incomplete", path);
  int64_t nbytes, dt;
  uint64_t crc;
  rill_dims dims;
  rill_status *st = NULL;
  if ((st = parse_i64(bytes_s, "byte size", &nbytes)) || (st = parse_hex(crc_s, 8, "checksum", &crc)) ||
      (st = parse_i64(dt_s, "dtype", &dt)) || (st = parse_dims(dims_s, &dims)))
    return rill_status_wrap(st, "%s/" RILL_CKPT_MANIFEST ": variable '%s'", path, name);
  RILL_TRY(check_name(name));
  char *expect_file = file_name_of(name);
  if (!expect_file) return rill_oom();
  bool same = strcmp(expect_file, file) == 0;
  rill_free(expect_file);
  if (!same)
    return rill_error(RILL_CORRUPT, "%s/" RILL_CKPT_MANIFEST ": variable '%s' names file '%s'", path,
                      name, file);
  for (size_t j = 0; j < idx; j++)
    if (strcmp(out->names[j], name) == 0)
      return rill_error(RILL_CORRUPT, "%s/" RILL_CKPT_MANIFEST ": variable '%s' is listed twice", path, name);
  char *fpath = join2(path, file);
  if (!fpath) return rill_oom();
  struct stat sb;
  uint8_t *data = NULL;
  size_t size = 0;
  if (stat(fpath, &sb) != 0) {
    st = rill_error(errno == ENOENT ? RILL_CORRUPT : RILL_IO, "'%s' is missing: %s", fpath, strerror(errno));
  } else if (!S_ISREG(sb.st_mode) || nbytes < 0 || (uint64_t)sb.st_size != (uint64_t)nbytes) {
    st = rill_error(RILL_CORRUPT, "'%s' is %lld bytes, the manifest says %lld (truncated or replaced)",
                    fpath, (long long)sb.st_size, (long long)nbytes);
  } else if (!(st = rill_file_read_all(fpath, (size_t)nbytes, &data, &size))) {
    uint32_t got = rill_crc32c(0, data, size);
    if (got != (uint32_t)crc) {
      st = rill_error(RILL_CORRUPT, "'%s': checksum mismatch (crc32c %08" PRIx32 ", the manifest says %08" PRIx32 ")",
                      fpath, got, (uint32_t)crc);
    } else {
      rill_reader r;
      rill_reader_init(&r, data, size, fpath);
      rill_tensor_expect ex = {true, (rill_dtype)dt, true, dims};
      out->names[idx] = rill_strdup(name);
      if (!out->names[idx]) st = rill_oom();
      if (!st) st = rill_stream_read_lod_tensor(&r, name, &ex, &out->tensors[idx]);
      if (!st && rill_reader_left(&r))
        st = rill_error(RILL_CORRUPT, "'%s': %zu bytes left after variable '%s'", fpath,
                        rill_reader_left(&r), name);
      if (!st && out->tensors[idx].dims.n != dims.n)
        st = rill_error(RILL_CORRUPT, "'%s': variable '%s' has rank %d, the manifest says %d", fpath,
                        name, out->tensors[idx].dims.n, dims.n);
    }
  }
  rill_free(data);
  rill_free(fpath);
  return st;
}

rill_status *rill_ckpt_read(const char *path, rill_ckpt_snapshot *out) {
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  char *mpath = join2(path, RILL_CKPT_MANIFEST);
  if (!mpath) return rill_oom();
  uint8_t *buf = NULL;
  size_t size = 0;
  rill_status *st = rill_file_read_all(mpath, RILL_CKPT_MANIFEST_MAX, &buf, &size);
  if (st) goto done;
  /* The last line is "end <crc32c of everything before it>". */
  {
    if (size < 14 || buf[size - 1] != '\n') {
      st = rill_error(RILL_CORRUPT, "'%s' is truncated (no end line)", mpath);
      goto done;
    }
    size_t last = size - 1;
    while (last > 0 && buf[last - 1] != '\n') last--;
    buf[size - 1] = 0;
    uint64_t want = 0;
    rill_status *bad = strncmp((char *)buf + last, "end ", 4) != 0
                           ? rill_error(RILL_CORRUPT, "no end line")
                           : parse_hex((char *)buf + last + 4, 8, "checksum", &want);
    if (bad) {
      rill_status_destroy(bad);
      st = rill_error(RILL_CORRUPT, "'%s' is truncated or damaged (no valid end line)", mpath);
      goto done;
    }
    uint32_t got = rill_crc32c(0, buf, last);
    if (got != (uint32_t)want) {
      st = rill_error(RILL_CORRUPT, "'%s': checksum mismatch (crc32c %08" PRIx32 ", the end line says %08" PRIx32 ")",
                      mpath, got, (uint32_t)want);
      goto done;
    }
    buf[last] = 0;
  }
  /* Count the var lines to size the snapshot. */
  size_t nvars = 0;
  for (char *p = (char *)buf; (p = strstr(p, "\nvar ")); p++) nvars++;
  if ((st = snapshot_reserve(&s, nvars))) goto done;
  char *line = (char *)buf;
  bool magic = false, have_step = false;
  size_t idx = 0;
  while (*line && !st) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = 0;
    if (!magic) {
      if (strcmp(line, MANIFEST_MAGIC) != 0)
        st = rill_error(RILL_CORRUPT, "'%s' is not a rill checkpoint manifest", mpath);
      magic = true;
      line = nl ? nl + 1 : line + strlen(line);
      continue;
    }
    char *rest = line;
    char *key = token(&rest);
    if (!key) {
      st = rill_error(RILL_CORRUPT, "empty line");
    } else if (strcmp(key, "step") == 0) {
      st = parse_i64(rest, "step", &s.step);
      have_step = !st;
    } else if (strcmp(key, "time_ns") == 0) {
      st = parse_i64(rest, "time", &s.time_ns);
    } else if (strcmp(key, "program") == 0) {
      st = parse_hex(rest, 16, "program hash", &s.program_hash);
    } else if (strcmp(key, "rng") == 0) {
      if (strcmp(rest, "none") != 0) {
        s.has_rng = true;
        for (int k = 0; k < 4 && !st; k++) {
          char *tok = token(&rest);
          st = tok ? parse_hex(tok, 16, "generator state", &s.rng[k])
                   : rill_error(RILL_CORRUPT, "incomplete generator state");
        }
      }
    } else if (strcmp(key, "var") == 0) {
      if (idx >= nvars) {
        st = rill_error(RILL_CORRUPT, "more var lines than counted");
      } else if ((st = read_var(path, rest, &s, idx))) {
        goto done; /* names the file already */
      } else {
        idx++;
        s.n = idx;
      }
    }
    /* other keys: written by a newer version, ignored */
    if (st) st = rill_status_wrap(st, "'%s'", mpath);
    line = nl ? nl + 1 : line + strlen(line);
  }
  if (!st && !have_step) st = rill_error(RILL_CORRUPT, "'%s' has no step", mpath);
  s.n = idx;
  if (!st) {
    *out = s;
    rill_ckpt_snapshot_init(&s);
  }
done:
  rill_free(buf);
  rill_free(mpath);
  rill_ckpt_snapshot_clear(&s);
  return st;
}

static uint64_t dir_bytes(const char *path) {
  DIR *d = opendir(path);
  if (!d) return 0;
  uint64_t total = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    char p[PATH_MAX];
    struct stat sb;
    if ((size_t)snprintf(p, sizeof p, "%s/%s", path, e->d_name) < sizeof p && stat(p, &sb) == 0 &&
        S_ISREG(sb.st_mode))
      total += (uint64_t)sb.st_size;
  }
  closedir(d);
  return total;
}

void rill_ckpt_listing_clear(rill_ckpt_listing *l) {
  for (size_t i = 0; i < l->n; i++) {
    rill_free(l->items[i].path);
    rill_status_destroy(l->items[i].problem);
  }
  rill_free(l->items);
  l->items = NULL;
  l->n = 0;
  l->vanished = 0;
}

static rill_status *listing_add(rill_ckpt_listing *l, char *path, int64_t step,
                                const rill_ckpt_snapshot *s, rill_status *problem) {
  rill_ckpt_entry *items = rill_realloc(l->items, (l->n + 1) * sizeof *items);
  if (!items) {
    rill_free(path);
    rill_status_destroy(problem);
    return rill_oom();
  }
  l->items = items;
  rill_ckpt_entry *e = &items[l->n++];
  e->path = path;
  e->step = step;
  e->time_ns = s && !problem ? s->time_ns : 0;
  struct stat sb;
  if (problem && stat(path, &sb) == 0) /* unreadable manifest: when it was committed */
    e->time_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
  e->nvars = s && !problem ? s->n : 0;
  e->bytes = dir_bytes(path);
  e->problem = problem;
  return NULL;
}

/* Whether a and b are the same directory entry, unchanged: retirement renames a
 * checkpoint away (which changes its ctime) before anything in it changes. */
static bool same_dir(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
         a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Verifies DIR/checkpoint_<step> into `s`: NULL or the problem that makes it damaged.
 * A writer may retire the checkpoint (rename it away, then reuse or delete its files)
 * while it is being read, which shows as a missing or changed file; a problem counts
 * only if the directory is still there, the same and unchanged, after it was seen.
 * *vanished: it was gone, or kept changing, so it is not reported at all. */
static rill_status *verify_step(const char *path, int64_t step, rill_ckpt_snapshot *s, bool *vanished) {
  *vanished = false;
  for (int attempt = 0;; attempt++) {
    struct stat before, after;
    if (stat(path, &before) != 0) {
      if (errno == ENOENT) {
        *vanished = true;
        return NULL;
      }
      return rill_error(RILL_IO, "cannot examine '%s': %s", path, strerror(errno));
    }
    rill_status *problem = rill_ckpt_read(path, s);
    if (!problem && s->step != step)
      problem = rill_error(RILL_CORRUPT, "'%s' holds step %" PRId64, path, s->step);
    if (!problem || rill_status_code(problem) == RILL_OUT_OF_MEMORY) return problem;
    bool gone = stat(path, &after) != 0 && errno == ENOENT;
    if (!gone && same_dir(&before, &after)) return problem;
    rill_status_destroy(problem);
    rill_ckpt_snapshot_clear(s);
    if (gone || attempt == 2) {
      *vanished = true;
      return NULL;
    }
  }
}

rill_status *rill_ckpt_list(const char *dir, rill_ckpt_listing *out) {
  int64_t *steps;
  size_t n;
  RILL_TRY(scan_steps(dir, &steps, &n));
  rill_ckpt_listing l = {0};
  rill_status *st = NULL;
  for (size_t i = 0; i < n && !st; i++) {
    char *path = step_dir(dir, steps[i]);
    if (!path) {
      st = rill_oom();
      break;
    }
    rill_ckpt_snapshot s;
    rill_ckpt_snapshot_init(&s);
    bool vanished;
    rill_status *problem = verify_step(path, steps[i], &s, &vanished);
    if (problem && rill_status_code(problem) == RILL_OUT_OF_MEMORY) {
      st = problem;
      rill_free(path);
    } else if (vanished) {
      l.vanished++;
      rill_free(path);
    } else {
      st = listing_add(&l, path, steps[i], &s, problem);
    }
    rill_ckpt_snapshot_clear(&s);
  }
  rill_free(steps);
  if (st) {
    rill_ckpt_listing_clear(&l);
    return st;
  }
  *out = l;
  return NULL;
}

/* Scans left out when a checkpoint vanishes while loading: a newer one was committed
 * (retention only retires older ones), so the scan starts over, at most this often. */
#define LOAD_RESCANS 8

rill_status *rill_ckpt_load_latest(const char *dir, rill_ckpt_snapshot *out,
                                   rill_ckpt_listing *skipped) {
  int64_t *steps;
  size_t n;
  RILL_TRY(scan_steps(dir, &steps, &n));
  rill_status *st = NULL;
  bool found = false;
  int rescans = 0;
  size_t nskipped = skipped ? skipped->n : 0;
  size_t i = 0;
  while (i < n && !st && !found) {
    int64_t step = steps[i++];
    char *path = step_dir(dir, step);
    if (!path) {
      st = rill_oom();
      break;
    }
    rill_ckpt_snapshot s;
    rill_ckpt_snapshot_init(&s);
    bool vanished;
    rill_status *problem = verify_step(path, step, &s, &vanished);
    if (!problem && !vanished) {
      *out = s;
      found = true;
      rill_free(path);
      break;
    }
    rill_ckpt_snapshot_clear(&s);
    if (vanished) {
      rill_free(path);
      if (rescans++ < LOAD_RESCANS) {
        /* Start over from the newest; what was skipped so far is examined again. */
        rill_free(steps);
        if (skipped)
          while (skipped->n > nskipped) {
            rill_ckpt_entry *e = &skipped->items[--skipped->n];
            rill_free(e->path);
            rill_status_destroy(e->problem);
          }
        if ((st = scan_steps(dir, &steps, &n))) return st;
        i = 0;
      }
    } else if (rill_status_code(problem) == RILL_OUT_OF_MEMORY) {
      st = problem;
      rill_free(path);
    } else if (skipped) {
      st = listing_add(skipped, path, step, NULL, problem);
    } else {
      rill_status_destroy(problem);
      rill_free(path);
    }
  }
  rill_free(steps);
  if (st) {
    if (found) rill_ckpt_snapshot_clear(out);
    return st;
  }
  if (!found)
    return rill_error(RILL_NOT_FOUND, "no verified checkpoint in '%s' (%zu damaged)", dir,
                      skipped ? skipped->n : (size_t)0);
  return NULL;
}

rill_status *rill_ckpt_install(rill_ckpt_snapshot *s, rill_scope *scope) {
  for (size_t i = 0; i < s->n; i++) {
    rill_variable *v = rill_scope_find(scope, s->names[i]);
    if (v && v->kind != RILL_VARKIND_EMPTY && v->kind != RILL_VARKIND_TENSOR)
      return rill_error(RILL_FAILED_PRECONDITION,
                        "checkpoint: variable '%s' holds a %s in the scope, not a tensor",
                        s->names[i], rill_var_kind_name(v->kind));
  }
  /* Create every variable first, so a failure leaves the scope's values unchanged. */
  rill_variable **vars = rill_calloc(s->n ? s->n : 1, sizeof *vars);
  if (!vars) return rill_oom();
  for (size_t i = 0; i < s->n; i++) {
    vars[i] = rill_scope_find(scope, s->names[i]);
    if (!vars[i]) {
      rill_status *st = rill_scope_var(scope, s->names[i], &vars[i]);
      if (st) {
        rill_free(vars);
        return st;
      }
    }
  }
  for (size_t i = 0; i < s->n; i++) {
    rill_tensor *t = rill_variable_tensor(vars[i]);
    rill_tensor_swap(t, &s->tensors[i]);
    rill_tensor_clear(&s->tensors[i]);
  }
  rill_free(vars);
  return NULL;
}
