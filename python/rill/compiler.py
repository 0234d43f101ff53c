"""CompiledProgram, BuildStrategy, ExecutionStrategy (Fluid 1.x's compiler.py).

Fluid compiles a program for data parallelism: one copy per place, the batch split
between them and the gradients all-reduced. rill runs a program once per run on the
executor's thread pool (the C executor runs independent ops and the work inside each
kernel in parallel), so a CompiledProgram runs its program as is: on one CPU place, the
whole batch in one run. Losses and gradients are those of the whole batch, which
Fluid's data parallel training gives too (the per-place gradients are averaged), up to
rounding; fetched values come back for the whole batch instead of per place."""

from .framework import Program

__all__ = ['CompiledProgram', 'BuildStrategy', 'ExecutionStrategy']


class _Strategy(object):
    """Keeps its settings, which rill does not read (Fluid's strategies tune the graph
    passes and threads of its ParallelExecutor; rill's executor has its own)."""


class BuildStrategy(_Strategy):
    class ReduceStrategy(object):
        AllReduce = 0
        Reduce = 1

    class GradientScaleStrategy(object):
        CoeffNumDevice = 0
        One = 1
        Customized = 2

    def __init__(self):
        self.reduce_strategy = BuildStrategy.ReduceStrategy.AllReduce
        self.gradient_scale_strategy = BuildStrategy.GradientScaleStrategy.CoeffNumDevice
        self.enable_inplace = True
        self.memory_optimize = None
        self.fuse_all_reduce_ops = None
        self.fuse_elewise_add_act_ops = False
        self.enable_sequential_execution = False
        self.remove_unnecessary_lock = True
        self.sync_batch_norm = False
        self.debug_graphviz_path = ''


class ExecutionStrategy(_Strategy):
    def __init__(self):
        self.num_threads = 0
        self.use_cuda = False
        self.allow_op_delay = False
        self.num_iteration_per_drop_scope = 1
        self.num_iteration_per_run = 1
        self.use_thread_barrier = False


class CompiledProgram(object):
    """CompiledProgram(program).with_data_parallel(loss_name=...): Executor.run takes it
    in place of the program and runs the program itself (see the module's note)."""

    def __init__(self, program_or_graph, build_strategy=None):
        if not isinstance(program_or_graph, Program):
            raise TypeError('CompiledProgram: rill compiles a rill.Program, got %r' %
                            (program_or_graph,))
        self._rill_program = program_or_graph
        self._build_strategy = build_strategy or BuildStrategy()
        self._exec_strategy = None
        self._is_data_parallel = False
        self._loss_name = None
        self._places = None

    def with_data_parallel(self, loss_name=None, build_strategy=None, exec_strategy=None,
                           share_vars_from=None, places=None):
        if self._is_data_parallel:
            raise RuntimeError('CompiledProgram: with_data_parallel was already called')
        self._is_data_parallel = True
        self._loss_name = loss_name.name if hasattr(loss_name, 'name') else loss_name
        if build_strategy is not None:
            self._build_strategy = build_strategy
        self._exec_strategy = exec_strategy or ExecutionStrategy()
        self._places = places
        return self

    def with_inference_optimize(self, config):
        return self

    @property
    def program(self):
        return self._rill_program

    def __getattr__(self, name):
        # Program attributes (global_block(), ...) reach the program, as scripts that
        # pass either one around expect.
        if name.startswith('__') or name == '_rill_program':
            raise AttributeError(name)
        return getattr(self._rill_program, name)


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.compiler', 'rill.compiler')
