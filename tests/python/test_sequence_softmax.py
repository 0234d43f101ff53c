"""fluid.layers.sequence_softmax and its gradient against PaddlePaddle 1.8.5's numbers
(paddle18/sequence_softmax/, written by paddle18/gen_sequence_softmax.py from the same
program, LoD sequences with an empty one). Paddle is not needed."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_sequence_softmax as gen  # noqa: E402


def test_sequence_softmax_and_gradient_as_paddle18():
    want = dict(np.load(os.path.join(DATA, 'sequence_softmax', 'expected.npz')))
    np.testing.assert_array_equal(want['x'], gen.inputs()['x'])
    prog, startup, fetch = gen.build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    place = fluid.CPUPlace()
    feed = {'x': fluid.create_lod_tensor(want['x'], [gen.SEQ_LENS], place), 'w': want['w']}
    out, dx = exe.run(prog, feed=feed, fetch_list=fetch, return_numpy=False)
    assert out.recursive_sequence_lengths() == [gen.SEQ_LENS]
    np.testing.assert_allclose(np.array(out), want['out'], rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(np.array(dx), want['dx'], rtol=1e-12, atol=1e-16)


def test_layer_checks_its_input():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        ids = fluid.data('ids', [None, 1], 'int64', lod_level=1)
        with pytest.raises(TypeError, match='float32 or float64'):
            fluid.layers.sequence_softmax(ids)
        x = fluid.data('x', [None, 1], 'float32', lod_level=1)
        assert fluid.layers.sequence_softmax(x).dtype.name == 'float32'
