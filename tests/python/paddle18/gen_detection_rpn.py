"""The programs of tests/python/test_detection_rpn.py, built the same way with paddle.fluid
or rill: generate_proposals (NMS with and without eta, pre/post top-n, no NMS, an image
left empty, return_rois_num) over anchor_generator's anchors, and rpn_target_assign with
use_random=False (straddling anchors pruned or not, crowd boxes, sampling truncated or
not) and retinanet_target_assign, with the gathers of their layers, and
generate_proposal_labels (use_random=False) on generate_proposals' RoIs, class-aware and
class-agnostic. Run under Paddle 1.8.5
(`PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python /tmp/pd18/bin/python gen_detection_rpn.py`)
it writes Paddle's outputs, their dtypes and LoDs to detection_rpn.json beside it."""
import json
import os
import sys

import numpy as np

import gen_seqops

SEED = 20201203
N, A, H, W = 2, 3, 4, 5
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'detection_rpn.json')


def data():
    r = np.random.RandomState(SEED)
    d = {}
    d['feat'] = r.uniform(-1, 1, (N, 8, H, W)).astype('float32')
    d['scores'] = r.uniform(0, 1, (N, A, H, W)).astype('float32')
    d['deltas'] = r.uniform(-0.6, 0.6, (N, 4 * A, H, W)).astype('float32')
    d['im_info'] = np.array([[30, 38, 1.0], [60, 76, 2.0]], 'float32')
    d['im_info_empty'] = np.array([[30, 38, 1.0], [30, 38, 50.0]], 'float32')
    lo = r.uniform(0, 26, (6, 2))
    ext = r.uniform(4, 14, (6, 2))
    gt = np.concatenate([lo, lo + ext], axis=1).astype('float32')
    gt[3:] *= 0.5                                 # image 1's boxes at the original scale
    d['gt'] = gt                                  # LoD [3, 3]
    d['crowd'] = np.array([[0], [0], [1], [0], [0], [0]], 'int32')
    d['cls'] = r.uniform(-2, 2, (N, H * W * A, 1)).astype('float32')
    d['bbox'] = r.uniform(-1, 1, (N, H * W * A, 4)).astype('float32')
    d['labels'] = r.randint(1, 4, (6, 1)).astype('int32')
    d['cls3'] = r.uniform(-2, 2, (N, H * W * A, 3)).astype('float32')
    return d


CASES = ['generate_proposals', 'generate_proposals_no_nms', 'generate_proposals_empty',
         'rpn_target_assign', 'rpn_target_assign_all', 'retinanet_target_assign',
         'generate_proposal_labels', 'generate_proposal_labels_agnostic']


