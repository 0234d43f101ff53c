"""fluid.profiler: the trace-event file is well formed and complete, blocking ops run on
the I/O pool beside compute under the parallel schedule, the summary adds up, a full
buffer drops and counts, and predictor clones profiled at once each show their ops."""
import json
import os
import threading

import numpy as np
import pytest

import rill
from rill import profiler
from conftest import MODELS


def mlp(save_path=None, hidden=64, width=32):
    """An MLP training step; with save_path, a `save` op writing a 16 MB variable that no
    op writes (so it depends on nothing and may run beside the whole step)."""
    main, startup = rill.Program(), rill.Program()
    main.random_seed = startup.random_seed = 7
    with rill.program_guard(main, startup), rill.unique_name.guard():
        x = rill.layers.data('x', [width])
        y = rill.layers.data('y', [1])
        h = rill.layers.fc(x, hidden, act='relu')
        h = rill.layers.fc(h, hidden, act='relu')
        loss = rill.layers.mean(rill.layers.square_error_cost(rill.layers.fc(h, 1), y))
        rill.optimizer.SGD(0.01).minimize(loss)
        if save_path is not None:
            main.global_block().create_var(name='big', shape=[1 << 22], dtype='float32',
                                           persistable=True)
            startup.global_block().create_var(name='big', shape=[1 << 22], dtype='float32',
                                              persistable=True)
            startup.global_block().append_op(
                type='fill_constant', outputs={'Out': ['big']},
                attrs={'shape': [1 << 22], 'dtype': 5, 'value': 1.0})  # 5: float32
            main.global_block().append_op(type='save', inputs={'X': ['big']},
                                          attrs={'file_path': save_path})
    return main, startup, loss


def feed(rs, width=32, batch=64):
    return {'x': rs.rand(batch, width).astype('float32'),
            'y': rs.rand(batch, 1).astype('float32')}


def trained(tmp_path, steps, parallel=None, save=False, big=False, **start):
    """Runs `steps` training steps under the profiler; returns the trace and summary.
    big: steps of some 100 ms of compute, longer than a blocking op may wait for the
    pool on a loaded machine."""
    hidden, width, batch = (1024, 256, 256) if big else (64, 32, 64)
    main, startup, loss = mlp(str(tmp_path / 'big.bin') if save else None, hidden, width)
    exe = rill.Executor(parallel=parallel, num_threads=2)
    scope = rill.Scope()
    rs = np.random.RandomState(1)
    path = str(tmp_path / 'trace.json')
    with rill.scope_guard(scope):
        exe.run(startup)
        profiler.start_profiler('CPU', **start)
        try:
            for _ in range(steps):
                exe.run(main, feed=feed(rs, width, batch), fetch_list=[loss])
        finally:
            summary = profiler.stop_profiler('total', path, print_summary=False)
    exe.close()
    with open(path) as f:
        trace = json.load(f)
    return trace, summary, main


def check_format(trace):
    """Structure of the trace-event format (JSON object form)."""
    assert isinstance(trace, dict) and isinstance(trace['traceEvents'], list)
    pid = os.getpid()
    assert trace['otherData']['pid'] == pid
    assert isinstance(trace['otherData']['wall_start_ns'], int)
    names = {}
    for e in trace['traceEvents']:
        assert e['ph'] in ('X', 'M', 'b', 'e', 'n', 'C'), e
        assert e['pid'] == pid and isinstance(e['tid'], int) and isinstance(e['name'], str)
        if e['ph'] == 'M':
            assert e['name'] in ('process_name', 'thread_name') and e['args']['name']
            if e['name'] == 'thread_name':
                names[e['tid']] = e['args']['name']
            continue
        assert isinstance(e['ts'], (int, float)) and e['ts'] >= 0
        if e['ph'] == 'X':
            assert e['dur'] >= 0  # start <= end
        elif e['ph'] == 'C':
            assert e['name'] == 'tensor memory'
            assert 0 <= e['args']['live_bytes'] <= e['args']['peak_bytes']
        else:
            assert e['id'].startswith('0x')
    for e in trace['traceEvents']:
        if e['ph'] != 'M':
            assert e['tid'] in names, 'thread %d has no name' % e['tid']
    return names


def ops(trace, block=0):
    return [e for e in trace['traceEvents'] if e['ph'] == 'X' and e.get('cat') == 'op'
            and e['args']['block'] == block]


