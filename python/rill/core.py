"""ctypes bindings to librill: the library, status codes as exceptions, tensors,
scopes, C programs and executors. Everything above this module is pure Python."""

import ctypes
import ctypes.util
import os
import itertools
import numbers
import weakref

import numpy as np

__all__ = ['Error', 'lib', 'Tensor', 'CScope', 'CProgram', 'CExecutor']


# ------------------------------------------------------------------ library ----

def _candidates():
    env = os.environ.get('RILL_LIB')
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, '_lib', 'librill.so')
    root = os.path.dirname(os.path.dirname(here))
    yield os.path.join(root, 'build', 'librill.so')
    found = ctypes.util.find_library('rill')
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + ' (missing)')
            continue
        try:
            # RTLD_GLOBAL: op plugins are not linked with rill and take its symbols from
            # the process (rill_load_op_library).
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            tried.append('%s (%s)' % (path, e))
    raise ImportError('rill: cannot find librill; set RILL_LIB to the path of librill.so '
                      '(tried: %s)' % ', '.join(tried or ['nothing']))


lib = _load()

RILL_MAX_DIMS = 9
c_status_p = ctypes.c_void_p
c_char_pp = ctypes.POINTER(ctypes.c_char_p)
c_i64_p = ctypes.POINTER(ctypes.c_int64)
DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_status_code = _fn('rill_status_code', ctypes.c_int, c_status_p)
_status_message = _fn('rill_status_message', ctypes.c_char_p, c_status_p)
_status_destroy = _fn('rill_status_destroy', None, c_status_p)
_code_name = _fn('rill_code_name', ctypes.c_char_p, ctypes.c_int)
_cpu_isa = _fn('rill_cpu_isa', ctypes.c_char_p)


_version = _fn('rill_version', ctypes.c_char_p)
_version_number = _fn('rill_version_number', ctypes.c_uint)


def version():
    """The version of the loaded C library, 'MAJOR.MINOR.PATCH' (rill.__version__ is
    the package's; the two are the same release)."""
    return _version().decode()


def version_number():
    """The loaded C library's version as (major << 16) | (minor << 8) | patch."""
    return _version_number()


def cpu_isa():
    """The vector instruction set rill's CPU kernels take here: 'avx512', 'avx2' or
    'generic' (RILL_CPU_ISA in the environment caps it)."""
    return _cpu_isa().decode()


# ------------------------------------------------------------------- errors ----

class Error(Exception):
    """A failing rill call. `code` is the C status code name, `message` the C message."""
    code = 'UNKNOWN'

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


_CODES = ['OK', 'INVALID_ARGUMENT', 'NOT_FOUND', 'ALREADY_EXISTS', 'OUT_OF_MEMORY', 'IO',
          'CORRUPT', 'UNIMPLEMENTED', 'FAILED_PRECONDITION', 'OUT_OF_RANGE', 'CANCELLED',
          'DEADLINE_EXCEEDED', 'UNAVAILABLE', 'INTERNAL']


def _class_name(code):
    return ''.join(p.capitalize() for p in code.lower().split('_')) + 'Error'


ERRORS = {}
for _i, _c in enumerate(_CODES[1:], 1):
    _bases = (Error,)
    if _c == 'INVALID_ARGUMENT':
        _bases = (Error, ValueError)
    elif _c == 'NOT_FOUND':
        _bases = (Error, KeyError)
    elif _c == 'IO':
        _bases = (Error, OSError)
    elif _c == 'OUT_OF_MEMORY':
        _bases = (Error, MemoryError)
    _cls = type(_class_name(_c), _bases, {'code': _c, '__str__': lambda self: self.message,
                                          '__module__': 'rill'})
    ERRORS[_i] = _cls
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)


def check(st, context=None):
    """Raises the rill.Error subclass of a non-NULL status (and frees the status)."""
    if not st:
        return
    code = _status_code(st)
    msg = _status_message(st).decode('utf-8', 'replace')
    _status_destroy(st)
    if context:
        msg = '%s: %s' % (context, msg)
    cls = ERRORS.get(code, Error)
    raise cls(msg)


def _lod_count(x, where):
    """x as a non-negative int: an int, a numpy integer or a float of integral value
    (2.0); anything else (0.5, '1', True, None, -1) raises InvalidArgumentError."""
    shown = str(x) if isinstance(x, (numbers.Number, np.bool_)) else repr(x)
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise error_class('INVALID_ARGUMENT')('%s is %s, not an integer' % (where, shown))
    if isinstance(x, numbers.Integral):
        v = int(x)
    else:
        f = float(x)
        if not f.is_integer():
            raise error_class('INVALID_ARGUMENT')('%s is %s, not an integer' % (where, shown))
        v = int(f)
    if v < 0:
        raise error_class('INVALID_ARGUMENT')('%s is %d, negative' % (where, v))
    return v


def _lod_levels(lod, what):
    if isinstance(lod, (str, bytes)) or not hasattr(lod, '__iter__'):
        raise error_class('INVALID_ARGUMENT')(
            '%s must be a list of levels, each a list of integers, not %r' % (what, lod))
    levels = list(lod)
    for lv, level in enumerate(levels):
        if isinstance(level, (str, bytes)) or not hasattr(level, '__iter__'):
            raise error_class('INVALID_ARGUMENT')(
                '%s must be a list of levels, each a list of integers: level %d is %r'
                % (what, lv, level))
    return levels


def lod_offsets(lod, what='LoD'):
    """`lod` (a list of levels, each a list of offsets) as lists of ints, checked: every
    offset a non-negative integer (an int, a numpy integer or an integral float such as
    2.0) and each level non-decreasing. Raises InvalidArgumentError (a ValueError)
    naming `what` and the position otherwise; C checks the rest (a first offset of 0,
    levels that fit the tensor)."""
    out = []
    for lv, level in enumerate(_lod_levels(lod, what)):
        offs = [_lod_count(x, '%s level %d, offset #%d' % (what, lv, i))
                for i, x in enumerate(level)]
        for i in range(1, len(offs)):
            if offs[i] < offs[i - 1]:
                raise error_class('INVALID_ARGUMENT')(
                    '%s level %d decreases at offset #%d (%d after %d)'
                    % (what, lv, i, offs[i], offs[i - 1]))
        out.append(offs)
    return out


def lod_from_lengths(lengths, what='LoD'):
    """Offsets from sequence lengths per level (Fluid's recursive_sequence_lengths), each
    length checked as lod_offsets checks an offset."""
    out = []
    for lv, level in enumerate(_lod_levels(lengths, what + ' lengths')):
        offs = [0]
        for i, x in enumerate(level):
            offs.append(offs[-1] + _lod_count(x, '%s lengths level %d, length #%d'
                                               % (what, lv, i)))
        out.append(offs)
    return out


def error_class(code_name):
    """The exception class of a status code name ('NOT_FOUND' -> rill.NotFoundError)."""
    return ERRORS[_CODES.index(code_name)]


def _cstrs(names):
    arr = (ctypes.c_char_p * max(1, len(names)))()
    for i, n in enumerate(names):
        arr[i] = n.encode('utf-8') if isinstance(n, str) else n
    return arr


# ------------------------------------------------------------------- dtypes ----

# Paddle's VarType.Type numbers <-> numpy dtypes.
DTYPE_TO_NP = {0: np.bool_, 1: np.int16, 2: np.int32, 3: np.int64, 4: np.float16,
               5: np.float32, 6: np.float64, 20: np.uint8, 21: np.int8,
               23: np.complex64, 24: np.complex128}
NP_TO_DTYPE = {np.dtype(v): k for k, v in DTYPE_TO_NP.items()}


_DTYPE_CODES = {}  # (class, dtype) -> number, for the names and dtypes seen so far


def dtype_code(dtype):
    """Paddle's VarType.Type number of a numpy dtype, a dtype name or a number."""
    if dtype.__class__ is str:
        code = _DTYPE_CODES.get((str, dtype))
        if code is not None:
            return code
    elif isinstance(dtype, int) and not isinstance(dtype, bool):
        if dtype not in DTYPE_TO_NP:
            raise ValueError('unknown dtype number %d' % dtype)
        return int(dtype)  # a plain int, also for VarDesc.VarType's members
    try:
        key = (dtype.__class__, dtype)
        return _DTYPE_CODES[key]
    except (KeyError, TypeError):
        pass
    code = _dtype_code_of(dtype)
    try:
        _DTYPE_CODES[key] = code
    except TypeError:  # unhashable: not kept
        pass
    return code


