"""DynamicRNN over a LoD batch (lengths 2, 4, 1, 4): lod_rank_table, max_sequence_len,
lod_tensor_to_array, reorder_lod_tensor_by_rank, shrink_rnn_memory and
array_to_lod_tensor inside and around a While loop, trained with SGD through
while_grad and the ops' gradients. Losses, gradients (wh, x, h0, s) and trained
parameters are Paddle 1.8.5's (paddle18/dynamic_rnn/, written by
paddle18/gen_dynamic_rnn.py from the same program) in both schedules; the forward
against a numpy loop over the sequences; the ops one by one against numpy."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import _steps  # noqa: E402
import gen_dynamic_rnn as gen  # noqa: E402

NAMES = ('x', 'h0', 's')


def expected():
    return _steps.load(gen)


def batch_of(ref, step):
    return _steps.batch_of(ref, step, NAMES)


def start(ref, scope, exe, startup):
    _steps.start(fluid, gen, ref, scope, exe, startup)


def numpy_loss(p, batch):
    x, h0, s = (batch[k].astype('float64') for k in ('x', 'h0', 's'))
    lasts, cs = [], []
    at = 0
    for i, n in enumerate(gen.LENS):
        h, c = h0[i], np.full(gen.H, 0.1)
        for t in range(n):
            h = np.tanh(x[at + t] @ p['wx'] + p['bx'] + h @ p['wh'])
            c = 0.5 * c + h * s[i]
            cs.append(c)
        lasts.append(h)
        at += n
    return np.mean(lasts) + np.mean(np.square(cs))


@pytest.mark.parametrize('parallel', [False, True])
def test_dynamic_rnn_trains_like_paddle(parallel):
    main = _steps.replay(fluid, gen, expected(), NAMES, parallel)
    types = [op.type for op in main.global_block().ops]
    for t in ('lod_rank_table', 'lod_tensor_to_array', 'reorder_lod_tensor_by_rank',
              'array_to_lod_tensor', 'while_grad', 'reorder_lod_tensor_by_rank_grad'):
        assert t in types, t


def test_forward_matches_numpy():
    ref = expected()
    main, startup, loss = gen.build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        start(ref, scope, exe, startup)
        l, = exe.run(main, feed=gen.feed_of(fluid, batch_of(ref, 0)), fetch_list=[loss])
    p = {k: ref['param_' + k].astype('float64') for k in gen.PARAMS}
    np.testing.assert_allclose(float(np.asarray(l).ravel()[0]), numpy_loss(p, batch_of(ref, 0)),
                               rtol=1e-5)


def test_array_ops_against_numpy():
    """lod_rank_table ranks longest first (ties in index order); lod_tensor_to_array
    splits by step; array_to_lod_tensor restores the batch and its LoD;
    reorder_lod_tensor_by_rank and shrink_memory cut per-sequence rows."""
    lens = [2, 0, 3, 1, 3]
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [-1, 2], 'float32', lod_level=1)
        s = fluid.data('s', [-1, 2], 'float32')
        table = L.lod_rank_table(x)
        n = L.max_sequence_len(table)
        arr = L.lod_tensor_to_array(x, table)
        back = L.array_to_lod_tensor(arr, table)
        i = L.fill_constant([1], 'int64', 1)
        item = L.array_read(arr, i)
        ranked = L.reorder_lod_tensor_by_rank(s, table)
        shrunk = L.shrink_memory(ranked, i, table)
    xv = np.arange(18, dtype='float32').reshape(9, 2)
    sv = np.arange(10, dtype='float32').reshape(5, 2) * -1
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {'x': fluid.create_lod_tensor(xv, [lens], fluid.CPUPlace()), 's': sv}
    tv, nv, bv, iv, rv, shv = exe.run(
        main, feed=feed, fetch_list=[table, n, back, item, ranked, shrunk], return_numpy=False)
    order = [2, 4, 0, 3, 1]
    np.testing.assert_array_equal(np.array(tv), [[k, lens[k]] for k in order])
    assert int(np.array(nv)[0]) == 3
    np.testing.assert_array_equal(np.array(bv), xv)
    assert bv.lod() == [[0, 2, 2, 5, 6, 9]]
    starts = np.cumsum([0] + lens)
    np.testing.assert_array_equal(np.array(iv), xv[[starts[k] + 1 for k in (2, 4, 0)]])
    np.testing.assert_array_equal(np.array(rv), sv[order])
    np.testing.assert_array_equal(np.array(shv), sv[[2, 4, 0]])


def test_rank_table_of_a_tensor_without_lod_is_an_error():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [-1, 2], 'float32')
        table = fluid.layers.lod_rank_table(x)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(Exception, match="lod_rank_table.*level 0 is not a LoD level of X 'x'"):
        exe.run(main, feed={'x': np.zeros((3, 2), 'float32')}, fetch_list=[table])


def test_outputs_only_after_the_block():
    rnn = fluid.layers.DynamicRNN()
    with pytest.raises(ValueError, match='after the rnn block'):
        rnn()
    with pytest.raises(ValueError, match='inside rnn.block'):
        rnn.step_input(fluid.data('x', [-1, 2], 'float32', lod_level=1))
