"""Fluid 1.x's `fluid.metrics`: evaluation accumulated in Python over mini-batches.

Each metric keeps its running state in public attributes (names without a leading
underscore); update() adds a mini-batch, eval() returns the figure over every batch
since the last reset(), and reset() sets the state back to zero: an int to 0, a float to
0.0, a numpy array or scalar to zeros of its shape, anything else to None. State held in
underscore attributes is configuration and survives reset(), as in Fluid 1.8, so an
`Auc` keeps its buckets across reset() there and here (make a new `Auc` to start over).
"""
import copy
import numbers

import numpy as np

from ._missing import module_getattr as _module_getattr

__all__ = ['MetricBase', 'CompositeMetric', 'Precision', 'Recall', 'Accuracy',
           'ChunkEvaluator', 'EditDistance', 'DetectionMAP', 'Auc']


def _is_array(v):
    return isinstance(v, (np.ndarray, np.generic))


def _is_number(v):
    return isinstance(v, (numbers.Number, np.number)) \
        or isinstance(v, np.ndarray) and v.shape == (1,)


def _is_number_or_array(v):
    return _is_number(v) or isinstance(v, np.ndarray)


def _as_float(v):
    """v as a float, or as a float64 array where it is an array (the counts a
    layers.chunk_eval fetch gives are arrays of one element)."""
    return np.asarray(v, 'float64') if isinstance(v, np.ndarray) else float(v)


def _need(ok, what):
    if not ok:
        raise ValueError(what)


class MetricBase(object):
    """The base of the metrics: a name, and state in the public attributes."""

    def __init__(self, name):
        self._name = self.__class__.__name__ if name is None else str(name)

    def __str__(self):
        return self._name

    def _states(self):
        return {k: v for k, v in vars(self).items() if not k.startswith('_')}

    def reset(self):
        """Zero the state kept since the last reset()."""
        for key, value in self._states().items():
            if isinstance(value, int):
                zero = 0
            elif isinstance(value, float):
                zero = 0.0
            elif isinstance(value, (np.ndarray, np.generic)):
                zero = np.zeros_like(value)
            else:
                zero = None
            setattr(self, key, zero)

    def get_config(self):
        """{'name': name, 'states': a deep copy of the state attributes}."""
        return {'name': self._name, 'states': copy.deepcopy(self._states())}

    def update(self, preds, labels):
        raise NotImplementedError('%s.update: a metric derived from MetricBase defines it'
                                  % type(self).__name__)

    def eval(self):
        raise NotImplementedError('%s.eval: a metric derived from MetricBase defines it'
                                  % type(self).__name__)


class CompositeMetric(MetricBase):
    """Several metrics fed the same (preds, labels); eval() lists their results."""

    def __init__(self, name=None):
        super(CompositeMetric, self).__init__(name)
        self._metrics = []

    def add_metric(self, metric):
        _need(isinstance(metric, MetricBase),
              'CompositeMetric.add_metric: %r is not a MetricBase' % (metric,))
        self._metrics.append(metric)

    def update(self, preds, labels):
        for metric in self._metrics:
            metric.update(preds, labels)

    def eval(self):
        return [metric.eval() for metric in self._metrics]


def _binary(cls, preds, labels):
    _need(_is_array(preds), "%s.update: 'preds' must be a numpy ndarray" % cls)
    _need(_is_array(labels), "%s.update: 'labels' must be a numpy ndarray" % cls)
    n = labels.shape[0]
    pred = np.rint(preds).astype('int32').reshape(len(preds), -1)[:n, 0]
    label = np.asarray(labels).reshape(n, -1)[:, 0]
    return pred, label


class Precision(MetricBase):
    """Binary precision tp / (tp + fp); a prediction is 1 where it rounds to 1."""

    def __init__(self, name=None):
        super(Precision, self).__init__(name)
        self.tp = 0
        self.fp = 0

    def update(self, preds, labels):
        pred, label = _binary('Precision', preds, labels)
        hit = pred == 1
        self.tp += int(np.count_nonzero(hit & (label == pred)))
        self.fp += int(np.count_nonzero(hit & (label != pred)))

    def eval(self):
        n = self.tp + self.fp
        return float(self.tp) / n if n != 0 else 0.0


class Recall(MetricBase):
    """Binary recall tp / (tp + fn) over the samples labelled 1."""

    def __init__(self, name=None):
        super(Recall, self).__init__(name)
        self.tp = 0
        self.fn = 0

    def update(self, preds, labels):
        pred, label = _binary('Recall', preds, labels)
        pos = label == 1
        self.tp += int(np.count_nonzero(pos & (pred == label)))
        self.fn += int(np.count_nonzero(pos & (pred != label)))

    def eval(self):
        n = self.tp + self.fn
        return float(self.tp) / n if n != 0 else 0.0


class Accuracy(MetricBase):
    """The weighted mean of per-batch accuracies (layers.accuracy's output, weighted
    by the batch size)."""

    def __init__(self, name=None):
        super(Accuracy, self).__init__(name)
        self.value = 0.0
        self.weight = 0.0

    def update(self, value, weight):
        _need(_is_number_or_array(value),
              "Accuracy.update: 'value' must be a number (int, float) or a numpy ndarray")
        _need(_is_number(weight), "Accuracy.update: 'weight' must be a number (int, float)")
        _need(not weight < 0, "Accuracy.update: 'weight' must not be negative")
        self.value += value * weight
        self.weight += weight

    def eval(self):
        if self.weight == 0:
            raise ValueError('Accuracy.eval: no data yet: update() it with the output of '
                             'layers.accuracy and the batch size')
        return self.value / self.weight


