"""MultiSlot reading speed (rill.multislot): lines/s of CPU time (time.process_time) to
parse seeded Criteo-like lines (13 dense floats, 26 id slots of one id, a label) as the
queue feed reads them and with the in-memory feed's zero dropping, and to make batches
of 512 with their feeds from the parsed columns. Baseline, in the same run: splitting
the same lines into tokens (`str.split`) and nothing else, the least a reader in Python
does; the ratio is parse time / split time.

    RILL_LIB=build/librill.so PYTHONPATH=python python3 bench/bench_multislot.py [--lines N]
"""
import argparse
import time

import numpy as np

from rill import multislot


def make_lines(n):
    rng = np.random.RandomState(0)
    out = []
    for _ in range(n):
        parts = ['13'] + ['%g' % x for x in np.round(rng.rand(13), 4)]
        for _ in range(26):
            parts += ['1', str(rng.randint(1, 10 ** 9))]
        parts += ['1', str(rng.randint(0, 2))]
        out.append(' '.join(parts) + '\n')
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--lines', type=int, default=20000)
    ap.add_argument('--repeat', type=int, default=3)
    args = ap.parse_args()
    lines = make_lines(args.lines)
    size = sum(map(len, lines))
    slots = ([multislot.Slot('dense', 'float', True, True, [-1, 13])] +
             [multislot.Slot('C%d' % i, 'uint64') for i in range(26)] +
             [multislot.Slot('label', 'uint64', True, True, [-1, 1])])
    best_split = float('inf')
    for _ in range(args.repeat):
        t = time.process_time()
        for line in lines:
            line.split()
        best_split = min(best_split, time.process_time() - t)
    print('split     %8.0f lines/s (baseline)' % (len(lines) / best_split))
    for drop in (False, True):
        parser = multislot.MultiSlotParser(slots, drop_zeros=drop)
        best_parse = best_feed = float('inf')
        for _ in range(args.repeat):
            t = time.process_time()
            cols = parser.parse(lines, 'bench')
            best_parse = min(best_parse, time.process_time() - t)
            t = time.process_time()
            for s in range(0, len(cols), 512):
                cols.slice(s, s + 512).feed()
            best_feed = min(best_feed, time.process_time() - t)
        print('%-9s parse %8.0f lines/s (%5.1f MB/s, %.1fx split)   batches+feeds %8.0f '
              'lines/s' % ('in-memory' if drop else 'queue', len(lines) / best_parse,
                           size / best_parse / 1e6, best_parse / best_split,
                           len(lines) / best_feed))


if __name__ == '__main__':
    main()
