"""Writes ifelse_switch/: Paddle 1.8.5's numbers for IfElse and Switch.

- `build_ifelse(fluid)`: rows of x whose label is negative go through an fc with relu
  (parameters wt, bt), the others through an fc with tanh (wf, bf); the merged rows go
  through a shared fc (wo, bo) to a mean squared error, trained with SGD. Recorded: the
  loss, the merged output and x@GRAD at every step, and the trained parameters. Step 2's
  labels are all positive, so the true block has no rows and does not run.
- `build_switch(fluid)`: a learning rate picked by a three-case Switch and a default
  from a fed step, and a fed vector scaled in the picked case; recorded for steps that
  hit every case.

`build_*` are shared with tests/python/test_ifelse_switch.py, which builds the same
programs with rill. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'ifelse_switch')
STEPS = 5
PARAMS = ('wt', 'bt', 'wf', 'bf', 'wo', 'bo')
SWITCH_STEPS = (0.0, 3.0, 5.0, 9.0, 10.0, 40.0)


def build_ifelse(fluid):
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 3], 'float32')
        x.stop_gradient = False
        y = fluid.data('y', [None, 1], 'float32')
        cond = L.less_than(y, L.fill_constant([1], 'float32', 0.0))
        ie = L.IfElse(cond)
        with ie.true_block():
            d = ie.input(x)
            ie.output(L.fc(d, 4, act='relu', param_attr=fluid.ParamAttr(name='wt'),
                           bias_attr=fluid.ParamAttr(name='bt')))
        with ie.false_block():
            d = ie.input(x)
            ie.output(L.fc(d, 4, act='tanh', param_attr=fluid.ParamAttr(name='wf'),
                           bias_attr=fluid.ParamAttr(name='bf')))
        merged = ie()[0]
        pred = L.fc(merged, 1, param_attr=fluid.ParamAttr(name='wo'),
                    bias_attr=fluid.ParamAttr(name='bo'))
        loss = L.mean(L.square(pred - y))
        fluid.optimizer.SGD(learning_rate=0.2).minimize(loss)
    return main, startup, merged, loss


def build_switch(fluid):
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        step = fluid.data('step', [1], 'float32')
        v = fluid.data('v', [3], 'float32')
        lr = L.fill_constant([1], 'float32', -1.0)
        scaled = L.fill_constant([3], 'float32', 0.0)
        b1, b2, b3 = (L.fill_constant([1], 'float32', b) for b in (4.0, 9.0, 20.0))
        with L.Switch() as switch:
            with switch.case(L.less_than(step, b1)):
                L.assign(L.fill_constant([1], 'float32', 0.1), lr)
                L.assign(L.scale(v, 2.0), scaled)
            with switch.case(L.less_than(step, b2)):
                L.assign(L.fill_constant([1], 'float32', 0.05), lr)
                L.assign(L.scale(v, 3.0, bias=1.0), scaled)
            with switch.case(L.less_than(step, b3)):
                L.assign(L.fill_constant([1], 'float32', 0.01), lr)
            with switch.default():
                L.assign(L.fill_constant([1], 'float32', 0.001), lr)
                L.assign(L.exp(v), scaled)
    return main, startup, lr, scaled


def data():
    rng = np.random.RandomState(11)
    params = {'wt': rng.randn(3, 4), 'bt': rng.randn(4), 'wf': rng.randn(3, 4),
              'bf': rng.randn(4), 'wo': rng.randn(4, 1), 'bo': rng.randn(1)}
    params = {k: v.astype('float32') * 0.5 for k, v in params.items()}
    batches = []
    for step in range(STEPS):
        x = rng.randn(6, 3).astype('float32')
        y = rng.randn(6, 1).astype('float32')
        if step == 2:
            y = np.abs(y) + 0.1
        batches.append((x, y))
    return params, batches


def main():
    import paddle.fluid as fluid
    out = {}
    prog, startup, merged, loss = build_ifelse(fluid)
    params, batches = data()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for k, v in params.items():
            scope.find_var(k).get_tensor().set(v, fluid.CPUPlace())
            out['param_' + k] = v
        for step, (x, y) in enumerate(batches):
            out['x_%d' % step], out['y_%d' % step] = x, y
            l, m, g = exe.run(prog, feed={'x': x, 'y': y}, fetch_list=[loss, merged, 'x@GRAD'])
            out['loss_%d' % step], out['merged_%d' % step] = np.asarray(l), np.asarray(m)
            out['xgrad_%d' % step] = np.asarray(g)
        for k in PARAMS:
            out['final_' + k] = np.array(scope.find_var(k).get_tensor())
    prog, startup, lr, scaled = build_switch(fluid)
    v = np.array([0.5, -1.0, 2.0], 'float32')
    out['switch_v'] = v
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        for i, s in enumerate(SWITCH_STEPS):
            a, b = exe.run(prog, feed={'step': np.array([s], 'float32'), 'v': v},
                           fetch_list=[lr, scaled])
            out['switch_lr_%d' % i], out['switch_scaled_%d' % i] = np.asarray(a), np.asarray(b)
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)
    print({k: out[k] for k in out if k.startswith('loss') or k.startswith('switch_lr')})


if __name__ == '__main__':
    main()
