"""rill.distributed.etcd: the job's coordination through etcd (doc/design/distributed.md,
"Coordination through etcd"), over librill's rill_coord_* functions.

It is on when RILL_ETCD_ENDPOINTS ("http://127.0.0.1:2379[,...]") is set in the process's
environment; keys live under /rill/<RILL_JOB or "default">/ and this process's own keys
under one lease of RILL_ETCD_TTL seconds (default 10) that a thread renews. Each call to
etcd is bounded by RILL_ETCD_TIMEOUT_MS (default 5000). Off, every function keeps to the
static PADDLE_* variables: is_saver(i) is i == 0, note_snapshot does nothing and
newest_snapshot is None.

`rill.distributed.env()` calls register() and wait_pservers() itself; a script that
reads the PADDLE_* variables on its own can call them directly.
"""
import atexit

from .. import core

__all__ = ['enabled', 'register', 'wait_pservers', 'is_saver', 'note_snapshot',
           'newest_snapshot', 'shutdown']


def enabled():
    """Whether this process coordinates through etcd (RILL_ETCD_ENDPOINTS is set)."""
    return core.coord_enabled()


def register(role, rank, endpoint=None):
    """Publishes this process as /rill/<job>/<role>s/<rank> (6 digits; rank -1: keyed by
    the endpoint) with its endpoint as the value, under the process's lease: the key goes
    when the process dies and the TTL passes. role: 'pserver' or 'trainer'."""
    core.coord_register(role, rank, endpoint)


def wait_pservers(count, timeout_ms=180000):
    """Waits until `count` pservers have registered and returns their endpoints in key
    (rank) order; rill.DeadlineExceededError, naming how many were published, after
    timeout_ms."""
    return core.coord_wait_pservers(count, timeout_ms)


def is_saver(trainer_id):
    """Whether this trainer is the one that saves: with etcd, the holder of
    /rill/<job>/saver (taken when free, under this process's lease), tried again at every
    call so that a survivor takes over once a dead saver's lease has expired; without
    etcd, trainer_id == 0."""
    return core.coord_elect_saver(trainer_id)


def note_snapshot(step):
    """Records that the snapshot of `step` is complete (/rill/<job>/snapshots/<step>,
    kept after the process ends); nothing without etcd."""
    core.coord_note_snapshot(step)


def newest_snapshot():
    """The largest step recorded by note_snapshot, None when none (always None without
    etcd)."""
    step = core.coord_newest_snapshot()
    return None if step < 0 else step


def shutdown():
    """Revokes this process's lease (its keys and the saver role go at once) and stops
    the renewal; it runs by itself when the interpreter exits."""
    core.coord_shutdown()


atexit.register(shutdown)
