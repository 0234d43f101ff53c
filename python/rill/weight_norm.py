"""Weight normalization (Fluid 1.8's WeightNormParamAttr, arXiv:1602.07868): a layer asked
for a parameter W gets two, NAME_g and NAME_v, and uses W = g * v / ||v|| computed by ops
in its block. The norm is over every dimension but `dim` (all of them when dim is None);
g has v's rank with extent 1 except along dim. The startup program initializes v with
the attribute's initializer and sets g to ||v||, so W starts as v. The ops are Paddle's
(abs, pow, reduce_sum, pow 1/2, reshape and transpose around them)."""

import copy

from .framework import unique_name


class _Ops(object):
    """Appends the norm's ops to one block, naming temporaries after the layer."""

    def __init__(self, block, layer, dtype):
        self.block, self.layer, self.dtype = block, layer, dtype

    def tmp(self, what):
        return self.block.create_var(
            name=unique_name.generate('.'.join([self.layer, 'weight_norm_' + what])),
            dtype=self.dtype, infer=True)

    def norm(self, x, out=None, dim=None):
        out = out if out is not None else self.tmp('norm')
        a = self.tmp('abs')
        self.block.append_op('abs', inputs={'X': x}, outputs={'Out': a})
        p = self.tmp('pow')
        self.block.append_op('pow', inputs={'X': a}, outputs={'Out': p}, attrs={'factor': 2.0})
        s = self.tmp('sum')
        self.block.append_op('reduce_sum', inputs={'X': p}, outputs={'Out': s},
                             attrs={'dim': list(dim) if dim is not None else [0],
                                    'keep_dim': False, 'reduce_all': dim is None})
        self.block.append_op('pow', inputs={'X': s}, outputs={'Out': out},
                             attrs={'factor': 0.5})
        return out

    def reshape(self, x, shape, out=None):
        out = out if out is not None else self.tmp('reshape')
        xs = self.tmp('reshape_xshape')
        self.block.append_op('reshape2', inputs={'X': x}, outputs={'Out': out, 'XShape': xs},
                             attrs={'shape': list(shape)})
        return out

    def transpose(self, x, perm, out=None):
        out = out if out is not None else self.tmp('transpose')
        xs = self.tmp('transpose_xshape')
        self.block.append_op('transpose2', inputs={'X': x},
                             outputs={'Out': out, 'XShape': xs}, attrs={'axis': list(perm)})
        return out

    def norm_except_dim(self, x, shape, out=None, dim=None):
        """||x|| over every dimension but dim, shaped [1, .., x.shape[dim], .., 1]."""
        out = out if out is not None else self.tmp('norm')
        rank = len(shape)
        if dim is None:
            return self.norm(x, out)
        if dim == 0:
            r = self.reshape(x, [shape[0], -1])
            return self.reshape(self.norm(r, dim=[1]), [shape[0]] + [1] * (rank - 1), out)
        if dim == rank - 1:
            r = self.reshape(x, [-1, shape[-1]])
            return self.reshape(self.norm(r, dim=[0]), [1] * (rank - 1) + [shape[-1]], out)
        perm = list(range(rank))
        perm[0], perm[dim] = dim, 0
        t = self.transpose(x, perm)
        r = self.reshape(t, [shape[dim], -1])
        r2 = self.reshape(self.norm(r, dim=[1]), [shape[dim]] + [1] * (rank - 1))
        return self.transpose(r2, perm, out)


def create(helper, attr, shape, dtype, init):
    """The weight-normalized W of a layer: parameters attr.name + '_g' and '_v' in the
    main program, their startup ops, and W's ops in the current block. `init` initializes
    v."""
    from .layers import elementwise_div, elementwise_mul, reshape
    dim = attr.dim
    rank = len(shape)
    if dim is not None and not -rank <= dim < rank:
        raise ValueError('WeightNormParamAttr: dim %d is out of range for the %d-D parameter '
                         '%s' % (dim, rank, attr.name))
    if dim is not None and dim < 0:
        dim += rank
    g_shape = [1] * rank
    if dim is not None:
        g_shape[dim] = shape[dim]
    g_attr, v_attr = copy.copy(attr), copy.copy(attr)
    g_attr.name, v_attr.name = attr.name + '_g', attr.name + '_v'
    sb = helper.startup.global_block()
    if not sb.has_var(v_attr.name):
        sv = sb.create_var(name=v_attr.name, shape=shape, dtype=dtype, persistable=True)
        init(sv, sb)
        sg = sb.create_var(name=g_attr.name, shape=g_shape, dtype=dtype, persistable=True)
        ops = _Ops(sb, helper.name, dtype)
        ops.norm_except_dim(sv, shape, sg, dim)
        ops.reshape(sg, g_shape, sg)
    main = helper.main.global_block()

    def param(a, s):
        return main.create_parameter(
            name=a.name, shape=s, dtype=dtype, trainable=a.trainable,
            optimize_attr={'learning_rate': a.learning_rate}, regularizer=a.regularizer,
            gradient_clip_attr=a.gradient_clip, do_model_average=a.do_model_average)

    g, v = param(g_attr, g_shape), param(v_attr, shape)
    norm = _Ops(helper.block, helper.name, dtype).norm_except_dim(v, shape, dim=dim)
    scale = elementwise_div(x=g, y=norm)
    if dim is None:
        return elementwise_mul(x=v, y=scale, axis=-1)
    return elementwise_mul(x=v, y=reshape(scale, [shape[dim]]), axis=dim)
