"""Fluid 1.x's image layers (re-exported by rill.layers): image_resize, interpolate,
resize_bilinear, resize_nearest, resize_trilinear and image_resize_short, appending
bilinear_interp / nearest_interp / trilinear_interp with Paddle's attributes and size
inputs (operators/interp.c); pixel_shuffle, shuffle_channel and space_to_depth
(operators/rearrange.c); temporal_shift (operators/temporal_shift.c), fsp_matrix (the fsp
op, operators/fsp.c), affine_grid (operators/affine_grid.c) and grid_sampler
(operators/grid_sampler.c), unfold (operators/unfold.c) and im2sequence
(operators/im2sequence.c), each with its gradient; random_crop (operators/random_crop.c)
and similarity_focus (operators/similarity_focus.c), without."""

from . import layers
from .framework import Variable

__all__ = ['image_resize', 'interpolate', 'resize_bilinear', 'resize_nearest',
           'resize_trilinear', 'image_resize_short', 'pixel_shuffle', 'shuffle_channel',
           'space_to_depth', 'temporal_shift', 'fsp_matrix', 'affine_grid', 'grid_sampler',
           'unfold', 'im2sequence', 'random_crop', 'similarity_focus']

_METHODS = {'BILINEAR': 'bilinear', 'NEAREST': 'nearest', 'TRILINEAR': 'trilinear'}


def image_resize(input, out_shape=None, scale=None, name=None, resample='BILINEAR',
                 actual_shape=None, align_corners=True, align_mode=1, data_format='NCHW'):
    """Resizes the spatial dims of a 4-D input (NCHW or NHWC; 5-D NCDHW or NDHWC for
    TRILINEAR) to out_shape ([h, w] or [d, h, w] of ints or one-element int Variables, or
    a 1-D int Variable) or by scale (a float or a Variable); actual_shape (a Variable)
    overrides both at run time."""
    where = 'image_resize'
    if resample not in _METHODS:
        raise ValueError("%s: resample is %r; rill has 'BILINEAR', 'TRILINEAR' and 'NEAREST' "
                         "(no BICUBIC interpolation)" % (where, resample))
    if not isinstance(input, Variable):
        raise TypeError('%s: input must be a Variable, got %r' % (where, input))
    if input.dtype.name not in ('float32', 'float64'):
        raise TypeError("%s: input ('%s') is %s, expected float32 or float64"
                        % (where, input.name, input.dtype.name))
    rank = 5 if resample == 'TRILINEAR' else 4
    if len(input.shape) != rank:
        raise ValueError("%s: input ('%s') must be %d-D for %s, got shape %s"
                         % (where, input.name, rank, resample, list(input.shape)))
    if not isinstance(align_corners, bool):
        raise TypeError('%s: align_corners must be a bool' % where)
    if align_mode not in (0, 1):
        raise ValueError('%s: align_mode must be 0 or 1, got %r' % (where, align_mode))
    if out_shape is None and scale is None:
        raise ValueError('%s: one of out_shape and scale must be given' % where)
    formats = ('NCDHW', 'NDHWC') if rank == 5 else ('NCHW', 'NHWC')
    if data_format not in formats:
        raise ValueError("%s: data_format must be %r or %r for a %d-D input, got %r"
                         % (where, formats[0], formats[1], rank, data_format))
    method = _METHODS[resample]
    h = layers._Helper(method + '_interp', name)
    inputs = {'X': input}
    attrs = {'out_d': -1, 'out_h': -1, 'out_w': -1, 'interp_method': method,
             'align_corners': align_corners, 'align_mode': int(align_mode),
             'data_layout': data_format}
    if out_shape is not None:
        if isinstance(out_shape, Variable):
            out_shape.stop_gradient = True
            inputs['OutSize'] = out_shape
        else:
            if not isinstance(out_shape, (list, tuple)) or len(out_shape) != rank - 2:
                raise ValueError('%s: out_shape must be a Variable or a list of %d sizes for a '
                                 '%d-D input, got %r' % (where, rank - 2, rank, out_shape))
            if any(isinstance(d, Variable) for d in out_shape):
                sizes = []
                for d in out_shape:
                    if isinstance(d, Variable):
                        d.stop_gradient = True
                        sizes.append(d)
                    else:
                        sizes.append(layers.fill_constant([1], 'int32', int(d), force_cpu=True))
                inputs['SizeTensor'] = sizes
                vals = [-1 if isinstance(d, Variable) else int(d) for d in out_shape]
            else:
                vals = [int(d) for d in out_shape]
                if any(v <= 0 for v in vals):
                    raise ValueError('%s: every size in out_shape must be positive, got %r'
                                     % (where, out_shape))
            if rank == 5:
                attrs['out_d'], attrs['out_h'], attrs['out_w'] = vals
            else:
                attrs['out_h'], attrs['out_w'] = vals
    elif isinstance(scale, Variable):
        scale.stop_gradient = True
        inputs['Scale'] = scale
    elif isinstance(scale, (int, float)) and not isinstance(scale, bool):
        if scale <= 0:
            raise ValueError('%s: scale must be positive, got %r' % (where, scale))
        attrs['scale'] = float(scale)
    else:
        raise TypeError('%s: scale must be a float, an int or a Variable, got %r'
                        % (where, scale))
    if isinstance(actual_shape, Variable):
        actual_shape.stop_gradient = True
        inputs['OutSize'] = actual_shape
    elif actual_shape is not None:
        raise TypeError('%s: actual_shape must be a Variable or None' % where)
    out = h.tmp(input.dtype.name)
    h.append(method + '_interp', inputs, {'Out': out}, attrs)
    return out


