"""CIFAR-10 and CIFAR-100 (`paddle.dataset.cifar`): the python-pickle tarballs in
`cifar/`. Every member whose name contains the part's name (`data_batch`, `test_batch`,
`train`, `test`) is a pickled dict with `data` (uint8 rows of 3072) and `labels` or
`fine_labels`. Samples: (float32[3072] pixels / 255, int label)."""
import pickle
import tarfile

import numpy as np

from . import common

__all__ = ['train100', 'test100', 'train10', 'test10']

URL_PREFIX = 'https://dataset.bj.bcebos.com/cifar/'
CIFAR10_URL = URL_PREFIX + 'cifar-10-python.tar.gz'
CIFAR10_MD5 = 'c58f30108f718f92721af3b95e74349a'
CIFAR100_URL = URL_PREFIX + 'cifar-100-python.tar.gz'
CIFAR100_MD5 = 'eb9058c3a382ffc7106e4002c42a8d85'


def _creator(path, sub_name, cycle=False):
    def reader():
        while True:
            with tarfile.open(path, mode='r') as tar:
                for member in tar:
                    if sub_name not in member.name or not member.isfile():
                        continue
                    batch = pickle.load(tar.extractfile(member), encoding='bytes')
                    labels = batch.get(b'labels', batch.get(b'fine_labels'))
                    if labels is None:
                        raise ValueError("%s: member '%s' has neither labels nor "
                                         "fine_labels" % (path, member.name))
                    for sample, label in zip(batch[b'data'], labels):
                        yield (sample / 255.0).astype(np.float32), int(label)
            if not cycle:
                break
    return reader


def _file(url, md5):
    return common.cached_file(url, 'cifar', md5, dataset='cifar')


def train100():
    """Reader creator of CIFAR-100's training images: (pixels in [0, 1], fine label)."""
    return _creator(_file(CIFAR100_URL, CIFAR100_MD5), 'train')


def test100():
    """Reader creator of CIFAR-100's test images."""
    return _creator(_file(CIFAR100_URL, CIFAR100_MD5), 'test')


def train10(cycle=False):
    """Reader creator of CIFAR-10's training images: (pixels in [0, 1], label)."""
    return _creator(_file(CIFAR10_URL, CIFAR10_MD5), 'data_batch', cycle=cycle)


def test10(cycle=False):
    """Reader creator of CIFAR-10's test images."""
    return _creator(_file(CIFAR10_URL, CIFAR10_MD5), 'test_batch', cycle=cycle)
