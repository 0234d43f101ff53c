"""Saving and loading (Fluid 1.x's fluid.io) in Paddle's layouts (FORMATS.md section 3):
one tensor-stream file per variable, or one combined file in sorted name order; an
inference model is a pruned program with feed/fetch ops in `__model__` plus its
persistable variables. Files are written crash-safely by C.

In a trainer of a distributed job (a program from DistributeTranspiler.get_trainer_program,
the program it was transpiled from, or a clone of either), save_inference_model,
save_persistables and save_params may be called by every trainer: only the one
rill.distributed.is_saver elects writes, the others return without writing. It first
receives the pservers' parameters (and for save_persistables the optimizer state, whole)
into its scope, then writes into a hidden sibling directory, fsyncs it and renames it
into place, so a reader sees the old directory or the new one, never part of one."""

import collections
import contextlib
import numbers
import os
import shutil
import tempfile
import warnings

import numpy as np

from . import core
from .core import error_class
from .executor import global_scope, Scope, Executor
from .framework import (Program, Variable, Parameter, default_main_program, program_guard,
                        OpRole)
from . import layers
from .reader import (batch, shuffle, buffered, compose, chain, map_readers, firstn,  # noqa: F401
                     xmap_readers, cache, ComposeNotAligned, multiprocess_reader)
from .data_loader import DataLoader, PyReader, default_collate_fn  # noqa: F401
from .program_state import save, load, load_program_state, set_program_state

__all__ = ['save_vars', 'save_params', 'save_persistables', 'load_vars', 'load_params',
           'load_persistables', 'save_inference_model', 'load_inference_model',
           'is_parameter', 'is_persistable', 'CheckpointConfig', 'load_checkpoint',
           'list_checkpoints', 'CheckpointWarning', 'CHECKPOINT_STEP_VAR', 'batch', 'shuffle',
           'buffered', 'compose', 'chain', 'map_readers', 'firstn', 'xmap_readers', 'cache',
           'multiprocess_reader',
           'ComposeNotAligned', 'DataLoader', 'PyReader', 'default_collate_fn',
           'get_program_parameter', 'get_parameter_value', 'get_parameter_value_by_name',
           'get_program_persistable_vars', 'save', 'load', 'load_program_state',
           'set_program_state']

_NOT_SAVED = (core.FEED_MINIBATCH, core.FETCH_LIST, core.RAW, 15)


def is_parameter(var):
    return isinstance(var, Parameter) or bool(var.desc.get('is_parameter'))


def is_persistable(var):
    return bool(var.persistable) and var.type not in _NOT_SAVED


def get_program_parameter(program):
    """The parameters of every block of program, in Program.list_vars order."""
    return [v for v in program.list_vars() if is_parameter(v)]


def get_program_persistable_vars(program):
    """The persistable variables of every block of program that are saved (feed and
    fetch holders and readers aside), in Program.list_vars order."""
    return [v for v in program.list_vars() if is_persistable(v)]


def _select(program, vars, predicate):
    program = program or default_main_program()
    if vars is None:
        vars = [v for v in program.global_block().vars.values() if predicate(v)]
    names = sorted(set(v.name if isinstance(v, Variable) else v for v in vars))
    return program, names


def _scope(executor):
    return global_scope()


def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None):
    """Saves `vars` (or the variables of main_program's global block that satisfy
    `predicate`) from the global scope into `dirname`."""
    program, names = _select(main_program, vars, predicate or is_persistable)
    os.makedirs(dirname, exist_ok=True)
    program._c().save_vars(_scope(executor)._c, dirname, names, filename)


def _fsync(path, directory=False):
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _atomic_dir(where, dirname):
    """Yields a hidden temporary sibling of `dirname` holding a copy of what `dirname`
    holds now; when the body returns, fsyncs every file and directory in it and renames
    it to `dirname` (an existing `dirname` is renamed aside first and removed after). On
    an error the temporary directory is removed and `dirname` is left as it was."""
    target = os.path.abspath(os.fspath(dirname))
    parent, base = os.path.split(target)
    if not base:
        raise error_class('INVALID_ARGUMENT')("%s: '%s' is not a directory name"
                                              % (where, dirname))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix='.%s.saving-' % base, dir=parent)
    try:
        if os.path.isdir(target):
            shutil.copytree(target, tmp, dirs_exist_ok=True)
        yield tmp
        for root, dirs, files in os.walk(tmp):
            for f in files:
                _fsync(os.path.join(root, f))
            _fsync(root, directory=True)
        aside = None
        if os.path.lexists(target):
            aside = tempfile.mkdtemp(prefix='.%s.replaced-' % base, dir=parent)
            os.rename(target, aside)  # onto the empty directory just made
        os.rename(tmp, target)
        tmp = None
        _fsync(parent, directory=True)
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _trainer(main_program):
    """The distributed trainer that main_program (default: the default main program)
    belongs to, or None in a local run."""
    from .distributed import trainer_info
    return trainer_info(main_program or default_main_program())


