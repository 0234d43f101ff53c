"""The programs of tests/python/test_vision.py, built the same way with paddle.fluid or
rill: conv3d, conv3d_transpose, pool3d (NCDHW and NDHWC), pool2d (NHWC), adaptive_pool2d,
adaptive_pool3d, resize_trilinear and image_resize_short (and their gradients), mean_iou,
conv2d with data_format NHWC, Fluid 1.8's padding forms of conv2d, conv2d_transpose
(with NHWC) and conv3d, and conv3d / conv3d_transpose with data_format NDHWC, on seeded
inputs and parameters. Run under Paddle 1.8.5
(`PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python /tmp/pd18/bin/python gen_vision.py`) it
prints Paddle's outputs as the REF literal that the test embeds."""
import sys

import numpy as np

import gen_seqops

SEED = 20201129

CONV3D_CASES = {
    # 3x3x3, padding 1, a bias
    'conv3d_basic': dict(shape=(2, 3, 4, 5, 4), num_filters=4, filter_size=3, stride=1,
                         padding=1, dilation=1, groups=None, bias=True, act=None),
    # groups, asymmetric paddings (6 values), strides and dilations per dim, relu
    'conv3d_groups': dict(shape=(1, 4, 5, 6, 7), num_filters=6, filter_size=[2, 3, 2],
                          stride=[1, 2, 2], padding=[1, 0, 0, 1, 2, 1], dilation=[2, 1, 1],
                          groups=2, bias=True, act='relu'),
    # SAME with stride 2, no bias
    'conv3d_same': dict(shape=(2, 2, 5, 4, 6), num_filters=3, filter_size=[3, 2, 3],
                        stride=2, padding='SAME', dilation=1, groups=None, bias=False,
                        act=None),
}


CONVT_CASES = {
    # stride 2, padding 1, a bias
    'conv3d_transpose_basic': dict(transpose=True, shape=(2, 3, 3, 2, 3), num_filters=4,
                                   filter_size=3, stride=2, padding=1, dilation=1,
                                   groups=None, bias=True, act=None),
    # groups, asymmetric paddings, dilation, output_size, tanh
    'conv3d_transpose_groups': dict(transpose=True, shape=(1, 4, 2, 3, 3), num_filters=6,
                                    filter_size=[2, 3, 2], stride=[1, 2, 2],
                                    padding=[1, 0, 0, 1, 1, 0], dilation=[2, 1, 1], groups=2,
                                    bias=True, act='tanh', output_size=[3, 7, 6]),
    # filter_size derived from output_size; SAME
    'conv3d_transpose_same': dict(transpose=True, shape=(1, 2, 3, 2, 3), num_filters=3,
                                  filter_size=[3, 2, 3], stride=2, padding='SAME', dilation=1,
                                  groups=None, bias=False, act=None),
    'conv3d_transpose_osize': dict(transpose=True, shape=(1, 2, 2, 3, 2), num_filters=2,
                                   filter_size=None, output_size=[4, 5, 5], stride=[2, 1, 2],
                                   padding=0, dilation=1, groups=None, bias=True, act=None),
}
CONV3D_CASES.update(CONVT_CASES)


def conv3d_case(c, **extra):
    """A conv3d / conv3d_transpose case (transpose=True for the latter) as build_layer
    takes it."""
    c = dict(c, **extra)
    c['layer'] = 'conv3d_transpose' if c.pop('transpose', False) else 'conv3d'
    return c


def build_conv3d(fluid, case):
    """Output and the gradients of sum(Output * dout) with respect to the input and the
    parameters (build_layer's program)."""
    return build_layer(fluid, conv3d_case(CONV3D_CASES[case]), SEED + sorted(CONV3D_CASES).index(case))


