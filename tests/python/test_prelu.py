"""layers.prelu in each mode against Paddle 1.8.5 (paddle18/prelu/, written by
paddle18/gen_prelu.py from the same programs): outputs, x@GRAD and alpha@GRAD over three
SGD steps, the losses and the trained alpha; and the layer's errors."""
import os
import sys

import numpy as np
import pytest

import rill as fluid

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18')
sys.path.insert(0, DATA)
import gen_prelu as gen  # noqa: E402


@pytest.mark.parametrize('k', range(len(gen.MODES)))
def test_prelu_trains_like_paddle(k):
    ref = np.load(os.path.join(DATA, 'prelu', 'expected.npz'))
    mode, shape = gen.MODES[k]
    main, startup, y, loss = gen.build(fluid, mode, shape)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for step, x in enumerate(gen.batches(shape)):
            vals = exe.run(main, feed={'x': x}, fetch_list=[loss, y, 'x@GRAD', 'alpha@GRAD'])
            for name, v in zip(('loss', 'out', 'xgrad', 'agrad'), vals):
                want = ref['%d_%s_%d' % (k, name, step)]
                np.testing.assert_allclose(np.asarray(v), want, rtol=1e-5, atol=1e-7,
                                           err_msg='%s %s step %d' % (mode, name, step))
        alpha = np.array(scope.find_var('alpha').get_tensor())
        np.testing.assert_allclose(alpha, ref['%d_alpha' % k], rtol=1e-5, atol=1e-7)


def test_prelu_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data('x', [4], 'float32')
        with pytest.raises(ValueError, match='mode should be one of'):
            fluid.layers.prelu(x, 'row')
        with pytest.raises(ValueError, match='mode channel needs x of 2 dims'):
            fluid.layers.prelu(x, 'channel')
