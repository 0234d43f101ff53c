"""Seeded randomness against Paddle 1.8.5 (paddle18/random/, written by
paddle18/gen_random.py from the same programs): every random op and initializer with a
nonzero seed draws Paddle's numbers bit for bit, and an MLP with dropout whose startup
program has a random_seed starts from Paddle's parameters and trains to Paddle's losses
and parameters, with no parameter set by hand."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_random as gen  # noqa: E402


@pytest.fixture(scope='module')
def ref():
    return np.load(os.path.join(DATA, 'random', 'expected.npz'))


@pytest.fixture(scope='module')
def ops_run():
    main, startup, fetch, params, feed = gen.build_ops(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    got = {}
    with fluid.scope_guard(scope):
        exe.run(startup)
        for name, v in zip(fetch, exe.run(main, feed=feed, fetch_list=list(fetch.values()))):
            got[name] = np.asarray(v)
        for name in params:
            got[name] = np.array(scope.find_var(name).get_tensor())
    return got


OPS = ['uniform', 'uniform_negative_seed', 'uniform_fp64', 'uniform_diag', 'gaussian',
       'gaussian_fp64', 'uniform_bsl', 'gaussian_bsl', 'randint', 'randint_wide', 'randperm',
       'sampling_id', 'dropout', 'dropout_upscale', 'dropout_seeded_mask', 'p_uniform',
       'p_normal', 'p_truncated', 'p_truncated_loc', 'p_xavier', 'p_xavier_normal', 'p_msra',
       'p_msra_normal']


@pytest.mark.parametrize('name', OPS)
def test_seeded_draws_are_paddles(ref, ops_run, name):
    want, got = ref['op_' + name], ops_run[name]
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape)
    np.testing.assert_array_equal(got, want, err_msg=name)


def test_the_same_seed_draws_the_same_numbers_every_run():
    main, startup, fetch, _, feed = gen.build_ops(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        names = ['uniform', 'gaussian', 'randperm', 'dropout']
        first = exe.run(main, feed=feed, fetch_list=[fetch[n] for n in names])
        second = exe.run(main, feed=feed, fetch_list=[fetch[n] for n in names])
    for n, a, b in zip(names, first, second):
        np.testing.assert_array_equal(a, b, err_msg=n)


def test_a_seeded_startup_program_trains_like_paddle(ref):
    main, startup, loss = gen.build_training(fluid)
    names = [p.name for p in main.global_block().all_parameters()]
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for n in names:
            np.testing.assert_array_equal(np.array(scope.find_var(n).get_tensor()),
                                          ref['start_' + n], err_msg=n)
        losses = [float(np.asarray(exe.run(main, feed=b, fetch_list=[loss])[0]).reshape(-1)[0])
                  for b in gen.batches()]
        np.testing.assert_allclose(losses, ref['losses'], rtol=1e-6)
        for n in names:
            np.testing.assert_allclose(np.array(scope.find_var(n).get_tensor()), ref['end_' + n],
                                       rtol=1e-5, atol=1e-7, err_msg=n)


def test_unseeded_draws_differ_per_variable_and_keep_their_distribution():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        a = fluid.layers.uniform_random([20000], min=-1.0, max=3.0)
        b = fluid.layers.uniform_random([20000], min=-1.0, max=3.0)
        g = fluid.layers.gaussian_random([20000], mean=2.0, std=0.5)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        va, vb, vg = exe.run(main, fetch_list=[a, b, g])
    assert not np.array_equal(va, vb)
    assert va.min() >= -1.0 and va.max() < 3.0
    assert abs(va.mean() - 1.0) < 0.05 and abs(va.var() - 16 / 12) < 0.05
    assert abs(vg.mean() - 2.0) < 0.02 and abs(vg.std() - 0.5) < 0.02
