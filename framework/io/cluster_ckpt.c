#include "framework/io/cluster_ckpt.h"

#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/base/thread.h"
#include "rill.h"
#include "framework/io/crc32c.h"
#include "framework/io/file.h"
#include "framework/io/stream.h"

#define MANIFEST_MAGIC "rill cluster snapshot 1"

void rill_cluster_part_name(rill_cluster_role role, int32_t rank, char *buf, size_t cap) {
  snprintf(buf, cap, "%s_%d", role == RILL_CLUSTER_PSERVER ? "pserver" : "trainer", (int)rank);
}

static rill_status *check_shape(const rill_cluster_shape *sh) {
  if (!sh || sh->pservers < 1 || sh->trainers < 1 ||
      (int64_t)sh->pservers + sh->trainers > RILL_CLUSTER_MAX_PARTS)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "cluster checkpoint: %d pservers and %d trainers: expected at least one "
                      "of each and at most %d processes",
                      sh ? (int)sh->pservers : 0, sh ? (int)sh->trainers : 0,
                      RILL_CLUSTER_MAX_PARTS);
  return NULL;
}

static void part_of(const rill_cluster_shape *sh, int32_t i, char *buf, size_t cap) {
  if (i < sh->pservers) rill_cluster_part_name(RILL_CLUSTER_PSERVER, i, buf, cap);
  else rill_cluster_part_name(RILL_CLUSTER_TRAINER, i - sh->pservers, buf, cap);
}

/* The CRC32C of part `part`'s manifest for step k; NOT_FOUND when it is not there. */
static rill_status *part_manifest_crc(const char *dir, const char *part, int64_t k,
                                      uint32_t *crc) {
  char *p = rill_strprintf("%s/%s/" RILL_CKPT_PREFIX "%" PRId64 "/" RILL_CKPT_MANIFEST, dir, part, k);
  if (!p) return rill_oom();
  uint8_t *data;
  size_t n;
  rill_status *st = NULL;
  if (!rill_path_exists(p)) st = rill_error(RILL_NOT_FOUND, "'%s' is missing", p);
  else st = rill_file_read_all(p, RILL_CKPT_MANIFEST_MAX, &data, &n);
  if (!st) {
    *crc = rill_crc32c(0, data, n);
    rill_free(data);
  }
  rill_free(p);
  return st;
}

/* Writes DIR/snapshot_<k> when every part of k is committed; *written says whether. */
static rill_status *complete_snapshot(const char *dir, const rill_cluster_shape *sh, int64_t k,
                                      bool *written) {
  *written = false;
  int32_t np = sh->pservers + sh->trainers;
  rill_bytes m;
  rill_bytes_init(&m);
  rill_status *st = rill_bytes_appendf(&m, MANIFEST_MAGIC "\nstep %" PRId64 "\npservers %d\ntrainers %d\n", k,
                           (int)sh->pservers, (int)sh->trainers);
  for (int32_t i = 0; i < np && !st; i++) {
    char part[32];
    part_of(sh, i, part, sizeof part);
    uint32_t crc;
    st = part_manifest_crc(dir, part, k, &crc);
    if (st && rill_status_code(st) == RILL_NOT_FOUND) {
      rill_status_destroy(st);
      rill_bytes_clear(&m);
      return NULL; /* another part is still to come; its writer completes the snapshot */
    }
    if (!st) st = rill_bytes_appendf(&m, "part %s %08" PRIx32 "\n", part, crc);
  }
  if (!st) st = rill_bytes_appendf(&m, "end %08" PRIx32 "\n", rill_crc32c(0, m.data, m.size));
  char *path = st ? NULL : rill_strprintf("%s/" RILL_CLUSTER_SNAPSHOT_PREFIX "%" PRId64, dir, k);
  if (!st && !path) st = rill_oom();
  if (!st) st = rill_file_write(path, m.data, m.size);
  if (!st) *written = true;
  rill_free(path);
  rill_bytes_clear(&m);
  return st;
}

