"""Fluid's paddle.fluid.backward: append_backward and gradients over the C backward pass
(rill_program_append_backward, doc/design/backward.md)."""

from . import core
from .framework import Parameter, Variable

__all__ = ['append_backward', 'gradients']


def _names(vs, what, where):
    """Variable names of a list/set of Variables or strings."""
    if vs is None:
        return []
    if isinstance(vs, (Variable, str)):
        vs = [vs]
    out = []
    for v in vs:
        if isinstance(v, Variable):
            out.append(v.name)
        elif isinstance(v, str):
            out.append(v)
        else:
            raise TypeError('%s: every item of %s must be a Variable or a name, got %r'
                            % (where, what, v))
    return out


def _run_pass(loss, no_grad_set, where):
    if not isinstance(loss, Variable):
        raise TypeError('%s: loss must be a Variable, got %r' % (where, loss))
    program = loss.block.program
    if loss.block.idx != 0:
        raise core.error_class('INVALID_ARGUMENT')(
            "%s: loss '%s' must be a variable of the global block" % (where, loss.name))
    blk = program.global_block()
    first = len(blk.ops)
    pairs = program._c().append_backward(loss.name, _names(no_grad_set, 'no_grad_set', where))
    program._transformed()
    return program, blk, first, [(p, g) for p, g in pairs]


def append_backward(loss, parameter_list=None, no_grad_set=None, callbacks=None,
                    checkpoints=None):
    """Appends the gradient ops of `loss` (a one-element variable of the global block) to
    its program; returns [(Parameter, gradient Variable)] for the trainable parameters (or
    those named in parameter_list) that have a gradient. Each callback is called as
    callback(block=, context=) once per appended gradient op, after the pass, with
    context mapping each gradient name to its variable's name. checkpoints: Variables
    cutting the forward pass into segments that the backward pass re-runs
    (rill/recompute.py)."""
    where = 'append_backward'
    if callbacks is not None:
        if not isinstance(callbacks, (list, tuple)) or not all(callable(c) for c in callbacks):
            raise TypeError('%s: callbacks must be a list of callables, got %r'
                            % (where, callbacks))
    if checkpoints is not None:
        if not isinstance(checkpoints, (list, tuple)) or not all(
                isinstance(c, (Variable, str)) for c in checkpoints):
            raise TypeError('%s: checkpoints must be a list of Variables, got %r'
                            % (where, checkpoints))
    wanted = None if parameter_list is None else set(_names(parameter_list, 'parameter_list',
                                                            where))
    program, blk, first, pairs = _run_pass(loss, no_grad_set, where)
    if checkpoints:
        from .recompute import _rewrite
        _rewrite(program, [c.name if isinstance(c, Variable) else c for c in checkpoints])
        blk = program.global_block()
    out = []
    for p, g in pairs:
        param = blk.vars.get(p)
        if wanted is not None:
            if p not in wanted:
                continue
        elif isinstance(param, Parameter) and not param.trainable:
            continue
        out.append((param, blk._find_var_recursive(g)))
    if callbacks:
        context = {}
        for v in blk.vars:
            if '@GRAD' in v:
                context[v] = v[:v.index('@GRAD')]
        for _ in range(first, len(blk.ops)):
            for cb in callbacks:
                cb(block=blk, context=context)
    return out


def gradients(targets, inputs, target_gradients=None, no_grad_set=None):
    """The gradients of `targets` (one one-element variable, or a list holding one) with
    respect to each of `inputs`: a list with a Variable per input, None for an input the
    target does not depend on. Inputs must have stop_gradient False (fluid.data sets it
    True)."""
    where = 'gradients'
    if isinstance(targets, (list, tuple)):
        if len(targets) != 1:
            raise core.error_class('UNIMPLEMENTED')(
                '%s: one target is supported, got %d' % (where, len(targets)))
        target = targets[0]
    else:
        target = targets
    if target_gradients is not None:
        tg = target_gradients if isinstance(target_gradients, (list, tuple)) \
            else [target_gradients]
        if any(t is not None for t in tg):
            raise core.error_class('UNIMPLEMENTED')(
                '%s: target_gradients are not supported (the target is seeded with 1)'
                % where)
    ins = [inputs] if isinstance(inputs, Variable) else list(inputs)
    for v in ins:
        if not isinstance(v, Variable):
            raise TypeError('%s: inputs must be Variables, got %r' % (where, v))
    program, blk, _, _ = _run_pass(target, no_grad_set, where)
    return [blk._find_var_recursive(v.name + '@GRAD') for v in ins]