POOL_CASES = {
    # windows of unequal sizes that overlap ([7 -> 2], [5 -> 3])
    'adaptive_pool2d_avg': dict(nd=2, shape=(2, 3, 7, 5), pool_size=[2, 3], pool_type='avg'),
    'adaptive_pool2d_max': dict(nd=2, shape=(1, 2, 5, 8), pool_size=[3, 2], pool_type='max'),
    # an int pool_size; out 4 of in 9
    'adaptive_pool2d_int': dict(nd=2, shape=(1, 2, 9, 6), pool_size=4, pool_type='avg'),
    'adaptive_pool3d_avg': dict(nd=3, shape=(1, 2, 5, 7, 4), pool_size=[2, 3, 3],
                                pool_type='avg'),
    'adaptive_pool3d_max': dict(nd=3, shape=(2, 2, 6, 5, 5), pool_size=[4, 2, 3],
                                pool_type='max'),
    # pool3d: 2x2x2 stride 2 max
    'pool3d_max': dict(nd=0, shape=(2, 2, 4, 6, 5), pool_size=2, pool_type='max',
                       pool_stride=2),
    # padding, not exclusive, ceil_mode
    'pool3d_avg_ceil': dict(nd=0, shape=(1, 3, 5, 6, 7), pool_size=[3, 2, 3],
                            pool_type='avg', pool_stride=[2, 2, 3], pool_padding=[1, 0, 1],
                            ceil_mode=True, exclusive=False),
    # asymmetric paddings (6 values), exclusive avg
    'pool3d_avg_pads': dict(nd=0, shape=(1, 2, 4, 5, 6), pool_size=[2, 3, 3],
                            pool_type='avg', pool_stride=1, pool_padding=[1, 0, 0, 2, 1, 1]),
    # SAME max, and global avg
    'pool3d_same': dict(nd=0, shape=(1, 2, 5, 4, 7), pool_size=[3, 2, 3], pool_type='max',
                        pool_stride=2, pool_padding='SAME'),
    'pool3d_global': dict(nd=0, shape=(2, 3, 3, 4, 2), pool_size=-1, pool_type='avg',
                          global_pooling=True),
    # channel-last (NDHWC): max with asymmetric paddings, avg ceil_mode not exclusive, SAME
    'pool3d_ndhwc_max': dict(nd=0, shape=(2, 4, 6, 5, 3), pool_size=[2, 3, 2], pool_type='max',
                             pool_stride=[2, 2, 1], pool_padding=[1, 0, 0, 1, 1, 1],
                             data_format='NDHWC'),
    'pool3d_ndhwc_avg_ceil': dict(nd=0, shape=(1, 5, 6, 7, 2), pool_size=[3, 2, 3],
                                  pool_type='avg', pool_stride=[2, 2, 3], pool_padding=[1, 0, 1],
                                  ceil_mode=True, exclusive=False, data_format='NDHWC'),
    'pool3d_ndhwc_same': dict(nd=0, shape=(1, 5, 4, 7, 3), pool_size=[3, 2, 3],
                              pool_type='avg', pool_stride=2, pool_padding='SAME',
                              data_format='NDHWC'),
}


def scaled_program(fluid, shape, seed, layer, scale_name):
    """The program of layer(x * scale) (scale: a per-column parameter, 1.5): Out and the
    gradients of sum(Out * dout) with respect to x and to the scale."""
    r = np.random.RandomState(seed)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', list(shape), 'float32')
        x.stop_gradient = False
        p = fluid.layers.create_parameter([shape[-1]], 'float32', name=scale_name,
                                          default_initializer=fluid.initializer.Constant(1.5))
        y = layer(fluid.layers.elementwise_mul(x, p))
        dout = fluid.data('dout', list(y.shape), 'float32')
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(y, dout))
        fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
    feed = {'x': r.uniform(-1, 1, shape).astype('float32'),
            'dout': r.uniform(-1, 1, y.shape).astype('float32')}
    return main, startup, feed, [y.name, 'x@GRAD', scale_name + '@GRAD'], {}


def build_pool(fluid, case):
    c = POOL_CASES[case]

    def layer(xs):
        if c['nd']:
            return getattr(fluid.layers, 'adaptive_pool%dd' % c['nd'])(
                xs, c['pool_size'], pool_type=c['pool_type'])
        return fluid.layers.pool3d(xs, **{k: v for k, v in c.items() if k not in ('nd', 'shape')})

    return scaled_program(fluid, c['shape'], SEED + 10 + sorted(POOL_CASES).index(case), layer,
                          'pool_scale')


