"""npair_loss, teacher_student_sigmoid_loss, center_loss, data_norm, hsigmoid, nce,
sampled_softmax_with_cross_entropy, temporal_shift, fsp_matrix, affine_grid, row_conv and
grid_sampler trained through append_backward against Paddle 1.8.5 (paddle18/loss_layers/, written by
paddle18/gen_loss_layers.py from the same programs): the loss, the layer's output and
the gradients at each SGD step, and the trained parameters (center_loss's moved centres
and data_norm's summary statistics among them); and the layers' op layout and errors."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_loss_layers as gen  # noqa: E402


@pytest.fixture(scope='module')
def ref():
    return np.load(os.path.join(DATA, 'loss_layers', 'expected.npz'))


@pytest.mark.parametrize('case', sorted(gen.CASES))
def test_trains_like_paddle(ref, case):
    main, startup, y, loss = gen.build(fluid, case)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for step, feed in enumerate(gen.batches(case)):
            names = gen.fetch_names(case)
            vals = exe.run(main, feed=gen.feed_of(fluid, feed), fetch_list=[loss, y] + names,
                           return_numpy=False)
            for name, v in zip(['loss', 'out'] + names, vals):
                want = ref['%s/%s/%d' % (case, name, step)]
                np.testing.assert_allclose(np.array(v).reshape(want.shape), want,
                                           rtol=2e-4, atol=2e-5,
                                           err_msg='%s %s step %d' % (case, name, step))
        for p in gen.params_of(case):
            np.testing.assert_allclose(np.array(scope.find_var(p).get_tensor()),
                                       ref['%s/%s' % (case, p)], rtol=2e-4, atol=2e-5,
                                       err_msg='%s %s' % (case, p))


def _program(body):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        body()
    return main


def test_center_loss_layer_as_fluid():
    """The centres are written in place by the op and get no gradient; the rate is a
    persistable float32 variable filled in the main program, as Fluid's."""
    def body():
        x = fluid.data('x', [4, 3], 'float32')
        x.stop_gradient = False
        lab = fluid.data('lab', [4, 1], 'int64')
        loss = fluid.layers.center_loss(x, lab, 5, 0.1, fluid.ParamAttr('ctr'))
        fluid.backward.append_backward(fluid.layers.mean(loss))
        with pytest.raises(TypeError, match='alpha must be a float'):
            fluid.layers.center_loss(x, lab, 5, 1, fluid.ParamAttr('ctr2'))
        with pytest.raises(TypeError, match='expected int64'):
            fluid.layers.center_loss(x, fluid.data('l32', [4, 1], 'int32'), 5, 0.1, None)
    main = _program(body)
    ops = main.global_block().ops
    fwd = [op for op in ops if op.type == 'center_loss'][0]
    assert fwd.output('CentersOut') == ['ctr'] == fwd.input('Centers')
    assert fwd.input('CenterUpdateRate') == ['centerloss_alpha']
    assert fwd.attr('cluster_num') == 5 and fwd.attr('need_update') is True
    assert main.global_block().var('centerloss_alpha').persistable
    assert [op.type for op in ops].index('fill_constant') < ops.index(fwd)
    grads = [op for op in ops if op.type == 'center_loss_grad']
    assert len(grads) == 1 and sorted(grads[0].input_names) == ['Loss@GRAD',
                                                                 'SampleCenterDiff', 'X']
    assert not main.global_block().has_var('ctr@GRAD')


def test_center_loss_bad_label_fails_and_keeps_centres():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [3, 2], 'float32')
        lab = fluid.data('lab', [3, 1], 'int64')
        loss = fluid.layers.center_loss(x, lab, 2, 0.5, fluid.ParamAttr(
            'ctr', initializer=fluid.initializer.Constant(0.25)))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        with pytest.raises(Exception, match=r'center_loss.*class 2 in row 1'):
            exe.run(main, feed={'x': np.ones((3, 2), 'float32'),
                                'lab': np.array([[0], [2], [1]], 'int64')},
                    fetch_list=[loss])
        np.testing.assert_array_equal(np.array(scope.find_var('ctr').get_tensor()),
                                      np.full((2, 2), 0.25, 'float32'))


def test_data_norm_layer_as_fluid():
    """Named statistics parameters ('dn' by default), intermediate Means and Scales read
    by the gradient op, whose outputs include each statistic's gradient."""
    def body():
        x = fluid.data('x', [4, 6], 'float32')
        x.stop_gradient = False
        y = fluid.layers.data_norm(x, slot_dim=3)
        fluid.backward.append_backward(fluid.layers.mean(y))
        with pytest.raises(ValueError, match='unsupported data layout'):
            fluid.layers.data_norm(x, data_layout='NDHWC')
    main = _program(body)
    ops = main.global_block().ops
    fwd = [op for op in ops if op.type == 'data_norm'][0]
    assert fwd.input('BatchSize') == ['dn.batch_size']
    assert fwd.input('BatchSquareSum') == ['dn.batch_square_sum']
    assert fwd.attr('slot_dim') == 3
    grads = [op for op in ops if op.type == 'data_norm_grad']
    assert len(grads) == 1
    assert grads[0].output('BatchSize@GRAD') == ['dn.batch_size@GRAD']
    assert sorted(grads[0].input_names) == ['Means', 'Scales', 'X', 'Y@GRAD']


def test_npair_loss_emits_paddles_ops():
    def body():
        a = fluid.data('a', [3, 4], 'float32')
        p = fluid.data('p', [3, 4], 'float32')
        lab = fluid.data('lab', [3], 'int64')
        fluid.layers.npair_loss(a, p, lab)
    types = [op.type for op in _program(body).global_block().ops]
    for t in ('expand', 'equal', 'cast', 'matmul', 'softmax_with_cross_entropy'):
        assert t in types, (t, types)


def test_teacher_student_sigmoid_loss_checks_its_inputs():
    def body():
        x = fluid.data('x', [4, 1], 'float32')
        with pytest.raises(TypeError, match='expected float32 or float64'):
            fluid.layers.teacher_student_sigmoid_loss(x, fluid.data('l', [4, 1], 'int64'))
        y = fluid.layers.teacher_student_sigmoid_loss(x, fluid.data('f', [4, 1], 'float32'),
                                                      soft_max_up_bound=3.0)
        assert list(y.shape) == [4, 1]
    main = _program(body)
    op = [o for o in main.global_block().ops if o.type == 'teacher_student_sigmoid_loss'][0]
    assert op.attr('soft_max_up_bound') == 3.0 and op.attr('soft_max_lower_bound') == -15.0


def test_temporal_shift_and_fsp_matrix_layers():
    def body():
        x = fluid.data('x', [4, 6, 2, 2], 'float32')
        with pytest.raises(TypeError, match='seg_num must be int'):
            fluid.layers.temporal_shift(x, 2.0)
        y = fluid.layers.temporal_shift(x, 2, 0.2)
        assert list(y.shape) == [4, 6, 2, 2]
        z = fluid.layers.fsp_matrix(x, fluid.data('v', [4, 3, 2, 2], 'float32'))
        assert list(z.shape) == [4, 6, 3]
    ops = _program(body).global_block().ops
    ts = [o for o in ops if o.type == 'temporal_shift'][0]
    assert ts.attr('seg_num') == 2 and ts.attr('shift_ratio') == pytest.approx(0.2)
    assert [o.type for o in ops].count('fsp') == 1
