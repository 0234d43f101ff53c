"""Writes label_semantic_roles/: the book's semantic role labelling chapter at toy size,
trained in Paddle 1.8.5. Eight LoD id inputs (word, predicate, five context words, mark)
go through embeddings (the six word inputs share a frozen table `emb`, the predicate and
mark tables are `is_sparse`), one tanh fc each, summed; DEPTH stacked dynamic_lstm layers
alternate directions, each fed by the sum of tanh fcs of the previous layer's input and
output; two tanh fcs to the label space feed linear_chain_crf (transition `crfw` with its
own learning rate), whose mean is the loss. crf_decoding (built after the optimizer, so
it reads the updated transitions) and chunk_eval in the IOB scheme follow. Parameters get
seeded values in name order; for each optimizer of OPTIMIZERS (SGD under the chapter's
exponential_decay, Adam, and three with gradient clipping, whose sparse gradients Paddle
merges before clipping, and a padding_idx on the sparse mark table) the file holds, per
step, Paddle's loss, decoding and chunk_eval outputs, and the trained parameters;
Paddle's save_inference_model of the features and decoding trained by SGD (model/) and
its outputs on a further batch. `build(fluid, opt)` is shared with
tests/python/test_book_paddle18.py, which trains the same program with rill. Run with
PaddlePaddle 1.8.5 (README.md)."""
import os
import sys

import numpy as np

import _steps

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'label_semantic_roles')
WORDS, PREDS, LABELS, MARKS = 40, 12, 9, 2     # 9 labels: B/I of 4 chunk types and O
WORD_DIM, MARK_DIM, HIDDEN, DEPTH = 6, 3, 8, 4
STEPS = 20
OPTIMIZERS = ('sgd', 'adam', 'sgd_clip_value', 'momentum_clip_norm', 'adam_clip_global')
# the inference model's feeds, in the chapter's order
FEEDS = ('word_data', 'verb_data', 'ctx_n2_data', 'ctx_n1_data', 'ctx_0_data', 'ctx_p1_data',
         'ctx_p2_data', 'mark_data')
# the fields of a conll05 sample, in the reader's order
FIELDS = ('word_data', 'ctx_n2_data', 'ctx_n1_data', 'ctx_0_data', 'ctx_p1_data',
          'ctx_p2_data', 'verb_data', 'mark_data', 'target')
RESULTS = ('loss', 'decoded', 'precision', 'recall', 'f1', 'num_infer', 'num_label',
           'num_correct')


