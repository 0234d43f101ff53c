"""Writes losses/expected.npz: Paddle 1.8.5's numbers for the loss layers (log_loss,
huber_loss, smooth_l1, kldiv_loss, rank_loss, margin_rank_loss, label_smooth, mse_loss,
dice_loss, bpr_loss, sigmoid_focal_loss), l2_normalize, clip_by_norm, affine_channel and maxout, and the gradients of their inputs under a weighted sum, taken with
fluid.backward.append_backward; and for append_backward's (parameter, gradient) pairs and
fluid.gradients on a small network; and group_norm's outputs (forward only). `build*(fluid)` are shared with
tests/python/test_losses.py, which builds the same programs with rill. Run with
PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'losses')


def data():
    """The fed arrays, from a fixed seed."""
    rng = np.random.RandomState(18)
    f = lambda *s: rng.uniform(-1, 1, s).astype('float32')  # noqa: E731
    d = {
        'p': rng.uniform(0.05, 0.95, (6, 1)).astype('float32'),
        'pl': (rng.uniform(0, 1, (6, 1)) > 0.5).astype('float32'),
        'hx': f(6, 1), 'hy': f(6, 1),
        'sx': f(4, 3), 'sy': f(4, 3),
        'siw': rng.uniform(0.5, 1.5, (4, 3)).astype('float32'),
        'sow': rng.uniform(0.5, 1.5, (4, 3)).astype('float32'),
        'kx': np.log(rng.dirichlet(np.ones(4), 3)).astype('float32'),
        'kt': rng.dirichlet(np.ones(4), 3).astype('float32'),
        'rl': (rng.uniform(0, 1, (5, 1)) > 0.5).astype('float32'),
        'rleft': f(5, 1), 'rright': f(5, 1),
        'ml': np.where(rng.uniform(0, 1, (5, 1)) > 0.5, 1, -1).astype('float32'),
        'mleft': f(5, 1), 'mright': f(5, 1),
        'lsx': np.eye(5, dtype='float32')[rng.randint(0, 5, 4)],
        'lsp': rng.dirichlet(np.ones(5), 1).astype('float32'),
        'mx': f(4, 3), 'my': f(4, 3),
        'dx': rng.dirichlet(np.ones(4), 3).astype('float32'),
        'dl': rng.randint(0, 4, (3, 1)).astype('int64'),
        'nx': f(2, 3, 4),
        'cx': f(3, 4),
        'ax': f(2, 3, 2, 2), 'as': f(3), 'ab': f(3),
        'mo': f(2, 6, 2, 2), 'mo2': f(1, 2, 2, 4),
        'bx': f(4, 5), 'bl': rng.randint(0, 5, (4, 1)).astype('int64'),
        'fx': rng.uniform(-3, 3, (4, 3)).astype('float32'),
        'fl': np.array([[0], [2], [3], [-1]], 'int32'), 'fn': np.array([3], 'int32'),
    }
    d['kt'][0, 1] = 0.0  # a zero target contributes nothing
    d['sx'][1, 2] = d['sy'][1, 2] + 0.01  # inside smooth_l1's quadratic zone
    d['hx'][2, 0] = d['hy'][2, 0] + 0.1  # inside huber's quadratic zone
    return d


# (feed name, shape, dtype, gets a gradient)
INPUTS = [('p', [6, 1], 'float32', True), ('pl', [6, 1], 'float32', False),
          ('hx', [6, 1], 'float32', True), ('hy', [6, 1], 'float32', True),
          ('sx', [4, 3], 'float32', True), ('sy', [4, 3], 'float32', True),
          ('siw', [4, 3], 'float32', False), ('sow', [4, 3], 'float32', False),
          ('kx', [3, 4], 'float32', True), ('kt', [3, 4], 'float32', False),
          ('rl', [5, 1], 'float32', False), ('rleft', [5, 1], 'float32', True),
          ('rright', [5, 1], 'float32', True),
          ('ml', [5, 1], 'float32', False), ('mleft', [5, 1], 'float32', True),
          ('mright', [5, 1], 'float32', True),
          ('lsx', [4, 5], 'float32', False), ('lsp', [1, 5], 'float32', False),
          ('mx', [4, 3], 'float32', True), ('my', [4, 3], 'float32', True),
          ('dx', [3, 4], 'float32', True), ('dl', [3, 1], 'int64', False),
          ('nx', [2, 3, 4], 'float32', True), ('cx', [3, 4], 'float32', False),
          ('ax', [2, 3, 2, 2], 'float32', True), ('as', [3], 'float32', True),
          ('ab', [3], 'float32', True), ('mo', [2, 6, 2, 2], 'float32', True),
          ('mo2', [1, 2, 2, 4], 'float32', True), ('bx', [4, 5], 'float32', True),
          ('bl', [4, 1], 'int64', False), ('fx', [4, 3], 'float32', True),
          ('fl', [4, 1], 'int32', False), ('fn', [1], 'int32', False)]


def build(fluid):
    """The loss layers, each weighted by a fixed factor and summed into one loss whose
    backward pass append_backward appends. Returns (main, startup, outputs, grads)."""
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        v = {}
        for name, shape, dtype, grad in INPUTS:
            v[name] = fluid.data(name, shape, dtype)
            v[name].stop_gradient = not grad
        outs = [
            L.log_loss(v['p'], v['pl'], epsilon=1e-4),
            L.huber_loss(v['hx'], v['hy'], delta=0.5),
            L.smooth_l1(v['sx'], v['sy'], v['siw'], v['sow'], sigma=2.0),
            L.smooth_l1(v['sx'], v['sy']),
            L.kldiv_loss(v['kx'], v['kt'], reduction='none'),
            L.kldiv_loss(v['kx'], v['kt'], reduction='mean'),
            L.kldiv_loss(v['kx'], v['kt'], reduction='sum'),
            L.kldiv_loss(v['kx'], v['kt'], reduction='batchmean'),
            L.rank_loss(v['rl'], v['rleft'], v['rright']),
            L.margin_rank_loss(v['ml'], v['mleft'], v['mright'], margin=0.1),
            L.label_smooth(v['lsx'], epsilon=0.1),
            L.label_smooth(v['lsx'], prior_dist=v['lsp'], epsilon=0.2),
            L.mse_loss(v['mx'], v['my']),
            L.dice_loss(v['dx'], v['dl']),
            L.l2_normalize(v['nx'], axis=1),
            L.l2_normalize(v['nx'], axis=-1, epsilon=1e-4),
            L.clip_by_norm(v['cx'], 1.0),
            L.clip_by_norm(v['cx'], 100.0),
            L.affine_channel(v['ax'], v['as'], v['ab'], act='relu'),
            L.maxout(v['mo'], 3),
            L.maxout(v['mo2'], 2, axis=-1),
            L.bpr_loss(v['bx'], v['bl']),
            L.sigmoid_focal_loss(v['fx'], v['fl'], v['fn'], gamma=1.5, alpha=0.3),
        ]
        terms = [L.reduce_sum(L.scale(o, scale=0.5 + 0.25 * k)) for k, o in enumerate(outs)]
        total = L.sums(terms)
        fluid.backward.append_backward(total)
        grads = [main.global_block().var(n + '@GRAD') for n, _, _, g in INPUTS if g]
    return main, startup, outs, grads


W1 = np.linspace(-0.6, 0.7, 6, dtype='float32').reshape(3, 2)
W2 = np.array([[0.4], [-0.9]], 'float32')


def build_backward(fluid, parameter_list=None):
    """fc -> tanh -> fc -> mse; append_backward's pairs (names) and the loss."""
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [4, 3], 'float32')
        y = fluid.data('y', [4, 1], 'float32')
        h = L.fc(x, 2, act='tanh',
                 param_attr=fluid.ParamAttr('w1', initializer=fluid.initializer.NumpyArrayInitializer(W1)),
                 bias_attr=fluid.ParamAttr('b1', initializer=fluid.initializer.Constant(0.1)))
        o = L.fc(h, 1, param_attr=fluid.ParamAttr(
            'w2', initializer=fluid.initializer.NumpyArrayInitializer(W2)), bias_attr=False)
        loss = L.mean(L.square_error_cost(o, y))
        pairs = fluid.backward.append_backward(loss, parameter_list=parameter_list)
    return main, startup, loss, pairs


