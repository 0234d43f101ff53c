"""fluid.layers.chunk_eval and fluid.evaluator.ChunkEvaluator against PaddlePaddle 1.8.5's
numbers (paddle18/chunk_eval/, written by paddle18/gen_chunk_eval.py from the same
programs): random tag sequences in every scheme, LoD and padded, with and without excluded
chunk types. Paddle is not needed."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_chunk_eval as gen  # noqa: E402


@pytest.fixture(scope='module')
def want():
    return dict(np.load(os.path.join(DATA, 'chunk_eval', 'expected.npz')))


@pytest.fixture(scope='module')
def progs():
    with pytest.warns(Warning, match='ChunkEvaluator is deprecated'):
        return gen.build(fluid)


def test_inputs_are_the_files():
    """The generator still draws the inputs the file holds (so build and data agree)."""
    data = gen.inputs()
    stored = dict(np.load(os.path.join(DATA, 'chunk_eval', 'expected.npz')))
    for k, v in data.items():
        np.testing.assert_array_equal(stored[k], v, err_msg=k)


@pytest.mark.parametrize('case', gen.CASES, ids=gen.case_name)
def test_chunk_eval_as_paddle18(want, progs, case):
    name = gen.case_name(case)
    prog, startup, fetch = progs[name]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    for b in range(gen.BATCHES):
        got = exe.run(prog, feed=gen.feed(fluid, want, name, b, case[1], fluid.CPUPlace()),
                      fetch_list=fetch)
        for k, v in enumerate(got):
            v = np.asarray(v)
            assert v.shape == (1,) and v.dtype == (np.float32 if k < 3 else np.int64)
        row = [float(np.asarray(v)[0]) for v in got]
        assert row == want[name + '_out'][b].tolist(), 'batch %d' % b
    assert want[name + '_out'][:, 5].sum() > 0, 'the data holds correct chunks'


def test_chunk_evaluator_as_paddle18(want, progs):
    prog, startup, ev = progs['evaluator']
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    ev.reset(exe)
    for b in range(gen.BATCHES):
        got = exe.run(prog, feed=gen.feed(fluid, want, 'evaluator', b, False, fluid.CPUPlace()),
                      fetch_list=ev.metrics)
        assert [float(np.asarray(v)[0]) for v in got] == want['evaluator_out'][b].tolist()
    got = ev.eval(exe)
    assert all(v.dtype == np.float32 and v.shape == (1,) for v in got)
    assert [float(v[0]) for v in got] == want['evaluator_out'][-1].tolist()
    ev.reset(exe)
    assert [float(v[0]) for v in ev.eval(exe)] == [0.0, 0.0, 0.0]


def test_layer_checks_its_arguments():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('x', [None, 1], 'int64', lod_level=1)
        f = fluid.data('f', [None, 1], 'float32', lod_level=1)
        with pytest.raises(ValueError, match='chunk_scheme'):
            fluid.layers.chunk_eval(x, x, 'BIO', 3)
        with pytest.raises(TypeError, match='int64'):
            fluid.layers.chunk_eval(f, x, 'IOB', 3)
        outs = fluid.layers.chunk_eval(x, x, 'IOB', 3)
        assert len(outs) == 6
        assert [o.dtype.name for o in outs] == ['float32'] * 3 + ['int64'] * 3


def test_bad_label_is_an_error_naming_the_op_and_variable():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 1], 'int64', lod_level=1)
        y = fluid.data('y', [None, 1], 'int64', lod_level=1)
        outs = fluid.layers.chunk_eval(x, y, 'IOB', 2)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    place = fluid.CPUPlace()
    feed = {'x': fluid.create_lod_tensor(np.array([[0], [1], [4]], 'int64'), [[3]], place),
            'y': fluid.create_lod_tensor(np.array([[0], [5], [4]], 'int64'), [[3]], place)}
    with pytest.raises(Exception, match=r'chunk_eval.*Label \(y\).*label 5 at row 1'):
        exe.run(main, feed=feed, fetch_list=list(outs))
