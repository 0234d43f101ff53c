"""Training: the backward pass and optimizers against the same updates written in
numpy."""
import os

import numpy as np
import pytest

import rill
import rill.layers as L
from conftest import ROOT


def housing(n=64):
    data = np.loadtxt(os.path.join(ROOT, 'examples', 'fit_a_line', 'housing.data'))
    x = data[:, :13]
    x = (x - x.mean(0)) / (x.max(0) - x.min(0))
    assert np.isfinite(x).all()
    return x[:n].astype('float32'), data[:n, 13:].astype('float32')


def test_fit_a_line_follows_numpy_gradient_descent():
    xv, yv = housing()
    w0 = np.linspace(-0.5, 0.5, 13, dtype='float32').reshape(13, 1)
    x = L.data('x', [13])
    y = L.data('y', [1])
    init = rill.initializer.NumpyArrayInitializer(w0)
    pred = L.fc(x, 1, param_attr=rill.ParamAttr('w', initializer=init),
                bias_attr=rill.ParamAttr('b', initializer=rill.initializer.Constant(0.5)))
    loss = L.mean(L.square_error_cost(pred, y))
    lr = 0.01
    rill.optimizer.SGD(lr).minimize(loss)
    exe = rill.Executor(rill.CPUPlace())
    exe.run(rill.default_startup_program())
    w, b = w0.astype('float64'), 0.5
    for step in range(30):
        lo = slice((step % 4) * 16, (step % 4) * 16 + 16)
        got, = exe.run(feed={'x': xv[lo], 'y': yv[lo]}, fetch_list=[loss])
        err = xv[lo] @ w + b - yv[lo]
        want = (err ** 2).mean()
        np.testing.assert_allclose(got[0], want, rtol=1e-4)
        w = w - lr * 2 * xv[lo].T @ err / len(err)
        b = b - lr * 2 * err.mean()
    np.testing.assert_allclose(np.array(rill.global_scope().find_var('w').get_tensor()), w,
                               rtol=1e-3, atol=1e-4)


def one_step(opt, grad_scale=1.0):
    """One step of `opt` on loss = mean(x W) * grad_scale; returns W before, W after and
    the gradient."""
    x = L.data('x', [3])
    out = L.fc(x, 2, param_attr='W', bias_attr=False)
    loss = L.scale(L.mean(out), grad_scale)
    opt.minimize(loss)
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    w0 = np.array(rill.global_scope().find_var('W').get_tensor()).astype('float64')
    xv = np.arange(12, dtype='float32').reshape(4, 3) / 10
    exe.run(feed={'x': xv}, fetch_list=[loss])
    w1 = np.array(rill.global_scope().find_var('W').get_tensor())
    g = np.repeat(xv.mean(0)[:, None] / 2, 2, 1) * grad_scale
    return w0, w1, g


def test_momentum_step():
    w0, w1, g = one_step(rill.optimizer.Momentum(0.1, momentum=0.9))
    np.testing.assert_allclose(w1, w0 - 0.1 * g, rtol=1e-5, atol=1e-6)


