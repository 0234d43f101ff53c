"""IMDB reviews (`paddle.dataset.imdb`): the `aclImdb_v1` tarball in `imdb/`, saved as
Paddle saves it (`imdb%2FaclImdb_v1.tar.gz`). Each review is a member
`aclImdb/{train,test}/{pos,neg}/*.txt`; its words are the bytes with trailing newlines
and ASCII punctuation removed, lowercased (ASCII) and split on whitespace. Word ids
number the words seen more than `cutoff` times by falling count, then by the word;
`<unk>` comes last. Samples: (list of word ids, label 0 for pos, 1 for neg). Paddle's
dictionaries under Python 3 have bytes keys; rill's are the same words as str (UTF-8),
with the same ids."""
import collections
import re
import string
import tarfile

from . import common

__all__ = ['build_dict', 'train', 'test']

URL = 'https://dataset.bj.bcebos.com/imdb%2FaclImdb_v1.tar.gz'
MD5 = '7c2ac02c03563afcf9b574c7e56c153a'

_PUNCT = string.punctuation.encode()


def _word(b):
    return b.decode('utf-8', 'replace')


def tokenize(pattern):
    """The word lists of the members whose names match `pattern`, in tar order."""
    path = common.cached_file(URL, 'imdb', MD5, dataset='imdb')
    with tarfile.open(path) as tar:
        for member in tar:
            if member.isfile() and pattern.match(member.name):
                text = tar.extractfile(member).read().rstrip(b'\n\r')
                yield [_word(w) for w in text.translate(None, _PUNCT).lower().split()]


def build_dict(pattern, cutoff):
    """{word: id} of the words in the matching members seen more than `cutoff` times."""
    freq = collections.defaultdict(int)
    for doc in tokenize(pattern):
        for w in doc:
            freq[w] += 1
    kept = sorted((x for x in freq.items() if x[1] > cutoff),
                  key=lambda x: (-x[1], x[0].encode('utf-8', 'surrogateescape')))
    word_idx = {w: i for i, (w, _) in enumerate(kept)}
    word_idx['<unk>'] = len(kept)
    return word_idx


def _creator(pos_pattern, neg_pattern, word_idx):
    unk = word_idx['<unk>']
    samples = []
    for pattern, label in ((pos_pattern, 0), (neg_pattern, 1)):
        for doc in tokenize(pattern):
            samples.append(([word_idx.get(w, unk) for w in doc], label))

    def reader():
        for doc, label in samples:
            yield doc, label
    return reader


def train(word_idx):
    """Reader creator of the training reviews: (word ids, label)."""
    return _creator(re.compile(r'aclImdb/train/pos/.*\.txt$'),
                    re.compile(r'aclImdb/train/neg/.*\.txt$'), word_idx)


def test(word_idx):
    """Reader creator of the test reviews: (word ids, label)."""
    return _creator(re.compile(r'aclImdb/test/pos/.*\.txt$'),
                    re.compile(r'aclImdb/test/neg/.*\.txt$'), word_idx)


def word_dict():
    """The dictionary Paddle's book uses: words seen more than 150 times in all reviews."""
    return build_dict(re.compile(r'aclImdb/((train)|(test))/((pos)|(neg))/.*\.txt$'), 150)
