"""Fluid 1.x's DataFeedDesc: the description of a MultiSlot data file (which slots a line
holds, their types, which are dense and which are used, the batch size, the pipe command)
in the protobuf text format of Paddle's data_feed.proto.

rill reads and writes that text itself (`_Message`, below): the messages are small (a
DataFeedDesc, its MultiSlotDesc and Slots; the TrainerDesc of trainer_desc.py) and numpy
stays the only dependency."""

__all__ = ['DataFeedDesc']

# message -> [(field, kind, repeated, default or the message type of a message field)],
# in field-number order, which is the order the text format writes them in.
_SCHEMAS = {
    'Slot': [('name', 'string', False, ''), ('type', 'string', False, ''),
             ('is_dense', 'bool', False, False), ('is_used', 'bool', False, False),
             ('shape', 'int32', True, None)],
    'MultiSlotDesc': [('slots', 'message', True, 'Slot')],
    'DataFeedDesc': [('name', 'string', False, ''), ('batch_size', 'int32', False, 32),
                     ('multi_slot_desc', 'message', False, 'MultiSlotDesc'),
                     ('pipe_command', 'string', False, ''),
                     ('thread_num', 'int32', False, 0), ('rank_offset', 'string', False, ''),
                     ('pv_batch_size', 'int32', False, 32)],
    'FetchConfig': [('fetch_var_names', 'string', True, None),
                    ('fetch_var_str_format', 'string', True, None),
                    ('print_period', 'int32', False, 100)],
    'TrainerDesc': [('class_name', 'string', False, ''),
                    ('device_worker_name', 'string', False, ''),
                    ('thread_num', 'int32', False, 0), ('binding_cpu', 'bool', False, False),
                    ('filelist', 'string', True, None), ('debug', 'bool', False, False),
                    ('fetch_config', 'message', False, 'FetchConfig'),
                    ('use_cvm', 'bool', False, False), ('dump_slot', 'bool', False, False),
                    ('scale_datanorm', 'float', False, -1.0), ('mpi_rank', 'int32', False, -1),
                    ('dump_fields_path', 'string', False, ''),
                    ('dump_fields', 'string', True, None),
                    ('dump_converter', 'string', False, ''),
                    ('dump_param', 'string', True, None), ('mpi_size', 'int32', False, -1),
                    ('dump_file_num', 'int32', False, 16),
                    ('check_nan_var_names', 'string', True, None),
                    ('no_cvm', 'bool', False, False), ('thread_barrier', 'bool', False, False),
                    ('loss_names', 'string', True, None)],
}
_REQUIRED = {'Slot': ('name', 'type')}


class _Message(object):
    """One protobuf message in proto2 terms: a field is set or not (a set field is
    written even when it holds its default), repeated fields are lists."""

    def __init__(self, type_name):
        object.__setattr__(self, '_type', type_name)
        object.__setattr__(self, '_fields', {f[0]: f for f in _SCHEMAS[type_name]})
        object.__setattr__(self, '_set', {})

    def __getattr__(self, name):
        f = self._fields.get(name)
        if f is None:
            raise AttributeError('%s has no field %r' % (self._type, name))
        if name not in self._set:
            if f[2]:
                self._set[name] = []
            elif f[1] == 'message':
                self._set[name] = _Message(f[3])
            else:
                return f[3]
        return self._set[name]

    def __setattr__(self, name, value):
        f = self._fields.get(name)
        if f is None or f[2] or f[1] == 'message':
            raise AttributeError('%s: cannot assign field %r' % (self._type, name))
        self._set[name] = _check_scalar(self._type, name, f[1], value)

    def has(self, name):
        v = self._set.get(name)
        if isinstance(v, list):
            return bool(v)
        if isinstance(v, _Message):
            return v.has_any()
        return name in self._set

    def has_any(self):
        return any(self.has(n) for n in self._set)

    def add(self, name):
        """A new element of a repeated message field."""
        m = _Message(self._fields[name][3])
        getattr(self, name).append(m)
        return m

    def to_text(self, indent=''):
        out = []
        for name, kind, repeated, _ in _SCHEMAS[self._type]:
            if not self.has(name):
                continue
            values = self._set[name] if repeated else [self._set[name]]
            for v in values:
                if kind == 'message':
                    out.append('%s%s {\n%s%s}\n' % (indent, name, v.to_text(indent + '  '),
                                                   indent))
                else:
                    out.append('%s%s: %s\n' % (indent, name, _format_scalar(kind, v)))
        return ''.join(out)

    def check_required(self, where):
        for name in _REQUIRED.get(self._type, ()):
            if name not in self._set:
                raise ValueError('%s: %s misses its required field %r' % (where, self._type,
                                                                         name))
        for name, kind, repeated, _ in _SCHEMAS[self._type]:
            if kind == 'message' and name in self._set:
                for m in (self._set[name] if repeated else [self._set[name]]):
                    m.check_required(where)


