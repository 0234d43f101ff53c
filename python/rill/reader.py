"""Reader decorators (Paddle 1.x's paddle.reader and paddle.batch, also reached as
fluid.io.batch, fluid.io.shuffle, ...).

A reader is a function without arguments that returns an iterable of samples; a
decorator takes readers and returns a new reader. Nothing is read until the returned
reader is called and iterated. fluid.reader's PyReader, DataLoader and
default_collate_fn are data_loader's, reached here by name."""

import itertools
import multiprocessing
import queue
import random
import threading

__all__ = ['batch', 'shuffle', 'buffered', 'compose', 'chain', 'map_readers', 'firstn',
           'xmap_readers', 'cache', 'ComposeNotAligned', 'multiprocess_reader']


def batch(reader, batch_size, drop_last=False):
    """Groups the samples of `reader` into lists of `batch_size`; the last, shorter list
    is kept unless drop_last."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError('batch: batch_size must be a positive integer, got %r' % (batch_size,))

    def batch_reader():
        b = []
        for sample in reader():
            b.append(sample)
            if len(b) == batch_size:
                yield b
                b = []
        if b and not drop_last:
            yield b

    return batch_reader


def shuffle(reader, buf_size):
    """Reads `buf_size` samples at a time into a buffer, shuffles it (Python's random)
    and yields it; the last, partial buffer too."""
    if isinstance(buf_size, bool) or not isinstance(buf_size, int) or buf_size <= 0:
        raise ValueError('shuffle: buf_size must be a positive integer, got %r' % (buf_size,))

    def shuffled():
        buf = []
        for sample in reader():
            buf.append(sample)
            if len(buf) >= buf_size:
                random.shuffle(buf)
                for s in buf:
                    yield s
                buf = []
        if buf:
            random.shuffle(buf)
            for s in buf:
                yield s

    return shuffled


class _End(object):
    """Marks the end of a producer thread's samples (or carries its exception)."""

    def __init__(self, error=None):
        self.error = error


def buffered(reader, size):
    """Reads ahead in a background thread, holding up to `size` samples; the order is
    kept. An exception of the reader is raised where the samples are consumed."""

    def producer(r, q):
        try:
            for sample in r:
                q.put(sample)
        except BaseException as e:  # handed to the consumer
            q.put(_End(e))
            return
        q.put(_End())

    def buffered_reader():
        q = queue.Queue(maxsize=size)
        t = threading.Thread(target=producer, args=(reader(), q), daemon=True)
        t.start()
        while True:
            item = q.get()
            if isinstance(item, _End):
                if item.error is not None:
                    raise item.error
                return
            yield item

    return buffered_reader


class ComposeNotAligned(ValueError):
    """compose(check_alignment=True): the readers ended after different numbers of
    samples."""


def compose(*readers, **kwargs):
    """Zips readers into one: each output is the concatenation of the readers' outputs,
    a tuple output contributing its items and anything else itself:
    compose(r1, r2) with r1 -> (1, 2) and r2 -> 3 yields (1, 2, 3). With
    check_alignment (the default) readers of different lengths raise ComposeNotAligned,
    otherwise the output stops at the shortest."""
    check_alignment = kwargs.pop('check_alignment', True)
    if kwargs:
        raise TypeError('compose: unexpected keyword arguments %s' % sorted(kwargs))

    def as_tuple(x):
        return x if isinstance(x, tuple) else (x,)

    def composed():
        its = [r() for r in readers]
        if not check_alignment:
            for outputs in zip(*its):
                yield sum((as_tuple(o) for o in outputs), ())
            return
        missing = object()
        for outputs in itertools.zip_longest(*its, fillvalue=missing):
            if any(o is missing for o in outputs):
                raise ComposeNotAligned('compose: the readers returned different numbers of '
                                        'samples')
            yield sum((as_tuple(o) for o in outputs), ())

    return composed


def chain(*readers):
    """The samples of each reader in turn."""

    def chained():
        return itertools.chain(*[r() for r in readers])

    return chained


def map_readers(func, *readers):
    """func(*samples) over the readers zipped (stops at the shortest)."""

    def mapped():
        for samples in zip(*[r() for r in readers]):
            yield func(*samples)

    return mapped


def firstn(reader, n):
    """The first n samples of reader."""

    def first():
        for i, sample in enumerate(reader()):
            if i >= n:
                break
            yield sample

    return first


def cache(reader):
    """Reads everything once, then yields the kept samples on every call."""
    everything = list(reader())

    def cached():
        for sample in everything:
            yield sample

    return cached


_END, _FAILED = 'end', 'failed'


def _send_samples(index, reader, put):
    """The body of one multiprocess_reader process: (index, sample) for each sample,
    then (index, _END), or (index, _FAILED, message) when the reader fails."""
    try:
        for sample in reader():
            if sample is None:
                raise ValueError('the reader yielded None')
            put((index, sample))
        put((index, _END))
    except BaseException as e:  # a failure of the user's reader, told to the parent
        put((index, _FAILED, '%s: %s' % (type(e).__name__, e)))


def multiprocess_reader(readers, use_pipe=True, queue_size=1000):
    """Reads each reader of `readers` (a list) in a process of its own (forked) and
    yields their samples, which must pickle: with use_pipe one sample of each running
    reader in turn (so in a fixed order), else as they arrive through one queue of
    `queue_size`. A reader's exception is raised here as a ValueError naming it; the
    processes end with the iteration, or are ended when it stops early."""
    if not isinstance(readers, list) or not readers:
        raise ValueError('multiprocess_reader: readers must be a non-empty list of readers, '
                         'got %r' % (readers,))
    for i, r in enumerate(readers):
        if not callable(r):
            raise TypeError('multiprocess_reader: readers[%d] is not a reader (a function '
                            'returning an iterable): %r' % (i, r))
    if not use_pipe and (isinstance(queue_size, bool) or not isinstance(queue_size, int) or
                         queue_size <= 0):
        raise ValueError('multiprocess_reader: queue_size must be a positive integer, got %r'
                         % (queue_size,))
    ctx = multiprocessing.get_context('fork')

    def check(msg):
        if msg[1] == _FAILED:
            raise ValueError('multiprocess_reader: readers[%d] failed in its process: %s' %
                             (msg[0], msg[2]))
        return msg[1] != _END

    def pipe_reader():
        procs, conns = [], []
        try:
            for i, r in enumerate(readers):
                parent, child = ctx.Pipe(duplex=False)
                p = ctx.Process(target=_send_samples, args=(i, r, child.send), daemon=True)
                p.start()
                child.close()
                procs.append(p)
                conns.append(parent)
            live = list(conns)
            while live:
                for conn in list(live):
                    try:
                        msg = conn.recv()
                    except EOFError:
                        raise ValueError('multiprocess_reader: readers[%d] ended its process '
                                         'without finishing' % conns.index(conn)) from None
                    if check(msg):
                        yield msg[1]
                    else:
                        live.remove(conn)
        finally:
            _end_processes(procs)
            for c in conns:
                c.close()

    def queue_reader():
        q = ctx.Queue(queue_size)
        procs = []
        try:
            for i, r in enumerate(readers):
                p = ctx.Process(target=_send_samples, args=(i, r, q.put), daemon=True)
                p.start()
                procs.append(p)
            running = len(procs)
            while running:
                msg = q.get()
                if check(msg):
                    yield msg[1]
                else:
                    running -= 1
        finally:
            _end_processes(procs)
            q.close()

    return pipe_reader if use_pipe else queue_reader


def _end_processes(procs):
    for p in procs:
        if p.is_alive():
            p.terminate()
        p.join()


def xmap_readers(mapper, reader, process_num, buffer_size, order=False):
    """mapper(sample) on `process_num` threads, at most `buffer_size` samples queued on
    each side. With order the outputs keep the input order; otherwise they come as the
    threads finish. An exception of the reader or the mapper is raised where the samples
    are consumed."""
    if isinstance(process_num, bool) or not isinstance(process_num, int) or process_num <= 0:
        raise ValueError('xmap_readers: process_num must be a positive integer, got %r' %
                         (process_num,))

    def xreader():
        in_q = queue.Queue(buffer_size)
        out_q = queue.Queue(buffer_size)
        stop = threading.Event()

        def feed():
            try:
                for i, sample in enumerate(reader()):
                    if stop.is_set():
                        break
                    in_q.put((i, sample))
            except BaseException as e:
                out_q.put(_End(e))
            for _ in range(process_num):
                in_q.put(None)

        def work():
            while True:
                item = in_q.get()
                if item is None:
                    break
                i, sample = item
                try:
                    out_q.put((i, mapper(sample)))
                except BaseException as e:
                    out_q.put(_End(e))
                    break
            out_q.put(_End())

        threads = [threading.Thread(target=feed, daemon=True)]
        threads += [threading.Thread(target=work, daemon=True) for _ in range(process_num)]
        for t in threads:
            t.start()
        finished, pending, want = 0, {}, 0
        try:
            while finished < process_num:
                item = out_q.get()
                if isinstance(item, _End):
                    if item.error is not None:
                        raise item.error
                    finished += 1
                    continue
                i, out = item
                if not order:
                    yield out
                    continue
                pending[i] = out
                while want in pending:
                    yield pending.pop(want)
                    want += 1
            for i in sorted(pending):
                yield pending[i]
        finally:
            stop.set()

    return xreader


from ._missing import module_getattr as _module_getattr  # noqa: E402
_missing_getattr = _module_getattr('paddle.reader', 'rill.reader')
# fluid.reader's names, which live in data_loader (it imports this module)
_FLUID_READER = ('PyReader', 'DataLoader', 'default_collate_fn')


def __getattr__(name):
    if name in _FLUID_READER:
        from . import data_loader
        return getattr(data_loader, name)
    return _missing_getattr(name)
