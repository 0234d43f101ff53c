"""Writes fluid_misc/: Paddle 1.8.5's numbers for tests/python/test_fluid_misc_api.py.

- inplace_abn (identity, leaky_relu, elu; 4-D and 3-D, NCHW) trained STEPS SGD steps: per
  step the layer output, the loss and x@GRAD, then the trained scale, bias and moving
  statistics;
- gradients with two targets, with and without a target gradient (`build_gradients`);
- ParallelExecutor over two CPU places fed a list of per-place dicts, STEPS SGD steps:
  the trained parameters;
- tensor.bin: one tensor written by a `save` op, for layers.load.

The builders take the `fluid` module, so the test builds the same programs with rill.
Run with PaddlePaddle 1.8.5 (README.md): CPU_NUM=2 is set here for the places."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fluid_misc')
STEPS = 3

ABN_CASES = {
    'identity': (None, 1.0, 'NCHW', [2, 3, 2, 2]),
    'leaky': ('leaky_relu', 0.1, 'NCHW', [3, 2, 2, 3]),
    'elu': ('elu', 0.7, 'NCHW', [2, 4, 3, 1]),
    'elu_3d': ('elu', 1.0, 'NCHW', [4, 3, 5]),
}


def abn_batches(case):
    shape = ABN_CASES[case][3]
    rs = np.random.RandomState(len(case) * 7 + 1)
    return [(rs.randn(*shape) * 1.5 + 0.4).astype('float32') for _ in range(STEPS)]


def build_abn(fluid, case):
    act, alpha, layout, shape = ABN_CASES[case]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', shape, 'float32')
        x.stop_gradient = False
        y = fluid.layers.inplace_abn(
            x, act=act, act_alpha=alpha, data_layout=layout,
            param_attr=fluid.ParamAttr(name='abn_w'), bias_attr=fluid.ParamAttr(name='abn_b'),
            moving_mean_name='abn_m', moving_variance_name='abn_v')
        # y is x itself in Paddle (in place): copy it out before the loss reads it
        out = fluid.layers.scale(y, 1.0)
        w = fluid.layers.assign(np.linspace(0.5, 1.5, int(np.prod(shape)))
                                .reshape(shape).astype('float32'))
        loss = fluid.layers.mean(fluid.layers.square(out - 0.2) * w)
        fluid.optimizer.SGD(learning_rate=0.2).minimize(loss)
    return main, startup, out, loss


def build_gradients(fluid, seeded):
    """y1 = x * x (a [2, 3] target, seeded with g when `seeded`) and y2 = sum(x * x * x)
    (seeded with ones), neither on the other's path (Paddle 1.8.5 loses a seed where one
    target feeds another): the programs and the gradient of x."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [2, 3], 'float32')
        x.stop_gradient = False
        g = fluid.data('g', [2, 3], 'float32')
        y1 = fluid.layers.elementwise_mul(x, x)
        cube = fluid.layers.elementwise_mul(fluid.layers.elementwise_mul(x, x), x)
        y2 = fluid.layers.reduce_sum(cube)
        dx, = fluid.gradients([y1, y2], [x], target_gradients=[g, None] if seeded else None)
    return main, startup, dx


GRAD_X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], 'float32')
GRAD_G = np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]], 'float32')


def build_parallel(fluid):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [-1, 4], 'float32')
        label = fluid.data('label', [-1, 1], 'float32')
        h = fluid.layers.fc(x, 5, act='tanh', param_attr=fluid.ParamAttr(name='pe_w1'),
                            bias_attr=fluid.ParamAttr(name='pe_b1'))
        pred = fluid.layers.fc(h, 1, param_attr=fluid.ParamAttr(name='pe_w2'),
                               bias_attr=fluid.ParamAttr(name='pe_b2'))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, label))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main, startup, loss


PE_PARAMS = ['pe_w1', 'pe_b1', 'pe_w2', 'pe_b2']


def parallel_feeds():
    """STEPS feeds, each a list of two per-place dicts of 3 rows."""
    rs = np.random.RandomState(5)
    return [[{'x': rs.randn(3, 4).astype('float32'), 'label': rs.randn(3, 1).astype('float32')}
             for _ in range(2)] for _ in range(STEPS)]


def parallel_start():
    """Starting parameters, set in both frameworks (their initializers draw differently)."""
    rs = np.random.RandomState(9)
    return {'pe_w1': (rs.randn(4, 5) * 0.5).astype('float32'),
            'pe_b1': (rs.randn(5) * 0.1).astype('float32'),
            'pe_w2': (rs.randn(5, 1) * 0.5).astype('float32'),
            'pe_b2': np.array([0.05], 'float32')}


TENSOR = (np.arange(12, dtype='float32').reshape(3, 4) - 4.5) / 3.0


def main():
    os.environ['CPU_NUM'] = '2'
    import paddle.fluid as fluid
    os.makedirs(OUT, exist_ok=True)
    rec = {}
    exe = fluid.Executor(fluid.CPUPlace())
    for case in ABN_CASES:
        main_p, startup, out, loss = build_abn(fluid, case)
        with fluid.scope_guard(fluid.Scope()):
            exe.run(startup)
            for s, xb in enumerate(abn_batches(case)):
                o, l, gx = exe.run(main_p, feed={'x': xb}, fetch_list=[out, loss, 'x@GRAD'])
                rec['abn_%s_out_%d' % (case, s)] = np.array(o)
                rec['abn_%s_loss_%d' % (case, s)] = np.array(l)
                rec['abn_%s_xgrad_%d' % (case, s)] = np.array(gx)
            for p in ('abn_w', 'abn_b', 'abn_m', 'abn_v'):
                rec['abn_%s_%s' % (case, p)] = np.array(fluid.global_scope().find_var(p)
                                                        .get_tensor())
    for seeded in (False, True):
        main_p, startup, dx = build_gradients(fluid, seeded)
        with fluid.scope_guard(fluid.Scope()):
            exe.run(startup)
            rec['gradients_dx_%d' % seeded], = exe.run(
                main_p, feed={'x': GRAD_X, 'g': GRAD_G}, fetch_list=[dx])
    main_p, startup, loss = build_parallel(fluid)
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        for k, v in parallel_start().items():
            fluid.global_scope().find_var(k).get_tensor().set(v, fluid.CPUPlace())
        pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main_p)
        assert pe.device_count == 2
        for s, feed in enumerate(parallel_feeds()):
            l, = pe.run(fetch_list=[loss.name], feed=feed)
            rec['pe_loss_%d' % s] = np.array(l)
        for p in PE_PARAMS:
            rec['pe_' + p] = np.array(fluid.global_scope().find_var(p).get_tensor())
    main_p, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main_p, startup):
        t = fluid.layers.assign(TENSOR)
        main_p.global_block().append_op(type='save', inputs={'X': [t]}, outputs={},
                                        attrs={'file_path': os.path.join(OUT, 'tensor.bin')})
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        exe.run(main_p)
    np.savez(os.path.join(OUT, 'expected.npz'), **rec)
    print('wrote', len(rec), 'arrays')


if __name__ == '__main__':
    main()
