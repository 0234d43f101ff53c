"""Fluid 1.x's small tensor layers built on existing ops (re-exported by rill.layers):
create_tensor, create_global_var, zeros, ones, zeros_like, sum, mul, rank and
autoincreased_step_counter."""

import numpy as np

from . import layers
from .framework import (Variable, default_main_program, default_startup_program,
                        unique_name)
from .initializer import Constant

__all__ = ['create_tensor', 'create_global_var', 'zeros', 'ones', 'zeros_like', 'sum', 'mul',
           'rank', 'autoincreased_step_counter']


def create_tensor(dtype, name=None, persistable=False):
    """A variable of dtype with no op writing it yet (assign or an optimizer fills it)."""
    h = layers._Helper('create_tensor', name)
    return h.block.create_var(name=name or unique_name.generate(h.name), dtype=dtype,
                              persistable=persistable)


def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None):
    """A variable of the global block filled with value by the startup program."""
    for d in shape:
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError('create_global_var: each item of shape must be an int, not %r'
                            % (d,))
    h = layers._Helper('global_var', name)
    vname = name or unique_name.generate(h.name)
    var = h.main.global_block().create_var(name=vname, shape=list(shape), dtype=dtype,
                                           persistable=persistable, stop_gradient=True)
    var.stop_gradient = True
    sb = default_startup_program().global_block()
    sv = sb.create_var(name=vname, shape=list(shape), dtype=dtype, persistable=persistable)
    Constant(float(value))(sv, sb)
    return var


def zeros(shape, dtype, force_cpu=False):
    return layers.fill_constant(shape=shape, dtype=dtype, value=0.0, force_cpu=force_cpu)


def ones(shape, dtype, force_cpu=False):
    return layers.fill_constant(shape=shape, dtype=dtype, value=1.0, force_cpu=force_cpu)


def zeros_like(x, out=None):
    """Zeros of x's shape and dtype (fill_zeros_like)."""
    if not isinstance(x, Variable):
        raise TypeError('zeros_like: x must be a Variable, not %r' % (x,))
    h = layers._Helper('zeros_like')
    out = out if out is not None else h.tmp(x.dtype.name)
    h.append('fill_zeros_like', {'X': [x]}, {'Out': [out]})
    out.stop_gradient = True
    return out


def sum(x):
    """The elementwise sum of a Variable or a list of them (the sum op)."""
    return layers.sums(x if isinstance(x, (list, tuple)) else [x])


def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None):
    """x flattened to 2-D at x_num_col_dims times y flattened at y_num_col_dims."""
    for what, v in (('x', x), ('y', y)):
        if not isinstance(v, Variable):
            raise TypeError('mul: %s must be a Variable, not %r' % (what, v))
    h = layers._Helper('mul', name)
    out = h.tmp(x.dtype.name)
    h.append('mul', {'X': x, 'Y': y}, {'Out': out},
             {'x_num_col_dims': int(x_num_col_dims), 'y_num_col_dims': int(y_num_col_dims)})
    return out


def rank(input):
    """The number of dims of input, an int32 constant."""
    if not isinstance(input, Variable):
        raise TypeError('rank: input must be a Variable, not %r' % (input,))
    return layers.assign(np.array(len(input.shape), 'int32'))


def _global_counter(name, dtype, start):
    """The persistable [1] variable `name` of the main program's global block, filled
    with start by the startup program: (counter, True) when this call declared it, so
    that the caller adds the op that advances it."""
    blk = default_main_program().global_block()
    if blk.has_var(name):
        return blk.var(name), False
    counter = blk.create_var(name=name, shape=[1], dtype=dtype, persistable=True)
    counter.stop_gradient = True
    sb = default_startup_program().global_block()
    sv = sb.create_var(name=name, shape=[1], dtype=dtype, persistable=True)
    Constant(float(start))(sv, sb)
    return counter, True


def autoincreased_step_counter(counter_name=None, begin=1, step=1):
    """A persistable int64 counter of the global block, begin during the first run of
    the main program and step more at each later one (an increment op first in it)."""
    counter, new = _global_counter(counter_name or '@STEP_COUNTER@', 'int64', begin - 1)
    if new:
        counter.block._prepend_op('increment', inputs={'X': [counter]},
                                  outputs={'Out': [counter]}, attrs={'step': float(step)})
    return counter
