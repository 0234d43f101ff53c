"""Fluid 1.8's tensor-style layers (rill/tensor_api.py) against PaddlePaddle 1.8.5's
numbers (paddle18/tensor_api/, written by paddle18/gen_tensor_api.py from the same
programs): outputs and, through SGD's minimize, the gradients of the inputs. Paddle is
not needed. The random layers against their distributions, while_loop against a plain
loop, and bad arguments raising errors that name the layer."""
import os
import sys

import numpy as np
import pytest

import rill as fluid
import rill.layers as L

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_tensor_api as gen  # noqa: E402
import gen_tensor_manip as manip  # noqa: E402

WANT = dict(np.load(os.path.join(DATA, 'tensor_api', 'expected.npz')))

# Cases computed in float32 inside (summation order differs from Paddle's): (rtol, atol).
TOL = {'npair_loss': (1e-5, 1e-6), 'bilinear_tensor_product': (1e-5, 1e-5),
       'bilinear_tensor_product_nobias': (1e-5, 1e-5)}


def run_case(name):
    prog, startup, fetch, shapes = gen.build(fluid, name)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        return exe.run(prog, feed=dict(manip.inputs(), **manip.weights(shapes)),
                       fetch_list=fetch)


@pytest.mark.parametrize('name', sorted(gen.CASES))
def test_layer_and_gradient_as_paddle18(name):
    np.testing.assert_array_equal(WANT['x'], manip.inputs()['x'])
    got = run_case(name)
    assert len(got) == int(WANT['%s.count' % name])
    for i, g in enumerate(got):
        want = WANT['%s.%d' % (name, i)]
        g = np.asarray(g)
        assert g.shape == want.shape, (name, i, g.shape, want.shape)
        assert g.dtype == want.dtype, (name, i, g.dtype, want.dtype)
        rtol, atol = TOL.get(name, (1e-12, 1e-12))
        np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, err_msg='%s #%d' % (name, i))


def _run(fetch, feed=None):
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(fluid.default_startup_program())
        return [np.asarray(v) for v in exe.run(feed=feed or {}, fetch_list=fetch)]


def test_random_layers_shapes_dtypes_and_statistics():
    n = fluid.data('n', [1], 'int64')
    outs = [L.uniform_random([200, 50], min=2.0, max=5.0, seed=3),
            L.uniform_random([n, 4], dtype='float64'),
            L.gaussian_random([300, 40], mean=1.0, std=2.0, seed=7),
            L.randn([100, 100], dtype='float64')]
    assert outs[0].shape == (200, 50) and outs[0].dtype.name == 'float32'
    assert outs[1].dtype.name == 'float64'
    assert outs[3].stop_gradient
    u, u2, g, r = _run(outs, {'n': np.array([6], 'int64')})
    assert u.dtype == np.float32 and u.min() >= 2.0 and u.max() < 5.0
    assert abs(u.mean() - 3.5) < 0.05 and abs(u.var() - 0.75) < 0.05
    assert u2.shape == (6, 4) and u2.dtype == np.float64 and np.abs(u2).max() <= 1.0
    assert abs(g.mean() - 1.0) < 0.05 and abs(g.std() - 2.0) < 0.05
    assert r.dtype == np.float64 and abs(r.mean()) < 0.05 and abs(r.std() - 1.0) < 0.05
    # a seed gives the same numbers again
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        u_again = _run([L.uniform_random([200, 50], min=2.0, max=5.0, seed=3)])[0]
    np.testing.assert_array_equal(u_again, u)


def test_while_loop_sums_like_a_python_loop():
    x = fluid.data('x', [3], 'float32')
    i = L.fill_constant([1], 'int64', 0)
    ten = L.fill_constant([1], 'int64', 5)
    acc = L.zeros([3], 'float32')

    def cond(i, acc):
        return L.less_than(i, ten)

    def body(i, acc):
        return [L.increment(i, in_place=False), L.elementwise_add(L.scale(acc, 0.5), x)]

    i_out, acc_out = L.while_loop(cond, body, [i, acc])
    xv = np.array([1.0, -2.0, 4.0], 'float32')
    got_i, got_acc = _run([i_out, acc_out], {'x': xv})
    want = np.zeros(3, 'float32')
    for _ in range(5):
        want = want * 0.5 + xv
    assert int(got_i[0]) == 5
    np.testing.assert_allclose(got_acc, want, rtol=1e-6)