def build(fluid, case):
    """Returns (main, startup, feed, fetch, {}), as gen_seqops.run takes them."""
    d = data()
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    feed, fetch = {}, []
    with fluid.program_guard(main, startup):
        def inp(name, shape, dtype='float32', lod=None, key=None):
            v = fluid.data(name, shape, dtype, lod_level=1 if lod else 0)
            arr = d[key or name]
            feed[name] = (arr, lod) if lod else arr
            return v

        feat = inp('feat', [None, 8, H, W])
        anchors, variances = L.anchor_generator(feat, [10.0, 20.0, 30.0], [1.0],
                                                variance=[0.1, 0.1, 0.2, 0.2], stride=[8.0, 8.0])
        if case.startswith('generate_proposal_labels'):
            sc = inp('scores', [None, A, H, W])
            dl = inp('deltas', [None, 4 * A, H, W])
            info = inp('im_info', [None, 3])
            gt = inp('gt', [None, 4], lod=[[3, 3]])
            crowd = inp('crowd', [None, 1], 'int32', lod=[[3, 3]])
            labels = inp('labels', [None, 1], 'int32', lod=[[3, 3]])
            rois, _ = L.generate_proposals(sc, dl, info, anchors, variances, 0, 30, 0.7, 1.0)
            if case.endswith('agnostic'):
                outs = L.generate_proposal_labels(rois, labels, crowd, gt, info, 40, 0.5, 0.4,
                                                  0.4, 0.05, [1.0, 1.0, 1.0, 1.0], 2,
                                                  use_random=False, is_cls_agnostic=True)
            else:
                outs = L.generate_proposal_labels(rois, labels, crowd, gt, info, 16, 0.25, 0.3,
                                                  0.3, 0.0, class_nums=4, use_random=False)
            fetch = list(outs)
        elif case.startswith('generate_proposals'):
            sc = inp('scores', [None, A, H, W])
            dl = inp('deltas', [None, 4 * A, H, W])
            info = inp('im_info', [None, 3],
                       key='im_info_empty' if case.endswith('empty') else None)
            if case == 'generate_proposals':
                r1, p1, n1 = L.generate_proposals(sc, dl, info, anchors, variances, 40, 12, 0.6,
                                                  3.0, return_rois_num=True)
                r2, p2 = L.generate_proposals(sc, dl, info, anchors, variances, 0, 0, 0.8, 0.1,
                                              eta=0.7)
                fetch = [r1, p1, n1, r2, p2]
            elif case == 'generate_proposals_no_nms':
                r1, p1 = L.generate_proposals(sc, dl, info, anchors, variances, -1, 5, 0.0, 2.0)
                fetch = [r1, p1]
            else:
                r1, p1 = L.generate_proposals(sc, dl, info, anchors, variances, 20, 10, 0.5, 4.0)
                fetch = [r1, p1]
        else:
            gt = inp('gt', [None, 4], lod=[[3, 3]])
            crowd = inp('crowd', [None, 1], 'int32', lod=[[3, 3]])
            info = inp('im_info', [None, 3])
            cls = inp('cls', [None, H * W * A, 1])
            bbox = inp('bbox', [None, H * W * A, 4])
            anchors = L.reshape(anchors, [-1, 4])
            variances = L.reshape(variances, [-1, 4])
            if case == 'retinanet_target_assign':
                labels = inp('labels', [None, 1], 'int32', lod=[[3, 3]])
                cls3 = inp('cls3', [None, H * W * A, 3])
                outs = L.retinanet_target_assign(bbox, cls3, anchors, variances, gt, labels,
                                                 crowd, info, num_classes=3,
                                                 positive_overlap=0.45, negative_overlap=0.25)
            elif case == 'rpn_target_assign':
                outs = L.rpn_target_assign(bbox, cls, anchors, variances, gt, crowd, info,
                                           rpn_batch_size_per_im=12, rpn_fg_fraction=0.25,
                                           rpn_positive_overlap=0.5, rpn_negative_overlap=0.2,
                                           use_random=False)
            else:
                outs = L.rpn_target_assign(bbox, cls, anchors, variances, gt, crowd, info,
                                           rpn_straddle_thresh=-1.0, rpn_batch_size_per_im=256,
                                           use_random=False)
            fetch = list(outs)
    fetch = [v.name for v in fetch]
    return main, startup, feed, fetch, {}


def run(fluid, case):
    """Paddle's (or rill's) outputs as numpy arrays and their LoDs, run by gen_seqops.run."""
    outs, lods = gen_seqops.run(fluid, build, case, lod=True)
    return outs, [[list(x) for x in lod] for lod in lods]


def main():
    import paddle
    import paddle.fluid as fluid
    assert paddle.__version__ == '1.8.5', paddle.__version__
    ref = {}
    for case in CASES:
        outs, lods = run(fluid, case)
        ref[case] = [[list(o.shape), str(o.dtype), l,
                      o.tolist() if o.dtype.kind in 'iu' else o.astype('float64').round(7).tolist()]
                     for o, l in zip(outs, lods)]
    with open(OUT + '.tmp', 'w') as f:
        json.dump(ref, f, sort_keys=True)
        f.write('\n')
    os.replace(OUT + '.tmp', OUT)


if __name__ == '__main__':
    sys.exit(main())
