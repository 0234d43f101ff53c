"""layers.tensor_array_to_tensor: the items of an array concatenated (or stacked) with
their extents, against numpy, and trained through: the gradient of a weighted sum of the
result reaches the items' sources."""
import numpy as np
import pytest

import rill as fluid


def build(use_stack, axis):
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        a = fluid.data('a', [2, 3], 'float32')
        b = fluid.data('b', [2, 3] if use_stack else [2, 1], 'float32')
        a.stop_gradient = False
        b.stop_gradient = False
        i0 = L.fill_constant([1], 'int64', 0)
        i1 = L.fill_constant([1], 'int64', 1)
        arr = L.array_write(L.scale(a, scale=2.0), i0)
        L.array_write(L.scale(b, scale=3.0), i1, array=arr)
        out, index = L.tensor_array_to_tensor(arr, axis=axis, use_stack=use_stack)
        w = fluid.data('w', [-1], 'float32')
        loss = L.reduce_sum(L.elementwise_mul(L.reshape(out, [-1]), w))
        fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
    return main, out, index


@pytest.mark.parametrize('use_stack,axis', [(False, 1), (True, 0), (True, 2), (True, -1)])
def test_forward_and_gradient_against_numpy(use_stack, axis):
    rng = np.random.RandomState(3)
    a = rng.randn(2, 3).astype('float32')
    b = rng.randn(2, 3 if use_stack else 1).astype('float32')
    main, out, index = build(use_stack, axis)
    want = (np.stack if use_stack else np.concatenate)([2 * a, 3 * b], axis=axis)
    w = rng.randn(want.size).astype('float32')
    exe = fluid.Executor(fluid.CPUPlace())
    o, idx, ga, gb = exe.run(main, feed={'a': a, 'b': b, 'w': w},
                             fetch_list=[out, index, 'a@GRAD', 'b@GRAD'])
    np.testing.assert_allclose(np.asarray(o), want, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(idx), [1, 1] if use_stack else [3, 1])
    gw = w.reshape(want.shape)
    parts = [np.take(gw, k, axis=axis) for k in range(2)] if use_stack else \
        np.split(gw, [3], axis=axis)
    np.testing.assert_allclose(np.asarray(ga), 2 * parts[0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gb), 3 * parts[1], rtol=1e-6)
