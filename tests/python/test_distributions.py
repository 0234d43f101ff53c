"""The distributions (rill/distributions.py) against PaddlePaddle 1.8.5 (paddle18/
distributions/, written by paddle18/gen_distributions.py from the same program): entropy,
log_prob and kl_divergence values and the shapes of samples; Paddle is not needed. And the
samples' ranges and argument checks."""
import os
import sys
import warnings

import numpy as np
import pytest

import rill as fluid
import rill.layers as L

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_distributions as gen  # noqa: E402

WANT = dict(np.load(os.path.join(DATA, 'distributions', 'expected.npz')))


def test_distributions_as_paddle18():
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        main, startup, fetch = gen.build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        got = [np.asarray(v) for v in exe.run(main, feed=gen.FEED, fetch_list=fetch)]
    n = len(got)
    for i, v in enumerate(got):
        if i >= n - gen.SAMPLES:
            np.testing.assert_array_equal(v.shape, WANT['%d.shape' % i], err_msg='sample %d' % i)
            continue
        want = WANT['%d' % i]
        assert v.shape == want.shape and v.dtype == want.dtype, (i, v.shape, want.shape)
        np.testing.assert_allclose(v, want, rtol=1e-5, atol=1e-6, err_msg='output %d' % i)
    u = got[n - 3]
    lo, hi = np.array([-1., 0., 0.5]), np.array([1., 2., 0.75])
    # Paddle 1.8.5's Uniform.sample scales uniform_random's default [-1, 1) draws, so its
    # samples lie in [low - (high - low), high), and so do rill's
    assert u.shape == (4, 2, 3) and np.all(u >= 2 * lo - hi - 1e-6) and np.all(u <= hi)


def test_distributions_check_their_arguments():
    x = fluid.data('x', [3], 'float32')
    with pytest.raises(ValueError, match='all arguments should be Variable'):
        L.Normal(x, 1.0)
    with pytest.raises(TypeError, match="'low' in Uniform"):
        L.Uniform(1, 2.0)
    with pytest.raises(TypeError, match="'other' in kl_divergence"):
        L.Normal(0.0, 1.0).kl_divergence(L.Uniform(0.0, 1.0))
    with pytest.raises(TypeError, match="'shape' in sample"):
        L.Normal(0.0, 1.0).sample(3)
