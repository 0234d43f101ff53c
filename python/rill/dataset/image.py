"""Image helpers of the datasets (`paddle.dataset.image`), on HWC uint8 arrays in BGR
order for color images (as OpenCV gives them), HW for gray ones.

Decoding uses OpenCV (cv2) when it can be imported, as Paddle does, else Pillow: color
images come out BGR, color images read as gray with the luma OpenCV gives (libjpeg's
for JPEG, libpng's for PNG, OpenCV's own otherwise), EXIF orientation applied as OpenCV
applies it. With neither installed
the loaders raise ImportError naming both packages. A file or bytes that cannot be
decoded raise ValueError (OpenCV would return None).

resize_short resizes with OpenCV's INTER_CUBIC when cv2 is there; otherwise with the
same bicubic (a = -0.75, pixel centres at +0.5, edges replicated) in OpenCV's
arithmetic: for uint8 images 11-bit integer weights, the horizontal pass in integers,
the vertical one as OpenCV's SSE code does it (float32 over blocks of 8 values, fixed
point for the rest), which reproduces OpenCV 4.2's pixels; float32 / float64 images in
their own precision."""
import io
import os
import pickle
import tarfile

import numpy as np

__all__ = ['load_image_bytes', 'load_image', 'resize_short', 'to_chw', 'center_crop',
           'random_crop', 'left_right_flip', 'simple_transform', 'load_and_transform',
           'batch_images_from_tar']

_cv2 = None
_cv2_tried = False


def _opencv():
    global _cv2, _cv2_tried
    if not _cv2_tried:
        _cv2_tried = True
        try:
            import cv2
            _cv2 = cv2
        except ImportError:
            _cv2 = None
    return _cv2


def _pil():
    try:
        from PIL import Image, ImageOps
    except ImportError:
        raise ImportError('paddle.dataset.image: decoding images needs opencv-python '
                          '(cv2) or Pillow (PIL); neither can be imported') from None
    return Image, ImageOps


def _luma(rgb, fmt):
    """Gray from 8-bit RGB as OpenCV's decoders make it: libpng's truncating weights for
    PNG, OpenCV's rounded 14-bit ones otherwise."""
    r, g, b = (rgb[:, :, i].astype(np.int32) for i in range(3))
    if fmt == 'PNG':
        y = (9797 * r + 19234 * g + 3737 * b) >> 15
        y = np.where((r == g) & (g == b), r, y)
    else:
        y = (4899 * r + 9617 * g + 1868 * b + (1 << 13)) >> 14
    return y.astype(np.uint8)


def _decode_pil(source, is_color, what):
    Image, ImageOps = _pil()
    try:
        im = Image.open(source)
        fmt = im.format
        if not is_color and fmt == 'JPEG':
            im.draft('L', im.size)
        im = ImageOps.exif_transpose(im)
        if is_color:
            arr = np.asarray(im.convert('RGB'))[:, :, ::-1]
        elif im.mode in ('L', '1', 'I;16', 'I', 'F'):
            arr = np.asarray(im.convert('L'))
        else:
            arr = _luma(np.asarray(im.convert('RGB')), fmt)
    except (OSError, ValueError, SyntaxError) as e:
        raise ValueError('paddle.dataset.image: cannot decode %s (%s)' % (what, e)) from None
    return np.ascontiguousarray(arr)


def load_image_bytes(bytes, is_color=True):
    """The image encoded in `bytes`: HWC BGR uint8 when is_color, else HW gray."""
    cv2 = _opencv()
    if cv2 is not None:
        im = cv2.imdecode(np.frombuffer(bytes, dtype=np.uint8), 1 if is_color else 0)
        if im is None:
            raise ValueError('paddle.dataset.image: cannot decode the %d bytes given as an '
                             'image' % len(bytes))
        return im
    return _decode_pil(io.BytesIO(bytes), is_color, 'the %d bytes given' % len(bytes))


def load_image(file, is_color=True):
    """The image in the file `file`: HWC BGR uint8 when is_color, else HW gray."""
    if not os.path.isfile(file):
        raise FileNotFoundError("paddle.dataset.image: no image file '%s'" % (file,))
    cv2 = _opencv()
    if cv2 is not None:
        im = cv2.imread(file, 1 if is_color else 0)
        if im is None:
            raise ValueError("paddle.dataset.image: cannot decode '%s'" % (file,))
        return im
    with open(file, 'rb') as f:
        return _decode_pil(io.BytesIO(f.read()), is_color, "'%s'" % (file,))


