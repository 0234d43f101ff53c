"""Scopes and the Executor (Fluid 1.x's executor.py) over rill_executor_run."""

import atexit
import contextlib
import os
import sys
import weakref

import numpy as np

from . import core
from .core import Tensor, error_class
from .framework import Program, Variable, default_main_program, CPUPlace, CUDAPlace, \
    CUDAPinnedPlace

__all__ = ['Executor', 'Scope', 'global_scope', 'scope_guard', 'LoDTensor', 'create_lod_tensor',
           'create_random_int_lodtensor', 'as_numpy']


# Data-reader state saved with checkpoints (rill.io.CheckpointConfig(reader_state=...)):
# checkpoint directory, as the checkpoint op names it -> the callable giving the state.
CHECKPOINT_READER_VAR = '@CHECKPOINT_READER_STATE@'
_reader_state_fns = {}


def _store_reader_state(program, scope):
    """Before a run of a program whose checkpoint op saves the reader's state: the
    state now (after the batch this run is fed was drawn) into that variable."""
    if not _reader_state_fns:
        return
    key = program.__dict__.get('_reader_state_key')
    nops = len(program.global_block().ops)
    if key is None or key[0] != nops:
        directory = None
        if program.global_block().has_var(CHECKPOINT_READER_VAR):
            for op in program.global_block().ops:
                if op.type == 'checkpoint' and CHECKPOINT_READER_VAR in op.input('X'):
                    directory = op.attr('directory')
        key = (nops, directory)
        program.__dict__['_reader_state_key'] = key
    fn = _reader_state_fns.get(key[1]) if key[1] is not None else None
    if fn is None:
        return
    state = fn()
    if not isinstance(state, (bytes, bytearray, memoryview)):
        raise TypeError('CheckpointConfig reader_state must return bytes, got %r'
                        % (type(state),))
    arr = np.frombuffer(bytes(state), dtype=np.uint8).copy()
    scope._c.set_tensor(CHECKPOINT_READER_VAR, Tensor.from_numpy(arr))


def _check_tensor_place(place, where):
    if place is not None and not isinstance(place, (CPUPlace, CUDAPlace, CUDAPinnedPlace)):
        raise TypeError('%s: the place must be CPUPlace(), CUDAPlace(id) or CUDAPinnedPlace(), '
                        'got %r' % (where, place))


class LoDTensor(object):
    """A tensor with LoD offsets, for feeding sequences:
    LoDTensor(); t.set(ndarray, place); t.set_lod([[0, 2, 5]])."""

    def __init__(self, array=None, lod=None):
        self._array = None if array is None else np.ascontiguousarray(array)
        self._lod = core.lod_offsets(lod or [], 'LoDTensor LoD')

    def set(self, array, place=None):
        """Holds a copy of `array`; on CUDAPinnedPlace() the copy is in pinned host
        memory (page-locked when a CUDA device can be used: core.PinnedBuffer)."""
        _check_tensor_place(place, 'LoDTensor.set')
        if isinstance(place, CUDAPinnedPlace):
            a = np.asarray(array)
            buf = core.PinnedBuffer(a.nbytes)
            self._array = buf.array(a.shape, a.dtype)
            self._array[...] = a
            self._pinned = buf.pinned
        else:
            self._array = np.ascontiguousarray(array)
            self._pinned = False

    def _is_pinned(self):
        """True when the values are in page-locked memory of the CUDA backend."""
        return getattr(self, '_pinned', False)

    def set_lod(self, lod):
        self._lod = core.lod_offsets(lod, 'LoDTensor LoD')

    def lod(self):
        return [list(l) for l in self._lod]

    def set_recursive_sequence_lengths(self, lengths):
        self._lod = core.lod_from_lengths(lengths, 'LoDTensor LoD')

    def recursive_sequence_lengths(self):
        return [[l[i + 1] - l[i] for i in range(len(l) - 1)] for l in self._lod]

    def has_valid_recursive_sequence_lengths(self):
        """Whether the LoD fits the tensor: each level's offsets rise from 0, each level
        ends at the next one's sequence count, the last at the tensor's rows."""
        rows = 0 if self._array is None else (self._array.shape[0] if self._array.ndim else 1)
        for k, level in enumerate(self._lod):
            if not level or level[0] != 0 or any(b < a for a, b in zip(level, level[1:])):
                return False
            end = len(self._lod[k + 1]) - 1 if k + 1 < len(self._lod) else rows
            if level[-1] != end:
                return False
        return True

    def shape(self):
        return list(self._array.shape)

    def __array__(self, dtype=None, copy=None):
        return self._array if dtype is None else self._array.astype(dtype)


