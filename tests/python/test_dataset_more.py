"""paddle.dataset's flowers, image, mq2007, sentiment, voc2012 and wmt14 (rill.dataset)
over tiny files written here in Paddle's cache layout and on-disk formats (tar, zip,
MATLAB v5, LETOR text), in a temporary dataset directory."""
import io
import os
import struct
import zipfile
import zlib

import numpy as np
import pytest

from book_data import put, tar_bytes
from rill import dataset
from rill.dataset import common


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.delenv('PADDLE_DATA_HOME', raising=False)
    d = tmp_path / 'data'
    monkeypatch.setattr(common, 'DATA_HOME', str(d))
    return d


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


# image

def rgb_grid():
    i, j, k = np.meshgrid(np.arange(3), np.arange(5), np.arange(3), indexing='ij')
    return ((i * 97 + j * 41 + k * 113) % 256).astype(np.uint8)


def gray_grid():
    i, j = np.meshgrid(np.arange(7), np.arange(4), indexing='ij')
    return ((i * i * 13 + j * 71) % 256).astype(np.uint8)


@pytest.fixture
def no_cv2(monkeypatch):
    """rill's own decoding and resizing paths, whether or not cv2 is installed."""
    monkeypatch.setattr(dataset.image, '_cv2_tried', True)
    monkeypatch.setattr(dataset.image, '_cv2', None)


def test_resize_short_matches_opencv_bicubic(no_cv2):
    # the pixels OpenCV 4.2's cv2.resize(..., INTER_CUBIC) gives for these inputs
    out = dataset.image.resize_short(rgb_grid(), 4)
    assert out.dtype == np.uint8
    assert out.tolist() == [
        [[0, 104, 250], [20, 131, 53], [57, 181, 6], [91, 247, 63], [134, 199, 100],
         [178, 2, 129]],
        [[49, 190, 116], [76, 240, 70], [132, 143, 75], [197, 87, 133], [173, 116, 189],
         [44, 70, 216]],
        [[140, 161, 81], [180, 211, 134], [152, 114, 189], [155, 49, 175], [144, 114, 147],
         [15, 167, 186]],
        [[199, 37, 169], [255, 65, 198], [102, 115, 255], [0, 160, 159], [67, 195, 4],
         [112, 224, 63]]]
    g = gray_grid()
    assert dataset.image.resize_short(g, 2).tolist() == [[33, 203], [170, 21], [101, 129]]
    f = dataset.image.resize_short(g.astype(np.float32) / 255, 2)
    np.testing.assert_allclose(f, [[0.13105021, 0.79589254], [0.66605395, 0.08296569],
                                   [0.39742646, 0.50453436]], rtol=0, atol=1e-5)
    # the shorter side becomes size, the other size * long // short
    assert dataset.image.resize_short(np.zeros((10, 25, 3), np.uint8), 4).shape == (4, 10, 3)
    assert dataset.image.resize_short(np.full((9, 9), 7, np.uint8), 5).tolist() == \
        [[7] * 5] * 5
    with pytest.raises(ValueError, match='resize_short'):
        dataset.image.resize_short(np.zeros((0, 4), np.uint8), 3)
    with pytest.raises(ValueError, match='resize_short'):
        dataset.image.resize_short(g, 0)


def test_crops_flip_and_chw():
    im = np.arange(5 * 6 * 3).reshape(5, 6, 3)
    assert dataset.image.to_chw(im).shape == (3, 5, 6)
    np.testing.assert_array_equal(dataset.image.center_crop(im, 3), im[1:4, 1:4])
    np.testing.assert_array_equal(dataset.image.center_crop(im[:, :, 0], 2, False),
                                  im[1:3, 2:4, 0])
    np.testing.assert_array_equal(dataset.image.left_right_flip(im), im[:, ::-1])
    np.random.seed(5)
    crop = dataset.image.random_crop(im, 3)
    np.random.seed(5)
    top, left = np.random.randint(0, 3), np.random.randint(0, 4)
    np.testing.assert_array_equal(crop, im[top:top + 3, left:left + 3])
    with pytest.raises(ValueError, match='to_chw'):
        dataset.image.to_chw(im[:, :, 0])


