"""Writes resume/: a training run of Paddle 1.8.5 saved mid-way, to be resumed by
tests/python/test_paddle_resume.py. `build(fluid)` (shared with the test) is an MLP
with batch_norm and dropout trained by Adam with L2 weight decay under a piecewise_decay
schedule, and a second program under exponential_decay with Momentum: their
persistables hold Paddle's step counter (@LR_DECAY_COUNTER@, int64), the schedule's
`learning_rate`, Adam's moments and beta powers, the velocities and batch_norm's
statistics. Recorded per program: the persistables after four steps
(`save_persistables`, one file each) and the losses of the four steps after them. Run
with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'resume')
STEPS = 4
KINDS = ('adam_piecewise', 'momentum_exponential')


def build(fluid, kind):
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 23
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data('x', [None, 10], 'float32')
        label = fluid.data('label', [None, 1], 'int64')
        h = L.fc(x, 16)
        h = L.batch_norm(h, act='relu')
        h = L.dropout(h, 0.2)
        logits = L.fc(h, 3)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        if kind == 'adam_piecewise':
            opt = fluid.optimizer.Adam(L.piecewise_decay([3, 6], [0.05, 0.02, 0.01]),
                                       regularization=fluid.regularizer.L2Decay(0.01))
        else:
            opt = fluid.optimizer.Momentum(L.exponential_decay(0.2, 2, 0.5, staircase=True),
                                           0.9)
        opt.minimize(loss)
    return main, startup, loss


def batches():
    rng = np.random.RandomState(8)
    return [{'x': rng.rand(6, 10).astype('float32'),
             'label': rng.randint(0, 3, (6, 1)).astype('int64')} for _ in range(2 * STEPS)]


def main():
    import paddle.fluid as fluid
    out = {}
    exe = fluid.Executor(fluid.CPUPlace())
    for kind in KINDS:
        prog, startup, loss = build(fluid, kind)
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            exe.run(startup)
            data = batches()
            for b in data[:STEPS]:
                exe.run(prog, feed=b, fetch_list=[loss])
            fluid.io.save_persistables(exe, os.path.join(OUT, kind), prog)
            out[kind] = np.array([exe.run(prog, feed=b, fetch_list=[loss])[0]
                                  for b in data[STEPS:]]).reshape(-1)
    np.savez(os.path.join(OUT, 'losses.npz'), **out)
    print(out)


if __name__ == '__main__':
    main()
