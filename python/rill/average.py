"""fluid.average (Fluid 1.x): WeightedAverage, the running weighted mean the book's test
loops keep of per-batch costs and accuracies."""

import numbers

import numpy as np

__all__ = ['WeightedAverage']


def _is_number(v):
    return isinstance(v, numbers.Number) and not isinstance(v, bool) or \
        (isinstance(v, np.ndarray) and v.shape == (1,))


class WeightedAverage(object):
    """add(value, weight) accumulates value * weight and weight; eval() is their ratio."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.numerator = None
        self.denominator = None

    def add(self, value, weight):
        if not (_is_number(value) or isinstance(value, np.ndarray)):
            raise ValueError("WeightedAverage.add: 'value' must be a number or a numpy "
                             "ndarray, not %r" % (value,))
        if not _is_number(weight):
            raise ValueError("WeightedAverage.add: 'weight' must be a number, not %r" % (weight,))
        if self.numerator is None or self.denominator is None:
            self.numerator = value * weight
            self.denominator = weight
        else:
            self.numerator += value * weight
            self.denominator += weight

    def eval(self):
        if self.numerator is None or self.denominator is None:
            raise ValueError('WeightedAverage.eval: nothing was added to average')
        return self.numerator / self.denominator
