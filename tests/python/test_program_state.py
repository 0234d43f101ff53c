"""fluid.save / fluid.load / load_program_state / set_program_state: Paddle 1.8's
.pdparams / .pdopt / .pdmodel files, written crash-safely, read back with every value
checked before any is set, the save_persistables directory and combined layouts, bad
files refused with errors naming the file and variable, and files passing both ways
between rill and PaddlePaddle 1.8.5 (run in a subprocess under its own interpreter:
$RILL_PADDLE18_PYTHON, else /tmp/pd18/bin/python; those tests are skipped when neither
exists)."""
import os
import pickle
import subprocess
import textwrap

import numpy as np
import pytest

import rill as fluid

PY = os.environ.get('RILL_PADDLE18_PYTHON') or '/tmp/pd18/bin/python'
needs_paddle18 = pytest.mark.skipif(
    not os.access(PY, os.X_OK),
    reason='no PaddlePaddle 1.8.5 interpreter: set RILL_PADDLE18_PYTHON or create /tmp/pd18 '
           '(python3.7 -m venv /tmp/pd18 && /tmp/pd18/bin/pip install paddlepaddle==1.8.5 '
           '"numpy<1.22")')

# The same program in both frameworks: fc -> fc with Adam, so the .pdopt holds moments,
# beta powers and the learning rate.
BUILD = '''
def build(fluid):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [4, 3], 'float32')
        h = fluid.layers.fc(x, 5, act='tanh', param_attr=fluid.ParamAttr(name='w1'),
                            bias_attr=fluid.ParamAttr(name='b1'))
        out = fluid.layers.fc(h, 2, param_attr=fluid.ParamAttr(name='w2'),
                              bias_attr=fluid.ParamAttr(name='b2'))
        loss = fluid.layers.reduce_mean(fluid.layers.square(out))
        fluid.optimizer.Adam(0.01).minimize(loss)
    return main, startup, loss
'''
exec(BUILD)

X = np.random.RandomState(5).randn(4, 3).astype('float32')


