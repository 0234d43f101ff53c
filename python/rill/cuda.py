"""The CUDA devices rill can use: rill.cuda.device_count(), rill.cuda.is_available()
and, when there are none, rill.cuda.unavailable_reason(). The backend
(librill_cuda.so) is loaded on the first question or the first CUDAPlace executor."""
from . import core

__all__ = ['device_count', 'is_available', 'unavailable_reason', 'is_compiled', 'memory_stats']


def is_compiled():
    """True when this build of rill has the CUDA backend."""
    return core.is_compiled_with_cuda()


def device_count():
    """The CUDA devices this process can use (0 without a driver, a device or a build
    with CUDA)."""
    return core.cuda_device_count()[0]


def is_available():
    return device_count() > 0


def unavailable_reason():
    """Why no CUDA device can be used (None when one can): the backend's message, e.g.
    'no CUDA device: the driver reports none'."""
    return core.cuda_device_count()[1]


def memory_stats(device_id=0):
    """The caching allocator of cuda:device_id: current_bytes, peak_bytes, cached_bytes,
    reserved_bytes and device_allocs (cudaMalloc calls). Raises, saying why, when the
    device cannot be used."""
    return core.device_memory_stats(core.DEVICE_CUDA, device_id)
