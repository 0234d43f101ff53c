"""Writes machine_translation/: Paddle 1.8.5's numbers for the machine translation
chapter's model at a tiny size.

`build(fluid)` (also used by tests/python/test_beam_search.py with rill) makes the
chapter's two programs with every parameter named, so that decoding uses the trained
ones:
- train: source words -> embedding -> fc (tanh) -> dynamic_gru -> sequence_last_step
  (the context); a DynamicRNN over the target words whose state starts at the context,
  fc([word, state]) -> tanh -> fc -> softmax per step; cross_entropy against the next
  words, mean, Adagrad with L2 decay;
- decode: the same encoder, then the chapter's While loop: sequence_expand of the state
  over the beams, embedding of the previous ids, the state fc, lod_reset to the beams'
  LoD, the softmax fc, topk, log + previous scores, beam_search; stopping after MAX_LEN
  steps or when is_empty(selected ids); beam_search_decode.
The parameters start from seeded numpy; the file holds the STEPS training losses and the
decoded sentence ids, scores and LoD of DECODE_SRC after training. Run with PaddlePaddle
1.8.5 (README.md)."""
import json
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'machine_translation')
V, E, H, BEAM, END, START, MAX_LEN, STEPS, LR = 12, 8, 8, 3, 1, 0, 6, 20, 0.2
PARAMS = ('vemb', 'enc_fc_w', 'enc_fc_b', 'gru_w', 'gru_b', 'temb', 'dec_wx', 'dec_wh',
          'dec_b', 'out_w', 'out_b')
DECODE_SRC = [[4, 7, 2], [9, 3], [5, 5, 8, 11]]


def _encoder(fluid):
    L = fluid.layers
    src = L.data('src_word_id', [1], dtype='int64', lod_level=1)
    emb = L.embedding(src, size=[V, E], param_attr='vemb')
    fc1 = L.fc(emb, H * 3, act='tanh', param_attr='enc_fc_w', bias_attr='enc_fc_b')
    hidden = L.dynamic_gru(fc1, size=H, param_attr='gru_w', bias_attr='gru_b')
    return L.sequence_last_step(hidden)


def build(fluid):
    """{'train': (program, startup, loss), 'decode': (program, startup, [ids, scores])}."""
    L = fluid.layers
    train, train_start = fluid.Program(), fluid.Program()
    with fluid.program_guard(train, train_start), fluid.unique_name.guard():
        context = _encoder(fluid)
        trg = L.data('target_language_word', [1], dtype='int64', lod_level=1)
        trg_emb = L.embedding(trg, size=[V, E], param_attr='temb')
        rnn = L.DynamicRNN()
        with rnn.block():
            word = rnn.step_input(trg_emb)
            pre_state = rnn.memory(init=context, need_reorder=True)
            state = L.fc([word, pre_state], H, act='tanh', param_attr=['dec_wx', 'dec_wh'],
                         bias_attr='dec_b')
            score = L.fc(state, V, act='softmax', param_attr='out_w', bias_attr='out_b')
            rnn.update_memory(pre_state, state)
            rnn.output(score)
        label = L.data('target_language_next_word', [1], dtype='int64', lod_level=1)
        loss = L.mean(L.cross_entropy(rnn(), label))
        fluid.optimizer.Adagrad(
            learning_rate=LR,
            regularization=fluid.regularizer.L2DecayRegularizer(0.01)).minimize(loss)

    decode, decode_start = fluid.Program(), fluid.Program()
    with fluid.program_guard(decode, decode_start), fluid.unique_name.guard():
        context = _encoder(fluid)
        array_len = L.fill_constant([1], 'int64', MAX_LEN)
        counter = L.zeros([1], 'int64', force_cpu=True)
        state_array = L.create_array('float32')
        L.array_write(context, array=state_array, i=counter)
        ids_array = L.create_array('int64')
        scores_array = L.create_array('float32')
        init_ids = L.data('init_ids', [1], dtype='int64', lod_level=2)
        init_scores = L.data('init_scores', [1], dtype='float32', lod_level=2)
        L.array_write(init_ids, array=ids_array, i=counter)
        L.array_write(init_scores, array=scores_array, i=counter)
        cond = L.less_than(counter, array_len)
        loop = L.While(cond=cond)
        with loop.block():
            pre_ids = L.array_read(ids_array, counter)
            pre_state = L.array_read(state_array, counter)
            pre_score = L.array_read(scores_array, counter)
            pre_state_expanded = L.sequence_expand(pre_state, pre_score)
            pre_ids_emb = L.embedding(pre_ids, size=[V, E], param_attr='temb')
            state = L.fc([pre_state_expanded, pre_ids_emb], H, act='tanh',
                         param_attr=['dec_wh', 'dec_wx'], bias_attr='dec_b')
            state_with_lod = L.lod_reset(state, y=pre_score)
            score = L.fc(state_with_lod, V, act='softmax', param_attr='out_w',
                         bias_attr='out_b')
            top_scores, top_ids = L.topk(score, k=BEAM)
            accu = L.elementwise_add(L.log(top_scores), L.reshape(pre_score, [-1]), axis=0)
            sel_ids, sel_scores = L.beam_search(pre_ids, pre_score, top_ids, accu, BEAM,
                                                end_id=END, level=0)
            L.increment(counter, 1, in_place=True)
            L.array_write(state, array=state_array, i=counter)
            L.array_write(sel_ids, array=ids_array, i=counter)
            L.array_write(sel_scores, array=scores_array, i=counter)
            length_cond = L.less_than(counter, array_len)
            finish_cond = L.logical_not(L.is_empty(sel_ids))
            L.logical_and(length_cond, finish_cond, out=cond)
        ids, scores = L.beam_search_decode(ids_array, scores_array, BEAM, END)
    return {'train': (train, train_start, loss), 'decode': (decode, decode_start, [ids, scores])}


