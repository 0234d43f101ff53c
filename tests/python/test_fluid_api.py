"""Fluid 1.x APIs that PaddlePaddle book scripts use, each against Fluid's documented
behaviour (and, where noted, the numbers PaddlePaddle 1.8.5 prints on this machine)."""
import random

import numpy as np
import pytest

import rill as fluid
import rill.layers as L


def run(fetch, feed=None, program=None):
    exe = fluid.Executor()
    exe.run(fluid.default_startup_program())
    return exe.run(program or fluid.default_main_program(), feed=feed or {}, fetch_list=fetch)


# ----------------------------------------------------------------- fluid.data ----

def test_fluid_data_keeps_the_batch_dim_and_checks_feeds():
    x = fluid.data('x', shape=[None, 3])
    assert x.shape == (-1, 3) and x.is_data and x.need_check_feed and x.stop_gradient
    y = L.scale(x, 2.0)
    got, = run([y], {'x': np.ones((4, 3), 'float32')})
    assert got.shape == (4, 3)
    exe = fluid.Executor()
    with pytest.raises(fluid.InvalidArgumentError) as e:
        exe.run(feed={'x': np.ones((4, 5), 'float32')}, fetch_list=[y])
    assert "'x'" in str(e.value) and '(4, 5)' in str(e.value) and '(-1, 3)' in str(e.value)
    with pytest.raises(fluid.InvalidArgumentError, match=r'\(4, 3, 1\)'):
        exe.run(feed={'x': np.ones((4, 3, 1), 'float32')}, fetch_list=[y])


def test_layers_data_feeds_are_not_checked_against_the_shape():
    label = L.data('label', [1], dtype='int64')
    assert label.shape == (-1, 1) and label.is_data and not label.need_check_feed
    y = L.scale(L.cast(label, 'float32'), 2.0)
    # Fluid takes labels [N] for layers.data(shape=[1]); rill views them as [N, 1]
    got, = run([y], {'label': np.array([1, 2, 3, 4], 'int64')})
    assert got.reshape(-1).tolist() == [2, 4, 6, 8]
    strict = fluid.data('strict', shape=[None, 1], dtype='int64')
    z = L.scale(L.cast(strict, 'float32'), 2.0)
    with pytest.raises(fluid.InvalidArgumentError, match="'strict'"):
        fluid.Executor().run(feed={'strict': np.array([1, 2], 'int64')}, fetch_list=[z])


def test_second_data_with_the_same_name_returns_the_variable():
    a = fluid.data('a', shape=[None, 3])
    assert fluid.data('a', shape=[None, 3]) is a
    b = L.data('b', [2], dtype='int64')
    assert L.data('b', [2], dtype='int64') is b
    with pytest.raises(ValueError, match=r"'a' already exists as shape \[-1, 3\]"):
        fluid.data('a', shape=[None, 4])
    with pytest.raises(ValueError, match='int64'):
        L.data('b', [2], dtype='float32')


# ----------------------------------------------------------------- embedding ----

def test_fluid_embedding_takes_ids_without_a_trailing_one():
    ids = fluid.data('ids', shape=[None], dtype='int64')
    emb = fluid.embedding(ids, size=[10, 4], param_attr='table')
    assert [op.type for op in fluid.default_main_program().global_block().ops] == \
        ['lookup_table_v2']
    assert emb.shape == (-1, 4)
    got, = run([emb], {'ids': np.array([1, 2, 7], 'int64')})
    table = np.array(fluid.global_scope().find_var('table').get_tensor())
    np.testing.assert_array_equal(got, table[[1, 2, 7]])


def test_layers_embedding_gives_fluid_shapes():
    ids = L.data('ids', [1], dtype='int64')
    emb = L.embedding(ids, size=[10, 4])
    assert emb.shape == (-1, 4)
    assert fluid.default_main_program().global_block().ops[-1].type == 'lookup_table'
    got, = run([emb], {'ids': np.array([[1], [2], [3]], 'int64')})
    assert got.shape == (3, 4)
    # Fluid 1.x refuses ids without the trailing 1 ("The last dimensions of the 'Ids'
    # tensor must be 1"), where rill used to give the shape (4,).
    flat = fluid.data('flat', shape=[None], dtype='int64')
    with pytest.raises(fluid.InvalidArgumentError, match='fluid.embedding'):
        L.embedding(flat, size=[10, 4])


