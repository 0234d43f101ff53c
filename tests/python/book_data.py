"""Tiny synthetic files in Paddle's dataset cache layout and formats, with labels that
follow from the inputs so that a few training steps lower the loss. Used by
test_book_chapters.py; `python book_data.py HOME` writes them under HOME."""
import gzip
import io
import pickle
import struct
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np


def put(root, sub, name, data):
    path = Path(root) / sub / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def tar_bytes(members, mode='w:gz'):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def idx(magic, dims, data):
    return gzip.compress(struct.pack('>I' + 'I' * len(dims), magic, *dims) + bytes(data))


def uci_housing(root, rng, rows=60):
    x = rng.rand(rows, 13) * 10
    y = x[:, :3].sum(1, keepdims=True) + 5
    put(root, 'uci_housing', 'housing.data',
        '\n'.join(' '.join('%.4f' % v for v in r) for r in np.hstack([x, y])).encode())


def _digits(rng, n):
    """28x28 images whose label is the row band (of ten) that is lit."""
    labels = rng.randint(0, 10, n)
    img = (rng.rand(n, 28, 28) * 60).astype(np.uint8)
    for i, lab in enumerate(labels):
        img[i, 2 + lab * 2:4 + lab * 2, :] = 255
    return img, labels


def mnist(root, rng, train=256, test=64):
    for prefix, n in (('train', train), ('t10k', test)):
        img, labels = _digits(rng, n)
        put(root, 'mnist', '%s-images-idx3-ubyte.gz' % prefix, idx(2051, (n, 28, 28), img.ravel()))
        put(root, 'mnist', '%s-labels-idx1-ubyte.gz' % prefix, idx(2049, (n,), labels.astype(np.uint8)))


def _colors(rng, n):
    """32x32 RGB images (channel-major rows of 3072) whose label sets the colour."""
    labels = rng.randint(0, 10, n)
    base = np.stack([(labels * 25) % 256, (labels * 70) % 256, (255 - labels * 25) % 256], 1)
    data = base[:, :, None] + rng.randint(0, 20, (n, 3, 1024))
    return np.clip(data, 0, 255).astype(np.uint8).reshape(n, 3072), [int(v) for v in labels]


def cifar(root, rng, train=128, test=32):
    tr, trl = _colors(rng, train)
    te, tel = _colors(rng, test)
    put(root, 'cifar', 'cifar-10-python.tar.gz', tar_bytes(
        [('cifar-10-batches-py/data_batch_1', pickle.dumps({b'data': tr, b'labels': trl})),
         ('cifar-10-batches-py/test_batch', pickle.dumps({b'data': te, b'labels': tel}))]))


