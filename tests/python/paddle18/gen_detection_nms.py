"""The programs of tests/python/test_detection_nms.py, built the same way with paddle.fluid
or rill: matrix_nms (linear and Gaussian decay, return_index, an image with nothing
kept), locality_aware_nms (merging runs of neighbours, keep_top_k, pixel boxes, nothing
kept), retinanet_detection_output (two levels, clamping, keep_top_k),
distribute_fpn_proposals (every level, RestoreIndex) and collect_fpn_proposals
(post_nms_top_n below and above the row count, an image with no rows at some levels) on
seeded inputs. Run under Paddle 1.8.5
(`PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python /tmp/pd18/bin/python
gen_detection_nms.py`) it writes Paddle's outputs and their LoD to
detection_nms/ref.json, which the test reads."""
import json
import os
import sys

import numpy as np

import gen_detection

SEED = 20260127
HERE = os.path.dirname(os.path.abspath(__file__))
REF_PATH = os.path.join(HERE, 'detection_nms', 'ref.json')


def boxes(r, n, scale=1.0):
    """n random boxes xmin, ymin, xmax, ymax with positive extents."""
    lo = r.uniform(0, 0.6, (n, 2))
    ext = r.uniform(0.1, 0.4, (n, 2))
    return (np.concatenate([lo, lo + ext], axis=1) * scale).astype('float32')


def data():
    r = np.random.RandomState(SEED)
    d = {}
    d['mn_boxes'] = np.stack([boxes(r, 10), boxes(r, 10), boxes(r, 10)])
    d['mn_scores'] = r.uniform(0, 1, (3, 4, 10)).astype('float32')
    d['mn_scores'][1] *= 0.1                       # image 1: nothing above the threshold
    d['mn_boxes_px'] = np.stack([boxes(r, 8, 40.0), boxes(r, 8, 40.0)])
    d['mn_scores_px'] = r.uniform(0, 1, (2, 3, 8)).astype('float32')
    d['la_boxes'] = np.stack([walk(r, 12), walk(r, 12)])
    d['la_scores'] = r.uniform(0.05, 1, (2, 1, 12)).astype('float32')
    d['la_boxes_px'] = np.stack([walk(r, 9) * 50.0])
    d['la_scores_px'] = r.uniform(0.05, 1, (1, 1, 9)).astype('float32')
    sizes = r.uniform(8, 700, 9)
    lo = r.uniform(0, 200, (9, 2))
    d['fpn_rois'] = np.concatenate([lo, lo + sizes[:, None] * r.uniform(0.5, 1.5, (9, 2))],
                                   axis=1).astype('float32')
    for i, n in enumerate((5, 3, 6)):
        d['cf_rois%d' % i] = boxes(r, n, 100.0)
        d['cf_scores%d' % i] = r.permutation(np.linspace(0.05, 0.95, n)).astype(
            'float32').reshape(n, 1) + np.float32(i * 0.01)
    for l, m in enumerate((6, 3)):
        lo = r.uniform(0, 60, (m, 2))
        d['rd_anchors%d' % l] = np.concatenate([lo, lo + r.uniform(10, 40, (m, 2))],
                                               axis=1).astype('float32')
        d['rd_deltas%d' % l] = r.uniform(-0.5, 0.5, (2, m, 4)).astype('float32')
        d['rd_scores%d' % l] = r.uniform(0, 1, (2, m, 3)).astype('float32')
    d['rd_info'] = np.array([[80, 90, 1.0], [100, 60, 1.5]], 'float32')
    return d


def walk(r, n):
    """n boxes mostly drifting a little from the one before (runs that merge), now and
    then jumping elsewhere."""
    out = np.zeros((n, 4))
    x, y = r.uniform(0, 0.5, 2)
    for i in range(n):
        if r.uniform() < 0.3:
            x, y = r.uniform(0, 0.5, 2)
        else:
            x, y = x + r.uniform(-0.02, 0.04), y + r.uniform(-0.02, 0.02)
        out[i] = [x, y, x + 0.3, y + 0.2]
    return out.astype('float32')


CASES = ['matrix_nms_linear', 'matrix_nms_gaussian', 'matrix_nms_pixel', 'lanms', 'lanms_topk',
         'lanms_pixel', 'lanms_empty', 'retinanet', 'retinanet_all', 'distribute_fpn', 'collect_fpn', 'collect_fpn_all']


