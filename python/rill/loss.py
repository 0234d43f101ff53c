"""Fluid 1.x's loss layers (re-exported by rill.layers): log_loss, huber_loss, smooth_l1,
kldiv_loss, rank_loss, margin_rank_loss, label_smooth, bpr_loss and sigmoid_focal_loss
append their ops (schemas in operators/loss.c); teacher_student_sigmoid_loss,
center_loss, hsigmoid (hierarchical_sigmoid), nce and sampled_softmax_with_cross_entropy
(sample_logits) have ops of their own
(operators/<op>.c); mse_loss, dice_loss and npair_loss are compositions emitting the ops
Paddle's do."""

import numpy as np

from . import layers
from .framework import Variable
from .initializer import Constant, NumpyArrayInitializer

__all__ = ['log_loss', 'huber_loss', 'smooth_l1', 'kldiv_loss', 'rank_loss',
           'margin_rank_loss', 'label_smooth', 'mse_loss', 'dice_loss', 'bpr_loss',
           'sigmoid_focal_loss', 'npair_loss', 'teacher_student_sigmoid_loss',
           'center_loss', 'hsigmoid', 'nce', 'sampled_softmax_with_cross_entropy']

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
    """N-pair loss of anchor and positive embeddings [N, D] with labels [N] (or [N, 1]):
    l2_reg / 4 * (mean squared norm of anchor rows + of positive rows) plus the mean over
    columns of the label-weighted softmax cross entropy of anchor . positive^T, the
    targets being each row's same-label columns, normalised. Emits Paddle's ops."""
    _check(anchor, 'anchor', 'npair_loss')
    _check(positive, 'positive', 'npair_loss')
    _check(labels, 'labels', 'npair_loss', ('float32', 'float64', 'int64'))
    L = layers
    beta = 0.25
    n = labels.shape[0]
    labels = L.reshape(labels, shape=[n, 1], inplace=True)
    labels = L.expand(labels, expand_times=[1, n])
    labels = L.cast(L.equal(labels, L.transpose(labels, perm=[1, 0])), 'float32')
    labels = labels / L.reduce_sum(labels, dim=1, keep_dim=True)
    l2loss = L.reduce_mean(L.reduce_sum(L.square(anchor), 1)) + \
        L.reduce_mean(L.reduce_sum(L.square(positive), 1))
    l2loss = l2loss * beta * l2_reg
    sim = L.matmul(anchor, positive, transpose_x=False, transpose_y=True)
    ce = L.softmax_with_cross_entropy(logits=sim, label=labels, soft_label=True)
    return l2loss + L.reduce_mean(L.reduce_sum(labels * ce, 0))


def teacher_student_sigmoid_loss(input, label, soft_max_up_bound=15.0,
                                 soft_max_lower_bound=-15.0):
    """Sigmoid cross entropy of logits input [N, 1] against label [N, 1] coding a click
    and an optional teacher value: -2 (no click), -1 (click), or click + teacher value
    in [0, 2). The gradient clamps input to the bounds and is zero at them."""
    _check(input, 'input', 'teacher_student_sigmoid_loss')
    _check(label, 'label', 'teacher_student_sigmoid_loss')
    return _op('teacher_student_sigmoid_loss', 'teacher_student_sigmoid_loss',
               {'X': input, 'Label': label}, ['Y'],
               {'soft_max_lower_bound': float(soft_max_lower_bound),
                'soft_max_up_bound': float(soft_max_up_bound)}, input.dtype.name)[0]


def center_loss(input, label, num_classes, alpha, param_attr, update_center=True):
    """Half the squared distance of each row of input [N, D] to the centre of its class
    (label [N, 1] int64) among num_classes centres, a parameter [num_classes, D] without
    gradient that the op itself moves by alpha (a float, or a [1] Variable) times the
    mean offset of the class's rows when update_center. Returns [N, 1]."""
    _check(input, 'input', 'center_loss')
    _check(label, 'label', 'center_loss', ('int64',))
    h = layers._Helper('center_loss')
    dt = input.dtype.name
    centers = h.param(param_attr, [num_classes, input.shape[1]], dt)
    centers.stop_gradient = True
    if isinstance(alpha, Variable):
        rate = alpha
    else:
        if not isinstance(alpha, float):
            raise TypeError('center_loss: alpha must be a float or a Variable, got %r'
                            % (alpha,))
        rate = h.block.create_var(name='centerloss_alpha', shape=[1], dtype='float32',
                                  persistable=True, stop_gradient=True)
        Constant(alpha)(rate, h.block)
    diff = h.tmp(dt)
    loss = h.tmp(dt)
    h.append('center_loss', {'X': input, 'Label': label, 'Centers': centers,
                             'CenterUpdateRate': rate},
             {'SampleCenterDiff': diff, 'Loss': loss, 'CentersOut': centers},
             {'cluster_num': int(num_classes), 'need_update': bool(update_center)})
    return loss


