#!/usr/bin/env python3
"""Inference benchmark: rill against ONNX Runtime and Paddle Inference on the real models.

For every model in ../shared/models (a folder with refs/meta.json) and every runtime
available here, in the same run on the same machine, the runtimes take turns in many short
rounds (--rounds, default 15): in each round every runtime runs the model at batch 1 for a
short slice of time (half of --budget, default 0.25 s), one runtime after the other, then
every runtime at batch 16 the same way; the order of the runtimes rotates from one round
to the next. A burst of load from other work on a shared machine then falls on one round
of every runtime alike, not on one runtime's whole measurement. Per round and runtime:

  b1 ms, b1 p90     median and 90th percentile of the single batch-1 runs of the slice,
                    after a few warm-up runs (a tenth of the slice's runs, 3 to 50)
  b16 ms            median time of one batch-16 run in the slice (16e3 / it: images/s)

and per model and metric, the ratio of rill to its peers IN EACH ROUND (rill / the fastest
peer of that round for batch-1 latency; rill's images/s / ORT's and / Paddle's for batch
16), reported as the median of those per-round ratios with their spread: the first and
third quartiles, the smallest and largest, and the number of rounds. The per-runtime
figures (RESULT lines, the first table) are medians over the rounds of the per-round
figures. A runtime that idles while another measures keeps its threads, so after a peer's
slice the next slice waits --settle seconds (default 0.25: Intel OpenMP in Paddle spins its
threads 200 ms after work, ORT's pool spins too) for those threads to sleep.

  peak_mb           peak memory of running the model: how far the process's resident set
                    grew above the process holding its inputs, before the model is loaded,
                    up to its high-water mark after all rounds (VmHWM, reset through
                    /proc/self/clear_refs just before loading); the larger of the batch-1
                    and the batch-16 processes. Each (runtime, model, batch) runs in a fresh
                    process, so nothing of another model is counted: a peer's process lives
                    through the rounds of one model and serves all its slices at that batch
                    size; rill's figure comes from its own calibration process (below).

All runtimes get the same thread count (--threads, default 2): ONNX Runtime intra-op
threads, Paddle's CPU math-library threads, rill's --threads; OMP/OpenBLAS/MKL thread
variables are set to the same count in every child.

The output starts with a header naming the machine and the code paths taken: the CPU
model and the flags the kernels key on (avx2, fma, avx512f/bw/dq/vl, the VNNI and AMX
ones), OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, RILL_CPU_ISA, ONEDNN_MAX_CPU_ISA as found in the
environment (this script sets none of them), rill's "cpu: ... kernels" line, ONNX
Runtime's version, device, providers and build info, and the path its MLAS takes: MLAS
reads cpuid itself and no API, option or log of ONNX Runtime states its choice, so the
header says so and names the float kernels those flags select (MLAS's order: AVX512F when
avx512f is there, else FMA3 with avx2 and fma, else AVX). For Paddle, the ISA oneDNN
reports with ONEDNN_VERBOSE=1 in a separate one-run process, when it prints one.

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
          --output; per model and batch one calibration process (`--repeat 3`) gives the
          time of a run and the memory: the child's ru_maxrss (via GNU time) minus that of
          `rill --version` minus the bytes of its input arrays (the peers' harness holds
          those before its baseline). Each round's slice is then one `rill run --bench N`
          process, N runs filling the slice after its own warm-up; its p50 and p90 are the
          round's figures (the CLI's own clock; without --bench, short `--repeat K`
          samples, K chosen so a sample spans ~0.3 ms, as many as fill the slice).
  --rill-cmd CMD  run CMD (e.g. build/bench_models) --rounds times before the peers' rounds
          and read its lines "model=M b1_ms=X [b1_p90_ms=X] b16_ips=X peak_mb=X" as
          printed: its k-th run is paired with the peers' k-th round (not interleaved).
  --rill-results FILE  read such lines from FILE: one figure, paired with every round.

Output: the header, then one machine-readable line per (runtime, model)
  RESULT runtime=<ort|paddle|rill> model=<name> b1_ms=<x> b1_p90_ms=<x> b16_ips=<x> peak_mb=<x> rounds=<n>
(medians over the rounds), a SKIP line for each runtime/model that could not be measured
(with the reason), a RATIO line per model
  RATIO model=<name> fastest_peer=<p> lat_vs_fastest=<median> lat_vs_fastest_q1=<x>
        lat_vs_fastest_q3=<x> lat_vs_fastest_min=<x> lat_vs_fastest_max=<x> lat_rounds=<n>
        thr_vs_ort=<median> thr_vs_ort_q1=.. _q3=.. _min=.. _max=.. thr_vs_ort_rounds=<n>
        thr_vs_paddle=... (the same fields) mem_vs_ort=<x> mem_vs_paddle=<x>
        latency_target=met|missed memory_target=met|missed
(all on one line; fastest_peer is the peer fastest in most rounds), and human-readable
tables. Not a build or test dependency.
"""
import argparse
import importlib.util
import json
import os
import re
import select
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
PHASES = ("b1", "b16")
RTOL, ATOL = 1e-4, 1e-5
# The CPU flags the kernels choose on: rill (avx2+fma, then avx512f/bw/dq/vl), MLAS (avx2
# with fma, avx512f, then avx512bw/dq/vl, avx512_vnni, avx_vnni, amx_tile+amx_int8), oneDNN.
ISA_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni",
             "avx_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16")
