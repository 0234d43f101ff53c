"""Fluid 1.x's tensor-manipulation layers (re-exported by rill.layers): indexing
(gather, gather_nd, scatter, scatter_nd_add, scatter_nd, index_select, index_sample),
stacking, flipping, rolling, running sums, triangles, argmin and argsort, sequences and
constants (range, arange, linspace, full_like, ones_like, diag, eye, size), bool
reductions and flags (reduce_all, reduce_any, has_inf, has_nan, isfinite), where and
unique, expand_as, padding (pad, pad_constant_like, pad2d), cropping (crop,
crop_tensor), kron and trace. Each appends the op Paddle 1.8.5's layer appends,
with the same slots and attributes, so saved programs interoperate; shapes come from the
ops' inference in C."""

import builtins

import numpy as np

from . import core, layers
from .framework import Variable

__all__ = ['sampling_id', 'gather', 'gather_nd', 'scatter', 'scatter_nd_add', 'scatter_nd', 'stack',
           'unstack', 'flip', 'roll', 'reverse', 'argmin', 'cumsum', 'tril', 'triu',
           'index_select', 'index_sample', 'arange', 'linspace', 'full_like',
           'ones_like', 'diag', 'eye', 'size', 'reduce_all', 'reduce_any', 'has_inf',
           'has_nan', 'isfinite', 'where', 'argsort', 'unique', 'unique_with_counts',
           'expand_as', 'pad', 'pad_constant_like', 'pad2d', 'kron', 'trace', 'crop',
           'crop_tensor']


def _check(v, what, layer, dtypes=None):
    if not isinstance(v, Variable):
        raise TypeError('%s: %s must be a Variable, not %r' % (layer, what, v))
    if dtypes and v.dtype.name not in dtypes:
        raise TypeError("%s: %s '%s' is %s; expected %s" % (layer, what, v.name, v.dtype.name,
                                                            ' or '.join(dtypes)))


_INDEX = ('int32', 'int64')


def _one(op, inputs, attrs=None, like=None, dtype=None, name=None, out_slot='Out'):
    """Appends op with one output (of like's dtype, or dtype) and returns it."""
    h = layers._Helper(op, name)
    out = h.tmp(dtype or like.dtype.name)
    h.append(op, inputs, {out_slot: out}, attrs or {})
    return out


def sampling_id(x, min=0.0, max=1.0, seed=0, dtype='float32'):
    """One id per row of x [N, W] (each row a distribution over W ids): int64 [N]. A
    nonzero seed gives the same ids on every run, and Paddle 1.8.5's for the same seed;
    as in Paddle, the ids are int64 whatever dtype says."""
    _check(x, 'x', 'sampling_id', ('float32', 'float64'))
    if not float(min) < float(max):
        raise ValueError('sampling_id: min (%r) must be less than max (%r)' % (min, max))
    out = _one('sampling_id', {'X': x},
               {'min': float(min), 'max': float(max), 'seed': int(seed)}, dtype='int64')
    out.stop_gradient = True
    return out


def gather(input, index, overwrite=True):
    """Rows of input picked by a 1-D (or [N, 1]) int index: out[i] = input[index[i]].
    overwrite decides the gradient of a repeated index: the last row's (True) or the sum."""
    _check(input, 'input', 'gather')
    _check(index, 'index', 'gather', _INDEX)
    return _one('gather', {'X': input, 'Index': index}, {'overwrite': bool(overwrite)},
                like=input)


def gather_nd(input, index, name=None):
    """Slices of input addressed by the tuples in index's last dim."""
    _check(input, 'input', 'gather_nd')
    _check(index, 'index', 'gather_nd', _INDEX)
    return _one('gather_nd', {'X': input, 'Index': index}, like=input, name=name)


def scatter(input, index, updates, name=None, overwrite=True):
    """input with rows index[i] replaced by updates[i] (overwrite), or zeroed and then
    given the sum of their updates."""
    _check(input, 'input', 'scatter')
    _check(index, 'index', 'scatter', _INDEX)
    _check(updates, 'updates', 'scatter')
    return _one('scatter', {'X': input, 'Ids': index, 'Updates': updates},
                {'overwrite': bool(overwrite)}, like=input, name=name)


