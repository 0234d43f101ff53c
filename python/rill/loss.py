"""Fluid 1.x's loss layers (re-exported by rill.layers): log_loss, huber_loss, smooth_l1,
kldiv_loss, rank_loss, margin_rank_loss, label_smooth, bpr_loss and sigmoid_focal_loss
append their ops (schemas in
operators/loss.c); mse_loss, dice_loss and npair_loss are compositions emitting the ops
Paddle's do."""

from . import layers
from .framework import Variable

__all__ = ['log_loss', 'huber_loss', 'smooth_l1', 'kldiv_loss', 'rank_loss',
           'margin_rank_loss', 'label_smooth', 'mse_loss', 'dice_loss', 'bpr_loss',
           'sigmoid_focal_loss', 'npair_loss']

_FLOATS = ('float32', 'float64')


def _check(x, what, layer, dtypes=_FLOATS, optional=False):
    if x is None and optional:
        return
    if not isinstance(x, Variable):
        raise TypeError("%s: %s must be a Variable, got %r" % (layer, what, x))
    if x.dtype.name not in dtypes:
        raise TypeError("%s: %s ('%s') is %s, expected %s" %
                        (layer, what, x.name, x.dtype.name, ' or '.join(dtypes)))


def _op(layer, op, inputs, outputs, attrs=None, dtype=None, name=None):
    """Appends `op`; `outputs` lists output slot names; returns their new variables."""
    h = layers._Helper(layer, name)
    outs = [h.tmp(dtype) for _ in outputs]
    h.append(op, {k: v for k, v in inputs.items() if v is not None},
             {k: v for k, v in zip(outputs, outs)}, attrs or {})
    return outs


def log_loss(input, label, epsilon=1e-4, name=None):
    """-label log(input + eps) - (1 - label) log(1 - input + eps), [N, 1]."""
    _check(input, 'input', 'log_loss', ('float32',))
    _check(label, 'label', 'log_loss', ('float32',))
    return _op('log_loss', 'log_loss', {'Predicted': input, 'Labels': label}, ['Loss'],
               {'epsilon': float(epsilon)}, input.dtype.name, name)[0]


def huber_loss(input, label, delta):
    """Elementwise Huber loss of residual label - input."""
    _check(input, 'input', 'huber_loss')
    _check(label, 'label', 'huber_loss')
    return _op('huber_loss', 'huber_loss', {'X': input, 'Y': label}, ['Out', 'Residual'],
               {'delta': float(delta)}, input.dtype.name)[0]


def smooth_l1(x, y, inside_weight=None, outside_weight=None, sigma=None):
    """Row sums of the smooth L1 loss of (x - y) * inside_weight, weighted by
    outside_weight: [N, 1]."""
    _check(x, 'x', 'smooth_l1_loss')
    _check(y, 'y', 'smooth_l1_loss')
    _check(inside_weight, 'inside_weight', 'smooth_l1_loss', optional=True)
    _check(outside_weight, 'outside_weight', 'smooth_l1_loss', optional=True)
    return _op('smooth_l1_loss', 'smooth_l1_loss',
               {'X': x, 'Y': y, 'InsideWeight': inside_weight,
                'OutsideWeight': outside_weight}, ['Diff', 'Out'],
               {'sigma': float(sigma) if sigma is not None else 1.0}, x.dtype.name)[1]


def kldiv_loss(x, target, reduction='mean', name=None):
    """Kullback-Leibler divergence of target from exp(x): target (log target - x),
    reduced by 'none', 'batchmean', 'mean' or 'sum'."""
    _check(x, 'x', 'kldiv_loss')
    _check(target, 'target', 'kldiv_loss')
    if not isinstance(reduction, str):
        raise TypeError("kldiv_loss: reduction must be a str, got %r" % (reduction,))
    if reduction not in ('none', 'batchmean', 'mean', 'sum'):
        raise ValueError("kldiv_loss: reduction is '%s', expected 'none', 'batchmean', "
                         "'mean' or 'sum'" % reduction)
    return _op('kldiv_loss', 'kldiv_loss', {'X': x, 'Target': target}, ['Loss'],
               {'reduction': reduction}, x.dtype.name, name)[0]


def rank_loss(label, left, right, name=None):
    """RankNet's loss log(1 + e^(left - right)) - label (left - right), [N, 1]."""
    for v, what in ((label, 'label'), (left, 'left'), (right, 'right')):
        _check(v, what, 'rank_loss', ('float32',))
    return _op('rank_loss', 'rank_loss', {'Label': label, 'Left': left, 'Right': right},
               ['Out'], None, 'float32', name)[0]


def margin_rank_loss(label, left, right, margin=0.1, name=None):
    """max(0, -label (left - right) + margin), [N, 1]."""
    for v, what in ((label, 'label'), (left, 'left'), (right, 'right')):
        _check(v, what, 'margin_rank_loss', ('float32',))
    return _op('margin_rank_loss', 'margin_rank_loss', {'Label': label, 'X1': left,
                                                        'X2': right}, ['Out', 'Activated'],
               {'margin': float(margin)}, left.dtype.name, name)[0]


