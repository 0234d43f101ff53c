"""generate_mask_labels on seeded inputs: four images with star-shaped polygons of up to
40 points (one or two per object), crowd objects, foreground and background ROIs, an
image with background ROIs only and one without ROIs; each image's first polygon
repeats a vertex. Run under Paddle 1.8.5
(`PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python /tmp/pd18/bin/python
gen_mask_labels.py`) it writes the inputs and Paddle's outputs to mask_labels.json, which
tests/python/test_mask_labels.py runs rill against."""
import json
import os

import numpy as np

import gen_seqops

SEED = 20201127
NUM_CLASSES = 5
RESOLUTION = 14
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'mask_labels.json')


def polygon(r, cx, cy, rad, k):
    ang = np.sort(r.uniform(0, 2 * np.pi, k))
    rr = rad * r.uniform(0.5, 1.0, k)
    return np.stack([cx + rr * np.cos(ang), cy + rr * np.sin(ang)], 1).astype('float32')


def data():
    """Each feed as (values, recursive sequence lengths) or values."""
    r = np.random.RandomState(SEED)
    scales = [1.0, 1.5, 0.8, 1.2]
    nrois = [9, 7, 5, 0]
    im_info, classes, crowd, pts, l0, l1, l2, rois, labels = [], [], [], [], [], [], [], [], []
    for i, s in enumerate(scales):
        im_info.append([100 * s, 120 * s, s])
        ng = r.randint(3, 6)
        l0.append(ng)
        boxes = []
        for g in range(ng):
            classes.append(int(r.randint(1, NUM_CLASSES)))
            crowd.append(1 if g == 1 else 0)
            cx, cy, rad = r.uniform(20, 100), r.uniform(20, 80), r.uniform(6, 25)
            npoly = 1 + (g % 2)
            l1.append(npoly)
            for p in range(npoly):
                poly = polygon(r, cx + 8 * p, cy - 5 * p, rad, int(r.randint(3, 41)))
                if g == 0 and p == 0:
                    poly = np.insert(poly, 1, poly[1], axis=0)  # a repeated vertex
                pts.append(poly)
                l2.append(len(poly))
            boxes.append([cx - rad, cy - rad, cx + rad, cy + rad])
        for k in range(nrois[i]):
            b = np.array(boxes[k % ng]) + r.uniform(-6, 6, 4)
            rois.append((b * s).tolist())
            labels.append(0 if i == 2 or k % 3 == 2 else int(r.randint(1, NUM_CLASSES)))
    gl = [l0[i] for i in range(len(scales))]
    return {
        'im_info': np.array(im_info, 'float32'),
        'gt_classes': (np.array(classes, 'int32').reshape(-1, 1), [gl]),
        'is_crowd': (np.array(crowd, 'int32').reshape(-1, 1), [gl]),
        'gt_segms': (np.concatenate(pts).astype('float32'), [l0, l1, l2]),
        'rois': (np.array(rois, 'float32').reshape(-1, 4), [nrois]),
        'labels_int32': (np.array(labels, 'int32').reshape(-1, 1), [nrois]),
    }


def build(fluid):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        im_info = fluid.data('im_info', [None, 3], 'float32')
        gt_classes = fluid.data('gt_classes', [None, 1], 'int32', lod_level=1)
        is_crowd = fluid.data('is_crowd', [None, 1], 'int32', lod_level=1)
        gt_segms = fluid.data('gt_segms', [None, 2], 'float32', lod_level=3)
        rois = fluid.data('rois', [None, 4], 'float32', lod_level=1)
        labels = fluid.data('labels_int32', [None, 1], 'int32', lod_level=1)
        outs = fluid.layers.generate_mask_labels(im_info, gt_classes, is_crowd, gt_segms, rois,
                                                 labels, NUM_CLASSES, RESOLUTION)
    return main, startup, list(outs)


def run(fluid, d=None):
    """The three outputs as arrays, and their LoD, on data() or `d`."""
    main, startup, fetch = build(fluid)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    fd = gen_seqops.lod_feed(fluid, data() if d is None else d, place)
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        vals = exe.run(main, feed=fd, fetch_list=fetch, return_numpy=False)
        return [np.array(v) for v in vals], [v.lod() for v in vals]


def main():
    import paddle
    import paddle.fluid as fluid
    assert paddle.__version__ == '1.8.5', paddle.__version__
    arrays, lods = run(fluid)
    rec = {'outputs': [{'shape': list(a.shape), 'dtype': str(a.dtype), 'lod': lod,
                        'values': a.reshape(-1).tolist()} for a, lod in zip(arrays, lods)]}
    tmp = OUT + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(rec, f, separators=(',', ':'))
    os.replace(tmp, OUT)
    print('wrote', OUT, [a.shape for a in arrays])


if __name__ == '__main__':
    main()