def scatter_nd_add(ref, index, updates, name=None):
    """ref with updates added to the slices addressed by index's tuples."""
    _check(ref, 'ref', 'scatter_nd_add')
    _check(index, 'index', 'scatter_nd_add', _INDEX)
    _check(updates, 'updates', 'scatter_nd_add')
    if ref.dtype != updates.dtype:
        raise TypeError("scatter_nd_add: updates '%s' is %s; it must be ref's dtype %s" %
                        (updates.name, updates.dtype.name, ref.dtype.name))
    return _one('scatter_nd_add', {'X': ref, 'Index': index, 'Updates': updates}, like=ref,
                name=name)


def scatter_nd(index, updates, shape, name=None):
    """Zeros of shape with updates added at index's tuples (scatter_nd_add on zeros)."""
    _check(updates, 'updates', 'scatter_nd')
    zeros = layers.fill_constant(shape=list(shape), dtype=updates.dtype.name, value=0.0)
    return scatter_nd_add(zeros, index, updates, name)


def stack(x, axis=0, name=None):
    """The tensors of x (one shape) stacked along a new dim axis."""
    axis = 0 if axis is None else int(axis)
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    for i, v in enumerate(xs):
        _check(v, 'x[%d]' % i, 'stack')
    h = layers._Helper('stack', name)
    out = h.tmp(xs[0].dtype.name)
    h.append('stack', {'X': xs}, {'Y': out}, {'axis': axis})
    return out


def unstack(x, axis=0, num=None):
    """x cut along axis into its num slices (num defaults to x's extent there)."""
    _check(x, 'x', 'unstack')
    if num is None:
        if axis is None or x.shape[axis] <= 0:
            raise ValueError('unstack: num is needed (x %s has extent %s at axis %s)'
                             % (x.name, x.shape[axis] if axis is not None else None, axis))
        num = x.shape[axis]
    h = layers._Helper('unstack')
    outs = [h.tmp(x.dtype.name) for _ in builtins.range(int(num))]
    h.append('unstack', {'X': x}, {'Y': outs}, {'axis': int(axis), 'num': int(num)})
    return outs


def flip(input, dims, name=None):
    """input with the elements along each dim of dims in reverse order."""
    _check(input, 'input', 'flip')
    if not isinstance(dims, (list, tuple)):
        raise TypeError('flip: dims must be a list or tuple, not %r' % (dims,))
    if len(dims) == 0:
        raise ValueError('flip: len(dims) must be greater than 0.')
    return _one('flip', {'X': input}, {'dims': [int(d) for d in dims]}, like=input, name=name)


def reverse(x, axis):
    """x with the elements along axis (an int or a list) in reverse order."""
    _check(x, 'x', 'reverse')
    axis = [axis] if isinstance(axis, int) else [int(a) for a in axis]
    return _one('reverse', {'X': x}, {'axis': axis}, like=x)


def roll(input, shifts, dims=None):
    """input shifted cyclically by shifts along dims (flattened when dims is None);
    the result keeps input's shape."""
    _check(input, 'input', 'roll')
    shifts = [shifts] if isinstance(shifts, int) else [int(s) for s in shifts]
    dims = [dims] if isinstance(dims, int) else dims
    origin = list(input.shape)
    if dims is None:
        input = layers.reshape(input, shape=[-1, 1])
        dims = [0]
    out = _one('roll', {'X': input}, {'dims': [int(d) for d in dims], 'shifts': shifts},
               like=input)
    return layers.reshape(out, shape=origin)


def argmin(x, axis=0):
    """The int64 position of the first minimum of x along axis."""
    _check(x, 'x', 'argmin', ('float32', 'float64', 'uint8', 'int16', 'int32', 'int64'))
    out = _one('arg_min', {'X': x}, {'axis': int(axis)}, dtype='int64')
    out.stop_gradient = True
    return out


