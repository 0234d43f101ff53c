"""Writes distributions/: Paddle 1.8.5's values of the distributions' deterministic
parts (Uniform log_prob and entropy, Normal entropy, log_prob and kl_divergence with
parameters as floats, numpy arrays and Variables, Categorical entropy and kl_divergence,
MultivariateNormalDiag entropy and kl_divergence) and the shapes of their samples.
`build(fluid)` is shared with tests/python/test_distributions.py, which builds the same
program with rill. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'distributions')
SAMPLES = 3  # the sample outputs come last in the fetch list


def build(fluid):
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        v = fluid.data('v', [2, 3], 'float32')
        v3 = fluid.data('v3', [3], 'float32')
        loc = fluid.data('loc', [3], 'float32')
        sc = fluid.data('sc', [3], 'float32')
        u = L.Uniform(np.array([-1., 0., 0.5], 'float32'), [1., 2., 0.75])
        n1 = L.Normal(np.array([0., 1., -1.], 'float32'), np.array([1., 0.5, 2.], 'float32'))
        n2 = L.Normal(loc, sc)
        n3 = L.Normal(0.5, 1.5)
        c1 = L.Categorical(np.array([[1., 2., 3.], [0., -1., 4.]], 'float32'))
        c2 = L.Categorical(np.array([[0., 0., 1.], [2., 1., 0.]], 'float32'))
        m1 = L.MultivariateNormalDiag(np.array([0.3, -0.2], 'float32'),
                                      np.array([[2., 0.], [0., 0.5]], 'float32'))
        m2 = L.MultivariateNormalDiag(np.array([1., 0.], 'float32'),
                                      np.array([[1., 0.], [0., 3.]], 'float32'))
        fetch = [u.log_prob(v3), u.entropy(), n1.entropy(), n1.log_prob(v), n2.entropy(),
                 n2.log_prob(v), n1.kl_divergence(n2), n3.entropy(), c1.entropy(),
                 c1.kl_divergence(c2), m1.entropy(), m1.kl_divergence(m2),
                 u.sample([4, 2], seed=5), n1.sample([5]), n3.sample([2, 2])]
    return main, startup, fetch


FEED = {'v': np.array([[0.5, 1.5, 0.6], [-2., 0.1, 0.7]], 'float32'),
        'v3': np.array([0.5, 2.5, 0.6], 'float32'),
        'loc': np.array([0.2, 0.9, -0.5], 'float32'),
        'sc': np.array([1.5, 0.7, 1.0], 'float32')}


def main():
    import paddle.fluid as fluid
    prog, startup, fetch = build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    got = exe.run(prog, feed=FEED, fetch_list=fetch)
    out = {}
    for i, v in enumerate(got):
        v = np.asarray(v)
        if i >= len(got) - SAMPLES:
            out['%d.shape' % i] = np.array(v.shape, 'int64')
        else:
            out['%d' % i] = v
    os.makedirs(OUT, exist_ok=True)
    np.savez_compressed(os.path.join(OUT, 'expected.npz'), **out)
    print({k: v.shape for k, v in out.items()})


if __name__ == '__main__':
    main()
