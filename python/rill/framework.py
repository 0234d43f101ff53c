"""Programs, blocks, variables, parameters and operators (Fluid 1.x's framework.py).

A Program is a live C program (librill's rill_program), edited through the C editing
API as it is built: variables are declared with rill_block_add_var, ops are added
through the C op builder and each op's shapes are inferred by one rill_block_infer_op
call. Transforms (backward, clipping, weight decay) run on it in place; parsing,
serializing, copying and pruning are C's. Variable and Operator objects hold what
Python reads often as plain dicts: a variable's description is written with each edit,
an op's is read from C (rill_block_op_*_info) the first time it is asked for."""

import collections
import contextlib
import copy
import weakref

import numpy as np

from . import core
from .core import Error

__all__ = ['Program', 'Block', 'Variable', 'Parameter', 'Operator', 'program_guard',
           'default_main_program', 'default_startup_program', 'switch_main_program',
           'switch_startup_program', 'name_scope', 'unique_name', 'OpRole', 'CPUPlace',
           'CUDAPlace', 'CUDAPinnedPlace', 'in_dygraph_mode', 'cpu_places', 'cuda_places',
           'cuda_pinned_places', 'is_compiled_with_cuda',
           'load_op_library', 'grad_var_name', 'GRAD_VAR_SUFFIX', 'EMPTY_VAR_NAME',
           'TEMP_VAR_NAME', 'ZERO_VAR_SUFFIX', 'CONTROL_DEP_VAR_PREFIX']

# Fluid's reserved variable names and suffixes (the backward pass names gradients
# <name>@GRAD and leaves @EMPTY@ for gradients it does not compute).
GRAD_VAR_SUFFIX = '@GRAD'
EMPTY_VAR_NAME = '@EMPTY@'
TEMP_VAR_NAME = '@TEMP@'
ZERO_VAR_SUFFIX = '@ZERO'
CONTROL_DEP_VAR_PREFIX = '__control_var'


def grad_var_name(var_name):
    """The name of var_name's gradient: var_name + '@GRAD'."""
    return var_name + GRAD_VAR_SUFFIX


class OpRole(object):
    Forward = 0
    Backward = 1
    Optimize = 2
    RPC = 4
    Dist = 8
    LRSched = 16
    Loss = 256


class CPUPlace(object):
    def __repr__(self):
        return 'CPUPlace'

    def __eq__(self, other):
        return isinstance(other, CPUPlace)

    def __hash__(self):
        return 0


class CUDAPlace(object):
    """Fluid's CUDAPlace(id): the CUDA device `id`. Making one needs no device; an
    Executor made for it raises UnimplementedError saying why when the device cannot be
    used (a build without CUDA, no driver, no device) and InvalidArgumentError for an id
    the machine does not have."""

    def __init__(self, device_id=0):
        if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0:
            raise core.error_class('INVALID_ARGUMENT')(
                'CUDAPlace(%r): the device id must be an integer >= 0' % (device_id,))
        self.device_id = device_id

    def get_device_id(self):
        return self.device_id

    def __repr__(self):
        return 'CUDAPlace(%d)' % self.device_id

    def __eq__(self, other):
        return isinstance(other, CUDAPlace) and other.device_id == self.device_id

    def __hash__(self):
        return hash(('cuda', self.device_id))


class CUDAPinnedPlace(object):
    """Fluid's CUDAPinnedPlace(): host memory bound for a CUDA device. A tensor set on it
    (LoDTensor.set) is copied into page-locked memory from the CUDA backend
    (cudaHostAlloc) when the backend sees a device, into plain host memory otherwise;
    either way it reads back as it was written and feeds any executor. Programs run on
    CPUPlace() or CUDAPlace(id), not on it: Executor(CUDAPinnedPlace()) raises."""

    def __repr__(self):
        return 'CUDAPinnedPlace'

    def __eq__(self, other):
        return isinstance(other, CUDAPinnedPlace)

    def __hash__(self):
        return hash('cuda_pinned')


def is_compiled_with_cuda():
    """True when this build of rill has the CUDA backend (it may still find no device:
    rill.cuda.device_count())."""
    return core.is_compiled_with_cuda()


def in_dygraph_mode():
    return False


def cpu_places(device_count=None):
    """Fluid's cpu_places: device_count CPUPlace()s (default: $CPU_NUM, else the number of
    cores). rill runs a program once on all of them (see rill.compiler)."""
    if device_count is None:
        import os
        device_count = int(os.environ.get('CPU_NUM', 0)) or (os.cpu_count() or 1)
    return [CPUPlace() for _ in range(int(device_count))]


def cuda_places(device_ids=None):
    """Fluid's cuda_places: CUDAPlace(i) for each id (default: every device this
    process can use, none on a machine without CUDA)."""
    if device_ids is None:
        return [CUDAPlace(i) for i in range(core.cuda_device_count()[0])]
    return [CUDAPlace(i) for i in device_ids]


def cuda_pinned_places(device_count=None):
    """Fluid's cuda_pinned_places: device_count CUDAPinnedPlace()s (default: one per CUDA
    device this process can use). As in Paddle, a build without CUDA fails its
    assertion."""
    assert core.is_compiled_with_cuda(), "Not compiled with CUDA"
    if device_count is None:
        device_count = core.cuda_device_count()[0]
    return [CUDAPinnedPlace() for _ in range(int(device_count))]


# --------------------------------------------------------------- unique names ----

class _NameGenerator(object):
    def __init__(self, prefix=''):
        self.ids = collections.defaultdict(int)
        self.prefix = prefix

    def __call__(self, key):
        n = self.ids[key]
        self.ids[key] += 1
        return '%s%s_%d' % (self.prefix, key, n)


