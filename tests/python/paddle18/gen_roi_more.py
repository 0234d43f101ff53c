"""Writes roi_more/expected.npz: Paddle 1.8.5's outputs of psroi_pool, prroi_pool (ROIs
split by LoD, and by batch_roi_nums) and deformable_roi_pooling (shifted, position-
sensitive through the op itself, since Paddle's layer passes a float output_dim under
Python 3; no_trans) on seeded inputs, and the gradients of the feature maps (and of
prroi_pool's ROIs and deformable_roi_pooling's trans) under a weighted sum of the outputs,
from append_backward. `build(fluid)` is shared
with tests/python/test_roi_more.py. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'roi_more')
SEED = 20201130
# (layer, pooled_height, pooled_width, spatial_scale, extra): psroi_pool takes
# output_channels, prroi_pool takes ROIs without LoD and batch_roi_nums when extra is True
CASES = [('psroi_pool', 2, 2, 0.5, 3), ('psroi_pool', 3, 2, 0.25, 2),
         ('prroi_pool', 2, 3, 0.5, False), ('prroi_pool', 3, 2, 0.4, True)]
# deformable_roi_pooling: (channels, pooled, group, part, sample_per_part, trans channels,
# trans_std, no_trans, position_sensitive); parts square (Paddle's gradient indexes the
# part column by part_height)
DEFORM = [(4, 2, 1, 2, 2, 2, 0.1, False, False), (3, 3, 1, 3, 3, 2, 0.1, True, False),
          (8, 2, 2, 2, 2, 4, 0.2, False, True)]
ROIS = [[1.0, 2.0, 9.0, 12.0], [0.0, 0.0, 15.0, 15.0], [5.5, 3.2, 7.9, 14.1]]


def data():
    r = np.random.RandomState(SEED)
    d = {'ps_x': r.uniform(-1, 1, (2, 12, 7, 8)).astype('float32'),
         'pr_x': r.uniform(-1, 1, (2, 3, 8, 9)).astype('float32'),
         'rois': np.array(ROIS, 'float32'),
         'rois_plain': np.array(ROIS, 'float32'),
         'roi_nums': np.array([1, 2], 'int64')}
    for i, (layer, ph, pw, _, extra) in enumerate(CASES):
        c = extra if layer == 'psroi_pool' else 3
        d['w%d' % i] = r.uniform(-1, 1, (3, c, ph, pw)).astype('float32')
    for i, (c, p, g, part, _, tc, _, _, ps) in enumerate(DEFORM):
        d['d_x%d' % i] = r.uniform(-1, 1, (2, c, 6, 7)).astype('float32')
        d['d_t%d' % i] = r.uniform(-1, 1, (3, tc, part, part)).astype('float32')
        d['d_w%d' % i] = r.uniform(-1, 1, (3, c // (p * p) if ps else c, p, p)).astype('float32')
    return d


def feed(fluid):
    """The feed, ROIs as a LoD tensor of images [2, 1] (rois_plain has none)."""
    d = data()
    t = fluid.LoDTensor()
    t.set(d['rois'], fluid.CPUPlace())
    t.set_recursive_sequence_lengths([[2, 1]])
    d['rois'] = t
    return d


def build(fluid):
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ps_x = fluid.data('ps_x', [None, 12, 7, 8], 'float32')
        pr_x = fluid.data('pr_x', [None, 3, 8, 9], 'float32')
        ps_x.stop_gradient = pr_x.stop_gradient = False
        rois = fluid.data('rois', [None, 4], 'float32', lod_level=1)
        plain = fluid.data('rois_plain', [None, 4], 'float32')
        rois.stop_gradient = plain.stop_gradient = False
        nums = fluid.data('roi_nums', [None], 'int64')
        outs, terms = [], []
        for i, (layer, ph, pw, scale, extra) in enumerate(CASES):
            if layer == 'psroi_pool':
                o = L.psroi_pool(ps_x, rois, extra, scale, ph, pw)
            elif extra:
                o = L.prroi_pool(pr_x, plain, scale, ph, pw, batch_roi_nums=nums)
            else:
                o = L.prroi_pool(pr_x, rois, scale, ph, pw)
            w = fluid.data('w%d' % i, [None, o.shape[1], ph, pw], 'float32')
            outs.append(o)
            terms.append(L.reduce_sum(L.elementwise_mul(o, w)))
        for i, (c, p, g, part, sp, tc, std, no_trans, ps) in enumerate(DEFORM):
            x = fluid.data('d_x%d' % i, [None, c, 6, 7], 'float32')
            t = fluid.data('d_t%d' % i, [None, tc, part, part], 'float32')
            x.stop_gradient = t.stop_gradient = False
            kw = dict(no_trans=no_trans, spatial_scale=0.45, group_size=[g, g],
                      pooled_height=p, pooled_width=p, part_size=[part, part],
                      sample_per_part=sp, trans_std=std)
            if ps and fluid.__name__.startswith('paddle'):
                o = deformable_op(fluid, x, rois, t, c // (p * p), kw)
            else:
                o = L.deformable_roi_pooling(x, rois, t, position_sensitive=ps, **kw)
            w = fluid.data('d_w%d' % i, [None, o.shape[1], p, p], 'float32')
            outs.append(o)
            terms.append(L.reduce_sum(L.elementwise_mul(o, w)))
        fluid.backward.append_backward(L.sums(terms))
        names = ['ps_x', 'pr_x', 'rois', 'rois_plain']
        names += ['d_x%d' % i for i in range(len(DEFORM))]
        names += ['d_t%d' % i for i in range(len(DEFORM)) if not DEFORM[i][7]]
        grads = [main.global_block().var(n + '@GRAD') for n in names]
    return main, startup, outs, grads


def deformable_op(fluid, x, rois, t, out_c, kw):
    """Paddle's deformable_psroi_pooling op with an int output_dim."""
    from paddle.fluid.layer_helper import LayerHelper
    h = LayerHelper('deformable_psroi_pooling')
    out = h.create_variable_for_type_inference('float32')
    cnt = h.create_variable_for_type_inference('float32')
    attrs = dict(kw, output_dim=out_c)
    h.append_op(type='deformable_psroi_pooling',
                inputs={'Input': x, 'ROIs': rois, 'Trans': t},
                outputs={'Output': out, 'TopCount': cnt}, attrs=attrs)
    return out


def main_():
    import paddle.fluid as fluid
    main, startup, outs, grads = build(fluid)
    print([op.type for op in main.global_block().ops])
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        vals = exe.run(main, feed=feed(fluid), fetch_list=outs + grads)
    ref = {'v%d' % i: np.asarray(v) for i, v in enumerate(vals)}
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **ref)
    for k in sorted(ref):
        print(k, ref[k].shape)


if __name__ == '__main__':
    main_()