def imikolov(root, rng, words=12):
    """Sentences walking the vocabulary in order: each word predicts the next. Every word
    is seen more than 50 times, the default cut of build_dict()."""
    vocab = ['w%d' % i for i in range(words)]
    text = []
    for _ in range(words * 52 // 12 + 1):
        start = rng.randint(0, words)
        text.append(' ' + ' '.join(vocab[(start + k) % words] for k in range(12)))
    body = ('\n'.join(text) + '\n').encode()
    put(root, 'imikolov', 'imikolov%2Fsimple-examples.tgz', tar_bytes(
        [('./simple-examples/data/ptb.train.txt', body),
         ('./simple-examples/data/ptb.valid.txt', body[:len(body) // 4].rsplit(b'\n', 1)[0] + b'\n')]))


def movielens(root, rng, ratings=400, movies=8, genres=3):
    """Six users; the score is high when user and movie parity agree."""
    buf = io.BytesIO()
    names = ['Genre%d' % g for g in range(genres)]
    with zipfile.ZipFile(buf, 'w') as z:
        z.writestr('ml-1m/movies.dat', ''.join(
            '%d::Film %s Part%d (1995)::%s\n' % (m, 'Red' if m % 2 else 'Blue', m,
                                                 '|'.join(names[m % genres:m % genres + 3]))
            for m in range(1, movies + 1)))
        z.writestr('ml-1m/users.dat', ''.join(
            '%d::%s::%d::%d::10000\n' % (u, 'F' if u % 2 else 'M', [1, 18, 25, 35][u % 4], 4 * u)
            for u in range(1, 7)))
        rows = []
        for _ in range(ratings):
            u, m = rng.randint(1, 7), rng.randint(1, movies + 1)
            rows.append('%d::%d::%d::978300760\n' % (u, m, 5 if u % 2 == m % 2 else 1))
        z.writestr('ml-1m/ratings.dat', ''.join(rows))
    put(root, 'movielens', 'movielens%2Fml-1m.zip', buf.getvalue())


def imdb(root, rng, docs=120):
    """Reviews whose sentiment words tell the label; every word is seen more than 150
    times, the cut of word_dict()."""
    good, bad, plain = ['good', 'great', 'fine'], ['bad', 'awful', 'dull'], ['film', 'plot', 'the']
    members = []
    for split in ('train', 'test'):
        for i in range(docs if split == 'train' else docs // 4):
            pos = i % 2 == 0
            words = [(good if pos else bad)[rng.randint(3)] if rng.rand() < 0.6 else plain[rng.randint(3)]
                     for _ in range(8 + rng.randint(8))]
            members.append(('aclImdb/%s/%s/%d_%d.txt' % (split, 'pos' if pos else 'neg', i, 8 if pos else 2),
                            (' '.join(words) + '.\n').encode()))
    put(root, 'imdb', 'imdb%2FaclImdb_v1.tar.gz', tar_bytes(members))


def conll05(root, rng, sentences=80, words=20, dim=32):
    """Sentences of 3 to 8 words with one predicate each: the words before it are an A0
    chunk, the words after it an A1 chunk (so the labels follow from the predicate's
    place); the dictionaries, and `dim`-wide word vectors after a 16-byte header."""
    vocab = ['w%d' % i for i in range(words)]
    verbs = ['v%d' % i for i in range(4)]
    text, props = [], []
    for _ in range(sentences):
        n = rng.randint(3, 9)
        at = rng.randint(0, n)
        sent = [vocab[rng.randint(words)] for _ in range(n)]
        sent[at] = verbs[rng.randint(len(verbs))]
        for i, w in enumerate(sent):
            if i == at:
                label = '(V*)'
            elif i < at:
                label = '(A0*' if i == 0 else '*'
                label = label + ')' if i == at - 1 else label
            else:
                label = '(A1*' if i == at + 1 else '*'
                label = label + ')' if i == n - 1 else label
            text.append(w)
            props.append('%s %s' % (w if i == at else '-', label))
        text.append('')
        props.append('')
    put(root, 'conll05st', 'conll05st-tests.tar.gz', tar_bytes(
        [('conll05st-release/test.wsj/words/test.wsj.words.gz',
          gzip.compress(('\n'.join(text) + '\n').encode())),
         ('conll05st-release/test.wsj/props/test.wsj.props.gz',
          gzip.compress(('\n'.join(props) + '\n').encode()))]))
    word_dict = ['<unk>', 'bos', 'eos'] + vocab + verbs
    put(root, 'conll05st', 'conll05st%2FwordDict.txt', ('\n'.join(word_dict) + '\n').encode())
    put(root, 'conll05st', 'conll05st%2FverbDict.txt', ('\n'.join(verbs) + '\n').encode())
    put(root, 'conll05st', 'conll05st%2FtargetDict.txt',
        b'B-A0\nI-A0\nB-A1\nI-A1\nB-V\nI-V\nO\n')
    emb = rng.randn(len(word_dict), dim).astype('<f4')
    put(root, 'conll05st', 'conll05st%2Femb', bytes(16) + emb.tobytes())


def wmt16(root, rng, pairs=120, words=8):
    """English-German pairs of 2 or 3 words where each English word e<k> becomes the
    German word d<k> in the same place, as `english<TAB>german` lines of wmt16/train,
    wmt16/test and wmt16/val inside wmt16/wmt16.tar.gz."""
    def lines(n):
        out = []
        for _ in range(n):
            ks = rng.randint(0, words, rng.randint(2, 4))
            out.append('%s\t%s\n' % (' '.join('e%d' % k for k in ks),
                                      ' '.join('d%d' % k for k in ks)))
        return ''.join(out).encode()
    put(root, 'wmt16', 'wmt16.tar.gz', tar_bytes(
        [('wmt16/train', lines(pairs)), ('wmt16/test', lines(pairs // 4)),
         ('wmt16/val', lines(pairs // 4))]))


def write_all(home, large=False):
    """Every data set the book chapters read, under HOME/.cache/paddle/dataset. `large`
    makes the vocabularies as big as the ids the book's own inference examples use."""
    root = Path(home) / '.cache' / 'paddle' / 'dataset'
    rng = np.random.RandomState(0)
    uci_housing(root, rng)
    mnist(root, rng)
    cifar(root, rng)
    imikolov(root, rng, words=220 if large else 12)
    movielens(root, rng, ratings=6000 if large else 400, movies=4200 if large else 8,
              genres=18 if large else 3)
    imdb(root, rng)
    conll05(root, rng)
    wmt16(root, rng)
    return root


if __name__ == '__main__':
    write_all(sys.argv[1], large='--large' in sys.argv)
