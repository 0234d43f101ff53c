"""fluid.install_check.run_check(): builds and trains a tiny program, checks the numbers
it gives against those worked out by hand, and prints Paddle's messages. Paddle's check
builds its layer in dygraph mode; rill builds the same fc layer (weights 0.1, bias 0)
as a static program."""

import numpy as np

from . import backward, compiler, executor, layers, optimizer
from .framework import Program, program_guard, unique_name, cpu_places
from .initializer import Constant
from .param_attr import ParamAttr

__all__ = ['run_check']

_INPUT = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)


def _layer(inp):
    w = ParamAttr(name='install_check_w', initializer=Constant(0.1))
    return layers.reduce_sum(layers.fc(inp, 3, param_attr=w))


def _expect(what, got, want):
    got = np.asarray(got, dtype=np.float64).reshape(np.shape(want))
    if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        raise RuntimeError('install check: %s is %s, expected %s' % (what, got.tolist(),
                                                                      np.asarray(want).tolist()))


def _single():
    main, startup, scope = Program(), Program(), executor.Scope()
    with executor.scope_guard(scope), program_guard(main, startup), unique_name.guard():
        inp = layers.data(name='inp', shape=[2, 2], append_batch_size=False)
        out = _layer(inp)
        _, grad = backward.append_backward(out, parameter_list=['install_check_w'])[0]
        exe = executor.Executor()
        exe.run(startup)
        o, g = exe.run(main, feed={'inp': _INPUT}, fetch_list=[out, grad])
        exe.close()
    # out = sum(x @ 0.1 + 0) over 2 rows and 3 columns; d out / d w[i, j] = sum of column i
    _expect('the output', o, [3.0])
    _expect('the weight gradient', g, np.repeat(_INPUT.sum(0)[:, None], 3, axis=1))


def _parallel():
    from .parallel_executor import ParallelExecutor
    main, startup, scope = Program(), Program(), executor.Scope()
    places = cpu_places(2)
    with executor.scope_guard(scope), program_guard(main, startup), unique_name.guard():
        inp = layers.data(name='inp', shape=[2], dtype='float32')
        loss = layers.mean(_layer(inp))
        optimizer.SGD(learning_rate=0.01).minimize(loss)
        startup.random_seed = 1
        exe = executor.Executor()
        exe.run(startup)
        strategy = compiler.BuildStrategy()
        strategy.enable_inplace = True
        pe = ParallelExecutor(False, loss_name=loss.name, main_program=main,
                              build_strategy=strategy, scope=scope)
        feed = [{'inp': _INPUT} for _ in places]
        first, = pe.run(fetch_list=[loss.name], feed=feed)
        second, = pe.run(fetch_list=[loss.name], feed=feed)
        exe.close()
    # both places' rows: 2 * 3.0; then one SGD step of the weights and the bias
    _expect('the loss', first, [6.0])
    _expect('the loss after one step', second, [_after_step()])


def _after_step():
    """The loss after one SGD step (learning rate 0.01) from w = 0.1, b = 0."""
    x = np.concatenate([_INPUT, _INPUT]).astype(np.float64)
    w = np.full((2, 3), 0.1)
    b = np.zeros(3)
    gw = np.repeat(x.sum(0)[:, None], 3, axis=1)
    gb = np.full(3, float(len(x)))
    w, b = w - 0.01 * gw, b - 0.01 * gb
    return float((x @ w + b).sum())


def run_check():
    """Checks that rill works: a single-place run (output and weight gradient) and a
    ParallelExecutor run over two CPU places (loss before and after an SGD step).
    Prints Paddle's messages; raises RuntimeError naming the number that is wrong."""
    print('Running Verify Fluid Program ... ')
    _single()
    print('Your Paddle Fluid works well on SINGLE GPU or CPU.')
    _parallel()
    print('Your Paddle Fluid works well on MUTIPLE GPU or CPU.')
    print("Your Paddle Fluid is installed successfully! Let's start deep Learning with "
          "Paddle Fluid now")