class _UniqueName(object):
    """rill.unique_name: generate(key) -> 'key_0', 'key_1', ...; guard() starts afresh."""

    def __init__(self):
        self.generator = _NameGenerator()

    def generate(self, key):
        return self.generator(key)

    def generate_with_ignorable_key(self, key):
        return self.generator(key)

    def switch(self, new_generator=None):
        old = self.generator
        self.generator = new_generator or _NameGenerator()
        return old

    @contextlib.contextmanager
    def guard(self, new_generator=None):
        if isinstance(new_generator, str):
            new_generator = _NameGenerator(new_generator)
        old = self.switch(new_generator)
        try:
            yield
        finally:
            self.switch(old)


unique_name = _UniqueName()

# Fluid 1.x's math_op_patch: integer dtypes (division keeps its op) and the comparisons
# (bool outputs).
_INT_DTYPES = ('uint8', 'int8', 'int16', 'int32', 'int64')
_COMPARE_OPS = ('less_than', 'less_equal', 'greater_than', 'greater_equal')

_name_scopes = []
_root_scope = {'path': '/', 'children': {}}


@contextlib.contextmanager
def name_scope(prefix=None):
    """Groups ops under a name: ops appended inside carry attr op_namescope '/a/b/'.
    Nested scopes join with '/'; a repeated prefix at one level gets a suffix _1, _2."""
    parent = _name_scopes[-1] if _name_scopes else _root_scope
    prefix = prefix or ''
    n = parent['children'].get(prefix, 0)
    parent['children'][prefix] = n + 1
    name = prefix if n == 0 else '%s_%d' % (prefix, n)
    _name_scopes.append({'path': parent['path'] + name + '/', 'children': {}})
    try:
        yield
    finally:
        _name_scopes.pop()


def _current_namescope():
    return _name_scopes[-1]['path'] if _name_scopes else '/'


# ------------------------------------------------------------------- helpers ----

_VAR_TYPE_NAMES = {7: 'LOD_TENSOR', 8: 'SELECTED_ROWS', 9: 'FEED_MINIBATCH', 10: 'FETCH_LIST',
                   11: 'STEP_SCOPES', 12: 'LOD_RANK_TABLE', 13: 'LOD_TENSOR_ARRAY', 15: 'READER',
                   17: 'RAW'}


def _plain(value):
    """Attribute values as plain Python (numpy scalars and arrays become ints/floats)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# Attribute types of plain Python scalars (others go through core.attr_type_of).
_STALE_ALL = 2  # Variable._stale: every field to read again (1: the tensor fields)
_STALE_FIELDS = 3  # Variable._stale: the description is still in Variable._fields
_SCALAR_ATTR = {bool: core.ATTR_BOOLEAN, int: core.ATTR_INT, float: core.ATTR_FLOAT,
                str: core.ATTR_STRING}
_ATTR_CODE_LONG = str(core.ATTR_LONG)
_PACKED_SCALARS = {}  # (name, class, value) -> the packed fields of that attribute
_PARAMETER_FLAGS = core.DECLARE_PERSISTABLE | core.DECLARE_IS_PARAMETER
_schema_attrs = {}
_NP_DTYPES = {}  # dtype number -> numpy dtype (Variable.dtype)
_DTYPE_NAMES = {}  # dtype number -> its numpy name (Variable._dtype_name)


def _op_has_attr(op_type, name):
    """Whether op `op_type`'s schema declares attribute `name` (rill_op_has_attribute)."""
    key = (op_type, name)
    got = _schema_attrs.get(key)
    if got is None:
        got = _schema_attrs[key] = bool(core.op_has_attribute(op_type, name))
    return got


# ------------------------------------------------------------------ Variable ----

