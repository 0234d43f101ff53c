"""fluid.layers.py_func: an op whose kernel calls a Python function.

Each function is registered with librill as a host callback
(rill_host_callback_register); the `py_func` op names it by id, as Paddle's does.
doc/design/py_func.md says how calls cross threads and the GIL."""

import ctypes
import inspect

import numpy as np

from . import core
from .executor import LoDTensor
from .framework import Variable, default_main_program

__all__ = ['py_func']

HOST_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
                                 ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t)
_register = core._fn('rill_host_callback_register', core.c_status_p, ctypes.c_char_p,
                     HOST_CALLBACK, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64))
# variadic (code, fmt, ...): called with the format "%s" and one string
_status_create = core.lib.rill_status_create
_status_create.restype = ctypes.c_void_p

_CODE = {name: i for i, name in enumerate(core._CODES)}


def _code_of(exc):
    if isinstance(exc, core.Error):
        return _CODE.get(exc.code, _CODE['INTERNAL'])
    for cls, code in ((MemoryError, 'OUT_OF_MEMORY'), (KeyError, 'NOT_FOUND'),
                      (OSError, 'IO'), (NotImplementedError, 'UNIMPLEMENTED'),
                      (KeyboardInterrupt, 'CANCELLED')):
        if isinstance(exc, cls):
            return _CODE[code]
    return _CODE['INVALID_ARGUMENT']


def _status(code, message):
    return _status_create(ctypes.c_int(code), b'%s', ctypes.c_char_p(message.encode('utf-8',
                                                                                       'replace')))


def _input(handle):
    """A LoDTensor holding a copy of the borrowed C tensor (None for no data)."""
    if not handle:
        return None
    t = core.Tensor(handle)
    try:
        return LoDTensor(t.numpy(copy=True), t.lod())
    finally:
        t._h = None  # borrowed: the op keeps it


def _output(value, what):
    """A new C tensor handle (owned by the caller) for a returned value."""
    lod = None
    if isinstance(value, LoDTensor):
        lod = value.lod()
        value = np.asarray(value)
    elif not isinstance(value, np.ndarray):
        value = np.array(value)
    try:
        t = core.Tensor.from_numpy(value, copy=True)
    except TypeError as e:
        raise TypeError('%s: %s' % (what, e)) from None
    if lod:
        t.set_lod(lod)
    h, t._h = t._h, None
    return h


class PyFuncRegistry(object):
    """A Python function registered as a host callback; `id` is what the op's
    forward_callable_id / backward_callable_id hold. Registrations last for the
    process, as in Paddle (programs refer to them by id)."""

    _register_funcs = []

    def __init__(self, func):
        if func is None or not callable(func):
            raise TypeError('func must be a Python function')
        self._func = func
        self._name = getattr(func, '__qualname__', None) or repr(func)
        # Paddle calls a function that takes no parameters without the inputs
        try:
            params = inspect.signature(func).parameters.values()
            self._no_args = not any(True for _ in params)
        except (TypeError, ValueError):
            self._no_args = False
        self._c = HOST_CALLBACK(self._call)
        out = ctypes.c_int64()
        core.check(_register(self._name.encode('utf-8', 'replace'), self._c, None,
                             ctypes.byref(out)), 'py_func')
        self._id = out.value
        PyFuncRegistry._register_funcs.append(self)

    @classmethod
    def registered_func(cls, idx):
        for r in cls._register_funcs:
            if r._id == idx:
                return r._func
        raise IndexError('no py_func function has id %d' % idx)

    @classmethod
    def registered_func_num(cls):
        return len(cls._register_funcs)

    @property
    def id(self):
        return self._id

    def _call(self, user, ins, nin, outs, nout):
        # Runs on an executor thread holding the GIL (ctypes takes it); every exception
        # becomes the status the op fails with.
        try:
            if self._no_args:
                ret = self._func()
            else:
                ret = self._func(*[_input(ins[i]) for i in range(nin)])
            if not isinstance(ret, (list, tuple)):
                ret = (ret,)
            if len(ret) != nout and not (nout == 0 and len(ret) == 1 and ret[0] is None):
                raise ValueError('returned %d value(s) for %d output(s)' % (len(ret), nout))
            for i in range(nout):
                if ret[i] is not None:
                    outs[i] = _output(ret[i], 'output #%d' % i)
            return None
        except BaseException as e:  # noqa: B902 -- nothing may escape into C
            return _status(_code_of(e), '%s raised %s: %s' % (self._name, type(e).__name__, e))


def _var_list(v, what):
    if v is None:
        return []
    if isinstance(v, Variable):
        return [v]
    if isinstance(v, (list, tuple)) and all(isinstance(x, Variable) for x in v):
        return list(v)
    raise TypeError('py_func: %s must be a Variable or a list of Variables, got %r' % (what, v))


def py_func(func, x, out, backward_func=None, skip_vars_in_backward_input=None):
    """Appends a `py_func` op: at run time Out = func(*X), func receiving LoDTensors
    (np.array(t) reads one) and returning arrays or LoDTensors, one per output. The
    output variables must be created beforehand with their dtype and shape
    (block.create_var). backward_func, if given, receives X, Out and the gradients of
    Out (minus skip_vars_in_backward_input) and returns the gradients of X (None where
    one is not needed). Returns `out`."""
    xs = _var_list(x, 'x')
    outs = _var_list(out, 'out')
    fwd_id = PyFuncRegistry(func).id
    bwd_id = PyFuncRegistry(backward_func).id if backward_func is not None else -1
    for o in outs:
        if len(o.shape) == 0:
            raise ValueError('Output shapes of py_func op should be provided by users manually')
    skip = []
    if backward_func is not None and skip_vars_in_backward_input is not None:
        known = set(v.name for v in xs + outs)
        for v in _var_list(skip_vars_in_backward_input, 'skip_vars_in_backward_input'):
            if v.name not in known:
                raise ValueError('Variable {} is not found in forward inputs and outputs'
                                 .format(v.name))
            if v.name not in skip:
                skip.append(v.name)
    default_main_program().current_block().append_op(
        type='py_func', inputs={'X': xs}, outputs={'Out': outs},
        attrs={'forward_callable_id': fwd_id, 'backward_callable_id': bwd_id,
               'backward_skip_vars': skip})
    return out


py_func.registered_func = PyFuncRegistry.registered_func
py_func.registered_func_num = PyFuncRegistry.registered_func_num
