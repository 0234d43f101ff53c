"""fluid.layers.linear_chain_crf and crf_decoding against PaddlePaddle 1.8.5's numbers
(paddle18/crf/, written by paddle18/gen_crf.py from the same programs): the padded
program's four outputs and decodings, and STEPS SGD steps of an fc -> CRF loss on LoD
sequences (one empty) with the decodings before each update. Paddle is not needed."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_crf  # noqa: E402

RTOL = 1e-5


@pytest.fixture(scope='module')
def want():
    return dict(np.load(os.path.join(DATA, 'crf', 'expected.npz')))


def _run(want):
    progs = gen_crf.build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    place = fluid.CPUPlace()
    got = {}
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        for name in ('train', 'padded'):
            exe.run(progs[name][1])
        for p in ('fc_w', 'fc_b', 'crfw', 'crfw2'):
            scope.find_var(p).get_tensor().set(want[p], place)
        prog, _, fetch = progs['padded']
        vals = exe.run(prog, feed={k: want[k] for k in ('xp', 'yp', 'lp')}, fetch_list=fetch)
        for k, v in zip(gen_crf.PADDED_KEYS, vals):
            got['padded_' + k] = np.asarray(v)
        prog, _, fetch = progs['train']
        for step in range(gen_crf.STEPS):
            feed = {'feat': fluid.create_lod_tensor(want['feat'], [gen_crf.SEQ_LENS], place),
                    'label': fluid.create_lod_tensor(want['label'], [gen_crf.SEQ_LENS], place)}
            vals = exe.run(prog, feed=feed, fetch_list=fetch)
            for k, v in zip(gen_crf.TRAIN_KEYS, vals):
                got['step%d_%s' % (step, k)] = np.asarray(v)
        for p in ('fc_w', 'fc_b', 'crfw'):
            got['trained_' + p] = np.array(scope.find_var(p).get_tensor())
    return progs, got


@pytest.fixture(scope='module')
def run(want):
    return _run(want)


def test_transition_parameter_is_size_plus_two_by_size(run):
    progs, _ = run
    for prog, name in ((progs['train'][0], 'crfw'), (progs['padded'][0], 'crfw2')):
        p = prog.global_block().var(name)
        assert list(p.shape) == [gen_crf.D + 2, gen_crf.D]
        assert p.persistable


def test_padded_outputs_match_paddle(run, want):
    _, got = run
    for k in gen_crf.PADDED_KEYS:
        g, w = got['padded_' + k], want['padded_' + k]
        assert g.shape == w.shape, (k, g.shape, w.shape)
        assert g.dtype == w.dtype, (k, g.dtype, w.dtype)
        if w.dtype.kind == 'i':
            np.testing.assert_array_equal(g, w, err_msg=k)
        else:
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-6, err_msg=k)
    assert want['padded_cost'][2, 0] == 0 and np.all(want['padded_path'][2] == 0)


def test_sgd_steps_match_paddle(run, want):
    _, got = run
    losses = [float(got['step%d_loss' % s].reshape(-1)[0]) for s in range(gen_crf.STEPS)]
    assert losses[-1] < losses[0] * 0.5, losses
    for s in range(gen_crf.STEPS):
        for k in gen_crf.TRAIN_KEYS:
            g, w = got['step%d_%s' % (s, k)], want['step%d_%s' % (s, k)]
            assert g.shape == w.shape, (s, k, g.shape, w.shape)
            if w.dtype.kind == 'i':
                np.testing.assert_array_equal(g, w, err_msg='step %d %s' % (s, k))
            else:
                np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-6,
                                           err_msg='step %d %s' % (s, k))
    for p in ('fc_w', 'fc_b', 'crfw'):
        np.testing.assert_allclose(got['trained_' + p], want['trained_' + p], rtol=RTOL,
                                   atol=1e-6, err_msg=p)


def test_crf_decoding_needs_the_transition_parameter():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 3], 'float32', lod_level=1)
        with pytest.raises(ValueError, match='transition parameter'):
            fluid.layers.crf_decoding(x, param_attr=fluid.ParamAttr(name='nowhere'))


def test_label_out_of_range_is_an_error_naming_it():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 3], 'float32', lod_level=1)
        y = fluid.data('y', [None, 1], 'int64', lod_level=1)
        cost = fluid.layers.linear_chain_crf(x, y, param_attr=fluid.ParamAttr(name='w'))
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        place = fluid.CPUPlace()
        feed = {'x': fluid.create_lod_tensor(np.zeros((3, 3), 'float32'), [[3]], place),
                'y': fluid.create_lod_tensor(np.array([[0], [7], [1]], 'int64'), [[3]], place)}
        with pytest.raises(Exception, match=r'linear_chain_crf.*Label.*tag 7'):
            exe.run(main, feed=feed, fetch_list=[cost])
