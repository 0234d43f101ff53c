"""Fluid 1.x's detection layers over rill's detection ops (re-exported by rill.layers):
prior_box, box_coder, yolo_box and multiclass_nms append the ops Paddle 1.8.5's layers
append, with the same slots and attributes (doc/design/inference_ops.md has the
arithmetic). None of them has a gradient, as in Paddle; their outputs are marked
stop_gradient where Paddle's are."""

from . import layers
from .framework import Variable

__all__ = ['prior_box', 'box_coder', 'yolo_box', 'multiclass_nms']


def _check(v, what, layer, dtypes=None):
    if not isinstance(v, Variable):
        raise TypeError('%s: %s must be a Variable, not %r' % (layer, what, v))
    if dtypes and v.dtype.name not in dtypes:
        raise TypeError("%s: %s '%s' is %s; expected %s" % (layer, what, v.name, v.dtype.name,
                                                            ' or '.join(dtypes)))


def prior_box(input, image, min_sizes, max_sizes=None, aspect_ratios=[1.],
              variance=[0.1, 0.1, 0.2, 0.2], flip=False, clip=False, steps=[0.0, 0.0],
              offset=0.5, name=None, min_max_aspect_ratios_order=False):
    """SSD prior boxes of input's feature map over image: (boxes, variances), each
    [H, W, num_priors, 4]."""
    _check(input, 'input', 'prior_box', ('uint8', 'int8', 'float32', 'float64'))
    _check(image, 'image', 'prior_box')
    seq = (list, tuple)
    min_sizes = list(min_sizes) if isinstance(min_sizes, seq) else [min_sizes]
    aspect_ratios = list(aspect_ratios) if isinstance(aspect_ratios, seq) else [aspect_ratios]
    if not (isinstance(steps, seq) and len(steps) == 2):
        raise ValueError('prior_box: steps should be a list or tuple with length 2, '
                         '(step_width, step_height).')
    attrs = {'min_sizes': [float(v) for v in min_sizes],
             'aspect_ratios': [float(v) for v in aspect_ratios],
             'variances': [float(v) for v in variance], 'flip': bool(flip),
             'clip': bool(clip), 'step_w': float(steps[0]), 'step_h': float(steps[1]),
             'offset': float(offset),
             'min_max_aspect_ratios_order': bool(min_max_aspect_ratios_order)}
    if max_sizes is not None:
        max_sizes = list(max_sizes) if isinstance(max_sizes, seq) else [max_sizes]
        if max_sizes and max_sizes[0] > 0:
            attrs['max_sizes'] = [float(v) for v in max_sizes]
    h = layers._Helper('prior_box', name)
    box = h.tmp(input.dtype.name, stop_gradient=True)
    var = h.tmp(input.dtype.name, stop_gradient=True)
    h.append('prior_box', {'Input': input, 'Image': image},
             {'Boxes': box, 'Variances': var}, attrs)
    return box, var


def box_coder(prior_box, prior_box_var, target_box, code_type='encode_center_size',
              box_normalized=True, name=None, axis=0):
    """Encodes target_box against prior_box (encode_center_size) or decodes it
    (decode_center_size); prior_box_var is a Variable or a list of 4 variances."""
    _check(prior_box, 'prior_box', 'box_coder')
    _check(target_box, 'target_box', 'box_coder')
    ins = {'PriorBox': prior_box, 'TargetBox': target_box}
    attrs = {'code_type': code_type, 'box_normalized': bool(box_normalized),
             'axis': int(axis)}
    if isinstance(prior_box_var, Variable):
        ins['PriorBoxVar'] = prior_box_var
    elif isinstance(prior_box_var, list):
        attrs['variance'] = [float(v) for v in prior_box_var]
    else:
        raise TypeError('Input variance of box_coder must be Variable or list')
    h = layers._Helper('box_coder', name)
    out = h.tmp(prior_box.dtype.name)
    h.append('box_coder', ins, {'OutputBox': out}, attrs)
    return out


def yolo_box(x, img_size, anchors, class_num, conf_thresh, downsample_ratio, clip_bbox=True,
             name=None, scale_x_y=1.):
    """YOLOv3 boxes and scores of a detection head x for images of img_size."""
    if not isinstance(x, Variable):
        raise TypeError('Input x of yolo_box must be Variable')
    if not isinstance(img_size, Variable):
        raise TypeError('Input img_size of yolo_box must be Variable')
    if not isinstance(anchors, (list, tuple)):
        raise TypeError('Attr anchors of yolo_box must be list or tuple')
    if not isinstance(class_num, int):
        raise TypeError('Attr class_num of yolo_box must be an integer')
    if not isinstance(conf_thresh, float):
        raise TypeError('Attr ignore_thresh of yolo_box must be a float number')
    h = layers._Helper('yolo_box', name)
    boxes, scores = h.tmp(x.dtype.name), h.tmp(x.dtype.name)
    h.append('yolo_box', {'X': x, 'ImgSize': img_size}, {'Boxes': boxes, 'Scores': scores},
             {'anchors': [int(a) for a in anchors], 'class_num': class_num,
              'conf_thresh': conf_thresh, 'downsample_ratio': int(downsample_ratio),
              'clip_bbox': bool(clip_bbox), 'scale_x_y': float(scale_x_y)})
    return boxes, scores


def multiclass_nms(bboxes, scores, score_threshold, nms_top_k, keep_top_k, nms_threshold=0.3,
                   normalized=True, nms_eta=1., background_label=0, name=None):
    """Per-class NMS of bboxes by scores: a LoD tensor [K, 6] of (label, score, box) rows per
    image ([[-1]] when none is kept)."""
    _check(bboxes, 'BBoxes', 'multiclass_nms', ('float32', 'float64'))
    _check(scores, 'Scores', 'multiclass_nms', ('float32', 'float64'))
    for v, what, kind in ((score_threshold, 'score_threshold', float),
                          (nms_top_k, 'nms_top_k', int), (keep_top_k, 'keep_top_k', int),
                          (nms_threshold, 'nms_threshold', float),
                          (normalized, 'normalized', bool), (nms_eta, 'nms_eta', float),
                          (background_label, 'background_label', int)):
        if not isinstance(v, kind):
            raise TypeError('multiclass_nms: %s must be %s, not %r' % (what, kind.__name__, v))
    h = layers._Helper('multiclass_nms', name)
    out = h.tmp(bboxes.dtype.name, stop_gradient=True)
    h.append('multiclass_nms', {'BBoxes': bboxes, 'Scores': scores}, {'Out': out},
             {'background_label': background_label, 'score_threshold': score_threshold,
              'nms_top_k': nms_top_k, 'nms_threshold': nms_threshold, 'nms_eta': nms_eta,
              'keep_top_k': keep_top_k, 'normalized': normalized})
    return out
