"""Writes vision_more/: Paddle 1.8.5's numbers for unfold and im2sequence (outputs, LoD
and input gradients; im2sequence's input_image_size variant forward only), random_crop
(two chained runs each, the seed variable after each), similarity_focus and
spectral_norm (output and the weight's gradient). `build_*(fluid, case)` and `run_case`
are shared with tests/python/test_vision_more.py, which builds the same programs with
rill. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

import gen_seqops

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'vision_more')
SEED = 20201203


def _grad_loss(fluid, y, dout_shape, lod=False):
    """sum(y * dout) with dout fed, so that x@GRAD = the op's gradient of dout."""
    dout = fluid.data('dout', list(dout_shape), 'float32', lod_level=1 if lod else 0)
    loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(y, dout))
    fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)


UNFOLD_CASES = {
    # asymmetric paddings (4 values), strides and dilations per dim
    'unfold_asym': dict(shape=(2, 3, 5, 6), k=[2, 3], s=[2, 1], p=[1, 0, 2, 1], d=[2, 1]),
    # ints, paddings as [p_h, p_w]
    'unfold_ints': dict(shape=(1, 2, 4, 5), k=2, s=1, p=[1, 0], d=1),
}


def build_unfold(fluid, case):
    c = UNFOLD_CASES[case]
    r = np.random.RandomState(SEED + sorted(UNFOLD_CASES).index(case))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', list(c['shape']), 'float32')
        x.stop_gradient = False
        y = fluid.layers.unfold(x, c['k'], c['s'], c['p'], c['d'])
        _grad_loss(fluid, y, y.shape)
    feed = {'x': r.uniform(-1, 1, c['shape']).astype('float32'),
            'dout': r.uniform(-1, 1, y.shape).astype('float32')}
    return main, startup, feed, [y.name, 'x@GRAD'], {}


def _i2s_rows(shape, k, s, p):
    oh = (shape[2] + p[0] + p[2] - k[0]) // s[0] + 1
    ow = (shape[3] + p[1] + p[3] - k[1]) // s[1] + 1
    return shape[0] * oh * ow, shape[1] * k[0] * k[1], oh * ow


I2S_CASES = {
    'im2sequence_grad': dict(shape=(2, 2, 5, 4), k=[2, 3], s=[2, 1], p=[1, 1, 0, 2]),
    # two-value padding, no gradient asked
    'im2sequence_pad2': dict(shape=(3, 1, 4, 4), k=2, s=2, p=[1, 0]),
    # input_image_size with out_stride: sequences of different lengths (forward only)
    'im2sequence_real': dict(shape=(3, 2, 7, 8), k=[2, 3], s=[1, 2], p=[1, 0, 0, 1],
                             real=[[7, 8], [5, 6], [9, 4]], out_stride=[2, 3]),
}


def build_im2sequence(fluid, case):
    c = I2S_CASES[case]
    r = np.random.RandomState(SEED + 10 + sorted(I2S_CASES).index(case))
    main, startup = fluid.Program(), fluid.Program()
    feed = {'x': r.uniform(-1, 1, c['shape']).astype('float32')}
    with fluid.program_guard(main, startup):
        x = fluid.data('x', list(c['shape']), 'float32')
        if 'real' in c:
            y = fluid.data('real', [c['shape'][0], 2], 'float32')
            feed['real'] = np.array(c['real'], 'float32')
            out = fluid.layers.im2sequence(x, c['k'], c['s'], c['p'], input_image_size=y,
                                           out_stride=c['out_stride'])
            return main, startup, feed, [out.name], {}
        out = fluid.layers.im2sequence(x, c['k'], c['s'], c['p'])
        if case != 'im2sequence_grad':
            return main, startup, feed, [out.name], {}
        x.stop_gradient = False
        k = c['k']
        rows, cols, per = _i2s_rows(c['shape'], k, c['s'], c['p'])
        _grad_loss(fluid, out, [-1, cols], lod=True)
    dout = r.uniform(-1, 1, (rows, cols)).astype('float32')
    feed['dout'] = (dout, [[per] * c['shape'][0]])
    return main, startup, feed, [out.name, 'x@GRAD'], {}


