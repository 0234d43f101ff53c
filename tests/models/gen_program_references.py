"""Prints PaddlePaddle 1.8.5's outputs of two shared programs with the synthetic
parameters and inputs of tests/models/test_program_ops.c, as the C arrays that test
holds: rna_predictions__model__ (12 `lstm` ops: stacked, reversed, peepholes) and
bondh_lac_gru_crf__model__ (a bidirectional pair of `gru` ops, then crf_decoding). Run
with the Paddle 1.8.5 interpreter (tests/python/paddle18/README.md):
PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python python gen_program_references.py"""
import os
import shutil
import tempfile

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.proto import framework_pb2

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, '..', '..', '..', 'shared', 'programs')
LENS = [7, 12, 3, 12, 1]
FP32, LOD_TENSOR = 5, 7


def lcg_params(desc, scale):
    """The C test's parameters: every persistable float32 LoD tensor of block 0 in the
    file's order, from one LCG (seed 7) over all of them, in [-scale / 2, scale / 2)."""
    seed, out = 7, {}
    for v in desc.blocks[0].vars:
        t = v.type
        if not v.persistable or t.type != LOD_TENSOR or t.lod_tensor.tensor.data_type != FP32:
            continue
        dims = list(t.lod_tensor.tensor.dims)
        vals = np.empty(int(np.prod(dims)), 'float32')
        for k in range(vals.size):
            seed = (seed * 1103515245 + 12345) & 0xffffffff
            vals[k] = np.float32((np.float32((seed >> 16) % 1000) / np.float32(1000.0)
                                  - np.float32(0.5)) * np.float32(scale))
        out[v.name] = vals.reshape(dims)
    return out


def run(name, scale, feeds):
    """Paddle's output of program `name` with lcg_params(scale) on `feeds` ({name: 1-D
    int64 ids}, each with the LoD of LENS)."""
    src = os.path.join(PROGRAMS, name)
    desc = framework_pb2.ProgramDesc()
    with open(src, 'rb') as f:
        desc.ParseFromString(f.read())
    d = tempfile.mkdtemp()
    try:
        shutil.copy(src, os.path.join(d, '__model__'))
        prog = fluid.Program.parse_from_string(desc.SerializeToString())
        place = fluid.CPUPlace()
        exe = fluid.Executor(place)
        params = lcg_params(desc, scale)
        with fluid.scope_guard(fluid.Scope()):
            for n, arr in params.items():
                fluid.global_scope().var(n).get_tensor().set(arr, place)
            fluid.io.save_vars(exe, d, main_program=prog,
                               vars=[prog.global_block().var(n) for n in params])
        with fluid.scope_guard(fluid.Scope()):
            prog, names, fetches = fluid.io.load_inference_model(d, exe)
            feed = {}
            for n in names:
                ids = feeds[n]
                if len(prog.global_block().var(n).shape) == 2:
                    ids = ids.reshape(-1, 1)
                feed[n] = fluid.create_lod_tensor(ids, [LENS], place)
            out, = exe.run(prog, feed=feed, fetch_list=fetches, return_numpy=False)
    finally:
        shutil.rmtree(d)
    return names, out


def main():
    t = sum(LENS)
    names, out = run('rna_predictions__model__', 0.2,
                     {'seq': np.array([k % 6 for k in range(t)], 'int64'),
                      'dot': np.array([(3 * k + 1) % 5 for k in range(t)], 'int64')})
    vals = np.array(out).reshape(-1)
    print('/* Paddle 1.8.5: %s, LoD %s */' % (names, out.lod()))
    print('static const float rna_paddle[%d] = {' % vals.size)
    for i in range(0, vals.size, 6):
        print('    ' + ', '.join('%.9ef' % v for v in vals[i:i + 6]) + ',')
    print('};')
    names, out = run('bondh_lac_gru_crf__model__', 2.0,
                     {'words': np.array([(37 * k + 11) % 20942 for k in range(t)], 'int64')})
    vals = np.array(out).reshape(-1)
    print('/* Paddle 1.8.5: %s, LoD %s */' % (names, out.lod()))
    print('static const int64_t bondh_paddle[%d] = {' % vals.size)
    for i in range(0, vals.size, 12):
        print('    ' + ', '.join('%d' % v for v in vals[i:i + 12]) + ',')
    print('};')


if __name__ == '__main__':
    main()