def _save_distributed(where, info, executor, dirname, state, write):
    """The elected trainer's save: the pservers' values into the scope, then `write(dir)`
    into a directory renamed into place. The others return False without writing."""
    from . import distributed
    if not distributed.is_saver(info.trainer_id):
        return False
    scope = _scope(executor)
    distributed.fetch_parameters(executor, info.program, scope)
    if state:
        distributed._fetch_state(executor, info, scope)
    with _atomic_dir(where, dirname) as tmp:
        write(tmp)
    return True


def save_params(executor, dirname, main_program=None, filename=None):
    info = _trainer(main_program)
    if info is not None:
        _save_distributed('save_params', info, executor, dirname, False,
                          lambda d: save_vars(executor, d, main_program, None, is_parameter,
                                              filename))
        return
    save_vars(executor, dirname, main_program, None, is_parameter, filename)


def save_persistables(executor, dirname, main_program=None, filename=None):
    info = _trainer(main_program)
    if info is not None:
        # the optimizer state lives on the pservers too: it is fetched whole
        _save_distributed('save_persistables', info, executor, dirname, True,
                          lambda d: save_vars(executor, d, main_program, None,
                                              is_persistable, filename))
        return
    save_vars(executor, dirname, main_program, None, is_persistable, filename)


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None):
    """Loads what save_vars wrote into the global scope; every stored tensor must match
    its declaration, and nothing is changed when a file is missing or wrong."""
    program, names = _select(main_program, vars, predicate or is_persistable)
    if not os.path.isdir(dirname):
        raise error_class('NOT_FOUND')("load_vars: no such directory '%s'" % dirname)
    program._c().load_vars(_scope(executor)._c, dirname, names, filename)


def load_params(executor, dirname, main_program=None, filename=None):
    load_vars(executor, dirname, main_program, None, is_parameter, filename)


def load_persistables(executor, dirname, main_program=None, filename=None):
    load_vars(executor, dirname, main_program, None, is_persistable, filename)


def _inference_program(feeded_var_names, target_vars, main_program):
    """The program save_inference_model writes: targets wrapped in scale(x, 1.0) named
    save_infer_model/scale_i, pruned (C), with feed ops (col = position in
    feeded_var_names, prepended so they appear in reverse) and fetch ops."""
    main_program = main_program or default_main_program()
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    if isinstance(target_vars, Variable):
        target_vars = [target_vars]
    if not target_vars:
        raise ValueError('save_inference_model: target_vars is empty')
    blk = main_program.global_block()
    for n in feeded_var_names:
        if not isinstance(n, str):
            raise TypeError('save_inference_model: feeded_var_names must be names, got %r' % (n,))
        if not blk.has_var(n):
            raise error_class('NOT_FOUND')(
                "save_inference_model: feed '%s' is not a variable of the program" % n)
    for t in target_vars:
        if not isinstance(t, Variable):
            raise TypeError('save_inference_model: target_vars must be Variables, got %r' % (t,))
    test = main_program.clone(for_test=True)
    names = []
    with program_guard(test):
        for i, t in enumerate(target_vars):
            out = layers.scale(test.global_block().var(t.name), 1.0,
                               name='save_infer_model/scale_%d' % i)
            names.append(out.name)
    pruned = test._prune_with_input(list(feeded_var_names), names)
    b = pruned.global_block()
    feed = b.create_var(name='feed', type=core.FEED_MINIBATCH, persistable=True)
    fetch = b.create_var(name='fetch', type=core.FETCH_LIST, persistable=True)
    for i, n in enumerate(feeded_var_names):
        b._prepend_op('feed', inputs={'X': feed}, outputs={'Out': n}, attrs={'col': i})
    for i, n in enumerate(names):
        b.append_op('fetch', inputs={'X': n}, outputs={'Out': fetch}, attrs={'col': i},
                    infer_shape=False)
    return pruned, names


