"""Writes roi_perspective/: Paddle 1.8.5's numbers for layers.roi_perspective_transform.
`build(fluid)` (shared with tests/python/test_roi_perspective.py) warps quadrilaterals
(two on image 0, one on image 1, spatial_scale 0.5, some reaching past the map) to
4 x 5 and takes the mean of the squared output; recorded: Out, Mask, TransformMatrix and
x@GRAD. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'roi_perspective')
SHAPE = [2, 3, 7, 9]
LOD = [[2, 1]]
FETCH = ('out', 'mask', 'matrix', 'xgrad')


def build(fluid):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', SHAPE, 'float32')
        x.stop_gradient = False
        rois = fluid.data('rois', [None, 8], 'float32', lod_level=1)
        out, mask, matrix = fluid.layers.roi_perspective_transform(x, rois, 4, 5, 0.5)
        loss = fluid.layers.mean(fluid.layers.square(out))
        fluid.backward.append_backward(loss)
    return main, startup, [out, mask, matrix, 'x@GRAD']


def inputs():
    rng = np.random.RandomState(11)
    x = rng.randn(*SHAPE).astype('float32')
    rois = np.array([[2.0, 1.5, 13.0, 3.0, 12.5, 11.0, 1.0, 9.5],     # a general quadrilateral
                     [0.0, 0.0, 8.0, 0.0, 8.0, 6.0, 0.0, 6.0],        # a rectangle
                     [-3.0, 2.0, 15.0, -1.0, 19.0, 15.0, 1.0, 12.0]],  # past the map
                    'float32')
    return x, rois


def run(fluid, lod_tensor):
    main, startup, fetch = build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    x, rois = inputs()
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        vals = exe.run(main, feed={'x': x, 'rois': lod_tensor(rois, LOD)}, fetch_list=fetch,
                       return_numpy=False)
    return {k: np.array(v) for k, v in zip(FETCH, vals)}


def main():
    import paddle.fluid as fluid
    out = run(fluid, lambda a, lod: fluid.create_lod_tensor(a, lod, fluid.CPUPlace()))
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)
    print({k: (v.shape, v.dtype.name) for k, v in out.items()})
    print(out['matrix'])


if __name__ == '__main__':
    main()