def test_simple_transform_test_and_train():
    im = np.full((8, 12, 3), 100, np.uint8)
    out = dataset.image.simple_transform(im, 4, 3, False, mean=[1, 2, 3])
    assert out.dtype == np.float32 and out.shape == (3, 3, 3)
    assert out[:, 0, 0].tolist() == [99, 98, 97]
    np.random.seed(0)
    out = dataset.image.simple_transform(rgb_grid(), 4, 3, True)
    np.random.seed(0)
    top, left, flip = np.random.randint(0, 2), np.random.randint(0, 4), np.random.randint(2)
    want = dataset.image.resize_short(rgb_grid(), 4)[top:top + 3, left:left + 3]
    if flip == 0:
        want = want[:, ::-1]
    np.testing.assert_array_equal(out, want.transpose(2, 0, 1).astype(np.float32))
    with pytest.raises(ValueError, match='mean'):
        dataset.image.simple_transform(im, 4, 3, False, mean=np.zeros((2, 2)))


def test_load_image_bgr_gray_and_errors(tmp_path, no_cv2):
    Image = pytest.importorskip('PIL.Image')
    rgb = np.zeros((4, 5, 3), np.uint8)
    rgb[..., 0], rgb[..., 1], rgb[..., 2] = 140, 180, 74
    rgb[0, 0] = (9, 9, 9)
    path = tmp_path / 'a.png'
    Image.fromarray(rgb).save(path)
    im = dataset.image.load_image(str(path))
    assert im.shape == (4, 5, 3) and im[1, 1].tolist() == [74, 180, 140]
    # libpng's gray (Pillow's own weights would give 156)
    gray = dataset.image.load_image(str(path), is_color=False)
    assert gray.shape == (4, 5) and gray[1, 1] == 155 and gray[0, 0] == 9
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format='JPEG', quality=95)
    jpg = dataset.image.load_image_bytes(buf.getvalue())
    assert jpg.shape == (4, 5, 3)
    np.testing.assert_array_equal(jpg, np.asarray(Image.open(buf).convert('RGB'))[:, :, ::-1])
    assert dataset.image.load_image_bytes(buf.getvalue(), is_color=False).shape == (4, 5)
    with pytest.raises(ValueError, match='cannot decode'):
        dataset.image.load_image_bytes(b'not an image')
    with pytest.raises(FileNotFoundError, match='no image file'):
        dataset.image.load_image(str(tmp_path / 'none.png'))
    out = dataset.image.load_and_transform(str(path), 4, 4, False)
    assert out.shape == (3, 4, 4) and out[:, 2, 2].tolist() == [74, 180, 140]


def test_batch_images_from_tar(tmp_path):
    data_file = tmp_path / 'imgs.tgz'
    members = [('jpg/image_%05d.jpg' % i, b'img%d' % i) for i in range(1, 7)]
    data_file.write_bytes(tar_bytes(members))
    img2label = {'jpg/image_00002.jpg': 5, 'jpg/image_00003.jpg': 6,
                 'jpg/image_00005.jpg': 7, 'jpg/image_00006.jpg': 8}
    meta = dataset.image.batch_images_from_tar(str(data_file), 'part', img2label, 3)
    assert meta == str(tmp_path / 'imgs.tgz_batch' / 'part.txt')
    files = open(meta).read().split()
    assert files == [str(tmp_path / 'imgs.tgz_batch' / 'part' / ('batch_%d' % i))
                     for i in (0, 1)]
    import pickle
    batches = [pickle.load(open(f, 'rb')) for f in files]
    assert batches[0] == {'label': [5, 6, 7], 'data': [b'img2', b'img3', b'img5']}
    assert batches[1] == {'label': [8], 'data': [b'img6']}
    # made once: a second call returns the same list without reading the tar
    data_file.write_bytes(b'')
    assert dataset.image.batch_images_from_tar(str(data_file), 'part', img2label, 3) == meta
    assert sorted(os.listdir(tmp_path / 'imgs.tgz_batch')) == ['part', 'part.txt']


