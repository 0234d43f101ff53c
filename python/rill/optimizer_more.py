"""The optimizers beyond SGD, Momentum, Adam and Adagrad (Fluid 1.x's RMSProp, Adadelta,
Adamax, DecayedAdagrad, Ftrl, LarsMomentum, Lamb), built on optimizer.Optimizer: the same
backward pass, clipping and weight decay, one op per parameter with Paddle 1.8.5's op
type, slots, attributes and accumulators (names and starting values)."""

from .framework import Variable
from .optimizer import Optimizer, AdamOptimizer


class RMSPropOptimizer(Optimizer):
    """rmsprop: accumulators momentum, mean_square, mean_grad (zeros); the op's decay is
    rho. A sparse gradient updates every row (the missing ones as zero gradient)."""

    def __init__(self, learning_rate, rho=0.95, epsilon=1.0e-6, momentum=0.0, centered=False,
                 parameter_list=None, regularization=None, grad_clip=None, name=None):
        Optimizer.__init__(self, learning_rate, regularization, grad_clip, name)
        for k, v in (('rho', rho), ('epsilon', epsilon), ('momentum', momentum)):
            if v is None:
                raise ValueError('%s is not set.' % k)
        self._rho, self._epsilon = float(rho), float(epsilon)
        self._momentum, self._centered = float(momentum), bool(centered)

    def _append_optimize_op(self, p, g, program, startup):
        lr = self._param_lr(p, program, startup)
        mom = self._add_accumulator('momentum', p, program, startup)
        ms = self._add_accumulator('mean_square', p, program, startup)
        mg = self._add_accumulator('mean_grad', p, program, startup)
        return program.global_block().append_op(
            'rmsprop', inputs={'Param': p, 'Grad': g, 'Moment': mom, 'MeanSquare': ms,
                               'MeanGrad': mg, 'LearningRate': lr},
            outputs={'ParamOut': p, 'MomentOut': mom, 'MeanSquareOut': ms, 'MeanGradOut': mg},
            attrs={'epsilon': self._epsilon, 'decay': self._rho, 'momentum': self._momentum,
                   'centered': self._centered})


class AdadeltaOptimizer(Optimizer):
    """adadelta: accumulators _avg_squared_grad, _avg_squared_update (zeros). Paddle's op
    takes no learning rate: learning_rate is checked and held in the persistable
    learning_rate_0 as for the other optimizers, and otherwise unused. Dense gradients
    only."""

    def __init__(self, learning_rate, epsilon=1.0e-6, rho=0.95, parameter_list=None,
                 regularization=None, grad_clip=None, name=None):
        if learning_rate is None:
            raise ValueError('learning_rate is not set.')
        Optimizer.__init__(self, learning_rate, regularization, grad_clip, name)
        self._epsilon, self._rho = float(epsilon), float(rho)

    def _append_optimize_op(self, p, g, program, startup):
        # the op ignores it, but Fluid creates the persistable learning_rate_0 as for
        # every optimizer, so that checkpoints hold the same variables
        self._global_lr(program, startup)
        g2 = self._add_accumulator('_avg_squared_grad', p, program, startup)
        u2 = self._add_accumulator('_avg_squared_update', p, program, startup)
        return program.global_block().append_op(
            'adadelta', inputs={'Param': p, 'Grad': g, 'AvgSquaredGrad': g2,
                                'AvgSquaredUpdate': u2},
            outputs={'ParamOut': p, 'AvgSquaredGradOut': g2, 'AvgSquaredUpdateOut': u2},
            attrs={'epsilon': self._epsilon, 'rho': self._rho})


