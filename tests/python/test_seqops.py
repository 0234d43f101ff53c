"""The sequence-model layers and ops against PaddlePaddle 1.8.5: dynamic_lstmp (lstmp and
its gradient), ctc_greedy_decoder (top_k's LoD, ctc_align), warpctc and its gradient,
sequence_scatter and its gradients, edit_distance's ignored_tokens (sequence_erase), and
select_output / select_input with their gradients. The programs are
paddle18/gen_seqops.py's, run on its seeded inputs; REF holds what Paddle 1.8.5 printed
for them (gen_seqops.py run under Paddle), so Paddle is not needed here. And the layers'
argument checks and the ops' run-time errors naming op and variable."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18'))
import gen_seqops as gen  # noqa: E402

# Paddle's float32 values rounded to 8 decimals; the summation order and the last bits of
# exp differ.
RTOL, ATOL = 1e-5, 2e-7

REF = {
    'lstmp_acts': [
        [[0.46167901, 0.52957928], [0.51099861, 0.44623122], [0.50821406, 0.50046962], [0.55184036, 0.3855606], [0.51692134, 0.48276687], [0.53678334, 0.43928733]],
        [[0.08488451, 0.30950519, -0.0], [0.09082802, -0.20464541, -0.0], [0.0, -0.12977852, -0.00156667], [0.0, -0.04122781, -0.00016537], [-0.13116923, 0.02104894, -0.11267214], [-0.21209654, -0.67199534, -0.0]],
        [[-0.00013402, 0.00900638, 0.0, -0.00132536, 0.01460521, -0.0, -0.0, 0.0, -0.0, 0.05025987, 0.00896557, -0.01813782], [-0.00275019, -0.01181585, -0.0, -0.00247364, -0.00100597, 0.0, -0.00081512, -0.00289034, -0.0, -0.04795853, -0.02868269, 0.04590127], [-0.0, 0.0004879, -0.00039387, -0.0, -0.00533199, 1.954e-05, -0.0, -0.0, 0.0, -0.02828365, -0.0101465, 0.0186522], [-0.0, -0.00686391, 0.0, -0.0, 0.00020735, -0.0, -0.0, -0.00094501, 1.46e-05, -0.02057797, -0.00111488, 0.02886634], [0.00830591, -0.0, -0.01563694, -0.00379088, -0.0, 0.00228494, -0.0, 0.00056274, -2.34e-06, -0.02702287, -0.03701186, 0.02525197], [-0.0032713, -3.167e-05, 0.0, 0.01120086, 1.086e-05, -0.0, 0.0, 0.0, -0.0, 0.03420305, 6.792e-05, -0.02464898]],
        [[0.00331383, -0.00894346, -0.00862909, -0.00323398, -0.00035906, 0.00126092, -0.00037633, -0.00150413, 6.13e-06, -0.04751176, -0.03423343, 0.04979698], [0.00174599, -0.0096926, -0.00602899, -0.0027716, -0.00042897, 0.00088098, -0.00043167, -0.00178664, 6.4e-06, -0.04611544, -0.03001804, 0.04849125]],
        [[-0.02624694, 0.08782562], [-0.01036057, 0.06384411], [0.03563227, -0.00295286]],
        [[0.0021504, -0.00921714, -0.01603081, 0.00361098, 0.00848546, 0.00230448, -0.00081512, -0.0032726, 1.226e-05, -0.0393801, -0.06792244, 0.07588497, -0.00020997, -0.00033826, -3.8e-07, -6.919e-05, -0.00079513, -2e-08, -0.00379947, 0.00918273, -0.00287919]],
    ],
    'lstmp_clip': [
        [[0.08825444, -0.15000001], [0.11000415, -0.15000001], [-0.05097882, -0.10089997], [-0.03619965, -0.13042907], [0.03276424, -0.04926464], [0.14370722, -0.15000001]],
        [[0.5, 0.5, -0.22844854], [0.5, 0.46245092, -0.22945109], [-0.01775268, 0.5, -0.00870709], [-0.06709275, 0.32715711, -0.2597208], [0.14652671, 0.10555992, 0.06111741], [0.32558846, 0.04370673, -0.30557647]],
        [[0.0, 0.0, -0.020647, 0.0, 0.0, 0.01110063, 0.0, 0.0, -0.0058336, 0.02581773, -0.00922375, 0.00559002], [0.0, -0.00241674, -0.00194066, 0.0, -0.00037948, 0.00022896, 0.0, -0.0004765, 0.00025226, 0.00256399, -0.00080876, 0.00057924], [-0.16176857, 0.0, 0.11234725, 0.04374562, 0.0, 0.00563501, -0.02992361, 0.0, -0.00476347, 0.00162658, -0.02107968, -0.0006193], [-0.25431776, -0.01751919, 0.02982354, 0.00888766, -0.00676054, -0.03591678, 0.00180604, -0.0108237, -0.00045662, 0.0064798, -0.00424291, -0.01866497], [-0.05717489, -0.09163959, 0.04935681, -0.0277918, 0.00104687, 0.02945494, 0.00374861, -0.01104705, -0.01565998, -0.01275886, -0.00811835, 0.00375927], [0.02598891, -0.00651695, -0.01232427, 0.0272083, -0.00788542, 0.00254022, 0.00024248, 0.00513944, 0.0051531, 0.01955728, -0.00098722, 0.00878007]],
        [[0.0051516, 0.00578828, -0.00452867, -0.00618408, 0.00244051, 0.00359114, -0.00080126, -0.00050291, -0.002676, 0.0029386, -0.00247946, 0.00015957], [0.05750475, 0.01546098, -0.01784241, -0.01110747, 0.00227026, -0.00691667, 0.00480533, 0.00151747, 0.00451382, -0.01564085, 0.00993748, -0.00299783]],
        [[0.1836552, 0.04444592], [-0.00303001, 0.20595327], [-0.06038693, -0.01078092]],
        [[-0.44727233, -0.11809246, 0.15661567, 0.05204977, -0.01397857, 0.01304297, -0.02412647, -0.01720782, -0.02130831, 0.04328652, -0.04446067, -0.00057567, 0.01694164, -9.171e-05, -0.00458886, -0.01057711, -0.01130803, -0.0004165, 0.01822535, -0.01781394, 0.00098991]],
        [[0.00099185, 0.01993762], [-0.08370277, 0.08303651], [-0.00703715, 0.01677236]],
        [[0.0, 0.0, -0.0227271], [-0.22152434, 0.0, 0.14829087], [0.0961953, -0.02118918, -0.01903732]],
    ],
    'lstmp_reverse': [
        [[0.14544906, -0.36109233], [0.06170826, -0.15891331], [-0.09686796, -0.03960495], [0.01439397, -0.06262775], [0.04129687, 0.00738575], [0.10589696, -0.17956042]],
        [[0.55556142, 0.51154113, -0.35702062], [0.26087642, 0.24507515, -0.08946694], [-0.27251148, 0.42259133, -0.11167897], [-0.01161402, 0.05942103, -0.20040786], [0.15894999, -0.06692711, 0.12983009], [0.30951464, 0.16459541, -0.14687538]],
        [[0.02565792, 0.005953, -0.03750523, 0.02495309, 0.00302945, 0.02622668, 0.00772672, 0.00099799, 0.00295737, 0.04839166, 0.00513332, 0.01840899], [-0.03992376, -0.11919738, 0.05934864, -0.0139368, -0.01493546, -0.00916253, -0.0, -0.0, 0.0, -0.02574996, -0.02236965, -0.00857807], [-0.03605893, -0.00529287, 0.03290231, 0.01266703, -0.00802632, 0.00062154, 0.00025024, -0.00048292, -0.00328533, 0.01534393, -0.01007881, -0.00479567], [-0.24519894, -0.00953943, 0.02385071, 0.01444385, -0.00304192, -0.03395878, -0.01554907, 0.00074266, 0.00611391, 0.00114826, -0.00072759, -0.01502059], [-0.15211326, -0.12515463, 0.08686316, -0.05760954, 0.0047476, 0.04342382, -0.0, -0.0, 0.0, -0.01857121, 0.00644832, 0.010935], [0.04739773, 0.00014401, -0.02384023, 0.03736912, 0.00013697, 0.00900745, 0.0, 0.0, -0.0, 0.02695233, 6.783e-05, 0.0080771]],
        [[-0.00906167, -0.00010278, -0.00085583, 0.00231863, -5.421e-05, 0.00022496, -0.00016172, 8.53e-05, 0.00038769, 0.00325445, 0.00014165, 0.00044665], [-0.00363007, -0.00068499, 0.00407564, -0.00465201, -1.22e-06, -0.0044575, -0.00135839, -0.00012287, -0.00021906, -0.00864255, -0.00018991, -0.00273603]],
        [[0.19020529, 0.05546914], [0.11497824, 0.05200532], [-0.07661268, 0.07843077]],
        [[-0.40023923, -0.25308731, 0.14161935, 0.01788674, -0.01808968, 0.03615818, -0.00757211, 0.00125774, 0.00578596, 0.04751501, -0.02152658, 0.00902675]],
    ],
    'warpctc_lod': [
        [[5.74478388], [7.38720083], [5.25308371], [0.0]],
        [[-0.25879782, -0.95173472, 0.05670543, 0.13206932, 1.02175677], [-0.18601523, -0.10163072, 0.06205045, 0.07059424, 0.15500118], [-1.13821125, 0.14571846, 0.09697566, 0.04803377, 0.84748262], [0.07971488, -1.1247282, 0.26533708, 0.43379486, 0.34588149], [-0.13605452, 0.03464279, -0.32969481, 0.11598239, 0.31512427], [-0.05628837, 0.07313649, -0.19635408, -0.03418869, 0.21369492], [-0.13253532, 0.01954749, -0.02419717, -0.10508008, 0.24226514], [0.02018073, 0.11848371, 0.02494509, -0.173262, 0.00965252], [-0.03030036, -0.27584264, 0.02144874, -0.02254285, 0.30723679], [-0.1962377, -0.27615643, 0.31739604, 0.1115663, 0.04343187], [-0.32406273, 0.12885101, 0.34650412, -0.29730493, 0.14601263], [-0.46908203, 0.07373008, 0.18116386, -0.12096021, 0.33514872], [-0.41633213, 0.6192193, 0.02205542, -0.44659939, 0.22165693], [0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]],
        [0.79183137, 1.88204885, 0.50309432, 0.26817515, 4.39819336],
    ],
    'warpctc_norm': [
        [[2.61847854], [5.6581955], [3.94937873], [0.0]],
        [[0.01842259, -0.02328776, 0.01417636, 0.03301733, -0.04232849], [0.0173969, -0.07423211, 0.01551261, 0.01764856, 0.02367412], [0.03598398, 0.07938404, 0.02424392, 0.01200844, -0.15162034], [0.03676134, -0.29414481, 0.06633427, 0.10844871, 0.08260053], [0.00816768, 0.0057738, -0.02814701, 0.0193304, -0.00512485], [0.0055454, 0.01218942, -0.04191848, 0.01100487, 0.01317881], [-0.02884032, 0.0039009, 0.00061158, 0.00689606, 0.01743177], [-0.02649711, -0.01110664, 0.00371484, 0.03446547, -0.00057655], [0.00389122, -0.0186882, 0.00357479, 0.01072364, 0.00049859], [0.00827318, -0.03677065, 0.05289934, 0.01859438, -0.04299624], [0.052778, 0.04295034, 0.11550137, -0.20110632, -0.01012338], [0.10500464, 0.02457669, 0.06038795, -0.03684783, -0.15312147], [0.01175546, 0.20640644, 0.00735181, -0.03040004, -0.19511367], [0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]],
        [0.09757685, 0.34250346, 0.14951912, -0.0719391, -0.56964338],
    ],
    'warpctc_padded': [
        [[5.74478388], [7.38720083], [5.25308371], [0.0]],
        [[[-0.25879782, -0.95173472, 0.05670543, 0.13206932, 1.02175677], [-0.13605452, 0.03464279, -0.32969481, 0.11598239, 0.31512427], [-0.32406273, 0.12885101, 0.34650412, -0.29730493, 0.14601263], [0.0, 0.0, 0.0, 0.0, 0.0]], [[-0.18601523, -0.10163072, 0.06205045, 0.07059424, 0.15500118], [-0.05628837, 0.07313649, -0.19635408, -0.03418869, 0.21369492], [-0.46908203, 0.07373008, 0.18116386, -0.12096021, 0.33514872], [0.0, 0.0, 0.0, 0.0, 0.0]], [[-1.13821125, 0.14571846, 0.09697566, 0.04803377, 0.84748262], [-0.13253532, 0.01954749, -0.02419717, -0.10508008, 0.24226514], [-0.41633213, 0.6192193, 0.02205542, -0.44659939, 0.22165693], [0.0, 0.0, 0.0, 0.0, 0.0]], [[0.07971488, -1.1247282, 0.26533708, 0.43379486, 0.34588149], [0.02018073, 0.11848371, 0.02494509, -0.173262, 0.00965252], [0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0, 0.0, 0.0], [-0.03030036, -0.27584264, 0.02144874, -0.02254285, 0.30723679], [0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0, 0.0, 0.0], [-0.1962377, -0.27615643, 0.31739604, 0.1115663, 0.04343187], [0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]]],
        [0.79183149, 1.88204885, 0.50309432, 0.26817518, 4.39819336],
    ],
    'sequence_scatter': [
        [[-0.45938405, 0.24194205, 0.06398812, -0.63460159, -0.09267028, -0.49179068], [0.40558302, -0.50368237, -0.22673927, 0.76686972, -0.41748214, 0.00563398], [0.19193804, 1.60857713, 0.84533614, -0.5181126, 0.19455862, -1.34047103]],
        [[0.60838407, 0.50333476, -0.22298506, 0.82955748, -0.06314624, 0.74187857], [-0.31154186, 0.0250972, 0.51272601, 0.57255864, -0.8827433, 0.19334628], [0.2104429, -0.00307857, -0.91240996, 0.22112525, -0.32379016, 0.40435615]],
        [[0.60838407], [-0.22298506], [-0.22298506], [-0.00307857], [0.40435615], [-0.32379016], [-0.00307857]],
    ],
    'edit_distance_ignored': [
        [[0.0], [1.0], [1.0]],
        [3.0],
    ],
    'select_branch_0': [
        [[0.12875223, -0.0384608, 0.52845097], [-0.71120048, 0.39772332, 1.1380291]],
        [[-0.39430484, -1.38878787, 0.65709525], [-0.93807739, -0.62397563, 0.25978324]],
        [0.27395263, -0.08655811, 0.28572601],
    ],
    'select_branch_1': [
        [[0.12875223, -0.0384608, 0.52845097], [-0.71120048, 0.39772332, 1.1380291]],
        [[-0.39430484, -1.38878787, 0.65709525], [-0.93807739, -0.62397563, 0.25978324]],
        [0.27395263, -0.08655811, 0.28572601],
    ],
    'ctc_greedy_empty': [
        ([[-1]], 'int64', [[0, 0, 0, 0, 0]]),
    ],
    'ctc_greedy_lod': [
        ([[2], [2], [2], [3], [2], [1]], 'int64', [[0, 1, 1, 2, 6]]),
    ],
    'ctc_greedy_padded': [
        ([[0, 2, -1, -1, -1, -1, -1], [-1, -1, -1, -1, -1, -1, -1], [2, -1, -1, -1, -1, -1, -1], [0, 2, 3, 2, -1, -1, -1]], 'int64', []),
        ([[2], [0], [1], [4]], 'int64', []),
    ],
}


@pytest.mark.parametrize('case', sorted(gen.LSTMP_CASES))
def test_dynamic_lstmp_as_paddle18(case):
    outs = gen.run(fluid, gen.build_lstmp, case)
    want = REF[case]
    assert len(outs) == len(want)
    for i, (got, w) in enumerate(zip(outs, want)):
        w = np.array(w)
        assert got.shape == w.shape, (case, i, got.shape, w.shape)
        np.testing.assert_allclose(got, w, rtol=RTOL, atol=ATOL, err_msg='%s: output %d' % (case, i))


def test_lstmp_clips_reach_their_bounds():
    """The clip case is a test of clipping: Paddle's cells and projections hit the bounds."""
    proj, cell = np.array(REF['lstmp_clip'][0]), np.array(REF['lstmp_clip'][1])
    assert np.isclose(np.abs(proj), 0.15).any() and np.abs(proj).max() <= 0.15 + 1e-7
    assert np.isclose(np.abs(cell), 0.5).any() and np.abs(cell).max() <= 0.5 + 1e-7


