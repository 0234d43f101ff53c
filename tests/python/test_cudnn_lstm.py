"""fluid.layers.lstm, the cudnn_lstm op, which Paddle 1.8.5 runs through cuDNN only.

Paddle's CPU build cannot run the op, so there are no Paddle numbers; what Paddle writes
is recorded instead (paddle18/gen_cudnn_lstm.py -> cudnn_lstm/programs.json): rill's
layer must write the same op, slots, attributes, weight parameter and initializer, and
the same gradient op (rill adds one output, Reserve, and passes it to the gradient).
The numbers are checked against a numpy LSTM written here that reads the flat weight in
cuDNN's canonical layout (doc/design/recurrent.md), one and two layers, one and two
directions; then a short training run must lower its loss."""
import json
import os
import sys

import numpy as np
import pytest

import rill as fluid
from rill import core

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_cudnn_lstm as gen  # noqa: E402

_DTYPES = {'VarType.FP32': 'float32', 'VarType.FP64': 'float64'}


def recorded():
    with open(os.path.join(DATA, 'cudnn_lstm', 'programs.json')) as f:
        return json.load(f)


def close_attrs(got, want):
    assert sorted(got) == sorted(want)
    for k, w in want.items():
        if isinstance(w, float):
            assert got[k] == pytest.approx(w, rel=1e-6), k
        else:
            assert got[k] == w, k


@pytest.mark.parametrize('case', sorted(gen.CASES))
def test_program_matches_paddle(case):
    want = recorded()[case]
    got = gen.record(fluid, case)
    assert sorted(got['ops']) == sorted(want['ops'])
    for op_type, w in want['ops'].items():
        g = got['ops'][op_type]
        close_attrs(g['attrs'], w['attrs'])
        # Paddle's slots with the same variables; rill's Reserve beside them
        extra_in = set(g['inputs']) - set(w['inputs'])
        extra_out = set(g['outputs']) - set(w['outputs'])
        assert extra_in <= {'Reserve'} and extra_out <= {'Reserve'}, op_type
        for slot, names in w['inputs'].items():
            assert g['inputs'][slot] == names, (op_type, slot)
        for slot, names in w['outputs'].items():
            # an unwanted gradient: Paddle leaves the slot empty, rill names @EMPTY@
            got_names = [n for n in g['outputs'][slot] if n != '@EMPTY@']
            assert got_names == names, (op_type, slot)
    assert got['weight']['name'] == want['weight']['name']
    assert got['weight']['shape'] == want['weight']['shape']
    assert got['weight']['dtype'] == _DTYPES[want['weight']['dtype']]
    assert got['weight']['persistable'] and want['weight']['persistable']
    assert want['cache'] == {'type': 'VarType.RAW', 'persistable': True}
    assert got['cache'] == {'type': str(core.RAW), 'persistable': True}
    assert got['weight_init']['type'] == want['weight_init']['type']
    close_attrs(got['weight_init']['attrs'], want['weight_init']['attrs'])


# ---- numbers: a numpy LSTM reading the flat weight in cuDNN's layout ----

def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def split_weight(w, I, H, L, D):
    """Per layer and direction (W [4H, in], R [4H, H], bW [4H], bR [4H]): every matrix
    first (layer, then direction; the 4 input then the 4 recurrent gate matrices, gates
    i, f, c, o), then every bias in the same order (bW, then bR)."""
    mats, off = {}, 0
    for l in range(L):
        width = I if l == 0 else D * H
        for d in range(D):
            Wm = w[off:off + 4 * H * width].reshape(4 * H, width)
            off += 4 * H * width
            Rm = w[off:off + 4 * H * H].reshape(4 * H, H)
            off += 4 * H * H
            mats[l, d] = [Wm, Rm]
    for l in range(L):
        for d in range(D):
            mats[l, d] += [w[off:off + 4 * H], w[off + 4 * H:off + 8 * H]]
            off += 8 * H
    assert off == w.size
    return mats


def numpy_lstm(x, h0, c0, w, H, L, D):
    T, N, I = x.shape
    mats = split_weight(w, I, H, L, D)
    hn, cn = np.zeros_like(h0), np.zeros_like(c0)
    inp = x
    for l in range(L):
        out = np.zeros((T, N, D * H), x.dtype)
        for d in range(D):
            Wm, Rm, bW, bR = mats[l, d]
            h, c = h0[l * D + d], c0[l * D + d]
            for t in (range(T) if d == 0 else reversed(range(T))):
                z = inp[t] @ Wm.T + h @ Rm.T + bW + bR
                i, f, g, o = (z[:, k * H:(k + 1) * H] for k in range(4))
                c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
                h = sigmoid(o) * np.tanh(c)
                out[t, :, d * H:(d + 1) * H] = h
            hn[l * D + d], cn[l * D + d] = h, c
        inp = out
    return inp, hn, cn