# ------------------------------------------------------------------- readers ----

def numbers(n):
    def reader():
        for i in range(n):
            yield i
    return reader


def test_batch_and_shuffle():
    assert fluid.io.batch is fluid.reader.batch
    assert list(fluid.io.batch(numbers(7), 3)()) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(fluid.io.batch(numbers(7), 3, drop_last=True)()) == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match='batch_size'):
        fluid.io.batch(numbers(3), 0)
    random.seed(3)
    got = list(fluid.io.shuffle(numbers(10), 4)())
    assert sorted(got) == list(range(10)) and got != list(range(10))
    # buffers of 4: each block of 4 stays together
    assert sorted(got[:4]) == [0, 1, 2, 3] and sorted(got[4:8]) == [4, 5, 6, 7]


def test_reader_decorators():
    r = fluid.reader
    assert list(r.buffered(numbers(50), 4)()) == list(range(50))
    assert list(r.chain(numbers(2), numbers(3))()) == [0, 1, 0, 1, 2]
    assert list(r.firstn(numbers(10), 3)()) == [0, 1, 2]
    assert list(r.map_readers(lambda a, b: a * 10 + b, numbers(3), numbers(3))()) == [0, 11, 22]

    def pairs():
        for i in range(3):
            yield (i, -i)
    assert list(r.compose(pairs, numbers(3))()) == [(0, 0, 0), (1, -1, 1), (2, -2, 2)]
    with pytest.raises(r.ComposeNotAligned):
        list(r.compose(pairs, numbers(4))())
    assert len(list(r.compose(pairs, numbers(4), check_alignment=False)())) == 3
    assert list(r.xmap_readers(lambda x: x * 2, numbers(40), 4, 8, order=True)()) == \
        [2 * i for i in range(40)]
    assert sorted(r.xmap_readers(lambda x: x * 2, numbers(40), 4, 8)()) == \
        [2 * i for i in range(40)]


def test_reader_errors_reach_the_consumer():
    def bad():
        yield 1
        raise IOError('disk gone')
    with pytest.raises(IOError, match='disk gone'):
        list(fluid.reader.buffered(bad, 2)())

    def boom(x):
        raise KeyError('mapper failed')
    with pytest.raises(KeyError, match='mapper failed'):
        list(fluid.reader.xmap_readers(boom, numbers(5), 2, 2)())


# --------------------------------------------------------------- DataFeeder ----

def test_data_feeder_builds_what_the_feed_check_accepts():
    a = fluid.data('a', shape=[None], dtype='int64', lod_level=1)
    b = L.data('b', shape=[1], dtype='int64', lod_level=1)
    c = fluid.data('c', shape=[None, 1], dtype='int64', lod_level=1)
    feeder = fluid.DataFeeder(feed_list=[a, b, c], place=fluid.CPUPlace())
    feed = feeder.feed([([1, 2], [1, 2], [1, 2]), ([3, 4, 5], [3, 4, 5], [3, 4, 5])])
    # PaddlePaddle 1.8.5's DataFeeder: a (5,), b (5, 1), c (5, 1), lod [[0, 2, 5]]
    assert feed['a'][0].shape == (5,) and feed['a'][1] == [[0, 2, 5]]
    assert feed['b'][0].shape == (5, 1) and feed['c'][0].shape == (5, 1)
    outs = [L.scale(L.cast(v, 'float32'), 1.0) for v in (a, b, c)]
    got = run(outs, feed)
    for g in got:
        assert g.reshape(-1).tolist() == [1, 2, 3, 4, 5]


def test_data_feeder_two_lod_levels():
    w = fluid.data('w', shape=[None, 1], dtype='int64', lod_level=2)
    feed = fluid.DataFeeder([w], fluid.CPUPlace()).feed([([[1, 2], [3]],), ([[4]],)])
    arr, lod = feed['w']
    assert arr.shape == (4, 1) and lod == [[0, 2, 3], [0, 2, 3, 4]]


# ------------------------------------------------------------------- layers ----

