"""paddle.dataset readers (rill.dataset) over tiny files written here in Paddle's cache
layout and formats, in a temporary home directory."""
import gzip
import io
import os
import pickle
import struct
import tarfile
import zipfile

import numpy as np
import pytest

from rill import dataset
from rill.dataset import common


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.delenv('PADDLE_DATA_HOME', raising=False)
    monkeypatch.setattr(common, 'DATA_HOME', None)
    return tmp_path / '.cache' / 'paddle' / 'dataset'


def put(home, sub, name, data):
    path = home / sub / name
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


def test_missing_file_names_the_place_and_the_url(home):
    with pytest.raises(common.DatasetFileMissing) as e:
        dataset.mnist.train()
    msg = str(e.value)
    assert str(home / 'mnist' / 'train-images-idx3-ubyte.gz') in msg
    assert 'https://dataset.bj.bcebos.com/mnist/train-images-idx3-ubyte.gz' in msg
    assert 'does not download' in msg
    assert isinstance(e.value, FileNotFoundError)


def test_data_home_override(tmp_path, monkeypatch):
    monkeypatch.setattr(common, 'DATA_HOME', None)
    monkeypatch.setenv('PADDLE_DATA_HOME', str(tmp_path / 'd'))
    assert common.data_home() == str(tmp_path / 'd')
    monkeypatch.setattr(common, 'DATA_HOME', str(tmp_path / 'e'))
    assert common.data_home() == str(tmp_path / 'e')


def test_uci_housing_normalizes_features_and_splits_80_20(home):
    rng = np.random.RandomState(0)
    rows = rng.rand(10, 14) * 50
    put(home, 'uci_housing', 'housing.data',
        '\n'.join(' '.join('%.4f' % v for v in r) for r in rows).encode())
    rows = np.round(rows, 4)
    want = rows.copy()
    want[:, :13] = (rows[:, :13] - rows[:, :13].mean(0)) / (rows[:, :13].max(0) - rows[:, :13].min(0))
    train = list(dataset.uci_housing.train()())
    test = list(dataset.uci_housing.test()())
    assert len(train) == 8 and len(test) == 2
    x, y = train[0]
    assert x.shape == (13,) and y.shape == (1,) and x.dtype == np.float64
    np.testing.assert_allclose(np.array([s[0] for s in train + test]), want[:, :13], rtol=1e-9)
    np.testing.assert_allclose(np.array([s[1] for s in test]), want[8:, 13:])


def idx(magic, dims, data):
    return gzip.compress(struct.pack('>I' + 'I' * len(dims), magic, *dims) + bytes(data))


def test_mnist_scales_pixels_to_minus_one_one(home):
    pixels = np.arange(3 * 28 * 28, dtype=np.int64) % 256
    put(home, 'mnist', 'train-images-idx3-ubyte.gz', idx(2051, (3, 28, 28), pixels.astype(np.uint8)))
    put(home, 'mnist', 'train-labels-idx1-ubyte.gz', idx(2049, (3,), [7, 0, 9]))
    samples = list(dataset.mnist.train()())
    assert [s[1] for s in samples] == [7, 0, 9]
    img = samples[1][0]
    assert img.shape == (784,) and img.dtype == np.float32
    np.testing.assert_allclose(img, pixels[784:1568] / 255.0 * 2 - 1, atol=1e-6)
    assert samples[0][0][0] == -1.0 and samples[0][0][255] == 1.0


def test_cifar10_and_100(home):
    data = (np.arange(4 * 3072) % 256).astype(np.uint8).reshape(4, 3072)
    batch = pickle.dumps({b'data': data[:3], b'labels': [1, 2, 3]})
    test_batch = pickle.dumps({b'data': data[3:], b'labels': [9]})
    put(home, 'cifar', 'cifar-10-python.tar.gz', tar_bytes(
        [('cifar-10-batches-py/data_batch_1', batch), ('cifar-10-batches-py/test_batch', test_batch)]))
    put(home, 'cifar', 'cifar-100-python.tar.gz', tar_bytes(
        [('cifar-100-python/train', pickle.dumps({b'data': data[:2], b'fine_labels': [42, 99]})),
         ('cifar-100-python/test', pickle.dumps({b'data': data[2:], b'fine_labels': [5, 6]}))]))
    train = list(dataset.cifar.train10()())
    assert [s[1] for s in train] == [1, 2, 3]
    assert train[0][0].dtype == np.float32 and train[0][0].shape == (3072,)
    np.testing.assert_allclose(train[2][0], data[2] / 255.0, atol=1e-6)
    assert [s[1] for s in dataset.cifar.test10()()] == [9]
    assert [s[1] for s in dataset.cifar.train100()()] == [42, 99]
    assert [s[1] for s in dataset.cifar.test100()()] == [5, 6]


def test_imdb_dictionary_and_samples(home):
    docs = [('aclImdb/train/pos/0_9.txt', b'A good, good film.\n'),
            ('aclImdb/train/neg/1_2.txt', b'Bad film; bad bad.\n'),
            ('aclImdb/test/pos/2_8.txt', b'good\n')]
    put(home, 'imdb', 'imdb%2FaclImdb_v1.tar.gz', tar_bytes(docs))
    import re
    d = dataset.imdb.build_dict(re.compile(r'aclImdb/((train)|(test))/((pos)|(neg))/.*\.txt$'), 0)
    # counts: good 3, bad 3, film 2, a 1: by falling count, then by the word
    assert d == {'bad': 0, 'good': 1, 'film': 2, 'a': 3, '<unk>': 4}
    train = list(dataset.imdb.train(d)())
    assert train == [([3, 1, 1, 2], 0), ([0, 2, 0, 0], 1)]
    assert list(dataset.imdb.test(d)()) == [([1], 0)]