# Paddle Fluid 1.8.5's parameters after each step of the programs below (the same
# programs run there; epsilon is large so that its place in the denominator shows).
PADDLE18_ADAM_DENSE = [
    [0.9625000357627869, -1.9961538314819336, 3.0, 0.42500001192092896,
     -0.00019960070494562387, -0.9555555582046509],
    [0.9072985649108887, -1.9882477521896362, 3.0, 0.34112799167633057,
     -0.0006283116526901722, -0.8937519788742065],
    [0.8412352800369263, -1.9758316278457642, 3.0, 0.253406286239624,
     -0.0013365470804274082, -0.8221653699874878],
]
# Paddle 1.8.5's parameters after each sparse step (an is_sparse embedding: rows 0 and 2
# with row 2 twice, then rows 1 and 3, then rows 0 and 3 with row 0 twice), lazy_mode off
# and on. Its selected-rows adam writes Beta1PowOut/Beta2PowOut (the same variables as
# Beta1Pow/Beta2Pow) before it reads them, so its step t is bias-corrected as step t + 1;
# rill does the same.
ADAM_SPARSE = {
    False: [[0.9443155527114868, -1.0001481771469116, 0.5, 2.0, -0.23762568831443787,
             -0.019653331488370895, 3.0, 0.125],
            [0.9012276530265808, -1.0002623796463013, 0.4608652591705322, 2.023847818374634,
             -0.22807861864566803, -0.03482378274202347, 2.949124813079834,
             0.08260402828454971],
            [0.8750166296958923, -1.0136545896530151, 0.42879751324653625, 2.043365478515625,
             -0.2202732115983963, -0.047232795506715775, 2.8898603916168213,
             0.025204971432685852]],
    True: [[0.9443155527114868, -1.0001481771469116, 0.5, 2.0, -0.23762568831443787,
            -0.019653331488370895, 3.0, 0.125],
           [0.9443155527114868, -1.0001481771469116, 0.4608652591705322, 2.023847818374634,
            -0.23762568831443787, -0.019653331488370895, 2.949124813079834,
            0.08260402828454971],
           [0.9143463969230652, -1.0135483741760254, 0.4608652591705322, 2.023847818374634,
            -0.23762568831443787, -0.019653331488370895, 2.8898603916168213,
            0.025204971432685852]],
}
# The beta pows Paddle 1.8.5 holds after each of those steps (0.9 advanced once a step).
ADAM_SPARSE_BETA1_POW = [0.809999942779541, 0.7289999127388, 0.6560999155044556]


def test_adam_step():
    """Fluid 1.x's adam: param -= lr_t * m1 / (sqrt(m2) + epsilon), as Paddle 1.8.5."""
    w0 = np.array([[1, -2, 3], [0.5, 0, -1]], 'float32')
    x = rill.data('x', [2, 3], 'float32')
    w = L.create_parameter([2, 3], 'float32', name='w',
                           default_initializer=rill.initializer.NumpyArrayInitializer(w0))
    loss = L.reduce_sum(x * w)
    rill.optimizer.Adam(learning_rate=0.1, beta1=0.9, beta2=0.99, epsilon=0.05).minimize(loss)
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    for s, want in enumerate(PADDLE18_ADAM_DENSE):
        g = np.array([[0.3, -0.02, 0.0], [1.5, 0.001, -0.4]], 'float32') * (s + 1)
        exe.run(feed={'x': g}, fetch_list=[loss])
        got = np.array(rill.global_scope().find_var('w').get_tensor()).ravel()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize('lazy', [False, True])
def test_sparse_adam_step(lazy):
    """adam on a selected-rows gradient (an is_sparse embedding), lazy and not, as Paddle
    1.8.5: Fluid 1.x's denominator, a repeated id adds its rows, absent rows move only
    without lazy_mode, and the step is bias-corrected with the beta pows advanced first."""
    t0 = np.array([[1, -1], [0.5, 2], [-0.25, 0], [3, 0.125]], 'float32')
    ids = rill.data('ids', [3, 1], 'int64')
    c = rill.data('c', [3, 2], 'float32')
    e = L.embedding(ids, [4, 2], is_sparse=True, param_attr=rill.ParamAttr(
        't', initializer=rill.initializer.NumpyArrayInitializer(t0)))
    loss = L.reduce_sum(e * c)
    rill.optimizer.Adam(learning_rate=0.1, beta1=0.9, beta2=0.99, epsilon=0.05,
                        lazy_mode=lazy).minimize(loss)
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    feeds = [([[2], [0], [2]], [[0.3, -0.02], [1.5, 0.001], [-0.4, 0.2]]),
             ([[1], [1], [3]], [[0.7, 0.0], [0.1, -0.3], [2.0, 1.0]]),
             ([[0], [3], [0]], [[-0.5, 0.25], [1.0, 1.0], [0.2, -0.1]])]
    pow_name = [v.name for v in rill.default_main_program().list_vars()
                if 'beta1_pow' in v.name]
    assert len(pow_name) == 1
    for (i, cv), want, want_pow in zip(feeds, ADAM_SPARSE[lazy], ADAM_SPARSE_BETA1_POW):
        exe.run(feed={'ids': np.array(i, 'int64'), 'c': np.array(cv, 'float32')},
                fetch_list=[loss])
        got = np.array(rill.global_scope().find_var('t').get_tensor()).ravel()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
        got_pow = np.array(rill.global_scope().find_var(pow_name[0]).get_tensor()).ravel()
        np.testing.assert_allclose(got_pow, [want_pow], rtol=1e-7)


