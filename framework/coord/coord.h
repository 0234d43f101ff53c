/* The process's coordination through etcd (doc/design/distributed.md, "Coordination
 * through etcd"), behind the rill_coord_* functions of rill.h.
 *
 * With RILL_ETCD_ENDPOINTS set, one client and one lease per process, created on the
 * first call that needs them: the lease (RILL_ETCD_TTL seconds, default 10) is renewed
 * by a keepalive thread every third of its TTL, and every key this process registers or
 * an election it wins lives under it, so they vanish once the process dies and the TTL
 * passes. Keys live under /rill/<RILL_JOB>/ ("default" without RILL_JOB):
 *
 *   pservers/<rank, 6 digits, or the endpoint when the rank is unknown> = endpoint (lease)
 *   trainers/<rank, 6 digits>                                         = endpoint or pid (lease)
 *   saver                                                              = "trainer <id>" (lease)
 *   snapshots/<step>                                                   = step (no lease)
 *
 * When the keepalive thread finds the lease expired (the process stalled past its TTL),
 * the next call takes a new lease and puts this process's registrations again.
 * Without RILL_ETCD_ENDPOINTS every call keeps to the static environment (documented per
 * function in rill.h). */
#ifndef RILL_FRAMEWORK_COORD_COORD_H
#define RILL_FRAMEWORK_COORD_COORD_H

#include <stdbool.h>
#include <stdint.h>

/* The step of a snapshot key "<prefix><digits>": false unless the rest of the key is a
 * decimal number of at most 18 digits. */
bool rill_coord_snapshot_step(const char *key, const char *prefix, int64_t *step);

#endif
