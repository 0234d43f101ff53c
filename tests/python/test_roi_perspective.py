"""layers.roi_perspective_transform against Paddle 1.8.5 (paddle18/roi_perspective/,
written by paddle18/gen_roi_perspective.py from the same program): Out, Mask,
TransformMatrix and x@GRAD of a general quadrilateral, a rectangle and one reaching past
the map; the layer's return values and errors."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_roi_perspective as gen  # noqa: E402


def test_roi_perspective_transform_matches_paddle():
    ref = np.load(os.path.join(DATA, 'roi_perspective', 'expected.npz'))
    got = gen.run(fluid, lambda a, lod: fluid.create_lod_tensor(a, lod, fluid.CPUPlace()))
    np.testing.assert_array_equal(got['mask'], ref['mask'])
    assert got['mask'].dtype == np.int32
    assert 0 < ref['mask'].sum() < ref['mask'].size     # some samples fall outside
    np.testing.assert_allclose(got['matrix'], ref['matrix'], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got['out'], ref['out'], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got['xgrad'], ref['xgrad'], rtol=1e-5, atol=1e-6)


def test_roi_perspective_transform_layer_outputs_and_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('x', [1, 2, 5, 5], 'float32')
        rois = fluid.data('rois', [None, 8], 'float32', lod_level=1)
        out, mask, matrix = fluid.layers.roi_perspective_transform(x, rois, 3, 4)
        assert (out.dtype.name, mask.dtype.name, matrix.dtype.name) == \
            ('float32', 'int32', 'float32')
        bad = fluid.data('bad', [None, 8], 'int32', lod_level=1)
        with pytest.raises(TypeError, match="roi_perspective_transform: rois .'bad'. is int32"):
            fluid.layers.roi_perspective_transform(x, bad, 3, 4)
