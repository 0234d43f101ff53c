"""The programs of tests/python/test_detection.py, built the same way with paddle.fluid or
rill: the detection layers (iou_similarity, box_coder, prior_box, density_prior_box,
anchor_generator, box_clip, polygon_box_transform, yolo_box, bipartite_match,
target_assign, multiclass_nms, detection_output, multi_box_head, ssd_loss, roi_align,
roi_pool, box_decoder_and_assign, yolov3_loss; gradients where the layers have them)
on seeded inputs. Run
under Paddle 1.8.5 (`PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python /tmp/pd18/bin/python
gen_detection.py`) it prints Paddle's outputs and their LoD as the REF literal that the
test embeds."""
import sys

import numpy as np

import gen_seqops

SEED = 20201128


def boxes(r, n, scale=1.0):
    """n random boxes xmin, ymin, xmax, ymax with positive extents."""
    lo = r.uniform(0, 0.6, (n, 2))
    ext = r.uniform(0.05, 0.4, (n, 2))
    return (np.concatenate([lo, lo + ext], axis=1) * scale).astype('float32')


def data():
    r = np.random.RandomState(SEED)
    d = {}
    d['gt'] = boxes(r, 5)                        # LoD [2, 3]
    d['gt_px'] = boxes(r, 5, 50.0)
    d['priors'] = boxes(r, 7)
    d['priors_px'] = boxes(r, 7, 50.0)
    d['prior_var'] = r.uniform(0.05, 0.3, (7, 4)).astype('float32')
    d['deltas'] = r.uniform(-1, 1, (3, 7, 4)).astype('float32')
    d['deltas_t'] = r.uniform(-1, 1, (7, 3, 4)).astype('float32')
    d['feat'] = r.uniform(-1, 1, (2, 3, 3, 4)).astype('float32')
    d['img'] = np.zeros((2, 3, 24, 40), 'float32')
    d['clip_boxes'] = (r.uniform(-20, 80, (5, 4))).astype('float32')
    d['im_info'] = np.array([[40, 60, 1.0], [50, 30, 2.0]], 'float32')
    d['geo'] = r.uniform(-5, 5, (2, 4, 3, 5)).astype('float32')
    d['yolo_x'] = r.uniform(-2, 2, (2, 2 * (5 + 3), 3, 3)).astype('float32')
    d['yolo_img'] = np.array([[96, 128], [80, 100]], 'int32')
    d['dist'] = r.uniform(0, 1, (5, 6)).astype('float32')
    d['dist'][1, 2] = 0.0
    d['dist'][3] = 0.0                            # a row that matches nothing
    d['ta_x'] = r.uniform(-1, 1, (5, 6, 3)).astype('float32')
    d['ta_label'] = r.randint(0, 4, (5, 1, 1)).astype('int32')
    d['ta_match'] = np.array([[2, -1, 0, 0, -1, 1], [1, 0, -1, 1, -1, -1]], 'int32')
    d['ta_neg'] = np.array([[1], [4], [2], [4], [5]], 'int32')
    d['nms_boxes'] = np.stack([boxes(r, 6), boxes(r, 6)])
    d['nms_scores'] = r.uniform(0, 1, (2, 3, 6)).astype('float32')
    d['loc'] = r.uniform(-0.5, 0.5, (2, 7, 4)).astype('float32')
    d['conf'] = r.uniform(-2, 2, (2, 7, 3)).astype('float32')
    d['mbh_a'] = r.uniform(-1, 1, (2, 3, 4, 4)).astype('float32')
    d['mbh_b'] = r.uniform(-1, 1, (2, 3, 2, 2)).astype('float32')
    d['mbh_img'] = np.zeros((2, 3, 32, 32), 'float32')
    d['ssd_loc'] = r.uniform(-0.5, 0.5, (2, 12, 4)).astype('float32')
    d['ssd_conf'] = r.uniform(-2, 2, (2, 12, 3)).astype('float32')
    d['ssd_gt'] = boxes(r, 5)                     # LoD [2, 3]
    d['ssd_label'] = r.randint(1, 3, (5, 1)).astype('int32')
    d['ssd_priors'] = np.concatenate([d['ssd_gt'] + r.uniform(-0.05, 0.05, (5, 4)),
                                      boxes(r, 7)]).astype('float32')
    d['roi_x'] = r.uniform(-1, 1, (2, 3, 8, 8)).astype('float32')
    d['rois'] = np.array([[1.0, 2.0, 9.0, 12.0], [0.0, 0.0, 15.0, 15.0], [5.5, 3.2, 7.9, 14.1]],
                         'float32')
    d['rois_lod'] = np.array([0, 2, 3], 'int64')
    d['roi_wa'] = r.uniform(-1, 1, (3, 3, 2, 3)).astype('float32')
    d['roi_wb'] = r.uniform(-1, 1, (3, 3, 3, 2)).astype('float32')
    d['roi_wp'] = r.uniform(-1, 1, (3, 3, 2, 2)).astype('float32')
    d['bda_prior'] = boxes(r, 4, 40.0)
    d['bda_var'] = np.array([0.1, 0.1, 0.2, 0.2], 'float32')
    d['bda_target'] = r.uniform(-3, 3, (4, 3 * 4)).astype('float32')
    d['bda_score'] = r.uniform(0, 1, (4, 3)).astype('float32')
    d['bda_score'][2] = [0.9, -2.0, -3.0]        # no class but the background above -1
    d['yl_x'] = r.uniform(-1.5, 1.5, (2, 2 * (5 + 3), 4, 4)).astype('float32')
    d['yl_box'] = np.concatenate([r.uniform(0.05, 0.95, (2, 4, 2)),
                                  r.uniform(0.1, 0.9, (2, 4, 2))], axis=2).astype('float32')
    d['yl_box'][1, 3] = 0.0                       # padding: not a box
    d['yl_label'] = r.randint(0, 3, (2, 4)).astype('int32')
    d['yl_score'] = r.uniform(0.3, 1.0, (2, 4)).astype('float32')
    d['yl_w'] = np.array([0.7, -1.3], 'float32')
    d['ssd_var'] = np.tile(np.array([[0.1, 0.1, 0.2, 0.2]], 'float32'), (12, 1))
    return d


