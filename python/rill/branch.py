"""Fluid 1.x's IfElse and Switch (fluid.layers.control_flow): branches as sub-blocks run
by conditional_block ops, built as Paddle 1.8 builds them so that programs, and the
numbers they give, are the same.

IfElse(cond) takes a bool [N, 1] mask: input(x) splits x's rows (its sequences, with LoD)
by the mask with split_lod_tensor, each block works on its part, and calling the IfElse
merges the blocks' outputs back into x's order with merge_lod_tensor. Both blocks run
whenever their part has rows; the split, merge and conditional_block ops carry the
gradients back to x and to the blocks' parameters.

Switch runs the first case whose scalar bool condition holds, or default() when none
does; each case is a conditional_block on "this condition and none before", as in
Paddle (used by learning-rate schedules written by hand).

case and switch_case chain layers.cond calls as Paddle 1.8 does: the first pair whose
predicate holds (case) or whose index equals branch_index (switch_case) runs, else the
default (when absent: case's last pair, switch_case's largest index)."""

import functools

import numpy as np

from . import layers
from .framework import Variable, unique_name

__all__ = ['IfElse', 'Switch', 'case', 'switch_case']


def _check_bool(cond, what, layer):
    if not isinstance(cond, Variable):
        raise TypeError('%s: %s must be a Variable, not %r' % (layer, what, cond))
    if cond.dtype != np.dtype('bool'):
        raise TypeError('%s: %s must be a bool Variable, not %s' % (layer, what,
                                                                    cond.dtype.name))


class _BlockGuard(object):
    """A sub-block of the current block; on a clean exit, a conditional_block op on
    `flag` runs it."""

    def __init__(self, helper, flag, is_scalar_condition):
        self.helper = helper
        self.flag = flag
        self.is_scalar_condition = is_scalar_condition

    def __enter__(self):
        self.main = self.helper.main
        self.parent = self.main.current_block()
        self.sub = self.main._create_block()
        return self.sub

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.main._rollback()
        if exc_type is not None:
            return False
        layers._conditional_block(self.helper, self.parent, self.sub, self.flag,
                                  self.is_scalar_condition)
        return False


class Switch(object):
    """with Switch() as switch: with switch.case(cond): ...; with switch.default(): ..."""

    def __init__(self, name=None):
        self.helper = layers._Helper('switch', name)
        self.inside_scope = False
        self.pre_not_conditions = []

    def case(self, condition):
        if not self.inside_scope:
            raise ValueError('Switch: case() must be called inside "with Switch() as s:"')
        _check_bool(condition, 'condition', 'Switch.case')
        if not self.pre_not_conditions:
            flag = condition
            self.pre_not_conditions.append(layers.logical_not(condition))
        else:
            pre = self.pre_not_conditions[-1]
            self.pre_not_conditions.append(
                layers.logical_and(pre, layers.logical_not(condition)))
            flag = layers.logical_and(pre, condition)
        return _BlockGuard(self.helper, flag, True)

    def default(self):
        if not self.pre_not_conditions:
            raise ValueError('Switch: default() needs at least one case() before it')
        return _BlockGuard(self.helper, self.pre_not_conditions[-1], True)

    def __enter__(self):
        self.inside_scope = True
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.inside_scope = False
        return False


class IfElse(object):
    """ie = IfElse(cond); with ie.true_block(): d = ie.input(x); ie.output(f(d));
    with ie.false_block(): ...; out = ie()  (a list, one merged Variable per output)."""

    OUT_IF_ELSE_BLOCKS = 0
    IN_IF_ELSE_TRUE_BLOCKS = 1
    IN_IF_ELSE_FALSE_BLOCKS = 2

    def __init__(self, cond, name=None):
        if not isinstance(cond, Variable):
            raise TypeError('IfElse: cond must be a Variable, not %r' % (cond,))
        if name is not None and not isinstance(name, str):
            raise TypeError('IfElse: name must be a str or None, not %r' % (name,))
        self.helper = layers._Helper('ifelse', name)
        self.cond = cond
        self.input_table = {}
        self.status = IfElse.OUT_IF_ELSE_BLOCKS
        self.output_table = ([], [])  # (false block's, true block's), as Paddle keeps them
        self._parent = None

    def input(self, x):
        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError('IfElse: input() must be called inside true_block() or '
                             'false_block()')
        if not isinstance(x, Variable):
            raise TypeError('IfElse.input: x must be a Variable, not %r' % (x,))
        if id(x) not in self.input_table:
            parent = self._parent
            out_true = parent.create_var(
                name=unique_name.generate('ifelse_input' + self.helper.name), dtype=x.dtype)
            out_false = parent.create_var(
                name=unique_name.generate('ifelse_input' + self.helper.name), dtype=x.dtype)
            parent.append_op('split_lod_tensor', inputs={'X': x, 'Mask': self.cond},
                             outputs={'OutTrue': out_true, 'OutFalse': out_false},
                             attrs={'level': 0})
            self.input_table[id(x)] = (x, out_true, out_false)
        _, out_true, out_false = self.input_table[id(x)]
        return out_true if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else out_false

    def true_block(self):
        return _IfElseGuard(True, self)

    def false_block(self):
        return _IfElseGuard(False, self)

    def output(self, *outs):
        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError('IfElse: output() must be called inside true_block() or '
                             'false_block()')
        table = self.output_table[1 if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else 0]
        for each in outs:
            if not isinstance(each, Variable):
                raise TypeError('IfElse.output: each output must be a Variable, not %r'
                                % (each,))
            outside = self._parent.create_var(
                name=unique_name.generate('_'.join([self.helper.name, 'output'])),
                dtype=each.dtype)
            table.append(outside)
            layers.assign(each, output=outside)

    def __call__(self):
        if self.status != IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError('IfElse: call it after both blocks, outside them')
        false_len, true_len = len(self.output_table[0]), len(self.output_table[1])
        if false_len == 0 and true_len == 0:
            raise ValueError('IfElse: call true_block() or false_block() with outputs '
                             'before calling it')
        if false_len != true_len and false_len != 0 and true_len != 0:
            raise ValueError('IfElse: the true block has %d outputs and the false block %d'
                             % (true_len, false_len))
        if false_len == 0 or true_len == 0:
            return self.output_table[0 if false_len != 0 else 1]
        merged = []
        for false_var, true_var in zip(*self.output_table):
            h = layers._Helper('merge_lod_tensor')
            out = h.tmp(true_var.dtype.name)
            h.append('merge_lod_tensor',
                     {'X': self.cond, 'Mask': self.cond, 'InTrue': true_var,
                      'InFalse': false_var}, {'Out': out}, {'level': 0})
            merged.append(out)
        return merged