def timed(trace, block=0):
    """The events the summary counts: the ops and, when the executor runs on a device
    place, the copies between places (the feeds', the fetches' and those for host ops)."""
    return [e for e in trace['traceEvents'] if e['ph'] == 'X' and e.get('cat') in ('op', 'memcpy')
            and e['args']['block'] == block]


def is_copy(row):
    return row['name'].startswith('memcpy ')


def check_nesting(trace):
    """Per thread, two complete events are disjoint or one holds the other."""
    by_tid = {}
    for e in trace['traceEvents']:
        if e['ph'] == 'X':
            by_tid.setdefault(e['tid'], []).append((e['ts'], e['ts'] + e['dur']))
    eps = 0.002  # ts and dur are each rounded to the nanosecond in microseconds
    for spans in by_tid.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end in spans:
            while stack and stack[-1] <= start + eps:
                stack.pop()
            assert not stack or end <= stack[-1] + eps, 'overlapping events on one thread'
            stack.append(end)


def async_ops(trace):
    """{id: (name, tid, begin, start, end)} of the blocking ops."""
    out = {}
    for e in trace['traceEvents']:
        if e.get('cat') != 'blocking':
            continue
        d = out.setdefault(e['id'], {})
        d[e['ph']] = e
    return {k: (v['b']['name'], v['b']['tid'], v['b']['ts'], v['n']['ts'], v['e']['ts'])
            for k, v in out.items()}


def test_every_op_of_a_run_appears_once_in_a_valid_trace(tmp_path):
    trace, summary, main = trained(tmp_path, 1, parallel=False)
    check_format(trace)
    check_nesting(trace)
    got = sorted(e['args']['op'] for e in ops(trace))
    assert got == list(range(len(got)))
    assert len(got) >= len(main.global_block().ops)
    assert summary.dropped == 0
    by_type = {r['name']: r for r in summary.by_type}
    assert by_type['mul']['calls'] == 3 and by_type['sgd']['calls'] == 6
    assert sum(r['calls'] for r in summary.by_instance) == len(timed(trace))
    assert all(r['calls'] == 1 for r in summary.by_instance if not is_copy(r))


def test_memory_track_follows_the_tensor_bytes(tmp_path):
    trace, _, _ = trained(tmp_path, 2, parallel=False)
    check_format(trace)
    samples = [e for e in trace['traceEvents'] if e['ph'] == 'C']
    assert len(samples) == len(timed(trace))  # one sample at each op's (and copy's) end
    # the step's activations (64 x 64 floats and more) are held while it runs
    assert max(e['args']['peak_bytes'] for e in samples) >= 64 * 64 * 4
    assert all(e['args']['live_bytes'] > 0 for e in samples)


def test_summary_adds_up_and_sorts(tmp_path):
    trace, summary, _ = trained(tmp_path, 5, parallel=True)
    check_nesting(trace)
    total = sum(r['total'] for r in summary.by_type)
    assert 0 < total <= summary.wall_ms * summary.threads
    assert abs(sum(r['ratio'] for r in summary.by_type) - 1) < 1e-9
    totals = [r['total'] for r in summary.by_type]
    assert totals == sorted(totals, reverse=True)
    for r in summary.by_type:
        assert r['min'] <= r['ave'] <= r['max']
        # Every op once a run; a copy to a device place may happen on the first only.
        assert is_copy(r) or r['calls'] % 5 == 0, r
    assert 'Profiling Report' in summary.text and 'Sorted by total time' in summary.text
    assert len(timed(trace)) == sum(r['calls'] for r in summary.by_type)


def overlaps(a0, a1, b0, b1):
    return a0 < b1 and b0 < a1


