"""Fluid 1.x's normalising and per-channel layers (re-exported by rill.layers):
l2_normalize (the norm op) and clip_by_norm (operators/normalize.c), affine_channel and
maxout (operators/channel.c)."""

from . import layers
from .framework import Variable

__all__ = ['l2_normalize', 'clip_by_norm', 'affine_channel', 'maxout']


def _float_var(x, what, layer):
    if not isinstance(x, Variable):
        raise TypeError('%s: %s must be a Variable, got %r' % (layer, what, x))
    if x.dtype.name not in ('float32', 'float64'):
        raise TypeError("%s: %s ('%s') is %s, expected float32 or float64"
                        % (layer, what, x.name, x.dtype.name))


def l2_normalize(x, axis, epsilon=1e-12, name=None):
    """x / sqrt(sum of x^2 along axis + epsilon); a 1-D x is normalised along axis 0."""
    _float_var(x, 'x', 'l2_normalize')
    if len(x.shape) == 1:
        axis = 0
    h = layers._Helper('l2_normalize', name)
    out = h.tmp(x.dtype.name)
    norm = h.tmp(x.dtype.name)
    h.append('norm', {'X': x}, {'Out': out, 'Norm': norm},
             {'axis': 1 if axis is None else int(axis), 'epsilon': float(epsilon)})
    return out


def clip_by_norm(x, max_norm, name=None):
    """x scaled to L2 norm max_norm when its norm is larger, else x."""
    _float_var(x, 'x', 'clip_by_norm')
    h = layers._Helper('clip_by_norm', name)
    out = h.tmp(x.dtype.name)
    h.append('clip_by_norm', {'X': x}, {'Out': out}, {'max_norm': float(max_norm)})
    return out


def affine_channel(x, scale=None, bias=None, data_layout='NCHW', name=None, act=None):
    """x * scale[c] + bias[c] per channel c (dim 1, or the last with 'NHWC'), then act."""
    _float_var(x, 'x', 'affine_channel')
    _float_var(scale, 'scale', 'affine_channel')
    _float_var(bias, 'bias', 'affine_channel')
    h = layers._Helper('affine_channel', name)
    out = h.tmp(x.dtype.name)
    h.append('affine_channel', {'X': x, 'Scale': scale, 'Bias': bias}, {'Out': out},
             {'data_layout': data_layout})
    return h.act(out, act)


def maxout(x, groups, name=None, axis=1):
    """The maximum of each `groups` consecutive channels (axis 1, or 3 / -1 for NHWC)."""
    _float_var(x, 'x', 'maxout')
    if axis not in (1, -1, 3):
        raise ValueError('maxout: axis must be 1, -1 or 3, got %r' % (axis,))
    h = layers._Helper('maxout', name)
    out = h.tmp(x.dtype.name)
    h.append('maxout', {'X': x}, {'Out': out},
             {'groups': int(groups), 'axis': 3 if axis == -1 else int(axis)})
    return out