def test_fill_constant_batch_size_like():
    x = fluid.data('x', shape=[None, 3])
    out = L.fill_constant_batch_size_like(x, shape=[1, 5], dtype='float32', value=2.5)
    assert out.shape == (-1, 5)
    got, = run([out], {'x': np.zeros((4, 3), 'float32')})
    np.testing.assert_array_equal(got, np.full((4, 5), 2.5, 'float32'))


def conv2d_transpose_ref(x, w, stride, pad):
    n, c, h, wd = x.shape
    _, oc, kh, kw = w.shape
    oh, ow = (h - 1) * stride - 2 * pad + kh, (wd - 1) * stride - 2 * pad + kw
    full = np.zeros((n, oc, oh + 2 * pad, ow + 2 * pad))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw] += \
                np.einsum('nc,cokl->nokl', x[:, :, i, j], w)
    return full[:, :, pad:pad + oh, pad:pad + ow]


def test_conv2d_transpose_against_numpy():
    x = fluid.data('x', shape=[None, 2, 3, 3])
    y = L.conv2d_transpose(x, num_filters=3, filter_size=3, stride=2, padding=1,
                           param_attr='w', bias_attr='b')
    assert y.shape == (-1, 3, 5, 5)
    # filter_size derived from output_size as Fluid derives it
    z = L.conv2d_transpose(x, num_filters=1, output_size=[7, 7], stride=2, bias_attr=False)
    assert z.shape == (-1, 1, 7, 7)
    xs = np.random.RandomState(0).randn(2, 2, 3, 3).astype('float32')
    got, = run([y], {'x': xs})
    w = np.array(fluid.global_scope().find_var('w').get_tensor())
    b = np.array(fluid.global_scope().find_var('b').get_tensor())
    want = conv2d_transpose_ref(xs.astype('float64'), w.astype('float64'), 2, 1) + \
        b.reshape(1, -1, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv2d_transpose_filter_from_output_size():
    x = fluid.data('x', shape=[None, 2, 4, 4])
    L.conv2d_transpose(x, num_filters=1, output_size=9, stride=2, padding=0,
                       param_attr='w', bias_attr=False)
    # (9 - (4 - 1) * 2 + 0 - 1) // 1 + 1 = 3
    assert fluid.default_main_program().global_block().var('w').shape == (2, 1, 3, 3)


def test_shape_and_expand():
    x = fluid.data('x', shape=[None, 2, 3])
    s = L.shape(x)
    assert s.dtype == np.int32
    t = L.expand(x, [1, 3, 2])
    assert t.shape == (-1, 6, 6)
    xs = np.arange(24, dtype='float32').reshape(4, 2, 3)
    got_s, got_t = run([s, t], {'x': xs})
    assert got_s.tolist() == [4, 2, 3]
    np.testing.assert_array_equal(got_t, np.tile(xs, (1, 3, 2)))


def test_expand_times_may_mix_ints_and_variables():
    """Fluid's list of expand_times holding Variables: the attribute keeps -1 where a
    Variable stands, every entry travels in expand_times_tensor, the dims given as ints
    are known when the program is built (Paddle 1.8.5 gives (-1, 6) here), and the
    gradient sums the tiles."""
    x = fluid.data('x', shape=[None, 3])
    x.stop_gradient = False
    t = L.fill_constant([1], 'int32', 2)
    y = L.expand(x, [t, 2])
    assert y.shape == (-1, 6)
    op = fluid.default_main_program().global_block().ops[-1]
    assert op.type == 'expand'
    assert op.attr('expand_times') == [-1, 2]
    assert len(op.input('expand_times_tensor')) == 2
    assert op.input('expand_times_tensor')[0] == t.name
    gx, = fluid.gradients(L.reduce_sum(y * y), [x])
    xs = np.arange(6, dtype='float32').reshape(2, 3)
    got, got_gx = run([y, gx], {'x': xs})
    np.testing.assert_array_equal(got, np.tile(xs, (2, 2)))
    np.testing.assert_allclose(got_gx, 8 * xs)
    with pytest.raises(ValueError, match='positive'):
        L.expand(x, [t, 0])


def test_expand_broadcasts_a_unit_dim_and_tiles_the_batch():
    x = fluid.data('x', shape=[2, 1])
    e1 = L.expand(x, [1, 4])
    e2 = L.expand(x, [3, 2])
    xs = np.array([[1.0], [2.0]], 'float32')
    g1, g2 = run([e1, e2], {'x': xs})
    np.testing.assert_array_equal(g1, np.tile(xs, (1, 4)))
    np.testing.assert_array_equal(g2, np.tile(xs, (3, 2)))


def test_expand_trains_as_paddle18():
    """Gradients flow through expand (times as a list and as an int32 Variable): one SGD
    step gives Paddle 1.8.5's parameters (its numbers, recorded on the same inputs)."""
    x = fluid.data('x', [None, 2, 3], 'float32')
    w = L.create_parameter([2, 3], 'float32', name='w',
                           default_initializer=fluid.initializer.NumpyArrayInitializer(
                               np.arange(6, dtype='float32').reshape(2, 3) / 7))
    b = L.create_parameter([3, 1, 1], 'float32', name='b',
                           default_initializer=fluid.initializer.NumpyArrayInitializer(
                               np.array([0.5, -1, 2], 'float32').reshape(3, 1, 1)))
    e = L.expand(L.elementwise_mul(x, w), [2, 1, 3])
    e2 = L.expand(w, L.fill_constant([2], 'int32', 2))
    e3 = L.expand(b, [2, 2, 9])
    assert (e.shape, e2.shape, e3.shape) == ((-1, 2, 9), (-1, -1), (6, 2, 9))
    c = fluid.data('c', [None, 2, 9], 'float32')
    loss = L.reduce_sum(L.elementwise_mul(e, c)) + L.reduce_sum(L.elementwise_mul(e2, e2)) + \
        L.reduce_sum(L.elementwise_mul(e3, c))
    fluid.optimizer.SGD(1.0).minimize(loss)
    rng = np.random.RandomState(5)
    xv = rng.rand(3, 2, 3).astype('float32')
    cv = rng.rand(6, 2, 9).astype('float32')
    got = run([e, e2, e3, loss], {'x': xv, 'c': cv})
    assert [g.shape for g in got] == [(6, 2, 9), (4, 6), (6, 2, 9), (1,)]
    w0 = np.arange(6, dtype='float32').reshape(2, 3) / 7
    np.testing.assert_array_equal(got[0], np.tile(xv * w0, (2, 1, 3)))
    np.testing.assert_array_equal(got[1], np.tile(w0, (2, 2)))
    assert float(got[1].astype('float64').sum()) == pytest.approx(8.571428835391998, rel=1e-7)
    assert float(got[3][0]) == pytest.approx(45.4996337890625, rel=1e-6)
    scope = fluid.global_scope()
    np.testing.assert_allclose(
        np.array(scope.find_var('w').get_tensor()).ravel(),
        [-5.549586772918701, -5.285584449768066, -6.925204277038574, -7.546727657318115,
         -6.750161170959473, -9.269694328308105], rtol=1e-6)
    np.testing.assert_allclose(
        np.array(scope.find_var('b').get_tensor()).ravel(),
        [-16.167814254760742, -19.524812698364258, -19.30571174621582], rtol=1e-6)


def test_sequence_mask():
    lens = fluid.data('lens', shape=[None], dtype='int64')
    m = L.sequence_mask(lens, maxlen=5, dtype='float32')
    assert m.shape == (-1, 5) and m.dtype == np.float32
    got, = run([m], {'lens': np.array([0, 2, 5], 'int64')})
    want = (np.arange(5)[None, :] < np.array([0, 2, 5])[:, None]).astype('float32')
    np.testing.assert_array_equal(got, want)


def test_sequence_mask_without_maxlen_or_with_a_variable_as_paddle18():
    """maxlen None is max(x) at each run; a Variable maxlen is read at run time. The
    masks are Paddle 1.8.5's on the same inputs."""
    x = fluid.data('x', [None], 'int64')
    x2 = fluid.data('x2', [None, 3], 'int32')
    y = L.sequence_mask(x)
    y2 = L.sequence_mask(x2, dtype='float32')
    y3 = L.sequence_mask(x, maxlen=L.fill_constant([1], 'int32', 6))
    y4 = L.sequence_mask(x, maxlen=4, dtype='bool')
    assert (y.shape, y2.shape, y3.shape, y4.shape) == ((-1, -1), (-1, 3, -1), (-1, -1), (-1, 4))
    assert y.stop_gradient and y4.dtype == np.bool_
    got = run([y, y2, y3, y4], {'x': np.array([3, 0, 5, 1], 'int64'),
                                'x2': np.array([[1, 2, 0], [4, 1, 2]], 'int32')})
    assert [g.dtype for g in got] == [np.int64, np.float32, np.int64, np.bool_]
    assert got[0].tolist() == [[1, 1, 1, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1],
                               [1, 0, 0, 0, 0]]
    assert got[1].tolist() == [[[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0]],
                               [[1, 1, 1, 1], [1, 0, 0, 0], [1, 1, 0, 0]]]
    assert got[2].tolist() == [[1, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0],
                               [1, 0, 0, 0, 0, 0]]
    assert got[3].tolist() == [[True, True, True, False], [False] * 4, [True] * 4,
                               [True, False, False, False]]
    got = run([y, y2], {'x': np.array([2, 7], 'int64'), 'x2': np.array([[0, 0, 1]], 'int32')})
    assert got[0].tolist() == [[1, 1, 0, 0, 0, 0, 0], [1] * 7]
    assert got[1].tolist() == [[[0.0], [0.0], [1.0]]]
    got = run([y], {'x': np.array([0, 0], 'int64'), 'x2': np.zeros((1, 3), 'int32')})
    assert got[0].shape == (2, 0)


def test_noam_decay_counts_steps_from_one():
    lr = L.learning_rate_scheduler.noam_decay(d_model=16, warmup_steps=4, learning_rate=2.0)
    assert L.noam_decay is L.learning_rate_scheduler.noam_decay
    exe = fluid.Executor()
    exe.run(fluid.default_startup_program())
    got = [float(exe.run(fetch_list=[lr])[0][0]) for _ in range(8)]
    want = [2.0 * 16 ** -0.5 * min(s ** -0.5, s * 4 ** -1.5) for s in range(1, 9)]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_create_random_int_lodtensor_and_places():
    t = fluid.create_random_int_lodtensor([[2, 3]], [1], fluid.CPUPlace(), low=1, high=4)
    arr = np.array(t)
    assert arr.shape == (5, 1) and arr.dtype == np.int64
    assert arr.min() >= 1 and arr.max() <= 4
    assert t.recursive_sequence_lengths() == [[2, 3]]
    assert fluid.cpu_places(3) == [fluid.CPUPlace()] * 3
    assert fluid.cuda_places() == [fluid.CUDAPlace(i) for i in range(fluid.cuda.device_count())]
    assert fluid.cuda_places([1, 0]) == [fluid.CUDAPlace(1), fluid.CUDAPlace(0)]


def mlp():
    x = fluid.data('x', shape=[None, 4])
    y = fluid.data('y', shape=[None, 1])
    pred = L.fc(x, 1, param_attr=fluid.ParamAttr('w', initializer=fluid.initializer.Constant(0.1)),
                bias_attr=True)
    loss = L.mean(L.square_error_cost(pred, y))
    fluid.optimizer.SGD(0.1).minimize(loss)
    return x, y, loss


def test_compiled_program_with_data_parallel_trains_like_the_program():
    x, y, loss = mlp()
    assert 'fc_0.b_0' in fluid.default_main_program().global_block().vars  # bias_attr=True
    rs = np.random.RandomState(1)
    xs, ys = rs.randn(8, 4).astype('float32'), rs.randn(8, 1).astype('float32')
    losses = {}
    for compiled in (False, True):
        with fluid.scope_guard(fluid.Scope()):
            exe = fluid.Executor(fluid.CPUPlace())
            exe.run(fluid.default_startup_program())
            prog = fluid.default_main_program()
            if compiled:
                build = fluid.BuildStrategy()
                build.enable_inplace = True
                prog = fluid.CompiledProgram(prog).with_data_parallel(
                    loss_name=loss.name, build_strategy=build,
                    exec_strategy=fluid.ExecutionStrategy(), places=fluid.cpu_places(2))
            losses[compiled] = [float(exe.run(prog, feed={'x': xs, 'y': ys},
                                              fetch_list=[loss])[0].reshape(-1)[0])
                                for _ in range(3)]
    assert losses[True] == losses[False] and losses[True][2] < losses[True][0]


def test_data_parallel_joins_the_lod_feeds_of_several_places():
    """A feed per place, with LoD (as a data-parallel DataLoader gives it): the shares are
    joined sequence by sequence, so the run equals one feed of all the sequences."""
    x = fluid.data('x', shape=[None, 1], dtype='int64', lod_level=2)
    sentences = L.sequence_pool(L.embedding(x, [10, 3], param_attr=fluid.ParamAttr(
        'emb', initializer=fluid.initializer.NumpyArrayInitializer(
            np.arange(30, dtype='float32').reshape(10, 3) / 10))), 'sum')
    pooled = L.sequence_pool(sentences, 'max')
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    prog = fluid.CompiledProgram(fluid.default_main_program()).with_data_parallel(
        places=fluid.cpu_places(2))
    ids = np.array([[1], [2], [3], [4], [5], [6]], 'int64')
    # place 0: two paragraphs of 1 and 2 sentences; place 1: one paragraph of 1 sentence
    t0 = fluid.create_lod_tensor(ids[:4], [[1, 2], [2, 1, 1]], fluid.CPUPlace())
    t1 = (ids[4:], [[0, 1], [0, 2]])  # the (array, offsets) form
    got_s, got = exe.run(prog, feed=[{'x': t0}, {'x': t1}], fetch_list=[sentences, pooled],
                         return_numpy=False)
    whole = fluid.create_lod_tensor(ids, [[1, 2, 1], [2, 1, 1, 2]], fluid.CPUPlace())
    want_s, want = exe.run(fluid.default_main_program(), feed={'x': whole},
                           fetch_list=[sentences, pooled], return_numpy=False)
    assert got_s.lod() == want_s.lod() == [[0, 1, 3, 4]]
    assert np.array(got).shape == (3, 3)
    np.testing.assert_array_equal(np.array(got_s), np.array(want_s))
    np.testing.assert_array_equal(np.array(got), np.array(want))
    with pytest.raises(fluid.InvalidArgumentError, match="feed 'x': place 1 gives 1 LoD"):
        exe.run(prog, feed=[{'x': t0}, {'x': (ids[4:], [[0, 2]])}], fetch_list=[pooled])


def samples(n):
    def reader():
        for i in range(n):
            yield np.full([4], i, 'float32'), np.array([i], 'float32')
    return reader


def test_data_loader_iterable_each_generator_kind():
    x, y, loss = mlp()
    exe = fluid.Executor()
    exe.run(fluid.default_startup_program())
    kinds = {
        'sample': lambda ld: ld.set_sample_generator(samples(10), batch_size=4,
                                                    places=fluid.cpu_places(1)),
        'sample_list': lambda ld: ld.set_sample_list_generator(fluid.io.batch(samples(10), 4),
                                                           places=fluid.cpu_places(1)),
        'batch': lambda ld: ld.set_batch_generator(
            lambda: ((np.full([4, 4], i, 'float32'), np.full([4, 1], i, 'float32'))
                     for i in range(3)), places=fluid.cpu_places(1)),
    }
    counts = {}
    for kind, set_gen in kinds.items():
        loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=4)
        set_gen(loader)
        n = 0
        for data in loader():
            assert isinstance(data, list) and set(data[0]) == {'x', 'y'}
            exe.run(feed=data, fetch_list=[loss])
            n += 1
        counts[kind] = n
    # set_sample_generator drops the last short batch by default; the reader batch keeps it
    assert counts == {'sample': 2, 'sample_list': 3, 'batch': 3}