def cumsum(x, axis=None, exclusive=None, reverse=None):
    """Running sums of x along axis (default the last); exclusive leaves out each
    element's own value, reverse sums from the end."""
    _check(x, 'x', 'cumsum')
    attrs = {}
    if axis is not None:
        attrs['axis'] = int(axis)
    if exclusive is not None:
        attrs['exclusive'] = bool(exclusive)
    if reverse is not None:
        attrs['reverse'] = bool(reverse)
    return _one('cumsum', {'X': x}, attrs, like=x)


def _triangle(layer, input, diagonal, lower, name):
    _check(input, 'input', layer, ('float32', 'float64', 'int32', 'int64'))
    if not isinstance(diagonal, int):
        raise TypeError('%s: diagonal must be an int, not %r' % (layer, diagonal))
    if len(input.shape) < 2:
        raise ValueError('%s: input %s has rank %d; it needs rank >= 2' %
                         (layer, input.name, len(input.shape)))
    return _one('tril_triu', {'X': input}, {'diagonal': diagonal, 'lower': lower}, like=input,
                name=name)


def tril(input, diagonal=0, name=None):
    """The lower triangle of input's last two dims (j - i <= diagonal), the rest zero."""
    return _triangle('tril', input, diagonal, True, name)


def triu(input, diagonal=0, name=None):
    """The upper triangle of input's last two dims (j - i >= diagonal), the rest zero."""
    return _triangle('triu', input, diagonal, False, name)


def index_select(input, index, dim=0):
    """input's slices along dim picked by the 1-D int index."""
    _check(input, 'input', 'index_select', ('float32', 'float64', 'int32', 'int64'))
    _check(index, 'index', 'index_select', _INDEX)
    return _one('index_select', {'X': input, 'Index': index}, {'dim': int(dim)}, like=input)


def index_sample(x, index):
    """out[i, j] = x[i, index[i, j]] for a 2-D x and index."""
    _check(x, 'x', 'index_sample', ('float32', 'float64', 'int32', 'int64'))
    _check(index, 'index', 'index_sample', _INDEX)
    return _one('index_sample', {'X': x, 'Index': index}, like=x)


def _scalar(v, dtype, what, layer):
    """v as a one-element variable of dtype: a number through fill_constant, a Variable
    cast when its dtype differs."""
    if isinstance(v, Variable):
        return v if v.dtype.name == dtype else layers.cast(v, dtype)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise TypeError('%s: %s must be a number or a Variable, not %r' % (layer, what, v))
    # As Paddle 1.8.5's fill_constant: str_value carries the exact number (value is a
    # float32 attribute).
    h = layers._Helper('fill_constant')
    out = h.tmp(dtype, stop_gradient=True)
    exact = str(int(v)) if dtype in _INDEX else str(float(v))
    h.append('fill_constant', {}, {'Out': out},
             {'shape': [1], 'value': float(v), 'str_value': exact,
              'dtype': core.dtype_code(dtype)})
    return out


def _dtype_name(dtype):
    return np.dtype(core.DTYPE_TO_NP.get(core.dtype_code(dtype))).name


def _range(layer, start, end, step, dtype):
    dtype = _dtype_name(dtype)
    if dtype not in ('float32', 'float64', 'int32', 'int64'):
        raise TypeError('%s: dtype must be float32, float64, int32 or int64, not %s' %
                        (layer, dtype))
    ins = {'Start': _scalar(start, dtype, 'start', layer), 'End': _scalar(end, dtype, 'end', layer),
           'Step': _scalar(step, dtype, 'step', layer)}
    out = _one('range', ins, dtype=dtype)
    out.stop_gradient = True
    return out


def range(start, end, step, dtype):
    """start, start + step, ... while before end (the range op), of dtype."""
    return _range('range', start, end, step, dtype)


def arange(start, end, step=1, dtype=None, name=None):
    """range with step 1 and dtype float32 unless given."""
    return _range('arange', start, end, step, 'float32' if dtype is None else dtype)