class _IfElseGuard(object):
    def __init__(self, is_true, ifelse):
        self.is_true = is_true
        self.ie = ifelse
        self.block = _BlockGuard(ifelse.helper, ifelse.cond, False)

    def __enter__(self):
        if self.ie.status != IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError('IfElse: blocks cannot be nested in each other')
        self.ie._parent = self.ie.helper.main.current_block()
        self.ie.status = (IfElse.IN_IF_ELSE_TRUE_BLOCKS if self.is_true
                          else IfElse.IN_IF_ELSE_FALSE_BLOCKS)
        return self.block.__enter__()

    def __exit__(self, exc_type, exc_val, exc_tb):
        table = self.ie.output_table[1 if self.is_true else 0]
        self.ie.status = IfElse.OUT_IF_ELSE_BLOCKS
        self.block.__exit__(exc_type, exc_val, exc_tb)
        if exc_type is not None:
            return False
        if not table:
            raise ValueError('IfElse: call output() inside the %s block'
                             % ('true' if self.is_true else 'false'))
        return False


def case(pred_fn_pairs, default=None, name=None):
    """The fn of the first (pred, fn) pair whose one-element bool pred holds, else
    default() (the last pair's fn when default is None), through nested layers.cond."""
    if not isinstance(pred_fn_pairs, (list, tuple)):
        raise TypeError('case: pred_fn_pairs must be a list or tuple, not %r' % (pred_fn_pairs,))
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError('case: each item of pred_fn_pairs must be a (pred, fn) tuple, '
                            'not %r' % (pair,))
        pred, fn = pair
        _check_bool(pred, 'pred', 'case')
        if not callable(fn):
            raise TypeError('case: the fn of the pair for %s must be callable' % pred.name)
    if default is None:
        if not pred_fn_pairs:
            raise ValueError('case: pred_fn_pairs is empty and there is no default')
        default = pred_fn_pairs[-1][1]
        pred_fn_pairs = pred_fn_pairs[:-1]
    elif not callable(default):
        raise TypeError('case: default must be callable, not %r' % (default,))
    false_fn = default
    for pred, true_fn in reversed(list(pred_fn_pairs)):
        false_fn = functools.partial(layers.cond, pred=pred, true_fn=true_fn, false_fn=false_fn)
    return false_fn()


def switch_case(branch_index, branch_fns, default=None, name=None):
    """The fn whose index equals the one-element integer branch_index; branch_fns a dict
    {index: fn}, a list of (index, fn) or a list of fns (indexed by position); default()
    when none does (the largest index's fn when default is None)."""
    if not isinstance(branch_index, Variable):
        raise TypeError('switch_case: branch_index must be a Variable, not %r' % (branch_index,))
    if branch_index.dtype.name not in ('uint8', 'int32', 'int64'):
        raise TypeError('switch_case: branch_index must be uint8, int32 or int64, not %s'
                        % branch_index.dtype.name)
    if branch_index.dtype.name != 'int64':
        branch_index = layers.cast(branch_index, 'int64')
    if isinstance(branch_fns, dict):
        pairs = list(branch_fns.items())
    elif isinstance(branch_fns, (list, tuple)):
        if all(callable(f) for f in branch_fns):
            pairs = list(enumerate(branch_fns))
        else:
            pairs = list(branch_fns)
    else:
        raise TypeError('switch_case: branch_fns must be a dict, list or tuple, not %r'
                        % (branch_fns,))
    seen = set()
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2 or not isinstance(pair[0], int) \
                or not callable(pair[1]):
            raise TypeError('switch_case: each branch must be an (int, callable) pair, not %r'
                            % (pair,))
        if pair[0] in seen:
            raise ValueError('switch_case: index %d is given twice' % pair[0])
        seen.add(pair[0])
    pairs.sort(key=lambda p: p[0])
    if default is None:
        if not pairs:
            raise ValueError('switch_case: branch_fns is empty and there is no default')
        default = pairs[-1][1]
        pairs = pairs[:-1]
    elif not callable(default):
        raise TypeError('switch_case: default must be callable, not %r' % (default,))
    false_fn = default
    for index, fn in pairs:
        pred = layers.equal(branch_index, layers.fill_constant([1], 'int64', index))
        false_fn = functools.partial(layers.cond, pred=pred, true_fn=fn, false_fn=false_fn)
    return false_fn()
