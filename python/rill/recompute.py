"""Fluid 1.8's RecomputeOptimizer: the backward pass re-runs forward segments instead of
reading their activations.

The checkpoints (set with _set_checkpoints) cut the forward ops into segments: segment k
is the ops after the one writing checkpoint k up to the one writing checkpoint k + 1.
After the wrapped optimizer's backward pass (rill_program_append_backward, then its
clipping and weight decay), each segment's ops are copied into the backward pass just
before the first backward op that reads what the segment computed; the copies write
`NAME@RECOMPUTE` variables and every backward op after them reads those instead. So no
backward op reads a segment's original activations: they are dead after the forward
pass, and an executor that frees temporaries after their last use frees them there
(the Python Executor keeps temporaries between runs). The checkpoints themselves, persistable variables, and what the ops before the
first checkpoint and after the last compute are read as they are. An op that draws
random numbers (dropout without a fixed seed, ...) or holds a sub-block is not re-run:
its outputs are kept, so the numbers are the same as without recompute."""

from . import core
from .framework import Operator, OpRole, Variable

__all__ = ['RecomputeOptimizer']

_SUFFIX = '@RECOMPUTE'


# Ops whose outputs differ between runs unless seeded.
_RANDOM = ('uniform_random', 'gaussian_random', 'truncated_gaussian_random', 'sampling_id',
           'random_crop', 'uniform_random_batch_size_like', 'gaussian_random_batch_size_like')


def _rerunnable(op):
    if any(a[1] == core.ATTR_BLOCK for a in op.desc['attrs']):
        return False
    if op.type == 'dropout':
        return bool(op.attr('fix_seed') or op.attr('is_test'))
    return op.type not in _RANDOM


def _renamed(args, names):
    return [(slot, [names.get(a, a) for a in vs]) for slot, vs in args]


def _insert_copy(block, at, desc, names):
    od = {'type': desc['type'], 'inputs': _renamed(desc['inputs'], names),
          'outputs': _renamed(desc['outputs'], names), 'attrs': list(desc['attrs'])}
    block._add_op(at, Operator(block, od))


def _rewrite(program, checkpoints):
    """Copies the segments into the backward pass (the module doc); returns the names
    of the variables recomputed."""
    blk = program.global_block()
    ops = blk.ops
    first_bwd = next((i for i, op in enumerate(ops)
                      if (op.attr('op_role') or 0) & (OpRole.Backward | OpRole.Optimize)),
                     len(ops))
    writer = {}
    for i in range(first_bwd):
        for n in ops[i].output_arg_names:
            writer[n] = i
    cuts = sorted(set(writer[c] for c in checkpoints if c in writer))
    ckpt = set(checkpoints)
    recomputed = []
    for lo, hi in zip(cuts, cuts[1:]):
        seg = [ops[i] for i in range(lo + 1, hi + 1)]
        names = {}
        copies = []
        for op in seg:
            if not _rerunnable(op):
                continue
            outs = [n for n in op.output_arg_names if n not in ckpt and
                    not getattr(blk._find_var_recursive(n), 'persistable', True)]
            if not outs:
                continue
            copies.append(op)
            for n in outs:
                names[n] = n + _SUFFIX
        if not names:
            continue
        ops = blk.ops
        at = next((i for i in range(first_bwd, len(ops))
                   if any(n in names for n in ops[i].input_arg_names)), None)
        if at is None:
            continue
        for n, new in names.items():
            v = blk._find_var_recursive(n)
            blk.create_var(name=new, shape=list(v.shape), dtype=v.dtype.name,
                           lod_level=v.lod_level, type=v.type)
        descs = [dict(op.desc) for op in copies]
        # The backward ops from `at` on read the copies.
        for i in range(len(ops) - 1, at - 1, -1):
            op = ops[i]
            if not any(n in names for n in op.input_arg_names):
                continue
            d = op.desc
            blk._remove_op(i)
            od = {'type': d['type'], 'inputs': _renamed(d['inputs'], names),
                  'outputs': list(d['outputs']), 'attrs': list(d['attrs'])}
            blk._add_op(i, Operator(blk, od))
        for k, d in enumerate(descs):
            attrs = [a for a in d['attrs'] if a[0] != 'op_role']
            attrs.append(('op_role', core.ATTR_INT, int(OpRole.Backward)))
            d = dict(d, attrs=attrs)
            _insert_copy(blk, at + k, d, names)
        first_bwd += len(descs)
        recomputed.extend(names)
    program._transformed()
    return recomputed


class RecomputeOptimizer(object):
    """Wraps an optimizer; minimize gives the same parameters as the wrapped optimizer's
    minimize, with the backward pass re-running the forward segments between the
    checkpoints (module doc). Call _set_checkpoints([Variables]) first."""

    def __init__(self, optimizer):
        self._optimizer = optimizer
        self._checkpoints = None
        self._learning_rate = getattr(optimizer, '_learning_rate', None)
        self.recomputed = []

    def _set_checkpoints(self, checkpoints):
        if not isinstance(checkpoints, (list, tuple)):
            raise TypeError('RecomputeOptimizer: checkpoints must be a list of Variables, '
                            'got %r' % (checkpoints,))
        for c in checkpoints:
            if not isinstance(c, (Variable, str)):
                raise TypeError('RecomputeOptimizer: checkpoint %r is not a Variable' % (c,))
        self._checkpoints = list(checkpoints)

    def load(self, stat_dict):
        raise NotImplementedError('load function is not supported by Recompute Optimizer '
                                  'for now')

    def apply_gradients(self, params_grads):
        return self._optimizer.apply_gradients(params_grads)

    def apply_optimize(self, loss, startup_program, params_grads):
        return self._optimizer.apply_gradients(params_grads, startup_program)

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None,
                 callbacks=None):
        if self._checkpoints is None:
            raise ValueError('RecomputeOptimizer: you should call _set_checkpoints first')
        pairs = self._optimizer.backward(loss, startup_program, parameter_list, no_grad_set)
        names = [c.name if isinstance(c, Variable) else c for c in self._checkpoints]
        self.recomputed = _rewrite(loss.block.program, names)
        blk = loss.block.program.global_block()
        return [(blk.vars[p.name], blk._find_var_recursive(g.name)) for p, g in pairs]

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        if not isinstance(loss, Variable):
            raise TypeError('The loss should be an Variable.')
        if self._checkpoints is None:
            raise ValueError('RecomputeOptimizer: you should call _set_checkpoints first')
        params_grads = self.backward(loss, startup_program, parameter_list, no_grad_set)
        ops = self.apply_optimize(loss, startup_program, params_grads)
        return ops, params_grads
