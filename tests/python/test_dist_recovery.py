"""Cluster fault tolerance: a 2-pserver x 2-trainer job (examples/dist_train/train.py
under the launcher) is SIGKILLed at 20 moments -- random times hitting each pserver,
each trainer or the whole job, and every phase of the snapshot commit -- and restarted.
In sync mode the restarted job ends with a saved model byte-identical to the
uninterrupted run's, and every loss any attempt logged equals the uninterrupted run's
loss of that step. Async mode finishes within a tolerance. Damaged snapshots are
skipped with the file named. Multi-process on 127.0.0.1, ports picked at run time,
every wait bounded."""
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))
EXAMPLE = os.path.join(ROOT, 'examples', 'dist_train', 'train.py')
STEPS = 24
EVERY = 3
JOB_TIMEOUT = 150

LOSS = re.compile(r'^\[trainer\.(\d+)\] step (\d+) loss (\S+)$')


def _env(extra=None):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.path.join(ROOT, 'python') + os.pathsep + env.get('PYTHONPATH', '')
    env['RILL_RPC_DEADLINE_MS'] = '30000'
    env.pop('RILL_CKPT_CRASH_AT', None)
    if extra:
        env.update(extra)
    return env


def _children(pid):
    """Direct children of `pid` with their role ('pserver.I' / 'trainer.I')."""
    out = {}
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            if ppid != pid:
                continue
            with open('/proc/%s/environ' % d, 'rb') as f:
                env = dict(kv.split(b'=', 1) for kv in f.read().split(b'\0') if b'=' in kv)
        except (OSError, ValueError, IndexError):
            continue
        role = env.get(b'PADDLE_TRAINING_ROLE', b'').decode()
        if role == 'TRAINER':
            out['trainer.' + env.get(b'PADDLE_TRAINER_ID', b'0').decode()] = int(d)
        elif role == 'PSERVER':
            eps = env.get(b'PADDLE_PSERVERS_IP_PORT_LIST', b'').decode().split(',')
            cur = env.get(b'PADDLE_CURRENT_ENDPOINT', b'').decode()
            out['pserver.%d' % (eps.index(cur) if cur in eps else 0)] = int(d)
    return out


def run_job(ckdir, outdir, sync=1, extra_env=None, kill=None, restarts=0, every=EVERY,
            seconds=0.0, steps=STEPS):
    """Runs the job once; `kill` = (target, delay_s) SIGKILLs that process ('all': the
    launcher and every process) after the delay, or a list of them, one after the other
    (each delay counted from the previous kill). Returns (exit status, output)."""
    cmd = [sys.executable, '-m', 'rill.distributed.launch', '--servers', '2', '--workers',
           '2']
    if restarts:
        cmd += ['--max-restarts', str(restarts)]
    cmd += [EXAMPLE, '--steps', str(steps), '--batch', '32', '--checkpoint-dir', ckdir,
            '--checkpoint-every', str(every), '--checkpoint-seconds', str(seconds),
            '--checkpoint-keep', '2', '--print-losses',
            '--save-dir', outdir, '--sync', str(sync)]
    p = subprocess.Popen(cmd, env=_env(extra_env), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True,
                         start_new_session=True)
    killed = []
    seen_pids = set()

    def snapshots():
        return set(n for n in os.listdir(ckdir) if n.startswith('snapshot_')) \
            if os.path.isdir(ckdir) else set()

    def killer(target, delay):
        # ('snapshot', d): d seconds after the first snapshot is complete; ('new-snapshot',
        # d): d seconds after a snapshot completes that was not there when the wait began
        # (the job, restarted, is training again).
        if isinstance(delay, tuple):
            fresh = delay[0] == 'new-snapshot'
            before = snapshots() if fresh else set()

            def ready():
                if not snapshots() - before:
                    return False
                # A new snapshot the killed job's survivors completed does not count:
                # the target must be a process started since the last kill.
                pid = _children(p.pid).get(target) if fresh else None
                return not fresh or (pid is not None and pid not in seen_pids)
            end = time.time() + 60
            while time.time() < end and p.poll() is None and not ready():
                time.sleep(0.005)
            delay = delay[1]
        time.sleep(delay)
        kids = _children(p.pid)
        seen_pids.update(kids.values())
        if target == 'all':
            for pid in list(kids.values()) + [p.pid]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            killed.append('all')
        elif target in kids:
            try:
                os.kill(kids[target], signal.SIGKILL)
                killed.append(target)
            except ProcessLookupError:
                pass

    def killers(plan):
        for target, delay in plan:
            killer(target, delay)

    t = None
    if kill:
        plan = kill if isinstance(kill, list) else [kill]
        t = threading.Thread(target=killers, args=(plan,), daemon=True)
        t.start()
    try:
        out, _ = p.communicate(timeout=JOB_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        pytest.fail('the job did not end within %d s:\n%s' % (JOB_TIMEOUT, out[-4000:]))
    if t:
        t.join()
    if 'all' in killed:  # the launcher died with them: nothing may be left running
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return p.returncode, out


def losses(out):
    got = {}
    for line in out.splitlines():
        m = LOSS.match(line.strip())
        if m:
            got.setdefault((int(m.group(1)), int(m.group(2))), set()).add(m.group(3))
    return got


def model_bytes(d):
    files = {}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), 'rb') as f:
            files[name] = f.read()
    return files


