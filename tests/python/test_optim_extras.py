"""ExponentialMovingAverage (with and without thres_steps), ModelAverage, Lookahead,
RecomputeOptimizer, Dpsgd, ErrorClipByValue and WeightNormParamAttr against Paddle 1.8.5:
ten steps of the same MLP from the same parameters (paddle18/optim_extras/, written by
paddle18/gen_optim_extras.py from the same programs): every loss and the trained
parameters, and for the averaging ones the parameters and a held-out loss under apply()
and after restore(). Also Bilinear's values, TruncatedNormal's distribution, what the
recompute rewrite does to the program, the dpsgd noise's distribution, and the bad
arguments."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_optim_extras as gen  # noqa: E402


@pytest.fixture(scope='module')
def ref():
    return np.load(os.path.join(DATA, 'optim_extras', 'expected.npz'))


@pytest.fixture(scope='module')
def inputs():
    return gen.data()


@pytest.mark.parametrize('case', gen.CASES)
def test_trains_like_paddle(case, ref, inputs):
    got = gen.run(fluid, case, *inputs)
    np.testing.assert_allclose(got['loss'][0], ref[case + '_loss'][0], rtol=1e-5)
    np.testing.assert_allclose(got['loss'], ref[case + '_loss'], rtol=1e-4, atol=1e-6)
    assert got['loss'][-1] < got['loss'][0]
    for k in gen.params_of(case):
        for stage in ('final',) + (('applied', 'restored') if case in gen.AVERAGING else ()):
            key = '%s_%s' % (stage, k)
            np.testing.assert_allclose(got[key], ref['%s_%s' % (case, key)], rtol=1e-4,
                                       atol=1e-5, err_msg=key)
    if case in gen.AVERAGING:
        np.testing.assert_allclose(got['applied_loss'], ref[case + '_applied_loss'],
                                   rtol=1e-4)
        changed = [k for k in gen.params_of(case)
                   if not np.allclose(got['applied_' + k], got['final_' + k])]
        assert changed, 'apply() left every parameter as it was'
        for k in gen.params_of(case):
            np.testing.assert_array_equal(got['restored_' + k], got['final_' + k])


def test_recompute_gives_the_plain_numbers_and_rereads_no_activation(ref, inputs):
    np.testing.assert_array_equal(ref['recompute_loss'], ref['plain_deep_loss'])
    main, _, loss, _, _ = gen.build(fluid, 'recompute')
    ops = main.global_block().ops
    bwd = [i for i, op in enumerate(ops) if (op.attr('op_role') or 0) & 1]
    copies = [op for op in ops[bwd[0]:] if any(n.endswith('@RECOMPUTE')
                                                for n in op.output_arg_names)]
    # the middle fc (mul, elementwise_add), its tanh, the last fc and its relu
    assert sorted(op.type for op in copies) == sorted(
        ['mul', 'elementwise_add', 'tanh', 'mul', 'elementwise_add'])
    fwd_outs = set()
    start = max(i for i, op in enumerate(ops[:bwd[0]])
                if 'fc_0.tmp_2' in op.output_arg_names)
    stop = max(i for i, op in enumerate(ops[:bwd[0]]) if 'fc_2.tmp_2' in op.output_arg_names)
    for op in ops[start + 1:stop]:
        fwd_outs.update(op.output_arg_names)
    for op in ops[bwd[0]:]:
        read = set(op.input_arg_names) & fwd_outs
        assert not read, '%s reads the activations %s' % (op.type, read)


def test_recompute_needs_checkpoints():
    x = fluid.data('x', [2, 3], 'float32')
    loss = fluid.layers.reduce_mean(fluid.layers.fc(x, 2))
    opt = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1))
    with pytest.raises(ValueError, match='_set_checkpoints'):
        opt.minimize(loss)
    with pytest.raises(TypeError, match='checkpoint'):
        opt._set_checkpoints([3])
    with pytest.raises(NotImplementedError):
        opt.load({})


def test_bilinear_and_truncated_normal(ref):
    got = gen.initializers(fluid)
    for i in range(len(gen.BILINEAR)):
        np.testing.assert_array_equal(got['bilinear_%d' % i], ref['bilinear_%d' % i])
    mean, std, lo, hi = got['truncated_stats']
    pmean, pstd, plo, phi = ref['truncated_stats']
    # N(1.5, 0.5^2) cut at 1.5 +- 1.0: std 0.5 * 0.87962; Paddle's sample agrees
    assert abs(mean - 1.5) < 0.01 and abs(pmean - 1.5) < 0.01
    assert abs(std - 0.5 * 0.87962) < 0.005 and abs(pstd - 0.5 * 0.87962) < 0.005
    assert 0.5 <= lo < 0.52 and 2.48 < hi <= 2.5
    assert 0.5 <= plo and phi <= 2.5


def test_bilinear_refuses_bad_shapes():
    for shape, msg in (([2, 3, 4], '4-D'), ([1, 1, 3, 4], 'shape\\[2\\]')):
        with pytest.raises(ValueError, match=msg):
            fluid.layers.create_parameter(shape, 'float32',
                                          default_initializer=fluid.initializer.Bilinear())


def test_dpsgd_noise_distribution(ref):
    """With a zero gradient each step moves the parameter by -lr * n / batch_size, n one
    N(0, sigma^2) draw per run shared by every element (gen_optim_extras.dpsgd_noise).
    Paddle's draws (1000 runs, each with a random seed) and rill's (2000 unseeded runs) are
    normal with std sigma, and one sample of the other's distribution by a two-sample
    Kolmogorov-Smirnov statistic below its 0.1% critical value."""
    d = gen.dpsgd_noise(fluid, 2000)
    p = ref['dpsgd_noise'].astype('float64')
    assert len(np.unique(d)) > 1990  # a new draw each run
    sigma = gen.DPSGD['sigma']
    for s in (d, p):
        assert abs(s.mean()) < 0.25 and abs(s.std() - sigma) < 0.2, (s.mean(), s.std())
    grid = np.sort(np.concatenate([d, p]))
    ks = np.max(np.abs(np.searchsorted(np.sort(d), grid, 'right') / len(d) -
                       np.searchsorted(np.sort(p), grid, 'right') / len(p)))
    assert ks < 1.95 * np.sqrt((len(d) + len(p)) / (len(d) * len(p))), ks


def test_wrappers_check_arguments():
    O = fluid.optimizer
    with pytest.raises(ValueError, match='alpha'):
        O.LookaheadOptimizer(O.SGD(0.1), alpha=1.5)
    with pytest.raises(ValueError, match='k should'):
        O.LookaheadOptimizer(O.SGD(0.1), k=0)
    with pytest.raises(ValueError, match='inner'):
        O.LookaheadOptimizer(None)
    with pytest.raises(TypeError, match='dim'):
        fluid.WeightNormParamAttr(dim='0')
    x = fluid.data('x', [2, 3], 'float32')
    with pytest.raises(ValueError, match='out of range'):
        fluid.layers.fc(x, 2, param_attr=fluid.WeightNormParamAttr(dim=2, name='wn'))


def test_weight_norm_starts_as_v():
    """The startup program sets g to ||v||, so the weight starts as v."""
    x = fluid.data('x', [3, 4], 'float32')
    out = fluid.layers.fc(x, 5, param_attr=fluid.WeightNormParamAttr(dim=1, name='w'),
                          bias_attr=False)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    sc = fluid.global_scope()
    v = np.array(sc.find_var('w_v').get_tensor())
    g = np.array(sc.find_var('w_g').get_tensor())
    assert g.shape == (1, 5)
    np.testing.assert_allclose(g[0], np.sqrt((v * v).sum(0)), rtol=1e-6)
    xv = np.random.RandomState(0).randn(3, 4).astype('float32')
    got, = exe.run(feed={'x': xv}, fetch_list=[out])
    np.testing.assert_allclose(got, xv @ v, rtol=1e-5, atol=1e-6)


def test_ema_apply_without_restore_then_restore(ref, inputs):
    main, startup, loss, ema, _ = gen.build(fluid, 'ema')
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        for k, v in gen.start_values('ema', *inputs[:2]).items():
            fluid.global_scope().find_var(k).get_tensor().set(v)
        for x, y in inputs[2][:gen.STEPS]:
            exe.run(main, feed={'x': x, 'y': y})
        before = np.array(fluid.global_scope().find_var('w1').get_tensor())
        with ema.apply(exe, need_restore=False):
            pass
        applied = np.array(fluid.global_scope().find_var('w1').get_tensor())
        np.testing.assert_allclose(applied, ref['ema_applied_w1'], rtol=1e-4, atol=1e-5)
        ema.restore(exe)
        np.testing.assert_array_equal(
            np.array(fluid.global_scope().find_var('w1').get_tensor()), before)


def test_append_backward_with_checkpoints_gives_the_same_gradients(inputs):
    params, _, batches = inputs
    x_val, y_val = batches[0]
    grads = {}
    for ck in (False, True):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = fluid.data('x', [gen.BATCH, 4], 'float32')
            y = fluid.data('y', [gen.BATCH, 1], 'float32')
            h1 = gen._fc(fluid, x, 6, fluid.ParamAttr(name='w1'), 'b1', 'tanh')
            h = gen._fc(fluid, h1, 6, fluid.ParamAttr(name='wm'), 'bm', 'tanh')
            h3 = gen._fc(fluid, h, 6, fluid.ParamAttr(name='wn'), 'bn', 'relu')
            out = gen._fc(fluid, h3, 1, fluid.ParamAttr(name='w2'), 'b2')
            loss = fluid.layers.reduce_mean(fluid.layers.square(out - y))
            pg = fluid.backward.append_backward(loss, checkpoints=[h1, h3] if ck else None)
        re = [op for op in main.global_block().ops
              if any(n.endswith('@RECOMPUTE') for n in op.output_arg_names)]
        assert bool(re) == ck
        exe = fluid.Executor(fluid.CPUPlace())
        with fluid.scope_guard(fluid.Scope()):
            exe.run(startup)
            for k in gen.params_of('recompute'):
                fluid.global_scope().find_var(k).get_tensor().set(params[k])
            vals = exe.run(main, feed={'x': x_val, 'y': y_val}, fetch_list=[g for _, g in pg])
        grads[ck] = {p.name: v for (p, _), v in zip(pg, vals)}
    assert sorted(grads[True]) == sorted(grads[False]) == sorted(gen.params_of('recompute'))
    for k in grads[False]:
        np.testing.assert_array_equal(grads[True][k], grads[False][k], err_msg=k)
