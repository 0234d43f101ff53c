"""Writes loss_layers/expected.npz: Paddle 1.8.5's numbers for the loss and
normalisation layers npair_loss, teacher_student_sigmoid_loss, center_loss, data_norm
hsigmoid (default and custom trees, dense and sparse weight gradients), nce (each
sampler, its negatives fixed by the op's custom_neg_classes attribute so that the
numbers are Paddle's) sampled_softmax_with_cross_entropy (customized samples, with
and without removing accidental hits), temporal_shift, fsp_matrix, affine_grid (output shape as a
list and as a fed Variable), row_conv (LoD sequences and a padded batch) and
grid_sampler on affine_grid's grid, trained through append_backward (SGD). `CASES` names each configuration and
`build(fluid, case)` (shared with tests/python/test_loss_layers.py) makes its program:
fed x (x.stop_gradient False) through an fc with fixed starting weights where the layer
needs trainable input, the layer, a scalar loss. Recorded per case and step: the loss,
the layer output and the gradients of `fetch_names(case)`; and the trained parameters
(center_loss's centres and data_norm's summary statistics included). Run with
PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'loss_layers')
STEPS = 3
N = 6

# name -> (layer, keyword arguments)
CASES = {
    'npair': ('npair_loss', dict(l2_reg=0.002)),
    'npair_l2': ('npair_loss', dict(l2_reg=0.05)),
    'tss': ('teacher_student_sigmoid_loss', {}),
    'tss_bounds': ('teacher_student_sigmoid_loss',
                   dict(soft_max_up_bound=0.4, soft_max_lower_bound=-0.3)),
    'center': ('center_loss', dict(alpha=0.2, update_center=True)),
    'center_fixed': ('center_loss', dict(alpha=0.2, update_center=False)),
    'dn': ('data_norm', {}),
    'dn_slots': ('data_norm', dict(slot_dim=2, epsilon=1e-4, name='dns')),
    'dn_scale_shift': ('data_norm', dict(enable_scale_and_shift=True, name='dnss',
                                         param_attr={'batch_size': 20.0, 'batch_sum': 3.0,
                                                     'batch_square': 30.0, 'scale_w': 1.5,
                                                     'bias': 0.2})),
    'hs_default': ('hsigmoid', dict(num_classes=6)),
    'hs_odd_nobias': ('hsigmoid', dict(num_classes=5, bias_attr=False)),
    'hs_custom': ('hsigmoid', dict(num_classes=5, is_custom=True)),
    'hs_custom_sparse': ('hsigmoid', dict(num_classes=5, is_custom=True, is_sparse=True)),
    'nce_uniform': ('nce', dict(num_total_classes=8, num_neg_samples=3, neg=[1, 4, 6],
                                sample_weight=True)),
    'nce_log_uniform': ('nce', dict(num_total_classes=8, num_neg_samples=3, neg=[0, 2, 7],
                                    sampler='log_uniform', num_true=2, bias_attr=False)),
    'nce_custom_sparse': ('nce', dict(num_total_classes=6, num_neg_samples=2, neg=[3, 5],
                                      sampler='custom_dist', is_sparse=True,
                                      custom_dist=[0.05, 0.1, 0.3, 0.15, 0.25, 0.15])),
    'sampled_softmax': ('sampled_softmax_with_cross_entropy', dict(num_samples=3)),
    'sampled_softmax_hits': ('sampled_softmax_with_cross_entropy',
                             dict(num_samples=3, remove_accidental_hits=False)),
    'temporal_shift': ('temporal_shift', dict(seg_num=3, shift_ratio=0.25)),
    'temporal_shift_wide': ('temporal_shift', dict(seg_num=2, shift_ratio=0.4)),
    'fsp': ('fsp_matrix', {}),
    'affine_grid': ('affine_grid', dict(out_shape=[N, 2, 3, 4])),
    'affine_grid_var': ('affine_grid', dict(out_shape=None)),
    'row_conv_lod': ('row_conv', dict(future_context_size=2, lod=True)),
    'row_conv_padded': ('row_conv', dict(future_context_size=1, lod=False)),
    'grid_sampler': ('grid_sampler', {}),
}

W_IN = np.linspace(-0.8, 0.9, 20, dtype='float32').reshape(5, 4)
W_POS = np.linspace(0.7, -0.6, 20, dtype='float32').reshape(5, 4)
W_OUT = np.linspace(-0.5, 0.6, 8, dtype='float32').reshape(4, 2)
CENTERS = np.linspace(-1, 1, 16, dtype='float32').reshape(4, 4)
HS_W = np.linspace(-0.7, 0.8, 30, dtype='float32').reshape(6, 5)
HS_B = np.linspace(0.3, -0.2, 6, dtype='float32').reshape(6, 1)
# custom paths of 3 steps at most (-1 ends a shorter one), over the 5 rows of W
PATH_TABLE = np.array([[0, 1, 3], [0, 1, 4], [0, 2, -1], [0, 2, -1], [0, 1, 3], [2, 4, -1]],
                      'int64')
PATH_CODE = np.array([[0, 0, 1], [0, 1, 1], [1, 0, 0], [1, 1, 0], [1, 0, 0], [0, 1, 0]],
                     'int64')


def _init(fluid, a):
    return fluid.initializer.NumpyArrayInitializer(a)


def params_of(case):
    layer, kw = CASES[case]
    if layer == 'npair_loss':
        return ['%s_wa' % case, '%s_wp' % case]
    if layer == 'teacher_student_sigmoid_loss':
        return ['%s_w' % case]
    if layer == 'center_loss':
        return ['%s_w' % case, '%s_centers' % case]
    if layer == 'grid_sampler':
        return ['%s_w' % case, '%s_t' % case]
    if layer in ('sampled_softmax_with_cross_entropy', 'temporal_shift', 'fsp_matrix',
                 'affine_grid', 'row_conv'):
        return ['%s_w' % case]
    if layer in ('hsigmoid', 'nce'):
        return ['%s_w' % case] + ([] if kw.get('bias_attr') is False else ['%s_b' % case])
    name = kw.get('name', 'dn')
    ps = ['%s_w' % case] + ['%s.%s' % (name, p) for p in
                             ('batch_size', 'batch_sum', 'batch_square_sum')]
    if kw.get('enable_scale_and_shift'):
        ps += ['%s.scale_w' % name, '%s.bias' % name]
    return ps


SEQ_LENGTHS = [4, 2, 1, 2]


def feed_of(fluid, batch):
    """The feed of a batch: the LoD input 'seq' (row_conv) with SEQ_LENGTHS."""
    feed = dict(batch)
    if 'seq' in feed:
        feed['seq'] = fluid.create_lod_tensor(feed['seq'], [SEQ_LENGTHS], fluid.CPUPlace())
    return feed


def fetch_names(case):
    """The gradients recorded: x's (the LoD input's for row_conv) and every trainable
    parameter's."""
    if CASES[case][1].get('lod'):
        return ['seq@GRAD'] + ['%s@GRAD' % p for p in params_of(case)]
    sparse_w = '%s_w' % case if CASES[case][1].get('is_sparse') else None
    return ['x@GRAD'] + ['%s@GRAD' % p for p in params_of(case)
                         if not p.endswith('centers') and p != sparse_w]


