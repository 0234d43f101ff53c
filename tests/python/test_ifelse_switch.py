"""IfElse and Switch against Paddle 1.8.5 (paddle18/ifelse_switch/, written by
paddle18/gen_ifelse_switch.py from the same programs): SGD through an IfElse whose two
blocks hold their own fc (losses, merged rows, x@GRAD and trained parameters, one step
with an empty true block), a Switch picking a learning rate, and the layers' errors."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_ifelse_switch as gen  # noqa: E402


def expected():
    return np.load(os.path.join(DATA, 'ifelse_switch', 'expected.npz'))


@pytest.mark.parametrize('parallel', [False, True])
def test_ifelse_trains_like_paddle(parallel):
    ref = expected()
    main, startup, merged, loss = gen.build_ifelse(fluid)
    types = [op.type for op in main.global_block().ops]
    # forward split and merge, and each as the other's gradient
    assert types.count('split_lod_tensor') == 2 and types.count('merge_lod_tensor') == 2
    assert types.count('conditional_block_grad') == 2
    exe = fluid.Executor(fluid.CPUPlace(), parallel=parallel, num_threads=2)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for k in gen.PARAMS:
            scope.find_var(k).get_tensor().set(ref['param_' + k], fluid.CPUPlace())
        for step in range(gen.STEPS):
            l, m, g = exe.run(main, feed={'x': ref['x_%d' % step], 'y': ref['y_%d' % step]},
                              fetch_list=[loss, merged, 'x@GRAD'])
            msg = 'step %d' % step
            np.testing.assert_allclose(np.asarray(l), ref['loss_%d' % step], rtol=1e-5, err_msg=msg)
            np.testing.assert_allclose(np.asarray(m), ref['merged_%d' % step], rtol=1e-5,
                                       atol=1e-6, err_msg=msg)
            np.testing.assert_allclose(np.asarray(g), ref['xgrad_%d' % step], rtol=1e-5,
                                       atol=1e-6, err_msg=msg)
        for k in gen.PARAMS:
            np.testing.assert_allclose(np.array(scope.find_var(k).get_tensor()),
                                       ref['final_' + k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_switch_picks_like_paddle():
    ref = expected()
    main, startup, lr, scaled = gen.build_switch(fluid)
    types = [op.type for op in main.global_block().ops]
    assert types.count('conditional_block') == 4
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        for i, s in enumerate(gen.SWITCH_STEPS):
            a, b = exe.run(main, feed={'step': np.array([s], 'float32'), 'v': ref['switch_v']},
                           fetch_list=[lr, scaled])
            np.testing.assert_allclose(np.asarray(a), ref['switch_lr_%d' % i], rtol=1e-6,
                                       err_msg='step %s' % s)
            np.testing.assert_allclose(np.asarray(b), ref['switch_scaled_%d' % i], rtol=1e-6,
                                       err_msg='step %s' % s)


def test_logical_layers():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        a = fluid.data('a', [4], 'bool')
        b = fluid.data('b', [4], 'bool')
        L = fluid.layers
        outs = [L.logical_and(a, b), L.logical_or(a, b), L.logical_xor(a, b), L.logical_not(a)]
    av = np.array([False, False, True, True])
    bv = np.array([False, True, False, True])
    got = fluid.Executor(fluid.CPUPlace()).run(main, feed={'a': av, 'b': bv}, fetch_list=outs)
    for g, w in zip(got, [av & bv, av | bv, av ^ bv, ~av]):
        np.testing.assert_array_equal(np.asarray(g), w)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match='logical_and: x must be a bool'):
            fluid.layers.logical_and(fluid.data('f', [4], 'float32'), fluid.data('g', [4], 'bool'))


def test_misuse_raises_clear_errors():
    L = fluid.layers
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('x', [None, 3], 'float32')
        cond = fluid.data('c', [None, 1], 'bool')
        ie = L.IfElse(cond)
        with pytest.raises(ValueError, match='inside true_block'):
            ie.input(x)
        with pytest.raises(ValueError, match='call output'):
            with ie.true_block():
                ie.input(x)
        with pytest.raises(ValueError, match='before calling it'):
            L.IfElse(cond)()
        switch = L.Switch()
        with pytest.raises(ValueError, match='inside'):
            switch.case(cond)
        with switch:
            with pytest.raises(ValueError, match='at least one case'):
                switch.default()
            with pytest.raises(TypeError, match='bool'):
                switch.case(x)
