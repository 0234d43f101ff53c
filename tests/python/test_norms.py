"""Normalisation layers (group_norm, instance_norm, lrn, batch_norm NCHW and NHWC) trained through
append_backward against Paddle 1.8.5 (paddle18/norms/, written by paddle18/gen_norms.py
from the same programs): the output, loss, x@GRAD and parameter gradients at each SGD
step, and the trained parameters and moving statistics; and the layers' op layout and errors."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_norms as gen  # noqa: E402


@pytest.fixture(scope='module')
def ref():
    return np.load(os.path.join(DATA, 'norms', 'expected.npz'))


@pytest.mark.parametrize('case', sorted(gen.CASES))
def test_trains_like_paddle(ref, case):
    main, startup, y, loss = gen.build(fluid, case)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for step, (x, w) in enumerate(gen.batches(case)):
            names = gen.fetch_names(case)
            vals = exe.run(main, feed={'x': x, 'w': w}, fetch_list=[loss, y] + names)
            for name, v in zip(['loss', 'out'] + names, vals):
                want = ref['%s/%s/%d' % (case, name, step)]
                np.testing.assert_allclose(np.asarray(v), want, rtol=2e-4, atol=2e-5,
                                           err_msg='%s %s step %d' % (case, name, step))
        for p in gen.params_of(case) + gen.stats_of(case):
            np.testing.assert_allclose(np.array(scope.find_var(p).get_tensor()),
                                       ref['%s/%s' % (case, p)], rtol=2e-4, atol=2e-5,
                                       err_msg='%s %s' % (case, p))


def test_group_norm_grad_needs_variance():
    """The backward pass reads the forward Variance, as Paddle's does."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data('x', [2, 4, 3], 'float32')
        x.stop_gradient = False
        y = fluid.layers.group_norm(x, 2, param_attr=True, bias_attr=True)
        fluid.backward.append_backward(fluid.layers.mean(y))
    grads = [op for op in main.global_block().ops if op.type == 'group_norm_grad']
    assert len(grads) == 1
    assert sorted(grads[0].input_names) == ['Bias', 'Scale', 'Variance', 'Y', 'Y@GRAD']


def test_instance_norm_layer_as_fluid():
    """Scale and Bias always exist; the gradient op reads X and the saved statistics."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data('x', [2, 3, 4], 'float32')
        x.stop_gradient = False
        y = fluid.layers.instance_norm(x)
        fluid.backward.append_backward(fluid.layers.mean(y))
        with pytest.raises(ValueError, match='rank must be 2 to 5'):
            fluid.layers.instance_norm(fluid.data('v', [6], 'float32'))
        with pytest.raises(ValueError, match='bias_attr should not be False'):
            fluid.layers.instance_norm(x, bias_attr=False)
    ops = main.global_block().ops
    fwd = [op for op in ops if op.type == 'instance_norm']
    assert len(fwd) == 1 and fwd[0].input('Scale') and fwd[0].input('Bias')
    grads = [op for op in ops if op.type == 'instance_norm_grad']
    assert len(grads) == 1
    assert sorted(grads[0].input_names) == ['SavedMean', 'SavedVariance', 'Scale', 'X',
                                            'Y@GRAD']


def test_lrn_layer_as_fluid():
    """MidOut is an output of its own, read by lrn_grad; bad input fails in the layer."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data('x', [2, 6, 3, 3], 'float32')
        x.stop_gradient = False
        y = fluid.layers.lrn(x, n=3)
        fluid.backward.append_backward(fluid.layers.mean(y))
        with pytest.raises(ValueError, match='must be 4, but received 3'):
            fluid.layers.lrn(fluid.data('v', [2, 6, 3], 'float32'))
        with pytest.raises(ValueError, match='only NCHW or NHWC'):
            fluid.layers.lrn(x, data_format='CHWN')
        with pytest.raises(TypeError, match='expected float32'):
            fluid.layers.lrn(fluid.data('d', [2, 6, 3, 3], 'float64'))
    ops = main.global_block().ops
    fwd = [op for op in ops if op.type == 'lrn']
    assert len(fwd) == 1 and fwd[0].attr('n') == 3 and fwd[0].output('MidOut')
    grads = [op for op in ops if op.type == 'lrn_grad']
    assert len(grads) == 1
    assert sorted(grads[0].input_names) == ['MidOut', 'Out', 'Out@GRAD', 'X']