def build(fluid, case):
    layer, kw = CASES[case]
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [N, 5], 'float32')
        x.stop_gradient = False
        if layer == 'npair_loss':
            lab = fluid.data('lab', [N], 'int64')
            xp = fluid.data('xp', [N, 5], 'float32')
            a = L.fc(x, 4, param_attr=fluid.ParamAttr('%s_wa' % case,
                                                      initializer=_init(fluid, W_IN)),
                     bias_attr=False)
            p = L.fc(xp, 4, param_attr=fluid.ParamAttr('%s_wp' % case,
                                                       initializer=_init(fluid, W_POS)),
                     bias_attr=False)
            y = L.npair_loss(a, p, lab, **kw)
            loss = y
        elif layer == 'teacher_student_sigmoid_loss':
            lab = fluid.data('lab', [N, 1], 'float32')
            s = L.fc(x, 1, param_attr=fluid.ParamAttr(
                '%s_w' % case, initializer=_init(fluid, W_IN[:, :1] * 2)), bias_attr=False)
            y = L.teacher_student_sigmoid_loss(s, lab, **kw)
            loss = L.mean(y)
        elif layer == 'center_loss':
            lab = fluid.data('lab', [N, 1], 'int64')
            f = L.fc(x, 4, param_attr=fluid.ParamAttr('%s_w' % case,
                                                      initializer=_init(fluid, W_IN)),
                     bias_attr=False)
            y = L.center_loss(f, lab, 4, param_attr=fluid.ParamAttr(
                '%s_centers' % case, initializer=_init(fluid, CENTERS)), **kw)
            loss = L.mean(y)
        elif layer == 'hsigmoid':
            kw = dict(kw)
            lab = fluid.data('lab', [N, 1], 'int64')
            rows = kw['num_classes'] - (0 if kw.get('is_custom') else 1)
            if kw.get('is_custom'):
                kw['path_table'] = fluid.data('ptable', [N, 3], 'int64')
                kw['path_code'] = fluid.data('pcode', [N, 3], 'int64')
            if kw.get('bias_attr') is not False:
                kw['bias_attr'] = fluid.ParamAttr('%s_b' % case,
                                                  initializer=_init(fluid, HS_B[:rows]))
            y = L.hsigmoid(x, lab, param_attr=fluid.ParamAttr(
                '%s_w' % case, initializer=_init(fluid, HS_W[:rows])), **kw)
            loss = L.mean(y)
        elif layer == 'nce':
            kw = dict(kw)
            neg, nt = kw.pop('neg'), kw.pop('num_true', 1)
            lab = fluid.data('lab', [N, nt], 'int64')
            if kw.pop('sample_weight', False):
                kw['sample_weight'] = fluid.data('sw', [N, 1], 'float32')
            k = kw['num_total_classes']
            if kw.get('bias_attr') is not False:
                kw['bias_attr'] = fluid.ParamAttr('%s_b' % case, initializer=_init(
                    fluid, np.linspace(-0.3, 0.4, k, dtype='float32').reshape(k, 1)))
            y = L.nce(x, lab, param_attr=fluid.ParamAttr('%s_w' % case, initializer=_init(
                fluid, np.linspace(0.6, -0.5, k * 5, dtype='float32').reshape(k, 5))), **kw)
            op = [o for o in main.global_block().ops if o.type == 'nce'][0]
            op._set_attr('custom_neg_classes', neg)
            loss = L.mean(y)
        elif layer == 'sampled_softmax_with_cross_entropy':
            lab = fluid.data('lab', [N, 1], 'int64')
            smp = fluid.data('smp', [N, 4], 'int64')
            prob = fluid.data('prob', [N, 4], 'float32')
            lg = L.fc(x, 7, param_attr=fluid.ParamAttr('%s_w' % case, initializer=_init(
                fluid, np.linspace(-0.9, 0.8, 35, dtype='float32').reshape(5, 7))),
                bias_attr=False)
            y = L.sampled_softmax_with_cross_entropy(
                lg, lab, use_customized_samples=True, customized_samples=smp,
                customized_probabilities=prob, **kw)
            loss = L.mean(y)
        elif layer in ('temporal_shift', 'fsp_matrix'):
            # fc to [N, 20] reshaped to feature maps [N, 5, 2, 2]
            f = L.fc(x, 20, param_attr=fluid.ParamAttr('%s_w' % case, initializer=_init(
                fluid, np.linspace(-0.7, 0.9, 100, dtype='float32').reshape(5, 20))),
                bias_attr=False)
            f = L.reshape(f, [N, 5, 2, 2])
            if layer == 'temporal_shift':
                y = L.temporal_shift(f, **kw)
            else:
                y = L.fsp_matrix(f, L.tanh(L.slice(f, axes=[1], starts=[1], ends=[4])))
            loss = L.mean(L.square(y - 0.2))
        elif layer == 'affine_grid':
            th = L.fc(x, 6, param_attr=fluid.ParamAttr('%s_w' % case, initializer=_init(
                fluid, np.linspace(-0.6, 0.7, 30, dtype='float32').reshape(5, 6))),
                bias_attr=False)
            th = L.reshape(th, [N, 2, 3])
            shape = kw['out_shape'] or fluid.data('oshape', [4], 'int32')
            y = L.affine_grid(th, shape)
            loss = L.mean(L.square(y - 0.2))
        elif layer == 'grid_sampler':
            # the image [N, 2, 2, 5] from fc, sampled on a grid from affine_grid
            img = L.reshape(L.fc(x, 20, bias_attr=False, param_attr=fluid.ParamAttr(
                '%s_w' % case, initializer=_init(
                    fluid, np.linspace(-0.7, 0.9, 100, dtype='float32').reshape(5, 20)))),
                [N, 2, 2, 5])
            th = L.reshape(L.fc(x, 6, bias_attr=False, param_attr=fluid.ParamAttr(
                '%s_t' % case, initializer=_init(
                    fluid, np.linspace(-0.5, 0.6, 30, dtype='float32').reshape(5, 6)))),
                [N, 2, 3])
            y = L.grid_sampler(img, L.affine_grid(th, [N, 2, 2, 5]))
            loss = L.mean(L.square(y - 0.1))
        elif layer == 'row_conv':
            k = kw['future_context_size']
            if kw['lod']:
                src = fluid.data('seq', [-1, 5], 'float32', lod_level=1)
                src.stop_gradient = False
            else:
                src = L.reshape(x, [2, 3, 5])
            y = L.row_conv(src, k, param_attr=fluid.ParamAttr('%s_w' % case, initializer=_init(
                fluid, np.linspace(-0.8, 0.9, (k + 1) * 5, dtype='float32').reshape(k + 1, 5))))
            loss = L.mean(L.square(y - 0.1))
        else:
            h = L.slice(x, axes=[1], starts=[0], ends=[4])
            y = L.data_norm(h, **kw)
            o = L.fc(y, 2, param_attr=fluid.ParamAttr('%s_w' % case,
                                                      initializer=_init(fluid, W_OUT)),
                     bias_attr=False)
            loss = L.mean(L.square(o - 0.3))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main, startup, y, loss