static int cmp_desc(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Parses "<prefix><digits>" into *step. */
static bool parse_step(const char *name, const char *prefix, int64_t *step) {
  size_t pl = strlen(prefix);
  if (strncmp(name, prefix, pl) != 0) return false;
  const char *num = name + pl;
  if (!*num || strlen(num) > 18 || (num[0] == '0' && num[1])) return false;
  for (const char *c = num; *c; c++)
    if (*c < '0' || *c > '9') return false;
  *step = strtoll(num, NULL, 10);
  return true;
}

/* Steps named by DIR's entries "<prefix><step>", newest first, without repeats. */
static rill_status *scan(const char *dir, const char *prefix, int64_t **steps, size_t *n) {
  *steps = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT || errno == ENOTDIR) return NULL;
    return rill_error(RILL_IO, "cannot open '%s': %s", dir, strerror(errno));
  }
  size_t cap = 0;
  rill_status *st = NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    int64_t k;
    if (!parse_step(e->d_name, prefix, &k)) continue;
    if (*n == cap) {
      void *items = *steps;
      if (!rill_grow(&items, &cap, *n + 1, sizeof **steps)) {
        st = rill_oom();
        break;
      }
      *steps = items;
    }
    (*steps)[(*n)++] = k;
  }
  closedir(d);
  if (st) {
    rill_free(*steps);
    *steps = NULL;
    *n = 0;
    return st;
  }
  if (*n) qsort(*steps, *n, sizeof **steps, cmp_desc);
  size_t u = 0;
  for (size_t i = 0; i < *n; i++)
    if (!u || (*steps)[u - 1] != (*steps)[i]) (*steps)[u++] = (*steps)[i];
  *n = u;
  return NULL;
}

/* Keeps the newest `keep` snapshot manifests, removes older ones, and retires this
 * process's parts older than the oldest kept. */
static rill_status *retain(const char *dir, const char *partdir, int32_t keep, int64_t k) {
  rill_ckpt_crash_point(partdir, "retire", k);
  if (keep <= 0) return NULL;
  int64_t *steps;
  size_t n;
  RILL_TRY(scan(dir, RILL_CLUSTER_SNAPSHOT_PREFIX, &steps, &n));
  rill_status *st = NULL;
  if (n >= (size_t)keep) {
    int64_t floor = steps[keep - 1];
    st = rill_ckpt_retire_outside(partdir, floor, INT64_MAX);
    for (size_t i = (size_t)keep; i < n && !st; i++) {
      char *p = rill_strprintf("%s/" RILL_CLUSTER_SNAPSHOT_PREFIX "%" PRId64, dir, steps[i]);
      if (!p) {
        st = rill_oom();
        break;
      }
      if (unlink(p) != 0 && errno != ENOENT)
        st = rill_error(RILL_IO, "cannot remove '%s': %s", p, strerror(errno));
      rill_free(p);
    }
  }
  rill_free(steps);
  return st ? rill_status_wrap(st, "cluster snapshot retention in '%s'", dir) : NULL;
}

rill_status *rill_cluster_commit_part(const char *dir, const rill_cluster_shape *shape,
                                      rill_cluster_role role, int32_t rank,
                                      rill_ckpt_snapshot *s, int32_t keep, bool *completed,
                                      uint64_t *bytes) {
  if (completed) *completed = false;
  RILL_TRY(check_shape(shape));
  int32_t limit = role == RILL_CLUSTER_PSERVER ? shape->pservers : shape->trainers;
  if (rank < 0 || rank >= limit)
    return rill_error(RILL_INVALID_ARGUMENT, "cluster checkpoint: %s rank %d is outside 0..%d",
                      role == RILL_CLUSTER_PSERVER ? "pserver" : "trainer", (int)rank,
                      (int)limit - 1);
  char part[32];
  rill_cluster_part_name(role, rank, part, sizeof part);
  char *partdir = rill_strprintf("%s/%s", dir, part);
  if (!partdir) return rill_oom();
  int64_t k = s->step;
  rill_status *st = rill_ckpt_write(partdir, s, 0, bytes);
  bool wrote = false;
  if (!st) rill_ckpt_crash_point(partdir, "part", k);
  if (!st) st = complete_snapshot(dir, shape, k, &wrote);
  if (!st && wrote) {
    rill_ckpt_crash_point(partdir, "snapshot", k);
    /* With etcd, the job's record of complete snapshots (a failure to record is logged:
     * the manifest on disk is what recovery reads). */
    if (rill_coord_enabled()) {
      rill_status *note = rill_coord_note_snapshot(k);
      if (note) fprintf(stderr, "rill: snapshot %" PRId64 " not recorded in etcd: %s\n", k,
                        rill_status_message(note));
      rill_status_destroy(note);
    }
  }
  if (!st) st = retain(dir, partdir, keep, k);
  if (!st && completed) *completed = wrote;
  rill_free(partdir);
  return st ? rill_status_wrap(st, "cluster snapshot %" PRId64 ", part %s", k, part) : NULL;
}

