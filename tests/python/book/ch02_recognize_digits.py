"""LeNet on paddle.dataset.mnist, in the style of the Fluid 1.x book."""
import json
import random

import numpy

import paddle
import paddle.fluid as fluid

BATCH = 64
EPOCHS = 2
MODEL_DIR = 'recognize_digits.inference.model'


def loss_net(hidden, label):
    prediction = fluid.layers.fc(input=hidden, size=10, act='softmax')
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
    return prediction, loss, fluid.layers.accuracy(input=prediction, label=label)


def lenet(img, label):
    first = fluid.nets.simple_img_conv_pool(
        input=img, filter_size=5, num_filters=8, pool_size=2, pool_stride=2, act='relu')
    first = fluid.layers.batch_norm(first)
    second = fluid.nets.simple_img_conv_pool(
        input=first, filter_size=5, num_filters=16, pool_size=2, pool_stride=2, act='relu')
    return loss_net(second, label)


train_reader = paddle.batch(
    paddle.reader.shuffle(paddle.dataset.mnist.train(), buf_size=500), batch_size=BATCH)
test_reader = paddle.batch(paddle.dataset.mnist.test(), batch_size=BATCH)

img = fluid.data(name='img', shape=[None, 1, 28, 28], dtype='float32')
label = fluid.data(name='label', shape=[None, 1], dtype='int64')
main_program = fluid.default_main_program()
startup_program = fluid.default_startup_program()
main_program.random_seed = startup_program.random_seed = 1
random.seed(1)  # paddle.reader.shuffle's order, so that every run is the same
prediction, avg_loss, acc = lenet(img, label)
test_program = main_program.clone(for_test=True)
fluid.optimizer.Adam(learning_rate=0.01).minimize(avg_loss)

place = fluid.CPUPlace()
exe = fluid.Executor(place)
feeder = fluid.DataFeeder(feed_list=[img, label], place=place)
exe.run(startup_program)

losses = []
for epoch in range(EPOCHS):
    for data in train_reader():
        loss, accuracy = exe.run(main_program, feed=feeder.feed(data), fetch_list=[avg_loss, acc])
        losses.append(float(loss[0]))
    test_acc = [float(exe.run(test_program, feed=feeder.feed(data), fetch_list=[acc])[0][0])
                for data in test_reader()]
    fluid.io.save_inference_model(MODEL_DIR, ['img'], [prediction], exe,
                                  model_filename='model', params_filename='params')

images = numpy.array([s[0] for s in next(test_reader())[:4]]).reshape(-1, 1, 28, 28)
expected, = exe.run(test_program, feed={'img': images, 'label': numpy.zeros((4, 1), 'int64')},
                    fetch_list=[prediction])
with fluid.scope_guard(fluid.core.Scope()):
    program, feed_names, fetch_targets = fluid.io.load_inference_model(
        MODEL_DIR, exe, model_filename='model', params_filename='params')
    got, = exe.run(program, feed={feed_names[0]: images}, fetch_list=fetch_targets)

print('RESULT ' + json.dumps({'losses': losses, 'expected': expected.tolist(),
                              'inferred': got.tolist(), 'test_acc': numpy.mean(test_acc)}))