def test_data_loader_not_iterable_start_reset():
    x, y, loss = mlp()
    test_prog = fluid.default_main_program().clone(for_test=True)
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2, iterable=False)
    loader.set_sample_list_generator(fluid.io.batch(samples(6), 2))
    exe = fluid.Executor()
    exe.run(fluid.default_startup_program())
    with pytest.raises(fluid.FailedPreconditionError, match='start'):
        exe.run(fetch_list=[loss])
    for epoch in range(2):
        loader.start()
        steps = 0
        try:
            while True:
                exe.run(fetch_list=[loss])
                steps += 1
        except fluid.core.EOFException:
            loader.reset()
        assert steps == 3
    # a clone made before the loader reads its own feed when given one
    got, = exe.run(test_prog, feed={'x': np.ones((2, 4), 'float32'),
                                    'y': np.ones((2, 1), 'float32')}, fetch_list=[loss])
    assert np.isfinite(got).all()


# ---------------------------------------------------------------- semantics ----

def test_one_hot_is_fluid_1x_one_hot():
    label = L.data('label', [1], dtype='int64')
    oh = L.one_hot(label, depth=4)
    assert fluid.default_main_program().global_block().ops[-1].type == 'one_hot'
    assert oh.shape == (-1, 4)
    got, = run([oh], {'label': np.array([[1], [3]], 'int64')})
    np.testing.assert_array_equal(got, [[0, 1, 0, 0], [0, 0, 0, 1]])


