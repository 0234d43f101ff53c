"""Initializers (Fluid 1.x's initializer.py): each appends one op to the startup
program that fills a parameter."""

import math

import numpy as np

from . import core

__all__ = ['Constant', 'Uniform', 'Normal', 'Xavier', 'MSRA', 'NumpyArrayInitializer',
           'ConstantInitializer', 'UniformInitializer', 'NormalInitializer',
           'XavierInitializer', 'MSRAInitializer', 'Initializer', 'TruncatedNormal',
           'TruncatedNormalInitializer', 'Bilinear', 'BilinearInitializer']


class Initializer(object):
    def __call__(self, var, block):
        raise NotImplementedError

    @staticmethod
    def _seed(seed, block):
        return seed or block.program.random_seed or 0

    @staticmethod
    def _fans(var):
        shape = var.shape
        if not shape:
            return 1, 1
        if len(shape) == 1:
            return shape[0], shape[0]
        if len(shape) == 2:
            return shape[0], shape[1]
        rf = int(np.prod(shape[2:]))
        return shape[1] * rf, shape[0] * rf


class ConstantInitializer(Initializer):
    def __init__(self, value=0.0, force_cpu=False):
        self.value = float(value)

    def __call__(self, var, block):
        return block.append_op('fill_constant', outputs={'Out': var},
                               attrs={'shape': list(var.shape), 'value': self.value,
                                      'dtype': var.desc['dtype']})


class UniformInitializer(Initializer):
    def __init__(self, low=-1.0, high=1.0, seed=0):
        if low > high:
            raise ValueError('Uniform: low %g is above high %g' % (low, high))
        self.low, self.high, self.seed = float(low), float(high), int(seed)

    def __call__(self, var, block):
        return _uniform_op(var, block, self.low, self.high, self._seed(self.seed, block))


def _uniform_op(var, block, low, high, seed):
    """The uniform_random op that fills var with values in [low, high)."""
    return block.append_op('uniform_random', outputs={'Out': var},
                           attrs={'shape': list(var.shape), 'min': low, 'max': high,
                                  'seed': seed, 'dtype': var.desc['dtype']})


class NormalInitializer(Initializer):
    def __init__(self, loc=0.0, scale=1.0, seed=0):
        self.loc, self.scale, self.seed = float(loc), float(scale), int(seed)

    def __call__(self, var, block):
        return block.append_op('gaussian_random', outputs={'Out': var},
                               attrs={'shape': list(var.shape), 'mean': self.loc,
                                      'std': self.scale, 'seed': self._seed(self.seed, block),
                                      'dtype': var.desc['dtype']})


class TruncatedNormalInitializer(Initializer):
    """A truncated_gaussian_random op: normal values of mean loc and std scale, kept
    within loc +- 2 scale (the normal's std before truncation is scale)."""

    def __init__(self, loc=0.0, scale=1.0, seed=0):
        for k, v in (('loc', loc), ('scale', scale), ('seed', seed)):
            if v is None:
                raise ValueError('TruncatedNormal: %s must not be None' % k)
        self.loc, self.scale, self.seed = float(loc), float(scale), int(seed)

    def __call__(self, var, block):
        return block.append_op('truncated_gaussian_random', outputs={'Out': var},
                               attrs={'shape': [int(d) for d in var.shape], 'mean': self.loc,
                                      'std': self.scale, 'seed': self._seed(self.seed, block),
                                      'dtype': var.desc['dtype']})