def build(fluid, case):
    """Returns (main, startup, feed, fetch, {parameter name: value to set}), as
    gen_seqops.run takes them."""
    d = data()
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    feed, fetch, values = {}, [], {}
    with fluid.program_guard(main, startup):
        inp = gen_detection.feeder(fluid, d, feed)

        if case == 'matrix_nms_linear':
            b = inp('mn_boxes', [None, 10, 4])
            s = inp('mn_scores', [None, 4, 10])
            out, idx = L.matrix_nms(b, s, score_threshold=0.15, post_threshold=0.1,
                                    nms_top_k=6, keep_top_k=7, return_index=True)
            fetch = [out, idx]
        elif case == 'matrix_nms_gaussian':
            b = inp('mn_boxes', [None, 10, 4])
            s = inp('mn_scores', [None, 4, 10])
            out = L.matrix_nms(b, s, score_threshold=0.15, post_threshold=0.05, nms_top_k=-1,
                               keep_top_k=-1, use_gaussian=True, gaussian_sigma=3.0,
                               background_label=-1)
            fetch = [out]
        elif case == 'matrix_nms_pixel':
            b = inp('mn_boxes_px', [None, 8, 4])
            s = inp('mn_scores_px', [None, 3, 8])
            out, idx = L.matrix_nms(b, s, score_threshold=0.3, post_threshold=0.2,
                                    nms_top_k=5, keep_top_k=-1, background_label=2,
                                    normalized=False, return_index=True)
            fetch = [out, idx]
        elif case in ('lanms', 'lanms_topk', 'lanms_empty'):
            b = inp('la_boxes', [None, 12, 4])
            s = inp('la_scores', [None, 1, 12])
            if case == 'lanms':
                fetch = [L.locality_aware_nms(b, s, 0.2, -1, -1, nms_threshold=0.3)]
            elif case == 'lanms_topk':
                fetch = [L.locality_aware_nms(b, s, 0.1, 4, 3, nms_threshold=0.2, nms_eta=0.9)]
            else:
                fetch = [L.locality_aware_nms(b, s, 50.0, -1, -1)]
        elif case == 'lanms_pixel':
            b = inp('la_boxes_px', [None, 9, 4])
            s = inp('la_scores_px', [None, 1, 9])
            fetch = [L.locality_aware_nms(b, s, 0.1, -1, 5, nms_threshold=0.25,
                                          normalized=False)]
        elif case in ('retinanet', 'retinanet_all'):
            deltas = [inp('rd_deltas%d' % l, [None, m, 4]) for l, m in enumerate((6, 3))]
            scores = [inp('rd_scores%d' % l, [None, m, 3]) for l, m in enumerate((6, 3))]
            anchors = [inp('rd_anchors%d' % l, [m, 4]) for l, m in enumerate((6, 3))]
            info = inp('rd_info', [None, 3])
            if case == 'retinanet':
                fetch = [L.retinanet_detection_output(deltas, scores, anchors, info,
                                                      score_threshold=0.3, nms_top_k=5,
                                                      keep_top_k=6, nms_threshold=0.3)]
            else:
                fetch = [L.retinanet_detection_output(deltas, scores, anchors, info,
                                                      score_threshold=0.1, nms_eta=0.9,
                                                      nms_threshold=0.6)]
        elif case == 'distribute_fpn':
            rois = inp('fpn_rois', [None, 4], lod=[[4, 5]])
            multi, restore = L.distribute_fpn_proposals(rois, 2, 5, 4, 224)
            fetch = multi + [restore]
        elif case in ('collect_fpn', 'collect_fpn_all'):
            lods = ([[2, 3]], [[0, 3]], [[4, 2]])
            rois = [inp('cf_rois%d' % i, [None, 4], lod=lods[i]) for i in range(3)]
            scores = [inp('cf_scores%d' % i, [None, 1], lod=lods[i]) for i in range(3)]
            top = 6 if case == 'collect_fpn' else 100
            fetch = [L.collect_fpn_proposals(rois, scores, 2, 4, top)]
    fetch = [v.name for v in fetch]
    return main, startup, feed, fetch, values


def run(fluid, case):
    """Paddle's (or rill's) outputs as numpy arrays and their LoDs."""
    return gen_detection.run(fluid, case, build)


def main():
    import paddle
    import paddle.fluid as fluid
    assert paddle.__version__ == '1.8.5', paddle.__version__
    ref = {}
    for case in CASES:
        outs, lods = run(fluid, case)
        ref[case] = [{'shape': list(o.shape), 'dtype': str(o.dtype), 'lod': l,
                      'values': o.tolist() if o.dtype.kind in 'iu'
                      else o.astype('float64').round(7).tolist()}
                     for o, l in zip(outs, lods)]
    os.makedirs(os.path.dirname(REF_PATH), exist_ok=True)
    tmp = REF_PATH + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(ref, f, indent=1, sort_keys=True)
        f.write('\n')
    os.replace(tmp, REF_PATH)


if __name__ == '__main__':
    sys.exit(main())