def _dtype_code_of(dtype):
    if isinstance(dtype, str) and dtype in ('float', 'double', 'int', 'long', 'bool'):
        dtype = {'float': 'float32', 'double': 'float64', 'int': 'int32', 'long': 'int64',
                 'bool': 'bool'}[dtype]
    try:
        d = np.dtype(dtype)
    except TypeError:
        raise TypeError('unsupported dtype %r' % (dtype,)) from None
    if d not in NP_TO_DTYPE:
        raise TypeError('unsupported dtype %r' % (dtype,))
    return NP_TO_DTYPE[d]


# ------------------------------------------------------------------- tensors ----

_tensor_create = _fn('rill_tensor_create', c_status_p, ctypes.c_int, c_i64_p, ctypes.c_size_t,
                     ctypes.POINTER(ctypes.c_void_p))
_tensor_from_data = _fn('rill_tensor_create_from_data', c_status_p, ctypes.c_int, c_i64_p,
                        ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, DELETER,
                        ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
_tensor_destroy = _fn('rill_tensor_destroy', None, ctypes.c_void_p)
_tensor_dtype = _fn('rill_tensor_dtype', ctypes.c_int, ctypes.c_void_p)
_tensor_ndim = _fn('rill_tensor_ndim', ctypes.c_size_t, ctypes.c_void_p)
_tensor_dims = _fn('rill_tensor_dims', c_i64_p, ctypes.c_void_p)
_tensor_byte_size = _fn('rill_tensor_byte_size', ctypes.c_size_t, ctypes.c_void_p)
_tensor_data = _fn('rill_tensor_data', ctypes.c_void_p, ctypes.c_void_p)
_tensor_lod_levels = _fn('rill_tensor_lod_levels', ctypes.c_size_t, ctypes.c_void_p)
_tensor_lod = _fn('rill_tensor_lod', ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p,
                  ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t))
_tensor_set_lod = _fn('rill_tensor_set_lod', c_status_p, ctypes.c_void_p, ctypes.c_size_t,
                      ctypes.POINTER(ctypes.POINTER(ctypes.c_uint64)),
                      ctypes.POINTER(ctypes.c_size_t))

# numpy arrays lent to C tensors, kept alive until C drops its last reference (the
# deleter may run on a pool thread: dict operations are atomic under the GIL).
_lent = {}
_lent_keys = itertools.count(1)
_DIMS = [ctypes.c_int64 * max(1, n) for n in range(RILL_MAX_DIMS + 1)]
_DIMS_MADE = {}  # tuple of extents -> its _DIMS array, which C only reads


def _dims_of(shape):
    """The int64 array of `shape` to pass to C as `const int64_t *` (None above
    RILL_MAX_DIMS extents), made once per distinct shape."""
    key = tuple(shape)
    got = _DIMS_MADE.get(key)
    if got is None:
        if len(key) > RILL_MAX_DIMS:
            return None
        got = _DIMS[len(key)](*key)
        if len(_DIMS_MADE) < 4096:
            _DIMS_MADE[key] = got
    return got


def _release_lent(data, ctx, _lent=_lent):
    # Bound as a default: C may call this while the interpreter tears modules down.
    _lent.pop(ctx, None)


_release_lent_c = DELETER(_release_lent)


class Tensor(object):
    """A reference to a C tensor (rill_tensor *). `np.array(t)` copies its data out;
    `t.numpy(copy=False)` gives an array over the C buffer that keeps the tensor alive."""

    __slots__ = ('_h', '__weakref__')

    def __init__(self, handle):
        self._h = handle

    def __del__(self):
        h = self._h
        if h:
            self._h = None
            _tensor_destroy(h)

    @classmethod
    def from_numpy(cls, arr, copy=False):
        """A C tensor over `arr` (C-contiguous, a rill dtype): without a copy unless
        `copy` is true or the array must be converted. The array is kept alive until
        the library drops its last reference to the data."""
        if type(arr) is not np.ndarray:
            arr = np.asarray(arr)
        code = NP_TO_DTYPE.get(arr.dtype)
        if code is None:
            raise TypeError('cannot feed an array of dtype %s' % arr.dtype)
        if copy or not arr.flags.c_contiguous:
            arr = np.array(arr, order='C', copy=True)
        shape = arr.shape
        nd = len(shape)
        dims = _DIMS[nd](*shape)
        key = next(_lent_keys)
        _lent[key] = arr
        out = ctypes.c_void_p()
        st = _tensor_from_data(code, dims, nd, arr.__array_interface__['data'][0], arr.nbytes,
                               _release_lent_c, key, ctypes.byref(out))
        if st:
            _lent.pop(key, None)
            check(st, 'tensor from a numpy array')
        return cls(out.value)

    @classmethod
    def empty(cls, dtype, shape):
        dims = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        out = ctypes.c_void_p()
        check(_tensor_create(dtype_code(dtype), dims, len(shape), ctypes.byref(out)))
        return cls(out.value)

    @property
    def dtype(self):
        return np.dtype(DTYPE_TO_NP[_tensor_dtype(self._h)])

    def shape(self):
        n = _tensor_ndim(self._h)
        d = _tensor_dims(self._h)
        return [d[i] for i in range(n)]

    def lod(self):
        out = []
        cnt = ctypes.c_size_t()
        for lv in range(_tensor_lod_levels(self._h)):
            p = _tensor_lod(self._h, lv, ctypes.byref(cnt))
            out.append([p[i] for i in range(cnt.value)])
        return out

    def recursive_sequence_lengths(self):
        return [[l[i + 1] - l[i] for i in range(len(l) - 1)] for l in self.lod()]

    def set_lod(self, lod):
        lod = lod_offsets(lod)
        n = len(lod)
        arrs = [(ctypes.c_uint64 * max(1, len(l)))(*l) for l in lod]
        levels = (ctypes.POINTER(ctypes.c_uint64) * max(1, n))(
            *[ctypes.cast(a, ctypes.POINTER(ctypes.c_uint64)) for a in arrs])
        counts = (ctypes.c_size_t * max(1, n))(*[len(l) for l in lod])
        check(_tensor_set_lod(self._h, n, levels, counts), 'set_lod')

    def set_recursive_sequence_lengths(self, lengths):
        self.set_lod(lod_from_lengths(lengths))

    def numpy(self, copy=True):
        """The data as a numpy array: a copy, or (copy=False) a view over the C buffer
        that holds a reference to this tensor until the array dies."""
        holder = _Holder(self)
        a = np.asarray(holder)
        return a.copy() if copy else a

    def __array__(self, dtype=None, copy=None):
        a = self.numpy(copy=False)
        if dtype is not None:
            return a.astype(dtype)
        return a.copy() if copy else a


_TYPESTR = {k: np.dtype(v).str for k, v in DTYPE_TO_NP.items()}


class _Holder(object):
    """Exposes a C tensor's buffer through the array interface; an array made from it
    keeps the holder (and so the tensor reference) alive."""

    __slots__ = ('tensor', '__array_interface__')

    def __init__(self, tensor):
        self.tensor = tensor
        h = tensor._h
        n = _tensor_ndim(h)
        d = _tensor_dims(h)
        shape = tuple(d[:n])
        ptr = _tensor_data(h)
        typestr = _TYPESTR[_tensor_dtype(h)]
        if not ptr:
            # An empty tensor has no buffer: numpy needs a non-NULL pointer anyway.
            self.tensor = np.zeros(shape, typestr)
            ptr = self.tensor.ctypes.data
        self.__array_interface__ = {'shape': shape, 'typestr': typestr, 'data': (ptr, False),
                                    'version': 3}


# ------------------------------------------------------------------- scopes ----

_scope_create = _fn('rill_scope_create', c_status_p, ctypes.c_void_p,
                    ctypes.POINTER(ctypes.c_void_p))
_scope_destroy = _fn('rill_scope_destroy', None, ctypes.c_void_p)
_scope_get_tensor = _fn('rill_scope_get_tensor', c_status_p, ctypes.c_void_p, ctypes.c_char_p,
                        ctypes.POINTER(ctypes.c_void_p))
_scope_set_tensor = _fn('rill_scope_set_tensor', c_status_p, ctypes.c_void_p, ctypes.c_char_p,
                        ctypes.c_void_p)


class CScope(object):
    def __init__(self, parent=None):
        out = ctypes.c_void_p()
        check(_scope_create(parent._h if parent else None, ctypes.byref(out)))
        self._h = out.value
        self._parent = parent  # a child scope is owned by its parent in C

    @classmethod
    def wrap(cls, handle, owner):
        """A scope owned by `owner` (a model), kept alive with it."""
        s = cls.__new__(cls)
        s._h = handle
        s._parent = owner
        return s

    def __del__(self):
        if getattr(self, '_h', None) and self._parent is None:
            _scope_destroy(self._h)
        self._h = None

    def get_tensor(self, name):
        out = ctypes.c_void_p()
        check(_scope_get_tensor(self._h, name.encode(), ctypes.byref(out)))
        return Tensor(out.value)

    def set_tensor(self, name, tensor):
        check(_scope_set_tensor(self._h, name.encode(), tensor._h))


