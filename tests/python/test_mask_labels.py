"""rill.layers.generate_mask_labels against Paddle 1.8.5's outputs on the seeded inputs of
paddle18/gen_mask_labels.py (recorded in paddle18/mask_labels.json): the ROIs, their
indices and every mask cell equal, with the same LoD; the layer's argument checks and an
input error naming the op and the variable."""
import json
import os
import sys

import numpy as np
import pytest

import rill as fluid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18'))
import gen_mask_labels as gen  # noqa: E402


def test_matches_paddle_exactly():
    with open(gen.OUT) as f:
        want = json.load(f)['outputs']
    arrays, lods = gen.run(fluid)
    assert len(arrays) == 3
    for got, lod, w in zip(arrays, lods, want):
        assert list(got.shape) == w['shape']
        assert str(got.dtype) == w['dtype']
        assert [list(level) for level in lod] == w['lod']
        np.testing.assert_array_equal(got.reshape(-1), np.array(w['values'], got.dtype))
    masks = arrays[2]
    assert (masks == 1).any() and (masks == 0).any() and (masks == -1).any()


def test_layer_checks_its_arguments():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        im_info = fluid.data('im_info', [None, 3], 'float32')
        ints = [fluid.data(n, [None, 1], 'int32', lod_level=1) for n in ('c', 'k', 'l')]
        segms = fluid.data('segms', [None, 2], 'float32', lod_level=3)
        rois = fluid.data('rois', [None, 4], 'float32', lod_level=1)
        with pytest.raises(TypeError, match='resolution'):
            fluid.layers.generate_mask_labels(im_info, ints[0], ints[1], segms, rois, ints[2],
                                              5, 14.0)
        with pytest.raises(TypeError, match="gt_classes \\('rois'\\)"):
            fluid.layers.generate_mask_labels(im_info, rois, ints[1], segms, rois, ints[2], 5, 14)


def test_class_beyond_num_classes_is_an_error():
    d = gen.data()
    labels, lens = d['labels_int32']
    labels = labels.copy()
    labels[0, 0] = gen.NUM_CLASSES
    d['labels_int32'] = (labels, lens)
    with pytest.raises(Exception) as e:
        gen.run(fluid, d)
    msg = str(e.value)
    assert 'generate_mask_labels' in msg and 'labels_int32' in msg and 'class 5' in msg
