"""Programs, blocks, variables, names, scopes, and the Executor's behaviour and
errors."""
import gc

import numpy as np
import pytest

import rill
import rill.layers as L


def small():
    x = L.data('x', [3])
    y = L.fc(x, 2, param_attr='w', bias_attr='b')
    return x, y


def test_program_guard_and_defaults():
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        assert rill.default_main_program() is main
        assert rill.default_startup_program() is startup
        small()
    assert rill.default_main_program() is not main
    assert [op.type for op in main.global_block().ops] == ['mul', 'elementwise_add']
    assert sorted(startup.global_block().vars) == ['b', 'w']
    with pytest.raises(TypeError):
        with rill.program_guard('not a program'):
            pass


def test_unique_names_and_guard():
    assert rill.unique_name.generate('fc') == 'fc_0'
    assert rill.unique_name.generate('fc') == 'fc_1'
    with rill.unique_name.guard():
        assert rill.unique_name.generate('fc') == 'fc_0'
    assert rill.unique_name.generate('fc') == 'fc_2'


def test_name_scope_marks_ops():
    x = L.data('x', [3])
    with rill.name_scope('enc'):
        with rill.name_scope('layer'):
            y = L.relu(x)
    with rill.name_scope('enc'):
        L.relu(y)
    ops = rill.default_main_program().global_block().ops
    assert ops[0].attr('op_namescope') == '/enc/layer/'
    assert ops[1].attr('op_namescope') == '/enc_1/'


def test_block_vars_ops_parameters():
    x, y = small()
    blk = rill.default_main_program().global_block()
    assert blk.var('x') is x
    assert blk.has_var('w') and not blk.has_var('nope')
    with pytest.raises(ValueError, match='nope'):
        blk.var('nope')
    assert sorted(p.name for p in blk.all_parameters()) == ['b', 'w']
    assert isinstance(blk.var('w'), rill.Parameter)
    assert blk.var('w').shape == (3, 2) and blk.var('w').persistable
    mul = blk.ops[0]
    assert mul.type == 'mul' and mul.input('X') == ['x'] and mul.input('Y') == ['w']
    assert mul.attr('x_num_col_dims') == 1
    assert y.shape == (-1, 2) and y.dtype == np.float32


def test_str_program_is_readable():
    small()
    text = str(rill.default_main_program())
    assert 'var x : LOD_TENSOR.shape(-1, 3).dtype(float32)' in text
    assert "= mul(inputs={X=['x'], Y=['w']}" in text
    assert text.startswith('{ // block 0')


def test_serialize_parse_round_trip():
    small()
    main = rill.default_main_program()
    data = main.serialize_to_string()
    again = rill.Program.parse_from_string(data)
    assert again.serialize_to_string() == data
    assert [op.type for op in again.global_block().ops] == ['mul', 'elementwise_add']
    assert isinstance(again.global_block().var('w'), rill.Parameter)


def test_parse_garbage_raises_corrupt():
    with pytest.raises(rill.CorruptError):
        rill.Program.parse_from_string(b'\x0a\xff\xff\xff\x0f')


def test_clone_is_independent_and_for_test_drops_training():
    x = L.data('x', [3])
    h = L.dropout(L.fc(x, 4), 0.5)
    loss = L.mean(h)
    main = rill.default_main_program()
    test = main.clone(for_test=True)
    rill.optimizer.SGD(0.1).minimize(loss)
    assert len(test.global_block().ops) == 4
    drop = [op for op in test.global_block().ops if op.type == 'dropout'][0]
    assert drop.attr('is_test') is True
    trained = main.clone(for_test=True)
    assert [op.type for op in trained.global_block().ops] == \
        [op.type for op in test.global_block().ops]
    assert any(op.type == 'sgd' for op in main.global_block().ops)