def _check_scalar(msg, name, kind, value):
    if kind == 'string':
        if not isinstance(value, str):
            raise TypeError('%s.%s is a string, got %r' % (msg, name, value))
        return value
    if kind == 'bool':
        return bool(value)
    if kind == 'float':
        return float(value)
    if isinstance(value, bool) or int(value) != value:
        raise TypeError('%s.%s is an integer, got %r' % (msg, name, value))
    value = int(value)
    if not -2 ** 31 <= value < 2 ** 31:
        raise ValueError('%s.%s: %d does not fit an int32' % (msg, name, value))
    return value


def _format_scalar(kind, v):
    if kind == 'string':
        return '"%s"' % v.encode('unicode_escape').decode('ascii').replace('"', '\\"')
    if kind == 'bool':
        return 'true' if v else 'false'
    if kind == 'float':
        return '%.9g' % v
    return '%d' % v


def _tokens(text, where):
    """(kind, value, line) of the text format: names, ':', '{', '}', strings, numbers."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == '\n':
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif c == '#':
            while i < n and text[i] != '\n':
                i += 1
        elif c in ':{}':
            yield c, c, line
            i += 1
        elif c in '"\'':
            j, buf = i + 1, []
            while j < n and text[j] != c:
                if text[j] == '\n':
                    break
                if text[j] == '\\' and j + 1 < n:
                    buf.append(text[j:j + 2])
                    j += 2
                else:
                    buf.append(text[j])
                    j += 1
            if j >= n or text[j] != c:
                raise ValueError('%s:%d: unterminated string' % (where, line))
            raw = ''.join(buf)
            yield 'string', raw.encode('latin-1', 'backslashreplace').decode(
                'unicode_escape') if '\\' in raw else raw, line
            i = j + 1
        else:
            j = i
            while j < n and (text[j].isalnum() or text[j] in '_-+.'):
                j += 1
            if j == i:
                raise ValueError('%s:%d: unexpected character %r' % (where, line, c))
            yield 'word', text[i:j], line
            i = j


def _parse_into(msg, toks, where, closing):
    for kind, value, line in toks:
        if kind == '}':
            if closing:
                return
            raise ValueError("%s:%d: '}' without a matching '{'" % (where, line))
        if kind != 'word':
            raise ValueError('%s:%d: expected a field name, got %r' % (where, line, value))
        f = msg._fields.get(value)
        if f is None:
            raise ValueError('%s:%d: %s has no field %r' % (where, line, msg._type, value))
        name, fkind, repeated, _ = f
        nxt = next(toks, (None, None, line))
        if fkind == 'message':
            if nxt[0] == ':':
                nxt = next(toks, (None, None, line))
            if nxt[0] != '{':
                raise ValueError("%s:%d: expected '{' after %s" % (where, line, name))
            sub = msg.add(name) if repeated else getattr(msg, name)
            msg._set.setdefault(name, sub)
            _parse_into(sub, toks, where, True)
            continue
        if nxt[0] != ':':
            raise ValueError("%s:%d: expected ':' after %s" % (where, line, name))
        vkind, v, _ = next(toks, (None, None, line))
        if fkind == 'string':
            if vkind != 'string':
                raise ValueError('%s:%d: %s takes a quoted string, got %r' % (where, line,
                                                                             name, v))
        elif vkind != 'word':
            raise ValueError('%s:%d: %s takes a %s, got %r' % (where, line, name, fkind, v))
        elif fkind == 'bool':
            if v not in ('true', 'false', '1', '0', 't', 'f', 'True', 'False'):
                raise ValueError('%s:%d: %s takes true or false, got %r' % (where, line,
                                                                           name, v))
            v = v in ('true', '1', 't', 'True')
        else:
            try:
                v = float(v) if fkind == 'float' else int(v, 0)
            except ValueError:
                raise ValueError('%s:%d: %s takes a%s %s, got %r'
                                 % (where, line, name, 'n' if fkind == 'int32' else '',
                                    'integer' if fkind == 'int32' else fkind, v)) from None
        if repeated:
            getattr(msg, name).append(_check_scalar(msg._type, name, fkind, v))
        else:
            setattr(msg, name, v)
    if closing:
        raise ValueError("%s: a '{' is not closed" % where)


def parse_text(type_name, text, where='<text>'):
    """The message of `type_name` that protobuf text `text` describes."""
    msg = _Message(type_name)
    _parse_into(msg, _tokens(text, where), where, False)
    msg.check_required(where)
    return msg


class DataFeedDesc(object):
    """DataFeedDesc(proto_file): a data feed described in protobuf text, as
    paddle/fluid/framework/data_feed.proto defines it, e.g.

        name: "MultiSlotDataFeed"
        batch_size: 2
        multi_slot_desc {
            slots { name: "words" type: "uint64" is_dense: false is_used: true }
            slots { name: "label" type: "uint64" is_dense: false is_used: true }
        }

    pipe_command is "cat" unless the file sets it. set_batch_size, set_dense_slots and
    set_use_slots change it; desc() gives the text back."""

    def __init__(self, proto_file):
        with open(proto_file, 'r') as f:
            text = f.read()
        self.proto_desc = _Message('DataFeedDesc')
        self.proto_desc.pipe_command = 'cat'
        _parse_into(self.proto_desc, _tokens(text, proto_file), proto_file, False)
        self.proto_desc.check_required(proto_file)
        self._name_to_index = {s.name: i for i, s in
                               enumerate(self.proto_desc.multi_slot_desc.slots)}

    def _slot(self, name, what):
        if self.proto_desc.name != 'MultiSlotDataFeed':
            raise ValueError('Only MultiSlotDataFeed needs %s, please check your '
                             'datafeed.proto' % what)
        i = self._name_to_index.get(name)
        if i is None:
            raise KeyError('DataFeedDesc.%s: no slot named %r (slots: %s)'
                           % (what, name, ', '.join(self._name_to_index) or 'none'))
        return self.proto_desc.multi_slot_desc.slots[i]

    def set_batch_size(self, batch_size):
        """The number of instances of a batch."""
        self.proto_desc.batch_size = batch_size

    def set_dense_slots(self, dense_slots_name):
        """Marks the named slots dense (fed as a tensor of the slot's shape); slots are
        sparse (fed as LoD tensors) unless set so."""
        for name in dense_slots_name:
            self._slot(name, 'set_dense_slots').is_dense = True

    def set_use_slots(self, use_slots_name):
        """Marks the named slots used (fed to the program); the others are read past."""
        for name in use_slots_name:
            self._slot(name, 'set_use_slots').is_used = True

    def desc(self):
        """The description in protobuf text format."""
        return self.proto_desc.to_text()
