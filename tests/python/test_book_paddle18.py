"""Book chapters trained step by step against Paddle 1.8.5's numbers: the programs are
built by the generators in paddle18/ (the same code ran under `paddle.fluid` to write the
records), trained here with rill from the recorded parameters on the recorded batches,
in both schedules.
- label_semantic_roles (chapter 07): shared and sparse embeddings, stacked dynamic_lstm
  layers in alternating directions mixed by fcs, linear_chain_crf with its own learning
  rate, crf_decoding after the optimizer and chunk_eval, under SGD with exponential_decay,
  Adam, and value, norm and global-norm clipping of the sparse gradients (a padding_idx
  on one sparse table): losses, decodings, chunk_eval outputs and trained parameters;
  the chapter's inference model saved by Paddle runs, rill's answers as Paddle's did;
- recommender_system (chapter 05): sparse embeddings, sequence_pool, sequence_conv_pool,
  cos_sim and square_error_cost under SGD and Adam: losses, predictions, parameters;
- a PTB-style StaticRNN language model, its LSTM cells made of fc-style ops or of
  lstm_unit (or the fc cells unrolled by a Python loop, their outputs put together by
  layers.stack), softmax_with_cross_entropy over the vocabulary and SGD with global-norm
  clipping: losses, last hidden states and trained parameters."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_label_semantic_roles as srl  # noqa: E402
import gen_recommender_system as recsys  # noqa: E402
import gen_static_rnn_lm as lm  # noqa: E402


def load(gen, name):
    with np.load(os.path.join(gen.OUT, name + '.npz')) as f:
        return dict(f)


def check_params(ref, rec, rtol=1e-4, atol=1e-6):
    names = sorted(k[len('param_'):] for k in ref if k.startswith('param_'))
    assert names == sorted(k[len('param_'):] for k in rec if k.startswith('param_'))
    for k in names:
        np.testing.assert_array_equal(rec['param_' + k], ref['param_' + k], err_msg=k)
        np.testing.assert_allclose(rec['final_' + k], ref['final_' + k], rtol=rtol,
                                   atol=atol, err_msg=k)


def executor(parallel):
    return fluid.Executor(fluid.CPUPlace(), parallel=parallel, num_threads=2)


@pytest.mark.parametrize('parallel', [False, True])
@pytest.mark.parametrize('opt', srl.OPTIMIZERS)
def test_label_semantic_roles_trains_like_paddle(opt, parallel, tmp_path):
    ref = load(srl, opt)

    def check(step, got):
        def want(k):
            return ref['%s_%d' % (k, step)]
        np.testing.assert_allclose(got['loss_%d' % step], want('loss'), rtol=1e-5,
                                   err_msg='loss, step %d' % step)
        np.testing.assert_array_equal(got['decoded_lod_%d' % step], want('decoded_lod'))
        np.testing.assert_array_equal(got['decoded_%d' % step], want('decoded'),
                                      err_msg='decoded, step %d' % step)
        for k in ('num_infer', 'num_label', 'num_correct'):
            np.testing.assert_array_equal(got['%s_%d' % (k, step)], want(k), err_msg=k)
        for k in ('precision', 'recall', 'f1'):
            np.testing.assert_allclose(got['%s_%d' % (k, step)], want(k), rtol=1e-6,
                                       err_msg=k)

    model = str(tmp_path / 'model') if opt == 'sgd' else None
    rec = srl.run(fluid, opt, check, exe=executor(parallel), save_to=model)
    check_params(ref, rec)
    if model:
        # the model rill saved answers as the one Paddle saved did in Paddle
        check_inference(ref, srl.infer(fluid, model, executor(parallel)))
    # the record is not trivial: chunks were found and some of them were right
    assert sum(int(ref['num_correct_%d' % s].sum()) for s in range(srl.STEPS)) > 0
    assert not np.allclose(ref['final_crfw'], ref['param_crfw'])


def check_inference(ref, got):
    np.testing.assert_allclose(got['feature'], ref['infer_feature'], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got['lod'], ref['infer_lod'])
    np.testing.assert_array_equal(got['decoded'], ref['infer_decoded'])


@pytest.mark.parametrize('parallel', [False, True])
def test_label_semantic_roles_model_saved_by_paddle_runs(parallel):
    check_inference(load(srl, 'sgd'), srl.infer(fluid, os.path.join(srl.OUT, 'model'),
                                                executor(parallel)))


@pytest.mark.parametrize('parallel', [False, True])
@pytest.mark.parametrize('variant', lm.VARIANTS)
def test_static_rnn_language_model_trains_like_paddle(variant, parallel):
    ref = load(lm, variant)

    def check(step, got):
        np.testing.assert_allclose(got['loss_%d' % step], ref['loss_%d' % step], rtol=1e-5,
                                   err_msg='loss, step %d' % step)
        np.testing.assert_allclose(got['last_hidden_%d' % step], ref['last_hidden_%d' % step],
                                   rtol=1e-5, atol=1e-6, err_msg='step %d' % step)

    rec = lm.run(fluid, variant, check, exe=executor(parallel))
    check_params(ref, rec)


@pytest.mark.parametrize('parallel', [False, True])
@pytest.mark.parametrize('opt', recsys.OPTIMIZERS)
def test_recommender_system_trains_like_paddle(opt, parallel):
    ref = load(recsys, opt)

    drift = []

    def check(step, got):
        # Step 1 differs only by summation order; over the 20 steps it compounds through
        # SGD's large early steps (measured 1.6e-5 relative at step 7, 1.0e-4 at step 20).
        rtol = 1e-5 if step == 0 else 1e-3
        for k in recsys.RESULTS:
            a, b = got['%s_%d' % (k, step)], ref['%s_%d' % (k, step)]
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6,
                                       err_msg='%s, step %d' % (k, step))
            drift.append(float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-6))))

    # the trained parameters carry the same drift (at most 2.4e-5 absolute after SGD)
    check_params(ref, recsys.run(fluid, opt, check, exe=executor(parallel)), rtol=1e-3,
                 atol=1e-4)
    assert len(drift) == recsys.STEPS * len(recsys.RESULTS)
    print('recommender_system %s: step-1 relative difference %.3g, max over %d steps %.3g'
          % (opt, max(drift[:len(recsys.RESULTS)]), recsys.STEPS, max(drift)))
