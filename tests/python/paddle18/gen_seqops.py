"""The programs of tests/python/test_seqops.py, built the same way with paddle.fluid or
rill: dynamic_lstmp (and its gradients), ctc_greedy_decoder, warpctc (and its gradient),
sequence_scatter (and its gradients), edit_distance with ignored_tokens (sequence_erase),
select_output then select_input (cond's branch switch) and their gradients. Run under Paddle 1.8.5
(`PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python /tmp/pd18/bin/python gen_seqops.py`) it
prints Paddle's outputs as the REF literal that the test embeds."""
import sys

import numpy as np

SEED = 20201127
LOD = [2, 3, 1]
T = sum(LOD)
D, P = 3, 2

LSTMP_CASES = {
    # peepholes, initial states, both clips, the default activations
    'lstmp_clip': dict(use_peepholes=True, is_reverse=False, states=True, cell_clip=0.5,
                       proj_clip=0.15, gate_activation='sigmoid', cell_activation='tanh',
                       candidate_activation='tanh', proj_activation='tanh'),
    # reversed, no peepholes, no initial states, no projection activation
    'lstmp_reverse': dict(use_peepholes=False, is_reverse=True, states=False, cell_clip=None,
                          proj_clip=None, gate_activation='sigmoid', cell_activation='tanh',
                          candidate_activation='tanh', proj_activation='identity'),
    # proj_activation relu: Paddle 1.8 applies cell_activation (sigmoid) to the projection
    'lstmp_acts': dict(use_peepholes=True, is_reverse=False, states=False, cell_clip=None,
                       proj_clip=None, gate_activation='tanh', cell_activation='sigmoid',
                       candidate_activation='relu', proj_activation='relu'),
}


def lstmp_data():
    r = np.random.RandomState(SEED)
    return {
        'x': r.uniform(-1, 1, (T, 4 * D)).astype('float32'),
        'w': r.uniform(-0.8, 0.8, (P, 4 * D)).astype('float32'),
        'pw': r.uniform(-0.8, 0.8, (D, P)).astype('float32'),
        'b': r.uniform(-0.5, 0.5, (1, 7 * D)).astype('float32'),
        'h0': r.uniform(-0.5, 0.5, (len(LOD), P)).astype('float32'),
        'c0': r.uniform(-0.5, 0.5, (len(LOD), D)).astype('float32'),
        'dout': r.uniform(-1, 1, (T, P)).astype('float32'),
    }


def build_lstmp(fluid, case):
    """Returns (main, startup, feed, fetch names): Projection, Cell and the gradients of
    sum(Projection * dout) with respect to the input, the parameters and the states."""
    c = LSTMP_CASES[case]
    d = lstmp_data()
    main, startup = fluid.Program(), fluid.Program()
    nb = (7 if c['use_peepholes'] else 4) * D
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 4 * D], 'float32', lod_level=1)
        x.stop_gradient = False
        dout = fluid.data('dout', [None, P], 'float32')
        kw = {}
        if c['states']:
            kw['h_0'] = fluid.data('h0', [None, P], 'float32')
            kw['c_0'] = fluid.data('c0', [None, D], 'float32')
            kw['h_0'].stop_gradient = False
            kw['c_0'].stop_gradient = False
        proj, cell = fluid.layers.dynamic_lstmp(
            x, 4 * D, P, use_peepholes=c['use_peepholes'], is_reverse=c['is_reverse'],
            gate_activation=c['gate_activation'], cell_activation=c['cell_activation'],
            candidate_activation=c['candidate_activation'],
            proj_activation=c['proj_activation'], cell_clip=c['cell_clip'],
            proj_clip=c['proj_clip'], **kw)
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(proj, dout))
        fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
    # Weight, ProjWeight, Bias in the order the layer creates them
    params = [p.name for p in main.global_block().all_parameters()]
    assert len(params) == 3, params
    feed = {'x': (d['x'], [LOD]), 'dout': d['dout']}
    if c['states']:
        feed['h0'] = d['h0']
        feed['c0'] = d['c0']
    fetch = [proj.name, cell.name, 'x@GRAD'] + [p + '@GRAD' for p in params]
    if c['states']:
        fetch += ['h0@GRAD', 'c0@GRAD']
    return main, startup, feed, fetch, dict(zip(params, [d['w'], d['pw'], d['b'][:, :nb]]))


