#!/usr/bin/env python3
"""Draws doc/design/distributed.md's picture: a small MLP (16-1024-1, SGD) transpiled for
2 pservers and 2 trainers; trainer 0's program and pserver 0's program, each drawn by
`rill dot`, side by side in one graph, with the trainer's send and recv ops joined to the
pserver's listen_and_serv.

    RILL_LIB=build/librill.so PYTHONPATH=python \\
        python3 scripts/dist_picture.py --rill build/rill [--dot FILE.dot] OUT.svg

(`make dist-picture` writes doc/design/distributed.svg.) Needs Graphviz's `dot`."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import rill as fluid

PSERVERS = '127.0.0.1:6170,127.0.0.1:6171'


def programs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name='x', shape=[16], dtype='float32')
        y = fluid.layers.data(name='y', shape=[1], dtype='float32')
        h = fluid.layers.fc(x, size=1024, act='relu')
        pred = fluid.layers.fc(h, size=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(0.01).minimize(loss)
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=PSERVERS, trainers=2, startup_program=startup)
    return t.get_trainer_program(), t.get_pserver_program(PSERVERS.split(',')[0])


def rill_dot(rill, prog, tmp, name):
    path = os.path.join(tmp, name + '.pdmodel')
    with open(path, 'wb') as f:
        f.write(prog.serialize_to_string())
    return subprocess.run([rill, 'dot', path], check=True, capture_output=True,
                          text=True).stdout


def body(dot_text, prefix):
    """The statements of one `rill dot` graph, its node and cluster names prefixed."""
    lines = dot_text.rstrip().splitlines()
    assert lines[0].startswith('digraph') and lines[-1] == '}', 'not a rill dot graph'
    stmts = [l for l in lines[1:-1]
             if not re.match(r'\s*(compound|rankdir)=|\s*(node|edge) \[', l)]
    ids = re.compile(r'\b(v\d+_\d+|op\d+_\d+|cluster_b\d+)\b')
    return [ids.sub(lambda m: (('cluster_' + prefix + m.group(1)[8:])
                               if m.group(1).startswith('cluster_') else prefix + m.group(1)),
                    l) for l in stmts]


def first_op(stmts, op_type):
    for l in stmts:
        m = re.match(r'\s*(\w+) \[shape=box, label="%s\\n#' % re.escape(op_type), l)
        if m:
            return m.group(1)
    raise SystemExit('no %s op in the graph' % op_type)


def combine(trainer_dot, pserver_dot):
    t, p = body(trainer_dot, 't_'), body(pserver_dot, 'p_')
    send, recv, las = first_op(t, 'send'), first_op(t, 'recv'), first_op(p, 'listen_and_serv')
    out = ['digraph "distributed" {', '  compound=true;', '  rankdir=TB;',
           '  node [fontname="Helvetica", fontsize=10];',
           '  edge [fontname="Helvetica", fontsize=8];',
           '  subgraph cluster_trainer {',
           '    label="trainer program (trainer 0 of 2)"; fontsize=14; color=blue;']
    out += ['  ' + l for l in t]
    out += ['  }', '  subgraph cluster_pserver {',
            '    label="pserver program (127.0.0.1:6170, 1 of 2)"; fontsize=14; color=red;']
    out += ['  ' + l for l in p]
    out += ['  }',
            '  %s -> %s [style=bold, color=blue, label="gradient blocks\\n(ZeroMQ)"];'
            % (send, las),
            '  %s -> %s [style=bold, color=red, label="parameter blocks\\n(ZeroMQ)"];'
            % (las, recv),
            '}']
    return '\n'.join(out) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rill', default='build/rill', help='the rill CLI')
    ap.add_argument('--dot', help='also write the Graphviz source here')
    ap.add_argument('out', help='the SVG to write')
    a = ap.parse_args()
    trainer, pserver = programs()
    with tempfile.TemporaryDirectory() as tmp:
        text = combine(rill_dot(a.rill, trainer, tmp, 'trainer'),
                       rill_dot(a.rill, pserver, tmp, 'pserver'))
    if a.dot:
        with open(a.dot, 'w') as f:
            f.write(text)
    svg = subprocess.run(['dot', '-Tsvg'], input=text, check=True, capture_output=True,
                         text=True).stdout
    svg = re.sub(r'\n?<!--.*?-->', '', svg, flags=re.S)  # Graphviz's per-node comments
    with open(a.out, 'w') as f:
        f.write(svg)
    print('wrote %s (%d bytes)' % (a.out, len(svg)))


if __name__ == '__main__':
    sys.exit(main())