# flowers (and the MAT-file reader)

MI = {'u1': 2, 'u2': 4, 'i4': 5, 'u4': 6, 'f8': 9}
MX = {'f8': 6, 'u1': 9, 'u2': 11}


def mat_element(mtype, data):
    return struct.pack('<II', mtype, len(data)) + data + b'\0' * (-len(data) % 8)


def mat_variable(name, arr, stored=None):
    """A miMATRIX element for a 2-D array; `stored` is the data type written, which may
    be smaller than the array's class as MATLAB writes it."""
    arr = np.asarray(arr)
    body = mat_element(MI['u4'], struct.pack('<II', MX[arr.dtype.str[1:]], 0))
    body += mat_element(MI['i4'], struct.pack('<%di' % arr.ndim, *arr.shape))
    name = name.encode()
    # names of at most 4 bytes take the small element form
    body += struct.pack('<HH', 1, len(name)) + name.ljust(4, b'\0') if len(name) <= 4 \
        else mat_element(1, name)
    stored = stored or arr.dtype.str[1:]
    body += mat_element(MI[stored], arr.astype(stored).tobytes(order='F'))
    return mat_element(14, body)


def mat_file(variables, compress=False):
    head = b'MATLAB 5.0 MAT-file, written by a test'.ljust(116) + b'\0' * 8 + \
        struct.pack('<H', 0x0100) + b'IM'
    out = head
    for name, arr, stored in variables:
        element = mat_variable(name, arr, stored)
        if compress:
            z = zlib.compress(element)
            element = struct.pack('<II', 15, len(z)) + z
        out += element
    return out


def test_matfile_reads_numeric_variables(tmp_path):
    from rill.dataset import matfile
    for compress in (False, True):
        path = tmp_path / ('m%d.mat' % compress)
        path.write_bytes(mat_file([('labels', np.array([[3., 1, 2]]), 'u1'),
                                   ('trnid', np.array([[2, 3]], np.uint16), None),
                                   ('grid', np.arange(6.).reshape(2, 3), None)], compress))
        got = matfile.loadmat(str(path))
        assert got['labels'].dtype == np.float64 and got['labels'].tolist() == [[3, 1, 2]]
        assert got['trnid'].dtype == np.uint16 and got['trnid'].tolist() == [[2, 3]]
        assert got['grid'].tolist() == [[0, 1, 2], [3, 4, 5]]
    good = (tmp_path / 'm0.mat').read_bytes()
    (tmp_path / 'cut.mat').write_bytes(good[:-12])
    with pytest.raises(ValueError, match="cut.mat'.*claims"):
        matfile.loadmat(str(tmp_path / 'cut.mat'))
    (tmp_path / 'v73.mat').write_bytes(good[:124] + struct.pack('<H', 0x0200) + b'IM')
    with pytest.raises(ValueError, match='7.3'):
        matfile.loadmat(str(tmp_path / 'v73.mat'))
    (tmp_path / 'short.mat').write_bytes(b'MATLAB')
    with pytest.raises(ValueError, match='header'):
        matfile.loadmat(str(tmp_path / 'short.mat'))


def flowers_files(home, images):
    put(home, 'flowers', '102flowers.tgz',
        tar_bytes([('jpg/image_%05d.jpg' % i, data) for i, data in images]))
    put(home, 'flowers', 'imagelabels.mat',
        mat_file([('labels', np.array([[3., 1, 2, 5, 4, 6]]), 'u1')], compress=True))
    put(home, 'flowers', 'setid.mat',
        mat_file([('trnid', np.array([[6, 2]], np.uint16), None),
                  ('valid', np.array([[1]], np.uint16), None),
                  ('tstid', np.array([[5, 3, 4]], np.uint16), None)], compress=True))