CTC_CASES = {
    # LoD probabilities [T, C]: top_k keeps the LoD, ctc_align merges and drops blank 0
    'ctc_greedy_lod': dict(padded=False, blank=0, nothing=False),
    # blank 2, every step's best class is the blank: Output is [-1] under an all-0 LoD
    'ctc_greedy_empty': dict(padded=False, blank=2, nothing=True),
    # padded [N, T, C] with lengths, padding_value -1
    'ctc_greedy_padded': dict(padded=True, blank=1, nothing=False),
}
CTC_LOD = [5, 0, 4, 7]
CTC_C = 4


def ctc_probs(nothing):
    r = np.random.RandomState(SEED + 1)
    # few classes and repeats, so that merges happen
    p = r.uniform(0, 1, (sum(CTC_LOD), CTC_C)).astype('float32')
    runs = r.randint(0, CTC_C, sum(CTC_LOD))
    for t in range(1, len(runs)):
        if r.uniform() < 0.4:
            runs[t] = runs[t - 1]
    p[np.arange(len(runs)), runs] += 1.0
    if nothing:
        p[:, 2] += 5.0
    return p


def build_ctc(fluid, case):
    c = CTC_CASES[case]
    p = ctc_probs(c['nothing'])
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        if not c['padded']:
            x = fluid.data('probs', [None, CTC_C], 'float32', lod_level=1)
            out = fluid.layers.ctc_greedy_decoder(x, blank=c['blank'])
            return main, startup, {'probs': (p, [CTC_LOD])}, [out.name], {}
        T = max(CTC_LOD)
        padded = np.zeros((len(CTC_LOD), T, CTC_C), 'float32')
        at = 0
        for n, l in enumerate(CTC_LOD):
            padded[n, :l] = p[at:at + l]
            at += l
        x = fluid.data('probs', [None, T, CTC_C], 'float32')
        ln = fluid.data('len', [None, 1], 'int64')
        out, out_len = fluid.layers.ctc_greedy_decoder(x, blank=c['blank'], input_length=ln,
                                                       padding_value=-1)
        feed = {'probs': padded, 'len': np.array(CTC_LOD, 'int64').reshape(-1, 1)}
        return main, startup, feed, [out.name, out_len.name], {}


WARPCTC_CASES = {
    # LoD logits and labels (a repeated label among them), blank 0
    'warpctc_lod': dict(padded=False, blank=0, norm_by_times=False),
    # blank C - 1, norm_by_times; the last label cannot fit its frames: loss 0, no gradient
    'warpctc_norm': dict(padded=False, blank=4, norm_by_times=True),
    # padded time-major logits with lengths
    'warpctc_padded': dict(padded=True, blank=0, norm_by_times=False),
}
WC_FRAMES = [4, 6, 3, 2]
WC_LABELS = {0: [[1, 1], [2, 3, 1], [3], [1, 2, 3]], 4: [[1, 1], [2, 0, 1], [3], [0, 0]]}
WC_C = 5