# pool2d channel-last (NHWC); seeds of their own (SEED + 70 + index), so the cases above
# keep theirs
POOL2D_CASES = {
    # max, asymmetric paddings as 4 pairs over N, H, W, C
    'pool2d_nhwc_max': dict(shape=(2, 5, 6, 3), pool_size=[3, 2], pool_type='max',
                            pool_stride=[2, 1], pool_padding=[[0, 0], [1, 0], [0, 1], [0, 0]],
                            data_format='NHWC'),
    # avg with ceil_mode (exclusive), and avg counting the padding (4 ints)
    'pool2d_nhwc_avg_ceil': dict(shape=(1, 6, 7, 4), pool_size=3, pool_type='avg',
                                 pool_stride=2, pool_padding=1, ceil_mode=True,
                                 data_format='NHWC'),
    'pool2d_nhwc_avg_incl': dict(shape=(1, 5, 6, 3), pool_size=[2, 3], pool_type='avg',
                                 pool_stride=[1, 2], pool_padding=[1, 0, 1, 1],
                                 exclusive=False, data_format='NHWC'),
    # SAME avg, and global max
    'pool2d_nhwc_same': dict(shape=(1, 5, 7, 2), pool_size=[3, 2], pool_type='avg',
                             pool_stride=2, pool_padding='SAME', data_format='NHWC'),
    'pool2d_nhwc_global': dict(shape=(2, 3, 4, 3), pool_size=-1, pool_type='max',
                               global_pooling=True, data_format='NHWC'),
}


def build_pool2d(fluid, case):
    c = POOL2D_CASES[case]

    def layer(xs):
        return fluid.layers.pool2d(xs, **{k: v for k, v in c.items() if k != 'shape'})

    return scaled_program(fluid, c['shape'], SEED + 70 + sorted(POOL2D_CASES).index(case),
                          layer, 'pool_scale')


RESIZE_CASES = {
    # align_corners (the default), by scale
    'resize_trilinear_corners': dict(shape=(1, 2, 3, 4, 3), out_shape=None, scale=1.5,
                                     align_corners=True, align_mode=1, data_format='NCDHW'),
    # half-pixel centres (align_mode 0), down and up
    'resize_trilinear_half': dict(shape=(2, 2, 4, 3, 5), out_shape=[3, 5, 4], scale=None,
                                  align_corners=False, align_mode=0, data_format='NCDHW'),
    # src = ratio * dst (align_mode 1), channel-last
    'resize_trilinear_ndhwc': dict(shape=(1, 3, 4, 5, 2), out_shape=[5, 3, 7], scale=None,
                                   align_corners=False, align_mode=1, data_format='NDHWC'),
    # image_resize_short: W the short side (7 -> 4, H 9 -> int(9 * 4 / 7 + 0.5) = 5)
    'resize_short_bilinear': dict(shape=(1, 2, 9, 7), short=4, resample='BILINEAR'),
    # H the short side, nearest, upsampling
    'resize_short_nearest': dict(shape=(2, 1, 3, 5), short=4, resample='NEAREST'),
}


def build_resize(fluid, case):
    c = RESIZE_CASES[case]

    def layer(xs):
        if 'short' in c:
            return fluid.layers.image_resize_short(xs, c['short'], resample=c['resample'])
        return fluid.layers.resize_trilinear(xs, out_shape=c['out_shape'], scale=c['scale'],
                                             align_corners=c['align_corners'],
                                             align_mode=c['align_mode'],
                                             data_format=c['data_format'])

    return scaled_program(fluid, c['shape'], SEED + 30 + sorted(RESIZE_CASES).index(case), layer,
                          'rs_scale')


MIOU_CASES = {
    # int64 ids, 4 classes (class 3 never seen)
    'mean_iou_int64': dict(dtype='int64', shape=(3, 7), k=4, seen=3),
    # int32 ids of a [N, 1, H, W] segmentation map, 5 classes
    'mean_iou_int32': dict(dtype='int32', shape=(2, 1, 4, 5), k=5, seen=5),
}


def build_mean_iou(fluid, case):
    c = MIOU_CASES[case]
    r = np.random.RandomState(SEED + 50 + sorted(MIOU_CASES).index(case))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        p = fluid.data('pred', list(c['shape']), c['dtype'])
        l = fluid.data('label', list(c['shape']), c['dtype'])
        outs = fluid.layers.mean_iou(p, l, c['k'])
    pred = r.randint(0, c['seen'], c['shape']).astype(c['dtype'])
    label = np.where(r.uniform(size=c['shape']) < 0.5, pred,
                     r.randint(0, c['seen'], c['shape'])).astype(c['dtype'])
    return main, startup, {'pred': pred, 'label': label}, [o.name for o in outs], {}


