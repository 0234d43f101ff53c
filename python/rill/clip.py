"""Gradient clipping (Fluid 1.x's clip.py). GradientClipByGlobalNorm is applied by C
(rill_program_append_clip_by_global_norm) before weight decay, as Paddle orders them."""

__all__ = ['GradientClipByGlobalNorm', 'ClipGradByGlobalNorm', 'set_gradient_clip']


class GradientClipByGlobalNorm(object):
    """Scales every gradient by clip_norm / max(global_norm, clip_norm)."""

    def __init__(self, clip_norm, group_name='default_group'):
        if clip_norm <= 0:
            raise ValueError('GradientClipByGlobalNorm: clip_norm must be positive, got %r' %
                             (clip_norm,))
        self.clip_norm = float(clip_norm)
        self.group_name = group_name


ClipGradByGlobalNorm = GradientClipByGlobalNorm

_program_clip = {}


def set_gradient_clip(clip, param_list=None, program=None):
    """Fluid 1.x style: the clip applies to the next minimize() of `program`."""
    from .framework import default_main_program
    program = program or default_main_program()
    _program_clip[program._id] = clip
