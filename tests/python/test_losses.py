"""The loss layers, fluid.backward.append_backward and fluid.gradients against Paddle
1.8.5 (paddle18/losses/expected.npz, written by paddle18/gen_losses.py from the same
programs): each loss's output and the gradient of each input under a weighted sum, the
(parameter, gradient) pairs append_backward returns with and without parameter_list,
and gradients' variables (None for an input without one). Also the errors bad input
gets."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_losses as gen  # noqa: E402


@pytest.fixture(scope='module')
def ref():
    return np.load(os.path.join(DATA, 'losses', 'expected.npz'))


def _run(main, startup, feed, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        return exe.run(main, feed=feed, fetch_list=fetch)


def test_losses_and_their_gradients_as_paddle18(ref):
    main, startup, outs, grads = gen.build(fluid)
    types = [op.type for op in main.global_block().ops]
    for t in ('log_loss', 'huber_loss', 'smooth_l1_loss', 'kldiv_loss', 'rank_loss',
              'margin_rank_loss', 'label_smooth', 'one_hot', 'smooth_l1_loss_grad',
              'kldiv_loss_grad', 'huber_loss_grad'):
        assert t in types, t
    vals = _run(main, startup, gen.data(), outs + grads)
    assert len(vals) == len([k for k in ref.files if k.startswith('loss_')])
    for i, v in enumerate(vals):
        want = ref['loss_%d' % i]
        got = np.asarray(v)
        assert got.shape == want.shape, (i, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg='fetch %d' % i)


@pytest.mark.parametrize('tag,plist', [('all', None), ('w1', ['w1'])])
def test_append_backward_pairs_and_gradients_as_paddle18(ref, tag, plist):
    main, startup, loss, pairs = gen.build_backward(fluid, plist)
    names = [[p.name, g.name] for p, g in pairs]
    assert names == ref['pairs_' + tag].tolist()
    assert all(isinstance(p, fluid.Parameter) for p, _ in pairs)
    d = gen.backward_data()
    vals = _run(main, startup, {'x': d['x'], 'y': d['y']}, [loss] + [g for _, g in pairs])
    for i, v in enumerate(vals):
        np.testing.assert_allclose(np.asarray(v), ref['bw_%s_%d' % (tag, i)], rtol=1e-5,
                                   atol=1e-7, err_msg='fetch %d' % i)


def test_gradients_as_paddle18(ref):
    main, startup, y, gs = gen.build_gradients(fluid)
    assert [g is None for g in gs] == ref['gradients_none'].tolist()
    d = gen.backward_data()
    vals = _run(main, startup, {k: d[k] for k in ('gx', 'gw', 'gz')},
                [y] + [g for g in gs if g is not None])
    for i, v in enumerate(vals):
        np.testing.assert_allclose(np.asarray(v), ref['gradients_%d' % i], rtol=1e-5,
                                   atol=1e-6, err_msg='fetch %d' % i)
    assert fluid.gradients is fluid.backward.gradients


def test_group_norm_as_paddle18(ref):
    main, startup, outs = gen.build_group_norm(fluid)
    ops = main.global_block().ops
    assert [len(op.input('Scale')) for op in ops if op.type == 'group_norm'] == [0, 1, 0]
    d = gen.backward_data()
    vals = _run(main, startup, {k: d[k] for k in ('gnx', 'gnh')}, outs)
    for i, v in enumerate(vals):
        np.testing.assert_allclose(np.asarray(v), ref['group_norm_%d' % i], rtol=1e-5,
                                   atol=1e-6, err_msg='fetch %d' % i)


def test_append_backward_callbacks_run_once_per_gradient_op():
    main, startup = fluid.Program(), fluid.Program()
    seen = []
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [2, 3], 'float32')
        loss = fluid.layers.mean(fluid.layers.fc(x, 2))
        before = len(main.global_block().ops)
        fluid.backward.append_backward(
            loss, callbacks=[lambda block, context: seen.append(block)])
    added = len(main.global_block().ops) - before
    assert added > 0 and len(seen) == added
    with pytest.raises(TypeError, match='callbacks'):
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            x = fluid.data('x', [2, 3], 'float32')
            fluid.backward.append_backward(fluid.layers.mean(fluid.layers.fc(x, 2)),
                                           callbacks=lambda block, context: None)


def test_lod_tensor_array_holds_lod_tensors():
    arr = fluid.LoDTensorArray()
    t = fluid.create_lod_tensor(np.arange(6, dtype='float32').reshape(3, 2), [[1, 2]])
    arr.append(t)
    assert len(arr) == 1 and arr[0].recursive_sequence_lengths() == [[1, 2]]
    assert fluid.core.LoDTensorArray is fluid.LoDTensorArray
    with pytest.raises(TypeError, match='LoDTensor'):
        arr.append(np.zeros(3))


def test_bad_inputs_name_the_layer_and_variable():
    L = fluid.layers
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('x', [4, 1], 'float32')
        i = fluid.data('i', [4, 1], 'int64')
        with pytest.raises(TypeError, match=r"huber_loss: label \('i'\) is int64"):
            L.huber_loss(x, i, 1.0)
        with pytest.raises(ValueError, match="kldiv_loss: reduction is 'avg'"):
            L.kldiv_loss(x, x, reduction='avg')
        with pytest.raises(ValueError, match='epsilon'):
            L.label_smooth(x, epsilon=1.5)
        wide = fluid.data('wide', [4, 3], 'float32')
        with pytest.raises(fluid.Error, match=r"log_loss.*Predicted \(wide\)"):
            L.log_loss(wide, wide)
        y5 = fluid.data('y5', [5, 1], 'float32')
        with pytest.raises(fluid.Error, match=r"margin_rank_loss.*X2 \(y5\)"):
            L.margin_rank_loss(x, x, y5)


def test_gradients_rejects_bad_arguments():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('x', [3], 'float32')
        x.stop_gradient = False
        y = fluid.layers.reduce_sum(x)
        with pytest.raises(ValueError, match='same number of target_gradients'):
            fluid.gradients([y, y], [x], target_gradients=[y])
        with pytest.raises(ValueError, match='shapes of target and grad are different'):
            fluid.gradients([y], [x], target_gradients=[x])
        with pytest.raises(TypeError, match='loss must be a Variable'):
            fluid.backward.append_backward('y')
