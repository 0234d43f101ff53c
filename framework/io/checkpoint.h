/* Checkpoints: consistent snapshots of variables, persisted atomically into
 * DIR/checkpoint_<step>, verified on load (doc/design/checkpoint.md).
 *
 *   DIR/checkpoint_<step>/MANIFEST     what is there, with sizes and CRC32C, last line
 *                                      the manifest's own checksum
 *   DIR/checkpoint_<step>/<variable>   one Paddle tensor stream per variable
 *
 * Commit protocol: everything is written into DIR/.tmp-checkpoint_<step>-<pid>-<n> (a
 * retired checkpoint's directory, the spare, when there is one: its files are written
 * over in place), every file fdatasynced, the directory fsynced, renamed to
 * checkpoint_<step>, DIR fsynced; only then do checkpoints beyond max_to_keep go (the
 * first becomes the next spare, the others are renamed away and removed, so a
 * half-removed one is never mistaken for a checkpoint). */
#ifndef RILL_FRAMEWORK_IO_CHECKPOINT_H
#define RILL_FRAMEWORK_IO_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "framework/data/scope.h"
#include "framework/data/tensor.h"

#define RILL_CKPT_MANIFEST "MANIFEST"
#define RILL_CKPT_PREFIX "checkpoint_"
#define RILL_CKPT_MANIFEST_MAX (64u << 20)

/* What one checkpoint holds. Each tensor is either the snapshot's own copy (a staging
 * buffer reused from one snapshot to the next, or what a load read) or shares the
 * variable's buffer (shared[i]): a large tensor is not copied inside the run. A shared
 * buffer is pinned and referenced until the write has handed its bytes to the file
 * system; until then every writer inside a run copies it first (an in-place output
 * whose buffer has other references is privatized by the executor, rill_tensor_alloc
 * never writes a shared buffer) and so does the public API (rill_scope_get_tensor), so
 * the bytes written are the bytes of the moment of the snapshot. */
typedef struct rill_ckpt_snapshot {
  char **names;
  rill_tensor *tensors;
  bool *shared;
  size_t n, cap;
  int64_t step;
  int64_t time_ns; /* wall clock (CLOCK_REALTIME) of the snapshot */
  bool has_rng;
  uint64_t rng[4]; /* the executor's generator state at the snapshot */
  uint64_t program_hash;
} rill_ckpt_snapshot;

/* Tensors of at least this many bytes in the library's own buffers are shared by
 * rill_ckpt_snapshot_take's callers in the executor; smaller ones are copied (a copy
 * costs less than holding a reference that may make the next writer copy). */
#define RILL_CKPT_SHARE_MIN_BYTES ((size_t)64 << 10)

void rill_ckpt_snapshot_init(rill_ckpt_snapshot *s);
void rill_ckpt_snapshot_clear(rill_ckpt_snapshot *s);
/* Takes the variables into the snapshot: a tensor of at least share_min_bytes held in
 * a library-allocated buffer is shared and pinned (SIZE_MAX: copy everything), any
 * other is copied into the snapshot's buffers, reusing them when the sizes match (so a
 * steady-state copy is one memcpy per variable). Names must be unique and free of
 * control characters. On error the snapshot holds an unspecified subset. */
rill_status *rill_ckpt_snapshot_take(rill_ckpt_snapshot *s, const char *const *names,
                                     const rill_tensor *const *tensors, size_t n,
                                     size_t share_min_bytes);
/* Drops the snapshot's references to shared buffers (unpinning them); their entries
 * become unset. */
void rill_ckpt_snapshot_unshare(rill_ckpt_snapshot *s);

/* Writes `s` as DIR/checkpoint_<step> by the commit protocol, then keeps the newest
 * max_to_keep checkpoints (0: all). Each shared tensor is let go (unpinned, its entry
 * unset) as soon as its file has been written, before the files are synced, and all of
 * them by the time this returns, also on error: `s` can be written once. On error
 * nothing committed before is touched and the temp directory is removed. *bytes (may
 * be NULL) receives the bytes written. */
rill_status *rill_ckpt_write(const char *dir, rill_ckpt_snapshot *s, int32_t max_to_keep,
                             uint64_t *bytes);

/* Retires (as retention does) every checkpoint of DIR whose step is below `low` or
 * above `high`: a cluster part keeps what its snapshots need, and a process resuming
 * from step k drops its parts of steps after k. */
rill_status *rill_ckpt_retire_outside(const char *dir, int64_t low, int64_t high);

/* One checkpoint_<step> directory found in DIR. */
typedef struct rill_ckpt_entry {
  char *path;
  int64_t step;
  int64_t time_ns;     /* from the manifest; for a damaged one, the directory's mtime */
  uint64_t bytes;      /* manifest + files, as found on disk */
  size_t nvars;
  rill_status *problem; /* NULL: verified */
} rill_ckpt_entry;

typedef struct rill_ckpt_listing {
  rill_ckpt_entry *items; /* newest (highest step) first */
  size_t n;
  size_t vanished; /* retired by a writer while being listed: not in items */
} rill_ckpt_listing;

/* Lists DIR's checkpoints, each verified (manifest checksum, every file's size and
 * CRC32C, every tensor stream parsed against the manifest's dtype and shape). A missing
 * DIR is an empty listing. A checkpoint that a writer retires while it is being read
 * (it is gone, or renamed and back, once a problem shows) is not damaged: it is left
 * out and counted in `vanished`. */
rill_status *rill_ckpt_list(const char *dir, rill_ckpt_listing *out);
void rill_ckpt_listing_clear(rill_ckpt_listing *l);

/* Reads the newest checkpoint that verifies into `out`. Each newer damaged one is
 * appended to `skipped` (may be NULL) with its problem. NOT_FOUND when none verifies. */
rill_status *rill_ckpt_load_latest(const char *dir, rill_ckpt_snapshot *out,
                                   rill_ckpt_listing *skipped);
/* Reads and verifies one checkpoint directory. */
rill_status *rill_ckpt_read(const char *path, rill_ckpt_snapshot *out);

/* Moves every variable of `s` into `scope` (created there when absent); `s` keeps the
 * names only. Fails before changing anything if a variable of the scope holds a kind
 * other than a dense tensor. */
rill_status *rill_ckpt_install(rill_ckpt_snapshot *s, rill_scope *scope);

/* A 64-bit FNV-1a hash of a serialized program (the manifest's `program`). */
uint64_t rill_ckpt_hash_bytes(const void *data, size_t n);

/* Test hook: called at each step of the commit protocol with the step's name
 * ("write", "manifest", "sync", "rename", "committed", "retention") and the step of the
 * checkpoint. The crash tests kill the process from it. NULL disarms. */
void rill_ckpt_set_test_hook(void (*hook)(const char *phase, int64_t step));
/* Fault injection for crash tests of multi-process jobs: when RILL_CKPT_CRASH_AT is
 * "PART:PHASE:STEP" and `dir`'s last component is PART, the process kills itself with
 * SIGKILL at that phase of that step. Phases: those of the test hook, and "part" (a
 * cluster part committed, the snapshot manifest not yet checked), "snapshot" (the
 * snapshot manifest written by this process) and "retire" (the part's retention about
 * to run, at every commit) of cluster_ckpt.c. */
void rill_ckpt_crash_point(const char *dir, const char *phase, int64_t step);

#endif