def interpolate(input, out_shape=None, scale=None, name=None, resample='BILINEAR',
                actual_shape=None, align_corners=True, align_mode=1, data_format='NCHW'):
    return image_resize(input, out_shape, scale, name, resample, actual_shape,
                        align_corners, align_mode, data_format)


interpolate.__doc__ = image_resize.__doc__


def resize_bilinear(input, out_shape=None, scale=None, name=None, actual_shape=None,
                    align_corners=True, align_mode=1, data_format='NCHW'):
    """image_resize with resample='BILINEAR'."""
    return image_resize(input, out_shape, scale, name, 'BILINEAR', actual_shape,
                        align_corners, align_mode, data_format)


def resize_trilinear(input, out_shape=None, scale=None, name=None, actual_shape=None,
                     align_corners=True, align_mode=1, data_format='NCDHW'):
    """image_resize with resample='TRILINEAR' (5-D input)."""
    return image_resize(input, out_shape, scale, name, 'TRILINEAR', actual_shape,
                        align_corners, align_mode, data_format)


def image_resize_short(input, out_short_len, resample='BILINEAR'):
    """Resizes a 4-D NCHW input so that its shorter spatial side becomes out_short_len and
    the other keeps the aspect ratio (int(long * out_short_len / short + 0.5)); H wins a
    tie. The extents must be known."""
    if not isinstance(input, Variable):
        raise TypeError('image_resize_short: input must be a Variable, got %r' % (input,))
    shape = list(input.shape)
    if len(shape) != 4:
        raise ValueError("image_resize_short: input ('%s') must be 4-D (N, C, H, W), got "
                         "shape %s" % (input.name, shape))
    hw = shape[2:4]
    if min(hw) <= 0:
        raise ValueError("image_resize_short: the spatial extents of input ('%s') must be "
                         "known, got shape %s" % (input.name, shape))
    short = hw.index(min(hw))
    out = list(hw)
    out[short] = out_short_len
    out[1 - short] = int(float(hw[1 - short]) * (float(out_short_len) / float(hw[short])) + 0.5)
    return image_resize(input, out_shape=out, resample=resample)


def resize_nearest(input, out_shape=None, scale=None, name=None, actual_shape=None,
                   align_corners=True, data_format='NCHW'):
    """image_resize with resample='NEAREST'."""
    return image_resize(input, out_shape, scale, name, 'NEAREST', actual_shape,
                        align_corners, 1, data_format)


def _rearrange(op, layer, x, attr, value, name=None):
    if not isinstance(x, Variable):
        raise TypeError('%s: x must be a Variable, got %r' % (layer, x))
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError('%s: %s must be an int >= 1, got %r' % (layer, attr, value))
    if len(x.shape) != 4:
        raise ValueError("%s: x ('%s') must be 4-D NCHW, got shape %s"
                         % (layer, x.name, list(x.shape)))
    h = layers._Helper(op, name)
    out = h.tmp(x.dtype.name)
    h.append(op, {'X': x}, {'Out': out}, {attr: value})
    return out


def pixel_shuffle(x, upscale_factor):
    """[N, C, H, W] -> [N, C/r^2, H r, W r] (r = upscale_factor)."""
    return _rearrange('pixel_shuffle', 'pixel_shuffle', x, 'upscale_factor', upscale_factor)


def shuffle_channel(x, group, name=None):
    """Channel a C/group + b becomes channel b group + a."""
    return _rearrange('shuffle_channel', 'shuffle_channel', x, 'group', group, name)


