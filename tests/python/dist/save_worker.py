"""One process of tests/python/test_dist_save.py: a Fluid 1.x MLP (16-1024-1, Momentum,
float32; its first weight cut into a block per pserver) trained as a parameter-server
job, its role from Paddle's environment variables.

    save_worker.py OUT STEPS [--local]

Every trainer, after its last step and before exe.close(), calls
fluid.io.save_inference_model and fluid.io.save_persistables into OUT/model (the same
directory for all), and save_inference_model into OUT/model_of_<trainer id> (its own),
then prints what each returned; before that it fetches the parameters into a fresh
scope with rill.distributed.fetch_parameters and prints whether they equal its own. A
pserver, once every trainer has finished, writes the
values of every persistable variable it holds to OUT/pserver_<i>.npz (i: its place in
the endpoint list). --local trains the same steps in one process on whole batches and
saves into OUT/local."""
import os
import sys

import numpy as np

import rill as fluid
from rill import distributed

BATCH = 32


def build():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name='x', shape=[16], dtype='float32')
        y = fluid.layers.data(name='y', shape=[1], dtype='float32')
        h = fluid.layers.fc(x, size=1024, act='relu')
        pred = fluid.layers.fc(h, size=1)
        test = main.clone(for_test=True)  # before transpiling, as scripts do
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.Momentum(0.01, 0.9).minimize(loss)
    return main, startup, test, pred, loss


def batch(step):
    rng = np.random.RandomState(1000 + step)
    w = np.random.RandomState(7).uniform(-1, 1, (16, 1)).astype('float32')
    x = rng.uniform(-1, 1, (BATCH, 16)).astype('float32')
    return {'x': x, 'y': x.dot(w)}


def main():
    out, steps = sys.argv[1], int(sys.argv[2])
    prog, startup, test, pred, loss = build()
    exe = fluid.Executor(fluid.CPUPlace())
    if '--local' in sys.argv[3:]:
        exe.run(startup)
        for s in range(steps):
            exe.run(prog, feed=batch(s), fetch_list=[loss])
        fluid.io.save_persistables(exe, os.path.join(out, 'local'), prog)
        return
    role = os.environ['PADDLE_TRAINING_ROLE']
    eps = os.environ['PADDLE_PSERVERS_IP_PORT_LIST']
    trainers = int(os.environ['PADDLE_TRAINERS_NUM'])
    tid = int(os.environ.get('PADDLE_TRAINER_ID', '0'))
    t = fluid.DistributeTranspiler()
    t.transpile(tid, program=prog, pservers=eps, trainers=trainers, startup_program=startup)
    if role == 'PSERVER':
        ep = os.environ['PADDLE_CURRENT_ENDPOINT']
        ps = t.get_pserver_program(ep)
        exe.run(t.get_startup_program(ep, ps))
        exe.run(ps)
        scope = fluid.global_scope()
        held = {}
        for name, v in ps.global_block().vars.items():
            if v.persistable and scope.find_var(name) is not None:
                try:
                    held[name] = np.array(scope.find_var(name).get_tensor())
                except Exception:  # declared but never given a value
                    pass
        np.savez(os.path.join(out, 'pserver_%d.npz' % eps.split(',').index(ep)), **held)
        print('pserver %s done' % ep)
        return
    exe.run(startup)
    tp = t.get_trainer_program()
    half = BATCH // trainers
    for s in range(steps):
        feed = {k: v[tid * half:(tid + 1) * half] for k, v in batch(s).items()}
        exe.run(tp, feed=feed, fetch_list=[loss])
    # the public fetch into a fresh scope gives what the last step's recv left here
    fresh = fluid.Scope()
    got = distributed.fetch_parameters(exe, tp, fresh)
    same = all(np.array(fresh.find_var(n).get_tensor()).tobytes() ==
               np.array(fluid.global_scope().find_var(n).get_tensor()).tobytes() for n in got)
    print('trainer %d fetched %s equal=%s' % (tid, ','.join(got), same))
    shared = os.path.join(out, 'model')
    names = fluid.io.save_inference_model(shared, ['x'], [pred], exe, main_program=test)
    fluid.io.save_persistables(exe, shared, prog)
    fluid.io.save_inference_model(os.path.join(out, 'model_of_%d' % tid), ['x'], [pred], exe,
                                  main_program=test)
    print('trainer %d saver=%s fetch=%s' % (tid, distributed.is_saver(tid), names))
    exe.close()
    print('trainer %d done' % tid)


if __name__ == '__main__':
    main()
