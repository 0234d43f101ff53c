"""Fluid 1.x's data feeding against PaddlePaddle 1.8.5: layers.py_reader (read_file,
double_buffer, decorate_paddle_reader, decorate_tensor_provider, LoD ids),
create_py_reader_by_data, io.PyReader iterable and not, and io.multiprocess_reader,
each training two epochs with start / core.EOFException / reset. The scripts are paddle18/gen_readers.py's; REF
holds the losses Paddle 1.8.5 printed for them (gen_readers.py run under Paddle), so
Paddle is not needed here. And the argument checks and errors of these APIs."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18'))
import gen_readers as gen  # noqa: E402

REF = {
    'py_reader': [[0.08754631, 0.32287118, 0.55625284], [0.08442893, 0.20989682, 0.56626421]],
    'py_reader_tensor': [[0.08754631, 0.32287118, 0.55625284], [0.08442893, 0.20989682, 0.56626421]],
    'py_reader_lod': [[0.16739593, 0.18699698, 0.43992251], [0.1814128, 0.19977064, 0.38628817]],
    'by_data': [[0.08754631, 0.32287118, 0.55625284], [0.08442893, 0.20989682, 0.56626421]],
    'pyreader_iterable': [[0.08754631, 0.32287118, 0.55625284], [0.08442893, 0.20989682, 0.56626421]],
    'pyreader_non_iterable': [[0.08754631, 0.32287118, 0.55625284], [0.08442893, 0.20989682, 0.56626421]],
    'multiprocess': [[0.07956611, 0.37508026, 0.40529859], [0.17115973, 0.36079684, 0.27201539]],
}


@pytest.mark.parametrize('case', gen.CASES)
def test_training_losses_as_paddle18(case):
    got = gen.run(fluid, case)
    want = REF[case]
    assert [len(e) for e in got] == [len(e) for e in want] == [3, 3]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_read_file_declares_the_reader_variables():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        reader = fluid.layers.py_reader(capacity=2, shapes=[[-1, 3], [-1, 1]],
                                        dtypes=['float32', 'int64'], lod_levels=[1, 0])
        assert fluid.layers.double_buffer(reader) is reader
        x, y = fluid.layers.read_file(reader)
        one = fluid.layers.py_reader(capacity=2, shapes=[[-1, 5]], dtypes=['float32'])
        z = fluid.layers.read_file(one)
    assert tuple(x.shape) == (-1, 3) and x.dtype.name == 'float32' and x.lod_level == 1
    assert tuple(y.shape) == (-1, 1) and y.dtype.name == 'int64' and y.lod_level == 0
    assert isinstance(z, fluid.Variable) and tuple(z.shape) == (-1, 5)
    assert x.name in main.global_block().vars and z.name in main.global_block().vars
    with fluid.program_guard(main, startup):
        with pytest.raises(ValueError, match='already read'):
            fluid.layers.read_file(reader)


def test_the_eof_reset_cycle_and_its_errors():
    main, startup, loss, reader, _ = gen.build(fluid, 'py_reader')
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        with pytest.raises(fluid.FailedPreconditionError, match='start'):
            exe.run(main, fetch_list=[loss])
        reader.start()
        with pytest.raises(fluid.FailedPreconditionError, match='already started'):
            reader.start()
        for _ in range(3):
            exe.run(main, fetch_list=[loss])
        with pytest.raises(fluid.core.EOFException):
            exe.run(main, fetch_list=[loss])
        # until reset and start, every run says the pass has ended
        with pytest.raises(fluid.core.EOFException):
            exe.run(main, fetch_list=[loss])
        reader.reset()
        reader.start()
        exe.run(main, fetch_list=[loss])
        # reset in the middle of a pass starts the next one from the beginning
        reader.reset()
        reader.start()
        n = 0
        try:
            while True:
                exe.run(main, fetch_list=[loss])
                n += 1
        except fluid.core.EOFException:
            reader.reset()
        assert n == 3


def _by_data_program(batches):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xd = fluid.data('x', [None, gen.D], 'float32')
        reader = fluid.layers.create_py_reader_by_data(capacity=2, feed_list=[xd])
        x = fluid.layers.read_file(reader)
        out = fluid.layers.reduce_sum(x)
    reader.decorate_batch_generator(lambda: iter(batches))
    return main, startup, out, reader, x


def test_create_py_reader_by_data_wrong_shape_names_the_variable():
    main, startup, out, reader, x = _by_data_program([(np.ones((2, gen.D), 'float32'),),
                                                      (np.ones((2, gen.D + 1), 'float32'),)])
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        reader.start()
        got, = exe.run(main, fetch_list=[out])
        assert float(np.ravel(got)[0]) == 2 * gen.D
        with pytest.raises(fluid.InvalidArgumentError) as e:
            exe.run(main, fetch_list=[out])
        assert x.name in str(e.value) and '(2, 5)' in str(e.value)
        reader.reset()
        # nothing is lost: the next pass reads the good batch again
        reader.start()
        got, = exe.run(main, fetch_list=[out])
        assert float(np.ravel(got)[0]) == 2 * gen.D


def test_py_reader_batch_of_another_shape_flows_to_the_ops():
    """A py_reader declared by shapes checks no batch against them (Fluid 1.8's sets
    need_check_feed only for a feed_list of checked variables): a wider batch reaches
    the ops, which take it here, and the step sums what it was given."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        reader = fluid.layers.py_reader(capacity=2, shapes=[[-1, gen.D], [-1, 1]],
                                        dtypes=['float32', 'float32'])
        x, y = fluid.layers.read_file(reader)
        out = fluid.layers.reduce_sum(fluid.layers.elementwise_add(
            fluid.layers.reduce_sum(x, dim=1, keep_dim=True), y))
    good = (np.ones((2, gen.D), 'float32'), np.ones((2,), 'float32'))  # y viewed as [2, 1]
    bad = (np.ones((2, gen.D + 1), 'float32'), np.ones((2, 1), 'float32'))
    reader.decorate_tensor_provider(lambda: iter([good, bad]))
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        reader.start()
        got, = exe.run(main, fetch_list=[out])
        assert float(np.ravel(got)[0]) == 2 * (gen.D + 1)
        got, = exe.run(main, fetch_list=[out])
        assert float(np.ravel(got)[0]) == 2 * (gen.D + 2)


