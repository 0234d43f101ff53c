"""Writes random/: Paddle 1.8.5's numbers for its seeded random ops and initializers, and
a training run that starts from a seeded startup program. `build_ops(fluid)` and
`build_training(fluid)` (shared with tests/python/test_paddle_random.py) build:

- every random op with a nonzero seed, in float32 and float64 where the op takes both:
  uniform_random (a diagonal too), gaussian_random, their batch_size_like forms,
  truncated_gaussian_random, randint, randperm, sampling_id and dropout (a fixed seed,
  a negative one, a Seed input), and the initializers Uniform, Normal, TruncatedNormal,
  Xavier and MSRA (uniform and normal forms) on parameters of several shapes;
- an MLP with dropout whose startup program has `random_seed` set, trained five SGD steps
  on seeded batches: its starting parameters, losses and trained parameters.

Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'random')
STEPS = 5


def build_ops(fluid):
    """(main, startup, {name: fetched variable}, [parameter names], feed)."""
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    f = {}
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 5], 'float32')
        f['uniform'] = L.uniform_random([40, 25], seed=7, min=-0.3, max=0.7)
        f['uniform_negative_seed'] = L.uniform_random([50], seed=-5)
        f['gaussian'] = L.gaussian_random([1001], seed=11, mean=0.5, std=2.0)
        f['gaussian_fp64'] = L.gaussian_random([501], seed=11, mean=0.5, std=2.0,
                                               dtype='float64')
        f['uniform_bsl'] = L.uniform_random_batch_size_like(x, [-1, 7], seed=3, min=-1.5,
                                                            max=0.5)
        f['gaussian_bsl'] = L.gaussian_random_batch_size_like(x, [-1, 7], seed=3, mean=1.0,
                                                              std=0.5)
        f['randint'] = L.randint(-3, 10, [300], seed=5)
        f['randint_wide'] = L.randint(0, 2 ** 31 - 1, [50], seed=6)
        f['randperm'] = L.randperm(60, seed=5)
        f['sampling_id'] = L.sampling_id(L.softmax(x), seed=9)
        f['dropout'] = L.dropout(L.fill_constant([500], 'float32', 1.0), 0.3, seed=11)
        f['dropout_upscale'] = L.dropout(L.fill_constant([300], 'float32', 2.0), 0.6,
                                         seed=-3, dropout_implementation='upscale_in_train')
        block = main.global_block()
        for name, dtype, shape, attrs in (
                ('uniform_fp64', 'float64', [301], {'min': -2.0, 'max': 5.0, 'seed': 123456789}),
                ('uniform_diag', 'float32', [6, 6], {'min': -1.0, 'max': 1.0, 'seed': 4,
                                                     'diag_num': 6, 'diag_step': 6,
                                                     'diag_val': 1.0})):
            v = block.create_var(name=name, dtype=dtype, shape=shape)
            code = 6 if dtype == 'float64' else 5
            block.append_op(type='uniform_random', outputs={'Out': v},
                            attrs=dict(attrs, shape=shape, dtype=code))
            f[name] = v
        seed = L.fill_constant([1], 'int32', -3)
        out = block.create_var(name='dropout_seeded', dtype='float32', shape=[200])
        mask = block.create_var(name='dropout_seeded_mask', dtype='uint8', shape=[200])
        block.append_op(type='dropout',
                        inputs={'X': L.fill_constant([200], 'float32', 1.0), 'Seed': seed},
                        outputs={'Out': out, 'Mask': mask},
                        attrs={'dropout_prob': 0.6, 'fix_seed': True, 'seed': 5,
                               'is_test': False})
        f['dropout_seeded_mask'] = mask
        init = fluid.initializer
        params = []
        for name, shape, initializer in (
                ('p_uniform', [500], init.Uniform(-0.2, 0.4, seed=19)),
                ('p_normal', [500], init.Normal(0.1, 0.3, seed=19)),
                ('p_truncated', [1000], init.TruncatedNormal(seed=7)),
                ('p_truncated_loc', [1000], init.TruncatedNormal(loc=1.0, scale=2.0, seed=9)),
                ('p_xavier', [30, 40], init.Xavier(seed=13)),
                ('p_xavier_normal', [30, 40], init.Xavier(uniform=False, seed=13)),
                ('p_msra', [8, 3, 3, 3], init.MSRA(seed=17)),
                ('p_msra_normal', [8, 3, 3, 3], init.MSRA(uniform=False, seed=17))):
            L.create_parameter(shape, 'float32', name=name, default_initializer=initializer)
            params.append(name)
    feed = {'x': np.random.RandomState(1).rand(4, 5).astype('float32')}
    return main, startup, f, params, feed


def build_training(fluid):
    """(main, startup, loss): an MLP with dropout, every parameter initialized from the
    startup program's random_seed."""
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 90
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data('x', [None, 12], 'float32')
        label = fluid.data('label', [None, 1], 'int64')
        h = L.fc(x, 16, act='relu')
        h = L.dropout(h, 0.25)
        h = L.fc(h, 16, act='tanh', param_attr=fluid.ParamAttr(
            initializer=fluid.initializer.TruncatedNormal(scale=0.5)))
        logits = L.fc(h, 4, param_attr=fluid.ParamAttr(
            initializer=fluid.initializer.Normal(scale=0.3)))
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.SGD(0.5).minimize(loss)
    return main, startup, loss


def batches():
    rng = np.random.RandomState(3)
    return [{'x': rng.rand(8, 12).astype('float32'),
             'label': rng.randint(0, 4, (8, 1)).astype('int64')} for _ in range(STEPS)]


def main():
    import paddle.fluid as fluid
    out = {}
    exe = fluid.Executor(fluid.CPUPlace())
    prog, startup, fetch, params, feed = build_ops(fluid)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for name, v in zip(fetch, exe.run(prog, feed=feed, fetch_list=list(fetch.values()))):
            out['op_' + name] = np.asarray(v)
        for name in params:
            out['op_' + name] = np.array(scope.find_var(name).get_tensor())
    prog, startup, loss = build_training(fluid)
    names = [p.name for p in prog.global_block().all_parameters()]
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for n in names:
            out['start_' + n] = np.array(scope.find_var(n).get_tensor())
        out['losses'] = np.array([exe.run(prog, feed=b, fetch_list=[loss])[0]
                                  for b in batches()]).reshape(-1)
        for n in names:
            out['end_' + n] = np.array(scope.find_var(n).get_tensor())
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)
    print(sorted((k, v.dtype.name, v.shape) for k, v in out.items()), out['losses'])


if __name__ == '__main__':
    main()
