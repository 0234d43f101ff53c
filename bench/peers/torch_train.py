"""PyTorch peer of bench/bench_train.c: the same training steps (forward, backward,
SGD), float32 on the CPU (or with --device cuda, on the GPU, each step's batch copied
from the host as bench_train --device feeds it), best of interleaved rounds. Prints
"RESULT mlp_ms=... lenet_ms=..." for scripts/bench.sh and scripts/gpu-check.sh.
Optional: never a build or test dependency."""
import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ROUNDS, STEPS = 7, 5


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 6, 5, padding=2)
        self.c2 = nn.Conv2d(6, 16, 5)
        self.f1 = nn.Linear(400, 120)
        self.f2 = nn.Linear(120, 84)
        self.f3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = x.flatten(1)
        return self.f3(F.relu(self.f2(F.relu(self.f1(x)))))


def step_fn(model, x, y, device):
    model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
        loss.backward()
        opt.step()
        return loss.item()

    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--device', default='cpu', help='cpu (default) or cuda')
    device = torch.device(ap.parse_args().device)
    # Give the peer every core, as rill's OpenBLAS has: Debian's build starts with one.
    torch.set_num_threads(os.cpu_count() or 1)
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                        nn.Linear(512, 10))
    mlp_step = step_fn(mlp, torch.rand(128, 784) * 2 - 1, torch.arange(128) * 7 % 10, device)
    lenet_step = step_fn(LeNet(), torch.rand(64, 1, 28, 28) * 2 - 1, torch.arange(64) * 3 % 10,
                         device)
    mlp_step()
    lenet_step()
    best = {"mlp": 1e30, "lenet": 1e30}
    for _ in range(ROUNDS):
        for name, fn in (("mlp", mlp_step), ("lenet", lenet_step)):
            t = time.perf_counter()
            for _ in range(STEPS):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t) / STEPS)
    print("torch %s on %s: mlp %.2f ms, lenet %.2f ms" % (torch.__version__, device,
                                                         best["mlp"] * 1e3, best["lenet"] * 1e3))
    print("RESULT mlp_ms=%.4f lenet_ms=%.4f" % (best["mlp"] * 1e3, best["lenet"] * 1e3))


if __name__ == "__main__":
    main()
