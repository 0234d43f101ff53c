"""Writes detection/: Paddle 1.8.5's outputs of the detection layers prior_box,
box_coder (encode and decode, variances as a list and as a Variable), yolo_box and
multiclass_nms (with its LoD) on seeded inputs. `build(fluid)` is shared with
tests/python/test_detection_layers.py, which builds the same program with rill. Run with
PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'detection')


def build(fluid):
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        feat = fluid.data('feat', [1, 2, 3, 4], 'float32')
        img = fluid.data('img', [1, 3, 30, 40], 'float32')
        head = fluid.data('head', [1, 2 * 7, 3, 3], 'float32')
        size = fluid.data('size', [1, 2], 'int32')
        tgt = fluid.data('tgt', [5, 4], 'float32')
        boxes = fluid.data('boxes', [1, 6, 4], 'float32')
        scores = fluid.data('scores', [1, 3, 6], 'float32')
        pb, pv = L.prior_box(feat, img, [8.0, 16.0], max_sizes=[20.0, 30.0],
                             aspect_ratios=[2.0], flip=True, clip=True)
        pb2, pv2 = L.prior_box(feat, img, 10.0, steps=[10.0, 10.0], offset=0.25)
        prior = L.reshape(pb, [-1, 4])
        pvar = L.reshape(pv, [-1, 4])
        enc = L.box_coder(prior, pvar, tgt, code_type='encode_center_size')
        enc_list = L.box_coder(prior, [0.1, 0.1, 0.2, 0.2], tgt)
        dec = L.box_coder(prior, pvar, L.reshape(enc, [5, -1, 4]),
                          code_type='decode_center_size')
        yb, ys = L.yolo_box(head, size, [10, 13, 16, 30], 2, 0.01, 8)
        nms = L.multiclass_nms(boxes, scores, 0.05, 4, 3, nms_threshold=0.5)
    return main, startup, [pb, pv, pb2, pv2, enc, enc_list, dec, yb, ys, nms]


def inputs():
    rng = np.random.RandomState(7)
    xy = rng.uniform(0, 0.5, (5, 2)).astype('float32')
    b = rng.uniform(0, 0.6, (1, 6, 2)).astype('float32')
    return {'feat': rng.randn(1, 2, 3, 4).astype('float32'),
            'img': np.zeros((1, 3, 30, 40), 'float32'),
            'head': rng.randn(1, 14, 3, 3).astype('float32'),
            'size': np.array([[24, 30]], 'int32'),
            'tgt': np.concatenate([xy, xy + rng.uniform(0.1, 0.5, (5, 2))], 1).astype('float32'),
            'boxes': np.concatenate([b, b + rng.uniform(0.1, 0.4, (1, 6, 2))], 2).astype('float32'),
            'scores': rng.uniform(0, 1, (1, 3, 6)).astype('float32')}


def main():
    import paddle.fluid as fluid
    prog, startup, fetch = build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    got = exe.run(prog, feed=inputs(), fetch_list=fetch, return_numpy=False)
    out = {}
    for i, v in enumerate(got):
        out['%d' % i] = np.array(v)
        out['%d.lod' % i] = np.array(v.lod()[0] if v.lod() else [], 'int64')
    os.makedirs(OUT, exist_ok=True)
    np.savez_compressed(os.path.join(OUT, 'expected.npz'), **out)
    print({k: v.shape for k, v in out.items()})


if __name__ == '__main__':
    main()