def test_while_loop_nested_loop_vars():
    i = L.fill_constant([1], 'int64', 0)
    pair = [L.fill_constant([1], 'float32', 1.0), L.fill_constant([1], 'float32', 0.0)]
    three = L.fill_constant([1], 'int64', 3)

    def body(i, pair):
        return [L.increment(i, in_place=False), [L.scale(pair[0], 2.0), pair[0] + pair[1]]]

    _, out = L.while_loop(lambda i, p: L.less_than(i, three), body, [i, pair])
    a, b = _run(out)
    assert float(a[0]) == 8.0 and float(b[0]) == 7.0


def test_layers_check_their_arguments():
    x = fluid.data('x', [3, 4], 'float32')
    xi = fluid.data('xi', [3, 4], 'int32')
    with pytest.raises(TypeError, match='logsumexp: x .* is int32'):
        L.logsumexp(xi)
    with pytest.raises(ValueError, match='clamp: either min or max'):
        L.clamp(x)
    with pytest.raises(TypeError, match='clamp: min must be a float'):
        L.clamp(x, min=1)
    with pytest.raises(TypeError, match='addcmul: value must be int'):
        L.addcmul(xi, xi, xi, value=0.5)
    with pytest.raises(ValueError, match='t: input .* rank 3'):
        L.t(fluid.data('x3', [2, 3, 4], 'float32'))
    with pytest.raises(TypeError, match='full: dtype uint16'):
        L.full([2], 1.0, dtype='uint16')
    with pytest.raises(TypeError, match='uniform_random: dtype int32'):
        L.uniform_random([2], dtype='int32')
    with pytest.raises(ValueError, match='gaussian_random: shape .* non-positive'):
        L.gaussian_random([2, 0])
    with pytest.raises(TypeError, match="get_tensor_from_selected_rows: x 'x' must be"):
        L.get_tensor_from_selected_rows(x)
    i = L.fill_constant([1], 'int64', 0)
    with pytest.raises(TypeError, match='cond in while_loop should return a boolean'):
        L.while_loop(lambda i: i, lambda i: i, [i])
    with pytest.raises(ValueError, match='same arity'):
        L.while_loop(lambda i: L.less_than(i, i), lambda i: [i, i], [i])


def test_selected_rows_layers_merge_and_densify_a_sparse_gradient():
    ids = fluid.data('ids', [3, 1], 'int64')
    emb = L.embedding(ids, size=[5, 2], is_sparse=True,
                      param_attr=fluid.ParamAttr(name='tbl'))
    w = fluid.data('w', [3, 2], 'float32')
    loss = L.reduce_sum(L.elementwise_mul(emb, w))
    fluid.backward.append_backward(loss)
    g = fluid.default_main_program().global_block().var('tbl@GRAD')
    merged = L.merge_selected_rows(g)
    assert merged.type == g.type
    dense = L.get_tensor_from_selected_rows(merged)
    wv = np.arange(6, dtype='float32').reshape(3, 2)
    got, = _run([dense], {'ids': np.array([[1], [3], [1]], 'int64'), 'w': wv})
    # rows 1 and 3 of the gradient, row 1 holding the sum of its two lookups
    np.testing.assert_array_equal(got, [wv[0] + wv[2], wv[1]])


def test_more_random_layers_shapes_dtypes_and_ranges_as_paddle18():
    # Paddle 1.8.5 declares and returns these shapes and dtypes for the same calls
    x = fluid.data('x', [None, 3], 'float32')
    n = fluid.data('n', [1], 'int64')
    outs = [L.uniform_random_batch_size_like(x, [2, 5], min=3.0, max=4.0),
            L.gaussian_random_batch_size_like(x, [4, 1, 7], output_dim_idx=2),
            L.randint(5, 9, [3, 400]), L.randint(7, shape=[n, 2], dtype='int32'),
            L.randint(3), L.randperm(6), L.randperm(300, dtype='int32'),
            L.sampling_id(L.softmax(x))]
    assert [(o.shape, o.dtype.name) for o in outs] == [
        ((-1, 5), 'float32'), ((4, 1, -1), 'float32'), ((3, 400), 'int64'),
        ((-1, -1), 'int32'), ((1,), 'int64'), ((6,), 'int64'), ((300,), 'int32'),
        ((-1,), 'int64')]
    xv = np.array([[10, 0, 0], [0, 0, 10], [0, 10, 0], [1, 1, 1]], 'float32')
    u, g, r1, r2, r3, p1, p2, sid = _run(outs, {'x': xv, 'n': np.array([4], 'int64')})
    assert u.shape == (4, 5) and u.min() >= 3.0 and u.max() < 4.0
    assert g.shape == (4, 1, 4) and g.dtype == np.float32
    assert r1.dtype == np.int64 and set(np.unique(r1)) == {5, 6, 7, 8}
    assert r2.shape == (4, 2) and r2.dtype == np.int32 and r2.min() >= 0 and r2.max() < 7
    assert r3.shape == (1,) and 0 <= r3[0] < 3
    assert sorted(p1.tolist()) == list(range(6)) and p1.dtype == np.int64
    assert sorted(p2.tolist()) == list(range(300)) and p2.dtype == np.int32
    assert sid.dtype == np.int64 and sid[:3].tolist() == [0, 2, 1]