def test_dynamic_lstmp_program_layout():
    main, startup, feed, fetch, values = gen.build_lstmp(fluid, 'lstmp_clip')
    ops = [op for op in main.global_block().ops if op.type == 'lstmp']
    assert len(ops) == 1
    assert ops[0].attr('cell_clip') == pytest.approx(0.5)
    assert ops[0].attr('proj_activation') == 'tanh'
    shapes = sorted(tuple(v.shape) for v in values.values())
    assert [tuple(main.global_block().var(n).shape) for n in values] == \
        [v.shape for v in values.values()]
    assert shapes == sorted([(1, 7 * gen.D), (gen.D, gen.P), (gen.P, 4 * gen.D)])
    proj = main.global_block().var(fetch[0])
    assert tuple(proj.shape) == (-1, gen.P) and proj.lod_level == 1
    assert 'lstmp_grad' in [op.type for op in main.global_block().ops]


def test_dynamic_lstmp_checks_its_arguments():
    L = fluid.layers
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('x', [None, 12], 'float32', lod_level=1)
        h0 = fluid.data('h0', [None, 3], 'float32')
        c0 = fluid.data('c0', [None, 3], 'float32')
        with pytest.raises(ValueError, match='h_0'):
            L.dynamic_lstmp(x, 12, 2, h_0=h0, c_0=c0)
        with pytest.raises(ValueError, match='proj_clip'):
            L.dynamic_lstmp(x, 12, 2, proj_clip=-1.0)
        with pytest.raises(ValueError, match='bias_attr'):
            L.dynamic_lstmp(x, 12, 2, bias_attr=False)
        ids = fluid.data('ids', [None, 12], 'int64', lod_level=1)
        with pytest.raises(TypeError, match='ids'):
            L.dynamic_lstmp(ids, 12, 2)


