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
so they are shaped as Fluid's DataFeeder shapes them."""

from . import core
from .core import error_class
from .data_feeder import DataFeeder
from .executor import LoDTensor
from .framework import CPUPlace, Variable, default_main_program
from .reader import batch as _batch

__all__ = ['DataLoader', 'EOFException']


class EOFException(error_class('OUT_OF_RANGE')):
    """A non-iterable DataLoader's generator has ended (Fluid's core.EOFException)."""

    code = 'OUT_OF_RANGE'


class _GeneratorLoader(object):
    def __init__(self, feed_list, capacity, iterable, return_list, drop_last):
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
        feeder = DataFeeder(self._feed_list, CPUPlace(), program=self._feed_list[0].block.program)

        def batches():
            for samples in reader():
                yield feeder.feed(samples)
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
        return _GeneratorLoader(feed_list, capacity, iterable, return_list, drop_last)


core.EOFException = EOFException
