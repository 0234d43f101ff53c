"""DataLoader.from_generator (Fluid 1.x's fluid.io.DataLoader): batches from a Python
generator, fed to Executor.run.

- iterable=True (the default): `for data in loader(): exe.run(prog, feed=data)`; each
  `data` is a list with one feed dict per place (rill runs one CPU place: one dict),
  which Executor.run takes as it is; with return_list=True a list of arrays in
  feed_list order.
- iterable=False: the loader belongs to the program being built (the default main
  program); `loader.start()`, then `exe.run(prog, fetch_list=...)` without a feed takes
  the next batch until the generator ends, when run raises `fluid.core.EOFException`;
  `loader.reset()` before the next `start()`. Programs cloned from it share it.

The generator is set by one of set_sample_generator (one sample per item, batched
here), set_sample_list_generator (a list of samples per item) or set_batch_generator
(one array, or (array, lod), per feed variable per item). Samples go through DataFeeder,
so they are shaped as Fluid's DataFeeder shapes them.

The older Fluid 1.x names are built on the same loader: io.PyReader (a DataLoader with
the decorate_* names), layers.py_reader / create_py_reader_by_data (a non-iterable
loader whose variables layers.read_file declares), layers.double_buffer, and
reader.default_collate_fn."""

from . import core
from .core import error_class
from .data_feeder import DataFeeder
from .executor import LoDTensor
from .framework import (CPUPlace, Program, Variable, default_main_program, program_guard,
                        unique_name)
from .reader import batch as _batch

__all__ = ['DataLoader', 'EOFException', 'PyReader', 'default_collate_fn', 'py_reader',
           'create_py_reader_by_data', 'read_file', 'double_buffer']


class EOFException(error_class('OUT_OF_RANGE')):
    """A non-iterable DataLoader's generator has ended (Fluid's core.EOFException)."""

    code = 'OUT_OF_RANGE'