@pytest.fixture(scope='module')
def reference(tmp_path_factory):
    base = tmp_path_factory.mktemp('ref')
    t0 = time.time()
    rc, out = run_job(str(base / 'ck'), str(base / 'out'))
    took = time.time() - t0
    assert rc == 0, out[-4000:]
    got = losses(out)
    assert len(got) == 2 * STEPS, sorted(got)
    assert all(len(v) == 1 for v in got.values())
    return {'losses': got, 'model': model_bytes(str(base / 'out')), 'seconds': took}


def complete_snapshots(ck):
    """The steps whose snapshot manifest the directory holds (written last, by the
    process that completes the snapshot)."""
    if not os.path.isdir(ck):
        return []
    return sorted(int(n.split('_')[1]) for n in os.listdir(ck)
                  if n.startswith('snapshot_') and n.split('_')[1].isdigit())


def recover_and_check(reference, tmp, first_env=None, kill=None, restarts=0, after_first=None,
                      **job):
    """Runs the job, then reruns it until it succeeds; the losses and the model must be
    the uninterrupted run's. `after_first`, a list, receives the complete snapshots the
    first attempt left behind."""
    ck, outdir = str(tmp / 'ck'), str(tmp / 'out')
    outputs = []
    rc, out = run_job(ck, outdir, extra_env=first_env, kill=kill, restarts=restarts, **job)
    outputs.append(out)
    if after_first is not None:
        after_first.extend(complete_snapshots(ck))
    for _ in range(4):
        if rc == 0:
            break
        rc, out = run_job(ck, outdir, **job)  # rerunning the same command resumes
        outputs.append(out)
    text = '\n'.join(outputs)
    assert rc == 0, text[-6000:]
    ref = reference['losses']
    for key, vals in losses(text).items():
        assert vals == ref[key], 'trainer %d step %d: losses %s, uninterrupted %s' % (
            key[0], key[1], sorted(vals), sorted(ref[key]))
    assert model_bytes(outdir) == reference['model'], \
        'the saved model differs from the uninterrupted run\'s'
    return text


PHASES = [('pserver_0', 'write', 6), ('pserver_1', 'manifest', 6), ('trainer_1', 'sync', 9),
          ('pserver_1', 'rename', 9), ('trainer_0', 'committed', 12),
          ('pserver_0', 'part', 12), ('trainer_1', 'snapshot', 15),
          ('pserver_0', 'retire', 15)]


