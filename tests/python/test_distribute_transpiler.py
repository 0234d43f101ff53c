"""fluid.DistributeTranspiler over rill_program_transpile: the Fluid 1.x usage pattern
up to getting the programs, the pserver startup programs run against the local one,
HashName placement across processes, and `rill inspect` / `rill dot` on the results.
(Running the programs is tests/python/test_dist_runtime.py's.)"""
import os
import subprocess
import sys

import numpy as np
import pytest

import rill as fluid

EPS = "127.0.0.1:6170,127.0.0.1:6171"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _mlp(opt='adam', sparse=False):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        y = fluid.layers.data(name='y', shape=[1], dtype='int64')
        if sparse:
            ids = fluid.layers.data(name='ids', shape=[1], dtype='int64')
            h = fluid.layers.embedding(ids, size=[1000, 64], is_sparse=True)
        else:
            x = fluid.layers.data(name='x', shape=[784], dtype='float32')
            h = fluid.layers.fc(x, size=1024, act='relu')
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(
            fluid.layers.fc(h, size=10), y))
        {'sgd': fluid.optimizer.SGD(0.1), 'momentum': fluid.optimizer.Momentum(0.1, 0.9),
         'adam': fluid.optimizer.Adam(0.01)}[opt].minimize(loss)
    return main, startup, loss


def _types(prog, block=0):
    return [op.type for op in prog.block(block).ops]


def test_fluid_pattern_sync_two_trainers():
    main, startup, _ = _mlp('adam')
    t = fluid.DistributeTranspiler(config=fluid.DistributeTranspilerConfig())
    t.transpile(1, program=main, pservers=EPS, trainers=2, sync_mode=True,
                startup_program=startup)
    tp = t.get_trainer_program()
    types = _types(tp)
    assert 'adam' not in types
    rpc = [ty for ty in types if ty in ('split_byref', 'send', 'send_barrier', 'recv',
                                        'fetch_barrier', 'concat')]
    # Sends follow the backward pass (last layer first), as in Paddle 1.8.5.
    assert rpc == ['send', 'send', 'send', 'split_byref', 'send', 'send_barrier',
                   'recv', 'recv', 'recv', 'recv', 'fetch_barrier', 'concat']
    split = tp.global_block().ops[types.index('split_byref')]
    assert split.input('X') == ['fc_0.w_0@GRAD']
    assert split.output('Out') == ['fc_0.w_0@GRAD.block0.trainer_1',
                                   'fc_0.w_0@GRAD.block1.trainer_1']
    assert split.attr('sections') == [392, 392]
    sends = [op for op in tp.global_block().ops if op.type == 'send']
    assert [op.attr('epmap') for op in sends] == [
        ['127.0.0.1:6171'], ['127.0.0.1:6170'], ['127.0.0.1:6170'],
        ['127.0.0.1:6171', '127.0.0.1:6170']]
    assert all(op.attr('trainer_id') == 1 for op in sends)

    for ep, nblocks in (("127.0.0.1:6170", 3), ("127.0.0.1:6171", 2)):
        ps = t.get_pserver_program(ep)
        las = ps.global_block().ops[0]
        assert _types(ps) == ['listen_and_serv']
        assert las.attr('endpoint') == ep and las.attr('Fanin') == 2
        assert las.attr('distributed_mode') == 0
        assert len(las.attr('grad_to_block_id')) == nblocks
        for b in range(1, nblocks + 1):
            assert _types(ps, b) == ['sum', 'scale', 'adam']
        st = t.get_startup_program(ep, ps)
        assert 'uniform_random' in _types(st)
    ps0 = t.get_pserver_program("127.0.0.1:6170")
    assert ps0.block(2).ops[2].input('Moment1') == ['fc_0.w_0_moment1_0.block1']
    prog, start = t.get_pserver_programs("127.0.0.1:6171")
    assert _types(prog) == ['listen_and_serv'] and _types(start)


def test_async_has_no_barriers_and_no_merge():
    main, startup, _ = _mlp('momentum')
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=EPS, trainers=2, sync_mode=False,
                startup_program=startup)
    types = _types(t.get_trainer_program())
    assert 'send_barrier' not in types and 'fetch_barrier' not in types
    ps = t.get_pserver_program("127.0.0.1:6171")
    assert ps.global_block().ops[0].attr('distributed_mode') == 1
    assert _types(ps, 1) == ['momentum']