class Variable(object):
    """A variable of a block: a view of one VarDesc dict."""

    def __init__(self, block, desc):
        self.block = block
        self._desc = desc
        self._stale = False

    @property
    def desc(self):
        """The VarDesc dict, read again from C after an op that writes the variable was
        inferred (the read waits until the description is asked for)."""
        if self._stale:
            self._refresh()
        return self._desc

    @desc.setter
    def desc(self, d):
        self._desc = d
        self._stale = False

    _fields = None  # (fields, i): the description at fields[i] of a vars_fields list

    def _refresh(self):
        d = self._desc
        f = self._fields
        if f is not None:
            # wrapped from C without decoding its description: decoded now
            self._fields = None
            d.update(core.var_desc_of(f[0], f[1]))
            if self._stale == _STALE_FIELDS:
                self._stale = False
                return
        if self._stale == _STALE_ALL:
            self._stale = False
            vd = self.block.program._h.read_var_named(self.block.idx, d['name'])
            if vd is not None:
                if d.get('is_data'):
                    vd['is_data'] = True
                d.clear()
                d.update(vd)
            return
        self._stale = False
        got = self.block.program._h.var_info(self.block.idx, d['name'])
        if got is None or not got.has_tensor or got.type != core.LOD_TENSOR:
            return
        d['dtype'] = got.dtype
        d['shape'] = got.dims[:got.ndim] if got.ndim else []
        d['has_tensor'] = True
        d['lod_level'] = got.lod_level

    def _touch(self):
        self.block.program._edited()

    def _c_flags(self):
        d = self.desc
        self.block.program._h.set_flags(self.block.idx, d['name'], d.get('persistable', False),
                                        d.get('is_parameter', False),
                                        d.get('stop_gradient', False))

    @property
    def name(self):
        return self._desc['name']

    @property
    def type(self):
        return self.desc['type']

    @property
    def shape(self):
        return tuple(self.desc['shape'])

    @property
    def dtype(self):
        code = self.desc['dtype']
        d = _NP_DTYPES.get(code)
        if d is None:
            d = _NP_DTYPES[code] = np.dtype(core.DTYPE_TO_NP.get(code, np.float32))
        return d

    def _dtype_name(self):
        """self.dtype.name, cached by dtype number (numpy computes the name each time)."""
        code = self.desc['dtype']
        name = _DTYPE_NAMES.get(code)
        if name is None:
            name = _DTYPE_NAMES[code] = self.dtype.name
        return name

    @property
    def lod_level(self):
        return self.desc.get('lod_level', 0)

    def _prop(name):
        def get(self):
            return self.desc.get(name, False)

        def put(self, v):
            old = self.desc.get(name, False)
            self.desc[name] = bool(v)
            try:
                if name == 'need_check_feed':
                    self.block.program._h.set_need_check_feed(self.block.idx, self.desc['name'],
                                                              bool(v))
                else:
                    self._c_flags()
            except Error:
                self.desc[name] = old
                raise
            self.block.program._edited()
        return property(get, put)

    persistable = _prop('persistable')
    stop_gradient = _prop('stop_gradient')
    need_check_feed = _prop('need_check_feed')
    del _prop

    @property
    def is_data(self):
        """A fed variable (layers.data, rill.data). Kept in Python only: the VarDesc field
        is need_check_feed, set by rill.data alone (its feeds are checked)."""
        return bool(self.desc.get('is_data') or self.desc.get('need_check_feed'))

    @is_data.setter
    def is_data(self, v):
        self.desc['is_data'] = bool(v)

    def _set_meta(self, dtype, shape, lod_level=None):
        d = self.desc
        shape = [int(x) for x in shape]
        lod = d.get('lod_level', 0) if lod_level is None else lod_level
        self.block.program._h.set_tensor(self.block.idx, d['name'], True, dtype, shape, lod)
        d['dtype'] = dtype
        d['shape'] = shape
        d['has_tensor'] = True
        d['lod_level'] = lod
        self.block.program._edited()

    def to_string(self, throw_on_error=False, with_details=False):
        d = self.desc
        kind = _VAR_TYPE_NAMES.get(d['type'], str(d['type']))
        s = 'var %s : %s' % (d['name'], kind)
        if d.get('has_tensor', True) and d['type'] in (7, 8, 13):
            s += '.shape(%s).dtype(%s)' % (', '.join(str(x) for x in d['shape']),
                                           self.dtype.name)
            if d.get('lod_level'):
                s += '.lod_level(%d)' % d['lod_level']
        flags = [f for f in ('persistable', 'stop_gradient') if d.get(f)]
        if isinstance(self, Parameter):
            flags.append('trainable' if self.trainable else 'frozen')
        if flags:
            s += ' [%s]' % ', '.join(flags)
        return s

    __str__ = to_string

    def __repr__(self):
        return '<rill.Variable %s>' % self.to_string()

    # Arithmetic and ordering append ops, as Fluid 1.x's monkey-patched operators do
    # (layers/math_op_patch.py), with its op choices and so its numbers:
    # - a Python number with +, -, * or / is one scale op (x / 4.0 scales by 0.25), except
    #   an integer variable divided;
    # - otherwise the number becomes a fill_constant of shape [1] (or, on the left of a
    #   reversed op, one of the variable's shape, batch dim from the variable), cast to the
    #   variable's dtype if it differs, and the elementwise op runs with axis 0 when Y's
    #   first dim is the batch's, else -1;
    # - <, <=, > and >= give bool variables. == and != stay Python's identity tests, since
    #   variables are kept in sets and dicts (Fluid 1.x made them ops too).
    def _scalar_op(self, scale, bias):
        block = self.block.program.current_block()
        out = block.create_var(name=unique_name.generate('tmp'), dtype=self.dtype.name, infer=True)
        block.append_op('scale', {'X': self}, {'Out': out},
                        {'scale': float(scale), 'bias': float(bias)})
        return out

    def _filled_like(self, value, reverse):
        """The constant operand of a math op with a Python number."""
        from . import layers
        dt = self.dtype.name
        shape = list(self.shape)
        if not reverse:
            return layers.fill_constant([1], dt, float(value))
        batch = next((i for i, d in enumerate(shape) if d is None or d < 0), None)
        if batch is None:
            return layers.fill_constant(shape, dt, float(value))
        shape = [d if d is not None and d >= 0 else (-1 if i == batch else 1)
                 for i, d in enumerate(shape)]
        return layers.fill_constant_batch_size_like(self, shape, dt, float(value),
                                                    input_dim_idx=batch,
                                                    output_dim_idx=batch)

    def _math(self, other, op, reverse=False, scalar=None):
        if scalar is not None and isinstance(other, (int, float)) and \
                not isinstance(other, bool) and \
                not (op == 'elementwise_div' and self.dtype.name in _INT_DTYPES):
            if isinstance(other, float) and self.dtype.name in _INT_DTYPES and \
                    other != int(other):
                raise ValueError('float value %r cannot convert to integer (variable %s is '
                                 '%s)' % (other, self.name, self.dtype.name))
            return self._scalar_op(*scalar(float(other)))
        if not isinstance(other, Variable):
            other = self._filled_like(other, reverse)
        if other.dtype != self.dtype:
            other = other.astype(self.dtype.name)
        x, y = (other, self) if reverse else (self, other)
        block = self.block.program.current_block()
        dt = 'bool' if op in _COMPARE_OPS else self.dtype.name
        out = block.create_var(name=unique_name.generate('tmp'), dtype=dt, infer=True)
        first = y.shape[0] if y.shape else 0
        block.append_op(op, {'X': x, 'Y': y}, {'Out': out},
                        {'axis': 0 if first is None or first == -1 else -1})
        if dt == 'bool':
            out.stop_gradient = True
        return out

    def astype(self, dtype):
        """A cast of this variable to dtype (Fluid's Variable.astype)."""
        from . import layers
        return layers.cast(self, dtype)

    def __neg__(self):
        return self._scalar_op(-1.0, 0.0)

    def __add__(self, o):
        return self._math(o, 'elementwise_add', scalar=lambda v: (1.0, v))

    __radd__ = __add__

    def __sub__(self, o):
        return self._math(o, 'elementwise_sub', scalar=lambda v: (1.0, -v))

    def __rsub__(self, o):
        return self._math(o, 'elementwise_sub', True, scalar=lambda v: (-1.0, v))

    def __mul__(self, o):
        return self._math(o, 'elementwise_mul', scalar=lambda v: (v, 0.0))

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._math(o, 'elementwise_div', scalar=lambda v: (1.0 / v, 0.0))

    __div__ = __truediv__

    def __rtruediv__(self, o):
        return self._math(o, 'elementwise_div', True)

    __rdiv__ = __rtruediv__

    def __pow__(self, o):
        return self._math(o, 'elementwise_pow')

    def __rpow__(self, o):
        return self._math(o, 'elementwise_pow', True)

    def __floordiv__(self, o):
        return self._math(o, 'elementwise_floordiv')

    def __mod__(self, o):
        return self._math(o, 'elementwise_mod')

    def __lt__(self, o):
        return self._math(o, 'less_than')

    def __le__(self, o):
        return self._math(o, 'less_equal')

    def __gt__(self, o):
        return self._math(o, 'greater_than')

    def __ge__(self, o):
        return self._math(o, 'greater_equal')

    __hash__ = object.__hash__


