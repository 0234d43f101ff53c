"""python -m rill.compat SCRIPT [ARGS]: run a PaddlePaddle Fluid 1.x script with rill
standing in for paddle, without editing it."""
import os
import runpy
import sys

from . import install

USAGE = 'usage: python -m rill.compat SCRIPT [ARGS...]\n' \
        '       python -m rill.compat -m MODULE [ARGS...]\n'


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ('-h', '--help'):
        sys.stderr.write(USAGE)
        return 0 if argv else 2
    if argv[0] == '-m':
        if len(argv) < 2:
            sys.stderr.write(USAGE)
            return 2
        install()
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name='__main__', alter_sys=True)
        return 0
    script = argv[0]
    if not os.path.isfile(script):
        sys.stderr.write("rill.compat: cannot open script '%s'\n" % script)
        return 2
    install()
    sys.argv = argv
    # As `python SCRIPT` does: the script's directory first on the path.
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name='__main__')
    return 0


if __name__ == '__main__':
    sys.exit(main())
