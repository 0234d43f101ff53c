"""Training through a While loop: the backward pass builds the loop's gradient block
(array gradients, the counter stepped back), while keeps a scope per step and
while_grad runs the gradient block over them last step first, summing the shared fc
weights' gradients. Losses, ww@GRAD and trained parameters are Paddle 1.8.5's
(paddle18/while_train/, written by paddle18/gen_while_train.py from the same program),
in both schedules; a finite-difference check of the gradient; zero and one iteration;
no step scope outlives a run."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_while_train as gen  # noqa: E402


def expected():
    return np.load(os.path.join(DATA, 'while_train', 'expected.npz'))


def feed_of(ref, step, steps=gen.T):
    f = {'x%d' % t: ref['x%d_%d' % (t, step)] for t in range(steps)}
    f['h0'] = ref['h0_%d' % step]
    return f


@pytest.mark.parametrize('parallel', [False, True])
def test_while_trains_like_paddle(parallel):
    ref = expected()
    main, startup, loss = gen.build(fluid)
    types = [op.type for op in main.global_block().ops]
    assert types.count('while_grad') == 1
    exe = fluid.Executor(fluid.CPUPlace(), parallel=parallel, num_threads=2)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for k in gen.PARAMS:
            scope.find_var(k).get_tensor().set(ref['param_' + k], fluid.CPUPlace())
        for step in range(gen.STEPS):
            l, gw = exe.run(main, feed=feed_of(ref, step), fetch_list=[loss, 'ww@GRAD'])
            np.testing.assert_allclose(np.asarray(l), ref['loss_%d' % step], rtol=1e-5,
                                       err_msg='step %d' % step)
            np.testing.assert_allclose(np.asarray(gw), ref['gww_%d' % step], rtol=1e-4,
                                       atol=1e-6, err_msg='step %d' % step)
        for k in gen.PARAMS:
            np.testing.assert_allclose(np.array(scope.find_var(k).get_tensor()),
                                       ref['final_' + k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_gradient_matches_finite_differences():
    """ww@GRAD against central differences of the loss (no optimizer step: lr 0)."""
    ref = expected()
    main, startup, loss = gen.build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        lr = [v for v in main.global_block().vars if v.startswith('learning_rate')][0]
        w0 = ref['param_ww'].astype('float64')
        feed = feed_of(ref, 0)

        def run(w):
            scope.find_var('ww').get_tensor().set(w.astype('float32'), fluid.CPUPlace())
            scope.find_var('wb').get_tensor().set(ref['param_wb'], fluid.CPUPlace())
            scope.find_var(lr).get_tensor().set(np.zeros([1], 'float32'), fluid.CPUPlace())
            l, g = exe.run(main, feed=feed, fetch_list=[loss, 'ww@GRAD'])
            return float(np.asarray(l).ravel()[0]), np.asarray(g)

        _, g = run(w0)
        eps = 1e-2
        num = np.zeros_like(w0)
        for k in range(w0.size):
            d = np.zeros_like(w0)
            d.flat[k] = eps
            num.flat[k] = (run(w0 + d)[0] - run(w0 - d)[0]) / (2 * eps)
        assert np.abs(g).max() > 1e-3
        np.testing.assert_allclose(g, num, rtol=2e-2, atol=2e-4)
