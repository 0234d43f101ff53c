"""memory_optimize and release_memory: deprecated in Fluid since 1.6, where they only warn
and leave the program alone. rill does the same: its executor plans the memory of every
run itself (buffers reused once their last reader has run, doc/design/executor.md)."""

import logging

__all__ = ['memory_optimize', 'release_memory']


def memory_optimize(input_program, skip_opt_set=None, print_log=False, level=0,
                    skip_grads=True):
    """Deprecated: warns and changes nothing, as in Paddle 1.8.5."""
    logging.warning(
        'Caution! paddle.fluid.memory_optimize() is deprecated and not maintained any more, '
        'since it is not stable!\nThis API would not take any memory optimizations on your '
        'Program now: rill plans the memory of every run itself (a buffer is reused once '
        'the last op reading it has run).\n')


def release_memory(input_program, skip_opt_set=None):
    """Deprecated: warns and changes nothing, as in Paddle 1.8.5."""
    logging.warning('paddle.fluid.release_memory() is deprecated, it would not take any '
                    'memory release on your program')