def test_bias_attr_true_everywhere():
    img = fluid.data('img', shape=[None, 2, 4, 4])
    c = L.conv2d(img, 3, 3, bias_attr=True)
    t = L.conv2d_transpose(img, 3, filter_size=2, bias_attr=True)
    f = L.fc(c, 2, bias_attr=True, param_attr=True)
    n = L.layer_norm(f, bias_attr=True, param_attr=True)
    b = L.batch_norm(c, bias_attr=True, param_attr=True)
    params = set(p.name for p in fluid.default_main_program().all_parameters())
    for layer in ('conv2d_0', 'conv2d_transpose_0', 'fc_0', 'layer_norm_0', 'batch_norm_0'):
        assert layer + '.b_0' in params, layer
    assert n is not None and t is not None and b is not None


def test_program_prune_takes_targets():
    x = fluid.data('x', shape=[None, 3])
    a = L.scale(x, 2.0)
    b = L.scale(a, 3.0)
    L.scale(x, 5.0)  # not needed by b
    pruned = fluid.default_main_program()._prune(b)
    assert [op.type for op in pruned.global_block().ops] == ['scale', 'scale']
    pruned = fluid.default_main_program()._prune([b.block.ops[1]])
    assert len(pruned.global_block().ops) == 2
    pruned = fluid.default_main_program()._prune_with_input(['x'], [b])
    assert len(pruned.global_block().ops) == 2


