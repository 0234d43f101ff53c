"""Handwritten digits (8x8 UCI digits) with an MLP and a small CNN, Fluid-style: train
with a progress bar, save an inference model, load it back and evaluate it."""
import argparse
import gzip
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import rill as fluid  # noqa: E402  (a Fluid 1.x script runs with this one change)
from device import add_device_argument, place_of  # noqa: E402
from progress import Progress  # noqa: E402


def load_digits():
    with gzip.open(os.path.join(HERE, 'digits.csv.gz'), 'rt') as f:
        data = np.loadtxt(f, delimiter=',')
    images = (data[:, :64] / 16.0).astype('float32').reshape(-1, 1, 8, 8)
    labels = data[:, 64:].astype('int64')
    order = np.random.RandomState(2024).permutation(len(data))
    images, labels = images[order], labels[order]
    return (images[:1437], labels[:1437]), (images[1437:], labels[1437:])


def mlp(img):
    h = fluid.layers.fc(img, 128, act='relu')
    h = fluid.layers.fc(h, 64, act='relu')
    return fluid.layers.fc(h, 10, act='softmax')


def cnn(img):
    h = fluid.layers.conv2d(img, num_filters=16, filter_size=3, padding=1, act='relu')
    h = fluid.layers.pool2d(h, pool_size=2, pool_type='max', pool_stride=2)
    h = fluid.layers.conv2d(h, num_filters=32, filter_size=3, padding=1)
    h = fluid.layers.batch_norm(h, act='relu')
    h = fluid.layers.pool2d(h, pool_size=2, pool_type='max', pool_stride=2)
    return fluid.layers.fc(h, 10, act='softmax')


def save_model(model_dir, exe, main, prediction):
    """Writes the inference model next to `model_dir` and then renames it into place, so
    that a process killed while saving leaves no half-written model behind (a rerun
    writes it again)."""
    partial = model_dir + '.partial'
    shutil.rmtree(partial, ignore_errors=True)
    fluid.io.save_inference_model(partial, ['img'], [prediction], exe, main_program=main)
    shutil.rmtree(model_dir, ignore_errors=True)
    os.rename(partial, model_dir)


