"""The detection layers (rill/detection.py: prior_box, box_coder, yolo_box,
multiclass_nms) against PaddlePaddle 1.8.5's outputs (paddle18/detection/, written by
paddle18/gen_detection.py from the same program); Paddle is not needed. And their
argument checks."""
import os
import sys

import numpy as np
import pytest

import rill as fluid
import rill.layers as L

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_detection as gen  # noqa: E402

WANT = dict(np.load(os.path.join(DATA, 'detection', 'expected.npz')))


def test_detection_layers_as_paddle18():
    main, startup, fetch = gen.build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        got = exe.run(main, feed=gen.inputs(), fetch_list=fetch, return_numpy=False)
    assert len(got) == 10
    for i, v in enumerate(got):
        arr = np.asarray(v)
        want = WANT['%d' % i]
        assert arr.shape == want.shape and arr.dtype == want.dtype, (i, arr.shape, want.shape)
        np.testing.assert_allclose(arr, want, rtol=1e-5, atol=1e-6, err_msg='output %d' % i)
        lod = v.lod()[0] if v.lod() else []
        np.testing.assert_array_equal(np.asarray(lod, 'int64'), WANT['%d.lod' % i])
    assert all(o.stop_gradient for o in fetch[:4])


def test_detection_layers_check_their_arguments():
    x = fluid.data('x', [1, 2, 3, 4], 'float32')
    with pytest.raises(ValueError, match='steps should be a list or tuple with length 2'):
        L.prior_box(x, x, [8.0], steps=[1.0])
    with pytest.raises(TypeError, match='variance of box_coder must be Variable or list'):
        L.box_coder(x, 0.1, x)
    with pytest.raises(TypeError, match='class_num of yolo_box must be an integer'):
        L.yolo_box(x, x, [10, 13], 2.0, 0.01, 8)
    with pytest.raises(TypeError, match='multiclass_nms: nms_top_k must be int'):
        L.multiclass_nms(x, x, 0.1, 4.0, 3)