def build_gradients(fluid):
    """fluid.gradients of sum(tanh(x) * x) + sum(x @ w) with respect to x and w."""
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('gx', [3, 4], 'float32')
        x.stop_gradient = False
        w = fluid.data('gw', [4, 2], 'float32')
        w.stop_gradient = False
        z = fluid.data('gz', [3, 4], 'float32')  # stop_gradient: no gradient
        y = L.reduce_sum(L.elementwise_mul(L.tanh(x), x)) + L.reduce_sum(L.matmul(x, w)) + \
            L.reduce_sum(z)
        gs = fluid.gradients([y], [x, w, z])
    return main, startup, y, gs


GN_SCALE = np.linspace(0.5, 1.5, 6, dtype='float32')
GN_BIAS = np.linspace(-0.2, 0.3, 6, dtype='float32')


def build_group_norm(fluid):
    """group_norm without parameters, with both (NCHW, relu) and NHWC; forward only."""
    L = fluid.layers
    init = fluid.initializer.NumpyArrayInitializer
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('gnx', [2, 6, 2, 3], 'float32')
        xh = fluid.data('gnh', [2, 2, 3, 6], 'float32')
        outs = [L.group_norm(x, 3),
                L.group_norm(x, 2, epsilon=1e-3, act='relu',
                             param_attr=fluid.ParamAttr('gn_s', initializer=init(GN_SCALE)),
                             bias_attr=fluid.ParamAttr('gn_b', initializer=init(GN_BIAS))),
                L.group_norm(xh, 3, data_layout='NHWC')]
    return main, startup, outs