def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None, export_for_deployment=True,
                         program_only=False):
    """Writes `dirname/__model__` (or model_filename) and the persistable variables the
    pruned program needs (one file each, or params_filename). Returns the fetch names."""
    model_filename = model_filename or '__model__'
    parts = model_filename.replace(os.sep, '/').split('/')
    if os.path.isabs(model_filename) or any(p in ('', '.', '..') for p in parts):
        raise error_class('INVALID_ARGUMENT')(
            "save_inference_model: model_filename '%s' must be a relative name inside '%s'"
            % (model_filename, dirname))
    info = _trainer(main_program)
    program, names = _inference_program(feeded_var_names, target_vars, main_program)

    def write(d):
        os.makedirs(d, exist_ok=True)
        model_path = os.path.join(d, model_filename)
        os.makedirs(os.path.dirname(model_path), exist_ok=True)
        program._c().save(model_path)
        if not program_only:
            save_vars(executor, d, program, None, is_persistable, params_filename)

    if info is not None:
        _save_distributed('save_inference_model', info, executor, dirname, False, write)
    else:
        write(dirname)
    return names


def load_inference_model(dirname, executor, model_filename=None, params_filename=None,
                         pserver_endpoints=None):
    """Loads a model directory saved by rill or Paddle (1.x dir with one file per
    variable or a combined file, a `__model__` path, a 2.x .pdmodel path or prefix).
    The parameters go into the global scope. Returns [program, feed_target_names,
    fetch_targets] with feeds and fetches in `col` order."""
    path = dirname if model_filename is None else os.path.join(dirname, model_filename)
    model = core.CModel(path, params_filename)
    program = Program.parse_from_string(model.program_bytes())
    mscope = core.CScope.wrap(model.scope_handle(), model)
    gscope = global_scope()._c
    for v in program.global_block().vars.values():
        if is_persistable(v):
            try:
                t = mscope.get_tensor(v.name)
            except error_class('NOT_FOUND'):
                continue
            gscope.set_tensor(v.name, t)
    feeds = [model.input_name(i) for i in range(model.num_inputs())]
    blk = program.global_block()
    fetches = [blk.var(model.output_name(i)) for i in range(model.num_outputs())]
    return [program, feeds, fetches]


# ------------------------------------------------------------------ checkpoints ----

CHECKPOINT_STEP_VAR = '@CHECKPOINT_STEP@'


class CheckpointWarning(UserWarning):
    """A damaged checkpoint that load_checkpoint skipped."""


def _path_arg(where, path):
    if not isinstance(path, (str, bytes, os.PathLike)) or not os.fspath(path):
        raise error_class('INVALID_ARGUMENT')(
            '%s: checkpoint_dir must be a non-empty path, got %r' % (where, path))
    return os.fsdecode(path)


