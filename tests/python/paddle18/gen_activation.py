"""Writes activation/act.npz: for each case of CASES (a layer of the activation and math
family with its attributes), a seeded float32 input of shape [4, 16] (three rows drawn from
the op's domain, one row of edge values: 0, -0, thresholds, large magnitudes, NaN, inf),
Paddle's output and the gradient of mean(layer(x)) with respect to x (append_backward).
Keys: `<case>/x`, `<case>/out`, `<case>/dx`; pow's Variable factor case also stores
`<case>/factor`. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np
import paddle.fluid as fluid

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'activation')
INF, NAN = np.inf, np.nan
EDGE = {
    'any': [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 3e4, -3e4, 80.0, -80.0, NAN, INF, -INF, 1e-7, 20.0, -20.0],
    'trig': [0.0, -0.0, 0.5, -0.5, 3.14159, -3.14159, 100.0, -100.0, NAN, 1e-7, 1.5, -1.5, 6.0, -6.0, 2.0, -2.0],
    'unit': [0.0, -0.0, 0.5, -0.5, 0.999, -0.999, 1e-7, -1e-7, NAN, 0.25, -0.25, 0.9, -0.9, 0.1, -0.1, 0.75],
    'pos': [1e-6, 0.5, 1.0, 2.0, 3e4, 1e-3, NAN, INF, 0.25, 4.0, 9.0, 16.0, 100.0, 0.01, 7.0, 1e6],
    'nonzero': [1e-6, -1e-6, 0.5, -0.5, 1.0, -1.0, 3e4, -3e4, NAN, INF, -INF, 2.0, -2.0, 0.1, -0.1, 7.0],
    'gtm1': [0.0, -0.0, 1e-8, -0.5, 0.5, 3e4, NAN, INF, -0.999, 1.0, 2.0, 10.0, -0.25, 0.25, 1e-3, 5.0],
}
RANGE = {'any': (-4, 4), 'trig': (-4, 4), 'unit': (-0.95, 0.95), 'pos': (0.05, 5),
         'nonzero': (0.2, 4), 'gtm1': (-0.9, 4)}

# (case, layer, kwargs, domain)
CASES = [
    ('abs', 'abs', {}, 'any'), ('ceil', 'ceil', {}, 'any'), ('floor', 'floor', {}, 'any'),
    ('round', 'round', {}, 'any'), ('sign', 'sign', {}, 'any'),
    ('cos', 'cos', {}, 'trig'), ('sin', 'sin', {}, 'trig'),
    ('acos', 'acos', {}, 'unit'), ('asin', 'asin', {}, 'unit'), ('atan', 'atan', {}, 'any'),
    ('reciprocal', 'reciprocal', {}, 'nonzero'), ('rsqrt', 'rsqrt', {}, 'pos'),
    ('softplus', 'softplus', {}, 'any'), ('softsign', 'softsign', {}, 'any'),
    ('logsigmoid', 'logsigmoid', {}, 'any'), ('tanh_shrink', 'tanh_shrink', {}, 'trig'),
    ('softshrink', 'softshrink', {}, 'any'), ('softshrink_a', 'softshrink', {'alpha': 1.0}, 'any'),
    ('hard_shrink', 'hard_shrink', {}, 'any'), ('hard_shrink_t', 'hard_shrink', {'threshold': 1.0}, 'any'),
    ('thresholded_relu', 'thresholded_relu', {}, 'any'),
    ('thresholded_relu_t', 'thresholded_relu', {'threshold': 0.5}, 'any'),
    ('elu', 'elu', {}, 'any'), ('elu_a', 'elu', {'alpha': 0.5}, 'any'),
    ('selu', 'selu', {}, 'any'), ('selu_sa', 'selu', {'scale': 1.5, 'alpha': 2.0}, 'any'),
    ('brelu', 'brelu', {}, 'any'), ('brelu_t', 'brelu', {'t_min': -1.0, 't_max': 1.0}, 'any'),
    ('soft_relu', 'soft_relu', {}, 'any'), ('soft_relu_t', 'soft_relu', {'threshold': 2.0}, 'any'),
    ('stanh', 'stanh', {}, 'any'), ('stanh_ab', 'stanh', {'scale_a': 1.5, 'scale_b': 0.5}, 'any'),
    ('pow', 'pow', {}, 'pos'), ('pow_f', 'pow', {'factor': 2.5}, 'pos'),
    ('pow_var', 'pow', {'factor': 'var'}, 'pos'),
    ('erf', 'erf', {}, 'any'), ('mish', 'mish', {}, 'any'), ('mish_t', 'mish', {'threshold': 2.0}, 'any'),
    ('log1p', 'log1p', {}, 'gtm1'),
]


def inputs(k, domain):
    rng = np.random.RandomState(100 + k)
    lo, hi = RANGE[domain]
    x = rng.uniform(lo, hi, (4, 16)).astype('float32')
    if domain == 'nonzero':
        x *= np.where(rng.rand(4, 16) < 0.5, -1, 1).astype('float32')
    x[3] = np.array(EDGE[domain], 'float32')
    return x


def run(layer, kwargs, x):
    main, startup = fluid.Program(), fluid.Program()
    feed = {'x': x}
    with fluid.program_guard(main, startup):
        xv = fluid.data('x', list(x.shape), 'float32')
        xv.stop_gradient = False
        kw = dict(kwargs)
        if kw.get('factor') == 'var':
            kw['factor'] = fluid.data('factor', [1], 'float32')
            feed['factor'] = np.array([3.0], 'float32')
        y = getattr(fluid.layers, layer)(xv, **kw)
        fluid.backward.append_backward(fluid.layers.mean(y))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    out, dx = exe.run(main, feed=feed, fetch_list=[y.name, xv.name + '@GRAD'])
    return feed, np.array(out), np.array(dx)


def main():
    os.makedirs(OUT, exist_ok=True)
    data = {}
    for k, (case, layer, kwargs, domain) in enumerate(CASES):
        feed, out, dx = run(layer, kwargs, inputs(k, domain))
        data[case + '/x'] = feed['x']
        if 'factor' in feed:
            data[case + '/factor'] = feed['factor']
        data[case + '/out'] = out
        data[case + '/dx'] = dx
    np.savez_compressed(os.path.join(OUT, 'act.npz'), **data)


if __name__ == '__main__':
    main()