def db_lstm(fluid, word, verb, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2, mark, mark_pad=None):
    L = fluid.layers
    verb_emb = L.embedding(verb, size=[PREDS, WORD_DIM], dtype='float32', is_sparse=True,
                           param_attr='vemb')
    mark_emb = L.embedding(mark, size=[MARKS, MARK_DIM], dtype='float32', is_sparse=True,
                           padding_idx=mark_pad)
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
        ins = {n: fluid.data(name=n, shape=[None, 1], dtype='int64', lod_level=1)
               for n in FEEDS + ('target',)}
        feature = db_lstm(fluid, *[ins[n] for n in FEEDS],
                          mark_pad=0 if 'clip' in opt else None)
        target = ins['target']
        cost = L.linear_chain_crf(input=feature, label=target,
                                  param_attr=fluid.ParamAttr(name='crfw', learning_rate=5.0))
        loss = L.mean(cost)
        if opt == 'sgd':
            lr = L.exponential_decay(learning_rate=0.1, decay_steps=2, decay_rate=0.5,
                                     staircase=True)
            fluid.optimizer.SGD(learning_rate=lr).minimize(loss)
        elif opt == 'adam':
            fluid.optimizer.Adam(learning_rate=0.02).minimize(loss)
        elif opt == 'sgd_clip_value':
            fluid.optimizer.SGD(learning_rate=0.2, grad_clip=fluid.clip.GradientClipByValue(
                0.05)).minimize(loss)
        elif opt == 'momentum_clip_norm':
            fluid.optimizer.Momentum(
                learning_rate=0.05, momentum=0.9, grad_clip=fluid.clip.GradientClipByNorm(0.1),
                regularization=fluid.regularizer.L2Decay(0.01)).minimize(loss)
        else:
            fluid.optimizer.Adam(learning_rate=0.02, grad_clip=fluid.clip.GradientClipByGlobalNorm(
                0.5)).minimize(loss)
        decoded = L.crf_decoding(input=feature, param_attr=fluid.ParamAttr(name='crfw'))
        chunk = L.chunk_eval(input=decoded, label=target, chunk_scheme='IOB',
                             num_chunk_types=(LABELS - 1) // 2)
    results = dict(zip(RESULTS, [loss, decoded] + list(chunk)))
    results['feature'] = feature
    results['feed_list'] = [ins[n] for n in FIELDS]
    return main, startup, results


def batches(seed=7):
    """STEPS batches of a few conll05-style samples (FIELDS: lists of ids per word; the
    predicate and its context repeated over the sentence; a mark; IOB targets)."""
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(STEPS):
        batch = []
        for n in rng.randint(1, 8, size=4):
            ctx = [[int(rng.randint(WORDS))] * n for _ in range(5)]
            batch.append(tuple([[int(v) for v in rng.randint(0, WORDS, n)]] + ctx +
                               [[int(rng.randint(PREDS))] * n,
                                [int(v) for v in rng.randint(0, MARKS, n)],
                                [int(v) for v in rng.randint(0, LABELS, n)]]))
        out.append(batch)
    return out


def run(fluid, opt, check=None, exe=None, save_to=None):
    """Trains build(fluid, opt) on batches() from seeded parameters (_steps.train_record,
    whose record it returns). With `save_to`, the trained model (the features and their
    decoding, fed FEEDS) is saved there by save_inference_model."""
    main, startup, results = build(fluid, opt)
    feeder = fluid.DataFeeder(feed_list=results['feed_list'], place=fluid.CPUPlace())

    def save(exe):
        fluid.io.save_inference_model(save_to, list(FEEDS),
                                      [results['feature'], results['decoded']], exe,
                                      main_program=main)
    return _steps.train_record(fluid, main, startup, {k: results[k] for k in RESULTS},
                               (feeder.feed(b) for b in batches()), seed=3, scale=0.4,
                               check=check, exe=exe, finish=save if save_to else None)


def infer(fluid, dirname, exe=None):
    """Loads the inference model in `dirname` into a fresh scope and runs it, as the
    chapter does, on create_random_int_lodtensor inputs after numpy.random.seed:
    {'feature', 'decoded', 'lod'}."""
    place = fluid.CPUPlace()
    exe = exe or fluid.Executor(place)
    np.random.seed(23)
    with fluid.scope_guard(fluid.Scope()):
        prog, feed_names, targets = fluid.io.load_inference_model(dirname, exe)
        assert list(feed_names) == list(FEEDS), feed_names
        high = {'verb_data': PREDS - 1, 'mark_data': MARKS - 1}
        feed = {n: fluid.create_random_int_lodtensor([[3, 4, 2]], [1], place, low=0,
                                                     high=high.get(n, WORDS - 1))
                for n in feed_names}
        feature, decoded = exe.run(prog, feed=feed, fetch_list=targets, return_numpy=False)
    return {'feature': np.array(feature), 'decoded': np.array(decoded),
            'lod': np.array(decoded.lod()[0], 'int64')}


def record(fluid, opt):
    """run's record; after SGD, with the model saved to OUT/model and its outputs
    (infer) as `infer_<key>`."""
    model = os.path.join(OUT, 'model') if opt == 'sgd' else None
    rec = run(fluid, opt, save_to=model)
    if model:
        rec.update(('infer_' + k, v) for k, v in infer(fluid, model).items())
    return rec


def main():
    _steps.write_records(sys.modules[__name__], OPTIMIZERS, record)


if __name__ == '__main__':
    main()
