"""Paddle's ProgramDesc wire format (proto2, FORMATS.md section 1) in pure Python.

Decoding gives plain dicts and lists; encoding takes the same. Fields this codec does
not model are kept as raw bytes ('unknown') and written back unchanged. Repeated
scalars are read packed or unpacked and written unpacked, as Paddle writes them."""

import struct

# AttrType numbers.
INT, FLOAT, STRING, INTS, FLOATS, STRINGS, BOOLEAN, BOOLEANS, BLOCK, LONG, BLOCKS, LONGS, \
    FLOAT64S, VAR, VARS, FLOAT64 = range(16)

# VarType.Type numbers used here.
LOD_TENSOR, SELECTED_ROWS, FEED_MINIBATCH, FETCH_LIST, LOD_TENSOR_ARRAY, RAW = 7, 8, 9, 10, 13, 17


class DecodeError(ValueError):
    pass


# ------------------------------------------------------------------ reading ----

def _varint(b, i):
    r = 0
    shift = 0
    while True:
        if i >= len(b):
            raise DecodeError('truncated varint')
        c = b[i]
        i += 1
        r |= (c & 0x7F) << shift
        if c < 0x80:
            return r, i
        shift += 7
        if shift > 63:
            raise DecodeError('varint too long')


def _fields(b):
    """Yields (field number, wire type, value, raw bytes of the whole field)."""
    i = 0
    n = len(b)
    while i < n:
        start = i
        key, i = _varint(b, i)
        fno, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            if i + 8 > n:
                raise DecodeError('truncated fixed64')
            v = b[i:i + 8]
            i += 8
        elif wt == 2:
            ln, i = _varint(b, i)
            if ln > n - i:
                raise DecodeError('length %d runs past the end (%d bytes left)' % (ln, n - i))
            v = b[i:i + ln]
            i += ln
        elif wt == 5:
            if i + 4 > n:
                raise DecodeError('truncated fixed32')
            v = b[i:i + 4]
            i += 4
        else:
            raise DecodeError('unsupported wire type %d' % wt)
        yield fno, wt, v, b[start:i]


def _signed32(v):
    v &= 0xFFFFFFFFFFFFFFFF
    if v >= 1 << 63:
        v -= 1 << 64
    return v


