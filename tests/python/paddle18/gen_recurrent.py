"""Writes recurrent/<model>/ for each model of recurrent.py with PaddlePaddle 1.8.5: the
forward program's starting persistables (params/), Paddle's values of the compared
variables on the first batch before training (forward.npz) and the losses of STEPS SGD
steps (losses.json). The batches are regenerated from a seed by recurrent.batches in
both frameworks. Run with the Paddle 1.8.5 interpreter (README.md)."""
import json
import os
import shutil

import numpy as np
import paddle
import paddle.fluid as fluid

import recurrent

HERE = os.path.dirname(os.path.abspath(__file__))


def generate(name):
    out = os.path.join(HERE, 'recurrent', name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    main, startup, forward, feeds, outs, loss = recurrent.build(fluid, name)
    data, lens = recurrent.batches(name)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        fluid.io.save_persistables(exe, os.path.join(out, 'params'), main_program=forward)
        vals = exe.run(forward, feed=recurrent.feed(fluid, place, name, data, lens, 0),
                       fetch_list=outs, return_numpy=False)
        np.savez(os.path.join(out, 'forward.npz'),
                 **{'out%d' % i: np.array(v) for i, v in enumerate(vals)})
        losses = []
        for s in range(recurrent.STEPS):
            l, = exe.run(main, feed=recurrent.feed(fluid, place, name, data, lens, s),
                         fetch_list=[loss])
            losses.append(float(np.asarray(l).reshape(-1)[0]))
    with open(os.path.join(out, 'losses.json'), 'w') as f:
        json.dump({'paddle': paddle.__version__, 'losses': losses}, f, indent=1)
    print(name, losses[0], losses[-1])


for model in sorted(recurrent.MODELS):
    generate(model)