class _GeneratorLoader(object):
    def __init__(self, feed_list, capacity, iterable, return_list, drop_last,
                 use_double_buffer=True, feeder_vars=None):
        if not capacity:
            raise ValueError('DataLoader.from_generator: give a capacity (how many batches '
                             'the queue holds), as Fluid requires')
        if not feed_list:
            raise ValueError('DataLoader.from_generator: feed_list must name the variables '
                             'fed (rill has no dygraph mode)')
        for v in feed_list:
            if not isinstance(v, Variable):
                raise TypeError('DataLoader.from_generator: feed_list items must be '
                                'Variables, got %r' % (v,))
        self._feed_list = list(feed_list)
        self._names = [v.name for v in self._feed_list]
        self._capacity = capacity
        self._iterable = bool(iterable)
        self._return_list = bool(return_list)
        self._drop_last = bool(drop_last)
        self._use_double_buffer = bool(use_double_buffer)
        # the variables DataFeeder shapes samples by, in feed_list order
        self._feeder_vars = list(feeder_vars) if feeder_vars is not None else self._feed_list
        self._batches = None  # () -> iterable of feed dicts
        self._places = None
        self._it = None
        self._started = False
        if not self._iterable:
            program = default_main_program()
            if not hasattr(program, '_data_loaders'):
                program._data_loaders = []
            program._data_loaders.append(self)
            self._program = program

    # -- the generator --

    def _set(self, batches, places):
        if self._iterable and places is None:
            raise ValueError('DataLoader: places cannot be None when the loader is iterable '
                             '(pass places=fluid.cpu_places())')
        if places is not None:
            from .framework import CPUPlace, CUDAPlace, CUDAPinnedPlace
            ps = places if isinstance(places, (list, tuple)) else [places]
            for p in ps:
                if not isinstance(p, (CPUPlace, CUDAPlace, CUDAPinnedPlace)):
                    raise TypeError('DataLoader: unsupported place %r: places are CPUPlace(), '
                                    'CUDAPlace(id) or CUDAPinnedPlace()' % (p,))
        self._batches = batches
        self._places = places
        return self

    def set_sample_generator(self, reader, batch_size, drop_last=True, places=None):
        """reader() yields one sample (a tuple with one item per feed variable) at a
        time; they are batched by batch_size (the last, short batch dropped unless
        drop_last is False)."""
        return self.set_sample_list_generator(_batch(reader, batch_size, drop_last), places)

    def set_sample_list_generator(self, reader, places=None):
        """reader() yields lists of samples, each list one batch."""
        fv = self._feeder_vars
        feeder = DataFeeder(fv, CPUPlace(), program=fv[0].block.program)
        pairs = list(zip([v.name for v in fv], self._names))

        def batches():
            for samples in reader():
                fed = feeder.feed(samples)
                yield {name: fed[src] for src, name in pairs}
        return self._set(batches, places)

    def set_batch_generator(self, reader, places=None):
        """reader() yields one batch at a time: a tuple or list with one array (or
        LoDTensor, or (array, lod)) per feed variable, in feed_list order."""
        names = self._names

        def batches():
            for i, b in enumerate(reader()):
                if isinstance(b, dict):
                    yield b
                    continue
                if not isinstance(b, (list, tuple)) or len(b) != len(names):
                    raise ValueError('DataLoader: batch %d of the batch generator has %s items '
                                     'for the %d feed variables (%s)' %
                                     (i, len(b) if isinstance(b, (list, tuple)) else 'not a list of',
                                      len(names), ', '.join(names)))
                yield dict(zip(names, b))
        return self._set(batches, places)

    def _check_set(self, what):
        if self._batches is None:
            raise error_class('FAILED_PRECONDITION')(
                'DataLoader.%s: set a generator first (set_sample_generator, '
                'set_sample_list_generator or set_batch_generator)' % what)

    # -- iterable --

    def __call__(self):
        return self.__iter__()

    def __iter__(self):
        if not self._iterable:
            raise error_class('FAILED_PRECONDITION')(
                'DataLoader: a loader made with iterable=False is not iterated; call start() '
                'and run the program until it raises EOFException')
        self._check_set('__iter__')
        for feed in self._batches():
            if self._return_list:
                yield [_as_value(feed[n]) for n in self._names]
            else:
                yield [{n: _as_value(v) for n, v in feed.items()}]

    # -- non-iterable --

    def start(self):
        if self._iterable:
            raise error_class('FAILED_PRECONDITION')(
                'DataLoader.start: only a loader made with iterable=False is started')
        self._check_set('start')
        if self._started:
            raise error_class('FAILED_PRECONDITION')(
                'DataLoader.start: already started; call reset() after EOFException first')
        self._it = iter(self._batches())
        self._started = True

    def reset(self):
        if self._iterable:
            raise error_class('FAILED_PRECONDITION')(
                'DataLoader.reset: only a loader made with iterable=False is reset')
        self._it = None
        self._started = False

    def _next_feed(self):
        """The next batch, for Executor.run; EOFException at the end."""
        if self._it is None:
            raise EOFException('DataLoader: the generator has ended; call reset() and '
                               'start() for the next pass')
        try:
            return next(self._it)
        except StopIteration:
            self._it = None
            raise EOFException('DataLoader: the generator has ended (no more batches); call '
                               'reset() and start() for the next pass') from None


def _as_value(v):
    if isinstance(v, tuple) and len(v) == 2:
        return LoDTensor(v[0], v[1])
    return v


class DataLoader(object):
    @staticmethod
    def from_generator(feed_list=None, capacity=None, use_double_buffer=True, iterable=True,
                       return_list=False, use_multiprocess=False, drop_last=True):
        return _GeneratorLoader(feed_list, capacity, iterable, return_list, drop_last,
                                use_double_buffer)


