"""ParamAttr (Fluid 1.x's param_attr.py): how a layer creates a parameter."""

from .initializer import Initializer

__all__ = ['ParamAttr', 'WeightNormParamAttr']


class ParamAttr(object):
    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None,
                 trainable=True, gradient_clip=None, do_model_average=True):
        self.name = name
        self.initializer = initializer
        self.learning_rate = learning_rate
        self.regularizer = regularizer
        self.trainable = trainable
        self.gradient_clip = gradient_clip
        self.do_model_average = do_model_average

    @staticmethod
    def _to_attr(arg):
        """None or True -> default ParamAttr; a str -> its name; an initializer -> its
        initializer; False stays False (no parameter, e.g. bias_attr=False)."""
        if arg is None or arg is True:
            return ParamAttr()
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if isinstance(arg, Initializer):
            return ParamAttr(initializer=arg)
        if arg is False:
            return False
        if isinstance(arg, (list, tuple)):
            return [ParamAttr._to_attr(a) for a in arg]
        raise TypeError('%r cannot be turned into a ParamAttr' % (arg,))


class WeightNormParamAttr(ParamAttr):
    """A parameter reparameterized as g * v / ||v|| (rill/weight_norm.py): the layer
    creates NAME_g and NAME_v and computes the weight with ops. dim: the dimension the
    norm leaves out (None: the norm of the whole tensor)."""

    # The weights built so far (Variables computed by ops, not Parameters).
    params_with_weight_norm = []

    def __init__(self, dim=None, name=None, initializer=None, learning_rate=1.0,
                 regularizer=None, trainable=True, do_model_average=False):
        if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool)):
            raise TypeError('WeightNormParamAttr: dim must be an int or None, got %r' % (dim,))
        ParamAttr.__init__(self, name=name, initializer=initializer,
                           learning_rate=learning_rate, regularizer=regularizer,
                           trainable=trainable, do_model_average=do_model_average)
        self.dim = dim


from ._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr('fluid.param_attr', 'rill.param_attr')
