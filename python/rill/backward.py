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


def _run_pass(loss, no_grad_set, where, seed=None):
    if not isinstance(loss, Variable):
        raise TypeError('%s: loss must be a Variable, got %r' % (where, loss))
    program = loss.block.program
    if loss.block.idx != 0:
        raise core.error_class('INVALID_ARGUMENT')(
            "%s: loss '%s' must be a variable of the global block" % (where, loss.name))
    blk = program.global_block()
    first = len(blk.ops)
    pairs = program._c().append_backward(loss.name, _names(no_grad_set, 'no_grad_set', where),
                                         seed)
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
                fwd = v[:v.index('@GRAD')]
                while fwd.startswith('grad/') and fwd not in blk.vars:
                    fwd = fwd[len('grad/'):]
                context[v] = fwd
        for _ in range(first, len(blk.ops)):
            for cb in callbacks:
                cb(block=blk, context=context)
    return out


def _one_element(v):
    return len(v.shape) > 0 and all(d == 1 for d in v.shape)


def _seeded_sum(targets, target_gradients):
    """One one-element variable whose gradient with respect to anything is the sum over
    the targets of each target's Jacobian applied to its seed (its target gradient, or
    ones): sum_i reduce_sum(target_i * seed_i). Paddle seeds each target the same way
    and sums what reaches each input."""
    from . import layers
    parts = []
    for t, g in zip(targets, target_gradients):
        parts.append(layers.reduce_sum(t if g is None else layers.elementwise_mul(t, g)))
    return parts[0] if len(parts) == 1 else layers.sums(parts)


def gradients(targets, inputs, target_gradients=None, no_grad_set=None):
    """The gradients of `targets` (a Variable or a list) with respect to each of
    `inputs`, as Paddle's calc_gradient: each target is seeded with its entry of
    target_gradients (a Variable of the target's shape), or ones where that is None,
    and the gradients reaching an input from every target are summed. Returns a list
    with a Variable per input, None for an input no target depends on. Inputs must
    have stop_gradient False (fluid.data sets it True). Several targets, a target of
    more than one element or a target gradient add the seeding ops (reduce_sum,
    elementwise_mul, sums) to the forward program; target gradients get no gradient."""
    where = 'gradients'
    ts = list(targets) if isinstance(targets, (list, tuple)) else [targets]
    if not ts:
        raise ValueError('%s: targets is empty' % where)
    for t in ts:
        if not isinstance(t, Variable):
            raise TypeError('%s: targets must be Variables, got %r' % (where, t))
    if target_gradients is None:
        tg = [None] * len(ts)
    else:
        tg = list(target_gradients) if isinstance(target_gradients, (list, tuple)) \
            else [target_gradients]
    if len(tg) != len(ts):
        raise ValueError('Should have the same number of target_gradients as targets')
    for t, g in zip(ts, tg):
        if g is None:
            continue
        if not isinstance(g, Variable):
            raise TypeError('%s: target_gradients must be Variables or None, got %r'
                            % (where, g))
        if t.block.idx != ts[0].block.idx or t.block.program is not ts[0].block.program:
            raise ValueError('all targets must be in the same block')
        if list(t.shape) != list(g.shape):
            raise ValueError('The shapes of target and grad are different: %s %s'
                             % (t.name, g.name))
    ins = [inputs] if isinstance(inputs, Variable) else list(inputs)
    for v in ins:
        if not isinstance(v, Variable):
            raise TypeError('%s: inputs must be Variables, got %r' % (where, v))
    if len(ts) == 1 and tg[0] is None and _one_element(ts[0]):
        target = ts[0]
    else:
        from .framework import program_guard
        program = ts[0].block.program
        with program_guard(program):
            target = _seeded_sum(ts, tg)
        no_grad = _names(no_grad_set, 'no_grad_set', where)
        no_grad_set = no_grad + [g.name for g in tg if g is not None and g.name not in no_grad]
    blk = target.block.program.global_block()
    before = set(blk.vars)
    # a target whose gradient exists already (an earlier pass) is seeded under a new
    # name, target@GRAD_<n>, as Paddle's calc_gradient does
    seed = None
    if target.name + '@GRAD' in before:
        from .framework import unique_name
        seed = unique_name.generate(target.name + '@GRAD')
    program, blk, _, _ = _run_pass(target, no_grad_set, where, seed)
    return [_pass_grad(blk, v.name + '@GRAD', before) for v in ins]


def _pass_grad(blk, name, before):
    """The gradient `name` as the last pass wrote it: name itself when it is new, else
    grad/.../name, one grad/ per pass (the C pass renames a gradient that exists)."""
    if name not in before:
        return blk._find_var_recursive(name)
    for v in blk.vars:
        if v not in before and v.endswith('/' + name) and \
                v[:-len(name)].replace('grad/', '') == '':
            return blk.vars[v]
    return None