@pytest.mark.parametrize('sync', [True, False])
def test_snapshots_due_by_the_step_count_are_scheduled_on_the_pservers_in_sync_mode(
        sync, tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name='x', shape=[4], dtype='float32')
        loss = fluid.layers.mean(fluid.layers.fc(x, size=2))
        config = fluid.io.CheckpointConfig(str(tmp_path), every_n_steps=5,
                                           every_n_seconds=30.0)
        fluid.optimizer.SGD(0.1).minimize(loss, checkpoint_config=config)
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=EPS, trainers=2, sync_mode=sync,
                startup_program=startup)
    ck = [op for op in t.get_trainer_program().global_block().ops if op.type == 'checkpoint']
    assert len(ck) == 1 and ck[0].attr('every_n_steps') == 5
    assert ck[0].attr('cluster_sync') == sync
    for ep in EPS.split(','):
        las = t.get_pserver_program(ep).global_block().ops[0]
        assert las.attr('checkpoint_dir') == str(tmp_path)
        # sync: the pservers take snapshot 5k after round 5k themselves; async: not set
        # (the default 0), every snapshot is announced
        assert (las.attr('checkpoint_every_n_steps') or 0) == (5 if sync else 0)


def test_sparse_embedding_sends_selected_rows():
    main, startup, _ = _mlp('sgd', sparse=True)
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=EPS, trainers=2, startup_program=startup)
    tp = t.get_trainer_program()
    split = [op for op in tp.global_block().ops if op.type == 'split_selected_rows']
    assert len(split) == 1 and split[0].attr('height_sections') == [500, 500]
    las = t.get_pserver_program("127.0.0.1:6170").global_block().ops[0]
    assert las.attr('sparse_grad_to_param') == ['embedding_0.w_0@GRAD.block0:'
                                                'embedding_0.w_0.block0']


def test_pserver_startup_gives_the_local_rows():
    main, startup, _ = _mlp('adam')
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=EPS, trainers=2, startup_program=startup)
    exe = fluid.Executor(fluid.CPUPlace())
    local = fluid.Scope()
    with fluid.scope_guard(local):
        exe.run(startup)
    whole = np.array(local.find_var('fc_0.w_0').get_tensor())
    rows = {}
    for ep in EPS.split(','):
        ps = t.get_pserver_program(ep)
        sc = fluid.Scope()
        with fluid.scope_guard(sc):
            exe.run(t.get_startup_program(ep, ps))
        for k in (0, 1):
            v = sc.find_var('fc_0.w_0.block%d' % k)
            if v is not None and ps.global_block().has_var('fc_0.w_0.block%d' % k):
                rows[k] = np.array(v.get_tensor())
    assert sorted(rows) == [0, 1]
    np.testing.assert_array_equal(np.concatenate([rows[0], rows[1]]), whole)


def _table_model():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup):
        ids = fluid.layers.data(name='ids', shape=[1], dtype='int64')
        y = fluid.layers.data(name='y', shape=[1], dtype='int64')
        h = fluid.layers.embedding(ids, size=[1000, 64], is_sparse=True, is_distributed=True,
                                   param_attr=fluid.ParamAttr(name='emb'))
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(
            fluid.layers.fc(h, size=10), y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup


def test_trainer_startup_declares_a_distributed_table_without_data():
    """As Paddle's transpiler does, transpiling changes the startup program: the
    distributed table's initializer becomes fake_init, so a trainer running it holds no
    storage for the table; the pservers' startup programs still draw the whole table (a
    second transpile of the same startup program, as for another role or trainer, too)."""
    main, startup = _table_model()
    exe = fluid.Executor(fluid.CPUPlace())
    local = fluid.Scope()
    with fluid.scope_guard(local):
        exe.run(startup)
    whole = np.array(local.find_var('emb').get_tensor())
    assert whole.shape == (1000, 64)
    for tid in (0, 1):  # the same startup program transpiled twice
        t = fluid.DistributeTranspiler()
        t.transpile(tid, program=main, pservers=EPS, trainers=2, startup_program=startup)
        assert [op.type for op in startup.global_block().ops
                if 'emb' in op.output_arg_names] == ['fake_init']
        trainer = fluid.Scope()
        with fluid.scope_guard(trainer):
            exe.run(startup)
        assert trainer.find_var('emb') is None, 'the trainer holds the table'
        assert trainer.find_var('fc_0.w_0') is not None
        ep = EPS.split(',')[1]
        ps = t.get_pserver_program(ep)
        sc = fluid.Scope()
        with fluid.scope_guard(sc):
            exe.run(t.get_startup_program(ep, ps))
        np.testing.assert_array_equal(np.array(sc.find_var('emb.block1').get_tensor()),
                                      whole[500:])


def test_errors():
    main, startup, _ = _mlp('sgd')
    cfg = fluid.DistributeTranspilerConfig()
    cfg.min_block_size = 1024
    t = fluid.DistributeTranspiler(config=cfg)
    with pytest.raises(fluid.InvalidArgumentError, match='min_block_size 1024'):
        t.transpile(0, program=main, pservers=EPS, trainers=1, startup_program=startup)
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=EPS, trainers=1, startup_program=startup)
    with pytest.raises(fluid.NotFoundError, match='10.0.0.9:1'):
        t.get_pserver_program('10.0.0.9:1')
    bare, bare_start = fluid.Program(), fluid.Program()
    with fluid.program_guard(bare, bare_start):
        fluid.layers.fc(fluid.layers.data(name='x', shape=[4], dtype='float32'), size=2)
    with pytest.raises(fluid.InvalidArgumentError, match='no optimizer ops'):
        fluid.DistributeTranspiler().transpile(0, program=bare, pservers=EPS,
                                               startup_program=bare_start)


