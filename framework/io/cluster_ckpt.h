/* Cluster snapshots: the checkpoints of a parameter-server job, one part per process,
 * committed as a whole (doc/design/cluster-checkpoint.md).
 *
 *   DIR/pserver_<i>/checkpoint_<k>/   pserver i's blocks and optimizer state (a
 *                                     checkpoint of checkpoint.h, written by its commit
 *                                     protocol)
 *   DIR/trainer_<t>/checkpoint_<k>/   trainer t's own state: step counter, generator,
 *                                     trainer-local persistables
 *   DIR/snapshot_<k>                  the snapshot's manifest: which parts it has, each
 *                                     with its part manifest's CRC32C; written (temp,
 *                                     fsync, rename) by the process that commits the
 *                                     last part
 *
 * A snapshot counts when its manifest verifies and every part it lists verifies whole
 * and matches the CRC32C recorded. Parts are kept while a snapshot among the newest
 * `keep` complete ones may need them, so the previous complete snapshot goes only
 * after a newer one is complete. */
#ifndef RILL_FRAMEWORK_IO_CLUSTER_CKPT_H
#define RILL_FRAMEWORK_IO_CLUSTER_CKPT_H

#include <stdbool.h>
#include <stdint.h>

#include "framework/io/checkpoint.h"

#define RILL_CLUSTER_SNAPSHOT_PREFIX "snapshot_"
#define RILL_CLUSTER_MAX_PARTS 4096

/* The job's shape: who writes parts. */
typedef struct rill_cluster_shape {
  int32_t pservers;
  int32_t trainers;
} rill_cluster_shape;

typedef enum rill_cluster_role { RILL_CLUSTER_PSERVER = 0, RILL_CLUSTER_TRAINER = 1 } rill_cluster_role;

/* "pserver_<i>" / "trainer_<t>" into buf. */
void rill_cluster_part_name(rill_cluster_role role, int32_t rank, char *buf, size_t cap);

/* Writes `s` (s->step is the snapshot id) as this process's part by the checkpoint
 * commit protocol; then, when every part of the snapshot is committed, writes its
 * manifest; then retires this process's parts that no snapshot among the newest `keep`
 * complete ones needs (keep 0: none retired). *completed (may be NULL): this call wrote
 * the snapshot's manifest. */
rill_status *rill_cluster_commit_part(const char *dir, const rill_cluster_shape *shape,
                                      rill_cluster_role role, int32_t rank,
                                      rill_ckpt_snapshot *s, int32_t keep, bool *completed,
                                      uint64_t *bytes);

/* One snapshot found in DIR (a manifest, or parts without one). */
typedef struct rill_cluster_part_state {
  char name[32];
  bool present;
  rill_status *problem; /* NULL: verified (or not checked) */
} rill_cluster_part_state;

typedef struct rill_cluster_entry {
  int64_t step;
  bool has_manifest;
  bool complete;             /* manifest and every part verified */
  rill_status *problem;      /* why it does not count (names the file); NULL if complete */
  rill_cluster_part_state *parts;
  size_t nparts;
  int64_t time_ns; /* newest part's snapshot time (0: unknown) */
  uint64_t bytes;
} rill_cluster_entry;

typedef struct rill_cluster_listing {
  rill_cluster_entry *items; /* newest first */
  size_t n;
  rill_cluster_shape shape; /* from the newest manifest (0, 0 when none) */
} rill_cluster_listing;

/* Whether DIR holds cluster snapshots (a snapshot manifest or a part directory). */
bool rill_cluster_dir_is_cluster_impl(const char *dir);
/* Lists every snapshot of DIR, verifying every part of each. */
rill_status *rill_cluster_scan(const char *dir, rill_cluster_listing *out);
void rill_cluster_listing_clear(rill_cluster_listing *l);

/* Recovery: the newest complete snapshot whose shape is `shape`, *step = -1 when none.
 * Each newer snapshot that does not count is appended to `skipped` (may be NULL) with
 * the reason, naming the file. When `mine` is not NULL, this process's part of the
 * snapshot found is read into it (verified). Then this process's parts newer than the
 * snapshot found (left by a run that died before completing them) are retired, so they
 * cannot mix with the parts the resumed run writes. */
rill_status *rill_cluster_recover(const char *dir, const rill_cluster_shape *shape,
                                  rill_cluster_role role, int32_t rank, int64_t *step,
                                  rill_ckpt_snapshot *mine, rill_cluster_listing *skipped);

/* A writing thread for a pserver's parts, whose loop is one long run (the executor's
 * background thread starts its jobs after a run). It holds two snapshots: the one being
 * written and one waiting. submit waits only while both are taken, reports the failure
 * of an earlier write if one failed (then takes nothing), snapshots the tensors (large
 * ones shared and pinned, not copied; checkpoint.h) and queues the write; close waits
 * for the writes, stops the thread and returns a failure not yet reported. The thread
 * runs at RILL_THREAD_BACKGROUND_NICE. */
typedef struct rill_cluster_writer rill_cluster_writer;
rill_status *rill_cluster_writer_create(const char *dir, const rill_cluster_shape *shape,
                                        rill_cluster_role role, int32_t rank, int32_t keep,
                                        rill_cluster_writer **out);
rill_status *rill_cluster_writer_submit(rill_cluster_writer *w, int64_t step,
                                        const char *const *names,
                                        const rill_tensor *const *tensors, size_t n);
rill_status *rill_cluster_writer_close(rill_cluster_writer *w);

#endif
