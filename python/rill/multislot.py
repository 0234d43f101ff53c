"""The MultiSlot text format of Fluid 1.x's datasets (Paddle's MultiSlotDataFeed), read
strictly.

A line is one instance. It holds every slot of the data feed description, in the
description's order: for each slot a count, then that many values. A `uint64` slot holds
ids (unsigned integers, fed as int64), a `float` slot real numbers. The count is at least
one (Paddle's data generators pad an empty slot). Slots not used are read past. Used
slots are fed to the program per batch: a sparse slot as a LoD tensor [total, 1] whose
offsets separate the instances, a dense slot in its shape with the batch dimension (-1)
worked out from the number of values.

Errors name the file, the line (counted from 1) and the slot: a count that is not a
positive integer, fewer values than the count, a value that is not a number of the
slot's type, a dense slot with another number of values than its shape holds, fields
left after the last slot."""

import numpy as np

__all__ = ['Slot', 'MultiSlotParser', 'Columns', 'MultiSlotFormatError']

_U64 = 2 ** 64


class MultiSlotFormatError(ValueError):
    """A line that is not in the MultiSlot format of its data feed description."""


class Slot(object):
    """A slot of a data feed description: name, type ('uint64' or 'float'), dense, used,
    shape (a dense slot's shape, -1 for the batch dimension)."""

    def __init__(self, name, type, dense=False, used=True, shape=()):
        if type not in ('uint64', 'float'):
            raise ValueError("slot '%s': type must be 'uint64' or 'float', got %r"
                             % (name, type))
        self.name, self.type, self.dense, self.used = name, type, bool(dense), bool(used)
        self.shape = [int(d) for d in shape]
        known = [d for d in self.shape if d > 0]
        self.width = int(np.prod(known)) if known else 1
        if self.dense and sum(1 for d in self.shape if d == -1) > 1:
            raise ValueError("slot '%s': a dense slot's shape %s has more than one -1"
                             % (name, self.shape))

    @property
    def dtype(self):
        return np.dtype(np.float32 if self.type == 'float' else np.int64)

    def __repr__(self):
        return 'Slot(%r, %r, dense=%r, used=%r, shape=%r)' % (self.name, self.type,
                                                            self.dense, self.used, self.shape)


class Columns(object):
    """Parsed instances, a column per used slot: values (one flat array of the slot's
    dtype) and per-instance counts."""

    def __init__(self, slots, values, lengths):
        self.slots = slots          # the used slots
        self.values = values        # [np.ndarray], one per used slot
        self.lengths = lengths      # [np.ndarray int64 [n]], one per used slot
        self.n = len(lengths[0]) if lengths else 0

    def __len__(self):
        return self.n

    @staticmethod
    def concat(parts, slots):
        parts = [p for p in parts if p.n]
        if not parts:
            return Columns(slots, [np.zeros(0, s.dtype) for s in slots],
                           [np.zeros(0, np.int64) for _ in slots])
        if len(parts) == 1:
            return parts[0]
        k = len(slots)
        return Columns(slots, [np.concatenate([p.values[j] for p in parts]) for j in range(k)],
                       [np.concatenate([p.lengths[j] for p in parts]) for j in range(k)])

    def take(self, index):
        """The instances at `index` (an integer array), in its order."""
        index = np.asarray(index, np.int64)
        values, lengths = [], []
        for v, ln in zip(self.values, self.lengths):
            ends = np.cumsum(ln)
            starts = ends - ln
            sel = ln[index]
            if len(index) and np.all(ln == ln[0]):
                w = int(ln[0])
                values.append(v.reshape(-1, w)[index].reshape(-1) if w else v[:0])
            else:
                # gather ranges [starts[i], ends[i]) end to end
                out_ends = np.cumsum(sel)
                pos = np.arange(int(out_ends[-1]) if len(sel) else 0, dtype=np.int64)
                owner = np.repeat(np.arange(len(index)), sel)
                pos = pos - (out_ends - sel)[owner] + starts[index][owner]
                values.append(v[pos])
            lengths.append(sel)
        return Columns(self.slots, values, lengths)

    def slice(self, start, stop):
        return self.take(np.arange(start, min(stop, self.n)))

    def feed(self):
        """{slot name: (array, lod) for a sparse slot, array for a dense one} of these
        instances as one batch."""
        out = {}
        for s, v, ln in zip(self.slots, self.values, self.lengths):
            offsets = np.zeros(len(ln) + 1, np.int64)
            np.cumsum(ln, out=offsets[1:])
            lod = [offsets.tolist()]
            if s.dense:
                shape = list(s.shape) if s.shape else [-1, 1]
                if -1 in shape:
                    shape[shape.index(-1)] = len(v) // s.width
                if int(np.prod(shape)) != len(v):
                    raise MultiSlotFormatError(
                        "slot '%s': a dense slot of shape %s cannot hold the %d values of "
                        "a batch of %d instances" % (s.name, s.shape, len(v), len(ln)))
                # Paddle attaches the value offsets to a dense slot too; they do not
                # index its rows, so rill feeds it without LoD.
                out[s.name] = v.reshape(shape)
            else:
                out[s.name] = (v.reshape(-1, 1), lod)
        return out


