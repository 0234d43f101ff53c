"""rill's lstm, gru, lstm_unit and gru_unit against PaddlePaddle 1.8.5: the models of
paddle18/recurrent.py (stacked and reversed LSTMs with peepholes and other activations,
LSTM and GRU initial states that get gradients, origin_mode, the unit layers) from
Paddle's starting weights. The forward values of the first batch must match Paddle's,
and so must the losses of 10 SGD steps on LoD batches whose sequence lengths vary and
tie. The data under paddle18/recurrent/ was written by Paddle 1.8.5 itself
(paddle18/gen_recurrent.py); Paddle is not needed to run this test."""
import json
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import recurrent  # noqa: E402

# The first batch runs the starting weights: only summation order and the activations'
# last bits differ (Paddle's AVX exp for float32 frames of 8).
FORWARD_RTOL, FORWARD_ATOL = 2e-5, 1e-6
# Over 10 SGD steps the rounding compounds through the updates (measured at most
# 3.1e-7); a gate in the wrong place or a missing gradient term (dropping the output
# peephole's gradient, say) is far above this.
LOSS_RTOL = 1e-5


def run(name):
    main, startup, forward, feeds, outs, loss = recurrent.build(fluid, name)
    data, lens = recurrent.batches(name)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        fluid.io.load_persistables(exe, os.path.join(DATA, 'recurrent', name, 'params'),
                                   main_program=forward)
        first = exe.run(forward, feed=recurrent.feed(fluid, place, name, data, lens, 0),
                        fetch_list=outs)
        losses = [float(np.asarray(exe.run(main, feed=recurrent.feed(fluid, place, name, data,
                                                                     lens, s),
                                           fetch_list=[loss])[0]).reshape(-1)[0])
                  for s in range(recurrent.STEPS)]
    return [np.asarray(v) for v in first], losses


@pytest.mark.parametrize('name', sorted(recurrent.MODELS))
def test_matches_paddle_1_8_5(name):
    with open(os.path.join(DATA, 'recurrent', name, 'losses.json')) as f:
        record = json.load(f)
    assert record['paddle'] == '1.8.5'
    want_fwd = np.load(os.path.join(DATA, 'recurrent', name, 'forward.npz'))
    first, losses = run(name)
    assert len(first) == len(want_fwd.files)
    for i, got in enumerate(first):
        want = want_fwd['out%d' % i]
        assert got.shape == want.shape, (i, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=FORWARD_RTOL, atol=FORWARD_ATOL,
                                   err_msg='%s: compared variable %d' % (name, i))
    want = np.array(record['losses'])
    got = np.array(losses)
    drift = np.abs(got - want) / np.abs(want)
    print('%s: max relative loss difference over %d steps %.3g (step %d)'
          % (name, recurrent.STEPS, drift.max(), drift.argmax() + 1))
    assert drift.max() <= LOSS_RTOL, list(zip(got, want))


def test_program_matches_paddle_layout():
    """The layers append Paddle's ops with Paddle's slots and parameter shapes."""
    main, startup, forward, feeds, outs, loss = recurrent.build(fluid, 'lstm_peepholes')
    ops = [op for op in forward.global_block().ops if op.type == 'lstm']
    assert len(ops) == 2
    blk = forward.global_block()
    assert blk.var('lstm_0.w_0').shape == (6, 24) and blk.var('lstm_0.b_0').shape == (1, 42)
    assert ops[1].attr('is_reverse') and ops[1].attr('candidate_activation') == 'relu'
    main, startup, forward, feeds, outs, loss = recurrent.build(fluid, 'gru')
    blk = forward.global_block()
    assert blk.var('gru_0.w_0').shape == (5, 15) and blk.var('gru_0.b_0').shape == (1, 15)
    types = [op.type for op in main.global_block().ops]
    assert 'gru_grad' in types and 'lstm' not in types
