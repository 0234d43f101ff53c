"""The stacked bidirectional LSTM classifier of the Fluid 1.x book's chapter 06
(train_stacked_lstm.py: dynamic_lstm layers alternating direction) on
paddle.dataset.imdb, smaller."""
import json

import numpy as np

import paddle
import paddle.fluid as fluid

CLASS_DIM = 2
EMB_DIM = 16
HID_DIM = 32
STACKED_NUM = 3
BATCH = 16
EPOCHS = 2
MODEL_DIR = 'understand_sentiment_stacked_lstm.inference.model'


def stacked_lstm_net(data, input_dim, class_dim, emb_dim, hid_dim, stacked_num):
    assert stacked_num % 2 == 1
    emb = fluid.embedding(input=data, size=[input_dim, emb_dim], is_sparse=True)
    fc1 = fluid.layers.fc(input=emb, size=hid_dim)
    lstm1, cell1 = fluid.layers.dynamic_lstm(input=fc1, size=hid_dim)
    inputs = [fc1, lstm1]
    for i in range(2, stacked_num + 1):
        fc = fluid.layers.fc(input=inputs, size=hid_dim)
        lstm, cell = fluid.layers.dynamic_lstm(
            input=fc, size=hid_dim, is_reverse=(i % 2) == 0)
        inputs = [fc, lstm]
    fc_last = fluid.layers.sequence_pool(input=inputs[0], pool_type='max')
    lstm_last = fluid.layers.sequence_pool(input=inputs[1], pool_type='max')
    return fluid.layers.fc(input=[fc_last, lstm_last], size=class_dim, act='softmax')


word_dict = paddle.dataset.imdb.word_dict()
train_reader = fluid.io.batch(
    fluid.io.shuffle(paddle.dataset.imdb.train(word_dict), buf_size=1000), batch_size=BATCH)
test_reader = fluid.io.batch(paddle.dataset.imdb.test(word_dict), batch_size=BATCH)

main_program = fluid.default_main_program()
star_program = fluid.default_startup_program()
main_program.random_seed = star_program.random_seed = 1
data = fluid.data(name='words', shape=[None], dtype='int64', lod_level=1)
prediction = stacked_lstm_net(data, len(word_dict), CLASS_DIM, EMB_DIM, HID_DIM, STACKED_NUM)
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
