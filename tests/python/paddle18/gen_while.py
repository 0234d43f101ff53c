"""Writes while/: a Paddle 1.8.5 program with a `while` loop over a tensor array (each
step reads the last item, writes the next, accumulates into a block-0 variable and
updates the condition), array_length and array_read after the loop, its inputs and
Paddle's outputs for several loop counts (a long run before a short one: the array
starts empty at every run). Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np
import paddle.fluid as fluid

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'while')
COUNTS = (4, 2, 0, 1)


def build():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [2, 3], 'float32')
        n = fluid.data('n', [1], 'int64')
        i = fluid.layers.fill_constant([1], 'int64', 0)
        arr = fluid.layers.create_array('float32')
        fluid.layers.array_write(x, i, array=arr)
        acc = fluid.layers.fill_constant([2, 3], 'float32', 0.0)
        cond = fluid.layers.less_than(i, n)
        loop = fluid.layers.While(cond)
        with loop.block():
            prev = fluid.layers.array_read(arr, i)
            nxt = fluid.layers.scale(prev, 0.5, bias=1.0)
            fluid.layers.increment(i, in_place=True)
            fluid.layers.array_write(nxt, i, array=arr)
            fluid.layers.assign(fluid.layers.elementwise_add(acc, nxt), acc)
            fluid.layers.less_than(i, n, cond=cond)
        length = fluid.layers.array_length(arr)
        last = fluid.layers.array_read(arr, i)
    return main, startup, [i.name, length.name, last.name, acc.name]


def main():
    prog, startup, fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    x = np.arange(6, dtype='float32').reshape(2, 3) - 2
    out = {'x': x}
    for k in COUNTS:
        vals = exe.run(prog, feed={'x': x, 'n': np.array([k], 'int64')}, fetch_list=fetch)
        for name, v in zip(('i', 'length', 'last', 'acc'), vals):
            out['%d_%s' % (k, name)] = np.asarray(v)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, 'program.pdmodel'), 'wb') as f:
        f.write(prog.desc.serialize_to_string())
    with open(os.path.join(OUT, 'fetch.txt'), 'w') as f:
        f.write(' '.join(fetch) + '\n')
    np.savez(os.path.join(OUT, 'expected.npz'), **out)


if __name__ == '__main__':
    main()
