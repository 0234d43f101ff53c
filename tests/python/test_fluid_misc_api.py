"""Fluid 1.8 names rill adds beside its layers: layers.py_func (an op calling Python
through a registered host callback) trained forward and backward against the same model
built without it; ParallelExecutor, inplace_abn and gradients with several targets
against Paddle 1.8.5 (paddle18/fluid_misc/, written by paddle18/gen_fluid_misc.py from the
same programs); layers.load reading a tensor Paddle's save op wrote; memory_optimize and
release_memory (deprecated: they warn), Tensor, install_check, learning_rate_decay and
framework.load_op_library."""
import logging
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_fluid_misc as gen  # noqa: E402


@pytest.fixture(scope='module')
def ref():
    return np.load(os.path.join(DATA, 'fluid_misc', 'expected.npz'))


# ------------------------------------------------------------------ py_func ----

def _tanh_forward(x):
    return np.tanh(np.array(x))


def _tanh_backward(out, dout):
    out = np.array(out)
    return np.array(dout) * (1.0 - out * out)


START = {'w1': np.linspace(-0.6, 0.7, 12).reshape(4, 3).astype('float32'),
         'b1': np.array([0.1, -0.2, 0.05], 'float32'),
         'w2': np.linspace(0.4, -0.5, 6).reshape(3, 2).astype('float32'),
         'b2': np.array([0.0, 0.3], 'float32')}


