"""Two Fluid 1.x layers re-exported by rill.layers: inplace_abn (batch norm fused with an
activation in Paddle) and load (the `load` op reading one variable from a file a `save`
op wrote)."""

from . import layers
from .framework import Variable

__all__ = ['inplace_abn', 'load']


def inplace_abn(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
                bias_attr=None, data_layout='NCHW', name=None, moving_mean_name=None,
                moving_variance_name=None, do_model_average_for_mean_and_var=True,
                use_global_stats=False, act_alpha=1.0):
    """Batch normalization followed by the activation act (None or 'identity',
    'leaky_relu' or 'elu', with act_alpha as its alpha), with Paddle 1.8.5's parameters
    and numbers. Paddle runs one `inplace_abn` op writing over input to save memory;
    rill appends `batch_norm` and the activation op into a new variable, so input keeps
    its value."""
    if act not in (None, 'identity', 'leaky_relu', 'elu'):
        raise ValueError("inplace_abn only support act as None, 'identity', 'leaky_relu', "
                         "'elu' currently, got %r" % (act,))
    if bias_attr is False:
        raise ValueError('inplace_abn: bias_attr should not be False in inplace_abn.')
    if not isinstance(input, Variable) or input.dtype.name not in ('float32', 'float64'):
        raise TypeError('inplace_abn: input must be a float32 or float64 Variable, got %r'
                        % (input,))
    if data_layout not in ('NCHW', 'NHWC'):
        raise ValueError('inplace_abn: unsupported data layout: %r' % (data_layout,))
    y = layers.batch_norm(input, None, is_test, momentum, epsilon, param_attr, bias_attr,
                          data_layout, False, name, moving_mean_name, moving_variance_name,
                          do_model_average_for_mean_and_var, use_global_stats)
    if act == 'leaky_relu':
        return layers.leaky_relu(y, alpha=act_alpha)
    if act == 'elu':
        return layers.elu(y, alpha=act_alpha)
    return y


def load(out, file_path, load_as_fp16=None):
    """Appends a `load` op that reads `out` (a variable: layers.create_tensor) from
    file_path, a file holding one tensor as a `save` op writes it. Paddle 1.8.5's layer
    hands the op its output under a misspelt keyword, so the op it appends has no Out
    and fails when run; rill's gives the op its Out."""
    if not isinstance(out, Variable):
        raise TypeError('load: out must be a Variable, got %r' % (out,))
    if not isinstance(file_path, str) or not file_path:
        raise TypeError('load: file_path must be a non-empty string, got %r' % (file_path,))
    attrs = {'file_path': file_path}
    if load_as_fp16 is not None:
        attrs['load_as_fp16'] = bool(load_as_fp16)
    out.block.append_op(type='load', inputs={}, outputs={'Out': [out]}, attrs=attrs)
