"""DataFeeder (Fluid 1.x's data_feeder.py): turns a minibatch of samples (tuples, one
item per feed variable) into the feed dict Executor.run takes."""

import numpy as np

from .framework import Variable, default_main_program

__all__ = ['DataFeeder']


class DataFeeder(object):
    def __init__(self, feed_list, place=None, program=None):
        program = program or default_main_program()
        self.feed_vars = []
        for v in feed_list:
            if isinstance(v, str):
                v = program.global_block().var(v)
            if not isinstance(v, Variable):
                raise TypeError('DataFeeder: feed_list items must be Variables or names, '
                                'got %r' % (v,))
            self.feed_vars.append(v)
        self.place = place

    def feed(self, iterable):
        """[(x0, y0), (x1, y1), ...] -> {'x': array, 'y': array}, built as Fluid 1.x's
        DataFeeder builds them: the samples (for a LoD variable, the items of every
        sequence) stacked into one array, reshaped to the variable's shape only when the
        ranks differ and the shape has at most one unknown extent. So `layers.data(shape=
        [1])` ([-1, 1]) gets [n, 1], `data(shape=[None], lod_level=1)` gets [T] and
        `data(shape=[None, 1], lod_level=1)` [T, 1]: each what the feed check accepts.
        Variables with a LoD level get (array, lod)."""
        columns = [[] for _ in self.feed_vars]
        for i, sample in enumerate(iterable):
            if len(sample) != len(self.feed_vars):
                raise ValueError('DataFeeder: sample %d has %d items for %d feed variables (%s)'
                                 % (i, len(sample), len(self.feed_vars),
                                    ', '.join(v.name for v in self.feed_vars)))
            for col, item in zip(columns, sample):
                col.append(item)
        out = {}
        for v, col in zip(self.feed_vars, columns):
            lengths = [[] for _ in range(v.lod_level)]
            items = []
            for item in col:
                _flatten(item, v.lod_level, lengths, items)
            arr = np.array(items, dtype=v.dtype)
            shape = list(v.shape)
            if sum(1 for d in shape if d < 0) <= 1 and shape and arr.ndim != len(shape):
                try:
                    arr = arr.reshape(shape)
                except ValueError:
                    raise ValueError("DataFeeder: variable '%s' is declared with shape %s; the "
                                     "samples give %s, which does not reshape to it" %
                                     (v.name, tuple(shape), arr.shape)) from None
            if v.lod_level:
                offsets = []
                for level in lengths:
                    offs = [0]
                    for n in level:
                        offs.append(offs[-1] + n)
                    offsets.append(offs)
                out[v.name] = (arr, offsets)
            else:
                out[v.name] = arr
        return out


def _flatten(item, lod_level, lengths, items):
    """Fluid's converter: the lengths of each LoD level and the innermost items."""
    if lod_level == 0:
        items.append(item)
        return
    lengths[0].append(len(item))
    for sub in item:
        _flatten(sub, lod_level - 1, lengths[1:], items)


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.data_feeder', 'rill.data_feeder')
