"""UCI housing (`paddle.dataset.uci_housing`): 506 rows of 13 features and a price in
`uci_housing/housing.data` (whitespace-separated numbers). Each feature is centred on its
mean and divided by its range over the whole file; the first 80% of the rows are the
training set, the rest the test set. Samples: (float64[13] features, float64[1] price)."""
import numpy as np

from . import common

__all__ = ['train', 'test']

URL = 'http://paddlemodels.bj.bcebos.com/uci_housing/housing.data'
MD5 = 'd4accdce7a25600298819f8e28e8d593'
feature_names = ['CRIM', 'ZN', 'INDUS', 'CHAS', 'NOX', 'RM', 'AGE', 'DIS', 'RAD', 'TAX',
                 'PTRATIO', 'B', 'LSTAT']


def _load(feature_num=14, ratio=0.8):
    path = common.cached_file(URL, 'uci_housing', MD5, dataset='uci_housing')
    data = np.fromfile(path, sep=' ')
    if data.size == 0 or data.size % feature_num:
        raise ValueError("%s: %d numbers, not a multiple of %d"
                         % (path, data.size, feature_num))
    data = data.reshape(data.size // feature_num, feature_num)
    maximums, minimums = data.max(axis=0), data.min(axis=0)
    avgs = data.sum(axis=0) / data.shape[0]
    for i in range(feature_num - 1):
        data[:, i] = (data[:, i] - avgs[i]) / (maximums[i] - minimums[i])
    offset = int(data.shape[0] * ratio)
    return data[:offset], data[offset:]


def _creator(part):
    rows = _load()[part]

    def reader():
        for row in rows:
            yield row[:-1], row[-1:]
    return reader


def train():
    """Reader creator of the training rows: (features, price)."""
    return _creator(0)


def test():
    """Reader creator of the test rows: (features, price)."""
    return _creator(1)


def predict_reader():
    """The features of the first test row, as a 1-tuple."""
    return (_load()[1][0][:-1],)
