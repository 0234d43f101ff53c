"""What a Fluid script meets when it reaches for a Fluid API rill lacks: an error that
names the API and says so, instead of an AttributeError that looks like a typo."""

__all__ = ['FluidAPIMissing', 'module_getattr']


class FluidAPIMissing(AttributeError, NotImplementedError):
    """A Fluid 1.x API that rill does not provide (yet). An AttributeError, so hasattr()
    and getattr(..., default) work as on any module, and a NotImplementedError."""


def module_getattr(fluid_path, module_name, extra=None):
    """A module-level __getattr__ for the rill module that stands for `fluid_path`
    ('fluid.layers'). `extra` maps names the module provides without binding them as
    globals (a layer named like a Python builtin the module's own code calls)."""

    def __getattr__(name):
        if extra and name in extra:
            return extra[name]
        if name.startswith('__') and name.endswith('__'):
            raise AttributeError("module '%s' has no attribute '%s'" % (module_name, name))
        raise FluidAPIMissing(
            '%s.%s: rill does not provide this Fluid API yet (what exists and what is '
            'missing: doc/design/fluid_api.md)' % (fluid_path, name))

    return __getattr__
