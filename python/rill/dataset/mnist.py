"""MNIST (`paddle.dataset.mnist`): the gzipped IDX files in `mnist/`. Samples: (float32
[784] pixels scaled from 0..255 to [-1, 1], int label)."""
import gzip
import struct

import numpy as np

from . import common

__all__ = ['train', 'test']

URL_PREFIX = 'https://dataset.bj.bcebos.com/mnist/'
TEST_IMAGE_URL = URL_PREFIX + 't10k-images-idx3-ubyte.gz'
TEST_IMAGE_MD5 = '9fb629c4189551a2d022fa330f9573f3'
TEST_LABEL_URL = URL_PREFIX + 't10k-labels-idx1-ubyte.gz'
TEST_LABEL_MD5 = 'ec29112dd5afa0611ce80d1b7f02629c'
TRAIN_IMAGE_URL = URL_PREFIX + 'train-images-idx3-ubyte.gz'
TRAIN_IMAGE_MD5 = 'f68b3c2dcbeaaa9fbdd348bbdeb94873'
TRAIN_LABEL_URL = URL_PREFIX + 'train-labels-idx1-ubyte.gz'
TRAIN_LABEL_MD5 = 'd53e105ee54ea40749a09fcbcd1e9432'


def _read(image_path, label_path):
    with gzip.open(image_path, 'rb') as f:
        img = f.read()
    with gzip.open(label_path, 'rb') as f:
        lab = f.read()
    if len(img) < 16 or len(lab) < 8:
        raise ValueError('%s / %s: shorter than an IDX header' % (image_path, label_path))
    magic_img, n_img, rows, cols = struct.unpack_from('>IIII', img, 0)
    magic_lab, n_lab = struct.unpack_from('>II', lab, 0)
    if magic_img != 2051 or magic_lab != 2049:
        raise ValueError('%s / %s: IDX magic %d / %d, not 2051 / 2049'
                         % (image_path, label_path, magic_img, magic_lab))
    if n_img != n_lab or len(img) < 16 + n_img * rows * cols or len(lab) < 8 + n_lab:
        raise ValueError('%s / %s: %d images, %d labels, or a truncated file'
                         % (image_path, label_path, n_img, n_lab))
    pixels = np.frombuffer(img, np.uint8, n_img * rows * cols, 16)
    images = pixels.reshape(n_img, rows * cols).astype('float32') / 255.0 * 2.0 - 1.0
    labels = np.frombuffer(lab, np.uint8, n_lab, 8)
    return images, labels


def _creator(image_url, image_md5, label_url, label_md5):
    image_path = common.cached_file(image_url, 'mnist', image_md5, dataset='mnist')
    label_path = common.cached_file(label_url, 'mnist', label_md5, dataset='mnist')

    def reader():
        images, labels = _read(image_path, label_path)
        for i in range(len(labels)):
            yield images[i, :], int(labels[i])
    return reader


def train():
    """Reader creator of the 60000 training images: (pixels in [-1, 1], label)."""
    return _creator(TRAIN_IMAGE_URL, TRAIN_IMAGE_MD5, TRAIN_LABEL_URL, TRAIN_LABEL_MD5)


def test():
    """Reader creator of the 10000 test images: (pixels in [-1, 1], label)."""
    return _creator(TEST_IMAGE_URL, TEST_IMAGE_MD5, TEST_LABEL_URL, TEST_LABEL_MD5)