def test_random_layers_check_their_arguments():
    x = fluid.data('x', [None, 3], 'float32')
    with pytest.raises(ValueError, match="randint's low must less then high"):
        L.randint(5, 2)
    with pytest.raises(TypeError, match='randint: dtype float32'):
        L.randint(5, dtype='float32')
    with pytest.raises(ValueError, match='greater than 0 in randperm'):
        L.randperm(0)
    with pytest.raises(TypeError, match='uniform_random_batch_size_like: dtype int64'):
        L.uniform_random_batch_size_like(x, [-1, 2], dtype='int64')
    with pytest.raises(TypeError, match="sampling_id: x 'xi' is int32"):
        L.sampling_id(fluid.data('xi', [2, 3], 'int32'))


def test_print_writes_paddles_layout_and_passes_the_gradient(capfd):
    x = fluid.data('x', [2, 3], 'float32')
    x.stop_gradient = False
    p = L.Print(x, message='hello', summarize=4)
    q = L.Print(L.cast(x, 'int64'), print_tensor_lod=False, print_phase='forward')
    fluid.backward.append_backward(L.reduce_sum(L.scale(p, 2.0)))
    xv = np.arange(6, dtype='float32').reshape(2, 3)
    got_p, got_q, gx = _run([p, q, 'x@GRAD'], {'x': xv})
    np.testing.assert_array_equal(got_p, xv)
    np.testing.assert_array_equal(got_q, xv.astype('int64'))
    np.testing.assert_array_equal(gx, np.full((2, 3), 2.0, 'float32'))
    err = capfd.readouterr().err
    # what Paddle 1.8.5 prints for the same program, timestamps aside
    assert '\thello\tThe place is:CPUPlace\nTensor[x]\n\tshape: [2,3,]\n\tdtype: f\n' \
        '\tdata: 0,1,2,3,' in err
    assert 'Tensor[cast_0.tmp_0]\n\tshape: [2,3,]\n\tdtype: l\n\tdata: 0,1,2,3,4,5,' in err
    assert 'Tensor[print_x_0.tmp_0@GRAD]\n\tshape: [2,3,]\n\tdtype: f\n\tdata: 2,2,2,2,' in err
    assert err.count('The place is:CPUPlace') == 3, err
    with pytest.raises(ValueError, match="print_phase must be"):
        L.Print(x, print_phase='sideways')


def test_hash_as_paddle18_op():
    # Paddle 1.8.5's layers.hash rejects every call (its type check passes dtype names to
    # isinstance); these are the values its hash op gives for the same rows and LoD.
    x = fluid.data('x', [None, 2], 'int32', lod_level=1)
    x64 = fluid.data('x64', [None, 3], 'int64')
    o, o2 = L.hash(x, hash_size=1000, num_hash=3), L.hash(x64, 97)
    assert (o.shape, o.dtype.name, o2.shape) == ((-1, 3, 1), 'int32', (-1, 1, 1))
    t = fluid.create_lod_tensor(np.array([[1, 2], [3, 4], [-5, 70000]], 'int32'), [[1, 2]],
                                fluid.CPUPlace())
    exe = fluid.Executor(fluid.CPUPlace())
    got, got2 = exe.run(feed={'x': t, 'x64': np.array([[1, 2, 3], [0, 0, 0]], 'int64')},
                        fetch_list=[o, o2], return_numpy=False)
    np.testing.assert_array_equal(np.array(got).reshape(3, 3),
                                  [[722, 407, 337], [603, 590, 386], [776, 29, 439]])
    assert got.lod() == [[0, 1, 3]]
    np.testing.assert_array_equal(np.array(got2).ravel(), [92, 13])
    assert 'hash' not in vars(L) and L.hash is not hash  # the builtin stays the builtin
    with pytest.raises(TypeError, match='hash: hash_size must be an int'):
        L.hash(x, 10.0)
