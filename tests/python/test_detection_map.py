"""fluid.metrics.DetectionMAP and fluid.evaluator.DetectionMAP (the detection_map op)
against PaddlePaddle 1.8.5: the programs are paddle18/gen_detection_map.py's, run over its
seeded batches with a reset() between; paddle18/detection_map/ref.json holds Paddle's
(batch mAP, accumulated mAP) after each run, so Paddle is not needed here. And the
layer's checks and a run-time error naming the op and the variable."""
import json
import os
import sys

import numpy as np
import pytest

import rill as fluid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18'))
import gen_detection_map as gen  # noqa: E402

with open(gen.REF_PATH) as f:
    REF = json.load(f)


def test_ref_holds_every_case():
    assert sorted(REF) == sorted(gen.CASE_NAMES)


@pytest.mark.parametrize('case', gen.CASE_NAMES)
def test_as_paddle18(case):
    got = gen.run(fluid, case)
    want = REF[case]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        # float32 mAP computed in Paddle's order of operations
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7, err_msg='%s run %d' % (case, i))


def test_accumulation_differs_from_the_batch():
    """The reference itself shows the accumulated mAP is not the batch's after batch 1."""
    for case in gen.CASE_NAMES:
        assert REF[case][1][0] != REF[case][1][1]
        assert REF[case][0] == REF[case][3], 'reset() starts over'


def test_layer_checks_its_arguments():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        det = fluid.data('det', [None, 6], 'float32', lod_level=1)
        label = fluid.data('label', [None, 6], 'float32', lod_level=1)
        with pytest.raises(ValueError, match='ap_version'):
            fluid.detection.detection_map(det, label, 3, ap_version='voc')
        ids = fluid.data('ids', [None, 6], 'int64', lod_level=1)
        with pytest.raises(TypeError, match='detection_map: detect_res'):
            fluid.detection.detection_map(ids, label, 3)


def test_label_out_of_range_names_op_and_variable():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        det = fluid.data('det', [None, 6], 'float32', lod_level=1)
        label = fluid.data('label', [None, 5], 'float32', lod_level=1)
        out = fluid.detection.detection_map(det, label, 3)
    exe = fluid.Executor(fluid.CPUPlace())
    place = fluid.CPUPlace()
    feed = {'det': fluid.create_lod_tensor(np.array([[1, 0.5, 0, 0, 1, 1]], 'float32'), [[1]], place),
            'label': fluid.create_lod_tensor(np.array([[9, 0, 0, 1, 1]], 'float32'), [[1]], place)}
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        with pytest.raises(Exception, match=r"(?s)detection_map.*Label.*label.*label 9"):
            exe.run(main, feed=feed, fetch_list=[out])
