"""Writes tensor_manip/: Paddle 1.8.5's outputs and input gradients of the tensor-
manipulation layers (gather, scatter, stack, flip, roll, cumsum, tril, ...).

`build(fluid, name)` (also used by tests/python/test_tensor_manip.py with rill) makes one
program per case of CASES: float64 inputs x [3, 4] and y [3, 4] plus zero parameters
(so the layer sees x and y and their gradients are fetched), the layer, and for float
outputs the loss sum(out_i * w_i) over fixed weights fed as w0, w1, ..., minimized by SGD
with a zero rate. It returns the program, its startup, the fetch list (outputs, then
the gradients of x and y that exist) and the shapes of the weights.
The file holds x, y, the weights and every fetch. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'tensor_manip')


def _i64(L, v):
    return L.assign(np.array(v, 'int64'))


def _i32(L, v):
    return L.assign(np.array(v, 'int32'))


def _f32(L, layer, x, **kw):
    """layer on x as float32 (Paddle 1.8.5's crop takes no other dtype), back in float64."""
    return L.cast(layer(L.cast(x, 'float32'), **kw), 'float64')


# name -> the layer call on (L, x, y)
CASES = {
    'gather_overwrite': lambda L, x, y: L.gather(x, _i64(L, [2, 0, 2])),
    'gather_accumulate': lambda L, x, y: L.gather(x, _i32(L, [[2], [0], [2]]), overwrite=False),
    'gather_nd': lambda L, x, y: L.gather_nd(x, _i64(L, [[2, 1], [0, 3], [2, 1]])),
    'gather_nd_rows': lambda L, x, y: L.gather_nd(x, _i32(L, [[[1]], [[0]]])),
    'scatter': lambda L, x, y: L.scatter(x, _i64(L, [2, 0]), L.slice(y, [0], [0], [2])),
    'scatter_repeated': lambda L, x, y: L.scatter(x, _i64(L, [1, 1]), L.slice(y, [0], [1], [3]),
                                                  overwrite=False),
    'scatter_nd_add': lambda L, x, y: L.scatter_nd_add(
        x, _i64(L, [[1, 2], [0, 0], [1, 2]]), L.reshape(L.slice(y, [0, 1], [0, 0], [1, 3]), [3])),
    'scatter_nd': lambda L, x, y: L.scatter_nd(
        _i64(L, [[2], [0], [2]]), L.slice(y, [0], [0], [3]), [3, 4]),
    'stack_axis1': lambda L, x, y: L.stack([x, y], axis=1),
    'stack_last': lambda L, x, y: L.stack([x, y, x], axis=-1),
    'unstack': lambda L, x, y: L.unstack(x, axis=1),
    'unstack_rows': lambda L, x, y: L.unstack(y),
    'flip': lambda L, x, y: L.flip(x, [0, 1]),
    'reverse': lambda L, x, y: L.reverse(x, 1),
    'roll_dims': lambda L, x, y: L.roll(x, [1, -2], [0, 1]),
    'roll_flat': lambda L, x, y: L.roll(x, 5),
    'argmin': lambda L, x, y: L.argmin(x, axis=1),
    'cumsum': lambda L, x, y: L.cumsum(x, axis=0),
    'cumsum_exclusive_reverse': lambda L, x, y: L.cumsum(x, exclusive=True, reverse=True),
    'tril': lambda L, x, y: L.tril(x, 1),
    'triu': lambda L, x, y: L.triu(x, -1),
    'index_select': lambda L, x, y: L.index_select(x, _i64(L, [3, 1, 3]), dim=1),
    'index_select_rows': lambda L, x, y: L.index_select(y, _i32(L, [2, 2, 0, 1])),
    'index_sample': lambda L, x, y: L.index_sample(x, _i64(L, [[3, 0], [1, 1], [2, 0]])),
    'expand_as': lambda L, x, y: L.expand_as(L.slice(x, [0], [1], [2]), L.concat([y, y], 1)),
    'pad': lambda L, x, y: L.pad(x, [1, 0, 0, 2], 1.5),
    'pad_constant_like': lambda L, x, y: L.pad_constant_like(
        L.concat([x, y], 0), L.slice(y, [1], [1], [3]), -1.0),
    'pad2d_constant': lambda L, x, y: L.pad2d(L.reshape(x, [1, 1, 3, 4]), [1, 0, 2, 1],
                                              pad_value=0.5),
    'pad2d_reflect': lambda L, x, y: L.pad2d(L.reshape(x, [1, 3, 4, 1]), [2, 1, 1, 2],
                                             mode='reflect', data_format='NHWC'),
    'pad2d_edge': lambda L, x, y: L.pad2d(L.reshape(x, [1, 1, 3, 4]), [1, 2, 3, 0], mode='edge'),
    'kron': lambda L, x, y: L.kron(x, L.slice(y, [0, 1], [0, 0], [2, 3])),
    'kron_ranks': lambda L, x, y: L.kron(L.reshape(x, [12]), L.slice(y, [0], [0], [2])),
    'trace': lambda L, x, y: L.trace(x),
    'trace_offset': lambda L, x, y: L.trace(L.reshape(x, [3, 2, 2]), offset=-1, dim1=-1, dim2=0),
    'crop': lambda L, x, y: _f32(L, L.crop, x, shape=[2, 2], offsets=[1, 1]),
    'crop_like': lambda L, x, y: _f32(L, L.crop, x, shape=L.slice(y, [1], [0], [3]),
                                      offsets=[0, 1]),
    'crop_tensor': lambda L, x, y: L.crop_tensor(x, shape=[2, -1], offsets=[1, 1]),
    'crop_tensor_vars': lambda L, x, y: L.crop_tensor(
        x, shape=[L.fill_constant([1], 'int32', 2), 3], offsets=[0, L.fill_constant([1], 'int32', 1)]),
}

# Cases whose outputs are only compared (no loss, no gradients): constants, integer or
# bool results, and layers whose outputs Paddle marks stop_gradient.
FORWARD = {
    'range_float': lambda L, x, y: L.range(0.5, 2.0, 0.3, 'float64'),
    'range_int': lambda L, x, y: L.range(10, -3, -4, 'int64'),
    'range_var': lambda L, x, y: L.range(L.fill_constant([1], 'int32', 2), 9, 3, 'int32'),
    'arange': lambda L, x, y: L.arange(0, 5),
    'linspace': lambda L, x, y: L.linspace(1.0, 2.0, 5, 'float64'),
    'linspace_f32': lambda L, x, y: L.linspace(0, 1, 7, 'float32'),
    'full_like': lambda L, x, y: L.full_like(x, 2.5),
    'full_like_int': lambda L, x, y: L.full_like(x, 3, dtype='int32'),
    'ones_like': lambda L, x, y: L.ones_like(y),
    'diag': lambda L, x, y: L.diag(np.array([1.5, -2, 3], 'float32')),
    'diag_int': lambda L, x, y: L.diag(np.array([4, 5], 'int64')),
    'eye': lambda L, x, y: L.eye(2, 3, dtype='int64'),
    'eye_batch': lambda L, x, y: L.eye(2, batch_shape=[3]),
    'size': lambda L, x, y: L.size(x),
    'reduce_all': lambda L, x, y: L.reduce_all(L.greater_than(x, y), dim=1),
    'reduce_any': lambda L, x, y: L.reduce_any(L.greater_than(x, y), dim=[0], keep_dim=True),
    'reduce_all_every_dim': lambda L, x, y: L.reduce_all(L.greater_than(x, y)),
    'has_inf': lambda L, x, y: L.has_inf(x),
    'has_nan': lambda L, x, y: L.has_nan(L.sqrt(x)),
    'isfinite': lambda L, x, y: L.isfinite(x),
    'where': lambda L, x, y: L.where(L.greater_than(x, y)),
    'argsort': lambda L, x, y: L.argsort(x, axis=0, descending=True),
    'argsort_last': lambda L, x, y: L.argsort(y),
    'unique': lambda L, x, y: L.unique(L.assign(np.array([2., 3, 3, 1, 5, 3], 'float32'))),
    'unique_with_counts': lambda L, x, y: L.unique_with_counts(
        L.assign(np.array([7, 7, 1, 9, 1, 7], 'int64')), dtype='int64'),
}
CASES.update(FORWARD)

# Outputs whose shape Paddle leaves unknown when the program is built: the weights'.
OUT_SHAPES = {'expand_as': [3, 8], 'crop_tensor': [2, 3], 'crop_tensor_vars': [2, 3]}


def build(fluid, name):
    return build_layer(fluid, CASES[name], name in FORWARD, OUT_SHAPES.get(name))


def build_layer(fluid, layer, forward=False, out_shape=None):
    """build's program for the layer call layer(L, x, y); forward: compare the outputs
    only; out_shape: the weights' shape where Paddle leaves the output's unknown."""
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xd = fluid.data('x', [3, 4], 'float64')
        yd = fluid.data('y', [3, 4], 'float64')
        zero = fluid.initializer.Constant(0.0)
        x = L.elementwise_add(xd, L.create_parameter([1], 'float64', name='bx',
                                                     default_initializer=zero))
        y = L.elementwise_add(yd, L.create_parameter([1], 'float64', name='by',
                                                     default_initializer=zero))
        out = layer(L, x, y)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        shapes, terms = [], []
        for i, o in enumerate(outs):
            if o.dtype != xd.dtype or forward:
                continue
            shape = out_shape or list(o.shape)
            w = fluid.data('w%d' % i, shape, 'float64')
            shapes.append(shape)
            terms.append(L.reduce_sum(L.elementwise_mul(o, w)))
        fetch = [o.name for o in outs]
        if terms:
            loss = L.sums(terms) if len(terms) > 1 else terms[0]
            fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
            blk = main.global_block()
            fetch += [v.name + '@GRAD' for v in (x, y) if blk.has_var(v.name + '@GRAD')]
    return main, startup, fetch, shapes


def inputs():
    rng = np.random.RandomState(11)
    return {'x': np.round(rng.randn(3, 4) * 4, 2), 'y': np.round(rng.randn(3, 4) * 4, 2)}


def weights(shapes):
    rng = np.random.RandomState(13)
    return {'w%d' % i: rng.randn(*s) for i, s in enumerate(shapes)}


def record(fluid, build_case, names, out_dir):
    """Runs build_case(fluid, name) for each name on inputs() and the weights, and writes
    x, y and every fetch (with each case's fetch count) to out_dir/expected.npz."""
    data = inputs()
    saved = dict(data)
    for name in names:
        prog, startup, fetch, shapes = build_case(fluid, name)
        exe = fluid.Executor(fluid.CPUPlace())
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            exe.run(startup)
            feed = dict(data, **weights(shapes))
            got = exe.run(prog, feed=feed, fetch_list=fetch)
        saved['%s.count' % name] = np.array(len(got))
        for i, v in enumerate(got):
            saved['%s.%d' % (name, i)] = np.asarray(v)
    os.makedirs(out_dir, exist_ok=True)
    np.savez_compressed(os.path.join(out_dir, 'expected.npz'), **saved)


def main():
    import paddle.fluid as fluid
    record(fluid, build, CASES, OUT)


if __name__ == '__main__':
    main()
