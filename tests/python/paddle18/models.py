"""The models of the Paddle 1.8.5 parity data, written once for both frameworks: each
builder takes the `fluid` module (Paddle's `paddle.fluid` in the gen_*.py scripts,
`rill` in tests/python/test_paddle18_parity.py) and returns (feed names, loss, optimizer
factory)."""
STEPS = 20


def fit_a_line(fluid):
    x = fluid.layers.data(name='x', shape=[13], dtype='float32')
    y = fluid.layers.data(name='y', shape=[1], dtype='float32')
    y_predict = fluid.layers.fc(input=x, size=1, act=None)
    cost = fluid.layers.square_error_cost(input=y_predict, label=y)
    return ['x', 'y'], fluid.layers.mean(cost), lambda: fluid.optimizer.SGD(learning_rate=0.001)


def _digits(fluid, body):
    img = fluid.layers.data(name='img', shape=[1, 8, 8], dtype='float32')
    label = fluid.layers.data(name='label', shape=[1], dtype='int64')
    loss = fluid.layers.mean(fluid.layers.cross_entropy(body(fluid, img), label))
    return ['img', 'label'], loss, lambda: fluid.optimizer.Adam(learning_rate=0.001)


def _mlp(fluid, img):
    h = fluid.layers.fc(img, 128, act='relu')
    h = fluid.layers.fc(h, 64, act='relu')
    return fluid.layers.fc(h, 10, act='softmax')


def _conv(fluid, img):
    h = fluid.layers.conv2d(img, num_filters=8, filter_size=3, padding=1, act='relu')
    h = fluid.layers.pool2d(h, pool_size=2, pool_type='max', pool_stride=2)
    h = fluid.layers.conv2d(h, num_filters=16, filter_size=3, padding=1)
    h = fluid.layers.batch_norm(h, act='relu')
    h = fluid.layers.pool2d(h, pool_size=2, pool_type='avg', pool_stride=2)
    return fluid.layers.fc(h, 10, act='softmax')


def recognize_digits_mlp(fluid):
    return _digits(fluid, _mlp)


def recognize_digits_conv(fluid):
    return _digits(fluid, _conv)


MODELS = {'fit_a_line': fit_a_line, 'recognize_digits_mlp': recognize_digits_mlp,
          'recognize_digits_conv': recognize_digits_conv}


def build(fluid, name):
    """Builds model `name` in a fresh program pair: returns (main, startup, forward
    clone taken before the optimizer, feed names, loss)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        feeds, loss, optimizer = MODELS[name](fluid)
        forward = main.clone()
        optimizer().minimize(loss)
    return main, startup, forward, feeds, loss
