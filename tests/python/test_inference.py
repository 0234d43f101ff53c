"""rill.inference over the C predictor: every shared model reproduces its reference
outputs at each optimization level, inputs by name or position, reuse, clones on
threads, Paddle Inference's handle API, and the errors of bad configs and inputs."""
import json
import os
import threading
import time

import numpy as np
import pytest

import rill
from rill.inference import Config, Predictor
from conftest import MODELS

NAMES = sorted(d for d in os.listdir(MODELS) if os.path.isdir(os.path.join(MODELS, d))) \
    if os.path.isdir(MODELS) else []


def model(name):
    d = os.path.join(MODELS, name)
    if name == 'paddlelite_simple_model':
        return os.path.join(d, 'model.pdmodel'), None
    if name == 'paddlejs_gesture_rec':
        return d, 'params'
    return d, None


def refs(name):
    d = os.path.join(MODELS, name, 'refs')
    meta = json.load(open(os.path.join(d, 'meta.json')))
    feed = {}
    for n in meta['feed_order']:
        arr = np.load(os.path.join(d, 'input_%s.npy' % n))
        lod = meta['inputs'][n].get('lod')
        feed[n] = (arr, lod) if lod else arr
    outs = [np.load(os.path.join(d, 'output_%d.npy' % i)) for i in range(len(meta['outputs']))]
    return meta, feed, outs


def check_outputs(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('level', [0, 1, 2])
@pytest.mark.parametrize('name', NAMES)
def test_model_reproduces_refs(name, level):
    path, params = model(name)
    meta, feed, want = refs(name)
    p = Predictor(Config(path, params, threads=2, opt_level=level, memory_optim=level > 0))
    assert p.get_input_names() == meta['feed_order']
    assert len(p.get_output_names()) == len(want)
    check_outputs(p.run(feed), want)
    # Reusable: a second run on the same predictor gives the same bits.
    again = p.run(feed)
    first = p.run(feed)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(again, first))
    assert p.param_bytes() > 0


def test_inputs_by_position_and_in_any_order():
    path, _ = model('pureboys_word2vec')
    meta, feed, want = refs('pureboys_word2vec')
    p = Predictor(Config(path))
    reversed_feed = dict(reversed(list(feed.items())))
    check_outputs(p.run(reversed_feed), want)
    check_outputs(p.run([feed[n] for n in p.get_input_names()]), want)
    dtype, dims = p.input_spec('firstw')
    assert dtype == np.int64 and dims[-1] == 1
    # int32 ids are another width of the declared int64: converted.
    check_outputs(p.run({n: a.astype('int32') for n, a in feed.items()}), want)


def test_paddle_style_handles():
    path, _ = model('mnist_conv_bn_etienne')
    meta, feed, want = refs('mnist_conv_bn_etienne')
    config = Config(path)
    config.set_cpu_math_library_num_threads(1)
    config.switch_ir_optim(True)
    config.enable_memory_optim()
    assert config.cpu_math_library_num_threads() == 1 and config.ir_optim()
    p = rill.inference.create_predictor(config)
    out_name = p.get_output_names()[0]
    with pytest.raises(rill.FailedPreconditionError, match='not run yet'):
        p.get_output_handle(out_name).copy_to_cpu()
    for n in p.get_input_names():
        p.get_input_handle(n).copy_from_cpu(feed[n])
    p.run()
    check_outputs([p.get_output_handle(out_name).copy_to_cpu()], want)
    assert p.memory_bytes() > 0
    assert 'feed' in [op.type for op in p.program().global_block().ops]


def test_clones_on_threads_give_the_single_threaded_bits():
    path, _ = model('mnist_conv_bn_etienne')
    _, feed, want = refs('mnist_conv_bn_etienne')
    p = Predictor(Config(path, threads=1))
    rs = np.random.RandomState(5)
    name = p.get_input_names()[0]
    batches = [rs.rand(*feed[name].shape).astype('float32') for _ in range(4)]
    single = [p.run({name: b})[0].copy() for b in batches]
    clones = [p.clone() for _ in range(4)]
    results, errors = {}, []

    def work(k):
        try:
            for rep in range(5):
                for j, b in enumerate(batches):
                    results[(k, rep, j)] = clones[k].run({name: b})[0].copy()
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 4 * 5 * 4
    for (k, rep, j), out in results.items():
        assert out.tobytes() == single[j].tobytes(), (k, rep, j)
    check_outputs(clones[0].run(feed), want)
    del p  # clones keep the shared weights alive
    check_outputs(clones[1].run(feed), want)