PLACEMENT = r'''
import rill as fluid
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.layers.data(name='x', shape=[784], dtype='float32')
    h = fluid.layers.fc(x, size=1024, act='relu')
    for i in range(6):
        h = fluid.layers.fc(h, size=512)
    loss = fluid.layers.mean(h)
    fluid.optimizer.SGD(0.1).minimize(loss)
cfg = fluid.DistributeTranspilerConfig()
cfg.split_method = fluid.transpiler.HashName
t = fluid.DistributeTranspiler(config=cfg)
t.transpile(0, program=main, pservers="a:1,b:2,c:3,d:4", trainers=1, startup_program=startup)
for op in t.get_trainer_program().global_block().ops:
    if op.type == 'recv':
        print(op.output('Out'), op.attr('epmap'))
'''


def test_hash_name_is_the_same_in_every_process():
    outs = []
    for seed in ('1', '2', '12345'):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, '-c', PLACEMENT], env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1] == outs[2]
    placed = [eval(line.split('] ')[1]) for line in outs[0].splitlines()]
    assert len(set(ep for eps in placed for ep in eps)) >= 3, outs[0]
    names = [n for line in outs[0].splitlines() for n in eval(line.split('] ')[0] + ']')]
    hn = fluid.transpiler.HashName(["a:1", "b:2", "c:3", "d:4"])
    assert hn.dispatch(names) == [ep for eps in placed for ep in eps]


def _cli():
    lib = os.environ.get('RILL_LIB')
    cand = os.path.join(os.path.dirname(lib), 'rill') if lib else None
    if not cand or not os.path.exists(cand):
        pytest.skip('the rill CLI is not built beside RILL_LIB')
    return cand


def test_inspect_and_dot_read_transpiled_programs(tmp_path):
    cli = _cli()
    main, startup, _ = _mlp('momentum')
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=EPS, trainers=2, startup_program=startup)
    files = {'trainer': t.get_trainer_program(),
             'pserver': t.get_pserver_program("127.0.0.1:6170")}
    for name, prog in files.items():
        path = tmp_path / name
        path.write_bytes(prog.serialize_to_string())
        r = subprocess.run([cli, 'inspect', str(path)], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        assert ('listen_and_serv' if name == 'pserver' else 'send_barrier') in r.stdout
        r = subprocess.run([cli, 'dot', str(path)], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith('digraph')
        assert ('listen_and_serv' if name == 'pserver' else 'fetch_barrier') in r.stdout


def test_lr_schedule_gets_its_own_block():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name='x', shape=[784], dtype='float32')
        loss = fluid.layers.mean(fluid.layers.fc(x, size=64))
        lr = fluid.layers.exponential_decay(0.1, 100, 0.9, staircase=True)
        fluid.optimizer.SGD(lr).minimize(loss)
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=EPS, trainers=2, startup_program=startup)
    trainer_types = _types(t.get_trainer_program())
    assert 'elementwise_pow' not in trainer_types and 'sgd' not in trainer_types
    ps = t.get_pserver_program("127.0.0.1:6170")
    las = ps.global_block().ops[0]
    assert las.attr('lr_decay_block_id') == 1
    assert 'elementwise_pow' in _types(ps, 1)
    assert _types(ps, 2) == ['sum', 'scale', 'sgd']
    st = t.get_startup_program("127.0.0.1:6170", ps)
    outs = [n for op in st.global_block().ops for n in op.output_arg_names]
    assert '@LR_DECAY_COUNTER@' in outs
    fluid.Executor(fluid.CPUPlace()).run(st)


def test_piecewise_decay_runs_on_the_pservers_and_selects_each_value_exactly():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name='x', shape=[784], dtype='float32')
        loss = fluid.layers.mean(fluid.layers.fc(x, size=64))
        lr = fluid.layers.piecewise_decay([2, 4], [0.1, 0.03, 0.007])
        fluid.optimizer.Momentum(lr, 0.9).minimize(loss)
    assert lr.name == 'learning_rate' and lr.persistable  # Fluid's variable
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        feed = {'x': np.ones((2, 784), 'float32')}
        got = [exe.run(main, feed=feed, fetch_list=[lr])[0][0] for _ in range(6)]
    assert got == [np.float32(v) for v in (0.1, 0.1, 0.03, 0.03, 0.007, 0.007)], got
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=EPS, trainers=2, startup_program=startup)
    assert 'less_than' not in _types(t.get_trainer_program())
    ps = t.get_pserver_program("127.0.0.1:6170")
    assert ps.global_block().ops[0].attr('lr_decay_block_id') == 1
    assert _types(ps, 1)[-1] == 'assign' and 'less_than' in _types(ps, 1)
