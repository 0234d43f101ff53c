"""rill: build, train, save and load PaddlePaddle Fluid programs from Python.

A Fluid 1.x script runs after `import rill as fluid`: programs, layers, initializers,
optimizers, the Executor and fluid.io, over librill's C API (ctypes; numpy is the only
dependency). See doc/design/python.md."""

from . import core
from .core import Error
from .core import (InvalidArgumentError, NotFoundError, AlreadyExistsError, OutOfMemoryError,
                   IoError, CorruptError, UnimplementedError, FailedPreconditionError,
                   OutOfRangeError, CancelledError, DeadlineExceededError, UnavailableError,
                   InternalError)
from . import framework
from .framework import (Program, Block, Variable, Parameter, Operator, program_guard,
                        default_main_program, default_startup_program, name_scope,
                        unique_name, CPUPlace, CUDAPlace, CUDAPinnedPlace, in_dygraph_mode)
from . import initializer, param_attr, regularizer, clip, layers, optimizer, executor, io
from .param_attr import ParamAttr, WeightNormParamAttr
from .executor import (Executor, Scope, global_scope, scope_guard, LoDTensor,
                       LoDTensorArray, create_lod_tensor)
from .clip import GradientClipByGlobalNorm, set_gradient_clip
from .io import (save_inference_model, load_inference_model, save, load, load_program_state,
                 set_program_state)
from .data_feeder import DataFeeder
from . import nets
from . import inference
from .core import load_op_library, cpu_isa, version, version_number
from . import reader, compiler, data_loader, profiler
from .compiler import CompiledProgram, BuildStrategy, ExecutionStrategy
from .layers import fluid_data as data, fluid_embedding as embedding
from .framework import cpu_places, cuda_places, cuda_pinned_places, is_compiled_with_cuda
from .executor import create_random_int_lodtensor
from ._missing import FluidAPIMissing
from . import transpiler
from . import metrics, evaluator
from . import input, average
from .input import one_hot
from . import backward, lod_tensor
from .backward import append_backward, gradients
from .flags import require_version, set_flags, get_flags, device_guard
from .transpiler import DistributeTranspiler, DistributeTranspilerConfig, HashName, RoundRobin
from .transpiler import memory_optimize, release_memory
from . import parallel_executor, install_check
from .parallel_executor import ParallelExecutor
from . import fluid_dataset, trainer_desc, data_feed_desc
from .fluid_dataset import DatasetFactory, InMemoryDataset, QueueDataset
from .trainer_desc import TrainerDesc, MultiTrainer, DistMultiTrainer, PipelineTrainer
from .data_feed_desc import DataFeedDesc
# Fluid's fluid.Tensor is its LoDTensor class
Tensor = LoDTensor
# Listed in Fluid 1.8's fluid.__all__ but absent there: the learning rate schedules'
# module, which older Fluid named fluid.learning_rate_decay.
learning_rate_decay = layers.learning_rate_scheduler

# Fluid scripts reach a few classes through fluid.core.
core.Scope = Scope
core.LoDTensor = LoDTensor
core.LoDTensorArray = LoDTensorArray
core.CPUPlace = CPUPlace
core.CUDAPlace = CUDAPlace
core.CUDAPinnedPlace = CUDAPinnedPlace
core.get_cuda_device_count = lambda: core.cuda_device_count()[0]
from . import cuda

# The release of this package; rill.version() is the loaded C library's, and the
# tests check that the two agree.
__version__ = '0.1.0'

__all__ = ['Error', 'Program', 'Block', 'Variable', 'Parameter', 'Operator', 'program_guard',
           'default_main_program', 'default_startup_program', 'name_scope', 'unique_name',
           'CPUPlace', 'CUDAPlace', 'CUDAPinnedPlace', 'ParamAttr', 'Executor', 'Scope', 'global_scope',
           'scope_guard', 'LoDTensor', 'create_lod_tensor', 'layers', 'optimizer',
           'initializer', 'regularizer', 'clip', 'io', 'core', 'DataFeeder', 'nets', 'inference',
           'load_op_library', 'cpu_isa', 'version', 'version_number', 'data', 'embedding', 'reader', 'CompiledProgram', 'BuildStrategy',
           'ExecutionStrategy', 'cpu_places', 'cuda_places', 'cuda_pinned_places',
           'create_random_int_lodtensor',
           'FluidAPIMissing', 'metrics', 'evaluator', 'is_compiled_with_cuda',
           'require_version', 'set_flags', 'get_flags', 'device_guard', 'one_hot',
           'LoDTensorArray', 'backward', 'append_backward', 'gradients', 'save', 'load',
           'load_program_state', 'set_program_state', 'WeightNormParamAttr',
           'memory_optimize', 'release_memory', 'ParallelExecutor', 'Tensor',
           'install_check', 'learning_rate_decay', 'DatasetFactory', 'InMemoryDataset',
           'QueueDataset', 'TrainerDesc', 'MultiTrainer', 'DistMultiTrainer',
           'PipelineTrainer', 'DataFeedDesc']

from ._missing import module_getattr as _module_getattr  # noqa: E402
_fluid_getattr = _module_getattr('fluid', 'rill')


def __getattr__(name):
    # fluid.dataset: the dataset readers (paddle.dataset), which also hold Fluid's
    # DatasetFactory, QueueDataset and InMemoryDataset; imported when first reached.
    if name == 'dataset':
        import importlib
        return importlib.import_module(__name__ + '.dataset')
    return _fluid_getattr(name)
