"""LSTM and GRU layers against PyTorch's CPU nn.LSTM / nn.GRU on the same sizes.

rill runs Fluid 1.x's layers: fc (the input projection, 4 or 3 gates wide) then
dynamic_lstm (without peepholes) or dynamic_gru, on a LoD batch of 32 sequences; PyTorch
runs nn.LSTM / nn.GRU, whose input projection is inside the layer, with as many input
features as hidden units on both sides. Cases: hidden 256 and 512, every sequence 10, 50
or 100 steps long, and a batch of mixed lengths 10..100 (PyTorch packs it with
pack_padded_sequence). Each case is timed forward only and as a training step (forward,
mean, backward, SGD). Then the 2.x `rnn` op (what paddle.nn.LSTM / GRU save), 2 layers,
bidirectional, hidden 256, 50 steps, forward, against nn.LSTM / nn.GRU with
num_layers=2, bidirectional=True. The PyTorch peer (bench/peers/torch_rnn.py) runs in its own
process under a Python that has torch; rill's and torch's rounds alternate, each side
keeps its best, and the ratio rill / torch is printed (below 1: rill faster).

With --device cuda:N both sides run on that GPU (scripts/gpu-check.sh): rill's executor
at CUDAPlace(N), PyTorch's modules there with cuDNN; each run copies its batch from the
host and waits for the result on both sides. The 2.x rnn op, which has no device kernel,
is left out there.

Usage: bench_rnn.py [--rounds N] [--quick] [--device cpu|cuda:N]  (RILL_LIB and
PYTHONPATH=python set)."""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'python'))
import rill as fluid  # noqa: E402

BATCH = 32
GATES = {'lstm': 4, 'gru': 3}


def mixed_lengths():
    return [10 + (i * 37) % 91 for i in range(BATCH)]


def cases(quick):
    shapes = [(256, [10] * BATCH), (256, [50] * BATCH), (256, [100] * BATCH),
              (512, [50] * BATCH), (256, mixed_lengths())]
    if quick:
        shapes = shapes[1:2]
    for cell in ('lstm', 'gru'):
        for hidden, lengths in shapes:
            for mode in ('fwd', 'train'):
                yield cell, mode, hidden, lengths


def rill_rnn_op(cell, hidden, steps, layers=2):
    """The 2.x rnn op on [steps, 32, hidden], bidirectional, weights as Paddle lists them
    (every W_ih, W_hh, then every b_ih, b_hh), forward only (is_test)."""
    gates = GATES[cell] * hidden
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        block = main.global_block()
        x = fluid.layers.data('x', [steps, BATCH, hidden], append_batch_size=False)
        states = [fluid.layers.fill_constant([2 * layers, BATCH, hidden], 'float32', 0.0)
                  for _ in range(2 if cell == 'lstm' else 1)]
        weights, biases = [], []
        for layer in range(layers):
            for _ in range(2):
                width = hidden if layer == 0 else 2 * hidden
                weights += [fluid.layers.create_parameter([gates, width], 'float32'),
                            fluid.layers.create_parameter([gates, hidden], 'float32')]
                biases += [fluid.layers.create_parameter([gates], 'float32'),
                           fluid.layers.create_parameter([gates], 'float32')]
        out = block.create_var(name='rnn_out', dtype='float32')
        last = [block.create_var(name='rnn_state%d' % i, dtype='float32')
                for i in range(len(states))]
        block.append_op(type='rnn', inputs={'Input': [x], 'PreState': states,
                                            'WeightList': weights + biases},
                        outputs={'Out': [out], 'State': last},
                        attrs={'mode': cell.upper(), 'num_layers': layers,
                               'hidden_size': hidden, 'input_size': hidden,
                               'is_bidirec': True, 'is_test': True})
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
    feed = {'x': np.random.RandomState(0).rand(steps, BATCH, hidden).astype('float32')}

    def run():
        with fluid.scope_guard(scope):
            exe.run(main, feed=feed, fetch_list=[out])
    return run


