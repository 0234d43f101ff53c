"""Fluid 1.x's sequence layers of paddle/fluid/layers/sequence_lod.py that append one
sequence op each (operators/sequence_ops.c): first / last step, reverse, expand,
expand_as, pad, unpad, enumerate, concat, slice and reshape. Re-exported by rill.layers."""

from . import layers
from .framework import Variable

__all__ = ['sequence_first_step', 'sequence_last_step', 'sequence_reverse', 'sequence_expand',
           'sequence_expand_as', 'sequence_pad', 'sequence_unpad', 'sequence_enumerate',
           'sequence_concat', 'sequence_slice', 'sequence_reshape', 'sequence_scatter',
           'lod_reset', 'lod_append']


def _check(v, what, layer, dtypes=None):
    if not isinstance(v, Variable):
        raise TypeError('%s: %s must be a Variable, not %r' % (layer, what, v))
    if dtypes and v.dtype.name not in dtypes:
        raise TypeError('%s: %s must be %s, not %s' % (layer, what, ' or '.join(dtypes),
                                                        v.dtype.name))


def sequence_first_step(input):
    """The first row of each sequence (sequence_pool with pooltype FIRST)."""
    return layers.sequence_pool(input=input, pool_type='first')


def sequence_last_step(input):
    """The last row of each sequence (sequence_pool with pooltype LAST)."""
    return layers.sequence_pool(input=input, pool_type='last')


def sequence_reverse(x, name=None):
    """Each sequence of x's last LoD level with its rows in reverse order."""
    _check(x, 'x', 'sequence_reverse')
    h = layers._Helper('sequence_reverse', name)
    out = h.tmp(x.dtype.name)
    h.append('sequence_reverse', {'X': x}, {'Y': out})
    return out


def sequence_scatter(input, index, updates, name=None):
    """Out = input [N, ...] with updates added at Out[i, index[j]] for the rows j of
    sequence i of index (int32 / int64 LoD [M, 1]); updates is LoD [M, 1] of input's
    dtype. The `sequence_scatter` op, with gradients for input and updates."""
    _check(input, 'input', 'sequence_scatter', ('float32', 'float64', 'int32', 'int64'))
    _check(index, 'index', 'sequence_scatter', ('int32', 'int64'))
    _check(updates, 'updates', 'sequence_scatter', (input.dtype.name,))
    h = layers._Helper('sequence_scatter', name)
    out = h.tmp(input.dtype.name)
    h.append('sequence_scatter', {'X': input, 'Ids': index, 'Updates': updates}, {'Out': out})
    return out


def sequence_expand(x, y, ref_level=-1, name=None):
    """Sequence i of x (row i when x has no LoD) repeated as many times as sequence i of
    y's LoD level ref_level (-1: the last) is long."""
    _check(x, 'x', 'sequence_expand', ('float32', 'float64', 'int32', 'int64'))
    _check(y, 'y', 'sequence_expand')
    h = layers._Helper('sequence_expand', name)
    out = h.tmp(x.dtype.name)
    h.append('sequence_expand', {'X': x, 'Y': y}, {'Out': out}, {'ref_level': int(ref_level)})
    return out


def sequence_expand_as(x, y, name=None):
    """Row i of x repeated as many times as sequence i of y (its LoD level 0) is long;
    the result takes that level as its LoD."""
    _check(x, 'x', 'sequence_expand_as', ('float32', 'float64', 'int32', 'int64'))
    _check(y, 'y', 'sequence_expand_as')
    h = layers._Helper('sequence_expand_as', name)
    out = h.tmp(x.dtype.name)
    h.append('sequence_expand_as', {'X': x, 'Y': y}, {'Out': out})
    return out


def sequence_pad(x, pad_value, maxlen=None, name=None):
    """(out, length): out [sequences, maxlen or the longest length, ...] holds each
    sequence followed by pad_value (a Variable of one element or of one step); length
    (int64) each sequence's length."""
    _check(x, 'x', 'sequence_pad', ('float32', 'float64', 'int32', 'int64'))
    _check(pad_value, 'pad_value', 'sequence_pad')
    h = layers._Helper('sequence_pad', name)
    out = h.tmp(x.dtype.name)
    length = h.tmp('int64')
    pad_value.stop_gradient = True
    length.stop_gradient = True
    h.append('sequence_pad', {'X': x, 'PadValue': pad_value}, {'Out': out, 'Length': length},
             {'padded_length': -1 if maxlen is None else int(maxlen)})
    return out, length


