"""Learning-rate schedules (Fluid 1.x's learning_rate_scheduler.py), as ops: a
persistable step counter advanced by one at the start of every run of the main program,
and the learning rate computed from it. Pass the returned Variable as an optimizer's
learning_rate."""

import math

from . import layers
from .framework import OpRole, default_main_program, default_startup_program

__all__ = ['exponential_decay', 'natural_exp_decay', 'inverse_time_decay', 'piecewise_decay',
           'noam_decay']

_COUNTER = '@LR_DECAY_COUNTER@'


def _step_counter():
    """The float32 step counter: 0 during the first run, 1 during the second, ..."""
    main = default_main_program()
    blk = main.global_block()
    if blk.has_var(_COUNTER):
        return blk.var(_COUNTER)
    counter = blk.create_var(name=_COUNTER, shape=[1], dtype='float32', persistable=True)
    counter.stop_gradient = True
    sb = default_startup_program().global_block()
    sv = sb.create_var(name=_COUNTER, shape=[1], dtype='float32', persistable=True)
    sb.append_op('fill_constant', outputs={'Out': sv},
                 attrs={'shape': [1], 'value': -1.0, 'dtype': 5})
    blk._insert_op(0, 'scale', inputs={'X': counter}, outputs={'Out': counter},
                   attrs={'scale': 1.0, 'bias': 1.0, 'op_role': OpRole.LRSched})
    return counter


class _lr_role(object):
    def __enter__(self):
        self.main = default_main_program()
        self.old = self.main._op_role
        self.main._op_role = OpRole.LRSched

    def __exit__(self, *exc):
        self.main._op_role = self.old


def _steps(decay_steps, staircase):
    step = _step_counter()
    div = layers.scale(step, 1.0 / float(decay_steps))
    if staircase:  # floor of a non-negative number: through an integer cast
        div = layers.cast(layers.cast(div, 'int64'), 'float32')
    return div


def exponential_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """learning_rate * decay_rate ^ (step / decay_steps)."""
    with _lr_role():
        div = _steps(decay_steps, staircase)
        rate = layers.fill_constant([1], 'float32', decay_rate)
        return layers.scale(layers.elementwise_pow(rate, div), float(learning_rate))


def natural_exp_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """learning_rate * exp(-decay_rate * step / decay_steps)."""
    with _lr_role():
        div = _steps(decay_steps, staircase)
        return layers.scale(layers.exp(layers.scale(div, -float(decay_rate))),
                            float(learning_rate))


def inverse_time_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """learning_rate / (1 + decay_rate * step / decay_steps)."""
    with _lr_role():
        div = _steps(decay_steps, staircase)
        denom = layers.scale(div, float(decay_rate), bias=1.0)
        lr = layers.fill_constant([1], 'float32', learning_rate)
        return layers.elementwise_div(lr, denom)


def piecewise_decay(boundaries, values):
    """values[i] while boundaries[i-1] <= step < boundaries[i]."""
    if len(values) != len(boundaries) + 1:
        raise ValueError('piecewise_decay: %d values for %d boundaries (need one more)' %
                         (len(values), len(boundaries)))
    if any(not math.isfinite(v) for v in values):
        raise ValueError('piecewise_decay: values must be finite')
    with _lr_role():
        step = _step_counter()
        terms = [layers.fill_constant([1], 'float32', values[-1])]
        for i, b in enumerate(boundaries):
            below = layers._compare('less_than', step, layers.fill_constant([1], 'float32', b))
            terms.append(layers.scale(layers.cast(below, 'float32'),
                                      float(values[i] - values[i + 1])))
        return layers.sums(terms)


def noam_decay(d_model, warmup_steps, learning_rate=1.0):
    """The Transformer's schedule: learning_rate * d_model^-0.5 *
    min(step^-0.5, step * warmup_steps^-1.5), the step counted from 1 (Fluid's noam
    counter begins at 1)."""
    with _lr_role():
        step = layers.scale(_step_counter(), 1.0, bias=1.0)
        a = layers.elementwise_pow(step, layers.fill_constant([1], 'float32', -0.5))
        b = layers.scale(step, float(warmup_steps) ** -1.5)
        return layers.scale(layers.elementwise_min(a, b),
                            float(learning_rate) * float(d_model) ** -0.5)


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.layers.learning_rate_scheduler', 'rill.learning_rate_scheduler')
