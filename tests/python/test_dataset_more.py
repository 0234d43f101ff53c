"""paddle.dataset's flowers, image, mq2007, sentiment, voc2012 and wmt14 (rill.dataset)
over tiny files written here in Paddle's cache layout and on-disk formats (tar, zip,
MATLAB v5, LETOR text), in a temporary dataset directory."""
import io
import os
import struct
import tarfile
import zipfile
import zlib

import numpy as np
import pytest

from rill import dataset
from rill.dataset import common


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.delenv('PADDLE_DATA_HOME', raising=False)
    d = tmp_path / 'data'
    monkeypatch.setattr(common, 'DATA_HOME', str(d))
    return d


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


def missing(home, call, sub, name, url):
    with pytest.raises(common.DatasetFileMissing) as e:
        call()
    msg = str(e.value)
    assert str(home / sub / name) in msg and url in msg
    return msg


# wmt14

def wmt14_tar():
    src_dict = b'<s>\n<e>\n<unk>\nle\nchat\nnoir\n'
    trg_dict = b'<s>\n<e>\n<unk>\nthe\ncat\nblack\n'
    long_src = ' '.join(['le'] * 79).encode()
    train = b'le chat\tthe cat\nno tab here\nle noir chien\tthe black dog\n' + \
        long_src + b'\tthe\n'
    return tar_bytes([('wmt14/src.dict', src_dict), ('wmt14/trg.dict', trg_dict),
                      ('wmt14/train/train', train), ('wmt14/test/test', b'chat\tcat\n'),
                      ('wmt14/gen/gen', b'noir\tblack cat\n')])


def test_wmt14_samples_filters_and_dicts(home):
    put(home, 'wmt14', 'wmt14.tgz', wmt14_tar())
    samples = list(dataset.wmt14.train(6)())
    # the malformed line and the 81-word source are skipped
    assert samples == [([0, 3, 4, 1], [0, 3, 4], [3, 4, 1]),
                       ([0, 3, 5, 2, 1], [0, 3, 5, 2], [3, 5, 2, 1])]
    assert list(dataset.wmt14.test(6)()) == [([0, 4, 1], [0, 4], [4, 1])]
    assert list(dataset.wmt14.gen(6)()) == [([0, 5, 1], [0, 5, 4], [5, 4, 1])]
    # a smaller dictionary maps the later words to <unk>
    assert list(dataset.wmt14.test(4)()) == [([0, 2, 1], [0, 2], [2, 1])]
    src, trg = dataset.wmt14.get_dict(4)
    assert src == {0: '<s>', 1: '<e>', 2: '<unk>', 3: 'le'}
    assert trg == {0: '<s>', 1: '<e>', 2: '<unk>', 3: 'the'}
    src, trg = dataset.wmt14.get_dict(5, reverse=False)
    assert src['chat'] == 4 and trg['cat'] == 4 and len(trg) == 5


def test_wmt14_missing_file_and_bad_archive(home):
    missing(home, lambda: dataset.wmt14.train(10), 'wmt14', 'wmt14.tgz',
            'http://paddlemodels.bj.bcebos.com/wmt/wmt14.tgz')
    put(home, 'wmt14', 'wmt14.tgz', tar_bytes([('wmt14/train/train', b'a\tb\n')]))
    with pytest.raises(ValueError, match="src.dict"):
        dataset.wmt14.get_dict(10)


# sentiment

def reviews_zip():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w') as z:
        z.writestr('movie_reviews/README', 'not a review\n')
        z.writestr('movie_reviews/pos/cv001_2.txt', "a good film .\nthe end\n")
        z.writestr('movie_reviews/neg/cv001_1.txt', "a bad film , bad !\n")
        z.writestr('movie_reviews/neg/cv000_9.txt', "it's the film\n")
        z.writestr('movie_reviews/pos/cv000_3.txt', "The good\n")
        z.writestr('movie_reviews/pos/cv002_5.txt', "unpaired\n")
    return buf.getvalue()


