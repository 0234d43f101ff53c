"""paddle.fluid.input (Fluid 1.8): one_hot and embedding of the 2.x-style ops, whose ids
need no trailing dimension of 1."""

from . import layers
from .framework import Variable

__all__ = ['one_hot', 'embedding']


def one_hot(input, depth, allow_out_of_range=False):
    """int ids of any shape -> float32 one-hot vectors, shape input.shape + [depth]
    (the one_hot_v2 op); depth an int or a one-element int Variable."""
    if not isinstance(input, Variable) or input.dtype.name not in ('int32', 'int64'):
        raise TypeError('one_hot: input must be an int32 or int64 Variable, not %r' % (input,))
    h = layers._Helper('one_hot_v2')
    out = h.tmp('float32', stop_gradient=True)
    ins = {'X': input}
    attrs = {'allow_out_of_range': bool(allow_out_of_range)}
    if isinstance(depth, Variable):
        depth.stop_gradient = True
        ins['depth_tensor'] = depth
    else:
        attrs['depth'] = int(depth)
    h.append('one_hot_v2', ins, {'Out': out}, attrs)
    return out


embedding = layers.fluid_embedding