def test_softmax_clips_shifted_logits_like_paddle():
    # PaddlePaddle 1.8.5 on this input: softmax [0.7310586, 1.1724797889768354e-28,
    # 0.26894143], softmax_with_cross_entropy and cross_entropy(softmax) 64.31326293945312
    x = fluid.data('x', shape=[None, 3])
    lab = fluid.data('lab', shape=[None, 1], dtype='int64')
    sm = L.softmax(x)
    swce = L.softmax_with_cross_entropy(x, lab)
    ce = L.cross_entropy(sm, lab)
    got = run([sm, swce, ce], {'x': np.array([[0, -100, -1]], 'float32'),
                               'lab': np.array([[1]], 'int64')})
    np.testing.assert_allclose(got[0][0], [0.7310585975646973, 1.1724797889768354e-28,
                                           0.2689414322376251], rtol=1e-6)
    np.testing.assert_allclose(got[1][0, 0], 64.31326293945312, rtol=1e-6)
    np.testing.assert_allclose(got[2][0, 0], 64.31326293945312, rtol=1e-6)


# ---------------------------------------------------------------- error text ----

@pytest.mark.parametrize('module,path', [(fluid, 'fluid'), (fluid.layers, 'fluid.layers'),
                                         (fluid.io, 'fluid.io'),
                                         (fluid.optimizer, 'fluid.optimizer')])
