"""Fluid 1.8's tensor-style layers (re-exported by rill.layers): math on existing ops
(logsumexp, clamp, addcmul, t, nonzero, elementwise_equal, full), the random layers
(uniform_random, gaussian_random, randn), selected-rows conversions and while_loop. Each
appends the ops Paddle 1.8.5's layer appends, with the same slots and attributes, so
saved programs interoperate; shapes come from the ops' inference in C."""

import builtins

import numpy as np

from . import core, layers
from .framework import Variable, unique_name

__all__ = ['logsumexp', 'clamp', 'addcmul', 't', 'nonzero', 'elementwise_equal', 'full',
           'uniform_random', 'gaussian_random', 'randn', 'merge_selected_rows',
           'get_tensor_from_selected_rows', 'while_loop', 'strided_slice', 'bmm', 'dot',
           'cross', 'dist', 'addmm', 'meshgrid', 'diag_embed', 'multiplex', 'allclose',
           'uniform_random_batch_size_like', 'gaussian_random_batch_size_like', 'randint',
           'randperm', 'Print', 'add_position_encoding',
           'bilinear_tensor_product']

_FLOATS = ('float32', 'float64')


def _check(v, what, layer, dtypes=None):
    if not isinstance(v, Variable):
        raise TypeError('%s: %s must be a Variable, not %r' % (layer, what, v))
    if dtypes and v.dtype.name not in dtypes:
        raise TypeError("%s: %s '%s' is %s; expected %s" % (layer, what, v.name, v.dtype.name,
                                                            ' or '.join(dtypes)))


def _dtype_name(dtype):
    return np.dtype(dtype).name if not isinstance(dtype, str) else np.dtype(dtype).name


def logsumexp(x, dim=None, keepdim=False, out=None, name=None):
    """log(sum(exp(x))) over dim (every dim when None), as exp, reduce_sum and log."""
    _check(x, 'x', 'logsumexp', _FLOATS)
    s = layers.reduce_sum(layers.exp(x), dim, keepdim)
    if out is not None:
        _check(out, 'out', 'logsumexp', (x.dtype.name,))
        layers._Helper('logsumexp').append('log', {'X': s}, {'Out': out})
        return out
    return layers.log(s, name)


def clamp(input, min=None, max=None, output=None, name=None):
    """input limited to [min, max]: a clip op whose Min / Max inputs, when min or max is a
    Variable, override the attributes (which default to the float range)."""
    import sys
    if min is None and max is None:
        raise ValueError('clamp: either min or max should be defined.')
    _check(input, 'input', 'clamp')
    ins, attrs = {'X': input}, {'min': sys.float_info.min, 'max': sys.float_info.max}
    for key, v in (('min', min), ('max', max)):
        if v is None:
            continue
        if isinstance(v, Variable):
            _check(v, key, 'clamp', ('float32', 'float64', 'int32'))
            v.stop_gradient = True
            ins[key.capitalize()] = v
        elif isinstance(v, float):
            attrs[key] = v
        else:
            raise TypeError('clamp: %s must be a float or a Variable, not %r' % (key, v))
    h = layers._Helper('clamp', name)
    out = output if output is not None else h.tmp(input.dtype.name)
    h.append('clip', ins, {'Out': [out]}, attrs)
    return out


def addcmul(input, tensor1, tensor2, value=1.0, out=None, name=None):
    """input + value * tensor1 * tensor2 (elementwise_mul, scale, elementwise_add)."""
    ok = ('float32', 'float64', 'int32', 'int64')
    for v, what in ((input, 'input'), (tensor1, 'tensor1'), (tensor2, 'tensor2')):
        _check(v, what, 'addcmul', ok)
    want = float if input.dtype.name in _FLOATS else int
    if not isinstance(value, want) or isinstance(value, bool):
        raise TypeError('addcmul: value must be %s for %s input, not %r'
                        % (want.__name__, input.dtype.name, value))
    r = layers.elementwise_add(input, layers.scale(layers.elementwise_mul(tensor1, tensor2),
                                                   float(value)))
    if out is not None:
        layers.assign(r, out)
        return out
    return r


