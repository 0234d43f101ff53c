"""Writes beam_search/: Paddle 1.8.5's results of a beam search decoding loop.

`build(fluid)` (also used by tests/python/test_beam_search.py with rill) makes the loop of
the machine translation chapter's decoder, on a bigram model: a While over tensor arrays
of ids and scores; each step embeds the previous ids, fc -> tanh -> fc -> softmax, takes
the top BEAM words, adds their log probabilities to the previous scores and lets
beam_search choose; the loop stops after T steps or when every source has ended
(selected_ids empty); beam_search_decode builds the sentences. The parameters are set
from seeded numpy (`weights`), with a bias towards END so that sentences end and sources
are dropped before T. The file holds, for each list of start words, the sentences' ids
and scores with their LoD and the number of steps run. Run with PaddlePaddle 1.8.5
(README.md)."""
import json
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'beam_search')
V, E, H, BEAM, END, T = 8, 4, 6, 3, 1, 5
BIAS = np.array([0, 1.5, 0, 0, 0, 0, 0, 0])
STARTS = ([0, 3], [2, 5, 6], [4])
CASES = 40


def weights():
    rng = np.random.RandomState(7)
    return {'emb': rng.uniform(-1, 1, (V, E)).astype('float32'),
            'w1': rng.uniform(-1, 1, (E, H)).astype('float32'),
            'b1': rng.uniform(-0.5, 0.5, (H,)).astype('float32'),
            'w2': (2.0 * rng.uniform(-1, 1, (H, V))).astype('float32'),
            'b2': (rng.uniform(-0.5, 0.5, (V,)) + BIAS).astype('float32')}


def build(fluid):
    """The decoding program's fetches: sentence ids, sentence scores, steps run."""
    L = fluid.layers
    init_ids = L.data('init_ids', [1], dtype='int64', lod_level=2)
    init_scores = L.data('init_scores', [1], dtype='float32', lod_level=2)
    counter = L.fill_constant([1], 'int64', 0)
    max_len = L.fill_constant([1], 'int64', T)
    ids_arr = L.create_array('int64')
    sc_arr = L.create_array('float32')
    L.array_write(init_ids, counter, array=ids_arr)
    L.array_write(init_scores, counter, array=sc_arr)
    cond = L.less_than(counter, max_len)
    loop = L.While(cond)
    with loop.block():
        pre_ids = L.array_read(ids_arr, counter)
        pre_score = L.array_read(sc_arr, counter)
        emb = L.embedding(pre_ids, size=[V, E], param_attr='emb')
        hid = L.fc(emb, H, act='tanh', param_attr='w1', bias_attr='b1')
        prob = L.fc(hid, V, act='softmax', param_attr='w2', bias_attr='b2')
        top_s, top_i = L.topk(prob, k=BEAM)
        accu = L.elementwise_add(L.log(top_s), L.reshape(pre_score, [-1]), axis=0)
        sel_ids, sel_sc = L.beam_search(pre_ids, pre_score, top_i, accu, BEAM, end_id=END,
                                        level=0)
        L.increment(counter, 1, in_place=True)
        L.array_write(sel_ids, counter, array=ids_arr)
        L.array_write(sel_sc, counter, array=sc_arr)
        rows = L.slice(L.shape(sel_ids), axes=[0], starts=[0], ends=[1])
        alive = L.greater_than(rows, L.fill_constant([1], 'int32', 0))
        L.logical_and(L.less_than(counter, max_len), alive, out=cond)
    out_ids, out_sc = L.beam_search_decode(ids_arr, sc_arr, BEAM, END)
    return out_ids, out_sc, counter


