"""MovieLens 1M (`paddle.dataset.movielens`): `ml-1m.zip` in `movielens/`, saved as
`movielens%2Fml-1m.zip`, with `ml-1m/movies.dat`, `users.dat` and `ratings.dat`
(`::`-separated, latin-1). A rating goes to the test set when a draw of
`numpy.random.RandomState(rand_seed)` (one per rating, in file order) is below
`test_ratio`, as in Paddle. Samples: [user id, gender (0 male, 1 female), age bucket
(index in age_table), job id, movie id, [category ids], [title word ids], [rating * 2 -
5]]. Paddle numbers categories and title words in set order, which changes from run to
run under Python 3; rill numbers them in sorted order."""
import re
import zipfile

import numpy as np

from . import common

__all__ = ['train', 'test', 'get_movie_title_dict', 'max_movie_id', 'max_user_id',
           'age_table', 'movie_categories', 'max_job_id', 'user_info', 'movie_info']

age_table = [1, 18, 25, 35, 45, 50, 56]

URL = 'https://dataset.bj.bcebos.com/movielens%2Fml-1m.zip'
MD5 = 'c4d9eecfca2ab87c1945afe126590906'

_meta = {}


class MovieInfo(object):
    """A movie: id, categories, title."""

    def __init__(self, index, categories, title):
        self.index = int(index)
        self.categories = categories
        self.title = title

    def value(self):
        return [self.index, [_meta['categories'][c] for c in self.categories],
                [_meta['titles'][w.lower()] for w in self.title.split()]]

    def __repr__(self):
        return '<MovieInfo id(%d), title(%s), categories(%s)>' % (
            self.index, self.title, self.categories)


class UserInfo(object):
    """A user: id, gender, age bucket, job."""

    def __init__(self, index, gender, age, job_id):
        self.index = int(index)
        self.is_male = gender == 'M'
        self.age = age_table.index(int(age))
        self.job_id = int(job_id)

    def value(self):
        return [self.index, 0 if self.is_male else 1, self.age, self.job_id]

    def __repr__(self):
        return '<UserInfo id(%d), gender(%s), age(%d), job(%d)>' % (
            self.index, 'M' if self.is_male else 'F', age_table[self.age], self.job_id)


def _lines(package, name):
    with package.open(name) as f:
        for line in f:
            yield line.decode('latin-1').strip()


def _init():
    path = common.cached_file(URL, 'movielens', MD5, dataset='movielens')
    if _meta.get('path') == path:
        return path
    title_re = re.compile(r'^(.*)\((\d+)\)$')
    movies, users, words, cats = {}, {}, set(), set()
    with zipfile.ZipFile(path) as package:
        for line in _lines(package, 'ml-1m/movies.dat'):
            movie_id, title, categories = line.split('::')
            categories = categories.split('|')
            cats.update(categories)
            m = title_re.match(title)
            if m is None:
                raise ValueError("%s: ml-1m/movies.dat: title '%s' has no (year)"
                                 % (path, title))
            title = m.group(1)
            movies[int(movie_id)] = MovieInfo(movie_id, categories, title)
            words.update(w.lower() for w in title.split())
        for line in _lines(package, 'ml-1m/users.dat'):
            uid, gender, age, job, _ = line.split('::')
            users[int(uid)] = UserInfo(uid, gender, age, job)
    _meta.update(path=path, movies=movies, users=users,
                 titles={w: i for i, w in enumerate(sorted(words))},
                 categories={c: i for i, c in enumerate(sorted(cats))})
    return path


def _reader(rand_seed=0, test_ratio=0.1, is_test=False):
    path = _init()
    rng = np.random.RandomState(rand_seed)
    with zipfile.ZipFile(path) as package:
        for line in _lines(package, 'ml-1m/ratings.dat'):
            if (rng.random_sample() < test_ratio) != is_test:
                continue
            uid, mov_id, rating, _ = line.split('::')
            usr = _meta['users'][int(uid)]
            mov = _meta['movies'][int(mov_id)]
            yield usr.value() + mov.value() + [[float(rating) * 2 - 5.0]]


def train(rand_seed=0, test_ratio=0.1):
    """Reader creator of the ratings not drawn for the test set."""
    return lambda: _reader(rand_seed=rand_seed, test_ratio=test_ratio, is_test=False)


def test(rand_seed=0, test_ratio=0.1):
    """Reader creator of the ratings drawn for the test set."""
    return lambda: _reader(rand_seed=rand_seed, test_ratio=test_ratio, is_test=True)


def get_movie_title_dict():
    _init()
    return _meta['titles']


def movie_categories():
    _init()
    return _meta['categories']


def user_info():
    _init()
    return _meta['users']


def movie_info():
    _init()
    return _meta['movies']


def max_movie_id():
    _init()
    return max(m.index for m in _meta['movies'].values())


def max_user_id():
    _init()
    return max(u.index for u in _meta['users'].values())


def max_job_id():
    _init()
    return max(u.job_id for u in _meta['users'].values())