/* ------------------------------------------------------------ verification --- */

typedef struct manifest {
  int64_t step;
  rill_cluster_shape shape;
  char (*parts)[32];
  uint32_t *crcs;
  size_t n;
} manifest;

static void manifest_clear(manifest *m) {
  rill_free(m->parts);
  rill_free(m->crcs);
  memset(m, 0, sizeof *m);
}

static char *next_line(char **p) {
  char *s = *p;
  if (!*s) return NULL;
  char *nl = strchr(s, '\n');
  if (nl) {
    *nl = 0;
    *p = nl + 1;
  } else {
    *p = s + strlen(s);
  }
  return s;
}

static rill_status *read_manifest(const char *path, int64_t k, manifest *m) {
  memset(m, 0, sizeof *m);
  uint8_t *data;
  size_t n;
  RILL_TRY(rill_file_read_all(path, RILL_CKPT_MANIFEST_MAX, &data, &n));
  rill_status *st = NULL;
  char *text = (char *)data;
  if (strlen(text) != n) {
    st = rill_error(RILL_CORRUPT, "'%s': not a text manifest (a NUL byte)", path);
    goto out;
  }
  /* The last line "end <crc>" covers everything before it. */
  char *end = n >= 2 ? text + n - 2 : text;
  while (end > text && *end != '\n') end--;
  if (end == text || strncmp(end + 1, "end ", 4) != 0) {
    st = rill_error(RILL_CORRUPT, "'%s': truncated (no end line)", path);
    goto out;
  }
  uint32_t want = (uint32_t)strtoul(end + 5, NULL, 16);
  uint32_t got = rill_crc32c(0, text, (size_t)(end + 1 - text));
  if (want != got) {
    st = rill_error(RILL_CORRUPT, "'%s': checksum mismatch (crc32c %08" PRIx32 ", the manifest says %08" PRIx32 ")",
                    path, got, want);
    goto out;
  }
  end[1] = 0;
  char *cur = text, *line = next_line(&cur);
  if (!line || strcmp(line, MANIFEST_MAGIC) != 0) {
    st = rill_error(RILL_CORRUPT, "'%s': not a cluster snapshot manifest", path);
    goto out;
  }
  size_t pcap = 0, ccap = 0;
  bool have_step = false;
  while (!st && (line = next_line(&cur))) {
    char name[32];
    unsigned long crc;
    long long v;
    if (sscanf(line, "step %lld", &v) == 1) m->step = v, have_step = true;
    else if (sscanf(line, "pservers %lld", &v) == 1) m->shape.pservers = (int32_t)v;
    else if (sscanf(line, "trainers %lld", &v) == 1) m->shape.trainers = (int32_t)v;
    else if (sscanf(line, "part %31s %lx", name, &crc) == 2) {
      if (m->n >= RILL_CLUSTER_MAX_PARTS) {
        st = rill_error(RILL_CORRUPT, "'%s': more than %d parts", path, RILL_CLUSTER_MAX_PARTS);
        break;
      }
      void *a = m->parts, *b = m->crcs;
      if (!rill_grow(&a, &pcap, m->n + 1, sizeof *m->parts)) st = rill_oom();
      else m->parts = a;
      if (!st && !rill_grow(&b, &ccap, m->n + 1, sizeof *m->crcs)) st = rill_oom();
      else if (!st) m->crcs = b;
      if (st) break;
      memcpy(m->parts[m->n], name, sizeof name);
      m->crcs[m->n++] = (uint32_t)crc;
    } /* other keys: a newer writer's, skipped */
  }
  if (!st && (!have_step || m->step != k))
    st = rill_error(RILL_CORRUPT, "'%s': the manifest is of step %" PRId64 ", not %" PRId64, path,
                    m->step, k);
  if (!st && check_shape(&m->shape) == NULL &&
      m->n != (size_t)m->shape.pservers + (size_t)m->shape.trainers)
    st = rill_error(RILL_CORRUPT, "'%s': lists %zu parts for %d pservers and %d trainers", path,
                    m->n, (int)m->shape.pservers, (int)m->shape.trainers);
  if (!st) {
    rill_status *bad = check_shape(&m->shape);
    if (bad) st = rill_status_wrap(bad, "'%s'", path);
  }
out:
  rill_free(data);
  if (st) manifest_clear(m);
  return st;
}

