"""Fluid 1.8's parameter averaging and wrapping optimizers: ExponentialMovingAverage,
ModelAverage (average_accumulates ops) and LookaheadOptimizer. Each builds the same ops,
variables (names, dtypes, starting values) and side programs as Paddle 1.8.5, so a
training run gives Paddle's numbers and its saved state carries the same names."""

import contextlib

import numpy as np

from . import layers
from .framework import (Program, default_main_program, default_startup_program,
                        program_guard, unique_name, name_scope)
from .optimizer import Optimizer

__all__ = ['ExponentialMovingAverage', 'ModelAverage', 'LookaheadOptimizer']


def _averaged_params():
    """The parameters of the default main program's global block that take part in
    averaging (ParamAttr.do_model_average is not False), in creation order."""
    return [p for p in default_main_program().global_block().all_parameters()
            if p.do_model_average is not False]


def _clone_var(block, v, keep=False):
    """v declared in `block` (another program) under the same name, so the programs share
    its value through the scope. keep: persistable there, so that the value outlives the
    run (Paddle's executor keeps every variable of a run in the scope; rill's drops the
    non-persistable ones), as the saved parameters must between apply and restore."""
    if block.has_var(v.name):
        return block.var(v.name)
    return block.create_var(name=v.name, shape=list(v.shape), dtype=v.dtype.name,
                            persistable=v.persistable or keep, lod_level=v.lod_level)


def _tmp_var(block, name, like):
    return block.create_var(name=name, shape=list(like.shape), dtype=like.dtype.name,
                            persistable=False, stop_gradient=True)


class _Averaged(object):
    """apply / restore over the side programs `apply_program` and `restore_program`."""

    @contextlib.contextmanager
    def apply(self, executor, need_restore=True):
        """Sets the parameters to their averages for the body of the with statement,
        and back afterwards unless need_restore is False (then call restore)."""
        executor.run(self.apply_program)
        try:
            yield
        finally:
            if need_restore:
                self.restore(executor)

    def restore(self, executor):
        executor.run(self.restore_program)


class ExponentialMovingAverage(_Averaged):
    """ema_t = decay * ema_{t-1} + (1 - decay) * param_t, one `_ema` variable per
    parameter (zeros at the start). update() appends the averaging ops to the main
    program; apply(executor) runs apply_program, which saves the parameters into
    temporaries and sets each to its bias-corrected average ema / (1 - decay^t) (t the
    number of update steps run; the correction is written back into the `_ema` variable
    too, as Paddle does); restore(executor) puts the saved parameters back.

    thres_steps (a Variable, usually a step counter): the decay used at each step is
    min(decay, (thres_steps + 1) / (thres_steps + 10))."""

    def __init__(self, decay=0.999, thres_steps=None, name=None):
        self._decay = decay
        self._thres_steps = thres_steps
        self._name = name if name is not None else ''
        self._decay_var = self._get_ema_decay()
        self._step_counter_name = '@EMA_STEP_COUNTER@'
        main = default_main_program()
        blk = main.global_block()
        self._params_tmps = []
        for p in _averaged_params():
            tmp = _tmp_var(blk, unique_name.generate('.'.join([self._name + p.name, 'ema_tmp'])),
                           p)
            self._params_tmps.append((p, tmp))
        self._ema_vars = {}
        for p, tmp in self._params_tmps:
            with main._optimized_guard([p, tmp]), name_scope('moving_average'):
                self._ema_vars[p.name] = layers.create_global_var(
                    name=unique_name.generate(self._name + p.name + '_ema'),
                    shape=list(p.shape), value=0.0, dtype=p.dtype.name, persistable=True)
        self.apply_program = Program()
        block = self.apply_program.global_block()
        with program_guard(self.apply_program, default_startup_program()):
            decay_pow, global_step = self._get_decay_pow(block)
            for p, tmp in self._params_tmps:
                param = _clone_var(block, p)
                tmp = _clone_var(block, tmp, keep=True)
                ema = _clone_var(block, self._ema_vars[p.name])
                layers.assign(input=param, output=tmp)
                zero = layers.fill_constant([1], 'float32', 0.0)
                with layers.Switch() as switch:
                    with switch.case(layers.greater_than(global_step, zero)):
                        layers.assign(output=ema, input=ema / (1.0 - decay_pow))
                layers.assign(input=ema, output=param)
        self.restore_program = Program()
        block = self.restore_program.global_block()
        with program_guard(self.restore_program, default_startup_program()):
            for p, tmp in self._params_tmps:
                tmp = _clone_var(block, tmp, keep=True)
                param = _clone_var(block, p)
                layers.assign(input=tmp, output=param)

    def _get_ema_decay(self):
        from .learning_rate_scheduler import _lr_role
        with _lr_role():
            return self._decay_ops()

    def _decay_ops(self):
        decay_var = layers.create_global_var(shape=[1], value=self._decay, dtype='float32',
                                             persistable=True,
                                             name='scheduled_ema_decay_rate')
        if self._thres_steps is not None:
            decay_t = (self._thres_steps + 1.0) / (self._thres_steps + 10.0)
            with layers.Switch() as switch:
                with switch.case(layers.less_than(
                        decay_t, layers.fill_constant([1], decay_t.dtype.name,
                                                      float(self._decay)))):
                    layers.assign(decay_t, decay_var)
                with switch.default():
                    layers.assign(np.array([self._decay], dtype=np.float32), decay_var)
        return decay_var

    def _get_decay_pow(self, block):
        global_step = layers.create_global_var(name=self._step_counter_name, shape=[1], value=0,
                                               dtype='int64', persistable=True)
        global_step = layers.cast(global_step, 'float32')
        decay_var = _clone_var(block, self._decay_var)
        return layers.elementwise_pow(decay_var, global_step), global_step

    def update(self):
        """Appends the step counter and the averaging ops to the default main program
        (call it in the training program, after minimize)."""
        layers.autoincreased_step_counter(counter_name=self._step_counter_name)
        main = default_main_program()
        for p, tmp in self._params_tmps:
            with main._optimized_guard([p, tmp]), name_scope('moving_average'):
                ema = self._ema_vars[p.name]
                ema_t = ema * self._decay_var + p * (1 - self._decay_var)
                layers.assign(input=ema_t, output=ema)


