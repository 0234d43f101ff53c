"""Weight decay (Fluid 1.x's regularizer.py), applied after the backward pass and
gradient clipping: L2Decay by C (rill_program_append_l2_decay) when every parameter
shares it and every gradient is dense, otherwise both kinds as ops appended per
parameter. As in Paddle 1.8, the decay of a selected-rows (sparse) gradient is summed
with it into a new dense gradient `<grad>@NEWGRAD@`, which the optimizer then applies:
every row of the parameter decays, not only the rows looked up."""

__all__ = ['L2Decay', 'L1Decay', 'L2DecayRegularizer', 'L1DecayRegularizer']

NEW_GRAD_SUFFIX = '@NEWGRAD@'


def _sum_into_grad(block, param, grad, decay):
    """grad + decay, in place for a dense grad; for selected rows into a new dense
    variable, as Paddle's _create_regularization_of_grad. Returns the gradient's name."""
    from . import core
    g = block._find_var_recursive(grad)
    out = grad
    if g is not None and g.type == core.SELECTED_ROWS:
        p = block._find_var_recursive(param)
        out = grad + NEW_GRAD_SUFFIX
        block.create_var(name=out, shape=list(p.shape), dtype=p.dtype.name,
                         lod_level=p.lod_level, type=core.LOD_TENSOR)
    block.append_op('sum', inputs={'X': [grad, decay]}, outputs={'Out': out})
    return out


class L2DecayRegularizer(object):
    """grad += coeff * param."""

    def __init__(self, regularization_coeff=0.0):
        self.regularization_coeff = float(regularization_coeff)

    def _append(self, block, param, grad):
        from .framework import unique_name
        decay = block.create_var(name=unique_name.generate(param + '_decay'), infer=True)
        block.append_op('scale', inputs={'X': param}, outputs={'Out': decay},
                        attrs={'scale': self.regularization_coeff})
        return _sum_into_grad(block, param, grad, decay.name)


class L1DecayRegularizer(object):
    """grad += coeff * sign(param): Paddle's sign and scale ops."""

    def __init__(self, regularization_coeff=0.0):
        self.regularization_coeff = float(regularization_coeff)

    def _append(self, block, param, grad):
        from .framework import unique_name

        def tmp(key):
            return block.create_var(name=unique_name.generate(param + '_l1_' + key), infer=True)
        sign, decay = tmp('sign'), tmp('decay')
        block.append_op('sign', inputs={'X': param}, outputs={'Out': sign})
        block.append_op('scale', inputs={'X': sign}, outputs={'Out': decay},
                        attrs={'scale': self.regularization_coeff})
        return _sum_into_grad(block, param, grad, decay.name)


L2Decay = L2DecayRegularizer
L1Decay = L1DecayRegularizer


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.regularizer', 'rill.regularizer')
