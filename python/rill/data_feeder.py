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
        """[(x0, y0), (x1, y1), ...] -> {'x': array [n, ...], 'y': array [n, ...]}, each
        sample reshaped to its variable's shape without the batch dimension. Variables
        with a LoD level take one sequence per sample and get (array, lod)."""
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
            dtype = v.dtype
            if v.lod_level:
                seqs = [np.asarray(s, dtype=dtype) for s in col]
                offs = [0]
                for s in seqs:
                    offs.append(offs[-1] + len(s))
                inner = [d for d in v.shape[1:]]
                data = np.concatenate([s.reshape([len(s)] + [d if d > 0 else -1 for d in inner])
                                       if inner else s.reshape(-1, 1) for s in seqs])
                out[v.name] = (data, [offs])
                continue
            arr = np.asarray(col, dtype=dtype)
            shape = [d for d in v.shape]
            if shape and shape[0] < 0:
                shape[0] = len(col)
            if any(d < 0 for d in shape[1:]):
                shape = [len(col)] + [-1 if d < 0 else d for d in shape[1:]]
            out[v.name] = arr.reshape(shape)
        return out