class Parameter(Variable):
    """A trainable persistable variable (Fluid's Parameter)."""

    def __init__(self, block, desc, trainable=True, optimize_attr=None, regularizer=None,
                 gradient_clip_attr=None, do_model_average=None):
        Variable.__init__(self, block, desc)
        self.trainable = trainable
        self.optimize_attr = optimize_attr or {'learning_rate': 1.0}
        self.regularizer = regularizer
        self.gradient_clip_attr = gradient_clip_attr
        self.do_model_average = do_model_average

    def __repr__(self):
        return '<rill.Parameter %s>' % self.to_string()


# ------------------------------------------------------------------ Operator ----

class Operator(object):
    """An op of a block. Its description (type, slots, attributes) is a dict made when
    first asked for: from the packed description it was added with (core.pack_op: the
    values as given), or read from the C program (after a transform, or for an op
    Python did not add); edits go to C and to the dict."""

    _packed = None  # bytes: the packed description the op was added with

    def __init__(self, block, desc=None, index=0):
        self.block = block
        self._desc = desc
        self._i = index  # where the op was last seen in block.ops

    def _index(self):
        ops = self.block.ops
        i = self._i
        if not (i < len(ops) and ops[i] is self):
            for i, o in enumerate(ops):
                if o is self:
                    break
            else:
                raise ValueError('op %s is no longer in block %d' % (self.type, self.block.idx))
            self._i = i
        return i

    @property
    def desc(self):
        d = self._desc
        if d is None:
            if self._packed is not None:
                d = core.unpack_op(self._packed)
                self._packed = None
            else:
                d = self.block.program._h.read_op(self.block.idx, self._index())
            self._desc = d
        return d

    def _forget(self):
        """The description is read from C when next asked for (a transform ran)."""
        self._desc = self._packed = None

    @property
    def type(self):
        return self.desc['type']

    def input(self, name):
        for p, args in self.desc['inputs']:
            if p == name:
                return list(args)
        return []

    def output(self, name):
        for p, args in self.desc['outputs']:
            if p == name:
                return list(args)
        return []

    @property
    def input_names(self):
        return [p for p, _ in self.desc['inputs']]

    @property
    def output_names(self):
        return [p for p, _ in self.desc['outputs']]

    @property
    def input_arg_names(self):
        return [a for _, args in self.desc['inputs'] for a in args]

    @property
    def output_arg_names(self):
        return [a for _, args in self.desc['outputs'] for a in args]

    @property
    def attr_names(self):
        return [a[0] for a in self.desc['attrs']]

    def has_attr(self, name):
        return any(a[0] == name for a in self.desc['attrs'])

    def attr(self, name):
        for a in self.desc['attrs']:
            if a[0] == name:
                return a[2]
        return None

    def all_attrs(self):
        return {a[0]: a[2] for a in self.desc['attrs']}

    def _set_attr(self, name, value):
        value = _plain(value)
        t = core.ATTR_BLOCK if isinstance(value, Block) else core.attr_type_of(value)
        if isinstance(value, Block):
            value = value.idx
        attrs = self.desc['attrs']
        self.block.program._h.set_attr(self.block.idx, self._index(), name, t, value)
        for i, a in enumerate(attrs):
            if a[0] == name:
                attrs[i] = (name, t, value)
                break
        else:
            attrs.append((name, t, value))
        self.block.program._edited()

    def to_string(self, throw_on_error=False):
        outs = ', '.join('%s=%s' % (p, list(a)) for p, a in self.desc['outputs'])
        ins = ', '.join('%s=%s' % (p, list(a)) for p, a in self.desc['inputs'])
        shown = sorted((a for a in self.desc['attrs']
                        if a[0] not in ('op_callstack', 'op_namescope')), key=lambda a: a[0])
        attrs = ', '.join('%s = %r' % (a[0], a[2]) for a in shown)
        return '{%s} = %s(inputs={%s}%s)' % (outs, self.type, ins, ', ' + attrs if attrs else '')

    __str__ = to_string

    def __repr__(self):
        return '<rill.Operator %s>' % self.to_string()


# --------------------------------------------------------------------- Block ----

def _names(v):
    """Slot arguments: a Variable, a name, or a list of them -> list of names."""
    if v is None:
        return []
    if isinstance(v, (list, tuple)):
        out = []
        for x in v:
            out.extend(_names(x))
        return out
    if isinstance(v, Variable):
        return [v.name]
    if isinstance(v, str):
        return [v]
    raise TypeError('an op argument must be a Variable or a name, got %r' % (v,))


