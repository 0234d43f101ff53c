"""Where the dataset files are, and the error when one is not there.

The directory is `DATA_HOME` when a script sets it (`paddle.dataset.common.DATA_HOME =
'/data'` as with Paddle), else `$PADDLE_DATA_HOME` when set, else
`~/.cache/paddle/dataset` of the current home directory. Each dataset keeps its files in
a subdirectory named as Paddle names it (`mnist`, `uci_housing`, `conll05st`, ...),
under the last path component of the URL Paddle downloads (`imdb%2FaclImdb_v1.tar.gz`
included) or the name Paddle saves it as."""
import hashlib
import os

__all__ = ['DATA_HOME', 'data_home', 'DatasetFileMissing', 'md5file', 'cached_file']

DATA_HOME = None


def data_home():
    """The dataset directory now in force (see the module's text)."""
    if DATA_HOME:
        return DATA_HOME
    env = os.environ.get('PADDLE_DATA_HOME')
    if env:
        return env
    return os.path.join(os.path.expanduser('~'), '.cache', 'paddle', 'dataset')


class DatasetFileMissing(FileNotFoundError):
    """A dataset file Paddle would have downloaded is not in the dataset directory."""


def md5file(fname):
    h = hashlib.md5()
    with open(fname, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()


def cached_file(url, module_name, md5sum, save_name=None, dataset=None):
    """The path of the file Paddle's `download(url, module_name, md5sum, save_name)`
    would return. The file is used as found (its md5 is not checked: a smaller file in
    the same format works too); when it is missing, DatasetFileMissing says where to
    place it."""
    name = save_name if save_name is not None else url.split('/')[-1]
    path = os.path.join(data_home(), module_name, name)
    if os.path.isfile(path):
        return path
    raise DatasetFileMissing(
        "paddle.dataset.%s: file '%s' not found. rill does not download datasets: fetch "
        "%s (md5 %s) and place it at %s" % (dataset or module_name, name, url, md5sum, path))
