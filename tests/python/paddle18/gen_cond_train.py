"""Writes cond_train/: SGD training through layers.cond in Paddle 1.8.5. The predicate
(mean of the batch above zero) picks one of two fc branches (a linear one and a tanh
one, each with its own parameters); the loss is the mean squared error against a
target. Holds the starting parameters, the seeded batches (alternating signs, so both
branches run and each is skipped in some step), Paddle's loss at every step and the
parameters after the last. `build(fluid)` is shared with tests/python/test_cond_grad.py,
which builds the same program with rill. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'cond_train')
STEPS = 6
PARAMS = ('wt', 'bt', 'wf', 'bf')


def build(fluid):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [4, 3], 'float32')
        y = fluid.data('y', [4, 2], 'float32')
        s = fluid.layers.reshape(fluid.layers.reduce_mean(x), [1])
        pred = fluid.layers.less_than(fluid.layers.fill_constant([1], 'float32', 0.0), s)

        def true_fn():
            return fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(name='wt'),
                                   bias_attr=fluid.ParamAttr(name='bt'))

        def false_fn():
            return fluid.layers.fc(x, 2, act='tanh', param_attr=fluid.ParamAttr(name='wf'),
                                   bias_attr=fluid.ParamAttr(name='bf'))

        out = fluid.layers.cond(pred, true_fn, false_fn)
        loss = fluid.layers.reduce_mean(fluid.layers.square(out - y))
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return main, startup, loss


def data():
    rng = np.random.RandomState(7)
    params = {'wt': rng.randn(3, 2).astype('float32'), 'bt': rng.randn(2).astype('float32'),
              'wf': rng.randn(3, 2).astype('float32'), 'bf': rng.randn(2).astype('float32')}
    batches = []
    for step in range(STEPS):
        sign = 1.0 if step % 3 != 1 else -1.0
        x = (rng.rand(4, 3) + 0.1).astype('float32') * sign
        y = rng.randn(4, 2).astype('float32')
        batches.append((x, y))
    return params, batches


def main():
    import paddle.fluid as fluid
    prog, startup, loss = build(fluid)
    params, batches = data()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.global_scope()
    exe.run(startup)
    for k, v in params.items():
        scope.find_var(k).get_tensor().set(v, fluid.CPUPlace())
    out = {'param_' + k: v for k, v in params.items()}
    for step, (x, y) in enumerate(batches):
        out['x_%d' % step], out['y_%d' % step] = x, y
        l, = exe.run(prog, feed={'x': x, 'y': y}, fetch_list=[loss])
        out['loss_%d' % step] = np.asarray(l)
    for k in PARAMS:
        out['final_' + k] = np.array(scope.find_var(k).get_tensor())
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)


if __name__ == '__main__':
    main()
