"""One process of the distributed-runtime tests (tests/python/test_dist_runtime.py):
the Fluid 1.x pattern under `import rill as fluid`, its role from Paddle's environment
variables.

    runtime_worker.py OUT OPT MODEL STEPS [--local] [--async] [--f64] [--hash-name]
                      [--die-after N]

OPT: sgd | momentum | adam | adagrad; MODEL: mlp | sparse | table (a distributed lookup
table: is_distributed, looked up on the pservers); STEPS: steps, or one count per trainer
("20,12"). A trainer takes its half of every batch (the local run takes all of it) and
writes its parameters after the last step to OUT/params_<trainer>.npz (OUT/params_local.npz)
and its losses to OUT/loss_<trainer>.npy; a pserver writes what it holds to
OUT/pserver_<i>.npz when it has served. --die-after N: trainer 1 kills itself (SIGKILL)
after N steps, without closing. --hash-name: the transpiler places blocks with HashName
(the default is RoundRobin)."""
import json
import os
import signal
import sys

import numpy as np

import rill as fluid

BATCH = 32


def build(opt, model, dtype):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        y = fluid.layers.data(name='y', shape=[1], dtype=dtype)
        if model in ('sparse', 'table'):
            ids = fluid.layers.data(name='ids', shape=[1], dtype='int64')
            h = fluid.layers.embedding(ids, size=[2048, 8], is_sparse=True, dtype=dtype,
                                       is_distributed=model == 'table',
                                       padding_idx=0 if model == 'table' else None,
                                       param_attr=fluid.ParamAttr(name='emb'))
            h = fluid.layers.fc(h, size=16, act='relu')
        elif model == 'mlp_lr':  # per-parameter learning rates (ParamAttr)
            x = fluid.layers.data(name='x', shape=[16], dtype=dtype)
            h = fluid.layers.fc(x, size=1024, act='relu',
                                param_attr=fluid.ParamAttr(learning_rate=0.5))
        else:
            x = fluid.layers.data(name='x', shape=[16], dtype=dtype)
            h = fluid.layers.fc(x, size=1024, act='relu')
        pred = fluid.layers.fc(h, size=1, param_attr=fluid.ParamAttr(learning_rate=2.0)
                               if model == 'mlp_lr' else None)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        # mlp_lr's rate also decays: the schedule runs in the pservers' LR block
        lr = (fluid.layers.exponential_decay(0.01, 5, 0.5, staircase=True)
              if model == 'mlp_lr' else 0.01)
        {'sgd': lambda: fluid.optimizer.SGD(lr),
         'momentum': lambda: fluid.optimizer.Momentum(lr, 0.9),
         'adam': lambda: fluid.optimizer.Adam(0.001),
         'adagrad': lambda: fluid.optimizer.Adagrad(0.05)}[opt]().minimize(loss)
    return main, startup, loss


def batch(step, model, dtype):
    rng = np.random.RandomState(1000 + step)
    w = np.random.RandomState(7).uniform(-1, 1, (16, 1)).astype('float32')
    if model in ('sparse', 'table'):
        ids = rng.randint(0, 2048, (BATCH, 1)).astype('int64')
        if model == 'table':
            ids[::8] = 0  # padding_idx: zero rows (their gradient reaches row 0, as in Paddle)
            ids[1::8] = 1500 + step % 3  # rows asked for twice in a batch
        return {'ids': ids, 'y': ((ids % 7).astype(dtype) / 7.0 - 0.5)}
    x = rng.uniform(-1, 1, (BATCH, 16)).astype(dtype)
    return {'x': x, 'y': x.dot(w.astype(dtype))}


def params(main):
    """The parameters this process holds; one it declares without data (a trainer's
    distributed table) is an empty array."""
    scope = fluid.global_scope()
    out = {}
    for p in main.global_block().all_parameters():
        v = scope.find_var(p.name)  # None: no data
        out[p.name] = np.array(v.get_tensor()) if v is not None else np.zeros((0,))
    return out


def main():
    out, opt, model, steps = sys.argv[1:5]
    flags = sys.argv[5:]
    local = '--local' in flags
    die_after = int(flags[flags.index('--die-after') + 1]) if '--die-after' in flags else -1
    dtype = 'float64' if '--f64' in flags else 'float32'
    prog, startup, loss = build(opt, model, dtype)
    exe = fluid.Executor(fluid.CPUPlace())
    if local:
        exe.run(startup)
        losses = [exe.run(prog, feed=batch(s, model, dtype), fetch_list=[loss])[0]
                  for s in range(int(steps))]
        np.savez(os.path.join(out, 'params_local.npz'), **params(prog))
        np.save(os.path.join(out, 'loss_local.npy'), np.array(losses).ravel())
        return
    role = os.environ['PADDLE_TRAINING_ROLE']
    trainers = int(os.environ['PADDLE_TRAINERS_NUM'])
    tid = int(os.environ.get('PADDLE_TRAINER_ID', '0'))
    config = fluid.DistributeTranspilerConfig()
    if '--hash-name' in flags:
        config.split_method = fluid.transpiler.HashName
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(tid, program=prog, pservers=os.environ['PADDLE_PSERVERS_IP_PORT_LIST'],
                trainers=trainers, sync_mode='--async' not in flags, startup_program=startup)
    if role == 'PSERVER':
        ep = os.environ['PADDLE_CURRENT_ENDPOINT']
        ps = t.get_pserver_program(ep)
        exe.run(t.get_startup_program(ep, ps))
        exe.run(ps)
        scope = fluid.global_scope()
        held = {v.name: np.array(scope.find_var(v.name).get_tensor())
                for v in ps.global_block().vars.values()
                if v.persistable and '@GRAD' not in v.name and scope.find_var(v.name) is not None}
        np.savez(os.path.join(out, 'pserver_%d.npz' % os.environ['PADDLE_PSERVERS_IP_PORT_LIST']
                              .split(',').index(ep)), **held)
        print('pserver %s done' % ep)
        return
    counts = [int(c) for c in steps.split(',')]
    n = counts[tid] if len(counts) > 1 else counts[0]
    exe.run(startup)
    if model == 'table':  # what the startup program left of the table
        held = fluid.global_scope().find_var('emb') is not None  # None: no data
        ops = [op.type for op in startup.global_block().ops if 'emb' in op.output_arg_names]
        with open(os.path.join(out, 'table_held_%d.json' % tid), 'w') as f:
            json.dump({'held': held, 'startup_ops': ops}, f)
    tp = t.get_trainer_program()
    half = BATCH // trainers
    losses = []
    for s in range(n):
        if s == die_after and tid == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        feed = {k: v[tid * half:(tid + 1) * half] for k, v in batch(s, model, dtype).items()}
        losses.append(exe.run(tp, feed=feed, fetch_list=[loss])[0])
    np.savez(os.path.join(out, 'params_%d.npz' % tid), **params(prog))
    np.save(os.path.join(out, 'loss_%d.npy' % tid), np.array(losses).ravel())
    exe.close()
    print('trainer %d done' % tid)


if __name__ == '__main__':
    main()