class ModelAverage(_Averaged, Optimizer):
    """Averages each parameter over a sliding window of recent steps with
    average_accumulates ops appended to the main program at construction (after
    minimize). The window grows with the steps: it is restarted once it holds at least
    min_average_window steps and at least min(max_average_window, steps *
    average_window_rate). apply(executor) sets each parameter to
    (sum_1 + sum_2 + sum_3) / (num_accumulates + old_num_accumulates), saving it first;
    restore(executor) puts it back."""

    def __init__(self, average_window_rate, min_average_window=10000,
                 max_average_window=10000, regularization=None, name=None):
        Optimizer.__init__(self, 0.0, regularization=regularization, name=name)
        self.average_window = float(average_window_rate)
        self.min_average_window = int(min_average_window)
        self.max_average_window = int(max_average_window)
        main = default_main_program()
        startup = default_startup_program()
        blk = main.global_block()
        self.params_grads = []
        for p in _averaged_params():
            tmp = _tmp_var(blk, unique_name.generate('.'.join([p.name, 'tmp'])), p)
            self.params_grads.append((p, tmp))
        for p, tmp in self.params_grads:
            with main._optimized_guard([p, tmp]), name_scope('move_average'):
                self._append_average_accumulate_op(p, main, startup)
        self.apply_program = Program()
        block = self.apply_program.global_block()
        with program_guard(self.apply_program, startup):
            for pg in self.params_grads:
                self._add_average_apply_op(block, pg)
        self.restore_program = Program()
        block = self.restore_program.global_block()
        with program_guard(self.restore_program, startup):
            for p, tmp in self.params_grads:
                layers.assign(input=_clone_var(block, tmp, keep=True), output=_clone_var(block, p))

    def _accumulator(self, name, p, program, startup, dtype=None, shape=None):
        """Optimizer._add_accumulator with the dtype Paddle gives the counters (int64)."""
        key = (name, p.name)
        if key in self._accumulators:
            return self._accumulators[key]
        vname = unique_name.generate(p.name + '_' + name)
        shape = list(p.shape) if shape is None else shape
        dtype = dtype or p.dtype.name
        v = program.global_block().create_var(name=vname, shape=shape, dtype=dtype,
                                              persistable=True)
        sb = startup.global_block()
        sv = sb.create_var(name=vname, shape=shape, dtype=dtype, persistable=True)
        sb.append_op('fill_constant', outputs={'Out': sv},
                     attrs={'shape': shape, 'value': 0.0, 'dtype': sv.desc['dtype']})
        self._accumulators[key] = v
        return v

    def _append_average_accumulate_op(self, p, main, startup):
        acc = {}
        for n in ('sum_1', 'sum_2', 'sum_3'):
            acc[n] = self._accumulator(n, p, main, startup)
        for n in ('num_accumulates', 'old_num_accumulates', 'num_updates'):
            acc[n] = self._accumulator(n, p, main, startup, 'int64', [1])
        main.global_block().append_op(
            'average_accumulates',
            inputs={'param': p, 'in_sum_1': acc['sum_1'], 'in_sum_2': acc['sum_2'],
                    'in_sum_3': acc['sum_3'], 'in_num_accumulates': acc['num_accumulates'],
                    'in_old_num_accumulates': acc['old_num_accumulates'],
                    'in_num_updates': acc['num_updates']},
            outputs={'out_sum_1': acc['sum_1'], 'out_sum_2': acc['sum_2'],
                     'out_sum_3': acc['sum_3'], 'out_num_accumulates': acc['num_accumulates'],
                     'out_old_num_accumulates': acc['old_num_accumulates'],
                     'out_num_updates': acc['num_updates']},
            attrs={'average_window': self.average_window,
                   'min_average_window': self.min_average_window,
                   'max_average_window': self.max_average_window})

    def _add_average_apply_op(self, block, pg):
        param = _clone_var(block, pg[0])
        tmp = _clone_var(block, pg[1], keep=True)
        acc = {n: _clone_var(block, self._accumulators[(n, pg[0].name)])
               for n in ('sum_1', 'sum_2', 'sum_3', 'num_accumulates', 'old_num_accumulates')}
        layers.assign(input=param, output=tmp)
        count = layers.sum([acc['num_accumulates'], acc['old_num_accumulates']])
        total = layers.sum([acc['sum_1'], acc['sum_2'], acc['sum_3']])
        count = layers.cast(count, 'float32')
        total = layers.cast(total, 'float32')
        block.append_op('elementwise_div', inputs={'X': total, 'Y': count},
                        outputs={'Out': param}, attrs={'axis': -1})

    def minimize(self, *args, **kwargs):
        raise NotImplementedError('ModelAverage averages the parameters another optimizer '
                                  'trains: call that optimizer\'s minimize, then build '
                                  'ModelAverage')


