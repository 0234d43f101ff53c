"""A user/movie matching model on paddle.dataset.movielens, in the style of the Fluid 1.x
book."""
import json

import numpy as np

import paddle
import paddle.fluid as fluid
import paddle.fluid.layers as layers
import paddle.fluid.nets as nets

BATCH = 32
EPOCHS = 3
MODEL_DIR = 'recommender_system.inference.model'
ml = paddle.dataset.movielens


def id_feature(name, dict_size, width, param_attr=None):
    ids = fluid.data(name=name, shape=[None], dtype='int64')
    emb = fluid.embedding(input=ids, size=[dict_size, width], dtype='float32',
                          param_attr=param_attr, is_sparse=True)
    return layers.fc(input=emb, size=width)


def user_features():
    parts = [id_feature('user_id', ml.max_user_id() + 1, 16, 'user_table'),
             id_feature('gender_id', 2, 8),
             id_feature('age_id', len(ml.age_table), 8),
             id_feature('job_id', ml.max_job_id() + 1, 8)]
    return layers.fc(input=layers.concat(input=parts, axis=1), size=32, act='tanh')


def movie_features():
    movie = id_feature('movie_id', ml.max_movie_id() + 1, 16, 'movie_table')
    category_id = fluid.data(name='category_id', shape=[None], dtype='int64', lod_level=1)
    categories = layers.sequence_pool(
        input=fluid.embedding(input=category_id, size=[len(ml.movie_categories()), 16],
                              is_sparse=True),
        pool_type='sum')
    title_id = fluid.data(name='movie_title', shape=[None], dtype='int64', lod_level=1)
    title = nets.sequence_conv_pool(
        input=fluid.embedding(input=title_id, size=[len(ml.get_movie_title_dict()), 16],
                              is_sparse=True),
        num_filters=16, filter_size=3, act='tanh', pool_type='sum')
    return layers.fc(input=layers.concat(input=[movie, categories, title], axis=1),
                     size=32, act='tanh')


train_reader = fluid.io.batch(fluid.io.shuffle(ml.train(), buf_size=1000), batch_size=BATCH)
test_reader = fluid.io.batch(ml.test(), batch_size=BATCH)

main_program = fluid.default_main_program()
star_program = fluid.default_startup_program()
main_program.random_seed = star_program.random_seed = 1
usr, mov = user_features(), movie_features()
scale_infer = layers.scale(x=layers.cos_sim(X=usr, Y=mov), scale=5.0)
score = fluid.data(name='score', shape=[None, 1], dtype='float32')
avg_cost = layers.mean(layers.square_error_cost(input=scale_infer, label=score))
test_program = main_program.clone(for_test=True)
fluid.optimizer.SGD(learning_rate=0.05).minimize(avg_cost)

feed_order = ['user_id', 'gender_id', 'age_id', 'job_id', 'movie_id', 'category_id',
              'movie_title', 'score']
place = fluid.CPUPlace()
exe = fluid.Executor(place)
feeder = fluid.DataFeeder([main_program.global_block().var(n) for n in feed_order], place)
exe.run(star_program)

losses = []
for pass_id in range(EPOCHS):
    for batch_id, data in enumerate(train_reader()):
        outs = exe.run(program=main_program, feed=feeder.feed(data), fetch_list=[avg_cost])
        losses.append(float(np.array(outs[0])[0]))
fluid.io.save_inference_model(MODEL_DIR, feed_order[:-1], [scale_infer], exe)

feed = {'user_id': np.array([1], dtype='int64'), 'gender_id': np.array([1], dtype='int64'),
        'age_id': np.array([0], dtype='int64'), 'job_id': np.array([4], dtype='int64'),
        'movie_id': np.array([3], dtype='int64')}
categories, title = np.array([0, 1], dtype='int64'), np.array([0, 2, 4], dtype='int64')
expected, = exe.run(test_program, feed=dict(
    feed, category_id=fluid.create_lod_tensor(categories, [[2]], place),
    movie_title=fluid.create_lod_tensor(title, [[3]], place), score=np.zeros((1, 1), 'float32')),
    fetch_list=[scale_infer])
with fluid.scope_guard(fluid.core.Scope()):
    inferencer, feed_names, fetch_targets = fluid.io.load_inference_model(MODEL_DIR, exe)
    assert feed_names == feed_order[:-1]
    results = exe.run(inferencer, feed=dict(
        feed, category_id=fluid.create_lod_tensor(categories, [[2]], place),
        movie_title=fluid.create_lod_tensor(title, [[3]], place)),
        fetch_list=fetch_targets, return_numpy=False)
    got = np.array(results[0])

print('RESULT ' + json.dumps({'losses': losses, 'expected': expected.tolist(),
                              'inferred': got.tolist()}))
