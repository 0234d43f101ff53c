"""Saving in a distributed job: 2 pservers x 2 trainers on 127.0.0.1 (ports picked at
run time), each process a tests/python/dist/save_worker.py bounded by a timeout. Both
trainers save into one directory; only the elected trainer writes, what it writes is
what the pservers hold, and the directory is swapped in whole."""
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import rill as fluid
from rill import distributed, io

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, 'dist', 'save_worker.py')
sys.path.insert(0, os.path.join(HERE, 'dist'))
import save_worker  # noqa: E402


def _ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(('127.0.0.1', 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _job(out, steps, servers=2, trainers=2, timeout=120):
    eps = ['127.0.0.1:%d' % p for p in _ports(servers)]
    base = dict(os.environ, PADDLE_PSERVERS_IP_PORT_LIST=','.join(eps),
                PADDLE_TRAINERS_NUM=str(trainers), RILL_RPC_DEADLINE_MS='30000')
    procs = {}
    for i, ep in enumerate(eps):
        procs['pserver%d' % i] = dict(base, PADDLE_TRAINING_ROLE='PSERVER',
                                      PADDLE_CURRENT_ENDPOINT=ep)
    for t in range(trainers):
        procs['trainer%d' % t] = dict(base, PADDLE_TRAINING_ROLE='TRAINER',
                                      PADDLE_TRAINER_ID=str(t))
    procs = {k: subprocess.Popen([sys.executable, WORKER, str(out), str(steps)], env=e,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for k, e in procs.items()}
    end = time.time() + timeout
    res = {}
    try:
        for name, p in procs.items():
            outp, _ = p.communicate(timeout=max(1, end - time.time()))
            res[name] = (p.returncode, outp)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    for name, (rc, outp) in res.items():
        assert rc == 0, '%s exited with %s:\n%s' % (name, rc, outp)
    return res


def _whole(held, name):
    """`name` as the pservers hold it: whole, or its blocks joined in row order."""
    if name in held:
        return held[name]
    blocks = []
    k = 0
    while '%s.block%d' % (name, k) in held:
        blocks.append(held['%s.block%d' % (name, k)])
        k += 1
    assert blocks, name
    return np.concatenate(blocks)


@pytest.fixture(scope='module')
def job(tmp_path_factory):
    out = tmp_path_factory.mktemp('dist_save')
    res = _job(out, 8)
    held = {}
    for i in range(2):
        with np.load(str(out / ('pserver_%d.npz' % i))) as z:
            for k in z.files:
                assert k not in held or k == 'learning_rate_0', k
                held[k] = z[k]
    return out, res, held


def test_only_the_elected_trainer_writes(job):
    out, res, _ = job
    assert 'trainer 0 saver=True' in res['trainer0'][1]
    assert 'trainer 1 saver=False' in res['trainer1'][1]
    # both got the fetch names back
    for t in (0, 1):
        assert "fetch=['save_infer_model/scale_0" in res['trainer%d' % t][1]
    assert os.path.isdir(str(out / 'model_of_0'))
    assert not os.path.exists(str(out / 'model_of_1'))
    # one directory each, no temporary or replaced sibling left behind
    assert sorted(os.listdir(str(out))) == ['model', 'model_of_0', 'pserver_0.npz',
                                            'pserver_1.npz']


def test_the_saved_model_is_the_pservers_parameters_bit_for_bit(job):
    out, _, held = job
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        program, feeds, fetches = fluid.io.load_inference_model(str(out / 'model'), exe)
        assert feeds == ['x']
        params = [v.name for v in program.global_block().vars.values()
                  if v.persistable and v.name not in ('feed', 'fetch')]
        assert sorted(params) == ['fc_0.b_0', 'fc_0.w_0', 'fc_1.b_0', 'fc_1.w_0']
        for n in params:
            got = np.array(scope.find_var(n).get_tensor())
            want = _whole(held, n)
            assert got.dtype == want.dtype and got.shape == want.shape, n
            assert got.tobytes() == want.tobytes(), n
        # the first weight was cut into a block per pserver
        assert 'fc_0.w_0.block0' in held and 'fc_0.w_0.block1' in held
        x = save_worker.batch(0)['x']
        y, = exe.run(program, feed={'x': x}, fetch_list=fetches)
        h = np.maximum(x.dot(_whole(held, 'fc_0.w_0')) + _whole(held, 'fc_0.b_0'), 0)
        ref = h.dot(_whole(held, 'fc_1.w_0')) + _whole(held, 'fc_1.b_0')
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


def test_saved_persistables_hold_the_optimizer_state_whole(job):
    out, _, held = job
    main, startup, _, _, _ = save_worker.build()
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        fluid.io.load_persistables(exe, str(out / 'model'), main)
        state = [n for n in main.global_block().vars if 'velocity' in n]
        assert len(state) == 4, state
        for n in state:
            got = np.array(scope.find_var(n).get_tensor())
            want = _whole(held, n)
            assert got.shape == tuple(main.global_block().var(n).shape), n
            assert got.tobytes() == want.tobytes(), n
            assert np.any(got != 0), n  # it moved: not the startup program's zeros
        # the cut weight's velocity was joined from both pservers' blocks
        assert _whole(held, 'fc_0.w_0_velocity_0').shape == (16, 1024)
        assert 'fc_0.w_0_velocity_0.block1' in held


def test_fetch_parameters_brings_every_parameter_whole(job):
    _, res, _ = job
    for t in (0, 1):
        assert ('trainer %d fetched fc_0.b_0,fc_0.w_0,fc_1.b_0,fc_1.w_0 equal=True' % t
                in res['trainer%d' % t][1]), res['trainer%d' % t][1]


def test_fetch_parameters_refuses_a_program_without_recv():
    main, _, _, _, _ = save_worker.build()
    with pytest.raises(fluid.core.error_class('INVALID_ARGUMENT'), match='no recv op'):
        distributed.fetch_parameters(fluid.Executor(fluid.CPUPlace()), main)


def test_is_saver_elects_trainer_0():
    assert distributed.is_saver(0) and not distributed.is_saver(1)


def test_a_failed_write_leaves_the_directory_as_it_was(tmp_path):
    d = tmp_path / 'model'
    d.mkdir()
    (d / 'a').write_bytes(b'old')
    with pytest.raises(RuntimeError):
        with io._atomic_dir('test', str(d)) as tmp:
            assert (tmp_path / os.path.basename(tmp)).is_dir()
            assert os.path.basename(tmp).startswith('.model.')
            with open(os.path.join(tmp, 'a'), 'wb') as f:
                f.write(b'half')
            raise RuntimeError('writer failed')
    assert sorted(os.listdir(str(tmp_path))) == ['model']
    assert (d / 'a').read_bytes() == b'old'
    # a write that completes replaces the directory whole, keeping the files it had
    with io._atomic_dir('test', str(d)) as tmp:
        assert open(os.path.join(tmp, 'a'), 'rb').read() == b'old'
        with open(os.path.join(tmp, 'b'), 'wb') as f:
            f.write(b'new')
        assert not (d / 'b').exists()  # nothing shows before the rename
    assert sorted(os.listdir(str(tmp_path))) == ['model']
    assert (d / 'b').read_bytes() == b'new' and (d / 'a').read_bytes() == b'old'


def test_local_saves_are_unchanged(tmp_path):
    r = subprocess.run([sys.executable, WORKER, str(tmp_path), '2', '--local'],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'fc_0.w_0_velocity_0' in os.listdir(str(tmp_path / 'local'))