# ----------------------------------------------------------------- programs ----

_prog_destroy = _fn('rill_program_destroy', None, ctypes.c_void_p)
_prog_parse = _fn('rill_program_parse', c_status_p, ctypes.c_char_p, ctypes.c_size_t,
                  ctypes.POINTER(ctypes.c_void_p))
_prog_serialize = _fn('rill_program_serialize', c_status_p, ctypes.c_void_p,
                      ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t))
_free_buffer = _fn('rill_free_buffer', None, ctypes.c_void_p)
_prog_validate = _fn('rill_program_validate', c_status_p, ctypes.c_void_p)
_prog_infer = _fn('rill_program_infer_shapes', c_status_p, ctypes.c_void_p)
_prog_prune = _fn('rill_program_prune', c_status_p, ctypes.c_void_p, c_char_pp, ctypes.c_size_t,
                  c_char_pp, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p))
_prog_save_vars = _fn('rill_program_save_vars', c_status_p, ctypes.c_void_p, ctypes.c_void_p,
                      ctypes.c_char_p, c_char_pp, ctypes.c_size_t, ctypes.c_char_p)
_prog_load_vars = _fn('rill_program_load_vars', c_status_p, ctypes.c_void_p, ctypes.c_void_p,
                      ctypes.c_char_p, c_char_pp, ctypes.c_size_t, ctypes.c_char_p)
_prog_save = _fn('rill_program_save', c_status_p, ctypes.c_void_p, ctypes.c_char_p)
_gradients = _fn('rill_program_append_gradients', c_status_p, ctypes.c_void_p, ctypes.c_char_p,
                  ctypes.c_char_p, c_char_pp, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p))
_pg_count = _fn('rill_param_grads_count', ctypes.c_size_t, ctypes.c_void_p)
_pg_param = _fn('rill_param_grads_param', ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t)
_pg_grad = _fn('rill_param_grads_grad', ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t)
_pg_destroy = _fn('rill_param_grads_destroy', None, ctypes.c_void_p)
_pg_create = _fn('rill_param_grads_create', c_status_p, ctypes.c_void_p, ctypes.c_void_p,
                 ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p))
_model_load = _fn('rill_model_load', c_status_p, ctypes.c_char_p, ctypes.c_char_p,
                  ctypes.POINTER(ctypes.c_void_p))
_model_destroy = _fn('rill_model_destroy', None, ctypes.c_void_p)
_model_program = _fn('rill_model_program', ctypes.c_void_p, ctypes.c_void_p)
_model_scope = _fn('rill_model_scope', ctypes.c_void_p, ctypes.c_void_p)
_op_count = _fn('rill_op_count', ctypes.c_size_t)
_op_name = _fn('rill_op_name', ctypes.c_char_p, ctypes.c_size_t)


# Paddle's AttrType numbers, and its VarType.Type numbers of variables.
(ATTR_INT, ATTR_FLOAT, ATTR_STRING, ATTR_INTS, ATTR_FLOATS, ATTR_STRINGS, ATTR_BOOLEAN,
 ATTR_BOOLEANS, ATTR_BLOCK, ATTR_LONG, ATTR_BLOCKS, ATTR_LONGS, ATTR_FLOAT64S, ATTR_VAR,
 ATTR_VARS, ATTR_FLOAT64) = range(16)
LOD_TENSOR, SELECTED_ROWS, FEED_MINIBATCH, FETCH_LIST, STEP_SCOPES, LOD_RANK_TABLE, \
    LOD_TENSOR_ARRAY, READER, RAW = 7, 8, 9, 10, 11, 12, 13, 15, 17
_TENSOR_TYPES = (LOD_TENSOR, SELECTED_ROWS, LOD_TENSOR_ARRAY)


class _VarTypeMember(int):
    """One of Paddle's VarType.Type numbers, as fluid.core.VarDesc.VarType holds them:
    an int (what ops' dtype attributes take) that prints as Paddle prints it, and, for the
    data types, converts to and compares equal with the numpy dtype (a Variable's dtype
    == VarType.FP32, np.zeros(2, VarType.FP32))."""

    def __new__(cls, value, name):
        member = int.__new__(cls, value)
        member._name = name
        return member

    @property
    def dtype(self):
        np_type = DTYPE_TO_NP.get(int(self))
        if np_type is None:
            raise TypeError('VarType.%s is not a data type' % self._name)
        return np.dtype(np_type)

    def __repr__(self):
        return 'VarType.' + self._name

    __str__ = __repr__

    def __eq__(self, other):
        if isinstance(other, (np.dtype, str)) or (isinstance(other, type) and
                                                  issubclass(other, np.generic)):
            if int(self) not in DTYPE_TO_NP:
                return False
            try:
                return np.dtype(other) == self.dtype
            except TypeError:
                return False
        return int.__eq__(self, other)

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = int.__hash__


class VarDesc(object):
    """fluid.core.VarDesc: its VarType enumeration (data types and variable kinds)."""

    class VarType(object):
        pass


for _name, _value in (('BOOL', 0), ('INT16', 1), ('INT32', 2), ('INT64', 3), ('FP16', 4),
                      ('FP32', 5), ('FP64', 6), ('LOD_TENSOR', 7), ('SELECTED_ROWS', 8),
                      ('FEED_MINIBATCH', 9), ('FETCH_LIST', 10), ('STEP_SCOPES', 11),
                      ('LOD_RANK_TABLE', 12), ('LOD_TENSOR_ARRAY', 13), ('PLACE_LIST', 14),
                      ('READER', 15), ('RAW', 17), ('TUPLE', 18), ('SIZE_T', 19), ('UINT8', 20),
                      ('INT8', 21), ('COMPLEX64', 23), ('COMPLEX128', 24)):
    setattr(VarDesc.VarType, _name, _VarTypeMember(_value, _name))
del _name, _value
# rill_block_declare_var's flags (rill.h)
(DECLARE_PERSISTABLE, DECLARE_IS_PARAMETER, DECLARE_STOP_GRADIENT, DECLARE_NEED_CHECK_FEED,
 DECLARE_NO_TENSOR) = (1, 2, 4, 8, 16)


def attr_type_of(value):
    """The AttrType a plain Python value is stored as."""
    if isinstance(value, bool):
        return ATTR_BOOLEAN
    if isinstance(value, int):
        return ATTR_INT if -2**31 <= value < 2**31 else ATTR_LONG
    if isinstance(value, float):
        return ATTR_FLOAT
    if isinstance(value, str):
        return ATTR_STRING
    if isinstance(value, (list, tuple)):
        if not value:
            return ATTR_INTS
        if all(isinstance(x, bool) for x in value):
            return ATTR_BOOLEANS
        if all(isinstance(x, int) and not isinstance(x, bool) for x in value):
            return ATTR_INTS if all(-2**31 <= x < 2**31 for x in value) else ATTR_LONGS
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
            return ATTR_FLOATS
        if all(isinstance(x, str) for x in value):
            return ATTR_STRINGS
    raise TypeError('cannot store %r as an op attribute' % (value,))


class VarInfo(ctypes.Structure):
    """rill_var_info (rill.h)."""
    _fields_ = [('name', ctypes.c_char_p), ('type', ctypes.c_int32), ('has_tensor', ctypes.c_bool),
                ('dtype', ctypes.c_int), ('ndim', ctypes.c_size_t), ('dims', c_i64_p),
                ('lod_level', ctypes.c_int32), ('persistable', ctypes.c_bool),
                ('is_parameter', ctypes.c_bool)]


_prog_version = _fn('rill_program_version', ctypes.c_uint64, ctypes.c_void_p)
_prog_create = _fn('rill_program_create', c_status_p, ctypes.POINTER(ctypes.c_void_p))
_prog_copy = _fn('rill_program_copy', c_status_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
_append_block = _fn('rill_program_append_block', c_status_p, ctypes.c_void_p, ctypes.c_int32,
                    ctypes.POINTER(ctypes.c_int32))
_add_var = _fn('rill_block_add_var', c_status_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p,
               ctypes.c_int, ctypes.c_int, c_i64_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_bool)
_declare_var = _fn('rill_block_declare_var', c_status_p, ctypes.c_void_p, ctypes.c_int32,
                   ctypes.c_char_p, ctypes.c_int, ctypes.c_int, c_i64_p, ctypes.c_size_t,
                   ctypes.c_int32, ctypes.c_uint32)
_set_flags = _fn('rill_var_set_flags', c_status_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p,
                 ctypes.c_bool, ctypes.c_bool, ctypes.c_bool)
_set_tensor = _fn('rill_var_set_tensor', c_status_p, ctypes.c_void_p, ctypes.c_int32,
                  ctypes.c_char_p, ctypes.c_bool, ctypes.c_int, c_i64_p, ctypes.c_size_t,
                  ctypes.c_int32)
_set_ncf = _fn('rill_var_set_need_check_feed', c_status_p, ctypes.c_void_p, ctypes.c_int32,
               ctypes.c_char_p, ctypes.c_bool)
_remove_var = _fn('rill_block_remove_var', c_status_p, ctypes.c_void_p, ctypes.c_int32,
                  ctypes.c_char_p)
_remove_op = _fn('rill_block_remove_op', c_status_p, ctypes.c_void_p, ctypes.c_int32,
                 ctypes.c_size_t)
_var_index = _fn('rill_block_var_index', ctypes.c_bool, ctypes.c_void_p, ctypes.c_int32,
                 ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t))
