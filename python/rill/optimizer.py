"""Optimizers (Fluid 1.x's optimizer.py). minimize(loss) runs the C backward pass
(rill_program_append_backward), then gradient clipping and weight decay, then appends
one optimizer op per parameter; accumulators and the learning rate are persistable
variables initialized by the startup program."""

from . import core, clip as clip_mod
from .framework import (Parameter, Variable, default_startup_program, unique_name,
                        OpRole)
from .regularizer import L2DecayRegularizer

__all__ = ['SGD', 'Momentum', 'Adam', 'Adagrad', 'SGDOptimizer', 'MomentumOptimizer',
           'AdamOptimizer', 'AdagradOptimizer', 'Optimizer',
           'RMSProp', 'Adadelta', 'Adamax', 'DecayedAdagrad', 'Ftrl', 'LarsMomentum', 'Lamb',
           'RMSPropOptimizer', 'AdadeltaOptimizer', 'AdamaxOptimizer',
           'DecayedAdagradOptimizer', 'FtrlOptimizer', 'LarsMomentumOptimizer',
           'LambOptimizer', 'Dpsgd', 'DpsgdOptimizer', 'ExponentialMovingAverage',
           'ModelAverage', 'LookaheadOptimizer', 'RecomputeOptimizer']


class Optimizer(object):
    _type = None

    def __init__(self, learning_rate, regularization=None, grad_clip=None, name=None):
        if not isinstance(learning_rate, (float, int, Variable)):
            raise TypeError('learning_rate must be a float or a Variable, got %r' %
                            (learning_rate,))
        if isinstance(learning_rate, (float, int)) and learning_rate < 0:
            raise ValueError('learning_rate must not be negative, got %r' % learning_rate)
        self._learning_rate = learning_rate
        self.regularization = regularization
        self._grad_clip = grad_clip
        self._name = name
        self._lr_vars = {}
        self._accumulators = {}

    # -- variables --

    def _global_lr(self, program, startup):
        if isinstance(self._learning_rate, Variable):
            return self._learning_rate
        lr = self._lr_vars.get(program._id)
        if lr is None:
            name = unique_name.generate('learning_rate')
            lr = program.global_block().create_var(name=name, shape=[1], dtype='float32',
                                                   persistable=True)
            sb = startup.global_block()
            sv = sb.create_var(name=name, shape=[1], dtype='float32', persistable=True)
            sb.append_op('fill_constant', outputs={'Out': sv},
                         attrs={'shape': [1], 'value': float(self._learning_rate),
                                'dtype': 5})
            self._lr_vars[program._id] = lr
        return lr

    def _param_lr(self, param, program, startup):
        lr = self._global_lr(program, startup)
        scale = float(getattr(param, 'optimize_attr', {}).get('learning_rate', 1.0))
        if scale == 1.0:
            return lr
        blk = program.global_block()
        out = blk.create_var(name=unique_name.generate(param.name + '_lr'), infer=True)
        # Paddle's role for it, LRSched | Optimize with no op_role_var: a learning-rate
        # op, dropped from test programs, and run by the pservers in a distributed job.
        blk.append_op('scale', inputs={'X': lr}, outputs={'Out': out},
                      attrs={'scale': scale, 'op_role': OpRole.LRSched | OpRole.Optimize,
                             'op_role_var': []})
        return out

    def _add_accumulator(self, name, param, program, startup, fill_value=0.0, shape=None):
        key = (name, param.name)
        if key in self._accumulators:
            return self._accumulators[key]
        vname = unique_name.generate(param.name + '_' + name)
        shape = list(param.shape) if shape is None else shape
        v = program.global_block().create_var(name=vname, shape=shape,
                                              dtype=param.dtype.name, persistable=True)
        sb = startup.global_block()
        sv = sb.create_var(name=vname, shape=shape, dtype=param.dtype.name, persistable=True)
        sb.append_op('fill_constant', outputs={'Out': sv},
                     attrs={'shape': shape, 'value': float(fill_value),
                            'dtype': param.desc['dtype']})
        self._accumulators[key] = v
        return v

    # -- passes --

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None,
                 callbacks=None):
        """Appends the backward pass (with the error clips of the forward's variables);
        returns the (Parameter, gradient Variable) pairs. Gradient clipping and weight
        decay come in apply_gradients, as in Fluid."""
        if not isinstance(loss, Variable):
            raise TypeError('minimize: loss must be a Variable, got %r' % (loss,))
        program = loss.block.program
        no_grad = []
        for n in no_grad_set or []:
            no_grad.append(n.name if isinstance(n, Variable) else n)
        c = program._c()  # the passes edit the program in place
        pairs = c.append_backward(loss.name, no_grad)
        program._transformed()
        clip_mod._append_error_clips(program)
        if parameter_list is not None:
            wanted = set(p.name if isinstance(p, Variable) else p for p in parameter_list)
        else:
            wanted = None
        blk = program.global_block()
        out = []
        for p, g in pairs:
            if wanted is not None and p not in wanted:
                continue
            param = blk.vars[p]
            if isinstance(param, Parameter) and not param.trainable:
                continue
            out.append((param, blk._find_var_recursive(g)))
        return out

    def _clip_and_decay(self, params_grads):
        """Gradient clipping, then weight decay, on the (parameter, gradient) pairs, as
        Fluid's apply_gradients orders them; returns the pairs the optimizer applies."""
        if not params_grads:
            return params_grads
        program = params_grads[0][0].block.program
        c = program._c()
        pairs = core.ParamGrads.of((p.name, g.name) for p, g in params_grads)
        clip = self._grad_clip or clip_mod._program_clip.get(program._id)
        if isinstance(clip, clip_mod.GradientClipByGlobalNorm):
            c.append_clip_by_global_norm(pairs, clip.clip_norm)
            program._transformed()
        elif clip is not None and not hasattr(clip, '_append'):
            raise core.error_class('UNIMPLEMENTED')(
                'gradient clip %s is not supported (GradientClipByGlobalNorm, '
                'GradientClipByNorm, GradientClipByValue are)' % type(clip).__name__)
        blk = program.global_block()
        # A clip of a selected-rows gradient writes a new variable: new_grad maps the
        # gradient to the variable the optimizer applies.
        new_grad = {}
        if clip is not None and hasattr(clip, '_append'):
            for p, g in pairs:
                with program._optimized_guard([p, g]):
                    out = clip._append(blk, blk.vars[p], blk._find_var_recursive(g))
                if out is not None:
                    new_grad[g] = out
        # Weight decay: one C pass when every parameter has the same L2Decay, ops
        # appended per parameter otherwise.
        regs = {}
        for p, g in pairs:
            reg = getattr(blk.vars.get(p), 'regularizer', None) or self.regularization
            if reg is None:
                continue
            if not hasattr(reg, '_append'):
                raise core.error_class('UNIMPLEMENTED')(
                    'regularizer %s of %s: L2Decay and L1Decay are supported' %
                    (type(reg).__name__, p))
            regs[(p, g)] = reg
        kinds = set((type(r), r.regularization_coeff) for r in regs.values())
        # (a gradient's type is read back from C only when there is weight decay)
        if regs and len(regs) == len(pairs) and len(kinds) == 1 and not new_grad and \
                isinstance(next(iter(regs.values())), L2DecayRegularizer) and \
                not any(getattr(blk._find_var_recursive(g), 'type', None) == core.SELECTED_ROWS
                        for _, g in pairs):
            c.append_l2_decay(pairs, next(iter(regs.values())).regularization_coeff)
            program._transformed()
            blk = program.global_block()
        else:
            for (p, g), reg in regs.items():
                with program._optimized_guard([p, g]):
                    new_grad[g] = reg._append(blk, p, new_grad.get(g, g))
        return [(blk.vars[p], blk._find_var_recursive(new_grad.get(g) or g)) for p, g in pairs]

    def apply_gradients(self, params_grads, startup_program=None):
        # By parameter name, as Fluid: the order of the optimizer ops decides how the
        # distribute transpiler places parameter blocks on the pservers.
        params_grads = sorted(params_grads, key=lambda pg: pg[0].name)
        params_grads = self._clip_and_decay(params_grads)
        ops = []
        for p, g in params_grads:
            program = p.block.program
            startup = startup_program or default_startup_program()
            with program._optimized_guard([p, g]):
                ops.append(self._append_optimize_op(p, g, program, startup))
        self._finish_update(params_grads)
        return ops

    def apply_optimize(self, loss, startup_program, params_grads):
        """Fluid 1.8's second half of minimize: apply_gradients under loss's program."""
        return self.apply_gradients(params_grads, startup_program)

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None,
                 checkpoint_config=None):
        """Backward pass + optimizer ops. With a rill.io.CheckpointConfig, the program
        then also advances a step counter and checkpoints itself (parameters, optimizer
        state, the counter) after the optimizer ops of each due step; resume with
        rill.io.load_checkpoint. Returns (optimize_ops, params_grads)."""
        if checkpoint_config is not None and not hasattr(checkpoint_config, '_append'):
            raise TypeError('minimize: checkpoint_config must be a rill.io.CheckpointConfig, '
                            'got %r' % (checkpoint_config,))
        params_grads = self.backward(loss, startup_program, parameter_list, no_grad_set)
        ops = self.apply_gradients(params_grads, startup_program)
        if checkpoint_config is not None:
            checkpoint_config._append(loss.block.program,
                                      startup_program or default_startup_program())
        return ops, params_grads

    def _append_optimize_op(self, param, grad, program, startup):
        raise NotImplementedError

    def _finish_update(self, params_grads):
        """Ops appended after every optimizer op (Adamax's beta1 power)."""


