"""Fluid 1.x's normalising and per-channel layers (re-exported by rill.layers):
l2_normalize (the norm op) and clip_by_norm (operators/normalize.c), affine_channel and
maxout (operators/channel.c), group_norm (operators/group_norm.c), instance_norm
(operators/instance_norm.c), lrn (operators/lrn.c), data_norm (operators/data_norm.c)
and spectral_norm (operators/spectral_norm.c), each with its gradient."""

from . import layers
from .framework import Variable
from .initializer import Constant, Normal
from .param_attr import ParamAttr

__all__ = ['l2_normalize', 'clip_by_norm', 'affine_channel', 'maxout', 'group_norm',
           'instance_norm', 'lrn', 'data_norm', 'spectral_norm']


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


def group_norm(input, groups, epsilon=1e-05, param_attr=None, bias_attr=None, act=None,
               data_layout='NCHW', name=None):
    """Normalises each sample's channel groups. As in Fluid 1.8, the Scale and Bias
    parameters exist only when param_attr / bias_attr are given (truthy). Its gradient
    (group_norm_grad) reads Y and Variance, as Paddle's does."""
    _float_var(input, 'input', 'group_norm')
    if data_layout not in ('NCHW', 'NHWC'):
        raise ValueError("group_norm: data_layout must be 'NCHW' or 'NHWC', got %r"
                         % (data_layout,))
    h = layers._Helper('group_norm', name)
    dtype = input.dtype.name
    channels = input.shape[1] if data_layout == 'NCHW' else input.shape[-1]
    inputs = {'X': input}
    if param_attr:
        inputs['Scale'] = h.param(param_attr, [channels], dtype,
                                  default_initializer=Constant(1.0))
    if bias_attr:
        inputs['Bias'] = h.param(bias_attr, [channels], dtype, is_bias=True)
    out = h.tmp(dtype)
    mean = h.tmp(dtype, stop_gradient=True)
    var = h.tmp(dtype, stop_gradient=True)
    h.append('group_norm', inputs, {'Y': out, 'Mean': mean, 'Variance': var},
             {'epsilon': float(epsilon), 'groups': int(groups), 'data_layout': data_layout})
    return h.act(out, act)


def instance_norm(input, epsilon=1e-05, param_attr=None, bias_attr=None, name=None):
    """Normalises each (sample, channel) plane of an [N, C, ...] input (rank 2 to 5). As
    in Fluid 1.8, Scale (initialised to 1) and Bias (0) of [C] are always created."""
    _float_var(input, 'input', 'instance_norm')
    if bias_attr is False:
        raise ValueError('instance_norm: bias_attr should not be False')
    if not 2 <= len(input.shape) <= 5:
        raise ValueError("instance_norm: input ('%s') has shape %s: rank must be 2 to 5"
                         % (input.name, list(input.shape)))
    h = layers._Helper('instance_norm', name)
    dtype = input.dtype.name
    channels = input.shape[1]
    scale = h.param(param_attr, [channels], dtype, default_initializer=Constant(1.0))
    bias = h.param(bias_attr, [channels], dtype, is_bias=True)
    out = h.tmp(dtype)
    mean = h.tmp(dtype, stop_gradient=True)
    invstd = h.tmp(dtype, stop_gradient=True)
    inputs = {'X': input, 'Scale': scale, 'Bias': bias}
    h.append('instance_norm', {k: v for k, v in inputs.items() if v is not None},
             {'Y': out, 'SavedMean': mean, 'SavedVariance': invstd},
             {'epsilon': float(epsilon)})
    return out


def lrn(input, n=5, k=1.0, alpha=1e-4, beta=0.75, name=None, data_format='NCHW'):
    """Local response normalisation across the channels of a 4-D float32 input:
    input * (k + alpha * sum of squares over n channels)^-beta; the op's MidOut output
    keeps the parenthesis for the gradient."""
    if not isinstance(input, Variable):
        raise TypeError('lrn: input must be a Variable, got %r' % (input,))
    if input.dtype.name != 'float32':
        raise TypeError("lrn: input ('%s') is %s, expected float32"
                        % (input.name, input.dtype.name))
    if len(input.shape) != 4:
        raise ValueError("Input's dimension size of Op(lrn) must be 4, but received %d."
                         % len(input.shape))
    if data_format not in ('NCHW', 'NHWC'):
        raise ValueError('Attr(data_format) of Op(lrn) got wrong value: received %s but '
                         'only NCHW or NHWC supported.' % (data_format,))
    h = layers._Helper('lrn', name)
    mid = h.tmp('float32', stop_gradient=True)
    out = h.tmp('float32')
    h.append('lrn', {'X': input}, {'Out': out, 'MidOut': mid},
             {'n': int(n), 'k': float(k), 'alpha': float(alpha), 'beta': float(beta),
              'data_format': data_format})
    return out