def backward_data():
    rng = np.random.RandomState(7)
    return {'x': rng.uniform(-1, 1, (4, 3)).astype('float32'),
            'y': rng.uniform(-1, 1, (4, 1)).astype('float32'),
            'gx': rng.uniform(-1, 1, (3, 4)).astype('float32'),
            'gw': rng.uniform(-1, 1, (4, 2)).astype('float32'),
            'gz': rng.uniform(-1, 1, (3, 4)).astype('float32'),
            'gnx': rng.uniform(-1, 1, (2, 6, 2, 3)).astype('float32'),
            'gnh': rng.uniform(-1, 1, (2, 2, 3, 6)).astype('float32')}


def main_():
    import paddle.fluid as fluid
    exe = fluid.Executor(fluid.CPUPlace())
    ref = {}
    d = data()
    main, startup, outs, grads = build(fluid)
    print([op.type for op in main.global_block().ops])
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        vals = exe.run(main, feed=d, fetch_list=outs + grads)
    for i, val in enumerate(vals):
        ref['loss_%d' % i] = np.asarray(val)
    bd = backward_data()
    for tag, plist in (('all', None), ('w1', ['w1'])):
        main, startup, loss, pairs = build_backward(fluid, plist)
        ref['pairs_' + tag] = np.array([[p.name, g.name] for p, g in pairs])
        with fluid.scope_guard(fluid.Scope()):
            exe.run(startup)
            vals = exe.run(main, feed={'x': bd['x'], 'y': bd['y']},
                           fetch_list=[loss] + [g for _, g in pairs])
        for i, val in enumerate(vals):
            ref['bw_%s_%d' % (tag, i)] = np.asarray(val)
    main, startup, y, gs = build_gradients(fluid)
    ref['gradients_none'] = np.array([g is None for g in gs])
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        vals = exe.run(main, feed={k: bd[k] for k in ('gx', 'gw', 'gz')},
                       fetch_list=[y] + [g for g in gs if g is not None])
    for i, val in enumerate(vals):
        ref['gradients_%d' % i] = np.asarray(val)
    main, startup, outs = build_group_norm(fluid)
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        vals = exe.run(main, feed={k: bd[k] for k in ('gnx', 'gnh')}, fetch_list=outs)
    for i, val in enumerate(vals):
        ref['group_norm_%d' % i] = np.asarray(val)
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **ref)
    for k in sorted(ref):
        print(k, ref[k].shape, ref[k].ravel()[:6])


if __name__ == '__main__':
    main_()