def test_lstmp_without_lod_is_an_error_naming_op_and_variable():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x_nolod', [None, 12], 'float32')
        proj, _ = fluid.layers.dynamic_lstmp(x, 12, 2)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        with pytest.raises(Exception) as e:
            exe.run(main, feed={'x_nolod': np.zeros((4, 12), 'float32')}, fetch_list=[proj])
    assert 'lstmp' in str(e.value) and 'x_nolod' in str(e.value)


@pytest.mark.parametrize('case', sorted(gen.CTC_CASES))
def test_ctc_greedy_decoder_as_paddle18(case):
    outs, lods = gen.run(fluid, gen.build_ctc, case, lod=True)
    want = REF[case]
    assert len(outs) == len(want)
    for got, lod, (values, dtype, want_lod) in zip(outs, lods, want):
        assert str(got.dtype) == dtype
        np.testing.assert_array_equal(got, np.array(values))
        assert [list(level) for level in lod] == want_lod


def test_ctc_greedy_decoder_program_layout():
    main, startup, feed, fetch, _ = gen.build_ctc(fluid, 'ctc_greedy_lod')
    types = [op.type for op in main.global_block().ops]
    assert types[-2:] == ['top_k', 'ctc_align']
    out = main.global_block().var(fetch[0])
    assert out.dtype.name == 'int64' and out.lod_level == 1
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        ids = fluid.data('ids', [None, 4], 'int64', lod_level=1)
        with pytest.raises(TypeError, match='ids'):
            fluid.layers.ctc_greedy_decoder(ids, blank=0)