def paddle18(script, cwd):
    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION='python', OMP_NUM_THREADS='1')
    r = subprocess.run([PY, '-c', BUILD + textwrap.dedent(script)], cwd=str(cwd), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def _trained(steps=2):
    main, startup, loss = build(fluid)  # noqa: F821
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    for _ in range(steps):
        exe.run(main, feed={'x': X}, fetch_list=[loss])
    return main, startup, loss, exe


def _values(program):
    sc = fluid.global_scope()
    return {v.name: np.array(sc.find_var(v.name).get_tensor()) for v in program.list_vars()
            if fluid.io.is_persistable(v) and sc.find_var(v.name) is not None}


def test_save_writes_paddles_three_files(tmp_path):
    main, _, _, _ = _trained()
    fluid.save(main, str(tmp_path / 'm'))
    assert sorted(os.listdir(tmp_path)) == ['m.pdmodel', 'm.pdopt', 'm.pdparams']
    with open(tmp_path / 'm.pdparams', 'rb') as f:
        raw = f.read()
    assert raw[:2] == b'\x80\x02'  # pickle protocol 2
    assert b'numpy.core.multiarray' in raw and b'numpy._core' not in raw
    params = pickle.loads(raw)
    assert sorted(params) == ['b1', 'b2', 'w1', 'w2']
    np.testing.assert_array_equal(params['w1'],
                                  np.array(fluid.global_scope().find_var('w1').get_tensor()))
    opt = pickle.loads((tmp_path / 'm.pdopt').read_bytes())
    assert any('moment1' in k for k in opt) and any('learning_rate' in k for k in opt)
    assert 'x' not in opt and not set(opt) & set(params)
    prog = fluid.Program.parse_from_string((tmp_path / 'm.pdmodel').read_bytes())
    assert [op.type for op in prog.global_block().ops] == \
        [op.type for op in main.global_block().ops]


def test_load_restores_every_value_and_training_continues_the_same(tmp_path):
    main, startup, loss, exe = _trained()
    fluid.save(main, str(tmp_path / 'm'))
    saved = _values(main)
    want, = exe.run(main, feed={'x': X}, fetch_list=[loss])
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        fluid.load(main, str(tmp_path / 'm.pdparams'), exe)  # any of the three names
        for k, v in _values(main).items():
            np.testing.assert_array_equal(v, saved[k], err_msg=k)
        got, = exe.run(main, feed={'x': X}, fetch_list=[loss])
    np.testing.assert_array_equal(got, want)


def test_program_state_round_trip_and_set_checks(tmp_path):
    main, startup, loss, exe = _trained()
    fluid.io.save(main, str(tmp_path / 'm'))
    state = fluid.load_program_state(str(tmp_path / 'm'))
    assert set(state) == set(_values(main))
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        bad = dict(state, w1=state['w1'][:, :2])
        before = _values(main)
        with pytest.raises(fluid.InvalidArgumentError, match="'w1'.*shape"):
            fluid.set_program_state(main, bad)
        for k, v in _values(main).items():  # nothing was set
            np.testing.assert_array_equal(v, before[k])
        with pytest.warns(UserWarning, match='extra'):
            fluid.io.set_program_state(main, dict(state, extra=np.zeros(1)))
        for k, v in _values(main).items():
            np.testing.assert_array_equal(v, state[k])


def test_load_program_state_reads_save_persistables_layouts(tmp_path):
    main, _, _, exe = _trained()
    fluid.io.save_persistables(exe, str(tmp_path / 'dir'), main)
    fluid.io.save_params(exe, str(tmp_path / 'comb'), main, filename='all')
    want = _values(main)
    state = fluid.load_program_state(str(tmp_path / 'dir'))
    assert set(state) == set(want)
    for k in want:
        np.testing.assert_array_equal(state[k], want[k])
        assert state[k].dtype == want[k].dtype
    params = [v for v in main.list_vars() if fluid.io.is_parameter(v)]
    with pytest.raises(ValueError, match='var_list'):
        fluid.load_program_state(str(tmp_path / 'comb' / 'all'))
    state = fluid.load_program_state(str(tmp_path / 'comb' / 'all'), var_list=params)
    assert sorted(state) == ['b1', 'b2', 'w1', 'w2']
    np.testing.assert_array_equal(state['w2'], want['w2'])
    # load() takes the directory too, given an executor
    with fluid.scope_guard(fluid.Scope()):
        exe.run(fluid.default_startup_program())
        with pytest.raises(ValueError, match='executor'):
            fluid.load(main, str(tmp_path / 'dir'))
        fluid.load(main, str(tmp_path / 'dir'), exe)
        for k, v in _values(main).items():
            np.testing.assert_array_equal(v, want[k])


def test_bad_files_are_refused_and_change_nothing(tmp_path):
    main, _, _, _ = _trained()
    fluid.save(main, str(tmp_path / 'm'))
    before = _values(main)
    p = tmp_path / 'm.pdparams'
    good = p.read_bytes()
    p.write_bytes(good[:len(good) // 2])
    with pytest.raises(fluid.CorruptError, match='m.pdparams'):
        fluid.load(main, str(tmp_path / 'm'))
    p.write_bytes(pickle.dumps({'w1': np.zeros((3, 5), 'float32')}, protocol=2))
    with pytest.raises(fluid.NotFoundError, match="'b1'.*m.pdparams"):
        fluid.load(main, str(tmp_path / 'm'))
    state = pickle.loads(good)
    state['w2'] = state['w2'].astype('float64')
    p.write_bytes(pickle.dumps(state, protocol=2))
    with pytest.raises(fluid.InvalidArgumentError, match="'w2'.*float64"):
        fluid.load(main, str(tmp_path / 'm'))

    class Boom(object):
        def __reduce__(self):
            return (os.system, ('echo pwned > %s' % (tmp_path / 'pwned'),))
    p.write_bytes(pickle.dumps({'w1': Boom()}, protocol=2))
    with pytest.raises(fluid.CorruptError, match='system'):
        fluid.load_program_state(str(tmp_path / 'm'))
    assert not (tmp_path / 'pwned').exists()
    for k, v in _values(main).items():
        np.testing.assert_array_equal(v, before[k])
    with pytest.raises(fluid.InvalidArgumentError, match='prefix'):
        fluid.save(main, str(tmp_path) + '/')


def test_save_replaces_files_whole(tmp_path, monkeypatch):
    """A save that fails midway leaves the earlier files as they were and no temporary
    file behind."""
    main, _, _, _ = _trained()
    fluid.save(main, str(tmp_path / 'm'))
    old = {f: (tmp_path / f).read_bytes() for f in os.listdir(tmp_path)}
    from rill import program_state

    def fail(*a, **k):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(program_state.os, 'replace', fail)
    fluid.global_scope().find_var('w1').get_tensor().set(np.ones((3, 5), 'float32'))
    with pytest.raises(OSError):
        fluid.save(main, str(tmp_path / 'm'))
    assert {f: (tmp_path / f).read_bytes() for f in os.listdir(tmp_path)} == old


@needs_paddle18
def test_paddle18_loads_what_rill_saves(tmp_path):
    main, _, loss, exe = _trained()
    fluid.save(main, str(tmp_path / 'm'))
    want, = exe.run(main, feed={'x': X}, fetch_list=[loss])
    np.save(tmp_path / 'x.npy', X)
    paddle18('''
        import numpy as np, paddle, paddle.fluid as fluid
        assert paddle.__version__ == '1.8.5', paddle.__version__
        main, startup, loss = build(fluid)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        fluid.load(main, 'm', exe)
        state = fluid.load_program_state('m')
        assert sorted(k for k in state if k[0] in 'wb' and len(k) == 2) == ['b1', 'b2', 'w1', 'w2']
        out, = exe.run(main, feed={'x': np.load('x.npy')}, fetch_list=[loss])
        np.save('got.npy', out)
    ''', tmp_path)
    np.testing.assert_allclose(np.load(tmp_path / 'got.npy'), want, rtol=1e-6)


@needs_paddle18
def test_rill_loads_what_paddle18_saves(tmp_path):
    np.save(tmp_path / 'x.npy', X)
    paddle18('''
        import numpy as np, paddle.fluid as fluid
        main, startup, loss = build(fluid)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        x = np.load('x.npy')
        for _ in range(2):
            exe.run(main, feed={'x': x})
        fluid.save(main, 'm')
        fluid.io.save_persistables(exe, 'dir', main)
        out, = exe.run(main, feed={'x': x}, fetch_list=[loss])
        np.save('want.npy', out)
    ''', tmp_path)
    want = np.load(tmp_path / 'want.npy')
    main, startup, loss = build(fluid)  # noqa: F821
    exe = fluid.Executor(fluid.CPUPlace())
    for how in ('pickle', 'dir'):
        with fluid.scope_guard(fluid.Scope()):
            exe.run(startup)
            if how == 'pickle':
                fluid.load(main, str(tmp_path / 'm'), exe)
            else:
                fluid.set_program_state(main, fluid.load_program_state(str(tmp_path / 'dir')))
            got, = exe.run(main, feed={'x': X}, fetch_list=[loss])
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=how)


def test_load_reads_a_combined_file_given_var_list(tmp_path):
    main, startup, _, exe = _trained()
    params = [v for v in main.list_vars() if fluid.io.is_parameter(v)]
    fluid.io.save_vars(exe, str(tmp_path), main, vars=params, filename='params')
    want = _values(main)
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        with pytest.raises(ValueError, match='var_list'):
            fluid.load(main, str(tmp_path / 'params'), exe)
        other = fluid.Program()
        stranger = other.global_block().create_var(name='stranger', shape=[1],
                                                   persistable=True)
        with pytest.raises(LookupError, match='stranger'):
            fluid.load(main, str(tmp_path / 'params'), exe, var_list=params + [stranger])
        fluid.load(main, str(tmp_path / 'params'), exe, var_list=params)
        for p in params:
            np.testing.assert_array_equal(
                np.array(fluid.global_scope().find_var(p.name).get_tensor()), want[p.name])
        with pytest.raises(fluid.NotFoundError, match='nothing'):
            fluid.load(main, str(tmp_path / 'nothing'), exe)


def test_save_through_links_and_into_pipes(tmp_path):
    """A .pdparams that is a symbolic link has the file it names replaced, and the link
    stays; one that is a named pipe gets the bytes, and stays a pipe."""
    import threading
    import stat
    main, _, _, _ = _trained()
    fluid.save(main, str(tmp_path / 'real'))
    os.symlink(str(tmp_path / 'real.pdparams'), str(tmp_path / 'm.pdparams'))
    fifo = tmp_path / 'm.pdopt'
    os.mkfifo(str(fifo))
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    fluid.global_scope().find_var('w1').get_tensor().set(np.full((3, 5), 7, 'float32'))
    fluid.save(main, str(tmp_path / 'm'))
    reader.join(20)
    assert os.path.islink(str(tmp_path / 'm.pdparams'))
    assert stat.S_ISFIFO(os.lstat(str(fifo)).st_mode)
    params = pickle.loads((tmp_path / 'real.pdparams').read_bytes())
    np.testing.assert_array_equal(params['w1'], np.full((3, 5), 7, 'float32'))
    assert got and 'w1' not in pickle.loads(got[0]) and len(pickle.loads(got[0])) > 0
