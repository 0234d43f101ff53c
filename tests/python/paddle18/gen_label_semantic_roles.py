"""Writes label_semantic_roles/: the book's semantic role labelling chapter at toy size,
trained in Paddle 1.8.5. Eight LoD id inputs (word, predicate, five context words, mark)
go through embeddings (the six word inputs share a frozen table `emb`, the predicate and
mark tables are `is_sparse`), one tanh fc each, summed; DEPTH stacked dynamic_lstm layers
alternate directions, each fed by the sum of tanh fcs of the previous layer's input and
output; two tanh fcs to the label space feed linear_chain_crf (transition `crfw` with its
own learning rate), whose mean is the loss. crf_decoding (built after the optimizer, so
it reads the updated transitions) and chunk_eval in the IOB scheme follow. Parameters get
seeded values in name order; for each optimizer of OPTIMIZERS (SGD under the chapter's
exponential_decay, Adam) the file holds, per step, the batch, Paddle's loss, decoding and
chunk_eval outputs, and the trained parameters; Paddle's save_inference_model of the
features and decoding trained by SGD (model/) and its outputs on a further batch. `build(fluid, opt)` is shared with
tests/python/test_book_paddle18.py, which trains the same program with rill. Run with
PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'label_semantic_roles')
WORDS, PREDS, LABELS, MARKS = 40, 12, 9, 2     # 9 labels: B/I of 4 chunk types and O
WORD_DIM, MARK_DIM, HIDDEN, DEPTH = 6, 3, 8, 4
STEPS = 4
OPTIMIZERS = ('sgd', 'adam')
FEEDS = ('word', 'verb', 'ctx_n2', 'ctx_n1', 'ctx_0', 'ctx_p1', 'ctx_p2', 'mark', 'target')
RESULTS = ('loss', 'decoded', 'precision', 'recall', 'f1', 'num_infer', 'num_label',
           'num_correct')


def db_lstm(fluid, word, verb, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2, mark):
    L = fluid.layers
    verb_emb = L.embedding(verb, size=[PREDS, WORD_DIM], dtype='float32', is_sparse=True,
                           param_attr='vemb')
    mark_emb = L.embedding(mark, size=[MARKS, MARK_DIM], dtype='float32', is_sparse=True)
    embs = [L.embedding(x, size=[WORDS, WORD_DIM],
                        param_attr=fluid.ParamAttr(name='emb', trainable=False))
            for x in (word, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2)]
    embs += [verb_emb, mark_emb]
    hidden_0 = L.sums(input=[L.fc(input=e, size=HIDDEN, act='tanh') for e in embs])
    lstm_0, _ = L.dynamic_lstm(input=hidden_0, size=HIDDEN, candidate_activation='relu',
                               gate_activation='sigmoid', cell_activation='sigmoid')
    prev = [hidden_0, lstm_0]
    for i in range(1, DEPTH):
        mix = L.sums(input=[L.fc(input=prev[0], size=HIDDEN, act='tanh'),
                            L.fc(input=prev[1], size=HIDDEN, act='tanh')])
        lstm, _ = L.dynamic_lstm(input=mix, size=HIDDEN, candidate_activation='relu',
                                 gate_activation='sigmoid', cell_activation='sigmoid',
                                 is_reverse=(i % 2) == 1)
        prev = [mix, lstm]
    return L.sums(input=[L.fc(input=prev[0], size=LABELS, act='tanh'),
                         L.fc(input=prev[1], size=LABELS, act='tanh')])


def build(fluid, opt):
    """Returns (main, startup, {result name: variable}); names are numbered from 0
    in every build, so the parameters are named alike in every run."""
    main, startup = fluid.Program(), fluid.Program()
    L = fluid.layers
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ins = [L.data(name=n, shape=[1], dtype='int64', lod_level=1) for n in FEEDS]
        feature = db_lstm(fluid, *ins[:-1])
        target = ins[-1]
        cost = L.linear_chain_crf(input=feature, label=target,
                                  param_attr=fluid.ParamAttr(name='crfw', learning_rate=5.0))
        loss = L.mean(cost)
        if opt == 'sgd':
            lr = L.exponential_decay(learning_rate=0.1, decay_steps=2, decay_rate=0.5,
                                     staircase=True)
            fluid.optimizer.SGD(learning_rate=lr).minimize(loss)
        else:
            fluid.optimizer.Adam(learning_rate=0.02).minimize(loss)
        decoded = L.crf_decoding(input=feature, param_attr=fluid.ParamAttr(name='crfw'))
        chunk = L.chunk_eval(input=decoded, label=target, chunk_scheme='IOB',
                             num_chunk_types=(LABELS - 1) // 2)
    results = dict(zip(RESULTS, [loss, decoded] + list(chunk)))
    results['feature'] = feature
    return main, startup, results


def batches(seed=7):
    """STEPS batches of a few sentences: per-word ids, one predicate and its context
    repeated over the sentence, a mark, and IOB targets."""
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(STEPS):
        lens = list(rng.randint(1, 8, size=4))
        b = {'lens': np.array(lens, 'int64')}
        t = sum(lens)
        b['word'] = rng.randint(0, WORDS, (t, 1))
        b['verb'] = np.repeat(rng.randint(0, PREDS, len(lens)), lens).reshape(t, 1)
        for n in ('ctx_n2', 'ctx_n1', 'ctx_0', 'ctx_p1', 'ctx_p2'):
            b[n] = np.repeat(rng.randint(0, WORDS, len(lens)), lens).reshape(t, 1)
        b['mark'] = rng.randint(0, MARKS, (t, 1))
        b['target'] = rng.randint(0, LABELS, (t, 1))
        out.append({k: v.astype('int64') for k, v in b.items()})
    return out


def feed_of(fluid, batch):
    place = fluid.CPUPlace()
    lens = [int(n) for n in batch['lens']]
    return {n: fluid.create_lod_tensor(batch[n], [lens], place) for n in FEEDS}


def set_params(fluid, program, scope, seed=3):
    """Seeded values for every parameter, in name order: {name: value}."""
    rng = np.random.RandomState(seed)
    out = {}
    for p in sorted(program.global_block().all_parameters(), key=lambda p: p.name):
        v = (rng.randn(*p.shape) * 0.4).astype('float32')
        scope.find_var(p.name).get_tensor().set(v, fluid.CPUPlace())
        out[p.name] = v
    return out


def run(fluid, opt, check=None, exe=None, save_to=None):
    """Trains build(fluid, opt) from set_params on batches() with `exe` (a default
    Executor if None); returns the record {`<result>_<step>`, `lod_<step>`,
    `param_<name>`, `final_<name>`}. `check(step, got)`, when given, is called after every
    step with that step's results. With `save_to`, the trained model (the features and
    their decoding, fed all inputs but the target) is saved there by
    save_inference_model."""
    main, startup, results = build(fluid, opt)
    exe = exe or fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    rec = {}
    with fluid.scope_guard(scope):
        exe.run(startup)
        params = set_params(fluid, main, scope)
        rec.update(('param_' + k, v) for k, v in params.items())
        for step, batch in enumerate(batches()):
            got = exe.run(main, feed=feed_of(fluid, batch),
                          fetch_list=[results[k] for k in RESULTS], return_numpy=False)
            now = {'%s_%d' % (k, step): np.array(v) for k, v in zip(RESULTS, got)}
            now['lod_%d' % step] = np.array(got[1].lod()[0], 'int64')
            if check:
                check(step, now)
            rec.update(now)
        for k in params:
            rec['final_' + k] = np.array(scope.find_var(k).get_tensor())
        if save_to:
            fluid.io.save_inference_model(save_to, list(FEEDS[:-1]),
                                          [results['feature'], results['decoded']], exe,
                                          main_program=main)
    return rec


def infer(fluid, dirname, exe=None):
    """Loads the inference model in `dirname` into a fresh scope and runs it on a seeded
    batch: {'feature', 'decoded', 'lod'}."""
    exe = exe or fluid.Executor(fluid.CPUPlace())
    batch = batches(seed=23)[0]
    with fluid.scope_guard(fluid.Scope()):
        prog, feed_names, targets = fluid.io.load_inference_model(dirname, exe)
        assert list(feed_names) == list(FEEDS[:-1]), feed_names
        feed = feed_of(fluid, batch)
        feature, decoded = exe.run(prog, feed={k: feed[k] for k in feed_names},
                                   fetch_list=targets, return_numpy=False)
    return {'feature': np.array(feature), 'decoded': np.array(decoded),
            'lod': np.array(decoded.lod()[0], 'int64')}


def main():
    import paddle.fluid as fluid
    os.makedirs(OUT, exist_ok=True)
    for opt in OPTIMIZERS:
        model = os.path.join(OUT, 'model') if opt == 'sgd' else None
        rec = run(fluid, opt, save_to=model)
        if model:
            rec.update(('infer_' + k, v) for k, v in infer(fluid, model).items())
        np.savez(os.path.join(OUT, opt + '.npz'), **rec)
        print(opt, [float(rec['loss_%d' % s].reshape(-1)[0]) for s in range(STEPS)],
              [float(rec['f1_%d' % s].reshape(-1)[0]) for s in range(STEPS)])


if __name__ == '__main__':
    main()
