"""The tensor-manipulation layers (rill/manip.py) against PaddlePaddle 1.8.5's numbers
(paddle18/tensor_manip/, written by paddle18/gen_tensor_manip.py from the same programs):
outputs and, through SGD's minimize, the gradients of the inputs. Paddle is not needed.
Bad input raises errors naming the op and the variable."""
import os
import sys

import numpy as np
import pytest

import rill as fluid
import rill.layers as L

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_tensor_manip as gen  # noqa: E402

WANT = dict(np.load(os.path.join(DATA, 'tensor_manip', 'expected.npz')))

# Paddle 1.8.5's scatter_grad passes Out@GRAD through to X@GRAD unchanged; rill zeroes
# the rows the scatter overwrote (their X elements never reach Out), as Paddle 2 does.
SCATTERED_ROWS = {'scatter': [2, 0], 'scatter_repeated': [1]}


def pad_constant_like_grad():
    """The gradient of y in the pad_constant_like case: Y = y[:, 1:3] sits at the origin
    of Out, so y[:, 1:3] gets w0[:3, :2]. Paddle 1.8.5's pad_constant_like_grad reads
    some rows of Out@GRAD at the wrong offsets (its row 1 is w0[0, 2:4])."""
    w = gen.weights([[6, 4]])['w0']
    want = np.zeros((3, 4))
    want[:, 1:3] = w[:3, :2]
    return want


def run_case(name):
    prog, startup, fetch, shapes = gen.build(fluid, name)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    data = gen.inputs()
    return exe.run(prog, feed=dict(data, **gen.weights(shapes)), fetch_list=fetch)


@pytest.mark.parametrize('name', sorted(gen.CASES))
def test_layer_and_gradient_as_paddle18(name):
    np.testing.assert_array_equal(WANT['x'], gen.inputs()['x'])
    got = run_case(name)
    assert len(got) == int(WANT['%s.count' % name])
    for i, g in enumerate(got):
        want = WANT['%s.%d' % (name, i)].copy()
        if name in SCATTERED_ROWS and i == 1:
            want[SCATTERED_ROWS[name]] = 0
        if name == 'pad_constant_like' and i == 1:
            want = pad_constant_like_grad()
        g = np.asarray(g)
        assert g.shape == want.shape, (name, i)
        assert g.dtype == want.dtype, (name, i)
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12, err_msg='%s #%d' % (name, i))


def _run(fetch, feed):
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    return exe.run(feed=feed, fetch_list=fetch if isinstance(fetch, list) else [fetch])


def test_shapes_are_known_when_the_program_is_built():
    x = fluid.data('x', [None, 5, 6], 'float32')
    ix = fluid.data('ix', [None, 2], 'int64')
    assert L.gather(x, fluid.data('i', [7], 'int32')).shape == (7, 5, 6)
    assert L.gather_nd(x, ix).shape == (-1, 6)
    assert L.stack([x, x], axis=-1).shape == (-1, 5, 6, 2)
    ys = L.unstack(x, axis=1)
    assert len(ys) == 5 and ys[0].shape == (-1, 6)
    assert L.roll(x, 2).shape == (-1, 5, 6)
    assert L.argmin(x, axis=2).shape == (-1, 5)
    assert L.argmin(x, axis=2).dtype.name == 'int64'
    assert L.tril(x).shape == (-1, 5, 6)


def test_bad_index_names_op_and_variable():
    x = fluid.data('table', [3, 2], 'float32')
    ids = fluid.data('ids', [2], 'int64')
    out = L.gather(x, ids)
    with pytest.raises(fluid.core.EnforceNotMet if hasattr(fluid.core, 'EnforceNotMet')
                       else Exception, match=r"gather.*Index \(ids\).*holds 5"):
        _run(out, {'table': np.zeros((3, 2), 'float32'), 'ids': np.array([0, 5], 'int64')})


def test_bad_axis_names_op_and_variable():
    x = fluid.data('img', [2, 3], 'float32')
    with pytest.raises(Exception, match=r"flip.*X \(img\).*axis 2 is out of range"):
        L.flip(x, [2])
    with pytest.raises(Exception, match=r"stack.*axis 3"):
        L.stack([x, x], axis=3)
    with pytest.raises(Exception, match=r"cumsum.*axis 2 is out of range.*img"):
        L.cumsum(x, axis=2)
    with pytest.raises(Exception, match=r"arg_min.*X \(img\).*axis -3"):
        L.argmin(x, axis=-3)
    with pytest.raises(ValueError, match='rank >= 2'):
        L.tril(fluid.data('v', [4], 'float32'))
    with pytest.raises(TypeError, match='int32 or int64'):
        L.gather(x, fluid.data('f', [2], 'float32'))