class LookaheadOptimizer(object):
    """Lookahead (k steps forward, 1 step back): the inner optimizer updates the "fast"
    parameters every step; every k-th step the "slow" copies (`NAME@SLOW`, starting as
    the initial parameters) move alpha of the way towards them, and the fast parameters
    are reset to the slow ones."""

    def __init__(self, inner_optimizer, alpha=0.5, k=5):
        if inner_optimizer is None:
            raise ValueError('LookaheadOptimizer: inner optimizer can not be None')
        if not 0.0 <= alpha <= 1.0:
            raise ValueError('LookaheadOptimizer: alpha should be larger or equal to 0.0, '
                             'and less or equal than 1.0, got %r' % (alpha,))
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ValueError('LookaheadOptimizer: k should be a positive integer, got %r'
                             % (k,))
        self.inner_optimizer = inner_optimizer
        self.alpha = alpha
        self.k = k
        self.type = 'lookahead'

    def minimize(self, loss, startup_program=None):
        mini_out = self.inner_optimizer.minimize(loss, startup_program=startup_program)
        startup = startup_program or default_startup_program()
        main_block = loss.block
        params = [p.name for p in main_block.all_parameters()]
        slow = {}
        for n in params:
            fast = main_block.var(n)
            slow[n] = main_block.create_var(name=n + '@SLOW', shape=list(fast.shape),
                                            dtype=fast.dtype.name, persistable=True)
        sb = startup.global_block()
        for n in params:
            fast = sb.var(n)
            sv = sb.create_var(name=n + '@SLOW', shape=list(fast.shape), dtype=fast.dtype.name,
                               persistable=True)
            sb.append_op('assign', inputs={'X': fast}, outputs={'Out': sv})
        with program_guard(main_block.program, startup):
            k = layers.create_global_var(name='lookahead_k', shape=[1], value=int(self.k),
                                         dtype='int32', persistable=True)
            alpha = layers.create_global_var(name='lookahead_alpha', shape=[1],
                                             value=float(self.alpha), dtype='float32',
                                             persistable=True)
            step = layers.create_global_var(name='lookahead_step', shape=[1], value=0,
                                            dtype='int32', persistable=True)
            layers.increment(x=step, value=1.0, in_place=True)
            one = layers.fill_constant(shape=[1], dtype='float32', value=1.0)
            mod = layers.elementwise_mod(step, k)
            zero = layers.fill_constant(shape=[1], dtype='int32', value=0)
            with layers.Switch() as switch:
                with switch.case(layers.equal(mod, zero)):
                    for n in params:
                        fast = main_block.var(n)
                        tmp = layers.elementwise_add(
                            layers.elementwise_mul(fast, alpha),
                            layers.elementwise_mul(slow[n], layers.elementwise_sub(one, alpha)))
                        layers.assign(input=tmp, output=slow[n])
                        layers.assign(input=tmp, output=fast)
                with switch.default():
                    pass
        return mini_out
