"""bench/peers/torch_infer.py, the inference benchmark against PyTorch: the ResNet-50 it
gives random weights (rill runs it; its softmax is not saturated), the batching of the
shared models' inputs, Paddle's SAME padding, the agreement check; and, where PyTorch is
installed, its op-by-op PyTorch model against rill on every shared model and ResNet-50
on the CPU."""
import os

import pytest
from conftest import load_script

np = pytest.importorskip("numpy")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "..", "shared", "models")
RESNET50 = os.path.join(ROOT, "..", "shared", "programs", "paddle_inference_demo_resnet50.pdmodel")


def load():
    return load_script(os.path.join(ROOT, "bench", "peers", "torch_infer.py"), "torch_infer")


@pytest.fixture(scope="module")
def resnet50(tmp_path_factory):
    if not os.path.exists(RESNET50):
        pytest.skip("%s is missing" % RESNET50)
    return load().random_resnet50(RESNET50, str(tmp_path_factory.mktemp("r50")))


def test_random_resnet50_runs_in_rill_with_an_unsaturated_softmax(resnet50):
    from rill import inference
    d, inputs = resnet50
    assert list(inputs) == ["inputs"] and inputs["inputs"].shape == (1, 3, 224, 224)
    pred = inference.Predictor(inference.Config(d))
    out = pred.run([inputs["inputs"]])[0]
    assert out.shape == (1, 1000)
    assert np.isfinite(out).all()
    assert abs(float(out.sum()) - 1.0) < 1e-4
    # random weights that blow the activations up give a one-hot softmax, against which
    # the agreement check would prove little
    assert out.max() < 0.5
    assert (out > 1e-6).sum() > 500


def test_inputs_are_tiled_along_the_batch_axis():
    ti = load()
    x = np.arange(6, dtype="float32").reshape(1, 2, 3)
    ids = np.array([[7]], dtype="int64")
    got = ti.batched({"x": x, "ids": ids}, 4)
    assert got["x"].shape == (4, 2, 3) and (got["x"] == x).all()
    assert got["ids"].shape == (4, 1) and (got["ids"] == 7).all()
    assert ti.batched({"x": x}, 1)["x"] is x


def test_same_padding_matches_paddle():
    ti = load()
    # out = ceil(size / stride); the odd pixel of padding goes after
    assert ti._same_pads(224, 7, 2, 1) == (2, 3)
    assert ti._same_pads(56, 3, 1, 1) == (1, 1)
    assert ti._same_pads(56, 1, 2, 1) == (0, 0)
    assert ti._same_pads(5, 3, 1, 2) == (2, 2)
    assert ti._pads([1, 2]) == ((1, 2), None)
    assert ti._pads([1, 1, 2, 2]) == ((1, 2), None)
    assert ti._pads([0, 1, 0, 1]) == ((0, 0), (0, 1, 0, 1))


def test_agreement_is_relative_to_the_largest_magnitude():
    ti = load()
    b = np.array([100.0, 0.001])
    assert ti.agree(b + 0.05, b, 1e-3)[1]
    assert not ti.agree(b + 0.5, b, 1e-3)[1]
    assert not ti.agree(b[:1], b, 1e-3)[1]


def test_the_torch_model_agrees_with_rill_on_every_model(resnet50):
    torch = pytest.importorskip("torch")
    from rill import inference
    ti = load()
    cases = [(name, d, mfile, pfile, inputs)
             for name, d, mfile, pfile, inputs in ti.shared_models(MODELS)]
    d, inputs = resnet50
    cases.append(("resnet50", d, None, None, inputs))
    assert len(cases) == 9
    for name, d, mfile, pfile, inputs in cases:
        program, feeds, fetches, params = ti._load(d, mfile, pfile)
        tprog = ti.TorchProgram(program, feeds, fetches, params, torch.device("cpu"))
        pred = inference.Predictor(inference.Config(
            d if mfile is None else os.path.join(d, mfile), pfile))
        for batch in (1, 3):
            feed = ti.batched(inputs, batch)
            got = pred.run([feed[f] for f in feeds])
            with torch.inference_mode():
                want = [o.numpy() for o in tprog(*[torch.from_numpy(feed[f]) for f in feeds])]
            assert len(got) == len(want)
            for a, b in zip(got, want):
                err, ok = ti.agree(a, b, 1e-4)
                assert ok, "%s batch %d: rill and the torch model differ by %g" % (name, batch, err)
