"""Saving and loading: parameters and persistables (one file each or combined),
inference models in Paddle's layout, and what a bad file does."""
import os

import numpy as np
import pytest

import rill
import rill.layers as L
from conftest import MODELS


def build_and_train():
    x = L.data('x', [4])
    y = L.data('y', [1], dtype='int64')
    h = L.fc(x, 8, act='relu')
    h = L.batch_norm(h)
    logits = L.fc(h, 3)
    prob = L.softmax(logits)
    loss = L.mean(L.cross_entropy(prob, y))
    rill.optimizer.Momentum(0.1, 0.9).minimize(loss)
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    rng = np.random.RandomState(1)
    xv = rng.randn(8, 4).astype('float32')
    yv = rng.randint(0, 3, (8, 1)).astype('int64')
    for _ in range(3):
        exe.run(feed={'x': xv, 'y': yv}, fetch_list=[loss])
    build_and_train.y = yv
    return exe, prob, xv


def persistables(program):
    scope = rill.global_scope()
    return {v.name: np.array(scope.find_var(v.name).get_tensor())
            for v in program.global_block().vars.values() if rill.io.is_persistable(v)}


@pytest.mark.parametrize('filename', [None, '__params__'])
def test_save_load_persistables_round_trip_bit_identical(tmp_path, filename):
    exe, _, _ = build_and_train()
    main = rill.default_main_program()
    saved = persistables(main)
    assert any(n.endswith('velocity_0') for n in saved)
    rill.io.save_persistables(exe, str(tmp_path), main, filename=filename)
    if filename:
        assert os.listdir(tmp_path) == [filename]
    else:
        assert sorted(os.listdir(tmp_path)) == sorted(saved)
    with rill.scope_guard(rill.Scope()):
        rill.io.load_persistables(exe, str(tmp_path), main, filename=filename)
        loaded = persistables(main)
    assert sorted(loaded) == sorted(saved)
    for n in saved:
        assert loaded[n].dtype == saved[n].dtype
        assert loaded[n].tobytes() == saved[n].tobytes(), n


def test_save_params_writes_only_parameters(tmp_path):
    exe, _, _ = build_and_train()
    main = rill.default_main_program()
    rill.io.save_params(exe, str(tmp_path), main)
    names = sorted(os.listdir(tmp_path))
    assert names == sorted(p.name for p in main.all_parameters())
    assert not any('velocity' in n or 'learning_rate' in n for n in names)


def test_combined_file_is_the_sorted_streams(tmp_path):
    exe, _, _ = build_and_train()
    main = rill.default_main_program()
    rill.io.save_persistables(exe, str(tmp_path / 'sep'), main)
    rill.io.save_persistables(exe, str(tmp_path / 'comb'), main, filename='all')
    sep = tmp_path / 'sep'
    joined = b''.join((sep / n).read_bytes() for n in sorted(os.listdir(sep)))
    assert (tmp_path / 'comb' / 'all').read_bytes() == joined


def test_inference_model_round_trip(tmp_path):
    exe, prob, xv = build_and_train()
    main = rill.default_main_program()
    want, = exe.run(main.clone(for_test=True), feed={'x': xv, 'y': build_and_train.y},
                    fetch_list=[prob])
    names = rill.io.save_inference_model(str(tmp_path), ['x'], [prob], exe)
    assert names == ['save_infer_model/scale_0']
    files = set(os.listdir(tmp_path))
    assert '__model__' in files
    assert not any('velocity' in f or 'learning_rate' in f for f in files)
    with rill.scope_guard(rill.Scope()):
        prog, feeds, fetches = rill.io.load_inference_model(str(tmp_path), exe)
        assert feeds == ['x']
        assert [f.name for f in fetches] == names
        types = [op.type for op in prog.global_block().ops]
        assert types[0] == 'feed' and types[-1] == 'fetch'
        assert not any(t.endswith('_grad') or t == 'momentum' for t in types)
        assert prog.global_block().ops[types.index('batch_norm')].attr('is_test') is True
        got, = exe.run(prog, feed={'x': xv}, fetch_list=fetches)
    np.testing.assert_array_equal(got, want)


def test_inference_model_with_combined_params(tmp_path):
    exe, prob, xv = build_and_train()
    rill.io.save_inference_model(str(tmp_path), ['x'], [prob], exe, params_filename='params')
    assert sorted(os.listdir(tmp_path)) == ['__model__', 'params']
    with rill.scope_guard(rill.Scope()):
        prog, feeds, fetches = rill.io.load_inference_model(str(tmp_path), exe,
                                                            params_filename='params')
        got, = exe.run(prog, feed={'x': xv}, fetch_list=fetches)
    assert got.shape == (8, 3)
    np.testing.assert_allclose(got.sum(1), 1, rtol=1e-5)


