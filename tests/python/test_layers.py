"""Every layer's output against numpy. Parameters are set through the global scope
(find_var(name).get_tensor().set(...)) after the startup program ran."""
import numpy as np
import pytest

import rill
import rill.layers as L

rng = np.random.RandomState(7)


def run(fetch, feed, params=None):
    exe = rill.Executor(rill.CPUPlace())
    exe.run(rill.default_startup_program())
    scope = rill.global_scope()
    for name, value in (params or {}).items():
        scope.find_var(name).get_tensor().set(value, rill.CPUPlace())
    return exe.run(feed=feed, fetch_list=fetch if isinstance(fetch, list) else [fetch])


def f32(*shape):
    return rng.uniform(-1, 1, shape).astype('float32')


def close(a, b, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def test_data_shape_prepends_batch_unless_told():
    assert L.data('a', [3, 4]).shape == (-1, 3, 4)
    assert L.data('b', [5, 3], append_batch_size=False).shape == (5, 3)
    assert L.data('c', [-1, 7]).shape == (-1, 7)
    assert L.data('d', [2], dtype='int64', lod_level=1).lod_level == 1


def test_fc_with_bias_and_activation():
    x = L.data('x', [6])
    out = L.fc(x, 4, act='relu', param_attr=rill.ParamAttr(name='w'),
               bias_attr=rill.ParamAttr(name='b'))
    assert out.shape == (-1, 4)
    xv, w, b = f32(5, 6), f32(6, 4), f32(4)
    got, = run(out, {'x': xv}, {'w': w, 'b': b})
    close(got, np.maximum(xv @ w + b, 0))


def test_fc_num_flatten_dims_and_several_inputs():
    x = L.data('x', [2, 3])
    y = L.data('y', [4])
    out = L.fc([x, y], 5, num_flatten_dims=1, param_attr=['wx', 'wy'], bias_attr=False)
    xv, yv, wx, wy = f32(3, 2, 3), f32(3, 4), f32(6, 5), f32(4, 5)
    got, = run(out, {'x': xv, 'y': yv}, {'wx': wx, 'wy': wy})
    close(got, xv.reshape(3, 6) @ wx + yv @ wy)


def test_embedding_rows_and_padding_idx():
    ids = L.data('ids', [1], dtype='int64')
    emb = L.embedding(ids, size=[10, 3], padding_idx=2, param_attr='table')
    table = f32(10, 3)
    iv = np.array([[1], [2], [9]], dtype='int64')
    got, = run(emb, {'ids': iv}, {'table': table})
    want = table[iv[:, 0]]
    want[1] = 0
    close(got.reshape(3, 3), want)


def conv_ref(x, w, stride, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out


def test_conv2d_stride_padding_bias():
    x = L.data('x', [3, 7, 7])
    out = L.conv2d(x, 4, 3, stride=2, padding=1, param_attr='w', bias_attr='b')
    assert out.shape == (-1, 4, 4, 4)
    xv, w, b = f32(2, 3, 7, 7), f32(4, 3, 3, 3), f32(4)
    got, = run(out, {'x': xv}, {'w': w, 'b': b})
    close(got, conv_ref(xv, w, 2, 1) + b[None, :, None, None], rtol=1e-4, atol=1e-4)


def test_pool2d_max_avg_global():
    x = L.data('x', [2, 4, 4])
    mx = L.pool2d(x, 2, 'max', 2)
    av = L.pool2d(x, 2, 'avg', 2)
    gl = L.pool2d(x, pool_type='avg', global_pooling=True)
    xv = f32(3, 2, 4, 4)
    a, b, c = run([mx, av, gl], {'x': xv})
    blocks = xv.reshape(3, 2, 2, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(3, 2, 2, 2, 4)
    close(a, blocks.max(-1))
    close(b, blocks.mean(-1))
    close(c, xv.mean((2, 3), keepdims=True))


def test_pool2d_rejects_unknown_type():
    x = L.data('x', [2, 4, 4])
    with pytest.raises(ValueError, match='pool_type'):
        L.pool2d(x, 2, 'median')


def test_batch_norm_train_and_test():
    x = L.data('x', [3, 2, 2])
    y = L.batch_norm(x, param_attr='s', bias_attr='bb', moving_mean_name='m',
                     moving_variance_name='v')
    xv, s, bb = f32(4, 3, 2, 2), f32(3), f32(3)
    got, = run(y, {'x': xv}, {'s': s, 'bb': bb})
    mu = xv.mean((0, 2, 3), keepdims=True)
    var = xv.var((0, 2, 3), keepdims=True)
    want = (xv - mu) / np.sqrt(var + 1e-5) * s[None, :, None, None] + bb[None, :, None, None]
    close(got, want, rtol=1e-4, atol=1e-4)
    m = np.array(rill.global_scope().find_var('m').get_tensor())
    close(m, 0.1 * mu.ravel(), rtol=1e-4, atol=1e-5)
    test = rill.default_main_program().clone(for_test=True)
    got, = rill.Executor().run(test, feed={'x': xv}, fetch_list=[y.name])
    v = np.array(rill.global_scope().find_var('v').get_tensor())
    want = (xv - m[None, :, None, None]) / np.sqrt(v[None, :, None, None] + 1e-5) * \
        s[None, :, None, None] + bb[None, :, None, None]
    close(got, want, rtol=1e-4, atol=1e-4)


def test_layer_norm():
    x = L.data('x', [3, 4])
    y = L.layer_norm(x, begin_norm_axis=1, param_attr='s', bias_attr='b')
    xv, s, b = f32(2, 3, 4), f32(12), f32(12)
    got, = run(y, {'x': xv}, {'s': s, 'b': b})
    flat = xv.reshape(2, 12)
    want = (flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5)
    close(got.reshape(2, 12), want * s + b, rtol=1e-4, atol=1e-4)


def test_dropout_train_masks_and_test_scales():
    x = L.data('x', [1000])
    y = L.dropout(x, 0.3, seed=5)
    xv = np.ones((2, 1000), np.float32)
    got, = run(y, {'x': xv})
    kept = got != 0
    assert 0.6 < kept.mean() < 0.8
    close(got[kept], 1.0)
    test = rill.default_main_program().clone(for_test=True)
    got, = rill.Executor().run(test, feed={'x': xv}, fetch_list=[y])
    close(got, 0.7 * xv)


@pytest.mark.parametrize('name,ref', [
    ('relu', lambda v: np.maximum(v, 0)),
    ('sigmoid', lambda v: 1 / (1 + np.exp(-v))),
    ('tanh', np.tanh),
    ('exp', np.exp),
    ('square', np.square),
    ('relu6', lambda v: np.clip(v, 0, 6)),
    ('leaky_relu', lambda v: np.where(v > 0, v, 0.02 * v)),
    ('swish', lambda v: v / (1 + np.exp(-v))),
])
def test_activations(name, ref):
    x = L.data('x', [5])
    y = getattr(L, name)(x)
    xv = f32(3, 5) * 4
    got, = run(y, {'x': xv})
    close(got, ref(xv), rtol=1e-5, atol=1e-5)


def test_swish_beta_changes_nothing_as_in_fluid_1_8():
    """Fluid 1.8.5's swish layer passes beta as 'slope', which the op lacks: Paddle runs
    beta 1.0 whatever the argument (its saved program says beta 1.0); rill does the same
    and warns."""
    x = L.data('x', [5])
    with pytest.warns(UserWarning, match='beta=2.0 has no effect'):
        y = L.swish(x, beta=2.0)
    ops = [op for op in rill.default_main_program().global_block().ops if op.type == 'swish']
    assert len(ops) == 1 and ops[0].attr('beta') == 1.0
    xv = f32(3, 5) * 4
    got, = run(y, {'x': xv})
    close(got, xv / (1 + np.exp(-xv)), rtol=1e-5, atol=1e-5)


def test_log_and_sqrt_on_positive_inputs():
    x = L.data('x', [5])
    a, b = L.log(x), L.sqrt(x)
    xv = np.abs(f32(3, 5)) + 0.1
    ga, gb = run([a, b], {'x': xv})
    close(ga, np.log(xv))
    close(gb, np.sqrt(xv))


def softmax_ref(v):
    e = np.exp(v - v.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_softmax_and_cross_entropy():
    x = L.data('x', [6])
    lab = L.data('lab', [1], dtype='int64')
    sm = L.softmax(x)
    ce = L.cross_entropy(sm, lab)
    loss, sm2 = L.softmax_with_cross_entropy(x, lab, return_softmax=True)
    xv = f32(4, 6) * 3
    lv = np.array([[0], [5], [2], [3]], 'int64')
    a, b, c, d = run([sm, ce, loss, sm2], {'x': xv, 'lab': lv})
    p = softmax_ref(xv)
    want = -np.log(p[np.arange(4), lv[:, 0]])[:, None]
    close(a, p)
    close(b, want, rtol=1e-5)
    close(c, want, rtol=1e-5)
    close(d, p)


def test_square_error_cost_and_mean():
    x = L.data('x', [3])
    y = L.data('y', [3])
    c = L.square_error_cost(x, y)
    m = L.mean(c)
    xv, yv = f32(4, 3), f32(4, 3)
    a, b = run([c, m], {'x': xv, 'y': yv})
    close(a, (xv - yv) ** 2)
    close(b, [((xv - yv) ** 2).mean()])


def test_accuracy_top1_and_top2():
    x = L.data('x', [4])
    lab = L.data('lab', [1], dtype='int64')
    a1 = L.accuracy(x, lab)
    a2 = L.accuracy(x, lab, k=2)
    xv = np.array([[0.1, 0.5, 0.2, 0.2], [0.9, 0.05, 0.03, 0.02], [0.2, 0.3, 0.4, 0.1]],
                  np.float32)
    lv = np.array([[1], [2], [1]], 'int64')
    g1, g2 = run([a1, a2], {'x': xv, 'lab': lv})
    close(g1, [1 / 3])
    close(g2, [2 / 3])


def test_concat_reshape_transpose():
    x = L.data('x', [2, 3])
    y = L.data('y', [1, 3])
    c = L.concat([x, y], axis=1)
    r = L.reshape(c, [0, -1])
    t = L.transpose(c, [0, 2, 1])
    xv, yv = f32(2, 2, 3), f32(2, 1, 3)
    a, b, d = run([c, r, t], {'x': xv, 'y': yv})
    cat = np.concatenate([xv, yv], 1)
    close(a, cat)
    close(b, cat.reshape(2, -1))
    close(d, cat.transpose(0, 2, 1))


def test_stack_forward_and_gradient():
    x = L.data('x', [2, 3])
    y = L.data('y', [2, 3])
    for v in (x, y):
        v.stop_gradient = False
    s0 = L.stack([x, y])
    s1 = L.stack([x, y], axis=1)
    s2 = L.stack([x, y, x], axis=-1)
    w = f32(2, 2, 3)
    loss = L.reduce_sum(L.elementwise_mul(s1, L.assign(w)))
    rill.optimizer.SGD(learning_rate=0.0).minimize(loss)
    xv, yv = f32(4, 2, 3), f32(4, 2, 3)
    a, b, gx, gy = run([s0, s2, 'x@GRAD', 'y@GRAD'], {'x': xv, 'y': yv})
    close(a, np.stack([xv, yv]))
    close(b, np.stack([xv, yv, xv], -1))
    # d sum(stack(x, y) * w) / dx = w[0] (broadcast over the batch), / dy = w[1]
    close(gx, np.broadcast_to(w[0], xv.shape))
    close(gy, np.broadcast_to(w[1], yv.shape))


def test_unstack_forward_and_gradient():
    x = L.data('x', [2, 3])
    x.stop_gradient = False
    parts = L.unstack(x, axis=2)
    assert len(parts) == 3
    w = f32(3)
    loss = L.reduce_sum(L.sums([L.scale(p, scale=float(w[i])) for i, p in enumerate(parts)]))
    rill.optimizer.SGD(learning_rate=0.0).minimize(loss)
    xv = f32(4, 2, 3)
    got = run(parts + ['x@GRAD'], {'x': xv})
    for i in range(3):
        close(got[i], xv[:, :, i])
    # d loss / dx[..., i] = w[i]
    close(got[3], np.broadcast_to(w, xv.shape))
    with pytest.raises(ValueError, match='num is needed'):
        L.unstack(x, axis=0)


def test_transpose_rejects_bad_perm():
    x = L.data('x', [2, 3])
    with pytest.raises(ValueError, match='permutation'):
        L.transpose(x, [0, 1, 1])


@pytest.mark.parametrize('name,ref', [
    ('elementwise_add', np.add), ('elementwise_sub', np.subtract),
    ('elementwise_mul', np.multiply), ('elementwise_div', np.divide),
    ('elementwise_max', np.maximum), ('elementwise_min', np.minimum),
])
def test_elementwise_with_axis_broadcast(name, ref):
    x = L.data('x', [3, 4])
    y = L.data('y', [3], append_batch_size=False)
    out = getattr(L, name)(x, y, axis=1)
    xv = f32(2, 3, 4)
    yv = f32(3) + (3 if name == 'elementwise_div' else 0)
    got, = run(out, {'x': xv, 'y': yv})
    close(got, ref(xv, yv[None, :, None]), rtol=1e-5)


def test_variable_operators_append_elementwise_ops():
    x = L.data('x', [3])
    y = L.data('y', [3])
    z = (x + y) * x - y / 2.0
    xv, yv = f32(2, 3), f32(2, 3)
    got, = run(z, {'x': xv, 'y': yv})
    close(got, (xv + yv) * xv - yv / 2.0)


def test_unknown_op_fails_when_appended():
    x = L.data('x', [3])
    blk = rill.default_main_program().global_block()
    out = blk.create_var(name='o', infer=True)
    with pytest.raises(rill.Error) as e:
        blk.append_op('no_such_op', inputs={'X': x}, outputs={'Out': out})
    assert 'no_such_op' in str(e.value)
    assert all(op.type != 'no_such_op' for op in blk.ops)


def test_layer_errors_name_the_input_and_leave_the_program_unchanged():
    x = L.data('x', [3])
    img = L.data('img', [2, 4, 4])
    blk = rill.default_main_program().global_block()
    n_ops = len(blk.ops)
    y = L.data('y', [4])
    names = set(blk.vars)
    with pytest.raises(ValueError, match="conv2d: input x must be 4-D"):
        L.conv2d(x, 2, 3)
    with pytest.raises(ValueError, match='2 input channels do not divide into 3 groups'):
        L.conv2d(img, 3, 3, groups=3)
    with pytest.raises(rill.Error) as e:
        L.elementwise_add(x, y)
    assert 'elementwise_add' in str(e.value)
    with pytest.raises(rill.Error) as e:
        L.concat([x, img], axis=1)
    assert 'concat' in str(e.value)
    assert len(blk.ops) == n_ops
    assert set(blk.vars) == names
    with pytest.raises(TypeError, match='must be a rill Variable'):
        L.fc(np.ones(3), 2)
    with pytest.raises(ValueError, match='dropout_prob'):
        L.dropout(x, 1.5)


def test_split_squeeze_unsqueeze_slice_sums():
    x = L.data('x', [6, 1])
    a, b = L.split(x, 2, dim=1)
    c, d, e = L.split(x, [1, 2, 3], dim=1)
    sq = L.squeeze(x, [2])
    un = L.unsqueeze(x, [0])
    sl = L.slice(x, axes=[1], starts=[1], ends=[-1])
    tot = L.sums([a, b])
    xv = f32(2, 6, 1)
    got = run([a, b, c, d, e, sq, un, sl, tot], {'x': xv})
    close(got[0], xv[:, :3])
    close(got[1], xv[:, 3:])
    close(got[2], xv[:, :1])
    close(got[3], xv[:, 1:3])
    close(got[4], xv[:, 3:])
    close(got[5], xv[:, :, 0])
    close(got[6], xv[None])
    close(got[7], xv[:, 1:-1])
    close(got[8], xv[:, :3] + xv[:, 3:])
    with pytest.raises(ValueError, match='one entry each'):
        L.slice(x, [1], [0, 1], [2])
