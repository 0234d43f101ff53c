"""shard_index, continuous_value_model and filter_by_instag against Paddle 1.8.5
(paddle18/ctr_layers/, written by paddle18/gen_ctr_layers.py from the same programs, so
Paddle is not needed here): outputs, their LoD and the input gradients; and the layers'
argument checks and the ops' errors naming op and variable."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_ctr_layers as gen  # noqa: E402

REF = np.load(os.path.join(DATA, 'ctr_layers', 'expected.npz'))


@pytest.mark.parametrize('case', sorted(gen.CASES))
def test_as_paddle18(case):
    got = gen.run_case(fluid, case)
    want = sorted(k for k in REF.files if k.startswith(case + '/'))
    assert sorted(got) == want
    for k in want:
        assert got[k].shape == REF[k].shape, k
        if REF[k].dtype.kind == 'f':
            np.testing.assert_allclose(got[k], REF[k], rtol=1e-5, atol=1e-6, err_msg=k)
        else:
            np.testing.assert_array_equal(got[k], REF[k], err_msg=k)


def test_layer_argument_checks():
    L = fluid.layers
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        lab = fluid.data('lab', [4, 1], 'int64')
        with pytest.raises(ValueError, match='shard_id'):
            L.shard_index(lab, 20, 2, 2)
        with pytest.raises(TypeError, match='int32 or int64'):
            L.shard_index(fluid.data('f', [4, 1], 'float32'), 20, 2, 0)
        with pytest.raises(TypeError, match='cvm'):
            L.continuous_value_model(fluid.data('e', [4, 5], 'float32'), lab)
        with pytest.raises(TypeError, match='ins_tag'):
            L.filter_by_instag(fluid.data('i', [4, 3], 'float32'),
                               fluid.data('t', [4, 1], 'int32'), lab, False)
        y = L.continuous_value_model(fluid.data('e2', [4, 5], 'float32'),
                                     fluid.data('c2', [4, 2], 'float32'), False)
        assert list(y.shape) == [4, 3]
        assert list(L.shard_index(lab, 20, 2, 1).shape) == [4, 1]


def test_shard_index_error_names_op_and_variable():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        lab = fluid.data('lab', [3, 1], 'int64')
        out = fluid.layers.shard_index(lab, 10, 2, 0)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        with pytest.raises(Exception) as e:
            exe.run(main, feed={'lab': np.array([[1], [10], [2]], 'int64')}, fetch_list=[out])
    assert 'shard_index' in str(e.value) and 'lab' in str(e.value)


def test_filter_by_instag_error_names_op_and_variable():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ins = fluid.data('ins', [-1, 2], 'float32')
        tag = fluid.data('tag', [-1, 1], 'int64')
        out, _ = fluid.layers.filter_by_instag(ins, tag, fluid.data('flt', [-1], 'int64'), False)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        with pytest.raises(Exception) as e:
            exe.run(main, feed={'ins': np.zeros((2, 2), 'float32'),
                                'tag': np.array([[1], [2]], 'int64'),
                                'flt': np.array([1], 'int64')}, fetch_list=[out])
    assert 'filter_by_instag' in str(e.value) and 'tag' in str(e.value)
