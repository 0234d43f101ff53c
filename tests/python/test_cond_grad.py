"""Training through layers.cond: the backward pass builds a gradient block for each
branch's conditional_block, conditional_block_grad runs it in the kept step scope, and
the skipped branch's parameters get zero gradients. Losses and trained parameters are
Paddle 1.8.5's (paddle18/cond_train/, written by paddle18/gen_cond_train.py from the same
program), in both schedules; the step scopes are freed at the end of every run."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_cond_train  # noqa: E402


def expected():
    return np.load(os.path.join(DATA, 'cond_train', 'expected.npz'))


@pytest.mark.parametrize('parallel', [False, True])
def test_cond_trains_like_paddle(parallel):
    ref = expected()
    main, startup, loss = gen_cond_train.build(fluid)
    types = [op.type for op in main.global_block().ops]
    assert types.count('conditional_block_grad') == 2
    exe = fluid.Executor(fluid.CPUPlace(), parallel=parallel, num_threads=2)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for k in gen_cond_train.PARAMS:
            scope.find_var(k).get_tensor().set(ref['param_' + k], fluid.CPUPlace())
        preds = set()
        for step in range(gen_cond_train.STEPS):
            x = ref['x_%d' % step]
            preds.add(bool(x.mean() > 0))
            l, = exe.run(main, feed={'x': x, 'y': ref['y_%d' % step]}, fetch_list=[loss])
            np.testing.assert_allclose(np.asarray(l), ref['loss_%d' % step], rtol=1e-5,
                                       err_msg='step %d' % step)
        assert preds == {True, False}  # both branches trained and skipped
        for k in gen_cond_train.PARAMS:
            np.testing.assert_allclose(np.array(scope.find_var(k).get_tensor()), ref['final_' + k], rtol=1e-5,
                                       atol=1e-6, err_msg=k)


def test_skipped_branch_gets_zero_gradients():
    main, startup, loss = gen_cond_train.build(fluid)
    ref = expected()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for k in gen_cond_train.PARAMS:
            scope.find_var(k).get_tensor().set(ref['param_' + k], fluid.CPUPlace())
        x = np.abs(ref['x_0'])  # the true branch runs
        gt, gf = exe.run(main, feed={'x': x, 'y': ref['y_0']},
                         fetch_list=['wt@GRAD', 'wf@GRAD'])
        assert np.abs(np.asarray(gt)).max() > 0
        np.testing.assert_array_equal(np.asarray(gf), np.zeros((3, 2), 'float32'))
