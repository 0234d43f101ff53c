"""Fluid 1.8's fluid.save / fluid.load / fluid.load_program_state / fluid.set_program_state
(also under fluid.io): a program's state in three files beside each other,

- `PREFIX.pdparams`: a pickle (protocol 2) of {name: numpy array}, every Parameter of
  the program;
- `PREFIX.pdopt`: the same for the other persistable variables that are not data
  (optimizer accumulators, learning rates, step counters), written even when empty;
- `PREFIX.pdmodel`: the ProgramDesc bytes.

The pickles name numpy's array rebuilder as `numpy.core.multiarray._reconstruct` (what
numpy 1.x, and so Paddle 1.8, writes and reads; numpy 2 reads it too) and bytes as
`_codecs.encode`, as Python 3's protocol 2 does. Reading accepts only those globals and
numpy's dtype and ndarray: a pickle naming anything else is refused, never run. Each file
is written into a temporary file beside it, fsynced and renamed over the old one.

load and load_program_state also read the directory (one file per variable) and combined
file layouts of save_params / save_persistables / save_vars."""

import io as _io
import os
import pickle
import tempfile
import warnings

import numpy as np

from . import core
from .core import error_class
from .executor import global_scope
from .framework import Parameter, Program, Variable

__all__ = ['save', 'load', 'load_program_state', 'set_program_state']

_SUFFIXES = ('.pdparams', '.pdopt', '.pdmodel')


def _is_optimizer_var(var):
    """Paddle's is_belong_to_optimizer: persistable, saved, neither a Parameter nor a
    data variable."""
    from .io import is_persistable
    if isinstance(var, Parameter) or var.desc.get('need_check_feed'):
        return False
    return is_persistable(var)


def _is_parameter(var):
    return isinstance(var, Parameter)


def _prefix(model_path):
    model_path = os.fspath(model_path)
    for s in _SUFFIXES:
        if model_path.endswith(s):
            return model_path[:-len(s)]
    return model_path


# -- pickles --

class _Pickler(pickle._Pickler):
    """Protocol 2 with numpy 1.x's module names: numpy 2 names its array rebuilder
    numpy._core.multiarray._reconstruct, which numpy 1.x cannot import."""

    def save_global(self, obj, name=None):
        module = getattr(obj, '__module__', None) or ''
        if module == 'numpy._core' or module.startswith('numpy._core.'):
            qual = name or obj.__qualname__
            self.write(pickle.GLOBAL + ('numpy.core%s\n%s\n' % (module[len('numpy._core'):],
                                                                qual)).encode('utf-8'))
            self.memoize(obj)
            return
        pickle._Pickler.save_global(self, obj, name)


def _dumps(state):
    buf = _io.BytesIO()
    _Pickler(buf, protocol=2).dump(state)
    return buf.getvalue()


def _numpy_core():
    try:
        from numpy import _core as c  # numpy 2
    except ImportError:
        from numpy import core as c
    return c


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, path):
        pickle.Unpickler.__init__(self, f, encoding='latin1')
        self._path = path

    def find_class(self, module, name):
        import codecs
        rebuild = lambda: _numpy_core().multiarray._reconstruct  # noqa: E731
        allowed = {
            ('numpy.core.multiarray', '_reconstruct'): rebuild,
            ('numpy._core.multiarray', '_reconstruct'): rebuild,
            ('numpy.core.multiarray', 'scalar'): lambda: _numpy_core().multiarray.scalar,
            ('numpy._core.multiarray', 'scalar'): lambda: _numpy_core().multiarray.scalar,
            ('numpy', 'ndarray'): lambda: np.ndarray,
            ('numpy', 'dtype'): lambda: np.dtype,
            ('_codecs', 'encode'): lambda: codecs.encode,
            ('collections', 'OrderedDict'): lambda: __import__('collections').OrderedDict,
        }
        get = allowed.get((module, name))
        if get is None:
            raise error_class('CORRUPT')(
                "'%s': the pickle names %s.%s; a saved program state holds only numpy "
                "arrays" % (self._path, module, name))
        return get()