class LoDTensorArray(list):
    """Fluid's core.LoDTensorArray: a list of LoDTensors (append, len, indexing)."""

    def append(self, tensor):
        if not isinstance(tensor, LoDTensor):
            raise TypeError('LoDTensorArray.append: expected a LoDTensor, got %r' % (tensor,))
        list.append(self, tensor)


def create_lod_tensor(data, recursive_seq_lens, place=None):
    """Fluid's create_lod_tensor: `data` (ndarray or list of sequences) with sequence
    lengths per level."""
    if isinstance(data, list):
        flat = np.concatenate([np.asarray(s).reshape(len(s), -1) for s in data])
        data = flat
    t = LoDTensor(np.asarray(data))
    t.set_recursive_sequence_lengths(recursive_seq_lens)
    return t


def create_random_int_lodtensor(recursive_seq_lens, base_shape, place, low, high):
    """Fluid's create_random_int_lodtensor: int64 values uniform in [low, high] (numpy's
    global generator), shape [total length of the last level] + base_shape, with the
    given sequence lengths."""
    if not isinstance(base_shape, (list, tuple)):
        raise TypeError('create_random_int_lodtensor: base_shape must be a list, got %r' %
                        (base_shape,))
    shape = [sum(recursive_seq_lens[-1])] + list(base_shape)
    data = np.random.randint(low, high + 1, shape).astype('int64')
    return create_lod_tensor(data, recursive_seq_lens, place)


class _ScopeTensor(object):
    """find_var(name).get_tensor(): reads the variable's current value; set() replaces
    it."""

    def __init__(self, scope, name):
        self._scope = scope
        self._name = name

    def _get(self):
        return self._scope._c.get_tensor(self._name)

    def __array__(self, dtype=None, copy=None):
        a = self._get().numpy(copy=True)
        return a if dtype is None else a.astype(dtype)

    def set(self, array, place=None):
        _check_tensor_place(place, 'Tensor.set')
        t = Tensor.from_numpy(np.asarray(array), copy=True)
        self._scope._c.set_tensor(self._name, t)

    def shape(self):
        return self._get().shape()

    def lod(self):
        return self._get().lod()

    def set_lod(self, lod):
        t = self._get()
        t.set_lod(lod)
        self._scope._c.set_tensor(self._name, t)

    def recursive_sequence_lengths(self):
        return self._get().recursive_sequence_lengths()

    def _dtype(self):
        return self._get().dtype


class _ScopeVar(object):
    def __init__(self, scope, name):
        self._scope = scope
        self._name = name

    def get_tensor(self):
        return _ScopeTensor(self._scope, self._name)

    def name(self):
        return self._name


class Scope(object):
    """Name -> variable, over a C scope. find_var returns None for a name it lacks."""

    def __init__(self, parent=None, _c=None):
        self._c = _c if _c is not None else core.CScope(parent._c if parent else None)
        self._parent = parent

    def find_var(self, name):
        try:
            self._c.get_tensor(name)
        except error_class('NOT_FOUND'):
            return None
        except core.Error:
            return _ScopeVar(self, name)  # exists but holds no dense tensor
        return _ScopeVar(self, name)

    def var(self, name):
        v = self.find_var(name)
        if v is None:
            self._c.set_tensor(name, Tensor.empty('float32', [0]))
            v = _ScopeVar(self, name)
        return v

    def new_scope(self):
        return Scope(parent=self)