def test_ctc_align_error_names_op_and_variable():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('probs_nolod', [None, 4], 'float32')
        out = fluid.layers.ctc_greedy_decoder(x, blank=0)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        with pytest.raises(Exception) as e:
            exe.run(main, feed={'probs_nolod': np.ones((3, 4), 'float32')}, fetch_list=[out])
    assert 'ctc_align' in str(e.value) and 'LoD' in str(e.value)


# warp-ctc works in float32; rill's forward-backward in double
CTC_RTOL, CTC_ATOL = 2e-5, 3e-6


@pytest.mark.parametrize('case', sorted(gen.WARPCTC_CASES))
def test_warpctc_as_paddle18(case):
    outs = gen.run(fluid, gen.build_warpctc, case)
    want = REF[case]
    assert len(outs) == len(want)
    for i, (got, w) in enumerate(zip(outs, want)):
        w = np.array(w)
        assert got.shape == w.shape, (case, i, got.shape, w.shape)
        np.testing.assert_allclose(got, w, rtol=CTC_RTOL, atol=CTC_ATOL,
                                   err_msg='%s: output %d' % (case, i))
    # the last label cannot fit its frames: loss 0, as warp-ctc gives
    assert outs[0][-1, 0] == 0.0


def test_warpctc_checks_its_arguments():
    L = fluid.layers
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('x', [None, 5], 'float32', lod_level=1)
        lab64 = fluid.data('lab64', [None, 1], 'int64', lod_level=1)
        with pytest.raises(TypeError, match='lab64'):
            L.warpctc(x, lab64)
        x64 = fluid.data('x64', [None, 5], 'float64', lod_level=1)
        lab = fluid.data('lab', [None, 1], 'int32', lod_level=1)
        with pytest.raises(TypeError, match='x64'):
            L.warpctc(x64, lab)
        xl = fluid.data('xl', [None], 'int32')
        with pytest.raises(TypeError, match='xl'):
            L.warpctc(x, lab, input_length=xl, label_length=xl)


