"""`paddle.reader` and `paddle.batch` for scripts run by rill.compat: the decorators of
rill.reader, which fluid.io reaches too."""
from ..reader import (batch, cache, map_readers, buffered, compose, chain, shuffle,  # noqa: F401
                      ComposeNotAligned, firstn, xmap_readers)
from ..reader import __getattr__  # noqa: F401  (names rill lacks: a clear error)

__all__ = ['batch', 'cache', 'map_readers', 'buffered', 'compose', 'chain', 'shuffle',
           'ComposeNotAligned', 'firstn', 'xmap_readers']
