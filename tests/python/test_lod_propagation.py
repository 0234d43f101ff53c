"""Which ops pass their input's LoD on, as Paddle 1.8.5 does (each case was run there):
a reduction keeps it unless it reduces the rows (dim 0), and expand keeps it when it
does not tile the rows. So an attention score summed over a sequence's features can go
straight into sequence_softmax, as Fluid programs do."""
import numpy as np

import rill as fluid

L = fluid.layers


def run(outs, x):
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    return exe.run(feed={'x': x}, fetch_list=outs, return_numpy=False)


def lod_input(rows=5, lengths=(2, 3), width=4, seed=3):
    v = np.random.RandomState(seed).rand(rows, width).astype('float32')
    return v, fluid.create_lod_tensor(v, [list(lengths)], fluid.CPUPlace())


def test_reductions_keep_the_lod_unless_they_reduce_the_rows():
    x = fluid.data('x', [None, 4], 'float32', lod_level=1)
    keep = [L.reduce_sum(x, dim=1, keep_dim=True), L.reduce_mean(x, dim=[1]),
            L.reduce_max(x, dim=-1)]
    drop = [L.reduce_max(x, dim=0), L.reduce_sum(x)]
    assert [o.lod_level for o in keep + drop] == [1, 1, 1, 0, 0]
    v, t = lod_input()
    got = run(keep + drop, t)
    for o in got[:3]:
        assert o.recursive_sequence_lengths() == [[2, 3]]
    for o in got[3:]:
        assert o.recursive_sequence_lengths() == []
    np.testing.assert_allclose(np.array(got[0]), v.sum(1, keepdims=True), rtol=1e-6)


def test_expand_keeps_the_lod_when_the_rows_are_not_tiled():
    x = fluid.data('x', [None, 4], 'float32', lod_level=1)
    wide, tall = L.expand(x, [1, 2]), L.expand(x, [2, 1])
    v, t = lod_input()
    got = run([wide, tall], t)
    assert got[0].recursive_sequence_lengths() == [[2, 3]]
    assert got[1].recursive_sequence_lengths() == []
    np.testing.assert_array_equal(np.array(got[0]), np.tile(v, (1, 2)))
    assert np.array(got[1]).shape == (10, 4)


def test_attention_scores_softmax_within_each_sequence():
    x = fluid.data('x', [None, 4], 'float32', lod_level=1)
    w = L.fill_constant([4], 'float32', 0.5)
    score = L.reduce_sum(L.elementwise_mul(x, w, axis=1), dim=1, keep_dim=True)
    attn = L.sequence_softmax(score)
    v, t = lod_input(rows=6, lengths=(1, 4, 1))
    got, = run([attn], t)
    s = (v * 0.5).sum(1)
    want = np.concatenate([np.exp(seq - seq.max()) / np.exp(seq - seq.max()).sum()
                           for seq in (s[:1], s[1:5], s[5:])])
    np.testing.assert_allclose(np.array(got).ravel(), want, rtol=1e-5)
    assert got.recursive_sequence_lengths() == [[1, 4, 1]]