def linspace(start, stop, num, dtype):
    """num evenly spaced values from start to stop (both included), of dtype."""
    dtype = _dtype_name(dtype)
    if dtype not in ('float32', 'float64'):
        raise TypeError('linspace: dtype must be float32 or float64, not %s' % dtype)
    ins = {'Start': _scalar(start, dtype, 'start', 'linspace'),
           'Stop': _scalar(stop, dtype, 'stop', 'linspace'),
           'Num': _scalar(num, 'int32', 'num', 'linspace')}
    return _one('linspace', ins, dtype=dtype)


def full_like(input, fill_value, out=None, dtype=None, device=None, stop_gradient=True,
              name=None):
    """input's shape filled with fill_value, of input's dtype or dtype."""
    _check(input, 'input', 'full_like')
    dt = input.dtype.name if dtype is None else _dtype_name(dtype)
    h = layers._Helper('full_like', name)
    out = out if out is not None else h.tmp(dt)
    h.append('fill_any_like', {'X': [input]}, {'Out': [out]},
             {'value': float(fill_value), 'dtype': core.dtype_code(dt)})
    out.stop_gradient = stop_gradient
    return out


def ones_like(x, out=None):
    """Ones of x's shape and dtype."""
    _check(x, 'x', 'ones_like', ('bool', 'float32', 'float64', 'int32', 'int64'))
    h = layers._Helper('ones_like')
    out = out if out is not None else h.tmp(x.dtype.name)
    h.append('fill_any_like', {'X': [x]}, {'Out': [out]}, {'value': 1.0})
    return out


def diag(diagonal):
    """The square matrix with diagonal (a 1-D Variable or numpy array) on its diagonal."""
    if not isinstance(diagonal, Variable):
        diagonal = layers.assign(np.asarray(diagonal))
    _check(diagonal, 'diagonal', 'diag', ('float32', 'float64', 'int32', 'int64'))
    out = _one('diag', {'Diagonal': [diagonal]}, like=diagonal)
    out.stop_gradient = True
    return out


def eye(num_rows, num_columns=None, batch_shape=None, dtype='float32'):
    """The [num_rows, num_columns] identity of dtype, stacked into batch_shape + that."""
    if not isinstance(num_rows, int) or num_rows < 0:
        raise TypeError('eye: num_rows should be a non-negative int')
    if num_columns is None:
        num_columns = num_rows
    elif not isinstance(num_columns, int) or num_columns < 0:
        raise TypeError('eye: num_columns should be a non-negative int')
    dt = _dtype_name(dtype)
    h = layers._Helper('eye')
    out = h.tmp(dt, stop_gradient=True)
    h.append('eye', {}, {'Out': [out]}, {'num_rows': num_rows, 'num_columns': num_columns,
                                         'dtype': core.dtype_code(dt)})
    out.stop_gradient = True
    if batch_shape is not None:
        if not isinstance(batch_shape, list):
            raise TypeError('eye: batch_shape should be a list')
        for b in reversed(batch_shape):
            if b <= 0:
                raise TypeError('eye: batch_shape should be a positive int list')
            out = stack([out] * b, axis=0)
    return out


def size(input):
    """The element count of input when the program runs (int64 [1])."""
    _check(input, 'input', 'size')
    return _one('size', {'Input': input}, dtype='int64')


def _bool_reduce(op, input, dim, keep_dim, name):
    _check(input, 'input', op, ('bool',))
    if dim is not None and not isinstance(dim, (list, tuple)):
        dim = [dim]
    return layers._reduce(op, input, dim if dim else None, keep_dim, name)


def reduce_all(input, dim=None, keep_dim=False, name=None):
    """Logical and of the bool input over dim (every dim when None)."""
    return _bool_reduce('reduce_all', input, dim, keep_dim, name)


def reduce_any(input, dim=None, keep_dim=False, name=None):
    """Logical or of the bool input over dim (every dim when None)."""
    return _bool_reduce('reduce_any', input, dim, keep_dim, name)


def _flag(op, x):
    _check(x, 'x', op, ('float32', 'float64'))
    return _one(op, {'X': x}, dtype='bool')


