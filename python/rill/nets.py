"""Composite networks (Fluid 1.x's nets.py) built from layers."""

from . import layers

__all__ = ['simple_img_conv_pool', 'img_conv_group', 'sequence_conv_pool', 'glu',
           'scaled_dot_product_attention']


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


def scaled_dot_product_attention(queries, keys, values, num_heads=1, dropout_rate=0.):
    """Fluid 1.8's multi-head attention over 3-D [batch, length, hidden] inputs: with
    num_heads > 1, an fc (no activation) projects each of queries, keys and values and
    splits its hidden dim into heads; softmax(q k^T / sqrt(hidden / num_heads)) v, the
    heads joined back."""
    for what, v in (('queries', queries), ('keys', keys), ('values', values)):
        if not isinstance(v, layers.Variable) or v.dtype.name not in ('float32', 'float64'):
            raise TypeError('scaled_dot_product_attention: %s must be a float32 or float64 '
                            'Variable, not %r' % (what, v))
    if not queries.dtype == keys.dtype == values.dtype:
        raise TypeError('scaled_dot_product_attention: queries, keys and values must share a '
                        'dtype, not %s, %s, %s' % (queries.dtype.name, keys.dtype.name,
                                                   values.dtype.name))
    if not len(queries.shape) == len(keys.shape) == len(values.shape) == 3:
        raise ValueError('scaled_dot_product_attention: queries, keys and values must be 3-D')
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError('scaled_dot_product_attention: queries and keys have hidden sizes %d '
                         'and %d' % (queries.shape[-1], keys.shape[-1]))
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError('scaled_dot_product_attention: keys and values have lengths %d and %d'
                         % (keys.shape[-2], values.shape[-2]))
    for what, v in (('keys', keys), ('values', values)):
        if v.shape[-1] % num_heads:
            raise ValueError('scaled_dot_product_attention: the hidden size of %s (%d) is not '
                             'divisible by num_heads (%d)' % (what, v.shape[-1], num_heads))

    def project(x):
        if num_heads == 1:
            return x
        return layers.fc(input=x, size=x.shape[-1], num_flatten_dims=2)

    def split_heads(x):
        if num_heads == 1:
            return x
        hidden = x.shape[-1]
        x = layers.reshape(x, list(x.shape[:-1]) + [num_heads, hidden // num_heads])
        return layers.transpose(x, perm=[0, 2, 1, 3])

    def join_heads(x):
        if len(x.shape) == 3:
            return x
        x = layers.transpose(x, perm=[0, 2, 1, 3])
        return layers.reshape(x, [int(x.shape[0]), int(x.shape[1]),
                                  int(x.shape[2] * x.shape[3])])

    q, k, v = (split_heads(project(t)) for t in (queries, keys, values))
    scaled_q = layers.scale(q, scale=(keys.shape[-1] // num_heads) ** -0.5)
    product = layers.matmul(scaled_q, k, transpose_y=True)
    weights = layers.reshape(layers.reshape(product, [-1, product.shape[-1]], act='softmax'),
                             list(product.shape))
    if dropout_rate:
        weights = layers.dropout(weights, dropout_prob=dropout_rate, is_test=False)
    return join_heads(layers.matmul(weights, v))


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.nets', 'rill.nets')
