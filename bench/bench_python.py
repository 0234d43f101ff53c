"""The Python package's overhead (python/rill over ctypes):

1. one Executor.run on a tiny program (feed one float, scale it, fetch it), in
   microseconds, against the bare rill_executor_run call through ctypes with every
   argument prepared in advance (the floor of crossing into C from Python);
2. one training step of the MLP 784-512-512-10 (relu, batch 128, softmax cross entropy,
   SGD) built with rill.layers and run with Executor.run, against the same step driven
   from C by bench_train (its "RESULT mlp_ms=" line), run in the same invocation;
3. one rill.inference.Predictor.run of ../shared/models/mnist_conv_bn_etienne (batch 1
   and 64) against the bare rill_predictor_run call through ctypes on the same
   predictor.
4. building a 1,000-op program (333 fc layers with relu, then mean) with rill.layers and
   calling SGD(...).minimize on it, against the same program built through the C API by
   bench_build (every variable and op added and each op inferred, then the backward
   pass and the sgd ops), in interleaved rounds of the same invocation.

Each side is measured in interleaved rounds and the best round kept (the machine is
shared). Usage: bench_python.py [BUILD_DIR] [--build-only]  (RILL_LIB and
PYTHONPATH=python set); --build-only runs part 4 alone."""
import ctypes
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'python'))
import rill  # noqa: E402
from rill import core  # noqa: E402


def best_per_call(fn, calls, rounds):
    best = float('inf')
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t) / calls)
    return best


def tiny():
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = rill.layers.data('x', [1], append_batch_size=False)
        y = rill.layers.scale(x, 2.0)
    exe = rill.Executor(rill.CPUPlace())
    xv = np.ones(1, 'float32')
    feed = {'x': xv}
    fetch = [y]

    def py_run():
        exe.run(main, feed=feed, fetch_list=fetch)

    py_run()
    cprog = main._c()
    scope = rill.global_scope()._c
    t = core.Tensor.from_numpy(xv)
    fn = (ctypes.c_char_p * 1)(b'x')
    ft = (ctypes.c_void_p * 1)(t._h)
    tn = (ctypes.c_char_p * 1)(y.name.encode())
    outs = (ctypes.c_void_p * 1)()
    run, destroy = core._exec_run, core._tensor_destroy
    h, ph, sh = exe._c._h, cprog._h, scope._h

    def raw_run():
        st = run(h, ph, sh, fn, ft, 1, tn, 1, outs)
        if st:
            core.check(st)
        destroy(outs[0])

    raw_run()
    py = raw = float('inf')
    for _ in range(5):
        py = min(py, best_per_call(py_run, 2000, 1))
        raw = min(raw, best_per_call(raw_run, 2000, 1))
    print('Executor.run, tiny program (feed 1 float, scale, fetch): %.1f us from Python, '
          '%.1f us bare ctypes call: ratio %.2f (target: at most 30 us)'
          % (py * 1e6, raw * 1e6, py / raw))
    return py


def mlp_step():
    """Best per-step seconds of Executor.run and of the bare ctypes call on the same
    program and scope, in interleaved rounds."""
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup), rill.unique_name.guard():
        x = rill.layers.data('x', [784])
        label = rill.layers.data('label', [1], dtype='int64')
        h = rill.layers.fc(x, 512, act='relu')
        h = rill.layers.fc(h, 512, act='relu')
        logits = rill.layers.fc(h, 10)
        loss = rill.layers.mean(rill.layers.softmax_with_cross_entropy(logits, label))
        rill.optimizer.SGD(0.01).minimize(loss)
    exe = rill.Executor(rill.CPUPlace())
    scope = rill.Scope()
    with rill.scope_guard(scope):
        exe.run(startup)
        rng = np.random.RandomState(0)
        xv = rng.rand(128, 784).astype('float32')
        yv = rng.randint(0, 10, (128, 1)).astype('int64')
        feed = {'x': xv, 'label': yv}
        step = lambda: exe.run(main, feed=feed, fetch_list=[loss])  # noqa: E731
        step()
        tx, ty = core.Tensor.from_numpy(xv), core.Tensor.from_numpy(yv)
        fn = core.names_array(['x', 'label'])
        ft = (ctypes.c_void_p * 2)(tx._h, ty._h)
        tn = core.names_array([loss.name])
        outs = (ctypes.c_void_p * 1)()
        h_exe, h_prog, h_scope = exe._c._h, main._c()._h, scope._c._h

        def raw():
            core.check(core._exec_run(h_exe, h_prog, h_scope, fn, ft, 2, tn, 1, outs))
            core._tensor_destroy(outs[0])

        raw()
        py = bare = float('inf')
        for _ in range(7):
            py = min(py, best_per_call(step, 5, 1))
            bare = min(bare, best_per_call(raw, 5, 1))
        return py, bare