def train(kind, epochs, batch, model_dir, quiet=False, steps=None, checkpoint_dir=None,
          checkpoint_every=10, profile_dir=None, place=None):
    """Trains for `steps` steps (default: `epochs` epochs). Step s trains on batch
    s % per_epoch of epoch s // per_epoch's shuffle, so a run resumed from the
    checkpoint of step s in `checkpoint_dir` continues exactly where it stopped."""
    (xtr, ytr), (xte, yte) = load_digits()
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 90
    config = None
    if checkpoint_dir:
        config = fluid.io.CheckpointConfig(checkpoint_dir, every_n_steps=checkpoint_every,
                                           max_to_keep=2)
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.layers.data('img', [1, 8, 8])
        label = fluid.layers.data('label', [1], dtype='int64')
        prediction = (mlp if kind == 'mlp' else cnn)(img)
        loss = fluid.layers.mean(fluid.layers.cross_entropy(prediction, label))
        acc = fluid.layers.accuracy(prediction, label)
        test_program = main.clone(for_test=True)
        fluid.optimizer.Adam(learning_rate=0.01).minimize(loss, checkpoint_config=config)
    place = place or fluid.CPUPlace()
    exe = fluid.Executor(place)
    exe.run(startup)
    per_epoch = (len(xtr) + batch - 1) // batch
    total = steps if steps is not None else epochs * per_epoch
    step = 0
    report = trace = None
    if config is not None:
        try:
            step = fluid.io.load_checkpoint(exe, config, main).step
            print('%s: resumed from the checkpoint of step %d in %s'
                  % (kind, step, checkpoint_dir), flush=True)
        except fluid.NotFoundError as e:
            if os.path.isdir(checkpoint_dir):
                print('%s: starting afresh: %s' % (kind, e))
    # One shuffle per epoch, drawn in order from one generator: epoch e's order is the
    # same whether this process started at step 0 or resumed.
    rng = np.random.RandomState(7)
    orders = []
    n_epochs = (total + per_epoch - 1) // per_epoch
    while step < total:
        epoch, first = divmod(step, per_epoch)
        while len(orders) <= epoch:
            orders.append(rng.permutation(len(xtr)))
        bar = Progress(len(xtr) - min(first * batch, len(xtr)),
                       '%s epoch %2d/%d' % (kind, epoch + 1, n_epochs))
        for i in range(first, per_epoch):
            if step >= total:
                break
            idx = orders[epoch][i * batch:(i + 1) * batch]
            profiled = profile_dir is not None and step == total - 1
            if profiled:  # the last step's timeline
                fluid.profiler.start_profiler('CPU' if isinstance(place, fluid.CPUPlace) else 'All')
            lv, = exe.run(main, feed={'img': xtr[idx], 'label': ytr[idx]}, fetch_list=[loss])
            if profiled:
                trace = os.path.join(profile_dir, '%s_step.json' % kind)
                os.makedirs(profile_dir, exist_ok=True)
                report = fluid.profiler.stop_profiler('total', trace, print_summary=False)
            bar.update(len(idx), lv[0])
            step += 1
        if not quiet or step >= total:
            bar.close()
    if report is not None:
        print('%s: where training step %d spent its time (all ops, all threads):'
              % (kind, total))
        for r in report.by_type[:6]:
            print('  %-24s %3d calls %9.3f ms  %5.1f%%'
                  % (r['name'], r['calls'], r['total'], 100 * r['ratio']))
        print('%s: the step\'s timeline is %s: open it in ui.perfetto.dev or chrome://tracing'
              % (kind, trace))
    test_acc, = exe.run(test_program, feed={'img': xte, 'label': yte}, fetch_list=[acc])
    save_model(model_dir, exe, main, prediction)
    exe.close()  # waits for the last checkpoint and reports a failed write

    # A fresh scope, as a separate process would have: only what the model dir holds.
    exe = fluid.Executor(place)
    with fluid.scope_guard(fluid.Scope()):
        program, feeds, fetches = fluid.io.load_inference_model(model_dir, exe)
        probs, = exe.run(program, feed={feeds[0]: xte}, fetch_list=fetches)
    reloaded = float((probs.argmax(1) == yte[:, 0]).mean())
    print('%s: test accuracy %.4f in training, %.4f from the reloaded inference model (%s)'
          % (kind, float(test_acc[0]), reloaded, model_dir))
    return reloaded


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--model', choices=['mlp', 'cnn', 'both'], default='both')
    ap.add_argument('--epochs', type=int, default=12)
    ap.add_argument('--steps', type=int, default=None, metavar='N',
                    help='train this many steps (batches) instead of --epochs epochs')
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--save-dir', '--save', dest='save', default=None, metavar='OUT',
                    help='directory for the inference models (one subdirectory per model)')
    ap.add_argument('--checkpoint-dir', default=None, metavar='DIR',
                    help='checkpoint training here (one subdirectory per model) and resume '
                         'from the newest checkpoint found there')
    ap.add_argument('--checkpoint-every', type=int, default=10, metavar='N',
                    help='steps between checkpoints (default 10; 0: every step)')
    ap.add_argument('--profile', default=None, metavar='DIR',
                    help="profile each model's last training step: DIR/<model>_step.json "
                         '(a trace-event timeline) and a summary of where its time went')
    add_device_argument(ap)
    ap.add_argument('--min-accuracy', type=float, default=0.0,
                    help='exit with status 1 if the CNN (or the only model) scores below')
    args = ap.parse_args()
    if args.steps is not None and args.steps < 0:
        ap.error('--steps must not be negative')
    try:
        place = place_of(args.device)
    except ValueError as e:
        ap.error(str(e))
    base = args.save or tempfile.mkdtemp(prefix='rill_digits_')
    kinds = ['mlp', 'cnn'] if args.model == 'both' else [args.model]
    result = {}
    for k in kinds:
        ckpt = os.path.join(args.checkpoint_dir, k) if args.checkpoint_dir else None
        result[k] = train(k, args.epochs, args.batch, os.path.join(base, k), steps=args.steps,
                          checkpoint_dir=ckpt, checkpoint_every=args.checkpoint_every,
                          profile_dir=args.profile, place=place)
    judged = result.get('cnn', result[kinds[-1]])
    if judged < args.min_accuracy:
        print('accuracy %.4f is below the required %.4f' % (judged, args.min_accuracy))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
