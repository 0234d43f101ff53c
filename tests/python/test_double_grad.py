"""Gradients of gradients (doc/design/backward.md, "Double gradients"): a backward pass
through an earlier pass's gradient ops, as fluid.gradients twice and WGAN-GP style
gradient penalties build it. The double-gradient ops (square, sqrt, relu, leaky_relu,
elu, mul, conv2d, reshape2, elementwise_add / _sub / _mul / _div, and the reductions'
forward ops) give Paddle 1.8.5's numbers (tests/python/paddle18/double_grad,
gen_double_grad.py) and agree with central differences of the first gradient in
float64, broadcasting included."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'paddle18'))
import gen_double_grad as gen  # noqa: E402

WANT = dict(np.load(os.path.join(HERE, 'paddle18', 'double_grad', 'expected.npz')))
L = fluid.layers


@pytest.mark.parametrize('name', sorted(gen.CASES))
def test_matches_paddle(name):
    got = gen.run(fluid, name)
    assert sorted(got) == sorted(k for k in WANT if k.startswith(name + '/'))
    for k, v in got.items():
        np.testing.assert_allclose(v, WANT[k], rtol=2e-5, atol=1e-6, err_msg=k)


def test_penalty_trains_the_parameters_through_double_gradients():
    """Without the double-gradient ops the penalty's gradient would not reach w, c and
    v: the parameters move, and differently from a step on the penalty's first pass."""
    got = gen.run(fluid, 'relu_sub_mul')
    for i in (2, 3, 4):
        assert not np.allclose(got['relu_sub_mul/0/%d' % i], got['relu_sub_mul/2/%d' % i])


def _op_types(prog):
    return [op.type for op in prog.global_block().ops]


def test_paddle_op_names():
    main, _, _, _ = gen.build(fluid, 'wgan_gp')
    types = _op_types(main)
    for t in ('mul_grad_grad', 'elementwise_add_grad_grad', 'leaky_relu_grad_grad'):
        assert t in types, t
    main, _, _, _ = gen.build(fluid, 'cube')
    assert 'square_grad_grad' in _op_types(main) and 'elementwise_mul_grad_grad' in _op_types(main)


# Float64 programs f(x) -> scalar: the Hessian-vector product from two backward passes
# against central differences of the first gradient.
def _f_broadcast(x, L):
    h = L.elementwise_mul(x, L.reduce_sum(x, dim=0))          # Y [4] broadcast over rows
    k = L.elementwise_sub(L.square(x), L.reduce_mean(x, dim=0))
    return L.reduce_sum(L.elementwise_mul(h, k)) + L.mean(L.square(x))


def _f_mul(x, L):
    w = fluid.data('w', [4, 2], 'float64')
    a = L.mul(L.reshape(x, [3, 2, 2]), w, x_num_col_dims=1)  # X viewed as [3, 4]
    b = L.mul(L.sqrt(L.square(x) + 1.0), w)
    return L.reduce_sum(L.square(L.relu(a))) + L.reduce_sum(L.leaky_relu(b, 0.2) * b)


def _f_axis(x, L):
    row = L.reduce_sum(L.square(x), dim=1)                    # [3], added on axis 0
    y = L.elementwise_add(L.elementwise_mul(x, x), row, axis=0)
    z = L.elementwise_sub(y, L.sqrt(row + 2.0), axis=0)
    return L.reduce_sum(L.elementwise_mul(z, z))


def _f_div(x, L):
    d = L.reduce_sum(L.elementwise_mul(x, x), dim=0) + 1.5     # Y [4] broadcast over rows
    q = L.elementwise_div(L.elu(x, 0.6), d)
    return L.reduce_sum(L.elementwise_mul(q, L.sqrt(L.square(x) + 0.5)))


def _conv(img, w, **attrs):
    """conv2d with a filter computed from x (the layer would make a parameter)."""
    block = fluid.default_main_program().global_block()
    out = block.create_var(name=fluid.unique_name.generate('conv'), dtype='float64')
    full = dict(strides=[1, 1], paddings=[0, 0], dilations=[1, 1], groups=1)
    full.update(attrs)
    block.append_op(type='conv2d', inputs={'Input': [img], 'Filter': [w]},
                    outputs={'Output': [out]}, attrs=full)
    return out


def _f_conv(x, L):
    img = L.reshape(x, [1, 1, 3, 4])
    w = L.reshape(L.scale(x, 0.5), [3, 1, 2, 2])               # DDFilter, DInput, DFilter
    h = _conv(img, w, paddings=[1, 1])
    h2 = _conv(L.square(img), w, strides=[2, 1], paddings=[1, 0], dilations=[1, 2])
    return L.reduce_sum(L.square(h)) + L.reduce_sum(L.elementwise_mul(h2, h2))


def _hvp_program(f):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data('x', [3, 4], 'float64')
        x.stop_gradient = False
        g = fluid.gradients(f(x, L), x)[0]
        hv = fluid.gradients(L.reduce_sum(g * fluid.data('v', [3, 4], 'float64')), x)[0]
    return main, startup, g, hv


@pytest.mark.parametrize('f', [_f_broadcast, _f_mul, _f_axis, _f_div, _f_conv],
                         ids=lambda f: f.__name__[3:])
def test_hessian_vector_product_matches_differences(f):
    rng = np.random.RandomState(5)
    x0 = rng.uniform(-1, 1, (3, 4))
    v = rng.uniform(-1, 1, (3, 4))
    main, startup, g, hv = _hvp_program(f)
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {'v': v}
    if 'w' in main.global_block().vars:
        feed['w'] = np.linspace(-1, 1, 8).reshape(4, 2)
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        got, = exe.run(main, feed=dict(feed, x=x0), fetch_list=[hv])
        eps = 1e-6
        gp, = exe.run(main, feed=dict(feed, x=x0 + eps * v), fetch_list=[g])
        gm, = exe.run(main, feed=dict(feed, x=x0 - eps * v), fetch_list=[g])
    np.testing.assert_allclose(got, (gp - gm) / (2 * eps), rtol=1e-5, atol=1e-6)


def test_op_without_double_gradient_is_named():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data('x', [2, 3], 'float32')
        x.stop_gradient = False
        g = fluid.gradients(L.reduce_sum(L.exp(x)), x)[0]
        with pytest.raises(fluid.core.Error) as e:
            fluid.gradients(L.reduce_sum(g * g), x)
    assert "'exp_grad'" in str(e.value) and 'has no gradient' in str(e.value)


def test_nhwc_conv_double_gradient_says_so():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data('x', [2, 5, 5, 3], 'float32')
        x.stop_gradient = False
        g = fluid.gradients(L.reduce_sum(L.conv2d(x, 4, 3, data_format='NHWC')), x)[0]
        loss = L.reduce_sum(L.square(g))
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        with pytest.raises(fluid.core.Error) as e:
            exe.run(main, feed={'x': np.ones((2, 5, 5, 3), 'float32')}, fetch_list=[loss])
    assert 'conv2d_grad_grad' in str(e.value) and 'NHWC' in str(e.value)