def _lod(fluid, seqs):
    flat = np.array([w for s in seqs for w in s], 'int64').reshape(-1, 1)
    return fluid.create_lod_tensor(flat, [[len(s) for s in seqs]], fluid.CPUPlace())


def batches(fluid):
    """STEPS batches of 4 pairs: source words, target words (START first), next words."""
    rng = np.random.RandomState(11)
    out = []
    for _ in range(STEPS):
        src = [list(rng.randint(2, V, rng.randint(2, 6))) for _ in range(4)]
        trg = [[START] + list(rng.randint(2, V, rng.randint(1, 5))) for _ in range(4)]
        nxt = [t[1:] + [END] for t in trg]
        out.append({'src_word_id': _lod(fluid, src), 'target_language_word': _lod(fluid, trg),
                    'target_language_next_word': _lod(fluid, nxt)})
    return out


def run(fluid):
    """{'losses', 'ids', 'scores', 'lod'} of training then decoding."""
    progs = build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    rng = np.random.RandomState(5)
    with fluid.scope_guard(scope):
        exe.run(progs['train'][1])
        for name in PARAMS:
            t = scope.find_var(name).get_tensor()
            shape = np.array(t).shape
            t.set(rng.uniform(-0.5, 0.5, shape).astype('float32'), fluid.CPUPlace())
        losses = []
        prog, _, loss = progs['train']
        for feed in batches(fluid):
            l, = exe.run(prog, feed=feed, fetch_list=[loss])
            losses.append(float(np.array(l).ravel()[0]))
        prog, _, fetch = progs['decode']
        n = len(DECODE_SRC)
        init_ids = fluid.create_lod_tensor(np.full((n, 1), START, 'int64'), [[1] * n, [1] * n],
                                           fluid.CPUPlace())
        init_scores = fluid.create_lod_tensor(np.zeros((n, 1), 'float32'), [[1] * n, [1] * n],
                                              fluid.CPUPlace())
        ids, scores = exe.run(prog, feed={'src_word_id': _lod(fluid, DECODE_SRC),
                                          'init_ids': init_ids, 'init_scores': init_scores},
                              fetch_list=fetch, return_numpy=False)
    return {'losses': losses, 'ids': np.array(ids).ravel().tolist(),
            'scores': np.array(scores).ravel().tolist(),
            'lod': [[int(o) for o in level] for level in ids.lod()]}


if __name__ == '__main__':
    import paddle
    import paddle.fluid as fluid
    os.makedirs(OUT, exist_ok=True)
    res = run(fluid)
    res['paddle'] = paddle.__version__
    with open(os.path.join(OUT, 'expected.json'), 'w') as f:
        json.dump(res, f, indent=1)
    print(res['losses'])
    print(res['ids'], res['lod'])
