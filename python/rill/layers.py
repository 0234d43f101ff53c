"""Layers (Fluid 1.x's fluid.layers): each call only appends ops (and parameters with
their initializer ops in the startup program); nothing runs until an Executor runs the
program. Output shapes come from the ops' shape inference in C."""

import copy
import numbers

import numpy as np

from . import core
from .framework import (Variable, default_main_program, default_startup_program,
                        unique_name)
from .initializer import Constant, Xavier
from .initializer import Normal as _NormalInit
from .param_attr import ParamAttr, WeightNormParamAttr

__all__ = ['data', 'fc', 'embedding', 'conv2d', 'deformable_conv', 'conv3d', 'conv3d_transpose', 'mean_iou', 'pool2d', 'pool3d', 'adaptive_pool2d',
           'adaptive_pool3d', 'batch_norm', 'layer_norm',
           'dropout', 'softmax', 'cross_entropy', 'softmax_with_cross_entropy',
           'square_error_cost', 'mean', 'accuracy', 'concat',
           'reshape', 'transpose',
           'elementwise_add', 'elementwise_sub', 'elementwise_mul', 'elementwise_div',
           'elementwise_max', 'elementwise_min', 'elementwise_pow', 'fill_constant', 'scale',
           'relu', 'sigmoid', 'tanh', 'exp', 'log', 'sqrt', 'square', 'leaky_relu', 'relu6',
           'swish', 'gelu', 'hard_sigmoid', 'hard_swish', 'matmul', 'reduce_sum',
           'reduce_mean', 'cast', 'argmax', 'create_parameter', 'assign', 'flatten',
           'log_softmax', 'topk', 'ctc_greedy_decoder', 'warpctc', 'one_hot', 'clip', 'split', 'squeeze', 'unsqueeze', 'slice',
           'sums', 'less_than', 'less_equal', 'greater_than', 'greater_equal', 'equal',
           'not_equal', 'exponential_decay', 'natural_exp_decay', 'inverse_time_decay',
           'piecewise_decay', 'noam_decay', 'polynomial_decay', 'cosine_decay',
           'linear_lr_warmup', 'fill_constant_batch_size_like', 'conv2d_transpose',
           'shape', 'expand', 'sequence_mask', 'cond', 'auc', 'edit_distance']


# The default initializers of a parameter (they keep no state between calls).
_DEFAULT_BIAS_INIT = Constant(0.0)
_DEFAULT_WEIGHT_INIT = Xavier()
_DEFAULT_ATTR = ParamAttr()


class _Helper(object):
    """Fluid's LayerHelper: names, parameters and temporaries of one layer call."""

    def __init__(self, layer_type, name=None):
        self.layer_type = layer_type
        self.name = name or unique_name.generate(layer_type)
        self.main = default_main_program()
        self.startup = default_startup_program()

    @property
    def block(self):
        return self.main.current_block()

    def tmp(self, dtype='float32', stop_gradient=False):
        v = self.block.create_var(name=unique_name.generate(self.name + '.tmp'), dtype=dtype,
                                  infer=True)
        if stop_gradient:
            v.stop_gradient = True
        return v

    def param(self, attr, shape, dtype='float32', is_bias=False, default_initializer=None):
        # the default ParamAttr is only read here: one object serves every call
        attr = _DEFAULT_ATTR if attr is None or attr is True else ParamAttr._to_attr(attr)
        if attr is False:
            return None
        shape = [int(s) for s in shape]
        if shape and min(shape) <= 0:
            raise ValueError('%s: parameter shape %s has a non-positive extent (is the input '
                             'shape known?)' % (self.layer_type, shape))
        name = attr.name or unique_name.generate(self.name + ('.b' if is_bias else '.w'))
        init = attr.initializer or default_initializer or \
            (_DEFAULT_BIAS_INIT if is_bias else _DEFAULT_WEIGHT_INIT)
        if isinstance(attr, WeightNormParamAttr):
            from . import weight_norm
            attr = copy.copy(attr)
            attr.name = name
            w = weight_norm.create(self, attr, shape, dtype, init)
            WeightNormParamAttr.params_with_weight_norm.append(w)
            return w
        sblock = self.startup.global_block()
        if not sblock.has_var(name):
            sv = sblock.create_var(name=name, shape=shape, dtype=dtype, persistable=True)
            init(sv, sblock)
        return self.main.global_block().create_parameter(
            name=name, shape=shape, dtype=dtype, trainable=attr.trainable,
            optimize_attr={'learning_rate': attr.learning_rate}, regularizer=attr.regularizer,
            gradient_clip_attr=attr.gradient_clip, do_model_average=attr.do_model_average)

    def append(self, type, inputs, outputs, attrs=None):
        return self.block.append_op(type, inputs=inputs, outputs=outputs, attrs=attrs)

    def act(self, x, act):
        if act is None:
            return x
        if isinstance(act, dict):
            act = dict(act)
            kind = act.pop('type')
        else:
            kind, act = act, {}
        out = self.tmp()
        self.append(kind, {'X': x}, {'Out': out}, act)
        return out

    def bias(self, x, bias_attr, size, axis, dtype='float32'):
        b = self.param(bias_attr, [size], dtype, is_bias=True)
        if b is None:
            return x
        out = self.tmp(dtype)
        self.append('elementwise_add', {'X': x, 'Y': b}, {'Out': out}, {'axis': axis})
        return out


def _check_var(x, what, layer):
    if not isinstance(x, Variable):
        raise TypeError('%s: %s must be a rill Variable, got %r' % (layer, what, x))


# ------------------------------------------------------------------ inputs ----

def _declare_data(name, shape, dtype, lod_level, stop_gradient, strict, where):
    """The data variable `name` of the main program's global block: a new one, or the
    existing one when its declaration agrees (Fluid returns the same variable)."""
    blk = default_main_program().global_block()
    if blk.has_var(name):
        v = blk.var(name)
        if list(v.shape) != list(shape) or v.dtype != np.dtype(core.DTYPE_TO_NP.get(
                core.dtype_code(dtype))) or v.lod_level != lod_level:
            raise ValueError("%s: variable '%s' already exists as shape %s, %s, lod_level %d; "
                             "now declared as shape %s, %s, lod_level %d" %
                             (where, name, list(v.shape), v.dtype.name, v.lod_level,
                              list(shape), np.dtype(core.DTYPE_TO_NP.get(
                                  core.dtype_code(dtype))).name, lod_level))
        return v
    v = blk.create_var(name=name, shape=shape, dtype=dtype, lod_level=lod_level,
                       stop_gradient=stop_gradient, is_data=True, need_check_feed=strict)
    return v


def data(name, shape, append_batch_size=True, dtype='float32', lod_level=0, type=None,
         stop_gradient=True):
    """Fluid 1.x's layers.data: a fed variable. shape leaves out the batch dimension
    unless append_batch_size is False (or shape already holds -1 / None). As in Fluid,
    feeds of it are not checked against the shape (rill.data's are)."""
    shape = list(shape)
    for i, s in enumerate(shape):
        if s is None:
            shape[i] = -1
            append_batch_size = False
        elif s < 0:
            append_batch_size = False
    if append_batch_size:
        shape = [-1] + shape
    return _declare_data(name, shape, dtype, lod_level, stop_gradient, False, 'data')


def fluid_data(name, shape, dtype='float32', lod_level=0):
    """Fluid 1.x's fluid.data: shape holds every dim, the batch dim included, None or -1
    for an extent known only when fed. Feeds are checked against it: the rank, and each
    fixed extent (InvalidArgumentError naming both shapes)."""
    shape = [-1 if s is None else int(s) for s in shape]
    return _declare_data(name, shape, dtype, lod_level, True, True, 'fluid.data')


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False,
                     default_initializer=None):
    h = _Helper('create_parameter')
    attr = ParamAttr._to_attr(attr) if attr is not None else ParamAttr(name=name)
    if name and attr.name is None:
        attr.name = name
    return h.param(attr, shape, dtype, is_bias, default_initializer)


def fill_constant(shape, dtype, value, force_cpu=False, out=None):
    h = _Helper('fill_constant')
    if out is None:
        out = h.tmp(dtype)
    attrs = {'shape': [int(s) for s in shape], 'value': float(value),
             'dtype': core.dtype_code(dtype)}
    if force_cpu:
        attrs['force_cpu'] = True  # the op runs on the host, Out staying there
    h.append('fill_constant', {}, {'Out': out}, attrs)
    out.stop_gradient = True
    return out


def assign(input, output=None):
    h = _Helper('assign')
    if isinstance(input, np.ndarray):
        from .initializer import NumpyArrayInitializer
        if output is None:
            output = h.tmp(input.dtype.name)
        output._set_meta(core.dtype_code(input.dtype), input.shape)
        NumpyArrayInitializer(input)(output, h.block)
        return output
    if output is None:
        output = h.tmp(input.dtype.name)
    h.append('assign', {'X': input}, {'Out': output})
    return output


# ------------------------------------------------------------ dense layers ----

def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None,
       name=None, is_test=False):
    """out = act(sum_i flatten(input_i) W_i + b)."""
    h = _Helper('fc', name)
    inputs = input if isinstance(input, (list, tuple)) else [input]
    attrs = param_attr if isinstance(param_attr, (list, tuple)) else [param_attr] * len(inputs)
    muls = []
    for x, pa in zip(inputs, attrs):
        _check_var(x, 'input', 'fc')
        shape = x.shape
        if not 0 < num_flatten_dims < len(shape) + (1 if len(shape) == 1 else 0):
            raise ValueError('fc: num_flatten_dims %d out of range for input %s of shape %s' %
                             (num_flatten_dims, x.name, shape))
        in_dim = 1
        for d in shape[num_flatten_dims:]:
            in_dim *= d
        if in_dim <= 0:
            raise ValueError('fc: input %s has shape %s: the flattened extents must be known' %
                             (x.name, shape))
        dtype = x._dtype_name()
        w = h.param(pa, [in_dim, size], dtype)
        out = h.tmp(dtype)
        h.append('mul', {'X': x, 'Y': w}, {'Out': out},
                 {'x_num_col_dims': num_flatten_dims, 'y_num_col_dims': 1})
        muls.append(out)
    dtype = inputs[0]._dtype_name()
    if len(muls) == 1:
        pre = muls[0]
    else:
        pre = h.tmp(dtype)
        h.append('sum', {'X': muls}, {'Out': pre})
    pre = h.bias(pre, bias_attr, size, num_flatten_dims, dtype)
    return h.act(pre, act)


def _embedding(op, input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype):
    h = _Helper('embedding')
    _check_var(input, 'input', 'embedding')
    w = h.param(param_attr, size, dtype, default_initializer=Xavier())
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        padding_idx += size[0]
    out = h.tmp(dtype)
    h.append(op, {'Ids': input, 'W': w}, {'Out': out},
             {'is_sparse': bool(is_sparse), 'is_distributed': bool(is_distributed),
              'padding_idx': int(padding_idx)})
    return out


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None,
              param_attr=None, dtype='float32'):
    """Fluid 1.x's layers.embedding: rows of a [vocab, dim] table by int64 ids of shape
    [..., 1] (lookup_table), the trailing 1 replaced by dim: ids [-1, 1] give [-1, dim].
    Ids without the trailing 1 ([N], as `data(shape=[None])` declares) are refused, as
    Fluid refuses them; fluid.embedding takes them. is_sparse gives the table a
    selected-rows gradient: only the looked-up rows are updated."""
    _check_var(input, 'input', 'embedding')
    if len(input.shape) < 2 or input.shape[-1] != 1:
        raise core.error_class('INVALID_ARGUMENT')(
            "embedding: ids '%s' have shape %s; layers.embedding (lookup_table) needs a "
            "last dim of 1, as in Fluid 1.x (use fluid.embedding for ids without it)" %
            (input.name, list(input.shape)))
    return _embedding('lookup_table', input, size, is_sparse, is_distributed, padding_idx,
                      param_attr, dtype)


def fluid_embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None,
                    param_attr=None, dtype='float32'):
    """Fluid 1.x's fluid.embedding (lookup_table_v2): ids of any shape, Out = ids' shape +
    [dim]."""
    return _embedding('lookup_table_v2', input, size, is_sparse, is_distributed, padding_idx,
                      param_attr, dtype)


