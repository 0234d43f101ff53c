"""Writes dynamic_rnn/: SGD training through a DynamicRNN in Paddle 1.8.5, over a LoD
batch of four sequences of lengths 2, 4, 1 and 4 (ties and a reordering by rank). Each
step reads its rows of x, a per-sequence static input s cut to the running sequences,
a state h started from the fed h0 (reordered by rank) and a state c started from a
constant: h_t = tanh(fc(x_t) + fc(h_{t-1}, no bias)), c_t = 0.5 c_{t-1} + h_t * s. The
rnn outputs h and c; the loss is mean(last step of h per sequence) + mean(c * c). Holds
the starting parameters, seeded batches, Paddle's loss, the gradients of wh, x, h0 and s
at every step and the parameters after the last. `build(fluid)` is shared with
tests/python/test_dynamic_rnn.py, which builds the same program with rill. Run with
PaddlePaddle 1.8.5 (README.md)."""
import os
import sys

import numpy as np

import _steps

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'dynamic_rnn')
STEPS = 4   # SGD steps
LENS = [2, 4, 1, 4]
B, D, H = len(LENS), 2, 3
PARAMS = ('wx', 'bx', 'wh')
FETCH = ('wh@GRAD', 'x@GRAD', 'h0@GRAD', 's@GRAD')


def build(fluid):
    main, startup = fluid.Program(), fluid.Program()
    L = fluid.layers
    with fluid.program_guard(main, startup):
        x, h0, s = _steps.dynamic_rnn_inputs(fluid, D, H, 1, 0)
        rnn = L.DynamicRNN()
        with rnn.block():
            xt, st, hp = _steps.dynamic_rnn_steps(rnn, x, h0, s)
            cp = rnn.memory(shape=[H], value=0.1)
            a = L.fc(xt, H, param_attr=fluid.ParamAttr(name='wx'),
                     bias_attr=fluid.ParamAttr(name='bx'))
            b = L.fc(hp, H, param_attr=fluid.ParamAttr(name='wh'), bias_attr=False)
            h = L.tanh(L.elementwise_add(a, b))
            c = L.elementwise_add(L.scale(cp, scale=0.5), L.elementwise_mul(h, st))
            rnn.update_memory(hp, h)
            rnn.update_memory(cp, c)
            rnn.output(h, c)
        hs, cs = rnn()
        last = L.sequence_pool(hs, 'last')
        loss = L.elementwise_add(L.reduce_mean(last), L.reduce_mean(L.elementwise_mul(cs, cs)))
        fluid.optimizer.SGD(learning_rate=0.3).minimize(loss)
    return main, startup, loss


def data(seed=9):
    rng = np.random.RandomState(seed)
    params = {'wx': (rng.randn(D, H) * 0.6).astype('float32'),
              'bx': (rng.randn(H) * 0.2).astype('float32'),
              'wh': (rng.randn(H, H) * 0.6).astype('float32')}
    batches = [{'x': rng.randn(sum(LENS), D).astype('float32'),
                'h0': rng.randn(B, H).astype('float32'),
                's': rng.randn(B, H).astype('float32')} for _ in range(STEPS)]
    return params, batches


def feed_of(fluid, batch):
    place = fluid.CPUPlace()
    return {'x': fluid.create_lod_tensor(batch['x'], [LENS], place),
            'h0': batch['h0'], 's': batch['s']}


def main():
    _steps.record(sys.modules[__name__])


if __name__ == '__main__':
    main()
