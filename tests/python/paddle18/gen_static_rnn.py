"""Writes static_rnn/: SGD training through a StaticRNN in Paddle 1.8.5. Each of T steps
reads row t of x, h_t = tanh(fc(x_t) + fc(h_{t-1}, no bias)) with h_{-1} = h0 (fed), and
a second state c_t = 0.5 c_{t-1} + h_t whose boot value is a constant batch-sized
tensor; the rnn outputs h, c and the unused fc(x_t). The loss is mean(h) + mean(c * c).
Holds the starting parameters, seeded batches, Paddle's loss, the gradients of wh, x and
h0 at every step and the parameters after the last; and a forward StaticRNN saved with
save_inference_model, with an input and Paddle's output. `build(fluid)` is shared with
tests/python/test_static_rnn.py, which builds the same program with rill. Run with
PaddlePaddle 1.8.5 (README.md)."""
import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'static_rnn')
STEPS = 4   # SGD steps
T, B, D, H = 4, 3, 2, 3
PARAMS = ('wx', 'bx', 'wh')
FETCH = ('wh@GRAD', 'x@GRAD', 'h0@GRAD')


def build(fluid):
    main, startup = fluid.Program(), fluid.Program()
    L = fluid.layers
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [T, B, D], 'float32')
        h0 = fluid.data('h0', [B, H], 'float32')
        x.stop_gradient = False
        h0.stop_gradient = False
        rnn = L.StaticRNN()
        with rnn.step():
            xt = rnn.step_input(x)
            hp = rnn.memory(init=h0)
            cp = rnn.memory(shape=[-1, H], batch_ref=xt, init_value=0.25)
            a = L.fc(xt, H, param_attr=fluid.ParamAttr(name='wx'),
                     bias_attr=fluid.ParamAttr(name='bx'))
            b = L.fc(hp, H, param_attr=fluid.ParamAttr(name='wh'), bias_attr=False)
            h = L.tanh(L.elementwise_add(a, b))
            c = L.elementwise_add(L.scale(cp, scale=0.5), h)
            rnn.update_memory(hp, h)
            rnn.update_memory(cp, c)
            rnn.step_output(h)
            rnn.output(c, a)
        hs, cs, _ = rnn()
        loss = L.elementwise_add(L.reduce_mean(hs), L.reduce_mean(L.elementwise_mul(cs, cs)))
        fluid.optimizer.SGD(learning_rate=0.3).minimize(loss)
    return main, startup, loss


def data(seed=5):
    rng = np.random.RandomState(seed)
    params = {'wx': (rng.randn(D, H) * 0.6).astype('float32'),
              'bx': (rng.randn(H) * 0.2).astype('float32'),
              'wh': (rng.randn(H, H) * 0.6).astype('float32')}
    batches = [{'x': rng.randn(T, B, D).astype('float32'),
                'h0': rng.randn(B, H).astype('float32')} for _ in range(STEPS)]
    return params, batches


def feed_of(fluid, batch):
    return batch


def build_inference(fluid):
    """A forward StaticRNN (fc over [x_t, h_{t-1}] with tanh, one memory fed as h0) for
    save_inference_model: its parameters are `iw0`, `iw1` and `ib`."""
    main, startup = fluid.Program(), fluid.Program()
    L = fluid.layers
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [T, B, D], 'float32')
        h0 = fluid.data('h0', [B, H], 'float32')
        rnn = L.StaticRNN()
        with rnn.step():
            xt = rnn.step_input(x)
            hp = rnn.memory(init=h0)
            h = L.fc([xt, hp], H, act='tanh',
                     param_attr=[fluid.ParamAttr(name='iw0'), fluid.ParamAttr(name='iw1')],
                     bias_attr=fluid.ParamAttr(name='ib'))
            rnn.update_memory(hp, h)
            rnn.step_output(h)
        out = rnn()
    return main, startup, out


def save_inference():
    """Writes static_rnn/model/ (Paddle's save_inference_model of build_inference) and
    static_rnn/infer.npz (a seeded input and Paddle's output)."""
    import paddle.fluid as fluid
    main, startup, out = build_inference(fluid)
    rng = np.random.RandomState(17)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for name, shape in (('iw0', (D, H)), ('iw1', (H, H)), ('ib', (H,))):
            scope.find_var(name).get_tensor().set(
                (rng.randn(*shape) * 0.5).astype('float32'), fluid.CPUPlace())
        feed = {'x': rng.randn(T, B, D).astype('float32'),
                'h0': rng.randn(B, H).astype('float32')}
        o, = exe.run(main, feed=feed, fetch_list=[out])
        fluid.io.save_inference_model(os.path.join(OUT, 'model'), ['x', 'h0'], [out], exe,
                                      main_program=main)
    np.savez(os.path.join(OUT, 'infer.npz'), out=o, **feed)


def main():
    import _steps
    _steps.record(sys.modules[__name__])
    save_inference()


if __name__ == '__main__':
    main()
