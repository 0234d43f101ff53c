"""Fluid 1.8's process-level helpers: require_version, set_flags / get_flags and
device_guard (is_compiled_with_cuda is framework.py's). rill stands for Fluid 1.8.5:
version requirements are checked against 1.8.5, flags are kept (rill's behaviour does not
read them), and device_guard accepts Fluid's device strings."""

import contextlib
import re

__all__ = ['require_version', 'set_flags', 'get_flags', 'device_guard']

FLUID_VERSION = '1.8.5'
_flags = {}


def _version_tuple(v, what):
    if not isinstance(v, str):
        raise TypeError('require_version: %s must be a str, not %r' % (what, v))
    if not re.match(r'^\d+(\.\d+){0,3}$', v):
        raise ValueError('require_version: %s %r is not a version like "1.6" or "1.8.5"'
                         % (what, v))
    parts = [int(p) for p in v.split('.')]
    return tuple(parts + [0] * (4 - len(parts)))


def require_version(min_version, max_version=None):
    """Raises when Fluid 1.8.5 (the API rill provides) is below min_version or above
    max_version."""
    have = _version_tuple(FLUID_VERSION, 'version')
    lo = _version_tuple(min_version, 'min_version')
    hi = _version_tuple(max_version, 'max_version') if max_version is not None else None
    if have < lo or (hi is not None and have > hi):
        raise Exception('rill provides the Fluid %s API, but the script requires %s%s'
                        % (FLUID_VERSION, '>= ' + min_version,
                           '' if hi is None else ' and <= ' + max_version))


def set_flags(flags):
    """Keeps each FLAGS_* name's value; get_flags returns it."""
    if not isinstance(flags, dict):
        raise TypeError('set_flags: flags must be a dict, not %r' % (flags,))
    for k in flags:
        if not isinstance(k, str) or not k.startswith('FLAGS_'):
            raise ValueError('set_flags: %r is not a flag name (FLAGS_...)' % (k,))
    _flags.update(flags)


def get_flags(flags):
    """{name: value} of the flags given (a name or a list of names) set by set_flags."""
    names = [flags] if isinstance(flags, str) else flags
    if not isinstance(names, (list, tuple)):
        raise TypeError('get_flags: flags must be a str, list or tuple, not %r' % (flags,))
    out = {}
    for n in names:
        if n not in _flags:
            raise ValueError('get_flags: flag %r was not set with set_flags (rill keeps no '
                             'other flags)' % (n,))
        out[n] = _flags[n]
    return out


@contextlib.contextmanager
def device_guard(device=None):
    """Fluid's per-op device choice: accepted; the ops inside run on the executor's place."""
    if device is not None and not re.match(r'^(cpu|gpu(:\d+)?)$', str(device)):
        raise ValueError("device_guard: device must be 'cpu', 'gpu' or 'gpu:N', not %r"
                         % (device,))
    yield
