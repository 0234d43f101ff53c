"""Gradient clipping (Fluid 1.x's clip.py). GradientClipByGlobalNorm is applied by C
(rill_program_append_clip_by_global_norm) before weight decay, as Paddle orders them."""

__all__ = ['GradientClipByGlobalNorm', 'ClipGradByGlobalNorm', 'GradientClipByValue',
           'GradientClipByNorm', 'ClipGradByValue', 'ClipGradByNorm', 'set_gradient_clip',
           'ErrorClipByValue', 'ClipByValue', 'ClipByNorm', 'ClipByGlobalNorm']


class BaseErrorClipAttr(object):
    def _append_clip_op(self, block, grad_name, at):
        raise NotImplementedError


class ErrorClipByValue(BaseErrorClipAttr):
    """Set as `var.error_clip`: during the backward pass of Optimizer.minimize, the
    gradient of var is clipped into [min, max] (min defaults to -max) right after each
    backward op that writes it, by a `clip` op in place, so the ops before it in the
    backward pass see the clipped error."""

    def __init__(self, max, min=None):
        max = float(max)
        min = -max if min is None else float(min)
        self.max, self.min = max, min

    def _append_clip_op(self, block, grad_name, at):
        from .framework import OpRole
        block._insert_op(at, 'clip', inputs={'X': [grad_name]}, outputs={'Out': [grad_name]},
                         attrs={'min': self.min, 'max': self.max,
                                'op_role': OpRole.Backward})


def _append_error_clips(program):
    """The clip ops of every variable with an error_clip, after each backward op of the
    global block writing its gradient (var@GRAD)."""
    from .framework import OpRole
    blk = program.global_block()
    # Most programs set no error_clip: then no op needs reading back from C.
    if not any(getattr(v, 'error_clip', None) is not None
               for b in program.blocks for v in b.vars.values()):
        return
    i = 0
    while i < len(blk.ops):
        op = blk.ops[i]
        i += 1
        role = op.attr('op_role') or 0
        if not role & OpRole.Backward:
            continue
        for name in op.output_arg_names:
            if not name.endswith('@GRAD'):
                continue
            fwd = blk._find_var_recursive(name[:-len('@GRAD')])
            clip = getattr(fwd, 'error_clip', None) if fwd is not None else None
            if clip is None:
                continue
            if not isinstance(clip, BaseErrorClipAttr):
                raise TypeError('variable %s: error_clip should be an ErrorClipByValue, got %r'
                                % (fwd.name, clip))
            clip._append_clip_op(blk, name, i)
            i += 1  # past the clip just inserted


class GradientClipByGlobalNorm(object):
    """Scales every gradient by clip_norm / max(global_norm, clip_norm)."""

    def __init__(self, clip_norm, group_name='default_group'):
        if clip_norm <= 0:
            raise ValueError('GradientClipByGlobalNorm: clip_norm must be positive, got %r' %
                             (clip_norm,))
        self.clip_norm = float(clip_norm)
        self.group_name = group_name


ClipGradByGlobalNorm = GradientClipByGlobalNorm


class GradientClipByValue(object):
    """Clips every gradient element into [min, max] (min defaults to -max): a `clip`
    op per gradient, in place."""

    def __init__(self, max, min=None):
        max = float(max)
        min = -max if min is None else float(min)
        if min >= max:
            raise ValueError('GradientClipByValue: min %g must be below max %g' % (min, max))
        self.max, self.min = max, min

    def _append(self, block, param, grad):
        """Clips grad in place; a selected-rows grad, which the clip merges, into a new
        selected-rows variable, whose name it returns."""
        out = _sparse_out(block, param, grad, 'clip')
        block.append_op('clip', inputs={'X': grad}, outputs={'Out': out or grad},
                        attrs={'min': self.min, 'max': self.max})
        return out and out.name


class GradientClipByNorm(object):
    """Scales each gradient whose L2 norm exceeds clip_norm down to clip_norm:
    g * clip_norm / max(norm(g), clip_norm), built from square, reduce_sum, sqrt,
    fill_constant, elementwise_max, elementwise_div and elementwise_mul ops."""

    def __init__(self, clip_norm):
        if clip_norm <= 0:
            raise ValueError('GradientClipByNorm: clip_norm must be positive, got %r' %
                             (clip_norm,))
        self.clip_norm = float(clip_norm)

    def _append(self, block, param, grad):
        """Scales grad in place. A selected-rows grad is merged first (its norm is the
        merged rows' norm, as Paddle's clip_by_norm kernel takes it) and the merged rows
        scaled into a new selected-rows variable, whose name it returns."""
        from .framework import unique_name

        def tmp(key):
            return block.create_var(name=unique_name.generate(grad.name + '_clip_' + key),
                                    infer=True)
        sq, total, norm, limit, big, scale = (tmp(k) for k in
                                              ('sq', 'sum', 'norm', 'c', 'max', 'scale'))
        merged = _sparse_out(block, param, grad, 'merged')
        out = _sparse_out(block, param, grad, 'clip')
        values = grad
        if merged is not None:
            block.append_op('merge_selected_rows', inputs={'X': grad}, outputs={'Out': merged})
            values = tmp('values')
            block.append_op('get_tensor_from_selected_rows', inputs={'X': merged},
                            outputs={'Out': values})
        block.append_op('square', inputs={'X': values}, outputs={'Out': sq})
        block.append_op('reduce_sum', inputs={'X': sq}, outputs={'Out': total},
                        attrs={'dim': [0], 'reduce_all': True, 'keep_dim': False})
        block.append_op('sqrt', inputs={'X': total}, outputs={'Out': norm})
        block.append_op('fill_constant', outputs={'Out': limit},
                        attrs={'shape': [1], 'value': self.clip_norm,
                               'dtype': grad.desc['dtype']})
        block.append_op('elementwise_max', inputs={'X': norm, 'Y': limit}, outputs={'Out': big})
        block.append_op('elementwise_div', inputs={'X': limit, 'Y': big},
                        outputs={'Out': scale})
        block.append_op('elementwise_mul', inputs={'X': merged or grad, 'Y': scale},
                        outputs={'Out': out or grad})
        return out and out.name


def _sparse_out(block, param, grad, key):
    """A new selected-rows variable shaped like param when grad holds selected rows,
    else None."""
    from . import core
    from .framework import unique_name
    if getattr(grad, 'type', None) != core.SELECTED_ROWS:
        return None
    return block.create_var(name=unique_name.generate('%s_%s' % (grad.name, key)),
                            shape=list(param.shape), dtype=param.dtype.name,
                            type=core.SELECTED_ROWS)


ClipGradByValue = GradientClipByValue
ClipGradByNorm = GradientClipByNorm
# Fluid 1.8's older names of the same classes
ClipByValue = GradientClipByValue
ClipByNorm = GradientClipByNorm
ClipByGlobalNorm = GradientClipByGlobalNorm

_program_clip = {}


def set_gradient_clip(clip, param_list=None, program=None):
    """Fluid 1.x style: the clip applies to the next minimize() of `program`."""
    from .framework import default_main_program
    program = program or default_main_program()
    _program_clip[program._id] = clip


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.clip', 'rill.clip')
