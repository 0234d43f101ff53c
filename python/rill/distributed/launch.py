"""Starts a local parameter-server job: N pservers and M trainers running one script.

    python -m rill.distributed.launch --servers 2 --workers 2 [--started_port P]
        [--log_dir D] [--server_grace S] [--max-restarts N] SCRIPT [ARGS...]

Paddle 1.x's spellings are accepted too: --server_num, --worker_num, --start_port,
--endpoints. Without a port, each pserver gets a free port on 127.0.0.1 (bound to
port 0 and read back, all at once so they differ, released just before the processes
start). Every process runs `python -u SCRIPT ARGS` with Paddle's variables set:

    all       PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_PSERVERS_NUM, PADDLE_TRAINERS_NUM
    pserver   PADDLE_TRAINING_ROLE=TRAINING_ROLE=PSERVER, PADDLE_CURRENT_ENDPOINT,
              PADDLE_PORT, POD_IP
    trainer   PADDLE_TRAINING_ROLE=TRAINING_ROLE=TRAINER, PADDLE_TRAINER_ID, POD_IP

With RILL_ETCD_ENDPOINTS in the launcher's environment, trainers are not given
PADDLE_PSERVERS_IP_PORT_LIST: they find the pservers in etcd (rill.distributed.env).

Each line a process writes to stdout (stderr) is written whole to the launcher's stdout
(stderr) after `[pserver.I] ` or `[trainer.I] `; --log_dir also writes each process's
lines to D/serverlog.I and D/workerlog.I, as Paddle's launcher names them.

Exit status: 0 when every trainer exits 0 and then every pserver exits 0. The first
process to fail (non-zero, or killed: 128 + signal) gives the status; the launcher
names it, with its exit status or the signal's name ("trainer.1 (pid 1234) was killed
by SIGKILL", "pserver.0 (pid 99) exited with status 3"), and stops the others: SIGTERM
to each process group, SIGKILL after --kill_grace seconds.

Restarts: with --max-restarts N (default 0), a job in which a process failed is started
again, whole (every pserver and trainer, the same endpoints: ZeroMQ binds with
SO_REUSEADDR), up to N times; "restarting the job (restart k of N)" is printed, and every
process of attempt k gets RILL_RESTART_COUNT=k (0 on the first). The processes resume
from their own checkpoints; the launcher only restarts them. --log_dir files are
appended to on a restart. The status is the last attempt's. A hung pserver (below) and a
signal to the launcher are not restarted. Pservers
still running --server_grace seconds after the last trainer finished are stopped and
named, and the status is 1. SIGINT or SIGTERM to the launcher stops every process and
gives 128 + the signal. Bad arguments give 2.
"""
import argparse
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

__all__ = ['main', 'free_ports', 'Job']

SERVER_GRACE_S = 30.0
KILL_GRACE_S = 5.0


def threads_per_process(nprocs):
    """Compute threads for each of nprocs processes sharing this machine's cores: the
    cores this process may run on, divided evenly, at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, nprocs))


def free_ports(n, host='127.0.0.1'):
    """n distinct ports that are free on `host` now: all are bound to port 0 at the same
    time (so the kernel hands out different ones), read back, then released."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _parser():
    p = argparse.ArgumentParser(
        prog='python -m rill.distributed.launch', allow_abbrev=False,
        description='Start a local parameter-server job: pservers and trainers running '
                    'SCRIPT with PADDLE_* variables set, their output prefixed.')
    p.add_argument('--servers', '--server_num', dest='servers', type=int, default=2,
                   help='number of pservers (default 2)')
    p.add_argument('--workers', '--worker_num', dest='workers', type=int, default=2,
                   help='number of trainers (default 2)')
    p.add_argument('--started_port', '--start_port', dest='started_port', type=int,
                   default=None, help='first pserver port (consecutive ports); free '
                   'ports are picked when omitted')
    p.add_argument('--endpoints', default='',
                   help='pserver endpoints host:port,... (instead of ports on 127.0.0.1)')
    p.add_argument('--log_dir', default=None,
                   help='also write each process\'s output to LOG_DIR/serverlog.I and '
                   'LOG_DIR/workerlog.I')
    p.add_argument('--server_grace', type=float, default=SERVER_GRACE_S,
                   help='seconds the pservers may run after the last trainer finished '
                   '(default %g)' % SERVER_GRACE_S)
    p.add_argument('--kill_grace', type=float, default=KILL_GRACE_S,
                   help='seconds between SIGTERM and SIGKILL when stopping (default %g)'
                   % KILL_GRACE_S)
    p.add_argument('--max-restarts', '--max_restarts', dest='max_restarts', type=int,
                   default=0, help='restart the whole job up to N times when a process '
                   'fails (default 0)')
    p.add_argument('training_script', help='the script every process runs')
    p.add_argument('training_script_args', nargs=argparse.REMAINDER,
                   help='arguments passed to the script')
    return p