class SGDOptimizer(Optimizer):
    """param -= lr * grad (rows of a sparse gradient only)."""

    def _append_optimize_op(self, p, g, program, startup):
        lr = self._param_lr(p, program, startup)
        return program.global_block().append_op(
            'sgd', inputs={'Param': p, 'Grad': g, 'LearningRate': lr}, outputs={'ParamOut': p})


class MomentumOptimizer(Optimizer):
    def __init__(self, learning_rate, momentum, use_nesterov=False, regularization=None,
                 grad_clip=None, name=None):
        Optimizer.__init__(self, learning_rate, regularization, grad_clip, name)
        self._momentum = float(momentum)
        self._use_nesterov = bool(use_nesterov)

    def _append_optimize_op(self, p, g, program, startup):
        lr = self._param_lr(p, program, startup)
        v = self._add_accumulator('velocity', p, program, startup)
        return program.global_block().append_op(
            'momentum', inputs={'Param': p, 'Grad': g, 'Velocity': v, 'LearningRate': lr},
            outputs={'ParamOut': p, 'VelocityOut': v},
            attrs={'mu': self._momentum, 'use_nesterov': self._use_nesterov})


class AdamOptimizer(Optimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 regularization=None, grad_clip=None, name=None, lazy_mode=False):
        Optimizer.__init__(self, learning_rate, regularization, grad_clip, name)
        # beta1 and beta2 may be Variables of one float (the op's Beta1Tensor and
        # Beta2Tensor, read every step), as in Fluid 1.8
        self._beta1 = beta1 if isinstance(beta1, Variable) else float(beta1)
        self._beta2 = beta2 if isinstance(beta2, Variable) else float(beta2)
        self._epsilon = float(epsilon)
        self._lazy_mode = bool(lazy_mode)

    def _append_optimize_op(self, p, g, program, startup):
        lr = self._param_lr(p, program, startup)
        m1 = self._add_accumulator('moment1', p, program, startup)
        m2 = self._add_accumulator('moment2', p, program, startup)
        inputs = {'Param': p, 'Grad': g, 'LearningRate': lr, 'Moment1': m1, 'Moment2': m2}
        attrs = {'epsilon': self._epsilon, 'lazy_mode': self._lazy_mode}
        for k, beta, default in ((1, self._beta1, 0.9), (2, self._beta2, 0.999)):
            # a Variable's value is not known here: its power starts at Fluid's default
            # (Fluid 1.8 does the same)
            tensor = isinstance(beta, Variable)
            inputs['Beta%dPow' % k] = self._add_accumulator(
                'beta%d_pow_acc' % k, p, program, startup, default if tensor else beta, [1])
            if tensor:
                inputs['Beta%dTensor' % k] = beta
            else:
                attrs['beta%d' % k] = beta
        return program.global_block().append_op(
            'adam', inputs=inputs,
            outputs={'ParamOut': p, 'Moment1Out': m1, 'Moment2Out': m2,
                     'Beta1PowOut': inputs['Beta1Pow'], 'Beta2PowOut': inputs['Beta2Pow']},
            attrs=attrs)


