"""Composite networks (Fluid 1.x's nets.py) built from layers."""

from . import layers

__all__ = ['simple_img_conv_pool', 'img_conv_group', 'sequence_conv_pool', 'glu']


def simple_img_conv_pool(input, num_filters, filter_size, pool_size, pool_stride,
                         pool_padding=0, pool_type='max', global_pooling=False,
                         conv_stride=1, conv_padding=0, conv_dilation=1, conv_groups=1,
                         param_attr=None, bias_attr=None, act=None, use_cudnn=True):
    """conv2d followed by pool2d."""
    conv = layers.conv2d(input, num_filters, filter_size, stride=conv_stride,
                         padding=conv_padding, dilation=conv_dilation, groups=conv_groups,
                         param_attr=param_attr, bias_attr=bias_attr, act=act)
    return layers.pool2d(conv, pool_size, pool_type, pool_stride, pool_padding,
                         global_pooling=global_pooling)


def img_conv_group(input, conv_num_filter, pool_size, conv_padding=1, conv_filter_size=3,
                   conv_act=None, param_attr=None, conv_with_batchnorm=False,
                   conv_batchnorm_drop_rate=0.0, pool_stride=1, pool_type='max',
                   use_cudnn=True):
    """Several conv2d (each optionally with batch_norm and dropout), then pool2d."""
    n = len(conv_num_filter)

    def per_layer(v):
        return list(v) if isinstance(v, (list, tuple)) else [v] * n

    paddings, sizes = per_layer(conv_padding), per_layer(conv_filter_size)
    attrs, with_bn = per_layer(param_attr), per_layer(conv_with_batchnorm)
    drops = per_layer(conv_batchnorm_drop_rate)
    tmp = input
    for i in range(n):
        act = None if with_bn[i] else conv_act
        tmp = layers.conv2d(tmp, conv_num_filter[i], sizes[i], padding=paddings[i],
                            param_attr=attrs[i], act=act)
        if with_bn[i]:
            tmp = layers.batch_norm(tmp, act=conv_act)
            if drops[i] > 0:
                tmp = layers.dropout(tmp, drops[i])
    return layers.pool2d(tmp, pool_size, pool_type, pool_stride)


def sequence_conv_pool(input, num_filters, filter_size, param_attr=None, act="sigmoid",
                       pool_type="max", bias_attr=None):
    """sequence_conv followed by sequence_pool."""
    conv = layers.sequence_conv(input=input, num_filters=num_filters, filter_size=filter_size,
                                param_attr=param_attr, bias_attr=bias_attr, act=act)
    return layers.sequence_pool(input=conv, pool_type=pool_type)


def glu(input, dim=-1):
    """The gated linear unit: input split in two halves a, b along dim, a * sigmoid(b)."""
    if not isinstance(input, layers.Variable) or input.dtype.name not in ('float32', 'float64'):
        raise TypeError('glu: input must be a float32 or float64 Variable, not %r' % (input,))
    a, b = layers.split(input, num_or_sections=2, dim=dim)
    return layers.elementwise_mul(a, layers.sigmoid(b))


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.nets', 'rill.nets')
