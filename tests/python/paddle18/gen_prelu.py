"""Writes prelu/: Paddle 1.8.5's numbers for layers.prelu in each mode. `build(fluid,
mode)` (shared with tests/python/test_prelu.py) puts prelu (alpha starting at Paddle's
0.25) before a mean of squares trained with SGD; recorded per mode: the output, x@GRAD
and the alpha gradient at every step, the losses and the trained alpha. Run with
PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'prelu')
STEPS = 3
MODES = (('all', [2, 3, 2, 2]), ('channel', [2, 3, 2, 2]), ('channel', [4, 5]),
         ('element', [2, 3, 2]))


def build(fluid, mode, shape):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', shape, 'float32')
        x.stop_gradient = False
        y = fluid.layers.prelu(x, mode, param_attr=fluid.ParamAttr(name='alpha'))
        loss = fluid.layers.mean(fluid.layers.square(y - 0.5))
        fluid.optimizer.SGD(learning_rate=2.0).minimize(loss)
    return main, startup, y, loss


def batches(shape):
    rng = np.random.RandomState(5)
    return [rng.randn(*shape).astype('float32') for _ in range(STEPS)]


def main():
    import paddle.fluid as fluid
    out = {}
    exe = fluid.Executor(fluid.CPUPlace())
    for k, (mode, shape) in enumerate(MODES):
        prog, startup, y, loss = build(fluid, mode, shape)
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            exe.run(startup)
            for step, x in enumerate(batches(shape)):
                vals = exe.run(prog, feed={'x': x}, fetch_list=[loss, y, 'x@GRAD', 'alpha@GRAD'])
                for name, v in zip(('loss', 'out', 'xgrad', 'agrad'), vals):
                    out['%d_%s_%d' % (k, name, step)] = np.asarray(v)
            out['%d_alpha' % k] = np.array(scope.find_var('alpha').get_tensor())
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)
    print({k: v for k, v in out.items() if 'loss' in k or 'alpha' in k})


if __name__ == '__main__':
    main()