def _read_pickle(path):
    try:
        with open(path, 'rb') as f:
            state = _Unpickler(f, path).load()
    except core.Error:
        raise
    except OSError as e:
        raise error_class('IO')("'%s': %s" % (path, e.strerror or e))
    except Exception as e:  # a truncated or garbled pickle
        raise error_class('CORRUPT')("'%s' is not a saved program state: %s: %s" %
                                     (path, type(e).__name__, e))
    if not isinstance(state, dict):
        raise error_class('CORRUPT')("'%s' holds a %s, not a dict of arrays" %
                                     (path, type(state).__name__))
    for k, v in state.items():
        if not isinstance(k, str) or not isinstance(v, np.ndarray):
            raise error_class('CORRUPT')("'%s': entry %r is a %s, not a named numpy array" %
                                         (path, k, type(v).__name__))
    return state


def _write_file(path, data):
    """Writes `data` to `path` crash-safely: a temporary file beside it, fsync, rename
    over `path`, fsync of the directory. Through a symbolic link the file it names is
    replaced (the link stays); a device or pipe there (/dev/null, a FIFO) is written
    into, never replaced by a plain file."""
    from .io import _fsync
    path = os.path.realpath(path)
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        with open(path, 'wb') as f:
            f.write(data)
        return
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix='.%s.saving-' % os.path.basename(path), dir=d)
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
        _fsync(d, directory=True)
    finally:
        if tmp is not None:
            os.unlink(tmp)


# -- save / load --

def _value(scope, var):
    v = scope.find_var(var.name)
    if v is None:
        raise error_class('NOT_FOUND')(
            "save: variable '%s' has no value in the scope (was the startup program run?)"
            % var.name)
    return np.array(v.get_tensor())


def save(program, model_path):
    """Writes `model_path`.pdparams (the parameters), .pdopt (the optimizer's variables)
    and .pdmodel (the program) as Paddle 1.8 does; each file crash-safely."""
    if not isinstance(program, Program):
        raise TypeError('save: program must be a Program, got %r' % (program,))
    model_path = os.fspath(model_path)
    if os.path.basename(model_path) == '':
        raise error_class('INVALID_ARGUMENT')(
            "save: model_path '%s' must be dirname/file_prefix; the file prefix is empty"
            % model_path)
    d = os.path.dirname(model_path)
    if d:
        os.makedirs(d, exist_ok=True)
    scope = global_scope()
    vars_ = list(program.list_vars())
    params = {v.name: _value(scope, v) for v in vars_ if _is_parameter(v)}
    opt = {v.name: _value(scope, v) for v in vars_ if _is_optimizer_var(v)}
    _write_file(model_path + '.pdparams', _dumps(params))
    _write_file(model_path + '.pdopt', _dumps(opt))
    _write_file(model_path + '.pdmodel', program.serialize_to_string())


def _check_state(program, state, names, path):
    """Every name in `names` is in `state` with the declared dtype and a shape that fits
    the declaration."""
    blockvars = {v.name: v for v in program.list_vars()}
    for n in names:
        if n not in state:
            raise error_class('NOT_FOUND')("load: variable '%s' is not in '%s'" % (n, path))
        a, v = state[n], blockvars[n]
        want = v.dtype
        if a.dtype != want:
            raise error_class('INVALID_ARGUMENT')(
                "load: variable '%s' in '%s' is %s; the program declares %s" %
                (n, path, a.dtype, want))
        shape = list(v.shape) if v.shape is not None else None
        if shape is not None and (len(shape) != a.ndim or
                                  any(s >= 0 and s != t for s, t in zip(shape, a.shape))):
            raise error_class('INVALID_ARGUMENT')(
                "load: variable '%s' in '%s' has shape %s; the program declares %s" %
                (n, path, list(a.shape), shape))


