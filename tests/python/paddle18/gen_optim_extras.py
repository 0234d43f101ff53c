"""Writes optim_extras/expected.npz: Paddle 1.8.5's numbers for the optimizer wrappers,
initializers and clips of tests/python/test_optim_extras.py, which builds the same
programs with rill through `build(fluid, case)`. Each case trains a small MLP (fc tanh ->
fc, mean squared error; the recompute case has two more hidden layers) for ten seeded
batches from the same starting parameters and holds Paddle's loss at every step and the
parameters after the last; the averaging cases also hold the parameters and a held-out
loss under apply() and after restore(). Also Bilinear's values and TruncatedNormal's
sample statistics. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'optim_extras')
STEPS = 10
BATCH = 8

CASES = ('ema', 'ema_thres', 'model_average', 'lookahead', 'recompute', 'plain_deep',
         'dpsgd', 'error_clip', 'weight_norm', 'weight_norm_dim')
AVERAGING = ('ema', 'ema_thres', 'model_average')
BILINEAR = ((2, 1, 4, 4), (1, 2, 3, 3))


def params_of(case):
    if case in ('recompute', 'plain_deep'):
        return ('w1', 'b1', 'wm', 'bm', 'wn', 'bn', 'w2', 'b2')
    if case == 'weight_norm':
        return ('w1_g', 'w1_v', 'b1', 'w2', 'b2')
    if case == 'weight_norm_dim':
        return ('w1_g', 'w1_v', 'b1', 'w2_g', 'w2_v', 'b2')
    return ('w1', 'b1', 'w2', 'b2')


def _fc(fluid, x, size, w, b, act=None):
    return fluid.layers.fc(x, size, act=act, param_attr=w, bias_attr=fluid.ParamAttr(name=b))


def build(fluid, case):
    """(main, startup, loss, averager or None, test program)"""
    main, startup = fluid.Program(), fluid.Program()
    avg = None
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [BATCH, 4], 'float32')
        y = fluid.data('y', [BATCH, 1], 'float32')
        P = fluid.ParamAttr
        if case == 'weight_norm':
            w1, w2 = fluid.WeightNormParamAttr(dim=None, name='w1'), P(name='w2')
        elif case == 'weight_norm_dim':
            w1 = fluid.WeightNormParamAttr(dim=0, name='w1')
            w2 = fluid.WeightNormParamAttr(dim=1, name='w2')
        else:
            w1, w2 = P(name='w1'), P(name='w2')
        h = _fc(fluid, x, 6, w1, 'b1', 'tanh')
        ckpts = [h]
        if case in ('recompute', 'plain_deep'):
            h = _fc(fluid, h, 6, P(name='wm'), 'bm', 'tanh')
            h = _fc(fluid, h, 6, P(name='wn'), 'bn', 'relu')
            ckpts.append(h)
        out = _fc(fluid, h, 1, w2, 'b2')
        if case == 'error_clip':
            out.error_clip = fluid.clip.ErrorClipByValue(max=0.05, min=-0.03)
        loss = fluid.layers.reduce_mean(fluid.layers.square(out - y))
        test = main.clone(for_test=True)
        O = fluid.optimizer
        if case == 'lookahead':
            O.LookaheadOptimizer(O.SGD(0.1), alpha=0.5, k=3).minimize(loss)
        elif case == 'recompute':
            opt = O.RecomputeOptimizer(O.Momentum(0.1, 0.9))
            opt._set_checkpoints(ckpts)
            opt.minimize(loss)
        elif case == 'plain_deep':
            O.Momentum(0.1, 0.9).minimize(loss)
        elif case == 'dpsgd':
            O.Dpsgd(0.1, clip=0.5, batch_size=8.0, sigma=0.0).minimize(loss)
        elif case == 'model_average':
            O.Momentum(0.1, 0.9).minimize(loss)
            avg = O.ModelAverage(0.5, min_average_window=2, max_average_window=3)
        elif case in ('ema', 'ema_thres'):
            O.SGD(0.1).minimize(loss)
            thres = None
            if case == 'ema_thres':
                thres = fluid.layers.learning_rate_scheduler._decay_step_counter()
            avg = O.ExponentialMovingAverage(0.9, thres_steps=thres)
            avg.update()
        else:
            O.SGD(0.1).minimize(loss)
    return main, startup, loss, avg, test


def data():
    rng = np.random.RandomState(1886)
    params = {'w1': rng.randn(4, 6).astype('float32') * 0.5,
              'b1': rng.randn(6).astype('float32') * 0.1,
              'wm': rng.randn(6, 6).astype('float32') * 0.5,
              'bm': rng.randn(6).astype('float32') * 0.1,
              'wn': rng.randn(6, 6).astype('float32') * 0.5,
              'bn': rng.randn(6).astype('float32') * 0.1,
              'w2': rng.randn(6, 1).astype('float32') * 0.5,
              'b2': rng.randn(1).astype('float32') * 0.1}
    params['w1_v'] = params['w1']
    params['w2_v'] = params['w2']
    g = rng.uniform(0.5, 1.5, 4).astype('float32')
    batches = [(rng.randn(BATCH, 4).astype('float32'), rng.randn(BATCH, 1).astype('float32'))
               for _ in range(STEPS + 1)]  # the last is the held-out batch
    return params, g, batches


def start_values(case, params, g):
    vals = {k: params[k] for k in params_of(case) if k in params}
    if case == 'weight_norm':
        vals['w1_g'] = g[:1].reshape(1, 1)
    if case == 'weight_norm_dim':
        vals['w1_g'] = g.reshape(4, 1)
        vals['w2_g'] = g[:1].reshape(1, 1)
    if case == 'lookahead':  # the slow copies start as the parameters
        vals.update({k + '@SLOW': params[k] for k in params_of(case)})
    return vals


def run(fluid, case, params, g, batches):
    """Trains; returns {key: array} of what the test compares."""
    main, startup, loss, avg, test = build(fluid, case)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    out = {}
    names = params_of(case)
    with fluid.scope_guard(scope):
        exe.run(startup)
        for k, v in start_values(case, params, g).items():
            scope.find_var(k).get_tensor().set(v, fluid.CPUPlace())
        losses = []
        for x, y in batches[:STEPS]:
            l, = exe.run(main, feed={'x': x, 'y': y}, fetch_list=[loss])
            losses.append(float(np.asarray(l).reshape(-1)[0]))
        out['loss'] = np.array(losses, 'float32')
        for k in names:
            out['final_' + k] = np.array(scope.find_var(k).get_tensor())
        if avg is not None:
            x, y = batches[STEPS]
            with avg.apply(exe):
                l, = exe.run(test, feed={'x': x, 'y': y}, fetch_list=[loss.name])
                out['applied_loss'] = np.asarray(l).reshape(-1)
                for k in names:
                    out['applied_' + k] = np.array(scope.find_var(k).get_tensor())
            for k in names:
                out['restored_' + k] = np.array(scope.find_var(k).get_tensor())
    return out


def initializers(fluid):
    out = {}
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        for i, s in enumerate(BILINEAR):
            fluid.layers.create_parameter(list(s), 'float32', name='bil%d' % i,
                                          default_initializer=fluid.initializer.Bilinear())
        fluid.layers.create_parameter(
            [200, 100], 'float32', name='tn',
            default_initializer=fluid.initializer.TruncatedNormal(loc=1.5, scale=0.5, seed=7))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for i in range(len(BILINEAR)):
            out['bilinear_%d' % i] = np.array(scope.find_var('bil%d' % i).get_tensor())
        t = np.array(scope.find_var('tn').get_tensor()).astype('float64')
        out['truncated_stats'] = np.array([t.mean(), t.std(), t.min(), t.max()])
    return out


DPSGD = dict(lr=0.5, clip=1.0, batch_size=2.0, sigma=3.0)


def dpsgd_program(fluid):
    """A zero gradient: each dpsgd run moves the parameter by -lr * n / batch_size, n the
    run's noise draw."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        p = fluid.layers.create_parameter([4], 'float32', name='p',
                                          default_initializer=fluid.initializer.Constant(0.0))
        loss = fluid.layers.reduce_sum(p) * 0.0
        fluid.optimizer.Dpsgd(DPSGD['lr'], clip=DPSGD['clip'], batch_size=DPSGD['batch_size'],
                              sigma=DPSGD['sigma']).minimize(loss)
    return main, startup


