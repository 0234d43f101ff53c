"""Distributed training with parameter servers, the Fluid 1.x way: an MLP on the 8x8
UCI digits, trained by trainers that each take their share of every batch, with the
parameters cut into blocks held by parameter servers (pservers).

The role of this process comes from Paddle's environment variables, which the launcher
sets (and any cluster scheduler can):

    python -m rill.distributed.launch --servers 2 --workers 2 \\
        examples/dist_train/train.py --steps 100 --save-dir OUT

    python examples/dist_train/train.py --local --steps 100   # one process, whole batches

In sync mode every step of the job equals one local step on the whole batch: each
trainer sends the gradient of its half, the pservers average the halves and update the
parameters, and every trainer receives them back. The test accuracy of the two runs is
the same to rounding.
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np

import rill as fluid  # a Fluid 1.x script runs with this one change
from rill.distributed import is_saver

HERE = os.path.dirname(os.path.abspath(__file__))
DIGITS = os.path.join(HERE, '..', 'recognize_digits', 'digits.csv.gz')


def load_digits():
    """1437 training and 360 test images (8x8, 0..1) with their labels: the digits
    shipped with examples/recognize_digits, split by a fixed shuffle."""
    with gzip.open(DIGITS, 'rt') as f:
        data = np.loadtxt(f, delimiter=',')
    images = (data[:, :64] / 16.0).astype('float32')
    labels = data[:, 64:].astype('int64')
    order = np.random.RandomState(2024).permutation(len(data))
    images, labels = images[order], labels[order]
    return (images[:1437], labels[:1437]), (images[1437:], labels[1437:])


def build(lr, checkpoint=None):
    """The MLP 64-256-128-10 and its Adam training program. The two larger weights
    (64x256, 256x128) are cut into a block per pserver by the transpiler. With a
    CheckpointConfig the program checkpoints itself; transpiled, every process writes its
    part of the job's snapshots."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 90
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.layers.data('img', [64])
        label = fluid.layers.data('label', [1], dtype='int64')
        h = fluid.layers.fc(img, 256, act='relu')
        h = fluid.layers.fc(h, 128, act='relu')
        prediction = fluid.layers.fc(h, 10, act='softmax')
        loss = fluid.layers.mean(fluid.layers.cross_entropy(prediction, label))
        acc = fluid.layers.accuracy(prediction, label)
        test_program = main.clone(for_test=True)
        fluid.optimizer.Adam(learning_rate=lr).minimize(loss, checkpoint_config=checkpoint)
    return main, startup, test_program, loss, acc, prediction


class Bar(object):
    """A progress bar on stderr: redrawn in place on a terminal; through a pipe (as
    under the launcher) one line per tenth of the run."""

    def __init__(self, total, title):
        self.total, self.title = total, title
        self.tty = sys.stderr.isatty()
        self.start = time.perf_counter()
        self.shown = -1

    def update(self, done, loss):
        tenth = done * 10 // max(self.total, 1)
        if not self.tty and tenth == self.shown and done != self.total:
            return
        self.shown = tenth
        fill = done * 30 // max(self.total, 1)
        rate = done / max(time.perf_counter() - self.start, 1e-9)
        line = '%s [%s%s] %d/%d loss %.4f %.1f steps/s' % (
            self.title, '#' * fill, '.' * (30 - fill), done, self.total, loss, rate)
        sys.stderr.write(('\r' + line) if self.tty else (line + '\n'))
        if self.tty and done == self.total:
            sys.stderr.write('\n')
        sys.stderr.flush()


def batches(xtr, ytr, batch, steps, seed=7, start=0):
    """The global batches of the run, the same in every process: a fresh shuffle of
    the training set per epoch from one seeded generator. A run resumed after `start`
    steps gets the batches from step start + 1 on (the data position is the step)."""
    rng = np.random.RandomState(seed)
    per_epoch = len(xtr) // batch
    order = None
    for step in range(steps):
        if step % per_epoch == 0:
            order = rng.permutation(len(xtr))
        if step < start:
            continue
        idx = order[(step % per_epoch) * batch:(step % per_epoch + 1) * batch]
        yield xtr[idx], ytr[idx]


def train(exe, program, loss, data, steps, batch, share, parts, show, start=0,
          print_losses=False):
    """Runs steps start + 1 .. `steps`; this process feeds part `share` of `parts` of
    every global batch (parts = 1: the whole batch). Returns the last loss."""
    bar = Bar(steps, 'trainer 0' if parts > 1 else 'local') if show else None
    size = batch // parts
    lv = float('nan')
    for step, (x, y) in enumerate(batches(data[0], data[1], batch, steps, start=start),
                                  start + 1):
        part = slice(share * size, (share + 1) * size)
        lv = float(exe.run(program, feed={'img': x[part], 'label': y[part]},
                           fetch_list=[loss])[0][0])
        if print_losses:
            print('step %d loss %r' % (step, lv), flush=True)
        if bar:
            bar.update(step, lv)
    return lv


def resume(exe, config, program, tag):
    """The step of the newest complete checkpoint (0 when there is none), restored into
    this process: a trainer gets its own part and the pservers' parameters."""
    if config is None or not os.path.isdir(config.checkpoint_dir):
        return 0
    try:
        step = fluid.io.load_checkpoint(exe, config, program).step
    except fluid.core.NotFoundError:
        print('%s: no complete snapshot in %s: starting at step 0'
              % (tag, config.checkpoint_dir), flush=True)
        return 0
    print('%s: resumed from the snapshot of step %d in %s'
          % (tag, step, config.checkpoint_dir), flush=True)
    return step