/* Verifies part `part` of step k against the manifest's CRC; reads it into `into`
 * (may be NULL: read, checked, dropped). */
static rill_status *verify_part(const char *dir, const char *part, int64_t k, uint32_t crc,
                                rill_ckpt_snapshot *into, int64_t *time_ns, uint64_t *bytes) {
  uint32_t got;
  RILL_TRY(part_manifest_crc(dir, part, k, &got));
  char *p = rill_strprintf("%s/%s/" RILL_CKPT_PREFIX "%" PRId64, dir, part, k);
  if (!p) return rill_oom();
  rill_status *st = NULL;
  if (got != crc)
    st = rill_error(RILL_CORRUPT,
                    "'%s/" RILL_CKPT_MANIFEST "': not the part the snapshot committed (crc32c "
                    "%08" PRIx32 ", the snapshot manifest says %08" PRIx32 ")",
                    p, got, crc);
  rill_ckpt_snapshot tmp;
  rill_ckpt_snapshot_init(&tmp);
  rill_ckpt_snapshot *s = into ? into : &tmp;
  if (!st) st = rill_ckpt_read(p, s);
  if (!st) {
    if (time_ns && s->time_ns > *time_ns) *time_ns = s->time_ns;
    for (size_t i = 0; bytes && i < s->n; i++) *bytes += rill_tensor_nbytes(&s->tensors[i]);
  }
  rill_ckpt_snapshot_clear(&tmp);
  rill_free(p);
  return st;
}

static bool same_shape(const rill_cluster_shape *a, const rill_cluster_shape *b) {
  return a->pservers == b->pservers && a->trainers == b->trainers;
}

/* Checks snapshot k of DIR: manifest, then each part. Fills `e` (parts, problem). */
static rill_status *check_snapshot(const char *dir, int64_t k, const rill_cluster_shape *want,
                                   const char *mine, rill_ckpt_snapshot *mine_out,
                                   rill_cluster_entry *e) {
  memset(e, 0, sizeof *e);
  e->step = k;
  char *mpath = rill_strprintf("%s/" RILL_CLUSTER_SNAPSHOT_PREFIX "%" PRId64, dir, k);
  if (!mpath) return rill_oom();
  manifest m;
  rill_status *why = NULL;
  e->has_manifest = rill_path_exists(mpath);
  if (!e->has_manifest) {
    why = rill_error(RILL_NOT_FOUND,
                     "'%s' is missing: not every part of snapshot %" PRId64
                     " was committed before the job stopped",
                     mpath, k);
  } else {
    why = read_manifest(mpath, k, &m);
    if (!why && want && !same_shape(&m.shape, want))
      why = rill_error(RILL_FAILED_PRECONDITION,
                       "'%s': a job of %d pservers and %d trainers wrote it; this one has %d "
                       "and %d",
                       mpath, (int)m.shape.pservers, (int)m.shape.trainers, (int)want->pservers,
                       (int)want->trainers);
    if (why) manifest_clear(&m);
    if (!why) {
      e->parts = rill_calloc(m.n ? m.n : 1, sizeof *e->parts);
      if (!e->parts) {
        manifest_clear(&m);
        rill_free(mpath);
        return rill_oom();
      }
      e->nparts = m.n;
      for (size_t i = 0; i < m.n; i++) {
        rill_cluster_part_state *ps = &e->parts[i];
        snprintf(ps->name, sizeof ps->name, "%s", m.parts[i]);
        bool is_mine = mine && !strcmp(mine, m.parts[i]);
        ps->problem = verify_part(dir, m.parts[i], k, m.crcs[i], is_mine ? mine_out : NULL,
                                  &e->time_ns, &e->bytes);
        ps->present = !ps->problem || rill_status_code(ps->problem) != RILL_NOT_FOUND;
        if (ps->problem && !why)
          why = rill_error(rill_status_code(ps->problem), "%s", rill_status_message(ps->problem));
      }
      manifest_clear(&m);
    }
  }
  e->problem = why;
  e->complete = !why;
  rill_free(mpath);
  return NULL;
}

