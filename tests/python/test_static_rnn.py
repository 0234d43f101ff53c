"""StaticRNN: the recurrent op runs its step block once per row, carrying two states
(one fed, one booted from a batch-sized constant), and recurrent_grad runs the gradient
block over the kept step scopes in reverse, summing the shared weights' gradients and
handing out the inputs' and initial state's. Losses, gradients (wh, x, h0) and trained
parameters are Paddle 1.8.5's (paddle18/static_rnn/, written by
paddle18/gen_static_rnn.py from the same program) in both schedules; a numpy forward;
finite differences of the gradient; a StaticRNN inference model Paddle saved; errors."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import _steps  # noqa: E402
import gen_static_rnn as gen  # noqa: E402

NAMES = ('x', 'h0')


def expected():
    return _steps.load(gen)


def feed_of(ref, step):
    return _steps.batch_of(ref, step, NAMES)


def start(ref, scope, exe, startup):
    _steps.start(fluid, gen, ref, scope, exe, startup)


def numpy_loss(p, x, h0):
    h, c = h0.astype('float64'), np.full((gen.B, gen.H), 0.25)
    hs, cs = [], []
    for t in range(gen.T):
        h = np.tanh(x[t] @ p['wx'] + p['bx'] + h @ p['wh'])
        c = 0.5 * c + h
        hs.append(h)
        cs.append(c)
    return np.mean(hs) + np.mean(np.square(cs))


@pytest.mark.parametrize('parallel', [False, True])
def test_static_rnn_trains_like_paddle(parallel):
    main = _steps.replay(fluid, gen, expected(), NAMES, parallel)
    types = [op.type for op in main.global_block().ops]
    assert types.count('recurrent') == 1 and types.count('recurrent_grad') == 1


def test_forward_matches_numpy():
    ref = expected()
    main, startup, loss = gen.build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        start(ref, scope, exe, startup)
        l, = exe.run(main, feed=feed_of(ref, 0), fetch_list=[loss])
    p = {k: ref['param_' + k].astype('float64') for k in gen.PARAMS}
    want = numpy_loss(p, ref['x_0'].astype('float64'), ref['h0_0'])
    np.testing.assert_allclose(float(np.asarray(l).ravel()[0]), want, rtol=1e-5)


def test_gradients_match_finite_differences():
    """wh@GRAD and h0@GRAD against central differences of the numpy loss."""
    ref = expected()
    main, startup, loss = gen.build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        start(ref, scope, exe, startup)
        gwh, gh0 = exe.run(main, feed=feed_of(ref, 0), fetch_list=['wh@GRAD', 'h0@GRAD'])
    p = {k: ref['param_' + k].astype('float64') for k in gen.PARAMS}
    x, h0 = ref['x_0'].astype('float64'), ref['h0_0'].astype('float64')
    eps = 1e-5
    for name, got in (('wh', gwh), ('h0', gh0)):
        base = p['wh'] if name == 'wh' else h0
        num = np.zeros_like(base)
        for k in range(base.size):
            d = np.zeros_like(base)
            d.flat[k] = eps
            if name == 'wh':
                up = numpy_loss(dict(p, wh=base + d), x, h0)
                dn = numpy_loss(dict(p, wh=base - d), x, h0)
            else:
                up, dn = numpy_loss(p, x, base + d), numpy_loss(p, x, base - d)
            num.flat[k] = (up - dn) / (2 * eps)
        assert np.abs(num).max() > 1e-3
        np.testing.assert_allclose(np.asarray(got), num, rtol=1e-3, atol=1e-5, err_msg=name)


def test_memory_never_updated_is_an_error():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [2, 3, 2], 'float32')
        rnn = fluid.layers.StaticRNN()
        with pytest.raises(ValueError, match='never updated'):
            with rnn.step():
                xt = rnn.step_input(x)
                rnn.memory(shape=[-1, 2], batch_ref=xt)
                rnn.step_output(xt)


def test_outputs_only_after_the_block():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        rnn = fluid.layers.StaticRNN()
        with pytest.raises(ValueError, match='after the rnn block'):
            rnn()
        with pytest.raises(ValueError, match='inside rnn.step'):
            rnn.step_input(fluid.data('x', [2, 3], 'float32'))


@pytest.mark.parametrize('parallel', [False, True])
def test_paddle_saved_static_rnn_model_runs(parallel):
    """A StaticRNN inference model Paddle 1.8.5 saved (its recurrent op and sub-block as
    Paddle writes them) gives Paddle's output."""
    ref = np.load(os.path.join(DATA, 'static_rnn', 'infer.npz'))
    exe = fluid.Executor(fluid.CPUPlace(), parallel=parallel, num_threads=2)
    with fluid.scope_guard(fluid.Scope()):
        prog, feeds, fetch = fluid.io.load_inference_model(
            os.path.join(DATA, 'static_rnn', 'model'), exe)
        assert 'recurrent' in [op.type for op in prog.global_block().ops]
        o, = exe.run(prog, feed={'x': ref['x'], 'h0': ref['h0']}, fetch_list=fetch)
    np.testing.assert_allclose(np.asarray(o), ref['out'], rtol=1e-5, atol=1e-6)
