"""fluid.layers' cell and decoder API (GRUCell, LSTMCell, rnn, dynamic_decode with
BeamSearchDecoder and BasicDecoder over the Greedy, Sample and Training helpers).

The programs of paddle18/gen_rnn_api.py, built with rill from the same seeded parameters
and inputs, give Paddle 1.8.5's values (paddle18/rnn_api/expected.npz, written by Paddle
from the same script): rnn's outputs, final states and the gradients of its inputs,
initial states and parameters (sequence_length masking, time_major, is_reverse); six
SGD losses through an LSTMCell rnn and six through a teacher-forced decoder; the
decoders' token ids and lengths exactly and their scores and logits within 1e-4
relative. Bad inputs fail naming the layer."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_rnn_api as gen  # noqa: E402

L = fluid.layers


def expected():
    return np.load(os.path.join(DATA, 'rnn_api', 'expected.npz'))


def compare(case, got):
    want = expected()
    keys = sorted(k.split('/', 1)[1] for k in want.files if k.startswith(case + '/'))
    assert sorted(got) == keys
    for k in keys:
        w, g = want[case + '/' + k], got[k]
        assert g.shape == w.shape, k
        if w.dtype.kind == 'f':
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6, err_msg=k)
        else:
            np.testing.assert_array_equal(g, w, err_msg=k)


@pytest.mark.parametrize('case', sorted(gen.RNN_CASES))
def test_rnn_forward_and_gradients_match_paddle(case):
    got = gen.run(fluid, case)
    compare(case, got)
    kind, time_major, reverse, use_len, init = gen.RNN_CASES[case]
    # Paddle's parameter names and shapes
    unit = 'GRUCell/BasicGRUUnit_0' if kind == 'gru' else 'LSTMCell/BasicLSTMUnit_0'
    if kind == 'gru':
        assert got[unit + '.w_0@GRAD'].shape == (gen.I + gen.H, 2 * gen.H)
        assert got[unit + '.w_1@GRAD'].shape == (gen.I + gen.H, gen.H)
    else:
        assert got[unit + '.w_0@GRAD'].shape == (gen.I + gen.H, 4 * gen.H)
    out = got['out'] if time_major else got['out'].transpose(1, 0, 2)
    for b, n in enumerate(gen.LENGTHS if use_len else [gen.T] * gen.B):
        # the final hidden state is the output of the last step a row takes part in
        last = 0 if reverse else n - 1
        np.testing.assert_allclose(got['final0'][b], out[last, b], rtol=1e-6)


def test_rnn_training_losses_match_paddle():
    np.testing.assert_allclose(gen.train(fluid), expected()['train/losses'], rtol=1e-5)


def test_teacher_forced_decoder_trains_like_paddle():
    """SGD through dynamic_decode's While (BasicDecoder, TrainingHelper,
    impute_finished): the gradient runs back through the tensor arrays."""
    np.testing.assert_allclose(gen.train_decode(fluid), expected()['train_decode/losses'],
                               rtol=1e-5)


@pytest.mark.parametrize('case', gen.DECODE_CASES)
def test_dynamic_decode_matches_paddle(case):
    compare(case, gen.run(fluid, case))


def test_parallel_schedule_gives_the_same_values(monkeypatch):
    serial = fluid.Executor

    def parallel(place=None):
        return serial(place, parallel=True, num_threads=2)
    monkeypatch.setattr(fluid, 'Executor', parallel)
    for case in ('gru', 'lstm_time_major_reverse', 'beam_lstm', 'sample_lstm'):
        compare(case, gen.run(fluid, case))
    np.testing.assert_allclose(gen.train_decode(fluid), expected()['train_decode/losses'],
                               rtol=1e-5)


def test_beam_search_cases_cover_early_end_and_step_limit():
    want = expected()
    # beam_gru ends every hypothesis before MAX_STEPS; beam_lstm runs to the limit
    assert want['beam_gru/ids'].shape[1] < gen.MAX_STEPS + 1
    assert want['beam_lstm/ids'].shape[1] == gen.MAX_STEPS + 1
    assert (want['beam_gru/finished']).all()
    assert not want['beam_lstm/finished'].all() and want['beam_lstm/finished'].any()
    assert set(want['greedy_gru/seq_lengths'].tolist()) == {1, gen.MAX_STEPS + 1}


def test_lstm_cell_takes_a_list_of_initial_states():
    """Paddle 1.8.5's rnn cannot take [h0, c0] (its input check walks h0's rows until
    one is out of range); rill's can: zeros give the zero-state run's values."""
    want = expected()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data('x', [gen.B, gen.T, gen.I], dtype='float32', append_batch_size=False)
        length = L.data('len', [gen.B], dtype='int64', append_batch_size=False)
        h0 = L.data('h0', [gen.B, gen.H], dtype='float32', append_batch_size=False)
        c0 = L.data('c0', [gen.B, gen.H], dtype='float32', append_batch_size=False)
        out, (h, c) = L.rnn(L.LSTMCell(gen.H), x, initial_states=[h0, c0],
                            sequence_length=length)
    feed = gen.feeds('lstm')
    zeros = np.zeros((gen.B, gen.H), 'float32')
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        gen.set_params(fluid, main, scope)
        o, hh, cc = exe.run(main, feed={'x': feed['x'], 'len': feed['len'], 'h0': zeros,
                                        'c0': zeros}, fetch_list=[out, h, c])
    np.testing.assert_allclose(o, want['lstm/out'], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(hh, want['lstm/final0'], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(cc, want['lstm/final1'], rtol=1e-5, atol=1e-7)


def test_tile_beam_merge_with_batch():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data('x', [-1, 2, 3], dtype='float32', append_batch_size=False)
        y = L.BeamSearchDecoder.tile_beam_merge_with_batch(x, 4)
    v = np.arange(12, dtype='float32').reshape(2, 2, 3)
    got, = fluid.Executor(fluid.CPUPlace()).run(main, feed={'x': v}, fetch_list=[y])
    np.testing.assert_array_equal(got, np.repeat(v, 4, axis=0))


def test_bad_inputs_name_the_layer():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = L.data('x', [2, 3, 4], dtype='float32', append_batch_size=False)
        ids = L.data('i', [2, 3, 4], dtype='int64', append_batch_size=False)
        with pytest.raises(TypeError, match='GRUCell: hidden_size'):
            L.GRUCell('4')
        with pytest.raises(TypeError, match='LSTMCell: dtype'):
            L.LSTMCell(4, dtype='int32')
        with pytest.raises(TypeError, match="rnn: inputs"):
            L.rnn(L.GRUCell(4), 'x')
        with pytest.raises(TypeError, match=r"rnn: inputs\[0\] 'i' is int64"):
            L.rnn(L.GRUCell(4), ids)
        with pytest.raises(TypeError, match='LSTMCell: states must be a list'):
            L.LSTMCell(4)(x, x)
        with pytest.raises(NotImplementedError):
            L.RNNCell()(x, x)
        with pytest.raises(NotImplementedError):
            L.dynamic_decode(L.Decoder())


def test_named_param_attrs_give_paddle_names():
    with fluid.program_guard(fluid.Program(), fluid.Program()), fluid.unique_name.guard():
        x = L.data('x', [2, 3, 4], dtype='float32', append_batch_size=False)
        L.rnn(L.GRUCell(5, param_attr=fluid.ParamAttr(name='g'),
                        bias_attr=fluid.ParamAttr(name='gb')), x)
        L.rnn(L.LSTMCell(5, param_attr=fluid.ParamAttr(name='lw')), x)
        params = fluid.default_main_program().global_block().all_parameters()
        got = {p.name: tuple(p.shape) for p in params}
    assert got == {'g_gate': (9, 10), 'g_candidate': (9, 5), 'gb_gate': (10,),
                   'gb_candidate': (5,), 'lw': (9, 20), 'LSTMCell/BasicLSTMUnit_0.b_0': (20,)}


def test_sampling_id_layer_draws_paddles_ids():
    """Paddle 1.8.5's ids for these rows and seed 7 (tests/operators/test_sampling_id.c
    holds more); the same on every run."""
    rows = np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1], [0.25] * 4] * 3, 'float32')
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = L.data('x', [-1, 4], dtype='float32', append_batch_size=False)
        ids = L.sampling_id(x, seed=7)
        with pytest.raises(TypeError, match='sampling_id: x'):
            L.sampling_id(L.cast(x, 'int64'))
        with pytest.raises(ValueError, match='sampling_id: min'):
            L.sampling_id(x, min=1.0, max=1.0)
    exe = fluid.Executor(fluid.CPUPlace())
    for _ in range(2):
        got, = exe.run(main, feed={'x': rows}, fetch_list=[ids])
        assert got.dtype == np.int64
        assert got.tolist() == [0, 0, 0, 1, 1, 1, 3, 1, 3]


class _SumCell(L.RNNCell):
    """h' = tanh(a + b + h) for a pair of inputs: a cell written against RNNCell."""

    def call(self, inputs, states):
        a, b = inputs
        h = L.tanh(L.elementwise_add(L.elementwise_add(a, b), states))
        return h, h

    @property
    def state_shape(self):
        return [3]


