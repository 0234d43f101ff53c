"""What cluster snapshots cost a parameter-server job, on this one machine: the job of
bench_dist.py (MLP 784-1024-1024-10, relu, softmax cross entropy, SGD, batch 128,
2 pservers x 2 trainers, sync mode), its program checkpointing itself through
`minimize(loss, checkpoint_config=fluid.io.CheckpointConfig(dir, every_n_steps=N))`.

1. Step time. Three jobs alternate in every round (their order rotating): no snapshot,
   a cluster snapshot every step, one every 10 steps. Each trainer runs --warmup steps,
   then --steps timed ones; a job's step time is the slower trainer's mean step (the
   snapshot steps included: with every 10 steps, 2 of the 20 timed steps snapshot).
   Also each job's CPU time per timed step: user + system time of every thread of its
   four processes (the trainers' own, and the pservers' from /proc/PID/stat), which a
   shared machine's other tenants disturb much less than the wall time. Each round's
   ratios are taken against the job without snapshots of the same round, and printed
   as the median over rounds with the quartiles, a 95% bootstrap interval of the median
   and min..max. Target: every step <= 1.05 (step time). --launches 0 skips part 2.

2. Recovery. A job writes a complete snapshot at step 10 (once, before the rounds).
   Then, every round, --launches (3) times in turn, the medians counting:
     plain      a job launched against an empty snapshot directory: the time from
                launching its processes to trainer 0 finishing its first step;
     recovery   the same launch against the directory holding the snapshot: to trainer
                0 finishing the first resumed step (step 11; pservers resume inside
                exe.run(pserver_program), trainers by fluid.io.load_checkpoint);
     load       fluid.io.load_persistables of the same model in one local process, from
                a directory written by save_persistables (the first call in a fresh
                process, timed around the call alone).
   recovery - plain is what resuming adds to starting a job; it is printed against
   load (ratio = (recovery - plain) / load). The files are in the page cache in both
   cases (just written).

Snapshots go to a temporary directory beside the build (the same disk; --dir picks
another), removed at the end.

With --against LIB (another build of librill.so, e.g. of an older commit, usable by
this tree's Python package) only part 1 runs, without the every-10 job: each round
times the job without snapshots and the job with one every step under $RILL_LIB and
under LIB, the two libraries' order alternating, and prints each library's ratio (and
job CPU per step) as the median over rounds with min..max, and their quotient.

    RILL_LIB=build/librill.so PYTHONPATH=python python3 bench/bench_dist_snapshot.py [--rounds 3]
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
from bench_dist import (BATCH, ROOT, SIZES, _env, _free_ports, _median,  # noqa: E402
                        _proc_cpu_ms, _result)

EVERY_RARE = 10
PREPARED_STEPS = 10


# ------------------------------------------------------------------ worker side ----

def _service_cpu_ms(pid):
    """{tid: CPU ms} of pid's threads named rill-* (its snapshot writers; thread.h)."""
    out = {}
    try:
        tids = os.listdir('/proc/%d/task' % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open('/proc/%d/task/%s/comm' % (pid, tid)) as f:
                if not f.read().startswith('rill-'):
                    continue
            with open('/proc/%d/task/%s/schedstat' % (pid, tid)) as f:
                out[tid] = int(f.read().split()[0]) / 1e6  # ns on the CPU
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
    return out


def _service_delta(before, after):
    return sum(v - before.get(t, 0.0) for t, v in after.items())


def _build(fluid, ckdir, every):
    """bench_dist.py's MLP; with ckdir it checkpoints itself every `every` steps."""
    config = None
    if ckdir:
        config = fluid.io.CheckpointConfig(ckdir, every_n_steps=every, max_to_keep=2)
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
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss, checkpoint_config=config)
    return main, startup, loss, config


def _data():
    import numpy as np
    rng = np.random.RandomState(0)
    return (rng.rand(BATCH, SIZES[0]).astype('float32'),
            rng.randint(0, SIZES[-1], (BATCH, 1)).astype('int64'))


