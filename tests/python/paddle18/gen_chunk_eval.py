"""Writes chunk_eval/: Paddle 1.8.5's chunk_eval outputs on seeded random tag sequences.

`build(fluid)` (also used by tests/python/test_chunk_eval.py with rill) makes one program
per case in CASES: layers.chunk_eval of int64 tags `x` against `y`, LoD [T, 1] (lod case)
or padded [N, S] with seq_length (padded case), in each scheme, with and without excluded
chunk types; and one program with an evaluator.ChunkEvaluator over LoD tags (IOB).
`inputs()` draws BATCHES batches per case: labels uniform over every id (the other label
included, so short chunks abound), and predictions that copy the labels but redraw about a
third of them. The file holds the inputs and, per case, Paddle's six fetches for each
batch as float64 rows [BATCHES, 6] (`<case>_out`: precision, recall, f1, then the three
counts), and `evaluator_out`: the evaluator's per-batch metrics, then its eval() after all
batches. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'chunk_eval')
TYPES, BATCHES, N, S = 3, 4, 5, 9
SEQ_LENS = [6, 0, 11, 1, 8, 14]
TAGS = {'IOB': 2, 'IOE': 2, 'IOBES': 4, 'plain': 1}
CASES = [(scheme, padded, excluded) for scheme in ('IOB', 'IOE', 'IOBES', 'plain')
         for padded in (False, True) for excluded in (None, [1])]


def case_name(case):
    scheme, padded, excluded = case
    return '%s_%s%s' % (scheme, 'padded' if padded else 'lod', '_excl' if excluded else '')


def build(fluid):
    progs = {}
    for case in CASES:
        scheme, padded, excluded = case
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            if padded:
                x = fluid.data('x', [None, S], 'int64')
                y = fluid.data('y', [None, S], 'int64')
                n = fluid.data('n', [None], 'int64')
            else:
                x = fluid.data('x', [None, 1], 'int64', lod_level=1)
                y = fluid.data('y', [None, 1], 'int64', lod_level=1)
                n = None
            outs = fluid.layers.chunk_eval(x, y, chunk_scheme=scheme, num_chunk_types=TYPES,
                                           excluded_chunk_types=excluded, seq_length=n)
        progs[case_name(case)] = (main, startup, [o.name for o in outs])
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 1], 'int64', lod_level=1)
        y = fluid.data('y', [None, 1], 'int64', lod_level=1)
        ev = fluid.evaluator.ChunkEvaluator(x, y, 'IOB', TYPES)
    progs['evaluator'] = (main, startup, ev)
    return progs


def _draw(rng, scheme, shape):
    top = TYPES * TAGS[scheme]
    y = rng.randint(0, top + 1, shape).astype('int64')
    x = np.where(rng.rand(*shape) < 0.35, rng.randint(0, top + 1, shape), y).astype('int64')
    return x, y


def inputs():
    """Per case, x and y as [BATCHES, ...] (and n [BATCHES, N] when padded)."""
    rng = np.random.RandomState(18)
    data = {}
    for case in CASES:
        scheme, padded, _ = case
        xs, ys, ns = [], [], []
        for _ in range(BATCHES):
            if padded:
                x, y = _draw(rng, scheme, (N, S))
                n = rng.randint(0, S + 1, N).astype('int64')
                junk = np.arange(S)[None, :] >= n[:, None]
                x[junk], y[junk] = 99, -7  # past each length: never read
                ns.append(n)
            else:
                x, y = _draw(rng, scheme, (sum(SEQ_LENS), 1))
            xs.append(x)
            ys.append(y)
        name = case_name(case)
        data[name + '_x'], data[name + '_y'] = np.stack(xs), np.stack(ys)
        if padded:
            data[name + '_n'] = np.stack(ns)
    draws = [_draw(rng, 'IOB', (sum(SEQ_LENS), 1)) for _ in range(BATCHES)]
    data['evaluator_x'] = np.stack([d[0] for d in draws])
    data['evaluator_y'] = np.stack([d[1] for d in draws])
    return data


def feed(fluid, data, name, b, padded, place):
    """Batch b of case `name` as a feed dict."""
    if padded:
        return {k: data['%s_%s' % (name, k)][b] for k in 'xyn'}
    return {k: fluid.create_lod_tensor(data['%s_%s' % (name, k)][b], [SEQ_LENS], place)
            for k in 'xy'}


def main():
    import paddle.fluid as fluid
    progs = build(fluid)
    data = inputs()
    out = dict(data)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    for case in CASES:
        name = case_name(case)
        prog, startup, fetch = progs[name]
        exe.run(startup)
        rows = []
        for b in range(BATCHES):
            vals = exe.run(prog, feed=feed(fluid, data, name, b, case[1], place),
                           fetch_list=fetch)
            rows.append([float(np.asarray(v).ravel()[0]) for v in vals])
        out[name + '_out'] = np.array(rows, 'float64')
    prog, startup, ev = progs['evaluator']
    exe.run(startup)
    ev.reset(exe)
    rows = []
    for b in range(BATCHES):
        vals = exe.run(prog, feed=feed(fluid, data, 'evaluator', b, False, place),
                       fetch_list=ev.metrics)
        rows.append([float(np.asarray(v).ravel()[0]) for v in vals])
    rows.append([float(np.asarray(v).ravel()[0]) for v in ev.eval(exe)])
    out['evaluator_out'] = np.array(rows, 'float64')
    os.makedirs(OUT, exist_ok=True)
    np.savez_compressed(os.path.join(OUT, 'expected.npz'), **out)


if __name__ == '__main__':
    main()
