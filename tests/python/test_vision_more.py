"""unfold, im2sequence, random_crop, similarity_focus and spectral_norm against Paddle
1.8.5 (paddle18/vision_more/, written by paddle18/gen_vision_more.py from the same
programs, so Paddle is not needed here): outputs, LoD, the input and weight gradients and
random_crop's draws over two chained runs; and the layers' argument checks and the ops'
errors naming op and variable."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_vision_more as gen  # noqa: E402

REF = np.load(os.path.join(DATA, 'vision_more', 'expected.npz'))


@pytest.mark.parametrize('builder,case,runs', gen.all_cases(),
                         ids=[c for _, c, _ in gen.all_cases()])
def test_as_paddle18(builder, case, runs):
    got = gen.run_case(fluid, builder, case, runs)
    want = sorted(k for k in REF.files if k.startswith(case + '/'))
    assert sorted(got) == want
    for k in want:
        tol = 1e-5 if REF[k].dtype == np.float32 else 1e-12
        if REF[k].dtype.kind == 'f':
            np.testing.assert_allclose(got[k], REF[k], rtol=tol, atol=tol, err_msg=k)
        else:
            np.testing.assert_array_equal(got[k], REF[k], err_msg=k)


def _run(main, startup, feed, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        return exe.run(main, feed=feed, fetch_list=fetch)


def test_layer_argument_checks():
    L = fluid.layers
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('x', [2, 3, 4, 4], 'float32')
        with pytest.raises(ValueError, match='paddings'):
            L.unfold(x, 2, paddings=[1, 2, 3])
        with pytest.raises(ValueError, match='4-D'):
            L.unfold(fluid.data('v', [2, 3, 4], 'float32'), 2)
        with pytest.raises(TypeError, match='float32 or float64'):
            L.im2sequence(fluid.data('i', [2, 3, 4, 4], 'int32'), 2)
        with pytest.raises(ValueError, match='shape'):
            L.random_crop(x, [])
        with pytest.raises(ValueError, match="'seed'"):
            L.random_crop(x, [2, 2], seed=1.5)
        with pytest.raises(ValueError, match='axis'):
            L.similarity_focus(x, 0, [1])
        with pytest.raises(ValueError, match='dim 0 or 1'):
            L.spectral_norm(L.create_parameter([2, 3, 4], 'float32'), dim=2)
        with pytest.raises(TypeError, match='eps'):
            L.spectral_norm(L.create_parameter([2, 3], 'float32'), eps=1)


def test_shapes_at_build_time():
    L = fluid.layers
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('x', [2, 3, 5, 6], 'float32')
        assert list(L.unfold(x, [2, 3], 1, [1, 0], 1).shape) == [2, 18, 24]
        seq = L.im2sequence(x, [2, 3], 1, 0)
        assert list(seq.shape) == [32, 18] and seq.lod_level == 1
        assert list(L.random_crop(x, [4, 4]).shape) == [2, 3, 4, 4]
        assert list(L.similarity_focus(x, 1, [0]).shape) == [2, 3, 5, 6]


def test_random_crop_seed_variable_chains_runs():
    """The seed variable carries SeedOut from one run into the next: runs differ, and two
    programs with the same seed agree."""
    outs = []
    for _ in range(2):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = fluid.data('x', [8, 30], 'float32')
            y = fluid.layers.random_crop(x, [5], seed=7)
        exe = fluid.Executor(fluid.CPUPlace())
        xv = np.tile(np.arange(30, dtype='float32'), (8, 1))
        with fluid.scope_guard(fluid.Scope()):
            exe.run(startup)
            outs.append([exe.run(main, feed={'x': xv}, fetch_list=[y])[0] for _ in range(3)])
    for a, b in zip(outs[0], outs[1]):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(outs[0][0], outs[0][1])


def test_op_errors_name_op_and_variable():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('img_in', [2, 1, 3, 3], 'float32')
        y = fluid.data('real_size', [2, 2], 'float32')
        out = fluid.layers.im2sequence(x, 2, input_image_size=y)
    with pytest.raises(Exception) as e:
        _run(main, startup, {'img_in': np.zeros((2, 1, 3, 3), 'float32'),
                             'real_size': np.array([[3, 3], [-2, 3]], 'float32')}, [out])
    assert 'im2sequence' in str(e.value) and 'real_size' in str(e.value)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('sim', [1, 2, 3, 4], 'float32')
        with pytest.raises(Exception) as e:
            fluid.layers.similarity_focus(x, 2, [5])
    assert 'similarity_focus' in str(e.value) and 'sim' in str(e.value)
