"""fluid.layers.beam_search, beam_search_decode and gather_tree.

The decoding loop of paddle18/gen_beam_search.py (While over tensor arrays, beam_search
each step, beam_search_decode after) gives Paddle 1.8.5's sentences, scores, LoD and step
count (paddle18/beam_search/expected.json) for three batches of sources: two end every
sentence before the step limit, one runs to it; and 40 seeded single steps (ties, ended
prefixes, empty sources, both levels, with and without ids, accumulated or not) give
Paddle's selections exactly. The machine translation chapter's model
(paddle18/gen_machine_translation.py: GRU encoder, DynamicRNN decoder trained with
Adagrad, then the chapter's beam search decoder with sequence_expand, lod_reset and
is_empty) gives Paddle's training losses and decoded sentences. gather_tree against a
numpy walk; bad inputs fail with the op and the variable named."""
import json
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_beam_search as gen  # noqa: E402
import gen_machine_translation as mt  # noqa: E402


def expected():
    with open(os.path.join(DATA, 'beam_search', 'expected.json')) as f:
        return json.load(f)


@pytest.mark.parametrize('case', range(len(gen.STARTS)))
def test_decoding_loop_matches_paddle(case):
    want = expected()['results'][case]
    got = gen.run(fluid, gen.STARTS[case])
    assert got['steps'] == want['steps']
    assert got['lod'] == want['lod']
    assert got['scores_lod'] == want['scores_lod']
    assert got['ids'] == want['ids']
    np.testing.assert_allclose(got['scores'], want['scores'], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('case', range(gen.CASES))
def test_beam_search_step_matches_paddle(case):
    c = expected()['steps'][case]
    got = gen.run_step(fluid, c)
    want = c['want']
    assert got['lod'] == want['lod']
    assert got['ids'] == want['ids']
    assert got['parent'] == want['parent']
    np.testing.assert_allclose(got['scores'], want['scores'], rtol=1e-6)


def test_step_cases_cover_the_rules():
    cases = expected()['steps']
    assert {c['level'] for c in cases} == {0, 1}
    assert {c['accumulated'] for c in cases} == {True, False}
    assert any(c['ids'] is None for c in cases) and any(c['ids'] for c in cases)
    assert any(gen.END in c['pre_ids'] for c in cases)

    def dropped(c):
        """a source with prefixes but no selection (level 0: its rows are lod[0]'s)"""
        l0, sel = c['lod'][0], c['want']['lod'][1]
        return c['level'] == 0 and any(a < b and sel[a] == sel[b] for a, b in zip(l0, l0[1:]))
    assert any(dropped(c) for c in cases)


def test_machine_translation_trains_and_decodes_like_paddle():
    with open(os.path.join(DATA, 'machine_translation', 'expected.json')) as f:
        want = json.load(f)
    got = mt.run(fluid)
    np.testing.assert_allclose(got['losses'], want['losses'], rtol=1e-5)
    assert got['lod'] == want['lod']
    assert got['ids'] == want['ids']
    np.testing.assert_allclose(got['scores'], want['scores'], rtol=1e-5, atol=1e-6)
    # every source gets BEAM sentences, each starting at START and ending in END
    lod0, lod1 = want['lod']
    assert lod0 == [i * mt.BEAM for i in range(len(mt.DECODE_SRC) + 1)]
    for a, b in zip(lod1, lod1[1:]):
        assert want['ids'][a] == mt.START and want['ids'][b - 1] == mt.END


def test_decoding_loop_ends_sentences_and_drops_sources():
    """The cases cover what the loop must do: sentences that end in END (one END kept),
    a loop that stops when every source has ended, and one that reaches the limit."""
    res = expected()['results']
    assert res[0]['steps'] < gen.T and res[2]['steps'] == gen.T
    ids, lod = res[0]['ids'], res[0]['lod'][1]
    sents = [ids[a:b] for a, b in zip(lod, lod[1:])]
    assert any(s[-1] == gen.END for s in sents)
    assert all(gen.END not in s[:-1] for s in sents)


def _run(fetch, feed):
    exe = fluid.Executor(fluid.CPUPlace())
    return exe.run(fluid.default_main_program(), feed=feed, fetch_list=fetch,
                   return_numpy=False)


def _lod_tensor(a, lod):
    t = fluid.LoDTensor()
    t.set(a, fluid.CPUPlace())
    t.set_lod(lod)
    return t


def test_beam_search_step_and_parent_idx():
    """One step on hand-checked data (Paddle 1.8.5 gives the same): the ended row offers
    only END with its score; ties keep the first candidate first."""
    L = fluid.layers
    pi = L.data('pi', [1], dtype='int64', lod_level=2)
    ps = L.data('ps', [1], dtype='float32', lod_level=2)
    i = L.data('i', [3], dtype='int64', lod_level=2)
    s = L.data('s', [3], dtype='float32', lod_level=2)
    sel_ids, sel_sc, par = L.beam_search(pi, ps, i, s, 2, 9, return_parent_idx=True)
    lod = [[0, 2, 3], [0, 1, 2, 3]]
    feed = {'pi': _lod_tensor(np.array([[1], [9], [4]], 'int64'), lod),
            'ps': _lod_tensor(np.array([[-0.5], [-0.25], [-1.0]], 'float32'), lod),
            'i': _lod_tensor(np.array([[2, 3, 9], [5, 6, 7], [9, 1, 2]], 'int64'), lod),
            's': _lod_tensor(np.array([[-0.75, -1.5, -0.6], [-0.3, -0.3, -2.0],
                                       [-1.25, -1.5, -1.25]], 'float32'), lod)}
    a, b, c = _run([sel_ids, sel_sc, par], feed)
    assert np.array(a).ravel().tolist() == [9, 9, 9, 2]
    np.testing.assert_allclose(np.array(b).ravel(), [-0.6, -0.25, -1.25, -1.25], rtol=1e-6)
    assert np.array(c).ravel().tolist() == [0, 1, 2, 2]
    assert [list(x) for x in a.lod()] == [[0, 2, 3], [0, 1, 2, 4]]


def test_beam_search_without_lod_names_op_and_variable():
    L = fluid.layers
    pi = L.data('pi', [1], dtype='int64')
    ps = L.data('ps', [1], dtype='float32')
    s = L.data('flat_scores', [3], dtype='float32')
    sel_ids, _ = L.beam_search(pi, ps, None, s, 2, 9)
    feed = {'pi': np.array([[1], [2]], 'int64'), 'ps': np.zeros((2, 1), 'float32'),
            'flat_scores': np.full((2, 3), 0.5, 'float32')}
    with pytest.raises(fluid.Error) as e:
        _run([sel_ids], feed)
    msg = str(e.value)
    assert 'beam_search' in msg and 'flat_scores' in msg and 'LoD levels' in msg


def test_beam_search_decode_type_check():
    arr = fluid.layers.create_array('int64')
    with pytest.raises(TypeError):
        fluid.layers.beam_search_decode(arr, arr, 2, 0)


def _gather_tree_numpy(ids, parents):
    out = np.empty_like(ids)
    steps, batch, beam = ids.shape
    for b in range(batch):
        for k in range(beam):
            p = k
            for t in range(steps - 1, -1, -1):
                out[t, b, k] = ids[t, b, p]
                p = parents[t, b, p]
    return out


@pytest.mark.parametrize('dtype', ['int64', 'int32'])
def test_gather_tree_matches_numpy(dtype):
    rng = np.random.RandomState(3)
    ids = rng.randint(0, 50, (5, 3, 4)).astype(dtype)
    parents = rng.randint(0, 4, (5, 3, 4)).astype(dtype)
    x = fluid.layers.data('ids', [5, 3, 4], dtype=dtype, append_batch_size=False)
    p = fluid.layers.data('parents', [5, 3, 4], dtype=dtype, append_batch_size=False)
    out = fluid.layers.gather_tree(x, p)
    got, = fluid.Executor(fluid.CPUPlace()).run(feed={'ids': ids, 'parents': parents},
                                                fetch_list=[out])
    np.testing.assert_array_equal(got, _gather_tree_numpy(ids, parents))
    parents[4, 1, 0] = 7
    with pytest.raises(fluid.Error) as e:
        fluid.Executor(fluid.CPUPlace()).run(feed={'ids': ids, 'parents': parents},
                                             fetch_list=[out])
    assert 'gather_tree' in str(e.value) and 'parents' in str(e.value)
