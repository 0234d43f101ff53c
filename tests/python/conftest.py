"""Shared fixtures of the rill Python tests: every test builds its programs in fresh
default programs, a fresh global scope and fresh unique names."""
import importlib.util
import os
import sys

import pytest

import rill

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _executors_on(text):
    """With RILL_TEST_EXECUTOR_PLACE=cuda:N, every Executor the tests make for the CPU
    (or for no place) runs on CUDA device N instead: scripts/run-tests.sh runs the
    control-flow, sequence and optimizer suites so on the emulated device, whose memory
    faults on any host read, to catch host code that reads a tensor where a device op
    left it."""
    kind, _, index = text.partition(':')
    if kind not in ('cuda', 'gpu'):
        raise ValueError('RILL_TEST_EXECUTOR_PLACE=%r: expected cuda:N' % text)
    place = rill.CUDAPlace(int(index or 0))
    from rill import executor
    made = executor.Executor.__init__

    def init(self, where=None, *args, **kwargs):
        if where is None or isinstance(where, rill.CPUPlace):
            where = place
        made(self, where, *args, **kwargs)

    executor.Executor.__init__ = init


if os.environ.get('RILL_TEST_EXECUTOR_PLACE'):
    _executors_on(os.environ['RILL_TEST_EXECUTOR_PLACE'])
MODELS = os.path.join(ROOT, '..', 'shared', 'models')
EXAMPLES = os.path.join(ROOT, 'examples')


def load_script(path, name, folder=None):
    """The script at `path` as module `name`, with `folder` (if any) on the path while
    it loads."""
    if folder:
        sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        if folder:
            sys.path.remove(folder)


def load_example(path, name):
    """The example script examples/<path> as module `name`, with its folder on the path
    while it loads (for progress.py and device.py)."""
    return load_script(os.path.join(EXAMPLES, path), name, EXAMPLES)


@pytest.fixture(autouse=True)
def fresh_programs():
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup), rill.unique_name.guard(), \
            rill.scope_guard(rill.Scope()):
        rill.framework._root_scope['children'].clear()
        yield
