"""WMT14 French-English, the shrunk set (`paddle.dataset.wmt14`): `wmt14/wmt14.tgz`.
Its member ending in `src.dict` (French) and the one ending in `trg.dict` (English) list
one word a line; the first `dict_size` lines make the dictionary, a word's id its line
number. The members ending in `train/train`, `test/test` and `gen/gen` hold one
`source<TAB>target` pair a line; other lines are skipped, and so are pairs whose source
(with `<s>` and `<e>`) or target has more than 80 words. Samples: (source ids of `<s>`
words `<e>`, target `<s>` id + target ids, target ids + target `<e>` id); a word not in
a dictionary has id 2 (`<unk>`)."""
import tarfile

from . import common

__all__ = ['train', 'test', 'get_dict']

URL_TRAIN = 'http://paddlemodels.bj.bcebos.com/wmt/wmt14.tgz'
MD5_TRAIN = '0791583d57d5beb693b9414c5b36798c'
URL_MODEL = 'http://paddlemodels.bj.bcebos.com/wmt%2Fwmt14.tgz'
MD5_MODEL = '0cb4a5366189b6acba876491c8724fa3'

START = '<s>'
END = '<e>'
UNK = '<unk>'
UNK_IDX = 2
MAX_LEN = 80


def _tar():
    return common.cached_file(URL_TRAIN, 'wmt14', MD5_TRAIN, dataset='wmt14')


def _one_member(tar, tar_file, suffix):
    names = [m.name for m in tar if m.name.endswith(suffix)]
    if len(names) != 1:
        raise ValueError("wmt14: %s has %d members ending in '%s', expected one"
                         % (tar_file, len(names), suffix))
    return names[0]


def _read_dicts(tar_file, dict_size):
    dicts = []
    with tarfile.open(tar_file, mode='r') as tar:
        for suffix in ('src.dict', 'trg.dict'):
            words = {}
            for i, line in enumerate(tar.extractfile(_one_member(tar, tar_file, suffix))):
                if i >= dict_size:
                    break
                words[line.strip().decode('utf-8')] = i
            dicts.append(words)
    return dicts


def _creator(tar_file, suffix, dict_size):
    def reader():
        src_dict, trg_dict = _read_dicts(tar_file, dict_size)
        for mark in (START, END):
            if mark not in trg_dict:
                raise ValueError("wmt14: the first %d words of trg.dict in %s lack '%s'"
                                 % (dict_size, tar_file, mark))
        trg_start, trg_end = trg_dict[START], trg_dict[END]
        with tarfile.open(tar_file, mode='r') as tar:
            names = [m.name for m in tar if m.name.endswith(suffix)]
            for name in names:
                for line in tar.extractfile(name):
                    pair = line.decode('utf-8').strip().split('\t')
                    if len(pair) != 2:
                        continue
                    src = [src_dict.get(w, UNK_IDX) for w in [START] + pair[0].split() + [END]]
                    trg = [trg_dict.get(w, UNK_IDX) for w in pair[1].split()]
                    if len(src) > MAX_LEN or len(trg) > MAX_LEN:
                        continue
                    yield src, [trg_start] + trg, trg + [trg_end]
    return reader


def train(dict_size):
    """Reader creator over the members ending in `train/train`."""
    return _creator(_tar(), 'train/train', dict_size)


def test(dict_size):
    """Reader creator over the members ending in `test/test`."""
    return _creator(_tar(), 'test/test', dict_size)


def gen(dict_size):
    """Reader creator over the members ending in `gen/gen`."""
    return _creator(_tar(), 'gen/gen', dict_size)


def get_dict(dict_size, reverse=True):
    """(source, target) dictionaries of the first `dict_size` words: {id: word} by
    default, {word: id} with reverse=False."""
    src_dict, trg_dict = _read_dicts(_tar(), dict_size)
    if reverse:
        return ({v: k for k, v in src_dict.items()}, {v: k for k, v in trg_dict.items()})
    return src_dict, trg_dict


def fetch():
    """Paddle downloads here; rill only checks that the files are in place."""
    _tar()
    common.cached_file(URL_MODEL, 'wmt14', MD5_MODEL, dataset='wmt14')