class PyReader(object):
    """Fluid 1.x's fluid.io.PyReader: DataLoader.from_generator under the decorate_*
    names. Iterable (the default): `for data in reader(): exe.run(feed=data)`; else
    start(), run until core.EOFException, reset()."""

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True, iterable=True,
                 return_list=False):
        self._loader = DataLoader.from_generator(feed_list, capacity, use_double_buffer,
                                                 iterable, return_list)

    @property
    def iterable(self):
        return self._loader._iterable

    def __call__(self):
        return self._loader()

    def __iter__(self):
        return self._loader.__iter__()

    def start(self):
        self._loader.start()

    def reset(self):
        self._loader.reset()

    def decorate_sample_generator(self, sample_generator, batch_size, drop_last=True,
                                  places=None):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError('PyReader.decorate_sample_generator: batch_size must be a '
                             'positive integer, got %r' % (batch_size,))
        self._loader.set_sample_generator(sample_generator, batch_size, drop_last, places)

    def decorate_sample_list_generator(self, reader, places=None):
        self._loader.set_sample_list_generator(reader, places)

    def decorate_batch_generator(self, reader, places=None):
        self._loader.set_batch_generator(reader, places)


def default_collate_fn(batch):
    """Fluid's default batch collation: a list of samples, each an ndarray or a list of
    fields, becomes one stacked array per field."""
    if not batch:
        raise ValueError('default_collate_fn: the batch holds no samples')
    import numpy as np
    if isinstance(batch[0], np.ndarray):
        return [np.stack(batch, axis=0)]
    slots = []
    for items in batch:
        for i, item in enumerate(items):
            if len(slots) < len(items):
                slots.append([item])
            else:
                slots[i].append(item)
    return [np.stack(slot, axis=0) for slot in slots]


# ---- layers.py_reader, create_py_reader_by_data, read_file, double_buffer ----

class _PyReaderVar(object):
    """What layers.py_reader and create_py_reader_by_data return: Fluid's reader variable
    with its methods. layers.read_file declares the variables it yields and makes the
    non-iterable loader (of the program being built) that feeds them."""

    def __init__(self, where, capacity, shapes, dtypes, lod_levels, name, use_double_buffer,
                 feed_list=None):
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0:
            raise ValueError('%s: capacity must be a positive integer, got %r' %
                             (where, capacity))
        shapes = [list(s) for s in shapes]
        dtypes = list(dtypes)
        lod_levels = [0] * len(shapes) if lod_levels is None else list(lod_levels)
        if not shapes or len(dtypes) != len(shapes) or len(lod_levels) != len(shapes):
            raise ValueError('%s: shapes, dtypes and lod_levels must have one item per '
                             'variable, got %d, %d and %d' %
                             (where, len(shapes), len(dtypes), len(lod_levels)))
        for i, s in enumerate(shapes):
            if any(isinstance(d, bool) or not isinstance(d, int) for d in s):
                raise TypeError('%s: shapes[%d] must be a list of ints (-1: any), got %r' %
                                (where, i, s))
        self.name = name or unique_name.generate('create_py_reader')
        self._where = where
        self.capacity = capacity
        self.shapes, self.dtypes, self.lod_levels = shapes, dtypes, lod_levels
        self._use_double_buffer = bool(use_double_buffer)
        self._feed_list = feed_list
        self._check = ([bool(v.need_check_feed) for v in feed_list] if feed_list
                       else [False] * len(shapes))
        self._loader = None
        self._source = None  # (loader method name, reader)

    def _declare(self):
        if self._loader is not None:
            raise ValueError('read_file: reader %r is already read; read_file once per '
                             'reader' % self.name)
        blk = default_main_program().current_block()
        prefix = unique_name.generate('read_file')
        outs = [blk.create_var(name='%s.tmp_%d' % (prefix, i), shape=s, dtype=d, lod_level=l,
                               stop_gradient=True, is_data=True, need_check_feed=c)
                for i, (s, d, l, c) in enumerate(zip(self.shapes, self.dtypes,
                                                      self.lod_levels, self._check))]
        self._loader = _GeneratorLoader(outs, self.capacity, False, False, True,
                                        self._use_double_buffer, self._feeder_vars())
        if self._source is not None:
            getattr(self._loader, self._source[0])(self._source[1])
        return outs

    def _feeder_vars(self):
        if self._feed_list:
            return self._feed_list
        # as Fluid: layers.data variables of these shapes (a batch dim added to a shape
        # without -1) in a program of their own
        from . import layers
        with program_guard(Program(), Program()):
            return [layers.data(str(i), s, dtype=d, lod_level=l) for i, (s, d, l) in
                    enumerate(zip(self.shapes, self.dtypes, self.lod_levels))]

    def _decorate(self, method, reader):
        if not callable(reader):
            raise TypeError('%s.%s: the reader must be a function returning an iterable, '
                            'got %r' % (self._where, method, reader))
        self._source = (method, reader)
        if self._loader is not None:
            getattr(self._loader, method)(reader)

    def decorate_paddle_reader(self, reader, places=None):
        """reader() yields lists of samples (paddle.batch of a sample reader)."""
        self._decorate('set_sample_list_generator', reader)

    decorate_sample_list_generator = decorate_paddle_reader

    def decorate_tensor_provider(self, reader, places=None):
        """reader() yields one batch at a time: one array or LoDTensor per variable."""
        self._decorate('set_batch_generator', reader)

    decorate_batch_generator = decorate_tensor_provider

    def _ready(self, what):
        if self._loader is None:
            raise error_class('FAILED_PRECONDITION')(
                '%s.%s: reader %r has no variables yet; call layers.read_file(reader) '
                'first' % (self._where, what, self.name))

    def start(self):
        self._ready('start')
        self._loader.start()

    def reset(self):
        self._ready('reset')
        self._loader.reset()


