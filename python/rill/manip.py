"""Fluid 1.x's tensor-manipulation layers (re-exported by rill.layers): indexing
(gather, gather_nd, scatter, scatter_nd_add, scatter_nd), stacking, flipping, rolling,
running sums, triangles and argmin. Each appends the op Paddle 1.8.5's layer appends,
with the same slots and attributes, so saved programs interoperate; shapes come from the
ops' inference in C."""

import numpy as np

from . import core, layers
from .framework import Variable

__all__ = ['gather', 'gather_nd', 'scatter', 'scatter_nd_add', 'scatter_nd', 'stack',
           'unstack', 'flip', 'roll', 'reverse', 'argmin', 'cumsum', 'tril', 'triu']


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


def stack(x, axis=0):
    """The tensors of x (one shape) stacked along a new dim axis."""
    axis = 0 if axis is None else int(axis)
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    for i, v in enumerate(xs):
        _check(v, 'x[%d]' % i, 'stack')
    h = layers._Helper('stack')
    out = h.tmp(xs[0].dtype.name)
    h.append('stack', {'X': xs}, {'Y': out}, {'axis': axis})
    return out


def unstack(x, axis=0, num=None):
    """x cut along axis into its num slices (num defaults to x's extent there)."""
    _check(x, 'x', 'unstack')
    if num is None:
        if axis is None or x.shape[axis] <= 0:
            raise ValueError('unstack: unknown unstack number (x %s has extent %s at axis %s)'
                             % (x.name, x.shape[axis] if axis is not None else None, axis))
        num = x.shape[axis]
    h = layers._Helper('unstack')
    outs = [h.tmp(x.dtype.name) for _ in range(int(num))]
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
