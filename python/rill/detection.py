"""Fluid 1.x's detection layers (re-exported by rill.layers), with Paddle 1.8.5's
signatures and defaults: prior_box, density_prior_box, anchor_generator, iou_similarity,
box_coder, box_clip, polygon_box_transform, yolo_box, bipartite_match, target_assign,
multiclass_nms, matrix_nms, locality_aware_nms, retinanet_detection_output,
distribute_fpn_proposals, collect_fpn_proposals, box_decoder_and_assign, yolov3_loss,
generate_proposals, rpn_target_assign, retinanet_target_assign,
generate_proposal_labels and generate_mask_labels append their ops (schemas in
operators/);
detection_output, multi_box_head and ssd_loss are compositions emitting the ops Paddle's
do. roi_pool, roi_align, psroi_pool, prroi_pool and deformable_roi_pooling (nn.py's in
Fluid) pool regions of interest and roi_perspective_transform warps quadrilateral ones,
with gradients."""
import math

from . import layers
from .framework import Variable

__all__ = ['prior_box', 'density_prior_box', 'multi_box_head', 'bipartite_match',
           'target_assign', 'detection_output', 'anchor_generator', 'iou_similarity',
           'box_coder', 'polygon_box_transform', 'yolo_box', 'box_clip', 'multiclass_nms',
           'matrix_nms', 'locality_aware_nms', 'retinanet_detection_output',
           'distribute_fpn_proposals', 'collect_fpn_proposals',
           'ssd_loss', 'roi_pool', 'roi_align', 'psroi_pool', 'prroi_pool',
           'deformable_roi_pooling', 'roi_perspective_transform', 'box_decoder_and_assign',
           'yolov3_loss', 'generate_proposals', 'rpn_target_assign', 'retinanet_target_assign',
           'generate_proposal_labels', 'generate_mask_labels']

_FLOATS = ('float32', 'float64')


def _check(x, what, layer, dtypes=_FLOATS):
    if not isinstance(x, Variable):
        raise TypeError("%s: %s must be a Variable, got %r" % (layer, what, x))
    if dtypes and x.dtype.name not in dtypes:
        raise TypeError("%s: %s ('%s') is %s, expected %s" %
                        (layer, what, x.name, x.dtype.name, ' or '.join(dtypes)))


