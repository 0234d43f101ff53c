"""Inference models pass both ways between rill and PaddlePaddle 1.8.5, in separate and
combined parameter files, and give the same outputs. Paddle runs in a subprocess under
its own interpreter: $RILL_PADDLE18_PYTHON, else /tmp/pd18/bin/python (a Python 3.7
venv with paddlepaddle==1.8.5); the tests are skipped when neither exists."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import models  # noqa: E402

PY = os.environ.get('RILL_PADDLE18_PYTHON') or '/tmp/pd18/bin/python'
pytestmark = pytest.mark.skipif(
    not os.access(PY, os.X_OK),
    reason='no PaddlePaddle 1.8.5 interpreter: set RILL_PADDLE18_PYTHON or create /tmp/pd18 '
           '(python3.7 -m venv /tmp/pd18 && /tmp/pd18/bin/pip install paddlepaddle==1.8.5 '
           '"numpy<1.22")')

LAYOUTS = (('sep', None), ('comb', 'params'))


def paddle18(script, cwd):
    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION='python', OMP_NUM_THREADS='1',
               PYTHONPATH=DATA)
    r = subprocess.run([PY, '-c', textwrap.dedent(script)], cwd=str(cwd), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def images():
    return np.load(os.path.join(DATA, 'recognize_digits_conv', 'img.npy'))[0]


def test_paddle18_runs_what_rill_saves(tmp_path):
    main, startup, forward, feeds, loss = models.build(fluid, 'recognize_digits_conv')
    prediction, = [op.output('Out')[0] for op in forward.global_block().ops
                   if op.type == 'softmax']
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        for s in range(3):  # trained a little: batch_norm's moving statistics leave 0 and 1
            exe.run(main, feed={'img': images(), 'label': np.zeros((16, 1), 'int64')})
        test = forward.clone(for_test=True)
        pred = test.global_block().var(prediction)
        want, = exe.run(test, feed={'img': images(), 'label': np.zeros((16, 1), 'int64')},
                        fetch_list=[pred])
        for d, pf in LAYOUTS:
            fluid.io.save_inference_model(str(tmp_path / d), ['img'], [pred], exe,
                                          main_program=test, params_filename=pf)
    np.save(tmp_path / 'img.npy', images())
    out = paddle18('''
        import numpy as np, paddle, paddle.fluid as fluid
        assert paddle.__version__ == '1.8.5', paddle.__version__
        exe = fluid.Executor(fluid.CPUPlace())
        for d, pf in %r:
            prog, feeds, fetches = fluid.io.load_inference_model(d, exe, params_filename=pf)
            out, = exe.run(prog, feed={feeds[0]: np.load('img.npy')}, fetch_list=fetches)
            np.save(d + '.npy', out)
            print(d, feeds)
    ''' % (LAYOUTS,), tmp_path)
    assert "sep ['img']" in out and "comb ['img']" in out
    for d, _ in LAYOUTS:
        got = np.load(tmp_path / (d + '.npy'))
        assert got.shape == want.shape == (16, 10)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_rill_runs_what_paddle18_saves(tmp_path):
    np.save(tmp_path / 'img.npy', images())
    paddle18('''
        import numpy as np, paddle.fluid as fluid, models
        main, startup, forward, feeds, loss = models.build(fluid, 'recognize_digits_conv')
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        img = np.load('img.npy')
        for s in range(3):
            exe.run(main, feed={'img': img, 'label': np.zeros((16, 1), 'int64')})
        test = forward.clone(for_test=True)
        op, = [op for op in test.global_block().ops if op.type == 'softmax']
        pred = test.global_block().var(op.output('Out')[0])
        out, = exe.run(test, feed={'img': img, 'label': np.zeros((16, 1), 'int64')},
                       fetch_list=[pred])
        np.save('want.npy', out)
        for d, pf in %r:
            fluid.io.save_inference_model(d, ['img'], [pred], exe, main_program=test,
                                          params_filename=pf)
    ''' % (LAYOUTS,), tmp_path)
    want = np.load(tmp_path / 'want.npy')
    assert want.shape == (16, 10)
    exe = fluid.Executor(fluid.CPUPlace())
    for d, pf in LAYOUTS:
        with fluid.scope_guard(fluid.Scope()):
            prog, feeds, fetches = fluid.io.load_inference_model(str(tmp_path / d), exe,
                                                                 params_filename=pf)
            assert feeds == ['img']
            got, = exe.run(prog, feed={'img': images()}, fetch_list=fetches)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