def test_one_predictor_on_two_threads_answers_right_or_raises():
    """Sharing one predictor between threads is unsupported; a run while another
    thread's run is in progress raises FailedPreconditionError pointing at clone(), and
    never returns a wrong (or the other thread's) answer."""
    path, _ = model('mnist_conv_bn_etienne')
    _, feed, _ = refs('mnist_conv_bn_etienne')
    p = Predictor(Config(path, threads=1))
    name = p.get_input_names()[0]
    rs = np.random.RandomState(7)
    batches = [rs.rand(*feed[name].shape).astype('float32') for _ in range(2)]
    single = [p.run({name: b})[0].tobytes() for b in batches]
    counts = {'ok': 0, 'busy': 0, 'wrong': 0}
    errors, messages = [], []
    lock = threading.Lock()

    def work(k):
        deadline = time.monotonic() + 30
        calls = 0
        while time.monotonic() < deadline and not (calls >= 200 and counts['busy']):
            calls += 1
            try:
                out = p.run({name: batches[k]})[0].tobytes()
            except rill.FailedPreconditionError as e:
                with lock:
                    counts['busy'] += 1
                    messages.append(str(e))
                continue
            except Exception as e:  # reported below
                errors.append(e)
                return
            with lock:
                counts['ok' if out == single[k] else 'wrong'] += 1

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert counts['wrong'] == 0, counts
    assert counts['busy'] > 0 and counts['ok'] > 0, counts
    assert 'predictor is in use by another thread; use rill_predictor_clone' in messages[0]
    assert p.run({name: batches[0]})[0].tobytes() == single[0]


def test_int8_pass_is_taken_by_mask_and_leaves_a_float_model_alone():
    path, _ = model('fit_a_line_raftliu')
    _, feed, want = refs('fit_a_line_raftliu')
    from rill import inference
    p = Predictor(Config(path, passes=inference.PASS_ALL | inference.PASS_INT8))
    check_outputs(p.run({'x': feed['x']}), want)


# ----------------------------------------------------------------- errors ----

def fit_a_line():
    path, _ = model('fit_a_line_raftliu')
    _, feed, want = refs('fit_a_line_raftliu')
    return Predictor(Config(path)), feed['x'], want


def test_wrong_input_name_raises_and_the_predictor_stays_usable():
    p, x, want = fit_a_line()
    with pytest.raises(rill.InvalidArgumentError, match="'nope'") as e:
        p.run({'nope': x})
    assert 'x' in str(e.value)
    with pytest.raises(rill.InvalidArgumentError, match="'x'"):
        p.run({})  # the model's input is missing
    with pytest.raises(rill.InvalidArgumentError, match='2 inputs given'):
        p.run([x, x])
    with pytest.raises(rill.NotFoundError, match='nope'):
        p.get_input_handle('nope')
    with pytest.raises(rill.NotFoundError, match='nope'):
        p.get_output_handle('nope')
    with pytest.raises(TypeError):
        p.run('x')
    check_outputs(p.run({'x': x}), want)


def test_wrong_shape_or_dtype_raises():
    p, x, want = fit_a_line()
    # x does not ask for its feeds' shapes to be checked: the op that cannot take it says so
    with pytest.raises(rill.InvalidArgumentError, match=r"'fc'.*\(x\) of shape \[4, 5\]"):
        p.run({'x': x[:, :5]})
    with pytest.raises(rill.InvalidArgumentError, match="'x'"):
        p.run({'x': x.astype('int64')})
    check_outputs(p.run({'x': x.astype('float64')}), want)  # same kind: converted


@pytest.mark.parametrize('kwargs, match', [
    (dict(opt_level=3), 'optimization level'),
    (dict(threads=-1), 'threads'),
    (dict(threads=1.5), 'threads'),
    (dict(passes=1 << 9), 'pass'),
    (dict(parallel='yes'), 'parallel'),
])
def test_bad_config_raises(kwargs, match):
    path, _ = model('fit_a_line_raftliu')
    with pytest.raises(rill.InvalidArgumentError, match=match):
        Config(path, **kwargs)