static void entry_clear(rill_cluster_entry *e) {
  for (size_t i = 0; i < e->nparts; i++) rill_status_destroy(e->parts[i].problem);
  rill_free(e->parts);
  rill_status_destroy(e->problem);
  memset(e, 0, sizeof *e);
}

void rill_cluster_listing_clear(rill_cluster_listing *l) {
  for (size_t i = 0; i < l->n; i++) entry_clear(&l->items[i]);
  rill_free(l->items);
  memset(l, 0, sizeof *l);
}

static rill_status *listing_push(rill_cluster_listing *l, rill_cluster_entry *e, size_t *cap) {
  if (l->n == *cap) {
    void *items = l->items;
    if (!rill_grow(&items, cap, l->n + 1, sizeof *l->items)) return rill_oom();
    l->items = items;
  }
  l->items[l->n++] = *e;
  memset(e, 0, sizeof *e);
  return NULL;
}

/* The part directories of DIR (pserver_<i>, trainer_<t>) and the shape they imply. */
static rill_status *scan_parts(const char *dir, char (**names)[32], size_t *n,
                               rill_cluster_shape *shape) {
  *names = NULL;
  *n = 0;
  shape->pservers = shape->trainers = 0;
  DIR *d = opendir(dir);
  if (!d) return NULL;
  size_t cap = 0;
  rill_status *st = NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    int64_t r;
    bool ps = parse_step(e->d_name, "pserver_", &r), tr = !ps && parse_step(e->d_name, "trainer_", &r);
    if (!ps && !tr) continue;
    if (r >= RILL_CLUSTER_MAX_PARTS) continue;
    if (ps && r + 1 > shape->pservers) shape->pservers = (int32_t)r + 1;
    if (tr && r + 1 > shape->trainers) shape->trainers = (int32_t)r + 1;
    if (*n == cap) {
      void *items = *names;
      if (!rill_grow(&items, &cap, *n + 1, sizeof **names)) {
        st = rill_oom();
        break;
      }
      *names = items;
    }
    size_t len = strnlen(e->d_name, 31);
    memcpy((*names)[*n], e->d_name, len);
    (*names)[(*n)++][len] = 0;
  }
  closedir(d);
  return st;
}

/* Every step some part or manifest of DIR names, newest first. */
static rill_status *all_steps(const char *dir, int64_t **out, size_t *nout,
                              rill_cluster_shape *part_shape) {
  int64_t *steps = NULL;
  size_t n = 0, cap = 0;
  char(*parts)[32] = NULL;
  size_t np = 0;
  rill_status *st = scan(dir, RILL_CLUSTER_SNAPSHOT_PREFIX, &steps, &n);
  cap = n;
  if (!st) st = scan_parts(dir, &parts, &np, part_shape);
  for (size_t i = 0; i < np && !st; i++) {
    char *pd = rill_strprintf("%s/%s", dir, parts[i]);
    int64_t *more = NULL;
    size_t nm = 0;
    st = pd ? scan(pd, RILL_CKPT_PREFIX, &more, &nm) : rill_oom();
    for (size_t j = 0; j < nm && !st; j++) {
      void *items = steps;
      if (!rill_grow(&items, &cap, n + 1, sizeof *steps)) {
        st = rill_oom();
        break;
      }
      steps = items;
      steps[n++] = more[j];
    }
    rill_free(more);
    rill_free(pd);
  }
  rill_free(parts);
  if (st) {
    rill_free(steps);
    return st;
  }
  if (n) qsort(steps, n, sizeof *steps, cmp_desc);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (!u || steps[u - 1] != steps[i]) steps[u++] = steps[i];
  *out = steps;
  *nout = u;
  return NULL;
}

