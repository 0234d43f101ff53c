"""Weight decay (Fluid 1.x's regularizer.py), applied after the backward pass and
gradient clipping: L2Decay by C (rill_program_append_l2_decay) when every parameter
shares it, otherwise both kinds as ops appended per parameter."""

__all__ = ['L2Decay', 'L1Decay', 'L2DecayRegularizer', 'L1DecayRegularizer']


class L2DecayRegularizer(object):
    """grad += coeff * param."""

    def __init__(self, regularization_coeff=0.0):
        self.regularization_coeff = float(regularization_coeff)

    def _append(self, block, param, grad):
        from .framework import unique_name
        decay = block.create_var(name=unique_name.generate(param + '_decay'), infer=True)
        block.append_op('scale', inputs={'X': param}, outputs={'Out': decay},
                        attrs={'scale': self.regularization_coeff})
        block.append_op('sum', inputs={'X': [grad, decay.name]}, outputs={'Out': grad})


class L1DecayRegularizer(object):
    """grad += coeff * sign(param), sign computed as clip(param * 1e30, -1, 1) (exact for
    every normal float32 magnitude above 1e-30, 0 at 0)."""

    def __init__(self, regularization_coeff=0.0):
        self.regularization_coeff = float(regularization_coeff)

    def _append(self, block, param, grad):
        from .framework import unique_name

        def tmp(key):
            return block.create_var(name=unique_name.generate(param + '_l1_' + key), infer=True)
        big, sign, decay = tmp('big'), tmp('sign'), tmp('decay')
        block.append_op('scale', inputs={'X': param}, outputs={'Out': big},
                        attrs={'scale': 1e30})
        block.append_op('clip', inputs={'X': big}, outputs={'Out': sign},
                        attrs={'min': -1.0, 'max': 1.0})
        block.append_op('scale', inputs={'X': sign}, outputs={'Out': decay},
                        attrs={'scale': self.regularization_coeff})
        block.append_op('sum', inputs={'X': [grad, decay.name]}, outputs={'Out': grad})


L2Decay = L2DecayRegularizer
L1Decay = L1DecayRegularizer


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.regularizer', 'rill.regularizer')
