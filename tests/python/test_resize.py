"""image_resize, interpolate, resize_bilinear, resize_nearest, pixel_shuffle,
shuffle_channel and space_to_depth against Paddle 1.8.5
(paddle18/resize/expected.npz, written by paddle18/gen_resize.py from the same program):
outputs and, through append_backward, the gradients of the inputs (the
bilinear_interp_grad and nearest_interp_grad ops); and the errors bad arguments get."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_resize as gen  # noqa: E402


def test_resize_layers_and_gradients_as_paddle18():
    ref = np.load(os.path.join(DATA, 'resize', 'expected.npz'))
    main, startup, outs, grads = gen.build(fluid)
    types = [op.type for op in main.global_block().ops]
    for t in ('bilinear_interp_grad', 'nearest_interp_grad', 'pixel_shuffle_grad',
              'shuffle_channel_grad', 'space_to_depth_grad'):
        assert t in types, t
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        vals = exe.run(main, feed=gen.data(), fetch_list=outs + grads)
    assert len(vals) == len(ref.files)
    for i, v in enumerate(vals):
        want = ref['v%d' % i]
        got = np.asarray(v)
        assert got.shape == want.shape, (i, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg='fetch %d' % i)


def test_bad_arguments_are_named():
    L = fluid.layers
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('img', [1, 2, 3, 4], 'float32')
        with pytest.raises(ValueError, match='TRILINEAR'):
            L.image_resize(x, [4, 4], resample='TRILINEAR')
        with pytest.raises(ValueError, match='one of out_shape and scale'):
            L.resize_bilinear(x)
        with pytest.raises(ValueError, match='align_mode'):
            L.resize_bilinear(x, [2, 2], align_mode=3)
        with pytest.raises(ValueError, match=r"input \('v'\) must be 4-D"):
            L.resize_nearest(fluid.data('v', [2, 3], 'float32'), [2, 2])
        with pytest.raises(ValueError, match='positive'):
            L.resize_nearest(x, [0, 2])
        with pytest.raises(ValueError, match='blocksize must be an int >= 1'):
            L.space_to_depth(x, 0)
        with pytest.raises(fluid.Error, match=r"shuffle_channel.*X \(img\).*group 3"):
            L.shuffle_channel(x, 3)