class BilinearInitializer(Initializer):
    """The bilinear upsampling kernel for a conv2d_transpose filter of shape
    [C, 1, K, K] (any 4-D shape with equal last two extents), set by assign_value.
    The values are Paddle 1.8's under Python 3: element i takes x = i mod K and
    y = (i / K) mod K with a true division, so y is fractional."""

    def __call__(self, var, block):
        from .framework import Variable, Block
        if not isinstance(var, Variable):
            raise ValueError('Bilinear: var must be a Variable, got %r' % (var,))
        if not isinstance(block, Block):
            raise ValueError('Bilinear: block must be a Block, got %r' % (block,))
        shape = list(var.shape)
        if len(shape) != 4:
            raise ValueError('Bilinear: %s has shape %s; it must be 4-D' % (var.name, shape))
        if shape[2] != shape[3]:
            raise ValueError('Bilinear: %s has shape %s; shape[2] must equal shape[3]' %
                             (var.name, shape))
        if var.desc['dtype'] != 5:
            raise ValueError('Bilinear: %s is %s; only float32 is supported' %
                             (var.name, var.dtype))
        n = int(np.prod(shape))
        if n > 1024 * 1024:
            raise ValueError('Bilinear: %s has %d elements, more than 1048576' % (var.name, n))
        size = shape[3]
        f = np.ceil(size / 2.)
        c = (2 * f - 1 - f % 2) / (2. * f)
        i = np.arange(n, dtype=np.float64)
        x = i % size
        y = (i / size) % size
        w = ((1 - np.abs(x / f - c)) * (1 - np.abs(y / f - c))).astype(np.float32)
        return block.append_op('assign_value', outputs={'Out': var},
                               attrs={'shape': shape, 'dtype': 5,
                                      'fp32_values': [float(v) for v in w]})


class XavierInitializer(Initializer):
    """Glorot: uniform in +-sqrt(6 / (fan_in + fan_out)), or normal with std
    sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, uniform=True, fan_in=None, fan_out=None, seed=0):
        self.uniform, self.fan_in, self.fan_out, self.seed = uniform, fan_in, fan_out, seed

    def __call__(self, var, block):
        fi, fo = self._fans(var)
        fi = self.fan_in if self.fan_in is not None else fi
        fo = self.fan_out if self.fan_out is not None else fo
        if self.uniform:
            # UniformInitializer(-limit, limit, seed)'s op, without building one
            limit = math.sqrt(6.0 / float(fi + fo))
            return _uniform_op(var, block, -limit, limit, self._seed(int(self.seed), block))
        return NormalInitializer(0.0, math.sqrt(2.0 / float(fi + fo)), self.seed)(var, block)


class MSRAInitializer(Initializer):
    """He: uniform in +-sqrt(6 / fan_in), or normal with std sqrt(2 / fan_in)."""

    def __init__(self, uniform=True, fan_in=None, seed=0):
        self.uniform, self.fan_in, self.seed = uniform, fan_in, seed

    def __call__(self, var, block):
        fi, _ = self._fans(var)
        fi = self.fan_in if self.fan_in is not None else fi
        if self.uniform:
            limit = math.sqrt(6.0 / float(fi))
            return UniformInitializer(-limit, limit, self.seed)(var, block)
        return NormalInitializer(0.0, math.sqrt(2.0 / float(fi)), self.seed)(var, block)


class NumpyArrayInitializer(Initializer):
    """Sets the parameter to a given array (an assign_value op)."""

    def __init__(self, value):
        self.value = np.asarray(value)

    def __call__(self, var, block):
        v = self.value
        if tuple(v.shape) != tuple(var.shape):
            raise ValueError('NumpyArrayInitializer: array of shape %s for %s of shape %s' %
                             (v.shape, var.name, var.shape))
        code = var.desc['dtype']
        if code == 5:
            key, vals = 'fp32_values', [float(x) for x in v.astype(np.float32).ravel()]
        elif code == 2:
            key, vals = 'int32_values', [int(x) for x in v.astype(np.int32).ravel()]
        elif code == 3:
            key, vals = 'int64_values', [int(x) for x in v.astype(np.int64).ravel()]
        else:
            raise TypeError('NumpyArrayInitializer: %s is %s; float32, int32 and int64 are '
                            'supported' % (var.name, var.dtype))
        return block.append_op('assign_value', outputs={'Out': var},
                               attrs={'shape': list(var.shape), 'dtype': code, key: vals})


Constant = ConstantInitializer
Uniform = UniformInitializer
Normal = NormalInitializer
Xavier = XavierInitializer
MSRA = MSRAInitializer
TruncatedNormal = TruncatedNormalInitializer
Bilinear = BilinearInitializer


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.initializer', 'rill.initializer')