# conv2d with data_format NHWC (channel-last Input and Output, OIHW Filter)
CONV2D_NHWC_CASES = {
    # 3x3, padding 1, a bias (added over the last dim)
    'conv2d_nhwc_basic': dict(shape=(2, 5, 6, 3), num_filters=4, filter_size=3, stride=1,
                              padding=1, dilation=1, groups=None, bias=True, act=None),
    # groups, strides and dilations per dim, relu, no bias
    'conv2d_nhwc_groups': dict(shape=(1, 7, 6, 4), num_filters=6, filter_size=[3, 2],
                               stride=[2, 1], padding=[1, 0], dilation=[1, 2], groups=2,
                               bias=False, act='relu'),
}


def build_conv2d_nhwc(fluid, case):
    """build_layer's program for a CONV2D_NHWC_CASES case."""
    return build_layer(fluid, dict(CONV2D_NHWC_CASES[case], layer='conv2d', data_format='NHWC'),
                       SEED + 70 + sorted(CONV2D_NHWC_CASES).index(case))


# ---- Fluid 1.8's padding forms (SAME, VALID, 4 values, [before, after] pairs) and
# conv2d_transpose with NHWC. Seeds of their own (SEED + 200 + index), so the cases above
# keep theirs. ----
PADDING_CASES = {
    # conv2d: SAME with stride 2 (its dilation 2 reset to 1, as Paddle does), VALID,
    # 4 values (top, bottom, left, right), 4 pairs over NCHW and over NHWC
    'conv2d_pad_same': dict(layer='conv2d', shape=(2, 3, 7, 6), num_filters=4, filter_size=3,
                            stride=2, padding='SAME', dilation=2),
    'conv2d_pad_valid': dict(layer='conv2d', shape=(1, 2, 6, 7), num_filters=3,
                             filter_size=[3, 2], stride=[1, 2], padding='VALID', act='relu'),
    'conv2d_pad_four': dict(layer='conv2d', shape=(1, 3, 5, 6), num_filters=2, filter_size=3,
                            padding=[1, 2, 0, 1]),
    'conv2d_pad_nested': dict(layer='conv2d', shape=(2, 4, 5, 5), num_filters=4,
                              filter_size=[2, 3], stride=[2, 1],
                              padding=[[0, 0], [0, 0], [2, 1], [0, 1]], groups=2),
    'conv2d_pad_nested_nhwc': dict(layer='conv2d', shape=(1, 6, 5, 3), num_filters=2,
                                   filter_size=3, padding=[[0, 0], [1, 0], [1, 2], [0, 0]],
                                   data_format='NHWC', bias=False),
    # conv2d_transpose NHWC: stride 2 with a bias; groups, dilation, 4-value paddings and
    # output_size; SAME (NCHW and NHWC); filter_size derived from output_size
    'convt_nhwc_basic': dict(layer='conv2d_transpose', shape=(2, 3, 4, 3), num_filters=4,
                             filter_size=3, stride=2, padding=1, data_format='NHWC'),
    'convt_nhwc_groups': dict(layer='conv2d_transpose', shape=(1, 3, 4, 4), num_filters=6,
                              filter_size=[3, 2], stride=[2, 3], padding=[1, 0, 0, 2],
                              dilation=[1, 2], groups=2, output_size=[7, 12], act='tanh',
                              data_format='NHWC'),
    'convt_same': dict(layer='conv2d_transpose', shape=(1, 2, 4, 5), num_filters=3,
                       filter_size=3, stride=2, padding='SAME'),
    'convt_nhwc_same': dict(layer='conv2d_transpose', shape=(2, 3, 5, 2), num_filters=2,
                            filter_size=[2, 3], stride=[1, 2], padding='SAME',
                            data_format='NHWC', bias=False),
    'convt_nhwc_osize': dict(layer='conv2d_transpose', shape=(1, 3, 3, 2), num_filters=3,
                             filter_size=None, output_size=[6, 8], stride=2,
                             padding=[[0, 0], [1, 0], [0, 1], [0, 0]], data_format='NHWC'),
    # conv3d: SAME with stride 1 and an even filter (the extra padding after), 5 pairs
    'conv3d_pad_same': dict(layer='conv3d', shape=(1, 2, 4, 5, 3), num_filters=3,
                            filter_size=[2, 3, 2], padding='SAME', dilation=[1, 2, 1]),
    'conv3d_pad_nested': dict(layer='conv3d', shape=(1, 2, 3, 4, 4), num_filters=2,
                              filter_size=2, stride=[1, 2, 1],
                              padding=[[0, 0], [0, 0], [1, 0], [0, 2], [1, 1]]),
}