def _mlp(through_py_func):
    """x -> fc -> tanh (a py_func, or the tanh layer) -> fc -> mean square loss."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [-1, 4], 'float32')
        y = fluid.data('y', [-1, 2], 'float32')
        h = fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(name='w1'),
                            bias_attr=fluid.ParamAttr(name='b1'))
        if through_py_func:
            t = main.current_block().create_var(name='t', dtype='float32', shape=[-1, 3])
            fluid.layers.py_func(_tanh_forward, h, t, backward_func=_tanh_backward,
                                 skip_vars_in_backward_input=h)
        else:
            t = fluid.layers.tanh(h)
        pred = fluid.layers.fc(t, 2, param_attr=fluid.ParamAttr(name='w2'),
                               bias_attr=fluid.ParamAttr(name='b2'))
        loss = fluid.layers.mean(fluid.layers.square(pred - y))
        fluid.optimizer.SGD(learning_rate=0.3).minimize(loss)
    return main, startup, loss


def _train(through_py_func, steps=4):
    main, startup, loss = _mlp(through_py_func)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    rs = np.random.RandomState(3)
    losses = []
    with fluid.scope_guard(scope):
        exe.run(startup)
        for k, v in START.items():
            scope.find_var(k).get_tensor().set(v, fluid.CPUPlace())
        for _ in range(steps):
            feed = {'x': rs.randn(5, 4).astype('float32'), 'y': rs.randn(5, 2).astype('float32')}
            l, = exe.run(main, feed=feed, fetch_list=[loss])
            losses.append(float(np.asarray(l).reshape(-1)[0]))
    return main, losses, {k: np.array(scope.find_var(k).get_tensor()) for k in START}


def test_py_func_trains_like_the_model_without_it():
    main, losses, params = _train(True)
    _, want_losses, want_params = _train(False)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    assert losses[-1] < losses[0]
    for k in START:
        np.testing.assert_allclose(params[k], want_params[k], rtol=1e-5, atol=1e-6, err_msg=k)
        assert not np.allclose(params[k], START[k]), '%s did not train' % k
    # the gradient op is a py_func calling the backward function, laid out as Paddle's:
    # X minus the skipped input, then Out and Out@GRAD; Out the gradient of X
    ops = [op for op in main.global_block().ops if op.type == 'py_func']
    assert len(ops) == 2
    fwd, bwd = ops
    assert bwd.attr('forward_callable_id') == fwd.attr('backward_callable_id')
    assert bwd.attr('backward_callable_id') == -1
    h = fwd.input('X')[0]
    assert fwd.attr('backward_skip_vars') == [h]
    assert bwd.input('X') == ['t', 't@GRAD']
    assert bwd.output('Out') == [h + '@GRAD']
    assert fluid.layers.py_func.registered_func(fwd.attr('forward_callable_id')) is _tanh_forward


def test_py_func_several_inputs_and_outputs_and_an_unwanted_gradient():
    """Two inputs (one without a gradient: its None is dropped) and two outputs; the
    function sees LoDTensors with their LoD and may return one."""
    seen = {}

    def forward(a, b):
        seen['lod'] = a.lod()
        s = np.array(a) + np.array(b)
        out = fluid.LoDTensor()
        out.set(s, fluid.CPUPlace())
        out.set_lod(a.lod())
        return out, np.array(a) * 2.0

    def backward(a, b, s, d, ds, dd):
        return np.array(ds) + 2.0 * np.array(dd), None

    main = fluid.default_main_program()
    a = fluid.data('a', [-1, 2], 'float32', lod_level=1)
    a.stop_gradient = False
    b = fluid.data('b', [-1, 2], 'float32')
    s = main.current_block().create_var(name='s', dtype='float32', shape=[-1, 2], lod_level=1)
    d = main.current_block().create_var(name='d', dtype='float32', shape=[-1, 2])
    outs = fluid.layers.py_func(forward, [a, b], [s, d], backward_func=backward)
    assert outs == [s, d]
    loss = fluid.layers.elementwise_add(fluid.layers.reduce_sum(s),
                                        fluid.layers.scale(fluid.layers.reduce_sum(d), 0.5))
    grad_a, = fluid.gradients(loss, [a])
    exe = fluid.Executor(fluid.CPUPlace())
    av = np.arange(6, dtype='float32').reshape(3, 2)
    lod_a = fluid.create_lod_tensor(av, [[1, 2]], fluid.CPUPlace())
    sv, dv, ga = exe.run(feed={'a': lod_a, 'b': np.ones((3, 2), 'float32')},
                         fetch_list=[s, d, grad_a], return_numpy=False)
    assert seen['lod'] == [[0, 1, 3]]
    np.testing.assert_array_equal(np.array(sv), av + 1)
    assert sv.lod() == [[0, 1, 3]]
    np.testing.assert_array_equal(np.array(dv), av * 2)
    np.testing.assert_array_equal(np.array(ga), np.full((3, 2), 2.0, 'float32'))


def test_py_func_without_outputs_runs_and_without_inputs_gets_none():
    calls = []
    x = fluid.data('x', [2], 'float32')
    fluid.layers.py_func(lambda v: calls.append(np.array(v).tolist()), x, None)
    o = fluid.default_main_program().current_block().create_var(name='o', dtype='int64',
                                                                shape=[1])
    fluid.layers.py_func(lambda: np.array([7], 'int64'), None, o)
    exe = fluid.Executor(fluid.CPUPlace())
    got, = exe.run(feed={'x': np.array([1.5, 2.5], 'float32')}, fetch_list=[o])
    assert calls == [[1.5, 2.5]]
    assert got.tolist() == [7] and got.dtype == np.int64


def test_an_error_in_the_function_is_a_rill_error_naming_op_and_function():
    def broken_forward(v):
        raise ValueError('no good value in %s' % (np.array(v).tolist(),))

    x = fluid.data('x', [2], 'float32')
    o = fluid.default_main_program().current_block().create_var(name='o', dtype='float32',
                                                                shape=[2])
    fluid.layers.py_func(broken_forward, x, o)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(fluid.InvalidArgumentError) as e:
        exe.run(feed={'x': np.array([1.0, 2.0], 'float32')}, fetch_list=[o])
    msg = str(e.value)
    for part in ("py_func", 'broken_forward', 'ValueError', 'no good value in [1.0, 2.0]'):
        assert part in msg, msg
    # the wrong number of results is reported the same way, and the executor goes on
    main2 = fluid.Program()
    with fluid.program_guard(main2, fluid.Program()):
        x2 = fluid.data('x', [2], 'float32')
        o2 = main2.current_block().create_var(name='o2', dtype='float32', shape=[2])
        fluid.layers.py_func(lambda v: (np.array(v), np.array(v)), x2, o2)
    with pytest.raises(fluid.Error, match='returned 2 value'):
        exe.run(main2, feed={'x': np.array([1.0, 2.0], 'float32')}, fetch_list=[o2])
    main3 = fluid.Program()
    with fluid.program_guard(main3, fluid.Program()):
        x3 = fluid.data('x', [2], 'float32')
        o3 = main3.current_block().create_var(name='o3', dtype='float32', shape=[2])
        fluid.layers.py_func(lambda v: np.array(v) * 3, x3, o3)
    got, = exe.run(main3, feed={'x': np.array([1.0, 2.0], 'float32')}, fetch_list=[o3])
    assert got.tolist() == [3.0, 6.0]


def test_py_func_checks_its_arguments():
    x = fluid.data('x', [2], 'float32')
    blk = fluid.default_main_program().current_block()
    o = blk.create_var(name='o', dtype='float32', shape=[2])
    with pytest.raises(TypeError, match='func must be a Python function'):
        fluid.layers.py_func(None, x, o)
    other = fluid.data('other', [2], 'float32')
    with pytest.raises(ValueError, match='not found in forward inputs and outputs'):
        fluid.layers.py_func(np.abs, x, o, backward_func=np.abs,
                             skip_vars_in_backward_input=other)
    no_shape = blk.create_var(name='no_shape', dtype='float32')
    with pytest.raises(ValueError, match='provided by users manually'):
        fluid.layers.py_func(np.abs, x, no_shape)


# --------------------------------------------------------- ParallelExecutor ----

def test_parallel_executor_trains_like_paddle(ref, monkeypatch):
    monkeypatch.setenv('CPU_NUM', '2')
    main, startup, loss = gen.build_parallel(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for k, v in gen.parallel_start().items():
            scope.find_var(k).get_tensor().set(v, fluid.CPUPlace())
        pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main)
        assert pe.device_count == 2
        for s, feed in enumerate(gen.parallel_feeds()):
            if s == 1:
                pe.drop_local_exe_scopes()
            l, = pe.run(fetch_list=[loss.name], feed=feed)
            # Paddle fetches one loss per place; rill one for the whole (joined) batch
            np.testing.assert_allclose(np.asarray(l).reshape(-1)[0],
                                       ref['pe_loss_%d' % s].mean(), rtol=1e-5)
    for p in gen.PE_PARAMS:
        np.testing.assert_allclose(np.array(scope.find_var(p).get_tensor()), ref['pe_' + p],
                                   rtol=1e-5, atol=1e-6, err_msg=p)


def test_parallel_executor_feed_dict_and_scope(capsys):
    x = fluid.data('x', [-1, 2], 'float32')
    y = fluid.layers.reduce_sum(x)
    scope = fluid.Scope()
    pe = fluid.ParallelExecutor(False, main_program=fluid.default_main_program(), scope=scope)
    got, = pe.run([y], feed_dict={'x': np.ones((3, 2), 'float32')})
    assert float(np.asarray(got).reshape(-1)[0]) == 6.0
    assert '`feed_dict` is deprecated' in capsys.readouterr().err
    got, = pe.run([y.name], feed=[{'x': np.ones((1, 2), 'float32')},
                                  {'x': np.full((2, 2), 2.0, 'float32')}], return_numpy=False)
    assert float(np.array(got).reshape(-1)[0]) == 10.0
    with pytest.raises(TypeError, match='share_vars_from'):
        fluid.ParallelExecutor(False, share_vars_from=object())
    assert fluid.parallel_executor.ParallelExecutor is fluid.ParallelExecutor


# ---------------------------------------------------------------- inplace_abn ----

@pytest.mark.parametrize('case', sorted(gen.ABN_CASES))
def test_inplace_abn_trains_like_paddle(ref, case):
    main, startup, out, loss = gen.build_abn(fluid, case)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for s, xb in enumerate(gen.abn_batches(case)):
            o, l, gx = exe.run(main, feed={'x': xb}, fetch_list=[out, loss, 'x@GRAD'])
            for name, v in (('out', o), ('loss', l), ('xgrad', gx)):
                np.testing.assert_allclose(np.asarray(v), ref['abn_%s_%s_%d' % (case, name, s)],
                                           rtol=2e-4, atol=2e-5, err_msg='%s %s' % (case, name))
        for p in ('abn_w', 'abn_b', 'abn_m', 'abn_v'):
            np.testing.assert_allclose(np.array(scope.find_var(p).get_tensor()),
                                       ref['abn_%s_%s' % (case, p)], rtol=2e-4, atol=2e-5,
                                       err_msg=p)


def test_inplace_abn_refuses_what_paddle_refuses():
    x = fluid.data('x', [2, 3, 4, 4], 'float32')
    with pytest.raises(ValueError, match='inplace_abn only support act'):
        fluid.layers.inplace_abn(x, act='relu')
    with pytest.raises(ValueError, match='bias_attr should not be False'):
        fluid.layers.inplace_abn(x, bias_attr=False)
    with pytest.raises(ValueError, match='data layout'):
        fluid.layers.inplace_abn(x, data_layout='NCDHW')


# ------------------------------------------------------------------ gradients ----

@pytest.mark.parametrize('seeded', [False, True])
def test_gradients_of_several_targets_like_paddle(ref, seeded):
    main, startup, dx = gen.build_gradients(fluid, seeded)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    got, = exe.run(main, feed={'x': gen.GRAD_X, 'g': gen.GRAD_G}, fetch_list=[dx])
    np.testing.assert_allclose(got, ref['gradients_dx_%d' % seeded], rtol=1e-6)


def test_gradients_sum_when_one_target_feeds_another():
    """y2 reads y1: y1's gradient is its seed plus what flows back from y2 (Paddle 1.8.5
    loses one of the two there); the target gradient itself gets no gradient."""
    xv = np.array([[0.5, -1.0, 2.0]], 'float32')
    gv = np.array([[1.0, 2.0, -1.0]], 'float32')
    exe = fluid.Executor(fluid.CPUPlace())
    for seeded in (True, False):
        main = fluid.Program()
        with fluid.program_guard(main, fluid.Program()):
            x = fluid.data('x', [1, 3], 'float32')
            x.stop_gradient = False
            g = fluid.data('g', [1, 3], 'float32')
            g.stop_gradient = False
            y1 = fluid.layers.elementwise_mul(x, x)
            y2 = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(y1, x))
            dx, = fluid.gradients([y1, y2], [x], target_gradients=[g, None] if seeded else None)
        got, = exe.run(main, feed={'x': xv, 'g': gv}, fetch_list=[dx])
        seed = gv if seeded else 1.0
        np.testing.assert_allclose(got, 2 * xv * seed + 3 * xv * xv, rtol=1e-6)
        assert main.global_block()._find_var_recursive('g@GRAD') is None


# ---------------------------------------------------------------- layers.load ----

def test_layers_load_reads_what_paddles_save_op_wrote(tmp_path):
    t = fluid.layers.create_tensor('float32')
    fluid.layers.load(t, os.path.join(DATA, 'fluid_misc', 'tensor.bin'))
    exe = fluid.Executor(fluid.CPUPlace())
    got, = exe.run(fetch_list=[t])
    np.testing.assert_array_equal(got, gen.TENSOR)
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        u = fluid.layers.create_tensor('float32')
        missing = str(tmp_path / 'nothing.bin')
        fluid.layers.load(u, missing)
    with pytest.raises(fluid.Error, match='nothing.bin'):
        exe.run(main, fetch_list=[u])
    with pytest.raises(TypeError, match='file_path'):
        fluid.layers.load(u, '')


# ------------------------------------------------------------ deprecated, misc ----

def test_memory_optimize_and_release_memory_only_warn(caplog):
    x = fluid.data('x', [2], 'float32')
    fluid.layers.scale(x, 2.0)
    prog = fluid.default_main_program()
    before = prog.desc.serialize_to_string() if hasattr(prog, 'desc') else None
    with caplog.at_level(logging.WARNING):
        assert fluid.memory_optimize(prog, print_log=True, level=1) is None
        assert fluid.release_memory(prog) is None
        fluid.transpiler.memory_optimize(prog)
        fluid.transpiler.release_memory(prog, skip_opt_set={'x'})
    text = caplog.text
    assert text.count('memory_optimize() is deprecated') == 2
    assert text.count('release_memory() is deprecated') == 2
    if before is not None:
        assert prog.desc.serialize_to_string() == before
    assert [op.type for op in prog.global_block().ops] == ['scale']


def test_tensor_is_lod_tensor_and_learning_rate_decay_is_the_schedules():
    assert fluid.Tensor is fluid.LoDTensor
    t = fluid.Tensor()
    t.set(np.ones((2, 2), 'float32'), fluid.CPUPlace())
    assert t.shape() == [2, 2]
    assert fluid.learning_rate_decay is fluid.layers.learning_rate_scheduler
    assert fluid.learning_rate_decay.exponential_decay is fluid.layers.exponential_decay


def test_install_check_trains_and_prints_paddles_text(capsys):
    fluid.install_check.run_check()
    out = capsys.readouterr().out
    assert 'Running Verify Fluid Program' in out
    assert 'Your Paddle Fluid works well on SINGLE GPU or CPU.' in out
    assert 'Your Paddle Fluid works well on MUTIPLE GPU or CPU.' in out
    assert "Your Paddle Fluid is installed successfully! Let's start deep Learning" in out


def test_install_check_reports_a_wrong_number(monkeypatch):
    from rill import install_check
    monkeypatch.setattr(install_check, '_INPUT', install_check._INPUT * 2)
    monkeypatch.setattr(install_check, '_after_step', lambda: 0.0)
    with pytest.raises(RuntimeError, match='install check: the output is'):
        install_check.run_check()


def test_load_op_library_is_the_plugin_loader(tmp_path):
    assert fluid.framework.load_op_library is fluid.load_op_library
    missing = str(tmp_path / 'libnope.so')
    with pytest.raises(fluid.NotFoundError, match='libnope.so'):
        fluid.framework.load_op_library(missing)