def _listed(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _steps(steps, layer):
    if not (isinstance(steps, (list, tuple)) and len(steps) == 2):
        raise ValueError('%s: steps should be a list or tuple with length 2, (step_width, '
                         'step_height), got %r' % (layer, steps))
    return [float(s) for s in steps]


def _op(layer, op, inputs, outputs, attrs=None, name=None, stop_gradient=False):
    """Appends `op`; `outputs` lists (slot, dtype); returns the new variables."""
    h = layers._Helper(layer, name)
    outs = [h.tmp(dt, stop_gradient=stop_gradient) for _, dt in outputs]
    h.append(op, {k: v for k, v in inputs.items() if v is not None},
             {slot: v for (slot, _), v in zip(outputs, outs)},
             {k: v for k, v in (attrs or {}).items() if v is not None})
    return outs


def prior_box(input, image, min_sizes, max_sizes=None, aspect_ratios=[1.],
              variance=[0.1, 0.1, 0.2, 0.2], flip=False, clip=False, steps=[0.0, 0.0],
              offset=0.5, name=None, min_max_aspect_ratios_order=False):
    """SSD prior boxes of one feature map: (boxes, variances), each [H, W, priors, 4]."""
    _check(input, 'input', 'prior_box', ('uint8', 'int8', 'float32', 'float64'))
    _check(image, 'image', 'prior_box', None)
    steps = _steps(steps, 'prior_box')
    attrs = {'min_sizes': [float(s) for s in _listed(min_sizes)],
             'aspect_ratios': [float(r) for r in _listed(aspect_ratios)],
             'variances': [float(v) for v in variance], 'flip': bool(flip), 'clip': bool(clip),
             'step_w': steps[0], 'step_h': steps[1], 'offset': float(offset),
             'min_max_aspect_ratios_order': bool(min_max_aspect_ratios_order)}
    if max_sizes is not None:
        max_sizes = _listed(max_sizes)
        if len(max_sizes) > 0 and max_sizes[0] > 0:
            attrs['max_sizes'] = [float(s) for s in max_sizes]
    dt = input.dtype.name
    return tuple(_op('prior_box', 'prior_box', {'Input': input, 'Image': image},
                     [('Boxes', dt), ('Variances', dt)], attrs, name, stop_gradient=True))


def density_prior_box(input, image, densities=None, fixed_sizes=None, fixed_ratios=None,
                      variance=[0.1, 0.1, 0.2, 0.2], clip=False, steps=[0.0, 0.0], offset=0.5,
                      flatten_to_2d=False, name=None):
    """Dense grids of fixed-size priors per cell: (boxes, variances)."""
    _check(input, 'input', 'density_prior_box')
    _check(image, 'image', 'density_prior_box', None)
    for what, v in (('densities', densities), ('fixed_sizes', fixed_sizes),
                    ('fixed_ratios', fixed_ratios)):
        if not isinstance(v, (list, tuple)):
            raise TypeError('density_prior_box: %s must be a list or tuple, got %r' % (what, v))
    if len(densities) != len(fixed_sizes):
        raise ValueError('density_prior_box: densities (%d) and fixed_sizes (%d) must have the '
                         'same length' % (len(densities), len(fixed_sizes)))
    steps = _steps(steps, 'density_prior_box')
    attrs = {'variances': [float(v) for v in variance], 'clip': bool(clip),
             'step_w': steps[0], 'step_h': steps[1], 'offset': float(offset),
             'densities': [int(d) for d in densities],
             'fixed_sizes': [float(s) for s in fixed_sizes],
             'fixed_ratios': [float(r) for r in fixed_ratios],
             'flatten_to_2d': bool(flatten_to_2d)}
    dt = input.dtype.name
    return tuple(_op('density_prior_box', 'density_prior_box', {'Input': input, 'Image': image},
                     [('Boxes', dt), ('Variances', dt)], attrs, name, stop_gradient=True))


def anchor_generator(input, anchor_sizes=None, aspect_ratios=None,
                     variance=[0.1, 0.1, 0.2, 0.2], stride=None, offset=0.5, name=None):
    """Faster R-CNN anchors of one feature map: (anchors, variances) [H, W, A, 4]."""
    _check(input, 'input', 'anchor_generator')
    if not (isinstance(stride, (list, tuple)) and len(stride) == 2):
        raise ValueError('anchor_generator: stride should be a list or tuple with length 2, '
                         '(stride_width, stride_height), got %r' % (stride,))
    attrs = {'anchor_sizes': [float(s) for s in _listed(anchor_sizes)],
             'aspect_ratios': [float(r) for r in _listed(aspect_ratios)],
             'variances': [float(v) for v in variance],
             'stride': [float(s) for s in stride], 'offset': float(offset)}
    dt = input.dtype.name
    return tuple(_op('anchor_generator', 'anchor_generator', {'Input': input},
                     [('Anchors', dt), ('Variances', dt)], attrs, name, stop_gradient=True))


def iou_similarity(x, y, box_normalized=True, name=None):
    """[N, M] IoU of the boxes of x [N, 4] with those of y [M, 4]; x's LoD."""
    _check(x, 'x', 'iou_similarity')
    _check(y, 'y', 'iou_similarity')
    return _op('iou_similarity', 'iou_similarity', {'X': x, 'Y': y}, [('Out', x.dtype.name)],
               {'box_normalized': bool(box_normalized)}, name)[0]


def box_coder(prior_box, prior_box_var, target_box, code_type='encode_center_size',
              box_normalized=True, name=None, axis=0):
    """Encodes target boxes against priors, or decodes offsets; prior_box_var is a
    Variable (input PriorBoxVar) or a list of 4 (attribute variance)."""
    _check(prior_box, 'prior_box', 'box_coder')
    _check(target_box, 'target_box', 'box_coder')
    inputs = {'PriorBox': prior_box, 'TargetBox': target_box}
    attrs = {'code_type': code_type, 'box_normalized': bool(box_normalized), 'axis': int(axis)}
    if isinstance(prior_box_var, Variable):
        inputs['PriorBoxVar'] = prior_box_var
    elif isinstance(prior_box_var, (list, tuple)):
        attrs['variance'] = [float(v) for v in prior_box_var]
    else:
        raise TypeError('box_coder: prior_box_var must be a Variable or a list, got %r'
                        % (prior_box_var,))
    return _op('box_coder', 'box_coder', inputs, [('OutputBox', prior_box.dtype.name)], attrs,
               name)[0]


def polygon_box_transform(input, name=None):
    """Geometry offsets [N, G, H, W] to absolute polygon coordinates."""
    _check(input, 'input', 'polygon_box_transform')
    return _op('polygon_box_transform', 'polygon_box_transform', {'Input': input},
               [('Output', input.dtype.name)], None, name)[0]


def yolo_box(x, img_size, anchors, class_num, conf_thresh, downsample_ratio, clip_bbox=True,
             name=None, scale_x_y=1.):
    """Decodes a YOLOv3 head: (boxes [N, A*H*W, 4], scores [N, A*H*W, class_num])."""
    if not isinstance(x, Variable):
        raise TypeError('yolo_box: x must be a Variable, got %r' % (x,))
    if not isinstance(img_size, Variable):
        raise TypeError('yolo_box: img_size must be a Variable, got %r' % (img_size,))
    if not isinstance(anchors, (list, tuple)):
        raise TypeError('yolo_box: anchors must be a list or tuple, got %r' % (anchors,))
    if not isinstance(class_num, int):
        raise TypeError('yolo_box: class_num must be an integer, got %r' % (class_num,))
    if not isinstance(conf_thresh, float):
        raise TypeError('yolo_box: conf_thresh must be a float, got %r' % (conf_thresh,))
    attrs = {'anchors': [int(a) for a in anchors], 'class_num': class_num,
             'conf_thresh': conf_thresh, 'downsample_ratio': int(downsample_ratio),
             'clip_bbox': bool(clip_bbox), 'scale_x_y': float(scale_x_y)}
    dt = x.dtype.name
    return tuple(_op('yolo_box', 'yolo_box', {'X': x, 'ImgSize': img_size},
                     [('Boxes', dt), ('Scores', dt)], attrs, name))


def box_clip(input, im_info, name=None):
    """Clamps each image's boxes (input's LoD) to its original size from im_info."""
    _check(input, 'input', 'box_clip')
    _check(im_info, 'im_info', 'box_clip')
    return _op('box_clip', 'box_clip', {'Input': input, 'ImInfo': im_info},
               [('Output', input.dtype.name)], None, name)[0]


def bipartite_match(dist_matrix, match_type=None, dist_threshold=None, name=None):
    """Greedy matching of columns to rows: (indices int32 [N, M], distances [N, M])."""
    _check(dist_matrix, 'dist_matrix', 'bipartite_match')
    attrs = {'match_type': match_type,
             'dist_threshold': None if dist_threshold is None else float(dist_threshold)}
    return tuple(_op('bipartite_match', 'bipartite_match', {'DistMat': dist_matrix},
                     [('ColToRowMatchIndices', 'int32'),
                      ('ColToRowMatchDist', dist_matrix.dtype.name)], attrs, name))


def target_assign(input, matched_indices, negative_indices=None, mismatch_value=None,
                  name=None):
    """Per-prior targets from matched rows: (out [N, M, K], weights float32 [N, M, 1])."""
    _check(input, 'input', 'target_assign', ('float32', 'float64', 'int32'))
    _check(matched_indices, 'matched_indices', 'target_assign', ('int32',))
    if negative_indices is not None:
        _check(negative_indices, 'negative_indices', 'target_assign', ('int32',))
    attrs = {'mismatch_value': None if mismatch_value is None else int(mismatch_value)}
    return tuple(_op('target_assign', 'target_assign',
                     {'X': input, 'MatchIndices': matched_indices,
                      'NegIndices': negative_indices},
                     [('Out', input.dtype.name), ('OutWeight', 'float32')], attrs, name))


def multiclass_nms(bboxes, scores, score_threshold, nms_top_k, keep_top_k, nms_threshold=0.3,
                   normalized=True, nms_eta=1., background_label=0, name=None):
    """Per-class NMS: [K, 6] rows (label, score, box) with one LoD level per image; a
    [1, 1] tensor holding -1 when nothing is kept, as Paddle's."""
    _check(bboxes, 'bboxes', 'multiclass_nms')
    _check(scores, 'scores', 'multiclass_nms')
    for what, v, kind in (('score_threshold', score_threshold, float),
                          ('nms_top_k', nms_top_k, int), ('keep_top_k', keep_top_k, int),
                          ('nms_threshold', nms_threshold, float),
                          ('normalized', normalized, bool), ('nms_eta', nms_eta, float),
                          ('background_label', background_label, int)):
        if not isinstance(v, kind):
            raise TypeError('multiclass_nms: %s must be %s, got %r' % (what, kind.__name__, v))
    attrs = {'background_label': background_label, 'score_threshold': score_threshold,
             'nms_top_k': nms_top_k, 'nms_threshold': nms_threshold, 'nms_eta': nms_eta,
             'keep_top_k': keep_top_k, 'normalized': normalized}
    return _op('multiclass_nms', 'multiclass_nms', {'BBoxes': bboxes, 'Scores': scores},
               [('Out', bboxes.dtype.name)], attrs, name, stop_gradient=True)[0]


def detection_map(detect_res, label, class_num, background_label=0, overlap_threshold=0.3,
                  evaluate_difficult=True, has_state=None, input_states=None, out_states=None,
                  ap_version='integral'):
    """Mean average precision of detections [M, 6] against ground truth [N, 6] or [N, 5]
    (one LoD level per image), as Fluid 1.8's layers.detection.detection_map (not in its
    layers namespace): with has_state and input_states/out_states (pos count, true
    positives, false positives) it covers every batch accumulated in the states. Like
    Fluid's, it leaves the op's background_label at its default."""
    _check(detect_res, 'detect_res', 'detection_map')
    _check(label, 'label', 'detection_map')
    if ap_version not in ('integral', '11point'):
        raise ValueError("detection_map: ap_version must be 'integral' or '11point', got %r"
                         % (ap_version,))
    h = layers._Helper('detection_map', None)
    dt = detect_res.dtype.name
    out = [h.tmp(dt)]
    for i, sdt in enumerate(('int32', dt, dt)):
        out.append(out_states[i] if out_states is not None else h.tmp(sdt))
    for v in out:
        v.stop_gradient = True
    inputs = {'Label': label, 'DetectRes': detect_res, 'HasState': has_state}
    if input_states is not None:
        inputs.update(PosCount=input_states[0], TruePos=input_states[1],
                      FalsePos=input_states[2])
    h.append('detection_map', {k: v for k, v in inputs.items() if v is not None},
             {'MAP': out[0], 'AccumPosCount': out[1], 'AccumTruePos': out[2],
              'AccumFalsePos': out[3]},
             {'overlap_threshold': float(overlap_threshold),
              'evaluate_difficult': bool(evaluate_difficult), 'ap_type': ap_version,
              'class_num': int(class_num)})
    return out[0]


def _map_eval(name, input, gt_label, gt_box, gt_difficult, class_num, background_label,
              overlap_threshold, evaluate_difficult, ap_version):
    """The graph of fluid.metrics.DetectionMAP and fluid.evaluator.DetectionMAP: this
    batch's mAP and the mAP accumulated in three persistable states, which a persistable
    int32 has_state (0 from the startup program and after reset, 1 after each run) tells
    the op to read. Returns (cur_map, accum_map, has_state, states)."""
    from .framework import default_main_program, default_startup_program, unique_name
    _check(gt_box, 'gt_box', 'DetectionMAP')
    gt_label = layers.cast(gt_label, gt_box.dtype.name)
    parts = [gt_label]
    if gt_difficult is not None:
        parts.append(layers.cast(gt_difficult, gt_box.dtype.name))
    label = layers.concat(parts + [gt_box], axis=1)
    args = dict(overlap_threshold=overlap_threshold, evaluate_difficult=evaluate_difficult,
                ap_version=ap_version)
    cur_map = detection_map(input, label, class_num, background_label, **args)
    block = default_main_program().global_block()
    base = unique_name.generate(name)

    def state(suffix, dtype, shape=None):
        return block.create_var(name='_'.join([base, suffix]), shape=shape, dtype=dtype,
                                persistable=True, stop_gradient=True)

    states = [state('accum_pos_count', 'int32'), state('accum_true_pos', 'float32'),
              state('accum_false_pos', 'float32')]
    has_state = state('has_state', 'int32', [1])
    sblock = default_startup_program().global_block()
    sv = sblock.create_var(name=has_state.name, shape=[1], dtype='int32', persistable=True)
    sblock.append_op('fill_constant', outputs={'Out': sv},
                     attrs={'shape': [1], 'value': 0.0, 'dtype': sv.desc['dtype']})
    accum_map = detection_map(input, label, class_num, background_label, has_state=has_state,
                              input_states=states, out_states=states, **args)
    layers.fill_constant(shape=[1], value=1, dtype='int32', out=has_state)
    return cur_map, accum_map, has_state, states


def _map_reset(has_state, executor, reset_program=None):
    """Runs a program setting has_state to 0, so the next batch starts the accumulation
    over."""
    from .framework import Program, program_guard
    if reset_program is None:
        reset_program = Program()
    with program_guard(main_program=reset_program):
        var = reset_program.current_block().create_var(
            name=has_state.name, shape=[1], dtype='int32', persistable=True)
        layers.fill_constant(shape=[1], value=0, dtype='int32', out=var)
    executor.run(reset_program)


def _check_types(layer, items):
    """items: (name, value, type); raises TypeError naming the layer and the argument."""
    for what, v, kind in items:
        if not isinstance(v, kind):
            raise TypeError('%s: %s must be %s, got %r' % (layer, what, kind.__name__, v))


def matrix_nms(bboxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k,
               use_gaussian=False, gaussian_sigma=2., background_label=0, normalized=True,
               return_index=False, name=None):
    """Matrix NMS: [K, 6] rows (label, decayed score, box) with one LoD level per image
    ([0, 6] when nothing is kept); with return_index also each row's box index [K, 1]
    across the batch."""
    _check(bboxes, 'bboxes', 'matrix_nms')
    _check(scores, 'scores', 'matrix_nms')
    _check_types('matrix_nms', (
        ('score_threshold', score_threshold, float), ('post_threshold', post_threshold, float),
        ('nms_top_k', nms_top_k, int), ('keep_top_k', keep_top_k, int),
        ('normalized', normalized, bool), ('use_gaussian', use_gaussian, bool),
        ('gaussian_sigma', gaussian_sigma, float), ('background_label', background_label, int)))
    attrs = {'background_label': background_label, 'score_threshold': score_threshold,
             'post_threshold': post_threshold, 'nms_top_k': nms_top_k,
             'gaussian_sigma': gaussian_sigma, 'use_gaussian': use_gaussian,
             'keep_top_k': keep_top_k, 'normalized': normalized}
    out, index = _op('matrix_nms', 'matrix_nms', {'BBoxes': bboxes, 'Scores': scores},
                     [('Out', bboxes.dtype.name), ('Index', 'int32')], attrs, name,
                     stop_gradient=True)
    return (out, index) if return_index else out


def locality_aware_nms(bboxes, scores, score_threshold, nms_top_k, keep_top_k,
                       nms_threshold=0.3, normalized=True, nms_eta=1., background_label=-1,
                       name=None):
    """Locality-aware NMS over [N, 1, M] scores: [K, 6] rows (label, merged score, merged
    box) with one LoD level per image; a [1, 1] tensor holding -1 when nothing is kept."""
    _check(bboxes, 'bboxes', 'locality_aware_nms')
    _check(scores, 'scores', 'locality_aware_nms')
    _check_types('locality_aware_nms', (
        ('background_label', background_label, int), ('score_threshold', score_threshold, float),
        ('nms_top_k', nms_top_k, int), ('nms_eta', nms_eta, float),
        ('nms_threshold', nms_threshold, float), ('keep_top_k', keep_top_k, int),
        ('normalized', normalized, bool)))
    shape = scores.shape
    if len(shape) != 3:
        raise ValueError('locality_aware_nms: scores must be [N, 1, M], got shape %r'
                         % (tuple(shape),))
    if shape[1] != 1:
        raise ValueError('locality_aware_nms only supports one class: scores must be '
                         '[N, 1, M], got shape %r' % (tuple(shape),))
    attrs = {'background_label': background_label, 'score_threshold': score_threshold,
             'nms_top_k': nms_top_k, 'nms_threshold': nms_threshold, 'nms_eta': nms_eta,
             'keep_top_k': keep_top_k, 'normalized': normalized}
    return _op('locality_aware_nms', 'locality_aware_nms', {'BBoxes': bboxes, 'Scores': scores},
               [('Out', bboxes.dtype.name)], attrs, name, stop_gradient=True)[0]


def retinanet_detection_output(bboxes, scores, anchors, im_info, score_threshold=0.05,
                               nms_top_k=1000, keep_top_k=100, nms_threshold=0.3,
                               nms_eta=1.0):
    """RetinaNet's detections over FPN levels (lists bboxes [N, M_l, 4], scores
    [N, M_l, C], anchors [M_l, 4]; im_info [N, 3]): [K, 6] rows (class + 1, score, box in
    the original image's pixels) with one LoD level per image. As in Paddle 1.8.5 the op
    always gets nms_eta 1.0, whatever is passed."""
    for what, vs in (('bboxes', bboxes), ('scores', scores), ('anchors', anchors)):
        if not isinstance(vs, list):
            raise TypeError('retinanet_detection_output: %s must be a list, got %r' % (what, vs))
        for i, v in enumerate(vs):
            _check(v, '%s%d' % (what[:-1] if what != 'bboxes' else 'bbox', i),
                   'retinanet_detection_output')
    _check(im_info, 'im_info', 'retinanet_detection_output')
    attrs = {'score_threshold': score_threshold, 'nms_top_k': nms_top_k,
             'nms_threshold': nms_threshold, 'nms_eta': 1.0, 'keep_top_k': keep_top_k}
    return _op('retinanet_detection_output', 'retinanet_detection_output',
               {'BBoxes': bboxes, 'Scores': scores, 'Anchors': anchors, 'ImInfo': im_info},
               [('Out', scores[0].dtype.name)], attrs)[0]


def distribute_fpn_proposals(fpn_rois, min_level, max_level, refer_level, refer_scale,
                             name=None):
    """Splits LoD boxes [R, 4] among the FPN levels min_level..max_level by their size:
    (list of one [R_l, 4] LoD tensor per level, RestoreIndex int32 [R, 1])."""
    _check(fpn_rois, 'fpn_rois', 'distribute_fpn_proposals')
    n = max_level - min_level + 1
    if n < 1:
        raise ValueError('distribute_fpn_proposals: max_level (%r) must not be below '
                         'min_level (%r)' % (max_level, min_level))
    h = layers._Helper('distribute_fpn_proposals', name)
    multi = [h.tmp(fpn_rois.dtype.name) for _ in range(n)]
    restore = h.tmp('int32')
    h.append('distribute_fpn_proposals', {'FpnRois': fpn_rois},
             {'MultiFpnRois': multi, 'RestoreIndex': restore},
             {'min_level': min_level, 'max_level': max_level, 'refer_level': refer_level,
              'refer_scale': refer_scale})
    return multi, restore


def collect_fpn_proposals(multi_rois, multi_scores, min_level, max_level, post_nms_top_n,
                          name=None):
    """The post_nms_top_n best-scoring boxes of levels min_level..max_level (the first
    max_level - min_level + 1 entries of the lists), grouped by image: [K, 4] LoD."""
    n = max_level - min_level + 1
    rois, scores = list(multi_rois)[:n], list(multi_scores)[:n]
    if not rois or len(rois) != len(scores):
        raise ValueError('collect_fpn_proposals: needs as many multi_rois as multi_scores '
                         'for levels %r to %r, got %d and %d'
                         % (min_level, max_level, len(rois), len(scores)))
    for v in rois:
        _check(v, 'multi_rois', 'collect_fpn_proposals')
    for v in scores:
        _check(v, 'multi_scores', 'collect_fpn_proposals')
    return _op('collect_fpn_proposals', 'collect_fpn_proposals',
               {'MultiLevelRois': rois, 'MultiLevelScores': scores},
               [('FpnRois', rois[0].dtype.name)], {'post_nms_topN': post_nms_top_n}, name,
               stop_gradient=True)[0]


def detection_output(loc, scores, prior_box, prior_box_var, background_label=0,
                     nms_threshold=0.3, nms_top_k=400, keep_top_k=200, score_threshold=0.01,
                     nms_eta=1.0, return_index=False):
    """SSD's output: box_coder decode of loc, softmax of scores transposed to [N, C, M],
    then multiclass_nms (multiclass_nms2 with return_index). As in Paddle 1.8.5 the NMS
    op always gets background_label 0 and nms_eta 1.0, whatever is passed."""
    decoded = box_coder(prior_box, prior_box_var, loc, code_type='decode_center_size')
    probs = layers.softmax(scores)
    probs = layers.transpose(probs, perm=[0, 2, 1])
    probs.stop_gradient = True
    attrs = {'background_label': 0, 'nms_threshold': float(nms_threshold),
             'nms_top_k': int(nms_top_k), 'keep_top_k': int(keep_top_k),
             'score_threshold': float(score_threshold), 'nms_eta': 1.0}
    ins = {'Scores': probs, 'BBoxes': decoded}
    dt = decoded.dtype.name
    if return_index:
        out, index = _op('detection_output', 'multiclass_nms2', ins,
                         [('Out', dt), ('Index', 'int32')], attrs, stop_gradient=True)
        return out, index
    return _op('detection_output', 'multiclass_nms', ins, [('Out', dt)], attrs,
               stop_gradient=True)[0]


def multi_box_head(inputs, image, base_size, num_classes, aspect_ratios, min_ratio=None,
                   max_ratio=None, min_sizes=None, max_sizes=None, steps=None, step_w=None,
                   step_h=None, offset=0.5, variance=[0.1, 0.1, 0.2, 0.2], flip=True,
                   clip=False, kernel_size=1, pad=0, stride=1, name=None,
                   min_max_aspect_ratios_order=False):
    """SSD's heads over several feature maps: a prior_box and two conv2d (locations and
    class scores, transposed to NHWC and flattened) per input, concatenated as Paddle's:
    (locs [N, P, 4], confs [N, P, num_classes], boxes, variances)."""
    if not isinstance(inputs, (list, tuple)):
        raise ValueError('multi_box_head: inputs should be a list or tuple, got %r' % (inputs,))
    num_layer = len(inputs)
    if num_layer <= 2:
        if min_sizes is None or max_sizes is None or len(min_sizes) != num_layer or \
                len(max_sizes) != num_layer:
            raise ValueError('multi_box_head: with %d inputs min_sizes and max_sizes must '
                             'have one value per input' % num_layer)
    elif min_sizes is None and max_sizes is None:
        min_sizes, max_sizes = [], []
        step = int(math.floor((max_ratio - min_ratio) / (num_layer - 2)))
        for ratio in range(min_ratio, max_ratio + 1, step):
            min_sizes.append(base_size * ratio / 100.)
            max_sizes.append(base_size * (ratio + step) / 100.)
        min_sizes = [base_size * .10] + min_sizes
        max_sizes = [base_size * .20] + max_sizes

    def same_length(v, what):
        if not (isinstance(v, (list, tuple)) and len(v) == num_layer):
            raise ValueError('multi_box_head: %s should be a list or tuple with one value per '
                             'input (%d), got %r' % (what, num_layer, v))

    if aspect_ratios:
        same_length(aspect_ratios, 'aspect_ratios')
    if step_h is not None:
        same_length(step_h, 'step_h')
    if step_w is not None:
        same_length(step_w, 'step_w')
    if steps is not None:
        same_length(steps, 'steps')
        step_w = steps
        step_h = steps
    locs, confs, boxes, vars_ = [], [], [], []
    for i, x in enumerate(inputs):
        ratio = [] if aspect_ratios is None else _listed(aspect_ratios[i])
        # Paddle 1.8.5 reads step_h only when step_w is given
        step = [step_w[i] if step_w else 0.0, step_h[i] if step_w else 0.0]
        box, var = prior_box(x, image, _listed(min_sizes[i]), _listed(max_sizes[i]), ratio,
                             variance, flip, clip, step, offset, None,
                             min_max_aspect_ratios_order)
        boxes.append(box)
        vars_.append(var)
        num_boxes = box.shape[2]
        loc = layers.conv2d(x, num_filters=num_boxes * 4, filter_size=kernel_size,
                            padding=pad, stride=stride)
        loc = layers.transpose(loc, perm=[0, 2, 3, 1])
        locs.append(layers.flatten(loc, axis=1))
        conf = layers.conv2d(x, num_filters=num_boxes * num_classes, filter_size=kernel_size,
                             padding=pad, stride=stride)
        conf = layers.transpose(conf, perm=[0, 2, 3, 1])
        confs.append(layers.flatten(conf, axis=1))
    if len(boxes) == 1:
        box, var, loc, conf = boxes[0], vars_[0], locs[0], confs[0]
    else:
        box = layers.concat([layers.flatten(b, axis=3) for b in boxes])
        var = layers.concat([layers.flatten(v, axis=3) for v in vars_])
        loc = layers.reshape(layers.concat(locs, axis=1), shape=[0, -1, 4])
        conf = layers.reshape(layers.concat(confs, axis=1), shape=[0, -1, num_classes])
    box.stop_gradient = True
    var.stop_gradient = True
    return loc, conf, box, var


def ssd_loss(location, confidence, gt_box, gt_label, prior_box, prior_box_var=None,
             background_label=0, overlap_threshold=0.5, neg_pos_ratio=3.0, neg_overlap=0.5,
             loc_loss_weight=1.0, conf_loss_weight=1.0, match_type='per_prediction',
             mining_type='max_negative', normalize=True, sample_size=None):
    """SSD's multibox loss [N, 1], built as Paddle 1.8.5 builds it: iou_similarity and
    bipartite_match of the ground truth (LoD per image) with the priors, the matched
    labels' softmax loss for mine_hard_examples, then the encoded boxes' smooth_l1 and
    the labels' (negatives included) softmax_with_cross_entropy, weighted, summed per
    image and divided by the number of matched priors when `normalize`."""
    if mining_type != 'max_negative':
        raise ValueError('ssd_loss: only mining_type max_negative is supported, got %r'
                         % (mining_type,))
    for what, v in (('location', location), ('confidence', confidence), ('gt_box', gt_box),
                    ('prior_box', prior_box)):
        _check(v, what, 'ssd_loss')
    _check(gt_label, 'gt_label', 'ssd_loss', None)
    if len(confidence.shape) != 3:
        raise ValueError('ssd_loss: confidence must be [N, Np, C], got shape %s'
                         % (confidence.shape,))
    h = layers._Helper('ssd_loss')
    conf_shape = layers.shape(confidence)

    def to_2d(v):
        return layers.flatten(v, axis=2)

    iou = iou_similarity(gt_box, prior_box)
    matched_indices, matched_dist = bipartite_match(iou, match_type, overlap_threshold)
    gt_label = layers.reshape(gt_label, shape=(len(gt_label.shape) - 1) * (0,) + (-1, 1))
    gt_label.stop_gradient = True
    target_label, _ = target_assign(gt_label, matched_indices,
                                    mismatch_value=background_label)
    confidence = to_2d(confidence)
    target_label = layers.cast(target_label, 'int64')
    target_label = to_2d(target_label)
    target_label.stop_gradient = True
    conf_loss = layers.softmax_with_cross_entropy(confidence, target_label)
    actual_shape = layers.slice(conf_shape, axes=[0], starts=[0], ends=[2])
    actual_shape.stop_gradient = True
    conf_loss = layers.reshape(conf_loss, shape=(-1, 0), actual_shape=actual_shape)
    conf_loss.stop_gradient = True
    neg_indices = h.tmp('int32', stop_gradient=True)
    updated = h.tmp(matched_indices.dtype.name, stop_gradient=True)
    attrs = {'neg_pos_ratio': float(neg_pos_ratio), 'neg_dist_threshold': float(neg_overlap),
             'mining_type': mining_type}
    if sample_size is not None:
        attrs['sample_size'] = int(sample_size)
    h.append('mine_hard_examples',
             {'ClsLoss': conf_loss, 'MatchIndices': matched_indices,
              'MatchDist': matched_dist},
             {'NegIndices': neg_indices, 'UpdatedMatchIndices': updated}, attrs)
    encoded = box_coder(prior_box, prior_box_var, gt_box, code_type='encode_center_size')
    target_bbox, target_loc_weight = target_assign(encoded, updated,
                                                   mismatch_value=background_label)
    target_label, target_conf_weight = target_assign(gt_label, updated,
                                                     negative_indices=neg_indices,
                                                     mismatch_value=background_label)
    target_label = to_2d(target_label)
    target_label = layers.cast(target_label, 'int64')
    conf_loss = layers.softmax_with_cross_entropy(confidence, target_label)
    target_conf_weight = to_2d(target_conf_weight)
    conf_loss = conf_loss * target_conf_weight
    target_label.stop_gradient = True
    target_conf_weight.stop_gradient = True
    location = to_2d(location)
    target_bbox = to_2d(target_bbox)
    from .loss import smooth_l1
    loc_loss = smooth_l1(location, target_bbox)
    target_loc_weight = to_2d(target_loc_weight)
    loc_loss = loc_loss * target_loc_weight
    target_bbox.stop_gradient = True
    target_loc_weight.stop_gradient = True
    loss = conf_loss_weight * conf_loss + loc_loss_weight * loc_loss
    loss = layers.reshape(loss, shape=(-1, 0), actual_shape=actual_shape)
    loss = layers.reduce_sum(loss, dim=1, keep_dim=True)
    if normalize:
        normalizer = layers.reduce_sum(target_loc_weight)
        loss = loss / normalizer
    return loss


def _roi_inputs(layer, input, rois, rois_lod):
    _check(input, 'input', layer)
    _check(rois, 'rois', layer)
    if rois_lod is not None:
        _check(rois_lod, 'rois_lod', layer, ('int64',))
    return {'X': input, 'ROIs': rois, 'RoisLod': rois_lod}


def roi_pool(input, rois, pooled_height=1, pooled_width=1, spatial_scale=1.0, rois_lod=None):
    """Max pooling of each ROI (LoD, or rois_lod, gives its image) to [R, C, ph, pw]. The
    op's Argmax output is int64 (Paddle's layer declares it int32 but writes int64)."""
    ins = _roi_inputs('roi_pool', input, rois, rois_lod)
    out, _ = _op('roi_pool', 'roi_pool', ins, [('Out', input.dtype.name), ('Argmax', 'int64')],
                 {'pooled_height': int(pooled_height), 'pooled_width': int(pooled_width),
                  'spatial_scale': float(spatial_scale)})
    return out


def roi_align(input, rois, pooled_height=1, pooled_width=1, spatial_scale=1.0,
              sampling_ratio=-1, name=None, rois_lod=None):
    """Bilinear average pooling of each ROI to [R, C, ph, pw]."""
    ins = _roi_inputs('roi_align', input, rois, rois_lod)
    return _op('roi_align', 'roi_align', ins, [('Out', input.dtype.name)],
               {'pooled_height': int(pooled_height), 'pooled_width': int(pooled_width),
                'spatial_scale': float(spatial_scale),
                'sampling_ratio': int(sampling_ratio)}, name)[0]


def _typed(layer, **values):
    """Paddle's layers take these attributes only as the exact Python type."""
    for what, (v, t) in values.items():
        if not isinstance(v, t) or isinstance(v, bool):
            raise TypeError('%s: %s must be %s, got %r' % (layer, what, t.__name__, v))


def psroi_pool(input, rois, output_channels, spatial_scale, pooled_height, pooled_width,
               name=None):
    """Position-sensitive average pooling of each ROI (LoD gives its image) to
    [R, output_channels, ph, pw]; input has output_channels * ph * pw channels."""
    _typed('psroi_pool', output_channels=(output_channels, int),
           spatial_scale=(spatial_scale, float), pooled_height=(pooled_height, int),
           pooled_width=(pooled_width, int))
    _check(input, 'input', 'psroi_pool')
    _check(rois, 'rois', 'psroi_pool')
    return _op('psroi_pool', 'psroi_pool', {'X': input, 'ROIs': rois},
               [('Out', input.dtype.name)],
               {'output_channels': output_channels, 'spatial_scale': spatial_scale,
                'pooled_height': pooled_height, 'pooled_width': pooled_width}, name)[0]


def prroi_pool(input, rois, spatial_scale=1.0, pooled_height=1, pooled_width=1,
               batch_roi_nums=None, name=None):
    """Precise ROI pooling: each bin is the integral of the bilinear map over it divided by
    its area, [R, C, ph, pw]. batch_roi_nums (int64 [N], ROIs per image) replaces the LoD
    of rois."""
    _typed('prroi_pool', spatial_scale=(spatial_scale, float),
           pooled_height=(pooled_height, int), pooled_width=(pooled_width, int))
    _check(input, 'input', 'prroi_pool')
    _check(rois, 'rois', 'prroi_pool')
    if batch_roi_nums is not None:
        _check(batch_roi_nums, 'batch_roi_nums', 'prroi_pool', ('int64',))
    return _op('prroi_pool', 'prroi_pool',
               {'X': input, 'ROIs': rois, 'BatchRoINums': batch_roi_nums},
               [('Out', input.dtype.name)],
               {'spatial_scale': spatial_scale, 'pooled_height': pooled_height,
                'pooled_width': pooled_width}, name)[0]


def _pair(v, what, layer):
    if not isinstance(v, (list, tuple)):
        raise TypeError('%s: %s must be a list or tuple, got %r' % (layer, what, v))
    v = [int(e) for e in v]
    if len(v) == 1:
        v = v * 2
    if len(v) != 2:
        raise ValueError('%s: %s must hold 2 values, got %r' % (layer, what, v))
    return v


def deformable_roi_pooling(input, rois, trans, no_trans=False, spatial_scale=1.0,
                           group_size=[1, 1], pooled_height=1, pooled_width=1,
                           part_size=None, sample_per_part=1, trans_std=0.1,
                           position_sensitive=False, name=None):
    """Deformable ROI pooling (the deformable_psroi_pooling op): [R, channels, ph, pw],
    each bin shifted by trans (unless no_trans). position_sensitive gives
    C / (ph * pw) output channels, each bin reading its own group_size cell's channel."""
    for what, v in (('input', input), ('rois', rois), ('trans', trans)):
        _check(v, what, 'deformable_roi_pooling')
    group_size = _pair(group_size, 'group_size', 'deformable_roi_pooling')
    part_size = _pair(part_size if part_size is not None else [pooled_height, pooled_width],
                      'part_size', 'deformable_roi_pooling')
    c = input.shape[1]
    if c is None or c < 0:
        raise ValueError("deformable_roi_pooling: input ('%s') needs a known channel count"
                         % input.name)
    out_c = c // (pooled_height * pooled_width) if position_sensitive else c
    return _op('deformable_roi_pooling', 'deformable_psroi_pooling',
               {'Input': input, 'ROIs': rois, 'Trans': trans},
               [('Output', input.dtype.name), ('TopCount', input.dtype.name)],
               {'no_trans': bool(no_trans), 'spatial_scale': float(spatial_scale),
                'output_dim': int(out_c), 'group_size': group_size,
                'pooled_height': int(pooled_height), 'pooled_width': int(pooled_width),
                'part_size': part_size, 'sample_per_part': int(sample_per_part),
                'trans_std': float(trans_std)}, name)[0]


def roi_perspective_transform(input, rois, transformed_height, transformed_width,
                              spatial_scale=1.0, name=None):
    """Perspective warp of each quadrilateral ROI ([R, 8] corners, LoD gives its image) to
    [R, C, th, tw]: (out, mask int32 [R, 1, th, tw], transform_matrix [R, 9]), as Fluid's."""
    layer = 'roi_perspective_transform'
    _check(input, 'input', layer)
    _check(rois, 'rois', layer)
    dt = input.dtype.name
    out, mask, matrix, _, _ = _op(
        layer, layer, {'X': input, 'ROIs': rois},
        [('Out', dt), ('Mask', 'int32'), ('TransformMatrix', dt), ('Out2InIdx', 'int32'),
         ('Out2InWeights', dt)],
        {'transformed_height': int(transformed_height),
         'transformed_width': int(transformed_width), 'spatial_scale': float(spatial_scale)},
        name)
    return out, mask, matrix


def box_decoder_and_assign(prior_box, prior_box_var, target_box, box_score, box_clip,
                           name=None):
    """Decodes per-class deltas [R, C * 4] against the ROIs and keeps the best non-background
    class's box: (decoded [R, C * 4], assigned [R, 4])."""
    for what, v in (('prior_box', prior_box), ('prior_box_var', prior_box_var),
                    ('target_box', target_box), ('box_score', box_score)):
        _check(v, what, 'box_decoder_and_assign')
    dt = prior_box.dtype.name
    return tuple(_op('box_decoder_and_assign', 'box_decoder_and_assign',
                     {'PriorBox': prior_box, 'PriorBoxVar': prior_box_var,
                      'TargetBox': target_box, 'BoxScore': box_score},
                     [('DecodeBox', dt), ('OutputAssignBox', dt)],
                     {'box_clip': float(box_clip)}, name))


def yolov3_loss(x, gt_box, gt_label, anchors, anchor_mask, class_num, ignore_thresh,
                downsample_ratio, gt_score=None, use_label_smooth=True, name=None,
                scale_x_y=1.):
    """YOLOv3's loss [N] of one head; trains x (the op's gradient)."""
    for what, v in (('x', x), ('gt_box', gt_box), ('gt_label', gt_label)):
        if not isinstance(v, Variable):
            raise TypeError('yolov3_loss: %s must be a Variable, got %r' % (what, v))
    if gt_score is not None and not isinstance(gt_score, Variable):
        raise TypeError('yolov3_loss: gt_score must be a Variable, got %r' % (gt_score,))
    for what, v in (('anchors', anchors), ('anchor_mask', anchor_mask)):
        if not isinstance(v, (list, tuple)):
            raise TypeError('yolov3_loss: %s must be a list or tuple, got %r' % (what, v))
    if not isinstance(class_num, int):
        raise TypeError('yolov3_loss: class_num must be an integer, got %r' % (class_num,))
    if not isinstance(ignore_thresh, float):
        raise TypeError('yolov3_loss: ignore_thresh must be a float, got %r' % (ignore_thresh,))
    if not isinstance(use_label_smooth, bool):
        raise TypeError('yolov3_loss: use_label_smooth must be a bool, got %r'
                        % (use_label_smooth,))
    attrs = {'anchors': [int(a) for a in anchors], 'anchor_mask': [int(a) for a in anchor_mask],
             'class_num': class_num, 'ignore_thresh': ignore_thresh,
             'downsample_ratio': int(downsample_ratio), 'use_label_smooth': use_label_smooth,
             'scale_x_y': float(scale_x_y)}
    h = layers._Helper('yolov3_loss', name)
    loss = h.tmp(x.dtype.name)
    obj = h.tmp(x.dtype.name, stop_gradient=True)
    match = h.tmp('int32', stop_gradient=True)
    ins = {'X': x, 'GTBox': gt_box, 'GTLabel': gt_label}
    if gt_score is not None:
        ins['GTScore'] = gt_score
    h.append('yolov3_loss', ins,
             {'Loss': loss, 'ObjectnessMask': obj, 'GTMatchMask': match}, attrs)
    return loss


def generate_proposals(scores, bbox_deltas, im_info, anchors, variances, pre_nms_top_n=6000,
                       post_nms_top_n=1000, nms_thresh=0.5, min_size=0.1, eta=1.0, name=None,
                       return_rois_num=False):
    """Faster R-CNN proposals: (rpn_rois [R, 4], rpn_roi_probs [R, 1]), one LoD level per
    image, and with return_rois_num the int64 [N] row counts up to each image's end (Paddle
    1.8.5's RpnRoisLod). An image whose boxes are all filtered out has no rows."""
    for what, v in (('scores', scores), ('bbox_deltas', bbox_deltas), ('im_info', im_info),
                    ('anchors', anchors), ('variances', variances)):
        _check(v, what, 'generate_proposals')
    attrs = {'pre_nms_topN': int(pre_nms_top_n), 'post_nms_topN': int(post_nms_top_n),
             'nms_thresh': float(nms_thresh), 'min_size': float(min_size), 'eta': float(eta)}
    rois, probs, lod = _op('generate_proposals', 'generate_proposals',
                           {'Scores': scores, 'BboxDeltas': bbox_deltas, 'ImInfo': im_info,
                            'Anchors': anchors, 'Variances': variances},
                           [('RpnRois', bbox_deltas.dtype.name),
                            ('RpnRoiProbs', scores.dtype.name), ('RpnRoisLod', 'int64')],
                           attrs, name, stop_gradient=True)
    if return_rois_num:
        return rois, probs, lod
    return rois, probs


def rpn_target_assign(bbox_pred, cls_logits, anchor_box, anchor_var, gt_boxes, is_crowd, im_info,
                      rpn_batch_size_per_im=256, rpn_straddle_thresh=0.0, rpn_fg_fraction=0.5,
                      rpn_positive_overlap=0.7, rpn_negative_overlap=0.3, use_random=True):
    """RPN training targets: (predicted_scores [F' + B, 1], predicted_location [F, 4],
    target_label, target_bbox, bbox_inside_weight), the predictions gathered from
    cls_logits and bbox_pred (rows ordered as the anchors, images one after another) at
    the op's ScoreIndex and LocationIndex. With use_random=False the sampling keeps the
    first anchors, exactly as Paddle's; with use_random rill's generator draws the
    reservoir samples, so which anchors are kept differs from Paddle's run to run."""
    for what, v in (('bbox_pred', bbox_pred), ('cls_logits', cls_logits),
                    ('anchor_box', anchor_box), ('anchor_var', anchor_var),
                    ('gt_boxes', gt_boxes), ('im_info', im_info)):
        _check(v, what, 'rpn_target_assign')
    _check(is_crowd, 'is_crowd', 'rpn_target_assign', ('int32',))
    dt = anchor_box.dtype.name
    attrs = {'rpn_batch_size_per_im': int(rpn_batch_size_per_im),
             'rpn_straddle_thresh': float(rpn_straddle_thresh),
             'rpn_positive_overlap': float(rpn_positive_overlap),
             'rpn_negative_overlap': float(rpn_negative_overlap),
             'rpn_fg_fraction': float(rpn_fg_fraction), 'use_random': bool(use_random)}
    loc, score, label, bbox, weight = _op(
        'rpn_target_assign', 'rpn_target_assign',
        {'Anchor': anchor_box, 'GtBoxes': gt_boxes, 'IsCrowd': is_crowd, 'ImInfo': im_info},
        [('LocationIndex', 'int32'), ('ScoreIndex', 'int32'), ('TargetLabel', 'int32'),
         ('TargetBBox', dt), ('BBoxInsideWeight', dt)], attrs, stop_gradient=True)
    cls_logits = layers.reshape(x=cls_logits, shape=(-1, 1))
    bbox_pred = layers.reshape(x=bbox_pred, shape=(-1, 4))
    return (layers.gather(cls_logits, score), layers.gather(bbox_pred, loc), label, bbox,
            weight)


def retinanet_target_assign(bbox_pred, cls_logits, anchor_box, anchor_var, gt_boxes, gt_labels,
                            is_crowd, im_info, num_classes=1, positive_overlap=0.5,
                            negative_overlap=0.4):
    """RetinaNet training targets: (predicted_scores [F' + B, num_classes],
    predicted_location [F, 4], target_label, target_bbox, bbox_inside_weight, fg_num),
    the predictions gathered from cls_logits and bbox_pred at the op's ScoreIndex and
    LocationIndex. No sampling: the same anchors as Paddle's."""
    for what, v in (('bbox_pred', bbox_pred), ('cls_logits', cls_logits),
                    ('anchor_box', anchor_box), ('anchor_var', anchor_var),
                    ('gt_boxes', gt_boxes), ('im_info', im_info)):
        _check(v, what, 'retinanet_target_assign')
    _check(gt_labels, 'gt_labels', 'retinanet_target_assign', ('int32',))
    _check(is_crowd, 'is_crowd', 'retinanet_target_assign', ('int32',))
    dt = anchor_box.dtype.name
    attrs = {'positive_overlap': float(positive_overlap),
             'negative_overlap': float(negative_overlap)}
    loc, score, label, bbox, weight, fg_num = _op(
        'retinanet_target_assign', 'retinanet_target_assign',
        {'Anchor': anchor_box, 'GtBoxes': gt_boxes, 'GtLabels': gt_labels, 'IsCrowd': is_crowd,
         'ImInfo': im_info},
        [('LocationIndex', 'int32'), ('ScoreIndex', 'int32'), ('TargetLabel', 'int32'),
         ('TargetBBox', dt), ('BBoxInsideWeight', dt), ('ForegroundNumber', 'int32')], attrs,
        stop_gradient=True)
    cls_logits = layers.reshape(x=cls_logits, shape=(-1, num_classes))
    bbox_pred = layers.reshape(x=bbox_pred, shape=(-1, 4))
    return (layers.gather(cls_logits, score), layers.gather(bbox_pred, loc), label, bbox,
            weight, fg_num)


def generate_proposal_labels(rpn_rois, gt_classes, is_crowd, gt_boxes, im_info,
                             batch_size_per_im=256, fg_fraction=0.25, fg_thresh=0.25,
                             bg_thresh_hi=0.5, bg_thresh_lo=0.0,
                             bbox_reg_weights=[0.1, 0.1, 0.2, 0.2], class_nums=None,
                             use_random=True, is_cls_agnostic=False, is_cascade_rcnn=False):
    """Fast R-CNN's RoI sampling: (rois, labels_int32, bbox_targets, bbox_inside_weights,
    bbox_outside_weights), one LoD level per image. With use_random=False the first
    foregrounds and backgrounds are kept, exactly as Paddle's; with use_random rill's
    generator draws the reservoir samples (Paddle's are not reproducible), with the same
    counts. is_cascade_rcnn=True is not supported (an error when the program runs)."""
    _check(rpn_rois, 'rpn_rois', 'generate_proposal_labels')
    _check(gt_classes, 'gt_classes', 'generate_proposal_labels', ('int32',))
    _check(is_crowd, 'is_crowd', 'generate_proposal_labels', ('int32',))
    _check(gt_boxes, 'gt_boxes', 'generate_proposal_labels')
    _check(im_info, 'im_info', 'generate_proposal_labels')
    if not isinstance(class_nums, int):
        raise TypeError('generate_proposal_labels: class_nums must be an int, got %r'
                        % (class_nums,))
    dt = rpn_rois.dtype.name
    attrs = {'batch_size_per_im': int(batch_size_per_im), 'fg_fraction': float(fg_fraction),
             'fg_thresh': float(fg_thresh), 'bg_thresh_hi': float(bg_thresh_hi),
             'bg_thresh_lo': float(bg_thresh_lo),
             'bbox_reg_weights': [float(w) for w in bbox_reg_weights],
             'class_nums': class_nums, 'use_random': bool(use_random),
             'is_cls_agnostic': bool(is_cls_agnostic), 'is_cascade_rcnn': bool(is_cascade_rcnn)}
    return tuple(_op('generate_proposal_labels', 'generate_proposal_labels',
                     {'RpnRois': rpn_rois, 'GtClasses': gt_classes, 'IsCrowd': is_crowd,
                      'GtBoxes': gt_boxes, 'ImInfo': im_info},
                     [('Rois', dt), ('LabelsInt32', gt_classes.dtype.name), ('BboxTargets', dt),
                      ('BboxInsideWeights', dt), ('BboxOutsideWeights', dt)], attrs,
                     stop_gradient=True))


def generate_mask_labels(im_info, gt_classes, is_crowd, gt_segms, rois, labels_int32,
                         num_classes, resolution):
    """Mask R-CNN mask targets: (mask_rois, roi_has_mask_int32, mask_int32), each with
    one LoD level per image; gt_segms holds the polygon points with three LoD levels."""
    layer = 'generate_mask_labels'
    for what, v, dts in (('im_info', im_info, _FLOATS), ('gt_classes', gt_classes, ('int32',)),
                         ('is_crowd', is_crowd, ('int32',)), ('gt_segms', gt_segms, _FLOATS),
                         ('rois', rois, ('float32',)), ('labels_int32', labels_int32, ('int32',))):
        _check(v, what, layer, dts)
    for what, v in (('num_classes', num_classes), ('resolution', resolution)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError('%s: %s must be int, got %r' % (layer, what, v))
    return tuple(_op(layer, layer,
                     {'ImInfo': im_info, 'GtClasses': gt_classes, 'IsCrowd': is_crowd,
                      'GtSegms': gt_segms, 'Rois': rois, 'LabelsInt32': labels_int32},
                     [('MaskRois', rois.dtype.name), ('RoiHasMaskInt32', 'int32'),
                      ('MaskInt32', 'int32')],
                     {'num_classes': num_classes, 'resolution': resolution}, None,
                     stop_gradient=True))
