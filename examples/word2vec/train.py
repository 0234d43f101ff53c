"""An n-gram language model (Fluid's word2vec chapter): four words predict the next,
through a shared embedding table with sparse updates (is_sparse=True: each step changes
only the rows it looked up). Trains on a small shipped text, saves an inference model,
loads it back and reports the next-word accuracy and some predictions."""
import argparse
import collections
import os
import re
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import rill as fluid  # noqa: E402
from device import add_device_argument, place_of  # noqa: E402
from progress import Progress  # noqa: E402

N = 5  # four context words and the next one
EMBED = 32
HIDDEN = 128


def load_corpus():
    """apache-2.0.txt: the Apache License 2.0 text, lower-cased and split into words.
    Words seen once become <unk>."""
    text = open(os.path.join(HERE, 'apache-2.0.txt')).read().lower()
    words = re.findall(r"[a-z]+|[.,;:()]", text)
    counts = collections.Counter(words)
    vocab = ['<unk>'] + sorted(w for w, c in counts.items() if c > 1)
    index = {w: i for i, w in enumerate(vocab)}
    ids = np.array([index.get(w, 0) for w in words], dtype='int64')
    grams = np.stack([ids[i:len(ids) - N + 1 + i] for i in range(N)], 1)
    return vocab, grams


def build(vocab_size):
    names = ['firstw', 'secondw', 'thirdw', 'fourthw']
    words = [fluid.layers.data(name=n, shape=[1], dtype='int64') for n in names]
    nextw = fluid.layers.data(name='nextw', shape=[1], dtype='int64')
    embs = [fluid.layers.embedding(input=w, size=[vocab_size, EMBED], dtype='float32',
                                   is_sparse=True, param_attr='shared_w') for w in words]
    concat = fluid.layers.concat(input=embs, axis=1)
    hidden = fluid.layers.fc(input=concat, size=HIDDEN, act='sigmoid')
    predict = fluid.layers.fc(input=hidden, size=vocab_size, act='softmax')
    cost = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=nextw))
    return names, predict, cost


def train(epochs, batch, model_dir, place=None):
    vocab, grams = load_corpus()
    rng = np.random.RandomState(5)
    order = rng.permutation(len(grams))
    test, train_set = grams[order[:200]], grams[order[200:]]
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        names, predict, cost = build(len(vocab))
        fluid.optimizer.Adagrad(learning_rate=0.2).minimize(cost)
    exe = fluid.Executor(place or fluid.CPUPlace())
    exe.run(startup)

    def feed_of(rows):
        f = {n: rows[:, i:i + 1] for i, n in enumerate(names)}
        f['nextw'] = rows[:, 4:5]
        return f

    for epoch in range(epochs):
        perm = rng.permutation(len(train_set))
        bar = Progress(len(train_set), 'epoch %2d/%d' % (epoch + 1, epochs), unit='n-grams')
        for i in range(0, len(train_set), batch):
            rows = train_set[perm[i:i + batch]]
            loss, = exe.run(main, feed=feed_of(rows), fetch_list=[cost])
            bar.update(len(rows), loss[0])
        bar.close()

    fluid.io.save_inference_model(model_dir, names, [predict], exe, main_program=main)
    with fluid.scope_guard(fluid.Scope()):
        program, feeds, fetches = fluid.io.load_inference_model(model_dir, exe)
        probs, = exe.run(program, feed={n: test[:, i:i + 1] for i, n in enumerate(feeds)},
                         fetch_list=fetches)
    guess = probs.argmax(1)
    acc = float((guess == test[:, 4]).mean())
    common = np.bincount(grams[:, 4]).argmax()
    print('next-word accuracy on %d held-out 5-grams: %.3f (the most frequent word alone: '
          '%.3f)' % (len(test), acc, float((test[:, 4] == common).mean())))
    for row, g in list(zip(test, guess))[:4]:
        print('  %-40s -> %s' % (' '.join(vocab[w] for w in row[:4]), vocab[g]))
    return acc


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--epochs', type=int, default=10)
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--save', default=None, help='directory for the inference model')
    add_device_argument(ap)
    args = ap.parse_args()
    try:
        place = place_of(args.device)
    except ValueError as e:
        ap.error(str(e))
    train(args.epochs, args.batch, args.save or tempfile.mkdtemp(prefix='rill_word2vec_'), place)


if __name__ == '__main__':
    main()
