"""matrix_nms, locality_aware_nms, retinanet_detection_output, distribute_fpn_proposals
and collect_fpn_proposals against PaddlePaddle 1.8.5: the programs are paddle18/gen_detection_nms.py's,
run on its seeded inputs; paddle18/detection_nms/ref.json holds what Paddle 1.8.5 gave for
them (shape, dtype, LoD, values), so Paddle is not needed here. And the layers' argument
checks, compile-time shapes and run-time errors naming op and variable."""
import json
import os
import sys

import numpy as np
import pytest

import rill as fluid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18'))
import gen_detection_nms as gen  # noqa: E402
from _outputs import check_outputs  # noqa: E402

# Paddle's float32 values rounded to 7 decimals; exp differs in the last bits.
RTOL, ATOL = 2e-5, 2e-6

with open(gen.REF_PATH) as f:
    REF = json.load(f)


def test_ref_holds_every_case():
    assert sorted(REF) == sorted(gen.CASES)


@pytest.mark.parametrize('case', gen.CASES)
def test_as_paddle18(case):
    outs, lods = gen.run(fluid, case)
    want = [(w['shape'], w['dtype'], w['lod'], w['values']) for w in REF[case]]
    check_outputs(case, outs, lods, want, RTOL, ATOL, any_empty_shape=True)


def test_the_cases_exercise_what_they_claim():
    lin = REF['matrix_nms_linear'][0]
    assert lin['lod'] == [[0, 7, 7, 14]]                  # keep_top_k 7, an empty image
    gauss = np.array(REF['matrix_nms_gaussian'][0]['values'])
    assert 0 in gauss[:, 0]                               # background_label -1
    px = np.array(REF['matrix_nms_pixel'][0]['values'])
    assert 2 not in px[:, 0]                              # background_label 2
    la = np.array(REF['lanms'][0]['values'])
    assert (la[:, 1] > 1).any()                           # scores added by merging
    assert REF['lanms_topk'][0]['lod'] == [[0, 3, 6]]     # keep_top_k 3
    assert REF['lanms_empty'][0]['values'] == [[-1.0]]
    rd = np.array(REF['retinanet'][0]['values'])
    assert REF['retinanet'][0]['lod'] == [[0, 6, 12]]     # keep_top_k 6
    assert rd[:, 0].min() >= 1                            # labels are class + 1
    assert (rd[6:, 4] == 39.0).any()                      # clamped to 60 / 1.5 - 1
    dist = REF['distribute_fpn']
    assert all(o['shape'][0] > 0 for o in dist[:4])       # every level gets rows
    assert sorted(v[0] for v in dist[4]['values']) == list(range(9))
    assert REF['collect_fpn'][0]['shape'] == [6, 4]
    assert REF['collect_fpn_all'][0]['shape'] == [14, 4]  # all rows: 5 + 3 + 6


def _program(build):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        out = build()
    return main, startup, out


def test_compile_time_shapes():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        b = fluid.data('b', [None, 9, 4], 'float32')
        s = fluid.data('s', [None, 3, 9], 'float32')
        out, idx = fluid.layers.matrix_nms(b, s, 0.1, 0.0, -1, -1, return_index=True)
        assert tuple(out.shape) == (9, 6) and tuple(idx.shape) == (9, 1)
        assert out.lod_level == 1 and out.stop_gradient
        assert idx.dtype.name == 'int32'


