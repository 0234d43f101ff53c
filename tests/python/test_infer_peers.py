"""bench/peers/infer_peers.py, the inference benchmark against ONNX Runtime and Paddle
Inference: its parsing, its inputs, its skipping of a peer that is not installed, and its
measurement of rill through `rill run` on the smallest real model. No peer is needed."""
import importlib.util
import os
import re
import sys

import pytest
from conftest import load_script

np = pytest.importorskip("numpy")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "..", "shared", "models")
SMALL = "fit_a_line_raftliu"


def load():
    return load_script(os.path.join(ROOT, "bench", "peers", "infer_peers.py"), "infer_peers")


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
    assert kv["model"] == SMALL and kv["rounds"] == "1"
    assert 0 < float(kv["b1_ms"]) <= float(kv["b1_p90_ms"])
    assert "==== machine and code paths ====" in out
    assert re.search(r"^rill: cpu: (generic|avx2|avx512) kernels", out, re.M), out
    assert float(kv["b16_ips"]) > 0
    if ip.have_gnu_time():
        assert 0 <= float(kv["peak_mb"]) < 64


def test_spread_is_the_median_quartiles_and_extremes_of_what_was_measured():
    ip = load()
    s = ip.spread([5.0, None, 1.0, 3.0, 2.0, 4.0])
    assert s == {"median": 3.0, "q1": 2.0, "q3": 4.0, "min": 1.0, "max": 5.0, "n": 5}
    assert ip.spread([None, None]) is None
    assert ip.spread([]) is None
    one = ip.spread([0.7])
    assert one["median"] == one["q1"] == one["q3"] == one["min"] == one["max"] == 0.7


def test_round_ratios_pair_the_same_round_and_skip_missing_ones():
    ip = load()
    assert ip.round_ratios([2.0, 3.0, None, 8.0], [1.0, 6.0, 1.0, 4.0]) == [2.0, 0.5, 2.0]
    # a figure measured once (--rill-results) stands for every round
    assert ip.round_ratios([1.0], [2.0, 4.0]) == [0.5, 0.25]


def test_latency_ratio_is_against_the_fastest_peer_of_each_round():
    ip = load()
    ratios, who = ip.fastest_peer_ratios(
        [1.0, 2.0, 3.0, None], {"ort": [2.0, 1.0, None, 1.0], "paddle": [4.0, 4.0, 6.0, 1.0]})
    assert ratios == [0.5, 2.0, 0.5]
    assert who == ["ort", "ort", "paddle"]


def fake_results(ip, rill_b1, ort_b1, rill_b16, ort_b16, rill_peak=1.0, ort_peak=40.0):
    def rounds(b1, b16):
        return {"b1": [{"ms": v, "p90": v * 1.5} if v else None for v in b1],
                "b16": [{"ms": v} if v else None for v in b16]}
    return {("rill", "m"): {"rounds": rounds(rill_b1, rill_b16), "peak_mb": rill_peak},
            ("ort", "m"): {"rounds": rounds(ort_b1, ort_b16), "peak_mb": ort_peak}}


def test_the_ratio_is_the_median_of_per_round_ratios_not_the_ratio_of_bests():
    ip = load()
    # rill's best round (1.0) fell in a quiet moment that ORT's best (2.0) did not share;
    # round by round rill is twice as slow
    res = fake_results(ip, [1.0, 6.0, 4.0, 8.0, 10.0], [0.5, 3.0, 2.0, 4.0, 5.0],
                       [10.0, 20.0, 40.0, 20.0, 20.0], [20.0, 20.0, 20.0, 10.0, 40.0])
    q = ip.model_ratios(res, "m", ["ort"])
    assert q["lat"]["median"] == pytest.approx(2.0)
    assert q["lat"]["min"] == q["lat"]["max"] == pytest.approx(2.0)
    assert q["lat"]["n"] == 5 and q["fastest"] == "ort" and q["fastest_rounds"] == 5
    # throughput: rill's images/s over ORT's = ORT's time per batch over rill's, per round
    assert q["thr_ort"]["median"] == pytest.approx(1.0)
    assert (q["thr_ort"]["min"], q["thr_ort"]["max"]) == (pytest.approx(0.5), pytest.approx(2.0))
    assert (q["thr_ort"]["q1"], q["thr_ort"]["q3"]) == (pytest.approx(0.5), pytest.approx(2.0))
    assert q["mem_ort"] == pytest.approx(1.0 / 40.0)
    assert q["thr_paddle"] is None and q["mem_paddle"] is None
    s = ip.summary(res[("rill", "m")])
    assert s["b1_ms"] == 6.0 and s["b1_p90_ms"] == 9.0 and s["rounds"] == 5
    assert s["b16_ips"] == pytest.approx(16e3 / 20.0)


