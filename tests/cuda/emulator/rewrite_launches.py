"""Rewrites a .cu file's kernel launches for the emulated CUDA backend:
kernel<<<grid, threads, shared, stream>>>(args);  ->  EMU_LAUNCH(grid, threads, stream, kernel(args));
(tests/cuda/emulator/prelude.h). Usage: rewrite_launches.py IN.cu OUT.cpp"""
import re
import sys


def balanced(text, at):
    """The index just past the parenthesis group that opens at text[at]."""
    depth = 0
    for i in range(at, len(text)):
        depth += {'(': 1, ')': -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    raise ValueError('unbalanced parentheses at offset %d' % at)


def arguments(config):
    """A launch configuration's arguments, split at its top-level commas."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(config):
        depth += {'(': 1, ')': -1}.get(c, 0)
        if c == ',' and depth == 0:
            parts.append(config[start:i].strip())
            start = i + 1
    parts.append(config[start:].strip())
    return parts


def rewrite(text):
    out, pos = [], 0
    launch = re.compile(r'([A-Za-z_][\w:]*(?:<[^<>;()]*>)?)\s*<<<(.*?)>>>\s*\(', re.S)
    while True:
        m = launch.search(text, pos)
        if not m:
            out.append(text[pos:])
            return ''.join(out)
        config = arguments(m.group(2))
        stream = config[3] if len(config) > 3 else '0'
        args_end = balanced(text, m.end() - 1)
        if text[args_end:].lstrip()[:1] != ';':
            raise ValueError('a launch not ending its statement at offset %d' % m.start())
        out.append(text[pos:m.start()])
        if len(config) < 2 or (len(config) > 2 and config[2] not in ('0', '0u')):
            raise ValueError('a launch without a thread count, or with dynamic shared memory, at offset %d'
                             % m.start())
        out.append('EMU_LAUNCH(%s, %s, %s, %s%s)' % (config[0], config[1], stream, m.group(1),
                                                      text[m.end() - 1:args_end]))
        pos = args_end


if __name__ == '__main__':
    with open(sys.argv[1]) as f:
        text = f.read()
    with open(sys.argv[2], 'w') as f:
        f.write('// Generated from %s by rewrite_launches.py.\n' % sys.argv[1])
        f.write(rewrite(text))