def test_imikolov_ngram_and_seq(home):
    put(home, 'imikolov', 'imikolov%2Fsimple-examples.tgz', tar_bytes(
        [('./simple-examples/data/ptb.train.txt', b' a b a\n b c\n'),
         ('./simple-examples/data/ptb.valid.txt', b' a z\n')]))
    d = dataset.imikolov.build_dict(min_word_freq=1)
    # a 3, <e> 3, <s> 3, b 2; c and z once
    assert d == {'<e>': 0, '<s>': 1, 'a': 2, 'b': 3, '<unk>': 4}
    grams = list(dataset.imikolov.train(d, 3)())
    assert grams[0] == (1, 2, 3) and grams[-1] == (3, 4, 0) and len(grams) == 5
    seq = list(dataset.imikolov.test(d, 0, dataset.imikolov.DataType.SEQ)())
    assert seq == [([1, 2, 4], [2, 4, 0])]


def test_movielens_samples_and_split(home):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w') as z:
        z.writestr('ml-1m/movies.dat', '1::Toy Story (1995)::Animation|Comedy\n'
                                       '2::Heat (1995)::Action\n')
        z.writestr('ml-1m/users.dat', '1::F::1::10::48067\n2::M::56::16::70072\n')
        z.writestr('ml-1m/ratings.dat', ''.join('%d::%d::%d::978300760\n' % (1 + i % 2, 1 + i % 2, 1 + i % 5)
                                                for i in range(40)))
    put(home, 'movielens', 'movielens%2Fml-1m.zip', buf.getvalue())
    ml = dataset.movielens
    assert ml.movie_categories() == {'Action': 0, 'Animation': 1, 'Comedy': 2}
    assert ml.get_movie_title_dict() == {'heat': 0, 'story': 1, 'toy': 2}
    assert (ml.max_movie_id(), ml.max_user_id(), ml.max_job_id()) == (2, 2, 16)
    train, test = list(ml.train()()), list(ml.test()())
    draws = np.random.RandomState(0).random_sample(40) < 0.1
    assert len(test) == draws.sum() and len(train) + len(test) == 40
    first = train[0] if not draws[0] else test[0]
    assert first == [1, 1, 0, 10, 1, [1, 2], [2, 1], [1 * 2 - 5.0]]


def test_conll05_nine_sequences(home):
    words = b'The\ncat\nsat\n\n'
    props = b'-  (A0*\n-  *)\nsit  (V*)\n\n'
    put(home, 'conll05st', 'conll05st-tests.tar.gz', tar_bytes(
        [('conll05st-release/test.wsj/words/test.wsj.words.gz', gzip.compress(words)),
         ('conll05st-release/test.wsj/props/test.wsj.props.gz', gzip.compress(props))]))
    put(home, 'conll05st', 'conll05st%2FwordDict.txt', b'<unk>\nThe\ncat\nsat\nbos\neos\n')
    put(home, 'conll05st', 'conll05st%2FverbDict.txt', b'run\nsit\n')
    put(home, 'conll05st', 'conll05st%2FtargetDict.txt', b'B-V\nI-V\nB-A0\nI-A0\nO\n')
    word_dict, verb_dict, label_dict = dataset.conll05.get_dict()
    assert label_dict == {'B-A0': 0, 'I-A0': 1, 'B-V': 2, 'I-V': 3, 'O': 4}
    (sample,) = list(dataset.conll05.test()())
    assert len(sample) == 9
    w, n2, n1, c0, p1, p2, pred, mark, label = sample
    assert w == [1, 2, 3]
    assert (n2, n1, c0, p1, p2) == ([1] * 3, [2] * 3, [3] * 3, [5] * 3, [5] * 3)
    assert pred == [1, 1, 1] and mark == [1, 1, 1] and label == [0, 1, 2]
    assert dataset.conll05.get_embedding.__name__ == 'get_embedding'


def test_wmt16_dictionaries_and_samples(home):
    train = b'a b b\tx y\nb c\ty y\nbad line\n'
    put(home, 'wmt16', 'wmt16.tar.gz', tar_bytes(
        [('wmt16/train', train), ('wmt16/test', b'a z\tx\n'), ('wmt16/val', b'b\ty\n')]))
    samples = list(dataset.wmt16.train(5, 4)())
    # en: <s> <e> <unk> b a; de: <s> <e> <unk> y
    assert samples[0] == ([0, 4, 3, 3, 1], [0, 2, 3], [2, 3, 1])
    assert list(dataset.wmt16.test(5, 4)()) == [([0, 4, 2, 1], [0, 2], [2, 1])]
    assert (home / 'wmt16' / 'en_5.dict').read_bytes() == b'<s>\n<e>\n<unk>\nb\na\n'
    assert dataset.wmt16.get_dict('de', 4, reverse=True) == {0: '<s>', 1: '<e>', 2: '<unk>', 3: 'y'}
    assert list(dataset.wmt16.validation(4, 5, src_lang='de')()) == [([0, 3, 1], [0, 3], [3, 1])]
