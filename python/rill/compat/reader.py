"""Paddle's reader decorators (`paddle.reader`, `paddle.batch`). A reader is a function
of no arguments returning an iterable of samples; each decorator takes readers and
returns a new one."""
import itertools
import queue
import random
import threading

__all__ = ['batch', 'cache', 'map_readers', 'buffered', 'compose', 'chain', 'shuffle',
           'ComposeNotAligned', 'firstn', 'xmap_readers']


def batch(reader, batch_size, drop_last=False):
    """Groups the samples of `reader` into lists of `batch_size`; the last, shorter list
    is dropped when `drop_last`."""
    batch_size = int(batch_size)
    if batch_size <= 0:
        raise ValueError('batch_size should be a positive integer, got %r' % (batch_size,))

    def batched():
        group = []
        for sample in reader():
            group.append(sample)
            if len(group) == batch_size:
                yield group
                group = []
        if group and not drop_last:
            yield group
    return batched


def cache(reader):
    """Reads `reader` once, into memory, and replays it."""
    samples = list(reader())

    def cached():
        return iter(samples)
    return cached


def map_readers(func, *readers):
    """Yields func(a, b, ...) for the samples read in step from `readers`."""
    def mapped():
        for args in zip(*[r() for r in readers]):
            yield func(*args)
    return mapped


def shuffle(reader, buf_size):
    """Shuffles the samples within windows of `buf_size`."""
    def shuffled():
        buf = []
        for sample in reader():
            buf.append(sample)
            if len(buf) >= buf_size:
                random.shuffle(buf)
                yield from buf
                buf = []
        random.shuffle(buf)
        yield from buf
    return shuffled


def chain(*readers):
    """The samples of each reader in turn."""
    def chained():
        return itertools.chain(*[r() for r in readers])
    return chained


class ComposeNotAligned(ValueError):
    """compose(check_alignment=True) found readers of different lengths."""


def compose(*readers, **kwargs):
    """Yields one flat tuple per step: the samples of every reader side by side (a
    tuple sample is spread out). Readers of different lengths raise ComposeNotAligned
    unless check_alignment=False, which stops at the shortest."""
    check_alignment = kwargs.pop('check_alignment', True)
    if kwargs:
        raise TypeError('compose() got unexpected arguments %s' % sorted(kwargs))

    def flat(sample):
        return sample if isinstance(sample, tuple) else (sample,)

    def composed():
        iters = [r() for r in readers]
        if not check_alignment:
            for samples in zip(*iters):
                yield sum((flat(s) for s in samples), ())
            return
        end = object()
        for samples in itertools.zip_longest(*iters, fillvalue=end):
            if any(s is end for s in samples):
                raise ComposeNotAligned('outputs of readers are not aligned')
            yield sum((flat(s) for s in samples), ())
    return composed


def firstn(reader, n):
    """The first `n` samples of `reader`."""
    def first():
        return itertools.islice(reader(), n)
    return first


class _End(object):
    pass


def buffered(reader, size):
    """Reads ahead up to `size` samples on a thread."""
    def buffered_reader():
        q = queue.Queue(maxsize=size)
        failure = []

        def fill():
            try:
                for sample in reader():
                    q.put(sample)
            except BaseException as e:   # handed to the consumer
                failure.append(e)
            q.put(_End)
        threading.Thread(target=fill, daemon=True).start()
        while True:
            sample = q.get()
            if sample is _End:
                break
            yield sample
        if failure:
            raise failure[0]
    return buffered_reader


def xmap_readers(mapper, reader, process_num, buffer_size, order=False):
    """Maps `mapper` over the samples of `reader` on `process_num` threads; with
    `order` the outputs keep the input order."""
    def xmapped():
        inq = queue.Queue(buffer_size)
        outq = queue.Queue(buffer_size)
        failure = []

        def feed():
            try:
                for i, sample in enumerate(reader()):
                    inq.put((i, sample))
            except BaseException as e:
                failure.append(e)
            for _ in range(process_num):
                inq.put(_End)

        def work():
            while True:
                item = inq.get()
                if item is _End:
                    outq.put(_End)
                    return
                try:
                    outq.put((item[0], mapper(item[1])))
                except BaseException as e:
                    failure.append(e)
                    outq.put((item[0], _End))
        threading.Thread(target=feed, daemon=True).start()
        for _ in range(process_num):
            threading.Thread(target=work, daemon=True).start()
        finished, pending, want = 0, {}, 0
        while finished < process_num:
            item = outq.get()
            if item is _End:
                finished += 1
                continue
            if failure:
                break
            if not order:
                yield item[1]
                continue
            pending[item[0]] = item[1]
            while want in pending:
                yield pending.pop(want)
                want += 1
        if failure:
            raise failure[0]
    return xmapped
