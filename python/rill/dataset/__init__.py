"""Readers of Paddle's datasets (`paddle.dataset.*`) over the files Paddle caches in
`~/.cache/paddle/dataset`: the same file names and formats, the same samples. rill never
downloads; a missing file raises `common.DatasetFileMissing` naming where to put it and
the URL to fetch it from."""
from . import common
from . import uci_housing, mnist, cifar, imdb, imikolov, movielens, conll05, wmt16
from . import wmt14, sentiment, mq2007, image, flowers, voc2012
# `import rill as fluid` makes this package fluid.dataset too: Fluid's datasets for
# Executor.train_from_dataset (paddle.fluid.dataset) are reachable here as there.
from ..fluid_dataset import DatasetFactory, InMemoryDataset, QueueDataset

__all__ = ['common', 'uci_housing', 'mnist', 'cifar', 'imdb', 'imikolov', 'movielens',
           'conll05', 'wmt16', 'wmt14', 'sentiment', 'mq2007', 'image', 'flowers', 'voc2012']
