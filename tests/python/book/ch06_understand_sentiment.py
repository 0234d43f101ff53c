"""A text convolution classifier on paddle.dataset.imdb, in the style of the Fluid 1.x
book."""
import json

import numpy as np

import paddle
import paddle.fluid as fluid

CLASS_DIM = 2
EMB_DIM = 16
HID_DIM = 16
BATCH = 16
EPOCHS = 2
MODEL_DIR = 'understand_sentiment_conv.inference.model'


def convolution_net(data, input_dim):
    emb = fluid.embedding(input=data, size=[input_dim, EMB_DIM], is_sparse=True)
    conv_3 = fluid.nets.sequence_conv_pool(
        input=emb, num_filters=HID_DIM, filter_size=3, act='tanh', pool_type='sqrt')
    conv_4 = fluid.nets.sequence_conv_pool(
        input=emb, num_filters=HID_DIM, filter_size=4, act='tanh', pool_type='sqrt')
    return fluid.layers.fc(input=[conv_3, conv_4], size=CLASS_DIM, act='softmax')


word_dict = paddle.dataset.imdb.word_dict()
train_reader = fluid.io.batch(
    fluid.io.shuffle(paddle.dataset.imdb.train(word_dict), buf_size=1000), batch_size=BATCH)
test_reader = fluid.io.batch(paddle.dataset.imdb.test(word_dict), batch_size=BATCH)

main_program = fluid.default_main_program()
star_program = fluid.default_startup_program()
main_program.random_seed = star_program.random_seed = 1
data = fluid.data(name='words', shape=[None], dtype='int64', lod_level=1)
prediction = convolution_net(data, len(word_dict))
label = fluid.data(name='label', shape=[None, 1], dtype='int64')
avg_cost = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
accuracy = fluid.layers.accuracy(input=prediction, label=label)
test_program = main_program.clone(for_test=True)
fluid.optimizer.Adagrad(learning_rate=0.05).minimize(avg_cost)

place = fluid.CPUPlace()
exe = fluid.Executor(place)
feed_order = ['words', 'label']
feeder = fluid.DataFeeder(
    feed_list=[main_program.global_block().var(n) for n in feed_order], place=place)
exe.run(star_program)

losses = []
for epoch_id in range(EPOCHS):
    for data in train_reader():
        cost, acc = exe.run(main_program, feed=feeder.feed(data), fetch_list=[avg_cost, accuracy])
        losses.append(float(cost[0]))
fluid.io.save_inference_model(MODEL_DIR, ['words'], [prediction], exe)

reviews = [['good', 'film'], ['bad', 'dull', 'plot'], ['the', 'great', 'plot', 'fine']]
unk = word_dict['<unk>']
ids = [[word_dict.get(w, unk) for w in r] for r in reviews]
lod = [[len(r) for r in ids]]
flat = np.array(sum(ids, []), dtype='int64')
expected, = exe.run(test_program, feed={'words': fluid.create_lod_tensor(flat, lod, place),
                                         'label': np.zeros((3, 1), 'int64')},
                    fetch_list=[prediction])
with fluid.scope_guard(fluid.core.Scope()):
    inferencer, feed_names, fetch_targets = fluid.io.load_inference_model(MODEL_DIR, exe)
    tensor_words = fluid.create_lod_tensor(flat, lod, place)
    results = exe.run(inferencer, feed={feed_names[0]: tensor_words},
                      fetch_list=fetch_targets, return_numpy=False)
    got = np.array(results[0])

print('RESULT ' + json.dumps({'losses': losses, 'expected': expected.tolist(),
                              'inferred': got.tolist()}))
