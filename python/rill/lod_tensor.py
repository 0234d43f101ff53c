"""Fluid's paddle.fluid.lod_tensor: create_lod_tensor and create_random_int_lodtensor
(defined in rill.executor beside LoDTensor)."""

from .executor import create_lod_tensor, create_random_int_lodtensor

__all__ = ['create_lod_tensor', 'create_random_int_lodtensor']