def test_random_seed_makes_initialization_repeatable():
    def init(seed):
        main, startup = rill.Program(), rill.Program()
        startup.random_seed = seed
        with rill.program_guard(main, startup), rill.unique_name.guard(), \
                rill.scope_guard(rill.Scope()):
            x = L.data('x', [50])
            L.fc(x, 50, param_attr=rill.ParamAttr('w', initializer=rill.initializer.Normal()))
            rill.Executor().run(startup)
            return np.array(rill.global_scope().find_var('w').get_tensor())
    a, b, c = init(3), init(3), init(4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert abs(a.std() - 1) < 0.05


@pytest.mark.parametrize('init,check', [
    (rill.initializer.Constant(0.25), lambda w: np.all(w == 0.25)),
    (rill.initializer.Uniform(-0.1, 0.2), lambda w: w.min() >= -0.1 and w.max() < 0.2),
    (rill.initializer.Xavier(), lambda w: np.abs(w).max() <= np.sqrt(6 / 200) + 1e-6),
    (rill.initializer.MSRA(uniform=False), lambda w: abs(w.std() - np.sqrt(2 / 100)) < 0.01),
    (rill.initializer.NumpyArrayInitializer(np.arange(10000, dtype='float32').reshape(100, 100)),
     lambda w: w[3, 7] == 307),
])
def test_initializers(init, check):
    x = L.data('x', [100])
    L.fc(x, 100, param_attr=rill.ParamAttr('w', initializer=init), bias_attr=False)
    rill.Executor().run(rill.default_startup_program())
    assert check(np.array(rill.global_scope().find_var('w').get_tensor()))


def test_global_scope_find_var_get_set():
    small()
    rill.Executor().run(rill.default_startup_program())
    scope = rill.global_scope()
    assert scope.find_var('nope') is None
    t = scope.find_var('w').get_tensor()
    assert np.array(t).shape == (3, 2)
    t.set(np.full((3, 2), 7, 'float32'), rill.CPUPlace())
    assert np.array(scope.find_var('w').get_tensor()).sum() == 42


def test_feed_shares_memory_and_fetch_outlives_executor():
    x = L.data('x', [4])
    y = L.scale(x, 2.0)
    exe = rill.Executor()
    xv = np.arange(8, dtype='float32').reshape(2, 4)
    out, = exe.run(feed={'x': xv}, fetch_list=[y])
    fed, = exe.run(feed={'x': xv}, fetch_list=[x])
    assert fed.__array_interface__['data'][0] == xv.__array_interface__['data'][0]
    del exe
    gc.collect()
    np.testing.assert_array_equal(out, 2 * xv)


def test_fetch_lod_with_return_numpy_false():
    x = L.data('x', [2], lod_level=1)
    y = L.scale(x, 1.0)
    t, = rill.Executor().run(feed={'x': (np.ones((5, 2), 'float32'), [[0, 2, 5]])},
                             fetch_list=[y], return_numpy=False)
    assert t.lod() == [[0, 2, 5]]
    assert t.recursive_sequence_lengths() == [[2, 3]]
    assert np.array(t).shape == (5, 2)


def test_wrong_feed_name_lists_data_variables():
    small()
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    with pytest.raises(rill.NotFoundError) as e:
        exe.run(feed={'xx': np.ones((2, 3), 'float32')})
    assert "'xx'" in str(e.value) and 'x' in str(e.value)


def test_wrong_feed_shape_names_both_shapes():
    small()
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    with pytest.raises(rill.InvalidArgumentError) as e:
        exe.run(feed={'x': np.ones((2, 5), 'float32')})
    # layers.data: not checked (as Fluid); the op that cannot take it names both shapes
    assert "op 'mul'" in str(e.value) and '(x) of shape [2, 5]' in str(e.value) and '[3, 2]' in str(e.value)
    with pytest.raises(rill.InvalidArgumentError, match='float32'):
        exe.run(feed={'x': np.ones((2, 3), 'int64')})


def test_missing_variable_errors():
    x, y = small()
    exe = rill.Executor()
    with pytest.raises(rill.Error) as e:
        exe.run(feed={'x': np.ones((2, 3), 'float32')}, fetch_list=[y])
    assert "'w'" in str(e.value) or "'b'" in str(e.value)
    exe.run(rill.default_startup_program())
    with pytest.raises(rill.NotFoundError, match='nope'):
        exe.run(feed={'x': np.ones((2, 3), 'float32')}, fetch_list=['nope'])
    with pytest.raises(rill.FailedPreconditionError, match="'x'"):
        exe.run(fetch_list=[y])


def test_error_classes_carry_codes():
    assert issubclass(rill.NotFoundError, rill.Error)
    assert issubclass(rill.InvalidArgumentError, ValueError)
    assert rill.NotFoundError.code == 'NOT_FOUND'


@pytest.mark.parametrize('parallel', [None, True, False])
def test_executor_schedules_agree(parallel):
    x = L.data('x', [6])
    outs = [L.fc(x, 4, act='tanh', param_attr=rill.initializer.Constant(0.1 * i))
            for i in range(6)]
    total = L.concat(outs, axis=1)
    exe = rill.Executor(rill.CPUPlace(), parallel=parallel, num_threads=2)
    exe.run(rill.default_startup_program())
    xv = np.linspace(-1, 1, 12, dtype='float32').reshape(2, 6)
    got, = exe.run(feed={'x': xv}, fetch_list=[total])
    want = np.concatenate([np.tanh(xv @ np.full((6, 4), 0.1 * i)) for i in range(6)], 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_executor_rejects_bad_places_and_closed_use():
    with pytest.raises(rill.InvalidArgumentError, match='device id'):
        rill.CUDAPlace(-1)
    with pytest.raises(TypeError, match='CPUPlace'):
        rill.Executor('gpu')
    exe = rill.Executor()
    exe.close()
    with pytest.raises(rill.FailedPreconditionError):
        exe.run(rill.Program())


def test_an_edit_of_the_live_program_reaches_the_next_run():
    # Python keeps no plans: the C executor's plan cache is keyed by the program's
    # revision, which every edit through Python bumps.
    x = L.data('x', [2])
    y = L.scale(x, 3.0)
    exe = rill.Executor()
    xv = np.ones((1, 2), 'float32')
    a, = exe.run(feed={'x': xv}, fetch_list=[y])
    prog = rill.default_main_program()
    before = rill.core._prog_version(prog._c()._h)
    prog.global_block().ops[-1]._set_attr('scale', 5.0)
    assert rill.core._prog_version(prog._c()._h) > before
    b, = exe.run(feed={'x': xv}, fetch_list=[y])
    z = L.scale(y, 2.0)
    c, = exe.run(feed={'x': xv}, fetch_list=[z])
    np.testing.assert_array_equal(a, 3 * xv)
    np.testing.assert_array_equal(b, 5 * xv)
    np.testing.assert_array_equal(c, 10 * xv)


def test_fetched_array_releases_its_tensor_when_it_dies():
    import weakref
    x = L.data('x', [4])
    y = L.scale(x, 2.0)
    out, = rill.Executor().run(feed={'x': np.ones((2, 4), 'float32')}, fetch_list=[y])
    holder = out.base
    while not isinstance(holder, rill.core._Holder):
        holder = holder.base
    ref = weakref.ref(holder.tensor)
    del out, holder
    gc.collect()
    assert ref() is None


def test_lent_feed_arrays_are_released_with_the_scope():
    gc.collect()  # arrays an earlier test left for the collector go first
    before = len(rill.core._lent)
    with rill.scope_guard(rill.Scope()):
        x = L.data('x', [4])
        y = L.scale(x, 2.0)
        exe = rill.Executor()
        for _ in range(5):
            exe.run(feed={'x': np.ones((2, 4), 'float32')}, fetch_list=[y])
        assert len(rill.core._lent) <= before + 1
        del exe
    gc.collect()
    assert len(rill.core._lent) == before


def test_corrupted_programs_raise_rill_errors():
    import os
    from conftest import MODELS
    path = os.path.join(MODELS, 'mnist_mlp_handwriting', '__model__')
    if not os.path.exists(path):
        pytest.skip('shared models are not there')
    data = open(path, 'rb').read()
    rng = np.random.RandomState(3)
    parsed = failed = 0
    for i in range(400):
        b = bytearray(data)
        if i % 2:
            b = b[:rng.randint(len(b))]
        else:
            for _ in range(4):
                b[rng.randint(len(b))] = rng.randint(256)
        try:
            p = rill.Program.parse_from_string(bytes(b))
            str(p)
            parsed += 1
        except rill.Error:
            failed += 1
    assert parsed + failed == 400 and failed > 0


def test_data_feeder_builds_the_feed_dict():
    img = L.data('img', [1, 2, 2])
    label = L.data('label', [1], dtype='int64')
    words = L.data('words', [1], dtype='int64', lod_level=1)
    feeder = rill.DataFeeder(feed_list=[img, 'label', words], place=rill.CPUPlace())
    batch = [(np.arange(4), 3, [1, 2]), (np.ones(4), 7, [5, 6, 7])]
    feed = feeder.feed(batch)
    assert feed['img'].shape == (2, 1, 2, 2) and feed['img'].dtype == np.float32
    assert feed['label'].tolist() == [[3], [7]] and feed['label'].dtype == np.int64
    data, lod = feed['words']
    assert data.reshape(-1).tolist() == [1, 2, 5, 6, 7] and lod == [[0, 2, 5]]
    with pytest.raises(ValueError, match='sample 0 has 2 items'):
        feeder.feed([(np.arange(4), 3)])
    out = L.scale(img, 2.0)
    got, = rill.Executor().run(feed={'img': feed['img']}, fetch_list=[out])
    np.testing.assert_array_equal(got, 2 * feed['img'])


@pytest.mark.parametrize('lod,needle', [([[0, 3, 2]], 'decreases'), ([[0, 2, 9]], 'ends at 9'),
                                        ([[1, 5]], 'start with offset 0')])
def test_bad_lod_feed_names_the_feed(lod, needle):
    x = L.data('x', [2], lod_level=1)
    y = L.scale(x, 1.0)
    with pytest.raises(rill.InvalidArgumentError) as e:
        rill.Executor().run(feed={'x': (np.ones((5, 2), 'float32'), lod)}, fetch_list=[y])
    assert "feed 'x'" in str(e.value) and needle in str(e.value)


@pytest.mark.parametrize('lod,needle', [
    ([[0, 0.5, 5]], "offset #1 is 0.5, not an integer"),
    ([[0.0, 2.5, 5]], "offset #1 is 2.5, not an integer"),
    ([[0, np.float32(1.5), 5]], "offset #1 is 1.5, not an integer"),
    ([[0, '2', 5]], "offset #1 is '2', not an integer"),
    ([[0, None, 5]], "offset #1 is None, not an integer"),
    ([[0, True, 5]], "offset #1 is True, not an integer"),
    ([[0, -2, 5]], "offset #1 is -2, negative"),
    ([[0, float('nan'), 5]], "offset #1 is nan"),
    ([[0, 3, 2, 5]], "decreases"),
    ([0, 5], "list of levels"),
])
def test_non_integral_lod_offsets_are_refused_naming_the_feed(lod, needle):
    x = L.data('x', [2], lod_level=1)
    y = L.scale(x, 1.0)
    exe = rill.Executor()
    with pytest.raises(ValueError) as e:
        exe.run(feed={'x': (np.ones((5, 2), 'float32'), lod)}, fetch_list=[y])
    assert isinstance(e.value, rill.InvalidArgumentError)
    assert "feed 'x'" in str(e.value) and needle in str(e.value), str(e.value)
    with pytest.raises(rill.InvalidArgumentError, match='LoD'):
        rill.LoDTensor(np.ones((5, 2), 'float32'), lod)


def test_integral_lod_offsets_of_any_numeric_type_are_accepted():
    x = L.data('x', [2], lod_level=1)
    y = L.scale(x, 2.0)
    exe = rill.Executor()
    data = np.arange(10, dtype='float32').reshape(5, 2)
    for lod in ([[0.0, 2.0, 5.0]], [[np.int64(0), np.int32(2), np.uint8(5)]],
                [[0, np.float64(2), 5]], [np.array([0, 2, 5])]):
        got, = exe.run(feed={'x': (data, lod)}, fetch_list=[y], return_numpy=False)
        assert got.lod() == [[0, 2, 5]]
        assert all(type(o) is int for o in got.lod()[0])
        np.testing.assert_array_equal(np.array(got), 2 * data)
    t = rill.create_lod_tensor(data, [[2.0, np.int64(3)]], rill.CPUPlace())
    assert t.lod() == [[0, 2, 5]]
    with pytest.raises(ValueError, match=r'length #0 is 0\.5'):
        rill.create_lod_tensor(data, [[0.5, 4.5]], rill.CPUPlace())


def test_predictor_input_lod_of_floats_is_refused_naming_the_input(tmp_path):
    x = L.data('x', [2], lod_level=1)
    y = L.scale(x, 2.0)
    rill.io.save_inference_model(str(tmp_path / 'm'), ['x'], [y], rill.Executor())
    p = rill.inference.Predictor(rill.inference.Config(str(tmp_path / 'm')))
    data = np.arange(10, dtype='float32').reshape(5, 2)
    with pytest.raises(ValueError, match=r"input 'x'.*offset #1 is 0\.5"):
        p.run({'x': (data, [[0, 0.5, 5]])})
    h = p.get_input_handle('x')
    h.copy_from_cpu(data)
    with pytest.raises(rill.InvalidArgumentError, match=r"input 'x'.*offset #1 is 1\.5"):
        h.set_lod([[0, 1.5, 5]])
    h.set_lod([[0, 2.0, np.int64(5)]])
    p.run()
    assert p.get_output_handle(p.get_output_names()[0]).lod() == [[0, 2, 5]]


def test_create_lod_tensor_feeds_sequences():
    words = L.data('words', [1], dtype='int64', lod_level=1)
    emb = L.embedding(words, [10, 2], param_attr='E')
    t = rill.create_lod_tensor(np.array([[1], [2], [3], [4], [5]], 'int64'), [[2, 3]],
                               rill.CPUPlace())
    assert t.lod() == [[0, 2, 5]] and t.recursive_sequence_lengths() == [[2, 3]]
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    out, = exe.run(feed={'words': t}, fetch_list=[emb], return_numpy=False)
    assert out.lod() == [[0, 2, 5]]
    table = np.array(rill.global_scope().find_var('E').get_tensor())
    np.testing.assert_array_equal(np.array(out).reshape(5, 2), table[[1, 2, 3, 4, 5]])
