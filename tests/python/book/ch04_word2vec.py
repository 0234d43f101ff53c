"""An N-gram language model on paddle.dataset.imikolov, in the style of the Fluid 1.x book."""
import json

import numpy

import paddle
import paddle.fluid as fluid

EMBED_SIZE = 16
HIDDEN_SIZE = 64
N = 5
BATCH = 32
EPOCHS = 3
MODEL_DIR = 'word2vec.inference.model'

word_dict = paddle.dataset.imikolov.build_dict()
dict_size = len(word_dict)


def ngram_net(words, is_sparse):
    embeds = [fluid.embedding(input=w, size=[dict_size, EMBED_SIZE], dtype='float32',
                              is_sparse=is_sparse, param_attr='shared_w')
              for w in words]
    hidden = fluid.layers.fc(input=fluid.layers.concat(input=embeds, axis=1),
                             size=HIDDEN_SIZE, act='sigmoid')
    return fluid.layers.fc(input=hidden, size=dict_size, act='softmax')


train_reader = paddle.batch(paddle.dataset.imikolov.train(word_dict, N), BATCH)
test_reader = paddle.batch(paddle.dataset.imikolov.test(word_dict, N), BATCH)

feed_order = ['firstw', 'secondw', 'thirdw', 'fourthw', 'nextw']
word_vars = [fluid.data(name=n, shape=[None, 1], dtype='int64') for n in feed_order]
main_program = fluid.default_main_program()
star_program = fluid.default_startup_program()
main_program.random_seed = star_program.random_seed = 1
predict_word = ngram_net(word_vars[:4], is_sparse=True)
avg_cost = fluid.layers.mean(fluid.layers.cross_entropy(input=predict_word, label=word_vars[4]))
test_program = main_program.clone(for_test=True)
fluid.optimizer.AdagradOptimizer(
    learning_rate=0.2,
    regularization=fluid.regularizer.L2DecayRegularizer(8e-4)).minimize(avg_cost)

place = fluid.CPUPlace()
exe = fluid.Executor(place)
feeder = fluid.DataFeeder(
    feed_list=[main_program.global_block().var(n) for n in feed_order], place=place)
exe.run(star_program)

losses = []
for pass_id in range(EPOCHS):
    for data in train_reader():
        cost, = exe.run(main_program, feed=feeder.feed(data), fetch_list=[avg_cost])
        losses.append(float(cost[0]))
fluid.io.save_inference_model(MODEL_DIR, feed_order[:4], [predict_word], exe)

context = [numpy.asarray([[word_dict['w%d' % k]]], dtype='int64') for k in range(4)]
expected, = exe.run(test_program, feed=dict(zip(feed_order, context + [context[0]])),
                    fetch_list=[predict_word])
with fluid.scope_guard(fluid.core.Scope()):
    inferencer, feed_names, fetch_targets = fluid.io.load_inference_model(MODEL_DIR, exe)
    tensors = [fluid.create_lod_tensor(c, [[1]], place) for c in context]
    results = exe.run(inferencer, feed=dict(zip(feed_names, tensors)),
                      fetch_list=fetch_targets, return_numpy=False)
    got = numpy.array(results[0])

print('RESULT ' + json.dumps({'losses': losses, 'expected': expected.tolist(),
                              'inferred': got.tolist(),
                              'next': int(numpy.argmax(got)), 'want': word_dict['w4']}))
