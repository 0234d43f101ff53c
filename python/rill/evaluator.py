"""Fluid 1.x's `fluid.evaluator` (deprecated there in favour of `fluid.metrics`): metrics
kept in persistable variables of the program, accumulated by ops the evaluator appends,
zeroed by reset(executor) and read by eval(executor), each through a small program of
its own.

The states are zeroed by the startup program as well; Fluid 1.8 leaves them unset until
the first reset(), so call reset() before the first pass, as Fluid's examples do, and
both give the same numbers."""
import warnings

import numpy as np

from . import layers
from ._missing import module_getattr as _module_getattr
from .framework import Program, Variable, default_startup_program, program_guard, unique_name

__all__ = ['ChunkEvaluator', 'EditDistance', 'DetectionMAP']


def _clone_var(block, var):
    return block.create_var(name=var.name, shape=var.shape, dtype=var.dtype,
                            persistable=True)


class Evaluator(object):
    """The base of the evaluators: `states` (persistable variables zeroed by reset) and
    `metrics` (the per-batch variables, to fetch)."""

    def __init__(self, name, **kwargs):
        warnings.warn('%s is deprecated in Fluid 1.x; fluid.metrics.%s computes the same in '
                      'Python' % (type(self).__name__, type(self).__name__), Warning)
        self.states = []
        self.metrics = []
        self._name = name

    def reset(self, executor, reset_program=None):
        """Runs a program setting every state to zero."""
        if reset_program is None:
            reset_program = Program()
        with program_guard(main_program=reset_program):
            for var in self.states:
                if not isinstance(var, Variable):
                    raise TypeError('%s.reset: state %r is not a Variable'
                                    % (type(self).__name__, var))
                g = _clone_var(reset_program.current_block(), var)
                layers.fill_constant(shape=list(g.shape), value=0.0, dtype=g.dtype.name, out=g)
        executor.run(reset_program)

    def eval(self, executor, eval_program=None):
        raise NotImplementedError('%s.eval: an evaluator derived from Evaluator defines it'
                                  % type(self).__name__)

    def _create_state(self, suffix, dtype, shape):
        from .framework import default_main_program
        name = '_'.join([unique_name.generate(self._name), suffix])
        state = default_main_program().global_block().create_var(
            name=name, shape=shape, dtype=dtype, persistable=True)
        state.stop_gradient = True
        sblock = default_startup_program().global_block()
        sv = sblock.create_var(name=name, shape=shape, dtype=dtype, persistable=True)
        sblock.append_op('fill_constant', outputs={'Out': sv},
                         attrs={'shape': list(shape), 'value': 0.0, 'dtype': sv.desc['dtype']})
        self.states.append(state)
        return state


class ChunkEvaluator(Evaluator):
    """Accumulates layers.chunk_eval's three chunk counts over batches in int64 states;
    `metrics` holds each batch's (precision, recall, f1_score) and eval() returns them over
    every batch since reset(), as float32 arrays of one element (0 where a count is 0)."""

    def __init__(self, input, label, chunk_scheme, num_chunk_types,
                 excluded_chunk_types=None):
        super(ChunkEvaluator, self).__init__('chunk_eval')
        from .framework import default_main_program
        if default_main_program().current_block().idx != 0:
            raise ValueError('ChunkEvaluator: an evaluator is made in the root block only')
        self.num_infer_chunks = self._create_state('num_infer_chunks', 'int64', [1])
        self.num_label_chunks = self._create_state('num_label_chunks', 'int64', [1])
        self.num_correct_chunks = self._create_state('num_correct_chunks', 'int64', [1])
        precision, recall, f1_score, n_infer, n_label, n_correct = layers.chunk_eval(
            input=input, label=label, chunk_scheme=chunk_scheme,
            num_chunk_types=num_chunk_types, excluded_chunk_types=excluded_chunk_types)
        for state, count in ((self.num_infer_chunks, n_infer),
                             (self.num_label_chunks, n_label),
                             (self.num_correct_chunks, n_correct)):
            layers.sums([state, count], out=state)
        self.metrics.extend([precision, recall, f1_score])

    def eval(self, executor, eval_program=None):
        if eval_program is None:
            eval_program = Program()
        block = eval_program.current_block()
        with program_guard(main_program=eval_program):
            fetch = [_clone_var(block, s) for s in self.states]
            n_infer, n_label, n_correct = [int(np.asarray(v).ravel()[0]) for v in
                                           executor.run(eval_program, fetch_list=fetch)]
        precision = float(n_correct) / n_infer if n_infer else 0
        recall = float(n_correct) / n_label if n_label else 0
        f1_score = 2 * precision * recall / (precision + recall) if n_correct else 0
        return (np.array([precision], 'float32'), np.array([recall], 'float32'),
                np.array([f1_score], 'float32'))


