"""Writes sequence_ops/: Paddle 1.8.5's outputs (values and sequence lengths) and input
gradients for the sequence layers sequence_first_step, sequence_last_step,
sequence_reverse, sequence_expand (with and without LoD on x), sequence_expand_as,
sequence_pad (longest and fixed length, one pad value and one pad step),
sequence_unpad, sequence_enumerate, sequence_concat, sequence_slice and
sequence_reshape. `build(fluid, case)` (shared with
tests/python/test_sequence_ops.py) makes one program per case: the layer on seeded LoD
inputs, then the sum of the squared output (weighted by position) minimized by SGD with
a zero rate, so that the input gradient can be fetched. Run with PaddlePaddle 1.8.5
(README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'sequence_ops')
X_LENS = [3, 1, 4, 2]
Y_LENS = [2, 1, 3, 2]
CASES = ('first', 'last', 'reverse', 'expand', 'expand_rows', 'expand_as', 'pad',
         'pad_step', 'unpad', 'enumerate', 'concat', 'slice', 'reshape')


def inputs():
    rng = np.random.RandomState(9)
    return {'x': rng.randn(sum(X_LENS), 3).astype('float32'),
            'y': rng.randn(sum(Y_LENS), 1).astype('float32'),
            'z': rng.randn(len(Y_LENS), 3).astype('float32'),
            'ids': rng.randint(1, 50, size=(sum(X_LENS), 1)).astype('int64')}


def feed(fluid, data):
    place = fluid.CPUPlace()
    return {'x': fluid.create_lod_tensor(data['x'], [X_LENS], place),
            'y': fluid.create_lod_tensor(data['y'], [Y_LENS], place),
            'z': data['z'],
            'ids': fluid.create_lod_tensor(data['ids'], [X_LENS], place)}


def build(fluid, case):
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 3], 'float32', lod_level=1)
        y = fluid.data('y', [None, 1], 'float32', lod_level=1)
        z = fluid.data('z', [None, 3], 'float32')
        ids = fluid.data('ids', [None, 1], 'int64', lod_level=1)
        x.stop_gradient = False
        z.stop_gradient = False
        wrt = x
        if case == 'first':
            out = L.sequence_first_step(x)
        elif case == 'last':
            out = L.sequence_last_step(x)
        elif case == 'reverse':
            out = L.sequence_reverse(x)
        elif case == 'expand':
            out = L.sequence_expand(x, y)
        elif case == 'expand_rows':
            out, wrt = L.sequence_expand(z, y), z
        elif case == 'expand_as':
            out, wrt = L.sequence_expand_as(z, y), z
        elif case == 'pad':
            out, _ = L.sequence_pad(x, L.fill_constant([1], 'float32', -1.5))
        elif case == 'pad_step':
            out, _ = L.sequence_pad(x, L.assign(np.array([0.5, -2.0, 3.0], 'float32')),
                                    maxlen=6)
        elif case == 'unpad':
            padded, length = L.sequence_pad(x, L.fill_constant([1], 'float32', 0.0))
            out = L.sequence_unpad(L.scale(padded, 2.0), length)
        elif case == 'concat':
            out = L.sequence_concat([x, L.sequence_expand_as(z, y), L.sequence_reverse(x)])
        elif case == 'slice':
            out = L.sequence_slice(x, L.assign(np.array([[1], [0], [2], [0]], 'int64')),
                                   L.assign(np.array([[2], [1], [1], [2]], 'int64')))
        elif case == 'reshape':
            out = L.sequence_reshape(L.concat([x, x], axis=1), 2)
        elif case == 'enumerate':
            return main, startup, [L.sequence_enumerate(ids, 3, pad_value=0)]
        weighted = L.elementwise_mul(out, L.sqrt(L.abs(out) + 1.0))
        loss = L.reduce_sum(L.square(weighted))
        fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
    return main, startup, [out, wrt.name + '@GRAD']


def main():
    import paddle.fluid as fluid
    data = inputs()
    res = dict(data)
    exe = fluid.Executor(fluid.CPUPlace())
    for case in CASES:
        prog, startup, fetch = build(fluid, case)
        with fluid.scope_guard(fluid.Scope()):
            exe.run(startup)
            vals = exe.run(prog, feed=feed(fluid, data), fetch_list=fetch, return_numpy=False)
        res[case + '_out'] = np.array(vals[0])
        res[case + '_lens'] = np.array(sum(vals[0].recursive_sequence_lengths(), []) or [-1])
        if len(vals) > 1:
            res[case + '_grad'] = np.array(vals[1])
        print(case, res[case + '_out'].shape, res[case + '_lens'])
    os.makedirs(OUT, exist_ok=True)
    np.savez_compressed(os.path.join(OUT, 'expected.npz'), **res)


if __name__ == '__main__':
    main()