def build_warpctc(fluid, case):
    """Loss and the gradients of sum(Loss * dloss) with respect to the scores and to a
    [C] scale parameter (ones) the scores are multiplied by."""
    c = WARPCTC_CASES[case]
    r = np.random.RandomState(SEED + 2)
    N, T = len(WC_FRAMES), max(WC_FRAMES)
    x = r.uniform(-2, 2, (sum(WC_FRAMES), WC_C)).astype('float32')
    dloss = r.uniform(0.5, 1.5, (N, 1)).astype('float32')
    labels = WC_LABELS[c['blank']]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        if c['padded']:
            xv = fluid.data('x', [T, N, WC_C], 'float32')
            lv = fluid.data('label', [N, 3], 'int32')
            xl = fluid.data('x_len', [N], 'int64')
            ll = fluid.data('label_len', [N], 'int64')
        else:
            xv = fluid.data('x', [None, WC_C], 'float32', lod_level=1)
            lv = fluid.data('label', [None, 1], 'int32', lod_level=1)
            xl = ll = None
        xv.stop_gradient = False
        dl = fluid.data('dloss', [N, 1], 'float32')
        p = fluid.layers.create_parameter([WC_C], 'float32', name='ctc_scale',
                                          default_initializer=fluid.initializer.Constant(1.0))
        logits = fluid.layers.elementwise_mul(xv, p, axis=-1)
        loss = fluid.layers.warpctc(logits, lv, blank=c['blank'],
                                    norm_by_times=c['norm_by_times'], input_length=xl,
                                    label_length=ll)
        total = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(loss, dl))
        fluid.optimizer.SGD(learning_rate=0.0).minimize(total)
    feed = {'dloss': dloss}
    if c['padded']:
        px = np.zeros((T, N, WC_C), 'float32')
        at = 0
        for n, f in enumerate(WC_FRAMES):
            px[:f, n] = x[at:at + f]
            at += f
        pl = np.zeros((N, 3), 'int32')
        for n, l in enumerate(labels):
            pl[n, :len(l)] = l
        feed.update({'x': px, 'label': pl, 'x_len': np.array(WC_FRAMES, 'int64'),
                     'label_len': np.array([len(l) for l in labels], 'int64')})
    else:
        feed['x'] = (x, [WC_FRAMES])
        feed['label'] = (np.array(sum(labels, []), 'int32').reshape(-1, 1),
                         [[len(l) for l in labels]])
    return main, startup, feed, [loss.name, 'x@GRAD', 'ctc_scale@GRAD'], {}


SEQ_CASES = ['sequence_scatter', 'edit_distance_ignored']


def build_seq(fluid, case):
    r = np.random.RandomState(SEED + 3)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        if case == 'sequence_scatter':
            x = fluid.data('x', [3, 6], 'float32')
            x.stop_gradient = False
            ids = fluid.data('ids', [None, 1], 'int64', lod_level=1)
            upd = fluid.data('upd', [None, 1], 'float32', lod_level=1)
            upd.stop_gradient = False
            w = fluid.data('w', [3, 6], 'float32')
            out = fluid.layers.sequence_scatter(x, ids, upd)
            p = fluid.layers.create_parameter([6], 'float32', name='sc_scale',
                                              default_initializer=fluid.initializer.Constant(1.0))
            loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(out, w) * p)
            fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
            lens = [3, 0, 4]
            feed = {'x': r.uniform(-1, 1, (3, 6)).astype('float32'),
                    'ids': (np.array([0, 2, 2, 1, 5, 4, 1], 'int64').reshape(-1, 1), [lens]),
                    'upd': (r.uniform(-1, 1, (7, 1)).astype('float32'), [lens]),
                    'w': r.uniform(-1, 1, (3, 6)).astype('float32')}
            return main, startup, feed, [out.name, 'x@GRAD', 'upd@GRAD'], {}
        hyp = fluid.data('hyp', [None, 1], 'int64', lod_level=1)
        ref = fluid.data('ref', [None, 1], 'int64', lod_level=1)
        dist, num = fluid.layers.edit_distance(hyp, ref, normalized=False,
                                               ignored_tokens=[0, 7])
        hyps = [[1, 0, 2, 3], [7, 7], [4, 5, 0, 6, 7]]
        refs = [[1, 2, 3, 0], [0, 8], [4, 6]]
        feed = {'hyp': (np.array(sum(hyps, []), 'int64').reshape(-1, 1), [[len(h) for h in hyps]]),
                'ref': (np.array(sum(refs, []), 'int64').reshape(-1, 1), [[len(h) for h in refs]])}
        return main, startup, feed, [dist.name, num.name], {}


SELECT_CASES = ['select_branch_0', 'select_branch_1']