class EditDistance(Evaluator):
    """Accumulates layers.edit_distance over batches: eval() returns (the mean distance,
    the fraction of sequences not matched exactly), as float32 arrays of one element."""

    def __init__(self, input, label, ignored_tokens=None, **kwargs):
        super(EditDistance, self).__init__('edit_distance', **kwargs)
        from .framework import default_main_program
        if default_main_program().current_block().idx != 0:
            raise ValueError('EditDistance: an evaluator is made in the root block only')
        self.total_distance = self._create_state('total_distance', 'float32', [1])
        self.seq_num = self._create_state('seq_num', 'int64', [1])
        self.instance_error = self._create_state('instance_error', 'int64', [1])
        distances, seq_num = layers.edit_distance(input=input, label=label,
                                                  ignored_tokens=ignored_tokens)
        zero = layers.fill_constant(shape=[1], value=0.0, dtype='float32')
        exact = layers.cast(layers.equal(distances, zero), 'int64')
        errors = layers.elementwise_sub(seq_num, layers.reduce_sum(exact))
        total = layers.reduce_sum(distances)
        layers.sums([self.total_distance, total], out=self.total_distance)
        layers.sums([self.seq_num, seq_num], out=self.seq_num)
        layers.sums([self.instance_error, errors], out=self.instance_error)
        self.metrics.append(total)
        self.metrics.append(errors)

    def eval(self, executor, eval_program=None):
        if eval_program is None:
            eval_program = Program()
        block = eval_program.current_block()
        with program_guard(main_program=eval_program):
            total = _clone_var(block, self.total_distance)
            seq_num = layers.cast(_clone_var(block, self.seq_num), 'float32')
            errors = layers.cast(_clone_var(block, self.instance_error), 'float32')
            avg_distance = layers.elementwise_div(total, seq_num)
            avg_error = layers.elementwise_div(errors, seq_num)
            result = executor.run(eval_program, fetch_list=[avg_distance, avg_error])
        return np.array(result[0]), np.array(result[1])



class DetectionMAP(Evaluator):
    """fluid.metrics.DetectionMAP as an evaluator: `metrics` holds (this batch's mAP, the
    accumulated mAP); reset(executor) starts the accumulation over (its states are
    detection_map's, restarted through has_state rather than zeroed)."""

    def __init__(self, input, gt_label, gt_box, gt_difficult=None, class_num=None,
                 background_label=0, overlap_threshold=0.5, evaluate_difficult=True,
                 ap_version='integral'):
        super(DetectionMAP, self).__init__('map_eval')
        from .detection import _map_eval
        self.cur_map, self.accum_map, self.has_state, states = _map_eval(
            'map_eval', input, gt_label, gt_box, gt_difficult, class_num, background_label,
            overlap_threshold, evaluate_difficult, ap_version)
        self.states.extend(states)
        self.metrics.extend([self.cur_map, self.accum_map])

    def get_map_var(self):
        return self.cur_map, self.accum_map

    def reset(self, executor, reset_program=None):
        from .detection import _map_reset
        _map_reset(self.has_state, executor, reset_program)


__getattr__ = _module_getattr('fluid.evaluator', __name__)