def load(program, model_path, executor=None, var_list=None):
    """Sets the program's parameters and optimizer variables in the global scope from
    what save wrote (or, given an executor, from a save_params / save_persistables /
    save_vars directory, or a combined file with var_list). Every value is checked
    against its declaration before any is set."""
    from . import io as fio
    if not isinstance(program, Program):
        raise TypeError('load: program must be a Program, got %r' % (program,))
    model_path = os.fspath(model_path)
    prefix = _prefix(model_path)
    pfile = prefix + '.pdparams'
    if not os.path.exists(pfile):
        if executor is None:
            raise ValueError("load: '%s' not found; an executor is needed to load files "
                             "written by save_params, save_persistables or save_vars" % pfile)
        if os.path.isdir(model_path):
            files = set()
            for root, _, fs in os.walk(model_path):
                for f in fs:
                    files.add(os.path.relpath(os.path.join(root, f), model_path)
                              .replace(os.sep, '/'))
            vs = [v for v in program.list_vars() if v.name in files and fio.is_persistable(v)]
            unused = files - set(v.name for v in vs)
            if unused:
                warnings.warn('load: variable files not used: %s' % ' '.join(sorted(unused)))
            fio.load_vars(executor, model_path, main_program=program, vars=vs)
            return
        if os.path.isfile(model_path):
            if var_list is None:
                raise ValueError('load: var_list is needed to load the combined file '
                                 "'%s'" % model_path)
            names = set(v.name for v in program.list_vars())
            for v in var_list:
                if v.name not in names:
                    raise LookupError("load: variable '%s' of var_list is not in the program"
                                      % v.name)
            d, f = os.path.split(model_path)
            fio.load_vars(executor, d, main_program=program, vars=var_list, filename=f)
            return
        raise error_class('NOT_FOUND')("load: no '%s' and no file or directory '%s'" %
                                       (pfile, model_path))
    vars_ = list(program.list_vars())
    params = [v.name for v in vars_ if _is_parameter(v)]
    opts = [v.name for v in vars_ if _is_optimizer_var(v)]
    pstate = _read_pickle(pfile)
    _check_state(program, pstate, params, pfile)
    ostate = {}
    if opts:
        ofile = prefix + '.pdopt'
        if not os.path.exists(ofile):
            raise error_class('NOT_FOUND')("load: optimizer file '%s' does not exist" % ofile)
        ostate = _read_pickle(ofile)
        _check_state(program, ostate, opts, ofile)
    scope = global_scope()
    for n in params:
        scope.var(n).get_tensor().set(pstate[n])
    for n in opts:
        scope.var(n).get_tensor().set(ostate[n])


# -- program state --

_DTYPES = {0: 'bool', 1: 'int16', 2: 'int32', 3: 'int64', 4: 'float16', 5: 'float32',
           6: 'float64', 20: 'uint8', 21: 'int8'}


def _varint(b, i, path):
    v, shift = 0, 0
    while True:
        if i >= len(b) or shift > 63:
            raise error_class('CORRUPT')("'%s': the tensor description is cut short" % path)
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def _stored_decl(path):
    """The dtype name and dims of the tensor stream in `path` (FORMATS.md section 2),
    read from its header to declare the variable; the C loader reads and checks the
    whole stream."""
    with open(path, 'rb') as f:
        head = f.read(12)
        if len(head) < 12:
            raise error_class('CORRUPT')("'%s' is too short for a tensor stream" % path)
        levels = int.from_bytes(head[4:12], 'little')
        size = os.fstat(f.fileno()).st_size
        for _ in range(levels):
            n = f.read(8)
            if len(n) < 8:
                raise error_class('CORRUPT')("'%s': the LoD is cut short" % path)
            skip = int.from_bytes(n, 'little')
            if skip > size:
                raise error_class('CORRUPT')("'%s': a LoD level of %d bytes in a file of %d"
                                             % (path, skip, size))
            f.seek(skip, os.SEEK_CUR)
        head = f.read(8)
        if len(head) < 8:
            raise error_class('CORRUPT')("'%s': the tensor header is cut short" % path)
        n = int.from_bytes(head[4:8], 'little', signed=True)
        if n < 0 or n > size:
            raise error_class('CORRUPT')("'%s': a tensor description of %d bytes" % (path, n))
        desc = f.read(n)
        if len(desc) < n:
            raise error_class('CORRUPT')("'%s': the tensor description is cut short" % path)
    dtype, dims, i = None, [], 0
    while i < len(desc):
        key, i = _varint(desc, i, path)
        if key == 0x08:
            dtype, i = _varint(desc, i, path)
        elif key == 0x10:
            d, i = _varint(desc, i, path)
            dims.append(d - (1 << 64) if d >= 1 << 63 else d)
        elif key == 0x12:  # packed dims
            ln, i = _varint(desc, i, path)
            end = i + ln
            while i < end:
                d, i = _varint(desc, i, path)
                dims.append(d - (1 << 64) if d >= 1 << 63 else d)
        else:
            raise error_class('CORRUPT')("'%s': unknown field %d in the tensor description"
                                         % (path, key >> 3))
    if dtype not in _DTYPES:
        raise error_class('CORRUPT')("'%s': tensor data type %r is not one rill reads" %
                                     (path, dtype))
    return _DTYPES[dtype], dims


