"""`paddle.reader` and `paddle.batch` for scripts run by rill.compat: the decorators of
rill.reader, which fluid.io reaches too."""
from ..reader import (batch, cache, map_readers, buffered, compose, chain, shuffle,  # noqa: F401
                      ComposeNotAligned, firstn, xmap_readers, multiprocess_reader)
from ..reader import _missing_getattr as __getattr__  # noqa: F401  (a clear error)

__all__ = ['batch', 'cache', 'map_readers', 'buffered', 'compose', 'chain', 'shuffle',
           'ComposeNotAligned', 'firstn', 'xmap_readers', 'multiprocess_reader']