CASES = ['iou', 'box_coder', 'prior_box', 'density_prior_box', 'anchor_generator',
         'box_clip', 'polygon_box_transform', 'yolo_box', 'bipartite_match', 'target_assign',
         'multiclass_nms', 'multiclass_nms_empty', 'detection_output', 'multi_box_head',
         'ssd_loss', 'ssd_loss_plain', 'roi_align', 'roi_pool', 'box_decoder_and_assign',
         'yolov3_loss', 'yolov3_loss_plain']


def feeder(fluid, d, feed):
    """inp(name, shape, dtype, lod, key): a fluid.data input fed d[key or name] (with the
    LoD lengths `lod`), recorded in feed as gen_seqops.run takes it."""
    def inp(name, shape, dtype='float32', lod=None, key=None):
        v = fluid.data(name, shape, dtype, lod_level=1 if lod else 0)
        arr = d[key or name]
        feed[name] = (arr, lod) if lod else arr
        return v
    return inp


def build(fluid, case):
    """Returns (main, startup, feed, fetch, {parameter name: value to set}), as
    gen_seqops.run takes them."""
    d = data()
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    feed, fetch, values = {}, [], {}
    with fluid.program_guard(main, startup):
        inp = feeder(fluid, d, feed)

        if case == 'iou':
            gt = inp('gt', [None, 4], lod=[[2, 3]])
            pr = inp('priors', [None, 4])
            gp = inp('gt_px', [None, 4])
            pp = inp('priors_px', [None, 4])
            fetch = [L.iou_similarity(gt, pr), L.iou_similarity(gp, pp, box_normalized=False)]
        elif case == 'box_coder':
            gt = inp('gt', [None, 4], lod=[[2, 3]])
            pr = inp('priors', [None, 4])
            pv = inp('prior_var', [None, 4])
            gp = inp('gt_px', [None, 4])
            pp = inp('priors_px', [None, 4])
            dl = inp('deltas', [None, 7, 4])
            dt = inp('deltas_t', [7, None, 4])
            fetch = [L.box_coder(pr, pv, gt),
                     L.box_coder(pp, [0.1, 0.1, 0.2, 0.2], gp, box_normalized=False),
                     L.box_coder(pr, pv, dl, code_type='decode_center_size'),
                     L.box_coder(pr, [0.1, 0.2, 0.3, 0.4], dt, code_type='decode_center_size',
                                 axis=1),
                     L.box_coder(pp, pv, dl, code_type='decode_center_size',
                                 box_normalized=False)]
        elif case == 'prior_box':
            f = inp('feat', [None, 3, 3, 4])
            im = inp('img', [None, 3, 24, 40])
            b1, v1 = L.prior_box(f, im, [4.0, 8.0], [9.0, 12.0], [2.0, 3.0], flip=True,
                                 clip=True)
            b2, v2 = L.prior_box(f, im, 6.0, None, [1.0, 0.5], variance=[0.1, 0.2, 0.3, 0.4],
                                 steps=[10.0, 8.0], offset=0.25)
            b3, v3 = L.prior_box(f, im, [5.0], [10.0], [2.0], flip=True,
                                 min_max_aspect_ratios_order=True)
            fetch = [b1, v1, b2, v2, b3]
        elif case == 'density_prior_box':
            f = inp('feat', [None, 3, 3, 4])
            im = inp('img', [None, 3, 24, 40])
            b1, v1 = L.density_prior_box(f, im, [2, 1], [6.0, 12.0], [1.0, 2.0], clip=True)
            b2, v2 = L.density_prior_box(f, im, [3], [5.0], [0.5], variance=[0.1, 0.1, 0.3, 0.3],
                                         steps=[9.0, 7.0], offset=0.3, flatten_to_2d=True)
            fetch = [b1, v1, b2, v2]
        elif case == 'anchor_generator':
            f = inp('feat', [None, 3, 3, 4])
            a1, v1 = L.anchor_generator(f, [32.0, 64.0], [0.5, 1.0, 2.0], stride=[16.0, 16.0])
            a2, v2 = L.anchor_generator(f, 24, 1.5, variance=[0.2, 0.2, 0.1, 0.1],
                                        stride=[8.0, 12.0], offset=0.3)
            fetch = [a1, v1, a2, v2]
        elif case == 'box_clip':
            b = inp('clip_boxes', [None, 4], lod=[[3, 2]])
            info = inp('im_info', [None, 3])
            fetch = [L.box_clip(b, info)]
        elif case == 'polygon_box_transform':
            g = inp('geo', [None, 4, 3, 5])
            fetch = [L.polygon_box_transform(g)]
        elif case == 'yolo_box':
            x = inp('yolo_x', [None, 16, 3, 3])
            s = inp('yolo_img', [None, 2], 'int32')
            b1, s1 = L.yolo_box(x, s, [10, 14, 23, 27], 3, 0.3, 32)
            b2, s2 = L.yolo_box(x, s, [10, 14, 23, 27], 3, 0.01, 32, clip_bbox=False,
                                scale_x_y=1.2)
            fetch = [b1, s1, b2, s2]
        elif case == 'bipartite_match':
            dm = inp('dist', [None, 6], lod=[[2, 3]])
            whole = fluid.data('dist1', [None, 6], 'float32')
            feed['dist1'] = d['dist']
            i1, d1 = L.bipartite_match(dm)
            i2, d2 = L.bipartite_match(dm, 'per_prediction', 0.3)
            i3, d3 = L.bipartite_match(whole, 'per_prediction')
            fetch = [i1, d1, i2, d2, i3, d3]
        elif case == 'target_assign':
            x = inp('ta_x', [None, 6, 3], lod=[[3, 2]])
            lab = inp('ta_label', [None, 1, 1], 'int32', lod=[[3, 2]])
            m = inp('ta_match', [None, 6], 'int32')
            neg = inp('ta_neg', [None, 1], 'int32', lod=[[2, 3]])
            o1, w1 = L.target_assign(x, m, mismatch_value=-1)
            o2, w2 = L.target_assign(lab, m, negative_indices=neg, mismatch_value=0)
            fetch = [o1, w1, o2, w2]
        elif case in ('multiclass_nms', 'multiclass_nms_empty'):
            b = inp('nms_boxes', [None, 6, 4])
            s = inp('nms_scores', [None, 3, 6])
            if case == 'multiclass_nms':
                fetch = [L.multiclass_nms(b, s, 0.2, 4, 5, nms_threshold=0.4),
                         L.multiclass_nms(b, s, 0.1, -1, -1, background_label=-1,
                                          nms_eta=0.8, normalized=False)]
            else:
                fetch = [L.multiclass_nms(b, s, 2.0, 4, 5)]
        elif case == 'detection_output':
            loc = inp('loc', [None, 7, 4])
            conf = inp('conf', [None, 7, 3])
            pr = inp('priors', [None, 4])
            pv = inp('prior_var', [None, 4])
            out = L.detection_output(loc, conf, pr, pv, nms_threshold=0.45, keep_top_k=6,
                                     score_threshold=0.05)
            out2, idx = L.detection_output(loc, conf, pr, pv, score_threshold=0.3,
                                           return_index=True)
            fetch = [out, out2, idx]
        elif case == 'multi_box_head':
            a = inp('mbh_a', [None, 3, 4, 4])
            b = inp('mbh_b', [None, 3, 2, 2])
            im = inp('mbh_img', [None, 3, 32, 32])
            loc, conf, box, var = L.multi_box_head(
                [a, b], im, base_size=32, num_classes=3, aspect_ratios=[[2.0], [2.0, 3.0]],
                min_sizes=[6.0, 14.0], max_sizes=[14.0, 24.0], steps=[8.0, 16.0], flip=True,
                clip=True)
            fetch = [loc, conf, box, var]
            r = np.random.RandomState(SEED + 1)
            values = {p.name: r.uniform(-0.5, 0.5, p.shape).astype('float32')
                      for p in sorted(main.global_block().all_parameters(),
                                      key=lambda p: p.name)}
        elif case in ('ssd_loss', 'ssd_loss_plain'):
            loc = inp('ssd_loc', [None, 12, 4])
            conf = inp('ssd_conf', [None, 12, 3])
            gt = inp('ssd_gt', [None, 4], lod=[[2, 3]])
            lab = inp('ssd_label', [None, 1], 'int32', lod=[[2, 3]])
            pr = inp('ssd_priors', [12, 4])
            loc.stop_gradient = False
            conf.stop_gradient = False
            if case == 'ssd_loss':
                pv = inp('ssd_var', [12, 4])
                loss = L.ssd_loss(loc, conf, gt, lab, pr, pv, neg_pos_ratio=1.0)
            else:
                loss = L.ssd_loss(loc, conf, gt, lab, pr, [0.1, 0.1, 0.2, 0.2],
                                  match_type='bipartite',
                                  loc_loss_weight=0.5, normalize=False)
            total = L.reduce_sum(loss)
            fluid.backward.append_backward(total)
            fetch = [loss, main.global_block().var('ssd_loc@GRAD'),
                     main.global_block().var('ssd_conf@GRAD')]
        elif case in ('roi_align', 'roi_pool'):
            x = inp('roi_x', [None, 3, 8, 8])
            x.stop_gradient = False
            rois = inp('rois', [None, 4], lod=[[2, 1]])
            if case == 'roi_align':
                rl = inp('rois_lod', [None], 'int64')
                a = L.roi_align(x, rois, 2, 3, 0.5)
                b = L.roi_align(x, rois, 3, 2, 0.5, sampling_ratio=2, rois_lod=rl)
                wa = inp('roi_wa', [None, 3, 2, 3])
                wb = inp('roi_wb', [None, 3, 3, 2])
                total = L.reduce_sum(a * wa) + L.reduce_sum(b * wb)
                outs = [a, b]
            else:
                p = L.roi_pool(x, rois, 2, 2, 0.5)
                wp = inp('roi_wp', [None, 3, 2, 2])
                total = L.reduce_sum(p * wp)
                outs = [p]
            fluid.backward.append_backward(total)
            fetch = outs + [main.global_block().var('roi_x@GRAD')]
        elif case == 'box_decoder_and_assign':
            pr = inp('bda_prior', [None, 4], lod=[[3, 1]])
            pv = inp('bda_var', [4])
            tb = inp('bda_target', [None, 12], lod=[[3, 1]])
            sc = inp('bda_score', [None, 3], lod=[[3, 1]])
            fetch = list(L.box_decoder_and_assign(pr, pv, tb, sc, 2.5))
        elif case in ('yolov3_loss', 'yolov3_loss_plain'):
            x = inp('yl_x', [None, 16, 4, 4])
            x.stop_gradient = False
            gb = inp('yl_box', [None, 4, 4])
            gl = inp('yl_label', [None, 4], 'int32')
            w = inp('yl_w', [None])
            anchors = [4, 6, 10, 13, 16, 30, 33, 23]
            if case == 'yolov3_loss':
                gs = inp('yl_score', [None, 4])
                loss = L.yolov3_loss(x, gb, gl, anchors, [2, 3], 3, 0.5, 8, gt_score=gs)
            else:
                loss = L.yolov3_loss(x, gb, gl, anchors, [1, 2], 3, 0.3, 8,
                                     use_label_smooth=False, scale_x_y=1.2)
            total = L.reduce_sum(loss * w)
            fluid.backward.append_backward(total)
            fetch = [loss, main.global_block().var('yl_x@GRAD')]
    fetch = [v.name for v in fetch]
    return main, startup, feed, fetch, values


def run(fluid, case, builder=None):
    """Paddle's (or rill's) outputs as numpy arrays and their LoDs, run by gen_seqops.run
    on builder's program (this module's build by default)."""
    outs, lods = gen_seqops.run(fluid, builder or build, case, lod=True)
    return outs, [[list(x) for x in lod] for lod in lods]


def main():
    import paddle
    import paddle.fluid as fluid
    assert paddle.__version__ == '1.8.5', paddle.__version__
    print('REF = {')
    for case in CASES:
        outs, lods = run(fluid, case)
        print('    %r: [' % case)
        for o, l in zip(outs, lods):
            vals = o.tolist() if o.dtype.kind in 'iu' else o.astype('float64').round(7).tolist()
            print('        (%r, %r, %r, %r),' % (list(o.shape), str(o.dtype), l, vals))
        print('    ],')
    print('}')


if __name__ == '__main__':
    sys.exit(main())