def _load_vars_state(model_path, var_list):
    """{name: array} of a save_params / save_persistables / save_vars directory, or of a
    combined file holding var_list's variables."""
    from .executor import Scope, Executor, scope_guard
    from .framework import CPUPlace
    from . import io as fio
    prog = Program()
    blk = prog.global_block()
    if var_list is not None:
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError('load_program_state: var_list holds %r, not a Variable' % (v,))
            blk.create_var(name=v.name, shape=v.shape, dtype=v.dtype, persistable=True,
                           lod_level=v.lod_level)
        names = [v.name for v in var_list]
    else:
        names = []
        for root, _, fs in os.walk(model_path):
            for f in sorted(fs):
                p = os.path.join(root, f)
                name = os.path.relpath(p, model_path).replace(os.sep, '/')
                dtype, dims = _stored_decl(p)
                blk.create_var(name=name, shape=dims, dtype=dtype, persistable=True)
                names.append(name)
    if os.path.isfile(model_path):
        d, f = os.path.split(model_path)
    else:
        d, f = model_path, None
    scope = Scope()
    with scope_guard(scope):
        fio.load_vars(Executor(CPUPlace()), d, main_program=prog, vars=names, filename=f)
        return {n: np.array(scope.find_var(n).get_tensor()) for n in names}


def load_program_state(model_path, var_list=None):
    """{name: numpy array} of what save wrote (.pdparams, and .pdopt when present), or of
    a save_params / save_persistables / save_vars directory (or a combined file, given
    var_list)."""
    model_path = os.fspath(model_path)
    prefix = _prefix(model_path)
    pfile = prefix + '.pdparams'
    if not os.path.exists(pfile):
        if var_list is None and os.path.isfile(model_path):
            raise ValueError('load_program_state: var_list is needed when model_path is a '
                             'file')
        if not os.path.exists(model_path):
            raise error_class('NOT_FOUND')("load_program_state: no '%s' and no file or "
                                           "directory '%s'" % (pfile, model_path))
        return _load_vars_state(model_path, var_list)
    state = _read_pickle(pfile)
    ofile = prefix + '.pdopt'
    if os.path.exists(ofile):
        state.update(_read_pickle(ofile))
    return state


def set_program_state(program, state_dict):
    """Sets the program's persistable variables found in state_dict into the global
    scope (where the startup program must have created them). Shapes and dtypes must
    match the current values; every one is checked before any is set. Names the program
    lacks are reported in a warning."""
    from .io import is_persistable
    scope = global_scope()
    todo = []
    for v in program.list_vars():
        if not is_persistable(v):
            continue
        held = scope.find_var(v.name)
        if held is None:
            raise error_class('NOT_FOUND')(
                "set_program_state: variable '%s' is not in the scope; run the startup "
                "program first" % v.name)
        if v.name not in state_dict:
            continue
        cur = np.array(held.get_tensor())
        new = np.asarray(state_dict[v.name])
        if cur.shape != new.shape:
            raise error_class('INVALID_ARGUMENT')(
                "set_program_state: the program needs variable '%s' of shape %s; the state "
                "holds shape %s" % (v.name, list(cur.shape), list(new.shape)))
        if cur.dtype != new.dtype:
            raise error_class('INVALID_ARGUMENT')(
                "set_program_state: the program needs variable '%s' of dtype %s; the state "
                "holds %s" % (v.name, cur.dtype, new.dtype))
        todo.append((v.name, new))
    for n, a in todo:
        scope.find_var(n).get_tensor().set(a)
    used = set(n for n, _ in todo)
    unused = [k for k in state_dict if k not in used]
    if unused:
        warnings.warn('set_program_state: not in the program, not set: %s' % ' '.join(unused))