def has_inf(x):
    """Whether any element of x is infinite (bool [1])."""
    return _flag('isinf', x)


def has_nan(x):
    """Whether any element of x is NaN (bool [1])."""
    return _flag('isnan', x)


def isfinite(x):
    """Whether every element of x is finite (bool [1])."""
    return _flag('isfinite', x)


def where(condition):
    """The int64 coordinates [count, rank] of condition's true elements."""
    _check(condition, 'condition', 'where')
    out = _one('where_index', {'Condition': condition}, dtype='int64')
    out.stop_gradient = True
    return out


def argsort(input, axis=-1, descending=False, name=None):
    """(input sorted along axis, int64 positions of the sorted elements); equal values
    keep their order."""
    _check(input, 'input', 'argsort',
           ('float32', 'float64', 'int16', 'int32', 'int64', 'uint8'))
    h = layers._Helper('argsort', name)
    out = h.tmp(input.dtype.name, stop_gradient=True)
    ids = h.tmp('int64', stop_gradient=True)
    h.append('argsort', {'X': input}, {'Out': out, 'Indices': ids},
             {'axis': int(axis), 'descending': bool(descending)})
    return out, ids


def _unique(op, x, dtype):
    _check(x, 'x', op, ('float32', 'float64', 'int32', 'int64'))
    dt = _dtype_name(dtype)
    if dt not in _INDEX:
        raise TypeError('%s: dtype must be int32 or int64, not %s' % (op, dt))
    h = layers._Helper(op)
    outs = {'Out': [h.tmp(x.dtype.name)], 'Index': [h.tmp(dt)]}
    if op == 'unique_with_counts':
        outs['Count'] = [h.tmp(dt)]
    h.append(op, {'X': x}, outs, {'dtype': core.dtype_code(dt)})
    return tuple(outs[k][0] for k in ('Out', 'Index', 'Count') if k in outs)


def unique(x, dtype='int32'):
    """(x's distinct values in order of first appearance, each element's position in
    them) for a 1-D x."""
    return _unique('unique', x, dtype)


def unique_with_counts(x, dtype='int32'):
    """unique's two results and the count of each distinct value."""
    return _unique('unique_with_counts', x, dtype)


def expand_as(x, target_tensor, name=None):
    """x tiled to target_tensor's shape (each extent a whole multiple of x's)."""
    _check(x, 'x', 'expand_as', ('float32', 'float64', 'int32', 'int64', 'bool'))
    _check(target_tensor, 'target_tensor', 'expand_as')
    return _one('expand_as', {'X': x, 'target_tensor': target_tensor}, like=x, name=name)


def pad(x, paddings, pad_value=0.0, name=None):
    """x with paddings[2i] elements of pad_value before and paddings[2i + 1] after it
    along each dim i."""
    _check(x, 'x', 'pad')
    paddings = [int(p) for p in paddings]
    if len(paddings) != 2 * len(x.shape):
        raise ValueError('pad: paddings %s must have two entries per dim of %s (rank %d)' %
                         (paddings, x.name, len(x.shape)))
    return _one('pad', {'X': x}, {'paddings': paddings, 'pad_value': float(pad_value)},
                like=x, name=name)


def pad_constant_like(x, y, pad_value=0.0, name=None):
    """x's shape filled with pad_value, with y copied at the origin."""
    _check(x, 'x', 'pad_constant_like')
    _check(y, 'y', 'pad_constant_like')
    return _one('pad_constant_like', {'X': x, 'Y': y}, {'pad_value': float(pad_value)},
                like=x, name=name)