def _new_var_desc(name, type=core.LOD_TENSOR, dtype=5, shape=None, lod_level=0,
                  persistable=False, is_parameter=False, stop_gradient=False,
                  need_check_feed=False, has_tensor=True):
    return {'name': name, 'type': type, 'dtype': dtype, 'shape': list(shape or []),
            'lod_level': lod_level, 'persistable': persistable, 'is_parameter': is_parameter,
            'stop_gradient': stop_gradient, 'need_check_feed': need_check_feed,
            'has_tensor': has_tensor}


class Block(object):
    def __init__(self, program, idx, parent_idx):
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.vars = collections.OrderedDict()
        self.ops = []

    def _read_from_c(self, old_vars=None):
        """Fills vars and ops from the C program. Variables of `old_vars` (name ->
        Variable) are kept as objects, their descriptions refreshed; ops are read when
        first asked for."""
        f = self.program._h.vars_fields(self.idx)
        self.vars = collections.OrderedDict()
        old_vars = old_vars or {}
        n = core.VAR_FIELDS
        new_var = object.__new__
        for k, name in enumerate(f[0::n]):
            v = old_vars.get(name)
            if v is not None:
                # Read again when next asked for.
                v._stale = _STALE_ALL
                v.block = self
            elif f[k * n + 7] == '1':  # a parameter
                v = self._wrap_var(core.var_desc_of(f, k * n))
            else:
                # decoded when first asked for (a backward pass adds a gradient per
                # variable, most of which Python never looks at); Variable.__init__'s
                # fields set directly
                v = new_var(Variable)
                v.block = self
                v._desc = {'name': name}
                v._stale = _STALE_FIELDS
                v._fields = (f, k * n)
            self.vars[name] = v
        self._read_ops_from_c()

    def _read_ops_from_c(self):
        """Op objects for the C program's ops: those held keep their place (an in-place
        transform appends), and every description is read again when asked for."""
        n = self.program._h.num_ops(self.idx)
        ops = self.ops[:n]
        for op in ops:
            op._forget()
        ops.extend(Operator(self, None, i) for i in range(len(ops), n))
        self.ops = ops

    def _wrap_var(self, vd):
        if vd.get('is_parameter'):
            return Parameter(self, vd)
        return Variable(self, vd)

    def var(self, name):
        v = self.vars.get(name)
        if v is None:
            raise ValueError('var %s not in this block' % name)
        return v

    def has_var(self, name):
        return name in self.vars

    def _find_var_recursive(self, name):
        b = self
        while True:
            v = b.vars.get(name)
            if v is not None:
                return v
            if b.parent_idx < 0:
                return None
            b = self.program.block(b.parent_idx)

    def _var_recursive(self, name):
        v = self._find_var_recursive(name)
        if v is None:
            raise ValueError('var %s is not in block %d or its parents' % (name, self.idx))
        return v

    def all_parameters(self):
        return [v for v in self.vars.values() if isinstance(v, Parameter)]

    def iter_parameters(self):
        return iter(self.all_parameters())

    def create_var(self, name=None, shape=None, dtype='float32', type=core.LOD_TENSOR,
                   lod_level=0, persistable=False, stop_gradient=False, is_data=False,
                   infer=False, need_check_feed=False, **kwargs):
        """Declares a variable (returns the existing one of that name). infer=True leaves
        dtype and shape to the shape inference of the op that writes it. need_check_feed:
        feeds must match the declared shape (rill.data)."""
        if name is None:
            name = unique_name.generate('_generated_var')
        v = self.vars.get(name)
        if v is not None:
            return v
        # _new_var_desc's dict, written out (a layer declares several per call)
        vd = {'name': name, 'type': type, 'dtype': core.dtype_code(dtype),
              'shape': [int(d) for d in shape] if shape else [], 'lod_level': lod_level,
              'persistable': persistable, 'is_parameter': False,
              'stop_gradient': stop_gradient, 'need_check_feed': need_check_feed,
              'has_tensor': not infer}
        if is_data:
            vd['is_data'] = True
        v = Variable(self, vd)
        # _add_var's declaration, the flags taken from the arguments
        prog = self.program
        prog._h.declare_var(self.idx, name, type, vd['dtype'], vd['shape'], lod_level,
                            (core.DECLARE_PERSISTABLE if persistable else 0) |
                            (core.DECLARE_STOP_GRADIENT if stop_gradient else 0) |
                            (core.DECLARE_NEED_CHECK_FEED if need_check_feed else 0) |
                            (core.DECLARE_NO_TENSOR if infer else 0))
        self.vars[name] = v
        prog._version += 1
        return v

    def _add_var(self, v):
        """Declares Variable v (whose desc is new) in the C program and in block.vars."""
        vd = v.desc
        name = vd['name']
        g = vd.get
        flags = ((core.DECLARE_PERSISTABLE if g('persistable') else 0) |
                 (core.DECLARE_IS_PARAMETER if g('is_parameter') else 0) |
                 (core.DECLARE_STOP_GRADIENT if g('stop_gradient') else 0) |
                 (core.DECLARE_NEED_CHECK_FEED if g('need_check_feed') else 0) |
                 (0 if g('has_tensor', True) else core.DECLARE_NO_TENSOR))
        self.program._h.declare_var(self.idx, name, vd['type'], vd['dtype'], vd['shape'],
                                    g('lod_level', 0), flags)
        self.vars[name] = v
        self.program._edited()

    def create_parameter(self, name, shape, dtype='float32', trainable=True, optimize_attr=None,
                         regularizer=None, gradient_clip_attr=None, initializer=None,
                         stop_gradient=False, do_model_average=None, **kwargs):
        if name in self.vars:
            v = self.vars[name]
            if not isinstance(v, Parameter):
                raise ValueError('variable %s exists and is not a parameter' % name)
            return v
        stop = stop_gradient or not trainable
        vd = {'name': name, 'type': core.LOD_TENSOR, 'dtype': core.dtype_code(dtype),
              'shape': [int(d) for d in shape], 'lod_level': 0, 'persistable': True,
              'is_parameter': True, 'stop_gradient': stop, 'need_check_feed': False,
              'has_tensor': True}
        p = Parameter(self, vd, trainable=trainable, optimize_attr=optimize_attr,
                      regularizer=regularizer, gradient_clip_attr=gradient_clip_attr,
                      do_model_average=do_model_average)
        # _add_var's declaration, the flags known here
        prog = self.program
        prog._h.declare_var(self.idx, name, core.LOD_TENSOR, vd['dtype'], vd['shape'], 0,
                            _PARAMETER_FLAGS | (core.DECLARE_STOP_GRADIENT if stop else 0))
        self.vars[name] = p
        prog._version += 1
        if initializer is not None:
            initializer(p, self)
        return p

    def _remove_var(self, name):
        if name in self.vars:
            self.program._h.remove_var(self.idx, name)
            del self.vars[name]
            self.program._edited()

    def _make_op(self, type, inputs, outputs, attrs):
        od = {'type': type, 'inputs': [(k, [v._desc['name']] if isinstance(v, Variable)
                                        else _names(v)) for k, v in (inputs or {}).items()],
              'outputs': [(k, [v._desc['name']] if isinstance(v, Variable) else _names(v))
                          for k, v in (outputs or {}).items()], 'attrs': []}
        attrs = dict(attrs or {})
        prog = self.program
        attrs.setdefault('op_role', prog._op_role)
        if prog._op_role_var:
            attrs.setdefault('op_role_var', list(prog._op_role_var))
        if _name_scopes:
            attrs.setdefault('op_namescope', _current_namescope())
        op = Operator(self, od)
        op._has_block = False
        out = od['attrs']
        for k, v in attrs.items():
            if v is None:
                continue
            t = _SCALAR_ATTR.get(v.__class__)
            if t is None:
                if v.__class__ in (list, tuple) and v:
                    # the common list attributes (shapes, axes; op_role_var), typed as
                    # attr_type_of types them
                    if all(x.__class__ is int for x in v):
                        v = list(v)
                        t = core.ATTR_INTS if -2**31 <= min(v) and max(v) < 2**31 else \
                            core.ATTR_LONGS
                        out.append((k, t, v))
                        continue
                    if all(x.__class__ is str for x in v):
                        out.append((k, core.ATTR_STRINGS, list(v)))
                        continue
                v = _plain(v)
                if isinstance(v, Block):
                    out.append((k, core.ATTR_BLOCK, v.idx))
                    op._has_block = True
                    continue
                t = core.attr_type_of(v)
            elif t == core.ATTR_INT and not -2**31 <= v < 2**31:
                t = core.ATTR_LONG
            out.append((k, t, v))
        return op

    def _packed_op(self, type, inputs, outputs, attrs, in_names, out_names):
        """An Operator whose description is packed (core.pack_op's bytes) in one pass
        over the arguments, typed as _make_op types them; the argument names are added
        to in_names and out_names. The description dict is made when asked for."""
        f = [type]
        for slots, names in ((inputs, in_names), (outputs, out_names)):
            if not slots:
                f.append('0')
                continue
            f.append(str(len(slots)))
            for k, v in slots.items():
                if isinstance(v, Variable):
                    n = v._desc['name']
                    f += (k, '1', n)
                    names.append(n)
                else:
                    a = _names(v)
                    f += (k, str(len(a)))
                    f += a
                    names += a
        at = len(f)
        f.append('')
        has_block = False
        prog = self.program
        items = list(attrs.items()) if attrs else []
        if not attrs or 'op_role' not in attrs:
            items.append(('op_role', prog._op_role))
        if prog._op_role_var and (not attrs or 'op_role_var' not in attrs):
            items.append(('op_role_var', list(prog._op_role_var)))
        if _name_scopes and (not attrs or 'op_namescope' not in attrs):
            items.append(('op_namescope', _current_namescope()))
        count = 0
        for k, v in items:
            if v is None:
                continue
            count += 1
            cls = v.__class__
            if cls is float:
                f += (k, '1', repr(v))
                continue
            t = _SCALAR_ATTR.get(cls)
            if t is not None:
                # An int, bool or string attribute: its three fields, kept by value
                # (op_role, dtype, axis, ... repeat from op to op).
                key = (k, cls, v)
                got = _PACKED_SCALARS.get(key)
                if got is None:
                    if t == core.ATTR_INT:
                        got = (k, '0' if -2**31 <= v < 2**31 else _ATTR_CODE_LONG, str(v))
                    elif t == core.ATTR_STRING:
                        got = (k, '2', v)
                    else:
                        got = (k, '6', '1' if v else '0')
                    if len(_PACKED_SCALARS) < 4096:
                        _PACKED_SCALARS[key] = got
                f += got
                continue
            if v.__class__ in (list, tuple) and v:
                if v[0].__class__ is str and all(x.__class__ is str for x in v):
                    f += (k, '5', str(len(v)))
                    f += v
                    continue
                if all(x.__class__ is int for x in v):
                    t = core.ATTR_INTS if -2**31 <= min(v) and max(v) < 2**31 else \
                        core.ATTR_LONGS
                    f += (k, str(t), str(len(v)))
                    f += map(str, v)
                    continue
                if all(x.__class__ is str for x in v):
                    f.append(k)
                    f.append('5')
                    f.append(str(len(v)))
                    f.extend(v)
                    continue
            v = _plain(v)
            if isinstance(v, Block):
                t, v = core.ATTR_BLOCK, v.idx
                has_block = True
            else:
                t = core.attr_type_of(v)
            core.pack_attr(f, k, t, v)
        f[at] = str(count)
        op = Operator(self, None)
        op._packed = core.packed_text(f, type)
        op._has_block = has_block
        return op

    def _add_op(self, index, op, infer=False):
        """Adds op at `index` (None: the end) to the C program, packed into one call that
        also infers its outputs with `infer`, and to block.ops. Returns its index."""
        at = len(self.ops) if index is None else index
        spec = op._packed
        if spec is None or op._desc is not None:
            d = op.desc
            spec = core.pack_op(d['type'], d['inputs'], d['outputs'], d['attrs'])
        prog = self.program
        prog._h.insert_op_packed(self.idx, at, spec, infer)
        # Kept packed (one bytes object, which the garbage collector does not track)
        # until the description is asked for.
        op._desc, op._packed = None, spec
        op._i = at
        if at == len(self.ops):
            self.ops.append(op)
        else:
            self.ops.insert(at, op)
        prog._version += 1  # _edited
        return at

    def append_op(self, type, inputs=None, outputs=None, attrs=None, infer_shape=True, **kw):
        ins, outn = [], []
        op = self._packed_op(type, inputs, outputs, attrs, ins, outn)
        if not infer_shape or op._has_block:
            self._add_op(None, op)
            return op
        find = self._find_var_recursive
        here = self.vars.get
        outs = []
        for n in ins:
            if here(n) is None and find(n) is None:
                raise ValueError('op %s: variable %s is not declared in block %d' %
                                 (type, n, self.idx))
        for n in outn:
            v = here(n)
            if v is None:
                v = find(n)
            if v is None:
                raise ValueError('op %s: variable %s is not declared in block %d' %
                                 (type, n, self.idx))
            outs.append(v)
        try:
            self._add_op(None, op, True)
        except Error as e:
            # Outputs declared for this op alone (no shape yet, no other user) go too.
            used = set()
            for o in self.ops:
                used.update(o.input_arg_names)
                used.update(o.output_arg_names)
            for v in outs:
                n = v.name
                if v.block is self and not v.desc.get('has_tensor', True) and n not in used:
                    self._remove_var(n)
            raise e.__class__('%s (op %s appended to block %d)' % (e.message, type,
                                                              self.idx)) from None
        for v in outs:
            v._stale = True
        return op

    def _prepend_op(self, type, inputs=None, outputs=None, attrs=None, **kw):
        op = self._packed_op(type, inputs, outputs, attrs, [], [])
        self._add_op(0, op)
        return op

    def _insert_op(self, index, type, inputs=None, outputs=None, attrs=None, **kw):
        op = self._packed_op(type, inputs, outputs, attrs, [], [])
        self._add_op(index, op)
        return op

    def _remove_op(self, index):
        self.program._h.remove_op(self.idx, index)
        self.ops.pop(index)
        self.program._edited()

    def to_string(self, throw_on_error=False, with_details=False):
        lines = ['{ // block %d' % self.idx]
        for v in self.vars.values():
            lines.append('    ' + v.to_string())
        if self.vars and self.ops:
            lines.append('')
        for op in self.ops:
            lines.append('    ' + op.to_string())
        lines.append('}')
        return '\n'.join(lines)

    __str__ = to_string