ENV_SHOWN = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "RILL_CPU_ISA", "ONEDNN_MAX_CPU_ISA")

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
    return run, "onnxruntime %s (%s)" % (ort.__version__, ",".join(sess.get_providers()))


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


def warmup_runs(expected_runs):
    """Warm-up runs before a slice: a tenth of the runs it is expected to hold, 3 to 50 (the
    rule `rill run --bench` applies to its own runs, so both sides warm up alike)."""
    return min(50, max(3, int(expected_runs) // 10))


def time_slice(run, feed, seconds, min_runs, est_s):
    """Per-run seconds of one slice: warm-up runs, then single runs until `seconds` have
    passed and at least min_runs were timed."""
    for _ in range(warmup_runs(seconds / max(est_s, 1e-7))):
        run(feed)
    times = []
    t0 = time.perf_counter()
    while len(times) < min_runs or (time.perf_counter() - t0 < seconds and len(times) < 100000):
        t = time.perf_counter()
        run(feed)
        times.append(time.perf_counter() - t)
    return times


def slice_figures(times_s):
    ms = sorted(t * 1e3 for t in times_s)
    return {"ms": statistics.median(ms), "p90": float(np.percentile(ms, 90)), "runs": len(ms)}


def worker_say(obj):
    sys.stdout.write("WORKER " + json.dumps(obj) + "\n")
    sys.stdout.flush()


def worker(args):
    """A peer's process for one (model, batch): loads it, checks it, warms up, says "ready",
    then times one slice per {"cmd": "time"} line on stdin, until {"cmd": "peak"} (or the
    end of stdin), which it answers with its peak memory."""
    meta = model_meta(args.model_dir)
    feed = load_inputs(args.inputs, meta, args.phase)
    ref_in = load_inputs(args.inputs, meta, "ref") if args.phase == "b1" else None
    ref_out = np.load(os.path.join(args.model_dir, "refs", "output_0.npy"))
    make = make_ort if args.worker == "ort" else make_paddle
    base = proc_status_kb("VmRSS")
    hwm_reset = reset_hwm()
    base_hwm = proc_status_kb("VmHWM")
    try:
        run, version = make(args, meta)
        if args.probe:
            run(ref_in)
            worker_say({"version": version})
            return
        if ref_in is not None:
            bad = compare(run(ref_in), ref_out)
            if bad:
                worker_say({"error": "output mismatch: " + bad})
                return
        t0 = time.perf_counter()
        n = 0
        while n < 2 or (time.perf_counter() - t0 < 0.1 and n < 1000):
            run(feed)
            n += 1
        est = (time.perf_counter() - t0) / n
    except Exception as e:
        worker_say({"error": "%s: %s" % (type(e).__name__, str(e).strip()[:300])})
        return
    worker_say({"ready": True, "version": version})
    min_runs = 5 if args.phase == "b1" else 3
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("cmd") != "time":
            break
        try:
            fig = slice_figures(time_slice(run, feed, float(msg["seconds"]), min_runs, est))
        except Exception as e:
            worker_say({"error": "%s: %s" % (type(e).__name__, str(e).strip()[:300])})
            return
        est = fig["ms"] * 1e-3
        worker_say(fig)
    hwm = proc_status_kb("VmHWM")
    worker_say({"peak_mb": (hwm - (base if hwm_reset else base_hwm)) / 1024.0})


class PeerWorker:
    """The parent's side of a worker process: one (peer, model, batch), alive for all the
    rounds of that model."""

    def __init__(self, peer, model_dir, inputs, onnx, phase, opts):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", peer, "--model-dir",
               model_dir, "--inputs", inputs, "--phase", phase, "--threads", str(opts.threads)]
        if onnx:
            cmd += ["--onnx", onnx]
        self.timeout = opts.timeout
        self.err = tempfile.TemporaryFile(mode="w+")
        self.buf = b""
        self.proc = subprocess.Popen(cmd, env=child_env(opts.threads), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err)
        self.version = ""

    def _stderr_tail(self):
        self.err.seek(0)
        lines = self.err.read().strip().splitlines()
        return lines[-1][:300] if lines else "no output"

    def _reply(self):
        """The next "WORKER {...}" line as a dict; {"error": ...} on a timeout or an exit."""
        fd = self.proc.stdout.fileno()
        end = time.monotonic() + self.timeout
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                text = line.decode("utf-8", "replace")
                if text.startswith("WORKER "):
                    return json.loads(text[len("WORKER "):])
            left = end - time.monotonic()
            if left <= 0:
                self.close()
                return {"error": "timed out after %d s" % self.timeout}
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    rc = self.proc.wait()
                    return {"error": "worker failed (exit %d): %s" % (rc, self._stderr_tail())}
                self.buf += chunk

    def _send(self, msg):
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def ready(self):
        r = self._reply()
        self.version = r.get("version", "")
        return r

    def time_slice(self, seconds):
        if not self._send({"cmd": "time", "seconds": seconds}):
            return {"error": "worker gone: %s" % self._stderr_tail()}
        return self._reply()

    def peak(self):
        if not self._send({"cmd": "peak"}):
            return {"error": "worker gone: %s" % self._stderr_tail()}
        r = self._reply()
        self.close()
        return r

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()



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




def parse_bench(text):
    """(p50 ms, p90 ms, the "cpu: ..." line or None) from `rill run --bench` output, or None."""
    p50 = re.search(r"(?:p50|median)[^\d]{0,12}([\d.]+(?:[eE][+-]?\d+)?)", text)
    p90 = re.search(r"p90[^\d]{0,12}([\d.]+(?:[eE][+-]?\d+)?)", text)
    if not p50 or not p90:
        return None
    cpu = re.search(r"^cpu:.*$", text, re.M)
    return float(p50.group(1)), float(p90.group(1)), cpu.group(0).strip() if cpu else None


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
        self.cpu_lines = {}  # "cpu: ..." line -> how many --bench processes printed it

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
        """(p50 ms, p90 ms) from `rill run --bench N`, or None when unparsable."""
        rc, out, err, kb = self.run(base_cmd + ["--bench", str(runs)])
        r = parse_bench(out) if rc == 0 else None
        if not r:
            return None
        if r[2]:
            self.cpu_lines[r[2]] = self.cpu_lines.get(r[2], 0) + 1
        return r[0], r[1]

    def isa_line(self, model_dir, inputs, meta):
        """The "cpu: ..." line of a short --bench run (None when the CLI prints none)."""
        if not self.has_bench:
            return None
        rc, out, _, _ = self.run(self.cmd(model_dir, inputs, "b1", meta) + ["--bench", "3"])
        r = parse_bench(out) if rc == 0 else None
        return r[2] if r else None

    def start(self, model, model_dir, inputs, meta, nbytes, work):
        """Checks the model and calibrates both batch sizes: a state for slice(), or
        {"error": ...}. The calibration processes give the peak memory."""
        bad = self.check(model, model_dir, inputs, meta, work)
        if bad:
            return {"error": bad}
        st = {"cmd": {}, "est_ms": {}, "kb": {}}
        try:
            for ph in PHASES:
                st["cmd"][ph] = self.cmd(model_dir, inputs, ph, meta)
                st["est_ms"][ph], st["kb"][ph] = self.timed(st["cmd"][ph], 3)
        except RuntimeError as e:
            return {"error": str(e)}
        base = self.base_kb()
        if all(st["kb"][ph] is not None for ph in PHASES) and base:
            peak = max(st["kb"][ph] * 1024 - nbytes[ph] for ph in PHASES) - base * 1024
            st["peak_mb"] = max(peak, 0) / 2**20
        return st

    def slice(self, st, phase, seconds):
        """One round's figures {"ms", "p90"} at this batch size, from runs filling `seconds`."""
        base_cmd, est = st["cmd"][phase], max(st["est_ms"][phase], 1e-6)
        min_runs = 5 if phase == "b1" else 3
        if self.has_bench:
            runs = min(100000, max(min_runs, int(seconds * 1e3 / est)))
            r = self.bench(base_cmd, runs)
            if r:
                st["est_ms"][phase] = r[0]
                return {"ms": r[0], "p90": r[1]}
        # Short samples: on a loaded machine a long one is almost surely preempted and its
        # mean counts the preemption, while the peers' median of single runs skips it.
        per_sample = max(1, int(0.3 / est))
        samples = []
        t_end = time.monotonic() + seconds
        while len(samples) < min_runs or (time.monotonic() < t_end and len(samples) < 200):
            try:
                ms, _ = self.timed(base_cmd, per_sample)
            except RuntimeError as e:
                return {"error": str(e)}
            samples.append(ms)
        return {"ms": statistics.median(samples), "p90": float(np.percentile(samples, 90))}


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


# ---------------------------------------------------------------- statistics --

def spread(values):
    """Median, quartiles, extremes and count of the values that are not None; None if none."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    q1, med, q3 = (float(x) for x in np.percentile(vals, [25, 50, 75]))
    return {"median": med, "q1": q1, "q3": q3, "min": vals[0], "max": vals[-1], "n": len(vals)}


def _aligned(lists):
    """The per-round lists at one length: one holding a single figure (measured once, e.g.
    --rill-results) stands for every round; otherwise the shortest length is kept."""
    long = [len(v) for v in lists if len(v) != 1]
    n = min(long) if long else 1
    return [v * n if len(v) == 1 else v[:n] for v in lists]


def round_ratios(num, den):
    """num[k] / den[k] for each round k where both were measured."""
    a, b = _aligned([list(num), list(den)])
    return [x / y for x, y in zip(a, b) if x is not None and y]


def fastest_peer_ratios(rill, peers):
    """Per round: rill's figure over the lowest peer figure of that round (latency), and the
    name of that peer; rounds where rill or every peer is missing are left out."""
    names = sorted(peers)
    cols = _aligned([list(rill)] + [list(peers[p]) for p in names])
    ratios, who = [], []
    for k, r in enumerate(cols[0]):
        cands = {p: c[k] for p, c in zip(names, cols[1:]) if c[k]}
        if r is None or not cands:
            continue
        p = min(cands, key=cands.get)
        ratios.append(r / cands[p])
        who.append(p)
    return ratios, who


def column(res, phase, key="ms"):
    """One runtime's per-round figures at a batch size (None where a round failed)."""
    return [f.get(key) if f else None for f in res.get("rounds", {}).get(phase, [])]


def summary(res):
    """A runtime's RESULT figures: medians over its rounds."""
    out = {}
    b1, p90, b16 = spread(column(res, "b1")), spread(column(res, "b1", "p90")), spread(column(res, "b16"))
    if b1:
        out["b1_ms"], out["rounds"] = b1["median"], b1["n"]
    if p90:
        out["b1_p90_ms"] = p90["median"]
    if b16 and b16["median"] > 0:
        out["b16_ips"] = 16e3 / b16["median"]
    if res.get("peak_mb") is not None:
        out["peak_mb"] = res["peak_mb"]
    return out


def model_ratios(results, model, peers_on):
    """The ratios of one model: None when rill or every peer is missing."""
    rr = results.get(("rill", model), {})
    peers = {p: results.get((p, model), {}) for p in PEERS if p in peers_on}
    peers = {p: r for p, r in peers.items() if r and "error" not in r}
    if not rr or "error" in rr or not peers:
        return None
    lat, who = fastest_peer_ratios(column(rr, "b1"), {p: column(r, "b1") for p, r in peers.items()})
    out = {"lat": spread(lat), "fastest": max(set(who), key=who.count) if who else None,
           "fastest_rounds": who.count(max(set(who), key=who.count)) if who else 0}
    for p in PEERS:
        # images/s ratio = the peer's time per batch over rill's
        out["thr_" + p] = spread(round_ratios(column(peers[p], "b16"), column(rr, "b16"))) \
            if p in peers else None
        rm, pm = rr.get("peak_mb"), peers.get(p, {}).get("peak_mb")
        out["mem_" + p] = rm / pm if rm is not None and pm else None
    return out


# ---------------------------------------------------------------- header ------

def parse_cpuinfo(text):
    """{"model", "flags" (a set), "cpus"} from the text of /proc/cpuinfo."""
    model = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    flags = re.search(r"^(?:flags|Features)\s*:\s*(.*)$", text, re.M)
    return {"model": model.group(1).strip() if model else "unknown",
            "flags": set(flags.group(1).split()) if flags else set(),
            "cpus": len(re.findall(r"^processor\s*:", text, re.M))}


def mlas_float_path(flags):
    """The float kernels MLAS's cpuid checks select with these flags (its order: AVX512F,
    FMA3 = avx2 + fma, AVX, SSE2)."""
    if "avx512f" in flags:
        return "AVX512F"
    if "avx2" in flags and "fma" in flags:
        return "FMA3"
    return "AVX" if "avx" in flags else "SSE2"


def header_lines(info):
    """The header's lines from what gather_info() found (a plain dict, so a test can make one)."""
    flags = info.get("flags", set())
    have = [f for f in ISA_FLAGS if f in flags]
    absent = [f for f in ISA_FLAGS if f not in flags]
    env = info.get("env", {})
    lines = ["==== machine and code paths ====",
             "cpu: %s (%s CPUs online), load average %s" % (
                 info.get("cpu_model", "unknown"), info.get("cpus", "?"), info.get("loadavg", "?")),
             "cpu flags: %s (absent: %s)" % (" ".join(have) or "none of " + " ".join(ISA_FLAGS),
                                             " ".join(absent) or "none"),
             "environment: %s; every child: OMP/OPENBLAS/MKL_NUM_THREADS=%s" % (
                 ", ".join("%s=%s" % (k, env[k]) if env.get(k) is not None else "%s unset" % k
                           for k in ENV_SHOWN), info.get("threads", "?"))]
    lines.append("rill: %s" % info.get("rill", "not measured"))
    ort = info.get("ort")
    if isinstance(ort, dict):
        lines.append("ort: onnxruntime %s, device %s, providers available %s (the sessions "
                     "here ask for CPUExecutionProvider only)%s" % (
            ort.get("version", "?"), ort.get("device", "?"), ",".join(ort.get("providers", [])),
            ", build: " + ort["build"] if ort.get("build") else ""))
        lines.append("ort: MLAS picks from cpuid (no ONNX Runtime API, option or log states its "
                     "path); these flags select its %s float kernels" % mlas_float_path(flags))
    else:
        lines.append("ort: %s" % (ort or "not measured"))
    pd = info.get("paddle")
    if isinstance(pd, dict):
        lines.append("paddle: %s; oneDNN %s" % (
            pd.get("version", "?"), pd.get("isa") or "picks from cpuid (it printed no isa line)"))
    else:
        lines.append("paddle: %s" % (pd or "not measured"))
    return lines


ORT_PROBE = r"""
import json, onnxruntime as o
d = {"version": o.__version__, "device": o.get_device(), "providers": o.get_available_providers()}
try:
    d["build"] = o.get_build_info().strip()
except Exception:
    pass
print("PROBE " + json.dumps(d))
"""


def probe_ort(threads):
    p = subprocess.run([sys.executable, "-c", ORT_PROBE], env=child_env(threads),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    for line in p.stdout.splitlines():
        if line.startswith("PROBE "):
            return json.loads(line[len("PROBE "):])
    return "probe failed: %s" % ((p.stderr.strip().splitlines() or ["no output"])[-1][:200])


def probe_paddle(model_dir, inputs, threads, timeout):
    """Paddle's version and the ISA oneDNN reports (ONEDNN_VERBOSE=1) on one run of a model."""
    env = child_env(threads)
    env["ONEDNN_VERBOSE"] = "1"
    env["DNNL_VERBOSE"] = "1"
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "paddle", "--probe",
           "--model-dir", model_dir, "--inputs", inputs, "--phase", "b1", "--threads", str(threads)]
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "probe timed out"
    text = p.stdout + "\n" + p.stderr
    out = {}
    v = re.search(r"^WORKER (.*)$", p.stdout, re.M)
    if v:
        out["version"] = json.loads(v.group(1)).get("version") or "?"
    isa = re.search(r"(?:onednn|dnnl)_verbose,(?:v\d+,)?info,cpu,isa:([^\n]+)", text)
    if isa:
        out["isa"] = "isa: " + isa.group(1).strip()
    impls = []
    for im in re.findall(r"_verbose,(?:v\d+,)?primitive,exec,cpu,\w+,([^,]+),", text):
        if im not in impls:
            impls.append(im)
    if impls:
        out["isa"] = out.get("isa", "picks from cpuid") + "; its kernels on %s: %s" % (
            os.path.basename(model_dir), ", ".join(impls[:8]))
    return out


OPENBLAS_PROBE = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
for fn in ("openblas_get_corename", "openblas_get_config"):
    f = getattr(lib, fn, None)
    if f is not None:
        f.restype = ctypes.c_char_p
        print("PROBE %s %s" % (fn, f().decode()))
"""


def probe_openblas(binary, threads):
    """The core OpenBLAS picks (its DYNAMIC_ARCH reads cpuid and OPENBLAS_CORETYPE) in the
    library the rill binary loads, or None when it loads no OpenBLAS."""
    try:
        ldd = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    lib = re.search(r"=>\s*(\S*openblas\S*)", ldd)
    if not lib:
        return None
    p = subprocess.run([sys.executable, "-c", OPENBLAS_PROBE, lib.group(1)], env=child_env(threads),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    got = dict(re.findall(r"^PROBE (\w+) (.*)$", p.stdout, re.M))
    if "openblas_get_corename" not in got:
        return None
    return "core %s (%s, %s)" % (got["openblas_get_corename"], lib.group(1),
                                got.get("openblas_get_config", "?"))


def gather_info(opts, rill_line, ort, paddle):
    try:
        with open("/proc/cpuinfo") as f:
            cpu = parse_cpuinfo(f.read())
    except OSError:
        cpu = {"model": "unknown", "flags": set(), "cpus": "?"}
    try:
        loadavg = " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        loadavg = "?"
    return {"cpu_model": cpu["model"], "cpus": cpu["cpus"], "flags": cpu["flags"],
            "loadavg": loadavg, "env": {k: os.environ.get(k) for k in ENV_SHOWN},
            "threads": opts.threads, "rill": rill_line, "ort": ort, "paddle": paddle}


# ---------------------------------------------------------------- report ------

def fmt(v, spec="%.4g"):
    return "-" if v is None else spec % v


def spread_fields(name, s, rounds_name=None):
    """RATIO line fields of one ratio's spread: name=median, name_q1, name_q3, name_min,
    name_max, and the number of rounds (rounds_name, default name_rounds)."""
    rounds_name = rounds_name or name + "_rounds"
    if not s:
        return "%s=- %s=0" % (name, rounds_name)
    return "%s=%.3f %s_q1=%.3f %s_q3=%.3f %s_min=%.3f %s_max=%.3f %s=%d" % (
        name, s["median"], name, s["q1"], name, s["q3"], name, s["min"], name, s["max"],
        rounds_name, s["n"])


def spread_text(s):
    """A ratio's median with its interquartile range and extremes, for the human table."""
    if not s:
        return "-"
    return "%.2f [%.2f-%.2f] (%.2f-%.2f)" % (s["median"], s["q1"], s["q3"], s["min"], s["max"])


def report(models, results, reasons, peers_on, rounds):
    runtimes = [p for p in PEERS if p in peers_on] + ["rill"]
    print("\n==== inference: rill vs ONNX Runtime / Paddle Inference "
          "(batch 1 latency, batch 16 throughput, peak memory; medians of %d rounds) ====" % rounds)
    for rt in runtimes:
        if rt in reasons:
            print("%s skipped: %s" % (rt, reasons[rt]))
    for m in models:
        for rt in runtimes:
            r = results.get((rt, m), {})
            if not r:
                continue
            if "error" in r:
                print("SKIP runtime=%s model=%s reason=%s" % (rt, m, json.dumps(r["error"])))
                continue
            s = summary(r)
            print("RESULT runtime=%s model=%s b1_ms=%s b1_p90_ms=%s b16_ips=%s peak_mb=%s rounds=%d" % (
                rt, m, fmt(s.get("b1_ms"), "%.4f"), fmt(s.get("b1_p90_ms"), "%.4f"),
                fmt(s.get("b16_ips"), "%.1f"), fmt(s.get("peak_mb"), "%.2f"), s.get("rounds", 0)))
    print()
    print("%-26s %-7s %10s %10s %11s %9s %6s" % ("model", "runtime", "b1 ms", "b1 p90", "b16 img/s",
                                                "peak MB", "rounds"))
    for m in models:
        for rt in runtimes:
            r = results.get((rt, m), {})
            if r and "error" not in r:
                s = summary(r)
                print("%-26s %-7s %10s %10s %11s %9s %6d" % (
                    m, rt, fmt(s.get("b1_ms")), fmt(s.get("b1_p90_ms")), fmt(s.get("b16_ips"), "%.1f"),
                    fmt(s.get("peak_mb"), "%.2f"), s.get("rounds", 0)))
    print("\nratios: median over the rounds of each round's ratio [first-third quartile] "
          "(lowest-highest)\n  latency: rill / the round's fastest peer, target <= 1.00; "
          "throughput: rill / peer, higher is better; memory: rill / peer, target < 1.00")
    print("%-26s %-12s %-28s %-28s %-28s %8s %8s  %s" % (
        "model", "fastest peer", "lat", "thr/ort", "thr/pd", "mem/ort", "mem/pd", "targets"))
    met_lat = met_mem = counted = 0
    for m in models:
        q = model_ratios(results, m, peers_on)
        if not q or not q["lat"]:
            rr = results.get(("rill", m), {})
            print("%-26s %s" % (m, "no ratio: " + ("rill not measured" if not rr or "error" in rr
                                                    else "no peer measured")))
            continue
        counted += 1
        lat_ok = q["lat"]["median"] <= 1.0
        mems = [q["mem_" + p] for p in PEERS if q["mem_" + p] is not None]
        mem_ok = bool(mems) and all(v < 1.0 for v in mems)
        met_lat += lat_ok
        met_mem += mem_ok
        verdict = "latency %s, memory %s" % ("met" if lat_ok else "MISSED", "met" if mem_ok else "MISSED")
        print("%-26s %-12s %-28s %-28s %-28s %8s %8s  %s" % (
            m, "%s %d/%d" % (q["fastest"], q["fastest_rounds"], q["lat"]["n"]), spread_text(q["lat"]),
            spread_text(q["thr_ort"]), spread_text(q["thr_paddle"]), fmt(q["mem_ort"], "%.2fx"),
            fmt(q["mem_paddle"], "%.2fx"), verdict))
        print("RATIO model=%s fastest_peer=%s %s %s %s mem_vs_ort=%s mem_vs_paddle=%s "
              "latency_target=%s memory_target=%s" % (
                  m, q["fastest"], spread_fields("lat_vs_fastest", q["lat"], "lat_rounds"),
                  spread_fields("thr_vs_ort", q["thr_ort"]), spread_fields("thr_vs_paddle", q["thr_paddle"]),
                  fmt(q["mem_ort"], "%.3f"), fmt(q["mem_paddle"], "%.3f"),
                  "met" if lat_ok else "missed", "met" if mem_ok else "missed"))
    print("\ntargets: latency <= fastest peer (median of per-round ratios) on %d of %d models; "
          "less memory than every peer on %d of %d (models with rill and at least one peer "
          "measured)" % (met_lat, counted, met_mem, counted))


# ---------------------------------------------------------------- main --------

def find_models(root, only):
    out = {}
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        if os.path.isfile(os.path.join(d, "refs", "meta.json")) and (not only or name in only):
            out[name] = d
    return out


def empty_result(rounds):
    return {"rounds": {ph: [None] * rounds for ph in PHASES}}


def external_result(figs):
    """A rill result from figures read from lines (one dict per run of --rill-cmd)."""
    res = {"rounds": {ph: [] for ph in PHASES}, "version": "external"}
    for f in figs:
        res["rounds"]["b1"].append({"ms": f["b1_ms"], "p90": f.get("b1_p90_ms")}
                                   if f.get("b1_ms") else None)
        res["rounds"]["b16"].append({"ms": 16e3 / f["b16_ips"]} if f.get("b16_ips") else None)
    peaks = [f["peak_mb"] for f in figs if f.get("peak_mb") is not None]
    if peaks:
        res["peak_mb"] = min(peaks)
    if not any(res["rounds"]["b1"]):
        res = {"error": "no figures for it"}
    return res


def start_peers(m, d, inputs, onnx, peers_on, opts, results):
    """One worker per (peer, batch size) of model m, each loaded, checked and warm."""
    workers = {}
    for p in peers_on:
        if p == "ort" and not onnx.get(m):
            results[(p, m)] = {"error": "not converted to ONNX"}
            continue
        res = empty_result(opts.rounds)
        for ph in PHASES:
            w = PeerWorker(p, d, inputs, onnx.get(m), ph, opts)
            r = w.ready()
            if "error" in r:
                w.close()
                for q in PHASES:
                    if (p, q) in workers:
                        workers.pop((p, q)).close()
                res = {"error": r["error"] if ph == "b1" else "batch 16: " + r["error"]}
                break
            workers[(p, ph)] = w
            res["version"] = w.version
        results[(p, m)] = res
    return workers


def measure_model(m, d, inputs, meta, nbytes, onnx, peers_on, rill, opts, work, results):
    """All the rounds of one model: the runtimes take turns in short slices (module text)."""
    t = time.monotonic()
    workers = start_peers(m, d, inputs, onnx, peers_on, opts, results)
    rill_st = None
    if rill:
        rill_st = rill.start(m, d, inputs, meta, nbytes, work)
        if "error" in rill_st:
            results[("rill", m)] = {"error": rill_st["error"]}
            rill_st = None
        else:
            results[("rill", m)] = empty_result(opts.rounds)
            results[("rill", m)]["version"] = "rill run (CLI)"
            results[("rill", m)]["peak_mb"] = rill_st.get("peak_mb")
    order = (["rill"] if rill_st else []) + [p for p in peers_on if (p, "b1") in workers]
    errors = {}
    half = opts.budget / 2
    for k in range(opts.rounds if order else 0):
        turn = order[k % len(order):] + order[:k % len(order)]  # who goes first rotates
        for ph in PHASES:
            for rt in turn:
                if rt == "rill":
                    if (rt, ph) in errors:
                        continue
                    fig = rill.slice(rill_st, ph, half)
                else:
                    w = workers.get((rt, ph))
                    if not w:
                        continue
                    fig = w.time_slice(half)
                    time.sleep(opts.settle)  # the peer's threads stop spinning before the next
                if "error" in fig:
                    errors[(rt, ph)] = "round %d: %s" % (k + 1, fig["error"])
                    print("  %s %s %s: %s" % (rt, m, ph, errors[(rt, ph)]))
                    if rt != "rill":
                        workers.pop((rt, ph)).close()
                    continue
                results[(rt, m)]["rounds"][ph][k] = fig
    peaks = {}
    for (p, ph), w in sorted(workers.items()):
        peaks.setdefault(p, []).append(w.peak().get("peak_mb"))
    for p, vals in peaks.items():  # the larger of the two batch sizes', when both have one
        if len(vals) == len(PHASES) and None not in vals:
            results[(p, m)]["peak_mb"] = max(vals)
    for rt in order:
        res = results[(rt, m)]
        if not any(res["rounds"]["b1"]):
            results[(rt, m)] = {"error": errors.get((rt, "b1"), "no round measured")}
    print("%s: %d rounds of %s in %.0f s" % (m, opts.rounds, "/".join(order) or "nothing",
                                            time.monotonic() - t), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=os.path.join(ROOT, "..", "shared", "models"))
    ap.add_argument("--only", nargs="*", help="model names to run (default: all)")
    ap.add_argument("--peers", default="ort,paddle", help="comma list of peers (ort, paddle)")
    ap.add_argument("--rill-bin", default=os.path.join(ROOT, "build", "rill"))
    ap.add_argument("--rill-cmd", help="a command printing rill's lines (e.g. build/bench_models)")
    ap.add_argument("--rill-results", help="a file holding rill's lines")
    ap.add_argument("--no-rill", action="store_true")
    ap.add_argument("--rounds", type=int, default=15,
                    help="rounds per model; each runtime gets one slice per batch size a round")
    ap.add_argument("--budget", type=float, default=0.5,
                    help="seconds of timed runs per runtime, model and round, half per batch size")
    ap.add_argument("--settle", type=float, default=0.25,
                    help="seconds to wait after a peer's slice, for its threads to stop spinning")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=300, help="per child process step, seconds")
    ap.add_argument("--work", help="keep converted models and inputs here (default: a temp dir)")
    # worker mode (internal)
    ap.add_argument("--worker", choices=PEERS, help=argparse.SUPPRESS)
    ap.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    ap.add_argument("--inputs", help=argparse.SUPPRESS)
    ap.add_argument("--onnx", help=argparse.SUPPRESS)
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0
    if args.rounds < 1:
        print("--rounds must be at least 1")
        return 2

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
    rill_line = None
    if args.no_rill:
        reasons["rill"] = "--no-rill"
    elif args.rill_results:
        with open(args.rill_results) as f:
            got = parse_rill_lines(f.read())
        external = {m: [got[m]] for m in got}
        rill_line = "figures from %s (its ISA path is not known here)" % args.rill_results
    elif args.rill_cmd:
        external = {}
        for _ in range(args.rounds):
            p = subprocess.run(args.rill_cmd, shell=True, env=child_env(args.threads),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            got = parse_rill_lines(p.stdout)
            if p.returncode != 0 and not got:
                reasons["rill"] = "%s failed (exit %d)" % (args.rill_cmd, p.returncode)
            for m, fig in got.items():
                external.setdefault(m, []).append(fig)
        rill_line = "figures from %s, run %d times before the peers (its ISA path is not " \
                    "known here)" % (args.rill_cmd, args.rounds)
    elif os.access(args.rill_bin, os.X_OK):
        rill = RillCli(args.rill_bin, args)
        print("rill: %s run (%s)" % (args.rill_bin, "--bench" if rill.has_bench else "--repeat"))
        if not rill.gnu_time:
            print("rill peak memory not measured: %s (GNU time) is missing" % GNU_TIME)
        first = next(iter(models))
        line = rill.isa_line(models[first], inputs[first], metas[first])
        rill_line = "%s (%s)" % (line or "the CLI printed no cpu: line", args.rill_bin)
        blas = probe_openblas(args.rill_bin, args.threads)
        if blas:
            rill_line += "; its OpenBLAS: " + blas
    else:
        reasons["rill"] = "%s not found (build first)" % args.rill_bin
    if rill_line is None:
        rill_line = "not measured (%s)" % reasons.get("rill", "?")

    ort_info = probe_ort(args.threads) if "ort" in peers_on else "not measured (%s)" % reasons.get("ort", "not asked")
    if "paddle" in peers_on:
        first = next(iter(models))
        pd_info = probe_paddle(models[first], inputs[first], args.threads, args.timeout)
    else:
        pd_info = "not measured (%s)" % reasons.get("paddle", "not asked")
    print("\n".join(header_lines(gather_info(args, rill_line, ort_info, pd_info))), flush=True)

    results = {}
    if external is not None:
        for m in models:
            results[("rill", m)] = external_result(external[m]) if m in external else \
                {"error": "%s has no line for it" % (args.rill_cmd or args.rill_results)}
    for m in models:
        measure_model(m, models[m], inputs[m], metas[m], nbytes[m], onnx, peers_on, rill, args,
                      work, results)
    report(list(models), results, reasons, peers_on, args.rounds)
    if rill and rill.cpu_lines:
        print("rill's --bench processes printed: %s" % "; ".join(
            "%s (%d)" % (k, v) for k, v in sorted(rill.cpu_lines.items())))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