def build_padding(fluid, case):
    """build_layer's program for a PADDING_CASES case."""
    return build_layer(fluid, PADDING_CASES[case], SEED + 200 + sorted(PADDING_CASES).index(case))


def build_layer(fluid, c, seed):
    """The program of conv layer c['layer'] with c's arguments: Output and the gradients
    of sum(Output * dout) with respect to the input and the parameters, the parameters'
    values and the feeds drawn from seed."""
    r = np.random.RandomState(seed)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', list(c['shape']), 'float32')
        x.stop_gradient = False
        kw = dict(stride=c.get('stride', 1), padding=c['padding'],
                  dilation=c.get('dilation', 1), groups=c.get('groups'),
                  bias_attr=None if c.get('bias', True) else False, act=c.get('act'))
        if 'data_format' in c:
            kw['data_format'] = c['data_format']
        if 'use_cudnn' in c:
            kw['use_cudnn'] = c['use_cudnn']
        if c['layer'] in ('conv2d_transpose', 'conv3d_transpose'):
            y = getattr(fluid.layers, c['layer'])(x, c['num_filters'],
                                                  output_size=c.get('output_size'),
                                                  filter_size=c['filter_size'], **kw)
        else:
            y = getattr(fluid.layers, c['layer'])(x, c['num_filters'], c['filter_size'], **kw)
        dout = fluid.data('dout', list(y.shape), 'float32')
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(y, dout))
        fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
    params = main.global_block().all_parameters()
    values = {p.name: r.uniform(-0.5, 0.5, p.shape).astype('float32') for p in params}
    feed = {'x': r.uniform(-1, 1, c['shape']).astype('float32'),
            'dout': r.uniform(-1, 1, y.shape).astype('float32')}
    fetch = [y.name, 'x@GRAD'] + [p.name + '@GRAD' for p in params]
    return main, startup, feed, fetch, values
# ---- end of the padding cases ----


# ---- depthwise_conv2d_transpose: conv2d_transpose with groups == num_filters == the input
# channels and use_cudnn off, which Fluid writes as that op. Seeds SEED + 300 + index. ----
DWCONVT_CASES = {
    'dwconvt_nchw': dict(layer='conv2d_transpose', shape=(2, 3, 4, 5), num_filters=3,
                         filter_size=3, stride=2, padding=1, groups=3, use_cudnn=False),
    'dwconvt_nhwc': dict(layer='conv2d_transpose', shape=(1, 4, 3, 4), num_filters=4,
                         filter_size=[3, 2], stride=[1, 2], padding='SAME', dilation=[2, 1],
                         groups=4, use_cudnn=False, data_format='NHWC', act='relu'),
}


def build_dwconvt(fluid, case):
    """build_layer's program for a DWCONVT_CASES case."""
    return build_layer(fluid, DWCONVT_CASES[case], SEED + 300 + sorted(DWCONVT_CASES).index(case))


# --- avg pooling counting the padding (exclusive False) where the last windows reach past
# it (ceil_mode, or more padding after than before): Paddle 1.8 divides every such window
# by the whole kernel. Seeds of their own (SEED + 160 + index).
POOL_INCL_CASES = {
    # [1, 4, 6, 7], 3x3 stride 2 padding 1: the last row and column of windows reach past
    # the padding
    'pool2d_avg_incl_ceil': dict(shape=(1, 4, 6, 7), pool_size=3, pool_type='avg',
                                 pool_stride=2, pool_padding=1, ceil_mode=True,
                                 exclusive=False),
    # SAME with the odd pixel after (in 6, 7; k 4; stride 3)
    'pool2d_avg_incl_same': dict(shape=(1, 2, 6, 7), pool_size=4, pool_type='avg',
                                 pool_stride=3, pool_padding='SAME', exclusive=False),
    'pool2d_nhwc_avg_incl_ceil': dict(shape=(2, 5, 6, 3), pool_size=3, pool_type='avg',
                                      pool_stride=2,
                                      pool_padding=[[0, 0], [0, 2], [1, 2], [0, 0]],
                                      ceil_mode=True, exclusive=False, data_format='NHWC'),
    'pool3d_avg_incl_ceil': dict(nd=3, shape=(1, 2, 5, 6, 7), pool_size=3, pool_type='avg',
                                 pool_stride=2, pool_padding=1, ceil_mode=True,
                                 exclusive=False),
    'pool3d_ndhwc_avg_incl_ceil': dict(nd=3, shape=(1, 4, 5, 6, 2), pool_size=[2, 3, 3],
                                       pool_type='avg', pool_stride=2,
                                       pool_padding=[[0, 0], [1, 0], [0, 2], [1, 1], [0, 0]],
                                       ceil_mode=True, exclusive=False, data_format='NDHWC'),
}