def test_warpctc_label_out_of_range_names_op_and_variable():
    main, startup, feed, fetch, _ = gen.build_warpctc(fluid, 'warpctc_lod')
    feed = dict(feed)
    lab, lens = feed['label']
    lab = lab.copy()
    lab[0, 0] = gen.WC_C + 2
    feed['label'] = (lab, lens)
    with pytest.raises(Exception) as e:
        gen.run(fluid, lambda f, c: (main, startup, feed, fetch, {}), 'warpctc_lod')
    assert 'warpctc' in str(e.value) and 'label' in str(e.value) and str(gen.WC_C + 2) in str(e.value)


@pytest.mark.parametrize('case', gen.SEQ_CASES)
def test_sequence_scatter_and_erase_as_paddle18(case):
    outs = gen.run(fluid, gen.build_seq, case)
    want = REF[case]
    assert len(outs) == len(want)
    for i, (got, w) in enumerate(zip(outs, want)):
        w = np.array(w)
        assert got.shape == w.shape, (case, i, got.shape, w.shape)
        np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-7, err_msg='%s: output %d' % (case, i))


def test_edit_distance_ignored_tokens_use_sequence_erase():
    main, startup, feed, fetch, _ = gen.build_seq(fluid, 'edit_distance_ignored')
    types = [op.type for op in main.global_block().ops]
    assert types == ['sequence_erase', 'sequence_erase', 'edit_distance']
    assert main.global_block().ops[0].attr('tokens') == [0, 7]