def test_ratio_and_result_lines_carry_the_median_and_its_spread(capsys):
    ip = load()
    res = fake_results(ip, [1.0, 3.0, 2.0, None], [2.0, 2.0, 2.0, 2.0],
                       [4.0, 4.0, 4.0, 4.0], [2.0, 4.0, 8.0, 4.0])
    ip.report(["m"], res, {}, ["ort"], 4)
    out = capsys.readouterr().out
    line = [ln for ln in out.splitlines() if ln.startswith("RATIO ")]
    assert len(line) == 1, out
    kv = dict(f.split("=", 1) for f in line[0].split()[1:])
    assert kv["fastest_peer"] == "ort"
    assert float(kv["lat_vs_fastest"]) == pytest.approx(1.0)   # rounds: 0.5, 1.5, 1.0
    assert float(kv["lat_vs_fastest_min"]) == pytest.approx(0.5)
    assert float(kv["lat_vs_fastest_max"]) == pytest.approx(1.5)
    assert float(kv["lat_vs_fastest_q1"]) == pytest.approx(0.75)
    assert float(kv["lat_vs_fastest_q3"]) == pytest.approx(1.25)
    assert kv["lat_rounds"] == "3"
    assert float(kv["thr_vs_ort"]) == pytest.approx(1.0)       # 0.5, 1, 2, 1
    assert kv["thr_vs_ort_rounds"] == "4"
    assert kv["thr_vs_paddle"] == "-" and kv["thr_vs_paddle_rounds"] == "0"
    assert kv["latency_target"] == "met" and kv["memory_target"] == "met"
    rill = [ln for ln in out.splitlines() if ln.startswith("RESULT runtime=rill")]
    kv = dict(f.split("=", 1) for f in rill[0].split()[1:])
    assert kv["rounds"] == "3" and float(kv["b1_ms"]) == pytest.approx(2.0)
    assert "1.00 [0.75-1.25] (0.50-1.50)" in out


CPUINFO = """processor	: 0
model name	: Intel(R) Xeon(R) Processor
flags		: fpu sse2 avx fma avx2 avx512f avx512bw avx512_vnni amx_tile

processor	: 1
model name	: Intel(R) Xeon(R) Processor
flags		: fpu sse2 avx fma avx2 avx512f avx512bw avx512_vnni amx_tile
"""


def test_cpuinfo_gives_the_model_the_flags_and_the_count():
    ip = load()
    c = ip.parse_cpuinfo(CPUINFO)
    assert c["model"] == "Intel(R) Xeon(R) Processor" and c["cpus"] == 2
    assert {"avx2", "avx512f", "amx_tile"} <= c["flags"] and "avx512dq" not in c["flags"]


def test_mlas_float_path_follows_its_cpuid_order():
    ip = load()
    assert ip.mlas_float_path({"avx", "avx2", "fma", "avx512f"}) == "AVX512F"
    assert ip.mlas_float_path({"avx", "avx2", "fma"}) == "FMA3"
    assert ip.mlas_float_path({"avx", "avx2"}) == "AVX"
    assert ip.mlas_float_path(set()) == "SSE2"