def _check(p, a):
    if a.servers < 1:
        p.error('--servers must be at least 1, got %d' % a.servers)
    if a.workers < 1:
        p.error('--workers must be at least 1, got %d' % a.workers)
    if a.servers > 1024 or a.workers > 1024:
        p.error('--servers and --workers must be at most 1024, got %d and %d'
                % (a.servers, a.workers))
    if a.max_restarts < 0:
        p.error('--max-restarts must not be negative, got %d' % a.max_restarts)
    if a.server_grace < 0 or a.kill_grace < 0:
        p.error('--server_grace and --kill_grace must not be negative')
    if not os.path.isfile(a.training_script):
        p.error('script %r does not exist (or is not a file)' % a.training_script)
    if a.endpoints:
        from . import parse_endpoints, EnvError
        try:
            eps = parse_endpoints(a.endpoints, '--endpoints')
        except EnvError as e:
            p.error(str(e))
        if len(eps) != a.servers:
            p.error('--endpoints lists %d endpoints but --servers is %d'
                    % (len(eps), a.servers))
        if a.started_port is not None:
            p.error('--endpoints and --started_port exclude each other')
        return eps
    if a.started_port is not None:
        if not 0 < a.started_port or a.started_port + a.servers - 1 > 65535:
            p.error('--started_port %d: ports %d..%d are not all in 1..65535'
                    % (a.started_port, a.started_port, a.started_port + a.servers - 1))
        return ['127.0.0.1:%d' % (a.started_port + i) for i in range(a.servers)]
    return None


def _exit_code(rc):
    return 128 - rc if rc < 0 else rc


def _how(rc):
    """How a process ended, from Popen's returncode (negative: the signal)."""
    if rc >= 0:
        return 'exited with status %d' % rc
    try:
        return 'was killed by %s' % signal.Signals(-rc).name
    except ValueError:
        return 'was killed by signal %d' % -rc


class _Proc:
    def __init__(self, role, rank, env, log_path):
        self.role, self.rank, self.env = role, rank, env
        self.name = '%s.%d' % (role, rank)
        self.prefix = ('[%s] ' % self.name).encode()
        self.log_path = log_path
        self.log = None
        self.popen = None
        self.readers = []


