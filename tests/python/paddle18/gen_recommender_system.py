"""Writes recommender_system/: the book's recommender chapter (05) at toy size, trained in
Paddle 1.8.5. User features (id, gender, age, job) and movie features (id, LoD
categories summed by sequence_pool, a LoD title through nets.sequence_conv_pool) come from
`fluid.embedding` tables (`is_sparse`), each through an fc, concatenated and through a
tanh fc; cos_sim of the two, scaled by 5, against the score by square_error_cost, whose
mean is the loss. Parameters get seeded values in name order; for each optimizer of
OPTIMIZERS (SGD, Adam) the file holds Paddle's loss and scaled prediction at every step
and the trained parameters. The batches are movielens-style samples fed through a
DataFeeder, rebuilt from a seed in either framework. `build(fluid, opt)` is shared with
tests/python/test_book_paddle18.py, which trains the same program with rill. Run with
PaddlePaddle 1.8.5 (README.md)."""
import os
import sys

import numpy as np

import _steps

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'recommender_system')
USERS, JOBS, AGES, MOVIES, CATEGORIES, TITLE_WORDS = 20, 5, 7, 25, 6, 30
STEPS = 20
OPTIMIZERS = ('sgd', 'adam')
FIELDS = ('user_id', 'gender_id', 'age_id', 'job_id', 'movie_id', 'category_id',
          'movie_title', 'score')
RESULTS = ('loss', 'prediction')


def id_feature(fluid, ids, size, width, param_attr=None):
    emb = fluid.embedding(input=ids, size=[size, width], dtype='float32',
                          param_attr=param_attr, is_sparse=True)
    return fluid.layers.fc(input=emb, size=width)


def build(fluid, opt):
    """Returns (main, startup, {result name: variable, 'feed_list': the FIELDS'
    variables}); names are numbered from 0 in every build."""
    main, startup = fluid.Program(), fluid.Program()
    L = fluid.layers
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        v = {n: fluid.data(name=n, shape=[None], dtype='int64') for n in FIELDS[:5]}
        for n in ('category_id', 'movie_title'):
            v[n] = fluid.data(name=n, shape=[None], dtype='int64', lod_level=1)
        v['score'] = fluid.data(name='score', shape=[None, 1], dtype='float32')
        usr = L.fc(input=L.concat([id_feature(fluid, v['user_id'], USERS, 8, 'user_table'),
                                   id_feature(fluid, v['gender_id'], 2, 4),
                                   id_feature(fluid, v['age_id'], AGES, 4),
                                   id_feature(fluid, v['job_id'], JOBS, 4)], axis=1),
                   size=12, act='tanh')
        movie = id_feature(fluid, v['movie_id'], MOVIES, 8, 'movie_table')
        categories = L.sequence_pool(
            input=fluid.embedding(input=v['category_id'], size=[CATEGORIES, 8],
                                  is_sparse=True), pool_type='sum')
        title = fluid.nets.sequence_conv_pool(
            input=fluid.embedding(input=v['movie_title'], size=[TITLE_WORDS, 8],
                                  is_sparse=True),
            num_filters=8, filter_size=3, act='tanh', pool_type='sum')
        mov = L.fc(input=L.concat([movie, categories, title], axis=1), size=12, act='tanh')
        prediction = L.scale(x=L.cos_sim(X=usr, Y=mov), scale=5.0)
        loss = L.mean(L.square_error_cost(input=prediction, label=v['score']))
        if opt == 'sgd':
            fluid.optimizer.SGD(learning_rate=0.2).minimize(loss)
        else:
            fluid.optimizer.Adam(learning_rate=0.05).minimize(loss)
    return main, startup, {'loss': loss, 'prediction': prediction,
                           'feed_list': [v[n] for n in FIELDS]}


def batches(seed=5):
    """STEPS batches of movielens-style samples (ids, category and title id lists of
    one to five, a score from 1 to 5)."""
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(STEPS):
        batch = []
        for _ in range(6):
            ids = [int(rng.randint(n)) for n in (USERS, 2, AGES, JOBS, MOVIES)]
            cats = [int(c) for c in rng.randint(0, CATEGORIES, rng.randint(1, 4))]
            title = [int(w) for w in rng.randint(0, TITLE_WORDS, rng.randint(1, 6))]
            batch.append(tuple(ids + [cats, title, [float(rng.randint(1, 6))]]))
        out.append(batch)
    return out


def run(fluid, opt, check=None, exe=None):
    """Trains build(fluid, opt) on batches() from seeded parameters (_steps.train_record,
    whose record it returns)."""
    main, startup, results = build(fluid, opt)
    feeder = fluid.DataFeeder(feed_list=results['feed_list'], place=fluid.CPUPlace())
    return _steps.train_record(fluid, main, startup, {k: results[k] for k in RESULTS},
                               (feeder.feed(b) for b in batches()), seed=6, scale=0.4,
                               check=check, exe=exe)


def main():
    _steps.write_records(sys.modules[__name__], OPTIMIZERS)


if __name__ == '__main__':
    main()
