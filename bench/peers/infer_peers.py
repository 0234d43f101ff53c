#!/usr/bin/env python3
"""Inference benchmark: rill against ONNX Runtime and Paddle Inference on the real models.

For every model in ../shared/models (a folder with refs/meta.json) and every runtime
available here, in the same run on the same machine:

  b1_ms, b1_p90_ms  latency at batch 1: median and 90th percentile of single runs, after a
                    warm-up, over about half the per-model time budget
  b16_ips           throughput at batch 16: 16 / median time of one batch-16 run (images/s)
  peak_mb           peak memory of running the model: how far the process's resident set
                    grew above the process holding its inputs, before the model is loaded,
                    up to its high-water mark after the runs (VmHWM, reset through
                    /proc/self/clear_refs just before loading); the larger of the batch-1
                    and the batch-16 processes. Each (runtime, model, batch) is measured in a
                    fresh process, so nothing of another model is counted.

All runtimes get the same thread count (--threads, default 2): ONNX Runtime intra-op
threads, Paddle's CPU math-library threads, rill's --threads; OMP/OpenBLAS/MKL thread
variables are set to the same count in every child.

Peers (each optional; one that cannot be imported is skipped and the output says so):
  ort     ONNX Runtime (CPU provider, all graph optimizations) on the model converted with
          paddle2onnx (opset 11). Paddle first re-saves the model with combined parameters,
          since paddle2onnx reads only that layout.
  paddle  Paddle Inference (paddle.inference) on the original files, CPU, its default
          oneDNN path, IR optimizations and memory optimization on.
Every runtime's output on refs/input_*.npy is checked against refs/output_0.npy (rtol 1e-4,
atol 1e-5) first; a runtime that disagrees is reported as a mismatch and not timed.

rill is measured one of three ways:
  --rill-bin BUILD/rill  (default: build/rill) through `rill run`: correctness with
          --output, timing from the CLI's own clock (--bench N when the CLI has it, else
          --repeat K, whose "time: X ms/run" excludes the first run; a sample is then the
          mean over K runs, K chosen so a sample spans ~0.3 ms, or one run), memory
          from the child's ru_maxrss (via GNU time) minus that of `rill --version` minus
          the bytes of its input arrays (the peers' harness holds those before its
          baseline).
  --rill-cmd CMD  run CMD (e.g. build/bench_models) once per round and read its lines
          "model=M b1_ms=X [b1_p90_ms=X] b16_ips=X peak_mb=X" as printed.
  --rill-results FILE  read such lines from FILE.

Output: one machine-readable line per (runtime, model)
  RESULT runtime=<ort|paddle|rill> model=<name> b1_ms=<x> b1_p90_ms=<x> b16_ips=<x> peak_mb=<x>
a SKIP line for each runtime/model that could not be measured (with the reason), a RATIO line
per model, and human-readable tables. The best of --rounds interleaved rounds is kept
(lowest latency, highest throughput, lowest peak). Not a build or test dependency.
"""
import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PEERS = ("ort", "paddle")
RTOL, ATOL = 1e-4, 1e-5


# ---------------------------------------------------------------- helpers ----

def proc_status_kb(key):
    with open("/proc/self/status") as f:
        m = re.search(r"^%s:\s+(\d+)\s+kB" % key, f.read(), re.M)
    return int(m.group(1)) if m else 0