def _cubic_weights(x):
    """OpenCV's four cubic weights (a = -0.75) at fractional offsets x (float32)."""
    a = np.float32(-0.75)
    one = np.float32(1)
    x1 = x + one
    w0 = ((a * x1 - np.float32(5) * a) * x1 + np.float32(8) * a) * x1 - np.float32(4) * a
    w1 = ((a + np.float32(2)) * x - (a + np.float32(3))) * x * x + one
    y = one - x
    w2 = ((a + np.float32(2)) * y - (a + np.float32(3))) * y * y + one
    w3 = one - w0 - w1 - w2
    return np.stack([w0, w1, w2, w3], axis=1)


def _taps(src_len, dst_len):
    """Source indices [dst_len, 4] (edges replicated) and float32 weights [dst_len, 4]
    of each output position, computed as OpenCV computes them."""
    scale = 1.0 / (float(dst_len) / src_len)
    pos = ((np.arange(dst_len, dtype=np.float64) + 0.5) * scale - 0.5).astype(np.float32)
    start = np.floor(pos)
    frac = (pos - start).astype(np.float32)
    idx = start.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :]
    return np.clip(idx, 0, src_len - 1), _cubic_weights(frac)


_BLOCK = 8


def _resize_cubic(im, w_new, h_new):
    h, w = im.shape[:2]
    xi, xw = _taps(w, w_new)
    yi, yw = _taps(h, h_new)
    # columns first, so that each tap gathers whole contiguous columns
    src = np.ascontiguousarray(im.reshape(h, w, -1).transpose(1, 0, 2))
    if im.dtype == np.uint8:
        ax = np.rint(xw * np.float32(2048)).astype(np.int32)
        ay = np.rint(yw * np.float32(2048)).astype(np.int64)
        # horizontal pass: integer sums, one row of w_new * channels values per source row
        src = src.astype(np.int32)
        cols = sum(src[xi[:, k]] * ax[:, k, None, None] for k in range(4))
        rows = np.ascontiguousarray(cols.transpose(1, 0, 2)).reshape(h, -1)
        # vertical pass: in float32 over the whole blocks of 8 values of a row, in fixed
        # point for the rest
        width = rows.shape[1]
        block = width // _BLOCK * _BLOCK
        out = np.empty((h_new, width), np.int64)
        if block:
            beta = ay.astype(np.float32) * np.float32(1.0 / (2048 * 2048))
            part = rows[:, :block].astype(np.float32)
            acc = part[yi[:, 3]] * beta[:, 3:4]
            for k in (2, 1, 0):
                acc = part[yi[:, k]] * beta[:, k:k + 1] + acc
            out[:, :block] = np.rint(acc)
        if block < width:
            tail = rows[:, block:].astype(np.int64)
            acc = sum(tail[yi[:, k]] * ay[:, k:k + 1] for k in range(4))
            out[:, block:] = (acc + (1 << 21)) >> 22
        return np.clip(out, 0, 255).astype(np.uint8).reshape((h_new, w_new) + im.shape[2:])
    ftype = np.float64 if im.dtype == np.float64 else np.float32
    src = src.astype(ftype)
    xw, yw = xw.astype(ftype), yw.astype(ftype)
    rows = sum(src[xi[:, k]] * xw[:, k, None, None] for k in range(4)).transpose(1, 0, 2)
    out = sum(rows[yi[:, k]] * yw[:, k, None, None] for k in range(4))
    out = out.reshape((h_new, w_new) + im.shape[2:])
    if np.issubdtype(im.dtype, np.integer):
        info = np.iinfo(im.dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(im.dtype)
    return out.astype(im.dtype)


def resize_short(im, size):
    """`im` (HWC or HW) resized by bicubic interpolation so that its shorter side is
    `size`; the other side becomes size * long // short."""
    h, w = im.shape[:2]
    if h < 1 or w < 1 or int(size) < 1:
        raise ValueError('resize_short: the image is %dx%d and size %r; both must be '
                         'positive' % (h, w, size))
    h_new, w_new = size, size
    if h > w:
        h_new = size * h // w
    else:
        w_new = size * w // h
    cv2 = _opencv()
    if cv2 is not None:
        return cv2.resize(im, (w_new, h_new), interpolation=cv2.INTER_CUBIC)
    if im.ndim == 3 and im.shape[2] == 1:
        im = im[:, :, 0]  # OpenCV's result of one channel has two dimensions
    if (h_new, w_new) == (h, w):
        return im.copy()
    return _resize_cubic(im, w_new, h_new)


def to_chw(im, order=(2, 0, 1)):
    """`im` transposed by `order` (HWC to CHW by default)."""
    if len(im.shape) != len(order):
        raise ValueError('to_chw: the image has %d dimensions, the order %d'
                         % (len(im.shape), len(order)))
    return im.transpose(order)


def _crop(im, top, left, size, is_color):
    if is_color:
        return im[top:top + size, left:left + size, :]
    return im[top:top + size, left:left + size]


def center_crop(im, size, is_color=True):
    """The size x size window at the centre of `im` (HWC, or HW when not is_color)."""
    h, w = im.shape[:2]
    return _crop(im, (h - size) // 2, (w - size) // 2, size, is_color)


def random_crop(im, size, is_color=True):
    """A size x size window of `im` at a position drawn from numpy's global generator
    (the row, then the column)."""
    h, w = im.shape[:2]
    top = np.random.randint(0, h - size + 1)
    left = np.random.randint(0, w - size + 1)
    return _crop(im, top, left, size, is_color)


def left_right_flip(im, is_color=True):
    """`im` mirrored left to right."""
    if len(im.shape) == 3 and is_color:
        return im[:, ::-1, :]
    return im[:, ::-1]


def simple_transform(im, resize_size, crop_size, is_train, is_color=True, mean=None):
    """resize_short to resize_size; for training a random crop_size window flipped with
    probability 1/2 (numpy's global generator), else the centre window; CHW; float32
    less `mean` (one value per channel, or element-wise)."""
    im = resize_short(im, resize_size)
    if is_train:
        im = random_crop(im, crop_size, is_color=is_color)
        if np.random.randint(2) == 0:
            im = left_right_flip(im, is_color)
    else:
        im = center_crop(im, crop_size, is_color=is_color)
    if len(im.shape) == 3:
        im = to_chw(im)
    im = im.astype('float32')
    if mean is not None:
        mean = np.array(mean, dtype=np.float32)
        if mean.ndim == 1 and is_color:
            mean = mean[:, np.newaxis, np.newaxis]
        try:
            im -= mean
        except ValueError:
            raise ValueError('simple_transform: mean of shape %s does not fit the image of '
                             'shape %s' % (mean.shape, im.shape)) from None
    return im


def load_and_transform(filename, resize_size, crop_size, is_train, is_color=True,
                       mean=None):
    """load_image(filename, is_color) then simple_transform."""
    im = load_image(filename, is_color)
    return simple_transform(im, resize_size, crop_size, is_train, is_color, mean)


def _write_batch(path, data, labels):
    with open(path, 'wb') as f:
        pickle.dump({'label': labels, 'data': data}, f, protocol=2)


def batch_images_from_tar(data_file, dataset_name, img2label, num_per_batch=1024):
    """Packs the members of the tar `data_file` named in `img2label` (in tar order) into
    pickled batches {'label': [...], 'data': [file bytes, ...]} of num_per_batch images,
    `<data_file>_batch/<dataset_name>/batch_<n>`, and returns the list file
    `<data_file>_batch/<dataset_name>.txt` naming them one a line. Batches already there
    are used as they are."""
    batch_dir = data_file + '_batch'
    out_path = os.path.join(batch_dir, dataset_name)
    meta_file = os.path.join(batch_dir, dataset_name + '.txt')
    if os.path.isdir(out_path) and os.path.isfile(meta_file):
        return meta_file
    os.makedirs(batch_dir, exist_ok=True)
    tmp_dir = '%s.tmp%d' % (out_path, os.getpid())
    os.makedirs(tmp_dir, exist_ok=True)
    names = []
    data, labels = [], []
    with tarfile.open(data_file) as tar:
        for member in tar:
            if member.name not in img2label or not member.isfile():
                continue
            data.append(tar.extractfile(member).read())
            labels.append(img2label[member.name])
            if len(data) == num_per_batch:
                names.append('batch_%d' % len(names))
                _write_batch(os.path.join(tmp_dir, names[-1]), data, labels)
                data, labels = [], []
    if data:
        names.append('batch_%d' % len(names))
        _write_batch(os.path.join(tmp_dir, names[-1]), data, labels)
    if os.path.isdir(out_path):
        # left by a run that stopped before writing the list file
        for name in os.listdir(out_path):
            os.remove(os.path.join(out_path, name))
        os.rmdir(out_path)
    os.replace(tmp_dir, out_path)
    tmp_meta = '%s.tmp%d' % (meta_file, os.getpid())
    with open(tmp_meta, 'w') as f:
        for name in names:
            f.write(os.path.abspath(os.path.join(out_path, name)) + '\n')
    os.replace(tmp_meta, meta_file)
    return meta_file
