"""LETOR 4.0 MQ2007 (`paddle.dataset.mq2007`): Paddle downloads `MQ2007/MQ2007.rar` and
extracts it into `MQ2007/`; rill reads the extracted text files,
`MQ2007/MQ2007/MQ2007/Fold1/{train,test}.txt` under the dataset directory (extract the
archive there with any RAR tool). A line is `relevance qid:Q 1:v1 ... 46:v46 #comment`;
consecutive lines of one query form a QueryList, and lists whose relevances sum to 0
are left out. Samples by `format`: 'pointwise' (relevance, features) and 'plain_txt'
(query id, relevance, features) of each list's most relevant document only, as
Paddle's; 'pairwise' (array([1]), features of the more relevant, of the less relevant)
for every pair of documents of a list with different relevances; 'listwise'
(relevances [n, 1], features [n, 46]) per list. Lists are ranked by falling relevance,
ties in file order. train and test are readers themselves (no call to create them)."""
import functools
import os

import numpy as np

from . import common

__all__ = ['train', 'test', 'fetch', 'Query', 'QueryList', 'gen_plain_txt', 'gen_point',
           'gen_pair', 'gen_list', 'query_filter', 'load_from_text']

URL = ('http://www.bigdatalab.ac.cn/benchmark/upload/download_source/'
       '7b6dbbe2-842c-11e4-a536-bcaec51b9163_MQ2007.rar')
MD5 = '7be1640ae95c6408dab0ae7207bdc706'
NUM_PARTS = 48


class Query(object):
    """One query-document line: relevance_score, query_id, feature_vector (46 floats)
    and the comment after '#' (description)."""

    def __init__(self, query_id=-1, relevance_score=-1, feature_vector=None,
                 description=''):
        self.query_id = query_id
        self.relevance_score = relevance_score
        self.feature_vector = [] if feature_vector is None else feature_vector
        self.description = description

    def __str__(self):
        return '%s %s %s' % (self.relevance_score, self.query_id,
                             ' '.join(str(f) for f in self.feature_vector))

    def _parse_(self, text):
        """Fills the query from a line; ValueError when it is not a LETOR line."""
        pos = text.find('#')
        line = (text[:pos] if pos >= 0 else text).strip()
        self.description = text[pos + 1:].strip() if pos >= 0 else ''
        parts = line.split()
        if len(parts) != NUM_PARTS:
            raise ValueError('expected %d space-separated parts, got %d'
                             % (NUM_PARTS, len(parts)))
        self.relevance_score = int(parts[0])
        qid = parts[1].split(':')
        if len(qid) != 2 or qid[0] != 'qid':
            raise ValueError("the second part is '%s', not qid:N" % parts[1])
        self.query_id = int(qid[1])
        for p in parts[2:]:
            pair = p.split(':')
            if len(pair) != 2:
                raise ValueError("feature '%s' is not index:value" % p)
            self.feature_vector.append(float(pair[1]))
        return self


class QueryList(object):
    """The documents of one query."""

    def __init__(self, querylist=None):
        self.query_id = -1
        self.querylist = []
        for query in querylist or []:
            self._add_query(query)

    def __iter__(self):
        return iter(self.querylist)

    def __len__(self):
        return len(self.querylist)

    def __getitem__(self, i):
        return self.querylist[i]

    def _correct_ranking_(self):
        self.querylist.sort(key=lambda q: q.relevance_score, reverse=True)

    def _add_query(self, query):
        if self.query_id == -1:
            self.query_id = query.query_id
        elif self.query_id != query.query_id:
            raise ValueError('query in list must be same query_id')
        self.querylist.append(query)


def _ranked(querylist):
    if not isinstance(querylist, QueryList):
        querylist = QueryList(querylist)
    querylist._correct_ranking_()
    return querylist


def gen_plain_txt(querylist):
    """(query id, relevance, features) of each document, most relevant first."""
    querylist = _ranked(querylist)
    for query in querylist:
        yield querylist.query_id, query.relevance_score, np.array(query.feature_vector)


def gen_point(querylist):
    """(relevance, features) of each document, most relevant first."""
    for query in _ranked(querylist):
        yield query.relevance_score, np.array(query.feature_vector)


def gen_pair(querylist, partial_order='full'):
    """(array([1]), more relevant features, less relevant features) for each pair of
    documents with different relevances."""
    querylist = _ranked(querylist)
    for i in range(len(querylist)):
        left = querylist[i]
        for j in range(i + 1, len(querylist)):
            right = querylist[j]
            if left.relevance_score == right.relevance_score:
                continue
            hi, lo = (left, right) if left.relevance_score > right.relevance_score \
                else (right, left)
            yield np.array([1]), np.array(hi.feature_vector), np.array(lo.feature_vector)


def gen_list(querylist):
    """(relevances [n, 1], features [n, 46]) of the whole list."""
    querylist = _ranked(querylist)
    yield (np.array([[q.relevance_score] for q in querylist]),
           np.array([q.feature_vector for q in querylist]))


def query_filter(querylists):
    """The lists with at least one relevant document (relevances summing to nonzero)."""
    return [ql for ql in querylists if sum(q.relevance_score for q in ql) != 0]


def _text_path(filepath):
    path = os.path.join(common.data_home(), 'MQ2007', filepath)
    if os.path.isfile(path):
        return path
    rar = os.path.join(common.data_home(), 'MQ2007', URL.split('/')[-1])
    raise common.DatasetFileMissing(
        "paddle.dataset.mq2007: file '%s' not found. rill does not download or unpack "
        "datasets: fetch %s (md5 %s) and extract it into %s so that this file exists "
        "(%s)" % (path, URL, MD5, os.path.dirname(rar),
                  'the archive is at ' + rar if os.path.isfile(rar) else
                  'a RAR archive'))


def load_from_text(filepath, shuffle=False, fill_missing=-1):
    """The QueryLists of the file `filepath` (relative to the MQ2007 directory)."""
    path = _text_path(filepath)
    querylists = []
    current = None
    with open(path, encoding='utf-8') as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                query = Query()._parse_(line)
            except ValueError as e:
                raise ValueError('mq2007: %s:%d: %s' % (path, lineno, e)) from None
            if current is None or query.query_id != current.query_id:
                current = QueryList()
                querylists.append(current)
            current._add_query(query)
    return querylists


_GENERATORS = {'plain_txt': gen_plain_txt, 'pointwise': gen_point, 'listwise': gen_list}


def __reader__(filepath, format='pairwise', shuffle=False, fill_missing=-1):
    if format not in ('pairwise', 'plain_txt', 'pointwise', 'listwise'):
        raise ValueError("mq2007: format is %r; it is one of 'pointwise', 'pairwise', "
                         "'listwise' and 'plain_txt'" % (format,))
    querylists = query_filter(load_from_text(filepath, shuffle, fill_missing))
    for querylist in querylists:
        if format == 'pairwise':
            for pair in gen_pair(querylist):
                yield pair
        else:
            yield next(_GENERATORS[format](querylist))


train = functools.partial(__reader__, filepath='MQ2007/MQ2007/Fold1/train.txt')
test = functools.partial(__reader__, filepath='MQ2007/MQ2007/Fold1/test.txt')


def fetch():
    """Paddle downloads here; rill only checks that the archive is in place."""
    return common.cached_file(URL, 'MQ2007', MD5, dataset='mq2007')
