"""The activation and math layers (abs ... pow) against PaddlePaddle 1.8.5: each case of
paddle18/gen_activation.py builds the same layer with `import rill as fluid`, runs it on
Paddle's input and compares the output and the gradient of mean(layer(x)) with respect
to x (append_backward) with Paddle's, NaN where Paddle has NaN."""
import importlib.util
import os

import numpy as np
import pytest

import rill as fluid
from rill import core

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
DATA = np.load(os.path.join(HERE, 'activation', 'act.npz'))


def _cases():
    spec = importlib.util.spec_from_file_location('gen_activation_cases',
                                                  os.path.join(HERE, 'gen_activation.py'))
    src = open(spec.origin).read()
    # the table only: the generator imports paddle, which this test does not need
    ns = {'np': np, 'INF': np.inf, 'NAN': np.nan}
    start = src.index('CASES = [')
    exec(src[start:src.index(']\n', start) + 2], ns)
    return ns['CASES']


CASES = _cases()

# Where Paddle's float32 kernels (Eigen's vectorised rsqrt, exp and log, which clamp their
# arguments) give a value the function does not have, rill keeps the IEEE one:
# (case, x) -> (rill's output, rill's gradient of mean), checked here instead of Paddle's.
KNOWN = {
    ('rsqrt', np.inf): (0.0, -0.0),           # Paddle: NaN, NaN
    ('soft_relu', np.nan): (np.nan, np.nan),  # Paddle: 88.72 (log FLT_MAX), 0
    ('soft_relu_t', np.nan): (np.nan, np.nan),
    ('log1p', np.inf): (np.inf, 0.0),         # Paddle: 88.72
}


def append_backward(loss):
    """The backward pass of Paddle's append_backward, through the C pass the optimizers use
    (rill.backward is not among rill's modules yet)."""
    program = loss.block.program
    c = core.CProgram.parse(program.serialize_to_string())
    c.append_backward(loss.name, [])
    program._reload(c.serialize())


def run(layer, kwargs, x, factor):
    main, startup = fluid.Program(), fluid.Program()
    feed = {'x': x}
    with fluid.program_guard(main, startup):
        xv = fluid.data('x', list(x.shape), 'float32')
        xv.stop_gradient = False
        kw = dict(kwargs)
        if kw.get('factor') == 'var':
            kw['factor'] = fluid.data('factor', [1], 'float32')
            feed['factor'] = factor
        y = getattr(fluid.layers, layer)(xv, **kw)
        append_backward(fluid.layers.mean(y))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    out, dx = exe.run(main, feed=feed, fetch_list=[y.name, xv.name + '@GRAD'])
    return np.asarray(out), np.asarray(dx)


@pytest.mark.parametrize('case,layer,kwargs', [c[:3] for c in CASES], ids=[c[0] for c in CASES])
def test_matches_paddle(case, layer, kwargs):
    x = DATA[case + '/x']
    factor = DATA[case + '/factor'] if case + '/factor' in DATA else None
    out, dx = run(layer, kwargs, x, factor)
    want_out, want_dx = DATA[case + '/out'].copy(), DATA[case + '/dx'].copy()
    for (kc, kx), (kout, kdx) in KNOWN.items():
        at = (np.isnan(x) if np.isnan(kx) else x == kx) if kc == case else np.zeros_like(x, bool)
        assert kc != case or at.any(), 'the data has no %s(%r)' % (kc, kx)
        want_out[at], want_dx[at] = kout, kdx / x.size
    assert out.shape == want_out.shape and out.dtype == np.float32
    np.testing.assert_allclose(out, want_out, rtol=2e-5, atol=1e-6, equal_nan=True,
                               err_msg='%s forward on %s' % (case, x.tolist()))
    np.testing.assert_allclose(dx, want_dx, rtol=2e-5, atol=1e-8, equal_nan=True,
                               err_msg='%s gradient' % case)


def test_every_case_has_data():
    assert len(CASES) >= 28
    for case, *_ in CASES:
        assert case + '/out' in DATA and case + '/dx' in DATA


def test_signatures_follow_fluid():
    import inspect
    sig = lambda f: list(inspect.signature(f).parameters)
    L = fluid.layers
    assert sig(L.softshrink) == ['x', 'alpha']
    assert sig(L.selu) == ['x', 'scale', 'alpha', 'name']
    assert sig(L.pow) == ['x', 'factor', 'name']
    assert sig(L.log1p) == ['x', 'out', 'name']
    assert sig(L.sign) == ['x'] and sig(L.erf) == ['x']
    assert inspect.signature(L.stanh).parameters['scale_b'].default == 1.7159