def test_sentiment_dictionary_order_and_labels(home):
    put(home, 'corpora', 'movie_reviews.zip', reviews_zip())
    words = dataset.sentiment.get_word_dict()
    # counts: film 3, the 2 (The is another word), bad 2, good 2, a 2, then by first sight
    # over neg/cv000, neg/cv001, pos/cv000, pos/cv001, pos/cv002
    order = [w for w, _ in words]
    assert order == ['film', 'the', 'a', 'bad', 'good', 'it', "'", 's', ',', '!', 'The',
                     '.', 'end', 'unpaired']
    assert [i for _, i in words] == list(range(len(order)))
    ids = dict(words)
    samples = list(dataset.sentiment.train())
    # neg and pos alternate; the unpaired third pos review is dropped
    assert samples == [([ids['it'], ids["'"], ids['s'], ids['the'], ids['film']], 0),
                       ([ids['the'], ids['good']], 1),
                       ([ids[w] for w in ['a', 'bad', 'film', ',', 'bad', '!']], 0),
                       ([ids[w] for w in ['a', 'good', 'film', '.', 'the', 'end']], 1)]
    assert list(dataset.sentiment.test()) == []


def test_sentiment_missing_file(home):
    msg = missing(home, dataset.sentiment.train, 'corpora', 'movie_reviews.zip',
                  'https://corpora.bj.bcebos.com/movie_reviews%2Fmovie_reviews.zip')
    assert 'sentiment' in msg


# mq2007

def letor_line(rel, qid, base):
    feats = ' '.join('%d:%.6f' % (i + 1, base + i / 1000.0) for i in range(46))
    return '%d qid:%d %s #docid = GX%03d inc = 1 prob = 0.5\n' % (rel, qid, feats, qid)


def letor(rows):
    return ''.join(letor_line(*r) for r in rows).encode()


def feats(base):
    return np.array([base + i / 1000.0 for i in range(46)])


MQ_DIR = os.path.join('MQ2007', 'MQ2007', 'MQ2007', 'Fold1')


def test_mq2007_formats(home):
    # query 10: relevances 0, 2, 1, 2; query 11: all 0 (left out); query 12: one document
    rows = [(0, 10, 0.1), (2, 10, 0.2), (1, 10, 0.3), (2, 10, 0.4), (0, 11, 0.5),
            (0, 11, 0.6), (1, 12, 0.7)]
    put(home, MQ_DIR, 'train.txt', letor(rows))
    put(home, MQ_DIR, 'test.txt', letor([(1, 20, 0.9), (0, 20, 0.8)]))
    pairs = list(dataset.mq2007.train())
    # ranked 0.2 (2), 0.4 (2), 0.3 (1), 0.1 (0): pairs of different relevance
    want = [(0.2, 0.3), (0.2, 0.1), (0.4, 0.3), (0.4, 0.1), (0.3, 0.1)]
    assert len(pairs) == len(want)
    for (label, hi, lo), (h, l) in zip(pairs, want):
        assert label.tolist() == [1]
        np.testing.assert_allclose(hi, feats(h))
        np.testing.assert_allclose(lo, feats(l))
    points = list(dataset.mq2007.train(format='pointwise'))
    assert [p[0] for p in points] == [2, 1]
    np.testing.assert_allclose(points[0][1], feats(0.2))
    np.testing.assert_allclose(points[1][1], feats(0.7))
    lists = list(dataset.mq2007.train(format='listwise'))
    assert len(lists) == 2
    assert lists[0][0].tolist() == [[2], [2], [1], [0]]
    assert lists[0][1].shape == (4, 46)
    np.testing.assert_allclose(lists[0][1][1], feats(0.4))
    plain = list(dataset.mq2007.test(format='plain_txt'))
    assert len(plain) == 1 and plain[0][:2] == (20, 1)
    np.testing.assert_allclose(plain[0][2], feats(0.9))
    ql = dataset.mq2007.load_from_text('MQ2007/MQ2007/Fold1/train.txt')
    assert [q.query_id for q in ql] == [10, 11, 12]
    assert ql[0][0].description == 'docid = GX010 inc = 1 prob = 0.5'
    assert len(dataset.mq2007.query_filter(ql)) == 2


def test_mq2007_bad_line_and_missing_file(home):
    missing(home, lambda: list(dataset.mq2007.train()), MQ_DIR, 'train.txt',
            'MQ2007.rar')
    put(home, MQ_DIR, 'train.txt', letor([(1, 1, 0.1)]) + b'1 qid:1 1:0.5\n')
    with pytest.raises(ValueError, match=r'train\.txt:2: expected 48'):
        list(dataset.mq2007.train())
    put(home, MQ_DIR, 'train.txt', letor([(1, 1, 0.1)]))
    with pytest.raises(ValueError, match='format'):
        list(dataset.mq2007.train(format='rowwise'))
