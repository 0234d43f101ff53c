"""Handwritten digits (8x8 UCI digits) with an MLP and a small CNN, Fluid-style: train
with a progress bar, save an inference model, load it back and evaluate it."""
import argparse
import gzip
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import rill as fluid  # noqa: E402  (a Fluid 1.x script runs with this one change)
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


def train(kind, epochs, batch, model_dir, quiet=False):
    (xtr, ytr), (xte, yte) = load_digits()
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 90
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.layers.data('img', [1, 8, 8])
        label = fluid.layers.data('label', [1], dtype='int64')
        prediction = (mlp if kind == 'mlp' else cnn)(img)
        loss = fluid.layers.mean(fluid.layers.cross_entropy(prediction, label))
        acc = fluid.layers.accuracy(prediction, label)
        test_program = main.clone(for_test=True)
        fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    rng = np.random.RandomState(7)
    for epoch in range(epochs):
        order = rng.permutation(len(xtr))
        bar = Progress(len(xtr), '%s epoch %2d/%d' % (kind, epoch + 1, epochs))
        for i in range(0, len(xtr), batch):
            idx = order[i:i + batch]
            lv, = exe.run(main, feed={'img': xtr[idx], 'label': ytr[idx]}, fetch_list=[loss])
            bar.update(len(idx), lv[0])
        if not quiet or epoch == epochs - 1:
            bar.close()
    test_acc, = exe.run(test_program, feed={'img': xte, 'label': yte}, fetch_list=[acc])
    fluid.io.save_inference_model(model_dir, ['img'], [prediction], exe, main_program=main)

    # A fresh scope, as a separate process would have: only what the model dir holds.
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
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--save', default=None, help='directory for the inference models')
    ap.add_argument('--min-accuracy', type=float, default=0.0,
                    help='exit with status 1 if the CNN (or the only model) scores below')
    args = ap.parse_args()
    base = args.save or tempfile.mkdtemp(prefix='rill_digits_')
    kinds = ['mlp', 'cnn'] if args.model == 'both' else [args.model]
    result = {k: train(k, args.epochs, args.batch, os.path.join(base, k)) for k in kinds}
    judged = result.get('cnn', result[kinds[-1]])
    if judged < args.min_accuracy:
        print('accuracy %.4f is below the required %.4f' % (judged, args.min_accuracy))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