def test_missing_fluid_api_names_it(module, path):
    with pytest.raises(AttributeError) as e:
        module.dynamic_gru_of_the_future
    msg = str(e.value)
    assert msg.startswith(path + '.dynamic_gru_of_the_future: rill does not provide')
    assert 'doc/design/fluid_api.md' in msg and 'Did you mean' not in msg
    assert isinstance(e.value, NotImplementedError)
    assert not hasattr(module, 'dynamic_gru_of_the_future')


def test_missing_api_traceback_has_no_suggestion():
    import subprocess
    import sys
    import os
    env = dict(os.environ)
    r = subprocess.run([sys.executable, '-c',
                        'import rill as fluid; fluid.layers.roi_pool_v2'],
                       capture_output=True, text=True, env=env)
    assert r.returncode != 0
    assert 'fluid.layers.roi_pool_v2: rill does not provide' in r.stderr
    assert 'Did you mean' not in r.stderr


def test_core_vardesc_vartype_as_fluid():
    """fluid.core.VarDesc.VarType: Paddle's numbers, accepted wherever a dtype is, equal
    to a variable's dtype of that type and printed as Paddle prints them."""
    V = fluid.core.VarDesc.VarType
    assert (V.BOOL, V.INT32, V.INT64, V.FP16, V.FP32, V.FP64, V.UINT8, V.INT8) == \
        (0, 2, 3, 4, 5, 6, 20, 21)
    assert (V.LOD_TENSOR, V.SELECTED_ROWS, V.LOD_TENSOR_ARRAY) == (7, 8, 13)
    assert str(V.FP32) == 'VarType.FP32' and repr(V.INT64) == 'VarType.INT64'
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data('x', [None, 3], 'float32')
        y = L.cast(x, V.FP64)
        z = L.fill_constant([2], V.INT64, 3)
        w = fluid.data('w', [2], V.INT32)
    assert x.dtype == V.FP32 and not x.dtype == V.FP64 and x.dtype != V.INT64
    assert y.dtype == V.FP64 and z.dtype == V.INT64 and w.dtype == V.INT32
    assert V.LOD_TENSOR != np.dtype('float32') and np.zeros(2, V.FP16).dtype == np.float16
    got = fluid.Executor().run(main, feed={'x': np.ones((1, 3), 'float32'),
                                           'w': np.ones(2, 'int32')}, fetch_list=[y, z, w])
    assert [a.dtype for a in got] == [np.float64, np.int64, np.int32]
    assert {V.FP32: 'f'}[5] == 'f'