def step_cases():
    """Seeded single beam_search steps: 2-level LoDs (some sources without prefixes),
    ended prefixes, scores on a coarse grid (ties), with and without ids, accumulated or
    probabilities, at level 0 or 1, beam sizes 1 to 4."""
    rng = np.random.RandomState(3)
    cases = []
    for _ in range(CASES):
        nsrc = rng.randint(1, 4)
        per_src = [int(rng.randint(0, 4)) for _ in range(nsrc)]
        per_src[-1] += 1
        rows = sum(per_src)
        l0 = [0] + list(np.cumsum(per_src))
        l1 = [0] + list(np.cumsum([1] * rows))
        k = int(rng.randint(1, 4))
        accumulated = bool(rng.randint(2))
        if accumulated:
            scores = -rng.randint(0, 8, (rows, k)) * 0.25
        else:
            scores = rng.randint(1, 5, (rows, k)) * 0.2
        cases.append({'lod': [[int(v) for v in l0], [int(v) for v in l1]],
                      'pre_ids': [int(v) for v in rng.choice([END, 2, 3], rows)],
                      'pre_scores': [float(v) for v in -rng.randint(0, 4, rows) * 0.5],
                      'ids': rng.randint(0, 6, (rows, k)).tolist() if rng.randint(2) else None,
                      'scores': scores.tolist(), 'k': k, 'beam': int(rng.randint(1, 5)),
                      'accumulated': accumulated, 'level': int(rng.randint(2))})
    return cases


def run_step(fluid, c):
    """selected ids, scores, parent_idx and the selections' LoD of one case."""
    main, startup = fluid.Program(), fluid.Program()
    L = fluid.layers
    with fluid.program_guard(main, startup):
        pi = L.data('pi', [1], dtype='int64', lod_level=2)
        ps = L.data('ps', [1], dtype='float32', lod_level=2)
        ids = L.data('i', [c['k']], dtype='int64', lod_level=2) if c['ids'] else None
        sc = L.data('s', [c['k']], dtype='float32', lod_level=2)
        fetch = L.beam_search(pi, ps, ids, sc, c['beam'], END, level=c['level'],
                              is_accumulated=c['accumulated'], return_parent_idx=True)

    def t(a, dtype):
        x = fluid.LoDTensor()
        x.set(np.array(a, dtype).reshape(len(c['pre_ids']), -1), fluid.CPUPlace())
        x.set_lod(c['lod'])
        return x
    feed = {'pi': t(c['pre_ids'], 'int64'), 'ps': t(c['pre_scores'], 'float32'),
            's': t(c['scores'], 'float32')}
    if c['ids']:
        feed['i'] = t(c['ids'], 'int64')
    with fluid.scope_guard(fluid.Scope()):
        a, b, p = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=list(fetch),
                                                      return_numpy=False)
    return {'ids': np.array(a).ravel().tolist(), 'scores': np.array(b).ravel().tolist(),
            'parent': np.array(p).ravel().tolist(),
            'lod': [[int(o) for o in level] for level in a.lod()]}


def feed(fluid, starts):
    """One source per start word, each with one prefix of score 0."""
    n = len(starts)
    lod = [list(range(n + 1)), list(range(n + 1))]
    a = fluid.LoDTensor()
    a.set(np.array(starts, 'int64').reshape(-1, 1), fluid.CPUPlace())
    a.set_lod(lod)
    b = fluid.LoDTensor()
    b.set(np.zeros((n, 1), 'float32'), fluid.CPUPlace())
    b.set_lod(lod)
    return {'init_ids': a, 'init_scores': b}


def run(fluid, starts):
    """{'ids', 'scores': flat lists, 'lod': the sentences' LoD, 'steps'}."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fetch = build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for k, v in weights().items():
            scope.find_var(k).get_tensor().set(v, fluid.CPUPlace())
        ids, scores, steps = exe.run(main, feed=feed(fluid, starts), fetch_list=list(fetch),
                                     return_numpy=False)
    return {'ids': np.array(ids).ravel().tolist(),
            'scores': np.array(scores).ravel().tolist(),
            'lod': [[int(o) for o in level] for level in ids.lod()],
            'scores_lod': [[int(o) for o in level] for level in scores.lod()],
            'steps': int(np.array(steps).ravel()[0])}


if __name__ == '__main__':
    import paddle
    import paddle.fluid as fluid
    os.makedirs(OUT, exist_ok=True)
    results = [run(fluid, s) for s in STARTS]
    cases = step_cases()
    for c in cases:
        c['want'] = run_step(fluid, c)
    with open(os.path.join(OUT, 'expected.json'), 'w') as f:
        json.dump({'paddle': paddle.__version__, 'starts': list(STARTS), 'results': results,
                   'steps': cases}, f, indent=1)
    for s, r in zip(STARTS, results):
        print(s, r['steps'], r['ids'])