CROP_CASES = {
    'random_crop_f32': dict(shape=(4, 3, 6, 5), dtype='float32', crop=[2, 4, 3], seed=12345),
    'random_crop_i32': dict(shape=(6, 20), dtype='int32', crop=[7], seed=-3),
}


def build_random_crop(fluid, case):
    c = CROP_CASES[case]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', list(c['shape']), c['dtype'])
        out = fluid.layers.random_crop(x, c['crop'], seed=c['seed'])
    seed = [v.name for v in main.list_vars() if 'random_crop_seed' in v.name]
    n = int(np.prod(c['shape']))
    feed = {'x': np.arange(n).reshape(c['shape']).astype(c['dtype'])}
    return main, startup, feed, [out.name] + seed, {}


FOCUS_CASES = {
    'similarity_focus_axis1': dict(shape=(2, 3, 4, 5), axis=1, indexes=[1]),
    'similarity_focus_axis2': dict(shape=(2, 3, 4, 5), axis=2, indexes=[0, 3]),
    'similarity_focus_axis3': dict(shape=(1, 4, 3, 2), axis=3, indexes=[0, 1]),
}


def build_similarity_focus(fluid, case):
    c = FOCUS_CASES[case]
    r = np.random.RandomState(SEED + 20 + sorted(FOCUS_CASES).index(case))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', list(c['shape']), 'float32')
        out = fluid.layers.similarity_focus(x, c['axis'], c['indexes'])
    n = int(np.prod(c['shape']))
    feed = {'x': (r.permutation(n).reshape(c['shape']) / float(n)).astype('float32')}
    return main, startup, feed, [out.name], {}


SN_CASES = {
    'spectral_norm_dim1': dict(shape=(3, 4, 2), dtype='float64', dim=1, iters=2),
    'spectral_norm_dim0': dict(shape=(4, 6), dtype='float32', dim=0, iters=1),
    'spectral_norm_4d': dict(shape=(2, 3, 2, 2), dtype='float32', dim=1, iters=3),
}


def build_spectral_norm(fluid, case):
    """Out and the weight's gradient of sum(Out * dout); U and V set from the seed."""
    c = SN_CASES[case]
    r = np.random.RandomState(SEED + 30 + sorted(SN_CASES).index(case))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        w = fluid.layers.create_parameter(list(c['shape']), c['dtype'], name='sn_weight')
        out = fluid.layers.spectral_norm(w, dim=c['dim'], power_iters=c['iters'])
        dout = fluid.data('dout', list(c['shape']), c['dtype'])
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(out, dout))
        fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
    params = main.global_block().all_parameters()
    values = {p.name: r.uniform(-1, 1, p.shape).astype(c['dtype']) for p in params}
    feed = {'dout': r.uniform(-1, 1, c['shape']).astype(c['dtype'])}
    return main, startup, feed, [out.name, 'sn_weight@GRAD'], values


def all_cases():
    """(builder, case, runs) for every case."""
    return [(build_unfold, c, 1) for c in sorted(UNFOLD_CASES)] + \
        [(build_im2sequence, c, 1) for c in sorted(I2S_CASES)] + \
        [(build_random_crop, c, 2) for c in sorted(CROP_CASES)] + \
        [(build_similarity_focus, c, 1) for c in sorted(FOCUS_CASES)] + \
        [(build_spectral_norm, c, 1) for c in sorted(SN_CASES)]


def run_case(fluid, builder, case, runs):
    """The fetches of `runs` runs in one scope: {'<case>/<run>/<fetch>': array} and
    {'<case>/<run>/<fetch>/lod': offsets} for fetches with a LoD."""
    out = {}
    for run, vals in enumerate(gen_seqops.run_all(fluid, builder, case, runs)):
        for j, (a, lod) in enumerate(vals):
            key = '%s/%d/%d' % (case, run, j)
            out[key] = a
            if lod:
                out[key + '/lod'] = np.array(lod[0], 'int64')
    return out


def main():
    import paddle
    import paddle.fluid as fluid
    assert paddle.__version__ == '1.8.5', paddle.__version__
    out = {}
    for builder, case, runs in all_cases():
        out.update(run_case(fluid, builder, case, runs))
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)
    print(sorted(out))


if __name__ == '__main__':
    main()
