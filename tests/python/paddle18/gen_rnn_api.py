"""Writes rnn_api/expected.npz: Paddle 1.8.5's values for the cell and decoder API of
layers/rnn.py (GRUCell, LSTMCell, rnn, dynamic_decode with BeamSearchDecoder and with
BasicDecoder over GreedyEmbeddingHelper and TrainingHelper).

Each case of CASES is built by `build(fluid, case)` (shared with
tests/python/test_rnn_api.py, which builds it with rill); every parameter is set from a
numpy generator seeded by its name (`set_params`), the inputs come from `feeds`, and
`run` returns the fetched values by key: outputs, final states and, for the rnn
cases, the gradients of the inputs, initial states and parameters under a weighted sum.
`train` runs SGD steps through an LSTMCell rnn and returns the losses. Run with
PaddlePaddle 1.8.5 (README.md)."""
import os
import zlib

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'rnn_api')
B, T, I, H = 3, 5, 4, 6
LENGTHS = [5, 2, 4]
V, E, BEAM, START, END, MAX_STEPS = 7, 4, 3, 0, 1, 6
# rnn cases: (cell, time_major, is_reverse, sequence_length, initial states fed)
RNN_CASES = {
    'gru': ('gru', False, False, True, False),
    'gru_reverse': ('gru', False, True, False, True),
    'lstm_time_major_reverse': ('lstm', True, True, True, False),
    'lstm': ('lstm', False, False, True, False),
}
DECODE_CASES = ('beam_gru', 'beam_lstm', 'greedy_gru', 'sample_lstm', 'training_lstm')
CASES = tuple(RNN_CASES) + DECODE_CASES
TRAIN_STEPS = 6
SAMPLE_SEED = 11
# the pull towards END of the decoders' output bias: beam_gru ends every hypothesis
# before MAX_STEPS, beam_lstm and greedy_gru run to it with some entries ended early
END_BIAS = {'beam_gru': 1.6, 'beam_lstm': 1.0, 'greedy_gru': 1.2,
            'sample_lstm': 0.5, 'training_lstm': 1.0}


def _rng(name):
    return np.random.RandomState(zlib.crc32(name.encode()) & 0x7fffffff)


def param_value(name, shape, end_bias=0.0):
    v = _rng(name).uniform(-0.8, 0.8, shape)
    if name == 'out_b':  # a pull towards END so that sentences end at different steps
        v[END] += end_bias
    return v.astype('float32')


def set_params(fluid, program, scope, end_bias=0.0):
    for p in sorted(program.global_block().all_parameters(), key=lambda p: p.name):
        scope.find_var(p.name).get_tensor().set(param_value(p.name, p.shape, end_bias),
                                                fluid.CPUPlace())


def _cell(fluid, kind, **kw):
    L = fluid.layers
    return L.GRUCell(H, **kw) if kind == 'gru' else L.LSTMCell(H, **kw)


def _weighted(fluid, x, name, shape):
    """sum(x * w) for a fixed w (so every output element gets its own gradient)."""
    L = fluid.layers
    w = L.assign(_rng('w_' + name).uniform(-1, 1, shape).astype('float32'))
    return L.reduce_sum(L.elementwise_mul(x, w))