def test_missing_or_bad_model_raises(tmp_path):
    with pytest.raises(rill.NotFoundError, match='nothing'):
        Predictor(Config(str(tmp_path / 'nothing')))
    (tmp_path / 'bad').mkdir()
    (tmp_path / 'bad' / '__model__').write_bytes(b'\xff\xfe not a program')
    with pytest.raises(rill.Error, match='__model__|bad'):
        Predictor(Config(str(tmp_path / 'bad')))
    with pytest.raises(rill.InvalidArgumentError):
        Config('')
    with pytest.raises(TypeError):
        Predictor('model_dir')


def test_a_model_trained_in_python_runs_in_the_predictor(tmp_path):
    x = rill.layers.data('x', [3])
    pred = rill.layers.fc(rill.layers.fc(x, 8, act='relu'), 2, act='softmax')
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    data = np.random.RandomState(1).rand(4, 3).astype('float32')
    want, = exe.run(feed={'x': data}, fetch_list=[pred])
    rill.io.save_inference_model(str(tmp_path / 'm'), ['x'], [pred], exe)
    p = Predictor(Config(str(tmp_path / 'm')))
    got, = p.run({'x': data})
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize('name, files', [
    ('paddlejs_gesture_rec', ('__model__', 'params')),
    ('paddlelite_simple_model', ('model.pdmodel', 'model.pdiparams')),
])
def test_config_from_model_and_params_files(name, files):
    """Paddle's Config(prog_file, params_file), both given as paths."""
    d = os.path.join(MODELS, name)
    _, feed, want = refs(name)
    config = Config(os.path.join(d, files[0]), os.path.join(d, files[1]))
    assert config.params_file == os.path.join(d, files[1])
    check_outputs(Predictor(config).run(feed), want)


def model_with_save(tmp_path, file_path):
    """tmp_path/m: y = relu(x), and a `save` op writing x to file_path."""
    with rill.program_guard(rill.Program(), rill.Program()):
        x = rill.layers.data('x', [3])
        y = rill.layers.relu(x)
        rill.io.save_inference_model(str(tmp_path / 'm'), ['x'], [y], rill.Executor())
    path = tmp_path / 'm' / '__model__'
    prog = rill.Program.parse_from_string(path.read_bytes())
    prog.global_block().append_op('save', inputs={'X': ['x']},
                                  attrs={'file_path': str(file_path)}, infer_shape=False)
    path.write_bytes(prog.serialize_to_string())
    return str(tmp_path / 'm')


def test_ops_that_write_files_are_refused_unless_allowed_inside_a_directory(tmp_path):
    allowed, outside = tmp_path / 'allowed', tmp_path / 'outside'
    allowed.mkdir()
    outside.mkdir()
    data = np.ones((2, 3), 'float32')
    target = outside / 'x.bin'
    m = model_with_save(tmp_path, target)
    with pytest.raises(rill.FailedPreconditionError, match=r"'save' writes files.*%s" % target):
        Predictor(Config(m))
    # Outside the allowed directory: an absolute path elsewhere, a '..' that climbs out.
    with pytest.raises(rill.FailedPreconditionError, match='outside the directory allowed'):
        Predictor(Config(m, allow_file_ops=str(allowed)))
    m = model_with_save(tmp_path, '%s/../outside/x.bin' % allowed)
    with pytest.raises(rill.FailedPreconditionError, match=r"'save'.*\.\./outside/x\.bin"):
        Predictor(Config(m, allow_file_ops=allowed))
    assert not target.exists()
    # Inside: the save runs.
    m = model_with_save(tmp_path, allowed / 'x.bin')
    config = Config(m, allow_file_ops=allowed)
    assert config.allow_file_ops == str(allowed)
    Predictor(config).run({'x': data})
    assert (allowed / 'x.bin').exists()
    with pytest.raises(rill.NotFoundError, match='missing'):
        Config(m, allow_file_ops=str(tmp_path / 'missing'))
    with pytest.raises(rill.InvalidArgumentError, match='allow_file_ops'):
        Config(m, allow_file_ops=3)