def test_blocking_op_runs_on_the_pool_beside_compute_only_in_parallel(tmp_path):
    trace, _, _ = trained(tmp_path, 3, parallel=True, save=True, big=True)
    names = check_format(trace)
    check_nesting(trace)
    asyncs = async_ops(trace)
    assert len(asyncs) == 3 and all(a[0] == 'save' for a in asyncs.values())
    compute = [e for e in ops(trace) if e['name'] != 'save']
    hits = 0
    for name, tid, begin, start, end in asyncs.values():
        assert begin <= start <= end
        assert names[tid] == 'rill io pool'
        assert all(e['tid'] != tid for e in compute)  # the pool runs no compute op
        hits += any(overlaps(start, end, e['ts'], e['ts'] + e['dur']) for e in compute)
    assert hits >= 1, 'no compute op ran while a save was running'

    trace, _, _ = trained(tmp_path, 3, parallel=False, save=True, big=True)
    assert not async_ops(trace)
    saves = [e for e in ops(trace) if e['name'] == 'save']
    assert len(saves) == 3
    compute = [e for e in ops(trace) if e['name'] != 'save']
    for s in saves:
        assert not any(overlaps(s['ts'], s['ts'] + s['dur'], e['ts'], e['ts'] + e['dur'])
                       for e in compute)


def test_full_buffers_drop_and_count(tmp_path):
    trace, summary, _ = trained(tmp_path, 4, parallel=False, events_per_thread=8)
    check_format(trace)
    assert summary.dropped > 0
    assert summary.events <= 8 * summary.threads
    assert len(timed(trace)) == summary.events
    assert 'dropped: %d' % summary.dropped in summary.text


def test_context_manager_prints_the_report_and_writes_the_file(tmp_path, capsys):
    main, startup, loss = mlp()
    exe = rill.Executor(parallel=False)
    path = str(tmp_path / 'p.json')
    with rill.scope_guard(rill.Scope()):
        exe.run(startup)
        with profiler.profiler('All', 'calls', path):
            exe.run(main, feed=feed(np.random.RandomState(0)), fetch_list=[loss])
    out = capsys.readouterr().out
    assert 'Profiling Report' in out and 'Sorted by number of calls' in out and 'mul' in out
    check_format(json.load(open(path)))
    assert not rill.profiler._enabled()


def test_arguments_are_checked_and_reset_drops_events(tmp_path):
    with pytest.raises(ValueError):
        profiler.start_profiler('TPU')
    with pytest.raises(ValueError):
        profiler.stop_profiler('fastest')
    with pytest.raises(ValueError):
        with profiler.profiler('CPU', 'bogus'):
            pass
    assert profiler.stop_profiler() is None  # not on: nothing to do
    main, startup, loss = mlp()
    exe = rill.Executor(parallel=False)
    with rill.scope_guard(rill.Scope()):
        exe.run(startup)
        profiler.start_profiler('CPU')
        exe.run(main, feed=feed(np.random.RandomState(0)), fetch_list=[loss])
        profiler.reset_profiler()
        s = profiler.stop_profiler(None, None, print_summary=False)
    assert s.events == 0 and s.by_type == []


@pytest.mark.skipif(not os.path.isdir(os.path.join(MODELS, 'mnist_conv_bn_etienne')),
                    reason='needs the model zoo')
def test_concurrent_predictor_clones_each_show_their_ops(tmp_path):
    from rill.inference import Config, Predictor
    p = Predictor(Config(os.path.join(MODELS, 'mnist_conv_bn_etienne'), threads=1))
    name = p.get_input_names()[0]
    x = np.random.RandomState(2).rand(1, 1, 28, 28).astype('float32')
    p.run({name: x})
    clones = [p.clone() for _ in range(3)]
    tids, errors = {}, []

    def work(k):
        try:
            tids[k] = threading.get_native_id()
            for _ in range(4):
                clones[k].run({name: x})
        except Exception as e:  # reported below
            errors.append(e)

    path = str(tmp_path / 'clones.json')
    profiler.start_profiler('CPU')
    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = profiler.stop_profiler('total', path, print_summary=False)
    assert not errors
    trace = json.load(open(path))
    check_format(trace)
    check_nesting(trace)
    per_tid = {}
    for e in ops(trace):
        per_tid.setdefault(e['tid'], []).append(e['args']['op'])
    counts = [sorted(per_tid[tids[k]]) for k in range(3)]
    assert counts[0] and all(c == counts[0] for c in counts)  # each clone: 4 whole runs
    nops = len(set(counts[0]))
    assert len(counts[0]) == 4 * nops
    assert s.dropped == 0