class CheckpointConfig(object):
    """Where and how often a training program checkpoints itself (doc/design/checkpoint.md):

        config = fluid.io.CheckpointConfig('ckpt', every_n_steps=100, max_to_keep=3)
        fluid.optimizer.Adam(0.01).minimize(loss, checkpoint_config=config)

    `minimize` appends to the main program an `increment` of the step counter
    (`step_var`, int64 [1], set to 0 by the startup program) and a `checkpoint` op saving
    `vars` (None: every persistable dense tensor of the global block: parameters,
    optimizer state, learning rate) with the counter. A checkpoint is due when
    step % every_n_steps == 0 or every_n_seconds have passed since the last one (either
    suffices; with neither set every step is due). The executor writes it in the
    background while training goes on; `checkpoint_dir/checkpoint_<step>` appears whole
    or not at all; the newest `max_to_keep` are kept (0: all). With `skip_when_busy` a
    checkpoint due while the previous one is still being written is skipped instead of
    waited for. Bad settings raise InvalidArgumentError here.

    A data reader whose position is not a function of the step (its own shuffling
    state, a file offset) is saved too when `reader_state` (a callable returning bytes:
    the reader's state after the batches drawn so far) and `restore_reader` (a callable
    taking those bytes) are given: before every run of the program the executor stores
    reader_state() in the variable @CHECKPOINT_READER_STATE@, which the checkpoint
    saves (in a parameter-server job, in the trainer's part), and load_checkpoint hands
    the saved bytes to restore_reader."""

    def __init__(self, checkpoint_dir, every_n_steps=0, every_n_seconds=0.0, max_to_keep=3,
                 skip_when_busy=False, vars=None, step_var=CHECKPOINT_STEP_VAR,
                 reader_state=None, restore_reader=None):
        checkpoint_dir = _path_arg('CheckpointConfig', checkpoint_dir)
        if (reader_state is None) != (restore_reader is None) or not all(
                f is None or callable(f) for f in (reader_state, restore_reader)):
            raise error_class('INVALID_ARGUMENT')(
                'CheckpointConfig: reader_state and restore_reader go together, both '
                'callables')
        self.reader_state = reader_state
        self.restore_reader = restore_reader
        for name, value in (('every_n_steps', every_n_steps), ('max_to_keep', max_to_keep)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise error_class('INVALID_ARGUMENT')(
                    'CheckpointConfig: %s must be an int, got %r' % (name, value))
        if isinstance(every_n_seconds, bool) or not isinstance(every_n_seconds, numbers.Real):
            raise error_class('INVALID_ARGUMENT')(
                'CheckpointConfig: every_n_seconds must be a number, got %r' % (every_n_seconds,))
        self.checkpoint_dir = checkpoint_dir
        self.every_n_steps = int(every_n_steps)
        self.every_n_seconds = float(every_n_seconds)
        self.max_to_keep = int(max_to_keep)
        self.skip_when_busy = bool(skip_when_busy)
        self.vars = None if vars is None else [
            v.name if isinstance(v, Variable) else v for v in vars]
        self.step_var = step_var
        # The C manager checks the settings (its messages) and appends the ops.
        self._manager = core.CCheckpointManager(self.checkpoint_dir, self.every_n_steps,
                                                self.every_n_seconds, self.max_to_keep,
                                                self.skip_when_busy)

    def __repr__(self):
        return ('CheckpointConfig(%r, every_n_steps=%d, every_n_seconds=%g, max_to_keep=%d, '
                'skip_when_busy=%r)' % (self.checkpoint_dir, self.every_n_steps,
                                        self.every_n_seconds, self.max_to_keep,
                                        self.skip_when_busy))

    def _append(self, program, startup):
        """Appends the counter increment and the checkpoint op to `program` (op_role
        Optimize, so clone(for_test=True) and inference models leave them out) and the
        counter's initialization to `startup`."""
        names = list(self.vars or [])
        if self.reader_state is not None:
            from .executor import CHECKPOINT_READER_VAR, _reader_state_fns
            program.global_block().create_var(name=CHECKPOINT_READER_VAR, dtype='uint8',
                                              shape=[-1], persistable=True)
            if names:
                names.append(CHECKPOINT_READER_VAR)
            _reader_state_fns[self.checkpoint_dir] = self.reader_state
            _reader_restorers[self.checkpoint_dir] = self.restore_reader
        for n in names:
            if not program.global_block().has_var(n):
                raise error_class('NOT_FOUND')(
                    "CheckpointConfig: variable '%s' is not in the program's global block" % n)
        # on copies, so that a refusal leaves both programs as they were
        c, cs = program._c().copy(), startup._c().copy()
        n_ops = len(program.global_block().ops)
        self._manager.append_op(c, cs, self.step_var, names)
        program._adopt(c)
        startup._adopt(cs)
        for op in program.global_block().ops[n_ops:]:
            op._set_attr('op_role', OpRole.Optimize)
        return program.global_block().ops[n_ops:]


# checkpoint directory -> restore_reader of its CheckpointConfig
_reader_restorers = {}

LoadedCheckpoint = collections.namedtuple('LoadedCheckpoint', ['step', 'skipped'])
LoadedCheckpoint.__doc__ = """What load_checkpoint restored: the checkpoint's step (the
number of steps it holds; the next run is step + 1) and one message per newer damaged
checkpoint it skipped."""

CheckpointInfo = collections.namedtuple(
    'CheckpointInfo', ['step', 'time_unix_ns', 'bytes', 'num_vars', 'verified', 'path',
                       'problem'])


def _checkpoint_dir(where, checkpoint_dir):
    if isinstance(checkpoint_dir, CheckpointConfig):
        checkpoint_dir = checkpoint_dir.checkpoint_dir
    checkpoint_dir = _path_arg(where, checkpoint_dir)
    if not os.path.isdir(checkpoint_dir):
        raise error_class('NOT_FOUND')(
            "%s: no checkpoint directory '%s'" % (where, checkpoint_dir))
    return checkpoint_dir


def load_checkpoint(executor, checkpoint_dir, main_program=None, scope=None):
    """Restores the newest checkpoint of `checkpoint_dir` (a path or a CheckpointConfig)
    that verifies: its variables (parameters, optimizer state, the step counter) into
    `scope` (default: the global scope) and the random generator state into `executor`.
    Call it after running the startup program. `main_program` (default: the default main
    program) must be the program that wrote the checkpoint, else FailedPreconditionError;
    its CheckpointConfig may differ (another path to the directory, the directory moved,
    another schedule or max_to_keep).

    Each newer checkpoint that does not verify (truncated, a flipped bit, a missing file)
    is skipped, reported with a CheckpointWarning and listed in the result's `skipped`.
    NotFoundError when the directory does not exist or holds no checkpoint that
    verifies (the message names each damaged one); nothing changes on any error.
    Returns LoadedCheckpoint(step, skipped)."""
    restore = checkpoint_dir.restore_reader if isinstance(checkpoint_dir, CheckpointConfig) \
        else None
    checkpoint_dir = _checkpoint_dir('load_checkpoint', checkpoint_dir)
    restore = restore or _reader_restorers.get(checkpoint_dir)
    program = main_program or default_main_program()
    if not isinstance(program, Program):
        raise TypeError('load_checkpoint: main_program must be a rill.Program, got %r' % (program,))
    if not isinstance(executor, Executor):
        raise TypeError('load_checkpoint: executor must be a rill.Executor, got %r' % (executor,))
    executor._check_open('load_checkpoint')
    scope = scope if scope is not None else global_scope()
    manager = core.CCheckpointManager(checkpoint_dir)
    step, report = manager.load(program._c(), scope._c, executor._c)
    if _is_cluster_trainer(program):
        # The trainer's part holds its own state; the parameters are the pservers',
        # which resume from the same snapshot.
        from .distributed import fetch_parameters
        fetch_parameters(executor, program, scope)
    if restore is not None:
        from .executor import CHECKPOINT_READER_VAR
        try:
            saved = scope._c.get_tensor(CHECKPOINT_READER_VAR)
        except error_class('NOT_FOUND'):
            saved = None
        if saved is not None:
            restore(np.asarray(saved.numpy(), dtype=np.uint8).tobytes())
    skipped = [line for line in report.splitlines() if line]
    for line in skipped:
        warnings.warn(line, CheckpointWarning, stacklevel=2)
    return LoadedCheckpoint(step, skipped)


def _is_cluster_trainer(program):
    """Whether `program` is a transpiled trainer program that writes its part of
    cluster snapshots (its checkpoint op names the pservers)."""
    return any(op.type == 'checkpoint' and op.attr('cluster_endpoints')
               for op in program.global_block().ops)


def list_checkpoints(checkpoint_dir):
    """The checkpoints of a directory, newest first, each verified as loading would
    (what `rill checkpoint ls` prints): CheckpointInfo(step, time_unix_ns, bytes,
    num_vars, verified, path, problem), `problem` saying why one does not verify. One
    that a training process retires while it is being listed is left out, not damaged."""
    checkpoint_dir = _checkpoint_dir('list_checkpoints', checkpoint_dir)
    return [CheckpointInfo(*row) for row in core.list_checkpoints(checkpoint_dir)]


def get_parameter_value(para, executor):
    """The value (a numpy array) of Parameter `para` in the scope the executor runs in
    (the global scope, or the one scope_guard installed), as Fluid's reads it by fetching
    it in an empty program."""
    if not is_parameter(para):
        raise AssertionError('The input variable is not parameter.')
    from .executor import global_scope
    var = global_scope().find_var(para.name)
    if var is None:
        raise error_class(core.NOT_FOUND)(
            'get_parameter_value: parameter %s has no value in the current scope (run the '
            'startup program, or load it, first)' % para.name)
    return np.array(var.get_tensor())


def get_parameter_value_by_name(name, executor, program=None):
    """get_parameter_value of the parameter `name` of program (default: the default main
    program)."""
    from .framework import default_main_program
    program = program or default_main_program()
    return get_parameter_value(program.global_block().var(name), executor)


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.io', 'rill.io')