def space_to_depth(x, blocksize, name=None):
    """[N, C, H, W] -> [N, C bs^2, H/bs, W/bs] in Paddle's element order (C a multiple of
    bs^2, H and W of bs)."""
    return _rearrange('space_to_depth', 'space_to_depth', x, 'blocksize', blocksize, name)


def _float4d(x, what, layer):
    if not isinstance(x, Variable):
        raise TypeError('%s: %s must be a Variable, got %r' % (layer, what, x))
    if x.dtype.name not in ('float32', 'float64'):
        raise TypeError("%s: %s ('%s') is %s, expected float32 or float64"
                        % (layer, what, x.name, x.dtype.name))


def temporal_shift(x, seg_num, shift_ratio=0.25, name=None):
    """x [N * seg_num, C, H, W] as clips of seg_num frames: the first C * shift_ratio
    channels take the previous frame's values, the next C * shift_ratio the next frame's
    (zeros past the clip's ends)."""
    _float4d(x, 'x', 'temporal_shift')
    if not isinstance(seg_num, int):
        raise TypeError('seg_num must be int type.')
    if not isinstance(shift_ratio, float):
        raise TypeError('temporal_shift: shift_ratio must be a float, got %r' % (shift_ratio,))
    h = layers._Helper('temporal_shift', name)
    out = h.tmp(x.dtype.name)
    h.append('temporal_shift', {'X': x}, {'Out': out},
             {'seg_num': seg_num, 'shift_ratio': shift_ratio})
    return out


def fsp_matrix(x, y):
    """The FSP matrix of feature maps x [N, C1, H, W] and y [N, C2, H, W]: x y^T / (H W)
    per sample, [N, C1, C2]."""
    _float4d(x, 'x', 'fsp_matrix')
    _float4d(y, 'y', 'fsp_matrix')
    h = layers._Helper('fsp_matrix')
    out = h.tmp(x.dtype.name)
    h.append('fsp', {'X': x, 'Y': y}, {'Out': out})
    return out


def affine_grid(theta, out_shape, name=None):
    """The sampling grid [N, H, W, 2] of affine transforms theta [N, 2, 3] for an output
    of shape out_shape (N, C, H, W: a list or tuple of ints, or an int32 Variable)."""
    if not isinstance(theta, Variable):
        raise ValueError('The theta should be a Variable.')
    _float4d(theta, 'theta', 'affine_grid')
    if not isinstance(out_shape, (list, tuple, Variable)):
        raise ValueError('The out_shape should be a list, tuple or Variable.')
    h = layers._Helper('affine_grid', name)
    out = h.tmp(theta.dtype.name)
    ins, attrs = {'Theta': theta}, {}
    if isinstance(out_shape, Variable):
        if out_shape.dtype.name != 'int32':
            raise TypeError("affine_grid: out_shape ('%s') is %s, expected int32"
                            % (out_shape.name, out_shape.dtype.name))
        ins['OutputShape'] = out_shape
    else:
        attrs['output_shape'] = [int(v) for v in out_shape]
    h.append('affine_grid', ins, {'Output': out}, attrs)
    return out


def grid_sampler(x, grid, name=None):
    """x [N, C, H, W] sampled bilinearly at grid [N, OH, OW, 2] ((x, y) in [-1, 1], the
    corner pixels' centres at -1 and 1; zeros outside), as Fluid 1.8's: [N, C, OH, OW]."""
    _float4d(x, 'x', 'grid_sampler')
    _float4d(grid, 'grid', 'grid_sampler')
    h = layers._Helper('grid_sampler', name)
    out = h.tmp(x.dtype.name)
    h.append('grid_sampler', {'X': x, 'Grid': grid}, {'Output': out})
    return out


def _float_nchw(x, what, layer):
    _float4d(x, what, layer)
    if len(x.shape) != 4:
        raise ValueError("%s: %s ('%s') must be 4-D [N, C, H, W], got shape %s"
                         % (layer, what, x.name, list(x.shape)))


def _pair(v, what, layer, n=2):
    """An int or a list of n ints (Fluid's spelling of a window attribute) as a list."""
    if isinstance(v, int) and not isinstance(v, bool):
        return [v] * n
    if isinstance(v, (list, tuple)) and len(v) == n and \
            all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        return list(v)
    raise ValueError('%s: %s must be an int or a list of %d ints, got %r' % (layer, what, n, v))


def _paddings_tlbr(v, what, layer):
    """unfold's and im2sequence's paddings (read by layers._paddings: an int, [p_h, p_w]
    or 4 ints) as [top, left, bottom, right]: 4 ints are taken in that order."""
    p, _ = layers._paddings(v, 2, layer, what, explicit_only=True)
    return p * 2 if len(p) == 2 else p