class ChunkEvaluator(MetricBase):
    """Precision, recall and F1 of chunks from the counts layers.chunk_eval returns."""

    def __init__(self, name=None):
        super(ChunkEvaluator, self).__init__(name)
        self.num_infer_chunks = 0
        self.num_label_chunks = 0
        self.num_correct_chunks = 0

    def update(self, num_infer_chunks, num_label_chunks, num_correct_chunks):
        for arg, v in (('num_infer_chunks', num_infer_chunks),
                       ('num_label_chunks', num_label_chunks),
                       ('num_correct_chunks', num_correct_chunks)):
            _need(_is_number_or_array(v), "ChunkEvaluator.update: '%s' must be a number "
                  "(int) or a numpy ndarray" % arg)
        self.num_infer_chunks += num_infer_chunks
        self.num_label_chunks += num_label_chunks
        self.num_correct_chunks += num_correct_chunks

    def eval(self):
        correct = _as_float(self.num_correct_chunks)
        precision = correct / self.num_infer_chunks if self.num_infer_chunks else 0
        recall = correct / self.num_label_chunks if self.num_label_chunks else 0
        f1 = _as_float(2 * precision * recall) / (precision + recall) \
            if self.num_correct_chunks else 0
        return precision, recall, f1


class EditDistance(MetricBase):
    """The mean edit distance over sequences, and the fraction of sequences not exact."""

    def __init__(self, name):
        super(EditDistance, self).__init__(name)
        self.total_distance = 0.0
        self.seq_num = 0
        self.instance_error = 0

    def update(self, distances, seq_num):
        _need(_is_array(distances), "EditDistance.update: 'distances' must be a numpy ndarray")
        _need(_is_number(seq_num), "EditDistance.update: 'seq_num' must be a number "
              "(int, float)")
        exact = np.sum(distances == 0)
        self.seq_num += seq_num
        self.instance_error += seq_num - exact
        self.total_distance += np.sum(distances)

    def eval(self):
        if self.seq_num == 0:
            raise ValueError('EditDistance.eval: no data yet: update() it with the output '
                             'of layers.edit_distance and the number of sequences')
        return self.total_distance / self.seq_num, self.instance_error / float(self.seq_num)


class Auc(MetricBase):
    """The area under the ROC curve from `num_thresholds` + 1 buckets of the predicted
    probability of class 1 (preds[:, 1]); the buckets survive reset(), as in Fluid 1.8."""

    def __init__(self, name, curve='ROC', num_thresholds=4095):
        super(Auc, self).__init__(name=name)
        self._curve = curve
        self._num_thresholds = num_thresholds
        self._stat_pos = [0] * (num_thresholds + 1)
        self._stat_neg = [0] * (num_thresholds + 1)

    def update(self, preds, labels):
        _need(_is_array(labels), "Auc.update: 'labels' must be a numpy ndarray")
        _need(_is_array(preds), "Auc.update: 'predictions' must be a numpy ndarray")
        for i, label in enumerate(labels):
            bucket = int(preds[i, 1] * self._num_thresholds)
            if not 0 <= bucket <= self._num_thresholds:
                raise ValueError('Auc.update: preds[%d, 1] = %r is not a probability in '
                                 '[0, 1]' % (i, preds[i, 1]))
            if label:
                self._stat_pos[bucket] += 1.0
            else:
                self._stat_neg[bucket] += 1.0

    @staticmethod
    def trapezoid_area(x1, x2, y1, y2):
        return abs(x1 - x2) * (y1 + y2) / 2.0

    def eval(self):
        pos = neg = area = 0.0
        for bucket in range(self._num_thresholds, -1, -1):
            pos_before, neg_before = pos, neg
            pos += self._stat_pos[bucket]
            neg += self._stat_neg[bucket]
            area += self.trapezoid_area(neg, neg_before, pos, pos_before)
        return area / pos / neg if pos > 0.0 and neg > 0.0 else 0.0



class DetectionMAP(object):
    """Detection mAP computed in the program by detection_map ops: get_map_var() returns
    (this batch's mAP, the mAP over every batch since reset) to fetch; reset(executor)
    starts the accumulation over. gt_label [N, 1], gt_box [N, 4] and gt_difficult [N, 1]
    share one LoD level per image with `input`, detections [M, 6]."""

    def __init__(self, input, gt_label, gt_box, gt_difficult=None, class_num=None,
                 background_label=0, overlap_threshold=0.5, evaluate_difficult=True,
                 ap_version='integral'):
        from .detection import _map_eval
        self.cur_map, self.accum_map, self.has_state, self._states = _map_eval(
            'map_eval', input, gt_label, gt_box, gt_difficult, class_num, background_label,
            overlap_threshold, evaluate_difficult, ap_version)

    def get_map_var(self):
        return self.cur_map, self.accum_map

    def reset(self, executor, reset_program=None):
        from .detection import _map_reset
        _map_reset(self.has_state, executor, reset_program)


__getattr__ = _module_getattr('fluid.metrics', __name__)
