"""layers.While and the tensor array layers (create_array, array_write, array_read,
array_length, increment, less_than(cond=...)): the Fluid 1.x docs examples of While run
unchanged; a program Paddle 1.8.5 built gives Paddle's outputs in both schedules; the
array layers agree with numpy; errors name the op and the variable."""
import os

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18', 'while')


def _fresh():
    return fluid.Program(), fluid.Program()


def test_docs_example_counts_to_ten():
    main, startup = _fresh()
    with fluid.program_guard(main, startup):
        i = fluid.layers.fill_constant(shape=[1], dtype='int64', value=0)
        loop_len = fluid.layers.fill_constant(shape=[1], dtype='int64', value=10)
        cond = fluid.layers.less_than(x=i, y=loop_len)
        while_op = fluid.layers.While(cond=cond)
        with while_op.block():
            i = fluid.layers.increment(x=i, value=1, in_place=True)
            fluid.layers.less_than(x=i, y=loop_len, cond=cond)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        res = exe.run(main, feed={}, fetch_list=[i])
    np.testing.assert_array_equal(res[0], np.array([10], 'int64'))


@pytest.mark.parametrize('parallel', [False, True])
def test_docs_example_block_variables_are_new_each_step(parallel):
    main, startup = _fresh()
    with fluid.program_guard(main, startup):
        i = fluid.layers.fill_constant(shape=[1], dtype='int64', value=0)
        loop_len = fluid.layers.fill_constant(shape=[1], dtype='int64', value=10)
        one = fluid.layers.fill_constant(shape=[1], dtype='float32', value=1)
        data = fluid.data(name='data', shape=[1], dtype='float32')
        sums = fluid.layers.fill_constant(shape=[1], dtype='float32', value=0)
        cond = fluid.layers.less_than(x=i, y=loop_len)
        while_op = fluid.layers.While(cond=cond)
        with while_op.block():
            sums_tensor = fluid.layers.elementwise_add(x=data, y=data)
            fluid.layers.assign(input=sums_tensor, output=sums)
            i = fluid.layers.increment(x=i, value=1, in_place=True)
            data = fluid.layers.elementwise_add(x=data, y=one)
            fluid.layers.less_than(x=i, y=loop_len, cond=cond)
        exe = fluid.Executor(fluid.CPUPlace(), parallel=parallel, num_threads=2)
        exe.run(startup)
        res = exe.run(main, feed={'data': np.ones(1).astype('float32')}, fetch_list=sums)
    # `data` inside the block is a new variable at every step: the outer one stays 1.
    np.testing.assert_array_equal(res[0], np.array([2.0], 'float32'))


def test_while_op_lists_what_the_block_reads_and_writes():
    main, startup = _fresh()
    with fluid.program_guard(main, startup):
        i = fluid.layers.fill_constant([1], 'int64', 0)
        n = fluid.layers.fill_constant([1], 'int64', 3)
        acc = fluid.layers.fill_constant([1], 'float32', 0)
        cond = fluid.layers.less_than(i, n)
        loop = fluid.layers.While(cond)
        with loop.block():
            t = fluid.layers.cast(i, 'float32')
            fluid.layers.assign(fluid.layers.elementwise_add(acc, t), acc)
            fluid.layers.increment(i, in_place=True)
            fluid.layers.less_than(i, n, cond=cond)
    op = main.global_block().ops[-1]
    assert op.type == 'while'
    assert set(op.input('X')) == {i.name, n.name, acc.name}
    assert op.input('Condition') == [cond.name]
    assert set(op.output('Out')) == {i.name, acc.name, cond.name}
    assert len(op.output('StepScopes')) == 1
    exe = fluid.Executor(fluid.CPUPlace())
    got, = exe.run(main, fetch_list=[acc])
    np.testing.assert_array_equal(got, np.array([0.0 + 1.0 + 2.0], 'float32'))


def test_array_layers_against_numpy():
    main, startup = _fresh()
    rng = np.random.RandomState(3)
    xs = [rng.randn(2, 3).astype('float32') for _ in range(3)]
    with fluid.program_guard(main, startup):
        vs = [fluid.data('x%d' % k, [2, 3], 'float32') for k in range(3)]
        idx = [fluid.layers.fill_constant([1], 'int64', k) for k in (0, 1, 4)]
        arr = fluid.layers.array_write(vs[0], idx[0])
        fluid.layers.array_write(vs[1], idx[1], array=arr)
        fluid.layers.array_write(vs[2], idx[2], array=arr)  # grows to 5 items
        fluid.layers.array_write(vs[2], idx[0], array=arr)  # overwrites item 0
        length = fluid.layers.array_length(arr)
        r0 = fluid.layers.array_read(arr, idx[0])
        r1 = fluid.layers.array_read(arr, idx[1])
        r4 = fluid.layers.array_read(arr, idx[2])
        empty = fluid.layers.create_array('float32')
        n_empty = fluid.layers.array_length(empty)
    exe = fluid.Executor(fluid.CPUPlace())
    got = exe.run(main, feed={'x0': xs[0], 'x1': xs[1], 'x2': xs[2]},
                  fetch_list=[length, r0, r1, r4, n_empty])
    assert got[0].dtype == np.int64
    np.testing.assert_array_equal(got[0], [5])
    np.testing.assert_array_equal(got[1], xs[2])
    np.testing.assert_array_equal(got[2], xs[1])
    np.testing.assert_array_equal(got[3], xs[2])
    np.testing.assert_array_equal(got[4], [0])


def test_read_past_the_end_names_op_and_array():
    main, startup = _fresh()
    with fluid.program_guard(main, startup):
        x = fluid.layers.fill_constant([2], 'float32', 1.0)
        i = fluid.layers.fill_constant([1], 'int64', 0)
        j = fluid.layers.fill_constant([1], 'int64', 2)
        arr = fluid.layers.array_write(x, i)
        fluid.layers.array_read(arr, j)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(fluid.Error) as e:
        exe.run(main)
    msg = str(e.value)
    assert 'read_from_array' in msg and arr.name in msg and 'out of range' in msg, msg


def test_while_checks_its_condition():
    main, startup = _fresh()
    with fluid.program_guard(main, startup):
        i = fluid.layers.fill_constant([1], 'int64', 0)
        with pytest.raises(TypeError):
            fluid.layers.While(i)
        two = fluid.layers.fill_constant([2], 'bool', True)
        with pytest.raises(TypeError):
            fluid.layers.While(two)


@pytest.mark.parametrize('parallel', [False, True])
def test_while_over_an_array_matches_paddle_1_8_5(parallel):
    with open(os.path.join(DATA, 'program.pdmodel'), 'rb') as f:
        prog = fluid.Program.parse_from_string(f.read())
    with open(os.path.join(DATA, 'fetch.txt')) as f:
        fetch = f.read().split()
    want = np.load(os.path.join(DATA, 'expected.npz'))
    exe = fluid.Executor(fluid.CPUPlace(), parallel=parallel, num_threads=2)
    # A long loop before a short one: the block-0 array starts empty at every run.
    for k in (4, 2, 0, 1):
        got = exe.run(prog, feed={'x': want['x'], 'n': np.array([k], 'int64')},
                      fetch_list=fetch)
        for name, v in zip(('i', 'length', 'last', 'acc'), got):
            np.testing.assert_array_equal(np.asarray(v), want['%d_%s' % (k, name)],
                                          err_msg='%d %s' % (k, name))
