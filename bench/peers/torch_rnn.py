"""PyTorch peer of bench/bench_rnn.py: nn.LSTM / nn.GRU on the CPU, float32, every core
(or with --device cuda:N on that GPU, cuDNN, each run's batch copied from the host and
the run waited for).
It reads one case per line on stdin ("lstm|gru fwd|train HIDDEN LENGTHS ROUNDS [LAYERS
BIDIRECTIONAL]", LENGTHS comma-separated, one sequence per batch row) and answers "ms BEST" with the best time of
ROUNDS runs, so that bench_rnn.py can interleave its rounds with rill's. The input has as
many features as the hidden state; a training step is forward, mean, backward and SGD.
Sequences of unequal length go through pack_padded_sequence, as a Fluid LoD batch needs
no padding. Optional: never a build or test dependency."""
import argparse
import os
import sys
import time

import torch
from torch.nn.utils.rnn import pack_padded_sequence

CELLS = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}
_models = {}


def case(cell, mode, hidden, lengths, layers=1, bidir=False, device="cpu"):
    key = (cell, hidden, layers, bidir)
    if key not in _models:
        torch.manual_seed(0)
        m = CELLS[cell](hidden, hidden, num_layers=layers, bidirectional=bidir).to(device)
        _models[key] = (m, torch.optim.SGD(m.parameters(), lr=0.001))
    model, opt = _models[key]
    x_host = torch.rand(max(lengths), len(lengths), hidden)
    same = len(set(lengths)) == 1
    lens = torch.tensor(lengths)
    sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)

    def forward():
        x = x_host.to(device)
        inp = x if same else pack_padded_sequence(x, lens, enforce_sorted=False)
        out = model(inp)[0]
        return out if same else out.data

    if mode == "fwd":
        def run():
            with torch.no_grad():
                forward()
            sync()
    else:
        def run():
            opt.zero_grad(set_to_none=True)
            forward().mean().backward()
            opt.step()
            sync()
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda:N")
    device = ap.parse_args().device
    torch.set_num_threads(os.cpu_count() or 1)
    if device != "cpu":
        torch.backends.cudnn.benchmark = True
        print("torch %s on %s (%s), cuDNN %s" % (torch.__version__, device,
                                                 torch.cuda.get_device_name(device),
                                                 torch.backends.cudnn.version()), flush=True)
    else:
        print("torch %s, %d threads" % (torch.__version__, torch.get_num_threads()), flush=True)
    for line in sys.stdin:
        f = line.split()
        cell, mode, hidden, lengths, rounds = f[:5]
        layers, bidir = (int(f[5]), f[6] == "1") if len(f) > 5 else (1, False)
        run = case(cell, mode, int(hidden), [int(v) for v in lengths.split(",")], layers, bidir,
                   device)
        run()
        best = float("inf")
        for _ in range(int(rounds)):
            t = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - t)
        print("ms %.4f" % (best * 1e3), flush=True)


if __name__ == "__main__":
    main()
