"""Shared by the gen_*.py scripts: run under PaddlePaddle 1.8.5 (Python 3.7), they build
a model of models.py with paddle.fluid, save its starting persistables in Paddle's
format, train STEPS steps on seeded synthetic batches and record the losses."""
import json
import os
import shutil

import numpy as np
import paddle
import paddle.fluid as fluid

import models

HERE = os.path.dirname(os.path.abspath(__file__))


def generate(name, batches):
    """`batches` maps each feed name to an array [STEPS, batch, ...], or a LoD feed
    (models.LOD_FEEDS) to (every step's ids end to end, lengths [STEPS, batch]). Writes
    HERE/name/: the forward program's persistables (one file each, params/), the batches
    as .npy (a LoD feed's lengths as <name>.lod.npy) and losses.json."""
    out = os.path.join(HERE, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    main, startup, forward, feeds, loss = models.build(fluid, name)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        fluid.io.save_persistables(exe, os.path.join(out, 'params'), main_program=forward)
        losses = []
        for s in range(models.STEPS):
            l, = exe.run(main, feed=models.feed(fluid, name, batches, s), fetch_list=[loss])
            losses.append(float(np.asarray(l).reshape(-1)[0]))
    for k in feeds:
        if k in models.LOD_FEEDS.get(name, ()):
            np.save(os.path.join(out, k + '.npy'), batches[k][0])
            np.save(os.path.join(out, k + '.lod.npy'), batches[k][1])
        else:
            np.save(os.path.join(out, k + '.npy'), batches[k])
    with open(os.path.join(out, 'losses.json'), 'w') as f:
        json.dump({'paddle': paddle.__version__, 'losses': losses}, f, indent=1)
    print(name, losses[0], losses[-1])