def test_checkpoint_phases_are_spans_on_their_threads(tmp_path):
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup), rill.unique_name.guard():
        x = rill.layers.data('x', [32])
        y = rill.layers.data('y', [1])
        loss = rill.layers.mean(rill.layers.square_error_cost(rill.layers.fc(x, 1), y))
        config = rill.io.CheckpointConfig(str(tmp_path / 'ckpt'), every_n_steps=1)
        rill.optimizer.SGD(0.01).minimize(loss, checkpoint_config=config)
    exe = rill.Executor()
    path = str(tmp_path / 'ckpt.json')
    rs = np.random.RandomState(0)
    with rill.scope_guard(rill.Scope()):
        exe.run(startup)
        profiler.start_profiler('CPU')
        for _ in range(3):
            exe.run(main, feed=feed(rs), fetch_list=[loss])
        exe.close()  # waits for the last write
        profiler.stop_profiler('total', path, print_summary=False)
    trace = json.load(open(path))
    names = check_format(trace)
    check_nesting(trace)
    spans = [e for e in trace['traceEvents'] if e.get('cat') == 'checkpoint']
    snaps = [e for e in spans if e['name'] == 'checkpoint snapshot']
    writes = [e for e in spans if e['name'] == 'checkpoint persist']
    assert len(snaps) == 3 and len(writes) == 3
    assert all(names[e['tid']] == 'rill background' for e in writes)
    ckpt_ops = [e for e in ops(trace) if e['name'] == 'checkpoint']
    assert len(ckpt_ops) == 3
    for s in snaps:  # the snapshot is taken inside the checkpoint op, on its thread
        assert any(o['tid'] == s['tid'] and o['ts'] <= s['ts'] + 0.002 and
                   s['ts'] + s['dur'] <= o['ts'] + o['dur'] + 0.002 for o in ckpt_ops)


def test_rpc_transfers_are_on_the_timeline_with_bytes_and_peer(tmp_path):
    """A one-trainer, one-pserver job in this process (the pserver on a thread): the
    trainer's send and recv ops appear as async "rpc" intervals naming the variable,
    with the bytes moved and the pserver's endpoint."""
    import socket
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        ep = '127.0.0.1:%d' % s.getsockname()[1]
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup), rill.unique_name.guard():
        x = rill.layers.data('x', [8])
        y = rill.layers.data('y', [1])
        loss = rill.layers.mean(rill.layers.square_error_cost(rill.layers.fc(x, 1), y))
        rill.optimizer.SGD(0.1).minimize(loss)
    t = rill.DistributeTranspiler()
    t.transpile(0, program=main, pservers=ep, trainers=1, startup_program=startup)
    pprog = t.get_pserver_program(ep)
    pstart = t.get_startup_program(ep, pprog)
    served = {}

    def serve():
        try:
            exe = rill.Executor()
            scope = rill.Scope()  # scope_guard is process-wide: name the scope instead
            exe.run(pstart, scope=scope)
            exe.run(pprog, scope=scope)
            served['ok'] = True
        except Exception as e:  # reported by the assertion below
            served['error'] = e

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    exe = rill.Executor()
    rs = np.random.RandomState(3)
    path = str(tmp_path / 'trace.json')
    scope = rill.Scope()
    exe.run(startup, scope=scope)
    profiler.start_profiler('CPU')
    try:
        for _ in range(3):
            exe.run(t.get_trainer_program(), scope=scope,
                    feed={'x': rs.rand(4, 8).astype('float32'),
                          'y': rs.rand(4, 1).astype('float32')},
                    fetch_list=[loss])
    finally:
        profiler.stop_profiler('total', path)
    exe.close()
    th.join(60)
    assert served.get('ok'), served
    events = json.load(open(path))['traceEvents']
    ends = [e for e in events if e.get('cat') == 'rpc' and e['ph'] == 'e']
    begins = [e for e in events if e.get('cat') == 'rpc' and e['ph'] == 'b']
    assert len(begins) == len(ends) > 0
    sends = [e for e in ends if e['name'].startswith('send ')]
    recvs = [e for e in ends if e['name'].startswith('recv ')]
    # per step: the weight's and the bias's gradients go out, the two parameters come back
    assert len(sends) == 6 and len(recvs) == 6, [e['name'] for e in ends]
    w = [e for e in recvs if e['name'] == 'recv fc_0.w_0']
    assert len(w) == 3 and all(e['args'] == {'bytes': 8 * 4, 'peer': ep} for e in w), w
    assert all(e['args']['peer'] == ep and e['args']['bytes'] > 0 for e in sends)
