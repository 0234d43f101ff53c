"""rill trains fit_a_line and recognize_digits (MLP; conv net with max/avg pool and
batch_norm) from PaddlePaddle 1.8.5's starting weights on the same batches and gives
Paddle's losses. The data under paddle18/ was written by Paddle 1.8.5 itself
(paddle18/gen_*.py, which build the models of paddle18/models.py); Paddle is not needed
to run this test."""
import json
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import models  # noqa: E402

# Step 1 runs the starting weights on the first batch: only summation order differs.
FIRST_RTOL = 1e-5
# Over 20 steps float rounding compounds through the updates (measured at most 1.3e-7);
# an update that is not Fluid 1.x's (Adam's epsilon placed as in Paddle 2.x gave 9.6e-5)
# shows above this.
DRIFT_RTOL = 1e-5


def train(name):
    main, startup, forward, feeds, loss = models.build(fluid, name)
    batches = {k: np.load(os.path.join(DATA, name, k + '.npy')) for k in feeds}
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        fluid.io.load_persistables(exe, os.path.join(DATA, name, 'params'),
                                   main_program=forward)
        return [float(np.asarray(exe.run(main, feed={k: batches[k][s] for k in feeds},
                                         fetch_list=[loss])[0]).reshape(-1)[0])
                for s in range(models.STEPS)]


@pytest.mark.parametrize('name', sorted(models.MODELS))
def test_losses_match_paddle_1_8_5(name):
    with open(os.path.join(DATA, name, 'losses.json')) as f:
        record = json.load(f)
    assert record['paddle'] == '1.8.5'
    want = np.array(record['losses'])
    got = np.array(train(name))
    assert got.shape == want.shape == (models.STEPS,)
    drift = np.abs(got - want) / np.abs(want)
    print('%s: step-1 relative difference %.3g, max over %d steps %.3g (step %d)'
          % (name, drift[0], models.STEPS, drift.max(), drift.argmax() + 1))
    assert drift[0] <= FIRST_RTOL, (got[0], want[0])
    assert drift.max() <= DRIFT_RTOL, list(zip(got, want))
