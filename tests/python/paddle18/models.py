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


def _conv_bn(fluid, x, ch_out, size, stride, padding, act='relu', bias_attr=False):
    conv = fluid.layers.conv2d(input=x, filter_size=size, num_filters=ch_out, stride=stride,
                               padding=padding, act=None, bias_attr=bias_attr)
    return fluid.layers.batch_norm(input=conv, act=act)


def _residual(fluid, x, ch_in, ch_out, stride):
    body = _conv_bn(fluid, x, ch_out, 3, stride, 1)
    body = _conv_bn(fluid, body, ch_out, 3, 1, 1, act=None, bias_attr=True)
    short = x if ch_in == ch_out else _conv_bn(fluid, x, ch_out, 1, stride, 0, None)
    return fluid.layers.elementwise_add(x=body, y=short, act='relu')


def image_classification_resnet(fluid):
    """Chapter 03: the book's resnet_cifar10 at depth 8 on 3x16x16 images, Adam."""
    img = fluid.layers.data(name='pixel', shape=[3, 16, 16], dtype='float32')
    label = fluid.layers.data(name='label', shape=[1], dtype='int64')
    h = _conv_bn(fluid, img, 8, 3, 1, 1)
    h = _residual(fluid, h, 8, 8, 1)
    h = _residual(fluid, h, 8, 16, 2)
    h = _residual(fluid, h, 16, 32, 2)
    h = fluid.layers.pool2d(input=h, pool_size=4, pool_type='avg', pool_stride=1)
    predict = fluid.layers.fc(input=h, size=10, act='softmax')
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=label))
    return ['pixel', 'label'], loss, lambda: fluid.optimizer.Adam(learning_rate=0.001)


WORD2VEC_DICT = 40
WORD2VEC_FEEDS = ['firstw', 'secondw', 'thirdw', 'fourthw', 'nextw']


def word2vec(fluid):
    """Chapter 04: the N-gram model, four sparse lookups of one shared table, a sigmoid
    fc and a softmax over the dictionary; Adagrad with L2 decay, as in the book."""
    words = [fluid.layers.data(name=n, shape=[1], dtype='int64') for n in WORD2VEC_FEEDS]
    embeds = [fluid.layers.embedding(input=w, size=[WORD2VEC_DICT, 8], dtype='float32',
                                     is_sparse=True, param_attr='shared_w')
              for w in words[:4]]
    hidden = fluid.layers.fc(input=fluid.layers.concat(input=embeds, axis=1), size=16,
                             act='sigmoid')
    predict = fluid.layers.fc(input=hidden, size=WORD2VEC_DICT, act='softmax')
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=words[4]))
    return WORD2VEC_FEEDS, loss, lambda: fluid.optimizer.AdagradOptimizer(
        learning_rate=0.05, regularization=fluid.regularizer.L2DecayRegularizer(8e-4))


SENTIMENT_DICT = 50


def _sentiment(fluid, body):
    words = fluid.layers.data(name='words', shape=[1], dtype='int64', lod_level=1)
    label = fluid.layers.data(name='label', shape=[1], dtype='int64')
    emb = fluid.layers.embedding(input=words, size=[SENTIMENT_DICT, 16], is_sparse=True)
    predict = body(fluid, emb)
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=label))
    return ['words', 'label'], loss, lambda: fluid.optimizer.Adagrad(learning_rate=0.05)


def _convolution_net(fluid, emb):
    conv_3 = fluid.nets.sequence_conv_pool(input=emb, num_filters=16, filter_size=3,
                                           act='tanh', pool_type='sqrt')
    conv_4 = fluid.nets.sequence_conv_pool(input=emb, num_filters=16, filter_size=4,
                                           act='tanh', pool_type='sqrt')
    return fluid.layers.fc(input=[conv_3, conv_4], size=2, act='softmax')


def _stacked_lstm_net(fluid, emb, hid_dim=32, stacked_num=3):
    fc1 = fluid.layers.fc(input=emb, size=hid_dim)
    lstm1, _ = fluid.layers.dynamic_lstm(input=fc1, size=hid_dim)
    inputs = [fc1, lstm1]
    for i in range(2, stacked_num + 1):
        fc = fluid.layers.fc(input=inputs, size=hid_dim)
        lstm, _ = fluid.layers.dynamic_lstm(input=fc, size=hid_dim, is_reverse=(i % 2) == 0)
        inputs = [fc, lstm]
    fc_last = fluid.layers.sequence_pool(input=inputs[0], pool_type='max')
    lstm_last = fluid.layers.sequence_pool(input=inputs[1], pool_type='max')
    return fluid.layers.fc(input=[fc_last, lstm_last], size=2, act='softmax')


def understand_sentiment_conv(fluid):
    """Chapter 06, convolution_net: two sequence_conv_pool branches over sparse
    embeddings of LoD word sequences, Adagrad."""
    return _sentiment(fluid, _convolution_net)


def understand_sentiment_lstm(fluid):
    """Chapter 06, stacked_lstm_net: three fc + dynamic_lstm layers (the second reversed),
    max sequence pools of the last fc and lstm, Adagrad."""
    return _sentiment(fluid, _stacked_lstm_net)


MODELS = {'fit_a_line': fit_a_line, 'recognize_digits_mlp': recognize_digits_mlp,
          'recognize_digits_conv': recognize_digits_conv,
          'image_classification_resnet': image_classification_resnet,
          'word2vec': word2vec, 'understand_sentiment_conv': understand_sentiment_conv,
          'understand_sentiment_lstm': understand_sentiment_lstm}

# Feeds that are LoD sequences: their .npy holds every step's ids end to end, and
# <name>.lod.npy each step's sequence lengths [STEPS, batch].
LOD_FEEDS = {'understand_sentiment_conv': ('words',), 'understand_sentiment_lstm': ('words',)}


def feed(fluid, name, batches, step):
    """The feed dict of model `name` for `step`: batches maps each feed name to its
    array (and each LoD feed to (ids, lengths))."""
    out = {}
    for k, v in batches.items():
        if k in LOD_FEEDS.get(name, ()):
            ids, lengths = v
            start = int(lengths[:step].sum())
            n = int(lengths[step].sum())
            out[k] = fluid.create_lod_tensor(ids[start:start + n].reshape(-1, 1),
                                             [lengths[step].tolist()], fluid.CPUPlace())
        else:
            out[k] = v[step]
    return out


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
