"""NLTK's movie_reviews corpus (`paddle.dataset.sentiment`): `corpora/movie_reviews.zip`,
read directly (nltk is not needed). Its reviews are the members
`movie_reviews/{neg,pos}/*.txt` (ASCII), taken per category in sorted name order, their
words as NLTK's WordPunctTokenizer splits them (runs of word characters, runs of other
non-space characters). get_word_dict ranks the words of all reviews (neg first) by
falling count, ties in first-seen order. The reviews alternate neg, pos, neg, ...; the
first 1600 are the training set, the rest the test set. Samples: (word ids of the
review's lowercased words, 0 for neg, 1 for pos). As in Paddle, train() and test()
return the samples' iterator itself."""
import collections
import re
import zipfile

from . import common

__all__ = ['train', 'test', 'get_word_dict']

URL = 'https://corpora.bj.bcebos.com/movie_reviews%2Fmovie_reviews.zip'
MD5 = '155de2b77c6834dd8eea7cbe88e93acb'
NUM_TRAINING_INSTANCES = 1600
NUM_TOTAL_INSTANCES = 2000

_TOKEN = re.compile(r'\w+|[^\w\s]+')
_MEMBER = re.compile(r'^movie_reviews/(neg|pos)/.*\.txt$')


def _zip():
    return common.cached_file(URL, 'corpora', MD5, save_name='movie_reviews.zip',
                              dataset='sentiment')


def _reviews():
    """{'neg': [(name, words)], 'pos': [...]}, each list in sorted name order."""
    path = _zip()
    out = {'neg': [], 'pos': []}
    with zipfile.ZipFile(path) as z:
        names = sorted(n for n in z.namelist() if _MEMBER.match(n))
        for name in names:
            try:
                text = z.read(name).decode('ascii')
            except UnicodeDecodeError as e:
                raise ValueError("sentiment: member '%s' of %s is not ASCII (%s)"
                                 % (name, path, e)) from None
            out[_MEMBER.match(name).group(1)].append((name, _TOKEN.findall(text)))
    return out


def _rank(reviews):
    freq = collections.defaultdict(int)
    for category in ('neg', 'pos'):
        for _, words in reviews[category]:
            for w in words:
                freq[w] += 1
    ranked = sorted(freq.items(), key=lambda x: -x[1])
    return [(w, i) for i, (w, _) in enumerate(ranked)]


def get_word_dict():
    """[(word, id)] of every word of the corpus, by falling count."""
    return _rank(_reviews())


def _load():
    reviews = _reviews()
    ids = dict(_rank(reviews))
    data = []
    for neg, pos in zip(reviews['neg'], reviews['pos']):
        for (name, words), label in ((neg, 0), (pos, 1)):
            row = []
            for w in words:
                low = w.lower()
                if low not in ids:
                    raise ValueError("sentiment: review '%s' has the word '%s' whose "
                                     "lowercase form '%s' is not in the corpus' words"
                                     % (name, w, low))
                row.append(ids[low])
            data.append((row, label))
    return data


def _samples(data):
    for words, label in data:
        yield words, label


def train():
    """The training reviews (the first 1600): an iterator of (word ids, label)."""
    return _samples(_load()[:NUM_TRAINING_INSTANCES])


def test():
    """The test reviews (those after the first 1600): an iterator of (word ids, label)."""
    return _samples(_load()[NUM_TRAINING_INSTANCES:])


def fetch():
    """Paddle downloads here; rill only checks that the file is in place."""
    return _zip()