def _repeated(wt, v, kind):
    """Items of a repeated scalar field occurrence (packed or not)."""
    if wt == 2:
        out = []
        if kind == 'varint':
            i = 0
            while i < len(v):
                x, i = _varint(v, i)
                out.append(_signed32(x))
        elif kind == 'f32':
            out = list(struct.unpack('<%df' % (len(v) // 4), v[:len(v) // 4 * 4]))
        else:
            out = list(struct.unpack('<%dd' % (len(v) // 8), v[:len(v) // 8 * 8]))
        return out
    if kind == 'varint':
        return [_signed32(v)]
    if kind == 'f32':
        return [struct.unpack('<f', v)[0]]
    return [struct.unpack('<d', v)[0]]


def _decode_tensor_desc(b):
    dtype, dims = 5, []
    for f, wt, v, _ in _fields(b):
        if f == 1:
            dtype = v
        elif f == 2:
            dims.extend(_repeated(wt, v, 'varint'))
    return dtype, dims


def _decode_vartype(b, var):
    unknown = b''
    for f, wt, v, raw in _fields(b):
        if f == 1:
            var['type'] = v
        elif f == 2:  # selected_rows: a TensorDesc
            var['dtype'], var['shape'] = _decode_tensor_desc(v)
            var['has_tensor'] = True
        elif f in (3, 4):  # lod_tensor / tensor_array: TensorDesc + lod_level
            for f2, wt2, v2, _ in _fields(v):
                if f2 == 1:
                    var['dtype'], var['shape'] = _decode_tensor_desc(v2)
                    var['has_tensor'] = True
                elif f2 == 2:
                    var['lod_level'] = _signed32(v2)
                    var['present'].add('lod_level')
        else:
            unknown += raw
    var['type_unknown'] = unknown


def new_var(name, type=LOD_TENSOR, dtype=5, shape=None, lod_level=0, persistable=False,
            is_parameter=False, stop_gradient=False, need_check_feed=False, has_tensor=True):
    # 'present': optional fields written even when false (a decoded file's, kept for
    # faithful round trips; Fluid always writes persistable).
    return {'name': name, 'type': type, 'dtype': dtype, 'shape': list(shape or []),
            'lod_level': lod_level, 'persistable': persistable, 'is_parameter': is_parameter,
            'stop_gradient': stop_gradient, 'need_check_feed': need_check_feed,
            'has_tensor': has_tensor, 'type_unknown': b'', 'unknown': b'',
            'present': {'persistable'}}


def _decode_var(b):
    var = new_var('', has_tensor=False)
    var['present'] = set()
    unknown = b''
    for f, wt, v, raw in _fields(b):
        if f == 1:
            var['name'] = v.decode('utf-8')
        elif f == 2:
            _decode_vartype(v, var)
        elif f == 3:
            var['persistable'] = bool(v)
            var['present'].add('persistable')
        elif f == 4:
            var['need_check_feed'] = bool(v)
            var['present'].add('need_check_feed')
        elif f == 5:
            var['is_parameter'] = bool(v)
            var['present'].add('is_parameter')
        elif f == 6:
            var['stop_gradient'] = bool(v)
            var['present'].add('stop_gradient')
        else:
            unknown += raw
    var['unknown'] = unknown
    return var


def _decode_attr(b):
    name, atype = '', INT
    scal = {}
    lists = {}
    unknown = b''
    for f, wt, v, raw in _fields(b):
        if f == 1:
            name = v.decode('utf-8')
        elif f == 2:
            atype = v
        elif f in (3, 10, 12):
            scal[f] = _signed32(v)
        elif f == 13:
            scal[f] = _signed32(v)
        elif f == 4:
            scal[f] = struct.unpack('<f', v)[0]
        elif f == 19:
            scal[f] = struct.unpack('<d', v)[0]
        elif f in (5, 17):
            scal[f] = v.decode('utf-8')
        elif f in (6, 11, 14, 15):
            lists.setdefault(f, []).extend(_repeated(wt, v, 'varint'))
        elif f == 7:
            lists.setdefault(f, []).extend(_repeated(wt, v, 'f32'))
        elif f == 16:
            lists.setdefault(f, []).extend(_repeated(wt, v, 'f64'))
        elif f in (8, 18):
            lists.setdefault(f, []).append(v.decode('utf-8'))
        else:
            unknown += raw
    value = {
        INT: lambda: scal.get(3, 0), FLOAT: lambda: scal.get(4, 0.0),
        STRING: lambda: scal.get(5, ''), INTS: lambda: lists.get(6, []),
        FLOATS: lambda: lists.get(7, []), STRINGS: lambda: lists.get(8, []),
        BOOLEAN: lambda: bool(scal.get(10, 0)),
        BOOLEANS: lambda: [bool(x) for x in lists.get(11, [])],
        BLOCK: lambda: scal.get(12, 0), LONG: lambda: scal.get(13, 0),
        BLOCKS: lambda: lists.get(14, []), LONGS: lambda: lists.get(15, []),
        FLOAT64S: lambda: lists.get(16, []), VAR: lambda: scal.get(17, ''),
        VARS: lambda: lists.get(18, []), FLOAT64: lambda: scal.get(19, 0.0),
    }.get(atype)
    if value is None:  # SCALAR and newer: kept verbatim
        return name, atype, b, unknown
    return name, atype, value(), unknown


def _decode_slot(b):
    param, args = '', []
    for f, wt, v, _ in _fields(b):
        if f == 1:
            param = v.decode('utf-8')
        elif f == 2:
            args.append(v.decode('utf-8'))
    return param, args


def _decode_op(b):
    op = {'type': '', 'inputs': [], 'outputs': [], 'attrs': [], 'is_target': None,
          'unknown': b''}
    for f, wt, v, raw in _fields(b):
        if f == 1:
            op['inputs'].append(_decode_slot(v))
        elif f == 2:
            op['outputs'].append(_decode_slot(v))
        elif f == 3:
            op['type'] = v.decode('utf-8')
        elif f == 4:
            op['attrs'].append(_decode_attr(v))
        elif f == 5:
            op['is_target'] = bool(v)
        else:
            op['unknown'] += raw
    return op


def _decode_block(b):
    blk = {'idx': 0, 'parent_idx': -1, 'vars': [], 'ops': [], 'forward_block_idx': None,
           'unknown': b''}
    for f, wt, v, raw in _fields(b):
        if f == 1:
            blk['idx'] = _signed32(v)
        elif f == 2:
            blk['parent_idx'] = _signed32(v)
        elif f == 3:
            blk['vars'].append(_decode_var(v))
        elif f == 4:
            blk['ops'].append(_decode_op(v))
        elif f == 5:
            blk['forward_block_idx'] = _signed32(v)
        else:
            blk['unknown'] += raw
    return blk


def decode_program(b):
    """ProgramDesc bytes -> {'blocks': [...], 'unknown': bytes}."""
    b = bytes(b)
    prog = {'blocks': [], 'unknown': b''}
    try:
        for f, wt, v, raw in _fields(b):
            if f == 1 and wt == 2:
                prog['blocks'].append(_decode_block(v))
            else:
                prog['unknown'] += raw
    except (DecodeError, UnicodeDecodeError, struct.error, TypeError) as e:
        raise DecodeError('not a ProgramDesc: %s' % e) from None
    return prog


# ------------------------------------------------------------------ writing ----

def _enc_varint(v):
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def _key(f, wt):
    return _enc_varint((f << 3) | wt)


def _f_varint(f, v):
    return _key(f, 0) + _enc_varint(int(v))


def _f_bytes(f, b):
    if isinstance(b, str):
        b = b.encode('utf-8')
    return _key(f, 2) + _enc_varint(len(b)) + b


def _f_float(f, v):
    return _key(f, 5) + struct.pack('<f', v)


def _f_double(f, v):
    return _key(f, 1) + struct.pack('<d', v)


def _enc_tensor_desc(dtype, dims):
    return _f_varint(1, dtype) + b''.join(_f_varint(2, d) for d in dims)


def _enc_var(v):
    vt = _f_varint(1, v['type'])
    if v.get('has_tensor', True) and v['type'] in (LOD_TENSOR, SELECTED_ROWS, LOD_TENSOR_ARRAY):
        td = _enc_tensor_desc(v['dtype'], v['shape'])
        if v['type'] == SELECTED_ROWS:
            vt += _f_bytes(2, td)
        else:
            inner = _f_bytes(1, td)
            if v.get('lod_level') or 'lod_level' in v.get('present', ()):
                inner += _f_varint(2, v['lod_level'])
            vt += _f_bytes(3 if v['type'] == LOD_TENSOR else 4, inner)
    vt += v.get('type_unknown', b'')
    out = _f_bytes(1, v['name']) + _f_bytes(2, vt)
    present = v.get('present', ())
    for f, key in ((3, 'persistable'), (4, 'need_check_feed'), (5, 'is_parameter'),
                   (6, 'stop_gradient')):
        if v.get(key) or key in present:
            out += _f_varint(f, bool(v.get(key)))
    return out + v.get('unknown', b'')


def _enc_attr(name, atype, value, unknown=b''):
    out = _f_bytes(1, name) + _f_varint(2, atype)
    if atype == INT:
        out += _f_varint(3, value)
    elif atype == FLOAT:
        out += _f_float(4, value)
    elif atype == STRING:
        out += _f_bytes(5, value)
    elif atype == INTS:
        out += b''.join(_f_varint(6, x) for x in value)
    elif atype == FLOATS:
        out += b''.join(_f_float(7, x) for x in value)
    elif atype == STRINGS:
        out += b''.join(_f_bytes(8, x) for x in value)
    elif atype == BOOLEAN:
        out += _f_varint(10, bool(value))
    elif atype == BOOLEANS:
        out += b''.join(_f_varint(11, bool(x)) for x in value)
    elif atype == BLOCK:
        out += _f_varint(12, value)
    elif atype == LONG:
        out += _f_varint(13, value)
    elif atype == BLOCKS:
        out += b''.join(_f_varint(14, x) for x in value)
    elif atype == LONGS:
        out += b''.join(_f_varint(15, x) for x in value)
    elif atype == FLOAT64S:
        out += b''.join(_f_double(16, x) for x in value)
    elif atype == VAR:
        out += _f_bytes(17, value)
    elif atype == VARS:
        out += b''.join(_f_bytes(18, x) for x in value)
    elif atype == FLOAT64:
        out += _f_double(19, value)
    else:  # kept verbatim from a decoded file
        return value
    return out + unknown


def _enc_slot(f, param, args):
    return _f_bytes(f, _f_bytes(1, param) + b''.join(_f_bytes(2, a) for a in args))


def _enc_op(op):
    out = b''.join(_enc_slot(1, p, a) for p, a in op['inputs'])
    out += b''.join(_enc_slot(2, p, a) for p, a in op['outputs'])
    out += _f_bytes(3, op['type'])
    out += b''.join(_f_bytes(4, _enc_attr(*a)) for a in op['attrs'])
    if op.get('is_target') is not None:
        out += _f_varint(5, op['is_target'])
    return out + op.get('unknown', b'')


def encode_program(prog):
    out = []
    for blk in prog['blocks']:
        b = _f_varint(1, blk['idx']) + _f_varint(2, blk['parent_idx'])
        b += b''.join(_f_bytes(3, _enc_var(v)) for v in blk['vars'])
        b += b''.join(_f_bytes(4, _enc_op(o)) for o in blk['ops'])
        if blk.get('forward_block_idx') is not None:
            b += _f_varint(5, blk['forward_block_idx'])
        b += blk.get('unknown', b'')
        out.append(_f_bytes(1, b))
    return b''.join(out) + prog.get('unknown', b'')


def attr_type_of(value):
    """The AttrType a Python value is written as."""
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        return INT if -2**31 <= value < 2**31 else LONG
    if isinstance(value, float):
        return FLOAT
    if isinstance(value, str):
        return STRING
    if isinstance(value, (list, tuple)):
        if not value:
            return INTS
        if all(isinstance(x, bool) for x in value):
            return BOOLEANS
        if all(isinstance(x, int) and not isinstance(x, bool) for x in value):
            return INTS if all(-2**31 <= x < 2**31 for x in value) else LONGS
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
            return FLOATS
        if all(isinstance(x, str) for x in value):
            return STRINGS
    raise TypeError('cannot store %r as an op attribute' % (value,))
