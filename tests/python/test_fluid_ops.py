"""Layers over reduce_max/min/prod, cos_sim, sigmoid_cross_entropy_with_logits,
sequence_pool and sequence_conv (forward numbers and training through their gradients),
and L2 decay of a sparse gradient as Paddle 1.8 applies it."""
import numpy as np
import pytest

import rill
import rill.layers as L


def run(fetch, feed):
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    return exe.run(feed=feed, fetch_list=fetch)


def test_reduce_max_min_prod_layers_match_numpy():
    xv = np.random.RandomState(0).uniform(0.5, 1.5, (2, 3, 4)).astype('float32')
    x = L.data('x', [2, 3, 4], append_batch_size=False)
    outs = [L.reduce_max(x, dim=1), L.reduce_min(x, dim=[0, 2], keep_dim=True),
            L.reduce_prod(x), L.reduce_max(x, dim=-1, keep_dim=True)]
    got = run(outs, {'x': xv})
    np.testing.assert_allclose(got[0], xv.max(1), rtol=1e-6)
    np.testing.assert_allclose(got[1], xv.min((0, 2), keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(got[2].reshape(-1), [xv.prod()], rtol=1e-5)
    np.testing.assert_allclose(got[3], xv.max(-1, keepdims=True), rtol=1e-6)


@pytest.mark.parametrize('reduce', ['reduce_max', 'reduce_min', 'reduce_prod'])
def test_training_through_reductions_follows_their_gradient(reduce):
    # One SGD step on w of loss = reduce(w * x) against numpy's gradient of that loss.
    xv = np.array([[1.0, 2.0, 0.5], [0.8, 1.5, 1.2]], 'float32')
    w0 = np.array([[1.1, 0.9, 1.3], [0.7, 1.05, 0.95]], 'float32')
    x = L.data('x', [2, 3], append_batch_size=False)
    w = L.create_parameter([2, 3], 'float32', name='w',
                           default_initializer=rill.initializer.NumpyArrayInitializer(w0))
    y = getattr(L, reduce)(L.elementwise_mul(w, x), dim=1)
    loss = L.reduce_sum(y)
    rill.optimizer.SGD(0.1).minimize(loss)
    run([loss], {'x': xv})
    p = w0 * xv
    if reduce == 'reduce_prod':
        g = p.prod(1, keepdims=True) / p * xv
    else:
        best = p.max(1, keepdims=True) if reduce == 'reduce_max' else p.min(1, keepdims=True)
        g = (p == best) * xv
    after = np.array(rill.global_scope().find_var('w').get_tensor())
    np.testing.assert_allclose(after, w0 - 0.1 * g, rtol=1e-5)


def test_cos_sim_layer_with_broadcast_row():
    rng = np.random.RandomState(1)
    xv, yv = rng.randn(4, 5).astype('float32'), rng.randn(1, 5).astype('float32')
    x = L.data('x', [5])
    y = L.data('y', [5])
    out = L.cos_sim(x, y)
    assert list(out.shape) == [-1, 1]
    got, = run([out], {'x': xv, 'y': yv})
    want = (xv @ yv.T) / np.linalg.norm(xv, axis=1, keepdims=True) / np.linalg.norm(yv)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_sigmoid_cross_entropy_with_logits_layer_matches_paddle():
    xv = np.array([[1.5, -2, 0.3], [0.7, 4, -1]], 'float32')
    lv = np.array([[1, 0, -1], [0.3, -1, 1]], 'float32')
    x = L.data('x', [3])
    lab = L.data('l', [3])
    out = L.sigmoid_cross_entropy_with_logits(x, lab, ignore_index=-1, normalize=True)
    got, = run([out], {'x': xv, 'l': lv})
    # Paddle 1.8.5 on the same inputs.
    np.testing.assert_allclose(got, [[0.05035333, 0.03173201, 0.0],
                                     [0.22329652, 0.0, 0.3283154]], rtol=1e-5)


@pytest.mark.parametrize('pool_type', ['average', 'sum', 'sqrt', 'max', 'last', 'first'])
def test_sequence_conv_pool_trains(pool_type):
    # Sequences of word ids; the class is whether word 1 occurs. The loss must fall.
    rng = np.random.RandomState(2)
    seqs, labels = [], []
    for _ in range(16):
        n = rng.randint(2, 6)
        s = rng.randint(2, 8, n)
        if rng.rand() < 0.5:
            s[rng.randint(n)] = 1
        seqs.append(s.reshape(-1, 1).astype('int64'))
        labels.append([int((s == 1).any())])
    words = rill.create_lod_tensor(seqs, [[len(s) for s in seqs]])
    yv = np.array(labels, 'int64')
    w = L.data('w', [1], dtype='int64', lod_level=1)
    y = L.data('y', [1], dtype='int64')
    emb = L.embedding(w, [8, 6])
    feat = rill.nets.sequence_conv_pool(emb, num_filters=8, filter_size=3, act='tanh',
                                        pool_type=pool_type)
    loss = L.mean(L.softmax_with_cross_entropy(L.fc(feat, 2), y))
    rill.optimizer.Adam(0.05).minimize(loss)
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    losses = [float(np.ravel(exe.run(feed={'w': words, 'y': yv}, fetch_list=[loss])[0])[0])
              for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0], losses


def test_sequence_pool_layer_pools_each_sequence():
    xv = np.arange(10, dtype='float32').reshape(5, 2)
    x = L.data('x', [2], lod_level=1)
    outs = [L.sequence_pool(x, t) for t in ('sum', 'max', 'first', 'last', 'sqrt')]
    got = run(outs, {'x': rill.create_lod_tensor(xv, [[2, 3]])})
    np.testing.assert_allclose(got[0], [xv[:2].sum(0), xv[2:].sum(0)])
    np.testing.assert_allclose(got[1], [xv[1], xv[4]])
    np.testing.assert_allclose(got[2], [xv[0], xv[2]])
    np.testing.assert_allclose(got[3], [xv[1], xv[4]])
    np.testing.assert_allclose(got[4], [xv[:2].sum(0) / np.sqrt(2), xv[2:].sum(0) / np.sqrt(3)],
                               rtol=1e-6)


@pytest.mark.parametrize('second_param', [False, True])
def test_l2_decay_of_a_sparse_gradient_decays_every_row_as_paddle(second_param):
    # Paddle 1.8 sums a selected-rows gradient with coeff * param into a new dense
    # gradient <grad>@NEWGRAD@, so SGD moves every row: E - lr * (g + coeff * E).
    e0 = np.random.RandomState(3).randn(6, 2).astype('float32')
    ids = L.data('ids', [1], dtype='int64')
    init = rill.initializer.NumpyArrayInitializer(e0)
    reg = rill.regularizer.L2Decay(0.1)
    emb = L.embedding(ids, [6, 2], is_sparse=True,
                      param_attr=rill.ParamAttr('E', initializer=init,
                                                regularizer=reg if second_param else None))
    loss = L.mean(emb)
    feed = {'ids': np.array([[1], [3], [1]], 'int64')}
    if second_param:
        # A dense parameter without decay: weight decay goes op by op in Python.
        x = L.data('x', [2])
        loss = L.elementwise_add(loss, L.mean(L.fc(x, 1, param_attr='W', bias_attr=False)))
        feed['x'] = np.ones((3, 2), 'float32')
        opt = rill.optimizer.SGD(0.5)
    else:
        opt = rill.optimizer.SGD(0.5, regularization=reg)
    _, pg = opt.minimize(loss)
    # minimize returns the backward pass's pairs, as Fluid's; the sgd op applies the
    # decayed gradient
    assert dict((p.name, g.name) for p, g in pg)['E'] == 'E@GRAD'
    sgd = [op for op in rill.default_main_program().global_block().ops
           if op.type == 'sgd' and op.input('Param') == ['E']]
    assert sgd[0].input('Grad') == ['E@GRAD@NEWGRAD@']
    run([loss], feed)
    g = np.zeros_like(e0)
    for i in (1, 3, 1):
        g[i] += 1.0 / 6
    after = np.array(rill.global_scope().find_var('E').get_tensor())
    np.testing.assert_allclose(after, e0 - 0.5 * (g + 0.1 * e0), rtol=1e-6, atol=1e-7)


def test_l2_decay_of_a_table_looked_up_twice_keeps_both_sparse_gradients():
    # Two lookups of one table: backward adds their selected rows with a sum op, whose
    # result is selected rows too, so the decay goes to <grad>@NEWGRAD@ and both
    # lookups' rows still reach the update (once, both were dropped, leaving the decay).
    e0 = np.random.RandomState(4).randn(5, 2).astype('float32')
    init = rill.initializer.NumpyArrayInitializer(e0)
    ids = L.data('ids', [1], dtype='int64')
    ids2 = L.data('ids2', [1], dtype='int64')
    e = L.embedding(ids, [5, 2], is_sparse=True, param_attr=rill.ParamAttr('T', initializer=init))
    e2 = L.embedding(ids2, [5, 2], is_sparse=True, param_attr='T')
    loss = L.elementwise_add(L.reduce_sum(e), L.reduce_sum(L.elementwise_mul(e2, e2)))
    _, pg = rill.optimizer.SGD(0.5, regularization=rill.regularizer.L2Decay(0.1)).minimize(loss)
    assert dict((p.name, g.name) for p, g in pg)['T'] == 'T@GRAD'
    block = rill.default_main_program().global_block()
    sgd = [op for op in block.ops if op.type == 'sgd' and op.input('Param') == ['T']]
    assert sgd[0].input('Grad') == ['T@GRAD@NEWGRAD@']
    assert block.var('T@GRAD').type == rill.core.SELECTED_ROWS
    run([loss], {'ids': np.array([[1], [1], [3]], 'int64'),
                 'ids2': np.array([[2], [1], [2]], 'int64')})
    g = np.zeros_like(e0)
    for i in (1, 1, 3):
        g[i] += 1.0
    for i in (2, 1, 2):
        g[i] += 2 * e0[i]
    after = np.array(rill.global_scope().find_var('T').get_tensor())
    np.testing.assert_allclose(after, e0 - 0.5 * (g + 0.1 * e0), rtol=1e-6, atol=1e-6)
