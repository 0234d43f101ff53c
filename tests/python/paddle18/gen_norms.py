"""Writes norms/: Paddle 1.8.5's numbers for the normalisation layers trained through
append_backward (SGD), batch_norm in both layouts among them. `CASES` names each configuration and `build(fluid, case)` (shared
with tests/python/test_norms.py) makes its program: the layer on a fed x (x.stop_gradient
False), then a mean of squares against a fixed target weighted per element so every
gradient term matters. Recorded per case and step: the layer output, the loss, x@GRAD and
each parameter's gradient; and the trained parameters and moving statistics. Run with PaddlePaddle 1.8.5
(README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'norms')
STEPS = 3

# name -> (layer, x shape, keyword arguments)
CASES = {
    'gn_affine': ('group_norm', [2, 6, 3, 4], dict(groups=3)),
    'gn_one_group_eps': ('group_norm', [3, 4, 2, 5], dict(groups=1, epsilon=1e-3)),
    'gn_per_channel': ('group_norm', [2, 4, 2, 3], dict(groups=4)),
    'in_4d': ('instance_norm', [2, 3, 4, 5], {}),
    'in_3d_eps': ('instance_norm', [3, 4, 6], dict(epsilon=1e-3)),
    'in_5d': ('instance_norm', [2, 2, 2, 3, 2], {}),
    'lrn_default': ('lrn', [2, 7, 3, 3], {}),
    'lrn_wide': ('lrn', [2, 4, 2, 3], dict(n=3, k=2.0, alpha=0.3, beta=0.6)),
    'lrn_nhwc': ('lrn', [2, 3, 2, 6], dict(n=5, alpha=0.2, data_format='NHWC')),
    'bn_nchw': ('batch_norm', [4, 3, 2, 5], {}),
    'bn_nhwc': ('batch_norm', [4, 2, 5, 3], dict(data_layout='NHWC')),
    'bn_nhwc_3d': ('batch_norm', [3, 7, 4], dict(data_layout='NHWC', momentum=0.8,
                                                 epsilon=1e-3)),
    'bn_nhwc_global': ('batch_norm', [2, 3, 3, 5], dict(data_layout='NHWC',
                                                        use_global_stats=True)),
}


def params_of(case):
    """The trainable parameter names of a case."""
    layer = CASES[case][0]
    if layer in ('group_norm', 'instance_norm', 'batch_norm'):
        return ['%s_w' % case, '%s_b' % case]
    return []


def stats_of(case):
    """The names of a case's moving statistics (batch_norm's), recorded after training."""
    if CASES[case][0] == 'batch_norm':
        return ['%s_m' % case, '%s_v' % case]
    return []


def build(fluid, case):
    layer, shape, kw = CASES[case]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', shape, 'float32')
        x.stop_gradient = False
        if layer == 'group_norm':
            y = fluid.layers.group_norm(
                x, param_attr=fluid.ParamAttr(name='%s_w' % case),
                bias_attr=fluid.ParamAttr(name='%s_b' % case), **kw)
        elif layer == 'instance_norm':
            y = fluid.layers.instance_norm(
                x, param_attr=fluid.ParamAttr(name='%s_w' % case),
                bias_attr=fluid.ParamAttr(name='%s_b' % case), **kw)
        elif layer == 'batch_norm':
            y = fluid.layers.batch_norm(
                x, param_attr=fluid.ParamAttr(name='%s_w' % case),
                bias_attr=fluid.ParamAttr(name='%s_b' % case),
                moving_mean_name='%s_m' % case, moving_variance_name='%s_v' % case, **kw)
        elif layer == 'lrn':
            y = fluid.layers.lrn(x, **kw)
        w = fluid.data('w', shape, 'float32')
        loss = fluid.layers.mean(fluid.layers.square(y - 0.3) * w)
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main, startup, y, loss


def batches(case):
    shape = CASES[case][1]
    rng = np.random.RandomState(11)
    return [(rng.randn(*shape).astype('float32') * 2 + 0.5,
             rng.uniform(0.2, 2.0, shape).astype('float32')) for _ in range(STEPS)]


def fetch_names(case):
    return ['x@GRAD'] + ['%s@GRAD' % p for p in params_of(case)]


def main():
    import paddle.fluid as fluid
    out = {}
    exe = fluid.Executor(fluid.CPUPlace())
    for case in CASES:
        prog, startup, y, loss = build(fluid, case)
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            exe.run(startup)
            for step, (x, w) in enumerate(batches(case)):
                names = fetch_names(case)
                vals = exe.run(prog, feed={'x': x, 'w': w}, fetch_list=[loss, y] + names)
                for name, v in zip(['loss', 'out'] + names, vals):
                    out['%s/%s/%d' % (case, name, step)] = np.asarray(v)
            for p in params_of(case) + stats_of(case):
                out['%s/%s' % (case, p)] = np.array(scope.find_var(p).get_tensor())
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)
    print({k: v for k, v in out.items() if 'loss' in k})


if __name__ == '__main__':
    main()