def build(fluid, case):
    """(main, startup, {key: variable or variable name}) for one case."""
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    fetch = {}
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        if case in RNN_CASES:
            kind, time_major, reverse, use_len, init = RNN_CASES[case]
            x = L.data('x', [T, B, I] if time_major else [B, T, I], dtype='float32',
                       append_batch_size=False)
            x.stop_gradient = False
            length = L.data('len', [B], dtype='int64', append_batch_size=False)
            states = None
            if init:
                h0 = L.data('h0', [B, H], dtype='float32', append_batch_size=False)
                h0.stop_gradient = False
                states = h0
                if kind == 'lstm':
                    c0 = L.data('c0', [B, H], dtype='float32', append_batch_size=False)
                    c0.stop_gradient = False
                    states = [h0, c0]
            cell = _cell(fluid, kind)
            out, final = L.rnn(cell, x, initial_states=states,
                               sequence_length=length if use_len else None,
                               time_major=time_major, is_reverse=reverse)
            finals = final if isinstance(final, list) else [final]
            loss = _weighted(fluid, out, 'out', [T, B, H] if time_major else [B, T, H])
            for k, f in enumerate(finals):
                loss = L.elementwise_add(loss, _weighted(fluid, f, 'final%d' % k, [B, H]))
            fluid.backward.append_backward(loss)
            fetch['out'] = out
            for k, f in enumerate(finals):
                fetch['final%d' % k] = f
            fetch['loss'] = loss
            fetch['x@GRAD'] = 'x@GRAD'
            if init:
                fetch['h0@GRAD'] = 'h0@GRAD'
                if kind == 'lstm':
                    fetch['c0@GRAD'] = 'c0@GRAD'
            for p in main.global_block().all_parameters():
                fetch[p.name + '@GRAD'] = p.name + '@GRAD'
            return main, startup, fetch
        # the batch dim unknown, as Paddle's BeamSearchDecoder needs (its gather stacks a
        # range of the batch size, of unknown extent, with the indices)
        kind = case.split('_')[1]
        h0 = L.data('h0', [-1, H], dtype='float32', append_batch_size=False)
        states = h0
        if kind == 'lstm':
            states = [h0, L.data('c0', [-1, H], dtype='float32', append_batch_size=False)]
        cell = _cell(fluid, kind)

        def embed(ids):
            return fluid.embedding(ids, size=[V, E], param_attr=fluid.ParamAttr(name='emb'))

        def project(h):
            return L.fc(h, V, num_flatten_dims=len(h.shape) - 1,
                        param_attr=fluid.ParamAttr(name='out_w'),
                        bias_attr=fluid.ParamAttr(name='out_b'))
        if case.startswith('beam'):
            dec = L.BeamSearchDecoder(cell, START, END, BEAM, embedding_fn=embed,
                                      output_fn=project)
            outs, fin, lens = L.dynamic_decode(dec, inits=states, max_step_num=MAX_STEPS,
                                               return_length=True, is_test=True,
                                               impute_finished=kind == 'lstm')
            fetch.update(ids=outs, log_probs=fin.log_probs, lengths=fin.lengths,
                         seq_lengths=lens, finished=fin.finished)
        elif case.startswith('greedy') or case.startswith('sample'):
            start = L.data('start', [-1], dtype='int64', append_batch_size=False)
            if case.startswith('greedy'):
                helper = L.GreedyEmbeddingHelper(embed, start, END)
            else:
                helper = L.SampleEmbeddingHelper(embed, start, END, softmax_temperature=0.7,
                                                 seed=SAMPLE_SEED)
            dec = L.BasicDecoder(cell, helper, output_fn=project)
            outs, fin, lens = L.dynamic_decode(dec, inits=states, max_step_num=MAX_STEPS,
                                               return_length=True)
            fetch.update(logits=outs.cell_outputs, ids=outs.sample_ids, seq_lengths=lens)
            for k, f in enumerate(fin if isinstance(fin, list) else [fin]):
                fetch['final%d' % k] = f
        else:
            x = L.data('x', [-1, T, E], dtype='float32', append_batch_size=False)
            length = L.data('len', [-1], dtype='int64', append_batch_size=False)
            helper = L.TrainingHelper(x, length)
            dec = L.BasicDecoder(cell, helper, output_fn=project)
            outs, fin, lens = L.dynamic_decode(dec, inits=states, return_length=True)
            fetch.update(logits=outs.cell_outputs, ids=outs.sample_ids, seq_lengths=lens,
                         final0=fin[0], final1=fin[1])
    return main, startup, fetch


def feeds(case):
    rng = _rng('feed_' + case)
    f = {'len': np.array(LENGTHS, 'int64'),
         'h0': rng.uniform(-1, 1, (B, H)).astype('float32'),
         'c0': rng.uniform(-1, 1, (B, H)).astype('float32'),
         'start': np.array([START, 3, 5], 'int64')}
    if case in RNN_CASES:
        f['x'] = rng.uniform(-1, 1, (T, B, I) if RNN_CASES[case][1] else (B, T, I))
    else:
        f['x'] = rng.uniform(-1, 1, (B, T, E))
    f['x'] = f['x'].astype('float32')
    return f


def run(fluid, case):
    main, startup, fetch = build(fluid, case)
    names = sorted(fetch)
    block = main.global_block()
    feed = {k: v for k, v in feeds(case).items() if k in block.vars}
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        set_params(fluid, main, scope, END_BIAS.get(case, 0.0))
        got = exe.run(main, feed=feed, fetch_list=[fetch[k] for k in names])
    return {k: np.asarray(v) for k, v in zip(names, got)}