_global_scope = Scope()


def global_scope():
    return _global_scope


@contextlib.contextmanager
def scope_guard(scope):
    global _global_scope
    old = _global_scope
    _global_scope = scope
    try:
        yield
    finally:
        _global_scope = old


def _join_lod_parts(name, parts):
    """Several places' shares of one LoD feed as one (array, offsets): the rows one after
    another, and each level's offsets continued from the share before, so that every
    sequence stays whole."""
    arrays, lods = [], []
    for p in parts:
        if isinstance(p, LoDTensor):
            arr, lod = p._array, p.lod()
        elif isinstance(p, tuple) and len(p) == 2:
            arr, lod = np.asarray(p[0]), core.lod_offsets(p[1], "feed '%s' LoD" % name)
        else:
            arr, lod = np.asarray(p), []
        arrays.append(arr)
        lods.append(lod)
    nlev = len(lods[0])
    for i, lod in enumerate(lods):
        if len(lod) != nlev:
            raise error_class('INVALID_ARGUMENT')(
                "feed '%s': place %d gives %d LoD levels, place 0 gives %d; every place's "
                "share of a feed needs the same number of levels" % (name, i, len(lod), nlev))
    joined = []
    for lv in range(nlev):
        offs = [0]
        for i, lod in enumerate(lods):
            level = lod[lv]
            if not level or level[0] != 0:
                raise error_class('INVALID_ARGUMENT')(
                    "feed '%s': place %d's LoD level %d must start at offset 0, got %s"
                    % (name, i, lv, level[:1]))
            base = offs[-1]
            offs.extend(base + o for o in level[1:])
        joined.append(offs)
    return np.concatenate(arrays), joined


def _merge_place_feeds(feeds):
    """A feed given per place (a list of dicts, as DataLoader and data parallel scripts
    give it): one dict is used as is; several are joined along the batch dim, since
    rill runs every place's share in one run. LoD feeds are joined sequence by
    sequence: each place's offsets continue from the places before it."""
    feeds = [f for f in feeds if f]
    if len(feeds) <= 1:
        return feeds[0] if feeds else {}
    out = {}
    for name in feeds[0]:
        missing = [i for i, f in enumerate(feeds) if name not in f]
        if missing:
            raise error_class('INVALID_ARGUMENT')(
                "feed '%s': place %d's feed dict lacks it; every place must feed the same "
                "names" % (name, missing[0]))
        parts = [f[name] for f in feeds]
        if any(isinstance(p, (tuple, LoDTensor)) for p in parts):
            out[name] = _join_lod_parts(name, parts)
        else:
            out[name] = np.concatenate([np.asarray(p) for p in parts])
    return out


def _fetch_name(f):
    if isinstance(f, Variable):
        return f.name
    if isinstance(f, str):
        return f
    raise TypeError('fetch_list items must be Variables or names, got %r' % (f,))


def _explain_feed_error(err, block, feed_names, tensors):
    """The error to raise for `err`, a failed rill_executor_run: the C executor checks
    every feed (a variable of block 0, its dtype, its declared shape) before any op runs,
    and when a feed is why, the message here says it in Fluid's terms (a name that is no
    variable lists the program's data variables; rill.data's shapes are shown as
    tuples). Otherwise `err` itself."""
    for n in feed_names:
        if n not in block.vars:
            data = [k for k, x in block.vars.items() if x.is_data]
            return error_class('NOT_FOUND')(
                "feed '%s' is not a variable of the program (its data variables: %s)" %
                (n, ', '.join(data) or 'none'))
    for n, t in zip(feed_names, tensors):
        v = block.vars[n]
        if not (v.need_check_feed and v.desc.get('has_tensor', True)):
            continue
        shape, got = v.shape, tuple(t.shape())
        if len(shape) != len(got) or any(d >= 0 and d != s for d, s in zip(shape, got)):
            return error_class('INVALID_ARGUMENT')(
                "feed '%s': shape %s does not match the declared shape %s (-1: any)" %
                (n, got, tuple(shape)))
    return err


