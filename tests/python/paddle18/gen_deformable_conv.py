"""Writes deformable_conv/: Paddle 1.8.5's layers.deformable_conv, modulated (op
deformable_conv, with a mask) and not (deformable_conv_v1), each built by
`build(fluid, modulated)` (shared with tests/python/test_deformable_conv.py): the seeded
inputs and parameters, the output and the gradients of the input, offset, mask, filter
and bias under a sum of squares. Run with PaddlePaddle 1.8.5 (README.md)."""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'deformable_conv')

# (modulated, input shape, num_filters, filter_size, stride, padding, dilation, groups,
#  deformable_groups, output extent)
CASES = {
    True: ([2, 4, 6, 5], 6, 3, 1, 1, 1, 2, 2, (6, 5)),
    False: ([2, 4, 7, 6], 4, [3, 2], [2, 1], [1, 0], [1, 2], None, 1, (4, 4)),
}


def build(fluid, modulated):
    shape, nf, fs, st, pad, dil, groups, dg, (oh, ow) = CASES[modulated]
    k = fs if isinstance(fs, list) else [fs, fs]
    taps = k[0] * k[1]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', shape, 'float32')
        off = fluid.data('offset', [shape[0], 2 * dg * taps, oh, ow], 'float32')
        mask = fluid.data('mask', [shape[0], dg * taps, oh, ow], 'float32') if modulated else None
        for v in (x, off) + ((mask,) if modulated else ()):
            v.stop_gradient = False
        out = fluid.layers.deformable_conv(
            x, off, mask, nf, fs, stride=st, padding=pad, dilation=dil, groups=groups,
            deformable_groups=dg if dg != 1 else None, im2col_step=1, modulated=modulated,
            param_attr=fluid.ParamAttr(name='dcn_w'), bias_attr=fluid.ParamAttr(name='dcn_b'))
        loss = fluid.layers.reduce_sum(fluid.layers.square(out))
        fluid.optimizer.SGD(learning_rate=0.0).minimize(loss)
    fetch = [out, 'x@GRAD', 'offset@GRAD', 'dcn_w@GRAD', 'dcn_b@GRAD']
    if modulated:
        fetch.append('mask@GRAD')
    return main, startup, fetch


def inputs(modulated):
    shape, nf, fs, st, pad, dil, groups, dg, (oh, ow) = CASES[modulated]
    k = fs if isinstance(fs, list) else [fs, fs]
    taps = k[0] * k[1]
    rng = np.random.RandomState(5 if modulated else 6)
    feed = {'x': rng.randn(*shape).astype('float32'),
            'offset': rng.uniform(-2.5, 2.5, [shape[0], 2 * dg * taps, oh, ow]).astype('float32')}
    if modulated:
        feed['mask'] = rng.uniform(0, 1, [shape[0], dg * taps, oh, ow]).astype('float32')
    return feed


def params(main):
    rng = np.random.RandomState(9)
    return {p.name: (rng.randn(*p.shape) * 0.5).astype('float32')
            for p in main.global_block().all_parameters()}


def main():
    import paddle.fluid as fluid
    res = {}
    exe = fluid.Executor(fluid.CPUPlace())
    for modulated in (True, False):
        tag = 'v2' if modulated else 'v1'
        with fluid.unique_name.guard():
            prog, startup, fetch = build(fluid, modulated)
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            exe.run(startup)
            for name, val in params(prog).items():
                scope.find_var(name).get_tensor().set(val, fluid.CPUPlace())
            got = exe.run(prog, feed=inputs(modulated), fetch_list=fetch)
        names = ['out', 'x_grad', 'offset_grad', 'w_grad', 'b_grad', 'mask_grad'][:len(got)]
        for n, v in zip(names, got):
            res['%s_%s' % (n, tag)] = np.asarray(v)
        res['ops_%s' % tag] = np.array([op.type for op in prog.global_block().ops])
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, 'expected.npz'), **res)
    print({k: v.shape for k, v in res.items()})


if __name__ == '__main__':
    main()