def dpsgd_noise(fluid, runs, seeds=False):
    """The noise draws of `runs` dpsgd runs; with seeds, each run sets the op's seed to a
    new seeded-random value (Paddle seeds an unseeded run from the clock, so runs within a
    second repeat; rand_r's first draws from consecutive seeds are alike)."""
    seed_of = np.random.RandomState(1887).randint(1, 2**31 - 1, size=runs)
    main, startup = dpsgd_program(fluid)
    op, = [o for o in main.global_block().ops if o.type == 'dpsgd']
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    draws = []
    with fluid.scope_guard(scope):
        exe.run(startup)
        prev = np.zeros(4, 'float32')
        for k in range(runs):
            if seeds:
                op._set_attr('seed', int(seed_of[k]))
            exe.run(main)
            cur = np.array(scope.find_var('p').get_tensor())
            step = cur - prev
            assert np.all(step == step[0])  # one draw per run
            draws.append(-float(step[0]) * DPSGD['batch_size'] / DPSGD['lr'])
            prev = cur
    return np.array(draws)


def main():
    import paddle.fluid as fluid
    params, g, batches = data()
    out = {}
    for case in CASES:
        got = run(fluid, case, params, g, batches)
        for k, v in got.items():
            out['%s_%s' % (case, k)] = v
        print(case, got['loss'][0], got['loss'][-1])
    out.update(initializers(fluid))
    out['dpsgd_noise'] = dpsgd_noise(fluid, 1000, seeds=True).astype('float32')
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)


if __name__ == '__main__':
    main()