class Job:
    """The processes of one launch; run() returns the launcher's exit status."""

    def __init__(self, args, endpoints, out=None, err=None):
        self.args = args
        self.out = out or sys.stdout.buffer
        self.err = err or sys.stderr.buffer
        self.lock = threading.Lock()
        self.exits = queue.Queue()
        self.stop_signal = None
        eps = endpoints or ['127.0.0.1:%d' % p for p in free_ports(args.servers)]
        base = dict(os.environ)
        for k in ('PADDLE_CURRENT_ENDPOINT', 'PADDLE_TRAINER_ID', 'PADDLE_PORT'):
            base.pop(k, None)
        # Every process of the job shares this machine's cores: one compute pool per
        # process, each on every core, spins threads the machine does not run.
        base.setdefault('RILL_NUM_THREADS', str(threads_per_process(
            args.servers + args.workers)))
        base.update({'PADDLE_PSERVERS_IP_PORT_LIST': ','.join(eps),
                     'PADDLE_PSERVERS_NUM': str(len(eps)),
                     'PADDLE_TRAINERS_NUM': str(args.workers),
                     'PYTHONUNBUFFERED': '1'})
        self.base, self.eps = base, eps
        self.restart = 0
        self.procs = self._make_procs(0)

    def _make_procs(self, restart):
        """The processes of attempt `restart` (0 first), not started yet."""
        base = dict(self.base, RILL_RESTART_COUNT=str(restart))
        procs = []
        for i, ep in enumerate(self.eps):
            host, _, port = ep.rpartition(':')
            env = dict(base, PADDLE_TRAINING_ROLE='PSERVER', TRAINING_ROLE='PSERVER',
                       PADDLE_CURRENT_ENDPOINT=ep, PADDLE_PORT=port, POD_IP=host)
            procs.append(_Proc('pserver', i, env, self._log('serverlog', i)))
        for i in range(self.args.workers):
            env = dict(base, PADDLE_TRAINING_ROLE='TRAINER', TRAINING_ROLE='TRAINER',
                       PADDLE_TRAINER_ID=str(i), POD_IP='127.0.0.1')
            if env.get('RILL_ETCD_ENDPOINTS'):
                # trainers find the pservers in etcd (rill.distributed.env)
                del env['PADDLE_PSERVERS_IP_PORT_LIST']
            procs.append(_Proc('trainer', i, env, self._log('workerlog', i)))
        return procs

    def _log(self, stem, i):
        d = self.args.log_dir
        return os.path.join(d, '%s.%d' % (stem, i)) if d else None

    def say(self, msg):
        with self.lock:
            try:
                self.err.write(('[launch] %s\n' % msg).encode())
                self.err.flush()
            except (OSError, ValueError):
                pass

    def _pump(self, proc, pipe, sink):
        for line in iter(pipe.readline, b''):
            if not line.endswith(b'\n'):
                line += b'\n'
            with self.lock:
                if proc.log:
                    proc.log.write(line)
                    proc.log.flush()
                try:
                    sink.write(proc.prefix + line)
                    sink.flush()
                except (OSError, ValueError):
                    pass  # the console went away: keep draining so the process never blocks
        pipe.close()

    def _wait(self, i):
        rc = self.procs[i].popen.wait()
        self.exits.put((i, rc))

    def _start(self, proc):
        cmd = [sys.executable, '-u', self.args.training_script] + \
            list(self.args.training_script_args)
        if proc.log_path:
            proc.log = open(proc.log_path, 'ab' if self.restart else 'wb')
        proc.popen = subprocess.Popen(cmd, env=proc.env, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      start_new_session=True)
        for pipe, sink in ((proc.popen.stdout, self.out), (proc.popen.stderr, self.err)):
            t = threading.Thread(target=self._pump, args=(proc, pipe, sink), daemon=True)
            t.start()
            proc.readers.append(t)

    def _signal(self, procs, sig):
        for p in procs:
            if p.popen is not None and p.popen.poll() is None:
                try:
                    os.killpg(p.popen.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass

    def stop(self, procs):
        """SIGTERM to each running process's group, SIGKILL to those left after the
        grace period; returns when all have exited."""
        self._signal(procs, signal.SIGTERM)
        deadline = time.monotonic() + self.args.kill_grace
        for p in procs:
            if p.popen is None:
                continue
            try:
                p.popen.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        self._signal(procs, signal.SIGKILL)
        for p in procs:
            if p.popen is not None:
                p.popen.wait()
                # the group may outlive its leader; make sure no member is left
                try:
                    os.killpg(p.popen.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def _on_signal(self, signum, frame):
        # only a flag: the handler may run while the main thread holds the queue's lock
        self.stop_signal = signum

    def run(self):
        if self.args.log_dir:
            os.makedirs(self.args.log_dir, exist_ok=True)
        old = {}
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                old[s] = signal.signal(s, self._on_signal)
        try:
            while True:
                try:
                    code, failed = self._run()
                finally:
                    self._drain()
                if not failed or self.restart >= self.args.max_restarts or \
                        self.stop_signal is not None:
                    return code
                self.restart += 1
                self.say('restarting the job (restart %d of %d)'
                         % (self.restart, self.args.max_restarts))
                self.exits = queue.Queue()
                self.procs = self._make_procs(self.restart)
        finally:
            for s, h in old.items():
                signal.signal(s, h)

    def _drain(self):
        """Waits for the output of the attempt's processes and closes their logs."""
        for p in self.procs:
            for t in p.readers:
                t.join(2.0)
            if p.log:
                p.log.close()
                p.log = None

    def _run(self):
        """One attempt: (status, whether a process failed and a restart may help)."""
        try:
            for p in self.procs:
                self._start(p)
        except OSError as e:
            self.say('cannot start %s: %s' % (p.name, e))
            self.stop(self.procs)
            return 1, False
        for i in range(len(self.procs)):
            threading.Thread(target=self._wait, args=(i,), daemon=True).start()
        self.say('started %d pservers (%s) and %d trainers'
                 % (self.args.servers, self.procs[0].env['PADDLE_PSERVERS_IP_PORT_LIST'],
                    self.args.workers))
        running = set(range(len(self.procs)))
        trainers_left = self.args.workers
        grace_end = None
        while running:
            timeout = None if grace_end is None else max(0.0, grace_end - time.monotonic())
            if self.stop_signal is not None:
                self.say('received signal %d; stopping every process' % self.stop_signal)
                self.stop([self.procs[i] for i in running])
                return 128 + self.stop_signal, False
            try:
                # a bounded wait keeps signals serviced promptly
                item = self.exits.get(timeout=0.1 if timeout is None else min(timeout, 0.1))
            except queue.Empty:
                if grace_end is not None and time.monotonic() >= grace_end:
                    hung = [self.procs[i] for i in sorted(running)]
                    self.say('%s still running %g s after the last trainer finished; '
                             'stopping' % (', '.join('%s (pid %d)' % (p.name, p.popen.pid)
                                                      for p in hung), self.args.server_grace))
                    self.stop(hung)
                    return 1, False
                continue
            i, rc = item
            running.discard(i)
            p = self.procs[i]
            if rc != 0:
                self.say('%s (pid %d) %s; stopping the others'
                         % (p.name, p.popen.pid, _how(rc)))
                self.stop([self.procs[j] for j in running])
                return _exit_code(rc), True
            if p.role == 'trainer':
                trainers_left -= 1
                if trainers_left == 0:
                    grace_end = time.monotonic() + self.args.server_grace
        return 0, False


def main(argv=None):
    p = _parser()
    args = p.parse_args(argv)
    endpoints = _check(p, args)
    return Job(args, endpoints).run()


if __name__ == '__main__':
    sys.exit(main())