_var_info = _fn('rill_block_var_info', c_status_p, ctypes.c_void_p, ctypes.c_int32,
                ctypes.c_size_t, ctypes.POINTER(VarInfo))
_num_ops = _fn('rill_block_num_ops', ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int32)
_infer_op = _fn('rill_block_infer_op', c_status_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_size_t)
_insert_packed = _fn('rill_block_insert_op_packed', c_status_p, ctypes.c_void_p, ctypes.c_int32,
                      ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_bool)
_b_create = _fn('rill_op_builder_create', c_status_p, ctypes.c_char_p,
                ctypes.POINTER(ctypes.c_void_p))
_b_destroy = _fn('rill_op_builder_destroy', None, ctypes.c_void_p)
_b_strict = _fn('rill_op_builder_set_strict', c_status_p, ctypes.c_void_p, ctypes.c_bool)
_b_input = _fn('rill_op_builder_input', c_status_p, ctypes.c_void_p, ctypes.c_char_p, c_char_pp,
               ctypes.c_size_t)
_b_output = _fn('rill_op_builder_output', c_status_p, ctypes.c_void_p, ctypes.c_char_p, c_char_pp,
                ctypes.c_size_t)
_b_insert = _fn('rill_op_builder_insert', c_status_p, ctypes.c_void_p, ctypes.c_void_p,
                ctypes.c_int32, ctypes.c_size_t)


def _scalar_setter(name, ctype):
    f = _fn(name, c_status_p, ctypes.c_void_p, ctypes.c_char_p, ctype)
    return lambda b, k, v: f(b, k, v)


def _list_setter(name, ctype, conv=None):
    f = _fn(name, c_status_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctype),
            ctypes.c_size_t)

    def put(b, k, v):
        vals = [conv(x) for x in v] if conv else v
        return f(b, k, (ctype * max(1, len(vals)))(*vals), len(vals))
    return put


class AttrValueInfo(ctypes.Structure):
    """rill_attr_value_info (rill.h)."""
    _fields_ = [('name', ctypes.c_char_p), ('type', ctypes.c_int32), ('count', ctypes.c_size_t),
                ('i', ctypes.c_int64), ('f', ctypes.c_double), ('s', ctypes.c_char_p),
                ('items', ctypes.c_void_p)]


class OpInfo(ctypes.Structure):
    """rill_op_info (rill.h)."""
    _fields_ = [('type', ctypes.c_char_p), ('ninputs', ctypes.c_size_t),
                ('noutputs', ctypes.c_size_t), ('nattrs', ctypes.c_size_t),
                ('registered', ctypes.c_bool), ('is_feed', ctypes.c_bool),
                ('is_fetch', ctypes.c_bool)]


class SlotInfo(ctypes.Structure):
    """rill_slot_info (rill.h)."""
    _fields_ = [('name', ctypes.c_char_p), ('nargs', ctypes.c_size_t), ('args', c_char_pp)]


class VarFlags(ctypes.Structure):
    """rill_var_flags (rill.h)."""
    _fields_ = [('stop_gradient', ctypes.c_bool), ('need_check_feed', ctypes.c_bool)]


_attr_value = _fn('rill_block_op_attr_value', c_status_p, ctypes.c_void_p, ctypes.c_int32,
                  ctypes.c_size_t, ctypes.c_size_t, ctypes.POINTER(AttrValueInfo))
_op_info = _fn('rill_block_op_info', c_status_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_size_t,
               ctypes.POINTER(OpInfo))
_op_in_info = _fn('rill_block_op_input_info', c_status_p, ctypes.c_void_p, ctypes.c_int32,
                  ctypes.c_size_t, ctypes.c_size_t, ctypes.POINTER(SlotInfo))
_op_out_info = _fn('rill_block_op_output_info', c_status_p, ctypes.c_void_p, ctypes.c_int32,
                   ctypes.c_size_t, ctypes.c_size_t, ctypes.POINTER(SlotInfo))
_var_flags = _fn('rill_block_var_flags', c_status_p, ctypes.c_void_p, ctypes.c_int32,
                 ctypes.c_size_t, ctypes.POINTER(VarFlags))
_num_vars = _fn('rill_block_num_vars', ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int32)
_num_blocks = _fn('rill_program_num_blocks', ctypes.c_size_t, ctypes.c_void_p)
_block_parent = _fn('rill_block_parent', ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32)
_b_set_attrs_of = _fn('rill_op_builder_set_attrs_of', c_status_p, ctypes.c_void_p,
                      ctypes.c_void_p, ctypes.c_int32, ctypes.c_size_t)
_vars_packed = _fn('rill_block_vars_packed', c_status_p, ctypes.c_void_p, ctypes.c_int32,
                   ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p),
                   ctypes.POINTER(ctypes.c_size_t))

_LIST_ITEMS = {ATTR_INTS: ctypes.c_int32, ATTR_BLOCKS: ctypes.c_int32, ATTR_LONGS: ctypes.c_int64,
               ATTR_FLOATS: ctypes.c_float, ATTR_FLOAT64S: ctypes.c_double,
               ATTR_BOOLEANS: ctypes.c_bool, ATTR_STRINGS: ctypes.c_char_p,
               ATTR_VARS: ctypes.c_char_p}


def _attr_python(a):
    """The Python value of a rill_attr_value_info."""
    t = a.type
    if t in (ATTR_INT, ATTR_LONG, ATTR_BLOCK):
        return a.i
    if t == ATTR_BOOLEAN:
        return bool(a.i)
    if t in (ATTR_FLOAT, ATTR_FLOAT64):
        return a.f
    if t in (ATTR_STRING, ATTR_VAR):
        return a.s.decode('utf-8', 'replace')
    item = _LIST_ITEMS.get(t)
    if item is None:
        return None
    if not a.count:
        return []
    vals = ctypes.cast(a.items, ctypes.POINTER(item))[:a.count]
    if item is ctypes.c_char_p:
        return [v.decode('utf-8', 'replace') for v in vals]
    return list(vals)


_ATTR_SETTERS = {
    ATTR_INT: _scalar_setter('rill_op_builder_attr_int', ctypes.c_int32),
    ATTR_LONG: _scalar_setter('rill_op_builder_attr_long', ctypes.c_int64),
    ATTR_FLOAT: _scalar_setter('rill_op_builder_attr_float', ctypes.c_float),
    ATTR_FLOAT64: _scalar_setter('rill_op_builder_attr_double', ctypes.c_double),
    ATTR_BOOLEAN: _scalar_setter('rill_op_builder_attr_bool', ctypes.c_bool),
    ATTR_BLOCK: _scalar_setter('rill_op_builder_attr_block', ctypes.c_int32),
    ATTR_STRING: (lambda f: lambda b, k, v: f(b, k, v.encode('utf-8')))(
        _fn('rill_op_builder_attr_string', c_status_p, ctypes.c_void_p, ctypes.c_char_p,
            ctypes.c_char_p)),
    ATTR_INTS: _list_setter('rill_op_builder_attr_ints', ctypes.c_int32),
    ATTR_LONGS: _list_setter('rill_op_builder_attr_longs', ctypes.c_int64),
    ATTR_FLOATS: _list_setter('rill_op_builder_attr_floats', ctypes.c_float),
    ATTR_BOOLEANS: _list_setter('rill_op_builder_attr_bools', ctypes.c_bool),
    ATTR_STRINGS: _list_setter('rill_op_builder_attr_strings', ctypes.c_char_p,
                               lambda x: x.encode('utf-8')),
}


_LIST_ATTRS = frozenset((ATTR_INTS, ATTR_LONGS, ATTR_FLOATS, ATTR_FLOAT64S, ATTR_BOOLEANS,
                         ATTR_STRINGS, ATTR_BLOCKS))
_FLOAT_ATTRS = frozenset((ATTR_FLOAT, ATTR_FLOAT64, ATTR_FLOATS, ATTR_FLOAT64S))
_ATTR_CODES = [str(t) for t in range(16)]
_SIZE_MAX = ctypes.c_size_t(-1).value


