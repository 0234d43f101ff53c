"""rill.metrics against the numbers PaddlePaddle 1.8.5's fluid.metrics gave on the same
inputs (recorded here; the inputs are drawn from numpy's legacy RandomState(7), which
numpy keeps stable across versions)."""
import numpy as np
import pytest

import rill
from rill import metrics as M


def inputs():
    rng = np.random.RandomState(7)
    p1 = rng.rand(10, 1).astype('float32')
    l1 = rng.randint(0, 2, (10, 1)).astype('int64')
    p2 = rng.rand(6, 1).astype('float32')
    l2 = rng.randint(0, 2, (6, 1)).astype('int64')
    pp = rng.rand(40, 1).astype('float32')
    preds = np.concatenate([1 - pp, pp], 1)
    lab = (rng.rand(40, 1) < pp).astype('int64')
    return p1, l1, p2, l2, preds, lab


def test_the_package_exposes_the_module():
    assert rill.metrics is M
    assert 'DetectionMAP' in M.__all__ and callable(M.DetectionMAP)


def test_precision_accumulates_and_resets():
    p1, l1, p2, l2, _, _ = inputs()
    pr = M.Precision()
    pr.update(p1, l1)
    assert pr.eval() == 0.4
    pr.update(p2, l2)
    assert pr.eval() == 0.375
    assert str(pr) == 'Precision'
    assert pr.get_config() == {'name': 'Precision', 'states': {'tp': 3, 'fp': 5}}
    pr.reset()
    assert (pr.tp, pr.fp, pr.eval()) == (0, 0, 0.0)


def test_recall_and_composite():
    p1, l1, p2, l2, _, _ = inputs()
    rc = M.Recall('r')
    rc.update(p1, l1)
    assert rc.eval() == 0.5
    rc.update(p2, l2)
    assert rc.eval() == 0.6
    assert str(rc) == 'r'
    cm = M.CompositeMetric()
    cm.add_metric(M.Precision())
    cm.add_metric(M.Recall())
    cm.update(p1, l1)
    assert cm.eval() == [0.4, 0.5]
    with pytest.raises(ValueError):
        cm.add_metric(object())


def test_accuracy_weights_batches():
    ac = M.Accuracy()
    with pytest.raises(ValueError):
        ac.eval()
    ac.update(np.array([0.5], 'float32'), 10)
    ac.update(0.75, 6)
    got = ac.eval()
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    np.testing.assert_array_equal(got, np.array([0.59375], 'float32'))
    ac.reset()
    assert isinstance(ac.value, np.ndarray) and ac.value.tolist() == [0.0] and ac.weight == 0.0
    ac.update(0.25, 4)
    np.testing.assert_array_equal(ac.eval(), [0.25])
    with pytest.raises(ValueError):
        ac.update(0.5, -1)
    with pytest.raises(ValueError):
        ac.update('0.5', 1)


def test_chunk_evaluator():
    ce = M.ChunkEvaluator()
    assert ce.eval() == (0, 0, 0)
    ce.update(np.array([5]), np.array([4]), np.array([3]))
    ce.update(2, 3, 1)
    for v in ce.eval():
        np.testing.assert_allclose(v, [0.5714285714285714], rtol=1e-15)


def test_edit_distance():
    ed = M.EditDistance('ed')
    with pytest.raises(ValueError):
        ed.eval()
    ed.update(np.array([[0.], [2.], [1.], [0.]], 'float32'), 4)
    ed.update(np.array([[3.], [0.]], 'float32'), 2)
    assert ed.eval() == (1.0, 0.5)
    ed.reset()
    assert float(ed.total_distance) == 0.0 and ed.seq_num == 0 and int(ed.instance_error) == 0


def test_auc_and_its_buckets_surviving_reset():
    _, _, _, _, preds, lab = inputs()
    au = M.Auc('auc')
    assert au.eval() == 0.0
    au.update(preds[:25], lab[:25])
    assert au.eval() == pytest.approx(0.8571428571428571, rel=1e-15)
    au.update(preds[25:], lab[25:])
    assert au.eval() == pytest.approx(0.8636363636363636, rel=1e-15)
    au.reset()  # Fluid 1.8 keeps the buckets (underscore state)
    assert au.eval() == pytest.approx(0.8636363636363636, rel=1e-15)
    au7 = M.Auc('a7', num_thresholds=7)
    au7.update(preds, lab)
    assert au7.eval() == pytest.approx(0.8636363636363636, rel=1e-15)
    with pytest.raises(ValueError, match='probability'):
        au7.update(np.array([[0.0, 1.5]]), np.array([1]))


