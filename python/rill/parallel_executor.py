"""Fluid 1.x's ParallelExecutor, over a CompiledProgram and an Executor.

rill runs a data parallel program once per run with the whole batch (rill.compiler):
a feed given per place (a list of dicts) is joined along the batch dimension, which is
what Paddle's places compute between them, and fetched values come back for the whole
batch."""

import sys

from . import compiler, executor, framework

__all__ = ['ParallelExecutor']


class ParallelExecutor(object):
    """ParallelExecutor(use_cuda, loss_name=None, main_program=None, share_vars_from=None,
    exec_strategy=None, build_strategy=None, num_trainers=1, trainer_id=0, scope=None):
    runs main_program (default: the default main program) in scope (default: the
    global scope). share_vars_from, another ParallelExecutor, must use the same scope
    for its variables to be seen: rill keeps no per-place copies to share."""

    def __init__(self, use_cuda, loss_name=None, main_program=None, share_vars_from=None,
                 exec_strategy=None, build_strategy=None, num_trainers=1, trainer_id=0,
                 scope=None):
        if build_strategy is None:
            build_strategy = compiler.BuildStrategy()
        if num_trainers != 1:
            build_strategy.num_trainers = num_trainers
        if trainer_id != 0:
            build_strategy.trainer_id = trainer_id
        self._places = framework.cuda_places() if use_cuda else framework.cpu_places()
        if use_cuda and not self._places:
            raise RuntimeError('ParallelExecutor: use_cuda is True but no CUDA device can '
                               'be used by this process')
        self._scope = scope if scope is not None else executor.global_scope()
        if share_vars_from is not None and not isinstance(share_vars_from, ParallelExecutor):
            raise TypeError('share_vars_from must be a ParallelExecutor, got %r'
                            % (share_vars_from,))
        main_program = main_program if main_program is not None \
            else framework.default_main_program()
        self._compiled_program = compiler.CompiledProgram(main_program)
        self._compiled_program.with_data_parallel(
            loss_name=loss_name, build_strategy=build_strategy, exec_strategy=exec_strategy,
            share_vars_from=(share_vars_from._compiled_program
                             if share_vars_from is not None else None),
            places=self._places)
        self._place = framework.CUDAPlace(0) if use_cuda else framework.CPUPlace()
        self._exe = executor.Executor(self._place)

    def run(self, fetch_list, feed=None, feed_dict=None, return_numpy=True):
        """Runs the program once: feed is a dict {name: value} or a list of such dicts,
        one per place (joined along the batch dimension); returns the fetched values
        (numpy arrays unless return_numpy is False)."""
        if feed is None and feed_dict is not None:
            feed = feed_dict
            print('`feed_dict` is deprecated. Please use `feed=`', file=sys.stderr)
        return self._exe.run(program=self._compiled_program, scope=self._scope, feed=feed,
                             fetch_list=fetch_list, return_numpy=return_numpy)

    @property
    def device_count(self):
        return len(self._places)

    def drop_local_exe_scopes(self):
        """Drops the temporaries the runs kept (Paddle's per-place local scopes): the
        next run allocates them afresh; persistable variables stay in the scope."""
        old, self._exe = self._exe, executor.Executor(self._place)
        old.flush()
        # released without close(): the trainer goes on, on the new executor
        old._closed = True
        old._c = None