def _packed_bool(x):
    return '1' if x else '0'


def _packed_float(x):
    return repr(float(x))


def _packed_int(x):
    return str(int(x))


def _packed_str(x):
    return x


# How each AttrType's values (or list items) are written in a packed op.
_PACKED_ITEM = [_packed_int, _packed_float, _packed_str, _packed_int, _packed_float, _packed_str,
                _packed_bool, _packed_bool, _packed_int, _packed_int, _packed_int, _packed_int,
                _packed_float, None, None, _packed_float]


def pack_op(type, inputs, outputs, attrs):
    """The packed description rill_block_insert_op_packed reads (rill.h): inputs and
    outputs [(slot, [names])], attrs [(name, AttrType, value)]."""
    f = [type, str(len(inputs))]
    for slot, args in inputs:
        f.append(slot)
        f.append(str(len(args)))
        f.extend(args)
    f.append(str(len(outputs)))
    for slot, args in outputs:
        f.append(slot)
        f.append(str(len(args)))
        f.extend(args)
    f.append(str(len(attrs)))
    for name, t, v in attrs:
        pack_attr(f, name, t, v)
    return packed_text(f, type)


def pack_attr(f, name, t, v):
    """Appends attribute `name` of AttrType t with value v to the packed fields f."""
    f.append(name)
    f.append(_ATTR_CODES[t])
    if t in _LIST_ATTRS:
        f.append(str(len(v)))
        f.extend(map(_PACKED_ITEM[t], v))
    elif t == ATTR_STRING:
        f.append(v)
    else:
        f.append(_PACKED_ITEM[t](v))


def packed_text(f, type):
    """The packed fields f of op `type` as the bytes rill_block_insert_op_packed reads; a
    name or string holding a NUL is a ValueError."""
    f.append('')
    text = '\0'.join(f)
    if text.count('\0') != len(f) - 1:
        bad = [x for x in f if '\0' in x]
        raise ValueError('op %s: a name or string attribute holds a NUL character: %r'
                         % (type, bad[0]))
    return text.encode('utf-8')


VAR_FIELDS = 10  # per variable in CProgram.vars_fields


def var_desc_of(f, i):
    """The description dict (as CProgram.read_var gives it) of the variable whose
    fields start at f[i] in a CProgram.vars_fields list."""
    dims = f[i + 1]
    return {'name': f[i], 'type': int(f[i + 2]), 'dtype': int(f[i + 4]),
            'shape': [int(x) for x in dims.split(',')] if dims else [],
            'lod_level': int(f[i + 5]), 'persistable': f[i + 6] == '1',
            'is_parameter': f[i + 7] == '1', 'stop_gradient': f[i + 8] == '1',
            'need_check_feed': f[i + 9] == '1', 'has_tensor': f[i + 3] == '1'}


def _unpacked_bool(x):
    return x == '1'


# How unpack_op reads each AttrType's values (or list items) back.
_UNPACKED_ITEM = [int, float, str, int, float, str, _unpacked_bool, _unpacked_bool, int, int,
                  int, int, float, None, None, float]


def unpack_op(spec):
    """The description {'type', 'inputs', 'outputs', 'attrs'} that pack_op packed into
    `spec`: the same values (numbers are written exactly), except that the items of a
    float list come back as floats."""
    f = spec.decode('utf-8').split('\0')
    d = {'type': f[0]}
    i = 1
    for key in ('inputs', 'outputs'):
        slots = []
        count = int(f[i])
        i += 1
        for _ in range(count):
            n = int(f[i + 1])
            slots.append((f[i], f[i + 2:i + 2 + n]))
            i += 2 + n
        d[key] = slots
    attrs = []
    count = int(f[i])
    i += 1
    for _ in range(count):
        name, t = f[i], int(f[i + 1])
        item = _UNPACKED_ITEM[t]
        if t in _LIST_ATTRS:
            n = int(f[i + 2])
            attrs.append((name, t, [item(x) for x in f[i + 3:i + 3 + n]]))
            i += 3 + n
        else:
            attrs.append((name, t, item(f[i + 2])))
            i += 3
    d['attrs'] = attrs
    return d