def test_flowers_sets_labels_and_order(home):
    # members in tar order 4, 1, 2, 3, 6, 5
    flowers_files(home, [(i, b'jpeg%d' % i) for i in (4, 1, 2, 3, 6, 5)])
    same = lambda s: s  # noqa: E731
    train = list(dataset.flowers.train(mapper=same, use_xmap=False)())
    # the 'tstid' set (5, 3, 4) in tar order, labels less one
    assert train == [(b'jpeg4', 4), (b'jpeg3', 1), (b'jpeg5', 3)]
    assert list(dataset.flowers.test(mapper=same, use_xmap=False)()) == \
        [(b'jpeg2', 0), (b'jpeg6', 5)]
    assert list(dataset.flowers.valid(mapper=same, use_xmap=False)()) == [(b'jpeg1', 2)]
    # the threads of use_xmap give the same samples in any order
    assert sorted(dataset.flowers.train(mapper=same)()) == sorted(train)
    batch_dir = home / 'flowers' / '102flowers.tgz_batch'
    assert sorted(os.listdir(batch_dir)) == ['trnid', 'trnid.txt', 'tstid', 'tstid.txt',
                                             'valid', 'valid.txt']
    cyc = dataset.flowers.train(mapper=same, use_xmap=False, cycle=True)()
    assert [next(cyc) for _ in range(4)] == train + train[:1]


def test_flowers_reads_a_batch_cache_made_elsewhere(home):
    """Batches Paddle packed on another machine (under Python 2: bytes keys), listed
    with that machine's absolute paths."""
    import pickle
    flowers_files(home, [(i, b'jpeg%d' % i) for i in range(1, 7)])
    batch_dir = home / 'flowers' / '102flowers.tgz_batch'
    (batch_dir / 'valid').mkdir(parents=True)
    with open(batch_dir / 'valid' / 'batch_0', 'wb') as f:
        pickle.dump({b'label': [7, 8], b'data': [b'p', b'q']}, f, protocol=2)
    (batch_dir / 'valid.txt').write_text('/elsewhere/102flowers.tgz_batch/valid/batch_0\n')
    assert list(dataset.flowers.valid(mapper=lambda s: s, use_xmap=False)()) == \
        [(b'p', 6), (b'q', 7)]


def test_flowers_default_mapper(home):
    Image = pytest.importorskip('PIL.Image')
    images = []
    for i in range(1, 7):
        buf = io.BytesIO()
        Image.fromarray(np.full((6, 8, 3), 40 * i, np.uint8)).save(buf, format='PNG')
        images.append((i, buf.getvalue()))
    flowers_files(home, images)
    samples = list(dataset.flowers.test(use_xmap=False)())
    assert [s[1] for s in samples] == [0, 5]
    pixels = samples[0][0]
    assert pixels.dtype == np.float32 and pixels.shape == (3 * 224 * 224,)
    chw = pixels.reshape(3, 224, 224)
    np.testing.assert_allclose(chw[:, 100, 100], [80 - 103.94, 80 - 116.78, 80 - 123.68],
                               rtol=0, atol=1e-4)
    np.random.seed(1)
    assert list(dataset.flowers.train(buffered_size=4)())[0][0].shape == (3 * 224 * 224,)


def test_flowers_missing_files_and_bad_set(home):
    missing(home, dataset.flowers.train, 'flowers', '102flowers.tgz',
            'http://paddlemodels.bj.bcebos.com/flowers/102flowers.tgz')
    flowers_files(home, [(1, b'x')])
    (home / 'flowers' / 'setid.mat').unlink()
    missing(home, dataset.flowers.valid, 'flowers', 'setid.mat',
            'http://paddlemodels.bj.bcebos.com/flowers/setid.mat')
    put(home, 'flowers', 'setid.mat', mat_file([('valid', np.array([[9]], np.uint16), None)]))
    with pytest.raises(ValueError, match='image 9'):
        dataset.flowers.valid()
    with pytest.raises(ValueError, match="no numeric variable 'tstid'"):
        dataset.flowers.train()


