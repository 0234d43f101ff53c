"""fluid.layers.lod_reset, lod_append and is_empty: the LoDs Paddle 1.8.5 gives for the
same program (target_lod, a 2-level Y, Y's int32 offsets, an appended level), the
declared LoD levels, and the errors."""
import numpy as np
import pytest

import rill as fluid


def _build():
    L = fluid.layers
    x = L.data('x', [1], dtype='float32', lod_level=1)
    y = L.data('y', [1], dtype='float32', lod_level=2)
    yi = L.data('yi', [3], dtype='int32', append_batch_size=False)
    outs = [L.lod_reset(x, target_lod=[0, 4, 6]), L.lod_reset(x, y=y), L.lod_reset(x, y=yi),
            L.lod_append(x, [0, 1, 2, 3, 4, 5, 6]), L.is_empty(x)]
    return outs


def _feed():
    place = fluid.CPUPlace()
    data = np.arange(6, dtype='float32').reshape(6, 1)
    return {'x': fluid.create_lod_tensor(data, [[2, 3, 1]], place),
            'y': fluid.create_lod_tensor(data, [[1, 2], [2, 2, 2]], place),
            'yi': np.array([0, 2, 6], 'int32')}


def test_lods_and_levels_match_paddle():
    outs = _build()
    assert [o.lod_level for o in outs[:4]] == [1, 2, 1, 2]
    assert outs[4].dtype.name == 'bool'
    got = fluid.Executor(fluid.CPUPlace()).run(feed=_feed(), fetch_list=outs,
                                               return_numpy=False)
    want = [[[0, 4, 6]], [[0, 1, 3], [0, 2, 4, 6]], [[0, 2, 6]],
            [[0, 2, 5, 6], [0, 1, 2, 3, 4, 5, 6]]]
    for t, w in zip(got[:4], want):
        assert [list(level) for level in t.lod()] == w
        np.testing.assert_array_equal(np.array(t).ravel(), np.arange(6))
    assert np.array(got[4]).tolist() == [False]


def test_is_empty_of_an_empty_selection():
    L = fluid.layers
    x = L.data('x', [1], dtype='int64')
    e = L.is_empty(x)
    got, = fluid.Executor(fluid.CPUPlace()).run(feed={'x': np.zeros((0, 1), 'int64')},
                                                fetch_list=[e])
    assert got.tolist() == [True]


def test_target_lod_that_misses_the_rows_names_op_and_variable():
    x = fluid.layers.data('x', [1], dtype='float32', lod_level=1)
    out = fluid.layers.lod_reset(x, target_lod=[0, 4, 5])
    with pytest.raises(fluid.Error) as e:
        fluid.Executor(fluid.CPUPlace()).run(feed={'x': _feed()['x']}, fetch_list=[out])
    assert 'lod_reset' in str(e.value) and 'x' in str(e.value) and 'target_lod' in str(e.value)
    with pytest.raises(ValueError):
        fluid.layers.lod_reset(x)