class CProgram(object):
    """A C program (rill_program *): parsed from ProgramDesc bytes, or empty and built
    through the editing API (a rill.Program's live handle)."""

    def __init__(self, handle):
        self._h = handle

    @classmethod
    def create(cls):
        out = ctypes.c_void_p()
        check(_prog_create(ctypes.byref(out)))
        return cls(out.value)

    def copy(self):
        out = ctypes.c_void_p()
        check(_prog_copy(self._h, ctypes.byref(out)))
        return CProgram(out.value)

    def append_block(self, parent):
        out = ctypes.c_int32()
        check(_append_block(self._h, int(parent), ctypes.byref(out)))
        return out.value

    def add_var(self, block, name, type, dtype, shape, lod_level, persistable):
        tensor = type in _TENSOR_TYPES
        shape = shape if tensor else ()
        dims = _DIMS[len(shape)](*shape) if len(shape) <= RILL_MAX_DIMS else None
        check(_add_var(self._h, block, name.encode('utf-8'), type, dtype if tensor else 5,
                       dims, len(shape), lod_level, bool(persistable)))

    def declare_var(self, block, name, type, dtype, shape, lod_level, flags):
        """add_var and the flags, need_check_feed and (NO_TENSOR) tensor-less declaration
        of the variable in one call (rill_block_declare_var; flags: DECLARE_*)."""
        if type in _TENSOR_TYPES:
            n = len(shape)
            dims = _dims_of(shape) if n else None
        else:
            n, dims, dtype = 0, None, 5
        check(_declare_var(self._h, block, name.encode('utf-8'), type, dtype, dims, n,
                           lod_level, flags))

    def set_flags(self, block, name, persistable, is_parameter, stop_gradient):
        check(_set_flags(self._h, block, name.encode('utf-8'), bool(persistable),
                         bool(is_parameter), bool(stop_gradient)))

    def set_tensor(self, block, name, has_tensor, dtype, shape, lod_level):
        dims = _DIMS[len(shape)](*shape) if len(shape) <= RILL_MAX_DIMS else None
        check(_set_tensor(self._h, block, name.encode('utf-8'), bool(has_tensor), dtype, dims,
                          len(shape), lod_level))

    def set_need_check_feed(self, block, name, value):
        check(_set_ncf(self._h, block, name.encode('utf-8'), bool(value)))

    def remove_var(self, block, name):
        check(_remove_var(self._h, block, name.encode('utf-8')))

    def remove_op(self, block, index):
        check(_remove_op(self._h, block, index))

    def num_ops(self, block):
        return _num_ops(self._h, block)

    def var_info(self, block, name, info=None):
        """The rill_var_info of `name` declared in `block`, or None."""
        pos = ctypes.c_size_t()
        if not _var_index(self._h, block, name.encode('utf-8'), ctypes.byref(pos)):
            return None
        info = info or VarInfo()
        check(_var_info(self._h, block, pos.value, ctypes.byref(info)))
        return info

    def insert_op(self, block, index, type, inputs, outputs, attrs):
        """Adds an op through the C op builder at `index` (None: at the end). inputs and
        outputs: [(slot, [names])]; attrs: [(name, AttrType, value)]. The builder is not
        strict: attributes the schema lacks are kept (op_role, op_namescope) and the op's
        inference checks the ones it declares."""
        b = ctypes.c_void_p()
        check(_b_create(type.encode('utf-8'), ctypes.byref(b)))
        try:
            h = b.value
            check(_b_strict(h, False))
            for slot, args in inputs:
                check(_b_input(h, slot.encode('utf-8'), _cstrs(args), len(args)))
            for slot, args in outputs:
                check(_b_output(h, slot.encode('utf-8'), _cstrs(args), len(args)))
            for name, t, value in attrs:
                check(_ATTR_SETTERS[t](h, name.encode('utf-8'), value))
            if index is None:
                index = _num_ops(self._h, block)
            check(_b_insert(h, self._h, block, index))
        finally:
            _b_destroy(b.value)

    def insert_op_packed(self, block, index, spec, infer):
        """Adds the op packed in `spec` (pack_op) at `index` (None: at the end) and, with
        `infer`, infers its outputs, in one C call; a failed inference adds nothing."""
        check(_insert_packed(self._h, block, _SIZE_MAX if index is None else index, spec,
                             len(spec), infer))

    def infer_op(self, block, index):
        check(_infer_op(self._h, block, index))

    def set_attr(self, block, index, name, t, value):
        """Sets attribute `name` of op #index (replacing one of that name)."""
        b = ctypes.c_void_p()
        check(_b_create(b'attr', ctypes.byref(b)))
        try:
            check(_b_strict(b.value, False))
            check(_ATTR_SETTERS[t](b.value, name.encode('utf-8'), value))
            check(_b_set_attrs_of(b.value, self._h, block, index))
        finally:
            _b_destroy(b.value)

    # -- reading (the dicts rill.framework caches) --

    def num_blocks(self):
        return _num_blocks(self._h)

    def block_parent(self, block):
        return _block_parent(self._h, block)

    def num_vars(self, block):
        return _num_vars(self._h, block)

    def read_var(self, block, i):
        info, flags = VarInfo(), VarFlags()
        check(_var_info(self._h, block, i, ctypes.byref(info)))
        check(_var_flags(self._h, block, i, ctypes.byref(flags)))
        return {'name': info.name.decode('utf-8', 'replace'), 'type': info.type, 'dtype': info.dtype,
                'shape': info.dims[:info.ndim] if info.ndim else [],
                'lod_level': info.lod_level, 'persistable': info.persistable,
                'is_parameter': info.is_parameter, 'stop_gradient': flags.stop_gradient,
                'need_check_feed': flags.need_check_feed, 'has_tensor': info.has_tensor}

    def vars_fields(self, block, start=0):
        """The descriptions of variables #start.. of `block` in one C call
        (rill_block_vars_packed): a flat list of VAR_FIELDS strings per variable, its
        name first (var_desc_of reads one)."""
        buf, size = ctypes.c_void_p(), ctypes.c_size_t()
        check(_vars_packed(self._h, block, start, ctypes.byref(buf), ctypes.byref(size)))
        try:
            data = ctypes.string_at(buf, size.value) if size.value else b''
        finally:
            _free_buffer(buf)
        return data[:-1].decode('utf-8', 'replace').split('\0') if data else []

    def read_var_named(self, block, name):
        """read_var of the variable `name` of `block`, or None."""
        pos = ctypes.c_size_t()
        if not _var_index(self._h, block, name.encode('utf-8'), ctypes.byref(pos)):
            return None
        return self.read_var(block, pos.value)

    def read_op(self, block, i):
        info, slot, a = OpInfo(), SlotInfo(), AttrValueInfo()
        h = self._h
        check(_op_info(h, block, i, ctypes.byref(info)))
        d = {'type': info.type.decode('utf-8', 'replace'), 'inputs': [], 'outputs': [], 'attrs': []}
        for fn, n, key in ((_op_in_info, info.ninputs, 'inputs'),
                           (_op_out_info, info.noutputs, 'outputs')):
            for k in range(n):
                check(fn(h, block, i, k, ctypes.byref(slot)))
                d[key].append((slot.name.decode('utf-8', 'replace'),
                               [x.decode('utf-8', 'replace') for x in slot.args[:slot.nargs]]))
        for k in range(info.nattrs):
            check(_attr_value(h, block, i, k, ctypes.byref(a)))
            d['attrs'].append((a.name.decode('utf-8', 'replace'), a.type, _attr_python(a)))
        return d

    @classmethod
    def parse(cls, data):
        out = ctypes.c_void_p()
        check(_prog_parse(data, len(data), ctypes.byref(out)))
        return cls(out.value)

    def __del__(self):
        if getattr(self, '_h', None):
            _prog_destroy(self._h)
        self._h = None

    def serialize(self):
        return serialize_handle(self._h)

    def validate(self):
        check(_prog_validate(self._h))

    def infer_shapes(self):
        check(_prog_infer(self._h))

    def prune(self, feeds, targets):
        out = ctypes.c_void_p()
        check(_prog_prune(self._h, _cstrs(feeds), len(feeds), _cstrs(targets), len(targets),
                          ctypes.byref(out)))
        return CProgram(out.value)

    def append_backward(self, loss, no_grad, seed=None):
        """Appends the backward pass; returns a ParamGrads (list of (param, grad)). seed:
        the name of the loss's gradient when not loss@GRAD (a new variable)."""
        pg = ctypes.c_void_p()
        check(_gradients(self._h, loss.encode(), None if seed is None else seed.encode(),
                         _cstrs(no_grad), len(no_grad), ctypes.byref(pg)))
        return ParamGrads(pg.value)

    def append_clip_by_global_norm(self, pairs, clip_norm):
        check(_clip_global(self._h, pairs._h, float(clip_norm)))

    def append_l2_decay(self, pairs, coeff):
        check(_l2_decay(self._h, pairs._h, float(coeff)))

    def save(self, path):
        """Writes the ProgramDesc file crash-safely (rill_program_save)."""
        check(_prog_save(self._h, os.fsencode(path)))

    def save_vars(self, scope, dirname, names, filename=None):
        check(_prog_save_vars(self._h, scope._h, os.fsencode(dirname), _cstrs(names), len(names),
                              filename.encode() if filename else None))

    def load_vars(self, scope, dirname, names, filename=None):
        check(_prog_load_vars(self._h, scope._h, os.fsencode(dirname), _cstrs(names), len(names),
                              filename.encode() if filename else None))


_clip_global = _fn('rill_program_append_clip_by_global_norm', c_status_p, ctypes.c_void_p,
                   ctypes.c_void_p, ctypes.c_float)
_l2_decay = _fn('rill_program_append_l2_decay', c_status_p, ctypes.c_void_p, ctypes.c_void_p,
                ctypes.c_float)


class ParamGrads(list):
    """(parameter, gradient) names from the backward pass, over rill_param_grads."""

    def __init__(self, handle):
        self._h = handle
        list.__init__(self, [(_pg_param(handle, i).decode(), _pg_grad(handle, i).decode())
                             for i in range(_pg_count(handle))])

    @classmethod
    def of(cls, pairs):
        """ParamGrads holding the (parameter, gradient) name pairs given."""
        pairs = list(pairs)
        out = ctypes.c_void_p()
        check(_pg_create(_cstrs([p for p, _ in pairs]), _cstrs([g for _, g in pairs]),
                         len(pairs), ctypes.byref(out)))
        return cls(out.value)

    def __del__(self):
        if getattr(self, '_h', None):
            _pg_destroy(self._h)
        self._h = None


class TranspileConfig(ctypes.Structure):
    """rill_transpile_config (rill.h)."""
    _fields_ = [('struct_size', ctypes.c_uint32), ('pservers', ctypes.c_char_p),
                ('trainers', ctypes.c_int32), ('trainer_id', ctypes.c_int32),
                ('sync_mode', ctypes.c_bool), ('slice_var_up', ctypes.c_bool),
                ('split_method', ctypes.c_int), ('min_block_size', ctypes.c_int64)]


_transpile = _fn('rill_program_transpile', c_status_p, ctypes.c_void_p, ctypes.c_void_p,
                 ctypes.POINTER(TranspileConfig), ctypes.POINTER(ctypes.c_void_p))
_transpiled_destroy = _fn('rill_transpiled_destroy', None, ctypes.c_void_p)
_transpiled_trainer = _fn('rill_transpiled_trainer_program', ctypes.c_void_p, ctypes.c_void_p)
_transpiled_tstartup = _fn('rill_transpiled_trainer_startup', ctypes.c_void_p, ctypes.c_void_p)
_transpiled_pserver = _fn('rill_transpiled_pserver_program', c_status_p, ctypes.c_void_p,
                          ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
_transpiled_startup = _fn('rill_transpiled_pserver_startup', c_status_p, ctypes.c_void_p,
                          ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))


def transpile(main, startup, pservers, trainers, trainer_id, sync_mode, slice_var_up,
              split_method, min_block_size):
    """rill_program_transpile over two CPrograms (startup may be None). Returns
    (trainer bytes, {endpoint: (pserver bytes, pserver startup bytes)}, trainer startup
    bytes or None when the startup program needs no change)."""
    cfg = TranspileConfig(ctypes.sizeof(TranspileConfig), pservers.encode(), int(trainers),
                          int(trainer_id), bool(sync_mode), bool(slice_var_up),
                          int(split_method), int(min_block_size))
    out = ctypes.c_void_p()
    check(_transpile(main._h, startup._h if startup is not None else None, ctypes.byref(cfg),
                     ctypes.byref(out)))
    try:
        trainer = serialize_handle(_transpiled_trainer(out))
        ts = _transpiled_tstartup(out)
        tstartup = serialize_handle(ts) if ts else None
        per_ep = {}
        for ep in pservers.split(','):
            ps, ss = ctypes.c_void_p(), ctypes.c_void_p()
            check(_transpiled_pserver(out, ep.encode(), ctypes.byref(ps)))
            check(_transpiled_startup(out, ep.encode(), ctypes.byref(ss)))
            per_ep[ep] = (serialize_handle(ps.value), serialize_handle(ss.value))
        return trainer, per_ep, tstartup
    finally:
        _transpiled_destroy(out)