def label_smooth(label, prior_dist=None, epsilon=0.1, dtype='float32', name=None):
    """(1 - epsilon) label + epsilon prior_dist (uniform 1 / K without one). As in Fluid,
    label gets stop_gradient."""
    if epsilon > 1. or epsilon < 0.:
        raise ValueError('label_smooth: epsilon must be in [0, 1], got %r' % (epsilon,))
    _check(label, 'label', 'label_smooth')
    _check(prior_dist, 'prior_dist', 'label_smooth', optional=True)
    label.stop_gradient = True
    return _op('label_smooth', 'label_smooth', {'X': label, 'PriorDist': prior_dist}, ['Out'],
               {'epsilon': float(epsilon)}, dtype, name)[0]


def mse_loss(input, label):
    """mean((input - label)^2): reduce_mean over square_error_cost, as Fluid."""
    _check(input, 'input', 'mse_loss')
    _check(label, 'label', 'mse_loss')
    return layers.reduce_mean(layers.square_error_cost(input, label))


def dice_loss(input, label, epsilon=0.00001, name=None):
    """1 - 2 |input . one_hot(label)| / (|input| + |one_hot(label)|), averaged over the
    batch; input [N, ..., K] probabilities, label [N, ..., 1] int ids."""
    _check(input, 'input', 'dice_loss')
    _check(label, 'label', 'dice_loss', ('int32', 'int64'))
    depth = input.shape[-1]
    if depth is None or depth <= 0:
        raise ValueError("dice_loss: the last dim of input ('%s') must be known, got %s"
                         % (input.name, list(input.shape)))
    one_hot = layers.one_hot(label, depth=depth)
    dims = list(range(1, len(input.shape)))
    inse = layers.reduce_sum(layers.elementwise_mul(input, one_hot), dim=dims)
    denom = layers.elementwise_add(layers.reduce_sum(input, dim=dims),
                                   layers.reduce_sum(one_hot, dim=dims))
    score = layers.elementwise_div(layers.scale(inse, scale=2.0),
                                   layers.scale(denom, bias=float(epsilon)))
    return layers.reduce_mean(layers.scale(score, scale=-1.0, bias=1.0))


def bpr_loss(input, label, name=None):
    """Bayesian Personalised Ranking: per row, the mean over the other classes of
    log(1 + e^(input_j - input_label)); input [N, C], label [N, 1] int64."""
    _check(input, 'input', 'bpr_loss')
    _check(label, 'label', 'bpr_loss', ('int64',))
    return _op('bpr_loss', 'bpr_loss', {'X': input, 'Label': label}, ['Y'], None,
               input.dtype.name, name)[0]


def sigmoid_focal_loss(x, label, fg_num, gamma=2.0, alpha=0.25):
    """RetinaNet's focal loss of logits x [N, D] against int32 label [N, 1] (1..D the
    positive class, 0 background, -1 ignored), normalised by fg_num ([1] int32)."""
    _check(x, 'x', 'sigmoid_focal_loss')
    _check(label, 'label', 'sigmoid_focal_loss', ('int32',))
    _check(fg_num, 'fg_num', 'sigmoid_focal_loss', ('int32',))
    return _op('sigmoid_focal_loss', 'sigmoid_focal_loss',
               {'X': x, 'Label': label, 'FgNum': fg_num}, ['Out'],
               {'gamma': float(gamma), 'alpha': float(alpha)}, x.dtype.name)[0]


def npair_loss(anchor, positive, labels, l2_reg=0.002):
    """The N-pair loss of anchor and positive embeddings [B, D] with labels [B]: the
    soft-label cross entropy of anchor positive^T against the same-label matrix (rows
    normalised), averaged, plus l2_reg / 4 times the mean squared norms of both."""
    _check(anchor, 'anchor', 'npair_loss')
    _check(positive, 'positive', 'npair_loss')
    _check(labels, 'labels', 'npair_loss', ('float32', 'float64', 'int64'))
    batch = labels.shape[0]
    if batch is None or batch <= 0:
        raise ValueError("npair_loss: the batch size of labels ('%s') must be known, got %s"
                         % (labels.name, list(labels.shape)))
    L = layers
    lab = L.expand(L.reshape(labels, shape=[batch, 1], inplace=True), expand_times=[1, batch])
    lab = L.cast(L.equal(lab, L.transpose(lab, perm=[1, 0])), 'float32')
    lab = lab / L.reduce_sum(lab, dim=1, keep_dim=True)
    l2 = L.reduce_mean(L.reduce_sum(L.square(anchor), 1)) + \
        L.reduce_mean(L.reduce_sum(L.square(positive), 1))
    l2 = l2 * 0.25 * l2_reg
    sim = L.matmul(anchor, positive, transpose_x=False, transpose_y=True)
    ce = L.softmax_with_cross_entropy(logits=sim, label=lab, soft_label=True)
    return l2 + L.reduce_mean(L.reduce_sum(lab * ce, 0))
