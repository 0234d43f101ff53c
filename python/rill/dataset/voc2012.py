"""PASCAL VOC 2012 segmentation (`paddle.dataset.voc2012`):
`voc2012/VOCtrainval_11-May-2012.tar`. The list
`VOCdevkit/VOC2012/ImageSets/Segmentation/<set>.txt` names the images, one id a line;
each is `VOCdevkit/VOC2012/JPEGImages/<id>.jpg` with its label
`VOCdevkit/VOC2012/SegmentationClass/<id>.png`. Samples, in the list's order: (the
image as Pillow gives it, HWC uint8 RGB; the label PNG's values, HW uint8 class ids
for the palette PNGs of VOC). train() reads the `trainval` list (2913 images), test()
`train` (1464) and val() `val` (1449), as Paddle does. The ids are read as text (Paddle
1.8.5 under Python 3 formats them as bytes, `b'2007_000032'`, and finds no member).
Pillow is needed to decode."""
import io
import tarfile

import numpy as np

from . import common

__all__ = ['train', 'test', 'val']

VOC_URL = 'http://host.robots.ox.ac.uk/pascal/VOC/voc2012/VOCtrainval_11-May-2012.tar'
VOC_MD5 = '6cd6e144f989b92b3379bac3b3de84fd'
SET_FILE = 'VOCdevkit/VOC2012/ImageSets/Segmentation/{}.txt'
DATA_FILE = 'VOCdevkit/VOC2012/JPEGImages/{}.jpg'
LABEL_FILE = 'VOCdevkit/VOC2012/SegmentationClass/{}.png'
CACHE_DIR = 'voc2012'


def _pil_image():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError('paddle.dataset.voc2012 decodes its images with Pillow (PIL), '
                          'which cannot be imported') from None
    return Image


def _decode(Image, data, tar_file, name):
    try:
        return np.array(Image.open(io.BytesIO(data)))
    except (OSError, ValueError, SyntaxError) as e:
        raise ValueError("voc2012: member '%s' of %s is not an image Pillow can decode "
                         "(%s)" % (name, tar_file, e)) from None


def reader_creator(filename, sub_name):
    """Reader of the images listed in the `sub_name` list of the tar `filename`."""
    Image = _pil_image()
    with tarfile.open(filename) as tar:
        members = {m.name: m for m in tar if m.isfile()}
    set_file = SET_FILE.format(sub_name)
    if set_file not in members:
        raise ValueError("voc2012: %s has no member '%s'" % (filename, set_file))

    def read(tar, name):
        if name not in members:
            raise ValueError("voc2012: %s has no member '%s' (listed in '%s')"
                             % (filename, name, set_file))
        return tar.extractfile(members[name]).read()

    def reader():
        with tarfile.open(filename) as tar:
            ids = read(tar, set_file).decode('utf-8').split('\n')
            for line in ids:
                line = line.strip()
                if not line:
                    continue
                data_file, label_file = DATA_FILE.format(line), LABEL_FILE.format(line)
                data = _decode(Image, read(tar, data_file), filename, data_file)
                label = _decode(Image, read(tar, label_file), filename, label_file)
                yield data, label

    return reader


def _tar():
    return common.cached_file(VOC_URL, CACHE_DIR, VOC_MD5, dataset='voc2012')


def train():
    """Reader creator of the `trainval` images (2913)."""
    return reader_creator(_tar(), 'trainval')


def test():
    """Reader creator of the `train` images (1464)."""
    return reader_creator(_tar(), 'train')


def val():
    """Reader creator of the `val` images (1449)."""
    return reader_creator(_tar(), 'val')