def serialize_handle(h):
    buf = ctypes.c_void_p()
    size = ctypes.c_size_t()
    check(_prog_serialize(h, ctypes.byref(buf), ctypes.byref(size)))
    try:
        return ctypes.string_at(buf, size.value)
    finally:
        _free_buffer(buf)


_op_has_attr = _fn('rill_op_has_attribute', ctypes.c_bool, ctypes.c_char_p, ctypes.c_char_p)


def op_has_attribute(op_type, attr):
    return _op_has_attr(op_type.encode(), attr.encode())


def op_names():
    return [_op_name(i).decode() for i in range(_op_count())]


_op_describe = _fn('rill_op_describe', c_status_p, ctypes.c_char_p,
                   ctypes.POINTER(ctypes.c_void_p))


def op_describe(op_type):
    """The text `rill ops TYPE` prints: schema, flags, kernels (NotFoundError if the op
    is unknown)."""
    out = ctypes.c_void_p()
    check(_op_describe(op_type.encode(), ctypes.byref(out)))
    try:
        return ctypes.string_at(out.value).decode('utf-8', 'replace')
    finally:
        _free_buffer(out)


class CModel(object):
    def __init__(self, path, params_file=None):
        out = ctypes.c_void_p()
        check(_model_load(os.fsencode(path), params_file.encode() if params_file else None,
                          ctypes.byref(out)))
        self._h = out.value

    def __del__(self):
        if getattr(self, '_h', None):
            _model_destroy(self._h)
        self._h = None

    def program_bytes(self):
        return serialize_handle(_model_program(self._h))

    def scope_handle(self):
        return _model_scope(self._h)

    def num_inputs(self):
        return _model_num_in(self._h)

    def input_name(self, i):
        return _model_in_name(self._h, i).decode()

    def num_outputs(self):
        return _model_num_out(self._h)

    def output_name(self, i):
        return _model_out_name(self._h, i).decode()


_model_num_in = _fn('rill_model_num_inputs', ctypes.c_size_t, ctypes.c_void_p)
_model_in_name = _fn('rill_model_input_name', ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t)
_model_num_out = _fn('rill_model_num_outputs', ctypes.c_size_t, ctypes.c_void_p)
_model_out_name = _fn('rill_model_output_name', ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t)


# ---------------------------------------------------------------- executors ----

class _ExecOptions(ctypes.Structure):
    """rill_executor_options; struct_size is set from the fields below."""
    _fields_ = [('struct_size', ctypes.c_uint32), ('device', ctypes.c_int), ('id', ctypes.c_int32),
                ('num_threads', ctypes.c_int32)]

    def __init__(self, **kw):
        super(_ExecOptions, self).__init__(struct_size=ctypes.sizeof(_ExecOptions), **kw)


_exec_create = _fn('rill_executor_create', c_status_p, ctypes.POINTER(_ExecOptions),
                   ctypes.POINTER(ctypes.c_void_p))
_exec_destroy = _fn('rill_executor_destroy', None, ctypes.c_void_p)
_exec_run = _fn('rill_executor_run', c_status_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                c_char_pp, ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, c_char_pp,
                ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p))
_exec_schedule = _fn('rill_executor_set_schedule', c_status_p, ctypes.c_void_p, ctypes.c_int)

SCHEDULE_AUTO, SCHEDULE_SEQUENTIAL, SCHEDULE_PARALLEL = 0, 1, 2


DEVICE_CPU, DEVICE_CUDA = 0, 1

_is_compiled_with_cuda = _fn('rill_is_compiled_with_cuda', ctypes.c_bool)
_cuda_device_count = _fn('rill_cuda_device_count', c_status_p, ctypes.POINTER(ctypes.c_int32))


class _Place(ctypes.Structure):
    _fields_ = [('device', ctypes.c_int), ('id', ctypes.c_int32)]


class _DeviceMemoryStats(ctypes.Structure):
    _fields_ = [('current_bytes', ctypes.c_int64), ('peak_bytes', ctypes.c_int64),
                ('cached_bytes', ctypes.c_int64), ('reserved_bytes', ctypes.c_int64),
                ('device_allocs', ctypes.c_int64)]


_device_memory_stats = _fn('rill_device_memory_stats_get', c_status_p, _Place,
                           ctypes.POINTER(_DeviceMemoryStats))


def device_memory_stats(device, device_id):
    """The allocator's statistics of a place, as a dict (rill_device_memory_stats_get)."""
    s = _DeviceMemoryStats()
    check(_device_memory_stats(_Place(device, device_id), ctypes.byref(s)))
    return {k: getattr(s, k) for k, _ in _DeviceMemoryStats._fields_}


_profiler_start = _fn('rill_device_profiler_start', c_status_p, _Place)
_profiler_stop = _fn('rill_device_profiler_stop', c_status_p, _Place)
_pinned_alloc = _fn('rill_pinned_host_alloc', c_status_p, ctypes.c_size_t,
                    ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_bool))
_pinned_free = _fn('rill_pinned_host_free', None, ctypes.c_void_p, ctypes.c_bool)


def device_profiler(device, device_id, start):
    """Starts (start True) or stops the device profiler of a place
    (rill_device_profiler_start/stop)."""
    check((_profiler_start if start else _profiler_stop)(_Place(device, device_id)))


class PinnedBuffer(object):
    """`nbytes` of host memory for a CUDA device (rill_pinned_host_alloc): page-locked
    when the CUDA backend sees a device (self.pinned), plain otherwise; freed with the
    object. self.array(shape, dtype) views it as an ndarray that keeps it alive."""

    def __init__(self, nbytes):
        self._p = ctypes.c_void_p()
        self.pinned = False
        self.nbytes = max(int(nbytes), 1)
        flag = ctypes.c_bool(False)
        check(_pinned_alloc(self.nbytes, ctypes.byref(self._p), ctypes.byref(flag)))
        self.pinned = bool(flag.value)

    def array(self, shape, dtype):
        import numpy as np
        buf = (ctypes.c_uint8 * self.nbytes).from_address(self._p.value)
        a = np.frombuffer(buf, dtype=np.uint8)
        dt = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        buf._owner = self  # the views hold the ctypes array, which holds this
        return a[:n].view(dt).reshape(shape)

    def __del__(self):
        p, self._p = getattr(self, '_p', None), None
        if p is not None and p.value and _pinned_free is not None:
            _pinned_free(p, self.pinned)


def is_compiled_with_cuda():
    """True when this build of rill has the CUDA backend (librill_cuda.so)."""
    return bool(_is_compiled_with_cuda())


def cuda_device_count():
    """(count, reason): the CUDA devices this process can use, and why none when 0."""
    n = ctypes.c_int32(0)
    st = _cuda_device_count(ctypes.byref(n))
    if st:
        try:
            return 0, _status_message(st).decode('utf-8', 'replace')
        finally:
            _status_destroy(st)
    return int(n.value), None


class CExecutor(object):
    def __init__(self, num_threads=0, schedule=SCHEDULE_AUTO, device=DEVICE_CPU, device_id=0):
        opts = _ExecOptions(num_threads=int(num_threads or 0), device=int(device), id=int(device_id))
        out = ctypes.c_void_p()
        check(_exec_create(ctypes.byref(opts), ctypes.byref(out)))
        self._h = out.value
        check(_exec_schedule(self._h, schedule))

    def __del__(self):
        if getattr(self, '_h', None):
            _exec_destroy(self._h)
        self._h = None

    def run(self, cprog, scope, feed_names, feed_tensors, fetch_names, nt):
        """feed_names / fetch_names: ctypes arrays of names (names_array); nt fetches."""
        nf = len(feed_tensors)
        ft = (ctypes.c_void_p * max(1, nf))(*[t._h for t in feed_tensors])
        outs = (ctypes.c_void_p * max(1, nt))()
        check(_exec_run(self._h, cprog._h, scope._h, feed_names, ft, nf, fetch_names, nt, outs))
        return [Tensor(outs[i]) for i in range(nt)]


def names_array(names):
    """A ctypes array of NUL-ended names, as the C API takes them."""
    return (ctypes.c_char_p * max(1, len(names)))(*[n.encode() for n in names])


# -------------------------------------------------------------- checkpoints ----

class CheckpointOptions(ctypes.Structure):
    """rill_checkpoint_options; struct_size is set from the fields below."""
    _fields_ = [('struct_size', ctypes.c_uint32), ('every_n_steps', ctypes.c_int64),
                ('every_n_seconds', ctypes.c_double), ('max_to_keep', ctypes.c_int32),
                ('skip_when_busy', ctypes.c_bool)]

    def __init__(self, **kw):
        super(CheckpointOptions, self).__init__(struct_size=ctypes.sizeof(CheckpointOptions), **kw)