bool rill_cluster_dir_is_cluster_impl(const char *dir) {
  int64_t *steps = NULL;
  size_t n = 0;
  char(*parts)[32] = NULL;
  size_t np = 0;
  rill_cluster_shape sh;
  rill_status *st = scan(dir, RILL_CLUSTER_SNAPSHOT_PREFIX, &steps, &n);
  if (!st) st = scan_parts(dir, &parts, &np, &sh);
  rill_status_destroy(st);
  rill_free(steps);
  rill_free(parts);
  return n > 0 || np > 0;
}

rill_status *rill_cluster_scan(const char *dir, rill_cluster_listing *out) {
  memset(out, 0, sizeof *out);
  int64_t *steps;
  size_t n;
  rill_cluster_shape part_shape;
  RILL_TRY(all_steps(dir, &steps, &n, &part_shape));
  size_t cap = 0;
  rill_status *st = NULL;
  for (size_t i = 0; i < n && !st; i++) {
    rill_cluster_entry e;
    st = check_snapshot(dir, steps[i], NULL, NULL, NULL, &e);
    if (st) break;
    if (!e.has_manifest) {
      /* Parts without a manifest: say which of the job's parts are there. */
      rill_cluster_shape sh = out->shape.pservers ? out->shape : part_shape;
      size_t np = (size_t)sh.pservers + (size_t)sh.trainers;
      e.parts = rill_calloc(np ? np : 1, sizeof *e.parts);
      if (!e.parts) {
        entry_clear(&e);
        st = rill_oom();
        break;
      }
      e.nparts = np;
      for (size_t j = 0; j < np; j++) {
        part_of(&sh, (int32_t)j, e.parts[j].name, sizeof e.parts[j].name);
        char *p = rill_strprintf("%s/%s/" RILL_CKPT_PREFIX "%" PRId64, dir, e.parts[j].name, steps[i]);
        e.parts[j].present = p && rill_path_exists(p);
        rill_free(p);
      }
    } else if (!out->shape.pservers && e.nparts) {
      int32_t ps = 0, tr = 0;
      for (size_t j = 0; j < e.nparts; j++) {
        if (!strncmp(e.parts[j].name, "pserver_", 8)) ps++;
        else tr++;
      }
      out->shape.pservers = ps;
      out->shape.trainers = tr;
    }
    st = listing_push(out, &e, &cap);
    if (st) entry_clear(&e);
  }
  rill_free(steps);
  if (!st && !out->shape.pservers) out->shape = part_shape;
  if (st) rill_cluster_listing_clear(out);
  return st;
}

rill_status *rill_cluster_recover(const char *dir, const rill_cluster_shape *shape,
                                  rill_cluster_role role, int32_t rank, int64_t *step,
                                  rill_ckpt_snapshot *mine, rill_cluster_listing *skipped) {
  *step = -1;
  RILL_TRY(check_shape(shape));
  char part[32];
  rill_cluster_part_name(role, rank, part, sizeof part);
  int64_t *steps;
  size_t n;
  rill_cluster_shape part_shape;
  RILL_TRY(all_steps(dir, &steps, &n, &part_shape));
  size_t cap = skipped ? skipped->n : 0;
  rill_status *st = NULL;
  for (size_t i = 0; i < n && !st && *step < 0; i++) {
    rill_cluster_entry e;
    if (mine) rill_ckpt_snapshot_clear(mine);
    st = check_snapshot(dir, steps[i], shape, part, mine, &e);
    if (st) break;
    if (e.complete) {
      *step = steps[i];
      entry_clear(&e);
      break;
    }
    if (skipped) st = listing_push(skipped, &e, &cap);
    entry_clear(&e);
  }
  rill_free(steps);
  if (mine && *step < 0) rill_ckpt_snapshot_clear(mine);
  if (!st) {
    char *pd = rill_strprintf("%s/%s", dir, part);
    st = pd ? rill_ckpt_retire_outside(pd, INT64_MIN, *step) : rill_oom();
    if (st) st = rill_status_wrap(st, "dropping the parts of %s newer than the snapshot resumed", part);
    rill_free(pd);
  }
  return st ? rill_status_wrap(st, "recovering from cluster snapshots in '%s'", dir) : NULL;
}

/* ------------------------------------------------------------------ writer --- */