def rill_case(cell, mode, hidden, lengths, place=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data('x', shape=[hidden], dtype='float32', lod_level=1)
        proj = fluid.layers.fc(x, GATES[cell] * hidden, bias_attr=False)
        if cell == 'lstm':
            h, _ = fluid.layers.dynamic_lstm(proj, 4 * hidden, use_peepholes=False)
        else:
            h = fluid.layers.dynamic_gru(proj, hidden)
        loss = fluid.layers.mean(h)
        if mode == 'train':
            fluid.optimizer.SGD(learning_rate=0.001).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(place or fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
    rng = np.random.RandomState(0)
    data = rng.rand(sum(lengths), hidden).astype('float32')
    feed = {'x': fluid.create_lod_tensor(data, [lengths], fluid.CPUPlace())}

    def run():
        with fluid.scope_guard(scope):
            exe.run(main, feed=feed, fetch_list=[loss])
    return run


def best_of(run, rounds):
    best = float('inf')
    for _ in range(rounds):
        t = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def torch_python():
    for py in (sys.executable, 'python3', '/usr/bin/python3'):
        try:
            if subprocess.run([py, '-c', 'import torch'], capture_output=True).returncode == 0:
                return py
        except OSError:
            pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--rounds', type=int, default=3, help='alternations per case')
    ap.add_argument('--quick', action='store_true', help='one shape only')
    ap.add_argument('--device', default='cpu', help='cpu (default) or cuda:N, for both sides')
    args = ap.parse_args()
    place = None
    if args.device != 'cpu':
        if not args.device.startswith('cuda:'):
            ap.error('--device: cpu or cuda:N, not %r' % args.device)
        place = fluid.CUDAPlace(int(args.device.split(':')[1]))
    py = torch_python()
    peer = None
    if py:
        peer = subprocess.Popen([py, os.path.join(ROOT, 'bench', 'peers', 'torch_rnn.py'),
                                 '--device', args.device],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        print(peer.stdout.readline().strip())
    else:
        print('torch peer skipped: no python3 here can import torch (make peers installs it)')
    print('%-5s %-5s %6s %-12s %10s %10s %8s' % ('cell', 'mode', 'hidden', 'lengths',
                                                 'rill ms', 'torch ms', 'ratio'))
    ratios = []
    for cell, mode, hidden, lengths in cases(args.quick):
        run = rill_case(cell, mode, hidden, lengths, place)
        run()
        best_r = best_t = float('inf')
        for _ in range(args.rounds):
            best_r = min(best_r, best_of(run, 2))
            if peer:
                peer.stdin.write('%s %s %d %s 2\n' % (cell, mode, hidden,
                                                      ','.join(map(str, lengths))))
                peer.stdin.flush()
                best_t = min(best_t, float(peer.stdout.readline().split()[1]))
        shown = ('%d' % lengths[0]) if len(set(lengths)) == 1 else 'mixed 10..100'
        ratio = best_r / best_t if peer else float('nan')
        ratios.append(ratio)
        print('%-5s %-5s %6d %-12s %10.2f %10.2f %8.2f' % (cell, mode, hidden, shown, best_r,
                                                           best_t, ratio), flush=True)
    if place is None:
        print('the 2.x rnn op, 2 layers, bidirectional, forward:')
    for cell in ('lstm', 'gru') if place is None else ():
        steps = 50
        run = rill_rnn_op(cell, 256, steps)
        run()
        best_r = best_t = float('inf')
        for _ in range(args.rounds):
            best_r = min(best_r, best_of(run, 2))
            if peer:
                peer.stdin.write('%s fwd 256 %s 2 2 1\n' % (cell, ','.join([str(steps)] * BATCH)))
                peer.stdin.flush()
                best_t = min(best_t, float(peer.stdout.readline().split()[1]))
        ratio = best_r / best_t if peer else float('nan')
        ratios.append(ratio)
        print('%-5s %-5s %6d %-12s %10.2f %10.2f %8.2f' % ('rnn ' + cell[0], 'fwd', 256, '50 x2 bi',
                                                           best_r, best_t, ratio), flush=True)
    if peer:
        peer.stdin.close()
        peer.wait(timeout=30)
        print('rill / torch, worst case %.2f, geometric mean %.2f (target <= 1.0)' %
              (max(ratios), float(np.exp(np.mean(np.log(ratios))))))


if __name__ == '__main__':
    main()
