"""Writes double_grad/: Paddle 1.8.5's values for programs that differentiate a gradient
(the backward pass run through an earlier pass's gradient ops): the gradient of a
gradient's norm with fluid.gradients, and WGAN-GP style gradient penalties trained with
SGD, one with a conv critic. They reach the double-gradient ops of square, sqrt, relu,
leaky_relu, elu, mul, conv2d and elementwise_add / _sub / _mul / _div.

`build(fluid, name)` (also used by tests/python/test_double_grad.py with rill) returns
(main, startup, fetch list, feed); the file holds every fetch of three steps, as
'<case>/<step>/<i>'. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'double_grad')
STEPS = 3


def _x(seed, shape, lo=-1.0, hi=1.0):
    return np.random.RandomState(seed).uniform(lo, hi, shape).astype('float32')


def _param(fluid, name, value):
    return fluid.ParamAttr(name=name, initializer=fluid.initializer.NumpyArrayInitializer(value))


def _data(fluid, name, shape):
    x = fluid.data(name, [None] + list(shape), 'float32')
    x.stop_gradient = False
    return x


def _cube(fluid, L):
    x = _data(fluid, 'x', [3])
    y = L.reduce_sum(L.square(x) * x)
    g = fluid.gradients(y, x)[0]
    gg = fluid.gradients(L.reduce_sum(g * g), x)[0]
    return [g, gg], {'x': _x(1, (2, 3))}


def _sqrt_relu(fluid, L):
    x = _data(fluid, 'x', [4])
    y = L.reduce_mean(L.sqrt(L.relu(x) + 1.0) * L.leaky_relu(x, 0.1))
    g = fluid.gradients(y, x)[0]
    gg = fluid.gradients(L.reduce_sum(L.square(g)), x)[0]
    return [y, g, gg], {'x': _x(2, (3, 4))}


def _div_elu(fluid, L):
    x = _data(fluid, 'x', [4])
    a = L.elementwise_div(L.elu(x, 0.7), L.square(x) + 1.0)
    b = L.elementwise_div(x, L.reduce_sum(L.square(x), dim=1) + 2.0, axis=0)
    g = fluid.gradients(L.reduce_sum(a) + L.reduce_sum(b * b), x)[0]
    gg = fluid.gradients(L.reduce_sum(g * g), x)[0]
    return [g, gg], {'x': _x(17, (3, 4), -2.0, 2.0)}


def _penalty(fluid, L, g):
    norm = L.sqrt(L.reduce_sum(L.square(g), dim=1) + 1e-6)
    return L.reduce_mean(L.square(norm - 1.0))


def _wgan_gp(fluid, L):
    """A critic h = leaky_relu(x W1 + b1), o = h W2 + b2, trained on mean(o) plus ten
    times the penalty (|do/dx| - 1)^2."""
    x = _data(fluid, 'x', [5])
    h = L.fc(x, 6, act='leaky_relu', param_attr=_param(fluid, 'w1', _x(3, (5, 6), -0.6, 0.6)),
             bias_attr=_param(fluid, 'b1', _x(4, (6,), -0.1, 0.1)))
    o = L.fc(h, 1, param_attr=_param(fluid, 'w2', _x(5, (6, 1), -0.6, 0.6)),
             bias_attr=_param(fluid, 'b2', _x(6, (1,), -0.1, 0.1)))
    g = fluid.gradients(o, x)[0]
    loss = L.reduce_mean(o) + _penalty(fluid, L, g) * 10.0
    fluid.optimizer.SGD(0.05).minimize(loss)
    return [loss, g, 'w1', 'b1', 'w2', 'b2'], {'x': _x(7, (4, 5))}


def _relu_sub_mul(fluid, L):
    """relu after a broadcast elementwise_sub of a parameter, a gate multiplying two
    branches (elementwise_mul of two x-dependent tensors, one broadcast), trained on the
    penalty alone."""
    x = _data(fluid, 'x', [4])
    w = L.create_parameter([4, 3], 'float32', attr=_param(fluid, 'w', _x(8, (4, 3))))
    c = L.create_parameter([3], 'float32', attr=_param(fluid, 'c', _x(9, (3,), -0.2, 0.2)))
    v = L.create_parameter([4, 1], 'float32', attr=_param(fluid, 'v', _x(10, (4, 1))))
    h = L.relu(L.elementwise_sub(L.mul(x, w), c))
    gate = L.mul(x, v)
    o = L.reduce_sum(L.elementwise_mul(h, gate), dim=1)
    g = fluid.gradients(o, x)[0]
    loss = _penalty(fluid, L, g)
    fluid.optimizer.SGD(0.1).minimize(loss)
    return [loss, g, 'w', 'c', 'v'], {'x': _x(11, (3, 4))}


def _conv_gp(fluid, L):
    """A conv critic (stride 2, padding 1, two groups, bias and leaky_relu, then fc)
    trained on mean(o) plus the penalty: conv2d's double gradient."""
    x = _data(fluid, 'x', [2, 6, 6])
    h = L.conv2d(x, 4, 3, stride=2, padding=1, groups=2, act='leaky_relu',
                 param_attr=_param(fluid, 'cw', _x(12, (4, 1, 3, 3), -0.5, 0.5)),
                 bias_attr=_param(fluid, 'cb', _x(13, (4,), -0.1, 0.1)))
    o = L.fc(h, 1, param_attr=_param(fluid, 'fw', _x(14, (36, 1), -0.3, 0.3)),
             bias_attr=_param(fluid, 'fb', _x(15, (1,), -0.1, 0.1)))
    g = fluid.gradients(o, x)[0]
    loss = L.reduce_mean(o) + _penalty(fluid, L, L.reshape(g, [-1, 72])) * 10.0
    fluid.optimizer.SGD(0.05).minimize(loss)
    return [loss, g, 'cw', 'cb', 'fw', 'fb'], {'x': _x(16, (3, 2, 6, 6))}


CASES = {'cube': _cube, 'sqrt_relu': _sqrt_relu, 'div_elu': _div_elu, 'wgan_gp': _wgan_gp,
         'relu_sub_mul': _relu_sub_mul, 'conv_gp': _conv_gp}


def build(fluid, name):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fetch, feed = CASES[name](fluid, fluid.layers)
    return main, startup, fetch, feed


def run(fluid, name):
    """{'<name>/<step>/<i>': array} over STEPS runs of the case in a fresh scope."""
    main, startup, fetch, feed = build(fluid, name)
    exe = fluid.Executor(fluid.CPUPlace())
    out = {}
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        for step in range(STEPS):
            vals = exe.run(main, feed=feed, fetch_list=fetch)
            for i, v in enumerate(vals):
                out['%s/%d/%d' % (name, step, i)] = np.array(v)
    return out


def main():
    import paddle.fluid as fluid
    os.makedirs(OUT, exist_ok=True)
    out = {}
    for name in CASES:
        out.update(run(fluid, name))
    np.savez(os.path.join(OUT, 'expected.npz'), **out)


if __name__ == '__main__':
    main()
