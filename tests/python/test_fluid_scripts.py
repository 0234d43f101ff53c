"""Fluid 1.x scripts, written as the PaddlePaddle book wrote them, run after
`import rill as fluid`."""
import numpy as np

import rill as fluid


def reader(n, batch, make):
    rng = np.random.RandomState(0)
    samples = [make(rng) for _ in range(n)]
    for i in range(0, n, batch):
        yield samples[i:i + batch]


def test_book_fit_a_line(tmp_path):
    x = fluid.layers.data(name='x', shape=[13], dtype='float32')
    y_predict = fluid.layers.fc(input=x, size=1, act=None)
    y = fluid.layers.data(name='y', shape=[1], dtype='float32')
    cost = fluid.layers.square_error_cost(input=y_predict, label=y)
    avg_cost = fluid.layers.mean(cost)
    sgd_optimizer = fluid.optimizer.SGD(learning_rate=0.1)
    sgd_optimizer.minimize(avg_cost)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    exe.run(fluid.default_startup_program())
    feeder = fluid.DataFeeder(place=place, feed_list=[x, y])
    w = np.linspace(-1, 1, 13)

    def make(rng):
        v = rng.rand(13).astype('float32')
        return v, [float(v @ w)]

    first = last = None
    for epoch in range(20):
        for data in reader(64, 16, make):
            loss, = exe.run(fluid.default_main_program(), feed=feeder.feed(data),
                            fetch_list=[avg_cost])
            first = loss[0] if first is None else first
            last = loss[0]
    assert last < first / 4
    params_dirname = str(tmp_path / 'fit_a_line.inference.model')
    fluid.io.save_inference_model(params_dirname, ['x'], [y_predict], exe)
    infer_exe = fluid.Executor(place)
    inference_scope = fluid.core.Scope()
    with fluid.scope_guard(inference_scope):
        [inference_program, feed_target_names,
         fetch_targets] = fluid.io.load_inference_model(params_dirname, infer_exe)
        batch = np.random.RandomState(1).rand(4, 13).astype('float32')
        results = infer_exe.run(inference_program, feed={feed_target_names[0]: batch},
                                fetch_list=fetch_targets)
    assert results[0].shape == (4, 1)


def test_book_recognize_digits_convolutional_network(tmp_path):
    img = fluid.layers.data(name='img', shape=[1, 8, 8], dtype='float32')
    label = fluid.layers.data(name='label', shape=[1], dtype='int64')
    conv_pool_1 = fluid.nets.simple_img_conv_pool(
        input=img, filter_size=3, num_filters=8, pool_size=2, pool_stride=2, conv_padding=1,
        act='relu')
    conv_pool_1 = fluid.layers.batch_norm(conv_pool_1)
    prediction = fluid.layers.fc(input=conv_pool_1, size=10, act='softmax')
    cost = fluid.layers.cross_entropy(input=prediction, label=label)
    avg_loss = fluid.layers.mean(cost)
    acc = fluid.layers.accuracy(input=prediction, label=label)
    test_program = fluid.default_main_program().clone(for_test=True)
    optimizer = fluid.optimizer.Adam(learning_rate=0.001)
    optimizer.minimize(avg_loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    feeder = fluid.DataFeeder(feed_list=[img, label], place=fluid.CPUPlace())

    def make(rng):
        k = rng.randint(10)
        im = np.zeros((8, 8), 'float32')
        im[k % 8, :] = 1
        im[:, k // 2] += 0.5
        return im + 0.05 * rng.rand(8, 8).astype('float32'), k

    for _ in range(30):
        for data in reader(100, 20, make):
            exe.run(fluid.default_main_program(), feed=feeder.feed(data), fetch_list=[avg_loss])
    accs = [exe.run(test_program, feed=feeder.feed(d), fetch_list=[acc])[0][0]
            for d in reader(100, 50, make)]
    assert np.mean(accs) > 0.9