class AdagradOptimizer(Optimizer):
    def __init__(self, learning_rate, epsilon=1.0e-6, regularization=None, grad_clip=None,
                 name=None, initial_accumulator_value=0.0):
        Optimizer.__init__(self, learning_rate, regularization, grad_clip, name)
        self._epsilon = float(epsilon)
        self._initial = float(initial_accumulator_value)

    def _append_optimize_op(self, p, g, program, startup):
        lr = self._param_lr(p, program, startup)
        m = self._add_accumulator('moment', p, program, startup, self._initial)
        return program.global_block().append_op(
            'adagrad', inputs={'Param': p, 'Grad': g, 'Moment': m, 'LearningRate': lr},
            outputs={'ParamOut': p, 'MomentOut': m}, attrs={'epsilon': self._epsilon})


from .optimizer_more import (RMSPropOptimizer, AdadeltaOptimizer,  # noqa: E402
                             AdamaxOptimizer, DecayedAdagradOptimizer, FtrlOptimizer,
                             LarsMomentumOptimizer, LambOptimizer, DpsgdOptimizer)
from .optimizer_average import (ExponentialMovingAverage, ModelAverage,  # noqa: E402
                                LookaheadOptimizer)
from .recompute import RecomputeOptimizer  # noqa: E402

SGD = SGDOptimizer
Momentum = MomentumOptimizer
Adam = AdamOptimizer
Adagrad = AdagradOptimizer
RMSProp = RMSPropOptimizer
Adadelta = AdadeltaOptimizer
Adamax = AdamaxOptimizer
DecayedAdagrad = DecayedAdagradOptimizer
Ftrl = FtrlOptimizer
LarsMomentum = LarsMomentumOptimizer
Lamb = LambOptimizer
Dpsgd = DpsgdOptimizer


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.optimizer', 'rill.optimizer')
