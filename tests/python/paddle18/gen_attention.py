"""Writes attention/: Paddle 1.8.5's nets.scaled_dot_product_attention with one and with
two heads (`build(fluid, heads)`, shared with tests/python/test_small_layers.py): the
parameters in creation order (seeded values set before running), the inputs, the output
and the gradient of the queries under a sum of squares. Run with PaddlePaddle 1.8.5
(README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'attention')


def build(fluid, heads):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        q = fluid.data('q', [2, 3, 4], 'float32')
        k = fluid.data('k', [2, 5, 4], 'float32')
        v = fluid.data('v', [2, 5, 6], 'float32')
        q.stop_gradient = False
        out = fluid.nets.scaled_dot_product_attention(q, k, v, num_heads=heads)
        loss = fluid.layers.reduce_sum(fluid.layers.square(out))
        fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
    return main, startup, [out, 'q@GRAD']


def inputs():
    rng = np.random.RandomState(2)
    return {'q': rng.randn(2, 3, 4).astype('float32'), 'k': rng.randn(2, 5, 4).astype('float32'),
            'v': rng.randn(2, 5, 6).astype('float32')}


def params(main):
    rng = np.random.RandomState(8)
    return [rng.randn(*p.shape).astype('float32') * 0.5 for p in main.global_block().all_parameters()]


def main():
    import paddle.fluid as fluid
    res = dict(inputs())
    exe = fluid.Executor(fluid.CPUPlace())
    for heads in (1, 2):
        with fluid.unique_name.guard():
            prog, startup, fetch = build(fluid, heads)
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            exe.run(startup)
            for p, val in zip(prog.global_block().all_parameters(), params(prog)):
                scope.find_var(p.name).get_tensor().set(val, fluid.CPUPlace())
            out, g = exe.run(prog, feed=inputs(), fetch_list=fetch)
        res['out_%d' % heads], res['grad_%d' % heads] = np.asarray(out), np.asarray(g)
        res['nparams_%d' % heads] = np.array(len(prog.global_block().all_parameters()))
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **res)
    print({k: v.shape for k, v in res.items()})


if __name__ == '__main__':
    main()
