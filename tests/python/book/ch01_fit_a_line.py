"""Linear regression on paddle.dataset.uci_housing, in the style of the Fluid 1.x book."""
import json
import random

import numpy

import paddle
import paddle.fluid as fluid

BATCH = 16
EPOCHS = 15
MODEL_DIR = 'fit_a_line.inference.model'

train_reader = paddle.batch(
    paddle.reader.shuffle(paddle.dataset.uci_housing.train(), buf_size=100), batch_size=BATCH)
test_reader = paddle.batch(paddle.dataset.uci_housing.test(), batch_size=BATCH)

x = fluid.data(name='x', shape=[None, 13], dtype='float32')
y = fluid.data(name='y', shape=[None, 1], dtype='float32')
main_program = fluid.default_main_program()
startup_program = fluid.default_startup_program()
main_program.random_seed = startup_program.random_seed = 1
random.seed(1)  # paddle.reader.shuffle's order, so that every run is the same

price = fluid.layers.fc(input=x, size=1, act=None)
avg_loss = fluid.layers.mean(fluid.layers.square_error_cost(input=price, label=y))
test_program = main_program.clone(for_test=True)
fluid.optimizer.SGD(learning_rate=0.02).minimize(avg_loss)

place = fluid.CPUPlace()
exe = fluid.Executor(place)
feeder = fluid.DataFeeder(place=place, feed_list=[x, y])
exe.run(startup_program)

losses = []
for epoch in range(EPOCHS):
    for batch in train_reader():
        loss, = exe.run(main_program, feed=feeder.feed(batch), fetch_list=[avg_loss])
        losses.append(float(loss[0]))
    fluid.io.save_inference_model(MODEL_DIR, ['x'], [price], exe)

test_batch = next(test_reader())
feat = numpy.array([s[0] for s in test_batch]).astype('float32')
label = numpy.array([s[1] for s in test_batch]).astype('float32')
expected, = exe.run(test_program, feed={'x': feat, 'y': label}, fetch_list=[price])

infer_exe = fluid.Executor(place)
with fluid.scope_guard(fluid.core.Scope()):
    program, feed_names, fetch_targets = fluid.io.load_inference_model(MODEL_DIR, infer_exe)
    assert feed_names == ['x']
    got, = infer_exe.run(program, feed={feed_names[0]: feat}, fetch_list=fetch_targets)

print('RESULT ' + json.dumps({'losses': losses, 'expected': expected.tolist(),
                              'inferred': got.tolist()}))