def reset_hwm():
    """Sets VmHWM to the current RSS (Linux >= 4.0). False when that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child_env(threads):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    env.setdefault("GLOG_minloglevel", "2")
    env.setdefault("GLOG_v", "0")
    env["FLAGS_enable_pir_api"] = "0"  # Paddle 3: the legacy static program, as the files are
    return env


def model_meta(model_dir):
    with open(os.path.join(model_dir, "refs", "meta.json")) as f:
        return json.load(f)


def compare(out, ref):
    out = np.asarray(out)
    if out.shape != ref.shape:
        return "shape %s, expected %s" % (list(out.shape), list(ref.shape))
    if not np.allclose(out, ref, rtol=RTOL, atol=ATOL):
        err = np.abs(out.astype(np.float64) - ref.astype(np.float64))
        return "max abs error %.3g (rtol %g, atol %g)" % (float(err.max()), RTOL, ATOL)
    return None


def prepare_inputs(model_dir, dest):
    """dest/{ref,b1,b16}/<feed>.npy: the reference input, its first row, its rows tiled to 16."""
    meta = model_meta(model_dir)
    nbytes = {}
    for phase in ("ref", "b1", "b16"):
        os.makedirs(os.path.join(dest, phase), exist_ok=True)
        nbytes[phase] = 0
    for feed in meta["feed_order"]:
        ref = np.load(os.path.join(model_dir, "refs", "input_%s.npy" % feed))
        arrays = {"ref": ref, "b1": ref[:1], "b16": np.resize(ref, (16,) + ref.shape[1:])}
        for phase, a in arrays.items():
            a = np.ascontiguousarray(a)
            np.save(os.path.join(dest, phase, feed + ".npy"), a)
            nbytes[phase] += a.nbytes
    return nbytes


def load_inputs(dest, meta, phase):
    return {f: np.load(os.path.join(dest, phase, f + ".npy")) for f in meta["feed_order"]}


# ---------------------------------------------------------------- conversion --

CONVERT = r"""
import os, sys, json, traceback
models, out = json.loads(sys.argv[1]), sys.argv[2]
res = {}
try:
    import paddle, paddle2onnx
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
except Exception as e:
    print("CONVERT " + json.dumps({m: "cannot import paddle/paddle2onnx: %s" % e for m in models}))
    sys.exit(0)
for m, d in models.items():
    try:
        scope = paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            pd = [f for f in sorted(os.listdir(d)) if f.endswith(".pdmodel")]
            if pd:
                prog, feeds, fetches = paddle.static.load_inference_model(
                    os.path.join(d, pd[0][:-len(".pdmodel")]), exe)
            elif os.path.exists(os.path.join(d, "params")):
                prog, feeds, fetches = paddle.static.io.load_inference_model(
                    d, exe, model_filename="__model__", params_filename="params")
            else:
                prog, feeds, fetches = paddle.static.io.load_inference_model(
                    d, exe, model_filename="__model__")
            blk = prog.global_block()
            pre = os.path.join(out, m, "model")
            paddle.static.save_inference_model(pre, [blk.var(f) for f in feeds], fetches, exe,
                                               program=prog)
        of = os.path.join(out, m + ".onnx")
        paddle2onnx.export(pre + ".pdmodel", pre + ".pdiparams", save_file=of,
                           opset_version=11, optimize_tool="None")
        if not os.path.exists(of) or os.path.getsize(of) == 0:
            res[m] = "paddle2onnx wrote no model"
        else:
            res[m] = None
    except Exception as e:
        res[m] = "conversion failed: %s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1][:200] if str(e).strip() else "")
