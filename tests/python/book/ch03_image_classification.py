"""A small ResNet on paddle.dataset.cifar, in the style of the Fluid 1.x book."""
import json
import random

import numpy

import paddle
import paddle.fluid as fluid

BATCH = 32
EPOCHS = 4
MODEL_DIR = 'image_classification_resnet.inference.model'


def conv_bn(input, ch_out, filter_size, stride, padding, act='relu', bias_attr=False):
    conv = fluid.layers.conv2d(input=input, filter_size=filter_size, num_filters=ch_out,
                               stride=stride, padding=padding, act=None, bias_attr=bias_attr)
    return fluid.layers.batch_norm(input=conv, act=act)


def residual(input, ch_in, ch_out, stride):
    body = conv_bn(input, ch_out, 3, stride, 1)
    body = conv_bn(body, ch_out, 3, 1, 1, act=None, bias_attr=True)
    short = input if ch_in == ch_out else conv_bn(input, ch_out, 1, stride, 0, None)
    return fluid.layers.elementwise_add(x=body, y=short, act='relu')


def resnet(images):
    stem = conv_bn(images, ch_out=8, filter_size=3, stride=1, padding=1)
    stage = residual(stem, 8, 8, 1)
    stage = residual(stage, 8, 16, 2)
    stage = residual(stage, 16, 32, 2)
    pool = fluid.layers.pool2d(input=stage, pool_size=8, pool_type='avg', pool_stride=1)
    return fluid.layers.fc(input=pool, size=10, act='softmax')


train_reader = paddle.batch(
    paddle.reader.shuffle(paddle.dataset.cifar.train10(), buf_size=1000), batch_size=BATCH)
test_reader = paddle.batch(paddle.dataset.cifar.test10(), batch_size=BATCH)

main_program = fluid.default_main_program()
start_program = fluid.default_startup_program()
main_program.random_seed = start_program.random_seed = 1
random.seed(1)  # paddle.reader.shuffle's order, so that every run is the same
images = fluid.data(name='pixel', shape=[None, 3, 32, 32], dtype='float32')
predict = resnet(images)
label = fluid.data(name='label', shape=[None, 1], dtype='int64')
avg_cost = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=label))
accuracy = fluid.layers.accuracy(input=predict, label=label)
test_program = main_program.clone(for_test=True)
fluid.optimizer.Adam(learning_rate=0.01).minimize(avg_cost)

place = fluid.CPUPlace()
exe = fluid.Executor(place)
feed_order = ['pixel', 'label']
feeder = fluid.DataFeeder(
    feed_list=[main_program.global_block().var(n) for n in feed_order], place=place)
exe.run(start_program)

losses = []
for pass_id in range(EPOCHS):
    for data in train_reader():
        cost, acc = exe.run(main_program, feed=feeder.feed(data), fetch_list=[avg_cost, accuracy])
        losses.append(float(cost[0]))
    fluid.io.save_inference_model(MODEL_DIR, ['pixel'], [predict], exe)

pixels = numpy.array([s[0] for s in next(test_reader())[:2]]).reshape(-1, 3, 32, 32)
expected, = exe.run(test_program, feed={'pixel': pixels, 'label': numpy.zeros((2, 1), 'int64')},
                    fetch_list=[predict])
inference_scope = fluid.core.Scope()
with fluid.scope_guard(inference_scope):
    program, feed_names, fetch_targets = fluid.io.load_inference_model(MODEL_DIR, exe)
    got, = exe.run(program, feed={feed_names[0]: pixels}, fetch_list=fetch_targets)

print('RESULT ' + json.dumps({'losses': losses, 'expected': expected.tolist(),
                              'inferred': got.tolist()}))
