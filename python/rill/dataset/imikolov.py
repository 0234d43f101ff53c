"""Penn Treebank as Mikolov ships it (`paddle.dataset.imikolov`): the
`simple-examples` tarball in `imikolov/`, saved as `imikolov%2Fsimple-examples.tgz`;
`./simple-examples/data/ptb.train.txt` and `ptb.valid.txt`, one sentence a line.
Word ids number the words of both files seen more than `min_word_freq` times (each
line adds one `<s>` and one `<e>`; `<unk>` is not counted) by falling count, then by
the word; `<unk>` comes last. NGRAM samples are tuples of n ids over `<s>` line `<e>`;
SEQ samples are (`<s>` + line, line + `<e>`), lines longer than n (n > 0) skipped.
Words are str (Paddle's are bytes under Python 3), with the same ids."""
import collections
import tarfile

from . import common

__all__ = ['train', 'test', 'build_dict']

URL = 'https://dataset.bj.bcebos.com/imikolov%2Fsimple-examples.tgz'
MD5 = '30177ea32e27c525793142b6bf2c8e2d'
TRAIN_FILE = './simple-examples/data/ptb.train.txt'
TEST_FILE = './simple-examples/data/ptb.valid.txt'


class DataType(object):
    NGRAM = 1
    SEQ = 2


def _path():
    return common.cached_file(URL, 'imikolov', MD5, dataset='imikolov')


def _lines(tar, name):
    try:
        member = tar.getmember(name)
    except KeyError:
        member = tar.getmember(name[2:])    # a tarball written without the leading ./
    for line in tar.extractfile(member):
        yield line.decode('utf-8', 'replace').split()


def build_dict(min_word_freq=50):
    """{word: id} over the training and validation text."""
    freq = collections.defaultdict(int)
    with tarfile.open(_path()) as tar:
        for name in (TRAIN_FILE, TEST_FILE):
            for words in _lines(tar, name):
                for w in words:
                    freq[w] += 1
                freq['<s>'] += 1
                freq['<e>'] += 1
    freq.pop('<unk>', None)
    kept = sorted((x for x in freq.items() if x[1] > min_word_freq),
                  key=lambda x: (-x[1], x[0]))
    word_idx = {w: i for i, (w, _) in enumerate(kept)}
    word_idx['<unk>'] = len(kept)
    return word_idx


def _creator(filename, word_idx, n, data_type):
    path = _path()

    def reader():
        unk = word_idx['<unk>']
        with tarfile.open(path) as tar:
            for words in _lines(tar, filename):
                if data_type == DataType.NGRAM:
                    if n <= 0:
                        raise ValueError('imikolov: NGRAM needs n > 0, got %r' % (n,))
                    ids = [word_idx.get(w, unk) for w in ['<s>'] + words + ['<e>']]
                    for i in range(n, len(ids) + 1):
                        yield tuple(ids[i - n:i])
                elif data_type == DataType.SEQ:
                    ids = [word_idx.get(w, unk) for w in words]
                    src = [word_idx['<s>']] + ids
                    trg = ids + [word_idx['<e>']]
                    if n > 0 and len(src) > n:
                        continue
                    yield src, trg
                else:
                    raise ValueError('imikolov: unknown data type %r' % (data_type,))
    return reader


def train(word_idx, n, data_type=DataType.NGRAM):
    """Reader creator over ptb.train.txt."""
    return _creator(TRAIN_FILE, word_idx, n, data_type)


def test(word_idx, n, data_type=DataType.NGRAM):
    """Reader creator over ptb.valid.txt."""
    return _creator(TEST_FILE, word_idx, n, data_type)