# voc2012

VOC = 'VOCdevkit/VOC2012/'


def voc_tar(Image, ids, sets):
    members = []
    for name, listed in sets.items():
        members.append((VOC + 'ImageSets/Segmentation/%s.txt' % name,
                        ''.join(i + '\n' for i in listed).encode()))
    for n, i in enumerate(ids):
        rgb = np.zeros((3, 4, 3), np.uint8)
        rgb[..., 0], rgb[..., 1], rgb[..., 2] = 10 * n, 100, 200
        buf = io.BytesIO()
        Image.fromarray(rgb).save(buf, format='JPEG', quality=100)
        members.append((VOC + 'JPEGImages/%s.jpg' % i, buf.getvalue()))
        label = Image.fromarray(np.full((3, 4), n + 1, np.uint8), mode='L').convert('P')
        label.putpalette([0, 0, 0, 128, 0, 0, 0, 128, 0] + [0] * (256 * 3 - 9))
        buf = io.BytesIO()
        label.save(buf, format='PNG')
        members.append((VOC + 'SegmentationClass/%s.png' % i, buf.getvalue()))
    return tar_bytes(members, mode='w')


def test_voc2012_sets_images_and_labels(home):
    Image = pytest.importorskip('PIL.Image')
    ids = ['2007_000032', '2007_000039', '2008_000001']
    put(home, 'voc2012', 'VOCtrainval_11-May-2012.tar', voc_tar(
        Image, ids, {'trainval': ids, 'train': ids[2:] + ids[:1], 'val': [ids[1]]}))
    samples = list(dataset.voc2012.train()())
    assert len(samples) == 3
    for n, (img, label) in enumerate(samples):
        assert img.shape == (3, 4, 3) and img.dtype == np.uint8
        assert np.abs(img[1, 1].astype(int) - [10 * n, 100, 200]).max() <= 3
        assert label.shape == (3, 4) and label.dtype == np.uint8
        assert (label == n + 1).all()
    # the 'train' list, in its own order, is the test set
    assert [int(lab[0, 0]) for _, lab in dataset.voc2012.test()()] == [3, 1]
    assert [int(lab[0, 0]) for _, lab in dataset.voc2012.val()()] == [2]


def test_voc2012_missing_file_and_member(home):
    Image = pytest.importorskip('PIL.Image')
    missing(home, dataset.voc2012.val, 'voc2012', 'VOCtrainval_11-May-2012.tar',
            'http://host.robots.ox.ac.uk/pascal/VOC/voc2012/VOCtrainval_11-May-2012.tar')
    put(home, 'voc2012', 'VOCtrainval_11-May-2012.tar',
        voc_tar(Image, ['a'], {'val': ['a', 'b']}))
    with pytest.raises(ValueError, match="no member '.*trainval.txt'"):
        dataset.voc2012.train()
    reader = dataset.voc2012.val()()
    assert next(reader)[1][0, 0] == 1
    with pytest.raises(ValueError, match="no member 'VOCdevkit/VOC2012/JPEGImages/b.jpg'"):
        next(reader)


def test_without_pillow_or_opencv_the_error_names_them(home, no_cv2, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, 'PIL', None)
    with pytest.raises(ImportError, match='opencv-python.*Pillow'):
        dataset.image.load_image_bytes(b'\x89PNG')
    put(home, 'voc2012', 'VOCtrainval_11-May-2012.tar', tar_bytes([], mode='w'))
    with pytest.raises(ImportError, match='Pillow'):
        dataset.voc2012.train()
    # resizing needs neither
    assert dataset.image.resize_short(np.zeros((4, 6), np.uint8), 2).shape == (2, 3)