class AdamaxOptimizer(Optimizer):
    """adamax: accumulators moment, inf_norm (zeros) and beta1_pow_acc ([1], beta1);
    after all the adamax ops, one scale op per parameter multiplies its beta1_pow_acc by
    beta1, as Paddle's _finish_update. Dense gradients only."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 parameter_list=None, regularization=None, grad_clip=None, name=None):
        Optimizer.__init__(self, learning_rate, regularization, grad_clip, name)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)

    def _append_optimize_op(self, p, g, program, startup):
        lr = self._param_lr(p, program, startup)
        m = self._add_accumulator('moment', p, program, startup)
        u = self._add_accumulator('inf_norm', p, program, startup)
        b1 = self._add_accumulator('beta1_pow_acc', p, program, startup, self._beta1, [1])
        return program.global_block().append_op(
            'adamax', inputs={'Param': p, 'Grad': g, 'LearningRate': lr, 'Moment': m,
                              'InfNorm': u, 'Beta1Pow': b1},
            outputs={'ParamOut': p, 'MomentOut': m, 'InfNormOut': u},
            attrs={'beta1': self._beta1, 'beta2': self._beta2, 'epsilon': self._epsilon})

    def _finish_update(self, params_grads):
        for p, g in params_grads:
            if g is None or getattr(p, 'trainable', True) is False:
                continue
            b1 = self._accumulators[('beta1_pow_acc', p.name)]
            program = p.block.program
            with program._optimized_guard([p, g]):
                program.global_block().append_op(
                    'scale', inputs={'X': b1}, outputs={'Out': b1},
                    attrs={'scale': self._beta1})


class DecayedAdagradOptimizer(Optimizer):
    """decayed_adagrad: accumulator moment (zeros). Dense gradients only."""

    def __init__(self, learning_rate, decay=0.95, epsilon=1.0e-6, parameter_list=None,
                 regularization=None, grad_clip=None, name=None):
        Optimizer.__init__(self, learning_rate, regularization, grad_clip, name)
        self._decay, self._epsilon = float(decay), float(epsilon)

    def _append_optimize_op(self, p, g, program, startup):
        lr = self._param_lr(p, program, startup)
        m = self._add_accumulator('moment', p, program, startup)
        return program.global_block().append_op(
            'decayed_adagrad', inputs={'Param': p, 'Grad': g, 'Moment': m, 'LearningRate': lr},
            outputs={'ParamOut': p, 'MomentOut': m},
            attrs={'epsilon': self._epsilon, 'decay': self._decay})


class FtrlOptimizer(Optimizer):
    """ftrl: accumulators squared, linear (zeros). Paddle 1.8.5 sets the op's l2
    attribute from l1 (its optimizer passes self._l1 for both); so does this class, so
    that the numbers are Paddle's: the l2 argument is kept but has no effect. Dense
    gradients only."""

    def __init__(self, learning_rate, l1=0.0, l2=0.0, lr_power=-0.5, parameter_list=None,
                 regularization=None, grad_clip=None, name=None):
        if learning_rate is None:
            raise ValueError('learning_rate is not set.')
        Optimizer.__init__(self, learning_rate, regularization, grad_clip, name)
        self._l1, self._l2, self._lr_power = float(l1), float(l2), float(lr_power)

    def _append_optimize_op(self, p, g, program, startup):
        lr = self._param_lr(p, program, startup)
        sq = self._add_accumulator('squared', p, program, startup)
        lin = self._add_accumulator('linear', p, program, startup)
        return program.global_block().append_op(
            'ftrl', inputs={'Param': p, 'Grad': g, 'SquaredAccumulator': sq,
                            'LinearAccumulator': lin, 'LearningRate': lr},
            outputs={'ParamOut': p, 'SquaredAccumOut': sq, 'LinearAccumOut': lin},
            attrs={'l1': self._l1, 'l2': self._l1, 'lr_power': self._lr_power})


class LarsMomentumOptimizer(Optimizer):
    """lars_momentum: accumulator velocity (zeros). Dense gradients only."""

    def __init__(self, learning_rate, momentum, lars_coeff=0.001, lars_weight_decay=0.0005,
                 parameter_list=None, regularization=None, grad_clip=None, name=None):
        if momentum is None:
            raise ValueError('momentum is not set.')
        Optimizer.__init__(self, learning_rate, regularization, grad_clip, name)
        self._momentum = float(momentum)
        self._lars_coeff, self._lars_weight_decay = float(lars_coeff), float(lars_weight_decay)

    def _append_optimize_op(self, p, g, program, startup):
        lr = self._param_lr(p, program, startup)
        v = self._add_accumulator('velocity', p, program, startup)
        return program.global_block().append_op(
            'lars_momentum', inputs={'Param': p, 'Grad': g, 'Velocity': v, 'LearningRate': lr},
            outputs={'ParamOut': p, 'VelocityOut': v},
            attrs={'mu': self._momentum, 'lars_coeff': self._lars_coeff,
                   'lars_weight_decay': self._lars_weight_decay})


class LambOptimizer(AdamOptimizer):
    """lamb: Adam's accumulators (moment1, moment2 zeros; beta1_pow_acc, beta2_pow_acc
    [1] at beta1, beta2), which Paddle 1.8.5's op reads without bias correction and never
    advances. weight_decay is 0 for the parameters exclude_from_weight_decay_fn picks.
    Dense and sparse gradients."""

    def __init__(self, learning_rate=0.001, lamb_weight_decay=0.01, beta1=0.9, beta2=0.999,
                 epsilon=1e-6, parameter_list=None, regularization=None, grad_clip=None,
                 exclude_from_weight_decay_fn=None, name=None):
        for k, v in (('beta1', beta1), ('beta2', beta2)):
            if isinstance(v, Variable):
                raise TypeError('LambOptimizer: %s must be a float (the lamb op has no '
                                'tensor form of it), got Variable %s' % (k, v.name))
        AdamOptimizer.__init__(self, learning_rate, beta1, beta2, epsilon, regularization,
                               grad_clip, name)
        self._weight_decay = float(lamb_weight_decay)
        self._exclude_from_weight_decay_fn = exclude_from_weight_decay_fn

    def _append_optimize_op(self, p, g, program, startup):
        lr = self._param_lr(p, program, startup)
        m1 = self._add_accumulator('moment1', p, program, startup)
        m2 = self._add_accumulator('moment2', p, program, startup)
        b1 = self._add_accumulator('beta1_pow_acc', p, program, startup, self._beta1, [1])
        b2 = self._add_accumulator('beta2_pow_acc', p, program, startup, self._beta2, [1])
        fn = self._exclude_from_weight_decay_fn
        wd = 0.0 if fn is not None and fn(p) else self._weight_decay
        return program.global_block().append_op(
            'lamb', inputs={'Param': p, 'Grad': g, 'LearningRate': lr, 'Moment1': m1,
                            'Moment2': m2, 'Beta1Pow': b1, 'Beta2Pow': b2},
            outputs={'ParamOut': p, 'Moment1Out': m1, 'Moment2Out': m2},
            attrs={'beta1': self._beta1, 'beta2': self._beta2, 'epsilon': self._epsilon,
                   'weight_decay': wd})


class DpsgdOptimizer(Optimizer):
    """dpsgd: SGD with the gradient clipped to L2 norm `clip` and Gaussian noise of std
    `sigma` (one draw per op run, divided by batch_size) added to it. The noise seed is
    0 (a new draw each run) unless _seed is set, as in Paddle. Dense gradients only."""

    def __init__(self, learning_rate=0.001, clip=0.9, batch_size=0.999, sigma=1e-8,
                 parameter_list=None):
        for k, v in (('learning_rate', learning_rate), ('clip', clip),
                     ('batch_size', batch_size), ('sigma', sigma)):
            if v is None:
                raise ValueError('%s is not set.' % k)
        Optimizer.__init__(self, learning_rate)
        self.type = 'dpsgd'
        self._clip, self._batch_size, self._sigma = float(clip), float(batch_size), float(sigma)
        self._seed = None

    def _append_optimize_op(self, p, g, program, startup):
        lr = self._param_lr(p, program, startup)
        return program.global_block().append_op(
            'dpsgd', inputs={'Param': p, 'Grad': g, 'LearningRate': lr},
            outputs={'ParamOut': p},
            attrs={'clip': self._clip, 'batch_size': self._batch_size, 'sigma': self._sigma,
                   'seed': int(self._seed or 0)})