def pad2d(input, paddings=[0, 0, 0, 0], mode='constant', pad_value=0.0, data_format='NCHW',
          name=None):
    """input (4-D) padded along height and width by paddings [top, bottom, left, right]
    (a list, or an int32 Variable read when the program runs): constant, reflect or
    edge."""
    _check(input, 'input', 'pad2d')
    if mode not in ('constant', 'reflect', 'edge'):
        raise ValueError("pad2d: mode must be 'constant', 'reflect' or 'edge', not %r" % (mode,))
    if data_format not in ('NCHW', 'NHWC'):
        raise ValueError("pad2d: data_format must be 'NCHW' or 'NHWC', not %r" % (data_format,))
    ins = {'X': input}
    attrs = {'mode': mode, 'pad_value': float(pad_value), 'data_format': data_format}
    if isinstance(paddings, Variable):
        ins['Paddings'] = paddings
        attrs['paddings'] = []
    else:
        attrs['paddings'] = [int(p) for p in paddings]
    return _one('pad2d', ins, attrs, like=input, name=name)


def kron(x, y, out=None, name=None):
    """The Kronecker product of x and y."""
    _check(x, 'x', 'kron', ('float32', 'float64'))
    _check(y, 'y', 'kron', ('float32', 'float64'))
    h = layers._Helper('kron', name)
    out = out if out is not None else h.tmp(x.dtype.name)
    h.append('kron', {'X': x, 'Y': y}, {'Out': out})
    return out


def trace(input, offset=0, dim1=0, dim2=1, out=None, name=None):
    """Sums along the diagonal at offset of input's matrices in dims dim1 and dim2."""
    _check(input, 'input', 'trace', ('float32', 'float64'))
    h = layers._Helper('trace', name)
    out = out if out is not None else h.tmp(input.dtype.name)
    h.append('trace', {'Input': [input]}, {'Out': [out]},
             {'offset': int(offset), 'dim1': int(dim1), 'dim2': int(dim2)})
    return out


def crop(x, shape=None, offsets=None, name=None):
    """The box of x at offsets (a list, or an int32 Variable; default zeros) with shape (a
    list, or a Variable whose shape is taken)."""
    _check(x, 'x', 'crop')
    if not isinstance(shape, (list, tuple, Variable)):
        raise ValueError('crop: the shape should be a list, tuple or Variable.')
    if offsets is None:
        offsets = [0] * len(x.shape)
    ins, attrs = {'X': x}, {}
    if isinstance(shape, Variable):
        ins['Y'] = shape
    else:
        attrs['shape'] = [int(s) for s in shape]
    if isinstance(offsets, Variable):
        ins['Offsets'] = offsets
    else:
        attrs['offsets'] = [int(o) for o in offsets]
    return _one('crop', ins, attrs, like=x, name=name)


def _crop_arg(v, slot, list_slot, attr, ins, attrs, layer):
    """crop_tensor's shape or offsets: a Variable (slot), a list holding Variables
    (list_slot, one int32 [1] tensor per entry) or a list of ints (attr)."""
    if isinstance(v, Variable):
        v.stop_gradient = True
        ins[slot] = v
    elif any(isinstance(e, Variable) for e in v):
        ins[list_slot] = [e if isinstance(e, Variable) else _scalar(int(e), 'int32', attr, layer)
                          for e in v]
        attrs[attr] = [-1 if isinstance(e, Variable) else int(e) for e in v]
    else:
        attrs[attr] = [int(e) for e in v]


def crop_tensor(x, shape=None, offsets=None, name=None):
    """The box of x at offsets with shape (-1: x's extent minus the offset); each a list
    of ints and Variables, or a 1-D int32 Variable read when the program runs."""
    _check(x, 'x', 'crop_tensor', ('float32', 'float64', 'int32', 'int64'))
    if shape is None:
        raise ValueError('crop_tensor: shape is required')
    if offsets is None:
        offsets = [0] * len(x.shape)
    ins, attrs = {'X': x}, {}
    _crop_arg(shape, 'Shape', 'ShapeTensor', 'shape', ins, attrs, 'crop_tensor')
    _crop_arg(offsets, 'Offsets', 'OffsetsTensor', 'offsets', ins, attrs, 'crop_tensor')
    return _one('crop_tensor', ins, attrs, like=x, name=name)


# Layers named like Python builtins: rill.layers provides them as attributes (through its
# module __getattr__) without binding them as its globals, where its own code would call
# them instead of the builtins.
BUILTIN_NAMED = {'range': range}
