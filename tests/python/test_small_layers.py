"""Layers built on existing ops against Paddle 1.8.5 (paddle18/small_layers/, written by
paddle18/gen_small_layers.py from the same program): case, switch_case, nets.glu, mul,
sum, zeros_like, ones, zeros and create_global_var; and the fluid-level helpers
is_compiled_with_cuda, require_version, set_flags / get_flags and device_guard."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_small_layers as gen  # noqa: E402


def test_small_layers_as_paddle18():
    ref = np.load(os.path.join(DATA, 'small_layers', 'expected.npz'))
    x, y = gen.data()
    np.testing.assert_array_equal(ref['x'], x)
    main, startup, fetch = gen.build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        for k, (s, i) in enumerate(gen.FEEDS):
            vals = exe.run(main, feed={'s': np.array([s], 'float32'),
                                       'i': np.array([i], 'int32'), 'x': x, 'y': y},
                           fetch_list=fetch)
            for j, v in enumerate(vals):
                np.testing.assert_allclose(np.asarray(v), ref['%d_%d' % (k, j)], rtol=1e-6,
                                           err_msg='feed %d, fetch %d' % (k, j))


def test_one_hot_rank_and_step_counters_as_paddle18():
    ref = np.load(os.path.join(DATA, 'small_layers', 'expected.npz'))
    main, startup, fetch = gen.build_counter(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        for r in range(3):
            vals = exe.run(main, feed=gen.COUNTER_FEED, fetch_list=fetch)
            for j, v in enumerate(vals):
                want = ref['counter_%d_%d' % (r, j)]
                got = np.asarray(v)
                assert got.shape == want.shape and got.dtype == want.dtype, (r, j, got, want)
                np.testing.assert_array_equal(got, want, err_msg='run %d, fetch %d' % (r, j))


@pytest.mark.parametrize('dtype', ['int32', 'int64'])
def test_elementwise_mod_and_floordiv_truncate_as_paddle18(dtype):
    # Paddle 1.8.5 gives mod [1, -1, 1, -1, 0, 0] and floordiv [2, -2, -2, 2, 0, 1] here
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [6], dtype)
        y = fluid.data('y', [6], dtype)
        outs = [fluid.layers.elementwise_mod(x, y), fluid.layers.elementwise_floordiv(x, y)]
    xv = np.array([7, -7, 7, -7, 0, 5], dtype)
    yv = np.array([3, 3, -3, -3, 2, 5], dtype)
    m, d = fluid.Executor(fluid.CPUPlace()).run(main, feed={'x': xv, 'y': yv}, fetch_list=outs)
    np.testing.assert_array_equal(np.asarray(m), [1, -1, 1, -1, 0, 0])
    np.testing.assert_array_equal(np.asarray(d), [2, -2, -2, 2, 0, 1])
    np.testing.assert_array_equal(np.asarray(m), np.fmod(xv, yv))
    assert np.asarray(m).dtype == np.dtype(dtype)


def test_case_and_switch_case_check_their_arguments():
    L = fluid.layers
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        s = fluid.data('s', [1], 'float32')
        b = L.less_than(s, L.zeros([1], 'float32'))
        with pytest.raises(TypeError, match='case: pred must be a bool'):
            L.case([(s, lambda: s)])
        with pytest.raises(TypeError, match='default must be callable'):
            L.case([(b, lambda: s)], default=1)
        with pytest.raises(TypeError, match='uint8, int32 or int64'):
            L.switch_case(s, [lambda: s])
        i = fluid.data('i', [1], 'int64')
        with pytest.raises(ValueError, match='index 1 is given twice'):
            L.switch_case(i, [(1, lambda: s), (1, lambda: s)])


def test_fluid_helpers():
    # The build's answer: True where the CUDA backend was built, devices or not.
    assert fluid.is_compiled_with_cuda() is fluid.core.is_compiled_with_cuda()
    assert fluid.framework.is_compiled_with_cuda is fluid.is_compiled_with_cuda
    fluid.require_version('1.6')
    fluid.require_version('1.8.0', '1.8.9')
    with pytest.raises(Exception, match='requires >= 2.0'):
        fluid.require_version('2.0')
    with pytest.raises(TypeError, match='min_version must be a str'):
        fluid.require_version(1.6)
    fluid.set_flags({'FLAGS_eager_delete_tensor_gb': 0.0})
    assert fluid.get_flags('FLAGS_eager_delete_tensor_gb') == {'FLAGS_eager_delete_tensor_gb': 0.0}
    with pytest.raises(ValueError, match='was not set'):
        fluid.get_flags(['FLAGS_never_set'])
    with pytest.raises(ValueError, match='not a flag name'):
        fluid.set_flags({'eager': 1})
    with fluid.device_guard('gpu:0'):
        pass
    with pytest.raises(ValueError, match="device must be 'cpu'"):
        with fluid.device_guard('tpu'):
            pass


def test_program_parameter_and_persistable_lists_as_paddle18():
    import gen_ifelse_switch
    with fluid.unique_name.guard():  # fresh names, whatever ran before
        main, _, _, _ = gen_ifelse_switch.build_ifelse(fluid)
    # Paddle 1.8.5 lists these for the same program (parameters inside both IfElse
    # blocks included, the learning rate SGD creates among the persistables)
    assert [v.name for v in fluid.io.get_program_parameter(main)] == \
        ['wt', 'bt', 'wf', 'bf', 'wo', 'bo']
    assert [v.name for v in fluid.io.get_program_persistable_vars(main)] == \
        ['wt', 'bt', 'wf', 'bf', 'wo', 'bo', 'learning_rate_0']


@pytest.mark.parametrize('heads', [1, 2])
def test_scaled_dot_product_attention_as_paddle18(heads):
    import gen_attention
    ref = np.load(os.path.join(DATA, 'attention', 'expected.npz'))
    with fluid.unique_name.guard():
        main, startup, fetch = gen_attention.build(fluid, heads)
    params = main.global_block().all_parameters()
    assert len(params) == int(ref['nparams_%d' % heads])
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for p, val in zip(params, gen_attention.params(main)):
            assert list(p.shape) == list(val.shape)
            scope.find_var(p.name).get_tensor().set(val, fluid.CPUPlace())
        out, g = exe.run(main, feed=gen_attention.inputs(), fetch_list=fetch)
    np.testing.assert_allclose(np.asarray(out), ref['out_%d' % heads], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(g), ref['grad_%d' % heads], rtol=1e-5, atol=1e-6)


def test_weighted_average():
    avg = fluid.average.WeightedAverage()
    with pytest.raises(ValueError, match='nothing was added'):
        avg.eval()
    avg.add(np.array([2.0]), 3)
    avg.add(4.0, 1)
    np.testing.assert_allclose(avg.eval(), [2.5])
    with pytest.raises(ValueError, match="'weight' must be a number"):
        avg.add(1.0, 'two')
    avg.reset()
    avg.add(1.5, 2)
    assert avg.eval() == 1.5