# ------------------------------------------------------------------- Program ----

class _OptimizedGuard(object):
    __slots__ = ('program', 'role_var', 'old')

    def __init__(self, program, role_var):
        self.program, self.role_var = program, role_var

    def __enter__(self):
        p = self.program
        self.old = p._op_role, p._op_role_var
        p._op_role, p._op_role_var = OpRole.Optimize, self.role_var

    def __exit__(self, *exc):
        self.program._op_role, self.program._op_role_var = self.old
        return False


class Program(object):
    """A ProgramDesc being built (Fluid's Program)."""

    _next_id = [0]

    def __init__(self):
        self._init_from_c(core.CProgram.create())
        self.random_seed = 0

    def _init_from_c(self, handle):
        Program._next_id[0] += 1
        self._id = Program._next_id[0]
        self._h = handle
        self.blocks = []
        self._read_blocks_from_c()
        self.current_block_idx = 0
        self._version = 0
        self._op_role = OpRole.Forward
        self._op_role_var = []
        self._is_test = False

    def _read_blocks_from_c(self):
        """Block objects for the C program's blocks not yet wrapped (filled from C)."""
        h = self._h
        for b in range(len(self.blocks), h.num_blocks()):
            blk = Block(self, b, h.block_parent(b))
            blk._read_from_c()
            self.blocks.append(blk)

    def _edited(self):
        self._version += 1

    _bump = _edited

    def _transformed(self):
        """After a transform ran on the C program in place (ops and variables added,
        descriptions inferred): variables are read again, kept as the same objects; op
        objects for the new ops are added; new blocks are wrapped."""
        for b in self.blocks:
            b._read_from_c(b.vars)
        self._read_blocks_from_c()
        self._edited()

    # -- C side --

    def serialize_to_string(self):
        return self._h.serialize()

    def _c(self):
        """The C program (rill_program), edited in place by every change."""
        return self._h

    @classmethod
    def parse_from_string(cls, binary_str):
        """A Program from ProgramDesc bytes (a `__model__` file, a .pdmodel)."""
        return cls._from_c(core.CProgram.parse(bytes(binary_str)))

    @classmethod
    def _from_c(cls, handle):
        p = cls.__new__(cls)
        p._init_from_c(handle)
        p.random_seed = 0
        return p

    def _reload(self, data):
        """Replaces the program by ProgramDesc bytes `data` (a transformed copy), keeping
        the Variable objects users hold."""
        self._adopt(core.CProgram.parse(bytes(data)))

    def _adopt(self, handle):
        """Replaces the C program by `handle` (a transformed copy of it), keeping the
        Variable objects users hold."""
        self._h = handle
        for b in self.blocks:
            for op in b.ops:
                op._forget()
        self.blocks = self.blocks[:self._h.num_blocks()]
        self._transformed()

    def _infer_op(self, block, op, at):
        """Compile-time shapes of `op`'s outputs: one rill_block_infer_op call on op #at
        of the block in the C program; the outputs' descriptions are read again when
        next asked for."""
        for n in op.input_arg_names + op.output_arg_names:
            if block._find_var_recursive(n) is None:
                raise ValueError('op %s: variable %s is not declared in block %d' %
                                 (op.type, n, block.idx))
        try:
            self._h.infer_op(block.idx, at)
        except Error as e:
            raise type(e)('%s (op %s appended to block %d)' % (e.message, op.type,
                                                              block.idx)) from None
        for n in op.output_arg_names:
            block._find_var_recursive(n)._stale = True
        self._edited()

    # -- blocks --

    def global_block(self):
        return self.blocks[0]

    def block(self, index):
        return self.blocks[index]

    def current_block(self):
        return self.blocks[self.current_block_idx]

    @property
    def num_blocks(self):
        return len(self.blocks)

    def _create_block(self, parent_idx=None):
        parent = self.current_block_idx if parent_idx is None else parent_idx
        idx = self._h.append_block(parent)
        self.blocks.append(Block(self, idx, parent))
        self.current_block_idx = idx
        self._edited()
        return self.blocks[-1]

    def _rollback(self):
        self.current_block_idx = self.current_block().parent_idx

    def list_vars(self):
        for b in self.blocks:
            for v in b.vars.values():
                yield v

    def all_parameters(self):
        return [p for b in self.blocks for p in b.all_parameters()]

    def _optimized_guard(self, param_and_grads):
        """Ops appended inside get op_role Optimize and op_role_var the names of
        `param_and_grads` (one per parameter in minimize: a plain class, not a
        generator, as it is entered that often)."""
        return _OptimizedGuard(self, [v.name if isinstance(v, Variable) else v
                                      for v in param_and_grads])

    # -- copies --

    def clone(self, for_test=False):
        """A deep copy. for_test=True also sets is_test on every op whose schema has it
        and drops backward, optimizer and learning-rate ops (op_role Backward, Optimize
        or LRSched: evaluating does not advance the step counter), so a training program
        gives its evaluation program."""
        p = Program._from_c(self._h.copy())
        p.random_seed = self.random_seed
        # a clone of a transpiled trainer's program saves as that trainer does
        # (rill.distributed.trainer_info follows this back)
        p._rill_clone_of = weakref.ref(self)
        if getattr(self, '_data_loaders', None):
            p._data_loaders = list(self._data_loaders)  # the clone reads from them too
        # Variables keep their Python-side state: data flags, parameters' attributes.
        for b_old, b_new in zip(self.blocks, p.blocks):
            for name, v in b_old.vars.items():
                nv = b_new.vars.get(name)
                if nv is None:
                    continue
                if v.desc.get('is_data'):
                    nv.desc['is_data'] = True
                if isinstance(v, Parameter):
                    b_new.vars[name] = Parameter(b_new, nv.desc, trainable=v.trainable,
                                                 optimize_attr=v.optimize_attr,
                                                 regularizer=v.regularizer,
                                                 gradient_clip_attr=v.gradient_clip_attr)
            for op_old, op_new in zip(b_old.ops, b_new.ops):
                if op_old._desc is not None:
                    op_new._desc = copy.deepcopy(op_old._desc)
                else:
                    op_new._packed = op_old._packed
        if for_test:
            p._is_test = True
            for b in p.blocks:
                for i in range(len(b.ops) - 1, -1, -1):
                    role = b.ops[i].attr('op_role') or 0
                    if role & (OpRole.Backward | OpRole.Optimize | OpRole.LRSched):
                        b._remove_op(i)
                for op in b.ops:
                    if _op_has_attr(op.type, 'is_test'):
                        op._set_attr('is_test', True)
        p._edited()
        return p

    def _prune(self, targets):
        """Fluid's Program._prune(targets): a copy keeping only the ops `targets`
        (Variables, names or Operators: their outputs) need (rill_program_prune)."""
        return self._prune_with_input([], targets)

    def _prune_with_input(self, feeded_var_names, targets):
        """A pruned copy (rill_program_prune) computing `targets` from the variables
        named in `feeded_var_names` (the ops producing those are dropped)."""
        if not isinstance(targets, (list, tuple)):
            targets = [targets]
        names = []
        for t in targets:
            if isinstance(t, Operator):
                names.extend(t.output_arg_names)
            else:
                names.extend(_names(t))
        if not isinstance(feeded_var_names, (list, tuple)):
            feeded_var_names = [feeded_var_names]
        p = Program._from_c(self._h.prune(_names(list(feeded_var_names)), names))
        p.random_seed = self.random_seed
        return p

    def to_string(self, throw_on_error=False, with_details=False):
        return '\n'.join(b.to_string() for b in self.blocks)

    __str__ = to_string

    def __repr__(self):
        return '<rill.Program %d blocks, %d ops>' % (len(self.blocks),
                                                      sum(len(b.ops) for b in self.blocks))


# ------------------------------------------------------------ default programs ----

_main_program = Program()
_startup_program = Program()


def default_main_program():
    return _main_program


def default_startup_program():
    return _startup_program


def switch_main_program(program):
    global _main_program
    old = _main_program
    _main_program = program
    return old


def switch_startup_program(program):
    global _startup_program
    old = _startup_program
    _startup_program = program
    return old


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Layers inside append to `main_program` and their initializers to
    `startup_program`."""
    if not isinstance(main_program, Program):
        raise TypeError('program_guard: main_program must be a Program')
    if startup_program is not None and not isinstance(startup_program, Program):
        raise TypeError('program_guard: startup_program must be a Program')
    old_main = switch_main_program(main_program)
    old_startup = switch_startup_program(startup_program) if startup_program is not None else None
    try:
        yield
    finally:
        switch_main_program(old_main)
        if startup_program is not None:
            switch_startup_program(old_startup)


from .flags import require_version, set_flags, get_flags, device_guard  # noqa: E402,F401

from .core import load_op_library  # noqa: E402,F401
from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.framework', 'rill.framework')
