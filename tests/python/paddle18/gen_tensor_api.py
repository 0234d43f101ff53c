"""Writes tensor_api/: Paddle 1.8.5's outputs and input gradients of Fluid 1.8's
tensor-style layers (logsumexp, clamp, addcmul, t, nonzero, strided_slice, ...).

Each case is built by gen_tensor_manip.build_layer (also used by
tests/python/test_tensor_api.py with rill): float64 inputs x [3, 4] and y [3, 4], the
layer, and for float outputs the loss sum(out_i * w_i) over fixed weights, minimized by
SGD with a zero rate so the gradients of x and y are fetched. The file holds x, y and
every fetch. Run with PaddlePaddle 1.8.5 (README.md)."""
import importlib
import os

import numpy as np

import gen_tensor_manip as manip

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'tensor_api')


def _f64(L, v):
    return L.cast(L.assign(np.array(v, 'float32')), 'float64')


def _op(L, op, x, attrs):
    """Appends op (Input x -> Out) with attrs, for attributes the layer does not set."""
    blk = x.block.program.current_block()
    kw = {'infer': True} if L.__name__.startswith('rill') else {}
    out = blk.create_var(name=x.name + '.' + op, dtype=x.dtype, **kw)
    blk.append_op(type=op, inputs={'Input': [x]}, outputs={'Out': [out]}, attrs=attrs)
    return out


def _i32(L, v):
    return L.fill_constant([1], 'int32', v)


def _btp(L, x, y, bias=True):
    """bilinear_tensor_product of x [3, 4] and y[:, :3] with seeded parameters, in float32
    (Paddle 1.8.5's NumpyArrayInitializer takes no float64)."""
    fluid = importlib.import_module(L.__name__.rsplit('.', 1)[0])
    rng = np.random.RandomState(21)
    init = fluid.initializer.NumpyArrayInitializer
    w = fluid.ParamAttr(initializer=init(np.round(rng.randn(2, 4, 3), 2).astype('float32')))
    b = fluid.ParamAttr(initializer=init(np.array([[0.5, -0.25]], 'float32'))) if bias else False
    out = L.bilinear_tensor_product(L.cast(x, 'float32'), L.cast(L.slice(y, [1], [0], [3]),
                                                                  'float32'),
                                    2, param_attr=w, bias_attr=b)
    return L.cast(out, 'float64')


# name -> the layer call on (L, x, y)
CASES = {
    'logsumexp': lambda L, x, y: L.logsumexp(x),
    'logsumexp_dim': lambda L, x, y: L.logsumexp(x, dim=[1], keepdim=True),
    'logsumexp_dim0': lambda L, x, y: L.logsumexp(x, dim=0),
    'clamp': lambda L, x, y: L.clamp(x, min=-1.5, max=2.0),
    'clamp_min': lambda L, x, y: L.clamp(x, min=0.5),
    'clamp_var': lambda L, x, y: L.clamp(x, min=_f64(L, [-2.0]), max=_f64(L, [1.0])),
    'addcmul': lambda L, x, y: L.addcmul(x, y, x, value=0.5),
    'addcmul_broadcast': lambda L, x, y: L.addcmul(x, y, L.slice(x, [0], [0], [1])),
    't': lambda L, x, y: L.t(x),
    't_vector': lambda L, x, y: L.t(L.reshape(x, [12])),
    'strided_slice': lambda L, x, y: L.strided_slice(x, [0, 1], [0, 3], [3, 0], [2, -2]),
    # Paddle 1.8.5 gives elements 7, 4, 1 here (Python's x[11:0:-3] is 11, 8, 5, 2)
    'strided_slice_uneven': lambda L, x, y: L.strided_slice(L.reshape(x, [12]), [0], [11],
                                                            [0], [-3]),
    'strided_slice_through_0': lambda L, x, y: L.strided_slice(x, [1], [-1], [-1], [-1]),
    'strided_slice_clamped': lambda L, x, y: L.strided_slice(x, [0, 1], [-10, 1], [10, 100],
                                                             [2, 2]),
    'strided_slice_far': lambda L, x, y: L.strided_slice(x, [1], [20], [-20], [-3]),
    'bmm': lambda L, x, y: L.bmm(L.reshape(x, [3, 2, 2]), L.reshape(y, [3, 2, 2])),
    'bmm_rect': lambda L, x, y: L.bmm(L.reshape(x, [1, 3, 4]), L.reshape(y, [1, 4, 3])),
    'dot': lambda L, x, y: L.dot(x, y),
    'dot_1d': lambda L, x, y: L.dot(L.reshape(x, [12]), L.reshape(y, [12])),
    'cross': lambda L, x, y: L.cross(x, y),
    'cross_dim': lambda L, x, y: L.cross(L.reshape(x, [2, 3, 2]), L.reshape(y, [2, 3, 2]), dim=-2),
    'dist': lambda L, x, y: L.dist(x, y),
    'dist_broadcast': lambda L, x, y: L.dist(x, L.slice(y, [0], [1], [2]), 3.5),
    'dist_p1': lambda L, x, y: L.dist(L.reshape(x, [3, 1, 4]), L.reshape(y, [3, 4]), 1),
    'dist_p0': lambda L, x, y: L.dist(x, L.clamp(x, min=0.0), 0),
    'dist_inf': lambda L, x, y: L.dist(x, y, float('inf')),
    'dist_neg_inf': lambda L, x, y: L.dist(x, y, float('-inf')),
    'addmm': lambda L, x, y: L.addmm(L.slice(x, [1], [0], [3]), x, L.t(y), alpha=0.5,
                                     beta=2.0),
    'addmm_row': lambda L, x, y: L.addmm(L.slice(L.t(y), [0], [1], [2]), x, L.t(y)),
    'addmm_col': lambda L, x, y: L.addmm(L.slice(x, [1], [2], [3]), x, L.t(y), beta=-1.0),
    'meshgrid': lambda L, x, y: L.meshgrid([L.reshape(x, [12]),
                                            L.reshape(L.slice(y, [0], [0], [1]), [4]),
                                            L.reshape(L.slice(x, [1], [0], [1]), [3])]),
    'multiplex': lambda L, x, y: L.multiplex([x, y, L.scale(x, -2.0)],
                                             L.assign(np.array([[2], [0], [1]], 'int32'))),
    'image_resize_short': lambda L, x, y: L.image_resize_short(L.reshape(x, [1, 1, 3, 4]), 5),
    'image_resize_short_nearest': lambda L, x, y: L.image_resize_short(
        L.reshape(y, [1, 1, 4, 3]), 2, resample='NEAREST'),
    'add_position_encoding': lambda L, x, y: L.add_position_encoding(
        L.reshape(x, [1, 3, 4]), alpha=0.5, beta=2.0),
    'add_position_encoding_p2': lambda L, x, y: L.add_position_encoding(
        L.reshape(y, [2, 3, 2]), alpha=1.0, beta=0.25),
    'npair_loss': lambda L, x, y: L.cast(L.npair_loss(
        L.cast(x, 'float32'), L.cast(y, 'float32'),
        L.assign(np.array([1, 0, 1], 'int64')), l2_reg=0.01), 'float64'),
    'bilinear_tensor_product': lambda L, x, y: _btp(L, x, y),
    'bilinear_tensor_product_nobias': lambda L, x, y: _btp(L, x, y, bias=False),
    'strided_slice_vars': lambda L, x, y: L.strided_slice(
        x, [0, 1], [_i32(L, 2), 0], [-4, _i32(L, 4)], [-1, _i32(L, 3)]),
}