/* Two snapshot slots: one being written, one waiting. A snapshot submitted while the
 * previous one is still on its way to the disk waits in the second slot, so a round
 * waits only when the disk falls two snapshots behind (its large tensors are shared,
 * not copied: a round that updates one copies it then, as any pinned buffer). */
#define WRITER_SLOTS 2

struct rill_cluster_writer {
  char *dir;
  rill_cluster_shape shape;
  rill_cluster_role role;
  int32_t rank, keep;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  bool started, stop;
  size_t head, queued; /* snap[head] is the oldest of `queued` submitted, not yet written */
  rill_ckpt_snapshot snap[WRITER_SLOTS];
  rill_status *error; /* a failed write not yet reported */
};

static void *writer_main(void *arg) {
  rill_cluster_writer *w = arg;
  /* The pserver's rounds come first; the snapshot's copy, checksum and flushes take the
   * time they leave idle. */
  rill_thread_background_priority();
  rill_thread_set_name("rill-snapshot");
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->stop && !w->queued) pthread_cond_wait(&w->cv, &w->mu);
    if (!w->queued) break;
    rill_ckpt_snapshot *s = &w->snap[w->head];
    pthread_mutex_unlock(&w->mu);
    rill_status *st = rill_cluster_commit_part(w->dir, &w->shape, w->role, w->rank, s, w->keep, NULL, NULL);
    rill_ckpt_snapshot_unshare(s); /* releases what a failed write left pinned */
    pthread_mutex_lock(&w->mu);
    if (st) {
      rill_status_destroy(w->error);
      w->error = st;
    }
    w->head = (w->head + 1) % WRITER_SLOTS;
    w->queued--;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

rill_status *rill_cluster_writer_create(const char *dir, const rill_cluster_shape *shape,
                                        rill_cluster_role role, int32_t rank, int32_t keep,
                                        rill_cluster_writer **out) {
  RILL_TRY(check_shape(shape));
  rill_cluster_writer *w = rill_calloc(1, sizeof *w);
  if (!w || !(w->dir = rill_strdup(dir))) {
    rill_free(w);
    return rill_oom();
  }
  w->shape = *shape;
  w->role = role;
  w->rank = rank;
  w->keep = keep;
  for (size_t i = 0; i < WRITER_SLOTS; i++) rill_ckpt_snapshot_init(&w->snap[i]);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  if (pthread_create(&w->thread, NULL, writer_main, w)) {
    rill_cluster_writer_close(w);
    return rill_error(RILL_INTERNAL, "cluster snapshots in '%s': cannot start the writing thread",
                      dir);
  }
  w->started = true;
  *out = w;
  return NULL;
}

rill_status *rill_cluster_writer_submit(rill_cluster_writer *w, int64_t step,
                                        const char *const *names,
                                        const rill_tensor *const *tensors, size_t n) {
  rill_status *st = NULL;
  pthread_mutex_lock(&w->mu);
  while (w->queued == WRITER_SLOTS) pthread_cond_wait(&w->cv, &w->mu);
  if (w->error) {
    st = rill_status_wrap(w->error, "an earlier snapshot's write failed");
    w->error = NULL;
  }
  rill_ckpt_snapshot *s = &w->snap[(w->head + w->queued) % WRITER_SLOTS];
  if (!st) st = rill_ckpt_snapshot_take(s, names, tensors, n, RILL_CKPT_SHARE_MIN_BYTES);
  if (!st) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s->step = step;
    s->time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    s->has_rng = false;
    s->program_hash = 0;
    w->queued++;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return st ? rill_status_wrap(st, "snapshot %" PRId64 " into '%s'", step, w->dir) : NULL;
}

rill_status *rill_cluster_writer_close(rill_cluster_writer *w) {
  if (!w) return NULL;
  pthread_mutex_lock(&w->mu);
  while (w->queued) pthread_cond_wait(&w->cv, &w->mu);
  w->stop = true;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  if (w->started) pthread_join(w->thread, NULL);
  rill_status *st = w->error;
  if (st) st = rill_status_wrap(st, "cluster snapshots in '%s'", w->dir);
  for (size_t i = 0; i < WRITER_SLOTS; i++) rill_ckpt_snapshot_clear(&w->snap[i]);
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  rill_free(w->dir);
  rill_free(w);
  return st;
}
