"""The recurrent models of the Paddle 1.8.5 parity data (gen_recurrent.py writes it,
tests/python/test_paddle18_recurrent.py reads it), written once for both frameworks: each
builder takes the `fluid` module (Paddle's `paddle.fluid` or `rill`) and returns (feed
names, the variables whose first-batch values are compared, loss)."""
import numpy as np

STEPS = 10
VOCAB = 30
LR = 0.1


def _ids(fluid):
    return fluid.layers.data(name='ids', shape=[1], dtype='int64', lod_level=1)


def _head(fluid, seq):
    """A sequence's max-pooled features through one fc, regressed onto y."""
    y = fluid.layers.data(name='y', shape=[1], dtype='float32')
    pooled = fluid.layers.sequence_pool(seq, 'max')
    pred = fluid.layers.fc(pooled, 1)
    return fluid.layers.mean(fluid.layers.square_error_cost(pred, y))


def lstm_peepholes(fluid):
    """Two stacked LSTMs with peepholes, the second reversed; the candidate activation
    of the second is relu and its cell activation identity."""
    emb = fluid.layers.embedding(_ids(fluid), size=[VOCAB, 8])
    h1, c1 = fluid.layers.dynamic_lstm(fluid.layers.fc(emb, 24), size=24)
    h2, c2 = fluid.layers.dynamic_lstm(fluid.layers.fc(h1, 20), size=20, is_reverse=True,
                                       candidate_activation='relu',
                                       cell_activation='identity')
    return ['ids', 'y'], [h1, c1, h2, c2], _head(fluid, fluid.layers.concat([h1, h2], 1))


def lstm_initial_states(fluid):
    """An LSTM without peepholes whose initial states are fc outputs of a per-sequence
    feature z (so H0 and C0 get gradients)."""
    z = fluid.layers.data(name='z', shape=[4], dtype='float32')
    emb = fluid.layers.embedding(_ids(fluid), size=[VOCAB, 8])
    h0 = fluid.layers.fc(z, 6, act='tanh')
    c0 = fluid.layers.fc(z, 6)
    h, c = fluid.layers.dynamic_lstm(fluid.layers.fc(emb, 24), size=24, h_0=h0, c_0=c0,
                                     use_peepholes=False)
    return ['ids', 'z', 'y'], [h, c], _head(fluid, h)


def gru(fluid):
    """A GRU, then a reversed origin_mode GRU starting from an fc of z (H0 with a
    gradient)."""
    z = fluid.layers.data(name='z', shape=[4], dtype='float32')
    emb = fluid.layers.embedding(_ids(fluid), size=[VOCAB, 8])
    g1 = fluid.layers.dynamic_gru(fluid.layers.fc(emb, 15), size=5)
    h0 = fluid.layers.fc(z, 7, act='tanh')
    g2 = fluid.layers.dynamic_gru(fluid.layers.fc(g1, 21), size=7, is_reverse=True,
                                  origin_mode=True, h_0=h0, candidate_activation='relu')
    return ['ids', 'z', 'y'], [g1, g2], _head(fluid, g2)


def units(fluid):
    """gru_unit and lstm_unit steps on plain rows."""
    x = fluid.layers.data(name='x', shape=[6], dtype='float32')
    y = fluid.layers.data(name='y', shape=[1], dtype='float32')
    hprev = fluid.layers.fc(x, 4, act='tanh')
    gh, reset, gate = fluid.layers.gru_unit(fluid.layers.fc(x, 12), hprev, 12)
    cprev = fluid.layers.fc(x, 4)
    lh, lc = fluid.layers.lstm_unit(x, gh, cprev, forget_bias=0.5)
    pred = fluid.layers.fc(fluid.layers.concat([lh, lc, gh], 1), 1)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
    return ['x', 'y'], [gh, reset, gate, lh, lc], loss


MODELS = {'lstm_peepholes': lstm_peepholes, 'lstm_initial_states': lstm_initial_states,
          'gru': gru, 'units': units}


def build(fluid, name):
    """Builds model `name` in a fresh program pair: (main, startup, forward clone taken
    before the optimizer, feed names, compared variables, loss)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        feeds, outs, loss = MODELS[name](fluid)
        forward = main.clone()
        fluid.optimizer.SGD(learning_rate=LR).minimize(loss)
    return main, startup, forward, feeds, outs, loss


def batches(name):
    """STEPS seeded batches: {feed: [array per step]} and the sequence lengths per step
    (None for the model without sequences). Lengths include ties and vary per step."""
    rng = np.random.RandomState(85)
    out, lens = {}, []
    for _ in range(STEPS):
        if name == 'units':
            x = rng.normal(size=(5, 6)).astype('float32')
            out.setdefault('x', []).append(x)
            out.setdefault('y', []).append(rng.normal(size=(5, 1)).astype('float32'))
            lens.append(None)
            continue
        n = rng.randint(3, 7)
        ln = [int(v) for v in rng.randint(1, 8, size=n)]
        ln[-1] = ln[0]  # a tie
        lens.append(ln)
        out.setdefault('ids', []).append(
            rng.randint(0, VOCAB, size=(sum(ln), 1)).astype('int64'))
        out.setdefault('z', []).append(rng.normal(size=(n, 4)).astype('float32'))
        out.setdefault('y', []).append(rng.normal(size=(n, 1)).astype('float32'))
    return out, lens


def feed(fluid, place, name, data, lens, step):
    """The feed dict of one step (ids as a LoD tensor)."""
    d = {}
    for k, v in data.items():
        if k == 'z' and name not in ('lstm_initial_states', 'gru'):
            continue
        if k == 'ids':
            d[k] = fluid.create_lod_tensor(v[step], [lens[step]], place)
        else:
            d[k] = v[step]
    return d
