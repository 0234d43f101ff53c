"""Writes conditional_block/: a Paddle 1.8.5 program with conditional_block ops
(is_scalar_condition true and false, one nested in another's sub-block, sub-blocks
writing block 0's variables through `assign`), its inputs and Paddle's outputs for
every combination of the conditions. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.layers.control_flow import ConditionalBlock

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'conditional_block')


def build():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [2, 3], 'float32')
        c = fluid.data('c', [1], 'bool')
        nc = fluid.data('nc', [1], 'bool')
        e = fluid.data('e', [-1, 3], 'float32')
        y = fluid.layers.fill_constant([2, 3], 'float32', 0.0)
        # if c: t = 2x; y = t + x; if nc: y = (t + x) + t
        outer = ConditionalBlock([c], is_scalar_condition=True)
        with outer.block():
            t = fluid.layers.scale(x, 2.0)
            t2 = fluid.layers.elementwise_add(t, x)
            fluid.layers.assign(t2, y)
            inner = ConditionalBlock([nc], is_scalar_condition=True)
            with inner.block():
                fluid.layers.assign(fluid.layers.elementwise_add(t2, t), y)
        # if nc: y = -x
        other = ConditionalBlock([nc], is_scalar_condition=True)
        with other.block():
            fluid.layers.assign(fluid.layers.scale(x, -1.0), y)
        # Not scalar: Cond is [e], but Paddle runs the block when its Input (x) is not empty.
        w = fluid.layers.fill_constant([2, 3], 'float32', 7.0)
        by_inputs = ConditionalBlock([e])
        with by_inputs.block():
            fluid.layers.assign(fluid.layers.scale(x, 5.0), w)
        z = fluid.layers.scale(y, 1.0)
    return main, startup, z.name, w.name


def main():
    prog, startup, z, w = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    x = np.arange(6, dtype='float32').reshape(2, 3) + 1
    out = {'x': x}
    for c in (True, False):
        for nc in (True, False):
            for rows in (0, 2):
                key = '%d%d%d' % (c, nc, rows)
                zv, wv = exe.run(prog, feed={'x': x, 'c': np.array([c]), 'nc': np.array([nc]),
                                             'e': np.ones((rows, 3), 'float32')},
                                 fetch_list=[z, w])
                out[key + '_z'], out[key + '_w'] = zv, wv
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, 'program.pdmodel'), 'wb') as f:
        f.write(prog.desc.serialize_to_string())
    with open(os.path.join(OUT, 'fetch.txt'), 'w') as f:
        f.write('%s %s\n' % (z, w))
    np.savez(os.path.join(OUT, 'expected.npz'), **out)


if __name__ == '__main__':
    main()
