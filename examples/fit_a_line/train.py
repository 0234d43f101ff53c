"""Linear regression on the UCI housing data (fit_a_line), Fluid-style: train with a
progress bar, save an inference model, load it back and report the test error."""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import rill as fluid  # noqa: E402
from progress import Progress  # noqa: E402


def load_housing():
    """housing.data: 506 rows of 13 features and the median price (in $1000s). Features
    are scaled as Paddle's uci_housing reader does: (x - mean) / (max - min)."""
    data = np.loadtxt(os.path.join(HERE, 'housing.data'))
    x = data[:, :13]
    x = (x - x.mean(0)) / (x.max(0) - x.min(0))
    y = data[:, 13:]
    n = int(len(data) * 0.8)
    return (x[:n].astype('float32'), y[:n].astype('float32')), \
        (x[n:].astype('float32'), y[n:].astype('float32'))


def train(epochs, batch, model_dir, lr=0.01):
    (xtr, ytr), (xte, yte) = load_housing()
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name='x', shape=[13], dtype='float32')
        y = fluid.layers.data(name='y', shape=[1], dtype='float32')
        y_predict = fluid.layers.fc(input=x, size=1, act=None)
        cost = fluid.layers.square_error_cost(input=y_predict, label=y)
        avg_cost = fluid.layers.mean(cost)
        test_program = main.clone(for_test=True)
        fluid.optimizer.SGD(learning_rate=lr).minimize(avg_cost)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    rng = np.random.RandomState(3)
    for epoch in range(epochs):
        order = rng.permutation(len(xtr))
        bar = Progress(len(xtr), 'epoch %3d/%d' % (epoch + 1, epochs))
        for i in range(0, len(xtr), batch):
            idx = order[i:i + batch]
            loss, = exe.run(main, feed={'x': xtr[idx], 'y': ytr[idx]}, fetch_list=[avg_cost])
            bar.update(len(idx), loss[0])
        if epoch % 10 == 9 or epoch == epochs - 1:
            bar.close()
    test_cost, = exe.run(test_program, feed={'x': xte, 'y': yte}, fetch_list=[avg_cost])
    fluid.io.save_inference_model(model_dir, ['x'], [y_predict], exe, main_program=main)
    with fluid.scope_guard(fluid.Scope()):
        program, feeds, fetches = fluid.io.load_inference_model(model_dir, exe)
        pred, = exe.run(program, feed={feeds[0]: xte}, fetch_list=fetches)
    mse = float(((pred - yte) ** 2).mean())
    print('test mean squared error %.3f in training, %.3f from the reloaded inference model'
          % (float(test_cost[0]), mse))
    for i in range(3):
        print('  house %d: predicted %.1f, actual %.1f ($1000s)' % (i, pred[i, 0], yte[i, 0]))
    return mse


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--epochs', type=int, default=100)
    ap.add_argument('--batch', type=int, default=20)
    ap.add_argument('--save', default=None, help='directory for the inference model')
    args = ap.parse_args()
    train(args.epochs, args.batch, args.save or tempfile.mkdtemp(prefix='rill_fit_a_line_'))


if __name__ == '__main__':
    main()
