"""WMT16 Multi30K English-German (`paddle.dataset.wmt16`): `wmt16/wmt16.tar.gz` with
members `wmt16/train`, `wmt16/test`, `wmt16/val` (one `english<TAB>german` pair a line).
A dictionary of `dict_size` words is `<s>`, `<e>`, `<unk>` then the training words of
the language by falling count (ties in first-seen order), written as Paddle writes it to
`wmt16/<lang>_<dict_size>.dict` in the dataset directory and read from there when it has
`dict_size` lines. Samples: (source ids with `<s>` and `<e>`, `<s>` + target ids,
target ids + `<e>`)."""
import collections
import os
import tarfile

from . import common

__all__ = ['train', 'test', 'validation', 'fetch', 'get_dict']

DATA_URL = 'http://paddlemodels.bj.bcebos.com/wmt/wmt16.tar.gz'
DATA_MD5 = '0c38be43600334966403524a40dcd81e'
TOTAL_EN_WORDS = 11250
TOTAL_DE_WORDS = 19220
START_MARK = '<s>'
END_MARK = '<e>'
UNK_MARK = '<unk>'


def _tar():
    return common.cached_file(DATA_URL, 'wmt16', DATA_MD5, 'wmt16.tar.gz', dataset='wmt16')


def _pairs(tar_file, member):
    with tarfile.open(tar_file, mode='r') as f:
        for line in f.extractfile(member):
            pair = line.decode('utf-8').strip().split('\t')
            if len(pair) == 2:
                yield pair


def _dict_path(lang, dict_size):
    return os.path.join(common.data_home(), 'wmt16', '%s_%d.dict' % (lang, dict_size))


def _build_dict(tar_file, dict_size, path, lang):
    counts = collections.Counter()
    col = 0 if lang == 'en' else 1
    for pair in _pairs(tar_file, 'wmt16/train'):
        counts.update(pair[col].split())
    ranked = sorted(counts.items(), key=lambda x: x[1], reverse=True)
    words = [START_MARK, END_MARK, UNK_MARK] + [w for w, _ in ranked[:max(dict_size - 3, 0)]]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + '.tmp'
    with open(tmp, 'wb') as out:
        out.write(''.join(w + '\n' for w in words).encode('utf-8'))
    os.replace(tmp, path)


def _load_dict(tar_file, dict_size, lang, reverse=False):
    path = _dict_path(lang, dict_size)
    lines = None
    if os.path.exists(path):
        with open(path, 'rb') as f:
            lines = f.readlines()
    if lines is None or len(lines) != dict_size:
        _build_dict(tar_file, dict_size, path, lang)
        with open(path, 'rb') as f:
            lines = f.readlines()
    words = [line.strip().decode('utf-8') for line in lines]
    if reverse:
        return dict(enumerate(words))
    return {w: i for i, w in enumerate(words)}


def _sizes(src_dict_size, trg_dict_size, src_lang):
    if src_lang not in ('en', 'de'):
        raise ValueError("wmt16: src_lang is '%s'; only 'en' (English) and 'de' (German) "
                         "are available" % (src_lang,))
    en, de = (src_dict_size, trg_dict_size) if src_lang == 'en' else \
        (trg_dict_size, src_dict_size)
    en, de = min(en, TOTAL_EN_WORDS), min(de, TOTAL_DE_WORDS)
    return (en, de) if src_lang == 'en' else (de, en)


def _creator(member, src_dict_size, trg_dict_size, src_lang):
    src_dict_size, trg_dict_size = _sizes(src_dict_size, trg_dict_size, src_lang)
    tar_file = _tar()
    trg_lang = 'de' if src_lang == 'en' else 'en'

    def reader():
        src_dict = _load_dict(tar_file, src_dict_size, src_lang)
        trg_dict = _load_dict(tar_file, trg_dict_size, trg_lang)
        start, end, unk = src_dict[START_MARK], src_dict[END_MARK], src_dict[UNK_MARK]
        src_col = 0 if src_lang == 'en' else 1
        for pair in _pairs(tar_file, member):
            src = [start] + [src_dict.get(w, unk) for w in pair[src_col].split()] + [end]
            trg = [trg_dict.get(w, unk) for w in pair[1 - src_col].split()]
            yield src, [start] + trg, trg + [end]
    return reader


def train(src_dict_size, trg_dict_size, src_lang='en'):
    """Reader creator over wmt16/train."""
    return _creator('wmt16/train', src_dict_size, trg_dict_size, src_lang)


def test(src_dict_size, trg_dict_size, src_lang='en'):
    """Reader creator over wmt16/test."""
    return _creator('wmt16/test', src_dict_size, trg_dict_size, src_lang)


def validation(src_dict_size, trg_dict_size, src_lang='en'):
    """Reader creator over wmt16/val."""
    return _creator('wmt16/val', src_dict_size, trg_dict_size, src_lang)


def get_dict(lang, dict_size, reverse=False):
    """The dictionary of `lang` ('en' or 'de'): {word: id}, or {id: word} with reverse;
    built from the training text when its file is missing."""
    dict_size = min(dict_size, TOTAL_EN_WORDS if lang == 'en' else TOTAL_DE_WORDS)
    return _load_dict(_tar(), dict_size, lang, reverse)


def fetch():
    """Paddle downloads here; rill only checks that the file is in place."""
    return _tar()
