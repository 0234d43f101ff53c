"""Writes ctr_layers/expected.npz: Paddle 1.8.5's numbers for shard_index,
continuous_value_model (with and without use_cvm, with and without LoD: Y and the
gradient of X through append_backward) and filter_by_instag (rows, LoD sequences and the
nothing-kept case: Out with its LoD, LossWeight and the gradient of Ins). `build(fluid,
case)` and `run_case` are shared with tests/python/test_ctr_layers.py, which builds the
same programs with rill. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'ctr_layers')

CASES = {
    'shard_0': ('shard_index', dict(index_num=20, nshards=3, shard_id=0)),
    'shard_2': ('shard_index', dict(index_num=20, nshards=3, shard_id=2, ignore_value=-7)),
    'cvm': ('cvm', dict(use_cvm=True, lod=False)),
    'cvm_lod': ('cvm', dict(use_cvm=True, lod=True)),
    'cvm_drop': ('cvm', dict(use_cvm=False, lod=False)),
    'cvm_drop_lod': ('cvm', dict(use_cvm=False, lod=True)),
    'instag_rows': ('instag', dict(is_lod=False, tags=[[1, 2], [3], [2, 5], [4], [6]],
                                   filter=[2, 6])),
    'instag_lod': ('instag', dict(is_lod=True, tags=[[1, 2], [3], [5]], filter=[5, 1],
                                  ins_lod=[2, 1, 2])),
    'instag_empty': ('instag', dict(is_lod=True, tags=[[1, 2], [3], [5]], filter=[9],
                                    ins_lod=[2, 1, 2], out_val_if_empty=3)),
}

CVM_LOD = [1, 3]
X = np.linspace(0.1, 4.2, 20, dtype='float32').reshape(4, 5)
SHOW_CLK = np.array([[3, 1], [5, 2], [1, 0], [8, 4]], 'float32')


def build(fluid, case):
    """(main, startup, feed, fetch names) of a case."""
    layer, kw = CASES[case]
    place = fluid.CPUPlace()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        if layer == 'shard_index':
            x = fluid.data('x', [6, 1], 'int64')
            y = fluid.layers.shard_index(x, **kw)
            feed = {'x': np.array([[0], [6], [7], [13], [14], [19]], 'int64')}
            return main, startup, feed, [y.name]
        if layer == 'cvm':
            x = fluid.data('x', [-1, 5], 'float32', lod_level=1 if kw['lod'] else 0)
            x.stop_gradient = False
            c = fluid.data('c', [-1, 2], 'float32')
            y = fluid.layers.continuous_value_model(x, c, kw['use_cvm'])
            w = fluid.data('w', [-1, 5 if kw['use_cvm'] else 3], 'float32')
            loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(y, w))
            fluid.backward.append_backward(loss)
            width = 5 if kw['use_cvm'] else 3
            feed = {'x': fluid.create_lod_tensor(X, [CVM_LOD], place) if kw['lod'] else X,
                    'c': SHOW_CLK[:len(CVM_LOD)] if kw['lod'] else SHOW_CLK,
                    'w': np.linspace(-1, 1, 4 * width, dtype='float32').reshape(4, width)}
            return main, startup, feed, [y.name, 'x@GRAD']
        ins = fluid.data('ins', [-1, 3], 'float32', lod_level=1 if kw['is_lod'] else 0)
        ins.stop_gradient = False
        tag = fluid.data('tag', [-1, 1], 'int64', lod_level=1)
        flt = fluid.data('flt', [-1], 'int64')
        out, lw = fluid.layers.filter_by_instag(ins, tag, flt, kw['is_lod'],
                                                kw.get('out_val_if_empty', 0))
        # loss = sum(out^2) / 2: the gradient of each kept row is its own value
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(out, out)) * 0.5
        fluid.backward.append_backward(loss)
        xs = np.arange(15, dtype='float32').reshape(5, 3) / 4 - 1
        tags = np.array([t for s in kw['tags'] for t in s], 'int64').reshape(-1, 1)
        feed = {'ins': fluid.create_lod_tensor(xs, [kw['ins_lod']], place) if kw['is_lod']
                else xs,
                'tag': fluid.create_lod_tensor(tags, [[len(s) for s in kw['tags']]], place),
                'flt': np.array(kw['filter'], 'int64')}
        return main, startup, feed, [out.name, lw.name, 'ins@GRAD']


def run_case(fluid, case):
    """{case/<i>: value, case/<i>.lod: offsets of its first LoD level} of every fetch."""
    main, startup, feed, fetch = build(fluid, case)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        got = exe.run(main, feed=feed, fetch_list=fetch, return_numpy=False)
    res = {}
    for i, t in enumerate(got):
        res['%s/%d' % (case, i)] = np.array(t)
        lod = t.lod()
        if lod:
            res['%s/%d.lod' % (case, i)] = np.array(lod[0], 'int64')
    return res


def main():
    res = {}
    import paddle.fluid as fluid
    for case in sorted(CASES):
        res.update(run_case(fluid, case))
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **res)
    for k in sorted(res):
        print(k, res[k].dtype, res[k].shape)


if __name__ == '__main__':
    main()
