"""Coordination through etcd (rill.distributed.etcd, doc/design/distributed.md): a real
etcd server on loopback ports picked at run time, processes that publish and discover
pserver endpoints, and the saver election surviving a SIGKILL of the saver.

Skipped, saying why, when the etcd binary (/usr/bin/etcd or $RILL_ETCD_BIN) is absent.
"""
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid

import pytest

from rill import distributed
import rill.distributed.etcd  # noqa: F401  (distributed.etcd below)
from rill.distributed import launch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYDIR = os.path.join(ROOT, 'python')
TTL = 2


def _etcd_binary():
    b = os.environ.get('RILL_ETCD_BIN') or '/usr/bin/etcd'
    return b if os.access(b, os.X_OK) else None


@pytest.fixture(scope='module')
def etcd_url():
    binary = _etcd_binary()
    if binary is None:
        pytest.skip('no etcd binary (/usr/bin/etcd, or RILL_ETCD_BIN): '
                    'apt-get install etcd-server')
    tmp = tempfile.mkdtemp(prefix='rill-etcd-')
    client, peer = launch.free_ports(2)
    curl, purl = 'http://127.0.0.1:%d' % client, 'http://127.0.0.1:%d' % peer
    log = open(os.path.join(tmp, 'log'), 'wb')
    proc = subprocess.Popen(
        [binary, '--name', 't', '--data-dir', os.path.join(tmp, 'data'),
         '--listen-client-urls', curl, '--advertise-client-urls', curl,
         '--listen-peer-urls', purl, '--initial-advertise-peer-urls', purl,
         '--initial-cluster', 't=' + purl],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            probe = subprocess.run(
                [sys.executable, '-c', 'import rill.distributed.etcd as e; '
                 'print(e.newest_snapshot())'],
                env=_env(curl, 'probe'), capture_output=True, timeout=30)
            if probe.returncode == 0:
                break
            assert proc.poll() is None, 'etcd exited: %s' % open(log.name).read()[-2000:]
            assert time.monotonic() < deadline, 'etcd did not answer within 20 s: %s' % (
                probe.stderr.decode()[-1000:])
            time.sleep(0.1)
        yield curl
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _env(url, job, **extra):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith('PADDLE_') or k in ('TRAINING_ROLE', 'RILL_JOB'):
            del env[k]
    env.update({'RILL_ETCD_ENDPOINTS': url, 'RILL_JOB': job, 'RILL_ETCD_TTL': str(TTL),
                'PYTHONPATH': PYDIR + os.pathsep + env.get('PYTHONPATH', ''),
                'PYTHONUNBUFFERED': '1'})
    env.update({k: str(v) for k, v in extra.items()})
    return env


# A process that reads its role through env(), prints what it found, then waits for
# its stdin to close (pservers must stay alive while trainers discover them).
ROLE_SCRIPT = textwrap.dedent('''
    import sys
    from rill import distributed
    d = distributed.env()
    print('ENDPOINTS', ','.join(d.pserver_endpoints), flush=True)
    sys.stdin.read()
''')


def test_pservers_publish_and_trainers_discover(etcd_url):
    job = 'discover-' + uuid.uuid4().hex[:8]
    eps = ['127.0.0.1:%d' % p for p in launch.free_ports(2)]
    procs = []
    try:
        # trainers first: they wait for the pservers
        for tid in range(2):
            procs.append(subprocess.Popen(
                [sys.executable, '-c', ROLE_SCRIPT], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=_env(etcd_url, job, PADDLE_TRAINING_ROLE='TRAINER', PADDLE_TRAINER_ID=tid,
                         PADDLE_TRAINERS_NUM=2, PADDLE_PSERVERS_NUM=2,
                         RILL_ETCD_WAIT_MS=30000)))
        time.sleep(1.0)
        for p in procs:
            assert p.poll() is None, 'a trainer ended before any pserver published'
        # pservers without the list: keyed by PADDLE_PSERVER_ID, in reverse start order
        for rank in (1, 0):
            procs.append(subprocess.Popen(
                [sys.executable, '-c', ROLE_SCRIPT], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=_env(etcd_url, job, PADDLE_TRAINING_ROLE='PSERVER', PADDLE_PSERVER_ID=rank,
                         PADDLE_CURRENT_ENDPOINT=eps[rank], PADDLE_TRAINERS_NUM=2,
                         PADDLE_PSERVERS_NUM=2, RILL_ETCD_WAIT_MS=30000)))
        for p in procs:
            line = p.stdout.readline().decode()
            assert line.startswith('ENDPOINTS '), (line, p.stderr.read1(4000).decode())
            assert line.split()[1] == ','.join(eps), line
    finally:
        for p in procs:
            if p.poll() is None:
                p.stdin.close()
        for p in procs:
            try:
                assert p.wait(30) == 0, p.stderr.read().decode()
            finally:
                if p.poll() is None:
                    p.kill()


def test_discovery_waits_within_its_deadline(etcd_url):
    job = 'nobody-' + uuid.uuid4().hex[:8]
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, '-c', ROLE_SCRIPT], stdin=subprocess.DEVNULL, capture_output=True,
        timeout=60,
        env=_env(etcd_url, job, PADDLE_TRAINING_ROLE='TRAINER', PADDLE_TRAINER_ID=0,
                 PADDLE_TRAINERS_NUM=1, PADDLE_PSERVERS_NUM=1, RILL_ETCD_WAIT_MS=700))
    err = r.stderr.decode()
    assert r.returncode != 0
    assert 'DeadlineExceededError' in err, err
    assert '/rill/%s/pservers/' % job in err and '0 published' in err, err
    assert time.monotonic() - t0 < 15