def test_scatter_overwrite_and_accumulate_as_numpy():
    x = fluid.data('x', [4, 2], 'float32')
    ids = fluid.data('ids', [3], 'int64')
    up = fluid.data('up', [3, 2], 'float32')
    a = L.scatter(x, ids, up)
    b = L.scatter(x, ids, up, overwrite=False)
    xv = np.arange(8, dtype='float32').reshape(4, 2)
    uv = -np.arange(1, 7, dtype='float32').reshape(3, 2)
    iv = np.array([3, 1, 3], 'int64')
    ga, gb = _run([a, b], {'x': xv, 'ids': iv, 'up': uv})
    want_a = xv.copy()
    want_a[1], want_a[3] = uv[1], uv[2]
    want_b = xv.copy()
    want_b[1], want_b[3] = uv[1], uv[0] + uv[2]
    np.testing.assert_array_equal(ga, want_a)
    np.testing.assert_array_equal(gb, want_b)


def test_range_bad_step_and_unique_rank_name_op_and_variable():
    step = fluid.data('step', [1], 'int64')
    r = L.range(0, 5, step, 'int64')
    with pytest.raises(Exception, match=r"range.*Step \(step\).*step is 0"):
        _run(r, {'step': np.array([0], 'int64')})
    got, = _run(r, {'step': np.array([2], 'int64')})
    np.testing.assert_array_equal(got, [0, 2, 4])
    with pytest.raises(Exception, match=r"unique.*X \(grid\).*1-D"):
        L.unique(fluid.data('grid', [2, 2], 'int64'))
    with pytest.raises(TypeError, match='float32 or float64'):
        L.has_inf(fluid.data('ints', [2], 'int32'))
    with pytest.raises(TypeError, match='bool'):
        L.reduce_all(fluid.data('f', [2], 'float32'))


def test_range_is_an_attribute_not_a_global_of_layers():
    import builtins
    assert L.range is not builtins.range
    assert 'range' in L.__all__
    assert 'range' not in vars(L)  # the module's own code keeps the builtin
    assert L.transpose(fluid.data('t', [2, 3], 'float32'), [1, 0]).shape == (3, 2)


def test_padding_and_products_check_their_input():
    x = fluid.data('img', [1, 1, 3, 4], 'float32')
    with pytest.raises(Exception, match=r"pad2d.*X \(img\).*reflect padding"):
        L.pad2d(x, [3, 0, 0, 0], mode='reflect')
    with pytest.raises(ValueError, match='mode'):
        L.pad2d(x, mode='wrap')
    with pytest.raises(ValueError, match='two entries per dim'):
        L.pad(x, [1, 1])
    with pytest.raises(Exception, match=r"expand_as.*target_tensor.*whole number"):
        L.expand_as(x, fluid.data('t', [1, 1, 3, 5], 'float32'))
    with pytest.raises(Exception, match=r"trace.*Input \(img\).*dim1 0 and dim2 0"):
        L.trace(x, dim1=0, dim2=0)
    with pytest.raises(TypeError, match='float32 or float64'):
        L.kron(fluid.data('i', [2], 'int32'), fluid.data('j', [2], 'int32'))
    p = fluid.data('p', [4], 'int32')
    out = L.pad2d(x, p)
    assert out.shape == (1, 1, -1, -1)
    got, = _run(out, {'img': np.ones((1, 1, 3, 4), 'float32'), 'p': np.array([1, 0, 0, 2], 'int32')})
    assert got.shape == (1, 1, 4, 6)


def test_crop_box_must_fit():
    x = fluid.data('feat', [3, 4], 'float32')
    with pytest.raises(Exception, match=r"crop_tensor.*X \(feat\).*exceeds"):
        L.crop_tensor(x, shape=[2, 2], offsets=[2, 0])
    off = fluid.data('off', [2], 'int32')
    out = L.crop(x, shape=[2, 2], offsets=off)
    with pytest.raises(Exception, match=r"crop.*exceeds.*feat|crop.*feat.*exceeds"):
        _run(out, {'feat': np.zeros((3, 4), 'float32'), 'off': np.array([2, 3], 'int32')})