def t(input, name=None):
    """The transpose of a matrix; a vector comes back as it is."""
    _check(input, 'input', 't', ('float16', 'float32', 'float64', 'int32', 'int64'))
    if len(input.shape) > 2:
        raise ValueError('t: input %s has rank %d; t takes rank <= 2 (use transpose)'
                         % (input.name, len(input.shape)))
    if len(input.shape) < 2:
        return input
    h = layers._Helper('t', name)
    out, xshape = h.tmp(input.dtype.name), h.tmp(input.dtype.name)
    h.append('transpose2', {'X': [input]}, {'Out': [out], 'XShape': [xshape]},
             {'axis': [1, 0]})
    return out


def nonzero(input, as_tuple=False):
    """The int64 coordinates [count, rank] of input's nonzero elements; as_tuple gives one
    [count, 1] column per dim."""
    _check(input, 'input', 'nonzero')
    rank = len(input.shape)
    outs = layers.where(input)
    if not as_tuple:
        return outs
    if rank == 1:
        return (outs,)
    return tuple(layers.slice(outs, axes=[rank - 1], starts=[i], ends=[i + 1])
                 for i in range(rank))


def elementwise_equal(x, y, name=None):
    """x == y elementwise, as bool (the equal op)."""
    _check(x, 'x', 'elementwise_equal')
    _check(y, 'y', 'elementwise_equal')
    h = layers._Helper('elementwise_equal', name)
    out = h.tmp('bool', stop_gradient=True)
    h.append('equal', {'X': [x], 'Y': [y]}, {'Out': [out]}, {'force_cpu': False})
    return out


