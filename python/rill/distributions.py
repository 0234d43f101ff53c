"""Fluid 1.8's probability distributions (re-exported by rill.layers): Uniform, Normal,
Categorical and MultivariateNormalDiag, built from existing layers the way Paddle 1.8.5's
layers/distributions.py builds them (sample, entropy, log_prob, kl_divergence), so their
programs hold the same ops. Parameters given as floats, lists or numpy arrays become
float32 constants broadcast to one shape; given as Variables they are used as they are
(all must then be Variables)."""

import math
import warnings

import numpy as np

from . import layers
from .framework import Variable

__all__ = ['Uniform', 'Normal', 'Categorical', 'MultivariateNormalDiag']


def _check_type(v, what, kinds, where):
    if not isinstance(v, kinds):
        raise TypeError("The type of '%s' in %s must be %s, but received %s."
                        % (what, where, ' or '.join(k.__name__ for k in kinds), type(v)))


class Distribution(object):
    """The interface of the distributions."""

    def sample(self):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def kl_divergence(self, other):
        raise NotImplementedError

    def log_prob(self, value):
        raise NotImplementedError

    def _validate_args(self, *args):
        """True when the arguments are Variables; mixing them with numbers is an error."""
        is_var = [isinstance(a, Variable) for a in args]
        if any(is_var) and not all(is_var):
            raise ValueError('if one argument is Variable, all arguments should be Variable')
        return all(is_var)

    def _to_variable(self, *args):
        """float32 constants of the arguments, broadcast to one shape."""
        arrays, total = [], 0.
        for a in args:
            if not isinstance(a, (float, list, np.ndarray, Variable)):
                raise TypeError('type of input args must be float, list, numpy.ndarray or '
                                'Variable.')
            arr = np.array(np.zeros(1) + a if isinstance(a, float) else a)
            if str(arr.dtype) != 'float32':
                warnings.warn('data type of argument only support float32, your argument '
                              'will be convert to float32.')
                arr = arr.astype('float32')
            total = total + arr
            arrays.append(arr)
        out = []
        for arr in arrays:
            b, _ = np.broadcast_arrays(arr, total)
            v = layers.create_tensor(dtype=total.dtype.name)
            layers.assign(np.ascontiguousarray(b), v)
            out.append(v)
        return tuple(out)


class Uniform(Distribution):
    """The uniform distribution on [low, high)."""

    def __init__(self, low, high):
        _check_type(low, 'low', (float, np.ndarray, Variable, list), 'Uniform')
        _check_type(high, 'high', (float, np.ndarray, Variable, list), 'Uniform')
        self.all_arg_is_float = False
        self.batch_size_unknown = False
        if self._validate_args(low, high):
            self.batch_size_unknown = True
            self.low, self.high = low, high
        else:
            self.all_arg_is_float = isinstance(low, float) and isinstance(high, float)
            self.low, self.high = self._to_variable(low, high)

    def sample(self, shape, seed=0):
        """Samples of shape + the parameters' shape."""
        _check_type(shape, 'shape', (list,), 'sample')
        _check_type(seed, 'seed', (int,), 'sample')
        batch_shape = list((self.low + self.high).shape)
        out_shape = shape + batch_shape
        if self.batch_size_unknown:
            zero = layers.fill_constant_batch_size_like(self.low + self.high,
                                                        batch_shape + shape,
                                                        self.low.dtype.name, 0.)
            u = layers.uniform_random_batch_size_like(zero, list(zero.shape), min=0., max=1.,
                                                      seed=seed)
            return layers.reshape(u * (zero + self.high - self.low) + self.low, out_shape)
        out = layers.uniform_random(out_shape, seed=seed) * \
            (layers.zeros(out_shape, dtype=self.low.dtype.name) + (self.high - self.low)) + \
            self.low
        return layers.reshape(out, shape) if self.all_arg_is_float else out

    def log_prob(self, value):
        _check_type(value, 'value', (Variable,), 'log_prob')
        lb = layers.cast(layers.less_than(self.low, value), dtype=value.dtype.name)
        ub = layers.cast(layers.less_than(value, self.high), dtype=value.dtype.name)
        return layers.log(lb * ub) - layers.log(self.high - self.low)

    def entropy(self):
        return layers.log(self.high - self.low)