# Paddle 1.8.5's strided_slice_grad fails with decrease_axis (its Eigen rank is Out@GRAD's),
# so these compare the outputs only.
FORWARD = {
    'strided_slice_decrease': lambda L, x, y: _op(
        L, 'strided_slice', x, {'axes': [0, 1], 'starts': [1, 3], 'ends': [2, 0],
                                'strides': [1, -1], 'infer_flags': [1, 1],
                                'decrease_axis': [0]}),
    'strided_slice_decrease_all': lambda L, x, y: _op(
        L, 'strided_slice', x, {'axes': [0, 1], 'starts': [2, -1], 'ends': [3, -2],
                                'strides': [1, -1], 'infer_flags': [1, 1],
                                'decrease_axis': [0, 1]}),
    'nonzero': lambda L, x, y: L.nonzero(L.greater_than(x, y)),
    'nonzero_float': lambda L, x, y: L.nonzero(L.relu(x)),
    'nonzero_tuple': lambda L, x, y: L.nonzero(L.greater_than(x, y), as_tuple=True),
    'nonzero_tuple_1d': lambda L, x, y: L.nonzero(L.reshape(L.relu(x), [12]), as_tuple=True),
    'elementwise_equal': lambda L, x, y: L.elementwise_equal(
        x, L.elementwise_max(x, y)),
    'full': lambda L, x, y: L.full([2, 3], 1.5),
    'diag_embed': lambda L, x, y: L.diag_embed(x),
    'diag_embed_offset': lambda L, x, y: L.diag_embed(x, offset=1, dim1=0, dim2=2),
    'diag_embed_below': lambda L, x, y: L.diag_embed(L.reshape(x, [2, 2, 3]), offset=-2,
                                                     dim1=-1, dim2=1),
    'diag_embed_int': lambda L, x, y: L.diag_embed(np.array([[1, 2], [3, 4]], 'int32')),
    'allclose': lambda L, x, y: L.allclose(x, y),
    'allclose_tol': lambda L, x, y: L.allclose(x, L.scale(x, 1.001, bias=1e-3), rtol=1e-3,
                                               atol=2e-3),
    'allclose_far': lambda L, x, y: L.allclose(x, L.scale(x, 1.01), rtol=1e-3),
    'allclose_nan': lambda L, x, y: L.allclose(L.log(x), L.log(x)),
    'allclose_equal_nan': lambda L, x, y: L.allclose(L.log(x), L.log(x), equal_nan=True),
    'full_int': lambda L, x, y: L.full([3], 7, dtype='int64'),
    'full_bool': lambda L, x, y: L.full([2], True, dtype='bool'),
}
CASES.update(FORWARD)

# Outputs whose shape Paddle leaves unknown when the program is built: the weights'.
OUT_SHAPES = {'strided_slice_vars': [3, 2]}


def build(fluid, name):
    return manip.build_layer(fluid, CASES[name], name in FORWARD, OUT_SHAPES.get(name))


def main():
    import paddle.fluid as fluid
    manip.record(fluid, build, CASES, OUT)


if __name__ == '__main__':
    main()