def test_paddle_model_saved_again_by_rill_gives_same_output(tmp_path):
    d = os.path.join(MODELS, 'mnist_conv_bn_etienne')
    if not os.path.isdir(d):
        pytest.skip('shared models are not there')
    exe = rill.Executor()
    prog, feeds, fetches = rill.io.load_inference_model(d, exe)
    img = np.load(os.path.join(d, 'refs', 'input_img.npy'))
    want, = exe.run(prog, feed={feeds[0]: img}, fetch_list=fetches)
    rill.io.save_inference_model(str(tmp_path), feeds, fetches, exe, main_program=prog)
    with rill.scope_guard(rill.Scope()):
        p2, f2, t2 = rill.io.load_inference_model(str(tmp_path), exe)
        got, = exe.run(p2, feed={f2[0]: img}, fetch_list=t2)
    np.testing.assert_array_equal(got, want)


def test_load_missing_file_names_it_and_keeps_scope(tmp_path):
    exe, _, _ = build_and_train()
    main = rill.default_main_program()
    rill.io.save_params(exe, str(tmp_path), main)
    before = persistables(main)
    victim = sorted(os.listdir(tmp_path))[-1]
    os.unlink(tmp_path / victim)
    with pytest.raises(rill.NotFoundError) as e:
        rill.io.load_params(exe, str(tmp_path), main)
    assert victim in str(e.value)
    after = persistables(main)
    for n in before:
        assert after[n].tobytes() == before[n].tobytes()


def test_load_truncated_combined_file_fails_cleanly(tmp_path):
    exe, _, _ = build_and_train()
    main = rill.default_main_program()
    rill.io.save_params(exe, str(tmp_path), main, filename='p')
    data = (tmp_path / 'p').read_bytes()
    (tmp_path / 'p').write_bytes(data[:-7])
    with pytest.raises(rill.CorruptError) as e:
        rill.io.load_params(exe, str(tmp_path), main, filename='p')
    assert 'truncated' in str(e.value) or 'need' in str(e.value)
    (tmp_path / 'p').write_bytes(data + b'extra')
    with pytest.raises(rill.CorruptError, match='bytes left'):
        rill.io.load_params(exe, str(tmp_path), main, filename='p')


def test_load_shape_mismatch_names_the_variable(tmp_path):
    exe, _, _ = build_and_train()
    main = rill.default_main_program()
    rill.io.save_params(exe, str(tmp_path), main)
    with rill.program_guard(rill.Program(), rill.Program()), rill.unique_name.guard():
        x = L.data('x', [5])
        L.fc(x, 8)
        other = rill.default_main_program()
        with pytest.raises(rill.Error) as e:
            rill.io.load_vars(exe, str(tmp_path), other, vars=['fc_0.w_0'])
    assert 'fc_0.w_0' in str(e.value)


def test_save_before_startup_names_the_missing_variable(tmp_path):
    x = L.data('x', [4])
    L.fc(x, 2)
    with pytest.raises(rill.NotFoundError) as e:
        rill.io.save_params(rill.Executor(), str(tmp_path))
    assert 'fc_0' in str(e.value) and 'startup' in str(e.value)


def test_variable_name_cannot_escape_directory(tmp_path):
    blk = rill.default_main_program().global_block()
    blk.create_parameter('../evil', [2])
    rill.global_scope().var('../evil').get_tensor().set(np.ones(2, 'float32'))
    with pytest.raises(rill.Error) as e:
        rill.io.save_params(rill.Executor(), str(tmp_path / 'd'))
    assert '../evil' in str(e.value)
    assert not (tmp_path / 'evil').exists()


def test_model_filename_cannot_escape_directory(tmp_path):
    exe, prob, _ = build_and_train()
    for bad in ('../m', '/tmp/m', 'a/../../m'):
        with pytest.raises(rill.InvalidArgumentError, match='relative name'):
            rill.io.save_inference_model(str(tmp_path / 'd'), ['x'], [prob], exe,
                                         model_filename=bad)
    assert not (tmp_path / 'm').exists()
    with pytest.raises(rill.Error, match='outside|escape|\\.\\.'):
        rill.io.save_inference_model(str(tmp_path / 'd'), ['x'], [prob], exe,
                                     params_filename='../p')


def test_save_inference_model_argument_errors(tmp_path):
    exe, prob, _ = build_and_train()
    with pytest.raises(rill.NotFoundError, match="'nope'"):
        rill.io.save_inference_model(str(tmp_path), ['nope'], [prob], exe)
    with pytest.raises(ValueError, match='empty'):
        rill.io.save_inference_model(str(tmp_path), ['x'], [], exe)
    with pytest.raises(TypeError):
        rill.io.save_inference_model(str(tmp_path), ['x'], ['not a variable'], exe)
