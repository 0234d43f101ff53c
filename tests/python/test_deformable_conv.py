"""layers.deformable_conv (modulated and not) against the output and gradients Paddle
1.8.5 recorded in paddle18/deformable_conv/ (gen_deformable_conv.py), and the layer's
argument checks."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_deformable_conv as gen  # noqa: E402


@pytest.mark.parametrize('modulated', [True, False])
def test_deformable_conv_as_paddle18(modulated):
    tag = 'v2' if modulated else 'v1'
    ref = np.load(os.path.join(DATA, 'deformable_conv', 'expected.npz'))
    with fluid.unique_name.guard():
        main, startup, fetch = gen.build(fluid, modulated)
    ops = [op.type for op in main.global_block().ops]
    assert ops[0] == list(ref['ops_%s' % tag])[0]
    assert ('deformable_conv_grad' if modulated else 'deformable_conv_v1_grad') in ops
    params = gen.params(main)
    assert {p.name: list(p.shape) for p in main.global_block().all_parameters()} == \
        {k: list(v.shape) for k, v in params.items()}
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        w = np.asarray(scope.find_var('dcn_w').get_tensor())
        fan_in = w.shape[2] * w.shape[3] * 4
        assert abs(float(w.std()) - (2.0 / fan_in) ** 0.5) < 0.5 * (2.0 / fan_in) ** 0.5
        for name, val in params.items():
            scope.find_var(name).get_tensor().set(val, fluid.CPUPlace())
        got = exe.run(main, feed=gen.inputs(modulated), fetch_list=fetch)
    names = ['out', 'x_grad', 'offset_grad', 'w_grad', 'b_grad', 'mask_grad'][:len(got)]
    for n, v in zip(names, got):
        want = ref['%s_%s' % (n, tag)]
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(np.asarray(v), want, rtol=1e-4, atol=1e-5 * scale,
                                   err_msg='%s_%s' % (n, tag))


def test_deformable_conv_rejects_bad_groups():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [1, 3, 5, 5], 'float32')
        off = fluid.data('off', [1, 18, 5, 5], 'float32')
        mask = fluid.data('mask', [1, 9, 5, 5], 'float32')
        with pytest.raises(ValueError, match='3 input channels do not divide into 2 groups'):
            fluid.layers.deformable_conv(x, off, mask, 4, 3, padding=1, groups=2)