class Normal(Distribution):
    """The normal distribution of mean loc and standard deviation scale."""

    def __init__(self, loc, scale):
        _check_type(loc, 'loc', (float, np.ndarray, Variable, list), 'Normal')
        _check_type(scale, 'scale', (float, np.ndarray, Variable, list), 'Normal')
        self.batch_size_unknown = False
        self.all_arg_is_float = False
        if self._validate_args(loc, scale):
            self.batch_size_unknown = True
            self.loc, self.scale = loc, scale
        else:
            self.all_arg_is_float = isinstance(loc, float) and isinstance(scale, float)
            self.loc, self.scale = self._to_variable(loc, scale)

    def sample(self, shape, seed=0):
        """Samples of shape + the parameters' shape."""
        _check_type(shape, 'shape', (list,), 'sample')
        _check_type(seed, 'seed', (int,), 'sample')
        batch_shape = list((self.loc + self.scale).shape)
        out_shape = shape + batch_shape
        if self.batch_size_unknown:
            zero = layers.fill_constant_batch_size_like(self.loc + self.scale,
                                                        batch_shape + shape,
                                                        self.loc.dtype.name, 0.)
            g = layers.gaussian_random(layers.shape(zero), mean=0., std=1., seed=seed)
            return layers.reshape(g * (zero + self.scale) + self.loc, out_shape)
        out = layers.gaussian_random(out_shape, mean=0., std=1., seed=seed) * \
            (layers.zeros(out_shape, dtype=self.loc.dtype.name) + self.scale) + self.loc
        return layers.reshape(out, shape) if self.all_arg_is_float else out

    def entropy(self):
        batch_shape = list((self.loc + self.scale).shape)
        zero = layers.fill_constant_batch_size_like(self.loc + self.scale, batch_shape,
                                                    self.loc.dtype.name, 0.)
        return 0.5 + 0.5 * math.log(2 * math.pi) + layers.log(self.scale + zero)

    def log_prob(self, value):
        _check_type(value, 'value', (Variable,), 'log_prob')
        var = self.scale * self.scale
        return -1. * ((value - self.loc) * (value - self.loc)) / (2. * var) - \
            layers.log(self.scale) - math.log(math.sqrt(2. * math.pi))

    def kl_divergence(self, other):
        _check_type(other, 'other', (Normal,), 'kl_divergence')
        ratio = self.scale / other.scale
        ratio = ratio * ratio
        t1 = (self.loc - other.loc) / other.scale
        t1 = t1 * t1
        return 0.5 * (ratio + t1 - 1. - layers.log(ratio))


def _softmax_parts(logits):
    """(logits - their row max, exp of that, its row sums)."""
    lg = logits - layers.reduce_max(logits, dim=-1, keep_dim=True)
    e = layers.exp(lg)
    return lg, e, layers.reduce_sum(e, dim=-1, keep_dim=True)


class Categorical(Distribution):
    """The categorical distribution of unnormalised log-probabilities logits."""

    def __init__(self, logits):
        _check_type(logits, 'logits', (np.ndarray, Variable, list), 'Categorical')
        self.logits = logits if self._validate_args(logits) else self._to_variable(logits)[0]

    def kl_divergence(self, other):
        _check_type(other, 'other', (Categorical,), 'kl_divergence')
        lg, e, z = _softmax_parts(self.logits)
        olg, _, oz = _softmax_parts(other.logits)
        return layers.reduce_sum(
            e / z * (lg - layers.log(z) - olg + layers.log(oz)), dim=-1, keep_dim=True)

    def entropy(self):
        lg, e, z = _softmax_parts(self.logits)
        return -1.0 * layers.reduce_sum(e / z * (lg - layers.log(z)), dim=-1, keep_dim=True)


class MultivariateNormalDiag(Distribution):
    """The multivariate normal of mean loc and diagonal covariance matrix scale."""

    def __init__(self, loc, scale):
        _check_type(loc, 'loc', (np.ndarray, Variable, list), 'MultivariateNormalDiag')
        _check_type(scale, 'scale', (np.ndarray, Variable, list), 'MultivariateNormalDiag')
        if self._validate_args(loc, scale):
            self.loc, self.scale = loc, scale
        else:
            self.loc, self.scale = self._to_variable(loc, scale)

    def _ones_and_eye(self, value):
        n = list(value.shape)
        return (layers.ones(shape=n, dtype=self.loc.dtype.name),
                layers.diag(layers.ones(shape=[n[0]], dtype=self.loc.dtype.name)))

    def _det(self, value):
        ones, eye = self._ones_and_eye(value)
        return layers.reduce_prod(value + ones - eye)

    def _inv(self, value):
        ones, eye = self._ones_and_eye(value)
        return layers.elementwise_pow(value, (ones - 2 * eye))

    def entropy(self):
        return 0.5 * (self.scale.shape[0] * (1.0 + math.log(2 * math.pi)) +
                      layers.log(self._det(self.scale)))

    def kl_divergence(self, other):
        _check_type(other, 'other', (MultivariateNormalDiag,), 'kl_divergence')
        tr = layers.reduce_sum(self._inv(other.scale) * self.scale)
        d = other.loc - self.loc
        tri = layers.matmul(layers.matmul(d, self._inv(other.scale)), d)
        k = list(self.scale.shape)[0]
        ln_cov = layers.log(self._det(other.scale)) - layers.log(self._det(self.scale))
        return 0.5 * (tr + tri - k + ln_cov)
