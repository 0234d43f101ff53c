"""A rill.Program is a live C program: real programs parse, read back from C and
serialize unchanged; edits made from Python reach the C program at once; transforms
run in place; attribute values of every type read back from C as they were set."""
import os

import numpy as np
import pytest

import rill
from rill import core
from conftest import ROOT

PROGRAMS = os.path.join(ROOT, '..', 'shared', 'programs')
FILES = sorted(os.listdir(PROGRAMS)) if os.path.isdir(PROGRAMS) else []


@pytest.mark.parametrize('name', FILES)
def test_real_programs_read_from_c_and_serialize_unchanged(name):
    data = open(os.path.join(PROGRAMS, name), 'rb').read()
    canonical = core.CProgram.parse(data).serialize()
    p = rill.Program.parse_from_string(data)
    assert p.serialize_to_string() == canonical
    text = str(p)
    c = core.CProgram.parse(data)
    assert text.count('{ // block') == c.num_blocks()
    assert sum(len(b.ops) for b in p.blocks) == sum(c.num_ops(b) for b in range(c.num_blocks()))
    # every op's description reads back, and a clone serializes the same
    for b in p.blocks:
        for op in b.ops:
            assert op.type
            op.all_attrs()
    assert p.clone().serialize_to_string() == canonical
    # the descriptions of a whole block, read in one call, are those read one by one
    for b in range(c.num_blocks()):
        f = c.vars_fields(b)
        assert len(f) == core.VAR_FIELDS * c.num_vars(b)
        for i in range(c.num_vars(b)):
            assert core.var_desc_of(f, i * core.VAR_FIELDS) == c.read_var(b, i)
        assert c.vars_fields(b, c.num_vars(b)) == []


def test_an_added_op_describes_itself_as_given():
    main = rill.Program()
    with rill.program_guard(main, rill.Program()):
        x = rill.data('x', [-1, 3], 'float32')
        y = rill.layers.scale(x, 0.1)
    op = main.global_block().ops[-1]
    assert op._desc is None and op._packed, 'kept packed until asked for'
    assert op.attr('scale') == 0.1, 'the value given, not its float32 rounding'
    assert op.input('X') == [x.name] and op.output('Out') == [y.name]
    assert op.desc == core.unpack_op(core.pack_op('scale', op.desc['inputs'],
                                                  op.desc['outputs'], op.desc['attrs']))
    with rill.program_guard(main, rill.Program()):
        z = rill.layers.scale(y, 0.2)
    assert main.clone().global_block().ops[-1].attr('scale') == 0.2
    assert main.clone().global_block().ops[-2].attr('scale') == 0.1
    fresh = rill.Program.parse_from_string(main.serialize_to_string())
    assert fresh.global_block().ops[-1].attr('scale') == pytest.approx(0.2, rel=1e-7)
    assert z.shape == (-1, 3)


def test_list_attributes_typed_as_attr_type_of_types_them():
    import numpy as np
    from rill import framework
    blk = rill.Program().global_block()
    for v in ([1, 2], (3, -4), [1, 2 ** 40], [-2 ** 31, 2 ** 31 - 1], [2 ** 31], ['a', 'b'],
              ('c',), [1, 0.5], [], [np.int64(3)], [True, False]):
        got = dict((a[0], a[1:]) for a in blk._make_op('scale', None, None, {'a': v}).desc['attrs'])
        plain = framework._plain(v)
        assert got['a'] == (core.attr_type_of(plain), plain), v


def test_packed_op_types_attributes_as_make_op_does():
    import numpy as np
    prog = rill.Program()
    blk = prog.global_block()
    values = (1, -2 ** 31, 2 ** 31, 2 ** 40, 0.1, 1e-30, True, False, 'NCHW', '', np.float32(0.5),
              np.int64(7), [1, 2], (3, -4), [1, 2 ** 40], [2 ** 31], ['a', 'b'], ('c',),
              [1, 0.5], [], [np.int64(3)], [True, False], np.arange(3))
    for v in values:
        want = blk._make_op('scale', {'X': 'x'}, {'Out': ['y', 'z']}, {'a': v}).desc
        ins, outs = [], []
        op = blk._packed_op('scale', {'X': 'x'}, {'Out': ['y', 'z']}, {'a': v}, ins, outs)
        assert op.desc == want, v
        assert (ins, outs) == (['x'], ['y', 'z'])
    with prog._optimized_guard(['w', 'w@GRAD']), rill.name_scope('s'):
        want = blk._make_op('sgd', None, None, {'b': None}).desc
        got = blk._packed_op('sgd', None, None, {'b': None}, [], []).desc
    assert got == want
    assert dict((a[0], a[2]) for a in got['attrs']) == {
        'op_role': 2, 'op_role_var': ['w', 'w@GRAD'], 'op_namescope': '/s/'}
    with pytest.raises(ValueError, match='NUL'):
        blk._packed_op('scale', None, None, {'a': 'x\0y'}, [], [])
    with pytest.raises(TypeError, match='a Variable or a name'):
        blk._packed_op('scale', {'X': 3}, None, None, [], [])


def test_dtype_codes_are_cached_by_class_and_value():
    import numpy as np
    for _ in range(2):
        assert core.dtype_code('float32') == core.dtype_code(np.float32) == 5
        assert core.dtype_code(np.dtype('int64')) == core.dtype_code('long') == 3
        for bad in (True, 5.0, 'nope', [5]):
            with pytest.raises(TypeError, match='unsupported dtype'):
                core.dtype_code(bad)
    with pytest.raises(ValueError, match='unknown dtype number'):
        core.dtype_code(99)


