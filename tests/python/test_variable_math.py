"""Python operators on Variables build the ops Fluid 1.x's math_op_patch builds, so a
script's program and numbers are Paddle's: numbers with + - * / become one scale op
(division by 4.0 scales by 0.25), other operands a fill_constant (of the variable's
shape, its batch dim taken at run time, when the number is on the left), ** // % and
the orderings their elementwise and compare ops, -x a scale by -1, astype a cast. The
op list below is what PaddlePaddle 1.8.5 builds for the same expressions."""
import numpy as np
import pytest

import rill as fluid

L = fluid.layers

EXPRS = ['-x', 'x ** 2', '2 ** x', 'i // 2', 'i % 2', 'x.astype("float64")', 'x < c',
         'x / 3', '3 / x', '3 - x', 'x * 2 + 1', 'i / 2', 'x >= 0.5', 'i * 3', 'c / 7',
         '2 / c', 'x + c']

# (type, axis) of every op Paddle 1.8.5 appends for EXPRS in order (after c's fill_constant)
PADDLE_OPS = [
    ('scale', None), ('fill_constant', None), ('elementwise_pow', -1),
    ('fill_constant_batch_size_like', None), ('elementwise_pow', 0), ('fill_constant', None),
    ('elementwise_floordiv', -1), ('fill_constant', None), ('elementwise_mod', -1),
    ('cast', None), ('less_than', -1), ('scale', None), ('fill_constant_batch_size_like', None),
    ('elementwise_div', 0), ('scale', None), ('scale', None), ('scale', None),
    ('fill_constant', None), ('elementwise_div', -1), ('fill_constant', None),
    ('greater_equal', -1), ('scale', None), ('scale', None), ('fill_constant', None),
    ('elementwise_div', -1), ('elementwise_add', -1)]


def build():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data('x', [None, 3], 'float32')
        i = fluid.data('i', [None, 3], 'int64')
        c = L.fill_constant([2, 3], 'float32', 1.5)
        env = {'x': x, 'i': i, 'c': c}
        outs = [eval(e, {}, env) for e in EXPRS]
    return main, outs


def test_ops_are_paddles():
    main, outs = build()
    got = [(op.type, op.attr('axis') if op.has_attr('axis') else None)
           for op in main.global_block().ops[1:]]
    assert got == PADDLE_OPS
    assert [o.dtype.name for o in outs] == [
        'float32', 'float32', 'float32', 'int64', 'int64', 'float64', 'bool', 'float32',
        'float32', 'float32', 'float32', 'int64', 'bool', 'int64', 'float32', 'float32',
        'float32']
    assert all(o.name.startswith('tmp_') for o in outs if o.name != outs[5].name)
    assert outs[6].stop_gradient and outs[12].stop_gradient


def test_values():
    main, outs = build()
    xv = ((np.arange(6).reshape(2, 3) + 0.5) / 7).astype('float32')
    iv = np.arange(6).reshape(2, 3).astype('int64') - 2
    got = dict(zip(EXPRS, fluid.Executor().run(main, feed={'x': xv, 'i': iv}, fetch_list=outs)))
    c = np.full((2, 3), 1.5, 'float32')
    f = np.float32
    want = {'-x': -xv, 'x ** 2': xv ** 2, '2 ** x': f(2) ** xv,
            # C's truncating integer division and remainder, as Paddle 1.8.5's kernels
            'i // 2': np.trunc(iv / 2).astype('int64'), 'i % 2': np.fmod(iv, 2),
            'x.astype("float64")': xv.astype('float64'), 'x < c': xv < c,
            # a scale by the reciprocal: Paddle's bits, not a division's
            'x / 3': xv * f(1.0 / 3), '3 / x': f(3) / xv, '3 - x': f(3) - xv,
            'x * 2 + 1': xv * 2 + 1, 'i / 2': np.trunc(iv / 2).astype('int64'),
            'x >= 0.5': xv >= 0.5, 'i * 3': iv * 3, 'c / 7': c * f(1.0 / 7), '2 / c': f(2) / c,
            'x + c': xv + c}
    for e in EXPRS:
        assert got[e].dtype == want[e].dtype, e
        if '**' in e:  # the C library's powf against numpy's: within an ulp
            np.testing.assert_allclose(got[e], want[e], rtol=3e-7, err_msg=e)
        else:
            np.testing.assert_array_equal(got[e], want[e], err_msg=e)


def test_a_gradient_flows_through_the_operators():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 3], 'float32')
        x.stop_gradient = False
        loss = L.mean(-(x ** 2) / 4.0 + 3 - x * 0.5)
        fluid.backward.append_backward(loss)
    xv = np.arange(6, dtype='float32').reshape(2, 3)
    g, = fluid.Executor().run(main, feed={'x': xv}, fetch_list=['x@GRAD'])
    np.testing.assert_allclose(g, (-xv / 2 - 0.5) / 6, rtol=1e-6)


def test_an_integer_variable_refuses_a_fractional_number():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        i = fluid.data('i', [None, 3], 'int64')
        with pytest.raises(ValueError, match='0.5 cannot convert to integer'):
            i * 0.5
        assert (i * 2.0).dtype.name == 'int64'


def test_equality_stays_identity():
    """== and != compare the Python objects (variables live in sets and dicts)."""
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('x', [None, 3], 'float32')
        y = fluid.data('y', [None, 3], 'float32')
        assert x == x and x != y and len({x, y, x}) == 2


def test_an_op_fluid_defines_without_gradient_passes_none():
    """clip_by_norm has no gradient in Paddle 1.8.5: its path adds nothing to x@GRAD
    (Paddle gives 0.5 everywhere here, the x * 3 path alone), where an op merely lacking
    a gradient in rill would fail the backward pass."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data('x', [2, 3], 'float32')
        x.stop_gradient = False
        loss = L.mean(L.clip_by_norm(x, 1.0) * 2.0 + x * 3.0)
        fluid.backward.append_backward(loss)
    assert 'clip_by_norm' in [op.type for op in main.global_block().ops]
    g, = fluid.Executor().run(main, feed={'x': np.arange(6, dtype='float32').reshape(2, 3)},
                              fetch_list=['x@GRAD'])
    np.testing.assert_array_equal(g, np.full((2, 3), 0.5, 'float32'))
