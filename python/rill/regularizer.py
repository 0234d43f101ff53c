"""Weight decay (Fluid 1.x's regularizer.py). L2Decay is applied by C
(rill_program_append_l2_decay) after the backward pass."""

from .core import error_class

__all__ = ['L2Decay', 'L1Decay', 'L2DecayRegularizer', 'L1DecayRegularizer']


class L2DecayRegularizer(object):
    """grad += coeff * param."""

    def __init__(self, regularization_coeff=0.0):
        self.regularization_coeff = float(regularization_coeff)


class L1DecayRegularizer(object):
    def __init__(self, regularization_coeff=0.0):
        raise error_class('UNIMPLEMENTED')('L1Decay: rill has no sign op yet; use L2Decay')


L2Decay = L2DecayRegularizer
L1Decay = L1DecayRegularizer
