"""Writes sequence_softmax/: Paddle 1.8.5's sequence_softmax output and input gradient.

`build(fluid)` (also used by tests/python/test_sequence_softmax.py with rill) makes one
program: LoD scores x [T, 1] (float64) plus a parameter b (0, so the scores are x) ->
layers.sequence_softmax -> the sum of its product with fixed weights w, minimized by SGD
with a zero rate; it fetches Out and the gradient of the scores.
The file holds x, w and Paddle's two fetches. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'sequence_softmax')
SEQ_LENS = [3, 1, 0, 6, 2]


def build(fluid):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 1], 'float64', lod_level=1)
        w = fluid.data('w', [None, 1], 'float64')
        b = fluid.layers.create_parameter(
            [1], 'float64', name='b', default_initializer=fluid.initializer.Constant(0.0))
        scores = fluid.layers.elementwise_add(x, b)
        out = fluid.layers.sequence_softmax(scores)
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(out, w))
        fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
    return main, startup, [out.name, scores.name + '@GRAD']


def inputs():
    rng = np.random.RandomState(5)
    t = sum(SEQ_LENS)
    return {'x': rng.randn(t, 1) * 3, 'w': rng.randn(t, 1)}


def main():
    import paddle.fluid as fluid
    prog, startup, fetch = build(fluid)
    data = inputs()
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    exe.run(startup)
    feed = {'x': fluid.create_lod_tensor(data['x'], [SEQ_LENS], place), 'w': data['w']}
    out, dx = exe.run(prog, feed=feed, fetch_list=fetch, return_numpy=False)
    os.makedirs(OUT, exist_ok=True)
    np.savez_compressed(os.path.join(OUT, 'expected.npz'), out=np.asarray(out),
                        dx=np.asarray(dx), **data)


if __name__ == '__main__':
    main()
