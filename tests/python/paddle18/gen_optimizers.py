"""Writes optimizers/expected.npz: ten training steps of a small MLP (fc tanh -> fc,
mean squared error) in Paddle 1.8.5 with each optimizer rill added after SGD, Momentum,
Adam and Adagrad (RMSProp plain, centered and with weight decay and global-norm
clipping, Adadelta, Adamax, DecayedAdagrad, Ftrl, LarsMomentum, Lamb), with SGD under
each learning-rate schedule polynomial_decay (capped and cycling), cosine_decay, noam_decay and
linear_lr_warmup (after a float, after piecewise_decay and after noam_decay, whose step
counter, shared, counts from 1), and with RMSProp and Lamb
on sparse gradients (an embedding with is_sparse, ids repeating within a batch); and
Adam with beta1 and beta2 given as Variables, LookaheadOptimizer over SGD and Momentum
with a grad_clip argument. Every
case starts from the same parameters; holds them, the seeded batches, Paddle's loss at
every step and the parameters after the last. `build(fluid, case)` is shared with
tests/python/test_optimizers_paddle18.py, which builds the same programs with rill. Run
with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'optimizers')
STEPS = 10
BATCH = 8


def _optimizer(fluid, case):
    O, L = fluid.optimizer, fluid.layers
    return {
        'rmsprop': lambda: O.RMSProp(0.01, momentum=0.5),
        'rmsprop_centered': lambda: O.RMSPropOptimizer(0.01, rho=0.9, epsilon=1e-6,
                                                       momentum=0.2, centered=True),
        'rmsprop_reg_clip': lambda: O.RMSProp(
            0.01, regularization=fluid.regularizer.L2Decay(0.01),
            grad_clip=fluid.clip.GradientClipByGlobalNorm(0.5)),
        'adadelta': lambda: O.Adadelta(0.01, epsilon=1e-4, rho=0.9),
        'adamax': lambda: O.Adamax(0.05),
        'decayed_adagrad': lambda: O.DecayedAdagrad(0.05),
        'ftrl': lambda: O.Ftrl(0.1, l1=0.01, l2=0.5),
        'ftrl_power': lambda: O.FtrlOptimizer(0.1, l1=0.001, lr_power=-0.6),
        'lars': lambda: O.LarsMomentum(0.1, 0.9, lars_weight_decay=0.001),
        'lamb': lambda: O.Lamb(0.01, exclude_from_weight_decay_fn=lambda p: p.name == 'b2'),
        'sparse_rmsprop': lambda: O.RMSProp(0.01, momentum=0.5),
        'sparse_lamb': lambda: O.Lamb(0.02),
        'sgd_poly': lambda: O.SGD(L.polynomial_decay(0.1, 4, 0.01, power=2.0)),
        'sgd_poly_cycle': lambda: O.SGD(L.polynomial_decay(0.1, 3, 0.01, power=1.5,
                                                           cycle=True)),
        'sgd_cosine': lambda: O.SGD(L.cosine_decay(0.1, 2, 5)),
        'sgd_warmup': lambda: O.SGD(L.linear_lr_warmup(0.1, 4, 0.01, 0.1)),
        'sgd_warmup_piecewise': lambda: O.SGD(L.linear_lr_warmup(
            L.piecewise_decay([6], [0.1, 0.05]), 3, 0.0, 0.1)),
        'sgd_noam': lambda: O.SGD(L.noam_decay(8, 3, learning_rate=0.5)),
        # the warmup reads noam's counter, which counts from 1
        'sgd_warmup_noam': lambda: O.SGD(L.linear_lr_warmup(L.noam_decay(8, 3), 2, 0.0, 0.1)),
        # beta1 and beta2 as Variables (the adam op's Beta1Tensor and Beta2Tensor)
        'adam_beta_tensors': lambda: O.Adam(0.02, beta1=L.create_global_var(
            [1], 0.8, 'float32', persistable=True, name='beta1_var'), beta2=L.create_global_var(
                [1], 0.95, 'float32', persistable=True, name='beta2_var')),
        # the slow weights, every second step
        'lookahead': lambda: O.LookaheadOptimizer(O.SGD(0.1), alpha=0.4, k=2),
        # Fluid 1.8's grad_clip argument
        'momentum_clip_arg': lambda: O.Momentum(0.1, 0.9, grad_clip=fluid.clip.GradientClipByNorm(0.2)),
    }[case]()


CASES = ('rmsprop', 'rmsprop_centered', 'rmsprop_reg_clip', 'adadelta', 'adamax',
         'decayed_adagrad', 'ftrl', 'ftrl_power', 'lars', 'lamb', 'sparse_rmsprop',
         'sparse_lamb', 'sgd_poly', 'sgd_poly_cycle', 'sgd_cosine', 'sgd_warmup',
         'sgd_warmup_piecewise', 'sgd_noam', 'sgd_warmup_noam', 'adam_beta_tensors',
         'lookahead', 'momentum_clip_arg')
PARAMS = ('w1', 'b1', 'w2', 'b2')


def params_of(case):
    return PARAMS + ('emb',) if case.startswith('sparse_') else PARAMS


def build(fluid, case):
    main, startup = fluid.Program(), fluid.Program()
    # seeded, so that the startup program's draws are Paddle's in both (lookahead's slow
    # weights copy them before the test sets the parameters)
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup):
        y = fluid.data('y', [BATCH, 1], 'float32')
        if case.startswith('sparse_'):
            ids = fluid.data('ids', [BATCH, 1], 'int64')
            x = fluid.layers.embedding(ids, size=[10, 4], is_sparse=True,
                                       param_attr=fluid.ParamAttr(name='emb'))
        else:
            x = fluid.data('x', [BATCH, 4], 'float32')
        h = fluid.layers.fc(x, 6, act='tanh', param_attr=fluid.ParamAttr(name='w1'),
                            bias_attr=fluid.ParamAttr(name='b1'))
        out = fluid.layers.fc(h, 1, param_attr=fluid.ParamAttr(name='w2'),
                              bias_attr=fluid.ParamAttr(name='b2'))
        loss = fluid.layers.reduce_mean(fluid.layers.square(out - y))
        _optimizer(fluid, case).minimize(loss)
    return main, startup, loss


def data():
    rng = np.random.RandomState(1885)
    params = {'w1': rng.randn(4, 6).astype('float32') * 0.5,
              'b1': rng.randn(6).astype('float32') * 0.1,
              'w2': rng.randn(6, 1).astype('float32') * 0.5,
              'b2': rng.randn(1).astype('float32') * 0.1,
              'emb': rng.randn(10, 4).astype('float32')}
    batches = []
    for _ in range(STEPS):
        x = rng.randn(BATCH, 4).astype('float32')
        ids = rng.randint(0, 6, size=(BATCH, 1)).astype('int64')  # rows 6..9 never seen
        y = rng.randn(BATCH, 1).astype('float32')
        batches.append((x, ids, y))
    return params, batches


def feed_of(case, batch):
    x, ids, y = batch
    return {'ids': ids, 'y': y} if case.startswith('sparse_') else {'x': x, 'y': y}


def main():
    import paddle.fluid as fluid
    params, batches = data()
    out = {'param_' + k: v for k, v in params.items()}
    for s, (x, ids, y) in enumerate(batches):
        out['x_%d' % s], out['ids_%d' % s], out['y_%d' % s] = x, ids, y
    for case in CASES:
        prog, startup, loss = build(fluid, case)
        exe = fluid.Executor(fluid.CPUPlace())
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            exe.run(startup)
            for k in params_of(case):
                scope.find_var(k).get_tensor().set(params[k], fluid.CPUPlace())
            losses = []
            for b in batches:
                l, = exe.run(prog, feed=feed_of(case, b), fetch_list=[loss])
                losses.append(float(np.asarray(l).reshape(-1)[0]))
            out['loss_' + case] = np.array(losses, 'float32')
            for k in params_of(case):
                out['final_%s_%s' % (case, k)] = np.array(scope.find_var(k).get_tensor())
        print(case, losses[0], losses[-1])
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)


if __name__ == '__main__':
    main()
