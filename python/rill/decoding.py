"""Fluid 1.x's beam search layers: beam_search and beam_search_decode (Paddle's
layers/rnn.py) and gather_tree (layers/nn.py), each appending its op
(operators/beam_search.c). Re-exported by rill.layers."""

from . import layers
from .framework import Variable

__all__ = ['beam_search', 'beam_search_decode', 'gather_tree']


def _check(v, what, layer, dtypes):
    if not isinstance(v, Variable):
        raise TypeError('%s: %s must be a Variable, not %r' % (layer, what, v))
    if v.dtype.name not in dtypes:
        raise TypeError('%s: %s must be %s, not %s' % (layer, what, ' or '.join(dtypes),
                                                        v.dtype.name))


def beam_search(pre_ids, pre_scores, ids, scores, beam_size, end_id, level=0,
                is_accumulated=True, name=None, return_parent_idx=False):
    """One step of beam search. pre_ids / pre_scores ([rows, 1], LoD of 2 levels) are the
    ids and accumulated scores chosen last step; ids / scores ([rows, K]) each row's
    candidates (ids None: the candidates are the columns of scores). Level `level` of
    scores' LoD groups the rows by source sentence; each source keeps its beam_size best
    candidates (accumulated scores, or pre_scores + log(scores) when is_accumulated is
    false). A row whose pre_id is end_id offers only end_id with its score; a source whose
    rows all ended and chose end_id again is dropped. Returns (selected_ids,
    selected_scores), [N, 1] with a LoD of 2 levels (sources -> prefix rows -> selections),
    and with return_parent_idx also parent_idx (int32 [N], each selection's row)."""
    _check(pre_ids, 'pre_ids', 'beam_search', ('int64',))
    _check(pre_scores, 'pre_scores', 'beam_search', ('float32', 'float64'))
    if ids is not None:
        _check(ids, 'ids', 'beam_search', ('int64',))
    _check(scores, 'scores', 'beam_search', ('float32', 'float64'))
    h = layers._Helper('beam_search', name)
    ins = {'pre_ids': pre_ids, 'pre_scores': pre_scores, 'scores': scores}
    if ids is not None:
        ins['ids'] = ids
    sel_scores = h.tmp(pre_scores.dtype.name, stop_gradient=True)
    sel_ids = h.tmp(pre_ids.dtype.name, stop_gradient=True)
    parent_idx = h.tmp('int32', stop_gradient=True)
    h.append('beam_search', ins,
             {'selected_ids': sel_ids, 'selected_scores': sel_scores, 'parent_idx': parent_idx},
             {'level': int(level), 'beam_size': int(beam_size), 'end_id': int(end_id),
              'is_accumulated': bool(is_accumulated)})
    if return_parent_idx:
        return sel_ids, sel_scores, parent_idx
    return sel_ids, sel_scores


def beam_search_decode(ids, scores, beam_size, end_id, name=None):
    """The sentences of a beam search: ids and scores are the tensor arrays of every
    step's selected_ids and selected_scores. Each source's sentences are traced back from
    the last step (an ended sentence keeps one end_id) and sorted by their final score,
    best first. Returns (sentence_ids int64, sentence_scores), 1-D with a LoD of 2 levels
    (sources -> sentences -> words)."""
    _check(ids, 'ids', 'beam_search_decode', ('int64',))
    _check(scores, 'scores', 'beam_search_decode', ('float32',))
    h = layers._Helper('beam_search_decode', name)
    sent_ids = h.tmp(ids.dtype.name, stop_gradient=True)
    sent_scores = h.tmp(scores.dtype.name, stop_gradient=True)
    h.append('beam_search_decode', {'Ids': ids, 'Scores': scores},
             {'SentenceIds': sent_ids, 'SentenceScores': sent_scores},
             {'beam_size': int(beam_size), 'end_id': int(end_id)})
    return sent_ids, sent_scores


def gather_tree(ids, parents):
    """ids and parents [max_time, batch, beam] (int32 or int64): the full sequences that
    end in each beam of the last step, found by following parents back."""
    _check(ids, 'ids', 'gather_tree', ('int32', 'int64'))
    _check(parents, 'parents', 'gather_tree', ('int32', 'int64'))
    h = layers._Helper('gather_tree')
    out = h.tmp(ids.dtype.name, stop_gradient=True)
    h.append('gather_tree', {'Ids': ids, 'Parents': parents}, {'Out': out})
    return out
