"""CoNLL-2005 semantic role labelling, test set (`paddle.dataset.conll05`), in
`conll05st/`: `conll05st-tests.tar.gz` (with the gzipped words and props columns of
test.wsj), and the dictionaries Paddle saves as `conll05st%2FwordDict.txt`,
`conll05st%2FverbDict.txt`, `conll05st%2FtargetDict.txt` (one entry a line; the id is
the line number; the label dictionary gives B-X and I-X for every tag X, then O).
Paddle numbers the tags in set order, which changes from run to run under Python 3;
rill in sorted order. Samples: nine lists of one id per word: words, the five words
around the predicate (ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2, repeated), the predicate,
the mark (1 within two words of it) and the labels."""
import gzip
import tarfile

from . import common

__all__ = ['test', 'get_dict', 'get_embedding']

DATA_URL = 'http://paddlemodels.bj.bcebos.com/conll05st/conll05st-tests.tar.gz'
DATA_MD5 = '387719152ae52d60422c016e92a742fc'
WORDDICT_URL = 'http://paddlemodels.bj.bcebos.com/conll05st%2FwordDict.txt'
WORDDICT_MD5 = 'ea7fb7d4c75cc6254716f0177a506baa'
VERBDICT_URL = 'http://paddlemodels.bj.bcebos.com/conll05st%2FverbDict.txt'
VERBDICT_MD5 = '0d2977293bbb6cbefab5b0f97db1e77c'
TRGDICT_URL = 'http://paddlemodels.bj.bcebos.com/conll05st%2FtargetDict.txt'
TRGDICT_MD5 = 'd8c7f03ceb5fc2e5a0fa7503a4353751'
EMB_URL = 'http://paddlemodels.bj.bcebos.com/conll05st%2Femb'
EMB_MD5 = 'bf436eb0faa1f6f9103017f8be57cdb7'
WORDS_NAME = 'conll05st-release/test.wsj/words/test.wsj.words.gz'
PROPS_NAME = 'conll05st-release/test.wsj/props/test.wsj.props.gz'

UNK_IDX = 0


def _file(url, md5):
    return common.cached_file(url, 'conll05st', md5, dataset='conll05')


def load_dict(filename):
    with open(filename, 'r') as f:
        return {line.strip(): i for i, line in enumerate(f)}


def load_label_dict(filename):
    tags = set()
    with open(filename, 'r') as f:
        for line in f:
            line = line.strip()
            if line.startswith('B-') or line.startswith('I-'):
                tags.add(line[2:])
    d = {}
    for tag in sorted(tags):
        d['B-' + tag] = len(d)
        d['I-' + tag] = len(d)
    d['O'] = len(d)
    return d


def get_dict():
    """(word dict, verb dict, label dict)."""
    return (load_dict(_file(WORDDICT_URL, WORDDICT_MD5)),
            load_dict(_file(VERBDICT_URL, VERBDICT_MD5)),
            load_label_dict(_file(TRGDICT_URL, TRGDICT_MD5)))


def get_embedding():
    """The path of the pretrained word vectors (`conll05st%2Femb`)."""
    return _file(EMB_URL, EMB_MD5)


def _bio(column):
    """A props column (`(A0*`, `*`, `*)`, `(V*)`) as B-/I-/O labels."""
    out, tag, inside = [], 'O', False
    for x in column:
        if x == '*':
            out.append('I-' + tag if inside else 'O')
        elif x == '*)':
            out.append('I-' + tag)
            inside = False
        elif '(' in x:
            tag = x[1:x.find('*')]
            out.append('B-' + tag)
            inside = ')' not in x
        else:
            raise ValueError("conll05: unexpected label '%s'" % x)
    return out


def corpus_reader(data_path, words_name=WORDS_NAME, props_name=PROPS_NAME):
    """(sentence words, predicate, labels) per predicate of every sentence."""
    def reader():
        with tarfile.open(data_path) as tar, \
                gzip.GzipFile(fileobj=tar.extractfile(words_name)) as words, \
                gzip.GzipFile(fileobj=tar.extractfile(props_name)) as props:
            sentence, rows = [], []
            for word, prop in zip(words, props):
                word = word.decode('utf-8').strip()
                cols = prop.decode('utf-8').split()
                if cols:
                    sentence.append(word)
                    rows.append(cols)
                    continue
                if rows:
                    columns = [[r[i] for r in rows] for i in range(len(rows[0]))]
                    verbs = [x for x in columns[0] if x != '-']
                    for i, column in enumerate(columns[1:]):
                        yield sentence, verbs[i], _bio(column)
                sentence, rows = [], []
    return reader


def _creator(corpus, word_dict, predicate_dict, label_dict):
    def reader():
        for sentence, predicate, labels in corpus():
            n = len(sentence)
            v = labels.index('B-V')
            mark = [0] * len(labels)
            ctx = []
            for off, edge in ((-2, 'bos'), (-1, 'bos'), (0, None), (1, 'eos'), (2, 'eos')):
                j = v + off
                if 0 <= j < len(labels):
                    mark[j] = 1
                    ctx.append(sentence[j])
                else:
                    ctx.append(edge)
            word_idx = [word_dict.get(w, UNK_IDX) for w in sentence]
            ctx_idx = [[word_dict.get(c, UNK_IDX)] * n for c in ctx]
            pred_idx = [predicate_dict.get(predicate)] * n
            label_idx = [label_dict.get(w) for w in labels]
            yield (word_idx,) + tuple(ctx_idx) + (pred_idx, mark, label_idx)
    return reader


def test():
    """Reader creator of the test.wsj predicates: nine id lists each."""
    word_dict, verb_dict, label_dict = get_dict()
    corpus = corpus_reader(_file(DATA_URL, DATA_MD5))
    return _creator(corpus, word_dict, verb_dict, label_dict)
