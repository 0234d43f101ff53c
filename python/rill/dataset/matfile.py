"""The numeric variables of a MATLAB level 5 MAT-file (what scipy.io.loadmat returns for
them), read without scipy: a 128-byte header whose last two bytes say the byte order
('IM' little endian, 'MI' big), then data elements, each an 8-byte tag (type, byte
count; or the 4-byte small-element form) and its data padded to 8 bytes. A variable is
a miMATRIX element (array flags, dimensions, name, real part) or one inside a
zlib-compressed element. Real numeric arrays come back in their class's dtype and
their dimensions (column-major data); other classes (cell, struct, char, sparse,
complex) are left out."""
import zlib

import numpy as np

__all__ = ['loadmat']

_MI_TYPES = {1: 'i1', 2: 'u1', 3: 'i2', 4: 'u2', 5: 'i4', 6: 'u4', 7: 'f4', 9: 'f8',
             12: 'i8', 13: 'u8'}
_MI_MATRIX = 14
_MI_COMPRESSED = 15
_CLASSES = {6: 'f8', 7: 'f4', 8: 'i1', 9: 'u1', 10: 'i2', 11: 'u2', 12: 'i4', 13: 'u4',
            14: 'i8', 15: 'u8'}
_COMPLEX = 0x800


class _Reader(object):
    def __init__(self, path, order):
        self.path = path
        self.order = order

    def fail(self, what):
        raise ValueError("MAT-file '%s': %s" % (self.path, what))

    def tag(self, buf, pos, padded=True):
        """(type, data, next position) of the element at pos."""
        if pos + 8 > len(buf):
            self.fail('an element tag at byte %d runs past the end (%d bytes)'
                      % (pos, len(buf)))
        first, second = np.frombuffer(buf, self.order + 'u4', 2, pos)
        first, second = int(first), int(second)
        if first >> 16:
            size, mtype = first >> 16, first & 0xFFFF
            if size > 4:
                self.fail('a small element at byte %d claims %d bytes' % (pos, size))
            return mtype, buf[pos + 4:pos + 4 + size], pos + 8
        mtype, size = first, second
        end = pos + 8 + size
        if end > len(buf):
            self.fail('an element at byte %d claims %d bytes, %d are left'
                      % (pos, size, len(buf) - pos - 8))
        if padded:
            end = min(len(buf), end + (-size) % 8)
        return mtype, buf[pos + 8:pos + 8 + size], end

    def numbers(self, mtype, data, what):
        if mtype not in _MI_TYPES:
            self.fail('%s has data type %d, not a numeric one' % (what, mtype))
        dt = np.dtype(self.order + _MI_TYPES[mtype])
        if len(data) % dt.itemsize:
            self.fail('%s has %d bytes, not a whole number of %s values'
                      % (what, len(data), dt.name))
        return np.frombuffer(data, dt)

    def matrix(self, data):
        """(name, array) of a miMATRIX element's contents, or None when not numeric."""
        if not data:
            return None
        mtype, flags, pos = self.tag(data, 0)
        flags = self.numbers(mtype, flags, 'the array flags')
        if len(flags) < 1:
            self.fail('an array has no flags')
        cls, bits = int(flags[0]) & 0xFF, int(flags[0])
        mtype, dims, pos = self.tag(data, pos)
        dims = [int(d) for d in self.numbers(mtype, dims, 'the dimensions')]
        if any(d < 0 for d in dims):
            self.fail('an array has negative dimensions %s' % (dims,))
        mtype, name, pos = self.tag(data, pos)
        name = bytes(name).decode('latin-1')
        if cls not in _CLASSES or bits & _COMPLEX:
            return None
        mtype, real, pos = self.tag(data, pos)
        values = self.numbers(mtype, real, "variable '%s'" % name)
        count = int(np.prod(dims)) if dims else 0
        if values.size != count:
            self.fail("variable '%s' has %d values for dimensions %s"
                      % (name, values.size, dims))
        arr = values.astype(np.dtype(_CLASSES[cls]).newbyteorder('='))
        return name, arr.reshape(dims, order='F')

    def elements(self, buf, out):
        pos = 0
        while pos < len(buf):
            mtype, data, nxt = self.tag(buf, pos, padded=True)
            if mtype == _MI_COMPRESSED:
                # compressed elements follow each other without padding
                nxt = pos + 8 + len(data)
                try:
                    inner = zlib.decompress(bytes(data))
                except zlib.error as e:
                    self.fail('a compressed element at byte %d does not inflate (%s)'
                              % (pos, e))
                self.elements(inner, out)
            elif mtype == _MI_MATRIX:
                item = self.matrix(data)
                if item is not None:
                    out[item[0]] = item[1]
            pos = nxt


def loadmat(path):
    """{name: ndarray} of the real numeric variables of the MAT-file `path`."""
    with open(path, 'rb') as f:
        buf = f.read()
    if len(buf) < 128:
        raise ValueError("MAT-file '%s': %d bytes, shorter than the 128-byte header"
                         % (path, len(buf)))
    endian = buf[126:128]
    if endian == b'IM':
        order = '<'
    elif endian == b'MI':
        order = '>'
    else:
        raise ValueError("MAT-file '%s': byte-order mark %r is neither 'IM' nor 'MI' "
                         "(not a level 5 MAT-file)" % (path, endian))
    version = np.frombuffer(buf, order + 'u2', 1, 124)[0]
    if version != 0x0100:
        raise ValueError("MAT-file '%s': version 0x%04x; only level 5 files (0x0100) are "
                         "read, not version 7.3 (HDF5) ones" % (path, version))
    out = {}
    _Reader(path, order).elements(memoryview(buf)[128:], out)
    return out