def test_pyreader_iterable_wrong_shape_names_the_variable():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('img', [None, 3], 'float32')
        out = fluid.layers.reduce_sum(x)
    reader = fluid.io.PyReader(feed_list=[x], capacity=2, iterable=True)
    reader.decorate_batch_generator(lambda: iter([(np.ones((2, 4), 'float32'),)]),
                                    places=fluid.cpu_places(1))
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        for data in reader():
            with pytest.raises(fluid.InvalidArgumentError, match="'img'"):
                exe.run(main, feed=data, fetch_list=[out])


def test_create_py_reader_by_data_wrong_dtype_names_the_variable():
    main, startup, out, reader, x = _by_data_program([(np.ones((2, gen.D), 'int64'),)])
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        reader.start()
        with pytest.raises(fluid.InvalidArgumentError) as e:
            exe.run(main, fetch_list=[out])
    assert x.name in str(e.value) and 'int64' in str(e.value) and 'float32' in str(e.value)


def test_batch_generator_with_the_wrong_number_of_items_names_the_variables():
    main, startup, out, reader, x = _by_data_program([(np.ones((2, gen.D), 'float32'),
                                                      np.ones((2, 1), 'float32'))])
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        reader.start()
        with pytest.raises(ValueError, match=x.name):
            exe.run(main, fetch_list=[out])


def test_pyreader_lod_batches_and_return_list():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.layers.data('ids', [1], dtype='int64', lod_level=1)
        out = fluid.layers.sequence_pool(fluid.layers.cast(ids, 'float32'), 'sum')
    reader = fluid.io.PyReader(feed_list=[ids], capacity=2, return_list=True)
    reader.decorate_sample_list_generator(
        lambda: iter([[([1, 2],), ([3],), ([4, 5, 6],)]]), places=fluid.cpu_places(1))
    got = list(reader())
    assert len(got) == 1 and isinstance(got[0], list) and len(got[0]) == 1
    t = got[0][0]
    assert t.recursive_sequence_lengths() == [[2, 1, 3]]
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        res, = exe.run(main, feed={'ids': t}, fetch_list=[out])
    np.testing.assert_array_equal(res.reshape(-1), [3, 3, 15])