@pytest.mark.parametrize('part,phase,step', PHASES)
def test_kill_in_a_phase_of_the_snapshot_commit(reference, tmp_path, part, phase, step):
    left = []
    text = recover_and_check(reference, tmp_path, after_first=left,
                             first_env={'RILL_CKPT_CRASH_AT': '%s:%s:%d' % (part, phase, step)})
    if phase != 'snapshot':  # whether that part completes the snapshot is a race
        first = text.split('[launch] started')[1] if '[launch] started' in text else text
        assert 'killed by' in text, 'the first attempt did not die at the crash point:\n' + \
            first[-3000:]
        # The snapshots before the crash are written in the background: on a loaded
        # machine none may be complete yet, and the rerun then rightly starts afresh.
        # Whenever one is complete, the rerun resumes from the newest.
        if left:
            assert 'resumed from the snapshot of step %d' % left[-1] in text, text[-3000:]
        else:
            assert 'resumed from the snapshot' not in text, text[-3000:]


TARGETS = ['pserver.0', 'pserver.1', 'trainer.0', 'trainer.1', 'all', 'trainer.1',
           'pserver.0', 'all', 'trainer.0', 'pserver.1', 'all', 'trainer.1']


# What a restart says when the newest snapshot's marker was never written (framework/io/
# cluster_ckpt.c, reported by rill_checkpoint_load's list of skipped snapshots).
UNCOMMITTED_SKIPPED = re.compile(r'skipped cluster snapshot \d+: .* not every part of '
                                 r'snapshot \d+ was committed')
# What a trainer says when it finds no complete snapshot (examples/dist_train/train.py).
NO_SNAPSHOT_YET = ': starting at step 0'


def restart_says_where_it_resumes(out):
    """Whether the processes started after the first kill resumed from a snapshot, or
    said why not: the snapshot was never committed, or the kill came before any was
    begun (the message a first start prints too, so only the output after the kill
    counts)."""
    after = out[out.index('killed by'):]
    return ('resumed from the snapshot of step' in after or
            UNCOMMITTED_SKIPPED.search(after) is not None or NO_SNAPSHOT_YET in after)


@pytest.mark.parametrize('i', range(len(TARGETS)))
def test_kill_at_a_random_time(reference, tmp_path, i):
    """Even i: a random time of the whole run (start-up included); odd i: a random time
    after the first snapshot is complete, while training goes on."""
    rnd = random.Random(1000 + i)
    if i % 2 == 0:
        delay = rnd.uniform(0.35, 0.9) * reference['seconds']
    else:
        delay = ('snapshot', rnd.uniform(0.0, 0.15))
    text = recover_and_check(reference, tmp_path, kill=(TARGETS[i], delay))
    if i % 2 and 'killed by' in text:
        # The snapshot before the crash's is complete only once every process's
        # background writer has committed its part; a job faster than its writers (the
        # same-host transport, a loaded machine) can reach the crash first. Then the
        # restart must say so and start over, and the losses above still equal.
        assert restart_says_where_it_resumes(text), text[-3000:]


def test_damaged_newest_snapshot_falls_back_naming_the_file(reference, tmp_path):
    ck, outdir = str(tmp_path / 'ck'), str(tmp_path / 'out')
    rc, out = run_job(ck, outdir, extra_env={'RILL_CKPT_CRASH_AT': 'trainer_0:write:21'})
    assert rc != 0
    # Flip a byte in pserver 1's newest part: recovery must use the snapshot before it.
    # Only complete snapshots count: a crash can leave a snapshot's temporary directory.
    snaps = complete_snapshots(ck)
    assert len(snaps) >= 2, os.listdir(ck)
    newest = snaps[-1]
    victim = os.path.join(ck, 'pserver_1', 'checkpoint_%d' % newest)
    name = sorted(n for n in os.listdir(victim) if n != 'MANIFEST')[0]
    path = os.path.join(victim, name)
    with open(path, 'r+b') as f:
        f.seek(-2, 2)
        b = f.read(1)
        f.seek(-2, 2)
        f.write(bytes([b[0] ^ 0x40]))
    rc, out = run_job(ck, outdir)
    assert rc == 0, out[-4000:]
    assert path in out, 'the skipped file is named:\n' + out[-4000:]
    assert 'resumed from the snapshot of step %d' % snaps[-2] in out, out[-3000:]
    assert model_bytes(outdir) == reference['model']


