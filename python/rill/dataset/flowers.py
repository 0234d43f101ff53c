"""Oxford 102 Flowers (`paddle.dataset.flowers`): `flowers/102flowers.tgz` (members
`jpg/image_NNNNN.jpg`), `flowers/imagelabels.mat` (variable `labels`, 1..102 per image)
and `flowers/setid.mat` (variables `trnid`, `valid`, `tstid`: image numbers), the .mat
files read by rill.dataset.matfile (no scipy needed). As in Paddle the larger `tstid`
set is the training set and `trnid` the test set. A set's images are packed once, in
tar order, into the pickled batches of image.batch_images_from_tar under
`flowers/102flowers.tgz_batch/<set>/`; the reader yields (JPEG bytes, label - 1) from
them through `mapper`, on min(4, CPUs) threads with use_xmap (samples then come as the
threads finish), else in order. The default mappers decode the image (BGR), resize its
shorter side to 256, crop 224 (random and flipped half the time for training, central
otherwise), subtract the mean [103.94, 116.78, 123.68] per channel and flatten to
float32 [3 * 224 * 224]."""
import functools
import os
import pickle
from multiprocessing import cpu_count

from . import common
from . import image
from . import matfile
from ..reader import map_readers, xmap_readers

__all__ = ['train', 'test', 'valid']

DATA_URL = 'http://paddlemodels.bj.bcebos.com/flowers/102flowers.tgz'
LABEL_URL = 'http://paddlemodels.bj.bcebos.com/flowers/imagelabels.mat'
SETID_URL = 'http://paddlemodels.bj.bcebos.com/flowers/setid.mat'
DATA_MD5 = '52808999861908f626f3c1f4e79d11fa'
LABEL_MD5 = 'e0620be6f572b9609742df49c70aed4d'
SETID_MD5 = 'a5357ecc9cb78c4bef273ce3793fc85c'
TRAIN_FLAG = 'tstid'
TEST_FLAG = 'trnid'
VALID_FLAG = 'valid'
MEAN = [103.94, 116.78, 123.68]


def default_mapper(is_train, sample):
    """(image bytes, label) -> (float32 CHW pixels flattened, label)."""
    img, label = sample
    img = image.load_image_bytes(img)
    img = image.simple_transform(img, 256, 224, is_train, mean=MEAN)
    return img.flatten().astype('float32'), label


train_mapper = functools.partial(default_mapper, True)
test_mapper = functools.partial(default_mapper, False)


def _variable(path, name):
    values = matfile.loadmat(path)
    if name not in values:
        raise ValueError("flowers: MAT-file '%s' has no numeric variable '%s' (it has %s)"
                         % (path, name, sorted(values)))
    return values[name].ravel()


def _batch_files(meta_file):
    """The batch files the list names; a name that is not where the list says (a list
    written on another machine) is looked for beside the list's set directory."""
    out_dir = meta_file[:-len('.txt')]
    files = []
    with open(meta_file) as f:
        for line in f:
            path = line.strip()
            if not path:
                continue
            if not os.path.isfile(path):
                path = os.path.join(out_dir, os.path.basename(path))
            files.append(path)
    return files


def _load_batch(path):
    with open(path, 'rb') as f:
        batch = pickle.load(f, encoding='bytes')
    if not isinstance(batch, dict):
        raise ValueError("flowers: batch file '%s' does not hold a dict" % path)
    batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
    if 'data' not in batch or 'label' not in batch or \
            len(batch['data']) != len(batch['label']):
        raise ValueError("flowers: batch file '%s' lacks 'data' and 'label' lists of one "
                         "length" % path)
    return batch


def reader_creator(data_file, label_file, setid_file, dataset_name, mapper,
                   buffered_size=1024, use_xmap=True, cycle=False):
    """Reader of the images of set `dataset_name` ('tstid', 'trnid' or 'valid')."""
    labels = _variable(label_file, 'labels')
    indexes = _variable(setid_file, dataset_name)
    img2label = {}
    for i in indexes:
        i = int(i)
        if not 1 <= i <= len(labels):
            raise ValueError("flowers: '%s' in %s names image %d; %s has %d labels"
                             % (dataset_name, setid_file, i, label_file, len(labels)))
        img2label['jpg/image_%05d.jpg' % i] = labels[i - 1]
    meta_file = image.batch_images_from_tar(data_file, dataset_name, img2label)

    def reader():
        while True:
            for path in _batch_files(meta_file):
                batch = _load_batch(path)
                for sample, label in zip(batch['data'], batch['label']):
                    yield sample, int(label) - 1
            if not cycle:
                break

    if use_xmap:
        return xmap_readers(mapper, reader, min(4, cpu_count()), buffered_size)
    return map_readers(mapper, reader)


def _files():
    return (common.cached_file(DATA_URL, 'flowers', DATA_MD5, dataset='flowers'),
            common.cached_file(LABEL_URL, 'flowers', LABEL_MD5, dataset='flowers'),
            common.cached_file(SETID_URL, 'flowers', SETID_MD5, dataset='flowers'))


def train(mapper=train_mapper, buffered_size=1024, use_xmap=True, cycle=False):
    """Reader creator of the training images (the 'tstid' set)."""
    return reader_creator(*_files(), TRAIN_FLAG, mapper, buffered_size, use_xmap,
                          cycle=cycle)


def test(mapper=test_mapper, buffered_size=1024, use_xmap=True, cycle=False):
    """Reader creator of the test images (the 'trnid' set)."""
    return reader_creator(*_files(), TEST_FLAG, mapper, buffered_size, use_xmap,
                          cycle=cycle)


def valid(mapper=test_mapper, buffered_size=1024, use_xmap=True):
    """Reader creator of the validation images (the 'valid' set)."""
    return reader_creator(*_files(), VALID_FLAG, mapper, buffered_size, use_xmap)


def fetch():
    """Paddle downloads here; rill only checks that the files are in place."""
    _files()