class CheckpointInfo(ctypes.Structure):
    _fields_ = [('step', ctypes.c_int64), ('time_unix_ns', ctypes.c_int64),
                ('bytes', ctypes.c_uint64), ('num_vars', ctypes.c_uint64),
                ('verified', ctypes.c_bool), ('path', ctypes.c_char_p),
                ('problem', ctypes.c_char_p)]


class CheckpointStats(ctypes.Structure):
    _fields_ = [('saved', ctypes.c_uint64), ('skipped', ctypes.c_uint64),
                ('failed', ctypes.c_uint64), ('last_step', ctypes.c_int64),
                ('last_bytes', ctypes.c_uint64), ('last_snapshot_s', ctypes.c_double),
                ('last_wait_s', ctypes.c_double), ('last_persist_s', ctypes.c_double),
                ('in_flight', ctypes.c_bool)]


_ckm_create = _fn('rill_checkpoint_manager_create', c_status_p, ctypes.c_char_p,
                  ctypes.POINTER(CheckpointOptions), ctypes.POINTER(ctypes.c_void_p))
_ckm_destroy = _fn('rill_checkpoint_manager_destroy', None, ctypes.c_void_p)
_ckm_append = _fn('rill_checkpoint_manager_append_op', c_status_p, ctypes.c_void_p,
                  ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, c_char_pp, ctypes.c_size_t)
_ckm_latest = _fn('rill_checkpoint_manager_latest', c_status_p, ctypes.c_void_p, c_i64_p)
_ckm_load = _fn('rill_checkpoint_manager_load', c_status_p, ctypes.c_void_p, ctypes.c_void_p,
                ctypes.c_void_p, ctypes.c_void_p, c_i64_p, ctypes.POINTER(ctypes.c_void_p))
_ckl_dir = _fn('rill_checkpoint_list_dir', c_status_p, ctypes.c_char_p,
               ctypes.POINTER(ctypes.c_void_p))
_ckl_count = _fn('rill_checkpoint_list_count', ctypes.c_size_t, ctypes.c_void_p)
_ckl_get = _fn('rill_checkpoint_list_get', c_status_p, ctypes.c_void_p, ctypes.c_size_t,
               ctypes.POINTER(CheckpointInfo))
_ckl_destroy = _fn('rill_checkpoint_list_destroy', None, ctypes.c_void_p)
_exec_ckpt_stats = _fn('rill_executor_checkpoint_stats', c_status_p, ctypes.c_void_p,
                       ctypes.c_char_p, ctypes.POINTER(CheckpointStats))
_exec_flush = _fn('rill_executor_flush', c_status_p, ctypes.c_void_p)
_exec_dist_complete = _fn('rill_executor_dist_complete', c_status_p, ctypes.c_void_p)
_exec_get_rng = _fn('rill_executor_get_rng_state', None, ctypes.c_void_p,
                    ctypes.POINTER(ctypes.c_uint64))
_exec_set_rng = _fn('rill_executor_set_rng_state', c_status_p, ctypes.c_void_p,
                    ctypes.POINTER(ctypes.c_uint64))


class CCheckpointManager(object):
    """A checkpoint directory and the options of the ops it appends
    (rill_checkpoint_manager *)."""

    def __init__(self, dirname, every_n_steps=0, every_n_seconds=0.0, max_to_keep=3,
                 skip_when_busy=False):
        opts = CheckpointOptions(every_n_steps=int(every_n_steps),
                                 every_n_seconds=float(every_n_seconds),
                                 max_to_keep=int(max_to_keep), skip_when_busy=bool(skip_when_busy))
        out = ctypes.c_void_p()
        check(_ckm_create(os.fsencode(dirname), ctypes.byref(opts), ctypes.byref(out)))
        self._h = out.value

    def __del__(self):
        if getattr(self, '_h', None):
            _ckm_destroy(self._h)
        self._h = None

    def append_op(self, cprog, cstartup, step_var, names):
        check(_ckm_append(self._h, cprog._h, cstartup._h if cstartup else None,
                          step_var.encode(), _cstrs(names), len(names)))

    def latest(self):
        step = ctypes.c_int64()
        check(_ckm_latest(self._h, ctypes.byref(step)))
        return step.value

    def load(self, cprog, scope, executor):
        """Returns (step, report text or '')."""
        step = ctypes.c_int64()
        rep = ctypes.c_void_p()
        check(_ckm_load(self._h, cprog._h if cprog else None, scope._h,
                        executor._h if executor else None, ctypes.byref(step),
                        ctypes.byref(rep)))
        text = ''
        if rep.value:
            text = ctypes.string_at(rep.value).decode('utf-8', 'replace')
            _free_buffer(rep)
        return step.value, text


def list_checkpoints(dirname):
    """[(step, time_unix_ns, bytes, num_vars, verified, path, problem)], newest first."""
    out = ctypes.c_void_p()
    check(_ckl_dir(os.fsencode(dirname), ctypes.byref(out)))
    try:
        rows = []
        info = CheckpointInfo()
        for i in range(_ckl_count(out)):
            check(_ckl_get(out, i, ctypes.byref(info)))
            rows.append((info.step, info.time_unix_ns, info.bytes, info.num_vars,
                         bool(info.verified), os.fsdecode(info.path),
                         info.problem.decode('utf-8', 'replace') if info.problem else None))
        return rows
    finally:
        _ckl_destroy(out)


def executor_checkpoint_stats(executor, dirname):
    s = CheckpointStats()
    check(_exec_ckpt_stats(executor._h, os.fsencode(dirname), ctypes.byref(s)))
    return {k: getattr(s, k) for k, _ in CheckpointStats._fields_}


def executor_flush(executor):
    check(_exec_flush(executor._h))


def executor_dist_complete(executor):
    check(_exec_dist_complete(executor._h))


def executor_rng_state(executor):
    s = (ctypes.c_uint64 * 4)()
    _exec_get_rng(executor._h, s)
    return list(s)


def executor_set_rng_state(executor, state):
    s = (ctypes.c_uint64 * 4)(*[int(x) for x in state])
    check(_exec_set_rng(executor._h, s))


# ---------------------------------------------------------------- op plugins ----

_load_op_library = _fn('rill_load_op_library', c_status_p, ctypes.c_char_p)


def load_op_library(path):
    """Loads an op plugin (a shared library exporting rill_plugin_init) and registers its
    ops for every program of the process (rill_load_op_library). A relative path is
    taken from the working directory, never from the library search path. Errors name
    the library: NotFoundError (no such file, no init function), IoError (dlopen
    refused it), AlreadyExistsError (an op type taken, e.g. the library loaded twice),
    InvalidArgumentError / FailedPreconditionError (a bad description, another plugin API
    version); on any error nothing is registered."""
    if not isinstance(path, (str, bytes, os.PathLike)) or not os.fspath(path):
        raise error_class('INVALID_ARGUMENT')(
            'load_op_library: path must be a non-empty path, got %r' % (path,))
    check(_load_op_library(os.fsencode(path)))


# ------------------------------------------------------------- coordination ----
# rill_coord_* (rill.h): the process's etcd coordination; rill.distributed.etcd wraps it.

_coord_enabled = _fn('rill_coord_enabled', ctypes.c_bool)
_coord_register = _fn('rill_coord_register', c_status_p, ctypes.c_char_p, ctypes.c_int32,
                      ctypes.c_char_p)
_coord_wait_pservers = _fn('rill_coord_wait_pservers', c_status_p, ctypes.c_int32,
                           ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p))
_coord_elect_saver = _fn('rill_coord_elect_saver', c_status_p, ctypes.c_int32,
                         ctypes.POINTER(ctypes.c_bool))
_coord_note_snapshot = _fn('rill_coord_note_snapshot', c_status_p, ctypes.c_int64)
_coord_newest_snapshot = _fn('rill_coord_newest_snapshot', c_status_p, c_i64_p)
_coord_shutdown = _fn('rill_coord_shutdown', None)


def coord_enabled():
    return bool(_coord_enabled())


def coord_register(role, rank, endpoint):
    check(_coord_register(role.encode(), int(rank),
                          endpoint.encode() if endpoint else None))


def coord_wait_pservers(count, timeout_ms):
    out = ctypes.c_void_p()
    check(_coord_wait_pservers(int(count), int(timeout_ms), ctypes.byref(out)))
    try:
        text = ctypes.string_at(out.value).decode()
    finally:
        _free_buffer(out)
    return text.split(',') if text else []


def coord_elect_saver(trainer_id):
    out = ctypes.c_bool()
    check(_coord_elect_saver(int(trainer_id), ctypes.byref(out)))
    return bool(out.value)


def coord_note_snapshot(step):
    check(_coord_note_snapshot(int(step)))


def coord_newest_snapshot():
    step = ctypes.c_int64()
    check(_coord_newest_snapshot(ctypes.byref(step)))
    return step.value


def coord_shutdown():
    _coord_shutdown()
