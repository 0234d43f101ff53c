"""Several backward passes over one program (fluid.gradients and append_backward called
more than once, doc/design/backward.md): each pass keeps its own gradients, named as
Paddle 1.8.5 names them (x@GRAD, then grad/grad/x@GRAD, grad/grad/grad/x@GRAD, ...), with
Paddle's values (tests/python/paddle18/gradients_twice, gen_gradients_twice.py)."""
import json
import os
import sys

import numpy as np

import rill as fluid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'paddle18'))
import gen_gradients_twice as gen  # noqa: E402

REF = os.path.join(HERE, 'paddle18', 'gradients_twice')


def _run(prog, startup, fetch, feed):
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        return exe.run(prog, feed=feed, fetch_list=fetch)


def test_names_and_values_match_paddle():
    with open(os.path.join(REF, 'names.json')) as f:
        names = json.load(f)
    want = np.load(os.path.join(REF, 'expected.npz'))
    prog, startup, grads, pairs = gen.build(fluid)
    assert {k: v.name for k, v in grads.items()} == names['grads']
    assert [list(p) for p in pairs] == names['pairs']
    labels = sorted(grads)
    got = _run(prog, startup, [grads[k] for k in labels] + [g for _, g in pairs], {'x': gen.X})
    for k, v in zip(labels, got):
        np.testing.assert_allclose(v, want[k], rtol=1e-5, atol=1e-6, err_msg=k)
    for i, v in enumerate(got[len(labels):]):
        np.testing.assert_allclose(v, want['pair%d' % i], rtol=1e-5, atol=1e-6)
    # the analytic values, so that a wrong reference would show too
    np.testing.assert_allclose(got[labels.index('y1')], 2 * gen.X, rtol=1e-6)
    np.testing.assert_allclose(got[labels.index('y2')], np.exp(gen.X) / 6, rtol=1e-5)


def test_target_seeded_twice_gets_a_new_seed():
    prog, _, grads, _ = gen.build(fluid)
    ops = prog.global_block().ops
    seeds = [op.output('Out')[0] for op in ops if op.type == 'fill_constant']
    assert seeds[:3] == ['reduce_sum_0.tmp_0@GRAD', 'reduce_mean_0.tmp_0@GRAD',
                         'reduce_sum_0.tmp_0@GRAD_0']


def test_later_pass_reads_an_earlier_gradient():
    # z reads the first pass's x@GRAD (held constant): the second pass must not
    # overwrite it. dz/dx = g * (1 - tanh(x)^2) with g = 2x; Paddle 1.8.5 gives no
    # gradient for this program (its gradients() returns []).
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [2, 3], 'float32')
        x.stop_gradient = False
        y = L.reduce_sum(L.elementwise_mul(x, x))
        g = fluid.gradients(y, x)[0]
        g.stop_gradient = True
        z = L.reduce_sum(L.elementwise_mul(g, L.tanh(x)))
        gz = fluid.gradients(z, x)[0]
    assert (g.name, gz.name) == ('x@GRAD', 'grad/grad/x@GRAD')
    gv, gzv = _run(main, startup, [g, gz], {'x': gen.X})
    np.testing.assert_allclose(gv, 2 * gen.X, rtol=1e-6)
    np.testing.assert_allclose(gzv, 2 * gen.X * (1 - np.tanh(gen.X) ** 2), rtol=1e-5, atol=1e-7)


def test_append_backward_twice_on_one_loss():
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [2, 3], 'float32')
        h = L.fc(x, 2, bias_attr=False, param_attr=fluid.ParamAttr(
            name='w', initializer=fluid.initializer.NumpyArrayInitializer(gen.W)))
        loss = L.reduce_mean(L.square(h))
        (p1, g1), = fluid.backward.append_backward(loss)
        (p2, g2), = fluid.backward.append_backward(loss)
    assert (g1.name, g2.name) == ('w@GRAD', 'grad/grad/w@GRAD')
    a, b = _run(main, startup, [g1, g2], {'x': gen.X})
    hv = gen.X @ gen.W
    np.testing.assert_allclose(a, gen.X.T @ (2 * hv / hv.size), rtol=1e-5)
    np.testing.assert_allclose(b, a, rtol=1e-6)