ASYNC_TOLERANCE = 0.05  # test accuracy, absolute: async runs differ by arrival order
ASYNC_REFERENCES = 3


def test_async_job_survives_kills_within_tolerance(tmp_path):
    """Async mode has no exact result (updates apply in arrival order), so the claim is
    a tolerance: after kills and restarts the job finishes, and its test accuracy is no
    more than ASYNC_TOLERANCE below that of uninterrupted async runs on the same machine
    at the same time. Uninterrupted runs alone spread with the arrival order, and more
    under load: 40 of them under two busy loops ended between 0.956 and 0.992 (the last
    step's update can land on a loss spike of stale gradients), and one killed run in CI
    ended at 0.925. So the bound is taken from the worst of ASYNC_REFERENCES
    uninterrupted runs, which see the same load; a recovery that lost training falls
    below all of them. A better accuracy than theirs loses nothing."""
    refs = []
    for i in range(ASYNC_REFERENCES):
        rc, out = run_job(str(tmp_path / ('ref-ck%d' % i)), str(tmp_path / ('ref-out%d' % i)),
                          sync=0, steps=300, every=10)
        assert rc == 0, out[-4000:]
        refs.append(float(re.findall(r'test accuracy ([0-9.]+)', out)[-1]))
    ck, outdir = str(tmp_path / 'ck'), str(tmp_path / 'out')
    rc, out = run_job(ck, outdir, sync=0, steps=300, every=10, restarts=4,
                      kill=[('trainer.1', ('snapshot', 0.0)), ('pserver.1', ('snapshot', 0.3))])
    assert rc == 0, out[-4000:]
    assert out.count('killed by') >= 1, out[-4000:]
    # As in test_kill_at_a_random_time: on a loaded machine the kill can come before every
    # process's writer has committed its part of the snapshot, or before the first
    # snapshot was begun; the restart must then say it skipped that snapshot, or that
    # there was none, and start over instead of resuming.
    assert restart_says_where_it_resumes(out), out[-4000:]
    acc = float(re.findall(r'test accuracy ([0-9.]+)', out)[-1])
    assert acc >= min(refs) - ASYNC_TOLERANCE, (acc, refs, out[-6000:])


def test_launcher_restarts_after_repeated_kills(reference, tmp_path):
    """Under --max-restarts the launcher itself restarts the job after each kill of one
    of its processes; the job still ends with the uninterrupted run's model."""
    # Each kill after the job, restarted, has completed a new snapshot: fixed delays
    # would miss a job that a loaded or a fast machine finishes sooner.
    plan = [('trainer.1', ('snapshot', 0.05)), ('pserver.0', ('new-snapshot', 0.0)),
            ('trainer.0', ('new-snapshot', 0.0))]
    text = recover_and_check(reference, tmp_path, kill=plan, restarts=5)
    assert text.count('restarting the job') >= 2, text[-4000:]
    assert 'killed by SIGKILL' in text


def test_snapshots_due_by_time_are_exact_too(reference, tmp_path):
    """Snapshots due by time only (every 0.05 s; never by the step count): trainer 0
    decides and the other trainer learns it from the pservers' replies, writing its
    state of that step. A kill and a restart still end bitwise equal."""
    text = recover_and_check(reference, tmp_path, kill=('pserver.1', ('snapshot', 0.02)),
                             every=100000, seconds=0.02)
    assert 'resumed from the snapshot of step' in text, text[-4000:]