def batches(case):
    layer = CASES[case][0]
    rng = np.random.RandomState(5)
    out = []
    for _ in range(STEPS):
        b = {'x': rng.uniform(-1, 1, (N, 5)).astype('float32')}
        if layer == 'npair_loss':
            b['xp'] = rng.uniform(-1, 1, (N, 5)).astype('float32')
            b['lab'] = np.array([0, 1, 0, 2, 1, 3], 'int64')
        elif layer == 'teacher_student_sigmoid_loss':
            b['lab'] = np.array([[-2], [-1], [0.3], [1.6], [0.0], [1.0]], 'float32')
        elif layer == 'center_loss':
            b['lab'] = np.array([[2], [0], [2], [3], [2], [0]], 'int64')
        elif layer == 'hsigmoid':
            b['lab'] = np.array([[0], [5], [3], [1], [4], [2]], 'int64') % \
                CASES[case][1]['num_classes']
            if CASES[case][1].get('is_custom'):
                b['ptable'] = PATH_TABLE
                b['pcode'] = PATH_CODE
        elif layer == 'nce':
            nt = CASES[case][1].get('num_true', 1)
            b['lab'] = np.array([[0, 3], [5, 2], [7, 1], [2, 2], [4, 0], [1, 6]],
                                'int64')[:, :nt] % CASES[case][1]['num_total_classes']
            sw = rng.uniform(0.5, 1.5, (N, 1)).astype('float32')
            if CASES[case][1].get('sample_weight'):
                b['sw'] = sw
        elif layer == 'sampled_softmax_with_cross_entropy':
            b['lab'] = np.array([[0], [3], [6], [2], [2], [5]], 'int64')
            # true class first; row 3's negatives repeat its label (an accidental hit)
            b['smp'] = np.array([[0, 1, 4, 6], [3, 1, 4, 6], [6, 1, 4, 5], [2, 2, 4, 6],
                                 [2, 1, 4, 6], [5, 0, 5, 3]], 'int64')
            b['prob'] = rng.uniform(0.05, 0.6, (N, 4)).astype('float32')
        elif layer == 'affine_grid' and CASES[case][1]['out_shape'] is None:
            b['oshape'] = np.array([N, 2, 5, 3], 'int32')
        elif layer == 'row_conv' and CASES[case][1]['lod']:
            b['seq'] = rng.uniform(-1, 1, (sum(SEQ_LENGTHS), 5)).astype('float32')
        elif CASES[case][1].get('slot_dim'):
            b['x'][1, 0] = 0.0  # row 1's first slot not shown
            b['x'][4, 2] = 0.0  # row 4's second slot not shown
        out.append(b)
    return out


def main():
    import paddle.fluid as fluid
    out = {}
    exe = fluid.Executor(fluid.CPUPlace())
    for case in CASES:
        prog, startup, y, loss = build(fluid, case)
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            exe.run(startup)
            for step, feed in enumerate(batches(case)):
                names = fetch_names(case)
                vals = exe.run(prog, feed=feed_of(fluid, feed), fetch_list=[loss, y] + names,
                               return_numpy=False)
                for name, v in zip(['loss', 'out'] + names, vals):
                    out['%s/%s/%d' % (case, name, step)] = np.array(v)
            for p in params_of(case):
                out['%s/%s' % (case, p)] = np.array(scope.find_var(p).get_tensor())
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)
    print({k: v for k, v in out.items() if 'loss' in k})


if __name__ == '__main__':
    main()
