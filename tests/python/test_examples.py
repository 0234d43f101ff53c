"""The examples run end to end: recognize_digits' CNN reaches 95% test accuracy from its
reloaded inference model."""
import importlib.util
import os
import sys

import pytest

from conftest import ROOT

EXAMPLES = os.path.join(ROOT, 'examples')


def load(path, name):
    sys.path.insert(0, EXAMPLES)
    try:
        spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, path))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(EXAMPLES)


def test_recognize_digits_cnn_reaches_95_percent(tmp_path, capsys):
    mod = load('recognize_digits/train.py', 'recognize_digits')
    acc = mod.train('cnn', 12, 32, str(tmp_path / 'cnn'))
    assert acc >= 0.95
    out = capsys.readouterr().out
    assert 'loss' in out and 'samples/s' in out
    assert os.path.isfile(tmp_path / 'cnn' / '__model__')
