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