def build_select(fluid, case):
    """x * p sent to branch `mask` by select_output, taken back by select_input; the
    gradients of sum(y * dout) reach x and p through the chosen branch only."""
    r = np.random.RandomState(SEED + 4)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [2, 3], 'float32')
        x.stop_gradient = False
        mask = fluid.data('mask', [1], 'int32')
        dout = fluid.data('dout', [2, 3], 'float32')
        p = fluid.layers.create_parameter([3], 'float32', name='sel_scale',
                                          default_initializer=fluid.initializer.Constant(1.5))
        xs = fluid.layers.elementwise_mul(x, p)
        blk = main.global_block()
        outs = [blk.create_var(name='branch_%d' % i, dtype='float32', shape=[2, 3])
                for i in range(2)]
        blk.append_op(type='select_output', inputs={'X': [xs], 'Mask': [mask]},
                      outputs={'Out': outs})
        y = blk.create_var(name='merged', dtype='float32', shape=[2, 3])
        blk.append_op(type='select_input', inputs={'X': outs, 'Mask': [mask]},
                      outputs={'Out': [y]})
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(y, dout))
        fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
    feed = {'x': r.uniform(-1, 1, (2, 3)).astype('float32'),
            'mask': np.array([int(case[-1])], 'int32'),
            'dout': r.uniform(-1, 1, (2, 3)).astype('float32')}
    return main, startup, feed, ['merged', 'x@GRAD', 'sel_scale@GRAD'], {}


def lod_feed(fluid, feed, place):
    """`feed` with each (values, recursive sequence lengths) pair made a LoDTensor."""
    fd = {}
    for k, v in feed.items():
        if isinstance(v, tuple):
            t = fluid.LoDTensor()
            t.set(v[0], place)
            t.set_recursive_sequence_lengths(v[1])
            fd[k] = t
        else:
            fd[k] = v
    return fd


def run_all(fluid, builder, case, runs=1):
    """Runs the case's program `runs` times in one scope: per run, (array, LoD) per fetch."""
    main, startup, feed, fetch, values = builder(fluid, case)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for name, v in values.items():
            scope.find_var(name).get_tensor().set(v, place)
        fd = lod_feed(fluid, feed, place)
        out = []
        for _ in range(runs):
            vals = exe.run(main, feed=fd, fetch_list=fetch, return_numpy=False)
            out.append([(np.array(v), v.lod()) for v in vals])
        return out


def run(fluid, builder, case, lod=False):
    got = run_all(fluid, builder, case)[0]
    arrays = [a for a, _ in got]
    if lod:
        return arrays, [l for _, l in got]
    return arrays


def main():
    import paddle
    import paddle.fluid as fluid
    assert paddle.__version__ == '1.8.5', paddle.__version__
    np.set_printoptions(precision=9, threshold=100000)
    print('REF = {')
    for case in sorted(LSTMP_CASES):
        outs = run(fluid, build_lstmp, case)
        print('    %r: [' % case)
        for o in outs:
            print('        %r,' % (o.astype('float64').round(8).tolist(),))
        print('    ],')
    for case in sorted(WARPCTC_CASES):
        outs = run(fluid, build_warpctc, case)
        print('    %r: [' % case)
        for o in outs:
            print('        %r,' % (o.astype('float64').round(8).tolist(),))
        print('    ],')
    for case in SEQ_CASES:
        outs = run(fluid, build_seq, case)
        print('    %r: [' % case)
        for o in outs:
            print('        %r,' % (o.astype('float64').round(8).tolist(),))
        print('    ],')
    for case in SELECT_CASES:
        outs = run(fluid, build_select, case)
        print('    %r: [' % case)
        for o in outs:
            print('        %r,' % (o.astype('float64').round(8).tolist(),))
        print('    ],')
    for case in sorted(CTC_CASES):
        outs, lods = run(fluid, build_ctc, case, lod=True)
        print('    %r: [' % case)
        for o, l in zip(outs, lods):
            print('        (%r, %r, %r),' % (o.tolist(), str(o.dtype), [list(x) for x in l]))
        print('    ],')
    print('}')


if __name__ == '__main__':
    sys.exit(main())
