"""Writes dynamic_rnn_nested/: SGD training in Paddle 1.8.5 through a DynamicRNN over
paragraphs whose step input is a sentence of words: x has two LoD levels (4 paragraphs
of 2, 3, 1 and 3 sentences, 15 words), so lod_tensor_to_array gives each step's items
the word level of the sentences they hold. A step embeds its words (fc), pools them
into the sentence (sequence_pool sum), adds the previous state's fc and a static input
s of two LoD levels (paragraph -> groups -> rows, reordered by rank and shrunk each step
with its LoD, pooled twice), h_t = tanh(pooled words + fc(h_{t-1}) + pooled s). The rnn
outputs h (one row per sentence) and tanh of the words' embeddings (the words, with
both LoD levels restored by array_to_lod_tensor); the loss is mean(last h per
paragraph) + mean(square(average over sentences of the word sums)). Holds the starting
parameters, seeded batches, Paddle's loss and the gradients of wx, wh, x, h0 and s at
every step, the parameters after the last (expected.npz), the first batch's
outputs with their LoD (outputs.npz), and the array ops one by one on a batch with an
empty sentence (ops.npz: `build_ops`). `build(fluid)` is shared with
tests/python/test_dynamic_rnn_nested.py. Run with PaddlePaddle 1.8.5 (README.md)."""
import os
import sys

import numpy as np

import _steps

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'dynamic_rnn_nested')
STEPS = 4   # SGD steps
PARAS = [2, 3, 1, 3]                       # sentences per paragraph
WORDS = [2, 1, 1, 3, 2, 2, 1, 1, 2]        # words per sentence
S_GROUPS = [2, 1, 3, 1]                    # s: groups per paragraph
S_ROWS = [1, 2, 2, 1, 1, 1, 3]             # s: rows per group
B, D, H = len(PARAS), 2, 3
PARAMS = ('wx', 'bx', 'wh')
FETCH = ('wx@GRAD', 'wh@GRAD', 'x@GRAD', 'h0@GRAD', 's@GRAD')
OUTPUTS = ('hs', 'es')


def build_with_outputs(fluid):
    main, startup = fluid.Program(), fluid.Program()
    L = fluid.layers
    with fluid.program_guard(main, startup):
        x, h0, s = _steps.dynamic_rnn_inputs(fluid, D, H, 2, 2)
        rnn = L.DynamicRNN()
        with rnn.block():
            xt, st, hp = _steps.dynamic_rnn_steps(rnn, x, h0, s)
            e = L.fc(xt, H, param_attr=fluid.ParamAttr(name='wx'),
                     bias_attr=fluid.ParamAttr(name='bx'))
            words = L.sequence_pool(e, 'sum')
            q = L.sequence_pool(L.sequence_pool(st, 'sum'), 'average')
            b = L.fc(hp, H, param_attr=fluid.ParamAttr(name='wh'), bias_attr=False)
            h = L.tanh(L.elementwise_add(L.elementwise_add(words, b), q))
            rnn.update_memory(hp, h)
            rnn.output(h, L.tanh(e))
        hs, es = rnn()
        last = L.sequence_pool(hs, 'last')
        per_para = L.sequence_pool(L.sequence_pool(es, 'sum'), 'average')
        loss = L.elementwise_add(L.reduce_mean(last),
                                 L.reduce_mean(L.elementwise_mul(per_para, per_para)))
        fluid.optimizer.SGD(learning_rate=0.3).minimize(loss)
    return main, startup, loss, {'hs': hs, 'es': es}


def build(fluid):
    return build_with_outputs(fluid)[:3]


def data(seed=11):
    rng = np.random.RandomState(seed)
    params = {'wx': (rng.randn(D, H) * 0.6).astype('float32'),
              'bx': (rng.randn(H) * 0.2).astype('float32'),
              'wh': (rng.randn(H, H) * 0.6).astype('float32')}
    batches = [{'x': rng.randn(sum(WORDS), D).astype('float32'),
                'h0': rng.randn(B, H).astype('float32'),
                's': (rng.randn(sum(S_ROWS), H) * 0.5).astype('float32')}
               for _ in range(STEPS)]
    return params, batches


def feed_of(fluid, batch):
    place = fluid.CPUPlace()
    return {'x': fluid.create_lod_tensor(batch['x'], [PARAS, WORDS], place),
            'h0': batch['h0'],
            's': fluid.create_lod_tensor(batch['s'], [S_GROUPS, S_ROWS], place)}


def outputs(fluid, exe, main, outs, batch):
    """The rnn's outputs on `batch`: values and recursive sequence lengths per level."""
    got = exe.run(main, feed=feed_of(fluid, batch), fetch_list=[outs[k] for k in OUTPUTS],
                  return_numpy=False)
    return _steps.lod_outputs(OUTPUTS, got)


OPS_PARAS = [2, 1, 3, 1]
OPS_WORDS = [1, 3, 2, 0, 1, 2, 1]
OPS_FETCH = ('back', 'ranked', 'shrunk', 'back1', 'item0', 'item1', 'item2')


def _layer(fluid, name):
    # Paddle 1.8.5 keeps the rank-table layers in layers.control_flow, unexported
    return getattr(fluid.layers, name, None) or getattr(fluid.layers.control_flow, name)


def build_ops(fluid):
    """lod_tensor_to_array's items at steps 0-2, array_to_lod_tensor of them (tables at
    levels 0 and 1), reorder_lod_tensor_by_rank and shrink_memory at step 1 of a
    two-level x: (program, {name: variable})."""
    main, startup = fluid.Program(), fluid.Program()
    L = {k: _layer(fluid, k) for k in ('lod_rank_table', 'lod_tensor_to_array',
                                       'array_to_lod_tensor', 'array_read', 'fill_constant',
                                       'reorder_lod_tensor_by_rank', 'shrink_memory')}
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [-1, 1], 'float32', lod_level=2)
        table = L['lod_rank_table'](x)
        arr = L['lod_tensor_to_array'](x, table)
        out = {'back': L['array_to_lod_tensor'](arr, table)}
        for t in range(3):
            out['item%d' % t] = L['array_read'](arr, L['fill_constant']([1], 'int64', t))
        out['ranked'] = L['reorder_lod_tensor_by_rank'](x, table)
        out['shrunk'] = L['shrink_memory'](out['ranked'], L['fill_constant']([1], 'int64', 1),
                                           table)
        table1 = L['lod_rank_table'](x, level=1)
        out['back1'] = L['array_to_lod_tensor'](L['lod_tensor_to_array'](x, table1), table1)
    return main, out


def run_ops(fluid):
    main, out = build_ops(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    xv = np.arange(sum(OPS_WORDS), dtype='float32').reshape(-1, 1)
    got = exe.run(main, feed={'x': fluid.create_lod_tensor(xv, [OPS_PARAS, OPS_WORDS],
                                                           fluid.CPUPlace())},
                  fetch_list=[out[k] for k in OPS_FETCH], return_numpy=False)
    return _steps.lod_outputs(OPS_FETCH, got)


def main():
    import paddle.fluid as fluid
    _steps.record(sys.modules[__name__])
    prog, startup, _, outs = build_with_outputs(fluid)
    params, batches = data()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        _steps.set_up(fluid, exe, scope, startup, params)
        np.savez(os.path.join(OUT, 'outputs.npz'),
                 **outputs(fluid, exe, prog, outs, batches[0]))
    np.savez(os.path.join(OUT, 'ops.npz'), **run_ops(fluid))


if __name__ == '__main__':
    main()