def test_attribute_types_from_python_values():
    assert core.attr_type_of(True) == core.ATTR_BOOLEAN
    assert core.attr_type_of(3) == core.ATTR_INT
    assert core.attr_type_of(2 ** 40) == core.ATTR_LONG
    assert core.attr_type_of(0.5) == core.ATTR_FLOAT
    assert core.attr_type_of('NCHW') == core.ATTR_STRING
    assert core.attr_type_of([1, 2]) == core.ATTR_INTS
    assert core.attr_type_of([1, 2 ** 40]) == core.ATTR_LONGS
    assert core.attr_type_of([1, 0.5]) == core.ATTR_FLOATS
    assert core.attr_type_of(['a']) == core.ATTR_STRINGS
    assert core.attr_type_of([True, False]) == core.ATTR_BOOLEANS
    with pytest.raises(TypeError):
        core.attr_type_of({'a': 1})


def test_attributes_read_back_from_c_with_their_types():
    main = rill.Program()
    with rill.program_guard(main, rill.Program()):
        x = rill.data('x', [-1, 3], 'float32')
        y = rill.layers.scale(x, 0.5)
    op = main.global_block().ops[-1]
    values = {'ints': [-5, 7], 'longs': [1, 2 ** 40], 'floats': [0.25, -1.5], 'flag': True,
              'name': 'NCHW', 'names': ['a', 'b'], 'big': 2 ** 40, 'bools': [True, False]}
    for k, v in values.items():
        op._set_attr(k, v)
    fresh = rill.Program.parse_from_string(main.serialize_to_string())
    got = fresh.global_block().ops[-1].all_attrs()
    for k, v in values.items():
        assert got[k] == v, k
    assert got['scale'] == 0.5
    assert fresh.global_block().var(y.name).shape == (-1, 3)


def test_edits_reach_the_c_program_at_once():
    main = rill.Program()
    blk = main.global_block()
    v = blk.create_var(name='v', shape=[2, 3], dtype='int64', lod_level=1)
    v.stop_gradient = True
    v.need_check_feed = True
    got = main._c().read_var(0, 0)
    assert (got['name'], got['shape'], got['lod_level']) == ('v', [2, 3], 1)
    assert got['dtype'] == core.dtype_code('int64')
    assert got['stop_gradient'] and got['need_check_feed']
    v._set_meta(core.dtype_code('float32'), [4])
    assert main._c().read_var(0, 0)['shape'] == [4]
    blk._remove_var('v')
    assert main._c().num_vars(0) == 0
    sub = main._create_block()
    assert main._c().num_blocks() == 2 and main._c().block_parent(sub.idx) == 0


def test_backward_runs_in_place_and_keeps_the_objects_users_hold():
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = rill.data('x', [-1, 4], 'float32')
        loss = rill.layers.mean(rill.layers.fc(x, 2))
        ops_before = list(main.global_block().ops)
        handle = main._c()
        params_grads = rill.optimizer.SGD(0.1).minimize(loss)[1]
    assert main._c() is handle, 'the same C program, edited in place'
    blk = main.global_block()
    assert blk.ops[:len(ops_before)] == ops_before
    assert blk.var('x') is x and blk.var(loss.name) is loss
    types = [op.type for op in blk.ops]
    assert 'mul_grad' in types and types[-1] == 'sgd'
    assert len(types) == handle.num_ops(0)
    for p, g in params_grads:
        assert g.name == p.name + '@GRAD' and g.shape == p.shape


def test_variables_a_transform_adds_are_described_when_first_asked_for():
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = rill.data('x', [-1, 4], 'float32')
        h = rill.layers.fc(x, 3)
        loss = rill.layers.mean(h)
        rill.optimizer.SGD(0.1).minimize(loss)
    blk = main.global_block()
    c = main._c()
    g = blk.vars[h.name + '@GRAD']
    assert g._fields is not None, 'not decoded by the backward pass'
    want = c.read_var_named(0, g.name)
    assert g.name == want['name']
    assert g.desc == want and g.shape == (-1, 3) and g.dtype == np.float32
    assert g._fields is None
    # an op that writes it later: the decoded fields, then its inferred tensor
    g2 = blk.vars[x.name + '@GRAD'] if x.name + '@GRAD' in blk.vars else None
    lazy = [v for v in blk.vars.values() if v._fields is not None]
    assert lazy, 'other gradients are still undecoded'
    v = lazy[0]
    v.stop_gradient = True
    assert c.read_var_named(0, v.name)['stop_gradient'] is True
    assert v.desc == c.read_var_named(0, v.name)
    assert g2 is None or g2.shape == (-1, 4)
    # a parsed program's variables describe themselves the same way
    parsed = rill.Program.parse_from_string(main.serialize_to_string())
    for name, v in parsed.global_block().vars.items():
        want = c.read_var_named(0, name)
        want.pop('is_data', None)
        assert v.desc == want, name
        assert isinstance(v, rill.framework.Parameter) == want['is_parameter']


def test_a_refused_append_leaves_program_and_c_program_as_they_were():
    main = rill.Program()
    with rill.program_guard(main, rill.Program()):
        x = rill.data('x', [-1, 4], 'float32')
        w = main.global_block().create_parameter('w', [5, 2])
        blk = main.global_block()
        n_vars = main._c().num_vars(0)
        out = blk.create_var(name='out', infer=True)
        with pytest.raises(rill.InvalidArgumentError, match=r'mul.*appended to block 0'):
            blk.append_op('mul', inputs={'X': x, 'Y': w}, outputs={'Out': out})
    assert len(blk.ops) == 0 == main._c().num_ops(0)
    assert main._c().num_vars(0) == n_vars == len(main.global_block().vars)
