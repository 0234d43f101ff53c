"""Three Fluid 1.x layers of click-through-rate models, re-exported by rill.layers, each
appending its op (operators/<op>.c): shard_index (class indices local to one shard),
continuous_value_model (the `cvm` op: log-transformed show and click columns) and
filter_by_instag (instances kept by their tags)."""

from . import layers
from .framework import Variable

__all__ = ['shard_index', 'continuous_value_model', 'filter_by_instag']


def _check(x, what, layer, dtypes):
    if not isinstance(x, Variable):
        raise TypeError("%s: %s must be a Variable, got %r" % (layer, what, x))
    if x.dtype.name not in dtypes:
        raise TypeError("%s: %s ('%s') is %s, expected %s" %
                        (layer, what, x.name, x.dtype.name, ' or '.join(dtypes)))


def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):
    """For index_num classes split into nshards blocks of ceil(index_num / nshards):
    input's index as an index within block shard_id, or ignore_value when another block
    holds it. input is int32 or int64 [..., 1] with values in [0, index_num). No
    gradient."""
    _check(input, 'input', 'shard_index', ('int32', 'int64'))
    for k, v in (('index_num', index_num), ('nshards', nshards), ('shard_id', shard_id),
                 ('ignore_value', ignore_value)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError('shard_index: %s must be an int, got %r' % (k, v))
    if shard_id < 0 or shard_id >= nshards:
        raise ValueError('The shard_id(%d) should be in [0, %d)' % (shard_id, nshards))
    h = layers._Helper('shard_index')
    out = h.tmp(input.dtype.name, stop_gradient=True)
    h.append('shard_index', {'X': input}, {'Out': out},
             {'index_num': index_num, 'nshards': nshards, 'shard_id': shard_id,
              'ignore_value': ignore_value})
    return out


def continuous_value_model(input, cvm, use_cvm=True):
    """input [N, D]: rows of show, click, then D - 2 values; cvm [N, 2] (or one pair per
    sequence of input's LoD) the show and click pairs. use_cvm: [N, D] with the first two
    columns log(show + 1) and log(click + 1) - log(show + 1); else [N, D - 2] without
    them. Its gradient, as Paddle's, puts each row's cvm pair in the first two columns of
    input's gradient."""
    _check(input, 'input', 'continuous_value_model', ('float32', 'float64'))
    _check(cvm, 'cvm', 'continuous_value_model', ('float32', 'float64'))
    h = layers._Helper('cvm')
    out = h.tmp(input.dtype.name)
    h.append('cvm', {'X': [input], 'CVM': [cvm]}, {'Y': [out]}, {'use_cvm': bool(use_cvm)})
    return out


def filter_by_instag(ins, ins_tag, filter_tag, is_lod, out_val_if_empty=0):
    """The instances of ins (its rows, or with is_lod its LoD sequences) whose tags (the
    LoD sequences of int64 ins_tag, one per instance) include one of filter_tag's.
    Returns [out, loss_weight]: the kept instances' rows, one LoD sequence each, and
    float32 ones [kept, 1]; when none is kept, out is one row of out_val_if_empty and
    loss_weight [[0]]."""
    _check(ins, 'ins', 'filter_by_instag', ('float32', 'float64', 'int32', 'int64'))
    _check(ins_tag, 'ins_tag', 'filter_by_instag', ('int64',))
    _check(filter_tag, 'filter_tag', 'filter_by_instag', ('int64',))
    h = layers._Helper('filter_by_instag')
    out = h.tmp(ins.dtype.name)
    loss_weight = h.tmp('float32')
    mmap = h.tmp('int64')
    h.append('filter_by_instag', {'Ins': ins, 'Ins_tag': ins_tag, 'Filter_tag': filter_tag},
             {'Out': out, 'LossWeight': loss_weight, 'IndexMap': mmap},
             {'is_lod': bool(is_lod), 'out_val_if_empty': int(out_val_if_empty)})
    return [out, loss_weight]