def build_pool_incl(fluid, case):
    c = POOL_INCL_CASES[case]
    pool = fluid.layers.pool3d if c.get('nd') == 3 else fluid.layers.pool2d

    def layer(xs):
        return pool(xs, **{k: v for k, v in c.items() if k not in ('nd', 'shape')})

    return scaled_program(fluid, c['shape'], SEED + 160 + sorted(POOL_INCL_CASES).index(case),
                          layer, 'pool_scale')
# --- end of the avg pooling cases counting the padding


# ---- conv3d / conv3d_transpose with data_format NDHWC (channel-last Input and Output,
# OIDHW Filter); seeds of their own (SEED + 90 + index), so the cases above keep theirs
CONV3D_NDHWC_CASES = {
    # 3x3x3, padding 1, a bias (added over the last dim)
    'conv3d_ndhwc_basic': dict(shape=(2, 4, 5, 4, 3), num_filters=4, filter_size=3, stride=1,
                               padding=1, dilation=1, groups=None, bias=True, act=None),
    # groups, asymmetric paddings (6 values), strides and dilations per dim, relu
    'conv3d_ndhwc_groups': dict(shape=(1, 5, 6, 7, 4), num_filters=6, filter_size=[2, 3, 2],
                                stride=[1, 2, 2], padding=[1, 0, 0, 1, 2, 1],
                                dilation=[2, 1, 1], groups=2, bias=True, act='relu'),
    # stride 2, padding 1, a bias
    'conv3d_transpose_ndhwc_basic': dict(transpose=True, shape=(2, 2, 3, 3, 3), num_filters=4,
                                         filter_size=3, stride=2, padding=1, dilation=1,
                                         groups=None, bias=True, act=None),
    # groups, asymmetric paddings, dilation, output_size, tanh, no bias
    'conv3d_transpose_ndhwc_groups': dict(transpose=True, shape=(1, 2, 3, 3, 4),
                                          num_filters=6, filter_size=[2, 3, 2],
                                          stride=[1, 2, 2], padding=[1, 0, 0, 1, 1, 0],
                                          dilation=[2, 1, 1], groups=2, bias=False,
                                          act='tanh', output_size=[3, 7, 6]),
}


def build_conv3d_ndhwc(fluid, case):
    """build_layer's program for an NDHWC case."""
    return build_layer(fluid, conv3d_case(CONV3D_NDHWC_CASES[case], data_format='NDHWC'),
                       SEED + 90 + sorted(CONV3D_NDHWC_CASES).index(case))
# ---- end of the NDHWC conv3d block


def all_cases():
    """(builder, case) for every case, in REF's order."""
    return [(build_conv3d, c) for c in sorted(CONV3D_CASES)] + \
        [(build_pool, c) for c in sorted(POOL_CASES)] + \
        [(build_resize, c) for c in sorted(RESIZE_CASES)] + \
        [(build_mean_iou, c) for c in sorted(MIOU_CASES)] + \
        [(build_pool2d, c) for c in sorted(POOL2D_CASES)] + \
        [(build_conv2d_nhwc, c) for c in sorted(CONV2D_NHWC_CASES)] + \
        [(build_padding, c) for c in sorted(PADDING_CASES)] + \
        [(build_dwconvt, c) for c in sorted(DWCONVT_CASES)] + \
        [(build_pool_incl, c) for c in sorted(POOL_INCL_CASES)] + \
        [(build_conv3d_ndhwc, c) for c in sorted(CONV3D_NDHWC_CASES)]


def main():
    import paddle
    import paddle.fluid as fluid
    assert paddle.__version__ == '1.8.5', paddle.__version__
    np.set_printoptions(precision=9, threshold=100000)
    print('REF = {')
    for build, case in all_cases():
        outs = gen_seqops.run(fluid, build, case)
        print('    %r: [' % case)
        for o in outs:
            print('        %r,' % (o.astype('float64').round(8).tolist(),))
        print('    ],')
    print('}')


if __name__ == '__main__':
    sys.exit(main())