def test_lod_tensor_checks_its_lengths_as_fluid():
    t = fluid.create_lod_tensor(np.ones((3, 2), 'float32'), [[1, 2]], fluid.CPUPlace())
    assert t.has_valid_recursive_sequence_lengths()
    t.set_recursive_sequence_lengths([[1, 1]])  # 2 rows of 3
    assert not t.has_valid_recursive_sequence_lengths()
    t.set_recursive_sequence_lengths([[1, 1], [1, 2]])  # 2 sequences of 1 and 2 rows
    assert t.has_valid_recursive_sequence_lengths()
    t.set_recursive_sequence_lengths([[2, 1], [1, 2]])  # the top level names 3 of 2
    assert not t.has_valid_recursive_sequence_lengths()


def test_fluid_layers_submodules_and_small_names():
    """Scripts reach layers through Fluid 1.x's submodules (fluid.layers.nn.fc, ...), the
    clip classes by their older names, and a few helpers of framework, io and executor."""
    assert L.nn.fc is L.fc and L.tensor.fill_constant is L.fill_constant
    assert L.control_flow.While is L.While and L.sequence_lod.sequence_pool is L.sequence_pool
    assert L.detection.prior_box is L.prior_box and L.loss.huber_loss is L.huber_loss
    assert L.distributions.Normal is fluid.distributions.Normal
    with pytest.raises(AttributeError, match='fluid.layers.no_such_layer'):
        L.nn.no_such_layer
    assert fluid.clip.ClipByGlobalNorm is fluid.clip.GradientClipByGlobalNorm
    assert fluid.clip.ClipByValue is fluid.clip.GradientClipByValue
    assert fluid.framework.grad_var_name('w') == 'w@GRAD'
    assert (fluid.framework.EMPTY_VAR_NAME, fluid.framework.GRAD_VAR_SUFFIX) == ('@EMPTY@', '@GRAD')
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 3], 'float32')
        L.fc(x, 2, param_attr='w', bias_attr='b')
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        w = fluid.io.get_parameter_value_by_name('w', exe, main)
        np.testing.assert_array_equal(w, np.array(scope.find_var('w').get_tensor()))
        assert w.shape == (3, 2)
        with pytest.raises(AssertionError, match='not parameter'):
            fluid.io.get_parameter_value(x, exe)
    t = fluid.create_lod_tensor(np.ones((3, 2), 'float32'), [[1, 2]], fluid.CPUPlace())
    with pytest.raises(RuntimeError, match='LoD'):
        fluid.executor.as_numpy(t)
    got = fluid.executor.as_numpy([fluid.LoDTensor(np.ones((2, 2), 'float32'))])
    assert isinstance(got, list) and got[0].sum() == 4