# layers.auc: Paddle 1.8.5's (auc, batch auc) after each of four batches of 8 drawn
# from RandomState(3), num_thresholds 7, and its counts after the last batch.
PADDLE18_AUC = {
    1: ([(1.0, 1.0), (0.8333333333333334, 0.5714285714285714),
         (0.8636363636363635, 0.90625), (0.8744939271255061, 0.9166666666666666)],
        [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 4],
        [1, 3, 1, 1, 0, 0, 0, 0, 1, 3, 1, 1, 0, 0, 0, 0, 4]),
    2: ([(1.0, 1.0), (0.8333333333333334, 0.8333333333333334),
         (0.8636363636363635, 0.8272727272727273), (0.8744939271255061, 0.9166666666666666)],
        [0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1, 2, 1, 1, 1, 0, 4],
        [1, 1, 1, 1, 0, 0, 0, 0, 1, 3, 1, 1, 0, 0, 0, 0, 2, 4, 2, 2, 0, 0, 0, 0, 4]),
}
PADDLE18_AUC_GLOBAL_COUNTS = ([[0, 0, 3, 4, 2, 1, 3, 0]], [[4, 8, 2, 4, 1, 0, 0, 0]])


@pytest.mark.parametrize('slide', [1, 2])
def test_layers_auc_as_paddle18(slide):
    rng = np.random.RandomState(3)
    batches = []
    for _ in range(4):
        p = rng.rand(8, 1).astype('float32')
        batches.append((np.concatenate([1 - p, p], 1), (rng.rand(8, 1) < p).astype('int64')))
    x = rill.data('x', [None, 2], 'float32')
    y = rill.data('y', [None, 1], 'int64')
    auc, batch_auc, stats = rill.layers.auc(x, y, num_thresholds=7, slide_steps=slide)
    assert [s.shape for s in stats] == [((1 + slide) * 8 + 1,)] * 2 + [(1, 8)] * 2
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    want, want_pos, want_neg = PADDLE18_AUC[slide]
    for (p, l), (w_auc, w_batch) in zip(batches, want):
        got = exe.run(feed={'x': p, 'y': l}, fetch_list=[auc, batch_auc] + stats)
        assert got[0].dtype == np.float64 and got[0].shape == (1,)
        assert float(got[0][0]) == pytest.approx(w_auc, rel=1e-15)
        assert float(got[1][0]) == pytest.approx(w_batch, rel=1e-15)
    assert got[2].tolist() == want_pos and got[3].tolist() == want_neg
    assert (got[4].tolist(), got[5].tolist()) == PADDLE18_AUC_GLOBAL_COUNTS


def test_layers_auc_default_thresholds_and_pr_curve():
    """4095 thresholds, probabilities 0 and 1 included; Paddle 1.8.5 gives the ROC area
    for curve='PR' too."""
    rng = np.random.RandomState(11)
    p = rng.rand(300, 1).astype('float32')
    p[:3] = [[1.0], [0.0], [0.99999994]]
    preds = np.concatenate([1 - p, p], 1)
    labels = (rng.rand(300, 1) < p).astype('int64')
    x = rill.data('x', [None, 2], 'float32')
    y = rill.data('y', [None, 1], 'int64')
    roc = rill.layers.auc(x, y)
    pr = rill.layers.auc(x, y, curve='PR')
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    want = [(0.9070048309178744, 0.9070048309178744), (0.8607442977190877, 0.8213141025641025),
            (0.8699519658423768, 0.8978365384615384)]
    for i, (w_auc, w_batch) in enumerate(want):
        got = exe.run(feed={'x': preds[i * 100:(i + 1) * 100], 'y': labels[i * 100:(i + 1) * 100]},
                      fetch_list=[roc[0], roc[1], pr[0], pr[1]])
        for a, b in ((got[0], w_auc), (got[1], w_batch), (got[2], w_auc), (got[3], w_batch)):
            assert float(a[0]) == pytest.approx(b, rel=1e-15)


