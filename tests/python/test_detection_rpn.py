"""generate_proposals, rpn_target_assign (use_random=False), retinanet_target_assign
(with their layers' gathers) and generate_proposal_labels (use_random=False, class-aware
and class-agnostic) against PaddlePaddle 1.8.5: the programs are paddle18/gen_detection_rpn.py's, run on its
seeded inputs; paddle18/detection_rpn.json holds what Paddle 1.8.5 returned for them
(shape, dtype, LoD, values), so Paddle is not needed here. And the layers' argument
checks and the ops' run-time errors naming op and variable."""
import json
import os
import sys

import numpy as np
import pytest

import rill as fluid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'paddle18'))
import gen_detection_rpn as gen  # noqa: E402
from _outputs import check_outputs  # noqa: E402

with open(os.path.join(HERE, 'paddle18', 'detection_rpn.json')) as _f:
    REF = json.load(_f)

# Paddle's float32 values rounded to 7 decimals; exp and log differ in the last bits.
RTOL, ATOL = 2e-5, 2e-5


@pytest.mark.parametrize('case', gen.CASES)
def test_as_paddle18(case):
    outs, lods = gen.run(fluid, case)
    check_outputs(case, outs, lods, REF[case], RTOL, ATOL)


def test_the_cases_exercise_what_they_claim():
    """NMS and the top-n limits cut rows, an image is left empty, sampling truncates and
    zero-weight location rows occur."""
    gp = REF['generate_proposals']
    assert gp[0][2] == [[0, 12, 24]] and gp[3][0][0] > 24
    assert REF['generate_proposals_no_nms'][0][0] == [120, 4]
    assert REF['generate_proposals_empty'][0][2] == [[0, 10, 10]]
    rpn = REF['rpn_target_assign']
    assert rpn[2][2] == [[0, 12, 24]]          # 12 scored anchors per image: the batch
    allw = np.array(REF['rpn_target_assign_all'][4][3])
    assert (allw == 0).any() and (allw == 1).any()
    labels = np.array(REF['generate_proposal_labels'][1][3])
    assert len(set(labels.ravel())) > 2           # several classes and backgrounds
    assert REF['generate_proposal_labels'][2][0] == [32, 16]


def _prog(fn):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        return fn()


def test_layers_check_their_arguments():
    def bad_scores():
        s = fluid.data('s', [None, 3, 4, 5], 'int32')
        f = fluid.data('f', [None, 12, 4, 5])
        i = fluid.data('i', [None, 3])
        a = fluid.data('a', [4, 5, 3, 4])
        fluid.layers.generate_proposals(s, f, i, a, a)
    with pytest.raises(TypeError, match='generate_proposals.*scores'):
        _prog(bad_scores)

    def bad_crowd():
        b = fluid.data('b', [None, 4])
        c = fluid.data('c', [None, 1], 'int64', lod_level=1)
        i = fluid.data('i', [None, 3])
        fluid.layers.rpn_target_assign(b, b, b, b, b, c, i)
    with pytest.raises(TypeError, match='rpn_target_assign.*is_crowd'):
        _prog(bad_crowd)


def test_run_time_errors_name_op_and_variable():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        a = fluid.data('anc', [None, 4])
        g = fluid.data('gtb', [None, 4])
        c = fluid.data('crowd', [None, 1], 'int32')
        i = fluid.data('info', [None, 3])
        outs = fluid.layers.rpn_target_assign(a, a, a, a, g, c, i, use_random=False)
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {'anc': np.zeros((4, 4), 'float32'), 'gtb': np.zeros((2, 4), 'float32'),
            'crowd': np.zeros((2, 1), 'int32'), 'info': np.ones((1, 3), 'float32')}
    with pytest.raises(Exception, match='rpn_target_assign.*gtb.*LoD'):
        exe.run(main, feed=feed, fetch_list=[outs[2]])
