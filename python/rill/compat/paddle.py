"""The module `import paddle` gives under rill.compat: `paddle.fluid` is rill,
`paddle.batch` batches a reader, `paddle.reader` holds the reader decorators and
`paddle.dataset` the dataset readers."""
import rill as fluid
from rill import dataset
from . import reader
from .reader import batch

__all__ = ['batch', 'reader', 'dataset', 'fluid']

# A package to the import system, so that `import paddle.fluid` looks for submodules;
# rill.compat's finder answers every one of them.
__path__ = []