def _sgd_losses(fluid, name, main, startup, loss, make_feed):
    """The loss at each of TRAIN_STEPS runs of main (which holds the SGD step), from the
    seeded parameters, on the feeds make_feed draws from a generator seeded by name."""
    rng = _rng(name)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    losses = []
    with fluid.scope_guard(scope):
        exe.run(startup)
        set_params(fluid, main, scope)
        for _ in range(TRAIN_STEPS):
            l, = exe.run(main, feed=make_feed(rng), fetch_list=[loss])
            losses.append(float(np.asarray(l).ravel()[0]))
    return np.array(losses)


def train(fluid):
    """Losses of TRAIN_STEPS SGD steps: LSTMCell rnn over lengths -> fc on the final
    hidden state -> squared error."""
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data('x', [B, T, I], dtype='float32', append_batch_size=False)
        length = L.data('len', [B], dtype='int64', append_batch_size=False)
        y = L.data('y', [B, 1], dtype='float32', append_batch_size=False)
        out, (h, c) = L.rnn(L.LSTMCell(H), x, sequence_length=length)
        pred = L.fc(L.elementwise_add(h, L.reduce_mean(out, dim=1)), 1,
                    param_attr=fluid.ParamAttr(name='pred_w'),
                    bias_attr=fluid.ParamAttr(name='pred_b'))
        loss = L.reduce_mean(L.square(L.elementwise_sub(pred, y)))
        fluid.optimizer.SGD(learning_rate=0.3).minimize(loss)

    def feed(rng):
        return {'x': rng.uniform(-1, 1, (B, T, I)).astype('float32'),
                'len': rng.randint(1, T + 1, B).astype('int64'),
                'y': rng.uniform(-1, 1, (B, 1)).astype('float32')}
    return _sgd_losses(fluid, 'train', main, startup, loss, feed)


def train_decode(fluid):
    """Losses of TRAIN_STEPS SGD steps of a teacher-forced decoder: dynamic_decode over
    BasicDecoder(GRUCell, TrainingHelper) with impute_finished, the logits' softmax
    cross entropy against target tokens, masked by the lengths (the first entry has
    the full length, so the loop runs T steps)."""
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        src = L.data('src', [-1, T], dtype='int64', append_batch_size=False)
        tgt = L.data('tgt', [-1, T, 1], dtype='int64', append_batch_size=False)
        length = L.data('len', [-1], dtype='int64', append_batch_size=False)
        h0 = L.data('h0', [-1, H], dtype='float32', append_batch_size=False)
        emb = fluid.embedding(src, size=[V, E], param_attr=fluid.ParamAttr(name='emb'))
        helper = L.TrainingHelper(emb, length)
        dec = L.BasicDecoder(L.GRUCell(H), helper, output_fn=lambda h: L.fc(
            h, V, param_attr=fluid.ParamAttr(name='out_w'),
            bias_attr=fluid.ParamAttr(name='out_b')))
        outs, _ = L.dynamic_decode(dec, inits=h0, impute_finished=True)
        mask = L.sequence_mask(length, maxlen=T, dtype='float32')
        cost = L.softmax_with_cross_entropy(outs.cell_outputs, tgt)
        cost = L.elementwise_mul(L.squeeze(cost, [2]), mask)
        loss = L.reduce_sum(cost) / L.cast(L.reduce_sum(length), 'float32')
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)

    def feed(rng):
        lens = rng.randint(1, T + 1, B)
        lens[0] = T
        return {'src': rng.randint(0, V, (B, T)).astype('int64'),
                'tgt': rng.randint(0, V, (B, T, 1)).astype('int64'),
                'len': lens.astype('int64'),
                'h0': rng.uniform(-1, 1, (B, H)).astype('float32')}
    return _sgd_losses(fluid, 'train_decode', main, startup, loss, feed)


if __name__ == '__main__':
    import paddle.fluid as fluid
    os.makedirs(OUT, exist_ok=True)
    out = {}
    for case in CASES:
        for k, v in run(fluid, case).items():
            out['%s/%s' % (case, k)] = v
    out['train/losses'] = train(fluid)
    out['train_decode/losses'] = train_decode(fluid)
    np.savez(os.path.join(OUT, 'expected.npz'), **out)
    for k in sorted(out):
        if k.endswith('ids') or k.endswith('losses'):
            print(k, out[k].tolist())
