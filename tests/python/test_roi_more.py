"""psroi_pool, prroi_pool and deformable_roi_pooling against Paddle 1.8.5
(paddle18/roi_more/expected.npz, written by paddle18/gen_roi_more.py from the same
program): outputs (ROIs split by LoD and by batch_roi_nums; shifted, position-sensitive and
no_trans pooling) and, through append_backward, the gradients of the feature maps, of
prroi_pool's ROIs and of deformable_roi_pooling's trans; and the errors bad arguments
get."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_roi_more as gen  # noqa: E402


def test_roi_pools_and_gradients_as_paddle18():
    ref = np.load(os.path.join(DATA, 'roi_more', 'expected.npz'))
    main, startup, outs, grads = gen.build(fluid)
    types = [op.type for op in main.global_block().ops]
    for t in ('psroi_pool_grad', 'prroi_pool_grad', 'deformable_psroi_pooling_grad'):
        assert t in types, t
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        vals = exe.run(main, feed=gen.feed(fluid), fetch_list=outs + grads)
    assert len(vals) == len(ref.files)
    for i, v in enumerate(vals):
        want = ref['v%d' % i]
        got = np.asarray(v)
        assert got.shape == want.shape, (i, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6, err_msg='fetch %d' % i)


def test_bad_arguments_are_named():
    L = fluid.layers
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('feat', [1, 8, 4, 4], 'float32')
        rois = fluid.data('boxes', [None, 4], 'float32', lod_level=1)
        with pytest.raises(TypeError, match='psroi_pool: spatial_scale must be float'):
            L.psroi_pool(x, rois, 2, 1, 2, 2)
        with pytest.raises(TypeError, match='prroi_pool: pooled_height must be int'):
            L.prroi_pool(x, rois, 1.0, 2.0, 2)
        with pytest.raises(TypeError, match=r"batch_roi_nums \('n'\) is int32"):
            L.prroi_pool(x, rois, batch_roi_nums=fluid.data('n', [1], 'int32'))
        with pytest.raises(fluid.Error, match=r'psroi_pool.*feat.*8 channels'):
            L.psroi_pool(x, rois, 3, 1.0, 2, 2)
        t = fluid.data('shift', [None, 2, 2, 2], 'float32')
        with pytest.raises(ValueError, match='deformable_roi_pooling: group_size must hold 2'):
            L.deformable_roi_pooling(x, rois, t, group_size=[1, 1, 1])
        with pytest.raises(fluid.Error, match=r'deformable_psroi_pooling.*shift.*>= 3'):
            L.deformable_roi_pooling(x, rois, t, pooled_height=3, pooled_width=3)