def test_adagrad_step():
    w0, w1, g = one_step(rill.optimizer.Adagrad(0.1))
    want = w0 - 0.1 * g / (np.sqrt(g * g) + 1e-6)
    np.testing.assert_allclose(w1, want, rtol=1e-4, atol=1e-6)


def test_l2_decay_adds_coeff_times_param():
    w0, w1, g = one_step(rill.optimizer.SGD(0.1, regularization=rill.regularizer.L2Decay(0.5)))
    np.testing.assert_allclose(w1, w0 - 0.1 * (g + 0.5 * w0), rtol=1e-5, atol=1e-6)


def test_clip_by_global_norm_bounds_the_step():
    clip = rill.clip.GradientClipByGlobalNorm(0.01)
    w0, w1, g = one_step(rill.optimizer.SGD(1.0, grad_clip=clip), grad_scale=10.0)
    norm = np.sqrt((g * g).sum())
    np.testing.assert_allclose(w1, w0 - g * 0.01 / norm, rtol=1e-4, atol=1e-6)


def test_frozen_parameter_is_not_updated():
    x = L.data('x', [3])
    h = L.fc(x, 2, param_attr=rill.ParamAttr('frozen', trainable=False), bias_attr=False)
    loss = L.mean(L.fc(h, 1, param_attr='free', bias_attr=False))
    _, pg = rill.optimizer.SGD(0.5).minimize(loss)
    assert [p.name for p, _ in pg] == ['free']
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    before = np.array(rill.global_scope().find_var('frozen').get_tensor())
    exe.run(feed={'x': np.ones((2, 3), 'float32')}, fetch_list=[loss])
    np.testing.assert_array_equal(np.array(rill.global_scope().find_var('frozen').get_tensor()),
                                  before)


def test_sparse_embedding_updates_only_looked_up_rows():
    ids = L.data('ids', [1], dtype='int64')
    emb = L.embedding(ids, [6, 2], is_sparse=True, param_attr='E')
    loss = L.mean(emb)
    rill.optimizer.SGD(1.0).minimize(loss)
    grads = [v for v in rill.default_main_program().global_block().vars.values()
             if v.name == 'E@GRAD']
    assert grads and grads[0].type == rill.core.SELECTED_ROWS
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    before = np.array(rill.global_scope().find_var('E').get_tensor())
    exe.run(feed={'ids': np.array([[1], [4]], 'int64')}, fetch_list=[loss])
    after = np.array(rill.global_scope().find_var('E').get_tensor())
    changed = np.where((after != before).any(1))[0].tolist()
    assert changed == [1, 4]
    np.testing.assert_allclose(after[1], before[1] - 0.25, rtol=1e-5)


def test_mlp_classifier_learns_with_adam():
    rng = np.random.RandomState(0)
    xv = rng.randn(256, 4).astype('float32')
    yv = (xv[:, :1] + xv[:, 1:2] > 0).astype('int64')
    x = L.data('x', [4])
    y = L.data('y', [1], dtype='int64')
    h = L.fc(x, 16, act='relu')
    logits = L.fc(h, 2)
    loss = L.mean(L.softmax_with_cross_entropy(logits, y))
    acc = L.accuracy(L.softmax(logits), y)
    test = rill.default_main_program().clone(for_test=True)
    rill.optimizer.Adam(0.05).minimize(loss)
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    for _ in range(60):
        exe.run(feed={'x': xv, 'y': yv}, fetch_list=[loss])
    a, = exe.run(test, feed={'x': xv, 'y': yv}, fetch_list=[acc])
    assert a[0] > 0.9