def hsigmoid(input, label, num_classes, param_attr=None, bias_attr=None, name=None,
             path_table=None, path_code=None, is_custom=False, is_sparse=False):
    """Hierarchical sigmoid loss [N, 1] of input [N, D] for label [N, 1] int64: a
    default complete binary tree over num_classes classes (weights [num_classes - 1, D]),
    or with is_custom each row's own path_table / path_code ([N, L] int64, -1 after the
    path; weights [num_classes, D]). is_sparse (custom tree only) makes the weights'
    gradient selected rows."""
    _check(input, 'input', 'hsigmoid')
    _check(label, 'label', 'hsigmoid', ('int64',))
    if (num_classes is None or num_classes < 2) and not is_custom:
        raise ValueError('num_classes must not be less than 2 with default tree')
    if not is_custom and is_sparse:
        is_sparse = False
    if not is_custom and (path_table is not None or path_code is not None):
        raise ValueError('only num_classes should be passed without custom tree')
    if is_custom and path_code is None:
        raise ValueError('path_code should not be None with custom tree')
    if is_custom and path_table is None:
        raise ValueError('path_table should not be None with custom tree')
    if is_custom and num_classes is None:
        raise ValueError('num_classes should not be None with custom tree')
    h = layers._Helper('hierarchical_sigmoid', name)
    dt = input.dtype.name
    rows = num_classes if is_custom else num_classes - 1
    w = h.param(param_attr, [rows, input.shape[1]], dt)
    inputs = {'X': input, 'W': w, 'Label': label}
    if is_custom:
        inputs['PathTable'] = path_table
        inputs['PathCode'] = path_code
    b = h.param(bias_attr, [rows, 1], dt, is_bias=True)
    if b is not None:
        inputs['Bias'] = b
    out = h.tmp(dt)
    pre = h.tmp(dt)
    h.append('hierarchical_sigmoid', inputs, {'Out': out, 'PreOut': pre, 'W_Out': w},
             {'num_classes': int(num_classes), 'is_sparse': bool(is_sparse),
              'remote_prefetch': bool(is_sparse)})
    return out


def _alias_tables(dist):
    """Walker's alias tables of the distribution `dist` over len(dist) classes: for each
    class the probability of keeping a uniform draw of it, and the class taken otherwise
    (-1: none). Over-full classes give their excess to under-full ones in turn."""
    k = len(dist)
    keep = [1.0] * k
    alias = [-1] * k
    over, under = [], []
    for i, p in enumerate(dist):
        scaled = float(p) * k
        if scaled > 1.0:
            over.append([i, scaled])
        elif scaled < 1.0:
            under.append([i, scaled])
        else:
            keep[i] = scaled
    while over and under:
        big, small = over.pop(0), under.pop(0)
        keep[small[0]], alias[small[0]] = small[1], big[0]
        rest = big[1] + small[1] - 1.0
        if rest > 1.0:
            over.append([big[0], rest])
        elif rest < 1.0:
            under.append([big[0], rest])
        else:
            keep[big[0]] = rest
    return keep, alias


