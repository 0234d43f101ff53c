"""Run Fluid 1.x scripts unchanged: `import paddle`, `import paddle.fluid as fluid`,
`paddle.batch`, `paddle.reader` and `paddle.dataset` resolve to rill.

`install()` puts a finder first on `sys.meta_path` that answers every module name under
`paddle` with the rill module standing for it (`paddle.fluid.layers` is `rill.layers`);
`python -m rill.compat SCRIPT [ARGS]` installs it and runs SCRIPT as `__main__`."""
import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ['install', 'uninstall', 'target_of']

# Longest prefix first: the paddle name and the rill module that stands for it.
_PREFIXES = (
    ('paddle.fluid', 'rill'),
    ('paddle.dataset', 'rill.dataset'),
    ('paddle.reader', 'rill.compat.reader'),
    ('paddle', 'rill.compat.paddle'),
)


def target_of(fullname):
    """The rill module name standing for the paddle module `fullname`, or None."""
    for prefix, target in _PREFIXES:
        if fullname == prefix:
            return target
        if fullname.startswith(prefix + '.') and prefix != 'paddle':
            return target + fullname[len(prefix):]
    return None


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        # The rill module itself: its __name__ and __spec__ stay rill's, and
        # sys.modules holds it under the paddle name too.
        module = importlib.import_module(self.target)
        if spec.name == 'paddle':
            # `paddle.batch` is a function; `import paddle.batch` finds the module it
            # comes from already loaded and leaves the attribute alone.
            sys.modules.setdefault('paddle.batch', importlib.import_module('rill.compat.reader'))
        return module

    def exec_module(self, module):
        pass


class PaddleFinder(importlib.abc.MetaPathFinder):
    """Answers `paddle` and `paddle.*` with rill's modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != 'paddle' and not fullname.startswith('paddle.'):
            return None
        name = target_of(fullname)
        if name is None:
            raise ModuleNotFoundError(
                "No module named '%s': rill stands in for paddle.fluid, paddle.batch, "
                "paddle.reader and paddle.dataset only (doc/design/fluid_api.md)"
                % fullname, name=fullname)
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            found = None
        if found is None:
            raise ModuleNotFoundError(
                "No module named '%s': rill has no '%s' (doc/design/fluid_api.md lists "
                "what rill provides)" % (fullname, name), name=fullname)
        return importlib.util.spec_from_loader(fullname, _AliasLoader(name))


_finder = PaddleFinder()


def install():
    """Make `paddle` and its submodules resolve to rill in this process. A real paddle
    imported before is replaced in sys.modules."""
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    for name in [n for n in sys.modules if n == 'paddle' or n.startswith('paddle.')]:
        if target_of(name) is None or sys.modules[name].__name__ != target_of(name):
            del sys.modules[name]


def uninstall():
    """Undo install(): the finder and every `paddle` alias go."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name in [n for n in sys.modules if n == 'paddle' or n.startswith('paddle.')]:
        del sys.modules[name]