def test_fpn_layers_build_paddles_ops():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        rois = fluid.data('rois', [None, 4], 'float32', lod_level=1)
        multi, restore = fluid.layers.distribute_fpn_proposals(rois, 2, 5, 4, 224)
        assert len(multi) == 4 and restore.dtype.name == 'int32'
        assert tuple(restore.shape) == (-1, 1)
        assert all(tuple(m.shape) == (-1, 4) and m.lod_level == 1 for m in multi)
        scores = [fluid.data('s%d' % i, [None, 1], 'float32', lod_level=1) for i in range(4)]
        out = fluid.layers.collect_fpn_proposals(multi, scores, 2, 4, 50)
        assert tuple(out.shape) == (50, 4) and out.lod_level == 1
        op = out.block.ops[-1]
        assert op.type == 'collect_fpn_proposals' and len(op.input('MultiLevelRois')) == 3
        b = fluid.data('b', [None, 9, 4], 'float32')
        one = fluid.data('one_class', [None, 1, 9], 'float32')
        la = fluid.layers.locality_aware_nms(b, one, 0.1, -1, -1)
        assert tuple(la.shape) == (9, 6) and la.lod_level == 1
        d = [fluid.data('d%d' % i, [None, m, 4], 'float32') for i, m in enumerate((8, 2))]
        sc = [fluid.data('c%d' % i, [None, m, 5], 'float32') for i, m in enumerate((8, 2))]
        an = [fluid.data('a%d' % i, [m, 4], 'float32') for i, m in enumerate((8, 2))]
        info = fluid.data('info', [None, 3], 'float32')
        rd = fluid.layers.retinanet_detection_output(d, sc, an, info)
        assert tuple(rd.shape) == (8, 6) and rd.lod_level == 0   # as Paddle records it
        op = rd.block.ops[-1]
        assert op.attr('keep_top_k') == 100 and op.attr('nms_top_k') == 1000
        rd = fluid.layers.retinanet_detection_output(d, sc, an, info, nms_eta=0.5)
        assert rd.block.ops[-1].attr('nms_eta') == 1.0           # as Paddle 1.8.5 passes it


def test_layers_check_their_arguments():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        b = fluid.data('b', [None, 9, 4], 'float32')
        s = fluid.data('s', [None, 3, 9], 'float32')
        i = fluid.data('i', [None, 3, 9], 'int32')
        with pytest.raises(TypeError, match='post_threshold'):
            fluid.layers.matrix_nms(b, s, 0.1, 0, -1, -1)
        with pytest.raises(TypeError, match='gaussian_sigma'):
            fluid.layers.matrix_nms(b, s, 0.1, 0.0, -1, -1, gaussian_sigma=2)
        with pytest.raises(TypeError, match='scores'):
            fluid.layers.matrix_nms(b, i, 0.1, 0.0, -1, -1)
        with pytest.raises(ValueError, match='one class'):
            fluid.layers.locality_aware_nms(b, s, 0.1, -1, -1)
        s1 = fluid.data('s1', [None, 1, 9], 'float32')
        with pytest.raises(TypeError, match='nms_eta'):
            fluid.layers.locality_aware_nms(b, s1, 0.1, -1, -1, nms_eta=1)
        with pytest.raises(TypeError, match='anchors'):
            fluid.layers.retinanet_detection_output([b], [s], b, b)
        rois = fluid.data('rois', [None, 4], 'float32', lod_level=1)
        with pytest.raises(ValueError, match='min_level'):
            fluid.layers.distribute_fpn_proposals(rois, 5, 2, 4, 224)
        with pytest.raises(ValueError, match='multi_scores'):
            fluid.layers.collect_fpn_proposals([rois, rois], [rois], 2, 3, 10)


def test_run_time_errors_name_op_and_variable():
    def build():
        b = fluid.data('mn_b', [None, -1, 4], 'float32')
        s = fluid.data('mn_s', [None, 2, -1], 'float32')
        return fluid.layers.matrix_nms(b, s, 0.1, 0.0, -1, -1)
    main, startup, out = _program(build)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        with pytest.raises(Exception) as e:
            exe.run(main, feed={'mn_b': np.zeros((1, 5, 4), 'float32'),
                                'mn_s': np.zeros((1, 2, 4), 'float32')}, fetch_list=[out])
    assert 'matrix_nms' in str(e.value) and 'mn_s' in str(e.value)

    def build2():
        r = fluid.data('fpn_nolod', [None, 4], 'float32')
        return fluid.layers.distribute_fpn_proposals(r, 2, 3, 3, 224)[1]
    main, startup, out = _program(build2)
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        with pytest.raises(Exception) as e:
            exe.run(main, feed={'fpn_nolod': np.ones((3, 4), 'float32')}, fetch_list=[out])
    assert 'distribute_fpn_proposals' in str(e.value) and 'fpn_nolod' in str(e.value)