def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """im2col: [N, C, H, W] -> [N, C * kh * kw, L], every kernel_sizes window (at strides,
    with dilations, over x padded by paddings: an int, [p_h, p_w] or [top, left, bottom,
    right]) one column. With its gradient."""
    _float_nchw(x, 'x', 'unfold')
    attrs = {'kernel_sizes': _pair(kernel_sizes, 'kernel_sizes', 'unfold'),
             'strides': _pair(strides, 'strides', 'unfold'),
             'paddings': _paddings_tlbr(paddings, 'paddings', 'unfold'),
             'dilations': _pair(dilations, 'dilations', 'unfold')}
    h = layers._Helper('unfold', name)
    out = h.tmp(x.dtype.name)
    h.append('unfold', {'X': x}, {'Y': out}, attrs)
    return out


def im2sequence(input, filter_size=1, stride=1, padding=0, input_image_size=None,
                out_stride=1, name=None):
    """Every filter_size window of each image of input [N, C, H, W] becomes a row of a
    LoD tensor [windows, C * kh * kw], one sequence per image. input_image_size (float32
    [N, 2] real heights and widths) with out_stride limits image n's windows to its real
    size divided by out_stride (rounded up) when N > 1. With its gradient."""
    _float_nchw(input, 'input', 'im2sequence')
    attrs = {'kernels': _pair(filter_size, 'filter_size', 'im2sequence'),
             'strides': _pair(stride, 'stride', 'im2sequence'),
             'paddings': _paddings_tlbr(padding, 'padding', 'im2sequence')}
    inputs = {'X': input}
    if input_image_size is not None:
        if not isinstance(input_image_size, Variable):
            raise TypeError('im2sequence: input_image_size must be a Variable, got %r'
                            % (input_image_size,))
        inputs['Y'] = input_image_size
        attrs['out_stride'] = _pair(out_stride, 'out_stride', 'im2sequence')
    h = layers._Helper('im2sequence', name)
    out = h.tmp(input.dtype.name)
    h.append('im2sequence', inputs, {'Out': out}, attrs)
    return out


def random_crop(x, shape, seed=None):
    """Crops the last len(shape) dims of x at random offsets, one draw per instance, with
    Paddle 1.8.5's generator (operators/random_crop.c): the same seed gives Paddle's crops.
    seed: an int (the first run's seed; None picks one with numpy, as Fluid does) or an
    int64 Variable; the op writes the next run's seed back into it."""
    import numpy as np
    from .framework import unique_name
    if not isinstance(x, Variable):
        raise TypeError('random_crop: x must be a Variable, got %r' % (x,))
    if not isinstance(shape, (list, tuple)) or not shape or \
            not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape):
        raise ValueError('random_crop: shape must be a non-empty list of positive ints, got %r'
                         % (shape,))
    h = layers._Helper('random_crop')
    attrs = {'shape': list(shape)}
    if seed is None:
        seed = int(np.random.randint(-65536, 65536))
    if isinstance(seed, int) and not isinstance(seed, bool):
        attrs['startup_seed'] = seed
        seed = layers.default_main_program().global_block().create_var(
            name=unique_name.generate('random_crop_seed'), shape=[1], dtype='int64',
            persistable=True)
        seed.stop_gradient = True
    elif not isinstance(seed, Variable):
        raise ValueError("random_crop: 'seed' must be a Variable or an int, got %r" % (seed,))
    out = h.tmp(x.dtype.name, stop_gradient=True)
    h.append('random_crop', {'X': x, 'Seed': seed}, {'Out': out, 'SeedOut': seed}, attrs)
    return out


def similarity_focus(input, axis, indexes, name=None):
    """A 0/1 mask of input [N, A, B, C]: for each index on axis (1, 2 or 3), the largest
    entries of that slice, one per row and column, marked along axis. No gradient."""
    _float_nchw(input, 'input', 'similarity_focus')
    if axis not in (1, 2, 3):
        raise ValueError('similarity_focus: axis must be 1, 2 or 3, got %r' % (axis,))
    if isinstance(indexes, int) and not isinstance(indexes, bool):
        indexes = [indexes]
    if not isinstance(indexes, (list, tuple)) or not indexes:
        raise ValueError('similarity_focus: indexes must be a non-empty list of ints, got %r'
                         % (indexes,))
    h = layers._Helper('similarity_focus', name)
    out = h.tmp(input.dtype.name, stop_gradient=True)
    h.append('similarity_focus', {'X': input}, {'Out': out},
             {'axis': int(axis), 'indexes': [int(i) for i in indexes]})
    return out
