"""RMSProp, Adadelta, Adamax, DecayedAdagrad, Ftrl, LarsMomentum and Lamb, and SGD
under polynomial_decay, cosine_decay, noam_decay and linear_lr_warmup (around
noam_decay too), against Paddle 1.8.5: ten
steps of the same MLP from the same parameters (paddle18/optimizers/, written by
paddle18/gen_optimizers.py from the same programs), the first loss within 1e-5
relative, every loss and the trained parameters within 1e-4. Also the ops' shapes in the
program (Paddle's accumulators, Adamax's beta1 power scale ops), the dense-only ops
refusing sparse gradients, and one of them through the distribute transpiler."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_optimizers as gen  # noqa: E402


@pytest.fixture(scope='module')
def ref():
    return np.load(os.path.join(DATA, 'optimizers', 'expected.npz'))


def _batches(ref):
    return [(ref['x_%d' % s], ref['ids_%d' % s], ref['y_%d' % s]) for s in range(gen.STEPS)]


def _train(case, ref):
    main, startup, loss = gen.build(fluid, case)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for k in gen.params_of(case):
            scope.find_var(k).get_tensor().set(ref['param_' + k], fluid.CPUPlace())
        losses = []
        for b in _batches(ref):
            l, = exe.run(main, feed=gen.feed_of(case, b), fetch_list=[loss])
            losses.append(float(np.asarray(l).reshape(-1)[0]))
        finals = {k: np.array(scope.find_var(k).get_tensor()) for k in gen.params_of(case)}
    return main, np.array(losses), finals


@pytest.mark.parametrize('case', gen.CASES)
def test_trains_like_paddle(case, ref):
    main, losses, finals = _train(case, ref)
    want = ref['loss_' + case]
    np.testing.assert_allclose(losses[0], want[0], rtol=1e-5, err_msg='step 1')
    np.testing.assert_allclose(losses, want, rtol=1e-4, atol=1e-6)
    assert losses[-1] < losses[0]  # it trained
    for k in gen.params_of(case):
        np.testing.assert_allclose(finals[k], ref['final_%s_%s' % (case, k)], rtol=1e-4,
                                   atol=1e-5, err_msg=k)
        if k != 'emb':
            assert not np.array_equal(finals[k], ref['param_' + k]), k


OPS = {'rmsprop': 'rmsprop', 'adadelta': 'adadelta', 'adamax': 'adamax',
       'decayed_adagrad': 'decayed_adagrad', 'ftrl': 'ftrl', 'lars': 'lars_momentum',
       'lamb': 'lamb'}


@pytest.mark.parametrize('case', sorted(OPS))
def test_program_shape(case):
    main, startup, _ = gen.build(fluid, case)
    ops = main.global_block().ops
    opt = [op for op in ops if op.type == OPS[case]]
    assert sorted(op.input('Param')[0] for op in opt) == sorted(gen.PARAMS)
    for op in opt:
        assert op.attr('op_role') == int(fluid.framework.OpRole.Optimize)
        p = op.input('Param')[0]
        assert op.output('ParamOut') == [p]
        assert op.attr('op_role_var')[0] == p
    if case == 'adamax':
        scales = [op for op in ops if op.type == 'scale' and
                  op.input('X')[0].endswith('beta1_pow_acc_0')]
        assert len(scales) == 4 and ops.index(scales[0]) > ops.index(opt[-1])
        assert all(op.output('Out') == op.input('X') for op in scales)
        assert all(abs(op.attr('scale') - 0.9) < 1e-7 for op in scales)
    if case == 'ftrl':  # Paddle 1.8.5 passes l1 as l2 too
        assert all(op.attr('l2') == op.attr('l1') for op in opt)
    if case == 'adadelta':
        assert all(not op.input('LearningRate') for op in opt)
    fills = {op.output('Out')[0]: op.attr('value') for op in startup.global_block().ops
             if op.type == 'fill_constant'}
    if case == 'lamb':
        assert fills['w1_beta1_pow_acc_0'] == pytest.approx(0.9)
        assert fills['w1_beta2_pow_acc_0'] == pytest.approx(0.999)
        assert [op.attr('weight_decay') for op in opt if op.input('Param') == ['b2']] == [0.0]
    if case == 'rmsprop':
        assert fills['w1_mean_square_0'] == 0.0 and 'w1_mean_grad_0' in fills


@pytest.mark.parametrize('opt', [lambda: fluid.optimizer.Adamax(0.1),
                                 lambda: fluid.optimizer.Ftrl(0.1),
                                 lambda: fluid.optimizer.Adadelta(0.1),
                                 lambda: fluid.optimizer.DecayedAdagrad(0.1),
                                 lambda: fluid.optimizer.LarsMomentum(0.1, 0.9)])
def test_dense_only_ops_refuse_sparse_gradients(opt):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.data('ids', [4, 1], 'int64')
        e = fluid.layers.embedding(ids, size=[5, 2], is_sparse=True,
                                   param_attr=fluid.ParamAttr(name='E'))
        loss = fluid.layers.reduce_sum(fluid.layers.square(e))
        opt().minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        with pytest.raises(Exception, match='selected rows'):
            exe.run(main, feed={'ids': np.array([[1], [3], [1], [0]], 'int64')})


def test_rmsprop_transpiles_with_its_accumulators_sliced():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name='x', shape=[784], dtype='float32')
        y = fluid.layers.data(name='y', shape=[1], dtype='int64')
        h = fluid.layers.fc(x, size=1024, act='relu')
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(
            fluid.layers.fc(h, size=10), y))
        fluid.optimizer.RMSProp(0.01, momentum=0.5).minimize(loss)
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers='127.0.0.1:6170,127.0.0.1:6171', trainers=2,
                startup_program=startup)
    assert 'rmsprop' not in [op.type for op in t.get_trainer_program().global_block().ops]
    seen = {}
    for ep in ('127.0.0.1:6170', '127.0.0.1:6171'):
        ps = t.get_pserver_program(ep)
        for b in range(1, ps.num_blocks):
            for op in ps.block(b).ops:
                if op.type == 'rmsprop':
                    p = op.input('Param')[0]
                    seen[p] = op
                    pv = ps.global_block().var(p)
                    for slot in ('Moment', 'MeanSquare', 'MeanGrad'):
                        acc = op.input(slot)[0]
                        assert list(ps.global_block().var(acc).shape) == list(pv.shape), acc
    assert 'fc_0.w_0.block0' in seen and 'fc_0.w_0.block1' in seen
    m = seen['fc_0.w_0.block1'].input('MeanSquare')[0]
    assert m == 'fc_0.w_0_mean_square_0.block1'


def test_adam_beta_variables_feed_the_tensor_inputs_and_lamb_refuses_them():
    main, startup, _ = gen.build(fluid, 'adam_beta_tensors')
    adams = [op for op in main.global_block().ops if op.type == 'adam']
    assert adams and all(op.input('Beta1Tensor') == ['beta1_var'] and
                         op.input('Beta2Tensor') == ['beta2_var'] for op in adams)
    assert all('beta1' not in op.attr_names and 'beta2' not in op.attr_names for op in adams)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        b = fluid.layers.create_global_var([1], 0.8, 'float32', persistable=True, name='b')
        with pytest.raises(TypeError, match='LambOptimizer: beta1 must be a float.*Variable b'):
            fluid.optimizer.Lamb(0.01, beta1=b)
