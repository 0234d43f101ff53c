"""Writes resize/expected.npz: Paddle 1.8.5's outputs of image_resize, interpolate,
resize_bilinear and resize_nearest (each alignment, scale, NHWC, SizeTensor and
actual_shape), pixel_shuffle, shuffle_channel and space_to_depth, and the gradients of their inputs under sum(out^2), from append_backward.
`build(fluid)` is shared with tests/python/test_resize.py. Run with PaddlePaddle 1.8.5
(README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'resize')
SHAPES = [[2, 3, 4, 5], [2, 3, 4, 5], [1, 2, 4, 6], [2, 3, 4, 5], [1, 2, 3, 4],
          [2, 4, 5, 3], [1, 2, 4, 5], [1, 2, 4, 5], [2, 8, 2, 3], [2, 6, 2, 2], [1, 8, 4, 6]]


def data():
    rng = np.random.RandomState(20)
    d = {'x%d' % i: rng.uniform(-1, 1, s).astype('float32') for i, s in enumerate(SHAPES)}
    d['h'] = np.array([7], 'int32')
    d['actual'] = np.array([6, 2], 'int32')
    return d


def build(fluid):
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = []
        for i, s in enumerate(SHAPES):
            v = fluid.data('x%d' % i, s, 'float32')
            v.stop_gradient = False
            x.append(v)
        h = fluid.data('h', [1], 'int32')
        actual = fluid.data('actual', [2], 'int32')
        outs = [
            L.resize_bilinear(x[0], [5, 7]),
            L.resize_bilinear(x[1], [7, 3], align_corners=False, align_mode=0),
            L.resize_bilinear(x[2], scale=1.5, align_corners=False, align_mode=1),
            L.resize_nearest(x[3], [6, 3]),
            L.resize_nearest(x[4], scale=2.0, align_corners=False),
            L.image_resize(x[5], [4, 7], data_format='NHWC', align_corners=False,
                           align_mode=0),
            L.interpolate(x[6], out_shape=[h, 4], resample='NEAREST'),
            L.resize_bilinear(x[7], out_shape=[3, 3], actual_shape=actual),
            L.pixel_shuffle(x[8], 2),
            L.shuffle_channel(x[9], 3),
            L.space_to_depth(x[10], 2),
        ]
        total = L.sums([L.reduce_sum(L.square(o)) for o in outs])
        fluid.backward.append_backward(total)
        grads = [main.global_block().var('x%d@GRAD' % i) for i in range(len(SHAPES))]
    return main, startup, outs, grads


def main_():
    import paddle.fluid as fluid
    main, startup, outs, grads = build(fluid)
    print([op.type for op in main.global_block().ops])
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        vals = exe.run(main, feed=data(), fetch_list=outs + grads)
    ref = {'v%d' % i: np.asarray(v) for i, v in enumerate(vals)}
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **ref)
    for k in sorted(ref):
        print(k, ref[k].shape)


if __name__ == '__main__':
    main_()
