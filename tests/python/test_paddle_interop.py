"""What rill saves loads in PaddlePaddle and gives the same outputs, and the reverse.
Paddle runs in a subprocess (legacy program IR: FLAGS_enable_pir_api=0); the test is
skipped when no paddle is importable (`make peers` installs it)."""
import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rill
import rill.layers as L

pytestmark = pytest.mark.skipif(importlib.util.find_spec('paddle') is None,
                                reason='paddle is not installed (make peers installs it)')


def paddle(script, tmp_path):
    env = dict(os.environ, FLAGS_enable_pir_api='0', OMP_NUM_THREADS='1')
    r = subprocess.run([sys.executable, '-c', textwrap.dedent(script)], cwd=str(tmp_path),
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_paddle_loads_what_rill_saves(tmp_path):
    x = L.data('x', [4])
    h = L.batch_norm(L.fc(x, 8, act='relu'))
    p = L.fc(L.dropout(h, 0.3), 3, act='softmax')
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    xv = np.random.RandomState(0).rand(2, 4).astype('float32')
    want, = exe.run(rill.default_main_program().clone(for_test=True), feed={'x': xv},
                    fetch_list=[p])
    rill.io.save_inference_model(str(tmp_path / 'sep'), ['x'], [p], exe)
    rill.io.save_inference_model(str(tmp_path / 'comb'), ['x'], [p], exe,
                                 params_filename='params')
    np.save(tmp_path / 'x.npy', xv)
    out = paddle('''
        import numpy as np, paddle
        paddle.enable_static()
        exe = paddle.static.Executor(paddle.CPUPlace())
        for d, pf in (('sep', None), ('comb', 'params')):
            prog, feeds, fetches = paddle.static.load_inference_model(
                d, exe, model_filename='__model__', params_filename=pf)
            out, = exe.run(prog, feed={feeds[0]: np.load('x.npy')}, fetch_list=fetches)
            np.save(d + '.npy', out)
            print(d, feeds)
    ''', tmp_path)
    assert "sep ['x']" in out and "comb ['x']" in out
    for d in ('sep', 'comb'):
        np.testing.assert_allclose(np.load(tmp_path / (d + '.npy')), want, rtol=1e-5, atol=1e-6)


def test_rill_loads_what_paddle_saves(tmp_path):
    paddle('''
        import numpy as np, paddle
        paddle.enable_static()
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup):
            x = paddle.static.data('x', [-1, 5], 'float32')
            y = paddle.static.nn.fc(x, 4, activation='relu')
            y = paddle.static.nn.fc(y, 2)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        xv = np.random.RandomState(1).rand(3, 5).astype('float32')
        out, = exe.run(main, feed={'x': xv}, fetch_list=[y])
        paddle.static.save_inference_model('model/m', [x], [y], exe, program=main)
        np.save('x.npy', xv)
        np.save('want.npy', out)
    ''', tmp_path)
    exe = rill.Executor()
    prog, feeds, fetches = rill.io.load_inference_model(str(tmp_path / 'model'), exe,
                                                        model_filename='m.pdmodel')
    got, = exe.run(prog, feed={feeds[0]: np.load(tmp_path / 'x.npy')}, fetch_list=fetches)
    np.testing.assert_allclose(got, np.load(tmp_path / 'want.npy'), rtol=1e-5, atol=1e-6)