@pytest.mark.parametrize('reverse', [False, True])
def test_a_user_cell_over_a_pair_of_inputs(reverse):
    rng = np.random.RandomState(4)
    a, b = rng.uniform(-1, 1, (2, 2, 4, 3)).astype('float32')
    lengths = np.array([4, 2], 'int64')
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        xa = L.data('a', [2, 4, 3], dtype='float32', append_batch_size=False)
        xb = L.data('b', [2, 4, 3], dtype='float32', append_batch_size=False)
        ln = L.data('len', [2], dtype='int64', append_batch_size=False)
        out, final = L.rnn(_SumCell(), (xa, xb), sequence_length=ln, is_reverse=reverse)
    got_out, got_final = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={'a': a, 'b': b, 'len': lengths}, fetch_list=[out, final])
    want_out = np.zeros_like(a)
    want_final = np.zeros((2, 3), 'float32')
    for r in range(2):
        h = np.zeros(3, 'float32')
        steps = range(3, -1, -1) if reverse else range(4)
        for t in steps:
            new = np.tanh(a[r, t] + b[r, t] + h)
            want_out[r, t] = new
            if t < lengths[r]:
                h = new
        want_final[r] = h
    np.testing.assert_allclose(got_out, want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_final, want_final, rtol=1e-5, atol=1e-6)


def test_unseeded_sampling_decoder_draws_ids_in_range():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        start = L.data('start', [-1], dtype='int64', append_batch_size=False)
        h0 = L.data('h0', [-1, gen.H], dtype='float32', append_batch_size=False)
        helper = L.SampleEmbeddingHelper(
            lambda ids: fluid.embedding(ids, size=[gen.V, gen.E]), start, gen.END)
        dec = L.BasicDecoder(L.GRUCell(gen.H), helper,
                             output_fn=lambda h: L.fc(h, gen.V))
        outs, _ = L.dynamic_decode(dec, inits=h0, max_step_num=4)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        ids, = exe.run(main, feed={'start': np.array([0, 2], 'int64'),
                                   'h0': np.zeros((2, gen.H), 'float32')},
                       fetch_list=[outs.sample_ids])
    assert ids.dtype == np.int64 and ids.shape[0] == 2 and 1 <= ids.shape[1] <= 5
    assert ((ids >= 0) & (ids < gen.V)).all()