def evaluate(exe, test_program, acc, test, tag):
    """Prints the test accuracy of the parameters in this process's scope."""
    a, = exe.run(test_program, feed={'img': test[0], 'label': test[1]}, fetch_list=[acc])
    a = float(a[0])
    print('%s: test accuracy %.4f' % (tag, a), flush=True)
    return a


def save(exe, test_program, prediction, save_dir, tag, writes=True):
    """Writes the inference model to save_dir. In a distributed job every trainer calls
    it: the elected one (rill.distributed.is_saver) writes the pservers' parameters, the
    others return without writing."""
    fluid.io.save_inference_model(save_dir, ['img'], [prediction], exe,
                                  main_program=test_program)
    if writes:
        print('%s: saved the inference model to %s' % (tag, save_dir), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--steps', type=int, default=100, help='training steps (default 100)')
    ap.add_argument('--batch', type=int, default=64,
                    help='global batch, divided evenly among the trainers (default 64)')
    ap.add_argument('--lr', type=float, default=0.003, help='Adam learning rate')
    ap.add_argument('--save-dir', default=None, metavar='OUT',
                    help='every trainer saves the inference model here (the elected one '
                    'writes it), or the local run does')
    ap.add_argument('--local', action='store_true',
                    help='train in this one process on whole batches (no pservers)')
    ap.add_argument('--sync', type=int, choices=[0, 1], default=1,
                    help='1: sync mode (default), 0: async')
    ap.add_argument('--checkpoint-dir', default=None, metavar='DIR',
                    help='snapshot the job here (every process its part) and resume from '
                         'the newest complete snapshot found there')
    ap.add_argument('--checkpoint-every', type=int, default=10, metavar='N',
                    help='steps between snapshots (default 10)')
    ap.add_argument('--checkpoint-seconds', type=float, default=0.0, metavar='T',
                    help='also snapshot when T seconds have passed since the last one '
                         '(trainer 0 decides and tells the others; default 0: off)')
    ap.add_argument('--checkpoint-keep', type=int, default=2, metavar='K',
                    help='complete snapshots kept (default 2)')
    ap.add_argument('--print-losses', action='store_true',
                    help='print every step\'s loss (full precision) on every trainer')
    args = ap.parse_args()
    if args.steps < 1:
        ap.error('--steps must be at least 1')
    if args.checkpoint_every < 1:
        ap.error('--checkpoint-every must be at least 1')

    train_data, test_data = load_digits()
    config = None
    if args.checkpoint_dir:
        config = fluid.io.CheckpointConfig(args.checkpoint_dir,
                                           every_n_steps=args.checkpoint_every,
                                           every_n_seconds=args.checkpoint_seconds,
                                           max_to_keep=args.checkpoint_keep)
    main_prog, startup, test_program, loss, acc, prediction = build(args.lr, config)
    exe = fluid.Executor(fluid.CPUPlace())

    if args.local:
        exe.run(startup)
        start = resume(exe, config, main_prog, 'local')
        train(exe, main_prog, loss, train_data, args.steps, args.batch, 0, 1, True,
              start, args.print_losses)
        evaluate(exe, test_program, acc, test_data, 'local')
        if args.save_dir:
            save(exe, test_program, prediction, args.save_dir, 'local')
        exe.close()
        return 0

    # Paddle's variables, read as Fluid 1.x scripts read them.
    role = os.getenv('PADDLE_TRAINING_ROLE', os.getenv('TRAINING_ROLE'))
    if role not in ('TRAINER', 'PSERVER'):
        print('PADDLE_TRAINING_ROLE is %r: run under python -m rill.distributed.launch, '
              'set the PADDLE_* variables (README.md), or pass --local' % (role,),
              file=sys.stderr)
        return 2
    pservers = os.getenv('PADDLE_PSERVERS_IP_PORT_LIST', '')
    if os.getenv('RILL_ETCD_ENDPOINTS'):
        # rill's etcd coordination: a pserver publishes its endpoint, and a trainer not
        # given the list waits until PADDLE_PSERVERS_NUM pservers have published theirs.
        from rill import distributed
        pservers = ','.join(distributed.env().pserver_endpoints)
    trainers = int(os.getenv('PADDLE_TRAINERS_NUM', '1'))
    if args.batch % trainers:
        ap.error('--batch %d is not divisible by the %d trainers' % (args.batch, trainers))

    t = fluid.DistributeTranspiler()
    trainer_id = int(os.getenv('PADDLE_TRAINER_ID', '0'))
    t.transpile(trainer_id, program=main_prog, pservers=pservers, trainers=trainers,
                sync_mode=bool(args.sync), startup_program=startup)

    if role == 'PSERVER':
        current = os.getenv('PADDLE_CURRENT_ENDPOINT')
        prog = t.get_pserver_program(current)
        exe.run(t.get_startup_program(current, prog))
        exe.run(prog)  # serves until every trainer has called exe.close()
        print('pserver %s: every trainer has finished' % current, flush=True)
        return 0

    exe.run(startup)  # the same initial parameters as the pservers' blocks
    prog = t.get_trainer_program()
    try:
        start = resume(exe, config, prog, 'trainer %d' % trainer_id)
        last = train(exe, prog, loss, train_data, args.steps, args.batch, trainer_id,
                     trainers, trainer_id == 0, start, args.print_losses)
        print('trainer %d: last loss %.4f' % (trainer_id, last), flush=True)
        if trainer_id == 0:
            # The last step's recv left the trained parameters in this scope.
            evaluate(exe, test_program, acc, test_data, 'distributed')
        if args.save_dir:  # before exe.close(): the pservers serve until then
            save(exe, test_program, prediction, args.save_dir, 'distributed',
                 writes=is_saver(trainer_id))
    finally:
        exe.close()  # tells the pservers this trainer is done
    return 0


if __name__ == '__main__':
    sys.exit(main())