@pytest.mark.parametrize('L,bi', [(1, False), (1, True), (2, False), (2, True)])
def test_forward_matches_numpy(L, bi):
    T, N, I, H = 5, 3, 4, 6
    D = 2 if bi else 1
    rng = np.random.RandomState(11 + L + 2 * bi)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data('x', [T, N, I], 'float64')
        h0 = fluid.data('h0', [L * D, N, H], 'float64')
        c0 = fluid.data('c0', [L * D, N, H], 'float64')
        out, last_h, last_c = fluid.layers.lstm(x, h0, c0, T, H, L, is_bidirec=bi,
                                                is_test=True)
    assert list(out.shape) == [T, N, D * H]
    w_name = main.global_block().all_parameters()[0].name
    feed = {'x': rng.uniform(-1, 1, (T, N, I)), 'h0': rng.uniform(-.5, .5, (L * D, N, H)),
            'c0': rng.uniform(-.5, .5, (L * D, N, H))}
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        w = rng.uniform(-.5, .5, main.global_block().var(w_name).shape)
        scope.find_var(w_name).get_tensor().set(w, fluid.CPUPlace())
        got = exe.run(main, feed=feed, fetch_list=[out, last_h, last_c])
    want = numpy_lstm(feed['x'], feed['h0'], feed['c0'], w, H, L, D)
    for g, e, what in zip(got, want, ('out', 'last_h', 'last_c')):
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-10, atol=1e-12, err_msg=what)


def test_training_lowers_the_loss():
    T, N, I, H, L = 6, 8, 3, 8, 2
    rng = np.random.RandomState(3)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data('x', [T, N, I], 'float32')
        y = fluid.data('y', [T, N, 2 * H], 'float32')
        h0 = fluid.layers.fill_constant([2 * L, N, H], 'float32', 0.0)
        c0 = fluid.layers.fill_constant([2 * L, N, H], 'float32', 0.0)
        out, _, _ = fluid.layers.lstm(x, h0, c0, T, H, L, dropout_prob=0.1, is_bidirec=True)
        loss = fluid.layers.reduce_mean(fluid.layers.square(out - y))
        fluid.optimizer.Adam(0.02).minimize(loss)
    xs = rng.uniform(-1, 1, (T, N, I)).astype('float32')
    ys = (0.5 * np.tanh(np.concatenate([np.cumsum(xs, 0)] * (2 * H // I + 1), -1)))[:, :, :2 * H]
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        losses = [float(np.asarray(exe.run(main, feed={'x': xs, 'y': ys.astype('float32')},
                                           fetch_list=[loss])[0]).reshape(-1)[0])
                  for _ in range(40)]
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.5 * losses[0], losses


def test_bad_inputs_name_the_layer():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [3, 2, 4], 'float32')
        h = fluid.data('h', [1, 2, 5], 'float32')
        xi = fluid.data('xi', [3, 2, 4], 'int64')
        with pytest.raises(TypeError, match='lstm: input'):
            fluid.layers.lstm(xi, h, h, 3, 5, 1)
        with pytest.raises(TypeError, match='lstm: hidden_size'):
            fluid.layers.lstm(x, h, h, 3, 5.0, 1)


def load_paddle_training(dropout):
    stem = os.path.join(DATA, 'cudnn_lstm', 'train_%g' % dropout)
    with open(stem + '.main', 'rb') as f:
        main = fluid.Program.parse_from_string(f.read())
    with open(stem + '.startup', 'rb') as f:
        startup = fluid.Program.parse_from_string(f.read())
    return main, startup


def paddle_batch():
    rng = np.random.RandomState(4)
    xs = rng.uniform(-1, 1, (6, 8, 3)).astype('float32')
    ys = (0.5 * np.tanh(np.concatenate([np.cumsum(xs, 0)] * 3, -1)))[:, :, :8]
    return {'x': xs, 'y': ys.astype('float32')}


def test_paddle_written_training_program_trains():
    """The training program Paddle wrote: its gradient op has no Reserve, so the gradient
    runs the forward again; Adam lowers the loss."""
    main, startup = load_paddle_training(0.0)
    grads = [op for op in main.global_block().ops if op.type == 'cudnn_lstm_grad']
    assert len(grads) == 1 and 'Reserve' not in grads[0].input_names
    loss = [op for op in main.global_block().ops if op.type == 'reduce_mean'][0].output('Out')[0]
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        losses = [float(np.asarray(exe.run(main, feed=paddle_batch(),
                                           fetch_list=[loss])[0]).reshape(-1)[0])
                  for _ in range(30)]
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.5 * losses[0], losses


def test_paddle_written_dropout_without_seed_fails_naming_the_op():
    """Dropout between layers, Paddle's seed -1 and no Reserve: the gradient cannot draw
    the forward's mask again, and says so."""
    main, startup = load_paddle_training(0.3)
    loss = [op for op in main.global_block().ops if op.type == 'reduce_mean'][0].output('Out')[0]
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        with pytest.raises(Exception, match='cudnn_lstm_grad.*Reserve is absent'):
            exe.run(main, feed=paddle_batch(), fetch_list=[loss])
