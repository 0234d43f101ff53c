"""DynamicRNN over paragraphs whose step input is a sentence of words (x with two LoD
levels): lod_tensor_to_array gives each step's items the word level, a static input of
two LoD levels is reordered by rank and shrunk with its LoD, sequence_pool runs inside
the step, and array_to_lod_tensor restores both levels of an output per word. Losses,
gradients (wx, wh, x, h0, s) and trained parameters are Paddle 1.8.5's
(paddle18/dynamic_rnn_nested/, written by paddle18/gen_dynamic_rnn_nested.py from the
same program) in both schedules, and so are the outputs and their LoD; the ops one by
one give Paddle's items, round trips, reorder and shrink on a nested batch with an empty
sentence (ops.npz), and the same against numpy on a batch with an empty paragraph too
(which Paddle's reorder refuses)."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import _steps  # noqa: E402
import gen_dynamic_rnn_nested as gen  # noqa: E402

NAMES = ('x', 'h0', 's')


@pytest.mark.parametrize('parallel', [False, True])
def test_nested_dynamic_rnn_trains_like_paddle(parallel):
    main = _steps.replay(fluid, gen, _steps.load(gen), NAMES, parallel)
    types = [op.type for op in main.global_block().ops]
    for t in ('lod_tensor_to_array', 'array_to_lod_tensor', 'reorder_lod_tensor_by_rank',
              'reorder_lod_tensor_by_rank_grad', 'while_grad'):
        assert t in types, t


def test_outputs_and_their_lod_are_paddles():
    ref = _steps.load(gen)
    want = np.load(os.path.join(gen.OUT, 'outputs.npz'))
    main, startup, _, outs = gen.build_with_outputs(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        _steps.start(fluid, gen, ref, scope, exe, startup)
        got = exe.run(main, feed=gen.feed_of(fluid, _steps.batch_of(ref, 0, NAMES)),
                      fetch_list=[outs[k] for k in gen.OUTPUTS], return_numpy=False)
    for k, v in zip(gen.OUTPUTS, got):
        np.testing.assert_allclose(np.array(v), want[k], rtol=1e-5, atol=1e-6, err_msg=k)
        lens = v.recursive_sequence_lengths()
        levels = sorted(n for n in want.files if n.startswith(k + '_lens_'))
        assert len(lens) == len(levels), k
        for lv, n in enumerate(levels):
            assert list(lens[lv]) == list(want[n]), (k, lv)
    assert len(got[1].recursive_sequence_lengths()) == 2


def test_array_ops_give_paddles_items_and_lod():
    want = np.load(os.path.join(gen.OUT, 'ops.npz'))
    got = gen.run_ops(fluid)
    assert sorted(got) == sorted(want.files)
    for k in want.files:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def _nested_program():
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [-1, 1], 'float32', lod_level=2)
        table = L.lod_rank_table(x)
        arr = L.lod_tensor_to_array(x, table)
        back = L.array_to_lod_tensor(arr, table)
        items = [L.array_read(arr, L.fill_constant([1], 'int64', t)) for t in range(3)]
        ranked = L.reorder_lod_tensor_by_rank(x, table)
        shrunk = L.shrink_memory(ranked, L.fill_constant([1], 'int64', 1), table)
        table1 = L.lod_rank_table(x, level=1)
        arr1 = L.lod_tensor_to_array(x, table1)
        back1 = L.array_to_lod_tensor(arr1, table1)
    return main, [table, back, ranked, shrunk, back1] + items


def test_nested_array_ops_against_numpy():
    """Paragraphs of 2, 0, 3 and 1 sentences of 1, 3 | - | 2, 0, 1 | 2 words."""
    paras, words = [2, 0, 3, 1], [1, 3, 2, 0, 1, 2]
    xv = np.arange(9, dtype='float32').reshape(9, 1)
    main, fetch = _nested_program()
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {'x': fluid.create_lod_tensor(xv, [paras, words], fluid.CPUPlace())}
    tv, bv, rv, sv, b1, i0, i1, i2 = exe.run(main, feed=feed, fetch_list=fetch,
                                             return_numpy=False)
    np.testing.assert_array_equal(np.array(tv), [[2, 3], [0, 2], [3, 1], [1, 0]])
    # sentence starts: 0, 1, 4, 6, 6, 7; paragraph p's sentences
    sent = [xv[a:b, 0].tolist() for a, b in zip(np.cumsum([0] + words)[:-1],
                                                 np.cumsum(words))]
    by_para = [[0, 1], [], [2, 3, 4], [5]]
    for t, item in enumerate((i0, i1, i2)):
        running = [p for p in (2, 0, 3, 1) if paras[p] > t]
        pieces = [sent[by_para[p][t]] for p in running]
        assert np.array(item).ravel().tolist() == sum(pieces, []), t
        assert item.recursive_sequence_lengths() == [[len(s) for s in pieces]], t
    np.testing.assert_array_equal(np.array(bv), xv)
    assert bv.recursive_sequence_lengths() == [paras, words]
    np.testing.assert_array_equal(np.array(b1), xv)
    assert b1.recursive_sequence_lengths() == [paras, words]
    order = [2, 0, 3, 1]
    assert np.array(rv).ravel().tolist() == sum((sum((sent[s] for s in by_para[p]), [])
                                                 for p in order), [])
    assert rv.recursive_sequence_lengths() == [[paras[p] for p in order],
                                               [words[s] for p in order for s in by_para[p]]]
    # step 1: paragraphs 2 and 0 still run
    assert sv.recursive_sequence_lengths() == [[3, 2], [2, 0, 1, 1, 3]]
    np.testing.assert_array_equal(np.array(sv), np.array(rv)[:7])


def test_lod_that_disagrees_with_the_table_names_op_and_variable():
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [-1, 1], 'float32', lod_level=2)
        y = fluid.data('y', [-1, 1], 'float32', lod_level=2)
        arr = L.lod_tensor_to_array(y, L.lod_rank_table(x))
        out = L.array_read(arr, L.fill_constant([1], 'int64', 0))
    exe = fluid.Executor(fluid.CPUPlace())
    place = fluid.CPUPlace()
    feed = {'x': fluid.create_lod_tensor(np.zeros((4, 1), 'float32'), [[2, 1], [1, 1, 2]], place),
            'y': fluid.create_lod_tensor(np.zeros((4, 1), 'float32'), [[1, 2], [1, 1, 2]], place)}
    with pytest.raises(Exception, match="lod_tensor_to_array.*X 'y': sequence 0 of LoD level 0 "
                                        "has 1 entries, the rank table says 2"):
        exe.run(main, feed=feed, fetch_list=[out])