def _pair(v, what):
    if isinstance(v, (list, tuple)):
        if len(v) != 2:
            raise ValueError('%s must be an int or a pair, got %r' % (what, v))
        return [int(v[0]), int(v[1])]
    return [int(v), int(v)]


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,
           param_attr=None, bias_attr=None, use_cudnn=True, act=None, name=None,
           data_format='NCHW'):
    h = _Helper('conv2d', name)
    _check_var(input, 'input', 'conv2d')
    if data_format not in ('NCHW', 'NHWC'):
        raise ValueError("conv2d: data_format must be 'NCHW' or 'NHWC', got %r" % (data_format,))
    if len(input.shape) != 4:
        raise ValueError('conv2d: input %s must be 4-D %s, got shape %s' %
                         (input.name, data_format, input.shape))
    channel_last = data_format == 'NHWC'
    c = input.shape[3 if channel_last else 1]
    groups = groups or 1
    if c <= 0 or c % groups:
        raise ValueError('conv2d: %d input channels do not divide into %d groups' % (c, groups))
    fs = _pair(filter_size, 'filter_size')
    paddings, alg = _paddings(padding, 2, 'conv2d', channel_last=channel_last)
    std = (2.0 / (fs[0] * fs[1] * c)) ** 0.5
    w = h.param(param_attr, [num_filters, c // groups] + fs, input.dtype.name,
                default_initializer=_NormalInit(0.0, std, 0))
    pre = h.tmp(input.dtype.name)
    h.append('conv2d', {'Input': input, 'Filter': w}, {'Output': pre},
             {'strides': _pair(stride, 'stride'), 'paddings': paddings,
              'padding_algorithm': alg, 'dilations': _pair(dilation, 'dilation'),
              'groups': groups, 'data_format': data_format})
    pre = h.bias(pre, bias_attr, num_filters, 3 if channel_last else 1, input.dtype.name)
    return h.act(pre, act)



def deformable_conv(input, offset, mask, num_filters, filter_size, stride=1, padding=0,
                    dilation=1, groups=None, deformable_groups=None, im2col_step=None,
                    param_attr=None, bias_attr=None, modulated=True, name=None):
    """Fluid 1.x's deformable_conv: modulated (DCN v2, op deformable_conv, reads mask) or
    not (deformable_conv_v1, mask unused). Filter [num_filters, C / groups, kh, kw] drawn
    from Normal(0, sqrt(2 / (kh kw C))), then a bias added over dim 1. Attributes left
    None keep the ops' defaults (groups 1, deformable_groups 1, im2col_step 64)."""
    h = _Helper('deformable_conv', name)
    _check_var(input, 'input', 'deformable_conv')
    _check_var(offset, 'offset', 'deformable_conv')
    if modulated:
        _check_var(mask, 'mask', 'deformable_conv')
    if len(input.shape) != 4:
        raise ValueError('deformable_conv: input %s must be 4-D NCHW, got shape %s' %
                         (input.name, input.shape))
    c = input.shape[1]
    if groups is not None and (c <= 0 or c % groups):
        raise ValueError('deformable_conv: %d input channels do not divide into %d groups' %
                         (c, groups))
    fs = _pair(filter_size, 'filter_size')
    std = (2.0 / (fs[0] * fs[1] * c)) ** 0.5
    w = h.param(param_attr, [num_filters, c // (groups or 1)] + fs, input.dtype.name,
                default_initializer=_NormalInit(0.0, std, 0))
    attrs = {'strides': _pair(stride, 'stride'), 'paddings': _pair(padding, 'padding'),
             'dilations': _pair(dilation, 'dilation')}
    for k, v in (('groups', groups), ('deformable_groups', deformable_groups),
                 ('im2col_step', im2col_step)):
        if v is not None:
            attrs[k] = int(v)
    inputs = {'Input': input, 'Filter': w, 'Offset': offset}
    if modulated:
        inputs['Mask'] = mask
    pre = h.tmp(input.dtype.name)
    h.append('deformable_conv' if modulated else 'deformable_conv_v1', inputs,
             {'Output': pre}, attrs)
    pre = h.bias(pre, bias_attr, num_filters, 1, input.dtype.name)
    return pre

def _ntuple(v, n, what):
    if isinstance(v, (list, tuple)):
        if len(v) != n:
            raise ValueError('%s must be an int or %d ints, got %r' % (what, n, v))
        return [int(e) for e in v]
    return [int(v)] * n


def _padding_forms(nd, explicit_only):
    """The padding forms an nd-D layer takes, for its error messages."""
    if explicit_only:
        return 'an int, %d ints or %d ints' % (nd, 2 * nd)
    return ("'SAME', 'VALID', an int, %d ints (one per spatial dim), %d ints (before and "
            "after each spatial dim) or %d [before, after] pairs over the input's dims in "
            "its layout ([0, 0] for batch and channels)" % (nd, 2 * nd, nd + 2))


def _is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _paddings(padding, nd, layer, what='padding', channel_last=False, explicit_only=False):
    """Fluid 1.8's padding argument of an nd-D conv or pool layer (`what` names it):
    'SAME' / 'VALID' (any case), an int, nd ints, 2 * nd ints (before and after each
    spatial dim: top, bottom, left, right in 2-D) or nd + 2 [before, after] pairs over the
    input's dims, channels first or (channel_last) last, whose batch and channel pairs are
    [0, 0]. Returns (paddings, padding_algorithm) as Paddle 1.8.5 writes them: nd zeros
    for SAME / VALID, 2 * nd values collapsed to nd when each dim's two are equal.
    explicit_only (unfold, im2sequence) takes ints only and keeps 2 * nd values as given.
    Anything else raises ValueError (TypeError for a value of the wrong type) naming the
    layer and the argument and listing the forms."""
    def bad(cls, why):
        return cls('%s: %s %r %s; %s takes %s' % (layer, what, padding, why, what,
                                                   _padding_forms(nd, explicit_only)))

    if isinstance(padding, str):
        alg = padding.upper()
        if explicit_only or alg not in ('SAME', 'VALID'):
            raise bad(ValueError, 'is not a padding algorithm')
        return [0] * nd, alg
    if _is_int(padding):
        flat = [padding] * nd
    elif isinstance(padding, (list, tuple)):
        flat = list(padding)
        if not explicit_only and len(flat) == nd + 2 and \
                any(isinstance(e, (list, tuple)) for e in flat):
            if not all(isinstance(e, (list, tuple)) and len(e) == 2 for e in flat):
                raise bad(ValueError, 'mixes [before, after] pairs with other values')
            c = nd + 1 if channel_last else 1
            if any(list(flat[i]) != [0, 0] for i in (0, c)):
                raise bad(ValueError, 'pads the batch or channel dim (their pairs must be '
                                      '[0, 0])')
            spatial = flat[1:nd + 1] if channel_last else flat[2:]
            flat = [e for pair in spatial for e in pair]
        elif len(flat) not in (nd, 2 * nd):
            raise bad(ValueError, 'has %d values' % len(flat))
        for e in flat:
            if not _is_int(e):
                raise bad(TypeError, 'holds %r, not an int' % (e,))
    else:
        raise bad(TypeError, 'is a %s' % type(padding).__name__)
    flat = [int(e) for e in flat]
    if any(e < 0 for e in flat):
        raise bad(ValueError, 'holds a negative value')
    if not explicit_only and len(flat) == 2 * nd and \
            all(flat[2 * i] == flat[2 * i + 1] for i in range(nd)):
        flat = flat[::2]
    return flat, 'EXPLICIT'


def _paddings_per_side(paddings, nd):
    """_paddings' result for nd spatial dims as before and after each dim."""
    if len(paddings) == 2 * nd:
        return list(paddings)
    return [e for p in paddings for e in (p, p)]


def conv3d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,
           param_attr=None, bias_attr=None, use_cudnn=True, act=None, name=None,
           data_format='NCDHW'):
    """Fluid 1.x's conv3d (NCDHW, or NDHWC with channels last): Filter [num_filters,
    C / groups, kd, kh, kw] drawn from Normal(0, sqrt(2 / (kd kh kw C))), a bias added over
    the channel dim (1, or 4 for NDHWC), then act."""
    h = _Helper('conv3d', name)
    _check_var(input, 'input', 'conv3d')
    if not isinstance(use_cudnn, bool):
        raise ValueError('conv3d: use_cudnn must be True or False, got %r' % (use_cudnn,))
    if data_format not in ('NCDHW', 'NDHWC'):
        raise ValueError("conv3d: data_format must be 'NCDHW' or 'NDHWC', got %r" %
                         (data_format,))
    channel_last = data_format == 'NDHWC'
    if len(input.shape) != 5:
        raise ValueError('conv3d: input %s must be 5-D %s, got shape %s' %
                         (input.name, data_format, input.shape))
    c = input.shape[4 if channel_last else 1]
    if c < 0:
        raise ValueError('conv3d: the channels of input %s (shape %s) must be known' %
                         (input.name, input.shape))
    g = groups or 1
    if c % g:
        raise ValueError('conv3d: %d input channels do not divide into %d groups' % (c, g))
    fs = _ntuple(filter_size, 3, 'conv3d: filter_size')
    paddings, alg = _paddings(padding, 3, 'conv3d', channel_last=channel_last)
    std = (2.0 / (fs[0] * fs[1] * fs[2] * c)) ** 0.5
    w = h.param(param_attr, [num_filters, c // g] + fs, input.dtype.name,
                default_initializer=_NormalInit(0.0, std, 0))
    pre = h.tmp(input.dtype.name)
    h.append('conv3d', {'Input': input, 'Filter': w}, {'Output': pre},
             {'strides': _ntuple(stride, 3, 'conv3d: stride'), 'paddings': paddings,
              'dilations': _ntuple(dilation, 3, 'conv3d: dilation'), 'groups': g,
              'use_cudnn': use_cudnn, 'use_mkldnn': False, 'padding_algorithm': alg,
              'data_format': data_format})
    pre = h.bias(pre, bias_attr, num_filters, 4 if channel_last else 1, input.dtype.name)
    return h.act(pre, act)


def pool2d(input, pool_size=-1, pool_type='max', pool_stride=1, pool_padding=0,
           global_pooling=False, use_cudnn=True, ceil_mode=False, name=None, exclusive=True,
           data_format='NCHW'):
    """Fluid 1.x's pool2d (NCHW, or NHWC with channels last): max or avg over pool_size
    windows, pool_padding as conv2d's padding (_paddings; 'VALID' refusing ceil_mode, as
    Paddle)."""
    if pool_type not in ('max', 'avg'):
        raise ValueError("pool2d: pool_type must be 'max' or 'avg', got %r" % (pool_type,))
    if not global_pooling and pool_size == -1:
        raise ValueError('pool2d: pool_size must be given unless global_pooling is True')
    if data_format not in ('NCHW', 'NHWC'):
        raise ValueError("pool2d: data_format must be 'NCHW' or 'NHWC', got %r" %
                         (data_format,))
    paddings, alg = _paddings(pool_padding, 2, 'pool2d', 'pool_padding', data_format == 'NHWC')
    if alg == 'VALID' and ceil_mode:
        raise ValueError("pool2d: ceil_mode must be False when pool_padding is 'VALID'")
    h = _Helper('pool2d', name)
    out = h.tmp(input.dtype.name)
    ks = _pair(pool_size if pool_size != -1 else 1, 'pool_size')
    h.append('pool2d', {'X': input}, {'Out': out},
             {'pooling_type': pool_type, 'ksize': ks, 'global_pooling': bool(global_pooling),
              'strides': _pair(pool_stride, 'pool_stride'), 'paddings': paddings,
              'padding_algorithm': alg, 'ceil_mode': bool(ceil_mode),
              'exclusive': bool(exclusive), 'data_format': data_format})
    return out


def _adaptive_pool(nd, input, pool_size, pool_type, require_index, name):
    layer = 'adaptive_pool%dd' % nd
    _check_var(input, 'input', layer)
    if not isinstance(pool_type, str):
        raise TypeError('%s: pool_type must be a str, got %r' % (layer, pool_type))
    if not isinstance(pool_size, (int, list, tuple)):
        raise TypeError('%s: pool_size must be an int, a list or a tuple, got %r' %
                        (layer, pool_size))
    if not isinstance(require_index, bool):
        raise TypeError('%s: require_index must be a bool, got %r' % (layer, require_index))
    if pool_type not in ('max', 'avg'):
        raise ValueError("%s: unknown pool_type %r: it can only be 'max' or 'avg'" %
                         (layer, pool_type))
    if pool_type == 'avg' and require_index:
        raise ValueError("%s: require_index cannot be True when pool_type is 'avg'" % layer)
    if require_index:
        raise ValueError('%s: require_index=True (max_pool%dd_with_index\'s Mask) is not '
                         'supported by rill' % (layer, nd))
    if len(input.shape) != nd + 2:
        raise ValueError('%s: input %s must be %d-D, got shape %s' %
                         (layer, input.name, nd + 2, list(input.shape)))
    ks = _ntuple(pool_size, nd, '%s: pool_size' % layer)
    h = _Helper('pool%dd' % nd, name)
    out = h.tmp(input.dtype.name)
    h.append('pool%dd' % nd, {'X': input}, {'Out': out},
             {'pooling_type': pool_type, 'ksize': ks, 'adaptive': True})
    return out


def conv3d_transpose(input, num_filters, output_size=None, filter_size=None, padding=0,
                     stride=1, dilation=1, groups=None, param_attr=None, bias_attr=None,
                     use_cudnn=True, act=None, name=None, data_format='NCDHW'):
    """Fluid 1.x's conv3d_transpose (NCDHW, or NDHWC with channels last): Filter [C_in,
    num_filters / groups, kd, kh, kw] (Xavier by default), a bias over the channel dim (1,
    or 4 for NDHWC), then act. filter_size may be left out when output_size is given; it is
    then derived as Fluid derives it. The op records data_format 'NCHW' or 'NHWC', as
    Paddle 1.8.5 writes it."""
    if param_attr is False:
        raise ValueError('conv3d_transpose: param_attr must not be False')
    if data_format not in ('NCDHW', 'NDHWC'):
        raise ValueError("conv3d_transpose: data_format must be 'NCDHW' or 'NDHWC', got %r" %
                         (data_format,))
    channel_last = data_format == 'NDHWC'
    h = _Helper('conv3d_transpose', name)
    _check_var(input, 'input', 'conv3d_transpose')
    if len(input.shape) != 5:
        raise ValueError('conv3d_transpose: input %s must be 5-D %s, got shape %s' %
                         (input.name, data_format, input.shape))
    if not isinstance(use_cudnn, bool):
        raise ValueError('conv3d_transpose: use_cudnn must be True or False')
    stride = _ntuple(stride, 3, 'conv3d_transpose: stride')
    dilation = _ntuple(dilation, 3, 'conv3d_transpose: dilation')
    paddings, alg = _paddings(padding, 3, 'conv3d_transpose', channel_last=channel_last)
    six = _paddings_per_side(paddings, 3)
    spatial = input.shape[1:4] if channel_last else input.shape[2:5]
    if filter_size is None:
        if output_size is None:
            raise ValueError('conv3d_transpose: output_size must be set when filter_size is '
                             'None')
        osz = _ntuple(output_size, 3, 'conv3d_transpose: output_size')
        fs = []
        for i in range(3):
            if spatial[i] < 0:
                raise ValueError('conv3d_transpose: filter_size is needed when the input '
                                 'extents are unknown')
            fs.append((osz[i] - (spatial[i] - 1) * stride[i] + six[2 * i] +
                       six[2 * i + 1] - 1) // dilation[i] + 1)
    else:
        fs = _ntuple(filter_size, 3, 'conv3d_transpose: filter_size')
    g = 1 if groups is None else groups
    c = input.shape[4 if channel_last else 1]
    w = h.param(param_attr, [c, num_filters // g] + fs, input.dtype.name)
    pre = h.tmp(input.dtype.name)
    h.append('conv3d_transpose', {'Input': input, 'Filter': w}, {'Output': pre},
             {'output_size': [] if output_size is None else
              _ntuple(output_size, 3, 'conv3d_transpose: output_size'),
              'strides': stride, 'paddings': paddings, 'padding_algorithm': alg,
              'dilations': dilation, 'groups': g, 'use_cudnn': use_cudnn,
              'data_format': 'NHWC' if channel_last else 'NCHW'})
    pre = h.bias(pre, bias_attr, num_filters, 4 if channel_last else 1, input.dtype.name)
    return h.act(pre, act)


def mean_iou(input, label, num_classes):
    """Fluid 1.x's mean_iou: int32/int64 class ids against labels; returns (mean IOU
    float32 [1], wrong counts int32 [num_classes], correct counts int32 [num_classes])."""
    for v, what in ((input, 'Predictions'), (label, 'Labels')):
        _check_var(v, what, 'mean_iou')
        if v.dtype.name not in ('int32', 'int64'):
            raise TypeError("mean_iou: %s ('%s') is %s, expected int32 or int64" %
                            (what, v.name, v.dtype.name))
    h = _Helper('mean_iou')
    miou = h.tmp('float32')
    wrong = h.tmp('int32')
    correct = h.tmp('int32')
    h.append('mean_iou', {'Predictions': input, 'Labels': label},
             {'OutMeanIou': miou, 'OutWrong': wrong, 'OutCorrect': correct},
             {'num_classes': int(num_classes)})
    return miou, wrong, correct


def pool3d(input, pool_size=-1, pool_type='max', pool_stride=1, pool_padding=0,
           global_pooling=False, use_cudnn=True, ceil_mode=False, name=None, exclusive=True,
           data_format='NCDHW'):
    """Fluid 1.x's pool3d (NCDHW, or NDHWC with channels last): max or avg over pool_size
    windows; pool_padding as conv3d's padding (with 'VALID' refusing ceil_mode, as
    Paddle)."""
    if pool_type not in ('max', 'avg'):
        raise ValueError("pool3d: unknown pool_type %r: it can only be 'max' or 'avg'" %
                         (pool_type,))
    if global_pooling is False and pool_size == -1:
        raise ValueError('pool3d: pool_size must be given unless global_pooling is True')
    if not isinstance(use_cudnn, bool):
        raise TypeError('pool3d: use_cudnn must be True or False, got %r' % (use_cudnn,))
    if data_format not in ('NCDHW', 'NDHWC'):
        raise ValueError("pool3d: data_format must be 'NCDHW' or 'NDHWC', got %r" %
                         (data_format,))
    _check_var(input, 'input', 'pool3d')
    paddings, alg = _paddings(pool_padding, 3, 'pool3d', 'pool_padding', data_format == 'NDHWC')
    if alg == 'VALID' and ceil_mode:
        raise ValueError("pool3d: pool_padding 'VALID' needs ceil_mode False")
    h = _Helper('pool3d', name)
    out = h.tmp(input.dtype.name)
    h.append('pool3d', {'X': input}, {'Out': out},
             {'pooling_type': pool_type, 'ksize': _ntuple(pool_size, 3, 'pool3d: pool_size'),
              'global_pooling': bool(global_pooling),
              'strides': _ntuple(pool_stride, 3, 'pool3d: pool_stride'), 'paddings': paddings,
              'padding_algorithm': alg, 'use_cudnn': use_cudnn, 'ceil_mode': bool(ceil_mode),
              'use_mkldnn': False, 'exclusive': bool(exclusive), 'data_format': data_format})
    return out


def adaptive_pool2d(input, pool_size, pool_type='max', require_index=False, name=None):
    """Fluid 1.x's adaptive_pool2d: output extents [pool_size_h, pool_size_w], window i of
    a dim covering [floor(i * in / out), ceil((i + 1) * in / out)). Max pooling runs as
    pool2d with adaptive=True (Paddle's max_pool2d_with_index gives the same Out and
    gradient; its Mask, require_index=True, is refused)."""
    return _adaptive_pool(2, input, pool_size, pool_type, require_index, name)


def adaptive_pool3d(input, pool_size, pool_type='max', require_index=False, name=None):
    """Fluid 1.x's adaptive_pool3d: adaptive_pool2d over D, H and W (pool3d with
    adaptive; require_index refused)."""
    return _adaptive_pool(3, input, pool_size, pool_type, require_index, name)


def batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
               bias_attr=None, data_layout='NCHW', in_place=False, name=None,
               moving_mean_name=None, moving_variance_name=None,
               do_model_average_for_mean_and_var=False, use_global_stats=False):
    h = _Helper('batch_norm', name)
    _check_var(input, 'input', 'batch_norm')
    dt = input.dtype.name
    c = input.shape[1] if data_layout == 'NCHW' else input.shape[-1]
    scale = h.param(param_attr, [c], dt, default_initializer=Constant(1.0))
    bias = h.param(bias_attr, [c], dt, is_bias=True)
    avg = do_model_average_for_mean_and_var
    mean = h.param(ParamAttr(name=moving_mean_name, initializer=Constant(0.0),
                             trainable=False, do_model_average=avg), [c], dt)
    var = h.param(ParamAttr(name=moving_variance_name, initializer=Constant(1.0),
                            trainable=False, do_model_average=avg), [c], dt)
    saved_mean = h.tmp(dt, stop_gradient=True)
    saved_var = h.tmp(dt, stop_gradient=True)
    out = input if in_place else h.tmp(dt)
    h.append('batch_norm',
             {'X': input, 'Scale': scale, 'Bias': bias, 'Mean': mean, 'Variance': var},
             {'Y': out, 'MeanOut': mean, 'VarianceOut': var, 'SavedMean': saved_mean,
              'SavedVariance': saved_var},
             {'momentum': float(momentum), 'epsilon': float(epsilon), 'is_test': bool(is_test),
              'data_layout': data_layout, 'use_global_stats': bool(use_global_stats)})
    return h.act(out, act)


def layer_norm(input, scale=True, shift=True, begin_norm_axis=1, epsilon=1e-05,
               param_attr=None, bias_attr=None, act=None, name=None):
    h = _Helper('layer_norm', name)
    dt = input.dtype.name
    n = int(np.prod(input.shape[begin_norm_axis:]))
    ins = {'X': input}
    if scale:
        ins['Scale'] = h.param(param_attr, [n], dt, default_initializer=Constant(1.0))
    if shift:
        ins['Bias'] = h.param(bias_attr, [n], dt, is_bias=True)
    out = h.tmp(dt)
    m = h.tmp(dt, stop_gradient=True)
    v = h.tmp(dt, stop_gradient=True)
    h.append('layer_norm', ins, {'Y': out, 'Mean': m, 'Variance': v},
             {'epsilon': float(epsilon), 'begin_norm_axis': int(begin_norm_axis)})
    return h.act(out, act)


def dropout(x, dropout_prob, is_test=False, seed=None, name=None,
            dropout_implementation='downgrade_in_infer'):
    if not 0.0 <= dropout_prob <= 1.0:
        raise ValueError('dropout: dropout_prob must be in [0, 1], got %r' % (dropout_prob,))
    if dropout_implementation not in ('downgrade_in_infer', 'upscale_in_train'):
        raise ValueError('dropout: unknown dropout_implementation %r' % dropout_implementation)
    h = _Helper('dropout', name)
    if not seed and h.main.random_seed:
        seed = h.main.random_seed  # Fluid: the program's seed fixes the masks
    out = h.tmp(x.dtype.name)
    mask = h.tmp('uint8', stop_gradient=True)
    h.append('dropout', {'X': x}, {'Out': out, 'Mask': mask},
             {'dropout_prob': float(dropout_prob), 'is_test': bool(is_test),
              'fix_seed': bool(seed), 'seed': int(seed or 0),
              'dropout_implementation': dropout_implementation})
    return out


# -------------------------------------------------------------- activations ----

def _unary(op, x, name=None, **attrs):
    _check_var(x, 'x', op)
    h = _Helper(op, name)
    out = h.tmp(x.dtype.name)
    h.append(op, {'X': x}, {'Out': out}, attrs)
    return out


def relu(x, name=None):
    return _unary('relu', x, name)


def sigmoid(x, name=None):
    return _unary('sigmoid', x, name)


def tanh(x, name=None):
    return _unary('tanh', x, name)


def exp(x, name=None):
    return _unary('exp', x, name)


def log(x, name=None):
    return _unary('log', x, name)


def sqrt(x, name=None):
    return _unary('sqrt', x, name)


def square(x, name=None):
    return _unary('square', x, name)


def leaky_relu(x, alpha=0.02, name=None):
    return _unary('leaky_relu', x, name, alpha=float(alpha))


def relu6(x, threshold=6.0, name=None):
    return _unary('relu6', x, name, threshold=float(threshold))


def swish(x, beta=1.0, name=None):
    """x * sigmoid(x), as Fluid 1.8.5's layer builds it: that layer hands `beta` to the
    op as an attribute 'slope', which the op lacks, so the op keeps beta 1.0 and the
    argument changes nothing. rill keeps Paddle's numbers and warns; the op itself
    honours its beta attribute where a program sets one."""
    if float(beta) != 1.0:
        import warnings
        warnings.warn('swish: beta=%r has no effect, as in Fluid 1.8.5, whose layer passes it '
                      'as an attribute the op lacks; the op runs with beta 1.0' % (beta,))
    return _unary('swish', x, name, beta=1.0)


def gelu(x, approximate=False, name=None):
    return _unary('gelu', x, name, approximate=bool(approximate))


def hard_sigmoid(x, slope=0.2, offset=0.5, name=None):
    return _unary('hard_sigmoid', x, name, slope=float(slope), offset=float(offset))


def hard_swish(x, threshold=6.0, scale=6.0, offset=3.0, name=None):
    return _unary('hard_swish', x, name, threshold=float(threshold), scale=float(scale),
                  offset=float(offset))


# The math family of Fluid's layers/ops.py and nn.py: Paddle 1.8.5's signatures; an
# attribute passed as None keeps the op's default, as Fluid's generated layers do.

def _act_attrs(**attrs):
    return {k: float(v) for k, v in attrs.items() if v is not None}


def abs(x, name=None):
    return _unary('abs', x, name)


def ceil(x, name=None):
    return _unary('ceil', x, name)


def floor(x, name=None):
    return _unary('floor', x, name)


def round(x, name=None):
    return _unary('round', x, name)


def sign(x):
    return _unary('sign', x)


def cos(x, name=None):
    return _unary('cos', x, name)


def sin(x, name=None):
    return _unary('sin', x, name)


def acos(x, name=None):
    return _unary('acos', x, name)


def asin(x, name=None):
    return _unary('asin', x, name)


def atan(x, name=None):
    return _unary('atan', x, name)


def reciprocal(x, name=None):
    return _unary('reciprocal', x, name)


def rsqrt(x, name=None):
    return _unary('rsqrt', x, name)


def softplus(x, name=None):
    return _unary('softplus', x, name)


def softsign(x, name=None):
    return _unary('softsign', x, name)


def logsigmoid(x, name=None):
    return _unary('logsigmoid', x, name)


def tanh_shrink(x, name=None):
    return _unary('tanh_shrink', x, name)


def softshrink(x, alpha=None):
    return _unary('softshrink', x, None, **_act_attrs(**{'lambda': alpha}))


def hard_shrink(x, threshold=None):
    return _unary('hard_shrink', x, None, **_act_attrs(threshold=threshold))


def thresholded_relu(x, threshold=None):
    return _unary('thresholded_relu', x, None, **_act_attrs(threshold=threshold))


def elu(x, alpha=1.0, name=None):
    return _unary('elu', x, name, alpha=float(alpha))


def selu(x, scale=None, alpha=None, name=None):
    return _unary('selu', x, name, **_act_attrs(scale=scale, alpha=alpha))


def brelu(x, t_min=0.0, t_max=24.0, name=None):
    return _unary('brelu', x, name, t_min=float(t_min), t_max=float(t_max))


def soft_relu(x, threshold=40.0, name=None):
    return _unary('soft_relu', x, name, threshold=float(threshold))


def stanh(x, scale_a=0.67, scale_b=1.7159, name=None):
    return _unary('stanh', x, name, scale_a=float(scale_a), scale_b=float(scale_b))


def erf(x):
    return _unary('erf', x)


def mish(x, threshold=20, name=None):
    return _unary('mish', x, name, threshold=float(threshold))


def log1p(x, out=None, name=None):
    if out is None:
        return _unary('log1p', x, name)
    _check_var(x, 'x', 'log1p')
    _Helper('log1p', name).append('log1p', {'X': x}, {'Out': out}, {})
    return out


def pow(x, factor=1.0, name=None):
    """x ** factor; factor may be a Variable (one float32 element), read at run time."""
    _check_var(x, 'x', 'pow')
    h = _Helper('pow', name)
    out = h.tmp(x.dtype.name)
    if isinstance(factor, Variable):
        factor.stop_gradient = True
        h.append('pow', {'X': x, 'FactorTensor': factor}, {'Out': out}, {})
    else:
        h.append('pow', {'X': x}, {'Out': out}, {'factor': float(factor)})
    return out


__all__ += ['abs', 'ceil', 'floor', 'round', 'sign', 'cos', 'sin', 'acos', 'asin', 'atan',
            'reciprocal', 'rsqrt', 'softplus', 'softsign', 'logsigmoid', 'tanh_shrink',
            'softshrink', 'hard_shrink', 'thresholded_relu', 'elu', 'selu', 'brelu',
            'soft_relu', 'stanh', 'erf', 'mish', 'log1p', 'pow']


def prelu(x, mode, param_attr=None, name=None):
    """max(0, x) + alpha * min(0, x) with a learned alpha (initialised to 0.25): one for
    all of x ('all'), one per channel of an [N, C, ...] x ('channel', alpha [1, C, 1, 1])
    or one per element of a sample ('element', alpha [1] + x.shape[1:])."""
    _check_var(x, 'x', 'prelu')
    if mode not in ('all', 'channel', 'element'):
        raise ValueError('prelu: mode should be one of all, channel, element, not %r' % (mode,))
    alpha_shape = [1]
    if mode == 'channel':
        if len(x.shape) < 2:
            raise ValueError('prelu: mode channel needs x of 2 dims or more, x has shape %s'
                             % (list(x.shape),))
        alpha_shape = [1, x.shape[1], 1, 1]
    elif mode == 'element':
        if len(x.shape) < 1:
            raise ValueError('prelu: mode element needs x of 1 dim or more')
        alpha_shape = [1] + list(x.shape)[1:]
    h = _Helper('prelu', name)
    alpha = h.param(param_attr, alpha_shape, 'float32', default_initializer=Constant(0.25))
    out = h.tmp(x.dtype.name)
    h.append('prelu', {'X': x, 'Alpha': alpha}, {'Out': out}, {'mode': mode})
    return out


__all__ += ['prelu']


def softmax(input, use_cudnn=False, name=None, axis=-1):
    return _unary('softmax', input, name, axis=int(axis))


def log_softmax(input, axis=-1, name=None):
    return _unary('log_softmax', input, name, axis=int(axis))


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    """scale * x + bias (or scale * (x + bias)). With `name`, the output variable has
    exactly that name (save_inference_model's save_infer_model/scale_i)."""
    _check_var(x, 'x', 'scale')
    h = _Helper('scale', name)
    if name is None:
        out = h.tmp(x.dtype.name)
    else:
        out = h.block.create_var(name=name, dtype=x.dtype.name, infer=True)
    h.append('scale', {'X': x}, {'Out': out},
             {'scale': float(scale), 'bias': float(bias),
              'bias_after_scale': bool(bias_after_scale)})
    return h.act(out, act)


def clip(x, min, max, name=None):
    return _unary('clip', x, name, min=float(min), max=float(max))


def cast(x, dtype):
    h = _Helper('cast')
    out = h.tmp(dtype)
    h.append('cast', {'X': x}, {'Out': out},
             {'in_dtype': x.desc['dtype'], 'out_dtype': core.dtype_code(dtype)})
    return out


# ------------------------------------------------------------------- losses ----

def cross_entropy(input, label, soft_label=False, ignore_index=-100):
    """-log(input[label]) per row (input holds probabilities, e.g. a softmax)."""
    h = _Helper('cross_entropy')
    out = h.tmp(input.dtype.name)
    h.append('cross_entropy', {'X': input, 'Label': label}, {'Y': out},
             {'soft_label': bool(soft_label), 'ignore_index': int(ignore_index)})
    return out


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100,
                               numeric_stable_mode=True, return_softmax=False, axis=-1):
    h = _Helper('softmax_with_cross_entropy')
    sm = h.tmp(logits.dtype.name)
    loss = h.tmp(logits.dtype.name)
    h.append('softmax_with_cross_entropy', {'Logits': logits, 'Label': label},
             {'Softmax': sm, 'Loss': loss},
             {'soft_label': bool(soft_label), 'ignore_index': int(ignore_index),
              'numeric_stable_mode': bool(numeric_stable_mode), 'axis': int(axis)})
    return (loss, sm) if return_softmax else loss


def square_error_cost(input, label):
    """(input - label)^2, elementwise."""
    h = _Helper('square_error_cost')
    diff = h.tmp(input.dtype.name)
    h.append('elementwise_sub', {'X': input, 'Y': label}, {'Out': diff}, {'axis': -1})
    out = h.tmp(input.dtype.name)
    h.append('square', {'X': diff}, {'Out': out})
    return out


def mean(x, name=None):
    h = _Helper('mean', name)
    out = h.tmp(x.dtype.name)
    h.append('mean', {'X': x}, {'Out': out})
    return out


def topk(input, k, name=None):
    h = _Helper('top_k', name)
    vals = h.tmp(input.dtype.name)
    idx = h.tmp('int64', stop_gradient=True)
    h.append('top_k', {'X': input}, {'Out': vals, 'Indices': idx}, {'k': int(k)})
    return vals, idx


def accuracy(input, label, k=1, correct=None, total=None):
    """Fraction of rows whose label is among the top k of input."""
    h = _Helper('accuracy')
    vals, idx = topk(input, k)
    acc = h.tmp('float32', stop_gradient=True)
    correct = correct or h.tmp('int32', stop_gradient=True)
    total = total or h.tmp('int32', stop_gradient=True)
    h.append('accuracy', {'Out': vals, 'Indices': idx, 'Label': label},
             {'Accuracy': acc, 'Correct': correct, 'Total': total})
    return acc


def _zeroed_state(h, suffix, shape, dtype):
    """A persistable variable of the main program, zeroed by the startup program."""
    name = unique_name.generate('%s.%s' % (h.name, suffix))
    v = default_main_program().global_block().create_var(
        name=name, shape=shape, dtype=dtype, persistable=True)
    v.stop_gradient = True
    sv = default_startup_program().global_block().create_var(
        name=name, shape=shape, dtype=dtype, persistable=True)
    Constant(0.0)(sv, default_startup_program().global_block())
    return v


def auc(input, label, curve='ROC', num_thresholds=2 ** 12 - 1, topk=1, slide_steps=1):
    """Fluid 1.x's layers.auc: the area under the ROC curve of input[:, -1] (the
    probability of class 1) against label, counted into num_thresholds + 1 buckets.
    Returns (auc over every run, auc over the last slide_steps runs, [the batch window's
    positive and negative counts, the global positive and negative counts])."""
    _check_var(input, 'input', 'auc')
    _check_var(label, 'label', 'auc')
    if input.dtype.name not in ('float32', 'float64'):
        raise TypeError('auc: input must be float32 or float64, got %s' % input.dtype.name)
    if label.dtype.name not in ('int32', 'int64'):
        raise TypeError('auc: label must be int32 or int64, got %s' % label.dtype.name)
    h = _Helper('auc')
    nt, k = int(num_thresholds), int(slide_steps)
    auc_out = h.tmp('float64', stop_gradient=True)
    batch_auc_out = h.tmp('float64', stop_gradient=True)
    batch_pos = _zeroed_state(h, 'batch_stat_pos', [(1 + k) * (nt + 1) + 1], 'int64')
    batch_neg = _zeroed_state(h, 'batch_stat_neg', [(1 + k) * (nt + 1) + 1], 'int64')
    pos = _zeroed_state(h, 'stat_pos', [1, nt + 1], 'int64')
    neg = _zeroed_state(h, 'stat_neg', [1, nt + 1], 'int64')
    h.append('auc', {'Predict': input, 'Label': label, 'StatPos': batch_pos,
                     'StatNeg': batch_neg},
             {'AUC': batch_auc_out, 'StatPosOut': batch_pos, 'StatNegOut': batch_neg},
             {'curve': curve, 'num_thresholds': nt, 'slide_steps': k})
    h.append('auc', {'Predict': input, 'Label': label, 'StatPos': pos, 'StatNeg': neg},
             {'AUC': auc_out, 'StatPosOut': pos, 'StatNegOut': neg},
             {'curve': curve, 'num_thresholds': nt, 'slide_steps': 0})
    return auc_out, batch_auc_out, [batch_pos, batch_neg, pos, neg]


def ctc_greedy_decoder(input, blank, input_length=None, padding_value=0, name=None):
    """Fluid 1.x's ctc_greedy_decoder: the best path of CTC outputs. topk(input, 1) picks
    each step's most probable class, then the `ctc_align` op merges repeats and removes
    `blank`. `input` is a LoD tensor [T, C] (returns the int64 LoD tensor of decoded
    tokens; [-1] with an all-zero LoD when nothing is decoded), or with `input_length`
    ([N, 1] int64) a padded [N, T, C] tensor (returns ([N, T] tokens padded with
    padding_value, [N, 1] lengths))."""
    _check_var(input, 'input', 'ctc_greedy_decoder')
    if input.dtype.name not in ('float32', 'float64'):
        raise TypeError("ctc_greedy_decoder: input '%s' is %s, expected float32 or float64"
                        % (input.name, input.dtype.name))
    h = _Helper('ctc_greedy_decoder', name)
    _, indices = topk(input, k=1)
    out = h.tmp('int64', stop_gradient=True)
    attrs = {'merge_repeated': True, 'blank': int(blank)}
    if input_length is None:
        h.append('ctc_align', {'Input': indices}, {'Output': out}, attrs)
        return out
    _check_var(input_length, 'input_length', 'ctc_greedy_decoder')
    out_len = h.tmp('int64', stop_gradient=True)
    attrs['padding_value'] = int(padding_value)
    h.append('ctc_align', {'Input': squeeze(indices, [2]), 'InputLength': input_length},
             {'Output': out, 'OutputLength': out_len}, attrs)
    return out, out_len


def warpctc(input, label, blank=0, norm_by_times=False, input_length=None, label_length=None):
    """Fluid 1.x's warpctc: the CTC loss of each sequence, the `warpctc` op. `input` holds
    unnormalized class scores (softmax is applied inside): a float32 LoD tensor [Lp, C]
    with int32 `label` LoD [Lg, 1]; or, with int64 `input_length` and `label_length`
    ([N]), a padded time-major [Tmax, N, C] with `label` [N, Lmax]. `blank` is the blank
    class in [0, C); norm_by_times scales each sequence's gradient by 1 / its frames.
    Returns Loss [N, 1]."""
    _check_var(input, 'input', 'warpctc')
    _check_var(label, 'label', 'warpctc')
    if input.dtype.name != 'float32':
        raise TypeError("warpctc: input '%s' is %s, expected float32" % (input.name, input.dtype.name))
    if label.dtype.name != 'int32':
        raise TypeError("warpctc: label '%s' is %s, expected int32" % (label.name, label.dtype.name))
    inputs = {'Logits': input, 'Label': label}
    if input_length is not None and label_length is not None:
        for what, v in (('input_length', input_length), ('label_length', label_length)):
            _check_var(v, what, 'warpctc')
            if v.dtype.name != 'int64':
                raise TypeError("warpctc: %s '%s' is %s, expected int64" % (what, v.name, v.dtype.name))
        inputs['LogitsLength'] = input_length
        inputs['LabelLength'] = label_length
    h = _Helper('warpctc')
    loss, grad = h.tmp(input.dtype.name), h.tmp(input.dtype.name)
    h.append('warpctc', inputs, {'WarpCTCGrad': grad, 'Loss': loss},
             {'blank': int(blank), 'norm_by_times': bool(norm_by_times)})
    return loss


def edit_distance(input, label, normalized=True, ignored_tokens=None, input_length=None,
                  label_length=None):
    """Fluid 1.x's edit_distance: the Levenshtein distance of each int64 hypothesis
    sequence (input) to its reference (label), both LoD [T, 1], or padded [B, T] with
    input_length/label_length; divided by the reference's length when normalized.
    ignored_tokens are removed from both sides first (the sequence_erase op, which needs
    the LoD form). Returns (float32 distances [B, 1], int64 [1] number of pairs)."""
    _check_var(input, 'input', 'edit_distance')
    _check_var(label, 'label', 'edit_distance')
    h = _Helper('edit_distance')
    if ignored_tokens is not None and len(ignored_tokens) > 0:
        # as Paddle: both sides go through the sequence_erase op first (LoD form only)
        tokens = [int(t) for t in ignored_tokens]
        erased = []
        for v in (input, label):
            e = h.tmp('int64', stop_gradient=True)
            h.append('sequence_erase', {'X': v}, {'Out': e}, {'tokens': tokens})
            erased.append(e)
        input, label = erased
    ins = {'Hyps': input, 'Refs': label}
    if input_length is not None and label_length is not None:
        ins['HypsLength'] = input_length
        ins['RefsLength'] = label_length
    out = h.tmp('float32', stop_gradient=True)
    num = h.tmp('int64', stop_gradient=True)
    h.append('edit_distance', ins, {'Out': out, 'SequenceNum': num},
             {'normalized': bool(normalized)})
    return out, num


def argmax(x, axis=0):
    h = _Helper('arg_max')
    out = h.tmp('int64', stop_gradient=True)
    h.append('arg_max', {'X': x}, {'Out': out}, {'axis': int(axis)})
    return out


def one_hot(input, depth, allow_out_of_range=False):
    """Fluid 1.x's one_hot: int ids [..., 1] -> float32 [..., depth] (the trailing 1
    replaced). `depth` may be an int or a one-element int Variable."""
    h = _Helper('one_hot')
    out = h.tmp('float32', stop_gradient=True)
    ins = {'X': input}
    attrs = {'allow_out_of_range': bool(allow_out_of_range)}
    if isinstance(depth, Variable):
        ins['depth_tensor'] = depth
    else:
        attrs['depth'] = int(depth)
    h.append('one_hot', ins, {'Out': out}, attrs)
    return out


# ------------------------------------------------------------------- shapes ----

def concat(input, axis=0, name=None):
    h = _Helper('concat', name)
    out = h.tmp(input[0].dtype.name)
    h.append('concat', {'X': list(input)}, {'Out': out}, {'axis': int(axis)})
    return out


def reshape(x, shape, actual_shape=None, act=None, inplace=False, name=None):
    """Fluid's reshape: 0 copies the input extent, one -1 is inferred."""
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        raise ValueError('reshape: at most one -1 in shape %s' % shape)
    h = _Helper('reshape2', name)
    out = h.tmp(x.dtype.name)
    xshape = h.tmp(x.dtype.name, stop_gradient=True)
    ins = {'X': x}
    if actual_shape is not None:
        ins['Shape'] = actual_shape
    h.append('reshape2', ins, {'Out': out, 'XShape': xshape}, {'shape': shape})
    return h.act(out, act)


def flatten(x, axis=1, name=None):
    h = _Helper('flatten2', name)
    out = h.tmp(x.dtype.name)
    xshape = h.tmp(x.dtype.name, stop_gradient=True)
    h.append('flatten2', {'X': x}, {'Out': out, 'XShape': xshape}, {'axis': int(axis)})
    return out


def transpose(x, perm, name=None):
    if sorted(perm) != list(range(len(x.shape))):
        raise ValueError('transpose: perm %s is not a permutation of the %d dims of %s' %
                         (list(perm), len(x.shape), x.name))
    h = _Helper('transpose2', name)
    out = h.tmp(x.dtype.name)
    xshape = h.tmp(x.dtype.name, stop_gradient=True)
    h.append('transpose2', {'X': x}, {'Out': out, 'XShape': xshape}, {'axis': list(perm)})
    return out


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    h = _Helper('matmul', name)
    out = h.tmp(x.dtype.name)
    h.append('matmul', {'X': x, 'Y': y}, {'Out': out},
             {'transpose_X': bool(transpose_x), 'transpose_Y': bool(transpose_y),
              'alpha': float(alpha)})
    return out


def _reduce(op, input, dim, keep_dim, name):
    h = _Helper(op, name)
    out = h.tmp(input.dtype.name)
    if dim is None:
        attrs = {'dim': [0], 'reduce_all': True, 'keep_dim': bool(keep_dim)}
    else:
        dims = dim if isinstance(dim, (list, tuple)) else [dim]
        attrs = {'dim': [int(d) for d in dims], 'reduce_all': False, 'keep_dim': bool(keep_dim)}
    h.append(op, {'X': input}, {'Out': out}, attrs)
    return out


def reduce_sum(input, dim=None, keep_dim=False, name=None):
    return _reduce('reduce_sum', input, dim, keep_dim, name)


def reduce_mean(input, dim=None, keep_dim=False, name=None):
    return _reduce('reduce_mean', input, dim, keep_dim, name)


# --------------------------------------------------------------- elementwise ----

def _elementwise(op, x, y, axis, act, name):
    _check_var(x, 'x', op)
    _check_var(y, 'y', op)
    h = _Helper(op, name)
    out = h.tmp(x.dtype.name)
    h.append(op, {'X': x, 'Y': y}, {'Out': out}, {'axis': int(axis)})
    return h.act(out, act)


def elementwise_add(x, y, axis=-1, act=None, name=None):
    return _elementwise('elementwise_add', x, y, axis, act, name)


def elementwise_sub(x, y, axis=-1, act=None, name=None):
    return _elementwise('elementwise_sub', x, y, axis, act, name)


def elementwise_mul(x, y, axis=-1, act=None, name=None):
    return _elementwise('elementwise_mul', x, y, axis, act, name)


def elementwise_div(x, y, axis=-1, act=None, name=None):
    return _elementwise('elementwise_div', x, y, axis, act, name)


def elementwise_max(x, y, axis=-1, act=None, name=None):
    return _elementwise('elementwise_max', x, y, axis, act, name)


def elementwise_min(x, y, axis=-1, act=None, name=None):
    return _elementwise('elementwise_min', x, y, axis, act, name)


def elementwise_pow(x, y, axis=-1, act=None, name=None):
    return _elementwise('elementwise_pow', x, y, axis, act, name)


def elementwise_mod(x, y, axis=-1, act=None, name=None):
    """x % y for int32/int64 (C's remainder: its sign is x's, as in Paddle 1.8.5)."""
    return _elementwise('elementwise_mod', x, y, axis, act, name)


def elementwise_floordiv(x, y, axis=-1, act=None, name=None):
    """x / y for int32/int64, truncated toward zero as in Paddle 1.8.5."""
    return _elementwise('elementwise_floordiv', x, y, axis, act, name)


__all__ += ['elementwise_mod', 'elementwise_floordiv']


# ---------------------------------------------------------------- more shapes ----

def split(input, num_or_sections, dim=-1, name=None):
    """Splits along dim into num equal parts, or parts of the given extents."""
    h = _Helper('split', name)
    if isinstance(num_or_sections, int):
        n, attrs = num_or_sections, {'num': num_or_sections, 'sections': [], 'axis': int(dim)}
    else:
        n = len(num_or_sections)
        attrs = {'num': 0, 'sections': [int(s) for s in num_or_sections], 'axis': int(dim)}
    outs = [h.tmp(input.dtype.name) for _ in range(n)]
    h.append('split', {'X': input}, {'Out': outs}, attrs)
    return outs


def squeeze(input, axes, name=None):
    h = _Helper('squeeze2', name)
    out = h.tmp(input.dtype.name)
    xshape = h.tmp(input.dtype.name, stop_gradient=True)
    h.append('squeeze2', {'X': input}, {'Out': out, 'XShape': xshape},
             {'axes': [int(a) for a in axes]})
    return out


def unsqueeze(input, axes, name=None):
    h = _Helper('unsqueeze2', name)
    out = h.tmp(input.dtype.name)
    xshape = h.tmp(input.dtype.name, stop_gradient=True)
    h.append('unsqueeze2', {'X': input}, {'Out': out, 'XShape': xshape},
             {'axes': [int(a) for a in axes]})
    return out


def slice(input, axes, starts, ends):
    if not len(axes) == len(starts) == len(ends):
        raise ValueError('slice: axes, starts and ends must have one entry each, got %d, %d, '
                         '%d' % (len(axes), len(starts), len(ends)))
    h = _Helper('slice')
    out = h.tmp(input.dtype.name)
    h.append('slice', {'Input': input}, {'Out': out},
             {'axes': [int(a) for a in axes], 'starts': [int(a) for a in starts],
              'ends': [int(a) for a in ends]})
    return out


def sums(input, out=None):
    """The elementwise sum of a list of variables of one shape."""
    h = _Helper('sum')
    out = out or h.tmp(input[0].dtype.name)
    h.append('sum', {'X': list(input)}, {'Out': out})
    return out


def _compare(op, x, y, cond=None, force_cpu=None):
    """x <op> y elementwise into a new bool variable, or into `cond` when given (how a
    While loop updates its condition); with force_cpu, on the host whatever the
    executor's place, as a loop's condition over a host counter is."""
    h = _Helper(op)
    out = cond if cond is not None else h.tmp('bool', stop_gradient=True)
    attrs = {'axis': -1}
    if force_cpu is not None:
        attrs['force_cpu'] = bool(force_cpu)
    h.append(op, {'X': x, 'Y': y}, {'Out': out}, attrs)
    return out


def less_than(x, y, force_cpu=None, cond=None):
    return _compare('less_than', x, y, cond, force_cpu)


def less_equal(x, y, cond=None):
    return _compare('less_equal', x, y, cond)


def greater_than(x, y, cond=None):
    return _compare('greater_than', x, y, cond)


def greater_equal(x, y, cond=None):
    return _compare('greater_equal', x, y, cond)


def equal(x, y, cond=None):
    return _compare('equal', x, y, cond)


def not_equal(x, y, cond=None):
    return _compare('not_equal', x, y, cond)


def _logical(op, x, y, out, name):
    ins = {'X': x} if y is None else {'X': x, 'Y': y}
    for what, v in (('x', x), ('y', y)):
        if v is not None:
            _check_var(v, what, op)
            if v.dtype != np.dtype('bool'):
                raise TypeError('%s: %s must be a bool Variable, not %s' % (op, what, v.dtype.name))
    h = _Helper(op, name)
    out = out if out is not None else h.tmp('bool', stop_gradient=True)
    h.append(op, ins, {'Out': out})
    return out


def logical_and(x, y, out=None, name=None):
    return _logical('logical_and', x, y, out, name)


def logical_or(x, y, out=None, name=None):
    return _logical('logical_or', x, y, out, name)


def logical_xor(x, y, out=None, name=None):
    return _logical('logical_xor', x, y, out, name)


def logical_not(x, out=None, name=None):
    return _logical('logical_not', x, None, out, name)


__all__ += ['logical_and', 'logical_or', 'logical_xor', 'logical_not']


def is_empty(x, cond=None):
    """A bool [1]: whether x has no elements (written into cond when given)."""
    _check_var(x, 'x', 'is_empty')
    h = _Helper('is_empty')
    if cond is None:
        cond = h.tmp('bool', stop_gradient=True)
    elif cond.dtype.name != 'bool':
        raise TypeError('is_empty: cond must be bool, not %s' % cond.dtype.name)
    h.append('is_empty', {'X': [x]}, {'Out': [cond]})
    return cond


__all__ += ['is_empty']


def increment(x, value=1.0, in_place=True):
    """x + value for a one-element x; written into x itself unless in_place is False."""
    h = _Helper('increment')
    out = x if in_place else h.tmp(x.dtype.name)
    h.append('increment', {'X': [x]}, {'Out': [out]}, {'step': float(value)})
    return out


# ------------------------------------------------------------ tensor arrays ----

_LOD_TENSOR_ARRAY = 13  # VarType.LOD_TENSOR_ARRAY


def create_array(dtype):
    """An empty tensor array (LOD_TENSOR_ARRAY) of `dtype` items; no op is appended."""
    h = _Helper('array')
    return h.block.create_var(name='%s.out' % h.name, dtype=dtype, type=_LOD_TENSOR_ARRAY)


def array_write(x, i, array=None):
    """array[i] = x (a copy), growing the array to i + 1 items; a new array when `array`
    is None. i is an int64 tensor of one element. Returns the array."""
    _check_var(x, 'x', 'array_write')
    _check_var(i, 'i', 'array_write')
    h = _Helper('array_write')
    if array is None:
        array = h.block.create_var(name='%s.out' % h.name, dtype=x.dtype.name,
                                   type=_LOD_TENSOR_ARRAY)
    h.append('write_to_array', {'X': [x], 'I': [i]}, {'Out': [array]})
    if not array.shape and x.shape:
        # as Paddle: the items' shape, for array_read
        array._set_meta(array.desc['dtype'], x.shape)
    return array


def array_read(array, i):
    """A copy of array[i], declared with the shape array_write gave the array (its
    first item's); an index past the end fails when the program runs."""
    _check_var(array, 'array', 'array_read')
    _check_var(i, 'i', 'array_read')
    h = _Helper('array_read')
    out = h.tmp(array.dtype.name)
    h.append('read_from_array', {'X': [array], 'I': [i]}, {'Out': [out]})
    if not out.shape and array.shape:
        out._set_meta(out.desc['dtype'], array.shape)
    return out


def array_length(array):
    """The number of items of a tensor array: int64, shape [1]."""
    _check_var(array, 'array', 'array_length')
    h = _Helper('array_length')
    out = h.tmp('int64', stop_gradient=True)
    h.append('lod_array_length', {'X': [array]}, {'Out': [out]})
    return out



# ------------------------------------------------------------ control flow ----

_STEP_SCOPES = 11  # VarType.STEP_SCOPES


def _flatten_outputs(out):
    if out is None:
        return None
    if isinstance(out, Variable):
        return [out]
    if isinstance(out, (list, tuple)) and all(isinstance(v, Variable) for v in out):
        return list(out)
    raise TypeError('cond: a branch must return None, a Variable, or a list or tuple of '
                    'Variables, not %r' % (out,))


def _block_io(sub, parent):
    """What `sub` (and the blocks inside it) reads from its ancestors, and which of their
    variables it writes, as Fluid's ConditionalBlock computes them: the Input and Out of
    the op that runs it."""
    reads, writes, made = [], [], set()

    def walk(block):
        for op in block.ops:
            for n in op.input_arg_names:
                if n not in made and n not in reads:
                    reads.append(n)
            for n in op.output_arg_names:
                made.add(n)
                if n not in writes:
                    writes.append(n)
            for a in op.desc['attrs']:
                if a[1] == core.ATTR_BLOCK:
                    walk(block.program.block(a[2]))

    walk(sub)
    inputs = [n for n in reads if parent._find_var_recursive(n) is not None]
    outputs = [n for n in writes if parent._find_var_recursive(n) is not None]
    return inputs, outputs


def _conditional_block(h, parent, sub, flag, is_scalar_condition=True):
    inputs, outputs = _block_io(sub, parent)
    scope = parent.create_var(name=unique_name.generate(h.name + '.scope'), type=_STEP_SCOPES)
    parent.append_op('conditional_block', inputs={'Cond': [flag], 'Input': inputs},
                     outputs={'Out': outputs, 'Scope': [scope]},
                     attrs={'sub_block': sub, 'is_scalar_condition': is_scalar_condition})


def cond(pred, true_fn=None, false_fn=None, name=None):
    """Fluid 1.8's layers.cond: true_fn() when the one-element bool `pred` holds, else
    false_fn(), each branch's ops in a sub-block run by a conditional_block op. Returns
    what the branch returns (None, a Variable, or a list or tuple of them, the same
    structure from both). Each branch assigns its results to the same variables of the
    enclosing block, so only the branch that ran writes them (Paddle merges the two
    branches' copies with select_input; the values are the same)."""
    if not isinstance(pred, Variable):
        raise TypeError('cond: pred must be a Variable, not %r' % (pred,))
    for fn, what in ((true_fn, 'true_fn'), (false_fn, 'false_fn')):
        if fn is not None and not callable(fn):
            raise TypeError('cond: %s must be callable, not %r' % (what, fn))
    h = _Helper('cond', name)
    main = h.main
    parent = h.block
    not_pred = equal(pred, fill_constant([1], 'bool', False))
    merged, shapes = None, []
    for flag, fn, what in ((pred, true_fn, 'true_fn'), (not_pred, false_fn, 'false_fn')):
        if fn is None:
            shapes.append(None)
            continue
        sub = main._create_block()
        try:
            out = fn()
            flat = _flatten_outputs(out)
            if flat is not None:
                if merged is None:
                    merged = [parent.create_var(name=unique_name.generate(h.name + '.out'),
                                                shape=v.shape, dtype=v.dtype) for v in flat]
                elif len(flat) != len(merged):
                    raise ValueError('cond: true_fn returns %d values and false_fn %d'
                                     % (len(merged), len(flat)))
                for v, m in zip(flat, merged):
                    sub.append_op('assign', inputs={'X': v}, outputs={'Out': m})
            shapes.append(out)
        finally:
            main._rollback()
        _conditional_block(h, parent, sub, flag)
    true_out, false_out = shapes
    if true_out is None and false_out is None:
        return None
    if true_out is None or false_out is None:
        raise ValueError('cond: %s returns None while the other branch returns values'
                         % ('true_fn' if true_out is None else 'false_fn'))
    if isinstance(true_out, Variable):
        return merged[0]
    return type(true_out)(merged)


class While(object):
    """Fluid 1.x's layers.While: the ops appended inside `with loop.block():` form a
    sub-block that a `while` op runs again and again while `cond` (a bool variable of one
    element) holds. The block must update `cond` (less_than(..., cond=cond)); one that
    never does loops until the run is cancelled or passes its deadline. Variables the
    block creates are new at every step; the enclosing blocks' variables it writes (with
    assign(..., output=v), increment(in_place=True), array_write(array=a)) keep their
    values across steps and after the loop."""

    BEFORE_WHILE_BLOCK, IN_WHILE_BLOCK, AFTER_WHILE_BLOCK = 0, 1, 2

    def __init__(self, cond, is_test=False, name=None):
        if not isinstance(cond, Variable):
            raise TypeError('While: cond must be a Variable, not %r' % (cond,))
        if cond.dtype != np.dtype('bool'):
            raise TypeError("While: cond must be a bool variable, not %s" % cond.dtype.name)
        n = 1
        for d in cond.shape:
            n *= d
        if n != 1:
            raise TypeError('While: cond must hold one element, its shape is %s'
                            % (list(cond.shape),))
        self.helper = _Helper('while', name)
        self.cond_var = cond
        self.is_test = bool(is_test)
        self.status = While.BEFORE_WHILE_BLOCK

    def block(self):
        return _WhileGuard(self)

    def _complete(self, sub, parent):
        inputs, outputs = _block_io(sub, parent)
        cname = self.cond_var.name
        inputs = [n for n in inputs if n != cname]
        if cname not in outputs:
            outputs.insert(0, cname)
        scopes = parent.create_var(name=unique_name.generate(self.helper.name + '.scopes'),
                                   type=_STEP_SCOPES)
        parent.append_op('while',
                         inputs={'X': [parent._var_recursive(n) for n in inputs],
                                 'Condition': [self.cond_var]},
                         outputs={'Out': [parent._var_recursive(n) for n in outputs],
                                  'StepScopes': [scopes]},
                         attrs={'sub_block': sub, 'is_test': self.is_test})


class _WhileGuard(object):
    def __init__(self, loop):
        self.loop = loop
        self.main = loop.helper.main

    def __enter__(self):
        if self.loop.status != While.BEFORE_WHILE_BLOCK:
            raise ValueError('While: block() can be entered once')
        self.loop.status = While.IN_WHILE_BLOCK
        self.parent = self.main.current_block()
        self.sub = self.main._create_block()
        return self.sub

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.main._rollback()
        if exc_type is not None:
            return False
        self.loop.status = While.AFTER_WHILE_BLOCK
        self.loop._complete(self.sub, self.parent)
        return False


__all__ += ['increment', 'create_array', 'array_write', 'array_read', 'array_length', 'While']


class _MemoryLink(object):
    def __init__(self, init, pre_mem):
        self.init = init
        self.pre_mem = pre_mem
        self.mem = None


class StaticRNN(object):
    """Fluid 1.x's StaticRNN: the ops appended inside `with rnn.step():` form a sub-block
    that a `recurrent` op runs once per row of the step inputs (all with the same, fixed
    number of rows). In the block, step_input(x) is the current row of x, memory() the
    previous step's value of a state (update_memory sets the new one), and
    step_output / output collect a value of every step into a [T, ...] output, which
    calling the rnn returns after the block."""

    BEFORE_RNN_BLOCK, IN_RNN_BLOCK, AFTER_RNN_BLOCK = 0, 1, 2

    def __init__(self, name=None):
        self.helper = _Helper('static_rnn', name)
        self.memories = {}
        self.inputs = []
        self.outputs = []
        self.status = StaticRNN.BEFORE_RNN_BLOCK
        self.seq_len = None

    def step(self):
        return _StaticRNNGuard(self)

    def _in_block(self, what):
        if self.status != StaticRNN.IN_RNN_BLOCK:
            raise ValueError('StaticRNN: %s can only be called inside rnn.step()' % what)

    def memory(self, init=None, shape=None, batch_ref=None, init_value=0.0,
               init_batch_dim_idx=0, ref_batch_dim_idx=1):
        """A state: `init` before the first step, or else a tensor of `shape` filled with
        init_value whose dim init_batch_dim_idx is batch_ref's dim ref_batch_dim_idx."""
        self._in_block('memory')
        if init is None:
            if shape is None or batch_ref is None:
                raise ValueError('StaticRNN.memory: give init, or shape and batch_ref')
            parent = self._parent
            boot = parent.create_var(
                name=unique_name.generate(self.helper.name + '@memory_boot'),
                shape=shape, dtype=batch_ref.dtype)
            parent.append_op('fill_constant_batch_size_like', inputs={'Input': [batch_ref]},
                             outputs={'Out': [boot]},
                             attrs={'value': float(init_value), 'shape': list(boot.shape),
                                    'dtype': core.dtype_code(batch_ref.dtype),
                                    'input_dim_idx': int(ref_batch_dim_idx),
                                    'output_dim_idx': int(init_batch_dim_idx)})
            return self.memory(init=boot)
        _check_var(init, 'init', 'StaticRNN.memory')
        pre = self.helper.main.current_block().create_var(
            name=unique_name.generate(self.helper.name + '@mem'), dtype=init.dtype,
            shape=init.shape)
        self.memories[pre.name] = _MemoryLink(init, pre)
        return pre

    def step_input(self, x):
        """The current row of x ([T, ...]): a variable of shape [...] in the block."""
        self._in_block('step_input')
        _check_var(x, 'x', 'StaticRNN.step_input')
        if self.seq_len is None:
            self.seq_len = x.shape[0]
        elif x.shape[0] != -1 and self.seq_len != x.shape[0]:
            raise ValueError('StaticRNN: step inputs must have the same number of rows '
                             '(%d, then %d)' % (self.seq_len, x.shape[0]))
        ipt = self.helper.main.current_block().create_var(
            name=x.name, dtype=x.dtype, shape=list(x.shape[1:]), type=x.type)
        self.inputs.append(ipt)
        return ipt

    def step_output(self, o):
        """Collects o at every step into an output [T] + o.shape."""
        self._in_block('step_output')
        _check_var(o, 'o', 'StaticRNN.step_output')
        tmp = self.helper.tmp(o.dtype.name)
        self.helper.append('rnn_memory_helper', {'X': [o]}, {'Out': [tmp]},
                           {'dtype': core.dtype_code(o.dtype)})
        out = self._parent.create_var(name=tmp.name, shape=[self.seq_len] + list(o.shape),
                                      dtype=o.dtype)
        self.outputs.append(out)

    def output(self, *outputs):
        for o in outputs:
            self.step_output(o)

    def update_memory(self, mem, var):
        """The state `mem` (from memory()) takes var's value for the next step."""
        _check_var(mem, 'mem', 'StaticRNN.update_memory')
        _check_var(var, 'var', 'StaticRNN.update_memory')
        if mem.name not in self.memories:
            raise ValueError("StaticRNN.update_memory: '%s' is not a memory of this rnn"
                             % mem.name)
        self.memories[mem.name].mem = var

    def __call__(self, *args, **kwargs):
        if self.status != StaticRNN.AFTER_RNN_BLOCK:
            raise ValueError('StaticRNN: the outputs exist only after the rnn block')
        if not self.outputs:
            raise ValueError('StaticRNN: the rnn has no output')
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    def _complete(self, sub, parent):
        if not self.inputs:
            raise ValueError('StaticRNN: the block needs at least one step_input')
        local = set()
        for op in sub.ops:
            local.update(op.output_arg_names)
        local.update(v.name for v in self.inputs)
        local.update(self.memories)
        params = []
        for op in sub.ops:
            for n in op.input_arg_names:
                if n not in local and n not in params:
                    params.append(n)
        boot, pre, new = [], [], []
        for name, m in self.memories.items():
            if m.mem is None:
                raise ValueError("StaticRNN: memory '%s' (from '%s') is never updated "
                                 "(call update_memory in the block)" % (name, m.init.name))
            nxt = sub.create_var(name=unique_name.generate(self.helper.name + '.tmp'),
                                 dtype=m.mem.dtype, shape=m.mem.shape)
            sub.append_op('rnn_memory_helper', inputs={'X': [m.mem]}, outputs={'Out': [nxt]},
                          attrs={'dtype': core.dtype_code(m.mem.dtype)})
            boot.append(m.init)
            pre.append(name)
            new.append(nxt.name)
        scopes = parent.create_var(name=unique_name.generate(self.helper.name + '.scopes'),
                                   type=_STEP_SCOPES)
        parent.append_op('recurrent',
                         inputs={'inputs': [parent._var_recursive(v.name) for v in self.inputs],
                                 'initial_states': boot,
                                 'parameters': [parent._var_recursive(n) for n in params]},
                         outputs={'outputs': self.outputs, 'step_scopes': [scopes]},
                         attrs={'has_states': len(pre) > 0, 'ex_states': pre, 'states': new,
                                'sub_block': sub})


class _StaticRNNGuard(object):
    def __init__(self, rnn):
        self.rnn = rnn
        self.main = rnn.helper.main

    def __enter__(self):
        if self.rnn.status != StaticRNN.BEFORE_RNN_BLOCK:
            raise ValueError('StaticRNN: step() can be entered once')
        self.rnn.status = StaticRNN.IN_RNN_BLOCK
        self.rnn._parent = self.main.current_block()
        self.sub = self.main._create_block()
        return self.sub

    def __exit__(self, exc_type, exc_val, exc_tb):
        if exc_type is not None:
            self.main._rollback()
            return False
        self.rnn.status = StaticRNN.AFTER_RNN_BLOCK
        try:
            self.rnn._complete(self.sub, self.rnn._parent)
        finally:
            self.main._rollback()
        return False


__all__ += ['StaticRNN']


# ------------------------------------------------------------- DynamicRNN ----

_LOD_RANK_TABLE = 12  # VarType.LOD_RANK_TABLE


def _shaped_tmp(h, like, shape=None):
    out = h.tmp(like.dtype.name)
    shape = like.shape if shape is None else shape
    if shape:
        out._set_meta(out.desc['dtype'], list(shape))
    return out


def lod_rank_table(x, level=0):
    """The sequences of x's LoD level `level` ranked by length, longest first."""
    _check_var(x, 'x', 'lod_rank_table')
    h = _Helper('lod_rank_table')
    table = h.block.create_var(name=unique_name.generate('lod_rank_table'),
                               type=_LOD_RANK_TABLE)
    table.stop_gradient = True
    h.append('lod_rank_table', {'X': [x]}, {'Out': [table]}, {'level': int(level)})
    return table


def max_sequence_len(rank_table):
    """int64 [1]: the longest length in the rank table."""
    h = _Helper('max_sequence_len')
    out = h.block.create_var(name=unique_name.generate('max_sequence_len'), dtype='int64',
                             shape=[1])
    h.append('max_sequence_len', {'RankTable': [rank_table]}, {'Out': [out]})
    return out


def lod_tensor_to_array(x, table):
    """A tensor array: item t holds row t of every sequence of x longer than t, in the
    table's rank order."""
    _check_var(x, 'x', 'lod_tensor_to_array')
    h = _Helper('lod_tensor_to_array')
    array = h.block.create_var(name=unique_name.generate('lod_tensor_to_array'),
                               dtype=x.dtype, type=_LOD_TENSOR_ARRAY, shape=list(x.shape))
    h.append('lod_tensor_to_array', {'X': [x], 'RankTable': [table]}, {'Out': [array]})
    return array


def array_to_lod_tensor(x, table):
    """The inverse of lod_tensor_to_array: the sequences back in index order, with LoD."""
    _check_var(x, 'x', 'array_to_lod_tensor')
    h = _Helper('array_to_lod_tensor')
    out = _shaped_tmp(h, x)
    h.append('array_to_lod_tensor', {'X': [x], 'RankTable': [table]}, {'Out': [out]})
    return out


def shrink_memory(x, i, table):
    """x's rows of the sequences of the table longer than i."""
    _check_var(x, 'x', 'shrink_memory')
    h = _Helper('shrink_memory')
    out = _shaped_tmp(h, x)
    h.append('shrink_rnn_memory', {'X': [x], 'I': [i], 'RankTable': [table]},
             {'Out': [out]})
    return out


def reorder_lod_tensor_by_rank(x, rank_table):
    """x's rows (or sequences) in the rank table's order."""
    _check_var(x, 'x', 'reorder_lod_tensor_by_rank')
    h = _Helper('reorder_lod_tensor_by_rank')
    out = _shaped_tmp(h, x)
    h.append('reorder_lod_tensor_by_rank', {'X': [x], 'RankTable': [rank_table]},
             {'Out': [out]})
    return out


class DynamicRNN(object):
    """Fluid 1.x's DynamicRNN over a LoD batch: `with rnn.block():` holds one step, run
    by a While loop for as many steps as the longest sequence. step_input(x) gives the
    current row of every sequence still running (longest first), static_input(x) a
    per-sequence tensor cut to the running sequences, memory() a state (update_memory
    sets the next step's), output() collects a value per step; calling the rnn after the
    block returns the outputs as LoD tensors in the input's sequence order."""

    BEFORE_RNN, IN_RNN, AFTER_RNN = 0, 1, 2

    def __init__(self, name=None):
        self.helper = _Helper('dynamic_rnn', name)
        self.status = DynamicRNN.BEFORE_RNN
        self.lod_rank_table = None
        self.max_seq_len = None
        self.step_idx = None
        self.zero_idx = None
        self.mem_dict = {}
        self.output_array = []
        self.outputs = []
        self.cond = self.helper.tmp('bool')
        self.cond._set_meta(self.cond.desc['dtype'], [1])
        self.while_op = While(self.cond)
        self.input_array = []
        self.mem_link = []

    def _in_block(self, what):
        if self.status != DynamicRNN.IN_RNN:
            raise ValueError('DynamicRNN: %s can only be called inside rnn.block()' % what)

    def _parent_block(self):
        main = self.helper.main
        return main.block(main.current_block().parent_idx)

    def step_input(self, x, level=0):
        """The current step's rows of x's sequences (LoD level `level`) still running."""
        self._in_block('step_input')
        _check_var(x, 'x', 'DynamicRNN.step_input')
        parent = self._parent_block()
        main = self.helper.main
        if self.lod_rank_table is None:
            with _in_block(main, parent):
                self.lod_rank_table = lod_rank_table(x, level)
                self.max_seq_len = max_sequence_len(self.lod_rank_table)
                less_than(self.step_idx, self.max_seq_len, force_cpu=True, cond=self.cond)
        with _in_block(main, parent):
            arr = lod_tensor_to_array(x, self.lod_rank_table)
        self.input_array.append((arr, x.dtype))
        return array_read(arr, self.step_idx)

    def static_input(self, x):
        """x (one row or one sequence per sequence) in rank order, cut to the running
        sequences."""
        self._in_block('static_input')
        _check_var(x, 'x', 'DynamicRNN.static_input')
        if self.lod_rank_table is None:
            raise RuntimeError('DynamicRNN: static_input() must be called after step_input()')
        with _in_block(self.helper.main, self._parent_block()):
            reordered = reorder_lod_tensor_by_rank(x, self.lod_rank_table)
        return shrink_memory(reordered, self.step_idx, self.lod_rank_table)

    def block(self):
        return _DynamicRNNGuard(self)

    def __call__(self, *args, **kwargs):
        if self.status != DynamicRNN.AFTER_RNN:
            raise ValueError('DynamicRNN: the outputs exist only after the rnn block')
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    def _init_zero_idx(self):
        if self.zero_idx is None:
            with _in_block(self.helper.main, self._parent_block()):
                self.zero_idx = fill_constant([1], 'int64', 0, force_cpu=True)

    def memory(self, init=None, shape=None, value=0.0, need_reorder=False, dtype='float32'):
        """A state: `init` (put into rank order first with need_reorder) or a batch of
        `shape` rows filled with `value`; cut to the running sequences at every step."""
        self._in_block('memory')
        self._init_zero_idx()
        parent = self._parent_block()
        main = self.helper.main
        if init is not None:
            _check_var(init, 'init', 'DynamicRNN.memory')
            with _in_block(main, parent):
                if need_reorder:
                    if self.lod_rank_table is None:
                        raise ValueError('DynamicRNN.memory: need_reorder needs step_input '
                                         'first')
                    init = reorder_lod_tensor_by_rank(init, self.lod_rank_table)
                mem_array = array_write(init, self.zero_idx)
            ret = shrink_memory(array_read(mem_array, self.step_idx), self.step_idx,
                                self.lod_rank_table)
            self.mem_dict[ret.name] = mem_array
            return ret
        if not shape:
            raise ValueError('DynamicRNN.memory: give init or shape')
        if self.lod_rank_table is None:
            raise ValueError('DynamicRNN.memory: step_input must come before a memory '
                             'without init')
        arr, _ = self.input_array[0]
        with _in_block(main, parent):
            in0 = array_read(arr, self.zero_idx)
            boot = fill_constant_batch_size_like(in0, [-1] + list(shape), dtype, value)
            boot.stop_gradient = False
        return self.memory(init=boot)

    def update_memory(self, ex_mem, new_mem):
        self._in_block('update_memory')
        _check_var(ex_mem, 'ex_mem', 'DynamicRNN.update_memory')
        _check_var(new_mem, 'new_mem', 'DynamicRNN.update_memory')
        mem_array = self.mem_dict.get(ex_mem.name)
        if mem_array is None:
            raise ValueError('DynamicRNN.update_memory: call memory() first')
        self.mem_link.append((new_mem, mem_array))

    def output(self, *outputs):
        self._in_block('output')
        parent = self._parent_block()
        for each in outputs:
            _check_var(each, 'output', 'DynamicRNN.output')
            arr = parent.create_var(
                name=unique_name.generate(self.helper.name + '_output_array_' + each.name),
                type=_LOD_TENSOR_ARRAY, dtype=each.dtype)
            array_write(each, self.step_idx, array=arr)
            self.output_array.append(arr)


class _in_block(object):
    """Appends ops to `block` for the duration (a block other than the current one)."""

    def __init__(self, main, block):
        self.main = main
        self.block = block

    def __enter__(self):
        self.saved = self.main.current_block_idx
        self.main.current_block_idx = self.block.idx

    def __exit__(self, *exc):
        self.main.current_block_idx = self.saved
        return False


class _DynamicRNNGuard(object):
    def __init__(self, rnn):
        self.rnn = rnn

    def __enter__(self):
        rnn = self.rnn
        if rnn.status != DynamicRNN.BEFORE_RNN:
            raise ValueError('DynamicRNN: block() can be entered once')
        rnn.step_idx = fill_constant([1], 'int64', 0, force_cpu=True)
        rnn.status = DynamicRNN.IN_RNN
        self.guard = rnn.while_op.block()
        self.guard.__enter__()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        rnn = self.rnn
        if exc_type is None:
            increment(rnn.step_idx, 1.0, in_place=True)
            for new_mem, mem_array in rnn.mem_link:
                array_write(new_mem, rnn.step_idx, array=mem_array)
            less_than(rnn.step_idx, rnn.max_seq_len, force_cpu=True, cond=rnn.cond)
        self.guard.__exit__(exc_type, exc_val, exc_tb)
        if exc_type is not None:
            return False
        rnn.status = DynamicRNN.AFTER_RNN
        for arr in rnn.output_array:
            rnn.outputs.append(array_to_lod_tensor(arr, rnn.lod_rank_table))
        return False


__all__ += ['DynamicRNN', 'reorder_lod_tensor_by_rank']


def tensor_array_to_tensor(input, axis=1, name=None, use_stack=False):
    """The items of a tensor array concatenated along `axis` (stacked along a new axis
    with use_stack), and an int32 tensor of each item's extent along it."""
    _check_var(input, 'input', 'tensor_array_to_tensor')
    h = _Helper('tensor_array_to_tensor', name)
    shape = list(input.shape or [])
    if shape:  # as Paddle declares it: the items' shape, the axis unknown
        rank = len(shape) + (1 if use_stack else 0)
        ax = axis + rank if axis < 0 else axis
        if use_stack:
            shape.insert(ax, -1)
        else:
            shape[ax] = -1
    out = _shaped_tmp(h, input, shape)
    index = h.tmp('int32', stop_gradient=True)
    h.append('tensor_array_to_tensor', {'X': [input]}, {'Out': [out], 'OutIndex': [index]},
             {'axis': int(axis), 'use_stack': bool(use_stack)})
    return out, index


__all__ += ['tensor_array_to_tensor']


# ------------------------------------- reductions, similarity, sequences ----

def reduce_max(input, dim=None, keep_dim=False, name=None):
    return _reduce('reduce_max', input, dim, keep_dim, name)


def reduce_min(input, dim=None, keep_dim=False, name=None):
    return _reduce('reduce_min', input, dim, keep_dim, name)


def reduce_prod(input, dim=None, keep_dim=False, name=None):
    return _reduce('reduce_prod', input, dim, keep_dim, name)


def cos_sim(X, Y):
    """Cosine similarity of each row of X with the same row of Y (or Y's only row):
    [N, 1]."""
    h = _Helper('cos_sim')
    out = h.tmp(X.dtype.name)
    xnorm = h.tmp(X.dtype.name)
    ynorm = h.tmp(X.dtype.name)
    h.append('cos_sim', {'X': [X], 'Y': [Y]},
             {'Out': [out], 'XNorm': [xnorm], 'YNorm': [ynorm]})
    return out


def sigmoid_cross_entropy_with_logits(x, label, ignore_index=-100, name=None,
                                      normalize=False):
    """Elementwise logistic loss of logits x against probabilities label."""
    h = _Helper('sigmoid_cross_entropy_with_logits', name)
    out = h.tmp(x.dtype.name)
    h.append('sigmoid_cross_entropy_with_logits', {'X': x, 'Label': label}, {'Out': out},
             {'ignore_index': int(ignore_index), 'normalize': bool(normalize)})
    return out


def sequence_pool(input, pool_type, is_test=False, pad_value=0.0):
    """One row per sequence of a LoD tensor: pool_type 'average', 'sum', 'sqrt', 'max',
    'last' or 'first'."""
    h = _Helper('sequence_pool')
    out = h.tmp(input.dtype.name)
    max_index = h.tmp(input.dtype.name)
    h.append('sequence_pool', {'X': input}, {'Out': out, 'MaxIndex': max_index},
             {'pooltype': pool_type.upper(), 'is_test': bool(is_test),
              'pad_value': float(pad_value)})
    if pool_type.lower() == 'max':
        max_index.stop_gradient = True
    return out


def sequence_conv(input, num_filters, filter_size=3, filter_stride=1, padding=True,
                  padding_start=None, bias_attr=None, param_attr=None, act=None, name=None):
    """A context window of filter_size rows along each sequence times a
    [filter_size * width, num_filters] filter, plus a bias, then act."""
    h = _Helper('sequence_conv', name)
    dtype = input.dtype.name
    w = h.param(param_attr, [filter_size * int(input.shape[1]), num_filters], dtype)
    if padding_start is None:
        padding_start = -int(filter_size // 2)
    pre_bias = h.tmp(dtype)
    h.append('sequence_conv', {'X': [input], 'Filter': [w]}, {'Out': pre_bias},
             {'contextStride': int(filter_stride), 'contextStart': int(padding_start),
              'contextLength': int(filter_size)})
    return h.act(h.bias(pre_bias, bias_attr, num_filters, 1, dtype), act)


def row_conv(input, future_context_size, param_attr=None, act=None):
    """Lookahead convolution: each step of each sequence of input (a float32 LoD tensor
    [T, D], or [B, T, D]) summed with its next future_context_size steps, each step's
    values scaled per column by a row of the filter [future_context_size + 1, D]; then
    act. The row_conv op (operators/row_conv.c), with its gradient."""
    _check_var(input, 'input', 'row_conv')
    if input.dtype.name != 'float32':
        raise TypeError("row_conv: input ('%s') is %s, expected float32"
                        % (input.name, input.dtype.name))
    h = _Helper('row_conv')
    w = h.param(param_attr, [future_context_size + 1, int(input.shape[-1])], 'float32')
    out = h.tmp('float32')
    h.append('row_conv', {'X': [input], 'Filter': [w]}, {'Out': out})
    return h.act(out, act)


__all__ += ['reduce_max', 'reduce_min', 'reduce_prod', 'cos_sim',
            'sigmoid_cross_entropy_with_logits', 'sequence_pool', 'sequence_conv',
            'row_conv']


def linear_chain_crf(input, label, param_attr=None, length=None):
    """Fluid 1.x's linear_chain_crf: the cost (negative log-likelihood, [sequences, 1]) of
    each int64 label sequence under a linear-chain CRF over the emission scores `input`,
    LoD [T, D], or padded [N, S, D] with `length` (int64 [N]). Creates the transition
    parameter [D + 2, D] from param_attr (row 0 start scores, row 1 end scores, then tag
    to tag); crf_decoding finds it again by its name."""
    _check_var(input, 'input', 'linear_chain_crf')
    _check_var(label, 'label', 'linear_chain_crf')
    if input.dtype.name not in ('float32', 'float64'):
        raise TypeError('linear_chain_crf: input must be float32 or float64, got %s' %
                        input.dtype.name)
    if label.dtype.name != 'int64':
        raise TypeError('linear_chain_crf: label must be int64, got %s' % label.dtype.name)
    h = _Helper('linear_chain_crf')
    dtype = input.dtype.name
    size = int(input.shape[2] if length is not None else input.shape[1])
    transition = h.param(param_attr, [size + 2, size], dtype)
    alpha, emission_exps, transition_exps, log_likelihood = (h.tmp(dtype) for _ in range(4))
    ins = {'Emission': [input], 'Transition': [transition], 'Label': [label]}
    if length is not None:
        ins['Length'] = [length]
    h.append('linear_chain_crf', ins,
             {'Alpha': [alpha], 'EmissionExps': [emission_exps],
              'TransitionExps': [transition_exps], 'LogLikelihood': [log_likelihood]})
    return log_likelihood


def crf_decoding(input, param_attr, label=None, length=None):
    """Fluid 1.x's crf_decoding: the Viterbi tag path (int64) of each sequence of the
    emission scores `input` (LoD [T, D] -> [T, 1] with its LoD, or padded [N, S, D] with
    `length` -> [N, S], 0 past each length) under the transition parameter named by
    param_attr (linear_chain_crf's). With `label`, 1 where the decoded tag equals the
    label and 0 elsewhere."""
    _check_var(input, 'input', 'crf_decoding')
    if input.dtype.name not in ('float32', 'float64'):
        raise TypeError('crf_decoding: input must be float32 or float64, got %s' %
                        input.dtype.name)
    attr = ParamAttr._to_attr(param_attr)
    gblock = default_main_program().global_block()
    if not attr or not attr.name or not gblock.has_var(attr.name):
        raise ValueError('crf_decoding: param_attr must name an existing transition '
                         'parameter (the param_attr given to linear_chain_crf), got %r' %
                         (getattr(attr, 'name', attr),))
    h = _Helper('crf_decoding')
    path = h.tmp('int64', stop_gradient=True)
    ins = {'Emission': [input], 'Transition': [gblock.var(attr.name)]}
    if label is not None:
        ins['Label'] = [label]
    if length is not None:
        ins['Length'] = [length]
    h.append('crf_decoding', ins, {'ViterbiPath': [path]})
    return path


__all__ += ['linear_chain_crf', 'crf_decoding']


def chunk_eval(input, label, chunk_scheme, num_chunk_types, excluded_chunk_types=None,
               seq_length=None):
    """Fluid 1.x's chunk_eval: precision, recall and F1 of the chunks the int64 tags
    `input` find against those of `label` (LoD [T, 1], or padded [N, S] / [N, S, 1] with
    `seq_length` [N]). A tag id is tag + chunk type * the scheme's tags (IOB and IOE 2,
    IOBES 4, plain 1); num_chunk_types * tags is outside every chunk. Returns (precision,
    recall, f1_score) as float32 [1] and (num_infer_chunks, num_label_chunks,
    num_correct_chunks) as int64 [1]; chunks of excluded_chunk_types count nowhere."""
    _check_var(input, 'input', 'chunk_eval')
    _check_var(label, 'label', 'chunk_eval')
    for v, what in ((input, 'input'), (label, 'label')):
        if v.dtype.name != 'int64':
            raise TypeError('chunk_eval: %s must be int64, got %s' % (what, v.dtype.name))
    if chunk_scheme not in ('IOB', 'IOE', 'IOBES', 'plain'):
        raise ValueError('chunk_eval: chunk_scheme must be IOB, IOE, IOBES or plain, got %r'
                         % (chunk_scheme,))
    h = _Helper('chunk_eval')
    outs = [h.tmp(dt, stop_gradient=True) for dt in ('float32',) * 3 + ('int64',) * 3]
    ins = {'Inference': [input], 'Label': [label]}
    if seq_length is not None:
        ins['SeqLength'] = [seq_length]
    h.append('chunk_eval', ins,
             {k: [v] for k, v in zip(('Precision', 'Recall', 'F1-Score', 'NumInferChunks',
                                      'NumLabelChunks', 'NumCorrectChunks'), outs)},
             {'num_chunk_types': int(num_chunk_types), 'chunk_scheme': chunk_scheme,
              'excluded_chunk_types': [int(t) for t in (excluded_chunk_types or [])]})
    return tuple(outs)


__all__ += ['chunk_eval']


def sequence_softmax(input, use_cudnn=False, name=None):
    """Fluid 1.x's sequence_softmax: the softmax of each sequence (the last LoD level) of
    a float LoD tensor of one score per row ([T, 1] or [T]); Out has its shape and LoD."""
    _check_var(input, 'input', 'sequence_softmax')
    if input.dtype.name not in ('float32', 'float64'):
        raise TypeError('sequence_softmax: input must be float32 or float64, got %s' %
                        input.dtype.name)
    h = _Helper('sequence_softmax', name)
    out = h.tmp(input.dtype.name)
    h.append('sequence_softmax', {'X': [input]}, {'Out': [out]},
             {'use_cudnn': bool(use_cudnn)})
    return out


__all__ += ['sequence_softmax']


def fill_constant_batch_size_like(input, shape, dtype, value, input_dim_idx=0,
                                  output_dim_idx=0, force_cpu=False):
    """A tensor of `shape` filled with `value`, its dim output_dim_idx taken from input's
    dim input_dim_idx when the program runs (the batch size)."""
    _check_var(input, 'input', 'fill_constant_batch_size_like')
    h = _Helper('fill_constant_batch_size_like')
    out = h.tmp(dtype, stop_gradient=True)
    h.append('fill_constant_batch_size_like', {'Input': input}, {'Out': out},
             {'shape': [int(d) for d in shape], 'value': float(value),
              'dtype': core.dtype_code(dtype), 'input_dim_idx': int(input_dim_idx),
              'output_dim_idx': int(output_dim_idx)})
    out.stop_gradient = True
    return out


def conv2d_transpose(input, num_filters, output_size=None, filter_size=None, padding=0,
                     stride=1, dilation=1, groups=None, param_attr=None, bias_attr=None,
                     use_cudnn=True, act=None, name=None, data_format='NCHW'):
    """Fluid 1.x's conv2d_transpose (NCHW, or NHWC with channels last): Filter [C_in,
    num_filters / groups, kh, kw] (Xavier by default), the bias added along the channel
    dim; padding as conv2d's (_paddings). filter_size may be left out when output_size is
    given; it is then derived as Fluid derives it (from the paddings as given, 0 for SAME
    and VALID). As in Fluid, groups == num_filters == the input channels with use_cudnn
    off writes depthwise_conv2d_transpose (its parameters named after that op)."""
    _check_var(input, 'input', 'conv2d_transpose')
    if data_format not in ('NCHW', 'NHWC'):
        raise ValueError("conv2d_transpose: data_format must be 'NCHW' or 'NHWC', got %r" %
                         (data_format,))
    channel_last = data_format == 'NHWC'
    if len(input.shape) != 4:
        raise ValueError('conv2d_transpose: input %s must be 4-D %s, got shape %s' %
                         (input.name, data_format, input.shape))
    c = input.shape[3 if channel_last else 1]
    op_type = 'conv2d_transpose'
    if c == groups and num_filters == c and not use_cudnn:
        op_type = 'depthwise_conv2d_transpose'
    h = _Helper(op_type, name)
    groups = groups or 1
    if c <= 0 or c % groups:
        raise ValueError('conv2d_transpose: %d input channels do not divide into %d groups' %
                         (c, groups))
    st, dl = _pair(stride, 'stride'), _pair(dilation, 'dilation')
    pd, alg = _paddings(padding, 2, 'conv2d_transpose', channel_last=channel_last)
    if filter_size is None:
        if output_size is None:
            raise ValueError('conv2d_transpose: give filter_size or output_size')
        osz = _pair(output_size, 'output_size')
        hw = input.shape[1:3] if channel_last else input.shape[2:]
        if any(d <= 0 for d in hw):
            raise ValueError('conv2d_transpose: filter_size is needed when the input extents '
                             '%s are unknown' % (list(hw),))
        four = _paddings_per_side(pd, 2)
        fs = [(osz[i] - (hw[i] - 1) * st[i] + four[2 * i] + four[2 * i + 1] - 1) // dl[i] + 1
              for i in range(2)]
    else:
        fs = _pair(filter_size, 'filter_size')
    w = h.param(param_attr, [c, num_filters // groups] + fs, input.dtype.name)
    pre = h.tmp(input.dtype.name)
    attrs = {'output_size': [] if output_size is None else _pair(output_size, 'output_size'),
             'strides': st, 'paddings': pd, 'padding_algorithm': alg, 'dilations': dl,
             'groups': groups, 'data_format': data_format}
    h.append(op_type, {'Input': input, 'Filter': w}, {'Output': pre}, attrs)
    pre = h.bias(pre, bias_attr, num_filters, 3 if channel_last else 1, input.dtype.name)
    return h.act(pre, act)


def shape(input):
    """The shape of input when the program runs, as an int32 tensor [rank]."""
    _check_var(input, 'input', 'shape')
    h = _Helper('shape')
    out = h.tmp('int32', stop_gradient=True)
    h.append('shape', {'Input': input}, {'Out': out})
    out.stop_gradient = True
    return out


def expand(x, expand_times, name=None):
    """Fluid 1.x's expand: tiles x expand_times[i] times along dim i (out extent =
    extent * times), as Fluid's `expand` op, which has a gradient. expand_times is a
    list of ints, a list mixing ints and one-element int32 Variables, or a 1-D int32
    Variable (Variables are read when the program runs)."""
    _check_var(x, 'x', 'expand')
    h = _Helper('expand', name)
    inputs, attrs = {'X': x}, {}
    if isinstance(expand_times, Variable):
        expand_times.stop_gradient = True
        inputs['ExpandTimes'] = expand_times
    else:
        # Fluid's rule: an entry that is a Variable becomes -1 in the attribute, and
        # every entry then travels as a one-element int32 tensor of expand_times_tensor.
        times = [-1 if isinstance(t, Variable) else int(t) for t in expand_times]
        if len(times) != len(x.shape):
            raise ValueError('expand: expand_times %s must have one entry per dim of %s '
                             '(shape %s)' % (list(expand_times), x.name, list(x.shape)))
        if any(t < 1 for t, e in zip(times, expand_times) if not isinstance(e, Variable)):
            raise ValueError('expand: expand_times %s must be positive' % (times,))
        attrs['expand_times'] = times
        if any(isinstance(t, Variable) for t in expand_times):
            tensors = []
            for t in expand_times:
                if isinstance(t, Variable):
                    t.stop_gradient = True
                    tensors.append(t)
                else:
                    tensors.append(fill_constant([1], 'int32', int(t), force_cpu=True))
            inputs['expand_times_tensor'] = tensors
    out = h.tmp(x.dtype.name)
    h.append('expand', inputs, {'Out': out}, attrs)
    return out


def sequence_mask(x, maxlen=None, dtype='int64', name=None):
    """mask[..., j] = j < x[...] for j in [0, maxlen): x's shape + [maxlen]. maxlen is an
    int, a one-element int32/int64 Variable, or None: max(x), read when the program runs
    (the last dim is then -1 when the program is built)."""
    _check_var(x, 'x', 'sequence_mask')
    h = _Helper('sequence_mask', name)
    out = h.tmp(dtype, stop_gradient=True)
    inputs, attrs = {'X': x}, {'out_dtype': core.dtype_code(dtype)}
    if isinstance(maxlen, Variable):
        inputs['MaxLenTensor'] = maxlen
    elif maxlen is not None:
        attrs['maxlen'] = int(maxlen)
    h.append('sequence_mask', inputs, {'Y': out}, attrs)
    return out


# ------------------------------------------------------- recurrent layers ----

def _check_float(x, what, layer):
    _check_var(x, what, layer)
    if x.dtype.name not in ('float32', 'float64'):
        raise TypeError("%s: %s '%s' is %s, expected float32 or float64" %
                        (layer, what, x.name, x.dtype.name))


def _check_state(v, what, size, layer):
    if v is None:
        return
    _check_float(v, what, layer)
    if len(v.shape) != 2 or (v.shape[1] >= 0 and v.shape[1] != size):
        raise ValueError('%s: %s %s has shape %s; the shape of %s should be (batch_size, %d)'
                         % (layer, what, v.name, list(v.shape), what, size))


def dynamic_lstm(input, size, h_0=None, c_0=None, param_attr=None, bias_attr=None,
                 use_peepholes=True, is_reverse=False, gate_activation='sigmoid',
                 cell_activation='tanh', candidate_activation='tanh', dtype='float32',
                 name=None):
    """Fluid 1.x's dynamic_lstm: an LSTM over each sequence of a LoD tensor `input`
    [T, size] (already projected: size is 4 * D, for D = size // 4 hidden units), the
    `lstm` op. Parameters: Weight [D, 4D] (the candidate, input, forget and output gates'
    recurrent weights) and Bias [1, 7D] with use_peepholes (the four gate biases, then the
    peephole weights W_ic, W_fc, W_oc), else [1, 4D]. h_0 and c_0 are optional [N, D]
    initial states (h_0 needs c_0). Returns (hidden, cell), both [T, D] with input's LoD."""
    if bias_attr is False:
        raise ValueError('dynamic_lstm: bias_attr should not be False in dynamic_lstm.')
    _check_float(input, 'input', 'dynamic_lstm')
    size = int(size) // 4
    _check_state(h_0, 'h_0', size, 'dynamic_lstm')
    _check_state(c_0, 'c_0', size, 'dynamic_lstm')
    if h_0 is not None and c_0 is None:
        raise ValueError('dynamic_lstm: h_0 needs c_0 (Paddle\'s lstm takes both initial '
                         'states, or c_0 alone)')
    h = _Helper('lstm', name)
    weight = h.param(param_attr, [size, 4 * size], dtype)
    bias = h.param(bias_attr, [1, (7 if use_peepholes else 4) * size], dtype, is_bias=True)
    hidden, cell = h.tmp(dtype), h.tmp(dtype)
    batch_gate, batch_cell_pre_act = h.tmp(dtype), h.tmp(dtype)
    inputs = {'Input': input, 'Weight': weight, 'Bias': bias}
    if h_0 is not None:
        inputs['H0'] = h_0
    if c_0 is not None:
        inputs['C0'] = c_0
    h.append('lstm', inputs,
             {'Hidden': hidden, 'Cell': cell, 'BatchGate': batch_gate,
              'BatchCellPreAct': batch_cell_pre_act},
             {'use_peepholes': bool(use_peepholes), 'is_reverse': bool(is_reverse),
              'gate_activation': gate_activation, 'cell_activation': cell_activation,
              'candidate_activation': candidate_activation})
    return hidden, cell


__all__ += ['lstm']


def lstm(input, init_h, init_c, max_len, hidden_size, num_layers, dropout_prob=0.0,
         is_bidirec=False, is_test=False, name=None, default_initializer=None, seed=-1):
    """Fluid 1.x's lstm: a multi-layer, optionally bidirectional LSTM over a time-major
    batch, the `cudnn_lstm` op (which Paddle runs through cuDNN only; rill on the CPU).
    input [T, N, I]; init_h and init_c [num_layers * D, N, hidden_size] (D = 2 when
    is_bidirec). One parameter, the flat weight in cuDNN's canonical layout
    (doc/design/recurrent.md), of Paddle's size: per layer and direction 4 * hidden_size
    * (in + hidden_size) + 8 * hidden_size, in = I in the first layer, D * hidden_size
    above. dropout_prob: dropout between layers when training (is_test False); seed >= 0
    fixes its mask. Returns (rnn_out [T, N, D * hidden_size], last_h, last_c)."""
    _check_float(input, 'input', 'lstm')
    _check_float(init_h, 'init_h', 'lstm')
    _check_float(init_c, 'init_c', 'lstm')
    for v, what in ((max_len, 'max_len'), (hidden_size, 'hidden_size'),
                    (num_layers, 'num_layers')):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError("lstm: %s must be an int, got %r" % (what, v))
    dtype = input.dtype
    input_size = int(list(input.shape)[-1])
    dirs = 2 if is_bidirec else 1
    weight_size = 0
    for layer in range(num_layers):
        width = input_size if layer == 0 else dirs * hidden_size
        weight_size += dirs * (4 * hidden_size * (width + hidden_size) + 8 * hidden_size)
    h = _Helper('cudnn_lstm', name)
    weight = h.param(None, [weight_size], dtype, default_initializer=default_initializer)
    out, last_h, last_c = h.tmp(dtype), h.tmp(dtype), h.tmp(dtype)
    reserve = h.tmp(dtype, stop_gradient=True)
    cache = h.block.create_var(type=core.RAW, persistable=True, stop_gradient=True)
    h.append('cudnn_lstm',
             {'Input': input, 'InitH': init_h, 'InitC': init_c, 'W': weight, 'Cache': cache},
             {'Out': out, 'last_h': last_h, 'last_c': last_c, 'Reserve': reserve},
             {'max_len': max_len, 'is_bidirec': bool(is_bidirec), 'input_size': input_size,
              'hidden_size': hidden_size, 'num_layers': num_layers, 'is_test': bool(is_test),
              'dropout_prob': float(dropout_prob), 'seed': int(seed)})
    return out, last_h, last_c


def dynamic_lstmp(input, size, proj_size, param_attr=None, bias_attr=None, use_peepholes=True,
                  is_reverse=False, gate_activation='sigmoid', cell_activation='tanh',
                  candidate_activation='tanh', proj_activation='tanh', dtype='float32',
                  name=None, h_0=None, c_0=None, cell_clip=None, proj_clip=None):
    """Fluid 1.x's dynamic_lstmp: dynamic_lstm with a recurrent projection, the `lstmp`
    op. `input` [T, size] is already projected (size is 4 * D); each step's hidden state
    h_t is projected to r_t = act(h_t ProjWeight) [proj_size], which feeds the next step
    in place of h_t. Parameters: Weight [proj_size, 4D], ProjWeight [D, proj_size] and
    Bias as dynamic_lstm's. As in Paddle 1.8, act is identity when proj_activation is
    'identity' and otherwise cell_activation's function. h_0 [N, proj_size] and c_0
    [N, D] are optional initial states (h_0 needs c_0); cell_clip and proj_clip, when
    set, clip the cell state and the projection to [-clip, clip]. Returns (projection
    [T, proj_size], cell [T, D]), both with input's LoD."""
    if bias_attr is False:
        raise ValueError('dynamic_lstmp: bias_attr should not be False in dynamic_lstmp.')
    _check_float(input, 'input', 'dynamic_lstmp')
    size = int(size) // 4
    proj_size = int(proj_size)
    _check_state(h_0, 'h_0', proj_size, 'dynamic_lstmp')
    _check_state(c_0, 'c_0', size, 'dynamic_lstmp')
    if h_0 is not None and c_0 is None:
        raise ValueError('dynamic_lstmp: h_0 needs c_0 (Paddle\'s lstmp takes both initial '
                         'states, or c_0 alone)')
    for what, v in (('cell_clip', cell_clip), ('proj_clip', proj_clip)):
        if v is not None and v < 0:
            raise ValueError('dynamic_lstmp: %s is %r; it should not be negative' % (what, v))
    h = _Helper('lstmp', name)
    weight = h.param(param_attr, [proj_size, 4 * size], dtype)
    proj_weight = h.param(param_attr, [size, proj_size], dtype)
    bias = h.param(bias_attr, [1, (7 if use_peepholes else 4) * size], dtype, is_bias=True)
    projection, cell = h.tmp(dtype), h.tmp(dtype)
    batch_hidden, batch_gate, batch_cell_pre_act = h.tmp(dtype), h.tmp(dtype), h.tmp(dtype)
    inputs = {'Input': input, 'Weight': weight, 'ProjWeight': proj_weight, 'Bias': bias}
    if h_0 is not None:
        inputs['H0'] = h_0
    if c_0 is not None:
        inputs['C0'] = c_0
    h.append('lstmp', inputs,
             {'Projection': projection, 'Cell': cell, 'BatchHidden': batch_hidden,
              'BatchGate': batch_gate, 'BatchCellPreAct': batch_cell_pre_act},
             {'use_peepholes': bool(use_peepholes), 'is_reverse': bool(is_reverse),
              'cell_clip': float(cell_clip or 0.0), 'proj_clip': float(proj_clip or 0.0),
              'gate_activation': gate_activation, 'cell_activation': cell_activation,
              'candidate_activation': candidate_activation,
              'proj_activation': proj_activation})
    return projection, cell


def dynamic_gru(input, size, param_attr=None, bias_attr=None, is_reverse=False,
                gate_activation='sigmoid', candidate_activation='tanh', h_0=None,
                origin_mode=False):
    """Fluid 1.x's dynamic_gru: a GRU over each sequence of a LoD tensor `input`
    [T, 3 * size] (already projected), the `gru` op, with `size` hidden units.
    Parameters: Weight [size, 3 * size], whose buffer is a [size, 2 * size] matrix for the
    update and reset gates followed by a [size, size] one for the candidate, and Bias
    [1, 3 * size]. h_0 is an optional [N, size] initial state. origin_mode gives
    h = u * h_prev + (1 - u) * c instead of u * c + (1 - u) * h_prev. Returns hidden
    [T, size] with input's LoD."""
    _check_float(input, 'input', 'dynamic_gru')
    size = int(size)
    _check_state(h_0, 'h_0', size, 'dynamic_gru')
    dtype = input.dtype.name
    h = _Helper('gru')
    weight = h.param(param_attr, [size, 3 * size], dtype)
    bias = h.param(bias_attr, [1, 3 * size], dtype, is_bias=True)
    inputs = {'Input': input, 'Weight': weight}
    if bias is not None:
        inputs['Bias'] = bias
    if h_0 is not None:
        inputs['H0'] = h_0
    hidden, batch_gate = h.tmp(dtype), h.tmp(dtype)
    batch_reset_hidden_prev, batch_hidden = h.tmp(dtype), h.tmp(dtype)
    h.append('gru', inputs,
             {'Hidden': hidden, 'BatchGate': batch_gate,
              'BatchResetHiddenPrev': batch_reset_hidden_prev, 'BatchHidden': batch_hidden},
             {'is_reverse': bool(is_reverse), 'gate_activation': gate_activation,
              'activation': candidate_activation, 'origin_mode': bool(origin_mode)})
    return hidden


_GRU_UNIT_ACTS = {'identity': 0, 'sigmoid': 1, 'tanh': 2, 'relu': 3}


def gru_unit(input, hidden, size, param_attr=None, bias_attr=None, activation='tanh',
             gate_activation='sigmoid', origin_mode=False):
    """Fluid 1.x's gru_unit: one GRU step, the `gru_unit` op, on `input` [N, size]
    (already projected: size is 3 * D) and the previous state `hidden` [N, D], with
    Weight [D, 3D] (laid out as dynamic_gru's) and Bias [1, 3D] unless bias_attr is False.
    Returns (updated_hidden, reset_hidden_pre, gate). As in Paddle 1.8.5, `activation` and
    `gate_activation` must name identity, sigmoid, tanh or relu but the op always gets
    tanh and sigmoid."""
    _check_float(input, 'input', 'gru_unit')
    _check_float(hidden, 'hidden', 'gru_unit')
    if not isinstance(size, int):
        raise TypeError('gru_unit: size must be an int, got %r' % (size,))
    for what, a in (('activation', activation), ('gate_activation', gate_activation)):
        if a not in _GRU_UNIT_ACTS:
            raise KeyError(a)
    dtype = input.dtype.name
    size = size // 3
    h = _Helper('gru_unit')
    weight = h.param(param_attr, [size, 3 * size], dtype)
    inputs = {'Input': input, 'HiddenPrev': hidden, 'Weight': weight}
    gate, reset_hidden_pre, updated_hidden = h.tmp(dtype), h.tmp(dtype), h.tmp(dtype)
    bias = h.param(bias_attr, [1, 3 * size], dtype, is_bias=True)
    if bias is not None:
        inputs['Bias'] = bias
    h.append('gru_unit', inputs,
             {'Gate': gate, 'ResetHiddenPrev': reset_hidden_pre, 'Hidden': updated_hidden},
             {'activation': 2, 'gate_activation': 1, 'origin_mode': bool(origin_mode)})
    return updated_hidden, reset_hidden_pre, gate


def lstm_unit(x_t, hidden_t_prev, cell_t_prev, forget_bias=0.0, param_attr=None,
              bias_attr=None, name=None):
    """Fluid 1.x's lstm_unit: one LSTM step. fc(concat([x_t, hidden_t_prev], 1), 4 * D)
    (D the width of cell_t_prev) gives the gates input, forget, output, candidate; the
    `lstm_unit` op then computes c = sigmoid(f + forget_bias) * c_prev +
    sigmoid(i) * tanh(g) and h = sigmoid(o) * tanh(c). Returns (h, c)."""
    for what, v in (('x_t', x_t), ('hidden_t_prev', hidden_t_prev),
                    ('cell_t_prev', cell_t_prev)):
        _check_float(v, what, 'lstm_unit')
        if len(v.shape) != 2:
            raise ValueError('Rank of %s must be 2.' % what)
    if x_t.shape[0] != hidden_t_prev.shape[0] or x_t.shape[0] != cell_t_prev.shape[0]:
        raise ValueError('The 1st dimensions of x_t, hidden_t_prev and cell_t_prev must be '
                         'the same.')
    if hidden_t_prev.shape[1] != cell_t_prev.shape[1]:
        raise ValueError('The 2nd dimensions of hidden_t_prev and cell_t_prev must be the '
                         'same.')
    h = _Helper('lstm_unit', name)
    if bias_attr is None:
        bias_attr = ParamAttr()
    size = int(cell_t_prev.shape[1])
    concat_out = concat(input=[x_t, hidden_t_prev], axis=1)
    fc_out = fc(input=concat_out, size=4 * size, param_attr=param_attr, bias_attr=bias_attr)
    dtype = x_t.dtype.name
    c, hid = h.tmp(dtype), h.tmp(dtype)
    h.append('lstm_unit', {'X': fc_out, 'C_prev': cell_t_prev}, {'C': c, 'H': hid},
             {'forget_bias': float(forget_bias)})
    return hid, c


__all__ += ['dynamic_lstm', 'dynamic_lstmp', 'dynamic_gru', 'gru_unit', 'lstm_unit']


from . import learning_rate_scheduler  # noqa: E402
from .learning_rate_scheduler import (exponential_decay, natural_exp_decay,  # noqa: E402
                                      inverse_time_decay, piecewise_decay, noam_decay,
                                      polynomial_decay, cosine_decay, linear_lr_warmup)


from .branch import IfElse, Switch, case, switch_case  # noqa: E402
__all__ += ['IfElse', 'Switch', 'case', 'switch_case']
from . import sequence_lod as _sequence_lod  # noqa: E402
from .sequence_lod import *  # noqa: E402,F401,F403
__all__ += _sequence_lod.__all__
from . import decoding as _decoding  # noqa: E402
from .decoding import *  # noqa: E402,F401,F403
__all__ += _decoding.__all__
from . import tensor as _tensor  # noqa: E402
from .tensor import *  # noqa: E402,F401,F403
__all__ += _tensor.__all__
from . import manip as _manip  # noqa: E402
from .manip import *  # noqa: E402,F401,F403
__all__ += _manip.__all__ + sorted(_manip.BUILTIN_NAMED)
from . import loss as _loss  # noqa: E402
from .loss import *  # noqa: E402,F401,F403
__all__ += _loss.__all__
from . import image as _image  # noqa: E402
from .image import *  # noqa: E402,F401,F403
__all__ += _image.__all__
from . import normalize as _normalize  # noqa: E402
from .normalize import *  # noqa: E402,F401,F403
__all__ += _normalize.__all__
from . import rnn_api as _rnn_api  # noqa: E402
from .rnn_api import *  # noqa: E402,F401,F403
__all__ += _rnn_api.__all__
from . import detection as _detection  # noqa: E402
from .detection import *  # noqa: E402,F401,F403
__all__ += _detection.__all__

from .data_loader import (py_reader, create_py_reader_by_data, read_file,  # noqa: E402,F401
                          double_buffer)
from . import tensor_api as _tensor_api  # noqa: E402
from .tensor_api import *  # noqa: E402,F401,F403
__all__ += _tensor_api.__all__ + sorted(_tensor_api.BUILTIN_NAMED)
from . import distributions as _distributions  # noqa: E402
from .distributions import *  # noqa: E402,F401,F403
__all__ += _distributions.__all__

from .py_func import py_func  # noqa: E402,F401
from . import misc_layers as _misc_layers  # noqa: E402
from .misc_layers import *  # noqa: E402,F401,F403
__all__ += ['py_func'] + _misc_layers.__all__
from . import ctr_layers as _ctr_layers  # noqa: E402
from .ctr_layers import *  # noqa: E402,F401,F403
__all__ += _ctr_layers.__all__



def _fluid_submodule(name):
    """fluid.layers.<name> (nn, tensor, control_flow, ...): Fluid 1.x split its layers
    into these modules and scripts reach layers through them (fluid.layers.nn.fc,
    fluid.layers.tensor.fill_constant). Each is a view of rill.layers, where every layer
    lives."""
    import sys
    import types
    mod = types.ModuleType(__name__ + '.' + name, "Fluid 1.x's fluid.layers.%s, a view of "
                           "rill.layers" % name)
    layers_module = sys.modules[__name__]
    mod.__getattr__ = lambda attr: getattr(layers_module, attr)
    mod.__dir__ = lambda: dir(layers_module)
    return mod


for _sub in ('nn', 'tensor', 'control_flow', 'sequence_lod', 'detection', 'loss', 'ops', 'io',
             'metric_op', 'utils'):
    globals()[_sub] = _fluid_submodule(_sub)
del _sub
distributions = _distributions

from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.layers', 'rill.layers',
                              dict(_manip.BUILTIN_NAMED, **_tensor_api.BUILTIN_NAMED))