def test_without_a_pserver_count_the_error_names_it():
    e = {'PADDLE_TRAINING_ROLE': 'TRAINER', 'PADDLE_TRAINER_ID': '0', 'PADDLE_TRAINERS_NUM': '1',
         'RILL_ETCD_ENDPOINTS': 'http://127.0.0.1:1'}
    with pytest.raises(distributed.EnvError, match='PADDLE_PSERVERS_NUM'):
        distributed.env(e)


def test_without_etcd_trainer_zero_saves_and_the_list_is_required():
    assert not distributed.etcd.enabled()
    assert distributed.is_saver(0) is True
    assert distributed.is_saver(1) is False
    assert distributed.etcd.newest_snapshot() is None
    distributed.etcd.note_snapshot(3)  # nothing to record
    with pytest.raises(distributed.EnvError, match='PADDLE_PSERVERS_IP_PORT_LIST is empty'):
        distributed.env({'PADDLE_TRAINING_ROLE': 'TRAINER', 'PADDLE_TRAINER_ID': '0',
                         'PADDLE_TRAINERS_NUM': '1', 'PADDLE_PSERVERS_NUM': '1'})


ELECTION_SCRIPT = textwrap.dedent('''
    import sys, time
    from rill import distributed
    tid = int(sys.argv[1])
    end = time.monotonic() + 60
    while time.monotonic() < end:
        print('SAVER', tid, int(distributed.is_saver(tid)), time.monotonic(), flush=True)
        time.sleep(0.2)
''')


def _reader(proc):
    """A queue of (is_saver, time) from the lines `proc` prints, filled by a thread."""
    q = queue.Queue()

    def pump():
        for line in iter(proc.stdout.readline, b''):
            parts = line.decode().split()
            if parts and parts[0] == 'SAVER':
                q.put((parts[2] == '1', float(parts[3])))
    threading.Thread(target=pump, daemon=True).start()
    return q


def _take(q, n, timeout):
    out, end = [], time.monotonic() + timeout
    while len(out) < n and time.monotonic() < end:
        try:
            out.append(q.get(timeout=max(0.01, end - time.monotonic())))
        except queue.Empty:
            break
    return out


