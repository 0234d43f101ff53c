"""rill runs a program PaddlePaddle 1.8.5 built with conditional_block ops (scalar and
non-scalar conditions, a nested block, sub-blocks writing block 0's variables) and gives
Paddle's outputs for every combination of the conditions, in both schedules. The data
under paddle18/conditional_block was written by Paddle 1.8.5
(paddle18/gen_conditional_block.py); Paddle is not needed to run this test."""
import os

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18', 'conditional_block')


@pytest.mark.parametrize('parallel', [False, True])
def test_conditional_block_matches_paddle_1_8_5(parallel):
    with open(os.path.join(DATA, 'program.pdmodel'), 'rb') as f:
        prog = fluid.Program.parse_from_string(f.read())
    with open(os.path.join(DATA, 'fetch.txt')) as f:
        fetch = f.read().split()
    want = np.load(os.path.join(DATA, 'expected.npz'))
    x = want['x']
    exe = fluid.Executor(fluid.CPUPlace(), parallel=parallel, num_threads=2)
    seen = set()
    for c in (True, False):
        for nc in (True, False):
            for rows in (0, 2):
                key = '%d%d%d' % (c, nc, rows)
                z, w = exe.run(prog, feed={'x': x, 'c': np.array([c]), 'nc': np.array([nc]),
                                           'e': np.ones((rows, 3), 'float32')},
                               fetch_list=fetch)
                np.testing.assert_array_equal(np.asarray(z), want[key + '_z'], err_msg=key)
                np.testing.assert_array_equal(np.asarray(w), want[key + '_w'], err_msg=key)
                seen.add(tuple(np.asarray(z).ravel()))
    # The conditions pick among three different results (0, 3x and -x).
    assert len(seen) == 3
