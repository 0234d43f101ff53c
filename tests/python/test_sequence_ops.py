"""The sequence layers against Paddle 1.8.5 (paddle18/sequence_ops/, written by
paddle18/gen_sequence_ops.py from the same programs): each layer's output, its sequence
lengths and the gradient of its input; and the layers' argument checks."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_sequence_ops as gen  # noqa: E402


@pytest.mark.parametrize('case', gen.CASES)
def test_sequence_layer_as_paddle18(case):
    ref = np.load(os.path.join(DATA, 'sequence_ops', 'expected.npz'))
    data = gen.inputs()
    for k in data:
        np.testing.assert_array_equal(ref[k], data[k])
    main, startup, fetch = gen.build(fluid, case)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        vals = exe.run(main, feed=gen.feed(fluid, data), fetch_list=fetch, return_numpy=False)
    out = vals[0]
    np.testing.assert_allclose(np.array(out), ref[case + '_out'], rtol=1e-6, atol=1e-7)
    lens = sum(out.recursive_sequence_lengths(), []) or [-1]
    np.testing.assert_array_equal(np.array(lens), ref[case + '_lens'])
    if len(vals) > 1:
        np.testing.assert_allclose(np.array(vals[1]), ref[case + '_grad'], rtol=1e-5, atol=1e-6)


def test_sequence_layers_check_their_arguments():
    L = fluid.layers
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('x', [None, 3], 'float32', lod_level=1)
        ids = fluid.data('ids', [None, 1], 'int64', lod_level=1)
        with pytest.raises(TypeError, match='sequence_enumerate: input must be int32 or int64'):
            L.sequence_enumerate(x, 2)
        with pytest.raises(ValueError, match='win_size must be 1 or more'):
            L.sequence_enumerate(ids, 0)
        with pytest.raises(TypeError, match='sequence_unpad: length must be int64'):
            L.sequence_unpad(x, x)
        with pytest.raises(TypeError, match='sequence_pad: pad_value must be a Variable'):
            L.sequence_pad(x, 0.0)


def test_unpad_rejects_a_length_past_the_padding():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [2, 3, 1], 'float32')
        n = fluid.data('n', [2], 'int64')
        out = fluid.layers.sequence_unpad(x, n)
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {'x': np.zeros((2, 3, 1), 'float32'), 'n': np.array([1, 4], 'int64')}
    with pytest.raises(Exception, match=r'sequence_unpad.*Length\[1\] = 4 is outside \[0, 3\]'):
        exe.run(main, feed=feed, fetch_list=[out])
    got, = exe.run(main, feed={'x': np.arange(6, dtype='float32').reshape(2, 3, 1),
                               'n': np.array([1, 3], 'int64')}, fetch_list=[out])
    np.testing.assert_array_equal(np.asarray(got).ravel(), [0, 3, 4, 5])
