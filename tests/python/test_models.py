"""Every model in ../shared/models loads with rill.io.load_inference_model and gives its
reference outputs."""
import json
import os

import numpy as np
import pytest

import rill
from conftest import MODELS

NAMES = sorted(d for d in os.listdir(MODELS) if os.path.isdir(os.path.join(MODELS, d))) \
    if os.path.isdir(MODELS) else []


def model_path(name):
    d = os.path.join(MODELS, name)
    if name == 'paddlelite_simple_model':
        return os.path.join(d, 'model.pdmodel'), None
    if name == 'paddlejs_gesture_rec':
        return d, 'params'
    return d, None


@pytest.mark.parametrize('name', NAMES)
def test_model_matches_refs(name):
    d = os.path.join(MODELS, name)
    meta = json.load(open(os.path.join(d, 'refs', 'meta.json')))
    path, params = model_path(name)
    exe = rill.Executor(rill.CPUPlace())
    if path.endswith('.pdmodel'):
        prog, feeds, fetches = rill.io.load_inference_model(
            os.path.dirname(path), exe, model_filename=os.path.basename(path))
    else:
        prog, feeds, fetches = rill.io.load_inference_model(path, exe, params_filename=params)
    assert feeds == meta['feed_order']
    feed = {}
    for n in feeds:
        arr = np.load(os.path.join(d, 'refs', 'input_%s.npy' % n))
        lod = meta['inputs'][n].get('lod')
        feed[n] = (arr, lod) if lod else arr
    outs = exe.run(prog, feed=feed, fetch_list=fetches)
    assert len(outs) == len(meta['outputs'])
    for i, out in enumerate(outs):
        ref = np.load(os.path.join(d, 'refs', 'output_%d.npy' % i))
        assert out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_missing_model_dir_raises_not_found(tmp_path):
    with pytest.raises(rill.NotFoundError) as e:
        rill.io.load_inference_model(str(tmp_path / 'nothing'), rill.Executor())
    assert 'nothing' in str(e.value)