def two_params_step(opt, attr_a, attr_b):
    x = L.data('x', [3])
    a = L.fc(x, 2, param_attr=attr_a, bias_attr=False)
    b = L.fc(x, 2, param_attr=attr_b, bias_attr=False)
    loss = L.mean(L.elementwise_add(a, b))
    opt.minimize(loss)
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    get = lambda n: np.array(rill.global_scope().find_var(n).get_tensor()).astype('float64')  # noqa
    a0, b0 = get('A'), get('B')
    xv = np.arange(12, dtype='float32').reshape(4, 3) / 10
    exe.run(feed={'x': xv}, fetch_list=[loss])
    g = np.repeat(xv.mean(0)[:, None] / 2, 2, 1)
    return a0, get('A'), b0, get('B'), g


def test_per_parameter_regularizer_overrides_the_optimizers():
    a0, a1, b0, b1, g = two_params_step(
        rill.optimizer.SGD(0.1, regularization=rill.regularizer.L2Decay(0.5)),
        rill.ParamAttr('A', regularizer=rill.regularizer.L2Decay(0.2)), 'B')
    np.testing.assert_allclose(a1, a0 - 0.1 * (g + 0.2 * a0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b1, b0 - 0.1 * (g + 0.5 * b0), rtol=1e-5, atol=1e-6)


def test_param_attr_learning_rate_scales_the_step():
    a0, a1, b0, b1, g = two_params_step(rill.optimizer.SGD(0.1),
                                        rill.ParamAttr('A', learning_rate=3.0), 'B')
    np.testing.assert_allclose(a1, a0 - 0.3 * g, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b1, b0 - 0.1 * g, rtol=1e-5, atol=1e-6)


def test_set_gradient_clip_applies_to_the_next_minimize():
    rill.clip.set_gradient_clip(rill.clip.GradientClipByGlobalNorm(1e-3))
    a0, a1, b0, b1, g = two_params_step(rill.optimizer.SGD(1.0), 'A', 'B')
    step = np.sqrt(((a1 - a0) ** 2).sum() + ((b1 - b0) ** 2).sum())
    np.testing.assert_allclose(step, 1e-3, rtol=1e-3)


def test_l1_decay_adds_coeff_times_sign():
    a0, a1, b0, b1, g = two_params_step(
        rill.optimizer.SGD(0.1, regularization=rill.regularizer.L1Decay(0.5)),
        rill.ParamAttr('A', initializer=rill.initializer.NumpyArrayInitializer(
            np.array([[1e-20, -3.0], [0.0, 2.0], [-1e-5, 7.0]], 'float32'))), 'B')
    np.testing.assert_allclose(a1, a0 - 0.1 * (g + 0.5 * np.sign(a0)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b1, b0 - 0.1 * (g + 0.5 * np.sign(b0)), rtol=1e-5, atol=1e-6)


def test_l1_decay_appends_paddles_sign_and_scale_ops():
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup), rill.unique_name.guard():
        x = L.data('x', [4])
        y = L.fc(x, 2, param_attr=rill.ParamAttr('W', regularizer=rill.regularizer.L1Decay(0.25)),
                 bias_attr=False)
        rill.optimizer.SGD(0.1).minimize(L.mean(y))
    types = [op.type for op in main.global_block().ops]
    sgd = types.index('sgd')
    assert types[sgd - 3:sgd] == ['sign', 'scale', 'sum'], types
    scale = main.global_block().ops[sgd - 2]
    assert scale.attr('scale') == 0.25 and scale.input('X') == main.global_block().ops[sgd - 3].output('Out')


def test_minimize_rejects_a_non_variable_loss():
    with pytest.raises(TypeError, match='loss'):
        rill.optimizer.SGD(0.1).minimize('loss')
    with pytest.raises(ValueError, match='negative'):
        rill.optimizer.SGD(-1.0)


def test_clip_by_value_bounds_each_gradient_element():
    clip = rill.clip.GradientClipByValue(0.25)
    w0, w1, g = one_step(rill.optimizer.SGD(1.0, grad_clip=clip), grad_scale=1.0)
    np.testing.assert_allclose(w1, w0 - np.clip(g, -0.25, 0.25), rtol=1e-5, atol=1e-6)
    assert (np.abs(g) > 0.25).any() and (np.abs(g) < 0.25).any()


def test_clip_by_norm_scales_each_gradient_then_decay_applies():
    clip = rill.clip.GradientClipByNorm(0.01)
    opt = rill.optimizer.SGD(1.0, grad_clip=clip, regularization=rill.regularizer.L2Decay(0.1))
    w0, w1, g = one_step(opt, grad_scale=10.0)
    clipped = g * 0.01 / np.sqrt((g * g).sum())
    np.testing.assert_allclose(w1, w0 - (clipped + 0.1 * w0), rtol=1e-4, atol=1e-6)


def test_parallel_and_sequential_training_agree_bitwise():
    def losses(parallel):
        main, startup = rill.Program(), rill.Program()
        with rill.program_guard(main, startup), rill.unique_name.guard(), \
                rill.scope_guard(rill.Scope()):
            x = L.data('x', [8])
            y = L.data('y', [1], dtype='int64')
            branches = [L.fc(x, 16, act='relu') for _ in range(4)]
            logits = L.fc(L.concat(branches, axis=1), 3)
            loss = L.mean(L.softmax_with_cross_entropy(logits, y))
            rill.optimizer.Momentum(0.05, 0.9).minimize(loss)
            exe = rill.Executor(rill.CPUPlace(), parallel=parallel, num_threads=2)
            exe.run(startup)
            rng = np.random.RandomState(4)
            feed = {'x': rng.randn(16, 8).astype('float32'),
                    'y': rng.randint(0, 3, (16, 1)).astype('int64')}
            out = [exe.run(main, feed=feed, fetch_list=[loss])[0][0] for _ in range(5)]
            return np.array(out)
    seq, par = losses(False), losses(True)
    assert seq.tobytes() == par.tobytes()
    assert seq[-1] < seq[0]


@pytest.mark.parametrize('make,ref', [
    (lambda: L.exponential_decay(0.5, 3, 0.5), lambda s: 0.5 * 0.5 ** (s / 3)),
    (lambda: L.exponential_decay(0.5, 3, 0.5, staircase=True), lambda s: 0.5 * 0.5 ** (s // 3)),
    (lambda: L.natural_exp_decay(0.5, 3, 0.2), lambda s: 0.5 * np.exp(-0.2 * s / 3)),
    (lambda: L.inverse_time_decay(0.5, 3, 0.2), lambda s: 0.5 / (1 + 0.2 * s / 3)),
    (lambda: L.piecewise_decay([2, 5], [1.0, 0.5, 0.1]),
     lambda s: 1.0 if s < 2 else (0.5 if s < 5 else 0.1)),
])
def test_learning_rate_schedules(make, ref):
    x = L.data('x', [3])
    loss = L.mean(L.fc(x, 1, param_attr='W', bias_attr=False))
    lr = make()
    rill.optimizer.SGD(lr).minimize(loss)
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    xv = np.ones((2, 3), 'float32')
    for step in range(7):
        w0 = np.array(rill.global_scope().find_var('W').get_tensor())
        got, = exe.run(feed={'x': xv}, fetch_list=[lr])
        w1 = np.array(rill.global_scope().find_var('W').get_tensor())
        np.testing.assert_allclose(got[0], ref(step), rtol=1e-5)
        np.testing.assert_allclose(w0 - w1, ref(step), rtol=1e-4)


def test_test_clone_does_not_advance_the_schedule():
    x = L.data('x', [3])
    loss = L.mean(L.fc(x, 1, param_attr='W', bias_attr=False))
    lr = L.piecewise_decay([1], [1.0, 0.5])
    rill.optimizer.SGD(lr).minimize(loss)
    test = rill.default_main_program().clone(for_test=True)
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    xv = np.ones((2, 3), 'float32')
    for _ in range(3):
        exe.run(test, feed={'x': xv}, fetch_list=[loss])
    got, = exe.run(feed={'x': xv}, fetch_list=[lr])
    assert got[0] == 1.0
