"""The while op's overhead per iteration, against the same ops unrolled.

Both programs run the same small ops 100 times on a [1, 16] tensor: x = x * 1.0001 + 0
(scale), x = x + y (elementwise_add), i += 1 (increment) and cond = i < 100 (less_than).
One writes them once inside `layers.While` (a sub-block run 100 times, in the scope
semantics Paddle gives it: with is_test one child scope for every step, in training a
new scope per step kept for while_grad); the other writes them 100 times in block 0.
Rounds alternate and each side keeps its best. Printed: the time per iteration and the
ratio while / unrolled (target <= 1.2 for is_test).

Usage: bench_while.py [--iters N] [--rounds N]  (RILL_LIB and PYTHONPATH=python set)."""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'python'))
import rill as fluid  # noqa: E402

L = fluid.layers


def body(x, y, i, n, cond):
    L.assign(L.elementwise_add(L.scale(x, 1.0001), y), x)
    L.increment(i, 1, in_place=True)
    L.less_than(i, n, cond=cond)


def program(iters, unrolled, is_test):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data('x', [1, 16], append_batch_size=False)
        y = L.fill_constant([1, 16], 'float32', 0.5)
        acc = L.fill_constant([1, 16], 'float32', 0.0)
        L.assign(x, acc)
        i = L.fill_constant([1], 'int64', 0)
        n = L.fill_constant([1], 'int64', iters)
        cond = L.less_than(i, n)
        if unrolled:
            for _ in range(iters):
                body(acc, y, i, n, cond)
        else:
            loop = L.While(cond, is_test=is_test)
            with loop.block():
                body(acc, y, i, n, cond)
        out = L.scale(acc, 1.0)
    return main, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--iters', type=int, default=100)
    ap.add_argument('--rounds', type=int, default=7)
    args = ap.parse_args()
    feed = {'x': np.ones((1, 16), 'float32')}
    sides = {
        'while': program(args.iters, False, True),
        'while, training': program(args.iters, False, False),
        'unrolled': program(args.iters, True, False),
    }
    exe = fluid.Executor(fluid.CPUPlace())
    results = {}
    for name, (prog, out) in sides.items():
        results[name] = exe.run(prog, feed=feed, fetch_list=[out])[0]
        np.testing.assert_allclose(results[name], results['while'], rtol=1e-6)
    best = {k: float('inf') for k in sides}
    for _ in range(args.rounds):
        for name, (prog, out) in sides.items():
            t = time.perf_counter()
            for _ in range(20):
                exe.run(prog, feed=feed, fetch_list=[out])
            best[name] = min(best[name], (time.perf_counter() - t) / 20)
    print('%d iterations of 4 small ops, us per iteration:' % args.iters)
    for name, t in best.items():
        print('  %-16s %7.2f   / unrolled %.2f' % (name, t / args.iters * 1e6,
                                                  t / best['unrolled']))
    print('while (is_test) / unrolled: %.2f (target <= 1.2); in training each step keeps its '
          'scope for while_grad' % (best['while'] / best['unrolled']))


if __name__ == '__main__':
    main()
