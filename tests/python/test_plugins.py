"""rill.load_op_library: the example plugin (examples/plugin/mish.c, built by CMake as
mish_plugin.so next to librill.so) registers `custom_mish` and `custom_mish_grad`; a
program built in Python uses it forward and backward; bad libraries raise errors naming the file."""
import os
import subprocess

import numpy as np
import pytest

import rill


def lib_dir():
    return os.path.dirname(os.path.abspath(rill.core.lib._name))


@pytest.fixture(scope='module')
def plugin():
    """Loads the plugin once per process (a second load is an error by design)."""
    path = os.path.join(lib_dir(), 'mish_plugin.so')
    if not os.path.exists(path):
        if not os.path.exists(os.path.join(lib_dir(), 'CMakeCache.txt')):
            pytest.skip('mish_plugin.so is not beside librill.so and there is no CMake '
                        'build there to make it (cmake --build build --target rill_plugin_mish)')
        subprocess.run(['cmake', '--build', lib_dir(), '--target', 'rill_plugin_mish'],
                       check=True, stdout=subprocess.DEVNULL)
    if 'custom_mish' not in rill.core.op_names():
        rill.load_op_library(path)
    return path


def mish(x, threshold=20.0):
    sp = np.where(x > threshold, x, np.log1p(np.exp(np.minimum(x, threshold))))
    return x * np.tanh(sp)


def mish_layer(x, threshold=None):
    blk = rill.default_main_program().global_block()
    out = blk.create_var(name=rill.unique_name.generate('mish'), infer=True)
    attrs = {} if threshold is None else {'threshold': float(threshold)}
    blk.append_op('custom_mish', inputs={'X': x}, outputs={'Out': out}, attrs=attrs)
    return out


# First: before the plugin fixture loads the library into this process.
def test_unregistered_op_is_named():
    if 'custom_mish' in rill.core.op_names():
        pytest.skip('the plugin is already loaded in this process')
    x = rill.layers.data('x', [3])
    with pytest.raises(rill.Error, match='mish'):
        mish_layer(x)
    assert 'custom_mish' not in [op.type for op in rill.default_main_program().global_block().ops]


def test_plugin_ops_are_registered(plugin):
    names = rill.core.op_names()
    assert 'custom_mish' in names and 'custom_mish_grad' in names
    assert names == sorted(names)


@pytest.mark.parametrize('parallel', [False, True])
def test_program_using_the_plugin_op_runs(plugin, parallel):
    x = rill.layers.data('x', [3])
    y = mish_layer(x)
    z = mish_layer(x, threshold=0.5)
    assert list(y.shape) == [-1, 3]  # the plugin's shape inference, asked from Python
    xs = np.array([[-3.0, -0.5, 0.0], [0.75, 2.0, 25.0]], dtype='float32')
    exe = rill.Executor(parallel=parallel)
    got, got_t = exe.run(feed={'x': xs}, fetch_list=[y, z])
    np.testing.assert_allclose(got, mish(xs.astype('float64')), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_t, mish(xs.astype('float64'), 0.5), rtol=1e-5, atol=1e-6)


def test_plugin_gradient_trains(plugin):
    main, startup = rill.default_main_program(), rill.default_startup_program()
    main.random_seed = startup.random_seed = 4
    x = rill.layers.data('x', [4])
    label = rill.layers.data('y', [1])
    h = mish_layer(rill.layers.fc(x, 16))
    loss = rill.layers.mean(rill.layers.square_error_cost(rill.layers.fc(h, 1), label))
    rill.optimizer.SGD(0.1).minimize(loss)
    assert 'custom_mish_grad' in [op.type for op in main.global_block().ops]
    rs = np.random.RandomState(0)
    xs = rs.rand(32, 4).astype('float32')
    ys = xs.sum(1, keepdims=True).astype('float32')
    exe = rill.Executor()
    exe.run(startup)
    losses = [float(exe.run(feed={'x': xs, 'y': ys}, fetch_list=[loss])[0][0])
              for _ in range(40)]
    assert losses[-1] < 0.2 * losses[0]


def test_model_with_the_plugin_op_saves_and_runs_in_the_predictor(plugin, tmp_path):
    x = rill.layers.data('x', [3])
    y = mish_layer(rill.layers.fc(x, 2))
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    xs = np.random.RandomState(2).rand(5, 3).astype('float32')
    want, = exe.run(feed={'x': xs}, fetch_list=[y])
    rill.io.save_inference_model(str(tmp_path / 'm'), ['x'], [y], exe)
    p = rill.inference.Predictor(rill.inference.Config(str(tmp_path / 'm')))
    got, = p.run({'x': xs})
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_loading_twice_is_already_exists(plugin):
    with pytest.raises(rill.AlreadyExistsError) as e:
        rill.load_op_library(plugin)
    assert plugin in str(e.value) and 'mish' in str(e.value)
    assert 'custom_mish' in rill.core.op_names()  # the first registration stands


def test_bad_libraries_raise_naming_the_file(tmp_path):
    before = rill.core.op_names()
    missing = str(tmp_path / 'nothing.so')
    with pytest.raises(rill.NotFoundError, match='nothing.so'):
        rill.load_op_library(missing)
    junk = tmp_path / 'junk.so'
    junk.write_bytes(b'this is not an ELF file')
    with pytest.raises(rill.IoError, match='junk.so'):
        rill.load_op_library(str(junk))
    with pytest.raises(rill.InvalidArgumentError):
        rill.load_op_library('')
    assert rill.core.op_names() == before