def full(shape, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    """A tensor of shape filled with fill_value (fill_constant)."""
    dtype = _dtype_name(dtype or 'float32')
    if dtype not in ('bool', 'float16', 'float32', 'float64', 'int32', 'int64'):
        raise TypeError('full: dtype %s is not bool, float16, float32, float64, int32 or '
                        'int64' % dtype)
    if not isinstance(shape, (list, tuple)):
        raise TypeError('full: shape must be a list or tuple, not %r' % (shape,))
    if out is not None:
        _check(out, 'out', 'full')
    out = layers.fill_constant(shape, dtype, fill_value, out=out)
    out.stop_gradient = stop_gradient
    return out


def _shape_inputs(shape, layer, attrs):
    """Paddle's shape arguments of the random ops: a list of ints (attribute shape), a
    list holding int64 Variables (ShapeTensorList, -1 in the attribute) or a Variable
    (ShapeTensor)."""
    if isinstance(shape, Variable):
        shape.stop_gradient = True
        return {'ShapeTensor': shape}
    if not isinstance(shape, (list, tuple)) or not shape:
        raise TypeError('%s: shape must be a non-empty list, tuple or Variable, not %r'
                        % (layer, shape))
    has_var = builtins.any(isinstance(d, Variable) for d in shape)
    attr, tensors = [], []
    for d in shape:
        if isinstance(d, Variable):
            d.stop_gradient = True
            attr.append(-1)
            tensors.append(d)
        else:
            if int(d) <= 0:
                raise ValueError('%s: shape %s has a non-positive extent' % (layer, list(shape)))
            attr.append(int(d))
            if has_var:
                tensors.append(layers.fill_constant([1], 'int64', int(d), force_cpu=True))
    attrs['shape'] = attr
    return {'ShapeTensorList': tensors} if has_var else {}


def _random(op, layer, shape, dtype, attrs, name=None):
    dtype = _dtype_name(dtype)
    if dtype not in _FLOATS:
        raise TypeError('%s: dtype %s is not float32 or float64' % (layer, dtype))
    ins = _shape_inputs(shape, layer, attrs)
    attrs['dtype'] = core.dtype_code(dtype)
    h = layers._Helper(layer, name)
    out = h.tmp(dtype)
    h.append(op, ins, {'Out': out}, attrs)
    return out


def uniform_random(shape, dtype='float32', min=-1.0, max=1.0, seed=0):
    """Uniform samples in [min, max); seed 0 takes rill's default seed mixed with the
    output's name (operators/random.c)."""
    return _random('uniform_random', 'uniform_random', shape, dtype,
                   {'seed': int(seed), 'min': float(min), 'max': float(max)})


def gaussian_random(shape, mean=0.0, std=1.0, seed=0, dtype='float32'):
    """Normal samples of mean and std."""
    return _random('gaussian_random', 'gaussian_random', shape, dtype,
                   {'mean': float(mean), 'std': float(std), 'seed': int(seed),
                    'use_mkldnn': False})


def randn(shape, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    """Standard normal samples (gaussian_random); Paddle draws the seed attribute from
    numpy's generator, as here."""
    if not isinstance(shape, (list, tuple)) or not shape:
        raise TypeError('randn: shape must be a non-empty list or tuple, not %r' % (shape,))
    dtype = _dtype_name(dtype or 'float32')
    if dtype not in _FLOATS:
        raise TypeError('randn: dtype %s is not float32 or float64' % dtype)
    attrs = {'shape': [int(d) for d in shape], 'mean': 0.0, 'std': 1.0,
             'seed': int(np.random.randint(0, 100)), 'dtype': core.dtype_code(dtype),
             'use_mkldnn': False}
    h = layers._Helper('randn', name)
    if out is None:
        out = h.tmp(dtype)
    else:
        _check(out, 'out', 'randn', (dtype,))
    h.append('gaussian_random', {}, {'Out': out}, attrs)
    out.stop_gradient = stop_gradient
    return out


def merge_selected_rows(x, name=None):
    """x's rows with repeated row numbers summed into one."""
    _check(x, 'x', 'merge_selected_rows')
    h = layers._Helper('merge_selected_rows', name)
    out = h.block.create_var(name=unique_name.generate(h.name + '.tmp'),
                             dtype=x.dtype.name, type=x.type, infer=True)
    h.append('merge_selected_rows', {'X': x}, {'Out': out})
    return out


def get_tensor_from_selected_rows(x, name=None):
    """The dense value rows of a SelectedRows variable."""
    _check(x, 'x', 'get_tensor_from_selected_rows')
    if x.type != core.SELECTED_ROWS:
        raise TypeError("get_tensor_from_selected_rows: x '%s' must be SELECTED_ROWS" % x.name)
    h = layers._Helper('get_tensor_from_selected_rows', name)
    out = h.tmp(x.dtype.name)
    h.append('get_tensor_from_selected_rows', {'X': x}, {'Out': out})
    return out


def _flatten(nest):
    if isinstance(nest, (list, tuple)):
        return [v for s in nest for v in _flatten(s)]
    if isinstance(nest, dict):
        return [v for k in sorted(nest) for v in _flatten(nest[k])]
    return [nest]


def _same_structure(a, b):
    if isinstance(a, (list, tuple)) != isinstance(b, (list, tuple)) or \
            isinstance(a, dict) != isinstance(b, dict):
        return False
    if isinstance(a, dict):
        return sorted(a) == sorted(b) and builtins.all(_same_structure(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and builtins.all(_same_structure(x, y) for x, y in zip(a, b))
    return True


def while_loop(cond, body, loop_vars, is_test=False, name=None):
    """Runs body(*loop_vars) while cond(*loop_vars) holds, on a While block: each step
    assigns body's results back into loop_vars and cond's into the loop's condition.
    Returns loop_vars, which hold the last values after the loop."""
    if not callable(cond):
        raise TypeError('cond in while_loop should be callable')
    if not callable(body):
        raise TypeError('body in while_loop should be callable')
    if not isinstance(loop_vars, (list, tuple)):
        raise TypeError('loop_vars in while_loop should be a list or tuple')
    if len(loop_vars) == 0:
        raise ValueError('loop_vars in while_loop should not be empty')
    pre_cond = cond(*loop_vars)
    if not isinstance(pre_cond, Variable):
        raise TypeError('cond in while_loop should return a variable')
    if pre_cond.dtype != np.dtype('bool'):
        raise TypeError('cond in while_loop should return a boolean variable')
    if int(np.prod(pre_cond.shape)) != 1:
        raise TypeError('the shape of the variable returned by cond should be [], but given '
                        'shape as %s.' % list(pre_cond.shape))
    loop = layers.While(pre_cond, is_test, name)
    with loop.block():
        mutable = builtins.any(isinstance(v, (list, tuple, dict)) for v in loop_vars)
        args = [list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v
                for v in loop_vars] if mutable else loop_vars
        outs = body(*args)
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        if not _same_structure(list(outs), list(loop_vars)):
            raise ValueError('body in while_loop should return the same arity (length and '
                             'structure) as loop_vars')
        now = cond(*outs)
        for o, v in zip(_flatten(list(outs)), _flatten(list(loop_vars))):
            layers.assign(o, v)
        layers.assign(now, pre_cond)
    return loop_vars


def strided_slice(input, axes, starts, ends, strides):
    """input[starts:ends:strides] along axes, by Paddle 1.8.5's rules: a negative stride
    takes the elements a forward slice of [end + 1, start + 1) with |stride| takes,
    reversed (so not always Python's x[start:end:stride] ones), and ends -1 with a
    negative stride runs through index 0. starts, ends and strides may be lists holding
    int32 Variables, or int32 Variables."""
    _check(input, 'input', 'strided_slice', ('float32', 'float64', 'int32', 'int64'))
    if not isinstance(axes, (list, tuple)):
        raise TypeError('strided_slice: axes must be a list or tuple, not %r' % (axes,))
    h = layers._Helper('strided_slice')
    ins, attrs = {'Input': input}, {'axes': [int(a) for a in axes]}
    flags = [1] * len(axes)
    for key, v in (('starts', starts), ('ends', ends), ('strides', strides)):
        slot = key.capitalize()
        if isinstance(v, Variable):
            _check(v, key, 'strided_slice', ('int32',))
            v.stop_gradient = True
            ins[slot + 'Tensor'] = v
        elif isinstance(v, (list, tuple)):
            if builtins.any(isinstance(d, Variable) for d in v):
                tensors, attr = [], []
                for i, d in enumerate(v):
                    if isinstance(d, Variable):
                        _check(d, '%s[%d]' % (key, i), 'strided_slice', ('int32',))
                        d.stop_gradient = True
                        tensors.append(d)
                        attr.append(-1)
                        flags[i] = -1
                    else:
                        tensors.append(layers.fill_constant([1], 'int32', int(d),
                                                            force_cpu=True))
                        attr.append(int(d))
                ins[slot + 'TensorList'] = tensors
                attrs[key] = attr
            else:
                attrs[key] = [int(d) for d in v]
        else:
            raise TypeError('strided_slice: %s must be a list, tuple or Variable, not %r'
                            % (key, v))
    attrs['infer_flags'] = flags
    out = h.tmp(input.dtype.name)
    h.append('strided_slice', ins, {'Out': out}, attrs)
    return out


def _binary(op, layer, x, y, dtypes, attrs=None, name=None):
    _check(x, 'x', layer, dtypes)
    _check(y, 'y', layer, dtypes)
    h = layers._Helper(layer, name)
    out = h.tmp(x.dtype.name)
    h.append(op, {'X': [x], 'Y': [y]}, {'Out': [out]}, attrs or {})
    return out


def bmm(x, y, name=None):
    """The batched matrix product of x [B, M, K] and y [B, K, N]."""
    return _binary('bmm', 'bmm', x, y, _FLOATS, name=name)


def dot(x, y, name=None):
    """The inner products of the rows of x and y (1-D: [1]; 2-D [B, N]: [B, 1])."""
    return _binary('dot', 'dot', x, y, _FLOATS + ('int32', 'int64'), name=name)


def cross(input, other, dim=None):
    """The cross product of the 3-vectors of input and other along dim (default, and as in
    Paddle also for dim=0: the first dim of extent 3)."""
    return _binary('cross', 'cross', input, other, _FLOATS + ('int32', 'int64'),
                   {'dim': int(dim)} if dim else None)


def dist(x, y, p=2):
    """The p-norm of x - y (broadcast), shape [1]: p=0 counts the nonzeros, inf / -inf
    take the largest / smallest |x - y|."""
    if not isinstance(p, (float, int)) or isinstance(p, bool):
        raise TypeError('dist: p must be a float or int, not %r' % (p,))
    return _binary('dist', 'dist', x, y, _FLOATS, {'p': float(p)})


def addmm(input, x, y, alpha=1.0, beta=1.0, name=None):
    """beta * input + alpha * x y, input broadcast over the product's [M, N]."""
    for v, what in ((input, 'Input'), (x, 'X'), (y, 'Y')):
        _check(v, what, 'addmm', _FLOATS)
    h = layers._Helper('addmm', name)
    out = h.tmp(x.dtype.name)
    h.append('addmm', {'Input': input, 'X': x, 'Y': y}, {'Out': out},
             {'Alpha': float(alpha), 'Beta': float(beta)})
    return out


def meshgrid(input, name=None):
    """Coordinate grids of the 1-D tensors in input: k outputs [n1, ..., nk], the i-th
    varying along dim i."""
    if not isinstance(input, list):
        raise TypeError('The type of input in meshgrid should be list.')
    for i, v in enumerate(input):
        _check(v, 'input[%d]' % i, 'meshgrid',
               ('float16', 'float32', 'float64', 'int32', 'int64'))
    h = layers._Helper('meshgrid', name)
    outs = [h.tmp(v.dtype.name) for v in input]
    h.append('meshgrid', {'X': list(input)}, {'Out': outs})
    return outs


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """input's last dim laid on the offset diagonal of new matrices in dims dim1, dim2
    (zeros elsewhere); no gradient, as in Paddle."""
    if not isinstance(input, Variable):
        input = layers.assign(np.asarray(input))
    _check(input, 'Input', 'diag_embed', ('int32', 'int64', 'float16', 'float32', 'float64'))
    rank = len(input.shape)
    if rank < 1:
        raise ValueError('diag_embed: Input must be at least 1-dimensional')
    for d, what in ((dim1, 'dim1'), (dim2, 'dim2')):
        if abs(d) > rank:
            raise ValueError('diag_embed: %s %d is out of range [%d, %d]'
                             % (what, d, -(rank + 1), rank))
    if (dim1 if dim1 >= 0 else rank + dim1 + 1) == (dim2 if dim2 >= 0 else rank + dim2 + 1):
        raise ValueError('diag_embed: dim1 and dim2 cannot be the same dimension '
                         '(dim1 %d, dim2 %d)' % (dim1, dim2))
    h = layers._Helper('diag_embed')
    out = h.tmp(input.dtype.name, stop_gradient=True)
    h.append('diag_embed', {'Input': [input]}, {'Out': [out]},
             {'offset': int(offset), 'dim1': int(dim1), 'dim2': int(dim2)})
    return out


def multiplex(inputs, index):
    """Row i of the output is row i of inputs[index[i]] (index int32/int64 [N, 1])."""
    if not isinstance(inputs, list):
        raise TypeError('multiplex: inputs must be a list, not %r' % (inputs,))
    if len(inputs) < 2:
        raise ValueError('inputs should be a list object with at least 2 elements.')
    for i, x in enumerate(inputs):
        _check(x, 'input[%d]' % i, 'multiplex', _FLOATS + ('int32', 'int64'))
    _check(index, 'index', 'multiplex', ('int32', 'int64'))
    h = layers._Helper('multiplex')
    out = h.tmp(inputs[0].dtype.name)
    h.append('multiplex', {'X': list(inputs), 'Ids': index}, {'Out': [out]})
    return out


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """One bool [1]: every |input - other| <= atol + rtol * |other| (NaN equal to NaN
    when equal_nan)."""
    _check(input, 'input', 'allclose', _FLOATS)
    _check(other, 'other', 'allclose', _FLOATS)
    h = layers._Helper('allclose', name)
    out = h.tmp('bool', stop_gradient=True)
    h.append('allclose', {'Input': input, 'Other': other}, {'Out': out},
             {'rtol': float(rtol), 'atol': float(atol), 'equal_nan': bool(equal_nan)})
    return out


def _batch_size_like(op, layer, input, shape, dtype, input_dim_idx, output_dim_idx, attrs):
    _check(input, 'input', layer)
    dtype = _dtype_name(dtype)
    if dtype not in _FLOATS:
        raise TypeError('%s: dtype %s is not float32 or float64' % (layer, dtype))
    if not isinstance(shape, (list, tuple)):
        raise TypeError('%s: shape must be a list or tuple, not %r' % (layer, shape))
    attrs.update({'shape': [int(d) for d in shape], 'input_dim_idx': int(input_dim_idx),
                  'output_dim_idx': int(output_dim_idx), 'dtype': core.dtype_code(dtype)})
    h = layers._Helper(layer)
    out = h.tmp(dtype)
    h.append(op, {'Input': input}, {'Out': out}, attrs)
    return out


def uniform_random_batch_size_like(input, shape, dtype='float32', input_dim_idx=0,
                                   output_dim_idx=0, min=-1.0, max=1.0, seed=0):
    """uniform_random of shape, its dim output_dim_idx taken from input's dim
    input_dim_idx when the program runs."""
    return _batch_size_like('uniform_random_batch_size_like', 'uniform_random_batch_size_like',
                            input, shape, dtype, input_dim_idx, output_dim_idx,
                            {'min': float(min), 'max': float(max), 'seed': int(seed)})


def gaussian_random_batch_size_like(input, shape, input_dim_idx=0, output_dim_idx=0,
                                    mean=0.0, std=1.0, seed=0, dtype='float32'):
    """gaussian_random of shape, its dim output_dim_idx taken from input's dim
    input_dim_idx when the program runs."""
    return _batch_size_like('gaussian_random_batch_size_like',
                            'gaussian_random_batch_size_like', input, shape, dtype,
                            input_dim_idx, output_dim_idx,
                            {'mean': float(mean), 'std': float(std), 'seed': int(seed)})


def randint(low, high=None, shape=None, out=None, dtype=None, device=None,
            stop_gradient=False, seed=0, name=None):
    """Integers uniform in [low, high) (in [0, low) without high), shape [1] by default."""
    dtype = _dtype_name(dtype or 'int64')
    if dtype not in ('int32', 'int64'):
        raise TypeError('randint: dtype %s is not int32 or int64' % dtype)
    if shape is None:
        shape = [1]
    if high is None:
        low, high = 0, low
    if low >= high:
        raise ValueError("randint's low must less then high, but received low = %s, "
                         'high = %s' % (low, high))
    attrs = {'low': int(low), 'high': int(high), 'seed': int(seed),
             'dtype': core.dtype_code(dtype)}
    ins = _shape_inputs(shape, 'randint', attrs)
    h = layers._Helper('randint', name)
    if out is None:
        out = h.tmp(dtype)
    else:
        _check(out, 'out', 'randint', (dtype,))
    h.append('randint', ins, {'Out': out}, attrs)
    out.stop_gradient = stop_gradient
    return out


def randperm(n, out=None, dtype='int64', device=None, stop_gradient=True, seed=0):
    """A random permutation of 0 .. n-1."""
    if n < 1:
        raise ValueError('The input n should be greater than 0 in randperm op.')
    dtype = _dtype_name(dtype)
    if dtype not in ('int32', 'int64'):
        raise TypeError('randperm: dtype %s is not int32 or int64' % dtype)
    if device not in (None, 'cpu', 'gpu'):
        raise ValueError("The input device should in [None, 'cpu', 'gpu'].")
    h = layers._Helper('randperm')
    if out is None:
        out = h.tmp(dtype)
    else:
        _check(out, 'out', 'randperm', (dtype,))
    if stop_gradient:
        out.stop_gradient = True
    h.append('randperm', {}, {'Out': [out]},
             {'n': int(n), 'dtype': core.dtype_code(dtype), 'seed': int(seed)})
    return out


def Print(input, first_n=-1, message=None, summarize=20, print_tensor_name=True,
          print_tensor_type=True, print_tensor_shape=True, print_tensor_lod=True,
          print_phase='both'):
    """Passes input through, writing it to stderr (name, shape, dtype, LoD and the first
    summarize values, after message) when the program runs; print_phase 'forward',
    'backward' or 'both' says whether input, its gradient or both are printed. rill
    prints every run (first_n is recorded for Paddle but not counted)."""
    _check(input, 'input', 'fluid.layers.Print', _FLOATS + ('int32', 'int64', 'bool'))
    phase = str(print_phase).upper()
    if phase not in ('FORWARD', 'BACKWARD', 'BOTH'):
        raise ValueError("Print: print_phase must be 'forward', 'backward' or 'both', not %r"
                         % (print_phase,))
    h = layers._Helper('print_' + input.name)
    out = h.tmp(input.dtype.name)
    h.append('print', {'In': input}, {'Out': out},
             {'first_n': int(first_n), 'summarize': int(summarize), 'message': message or '',
              'print_tensor_name': bool(print_tensor_name),
              'print_tensor_type': bool(print_tensor_type),
              'print_tensor_shape': bool(print_tensor_shape),
              'print_tensor_lod': bool(print_tensor_lod), 'print_phase': phase})
    return out


def add_position_encoding(input, alpha, beta, name=None):
    """alpha * input + beta * the sinusoid encoding of each row's position in its
    sequence (input [N, T, P] or a level-1 LoD [total, P], P even)."""
    _check(input, 'input', 'add_position_encoding', _FLOATS)
    h = layers._Helper('add_position_encoding', name)
    out = h.tmp(input.dtype.name)
    h.append('add_position_encoding', {'X': input}, {'Out': out},
             {'alpha': float(alpha), 'beta': float(beta)})
    return out


def bilinear_tensor_product(x, y, size, act=None, name=None, param_attr=None, bias_attr=None):
    """out[b, i] = act(x[b] W[i] y[b]^T + bias[i]) for x [B, M], y [B, N], a parameter W
    [size, M, N] and (unless bias_attr is False) a bias [1, size]."""
    _check(x, 'x', 'bilinear_tensor_product', _FLOATS)
    _check(y, 'y', 'bilinear_tensor_product', _FLOATS)
    h = layers._Helper('bilinear_tensor_product', name)
    dtype = x.dtype.name
    w = h.param(param_attr, [size, x.shape[1], y.shape[1]], dtype)
    ins = {'X': x, 'Y': y, 'Weight': w}
    b = h.param(bias_attr, [1, size], dtype, is_bias=True)
    if b is not None:
        ins['Bias'] = b
    out = h.tmp(dtype)
    h.append('bilinear_tensor_product', ins, {'Out': out})
    return h.act(out, act)


def hash(input, hash_size, num_hash=1, name=None):
    """num_hash XXH64 hashes (seeds 0 .. num_hash-1) of each row of an int32/int64 input
    [N, D], each modulo hash_size: [N, num_hash, 1] of input's dtype, input's LoD kept."""
    _check(input, 'input', 'hash', ('int32', 'int64'))
    for v, what in ((hash_size, 'hash_size'), (num_hash, 'num_hash')):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError('hash: %s must be an int, not %r' % (what, v))
    h = layers._Helper('hash', name)
    out = h.tmp(input.dtype.name, stop_gradient=True)
    h.append('hash', {'X': input}, {'Out': out},
             {'num_hash': num_hash, 'mod_by': hash_size})
    return out


# Layers named like Python builtins (see manip.BUILTIN_NAMED): provided by rill.layers'
# module __getattr__, not bound as its globals.
BUILTIN_NAMED = {'hash': hash}
