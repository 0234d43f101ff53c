"""Resuming Paddle 1.8.5's training (paddle18/resume/, written by paddle18/gen_resume.py
from the same programs): load_persistables of Paddle's files (its int64 step counter,
the piecewise schedule's learning_rate, Adam's and Momentum's state, batch_norm's
statistics) continues with Paddle's losses, and save_persistables writes the same files
back, byte for byte, so that Paddle resumes from rill's."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_resume as gen  # noqa: E402


@pytest.mark.parametrize('kind', gen.KINDS)
def test_resumes_paddles_training_with_paddles_losses(kind, tmp_path):
    want = np.load(os.path.join(DATA, 'resume', 'losses.npz'))[kind]
    saved = os.path.join(DATA, 'resume', kind)
    main, startup, loss = gen.build(fluid, kind)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        fluid.io.load_persistables(exe, saved, main)
        fluid.io.save_persistables(exe, str(tmp_path), main)
        for name in sorted(os.listdir(saved)):
            with open(os.path.join(saved, name), 'rb') as a, open(str(tmp_path / name), 'rb') as b:
                assert a.read() == b.read(), name
        assert sorted(os.listdir(str(tmp_path))) == sorted(os.listdir(saved))
        got = [float(np.asarray(exe.run(main, feed=b, fetch_list=[loss])[0]).reshape(-1)[0])
               for b in gen.batches()[gen.STEPS:]]
    np.testing.assert_allclose(got, want, rtol=1e-5)
