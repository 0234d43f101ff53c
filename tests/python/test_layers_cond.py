"""layers.cond builds conditional_block programs that run the right branch: one output,
a tuple of outputs, a branch reading a parameter, a predicate computed in the program,
nested conds, both schedules; and Paddle's errors for mismatched branches. The numbers
are Paddle 1.8.5's for the same layers (checked by running them there)."""
import numpy as np
import pytest

import rill as fluid

X = np.arange(6, dtype='float32').reshape(2, 3) - 2


def build():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [2, 3], 'float32')
        p = fluid.data('p', [1], 'bool')
        limit = fluid.data('limit', [1], 'float32')
        one = fluid.layers.cond(p, lambda: fluid.layers.scale(x, 2.0),
                                lambda: fluid.layers.scale(x, -1.0, bias=0.5))
        pair = fluid.layers.cond(p, lambda: (fluid.layers.relu(x), fluid.layers.scale(x, 3.0)),
                                 lambda: (fluid.layers.tanh(x), fluid.layers.scale(x, 4.0)))
        w = fluid.layers.create_parameter([2, 3], 'float32', name='w',
                                          default_initializer=fluid.initializer.Constant(0.25))
        s = fluid.layers.reduce_sum(x)
        big = fluid.layers.less_than(limit, fluid.layers.reshape(s, [1]))

        def outer_true():
            return fluid.layers.cond(p, lambda: fluid.layers.elementwise_add(x, w),
                                     lambda: fluid.layers.elementwise_sub(x, w))

        nested = fluid.layers.cond(big, outer_true, lambda: fluid.layers.scale(x, 0.0))
    return main, startup, [one, pair[0], pair[1], nested]


def expected(p, limit):
    one = 2 * X if p else -X + 0.5
    a = np.maximum(X, 0) if p else np.tanh(X)
    b = 3 * X if p else 4 * X
    nested = (X + 0.25 if p else X - 0.25) if limit < X.sum() else 0 * X
    return [one, a, b, nested]


@pytest.mark.parametrize('parallel', [False, True])
def test_cond_runs_the_branch_the_predicate_picks(parallel):
    main, startup, outs = build()
    types = [op.type for op in main.global_block().ops]
    assert types.count('conditional_block') == 6
    assert main.num_blocks == 9
    exe = fluid.Executor(fluid.CPUPlace(), parallel=parallel, num_threads=2)
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        for p in (True, False):
            for limit in (0.0, 100.0):
                got = exe.run(main, feed={'x': X, 'p': np.array([p]),
                                          'limit': np.array([limit], 'float32')},
                              fetch_list=outs)
                for g, w in zip(got, expected(p, limit)):
                    np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-7,
                                               err_msg='p=%s limit=%s' % (p, limit))


def test_cond_branches_must_agree():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [2, 3], 'float32')
        p = fluid.data('p', [1], 'bool')
        with pytest.raises(ValueError, match='false_fn returns None'):
            fluid.layers.cond(p, lambda: fluid.layers.scale(x, 2.0), lambda: None)
        with pytest.raises(ValueError, match='true_fn returns 1 values and false_fn 2'):
            fluid.layers.cond(p, lambda: x, lambda: (x, x))
        with pytest.raises(TypeError, match='must be callable'):
            fluid.layers.cond(p, 3)
        assert fluid.layers.cond(p, lambda: None, lambda: None) is None
        # After errors, ops go to block 0 again.
        assert main.current_block().idx == 0
