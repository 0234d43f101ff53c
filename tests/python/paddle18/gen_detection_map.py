"""The programs of tests/python/test_detection_map.py, built the same way with paddle.fluid
or rill: fluid.metrics.DetectionMAP and fluid.evaluator.DetectionMAP (integral and
11-point AP, difficult boxes evaluated or not, a label without the difficult column)
run over three seeded batches, then reset and run on the first batch again. Run under
Paddle 1.8.5 (`PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python /tmp/pd18/bin/python
gen_detection_map.py`) it writes each run's (batch mAP, accumulated mAP) to
detection_map/ref.json, which the test reads."""
import json
import os
import sys

import numpy as np

SEED = 20261127
CLASSES = 4
HERE = os.path.dirname(os.path.abspath(__file__))
REF_PATH = os.path.join(HERE, 'detection_map', 'ref.json')

# (name, metric module, ap_version, evaluate_difficult, with the difficult column)
CASES = [
    ('metrics_integral', 'metrics', 'integral', True, True),
    ('metrics_11point', 'metrics', '11point', True, True),
    ('metrics_integral_skip_difficult', 'metrics', 'integral', False, True),
    ('metrics_11point_skip_difficult', 'metrics', '11point', False, True),
    ('metrics_no_difficult_column', 'metrics', 'integral', False, False),
    ('evaluator_integral', 'evaluator', 'integral', True, True),
    ('evaluator_11point_skip_difficult', 'evaluator', '11point', False, True),
]
CASE_NAMES = [c[0] for c in CASES]


def batches():
    """Three batches of (detections, det lengths, gt labels, gt boxes, difficult, gt
    lengths): per image a few ground-truth boxes, detections near some of them (jittered,
    sometimes of another class) and a few stray ones; one image has no ground truth."""
    r = np.random.RandomState(SEED)
    out = []
    for b in range(3):
        dets, dlen, labels, gboxes, diff, glen = [], [], [], [], [], []
        for img in range(3):
            ng = 0 if (b, img) == (1, 2) else r.randint(1, 6)
            lo = r.uniform(0, 0.7, (ng, 2))
            g = np.concatenate([lo, lo + r.uniform(0.1, 0.3, (ng, 2))], axis=1)
            gl = r.randint(1, CLASSES, ng)
            labels.append(gl)
            gboxes.append(g)
            diff.append((r.uniform(0, 1, ng) < 0.3).astype('int32'))
            glen.append(ng)
            rows = []
            for k in range(ng):
                for _ in range(r.randint(0, 3)):
                    lab = gl[k] if r.uniform() < 0.8 else r.randint(0, CLASSES)
                    rows.append([lab, 0] + list(g[k] + r.normal(0, 0.015, 4)))
            for _ in range(r.randint(0, 3)):
                lo = r.uniform(-0.1, 0.8, 2)
                rows.append([r.randint(0, CLASSES), 0] + list(lo) + list(lo + r.uniform(0.05, 0.3, 2)))
            for row in rows:
                row[1] = r.uniform(0.05, 1.0)
            dets.extend(rows)
            dlen.append(len(rows))
        out.append((np.array(dets, 'float32').reshape(-1, 6), dlen,
                    np.concatenate(labels).astype('int32').reshape(-1, 1),
                    np.concatenate(gboxes).astype('float32').reshape(-1, 4),
                    np.concatenate(diff).astype('int32').reshape(-1, 1), glen))
    return out


def run(fluid, case):
    """[(batch mAP, accumulated mAP)] over the three batches, then after reset() the first
    batch again."""
    _, module, ap, evaluate, with_difficult = CASES[CASE_NAMES.index(case)]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        det = fluid.data('det', [None, 6], 'float32', lod_level=1)
        gl = fluid.data('gt_label', [None, 1], 'int32', lod_level=1)
        gb = fluid.data('gt_box', [None, 4], 'float32', lod_level=1)
        gd = fluid.data('gt_difficult', [None, 1], 'int32', lod_level=1) if with_difficult else None
        cls = getattr(fluid, module).DetectionMAP
        m = cls(det, gl, gb, gd, class_num=CLASSES, overlap_threshold=0.5,
                evaluate_difficult=evaluate, ap_version=ap)
        cur, accum = m.get_map_var()
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    got = []
    data = batches()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for i in [0, 1, 2, 'reset', 0]:
            if i == 'reset':
                m.reset(exe)
                continue
            d, dlen, l, b, df, glen = data[i]
            feed = {'det': fluid.create_lod_tensor(d, [dlen], place),
                    'gt_label': fluid.create_lod_tensor(l, [glen], place),
                    'gt_box': fluid.create_lod_tensor(b, [glen], place)}
            if with_difficult:
                feed['gt_difficult'] = fluid.create_lod_tensor(df, [glen], place)
            c, a = exe.run(main, feed=feed, fetch_list=[cur, accum])
            got.append([float(np.asarray(c).ravel()[0]), float(np.asarray(a).ravel()[0])])
    return got


def main():
    import paddle
    import paddle.fluid as fluid
    assert paddle.__version__ == '1.8.5', paddle.__version__
    ref = {case: run(fluid, case) for case in CASE_NAMES}
    tmp = REF_PATH + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(ref, f, indent=1, sort_keys=True)
        f.write('\n')
    os.replace(tmp, REF_PATH)
    print(json.dumps(ref, indent=1, sort_keys=True))


if __name__ == '__main__':
    sys.exit(main())