def test_sequence_scatter_checks_its_arguments():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('x', [3, 6], 'float32')
        ids = fluid.data('ids', [None, 1], 'int64', lod_level=1)
        upd64 = fluid.data('upd64', [None, 1], 'float64', lod_level=1)
        with pytest.raises(TypeError, match='updates'):
            fluid.layers.sequence_scatter(x, ids, upd64)
        with pytest.raises(TypeError, match='index'):
            fluid.layers.sequence_scatter(x, upd64, upd64)


@pytest.mark.parametrize('case', gen.SELECT_CASES)
def test_select_output_then_select_input_as_paddle18(case):
    outs = gen.run(fluid, gen.build_select, case)
    want = REF[case]
    for i, (got, w) in enumerate(zip(outs, want)):
        np.testing.assert_allclose(got, np.array(w), rtol=1e-6, atol=1e-7,
                                   err_msg='%s: output %d' % (case, i))


def test_select_input_gradient_leaves_the_branch_not_taken_unset():
    """As in Paddle 1.8 (select_input's gradient is select_output), the branch not taken
    gets no gradient tensor at all."""
    main, startup, feed, fetch, _ = gen.build_select(fluid, 'select_branch_1')
    types = [op.type for op in main.global_block().ops]
    assert types.count('select_output') == 2 and types.count('select_input') == 2
    grad_switch = [op for op in main.global_block().ops if op.type == 'select_output'][1]
    assert grad_switch.input('X') == ['merged@GRAD']
    assert grad_switch.output('Out') == ['branch_0@GRAD', 'branch_1@GRAD']
    # the run writes branch_1@GRAD alone, and the gradients are Paddle's
    outs = gen.run(fluid, lambda f, c: (main, startup, feed, fetch, {}), 'select_branch_1')
    np.testing.assert_allclose(outs[1], np.array(REF['select_branch_1'][1]), rtol=1e-6, atol=1e-7)


def test_select_mask_out_of_range_names_op_and_variable():
    main, startup, feed, fetch, _ = gen.build_select(fluid, 'select_branch_0')
    feed = dict(feed, mask=np.array([2], 'int32'))
    with pytest.raises(Exception) as e:
        gen.run(fluid, lambda f, c: (main, startup, feed, fetch, {}), 'select_branch_0')
    assert 'select_output' in str(e.value) and 'mask' in str(e.value)