class MultiSlotParser(object):
    """Parses MultiSlot lines for `slots` (every slot of the description, in order).
    drop_zeros=True reads as Paddle's in-memory feed does: in a sparse slot, ids equal to
    0 and floats of magnitude below 1e-6 are left out, and an instance left with no value
    in the slot gets one 0."""

    def __init__(self, slots, drop_zeros=False):
        self.slots = list(slots)
        self.used = [s for s in self.slots if s.used]
        self.drop_zeros = drop_zeros
        out = 0
        self._spec = []
        for s in self.slots:
            dense_width = s.width if (s.dense and -1 in s.shape) else 0
            self._spec.append((s.name, s.type == 'float', out if s.used else -1,
                               s.dense, dense_width))
            out += s.used

    def _error(self, source, lineno, slot, msg):
        where = '%s, line %d' % (source, lineno)
        if slot is not None:
            where += ", slot '%s'" % slot
        return MultiSlotFormatError('%s: %s' % (where, msg))

    def parse(self, lines, source='<lines>', first_line=1):
        """Columns of `lines` (strings, with or without their newline); errors name
        `source` and the line number, counting from `first_line`."""
        nused = len(self.used)
        vals = [[] for _ in range(nused)]
        lens = [[] for _ in range(nused)]
        drop = self.drop_zeros
        # per slot: name, value converter (None: read past), the column's extend and
        # append, whether values are kept as read, a dense slot's values per instance
        spec = [(name, (float if isfloat else int) if out >= 0 else None,
                 vals[out].extend if out >= 0 else None,
                 lens[out].append if out >= 0 else None,
                 dense or not drop, width)
                for name, isfloat, out, dense, width in self._spec]
        nslots = len(spec)
        for lineno, line in enumerate(lines, first_line):
            toks = line.split()
            ntok = len(toks)
            if not ntok:
                raise self._error(source, lineno, None, 'the line is empty; every line is '
                                  'an instance holding all %d slots' % nslots)
            pos = 0
            name = None
            try:
                for name, conv, extend, append, keep, width in spec:
                    c = toks[pos]
                    n = int(c) if c.isdecimal() else 0
                    end = pos + 1 + n
                    if n <= 0:
                        raise self._error(source, lineno, name, 'the count %r is not a '
                                          'positive integer (pad an empty slot with one '
                                          'value)' % c)
                    if end > ntok:
                        raise self._error(source, lineno, name, 'the count says %d values, '
                                          'the line has %d more' % (n, ntok - pos - 1))
                    if conv is not None:
                        if width and n != width:
                            raise self._error(source, lineno, name, 'a dense slot of %d '
                                              'values per instance has %d' % (width, n))
                        try:
                            if keep:
                                extend(map(conv, toks[pos + 1:end]))
                            else:
                                v = [x for x in map(conv, toks[pos + 1:end])
                                     if (abs(x) >= 1e-6 if conv is float else x != 0)] or [0]
                                extend(v)
                                n = len(v)
                        except ValueError:
                            raise self._bad_value(source, lineno, name, conv is float,
                                                  toks[pos + 1:end]) from None
                        append(n)
                    pos = end
            except IndexError:
                raise self._error(source, lineno, name, 'the line ends before this slot '
                                  '(every line holds all %d slots, each a count then its '
                                  'values)' % nslots) from None
            if pos != ntok:
                raise self._error(source, lineno, None, '%d fields after the last slot '
                                  '(%r...)' % (ntok - pos, toks[pos]))
        values = []
        for j, s in enumerate(self.used):
            if s.type == 'float':
                values.append(np.array(vals[j], np.float32))
                continue
            try:
                values.append(np.array(vals[j], np.uint64).view(np.int64))
            except OverflowError:
                bad = next(i for i, x in enumerate(vals[j]) if not 0 <= x < _U64)
                line = first_line + int(np.searchsorted(np.cumsum(lens[j]), bad, 'right'))
                raise self._error(source, line, s.name, 'the id %d is not an unsigned '
                                  '64-bit integer' % vals[j][bad]) from None
        return Columns(self.used, values, [np.array(ln, np.int64) for ln in lens])

    def _bad_value(self, source, lineno, name, isfloat, seg):
        conv = float if isfloat else int
        for i, t in enumerate(seg):
            try:
                conv(t)
            except ValueError:
                return self._error(source, lineno, name, 'value #%d %r is not %s'
                                   % (i + 1, t, 'a number' if isfloat else
                                      'an unsigned integer id'))
        return self._error(source, lineno, name, 'a value is not a number')