def _lod(seqs):
    flat = np.array([t for s in seqs for t in s], 'int64').reshape(-1, 1)
    return rill.create_lod_tensor(flat, [[len(s) for s in seqs]], rill.CPUPlace())


def test_layers_edit_distance_as_paddle18():
    h = rill.data('h', [None, 1], 'int64', lod_level=1)
    r = rill.data('r', [None, 1], 'int64', lod_level=1)
    hp = rill.data('hp', [None, 5], 'int64')
    rp = rill.data('rp', [None, 4], 'int64')
    hl = rill.data('hl', [None], 'int64')
    rl = rill.data('rl', [None], 'int64')
    d1, n1 = rill.layers.edit_distance(h, r)
    d2, _ = rill.layers.edit_distance(h, r, normalized=False)
    d3, n3 = rill.layers.edit_distance(hp, rp, normalized=False, input_length=hl,
                                       label_length=rl)
    assert d1.shape == (-1, 1) and n1.shape == (1,)
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    got = exe.run(feed={
        'h': _lod([[1, 2, 3], [4, 5], [7], [], [1, 1, 2, 2]]),
        'r': _lod([[1, 3, 3, 4], [4, 5], [8, 9], [2, 3], [2, 1, 2]]),
        'hp': np.array([[1, 2, 3, 9, 9], [5, 6, 0, 0, 0], [1, 1, 1, 1, 1]], 'int64'),
        'rp': np.array([[1, 3, 0, 0], [5, 6, 7, 8], [1, 1, 0, 0]], 'int64'),
        'hl': np.array([3, 2, 5], 'int64'), 'rl': np.array([2, 4, 2], 'int64')},
        fetch_list=[d1, n1, d2, d3, n3])
    assert got[0].dtype == np.float32 and got[0].shape == (5, 1)
    assert got[0].ravel().tolist() == [0.5, 0.0, 1.0, 1.0, np.float32(2) / np.float32(3)]
    assert got[1].tolist() == [5]
    assert got[2].ravel().tolist() == [2.0, 0.0, 2.0, 2.0, 2.0]
    assert got[3].ravel().tolist() == [1.0, 2.0, 3.0] and got[4].tolist() == [3]
    # ignored_tokens go through sequence_erase first, as in Paddle (values checked against
    # Paddle 1.8.5 in test_seqops.py)
    rill.layers.edit_distance(h, r, ignored_tokens=[0])
    types = [op.type for op in rill.default_main_program().global_block().ops]
    assert types[-3:] == ['sequence_erase', 'sequence_erase', 'edit_distance']


def test_evaluator_edit_distance_as_paddle18():
    h = rill.data('h', [None, 1], 'int64', lod_level=1)
    r = rill.data('r', [None, 1], 'int64', lod_level=1)
    with pytest.warns(Warning, match='deprecated'):
        ev = rill.evaluator.EditDistance(h, r)
    exe = rill.Executor()
    exe.run(rill.default_startup_program())
    ev.reset(exe)
    got = exe.run(feed={'h': _lod([[1, 2, 3], [4, 5], [7], [2], [1, 1, 2, 2]]),
                        'r': _lod([[1, 3, 3, 4], [4, 5], [8, 9], [2, 3], [2, 1, 2]])},
                  fetch_list=ev.metrics)
    assert float(got[0][0]) == pytest.approx(2.6666667461395264, rel=1e-7)
    assert got[1].tolist() == [4]
    feed = {'h': _lod([[3, 4], [1]]), 'r': _lod([[3, 4], [2]])}
    exe.run(feed=feed)
    dist, err = ev.eval(exe)
    assert dist.ravel()[0] == pytest.approx(0.523809552192688, rel=1e-7)
    assert err.ravel()[0] == pytest.approx(0.7142857313156128, rel=1e-7)
    ev.reset(exe)
    exe.run(feed=feed)
    assert [v.ravel().tolist() for v in ev.eval(exe)] == [[0.5], [0.5]]
    assert issubclass(rill.evaluator.DetectionMAP, rill.evaluator.Evaluator)