print("CONVERT " + json.dumps(res))
"""


def convert_all(models, out, threads):
    """{model: None or the reason its ONNX conversion failed}; the files go to out/<m>.onnx."""
    os.makedirs(out, exist_ok=True)
    p = subprocess.run([sys.executable, "-c", CONVERT, json.dumps(models), out],
                       env=child_env(threads), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    for line in p.stdout.splitlines():
        if line.startswith("CONVERT "):
            return json.loads(line[len("CONVERT "):])
    tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return {m: "the converter failed (exit %d): %s" % (p.returncode, tail[:200]) for m in models}


# ---------------------------------------------------------------- peer worker --

def make_ort(args, meta):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(args.onnx, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    outs = [o.name for o in sess.get_outputs()]
    out0 = "fetch_name_0" if "fetch_name_0" in outs else outs[0]

    def run(feed):
        return sess.run([out0], {n: feed[n] for n in names})[0]
    return run, "onnxruntime %s" % ort.__version__


def make_paddle(args, meta):
    import paddle
    import paddle.inference as pi
    d = args.model_dir
    pd = [f for f in sorted(os.listdir(d)) if f.endswith(".pdmodel")]
    if pd:
        cfg = pi.Config(os.path.join(d, pd[0]), os.path.join(d, pd[0][:-8] + ".pdiparams"))
    elif os.path.exists(os.path.join(d, "params")):
        cfg = pi.Config(os.path.join(d, "__model__"), os.path.join(d, "params"))
    else:
        cfg = pi.Config(d)
    cfg.disable_gpu()
    cfg.set_cpu_math_library_num_threads(args.threads)
    cfg.enable_memory_optim()
    cfg.disable_glog_info()
    pred = pi.create_predictor(cfg)
    handles = {n: pred.get_input_handle(n) for n in pred.get_input_names()}
    out = pred.get_output_handle(pred.get_output_names()[0])
    lod_inputs = {n for n, v in meta["inputs"].items() if v.get("lod")}

    def run(feed):
        for n, h in handles.items():
            v = feed[n]
            h.reshape(v.shape)
            h.copy_from_cpu(v)
            if n in lod_inputs:  # one sequence per row, as the tiled inputs are
                h.set_lod([list(range(v.shape[0] + 1))])
        pred.run()
        return out.copy_to_cpu()
    try:
        onednn = cfg.mkldnn_enabled()
    except Exception:
        onednn = "?"
    return run, "paddle %s (oneDNN %s)" % (paddle.__version__, onednn)


def time_runs(run, feed, budget, min_runs):
    """Per-run seconds after a warm-up (>= 2 runs and ~15% of the budget)."""
    t0 = time.perf_counter()
    n = 0
    while n < 2 or (time.perf_counter() - t0 < 0.15 * budget and n < 1000):
        run(feed)
        n += 1
    times = []
    t0 = time.perf_counter()
    while len(times) < min_runs or (time.perf_counter() - t0 < budget and len(times) < 100000):
        t = time.perf_counter()
        run(feed)
        times.append(time.perf_counter() - t)
    return times


def worker(args):
    meta = model_meta(args.model_dir)
    res = {"phase": args.phase}
    feed = load_inputs(args.inputs, meta, args.phase)
    ref_in = load_inputs(args.inputs, meta, "ref") if args.phase == "b1" else None
    ref_out = np.load(os.path.join(args.model_dir, "refs", "output_0.npy"))
    make = make_ort if args.worker == "ort" else make_paddle
    base = proc_status_kb("VmRSS")
    res["hwm_reset"] = reset_hwm()
    base_hwm = proc_status_kb("VmHWM")
    try:
        run, res["version"] = make(args, meta)
        if ref_in is not None:
            bad = compare(run(ref_in), ref_out)
            if bad:
                res["error"] = "output mismatch: " + bad
                print("WORKER " + json.dumps(res))
                return
        times = time_runs(run, feed, args.budget, 10 if args.phase == "b1" else 3)
    except Exception as e:
        res["error"] = "%s: %s" % (type(e).__name__, str(e).strip()[:300])
        print("WORKER " + json.dumps(res))
        return
    ms = sorted(t * 1e3 for t in times)
    res["median_ms"] = statistics.median(ms)
    res["p90_ms"] = float(np.percentile(ms, 90))
    res["runs"] = len(ms)
    hwm = proc_status_kb("VmHWM")
    res["peak_mb"] = (hwm - (base if res["hwm_reset"] else base_hwm)) / 1024.0
    print("WORKER " + json.dumps(res))


def run_worker(peer, model, model_dir, inputs, onnx, phase, opts):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", peer, "--model-dir", model_dir,
           "--inputs", inputs, "--phase", phase, "--budget", str(opts.budget / 2),
           "--threads", str(opts.threads)]
    if onnx:
        cmd += ["--onnx", onnx]
    try:
        p = subprocess.run(cmd, env=child_env(opts.threads), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=opts.timeout)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after %d s" % opts.timeout}
    for line in p.stdout.splitlines():
        if line.startswith("WORKER "):
            return json.loads(line[len("WORKER "):])
    tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": "worker failed (exit %d): %s" % (p.returncode, tail[:300])}


def measure_peer(peer, model, model_dir, inputs, onnx, opts):
    r1 = run_worker(peer, model, model_dir, inputs, onnx, "b1", opts)
    if "error" in r1:
        return {"error": r1["error"]}
    r16 = run_worker(peer, model, model_dir, inputs, onnx, "b16", opts)
    if "error" in r16:
        return {"error": "batch 16: " + r16["error"]}
    return {"b1_ms": r1["median_ms"], "b1_p90_ms": r1["p90_ms"],
            "b16_ips": 16e3 / r16["median_ms"], "peak_mb": max(r1["peak_mb"], r16["peak_mb"]),
            "version": r1.get("version", "")}


# ---------------------------------------------------------------- rill --------

GNU_TIME = "/usr/bin/time"


def have_gnu_time():
    try:
        p = subprocess.run([GNU_TIME, "-f", "%M", "true"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=30)
        return p.returncode == 0 and p.stderr.strip().splitlines()[-1].isdigit()
    except (OSError, subprocess.SubprocessError, IndexError):
        return False


def run_counted(cmd, env, timeout, gnu_time):
    """(returncode, stdout, stderr, peak RSS in kB or None) of a child process.

    The peak comes from GNU time's %M (the child's ru_maxrss). Not from our own wait4: a
    child forked from this Python process starts its ru_maxrss at Python's RSS (Linux keeps
    the larger of the pre-exec and post-exec high-water marks), which would hide a small
    runtime's whole footprint; GNU time's own RSS, the floor it leaves, is about 1 MB."""
    kb = None
    with tempfile.NamedTemporaryFile(mode="r", suffix=".rss") as rss:
        full = [GNU_TIME, "-f", "%M", "-o", rss.name] + cmd if gnu_time else cmd
        try:
            p = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return -9, "", "timed out after %d s" % timeout, None
        if gnu_time:
            lines = [ln for ln in open(rss.name).read().splitlines() if ln.strip().isdigit()]
            kb = int(lines[-1]) if lines else None
        return p.returncode, p.stdout, p.stderr, kb


class RillCli:
    """rill measured through `rill run` (see the module text)."""

    def __init__(self, binary, opts):
        self.bin = binary
        self.opts = opts
        self.env = child_env(opts.threads)
        self.gnu_time = have_gnu_time()
        rc, out, _, _ = self.run([binary, "--help"], 30)
        self.has_bench = rc == 0 and "--bench" in out
        self.baseline_kb = None
        self.checked = {}

    def run(self, cmd, timeout=None):
        return run_counted(cmd, self.env, timeout or self.opts.timeout, self.gnu_time)

    def base_kb(self):
        if self.baseline_kb is None:
            vals = []
            for _ in range(3):
                rc, _, _, kb = self.run([self.bin, "--version"], 30)
                if rc == 0 and kb is not None:
                    vals.append(kb)
            self.baseline_kb = min(vals) if vals else 0
        return self.baseline_kb

    def cmd(self, model_dir, inputs, phase, meta):
        c = [self.bin, "run", model_dir, "--threads", str(self.opts.threads)]
        for f in meta["feed_order"]:
            c += ["--input", "%s=%s" % (f, os.path.join(inputs, phase, f + ".npy"))]
        return c

    def check(self, model, model_dir, inputs, meta, work):
        if model not in self.checked:
            out = os.path.join(work, "rill_out", model)
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            rc, so, se, _ = self.run(self.cmd(model_dir, inputs, "ref", meta) + ["--output", out])
            if rc != 0:
                self.checked[model] = "rill run failed: %s" % (se.strip().splitlines() or ["?"])[-1][:300]
            else:
                ref = np.load(os.path.join(model_dir, "refs", "output_0.npy"))
                bad = compare(np.load(os.path.join(out, "output_0.npy")), ref)
                self.checked[model] = ("output mismatch: " + bad) if bad else None
        return self.checked[model]

    def timed(self, base_cmd, count):
        """(ms per run, maxrss kB) from one `rill run --repeat count`."""
        rc, out, err, kb = self.run(base_cmd + ["--repeat", str(count)])
        m = re.search(r"time:\s*([\d.eE+-]+)\s*ms/run", out)
        if rc != 0 or not m:
            raise RuntimeError("rill run --repeat failed: %s" % (err.strip().splitlines() or ["?"])[-1][:300])
        return float(m.group(1)), kb

    def bench(self, base_cmd, runs):
        """(p50 ms, p90 ms, maxrss kB) from `rill run --bench N`, or None when unparsable."""
        rc, out, err, kb = self.run(base_cmd + ["--bench", str(runs)])
        if rc != 0:
            return None
        p50 = re.search(r"(?:p50|median)[^\d]{0,12}([\d.]+(?:[eE][+-]?\d+)?)", out)
        p90 = re.search(r"p90[^\d]{0,12}([\d.]+(?:[eE][+-]?\d+)?)", out)
        if not p50 or not p90:
            return None
        return float(p50.group(1)), float(p90.group(1)), kb

    def phase(self, model_dir, inputs, phase, meta, budget):
        base_cmd = self.cmd(model_dir, inputs, phase, meta)
        t1, peak = self.timed(base_cmd, 3)  # calibration, and the peak of a 4-run process
        runs_in_budget = max(5, int(budget / max(t1 * 1e-3, 1e-6)))
        if self.has_bench:
            r = self.bench(base_cmd, min(runs_in_budget, 100000))
            if r:
                return r[0], r[1], peak
        # Short samples: on a loaded machine a long one is almost surely preempted and its
        # mean counts the preemption, while the peers' median of single runs skips it.
        per_sample = max(1, int(0.0003 / max(t1 * 1e-3, 1e-9)))
        samples = []
        t_end = time.monotonic() + budget
        while len(samples) < 5 or (time.monotonic() < t_end and len(samples) < 200):
            ms, _ = self.timed(base_cmd, per_sample)
            samples.append(ms)
        return statistics.median(samples), float(np.percentile(samples, 90)), peak

    def measure(self, model, model_dir, inputs, meta, nbytes, work):
        bad = self.check(model, model_dir, inputs, meta, work)
        if bad:
            return {"error": bad}
        try:
            b1, b1p90, kb1 = self.phase(model_dir, inputs, "b1", meta, self.opts.budget / 2)
            b16, _, kb16 = self.phase(model_dir, inputs, "b16", meta, self.opts.budget / 2)
        except RuntimeError as e:
            return {"error": str(e)}
        r = {"b1_ms": b1, "b1_p90_ms": b1p90, "b16_ips": 16e3 / b16, "version": "rill run (CLI)"}
        base = self.base_kb()
        if kb1 is not None and kb16 is not None and base:
            peak = max(kb1 * 1024 - nbytes["b1"], kb16 * 1024 - nbytes["b16"]) - base * 1024
            r["peak_mb"] = max(peak, 0) / 2**20
        return r


def parse_rill_lines(text):
    """{model: figures} from lines "[RESULT] [runtime=rill] model=M b1_ms=X ..."."""
    res = {}
    for line in text.splitlines():
        kv = dict(re.findall(r"(\w+)=(\S+)", line))
        if "model" not in kv or "b1_ms" not in kv or kv.get("runtime", "rill") != "rill":
            continue
        r = {"version": "external"}
        for k in ("b1_ms", "b1_p90_ms", "b16_ips", "peak_mb"):
            try:
                r[k] = float(kv[k])
            except (KeyError, ValueError):
                pass
        res[os.path.basename(kv["model"].rstrip("/"))] = r
    return res


# ---------------------------------------------------------------- report ------

def merge_best(best, new):
    if "error" in new:
        if not best:
            best.update(new)
        return
    if "error" in best:
        best.clear()
    if not best:
        best.update(new)
        return
    if new.get("b1_ms", 1e30) < best.get("b1_ms", 1e30):
        best["b1_ms"] = new["b1_ms"]
        if "b1_p90_ms" in new:
            best["b1_p90_ms"] = new["b1_p90_ms"]
    for k, better in (("b16_ips", max), ("peak_mb", min)):
        if k in new:
            best[k] = better(best[k], new[k]) if k in best else new[k]


def fmt(v, spec="%.4g"):
    return "-" if v is None else spec % v


def report(models, results, reasons, peers_on):
    runtimes = [p for p in PEERS if p in peers_on] + ["rill"]
    print("\n==== inference: rill vs ONNX Runtime / Paddle Inference "
          "(batch 1 latency, batch 16 throughput, peak memory) ====")
    for rt in runtimes:
        if rt in reasons:
            print("%s skipped: %s" % (rt, reasons[rt]))
    print("%-26s %-7s %10s %10s %11s %9s" % ("model", "runtime", "b1 ms", "b1 p90", "b16 img/s", "peak MB"))
    for m in models:
        for rt in runtimes:
            r = results.get((rt, m), {})
            if not r:
                continue
            if "error" in r:
                print("SKIP runtime=%s model=%s reason=%s" % (rt, m, json.dumps(r["error"])))
                continue
            print("RESULT runtime=%s model=%s b1_ms=%s b1_p90_ms=%s b16_ips=%s peak_mb=%s" % (
                rt, m, fmt(r.get("b1_ms"), "%.4f"), fmt(r.get("b1_p90_ms"), "%.4f"),
                fmt(r.get("b16_ips"), "%.1f"), fmt(r.get("peak_mb"), "%.2f")))
    print()
    for m in models:
        for rt in runtimes:
            r = results.get((rt, m), {})
            if r and "error" not in r:
                print("%-26s %-7s %10s %10s %11s %9s" % (
                    m, rt, fmt(r.get("b1_ms")), fmt(r.get("b1_p90_ms")), fmt(r.get("b16_ips"), "%.1f"),
                    fmt(r.get("peak_mb"), "%.2f")))
    print("\nratios (latency: rill / fastest peer, target <= 1.00; throughput: rill / peer, "
          "higher is better; memory: rill / peer, target < 1.00)")
    print("%-26s %-14s %8s %9s %9s %9s %9s  %s" % (
        "model", "fastest peer", "lat", "thr/ort", "thr/pd", "mem/ort", "mem/pd", "targets"))
    met_lat = met_mem = counted = 0
    for m in models:
        rr = results.get(("rill", m), {})
        peers = {p: results.get((p, m), {}) for p in PEERS if p in peers_on}
        peers = {p: r for p, r in peers.items() if r and "error" not in r}
        if not rr or "error" in rr or not peers:
            print("%-26s %s" % (m, "no ratio: " + ("rill not measured" if not rr or "error" in rr
                                                    else "no peer measured")))
            continue
        counted += 1
        fastest = min(peers, key=lambda p: peers[p]["b1_ms"])
        lat = rr["b1_ms"] / peers[fastest]["b1_ms"]

        def ratio(p, k):
            if p not in peers or k not in rr or k not in peers[p] or not peers[p][k]:
                return None
            return rr[k] / peers[p][k]
        thr = {p: ratio(p, "b16_ips") for p in PEERS}
        mem = {p: ratio(p, "peak_mb") for p in PEERS}
        lat_ok = lat <= 1.0
        mems = [v for v in mem.values() if v is not None]
        mem_ok = bool(mems) and all(v < 1.0 for v in mems)
        met_lat += lat_ok
        met_mem += mem_ok
        verdict = "latency %s, memory %s" % ("met" if lat_ok else "MISSED", "met" if mem_ok else "MISSED")
        print("%-26s %-14s %8s %9s %9s %9s %9s  %s" % (
            m, "%s %.3gms" % (fastest, peers[fastest]["b1_ms"]), "%.2fx" % lat,
            fmt(thr["ort"], "%.2fx"), fmt(thr["paddle"], "%.2fx"), fmt(mem["ort"], "%.2fx"),
            fmt(mem["paddle"], "%.2fx"), verdict))
        print("RATIO model=%s fastest_peer=%s lat_vs_fastest=%.3f thr_vs_ort=%s thr_vs_paddle=%s "
              "mem_vs_ort=%s mem_vs_paddle=%s latency_target=%s memory_target=%s" % (
                  m, fastest, lat, fmt(thr["ort"], "%.3f"), fmt(thr["paddle"], "%.3f"),
                  fmt(mem["ort"], "%.3f"), fmt(mem["paddle"], "%.3f"),
                  "met" if lat_ok else "missed", "met" if mem_ok else "missed"))
    print("\ntargets: latency <= fastest peer on %d of %d models; less memory than every peer "
          "on %d of %d (models with rill and at least one peer measured)" % (
              met_lat, counted, met_mem, counted))


# ---------------------------------------------------------------- main --------

def find_models(root, only):
    out = {}
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        if os.path.isfile(os.path.join(d, "refs", "meta.json")) and (not only or name in only):
            out[name] = d
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=os.path.join(ROOT, "..", "shared", "models"))
    ap.add_argument("--only", nargs="*", help="model names to run (default: all)")
    ap.add_argument("--peers", default="ort,paddle", help="comma list of peers (ort, paddle)")
    ap.add_argument("--rill-bin", default=os.path.join(ROOT, "build", "rill"))
    ap.add_argument("--rill-cmd", help="a command printing rill's lines (e.g. build/bench_models)")
    ap.add_argument("--rill-results", help="a file holding rill's lines")
    ap.add_argument("--no-rill", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=1.5,
                    help="seconds of timed runs per (runtime, model) per round, half per batch size")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=300, help="per child process, seconds")
    ap.add_argument("--work", help="keep converted models and inputs here (default: a temp dir)")
    # worker mode (internal)
    ap.add_argument("--worker", choices=PEERS, help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    ap.add_argument("--inputs", help=argparse.SUPPRESS)
    ap.add_argument("--onnx", help=argparse.SUPPRESS)
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0

    models = find_models(os.path.abspath(args.models), args.only)
    if not models:
        print("no models with refs/meta.json under %s" % args.models)
        return 1
    work = args.work or tempfile.mkdtemp(prefix="rill-infer-peers-")
    os.makedirs(work, exist_ok=True)
    reasons = {}
    wanted = [p.strip() for p in args.peers.split(",") if p.strip()]
    need = {"ort": ("onnxruntime", "paddle2onnx", "paddle"), "paddle": ("paddle",)}
    peers_on = []
    for p in wanted:
        if p not in need:
            print("unknown peer %s (known: %s)" % (p, ", ".join(PEERS)))
            return 2
        missing = [mod for mod in need[p] if importlib.util.find_spec(mod) is None]
        if missing:
            reasons[p] = "%s cannot import %s (make peers installs it)" % (sys.executable, ", ".join(missing))
            print("peer %s skipped: %s" % (p, reasons[p]))
        else:
            peers_on.append(p)

    inputs, nbytes, metas = {}, {}, {}
    for m, d in models.items():
        inputs[m] = os.path.join(work, "inputs", m)
        nbytes[m] = prepare_inputs(d, inputs[m])
        metas[m] = model_meta(d)

    onnx = {}
    if "ort" in peers_on:
        t = time.monotonic()
        todo = {m: d for m, d in models.items()
                if not os.path.exists(os.path.join(work, "onnx", m + ".onnx"))}
        conv = convert_all(todo, os.path.join(work, "onnx"), args.threads) if todo else {}
        for m in models:
            if conv.get(m):
                onnx[m] = None
                print("ort model %s skipped: %s" % (m, conv[m]))
            else:
                onnx[m] = os.path.join(work, "onnx", m + ".onnx")
        print("converted %d models to ONNX with paddle2onnx in %.1f s" % (len(todo), time.monotonic() - t))

    rill = None
    external = None
    if args.no_rill:
        reasons["rill"] = "--no-rill"
    elif args.rill_results:
        with open(args.rill_results) as f:
            external = parse_rill_lines(f.read())
    elif not args.rill_cmd:
        if os.access(args.rill_bin, os.X_OK):
            rill = RillCli(args.rill_bin, args)
            print("rill: %s run (%s)" % (args.rill_bin, "--bench" if rill.has_bench else "--repeat"))
            if not rill.gnu_time:
                print("rill peak memory not measured: %s (GNU time) is missing" % GNU_TIME)
        else:
            reasons["rill"] = "%s not found (build first)" % args.rill_bin

    results = {}
    for rnd in range(args.rounds):
        t = time.monotonic()
        if args.rill_cmd:
            p = subprocess.run(args.rill_cmd, shell=True, env=child_env(args.threads),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            got = parse_rill_lines(p.stdout)
            if p.returncode != 0 and not got:
                reasons["rill"] = "%s failed (exit %d)" % (args.rill_cmd, p.returncode)
            for m in models:
                merge_best(results.setdefault(("rill", m), {}),
                           got.get(m, {"error": "%s printed no line for it" % args.rill_cmd}))
        elif external is not None and rnd == 0:
            for m in models:
                merge_best(results.setdefault(("rill", m), {}),
                           external.get(m, {"error": "%s has no line for it" % args.rill_results}))
        order = peers_on + (["rill"] if rill else [])
        for i, m in enumerate(models):
            k = (rnd + i) % len(order) if order else 0
            for rt in order[k:] + order[:k]:  # rotate who goes first
                if rt == "rill":
                    r = rill.measure(m, models[m], inputs[m], metas[m], nbytes[m], work)
                elif rt == "ort" and not onnx.get(m):
                    r = {"error": "not converted to ONNX"}
                else:
                    r = measure_peer(rt, m, models[m], inputs[m], onnx.get(m), args)
                merge_best(results.setdefault((rt, m), {}), r)
                if "error" in r and rnd == 0:
                    print("  %s %s: %s" % (rt, m, r["error"]))
        print("round %d of %d done in %.0f s" % (rnd + 1, args.rounds, time.monotonic() - t),
              flush=True)
    report(list(models), results, reasons, peers_on)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