def test_argument_checks():
    L = fluid.layers
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.layers.data('x', [2], dtype='float32')
        with pytest.raises(ValueError, match='capacity'):
            fluid.io.PyReader(feed_list=[x])
        with pytest.raises(ValueError, match='capacity'):
            fluid.io.DataLoader.from_generator(feed_list=[x], capacity=0)
        with pytest.raises(ValueError, match='capacity'):
            L.py_reader(capacity=None, shapes=[[-1, 2]], dtypes=['float32'])
        with pytest.raises(ValueError, match='one item per variable'):
            L.py_reader(capacity=2, shapes=[[-1, 2], [-1, 1]], dtypes=['float32'])
        with pytest.raises(TypeError, match='shapes'):
            L.py_reader(capacity=2, shapes=[[-1, 2.5]], dtypes=['float32'])
        with pytest.raises(ValueError, match='feed_list'):
            L.create_py_reader_by_data(capacity=2, feed_list=[])
        with pytest.raises(TypeError, match='reader'):
            L.read_file(x)
        with pytest.raises(TypeError, match='reader'):
            L.double_buffer(x)
        r = L.py_reader(capacity=2, shapes=[[-1, 2]], dtypes=['float32'])
        with pytest.raises(fluid.FailedPreconditionError, match='read_file'):
            r.start()
        with pytest.raises(TypeError, match='reader'):
            r.decorate_paddle_reader([1, 2])
        it = fluid.io.PyReader(feed_list=[x], capacity=2)
        assert it.iterable
        with pytest.raises(ValueError, match='places'):
            it.decorate_batch_generator(lambda: iter([]))
        with pytest.raises(ValueError, match='batch_size'):
            it.decorate_sample_generator(lambda: iter([]), 0, places=fluid.cpu_places(1))
        with pytest.raises(fluid.FailedPreconditionError):
            it.start()
        ni = fluid.io.PyReader(feed_list=[x], capacity=2, iterable=False)
        ni.decorate_batch_generator(lambda: iter([]))
        with pytest.raises(fluid.FailedPreconditionError):
            list(ni())


def test_default_collate_fn():
    f = fluid.io.default_collate_fn
    assert f is fluid.reader.default_collate_fn
    a = [np.full([2], i, 'float32') for i in range(3)]
    out = f(a)
    assert len(out) == 1 and out[0].shape == (3, 2)
    out = f([(np.array([i]), np.array([i, i])) for i in range(4)])
    assert [o.shape for o in out] == [(4, 1), (4, 2)]
    np.testing.assert_array_equal(out[1][:, 0], [0, 1, 2, 3])
    with pytest.raises(ValueError, match='no samples'):
        f([])


def test_fluid_reader_names():
    assert fluid.reader.PyReader is fluid.io.PyReader
    assert fluid.reader.DataLoader is fluid.io.DataLoader


def _count(n, tag):
    def reader():
        for i in range(n):
            yield (tag, i)
    return reader


def test_multiprocess_reader_pipe_takes_the_readers_in_turn():
    r = fluid.io.multiprocess_reader([_count(3, 'a'), _count(1, 'b'), _count(2, 'c')])
    for _ in range(2):  # each call starts the processes afresh
        assert list(r()) == [('a', 0), ('b', 0), ('c', 0), ('a', 1), ('c', 1), ('a', 2)]
    assert fluid.reader.multiprocess_reader is fluid.io.multiprocess_reader


def test_multiprocess_reader_queue_yields_every_sample():
    r = fluid.io.multiprocess_reader([_count(50, 'a'), _count(30, 'b')], use_pipe=False,
                                     queue_size=4)
    got = list(r())
    assert sorted(got) == sorted([('a', i) for i in range(50)] + [('b', i) for i in range(30)])
    # each reader's own samples keep their order
    assert [s for s in got if s[0] == 'b'] == [('b', i) for i in range(30)]


def _failing():
    yield 1
    raise RuntimeError('disk gone')


@pytest.mark.parametrize('use_pipe', [True, False])
def test_multiprocess_reader_failure_names_the_reader(use_pipe):
    r = fluid.io.multiprocess_reader([_count(2, 'a'), _failing], use_pipe=use_pipe)
    with pytest.raises(ValueError, match=r'readers\[1\].*RuntimeError: disk gone'):
        list(r())


@pytest.mark.parametrize('use_pipe', [True, False])
def test_multiprocess_reader_stopped_early_ends_its_processes(use_pipe):
    def endless():
        i = 0
        while True:
            yield i
            i += 1
    it = fluid.io.multiprocess_reader([endless, endless], use_pipe=use_pipe, queue_size=2)()
    got = [next(it) for _ in range(4)]
    if use_pipe:
        assert got == [0, 0, 1, 1]
    else:
        assert sorted(got)[0] == 0 and all(isinstance(v, int) for v in got)
    it.close()
    import multiprocessing
    assert not [p for p in multiprocessing.active_children() if p.is_alive()]


def test_multiprocess_reader_argument_checks():
    with pytest.raises(ValueError, match='non-empty list'):
        fluid.io.multiprocess_reader([])
    with pytest.raises(ValueError, match='non-empty list'):
        fluid.io.multiprocess_reader((_count(1, 'a'),))
    with pytest.raises(TypeError, match=r'readers\[1\]'):
        fluid.io.multiprocess_reader([_count(1, 'a'), 3])
    with pytest.raises(ValueError, match='queue_size'):
        fluid.io.multiprocess_reader([_count(1, 'a')], use_pipe=False, queue_size=0)
    r = fluid.io.multiprocess_reader([lambda: iter([1, None])])
    with pytest.raises(ValueError, match='None'):
        list(r())
