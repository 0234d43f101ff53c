"""Writes gradients_twice/: the names and values Paddle 1.8.5 gives to the gradients of
several backward passes over one program (fluid.gradients and append_backward called
more than once): the first pass's x@GRAD, the later passes' grad/grad/x@GRAD,
grad/grad/grad/x@GRAD and a target seeded twice. `build(fluid)` is shared with tests/python/test_gradients_twice.py,
which builds the same program with rill. Run with PaddlePaddle 1.8.5 (README.md)."""
import json
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'gradients_twice')

X = (np.arange(6, dtype='float32').reshape(2, 3) - 2.5) / 4
W = np.array([[0.5, -0.25], [0.75, 0.1], [-0.4, 0.3]], 'float32')


def build(fluid):
    """Returns (main, startup, {label: gradient Variable}, [(param, grad) name pairs])."""
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    grads = {}
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [2, 3], 'float32')
        x.stop_gradient = False
        # two losses, then the first again, through gradients()
        y1 = L.reduce_sum(L.square(x))
        y2 = L.reduce_mean(L.exp(x))
        grads['y1'] = fluid.gradients(y1, x)[0]
        grads['y2'] = fluid.gradients(y2, x)[0]
        grads['y1_again'] = fluid.gradients(y1, x)[0]
        # append_backward twice, two losses sharing a parameter
        h = L.fc(x, 2, bias_attr=False, param_attr=fluid.ParamAttr(
            name='w', initializer=fluid.initializer.NumpyArrayInitializer(W)))
        l1 = L.reduce_mean(L.square(h))
        l2 = L.reduce_sum(L.sigmoid(h))
        p1 = fluid.backward.append_backward(l1)
        p2 = fluid.backward.append_backward(l2)
    pairs = [(p.name, g.name) for p, g in p1] + [(p.name, g.name) for p, g in p2]
    return main, startup, grads, pairs


def main():
    import paddle.fluid as fluid
    prog, startup, grads, pairs = build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    labels = sorted(grads)
    fetch = [grads[k] for k in labels] + [g for _, g in pairs]
    got = exe.run(prog, feed={'x': X}, fetch_list=fetch)
    os.makedirs(OUT, exist_ok=True)
    np.savez_compressed(os.path.join(OUT, 'expected.npz'),
                        **{k: np.asarray(v) for k, v in zip(labels, got)},
                        **{'pair%d' % i: np.asarray(v)
                           for i, v in enumerate(got[len(labels):])})
    with open(os.path.join(OUT, 'names.json'), 'w') as f:
        json.dump({'grads': {k: grads[k].name for k in labels}, 'pairs': pairs}, f, indent=1,
                  sort_keys=True)
    print({k: grads[k].name for k in labels}, pairs)


if __name__ == '__main__':
    main()
