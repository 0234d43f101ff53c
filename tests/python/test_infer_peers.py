"""bench/peers/infer_peers.py, the inference benchmark against ONNX Runtime and Paddle
Inference: its parsing, its inputs, its skipping of a peer that is not installed, and its
measurement of rill through `rill run` on the smallest real model. No peer is needed."""
import importlib.util
import os
import sys

import pytest

np = pytest.importorskip("numpy")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "..", "shared", "models")
SMALL = "fit_a_line_raftliu"


def load():
    spec = importlib.util.spec_from_file_location(
        "infer_peers", os.path.join(ROOT, "bench", "peers", "infer_peers.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rill_bin():
    lib = os.environ.get("RILL_LIB")
    path = os.path.join(os.path.dirname(lib), "rill") if lib else os.path.join(ROOT, "build", "rill")
    return path if os.access(path, os.X_OK) else None


def test_rill_lines_are_parsed_by_model_name():
    ip = load()
    got = ip.parse_rill_lines(
        "noise\n"
        "model=../shared/models/abalone_bn_mlp b1_ms=0.5 b16_ips=1000 peak_mb=2.5\n"
        "RESULT runtime=rill model=mnist_mlp_handwriting b1_ms=0.1 b1_p90_ms=0.2 b16_ips=9 peak_mb=1\n"
        "RESULT runtime=ort model=mnist_mlp_handwriting b1_ms=7 b16_ips=1 peak_mb=1\n")
    assert set(got) == {"abalone_bn_mlp", "mnist_mlp_handwriting"}
    assert got["abalone_bn_mlp"]["b1_ms"] == 0.5
    assert "b1_p90_ms" not in got["abalone_bn_mlp"]
    assert got["mnist_mlp_handwriting"]["b1_ms"] == 0.1  # not the ort line's 7


def test_compare_reports_shape_and_value_mismatches():
    ip = load()
    ref = np.ones((2, 3), np.float32)
    assert ip.compare(ref + 1e-6, ref) is None
    assert "shape" in ip.compare(np.ones((3, 2), np.float32), ref)
    assert "max abs error" in ip.compare(ref * 1.01, ref)


def test_inputs_are_the_first_row_and_rows_tiled_to_16(tmp_path):
    ip = load()
    model = os.path.join(MODELS, SMALL)
    if not os.path.isdir(model):
        pytest.skip("../shared/models is not here")
    nbytes = ip.prepare_inputs(model, str(tmp_path))
    ref = np.load(os.path.join(model, "refs", "input_x.npy"))
    b1 = np.load(tmp_path / "b1" / "x.npy")
    b16 = np.load(tmp_path / "b16" / "x.npy")
    assert b1.shape == (1,) + ref.shape[1:] and np.array_equal(b1[0], ref[0])
    assert b16.shape == (16,) + ref.shape[1:]
    assert np.array_equal(b16[ref.shape[0]], ref[0])
    assert nbytes["b16"] == b16.nbytes


def test_a_peer_that_cannot_be_imported_is_skipped_and_said(monkeypatch, capsys, tmp_path):
    ip = load()
    if not os.path.isdir(os.path.join(MODELS, SMALL)):
        pytest.skip("../shared/models is not here")
    real = importlib.util.find_spec
    monkeypatch.setattr(ip.importlib.util, "find_spec",
                        lambda name, *a: None if name == "paddle" else real(name, *a))
    monkeypatch.setattr(sys, "argv", ["infer_peers.py", "--models", MODELS, "--only", SMALL,
                                      "--no-rill", "--rounds", "1", "--work", str(tmp_path)])
    assert ip.main() == 0
    out = capsys.readouterr().out
    assert "peer paddle skipped" in out and "cannot import paddle" in out
    assert "peer ort skipped" in out  # the conversion to ONNX needs Paddle too
    assert "RESULT" not in out


def test_rill_is_measured_through_the_cli(monkeypatch, capsys, tmp_path):
    ip = load()
    binary = rill_bin()
    if not binary or not os.path.isdir(os.path.join(MODELS, SMALL)):
        pytest.skip("needs build/rill and ../shared/models")
    monkeypatch.setattr(sys, "argv", ["infer_peers.py", "--models", MODELS, "--only", SMALL,
                                      "--peers", "", "--rill-bin", binary, "--rounds", "1",
                                      "--budget", "0.1", "--work", str(tmp_path)])
    assert ip.main() == 0
    out = capsys.readouterr().out
    line = [ln for ln in out.splitlines() if ln.startswith("RESULT runtime=rill")]
    assert len(line) == 1, out
    kv = dict(f.split("=", 1) for f in line[0].split()[1:])
    assert kv["model"] == SMALL
    assert 0 < float(kv["b1_ms"]) <= float(kv["b1_p90_ms"])
    assert float(kv["b16_ips"]) > 0
    if ip.have_gnu_time():
        assert 0 <= float(kv["peak_mb"]) < 64