def py_reader(capacity, shapes, dtypes, lod_levels=None, name=None, use_double_buffer=True):
    """Fluid 1.x's layers.py_reader: a reader of batches shaped `shapes` (the batch dim
    included, -1 for any), fed from Python; layers.read_file(reader) gives its
    variables. As Fluid's, its feeds are not checked against the shapes."""
    return _PyReaderVar('py_reader', capacity, shapes, dtypes, lod_levels, name,
                        use_double_buffer)


def create_py_reader_by_data(capacity, feed_list, name=None, use_double_buffer=True):
    """layers.py_reader with the shapes, dtypes and LoD levels of the variables of
    feed_list (which shape the samples of decorate_paddle_reader); feeds are checked as
    those variables' are (fluid.data's: rank and fixed extents)."""
    if not feed_list:
        raise ValueError('create_py_reader_by_data: feed_list must hold the variables read')
    for v in feed_list:
        if not isinstance(v, Variable):
            raise TypeError('create_py_reader_by_data: feed_list items must be Variables, '
                            'got %r' % (v,))
    return _PyReaderVar('create_py_reader_by_data', capacity, [list(v.shape) for v in feed_list],
                        [v.dtype for v in feed_list], [v.lod_level for v in feed_list], name,
                        use_double_buffer, feed_list=list(feed_list))


def _reader_arg(where, reader):
    if not isinstance(reader, _PyReaderVar):
        raise TypeError('%s: reader must be what layers.py_reader or '
                        'create_py_reader_by_data returned, got %r' % (where, reader))


def read_file(reader):
    """The variables `reader` yields (one Variable, or a list of them), declared in the
    program being built; each run of it takes the next batch once reader.start()."""
    _reader_arg('read_file', reader)
    outs = reader._declare()
    return outs[0] if len(outs) == 1 else outs


def double_buffer(reader, place=None, name=None):
    """Fluid's double_buffer: `reader` itself (rill reads each batch when a run asks)."""
    _reader_arg('double_buffer', reader)
    return reader


core.EOFException = EOFException
