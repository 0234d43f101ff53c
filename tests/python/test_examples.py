"""The examples run end to end: recognize_digits' CNN reaches 95% test accuracy from its
reloaded inference model."""
import json
import os

import numpy as np
import pytest

from conftest import load_example as load


def test_recognize_digits_cnn_reaches_95_percent(tmp_path, capsys):
    mod = load('recognize_digits/train.py', 'recognize_digits')
    acc = mod.train('cnn', 12, 32, str(tmp_path / 'cnn'))
    assert acc >= 0.95
    out = capsys.readouterr().out
    assert 'loss' in out and 'samples/s' in out
    assert os.path.isfile(tmp_path / 'cnn' / '__model__')


def test_recognize_digits_profiles_its_last_step(tmp_path, capsys):
    mod = load('recognize_digits/train.py', 'recognize_digits')
    mod.train('mlp', 1, 32, str(tmp_path / 'mlp'), steps=3, profile_dir=str(tmp_path / 'p'))
    out = capsys.readouterr().out
    assert 'where training step 3 spent its time' in out and 'ui.perfetto.dev' in out
    trace = json.load(open(str(tmp_path / 'p' / 'mlp_step.json')))
    ops = [e for e in trace['traceEvents'] if e.get('cat') == 'op']
    assert ops and len({e['args']['op'] for e in ops}) == len(ops)  # one step: each op once


def test_fit_a_line_learns_and_reloads(tmp_path, capsys):
    mod = load('fit_a_line/train.py', 'fit_a_line')
    mse = mod.train(30, 20, str(tmp_path / 'm'))
    (_, _), (_, yte) = mod.load_housing()
    assert mse < 0.5 * float(((yte - yte.mean()) ** 2).mean()) + 30
    assert 'from the reloaded inference model' in capsys.readouterr().out


def test_word2vec_beats_the_most_frequent_word(tmp_path):
    mod = load('word2vec/train.py', 'word2vec')
    vocab, grams = mod.load_corpus()
    acc = mod.train(6, 32, str(tmp_path / 'w'))
    baseline = float((grams[:, 4] == np.bincount(grams[:, 4]).argmax()).mean())
    assert acc > baseline + 0.05