def data_norm(input, act=None, epsilon=1e-05, param_attr=None, data_layout='NCHW',
              in_place=False, name=None, moving_mean_name=None, moving_variance_name=None,
              do_model_average_for_mean_and_var=True, slot_dim=-1, sync_stats=False,
              summary_decay_rate=0.9999999, enable_scale_and_shift=False):
    """Normalises input [N, C] by summary statistics held in the trainable parameters
    <name>.batch_size, .batch_sum and .batch_square_sum (name defaults to 'dn', shared by
    every unnamed call, as in Fluid), which their gradients (the batch's own statistics)
    update. param_attr may be a dict of starting values: batch_size (1e4), batch_sum
    (0), batch_square (1e4), and with enable_scale_and_shift scale_w (1) and bias (0)."""
    _float_var(input, 'input', 'data_norm')
    dt = input.dtype.name
    if data_layout == 'NCHW':
        c = input.shape[1]
    elif data_layout == 'NHWC':
        c = input.shape[-1]
    else:
        raise ValueError('unsupported data layout:' + str(data_layout))
    pa = param_attr if isinstance(param_attr, dict) else {}
    init = {'batch_size': pa.get('batch_size', 1e4), 'batch_sum': pa.get('batch_sum', 0.0),
            'batch_square_sum': pa.get('batch_square', 1e4),
            'scale_w': pa.get('scale_w', 1.0), 'bias': pa.get('bias', 0.0)}
    name = name or 'dn'
    h = layers._Helper('data_norm', name)

    def param(what):
        return h.param(ParamAttr(name='%s.%s' % (name, what),
                                 initializer=Constant(float(init[what])), trainable=True),
                       [c], dt)

    inputs = {'X': input}
    if enable_scale_and_shift:
        inputs['scale_w'] = param('scale_w')
        inputs['bias'] = param('bias')
    inputs['BatchSize'] = param('batch_size')
    inputs['BatchSum'] = param('batch_sum')
    inputs['BatchSquareSum'] = param('batch_square_sum')
    means = h.tmp(dt, stop_gradient=True)
    scales = h.tmp(dt, stop_gradient=True)
    out = input if in_place else h.tmp(dt)
    attrs = {'epsilon': float(epsilon), 'sync_stats': bool(sync_stats),
             'summary_decay_rate': float(summary_decay_rate)}
    if slot_dim > 0:
        attrs['slot_dim'] = int(slot_dim)
    if enable_scale_and_shift:
        attrs['enable_scale_and_shift'] = True
    h.append('data_norm', inputs, {'Y': out, 'Means': means, 'Scales': scales}, attrs)
    return h.act(out, act)


def spectral_norm(weight, dim=0, power_iters=1, eps=1e-12, name=None):
    """weight (rank 2 to 5) divided by its largest singular value as a matrix whose rows
    are indexed by dim, estimated by power_iters power iterations from the parameters U
    [h] and V [w] (Normal(0, 1) at start-up, never trained or updated, as in Fluid 1.8).
    Its gradient is Paddle 1.8.5's rule (operators/spectral_norm.c)."""
    _float_var(weight, 'weight', 'spectral_norm')
    for v, what, kind in ((dim, 'dim', int), (power_iters, 'power_iters', int),
                          (eps, 'eps', float)):
        if not isinstance(v, kind) or isinstance(v, bool):
            raise TypeError('spectral_norm: %s must be %s, got %r' % (what, kind.__name__, v))
    shape = list(weight.shape)
    if not 2 <= len(shape) <= 5:
        raise ValueError("spectral_norm: weight ('%s') must have rank 2 to 5, got shape %s"
                         % (weight.name, shape))
    if dim not in (0, 1) or any(s is None or s < 0 for s in shape):
        raise ValueError("spectral_norm: weight ('%s') %s needs a known shape and dim 0 or 1, "
                         "got dim %d" % (weight.name, shape, dim))
    dtype = weight.dtype.name
    h = layers._Helper('spectral_norm', name)
    rows = shape[dim]
    cols = 1
    for i, s in enumerate(shape):
        if i != dim:
            cols *= s
    u = h.param(ParamAttr(), [rows], dtype, default_initializer=Normal(0., 1.))
    v = h.param(ParamAttr(), [cols], dtype, default_initializer=Normal(0., 1.))
    u.stop_gradient = True
    v.stop_gradient = True
    out = h.tmp(dtype)
    h.append('spectral_norm', {'Weight': weight, 'U': u, 'V': v}, {'Out': out},
             {'dim': dim, 'power_iters': power_iters, 'eps': eps})
    return out
