"""The Python ProgramDesc codec (rill.proto) on real programs: decoding then encoding
gives a program the C codec reads as the same one, and str() works on every one."""
import os

import pytest

import rill
from rill import core, proto
from conftest import ROOT

PROGRAMS = os.path.join(ROOT, '..', 'shared', 'programs')
FILES = sorted(os.listdir(PROGRAMS)) if os.path.isdir(PROGRAMS) else []


@pytest.mark.parametrize('name', FILES)
def test_python_codec_round_trips_real_programs(name):
    data = open(os.path.join(PROGRAMS, name), 'rb').read()
    desc = proto.decode_program(data)
    again = proto.encode_program(desc)
    assert proto.decode_program(again) == desc
    # The C codec reads both as the same program: its serialization is canonical.
    assert core.CProgram.parse(again).serialize() == core.CProgram.parse(data).serialize()
    p = rill.Program.parse_from_string(data)
    text = str(p)
    assert text.count('{ // block') == len(desc['blocks'])
    assert sum(len(b.ops) for b in p.blocks) == sum(len(b['ops']) for b in desc['blocks'])


def test_attribute_types_from_python_values():
    assert proto.attr_type_of(True) == proto.BOOLEAN
    assert proto.attr_type_of(3) == proto.INT
    assert proto.attr_type_of(2 ** 40) == proto.LONG
    assert proto.attr_type_of(0.5) == proto.FLOAT
    assert proto.attr_type_of('NCHW') == proto.STRING
    assert proto.attr_type_of([1, 2]) == proto.INTS
    assert proto.attr_type_of([1, 2 ** 40]) == proto.LONGS
    assert proto.attr_type_of([1, 0.5]) == proto.FLOATS
    assert proto.attr_type_of(['a']) == proto.STRINGS
    assert proto.attr_type_of([True, False]) == proto.BOOLEANS
    with pytest.raises(TypeError):
        proto.attr_type_of({'a': 1})


def test_negative_and_packed_values_decode():
    blk = {'idx': 0, 'parent_idx': -1, 'vars': [proto.new_var('v', shape=[-1, 3])],
           'ops': [{'type': 'scale', 'inputs': [('X', ['v'])], 'outputs': [('Out', ['v'])],
                    'attrs': [('ints', proto.INTS, [-5, 7], b''),
                              ('f64', proto.FLOAT64, -0.25, b'')],
                    'is_target': None, 'unknown': b''}],
           'forward_block_idx': None, 'unknown': b''}
    desc = proto.decode_program(proto.encode_program({'blocks': [blk], 'unknown': b''}))
    assert desc['blocks'][0]['parent_idx'] == -1
    assert desc['blocks'][0]['vars'][0]['shape'] == [-1, 3]
    attrs = {a[0]: a[2] for a in desc['blocks'][0]['ops'][0]['attrs']}
    assert attrs == {'ints': [-5, 7], 'f64': -0.25}