def test_exactly_one_saver_and_a_survivor_takes_over(etcd_url):
    job = 'elect-' + uuid.uuid4().hex[:8]
    procs = [subprocess.Popen([sys.executable, '-c', ELECTION_SCRIPT, str(tid)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              env=_env(etcd_url, job, PADDLE_TRAINER_ID=tid))
             for tid in range(2)]
    try:
        qs = [_reader(p) for p in procs]
        answers = [[s for s, _ in _take(q, 6, 30)] for q in qs]
        assert all(len(a) == 6 for a in answers), (answers, [p.poll() for p in procs])
        # each process's answer is steady and exactly one of them is the saver
        for tid, a in enumerate(answers):
            assert len(set(a[1:])) == 1, (tid, a)
        assert answers[0][-1] != answers[1][-1], answers
        saver = 0 if answers[0][-1] else 1
        other = 1 - saver
        procs[saver].send_signal(signal.SIGKILL)
        procs[saver].wait(10)
        killed_at = time.monotonic()
        took, seen = None, []
        while time.monotonic() - killed_at < TTL + 10:
            got = _take(qs[other], 1, 1.0)
            seen += got
            if got and got[0][0]:
                took = got[0][1] - killed_at
                break
        assert took is not None, ('trainer %d never became the saver after trainer %d was '
                                  'killed: %s' % (other, saver, seen))
        # the dead saver's lease (renewed every TTL/3 until the kill) had to expire first
        assert 1.0 <= took <= TTL + 4, took
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(10)


def test_example_trains_with_pservers_found_in_etcd(etcd_url, tmp_path):
    """examples/dist_train/train.py under the launcher: the trainers get no endpoint
    list and find the pservers in etcd; the job trains and every process exits 0."""
    missing = distributed.missing_kernels()
    if missing:
        pytest.skip('the parameter-server runtime is not in this build: no CPU kernel '
                    'for %s' % ', '.join(missing))
    script = os.path.join(ROOT, 'examples', 'dist_train', 'train.py')
    job = 'example-' + uuid.uuid4().hex[:8]
    env = _env(etcd_url, job, RILL_ETCD_WAIT_MS=60000)
    env.pop('PADDLE_PSERVERS_IP_PORT_LIST', None)
    probe = tmp_path / 'probe.py'
    probe.write_text('import os\nprint(os.environ["PADDLE_TRAINING_ROLE"], '
                     'os.environ.get("PADDLE_PSERVERS_IP_PORT_LIST"), '
                     'os.environ["PADDLE_PSERVERS_NUM"])\n')
    r = subprocess.run([sys.executable, '-m', 'rill.distributed.launch', '--servers', '2',
                        '--workers', '2', str(probe)], env=env, cwd=ROOT,
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    lines = sorted(line.split('] ', 1)[1] for line in r.stdout.decode().splitlines())
    assert lines[2:] == ['TRAINER None 2'] * 2, lines
    assert all(line.startswith('PSERVER 127.0.0.1:') and line.endswith(' 2')
               for line in lines[:2]), lines
    ck = str(tmp_path / 'ck')
    r = subprocess.run([sys.executable, '-m', 'rill.distributed.launch', '--servers', '2',
                        '--workers', '2', script, '--steps', '20', '--checkpoint-dir', ck,
                        '--checkpoint-every', '5'], env=env, cwd=ROOT,
                       capture_output=True, timeout=180)
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == 0, err[-4000:]
    assert 'distributed: test accuracy' in out, out
    assert out.count('every trainer has finished') == 2, out
    # every complete snapshot was recorded in etcd: the newest is step 20's
    probe = subprocess.run([sys.executable, '-c', 'import rill.distributed.etcd as e; '
                            'print(e.newest_snapshot())'], env=env, capture_output=True,
                           timeout=30)
    assert probe.returncode == 0, probe.stderr.decode()
    assert probe.stdout.decode().split() == ['20'], probe.stdout.decode()
    assert os.path.isfile(os.path.join(ck, 'snapshot_20'))


# A trainer of a 2x2 job (the pservers run the same script): trains, reports whether it
# is the saver, then waits for its stdin to close, then calls save_inference_model until
# it has written (the elected trainer writes; the others return without writing).
SAVE_SCRIPT = textwrap.dedent('''
    import os, sys, time
    import numpy as np
    import rill as fluid
    from rill import distributed
    d = distributed.env()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name='x', shape=[8], dtype='float32')
        pred = fluid.layers.fc(fluid.layers.fc(x, size=64, act='relu'), size=1)
        test = main.clone(for_test=True)
        loss = fluid.layers.mean(pred)
        fluid.optimizer.SGD(0.01).minimize(loss)
    t = fluid.DistributeTranspiler()
    tid = d.trainer_id or 0
    t.transpile(tid, program=main, pservers=','.join(d.pserver_endpoints), trainers=2,
                startup_program=startup)
    exe = fluid.Executor(fluid.CPUPlace())
    if d.role == 'PSERVER':
        ps = t.get_pserver_program(d.current_endpoint)
        exe.run(t.get_startup_program(d.current_endpoint, ps))
        exe.run(ps)
        sys.exit(0)
    exe.run(startup)
    tp = t.get_trainer_program()
    for s in range(3):
        exe.run(tp, feed={'x': np.full((4, 8), s, 'float32')}, fetch_list=[loss])
    print('SAVER %d %d' % (tid, distributed.is_saver(tid)), flush=True)
    sys.stdin.read()
    end = time.monotonic() + 30
    while not distributed.is_saver(tid) and time.monotonic() < end:
        time.sleep(0.2)
    fluid.io.save_inference_model(sys.argv[1], ['x'], [pred], exe, main_program=test)
    print('SAVED %d %s' % (tid, os.path.isdir(sys.argv[1])), flush=True)
    exe.close()
''')


def test_the_saver_killed_the_survivor_is_elected_and_saves(etcd_url, tmp_path):
    """Killing the elected trainer moves the election to the other trainer, whose save
    then writes the model (the pservers' parameters) into the directory."""
    missing = distributed.missing_kernels()
    if missing:
        pytest.skip('no CPU kernel for %s' % ', '.join(missing))
    job = 'save-' + uuid.uuid4().hex[:8]
    eps = ['127.0.0.1:%d' % p for p in launch.free_ports(2)]
    model = str(tmp_path / 'model')
    common = dict(PADDLE_TRAINERS_NUM=2, PADDLE_PSERVERS_NUM=2,
                  PADDLE_PSERVERS_IP_PORT_LIST=','.join(eps), RILL_RPC_DEADLINE_MS=8000)
    procs = []
    try:
        for rank, ep in enumerate(eps):
            procs.append(subprocess.Popen(
                [sys.executable, '-c', SAVE_SCRIPT, model], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=_env(etcd_url, job, PADDLE_TRAINING_ROLE='PSERVER',
                         PADDLE_CURRENT_ENDPOINT=ep, **common)))
        trainers = [subprocess.Popen(
            [sys.executable, '-c', SAVE_SCRIPT, model], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=_env(etcd_url, job, PADDLE_TRAINING_ROLE='TRAINER', PADDLE_TRAINER_ID=tid,
                     **common)) for tid in range(2)]
        procs += trainers
        said = []
        for p in trainers:
            line = p.stdout.readline().decode().split()
            assert line[:1] == ['SAVER'], (line, p.stderr.read1(4000).decode())
            said.append(line[2] == '1')
        assert sorted(said) == [False, True], said
        saver = said.index(True)
        other = 1 - saver
        trainers[saver].kill()
        trainers[saver].wait(10)
        trainers[other].stdin.close()
        line = trainers[other].stdout.readline().decode().split()
        assert line == ['SAVED', str(other), 'True'], (line, trainers[other].stderr.read().decode())
        assert trainers[other].wait(30) == 0
        assert os.path.isfile(os.path.join(model, '__model__'))
        prog, feeds, fetches = fluid_load(model)
        assert feeds == ['x']
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(10)


def fluid_load(model):
    code = ('import rill as fluid, sys\n'
            'exe = fluid.Executor(fluid.CPUPlace())\n'
            'p, f, t = fluid.io.load_inference_model(sys.argv[1], exe)\n'
            'print(",".join(f))\n')
    r = subprocess.run([sys.executable, '-c', code, model], capture_output=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=PYDIR + os.pathsep +
                                os.environ.get('PYTHONPATH', '')))
    assert r.returncode == 0, r.stderr.decode()
    return None, r.stdout.decode().split()[0].split(','), None
