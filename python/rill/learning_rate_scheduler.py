"""Learning-rate schedules (Fluid 1.x's learning_rate_scheduler.py), as ops: a
persistable step counter advanced by one at the start of every run of the main program,
and the learning rate computed from it. Pass the returned Variable as an optimizer's
learning_rate."""

import math

from . import layers
from .framework import OpRole, default_main_program
from .tensor import _global_counter

__all__ = ['exponential_decay', 'natural_exp_decay', 'inverse_time_decay', 'piecewise_decay',
           'noam_decay', 'polynomial_decay', 'cosine_decay', 'linear_lr_warmup']

_COUNTER = '@LR_DECAY_COUNTER@'


def _step_counter(begin=0):
    """The step as float32: a cast of the int64 step counter shared by every schedule of
    the program, Fluid's @LR_DECAY_COUNTER@ (so that checkpoints hold it as Paddle's
    do), one more during each run through an increment op first in the main program:
    `begin` during the first run when this call creates it, the first schedule setting
    where it starts (noam_decay counts from 1, the others from 0, so a linear_lr_warmup
    around a noam_decay also counts from 1)."""
    counter, new = _global_counter(_COUNTER, 'int64', int(begin) - 1)
    if new:
        counter.block._insert_op(0, 'increment', inputs={'X': counter}, outputs={'Out': counter},
                                 attrs={'step': 1.0, 'op_role': OpRole.LRSched})
    return layers.cast(counter, 'float32')


def _decay_step_counter(begin=0):
    """Fluid's float32 global step (begin during the first run when this call creates the
    counter, one more each run after), as ExponentialMovingAverage's thres_steps and
    schedules written by hand use it; the same counter the schedules here advance."""
    return _step_counter(begin)


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
    # The value of the first boundary the step is below, selected exactly (m v + (1 - m)
    # lr with m 0 or 1 gives v or lr unchanged) by ops without sub-blocks, which the
    # distribute transpiler moves to the pservers; written to the persistable
    # `learning_rate`, as Fluid's Switch writes it, so checkpoints hold Paddle's variables
    with _lr_role():
        step = _step_counter()
        lr = layers.fill_constant([1], 'float32', float(values[-1]))
        for i in range(len(boundaries) - 1, -1, -1):
            below = layers.cast(layers._compare(
                'less_than', step, layers.fill_constant([1], 'float32', float(boundaries[i]))),
                'float32')
            keep = layers.scale(below, -1.0, bias=1.0)
            lr = layers.elementwise_add(layers.scale(below, float(values[i])),
                                        layers.elementwise_mul(keep, lr))
        out = layers.create_global_var(shape=[1], value=0.0, dtype='float32', persistable=True,
                                       name='learning_rate')
        layers.assign(lr, out)
        return out


def noam_decay(d_model, warmup_steps, learning_rate=1.0):
    """The Transformer's schedule: learning_rate * d_model^-0.5 *
    min(step^-0.5, step * warmup_steps^-1.5), the step counted from 1 (Fluid's noam
    counter begins at 1)."""
    with _lr_role():
        step = _step_counter(1)
        a = layers.elementwise_pow(step, layers.fill_constant([1], 'float32', -0.5))
        b = layers.scale(step, float(warmup_steps) ** -1.5)
        return layers.scale(layers.elementwise_min(a, b),
                            float(learning_rate) * float(d_model) ** -0.5)


def polynomial_decay(learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0,
                     cycle=False):
    """(learning_rate - end_learning_rate) * (1 - step / decay_steps) ^ power +
    end_learning_rate, the step capped at decay_steps; with cycle, decay_steps is
    multiplied by ceil(step / decay_steps) instead (by 1 at step 0)."""
    with _lr_role():
        step = _step_counter()
        if cycle:
            div = layers.ceil(layers.scale(step, 1.0 / float(decay_steps)))
            zero = layers.fill_constant([1], 'float32', 0.0)
            div = layers.elementwise_add(
                div, layers.cast(layers._compare('equal', step, zero), 'float32'))
            frac = layers.elementwise_div(step, layers.scale(div, float(decay_steps)))
        else:
            capped = layers.elementwise_min(
                step, layers.fill_constant([1], 'float32', float(decay_steps)))
            frac = layers.scale(capped, 1.0 / float(decay_steps))
        base = layers.scale(frac, -1.0, bias=1.0)
        decayed = layers.elementwise_pow(base, layers.fill_constant([1], 'float32', power))
        lr = layers.scale(decayed, float(learning_rate) - float(end_learning_rate))
        return layers.scale(lr, 1.0, bias=float(end_learning_rate))


def cosine_decay(learning_rate, step_each_epoch, epochs):
    """learning_rate * 0.5 * (cos(floor(step / step_each_epoch) * pi / epochs) + 1);
    learning_rate a float or a Variable."""
    if not isinstance(learning_rate, (float, int, layers.Variable)):
        raise TypeError('cosine_decay: learning_rate must be a float or a Variable, got %r' %
                        (learning_rate,))
    with _lr_role():
        epoch = layers.floor(layers.scale(_step_counter(), 1.0 / float(step_each_epoch)))
        angle = layers.scale(layers.scale(epoch, math.pi), 1.0 / float(epochs))
        factor = layers.scale(layers.cos(angle), 1.0, bias=1.0)
        if isinstance(learning_rate, layers.Variable):
            return layers.elementwise_mul(layers.scale(learning_rate, 0.5), factor)
        return layers.scale(factor, float(learning_rate) * 0.5)


def linear_lr_warmup(learning_rate, warmup_steps, start_lr, end_lr):
    """start_lr + (end_lr - start_lr) * step / warmup_steps while step < warmup_steps,
    learning_rate (a float or a Variable, e.g. another schedule) after."""
    linear_step = float(end_lr) - float(start_lr)
    with _lr_role():
        step = _step_counter()
        warm = layers.scale(layers.scale(layers.scale(step, 1.0 / float(warmup_steps)),
                                         linear_step), 1.0, bias=float(start_lr))
        if not isinstance(learning_rate, layers.Variable):
            learning_rate = layers.fill_constant([1], 'float32', float(learning_rate))
        below = layers.cast(layers._compare(
            'less_than', step, layers.fill_constant([1], 'float32', float(warmup_steps))),
            'float32')
        return layers.elementwise_add(
            layers.elementwise_mul(warm, below),
            layers.elementwise_mul(learning_rate, layers.scale(below, -1.0, bias=1.0)))


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.layers.learning_rate_scheduler', 'rill.learning_rate_scheduler')
