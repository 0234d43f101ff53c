"""Writes small_layers/: Paddle 1.8.5's numbers for layers built on existing ops:
layers.case and layers.switch_case (every branch taken, defaults given and implied),
nets.glu, layers.mul, layers.sum, layers.zeros_like, ones / zeros and
create_global_var; and (`build_counter`) fluid.one_hot, layers.rank and two
autoincreased_step_counter over three runs. `build*(fluid)` are shared with
tests/python/test_small_layers.py, which builds the same programs with rill. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'small_layers')
FEEDS = [(-1.0, 0), (0.5, 1), (2.0, 2), (5.0, 7)]


def build(fluid):
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        s = fluid.data('s', [1], 'float32')
        i = fluid.data('i', [1], 'int32')
        x = fluid.data('x', [3, 4], 'float32')
        y = fluid.data('y', [4, 2, 1], 'float32')

        def const(v):
            return lambda: L.fill_constant([2], 'float32', v)

        zero, one = L.zeros([1], 'float32'), L.ones([1], 'float32')
        c1 = L.case([(L.less_than(s, zero), const(10.0)), (L.less_than(s, one), const(20.0))],
                    default=const(30.0))
        c2 = L.case([(L.less_than(s, zero), const(1.0)), (L.less_than(s, one), const(2.0)),
                     (L.less_than(s, L.fill_constant([1], 'float32', 3.0)), const(3.0))])
        w1 = L.switch_case(i, {0: const(100.0), 2: const(300.0)}, default=const(-1.0))
        w2 = L.switch_case(i, [const(7.0), const(8.0), const(9.0)])
        g = fluid.nets.glu(x, dim=1)
        m = L.mul(x, y, x_num_col_dims=1, y_num_col_dims=1)
        sm = L.sum([x, L.scale(x, 2.0), L.zeros_like(x)])
        gv = L.create_global_var([2, 2], 1.5, 'float32', persistable=True, name='gvar')
        gv2 = L.elementwise_add(gv, L.ones([2, 2], 'float32'))
    return main, startup, [c1, c2, w1, w2, g, m, sm, gv2]


def build_counter(fluid):
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.data('ids', [None], 'int64')
        ids2 = fluid.data('ids2', [None, 2], 'int32')
        a = L.autoincreased_step_counter()
        b = L.autoincreased_step_counter('my_counter', begin=5, step=2)
        fetch = [fluid.one_hot(ids, 5), fluid.one_hot(ids2, 4), L.rank(ids2), a, b,
                 L.cast(a, 'float32') * 0.5]
    return main, startup, fetch


COUNTER_FEED = {'ids': np.array([3, 0, 4], 'int64'),
                'ids2': np.array([[1, 2], [3, 0]], 'int32')}


def data():
    rng = np.random.RandomState(4)
    return rng.randn(3, 4).astype('float32'), rng.randn(4, 2, 1).astype('float32')


def main():
    import paddle.fluid as fluid
    prog, startup, fetch = build(fluid)
    x, y = data()
    out = {'x': x, 'y': y}
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    for k, (s, i) in enumerate(FEEDS):
        vals = exe.run(prog, feed={'s': np.array([s], 'float32'), 'i': np.array([i], 'int32'),
                                   'x': x, 'y': y}, fetch_list=fetch)
        for j, v in enumerate(vals):
            out['%d_%d' % (k, j)] = np.asarray(v)
    prog, startup, fetch = build_counter(fluid)
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        for r in range(3):
            for j, v in enumerate(exe.run(prog, feed=COUNTER_FEED, fetch_list=fetch)):
                out['counter_%d_%d' % (r, j)] = np.asarray(v)
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)
    print({k: v.ravel()[:2] for k, v in out.items() if k[0].isdigit() and int(k.split('_')[1]) < 4})


if __name__ == '__main__':
    main()