_open_executors = weakref.WeakSet()


@atexit.register
def _close_open_executors():
    """At interpreter exit, executors a script never closed still finish the checkpoints
    they queued (closing waits for them); a failed write is printed, not lost."""
    for exe in list(_open_executors):
        try:
            exe.close()
        except core.Error as e:
            sys.stderr.write('rill: closing an executor at exit: %s\n' % e)


def _env_threads():
    """RILL_NUM_THREADS as a thread count; 0 (one per core) when unset or empty."""
    s = os.environ.get('RILL_NUM_THREADS', '').strip()
    if not s:
        return 0
    try:
        n = int(s)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError('Executor: RILL_NUM_THREADS=%r is not a positive number of threads'
                         % s)
    return n


class Executor(object):
    """Runs programs on a place: Executor(CPUPlace(), parallel=None, num_threads=None).

    parallel=None (the default) lets the C executor pick the schedule per program
    (AUTO: the parallel schedule for programs with blocking ops or enough independent
    ops, the sequential one for chains); True or False force the parallel or sequential
    schedule. num_threads sizes the compute pool (None: $RILL_NUM_THREADS when set, else
    one thread per core; rill.distributed.launch sets RILL_NUM_THREADS so that the
    processes of a local job share the cores instead of each spinning a pool of its
    own on every core). self.num_threads is the number asked for (0: one per core)."""

    def __init__(self, place=None, parallel=None, num_threads=None):
        self.place = place if place is not None else CPUPlace()
        if isinstance(self.place, CUDAPlace):
            device, device_id = core.DEVICE_CUDA, self.place.device_id
        elif isinstance(self.place, CPUPlace):
            device, device_id = core.DEVICE_CPU, 0
        elif isinstance(self.place, CUDAPinnedPlace):
            raise core.error_class('INVALID_ARGUMENT')(
                'Executor: CUDAPinnedPlace is host memory for feeding a CUDA device, not a '
                'place to run ops on: use CPUPlace() or CUDAPlace(id)')
        else:
            raise TypeError('Executor: the place must be CPUPlace() or CUDAPlace(id), got %r'
                            % (place,))
        if num_threads is not None and int(num_threads) < 0:
            raise ValueError('Executor: num_threads must be positive, got %r' % num_threads)
        sched = {None: core.SCHEDULE_AUTO, False: core.SCHEDULE_SEQUENTIAL,
                 True: core.SCHEDULE_PARALLEL}[parallel]
        self.num_threads = int(num_threads) if num_threads is not None else _env_threads()
        self._c = core.CExecutor(self.num_threads, sched, device, device_id)
        self._closed = False
        _open_executors.add(self)

    def close(self):
        """Tells the parameter servers this executor's trainer ops talked to that the
        trainer is done (COMPLETE, rill_executor_dist_complete), waits for the
        checkpoints still being written, then releases the executor. A failure of either
        is raised (after the executor is released); closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        c, self._c = self._c, None
        try:
            try:
                core.executor_dist_complete(c)
            finally:
                core.executor_flush(c)
        finally:
            del c

    def flush(self):
        """Waits until the checkpoints this executor's runs queued are written and
        raises the first failed write not reported yet (rill_executor_flush)."""
        self._check_open('flush')
        core.executor_flush(self._c)

    def checkpoint_stats(self, checkpoint_dir):
        """What this executor's checkpoint ops did for `checkpoint_dir`: a dict with
        saved, skipped, failed, last_step, last_bytes, last_snapshot_s, last_wait_s,
        last_persist_s, in_flight. NotFoundError when no checkpoint op of this executor
        has used the directory."""
        self._check_open('checkpoint_stats')
        return core.executor_checkpoint_stats(self._c, checkpoint_dir)

    def _check_open(self, what):
        if self._closed:
            raise error_class('FAILED_PRECONDITION')('Executor.%s: the executor is closed' % what)

    @staticmethod
    def _feed_tensor(name, var, value):
        """The C tensor fed for `value`: an array of another dtype of the same kind is
        converted to the variable's dtype, and one of another rank that fits a
        layers.data variable is viewed in its rank. What does not fit is left for the C
        executor's check, which names the feed."""
        lod = None
        if type(value) is np.ndarray:
            arr = value
        elif isinstance(value, tuple) and len(value) == 2:
            value, lod = value
            arr = np.asarray(value)
        elif isinstance(value, LoDTensor):
            lod = value.lod()
            arr = value._array
        else:
            arr = np.asarray(value)
        if var is not None:
            dtype = var.dtype
            if arr.dtype != dtype and ((arr.dtype.kind in 'fc' and dtype.kind in 'fc') or
                                       (arr.dtype.kind in 'iub' and dtype.kind in 'iub')):
                arr = arr.astype(dtype)
            shape = var.shape if var.desc.get('has_tensor', True) else None
            strict = var.need_check_feed
        else:
            shape = None
        if shape is not None and not strict and arr.ndim != len(shape) and \
                sum(1 for d in shape if d < 0) <= 1:
            # layers.data: Fluid does not check the feed; the C executor takes the declared
            # rank, so an array of another rank that fits (labels [N] for [-1, 1]) is
            # viewed in it. Anything else reaches C's check, which names the feed.
            try:
                arr = arr.reshape([d if d >= 0 else -1 for d in shape])
            except ValueError:
                pass
        t = Tensor.from_numpy(arr)
        if lod:
            try:
                t.set_lod(lod)
            except core.Error as e:
                raise type(e)("feed '%s': %s" % (name, e.message)) from None
        return t

    def run(self, program=None, feed=None, fetch_list=None, feed_var_name='feed',
            fetch_var_name='fetch', scope=None, return_numpy=True, use_program_cache=True):
        """Runs block 0 of `program` (default: the default main program) in `scope`
        (default: the global scope). feed: {name: ndarray | (ndarray, lod) | LoDTensor}
        fed without a copy when dtype and layout allow. Returns one numpy array per
        fetch_list item (over the C buffer, released when the array dies), or with
        return_numpy=False tensors with .lod()."""
        self._check_open('run')
        if program is None:
            program = default_main_program()
        program = getattr(program, '_rill_program', program)  # a CompiledProgram
        if not isinstance(program, Program):
            raise TypeError('Executor.run: program must be a rill.Program, got %r' % (program,))
        if isinstance(feed, (list, tuple)):
            feed = _merge_place_feeds(feed)
        feed = feed or {}
        if not isinstance(feed, dict):
            raise TypeError('Executor.run: feed must be a dict {name: ndarray}')
        for loader in getattr(program, '_data_loaders', ()):
            # a non-iterable DataLoader of the program feeds what the caller did not
            if all(n in feed for n in loader._names):
                continue
            if not loader._started:
                raise error_class('FAILED_PRECONDITION')(
                    'Executor.run: the program reads %s from a DataLoader (iterable=False) '
                    'that is not started; call its start() first, or feed them' %
                    ', '.join(loader._names))
            feed = dict(feed)
            for k, v in loader._next_feed().items():
                feed.setdefault(k, v)
        fetch_list = fetch_list or []
        if not isinstance(fetch_list, (list, tuple)):
            fetch_list = [fetch_list]
        fetch_names = [_fetch_name(f) for f in fetch_list]
        blk = program.global_block()
        feed_names = list(feed)
        tensors = [self._feed_tensor(n, blk.vars.get(n), feed[n]) for n in feed_names]
        scope = scope if scope is not None else _global_scope
        _store_reader_state(program, scope)
        # The C executor checks feeds and fetches and keeps the plan of each program
        # revision and name lists (rill_executor_run).
        try:
            outs = self._c.run(program._c(), scope._c, core.names_array(feed_names), tensors,
                               core.names_array(fetch_names), len(fetch_names))
        except core.Error as e:
            raise _explain_feed_error(e, blk, feed_names, tensors) from None
        if return_numpy:
            return [t.numpy(copy=False) for t in outs]
        return outs

    def _run_from_dataset(self, program, dataset, scope, thread, is_infer, debug, fetch_list,
                          fetch_info, print_period, fetch_handler):
        from . import trainer_desc
        self._check_open('train_from_dataset')
        if dataset is None:
            raise RuntimeError('dataset is need and should be initialized')
        if fetch_handler is not None:
            raise NotImplementedError('train_from_dataset: fetch_handler is not supported by '
                                      'rill; use fetch_list, fetch_info and print_period')
        if program is None:
            program = default_main_program()
        program = getattr(program, '_rill_program', program)  # a CompiledProgram
        if not isinstance(program, Program):
            raise TypeError('train_from_dataset: program must be a rill.Program, got %r'
                            % (program,))
        scope = scope if scope is not None else _global_scope
        fetch_list = list(fetch_list or [])
        fetch_info = list(fetch_info or [])
        if len(fetch_list) != len(fetch_info):
            raise ValueError('train_from_dataset: fetch_list has %d variables, fetch_info %d '
                             'names; give one name per variable'
                             % (len(fetch_list), len(fetch_info)))
        trainer = trainer_desc.create_trainer(program)
        if thread <= 0:
            if dataset.thread_num <= 0:
                raise RuntimeError('You should set thread num first, either in Dataset or '
                                   'in Executor.train_from_dataset')
            trainer._set_thread(dataset.thread_num)
        else:
            trainer._set_thread(thread)
        trainer._set_debug(debug)
        trainer._set_fetch_var_and_info([_fetch_name(f) for f in fetch_list], fetch_info,
                                        print_period)
        trainer._set_infer(is_infer)
        trainer._gen_trainer_desc()
        return trainer._run(self, dataset, scope)

    def train_from_dataset(self, program=None, dataset=None, scope=None, thread=0,
                           debug=False, fetch_list=None, fetch_info=None, print_period=100,
                           fetch_handler=None):
        """Trains `program` on every batch of `dataset` (a QueueDataset or
        InMemoryDataset) on worker threads sharing the parameters of `scope` (Hogwild,
        rill.trainer_desc): `thread` workers for an InMemoryDataset (0: the dataset's
        thread count), the dataset's thread count (at most one per file) for a
        QueueDataset. Worker 0 prints fetch_list, named by fetch_info, every
        print_period batches; debug=True adds each worker's batches, instances and times
        on stderr. Returns None."""
        return self._run_from_dataset(program, dataset, scope, thread, False, debug,
                                      fetch_list, fetch_info, print_period, fetch_handler)

    def infer_from_dataset(self, program=None, dataset=None, scope=None, thread=0,
                           debug=False, fetch_list=None, fetch_info=None, print_period=100,
                           fetch_handler=None):
        """train_from_dataset for inference: every op of `program` runs, as in Paddle,
        so give it a program without optimizer ops (program.clone(for_test=True) before
        minimize, or the inference program)."""
        return self._run_from_dataset(program, dataset, scope, thread, True, debug,
                                      fetch_list, fetch_info, print_period, fetch_handler)


def as_numpy(tensor):
    """A fetched tensor (or list, or LoDTensorArray of them) as numpy arrays; a tensor
    with LoD is refused, as in Fluid (fetch it with return_numpy=False to keep its LoD)."""
    if isinstance(tensor, (list, LoDTensorArray)):
        return [as_numpy(t) for t in tensor]
    if isinstance(tensor, np.ndarray):
        return tensor
    lod = tensor.lod() if hasattr(tensor, 'lod') else []
    if lod:
        raise RuntimeError('as_numpy: the tensor holds LoD %r, which a numpy array cannot '
                           'keep: use it as a LoDTensor (fetch with return_numpy=False)' % (lod,))
    return np.array(tensor)


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.executor', 'rill.executor')