def sequence_unpad(x, length, name=None):
    """The first length[i] steps of each x[i], as one LoD tensor."""
    _check(x, 'x', 'sequence_unpad', ('float32', 'float64', 'int32', 'int64'))
    _check(length, 'length', 'sequence_unpad', ('int64',))
    h = layers._Helper('sequence_unpad', name)
    out = h.tmp(x.dtype.name)
    length.stop_gradient = True
    h.append('sequence_unpad', {'X': x, 'Length': length}, {'Out': out})
    return out


def sequence_enumerate(input, win_size, pad_value=0, name=None):
    """Row t: the win_size ids of input from t on, pad_value past the end of t's
    sequence."""
    _check(input, 'input', 'sequence_enumerate', ('int32', 'int64'))
    if int(win_size) < 1:
        raise ValueError('sequence_enumerate: win_size must be 1 or more, not %r' % (win_size,))
    h = layers._Helper('sequence_enumerate', name)
    out = h.tmp(input.dtype.name, stop_gradient=True)
    h.append('sequence_enumerate', {'X': input}, {'Out': out},
             {'win_size': int(win_size), 'pad_value': int(pad_value)})
    return out



def sequence_concat(input, name=None):
    """Sequence i of the result: sequence i of input[0], then of input[1], ..."""
    if not isinstance(input, (list, tuple)) or not input:
        raise TypeError('sequence_concat: input must be a non-empty list of Variables, not %r'
                        % (input,))
    for i, v in enumerate(input):
        _check(v, 'input[%d]' % i, 'sequence_concat', ('float32', 'float64', 'int64'))
    h = layers._Helper('sequence_concat', name)
    out = h.tmp(input[0].dtype.name)
    h.append('sequence_concat', {'X': list(input)}, {'Out': out})
    return out


def sequence_slice(input, offset, length, name=None):
    """Sequence i of the result: rows offset[i] .. offset[i] + length[i] of sequence i of
    input (offset and length int64 Variables, one value per sequence)."""
    _check(input, 'input', 'sequence_slice')
    _check(offset, 'offset', 'sequence_slice', ('int64',))
    _check(length, 'length', 'sequence_slice', ('int64',))
    h = layers._Helper('sequence_slice', name)
    out = h.tmp(input.dtype.name)
    offset.stop_gradient = True
    length.stop_gradient = True
    h.append('sequence_slice', {'X': input, 'Offset': offset, 'Length': length}, {'Out': out})
    return out


def sequence_reshape(input, new_dim):
    """Each sequence of input [T, D] as rows of new_dim (its length times D / new_dim)."""
    _check(input, 'input', 'sequence_reshape', ('float32', 'float64', 'int32', 'int64'))
    h = layers._Helper('sequence_reshape')
    out = h.tmp(input.dtype.name)
    h.append('sequence_reshape', {'X': input}, {'Out': out}, {'new_dim': int(new_dim)})
    return out


_LOD_DTYPES = ('float32', 'float64', 'int32', 'int64')


def lod_reset(x, y=None, target_lod=None):
    """x's data with a new LoD: y's LoD when y has one at run time, else one level of
    offsets from y's int32 values, or from target_lod (offsets, 0 first) without y."""
    _check(x, 'x', 'lod_reset', _LOD_DTYPES)
    h = layers._Helper('lod_reset')
    out = h.tmp(x.dtype.name)
    if y is not None:
        _check(y, 'y', 'lod_reset')
        h.append('lod_reset', {'X': x, 'Y': y}, {'Out': out})
    elif target_lod is not None:
        h.append('lod_reset', {'X': x}, {'Out': out},
                 {'target_lod': [int(v) for v in target_lod]})
    else:
        raise ValueError('lod_reset: give y or target_lod')
    return out


def lod_append(x, level):
    """x with one more LoD level below its own: `level` (offsets, a list or an int32
    Variable)."""
    if x is None:
        raise ValueError('lod_append: x must not be None')
    _check(x, 'x', 'lod_append', _LOD_DTYPES)
    h = layers._Helper('lod_append')
    out = h.tmp(x.dtype.name)
    ins, attrs = {'X': x}, {'append': True}
    if isinstance(level, Variable):
        ins['Y'] = level
    elif isinstance(level, (list, tuple)):
        attrs['target_lod'] = [int(v) for v in level]
    else:
        raise ValueError('lod_append: level must be a list, tuple or Variable')
    h.append('lod_reset', ins, {'Out': out}, attrs)
    return out