def nce(input, label, num_total_classes, sample_weight=None, param_attr=None,
        bias_attr=None, num_neg_samples=None, name=None, sampler='uniform',
        custom_dist=None, seed=0, is_sparse=False):
    """Noise-contrastive estimation: per row of input [N, D] with label [N, num_true]
    int64, the loss of telling its true classes from num_neg_samples (default 10)
    negatives drawn by `sampler` ('uniform', 'log_uniform' or 'custom_dist' with the
    probabilities custom_dist), divided by num_neg_samples + 1 as Fluid's. Weights
    [num_total_classes, D] and bias [num_total_classes, 1] are parameters; is_sparse
    makes the weights' gradient selected rows."""
    _check(input, 'input', 'nce')
    _check(label, 'label', 'nce', ('int64',))
    h = layers._Helper('nce', name)
    dt = input.dtype.name
    w = h.param(param_attr, [num_total_classes, input.shape[1]], dt)
    inputs = {'Input': input, 'Label': label, 'Weight': w}
    b = h.param(bias_attr, [num_total_classes, 1], dt, is_bias=True)
    if b is not None:
        inputs['Bias'] = b
    if sample_weight is not None:
        inputs['SampleWeight'] = sample_weight
    kinds = {'uniform': 0, 'log_uniform': 1, 'custom_dist': 2}
    if sampler not in kinds:
        raise Exception('Unsupported sampler type.')
    if sampler == 'custom_dist':
        if custom_dist is None or len(custom_dist) != num_total_classes:
            raise ValueError('nce: custom_dist must give the probability of each of the %d '
                             'classes' % num_total_classes)
        keep, alias = _alias_tables(custom_dist)
        for slot, arr in (('CustomDistProbs', np.array(custom_dist, 'float32')),
                          ('CustomDistAlias', np.array(alias, 'int32')),
                          ('CustomDistAliasProbs', np.array(keep, 'float32'))):
            v = h.param(None, arr.shape, arr.dtype.name,
                        default_initializer=NumpyArrayInitializer(arr))
            v.stop_gradient = True
            inputs[slot] = v
    neg = 10 if num_neg_samples is None else int(num_neg_samples)
    cost = h.tmp(dt)
    logits = h.tmp(dt)
    labels = h.tmp(label.dtype.name)
    h.append('nce', inputs, {'Cost': cost, 'SampleLogits': logits, 'SampleLabels': labels},
             {'num_total_classes': int(num_total_classes), 'num_neg_samples': neg,
              'seed': int(seed), 'sampler': kinds[sampler], 'is_sparse': bool(is_sparse),
              'remote_prefetch': bool(is_sparse)})
    return cost / (neg + 1)


def sampled_softmax_with_cross_entropy(logits, label, num_samples, num_true=1,
                                       remove_accidental_hits=True,
                                       use_customized_samples=False,
                                       customized_samples=None,
                                       customized_probabilities=None, seed=0):
    """Softmax cross entropy of logits [N, K] against label [N, 1] over the true class
    and num_samples negatives drawn log-uniformly (or customized_samples [N, 1 +
    num_samples] int64 with customized_probabilities), each logit less the log of its
    sampling probability: the sample_logits op, one_hot and softmax_with_cross_entropy
    with soft labels, as Fluid's. Returns [N, 1]."""
    _check(logits, 'logits', 'sampled_softmax_with_cross_entropy')
    _check(label, 'label', 'sampled_softmax_with_cross_entropy', ('int64',))
    if use_customized_samples and (customized_samples is None or
                                   customized_probabilities is None):
        raise ValueError('sampled_softmax_with_cross_entropy: use_customized_samples needs '
                         'customized_samples and customized_probabilities')
    h = layers._Helper('sample_logits')
    dt = logits.dtype.name
    samples = customized_samples if use_customized_samples else h.tmp('int64')
    probs = customized_probabilities if use_customized_samples else h.tmp(dt)
    sampled_logits = h.tmp(dt)
    sampled_label = h.tmp('int64')
    logits_dim = h.tmp(dt)
    labels_dim = h.tmp('int64')
    inputs = {'Logits': logits, 'Labels': label}
    if use_customized_samples:
        inputs['CustomizedSamples'] = customized_samples
        inputs['CustomizedProbabilities'] = customized_probabilities
    h.append('sample_logits', inputs,
             {'Samples': samples, 'Probabilities': probs, 'SampledLabels': sampled_label,
              'SampledLogits': sampled_logits, 'LogitsDim': logits_dim,
              'LabelsDim': labels_dim},
             {'use_customized_samples': bool(use_customized_samples), 'uniq': True,
              'remove_accidental_hits': bool(remove_accidental_hits),
              'num_samples': int(num_samples), 'seed': int(seed)})
    soft = h.tmp(dt)
    h.append('one_hot', {'X': sampled_label}, {'Out': soft}, {'depth': int(num_samples) + 1})
    loss = h.tmp(dt)
    softmax = h.tmp(dt)
    h.append('softmax_with_cross_entropy', {'Logits': sampled_logits, 'Label': soft},
             {'Softmax': softmax, 'Loss': loss},
             {'soft_label': True, 'ignore_index': 0, 'numeric_stable_mode': False})
    return loss / num_true