def predictor():
    """(batch, Predictor.run seconds, bare rill_predictor_run seconds) per batch size."""
    from rill import inference
    path = os.path.join(ROOT, '..', 'shared', 'models', 'mnist_conv_bn_etienne')
    if not os.path.isdir(path):
        return []
    p = inference.Predictor(inference.Config(path, threads=1))
    name = p.get_input_names()[0]
    dims = p.input_spec(name)[1]
    rows = []
    for batch in (1, 64):
        xv = np.random.RandomState(0).rand(batch, *dims[1:]).astype('float32')
        feed = {name: xv}
        py_run = lambda: p.run(feed)  # noqa: E731
        t = core.Tensor.from_numpy(xv)
        fn = core.names_array([name])
        ft = (ctypes.c_void_p * 1)(t._h)
        outs = (ctypes.c_void_p * 1)()

        def raw():
            core.check(inference._pred_run(p._h, fn, ft, 1, outs))
            core._tensor_destroy(outs[0])

        py_run()
        raw()
        calls = 500 if batch == 1 else 20
        py = bare = float('inf')
        for _ in range(5):
            py = min(py, best_per_call(py_run, calls, 1))
            bare = min(bare, best_per_call(raw, calls, 1))
        rows.append((batch, py, bare))
    return rows


def c_step(build):
    exe = os.path.join(build, 'bench_train')
    if not os.access(exe, os.X_OK):
        return None
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith('RESULT '):
            fields = dict(kv.split('=') for kv in line.split()[1:])
            return float(fields['mlp_ms']) / 1e3
    return None


FC_LAYERS = 333  # 3 ops each (mul, elementwise_add, relu), plus mean: 1,000 forward ops


def build_and_minimize(keep_forward=False):
    """(main, forward, loss name) of the 1,000-op program, built and minimized; with
    keep_forward, forward is the serialized forward (main, startup) programs that
    bench_build replays (serializing is not part of the timed build), else None."""
    main, startup = rill.Program(), rill.Program()
    forward = None
    with rill.program_guard(main, startup), rill.unique_name.guard():
        h = rill.layers.data('x', [64])
        for _ in range(FC_LAYERS):
            h = rill.layers.fc(h, 64, act='relu')
        loss = rill.layers.mean(h)
        if keep_forward:
            forward = main.serialize_to_string(), startup.serialize_to_string()
        rill.optimizer.SGD(0.01).minimize(loss)
    return main, forward, loss.name


def c_build(build, forward, loss, rounds, tmp):
    exe = os.path.join(build, 'bench_build')
    if not os.access(exe, os.X_OK):
        return None, None
    paths = [os.path.join(tmp, n) for n in ('main.pdmodel', 'startup.pdmodel')]
    for path, data in zip(paths, forward):
        with open(path, 'wb') as f:
            f.write(data)
    out = subprocess.run([exe, paths[0], paths[1], loss, str(rounds)], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith('RESULT '):
            fields = dict(kv.split('=') for kv in line.split()[1:])
            return float(fields['build_ms']) / 1e3, int(fields['ops'])
    return None, None


def build_bench(build):
    import tempfile
    main, forward, loss = build_and_minimize(keep_forward=True)
    n_forward = len(rill.Program.parse_from_string(forward[0]).global_block().ops)
    py = c = float('inf')
    c_ops = None
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(5):
            t = time.perf_counter()
            main, _, _ = build_and_minimize()
            py = min(py, time.perf_counter() - t)
            got, c_ops = c_build(build, forward, loss, 3, tmp)
            if got is None:
                break
            c = min(c, got)
    n_ops = len(main.global_block().ops)
    if c_ops is None:
        print('Build %d ops and minimize: %.1f ms from Python; C side skipped: %s/bench_build '
              'is not built' % (n_forward, py * 1e3, build))
        return
    print('Build %d ops and minimize (%d ops in all): %.1f ms from Python, %.1f ms through the '
          'C API (bench_build, %d ops): ratio %.2f (target: at most 1.5)'
          % (n_forward, n_ops, py * 1e3, c * 1e3, c_ops, py / c))


def main():
    args = [a for a in sys.argv[1:] if a != '--build-only']
    build = args[0] if args else os.path.join(ROOT, 'build')
    if '--build-only' in sys.argv[1:]:
        build_bench(build)
        return
    tiny()
    py, bare = mlp_step()
    print('MLP 784-512-512-10 batch 128, one sgd step: %.2f ms from Python, %.2f ms bare ctypes '
          'call on the same program: ratio %.3f' % (py * 1e3, bare * 1e3, py / bare))
    c = c_step(build)
    if c is None:
        print('  C side skipped: %s/bench_train is not built' % build)
    else:
        print('  the same step from C (bench_train, its own process): %.2f ms: Python / C '
              'ratio %.3f' % (c * 1e3, py / c))
    for batch, py, bare in predictor():
        print('Predictor.run, mnist_conv_bn batch %d: %.1f us from Python, %.1f us bare '
              'ctypes call: ratio %.3f' % (batch, py * 1e6, bare * 1e6, py / bare))
    build_bench(build)


if __name__ == '__main__':
    main()
