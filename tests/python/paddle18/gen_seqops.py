"""The programs of tests/python/test_seqops.py, built the same way with paddle.fluid or
rill: dynamic_lstmp (and its gradients), ctc_greedy_decoder. Run under Paddle 1.8.5
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


def run(fluid, builder, case, lod=False):
    main, startup, feed, fetch, values = builder(fluid, case)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for name, v in values.items():
            scope.find_var(name).get_tensor().set(v, place)
        fd = {}
        for k, v in feed.items():
            if isinstance(v, tuple):
                t = fluid.LoDTensor()
                t.set(v[0], place)
                t.set_recursive_sequence_lengths(v[1])
                fd[k] = t
            else:
                fd[k] = v
        vals = exe.run(main, feed=fd, fetch_list=fetch, return_numpy=False)
        arrays = [np.array(v) for v in vals]
        if lod:
            return arrays, [v.lod() for v in vals]
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
    for case in sorted(CTC_CASES):
        outs, lods = run(fluid, build_ctc, case, lod=True)
        print('    %r: [' % case)
        for o, l in zip(outs, lods):
            print('        (%r, %r, %r),' % (o.tolist(), str(o.dtype), [list(x) for x in l]))
        print('    ],')
    print('}')


if __name__ == '__main__':
    sys.exit(main())