def test_header_names_the_cpu_the_flags_the_environment_and_the_paths():
    ip = load()
    info = {"cpu_model": "Test CPU 9000", "cpus": 2, "loadavg": "1.0 2.0 3.0",
            "flags": ip.parse_cpuinfo(CPUINFO)["flags"],
            "env": {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": None,
                    "RILL_CPU_ISA": "avx2", "ONEDNN_MAX_CPU_ISA": None},
            "threads": 2, "rill": "cpu: avx2 kernels (RILL_CPU_ISA caps them) (build/rill)",
            "ort": {"version": "1.2.3", "device": "CPU", "providers": ["CPUExecutionProvider"],
                    "build": "ORT Build Info: x"},
            "paddle": {"version": "paddle 3.0 (oneDNN True)", "isa": "isa: Intel AVX-512"}}
    text = "\n".join(ip.header_lines(info))
    assert "cpu: Test CPU 9000 (2 CPUs online), load average 1.0 2.0 3.0" in text
    assert "cpu flags: avx2 fma avx512f avx512bw avx512_vnni amx_tile (absent: avx512dq" in text
    assert "OPENBLAS_CORETYPE=Haswell" in text and "OPENBLAS_L2_SIZE unset" in text
    assert "RILL_CPU_ISA=avx2" in text and "OMP/OPENBLAS/MKL_NUM_THREADS=2" in text
    assert "rill: cpu: avx2 kernels" in text
    assert "onnxruntime 1.2.3, device CPU" in text and "ORT Build Info: x" in text
    assert "ort: MLAS picks from cpuid" in text and "AVX512F float kernels" in text
    assert "paddle: paddle 3.0 (oneDNN True); oneDNN isa: Intel AVX-512" in text
    assert "RESULT" not in text and "RATIO" not in text
    bare = "\n".join(ip.header_lines({"ort": "not measured (no onnxruntime)"}))
    assert "ort: not measured (no onnxruntime)" in bare and "MLAS" not in bare


def test_bench_output_gives_percentiles_and_the_cpu_line():
    ip = load()
    got = ip.parse_bench("latency: 9 runs after 3 warm-up runs: p50 0.0100 ms, p90 0.0200 ms, "
                         "p99 0.03 ms, mean 0.01 ms\ncpu: avx512 kernels (RILL_CPU_ISA caps them)\n")
    assert got == (0.01, 0.02, "cpu: avx512 kernels (RILL_CPU_ISA caps them)")
    assert ip.parse_bench("time: 1 ms/run") is None


def test_rounds_interleave_the_runtimes_and_rotate_who_goes_first(monkeypatch, capsys):
    ip = load()
    log = []

    class FakeWorker:
        def __init__(self, peer, model_dir, inputs, onnx, phase, opts):
            self.peer, self.phase, self.version = peer, phase, peer + " 1.0"

        def ready(self):
            return {"ready": True}

        def time_slice(self, seconds):
            log.append((self.peer, self.phase))
            return {"ms": 2.0 if self.peer == "ort" else 3.0, "p90": 4.0}

        def peak(self):
            return {"peak_mb": 10.0 if self.phase == "b1" else 12.0}

        def close(self):
            pass

    class FakeRill:
        def start(self, *a):
            return {"peak_mb": 1.0}

        def slice(self, st, phase, seconds):
            log.append(("rill", phase))
            return {"ms": 1.0, "p90": 1.5}

    monkeypatch.setattr(ip, "PeerWorker", FakeWorker)
    opts = type("O", (), {"rounds": 3, "budget": 0.2, "settle": 0.0})()
    results = {}
    ip.measure_model("m", "d", "in", {}, {}, {"m": "m.onnx"}, ["ort", "paddle"], FakeRill(), opts,
                     "work", results)
    turns = [log[i:i + 3] for i in range(0, len(log), 3)]
    assert len(turns) == 6  # 3 rounds x 2 batch sizes, every runtime once in each
    for k, rnd in enumerate(range(0, 6, 2)):
        b1, b16 = turns[rnd], turns[rnd + 1]
        assert [p for p, ph in b1] == [p for p, ph in b16]
        assert {ph for _, ph in b1} == {"b1"} and {ph for _, ph in b16} == {"b16"}
        assert b1[0][0] == ["rill", "ort", "paddle"][k]  # the first runtime rotates
    assert results[("ort", "m")]["peak_mb"] == 12.0 and results[("rill", "m")]["peak_mb"] == 1.0
    assert [f["ms"] for f in results[("paddle", "m")]["rounds"]["b16"]] == [3.0, 3.0, 3.0]
    q = ip.model_ratios(results, "m", ["ort", "paddle"])
    assert q["lat"]["median"] == 0.5 and q["lat"]["n"] == 3 and q["fastest"] == "ort"
