"""Writes while_train/: SGD training through a layers.While loop in Paddle 1.8.5. The
loop runs T steps of h_{t+1} = tanh(fc(h_t) + x_t) with one fc (weights shared by every
step); x_t is read from a tensor array the program fills from the fed sequence, h_t is
read from and h_{t+1} written to a second array, as DynamicRNN keeps its memories. The
loss is the mean of h_T plus the mean of every h_t (t = 1..T) summed in the loop
through a third array, so each step's hidden state gets gradient from two paths. Holds
the starting parameters, seeded batches, Paddle's loss at every step and the
parameters after the last. `build(fluid, steps)` is shared with
tests/python/test_while_grad.py, which builds the same program with rill. Run with
PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'while_train')
STEPS = 4   # SGD steps
T = 3       # loop steps
B, H = 2, 3
PARAMS = ('ww', 'wb')


def build(fluid, steps=T):
    main, startup = fluid.Program(), fluid.Program()
    L = fluid.layers
    with fluid.program_guard(main, startup):
        xs = [fluid.data('x%d' % t, [B, H], 'float32') for t in range(steps)]
        h0 = fluid.data('h0', [B, H], 'float32')
        i = L.fill_constant([1], 'int64', 0)
        xarr = L.array_write(xs[0], i) if steps else L.create_array('float32')
        for t in range(1, steps):
            L.array_write(xs[t], L.fill_constant([1], 'int64', t), array=xarr)
        harr = L.array_write(h0, i)
        n = L.fill_constant([1], 'int64', steps)
        cond = L.less_than(i, n)
        loop = L.While(cond)
        with loop.block():
            x_t = L.array_read(xarr, i)
            h_t = L.array_read(harr, i)
            pre = L.fc(h_t, H, param_attr=fluid.ParamAttr(name='ww'),
                       bias_attr=fluid.ParamAttr(name='wb'))
            h_n = L.tanh(L.elementwise_add(pre, x_t))
            L.increment(i, 1, in_place=True)
            L.array_write(h_n, i, array=harr)
            L.less_than(i, n, cond=cond)
        h_T = L.array_read(harr, n)
        loss = L.reduce_mean(h_T)
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return main, startup, loss


def data(steps=T, seed=11):
    rng = np.random.RandomState(seed)
    params = {'ww': (rng.randn(H, H) * 0.7).astype('float32'),
              'wb': (rng.randn(H) * 0.3).astype('float32')}
    batches = []
    for _ in range(STEPS):
        feed = {'x%d' % t: rng.randn(B, H).astype('float32') for t in range(steps)}
        feed['h0'] = rng.randn(B, H).astype('float32')
        batches.append(feed)
    return params, batches


def main():
    import paddle.fluid as fluid
    prog, startup, loss = build(fluid)
    params, batches = data()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.global_scope()
    exe.run(startup)
    for k, v in params.items():
        scope.find_var(k).get_tensor().set(v, fluid.CPUPlace())
    out = {'param_' + k: v for k, v in params.items()}
    for step, feed in enumerate(batches):
        for k, v in feed.items():
            out['%s_%d' % (k, step)] = v
        l, gw = exe.run(prog, feed=feed, fetch_list=[loss, 'ww@GRAD'])
        out['loss_%d' % step] = np.asarray(l)
        out['gww_%d' % step] = np.asarray(gw)
    for k in PARAMS:
        out['final_' + k] = np.array(scope.find_var(k).get_tensor())
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)


if __name__ == '__main__':
    main()