def worker_load(a):
    """One local process: save_persistables (with --save) or a timed load_persistables."""
    import rill as fluid
    main, startup, _, _ = _build(fluid, None, 1)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    if a.save:
        fluid.io.save_persistables(exe, a.dir, main)
        return 0
    t = time.perf_counter()
    fluid.io.load_persistables(exe, a.dir, main)
    ms = (time.perf_counter() - t) * 1e3
    print('RESULT ' + json.dumps({'load': ms}), flush=True)
    exe.close()
    return 0


def worker_job(a):
    import rill as fluid
    t_import = time.monotonic()
    main, startup, loss, config = _build(fluid, a.dir, a.every)
    exe = fluid.Executor(fluid.CPUPlace())
    role = os.environ['PADDLE_TRAINING_ROLE']
    trainers = int(os.environ['PADDLE_TRAINERS_NUM'])
    tid = int(os.environ.get('PADDLE_TRAINER_ID', '0'))
    t = fluid.DistributeTranspiler()
    t.transpile(tid, program=main, pservers=os.environ['PADDLE_PSERVERS_IP_PORT_LIST'],
                trainers=trainers, sync_mode=True, startup_program=startup)
    if role == 'PSERVER':
        ep = os.environ['PADDLE_CURRENT_ENDPOINT']
        prog = t.get_pserver_program(ep)
        exe.run(t.get_startup_program(ep, prog))
        exe.run(prog)
        return 0
    x, y = _data()
    exe.run(startup)
    prog = t.get_trainer_program()
    half = BATCH // trainers
    feed = {'x': x[tid * half:(tid + 1) * half], 'y': y[tid * half:(tid + 1) * half]}
    result = {'t_import': t_import, 't_ready': time.monotonic()}
    if a.resume:
        c = time.monotonic()
        result['step'] = fluid.io.load_checkpoint(exe, config, prog).step
        result['load_checkpoint'] = (time.monotonic() - c) * 1e3
    c = time.monotonic()
    exe.run(prog, feed=feed, fetch_list=[loss])
    result['t_first'] = time.monotonic()
    result['first_step'] = (result['t_first'] - c) * 1e3
    for _ in range(max(0, a.warmup - 1)):
        exe.run(prog, feed=feed, fetch_list=[loss])
    pids = [int(p) for p in os.environ.get('RILL_BENCH_SERVER_PIDS', '').split(',')
            if p and tid == 0]
    steps = []
    c0, s0 = time.process_time(), sum(_proc_cpu_ms(p) for p in pids)
    w0 = {p: _service_cpu_ms(p) for p in [os.getpid()] + pids}
    for _ in range(a.steps):
        c = time.perf_counter()
        exe.run(prog, feed=feed, fetch_list=[loss])
        steps.append((time.perf_counter() - c) * 1e3)
    result['steps'] = steps
    if a.steps:  # CPU per step, every thread (the snapshot writers' too)
        result['cpu'] = (time.process_time() - c0) * 1e3 / a.steps
        result['servers_cpu'] = (sum(_proc_cpu_ms(p) for p in pids) - s0) / a.steps
        # of which the snapshot writing threads (the trainer's background thread, the
        # pservers' writers; not the short-lived threads they start to flush files)
        w1 = {p: _service_cpu_ms(p) for p in w0}
        result['writer_cpu'] = _service_delta(w0[os.getpid()], w1[os.getpid()]) / a.steps
        result['servers_writer_cpu'] = sum(_service_delta(w0[p], w1[p])
                                           for p in pids) / a.steps
    c = time.monotonic()
    exe.close()  # waits for this process's snapshot writes
    result['close'] = (time.monotonic() - c) * 1e3
    print('RESULT ' + json.dumps(result), flush=True)
    return 0


# ------------------------------------------------------------------ driver side ----

