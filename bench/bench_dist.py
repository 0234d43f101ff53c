"""Sync-mode efficiency of parameter-server training on this one machine:

    efficiency = local step time (one process, whole batch)
                 / distributed step time (2 pservers x 2 trainers, each trainer
                   feeding half of every batch, sync mode)

for the MLP 784-1024-1024-10 (relu, softmax cross entropy, SGD) at batch 128 (--batch
picks another); the target is >= 0.85 for a local step of at least 10 ms. Local runs and jobs alternate for --rounds rounds; the median ratio
and its spread (min..max over rounds) are printed.

Where the rest goes, from timestamps around exe.run in each trainer (a job runs three
phases in a row, the same in both trainers so the pservers' barriers line up):
  compute   the trainer's forward and backward on its half batch alone (the local
            program without its optimizer ops; no communication);
  full      the transpiled trainer program (compute, send, barriers, recv, concat);
  comm      the trainer program's communication ops alone (split_byref, send,
            send_barrier, recv, fetch_barrier, concat) on gradients fed as zeros.
exposed = full - compute is the time the step spends beyond its compute (transfers,
waiting at the barriers, the pservers' optimizer); overlap = (compute + comm - full) /
comm is the fraction of the communication hidden under compute (0: none, 1: all).
rill's trainers then run a few steps under the profiler, and "hidden" is measured on
that timeline too: the share of the time some transfer (a send or recv of a variable)
is in flight during which the trainer also runs a compute op.

With Paddle Fluid 1.8.5 available (--paddle-python PY or RILL_BENCH_PADDLE_PYTHON, e.g.
/tmp/pd18/bin/python; PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python is set for it) the
same processes run with `import paddle.fluid as fluid` in the same rounds and both
ratios are printed. Paddle is never required.

With --against LIB (another build of librill.so, e.g. of an older commit) rill also runs
on LIB, as "against", in the same rounds, and the quotient of the two efficiencies is
printed.

    RILL_LIB=build/librill.so PYTHONPATH=python python3 bench/bench_dist.py [--rounds 5]
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
SIZES = (784, 1024, 1024, 10)
BATCH = 128
COMM_OPS = ('split_byref', 'send', 'send_barrier', 'recv', 'fetch_barrier', 'concat')
OPT_OPS = ('sgd',)


# ------------------------------------------------------------------ worker side ----

def _fluid(framework):
    if framework == 'paddle':
        import paddle.fluid as fluid
        return fluid
    import rill as fluid
    return fluid


def _build(fluid):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name='x', shape=[SIZES[0]], dtype='float32')
        y = fluid.layers.data(name='y', shape=[1], dtype='int64')
        h = x
        for n in SIZES[1:-1]:
            h = fluid.layers.fc(input=h, size=n, act='relu')
        p = fluid.layers.fc(input=h, size=SIZES[-1], act='softmax')
        loss = fluid.layers.mean(fluid.layers.cross_entropy(input=p, label=y))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main, startup, loss


def _keep_only(program, keep):
    """program (cloned) with only the ops of block 0 for which keep(op) is true."""
    prog = program.clone()
    block = prog.global_block()
    for i in reversed(range(len(block.ops))):
        if not keep(block.ops[i]):
            block._remove_op(i)
    return prog


def _proc_cpu_ms(pid):
    """CPU time (user + system, all threads) process pid has used, in ms."""
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1e3 / os.sysconf('SC_CLK_TCK')


def _times(exe, program, feed, fetch, steps, cpu=None, pids=()):
    """Wall ms of each step; with cpu (a dict), cpu['self'] and cpu['servers'] get the CPU
    ms per step this process and the processes pids used over the steps."""
    out = []
    c0, s0 = time.process_time(), sum(_proc_cpu_ms(p) for p in pids)
    for _ in range(steps):
        t = time.perf_counter()
        exe.run(program, feed=feed, fetch_list=fetch)
        out.append((time.perf_counter() - t) * 1e3)
    if cpu is not None:
        cpu['self'] = (time.process_time() - c0) * 1e3 / steps
        cpu['servers'] = (sum(_proc_cpu_ms(p) for p in pids) - s0) / steps
    return out


def _union(intervals):
    out = []
    for b, e in sorted(intervals):
        if out and b <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([b, e])
    return out


def _hidden(fluid, exe, prog, feed, loss, tid, steps=10):
    """Share of the transfers' time (union of the profiler's rpc intervals) that the
    trainer spends running compute ops too, over `steps` profiled steps."""
    import tempfile
    import rill.profiler as prof
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'trace%d.json' % tid)
        prof.start_profiler('CPU')
        for _ in range(steps):
            exe.run(prog, feed=feed, fetch_list=[loss])
        prof.stop_profiler(profile_path=path, print_summary=False)
        with open(path) as f:
            trace = json.load(f)
    events = trace['traceEvents'] if isinstance(trace, dict) else trace
    compute, xfer, begun = [], [], {}
    for e in events:
        ph = e.get('ph')
        if ph == 'X' and e.get('cat') == 'op' and e.get('name') not in COMM_OPS + (
                'send_barrier', 'fetch_barrier'):
            compute.append((e['ts'], e['ts'] + e['dur']))
        elif ph == 'b' and e.get('cat') == 'rpc':
            begun[e['id']] = e['ts']
        elif ph == 'e' and e.get('cat') == 'rpc' and e['id'] in begun:
            xfer.append((begun.pop(e['id']), e['ts']))
    xfer, compute = _union(xfer), _union(compute)
    total = sum(e - b for b, e in xfer)
    both, j = 0.0, 0
    for b, e in xfer:
        while j < len(compute) and compute[j][1] <= b:
            j += 1
        k = j
        while k < len(compute) and compute[k][0] < e:
            both += min(e, compute[k][1]) - max(b, compute[k][0])
            k += 1
    return both / total if total > 0 else float('nan')


def _comm_feed(program, np):
    """Zeros for every input of the communication ops that none of them writes."""
    block = program.global_block()
    written, feed = set(), {}
    for op in block.ops:
        for name in op.input_arg_names:
            if name not in written and name not in feed and name in block.vars:
                v = block.var(name)
                if v.persistable:
                    continue
                shape = [d if d > 0 else 1 for d in v.shape]
                feed[name] = np.zeros(shape, 'float32')
        written.update(op.output_arg_names)
    return feed


def worker(a):
    import numpy as np
    fluid = _fluid(a.framework)
    main, startup, loss = _build(fluid)
    rng = np.random.RandomState(0)
    x = rng.rand(a.batch, SIZES[0]).astype('float32')
    y = rng.randint(0, SIZES[-1], (a.batch, 1)).astype('int64')
    exe = fluid.Executor(fluid.CPUPlace())
    result = {}
    if a.worker == 'local':
        exe.run(startup)
        feed = {'x': x, 'y': y}
        _times(exe, main, feed, [loss], a.warmup)
        cpu = {}
        result['local'] = _times(exe, main, feed, [loss], a.steps, cpu)
        result['local_cpu'] = cpu['self']
        print('RESULT ' + json.dumps(result), flush=True)
        return 0
    role = os.environ['PADDLE_TRAINING_ROLE']
    trainers = int(os.environ['PADDLE_TRAINERS_NUM'])
    tid = int(os.environ.get('PADDLE_TRAINER_ID', '0'))
    compute = _keep_only(main, lambda op: op.type not in OPT_OPS)
    t = fluid.DistributeTranspiler()
    t.transpile(tid, program=main, pservers=os.environ['PADDLE_PSERVERS_IP_PORT_LIST'],
                trainers=trainers, sync_mode=True, startup_program=startup)
    if role == 'PSERVER':
        ep = os.environ['PADDLE_CURRENT_ENDPOINT']
        prog = t.get_pserver_program(ep)
        exe.run(t.get_startup_program(ep, prog))
        exe.run(prog)
        return 0
    exe.run(startup)
    prog = t.get_trainer_program()
    half = a.batch // trainers
    feed = {'x': x[tid * half:(tid + 1) * half], 'y': y[tid * half:(tid + 1) * half]}
    comm = _keep_only(prog, lambda op: op.type in COMM_OPS)
    _times(exe, prog, feed, [loss], a.warmup)
    result['compute'] = _times(exe, compute, feed, [loss], a.steps)
    pids = [int(p) for p in os.environ.get('RILL_BENCH_SERVER_PIDS', '').split(',') if p]
    cpu = {}
    result['full'] = _times(exe, prog, feed, [loss], a.steps, cpu, pids if tid == 0 else ())
    result['full_cpu'] = cpu['self']
    if tid == 0:
        result['servers_cpu'] = cpu['servers']
    result['comm'] = _times(exe, comm, _comm_feed(comm, np), [], a.steps)
    if a.framework == 'rill':
        result['hidden'] = _hidden(fluid, exe, prog, feed, loss, tid)
    print('RESULT ' + json.dumps(result), flush=True)
    if hasattr(exe, 'close'):
        exe.close()
    return 0


# ------------------------------------------------------------------ driver side ----

def _free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(('127.0.0.1', 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _env(python, framework, lib=None):
    env = dict(os.environ)
    if lib:
        env['RILL_LIB'] = lib
    if framework == 'paddle':
        env['PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION'] = 'python'
        for k in ('RILL_LIB', 'PYTHONPATH'):
            env.pop(k, None)
    else:
        env['PYTHONPATH'] = os.path.join(ROOT, 'python') + os.pathsep + env.get('PYTHONPATH', '')
    return env


def _result(out):
    for line in out.decode('utf-8', 'replace').splitlines():
        if line.startswith('RESULT '):
            return json.loads(line[7:])
    return None


def _median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def run_local(python, framework, a, lib=None):
    cmd = [python, HERE, '--worker', 'local', '--framework', framework,
           '--steps', str(a.steps), '--warmup', str(a.warmup), '--batch', str(a.batch)]
    r = subprocess.run(cmd, env=_env(python, framework, lib), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=a.timeout)
    res = _result(r.stdout)
    if r.returncode != 0 or res is None:
        raise RuntimeError('%s local run failed (%d): %s' % (
            framework, r.returncode, r.stderr.decode('utf-8', 'replace')[-2000:]))
    return _median(res['local']), res['local_cpu']


def run_job(python, framework, a, servers=2, trainers=2, ipc=True, lib=None):
    """One job; returns trainer 0's and 1's results. Pservers still running once the
    trainers are done get --server-grace seconds, then are killed (Paddle 1.8.5's never
    exit); a rill pserver that had to be killed is an error."""
    eps = ','.join('127.0.0.1:%d' % p for p in _free_ports(servers))
    base = _env(python, framework, lib)
    base.update(PADDLE_PSERVERS_IP_PORT_LIST=eps, PADDLE_TRAINERS_NUM=str(trainers))
    if not ipc:  # rill over TCP even on one machine (the same-host socket turned off)
        base['RILL_RPC_IPC'] = '0'
    if framework == 'rill':  # as rill.distributed.launch: the processes share the cores
        from rill.distributed.launch import threads_per_process
        base.setdefault('RILL_NUM_THREADS', str(threads_per_process(servers + trainers)))
    cmd = [python, HERE, '--worker', 'job', '--framework', framework,
           '--steps', str(a.steps), '--warmup', str(a.warmup), '--batch', str(a.batch)]
    procs = []
    try:
        for ep in eps.split(','):
            env = dict(base, PADDLE_TRAINING_ROLE='PSERVER', TRAINING_ROLE='PSERVER',
                       PADDLE_CURRENT_ENDPOINT=ep, PADDLE_PORT=ep.rsplit(':', 1)[1])
            procs.append(('pserver', subprocess.Popen(
                cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
        servers_pids = ','.join(str(p.pid) for _, p in procs)
        for i in range(trainers):
            env = dict(base, PADDLE_TRAINING_ROLE='TRAINER', TRAINING_ROLE='TRAINER',
                       PADDLE_TRAINER_ID=str(i), RILL_BENCH_SERVER_PIDS=servers_pids)
            procs.append(('trainer', subprocess.Popen(
                cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
        deadline = time.monotonic() + a.timeout
        results = []
        for role, p in procs:
            if role != 'trainer':
                continue
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            res = _result(out)
            if p.returncode != 0 or res is None:
                raise RuntimeError('%s trainer failed (%d): %s' % (
                    framework, p.returncode, err.decode('utf-8', 'replace')[-2000:]))
            results.append(res)
        for role, p in procs:
            if role != 'pserver':
                continue
            try:
                _, err = p.communicate(timeout=a.server_grace)
                if p.returncode != 0:
                    raise RuntimeError('%s pserver exited with %d: %s' % (
                        framework, p.returncode, err.decode('utf-8', 'replace')[-2000:]))
            except subprocess.TimeoutExpired:
                if framework == 'rill':
                    raise RuntimeError('rill pserver still running %gs after the trainers '
                                       'closed' % a.server_grace)
        return results
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()


def summarize(rounds):
    """rounds: [(local_ms, [trainer results])] -> dict of medians and spreads."""
    ratios, dist, local, comp, exposed, comm, overlap = [], [], [], [], [], [], []
    hidden = []
    lcpu, jcpu, scpu, work = [], [], [], []
    for local_ms, local_cpu, trs in rounds:
        job_cpu = sum(r['full_cpu'] for r in trs) + sum(r.get('servers_cpu', 0.0) for r in trs)
        lcpu.append(local_cpu)
        jcpu.append(job_cpu)
        scpu.append(sum(r.get('servers_cpu', 0.0) for r in trs))
        work.append(local_cpu / job_cpu if job_cpu > 0 else float('nan'))
        full = max(_median(r['full']) for r in trs)  # sync: the slower trainer sets the pace
        c = max(_median(r['compute']) for r in trs)
        m = max(_median(r['comm']) for r in trs)
        local.append(local_ms)
        dist.append(full)
        ratios.append(local_ms / full)
        comp.append(c)
        exposed.append(full - c)
        comm.append(m)
        overlap.append(min(1.0, max(0.0, (c + m - full) / m)) if m > 0 else float('nan'))
        hidden.extend(r['hidden'] for r in trs if 'hidden' in r)
    return dict(ratio=_median(ratios), ratio_min=min(ratios), ratio_max=max(ratios),
                local=_median(local), dist=_median(dist), compute=_median(comp),
                exposed=_median(exposed), comm=_median(comm), overlap=_median(overlap),
                hidden=_median(hidden) if hidden else None,
                local_cpu=_median(lcpu), job_cpu=_median(jcpu), servers_cpu=_median(scpu),
                work=_median(work), work_min=min(work), work_max=max(work))


def report(name, s):
    print('%-8s efficiency %.3f (median of rounds; spread %.3f..%.3f): local step %.2f ms, '
          'distributed step %.2f ms' % (name, s['ratio'], s['ratio_min'], s['ratio_max'],
                                       s['local'], s['dist']))
    print('%-6s   trainer step: compute %.2f ms, beyond compute %.2f ms (%.0f%% of the step); '
          'communication alone %.2f ms, overlap %.2f' % (
              '', s['compute'], s['exposed'], 100.0 * s['exposed'] / s['dist'], s['comm'],
              s['overlap']))
    if s.get('hidden') is not None:
        print('%-6s   on the profiler\'s timeline (10 steps per trainer): transfers in flight '
              'beside a compute op %.0f%% of their time' % ('', 100.0 * s['hidden']))
    print('%-6s   CPU per step: local %.2f ms, job %.2f ms (trainers %.2f, pservers %.2f); '
          'work ratio local/job %.3f (spread %.3f..%.3f)' % (
              '', s['local_cpu'], s['job_cpu'], s['job_cpu'] - s['servers_cpu'],
              s['servers_cpu'], s['work'], s['work_min'], s['work_max']))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--worker', choices=['local', 'job'], help=argparse.SUPPRESS)
    ap.add_argument('--framework', choices=['rill', 'paddle'], default='rill',
                    help=argparse.SUPPRESS)
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--batch', type=int, default=BATCH,
                    help='rows per step, split evenly between the trainers (default %d; the '
                         'efficiency target is for a local step of at least 10 ms, which on a '
                         'fast machine needs more rows)' % BATCH)
    ap.add_argument('--steps', type=int, default=20, help='timed steps per phase')
    ap.add_argument('--warmup', type=int, default=5)
    ap.add_argument('--timeout', type=float, default=180.0, help='seconds per run')
    ap.add_argument('--server-grace', type=float, default=20.0)
    ap.add_argument('--tcp-too', action='store_true',
                    help='also run rill with the same-host socket off (RILL_RPC_IPC=0), '
                         'as "rill-tcp", in the same rounds')
    ap.add_argument('--against', metavar='LIB',
                    help='also run rill on this librill.so, as "against", in the same rounds')
    ap.add_argument('--paddle-python', default=os.environ.get('RILL_BENCH_PADDLE_PYTHON'),
                    help='a Python with paddlepaddle 1.8 (default: $RILL_BENCH_PADDLE_PYTHON)')
    a = ap.parse_args()
    if a.worker:
        return worker(a)

    sides = []
    sys.path.insert(0, os.path.join(ROOT, 'python'))
    import rill.distributed as dist
    missing = dist.missing_kernels()
    if missing:
        print('rill: distributed figure not measured: this build has no CPU kernel for %s '
              '(the parameter-server runtime)' % ', '.join(missing))
    else:
        sides.append(('rill', sys.executable))
        if a.tcp_too:
            sides.append(('rill-tcp', sys.executable))
        if a.against:
            sides.append(('against', sys.executable))
    if a.paddle_python:
        ok = subprocess.run([a.paddle_python, '-c', 'import paddle.fluid'],
                            env=_env(a.paddle_python, 'paddle'), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode == 0
        if ok:
            sides.append(('paddle', a.paddle_python))
        else:
            print('paddle: skipped: %s cannot import paddle.fluid' % a.paddle_python)
    else:
        print('paddle: skipped (set RILL_BENCH_PADDLE_PYTHON or --paddle-python to a Python '
              'with paddlepaddle 1.8 to run it beside)')
    if not sides:
        return 0
    print('MLP %s, batch %d (each of 2 trainers feeds %d), 2 pservers, sync mode, SGD; '
          '%d rounds of %d timed steps per phase' % (
              '-'.join(map(str, SIZES)), a.batch, a.batch // 2, a.rounds, a.steps), flush=True)
    rounds = {name: [] for name, _ in sides}
    for r in range(a.rounds):
        for name, py in (sides if r % 2 == 0 else sides[::-1]):  # local, then the job
            framework = 'paddle' if name == 'paddle' else 'rill'
            lib = os.path.abspath(a.against) if name == 'against' else None
            local_ms, local_cpu = run_local(py, framework, a, lib)
            trs = run_job(py, framework, a, ipc=name != 'rill-tcp', lib=lib)
            rounds[name].append((local_ms, local_cpu, trs))
            print('  round %d %-6s local %.2f ms, distributed %.2f ms' % (
                r + 1, name, local_ms, max(_median(t['full']) for t in trs)), flush=True)
    results = {}
    for name, _ in sides:
        results[name] = summarize(rounds[name])
        report(name, results[name])
    if 'rill' in results and 'rill-tcp' in results:
        print('rill over the same-host socket against rill over TCP: distributed step %.2f ms '
              'against %.2f ms (ratio %.3f)' % (results['rill']['dist'], results['rill-tcp']['dist'],
                                                results['rill-tcp']['dist'] / results['rill']['dist']))
    if 'rill' in results and 'against' in results:
        q = [x[0] / x[1] for x in zip(*[[loc / max(_median(t['full']) for t in trs)
                                          for loc, _, trs in rounds[k]]
                                         for k in ('rill', 'against')])]
        print('rill against %s: efficiency %.3f against %.3f; quotient of the same rounds %.3f '
              '(spread %.3f..%.3f)' % (a.against, results['rill']['ratio'],
                                       results['against']['ratio'], _median(q), min(q), max(q)))
    print('RESULT ' + ' '.join('%s_efficiency=%.3f' % (k, v['ratio'])
                               for k, v in results.items()))
    return 0


if __name__ == '__main__':
    sys.exit(main())