def run_job(a, ckdir, every, steps, warmup, resume=False, servers=2, trainers=2):
    """One job; returns (launch time on CLOCK_MONOTONIC, [trainer results])."""
    eps = ','.join('127.0.0.1:%d' % p for p in _free_ports(servers))
    base = _env(sys.executable, 'rill')
    base.update(PADDLE_PSERVERS_IP_PORT_LIST=eps, PADDLE_TRAINERS_NUM=str(trainers))
    from rill.distributed.launch import threads_per_process
    base.setdefault('RILL_NUM_THREADS', str(threads_per_process(servers + trainers)))
    cmd = [sys.executable, HERE, '--worker', 'job', '--steps', str(steps),
           '--warmup', str(warmup), '--every', str(every)]
    if ckdir:
        cmd += ['--dir', ckdir]
    if resume:
        cmd.append('--resume')
    procs = []
    t_launch = time.monotonic()
    try:
        for ep in eps.split(','):
            env = dict(base, PADDLE_TRAINING_ROLE='PSERVER', TRAINING_ROLE='PSERVER',
                       PADDLE_CURRENT_ENDPOINT=ep, PADDLE_PORT=ep.rsplit(':', 1)[1])
            procs.append(('pserver', subprocess.Popen(
                cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
        for i in range(trainers):
            env = dict(base, PADDLE_TRAINING_ROLE='TRAINER', TRAINING_ROLE='TRAINER',
                       PADDLE_TRAINER_ID=str(i),
                       RILL_BENCH_SERVER_PIDS=','.join(str(p.pid) for _, p in procs[:servers]))
            procs.append(('trainer', subprocess.Popen(
                cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
        deadline = time.monotonic() + a.timeout
        results = []
        for role, p in procs[servers:]:
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            res = _result(out)
            if p.returncode != 0 or res is None:
                raise RuntimeError('trainer failed (%d): %s' % (
                    p.returncode, err.decode('utf-8', 'replace')[-2000:]))
            results.append(res)
        for role, p in procs[:servers]:
            _, err = p.communicate(timeout=a.server_grace)
            if p.returncode != 0:
                raise RuntimeError('pserver exited with %d: %s' % (
                    p.returncode, err.decode('utf-8', 'replace')[-2000:]))
        return t_launch, results
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()


def run_load(a, d, save=False):
    cmd = [sys.executable, HERE, '--worker', 'load', '--dir', d] + (['--save'] if save else [])
    r = subprocess.run(cmd, env=_env(sys.executable, 'rill'), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=a.timeout)
    res = _result(r.stdout)
    if r.returncode != 0 or (res is None and not save):
        raise RuntimeError('local load_persistables failed (%d): %s' % (
            r.returncode, r.stderr.decode('utf-8', 'replace')[-2000:]))
    return res


def _bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def _cpu_model():
    """'model name (family F model M)' of the first CPU in /proc/cpuinfo."""
    info = {}
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if not line.strip():
                    break
                k, _, v = line.partition(':')
                info[k.strip()] = v.strip()
    except OSError:
        pass
    return '%s (family %s model %s)' % (info.get('model name', 'unknown CPU'),
                                        info.get('cpu family', '?'), info.get('model', '?'))


def _quartiles(v):
    """First quartile, median, third quartile of v (linear interpolation)."""
    v = sorted(v)

    def at(q):
        x = q * (len(v) - 1)
        i = int(x)
        return v[i] if i + 1 >= len(v) else v[i] + (x - i) * (v[i + 1] - v[i])
    return at(0.25), at(0.5), at(0.75)


def _bootstrap_median(v, resamples=2000, seed=0):
    """95% percentile-bootstrap interval of the median of v (a fixed seed: reproducible)."""
    rng = random.Random(seed)
    meds = sorted(_median([rng.choice(v) for _ in v]) for _ in range(resamples))
    return meds[int(0.025 * resamples)], meds[int(0.975 * resamples) - 1]


def _spread(v):
    """'median [Q1..Q3], 95% CI lo..hi, min..max a..b, n rounds' of per-round ratios."""
    q1, med, q3 = _quartiles(v)
    lo, hi = _bootstrap_median(v)
    return '%.3f [quartiles %.3f..%.3f; median 95%% CI %.3f..%.3f; min..max %.3f..%.3f; ' \
        'n=%d]' % (med, q1, q3, lo, hi, min(v), max(v), len(v))


def against(a, lib, work):
    """Part 1 for two libraries, rounds alternating: none and every step under each."""
    if not lib:
        print('--against needs RILL_LIB set to this build\'s library')
        return 2
    libs = [('this', os.path.abspath(lib)), ('against', os.path.abspath(a.against))]
    ratio = {k: [] for k, _ in libs}
    cpu = {k: [] for k, _ in libs}
    base = {k: [] for k, _ in libs}
    for r in range(a.rounds):
        for name, path in (libs if r % 2 == 0 else libs[::-1]):
            os.environ['RILL_LIB'] = path
            got = {}
            for every in ((None, 1) if r % 4 < 2 else (1, None)):
                d = tempfile.mkdtemp(prefix='job.', dir=work) if every else None
                _, trs = run_job(a, d, every or 1, a.steps, a.warmup)
                got[every] = (max(sum(t['steps']) / len(t['steps']) for t in trs),
                              sum(t['cpu'] + t['servers_cpu'] for t in trs))
                if d:
                    shutil.rmtree(d, ignore_errors=True)
            ratio[name].append(got[1][0] / got[None][0])
            cpu[name].append(got[1][1] / got[None][1])
            base[name].append(got[None][0])
        os.environ['RILL_LIB'] = lib
        print('  round %d: every step / none: this %.3f, against %.3f; load %.2f' % (
            r + 1, ratio['this'][-1], ratio['against'][-1], os.getloadavg()[0]), flush=True)
    for name, path in libs:
        print('%-8s %s: step without snapshots %.2f ms; every step / none %s; job CPU '
              'every step / none %s' % (name, path, _median(base[name]), _spread(ratio[name]),
                                        _spread(cpu[name])))
    q = [x / y for x, y in zip(ratio['this'], ratio['against'])]
    print('this / against, every-step ratios of the same round: %s' % _spread(q))
    print('load average at the end: %.2f %.2f %.2f' % os.getloadavg())
    print('RESULT every1_ratio=%.3f against_every1_ratio=%.3f' % (
        _median(ratio['this']), _median(ratio['against'])))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--worker', choices=['job', 'load'], help=argparse.SUPPRESS)
    ap.add_argument('--every', type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument('--resume', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--save', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--dir', default=None,
                    help='where the temporary snapshot directories go (default: beside '
                         'the build, the directory of $RILL_LIB)')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--steps', type=int, default=20, help='timed steps per job')
    ap.add_argument('--warmup', type=int, default=5)
    ap.add_argument('--launches', type=int, default=3,
                    help='plain / recovery launches per round (their median counts); 0 '
                         'measures the step cost alone')
    ap.add_argument('--timeout', type=float, default=180.0, help='seconds per run')
    ap.add_argument('--server-grace', type=float, default=20.0)
    ap.add_argument('--against', default=None, metavar='LIB',
                    help='compare the every-step ratio with that of another librill.so')
    a = ap.parse_args()
    if a.worker == 'job':
        return worker_job(a)
    if a.worker == 'load':
        return worker_load(a)

    sys.path.insert(0, os.path.join(ROOT, 'python'))
    import rill.distributed as dist
    missing = dist.missing_kernels()
    if missing:
        print('not measured: this build has no CPU kernel for %s (the parameter-server '
              'runtime)' % ', '.join(missing))
        return 0
    lib = os.environ.get('RILL_LIB')
    parent = a.dir or (os.path.dirname(os.path.abspath(lib)) if lib else
                       os.path.join(ROOT, 'build'))
    work = tempfile.mkdtemp(prefix='bench_dist_snapshot.', dir=parent)
    print('CPU: %s, %d online; load average %.2f %.2f %.2f' % (
        (_cpu_model(), os.cpu_count()) + os.getloadavg()))
    print('MLP %s, batch %d (each of 2 trainers feeds %d), 2 pservers, sync mode, SGD; '
          '%d rounds of %d timed steps after %d warm-up; snapshots in %s' % (
              '-'.join(map(str, SIZES)), BATCH, BATCH // 2, a.rounds, a.steps, a.warmup,
              work), flush=True)
    n = [0]
    if a.against:
        try:
            return against(a, lib, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def fresh():
        n[0] += 1
        d = os.path.join(work, 'job%d' % n[0])
        os.mkdir(d)
        return d

    try:
        # the snapshot recovery resumes from, and the same model's save_persistables
        prepared = persist = None
        if a.launches:
            prepared = fresh()
            run_job(a, prepared, EVERY_RARE, 0, PREPARED_STEPS)
            names = sorted(os.listdir(prepared))
            if 'snapshot_%d' % PREPARED_STEPS not in names:
                raise RuntimeError('no complete snapshot of step %d in %s: %s' % (
                    PREPARED_STEPS, prepared, names))
            persist = os.path.join(work, 'persistables')
            run_load(a, persist, save=True)
            print('snapshot of step %d: %.2f MB (%s); save_persistables: %.2f MB' % (
                PREPARED_STEPS, _bytes(prepared) / 1e6, ', '.join(names),
                _bytes(persist) / 1e6), flush=True)

        variants = [('none', None), ('every 1', 1), ('every %d' % EVERY_RARE, EVERY_RARE)]
        step = {name: [] for name, _ in variants}
        close = {name: [] for name, _ in variants}
        snap_steps = []
        cpu = {name: [] for name, _ in variants}
        cpu_tr = {name: [] for name, _ in variants}
        cpu_ps = {name: [] for name, _ in variants}
        cpu_wtr = {name: [] for name, _ in variants}
        cpu_wps = {name: [] for name, _ in variants}
        rec = {'plain': [], 'recovery': [], 'load': [], 'load_checkpoint': [],
               'first_plain': [], 'first_resumed': [], 'after_plain': [],
               'after_resumed': []}
        for r in range(a.rounds):
            order = variants[r % 3:] + variants[:r % 3]
            for name, every in order:
                d = fresh() if every else None
                _, trs = run_job(a, d, every or 1, a.steps, a.warmup)
                step[name].append(max(sum(t['steps']) / len(t['steps']) for t in trs))
                close[name].append(max(t['close'] for t in trs))
                cpu[name].append(sum(t['cpu'] + t['servers_cpu'] for t in trs))
                cpu_tr[name].append(sum(t['cpu'] for t in trs))
                cpu_ps[name].append(sum(t['servers_cpu'] for t in trs))
                cpu_wtr[name].append(sum(t['writer_cpu'] for t in trs))
                cpu_wps[name].append(sum(t['servers_writer_cpu'] for t in trs))
                if every == EVERY_RARE:  # the steps that snapshot against the others
                    due = [i for i in range(a.steps) if (a.warmup + i + 1) % every == 0]
                    for t in trs:
                        if due and len(due) < a.steps:
                            snap_steps.append(max(t['steps'][i] for i in due) -
                                              _median([v for i, v in enumerate(t['steps'])
                                                       if i not in due]))
                if d:
                    shutil.rmtree(d)
            got = {k: [] for k in rec}
            for _ in range(a.launches):  # plain and recovery alternate
                t0, trs = run_job(a, fresh(), EVERY_RARE, 0, 1)
                got['plain'].append((trs[0]['t_first'] - t0) * 1e3)
                got['first_plain'].append(trs[0]['first_step'])
                got['after_plain'].append((trs[0]['t_first'] - trs[0]['t_ready']) * 1e3)
                t0, trs = run_job(a, prepared, EVERY_RARE, 0, 1, resume=True)
                if trs[0]['step'] != PREPARED_STEPS:
                    raise RuntimeError('resumed from step %r, not %d' % (
                        trs[0]['step'], PREPARED_STEPS))
                got['recovery'].append((trs[0]['t_first'] - t0) * 1e3)
                got['load_checkpoint'].append(trs[0]['load_checkpoint'])
                got['first_resumed'].append(trs[0]['first_step'])
                got['after_resumed'].append((trs[0]['t_first'] - trs[0]['t_ready']) * 1e3)
                got['load'].append(run_load(a, persist)['load'])
            for k, v in got.items():
                if v:
                    rec[k].append(_median(v))
            print('  round %d: step none %.2f ms, every 1 %.2f ms (%.3f), every %d %.2f ms '
                  '(%.3f); job CPU per step none %.1f ms, every 1 %.1f ms (%.3f)%s; load %.2f' % (
                      r + 1, step['none'][-1], step['every 1'][-1],
                      step['every 1'][-1] / step['none'][-1], EVERY_RARE,
                      step['every %d' % EVERY_RARE][-1],
                      step['every %d' % EVERY_RARE][-1] / step['none'][-1],
                      cpu['none'][-1], cpu['every 1'][-1], cpu['every 1'][-1] / cpu['none'][-1],
                      '; start %.0f ms, recovery %.0f ms, load_persistables %.1f ms' % (
                          rec['plain'][-1], rec['recovery'][-1], rec['load'][-1])
                      if a.launches else '', os.getloadavg()[0]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    r1 = [s / b for s, b in zip(step['every 1'], step['none'])]
    r10 = [s / b for s, b in zip(step['every %d' % EVERY_RARE], step['none'])]
    print('step time (mean of the timed steps, slower trainer): none %.2f ms, every step '
          '%.2f ms, every %d steps %.2f ms (medians over rounds)' % (
              _median(step['none']), _median(step['every 1']), EVERY_RARE,
              _median(step['every %d' % EVERY_RARE])))
    print('per-round ratios against the job without snapshots of the same round:')
    print('  step time, snapshot every step / none:      %s  (target <= 1.05)' % _spread(r1))
    print('  step time, snapshot every %d steps / none:  %s' % (EVERY_RARE, _spread(r10)))
    c1 = [s / b for s, b in zip(cpu['every 1'], cpu['none'])]
    c10 = [s / b for s, b in zip(cpu['every %d' % EVERY_RARE], cpu['none'])]
    print('  job CPU per step, every step / none:        %s' % _spread(c1))
    print('  job CPU per step, every %d steps / none:    %s' % (EVERY_RARE, _spread(c10)))
    print('job CPU per step (user + system, every thread of the 2 trainers and 2 pservers; '
          'medians over rounds):')
    for name, _ in variants:
        print('  %-9s %6.1f ms = trainers %5.1f (writing thread %4.2f) + pservers %5.1f '
              '(writing threads %4.2f)' % (
                  name, _median(cpu[name]), _median(cpu_tr[name]), _median(cpu_wtr[name]),
                  _median(cpu_ps[name]), _median(cpu_wps[name])))
    dtr = [x - y for x, y in zip(cpu_tr['every 1'], cpu_tr['none'])]
    dps = [x - y for x, y in zip(cpu_ps['every 1'], cpu_ps['none'])]
    print('  every step - none, same round: trainers %+.2f ms [quartiles %+.2f..%+.2f], '
          'pservers %+.2f ms [quartiles %+.2f..%+.2f]' % (
              _quartiles(dtr)[1], _quartiles(dtr)[0], _quartiles(dtr)[2],
              _quartiles(dps)[1], _quartiles(dps)[0], _quartiles(dps)[2]))
    if snap_steps:
        print('  every %d steps: a snapshot step takes %.1f ms more than the median other '
              'step (median over trainers and rounds of the slowest snapshot step; min..max '
              '%.1f..%.1f)' % (EVERY_RARE, _median(snap_steps), min(snap_steps),
                               max(snap_steps)))
    print('  exe.close() in the trainer (waits for its writes): none %.1f ms, every step '
          '%.1f ms, every %d %.1f ms' % (_median(close['none']), _median(close['every 1']),
                                         EVERY_RARE, _median(close['every %d' % EVERY_RARE])))
    extra = [rv - p for rv, p in zip(rec['recovery'], rec['plain'])]
    if extra:
        ratio = [e / l for e, l in zip(extra, rec['load'])]
        print('recovery (launch to trainer 0\'s first step; medians): plain start %.0f ms, '
              'recovery %.0f ms, extra %.0f ms (min..max %.0f..%.0f); load_persistables '
              '%.1f ms' % (_median(rec['plain']), _median(rec['recovery']), _median(extra),
                          min(extra), max(extra), _median(rec['load'])))
        print('  trainer 0, from its startup program done to its first step done: plain '
              '%.0f ms (the step %.0f ms), recovery %.0f ms (load_checkpoint %.0f ms, the '
              'step %.0f ms)' % (_median(rec['after_plain']), _median(rec['first_plain']),
                                 _median(rec['after_resumed']),
                                 _median(rec['load_checkpoint']),
                                 _median(rec['first_resumed'])))
        print('  (recovery - plain) / load_persistables: %s' % _spread(ratio))
    print('load average at the end: %.2f %.2f %.2f' % os.getloadavg())
    print('RESULT every1_ratio=%.3f every%d_ratio=%.3f every1_cpu_ratio=%.3f%s' % (
        _median(r1), EVERY_RARE, _median(r10), _median(c1),
        ' recovery_extra_ms=%.0f load_persistables_ms=%.1f' % (
            _median(extra), _median(rec['load'])) if extra else ''))
    return 0


if __name__ == '__main__':
    sys.exit(main())
