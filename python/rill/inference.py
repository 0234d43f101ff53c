"""Inference on a saved model over the C predictor (rill_predictor_*, doc/design/
inference.md): load once, optimize the program for inference, run many times; one
predictor per thread through clone(), sharing the weights.

    config = rill.inference.Config('model_dir', threads=2)
    predictor = rill.inference.Predictor(config)
    probs, = predictor.run({'img': images})

Paddle Inference's names work too: Config.set_cpu_math_library_num_threads,
switch_ir_optim, enable_memory_optim; create_predictor(config); get_input_names,
get_input_handle(name).copy_from_cpu(array), run(), get_output_handle(name).copy_to_cpu().
"""

import ctypes
import numbers
import os

import numpy as np

from . import core
from .core import Tensor, check, error_class, _fn, c_status_p

__all__ = ['Config', 'Predictor', 'create_predictor', 'PASS_DROPOUT', 'PASS_FOLD_BN',
           'PASS_FUSE_FC', 'PASS_FUSE_CONV', 'PASS_INPLACE', 'PASS_ALL', 'PASS_INT8']

PASS_DROPOUT, PASS_FOLD_BN, PASS_FUSE_FC, PASS_FUSE_CONV, PASS_INPLACE = 1, 2, 4, 8, 16
PASS_ALL = 31  # the passes of level 2
# Opt-in, in no level: convs over fake-quantized levels in int8 (doc/design/int8.md).
PASS_INT8 = 32

_vp = ctypes.c_void_p
_cfg_create = _fn('rill_predictor_config_create', c_status_p, ctypes.c_char_p,
                  ctypes.POINTER(_vp))
_cfg_destroy = _fn('rill_predictor_config_destroy', None, _vp)
_cfg_params = _fn('rill_predictor_config_set_params_file', c_status_p, _vp, ctypes.c_char_p)
_cfg_threads = _fn('rill_predictor_config_set_threads', c_status_p, _vp, ctypes.c_int32)
_cfg_level = _fn('rill_predictor_config_set_opt_level', c_status_p, _vp, ctypes.c_int32)
_cfg_passes = _fn('rill_predictor_config_set_passes', c_status_p, _vp, ctypes.c_uint32)
_cfg_memopt = _fn('rill_predictor_config_set_memory_optim', c_status_p, _vp, ctypes.c_bool)
_cfg_sched = _fn('rill_predictor_config_set_schedule', c_status_p, _vp, ctypes.c_int)
_Place = core._Place
_parse_place = _fn('rill_parse_place', c_status_p, ctypes.c_char_p, ctypes.POINTER(_Place))
_cfg_place = _fn('rill_predictor_config_set_place', c_status_p, _vp, _Place)
_cfg_file_ops = _fn('rill_predictor_config_allow_file_ops', c_status_p, _vp, ctypes.c_char_p)
_pred_create = _fn('rill_predictor_create', c_status_p, _vp, ctypes.POINTER(_vp))
_pred_clone = _fn('rill_predictor_clone', c_status_p, _vp, ctypes.POINTER(_vp))
_pred_destroy = _fn('rill_predictor_destroy', None, _vp)
_pred_nin = _fn('rill_predictor_num_inputs', ctypes.c_size_t, _vp)
_pred_in_name = _fn('rill_predictor_input_name', ctypes.c_char_p, _vp, ctypes.c_size_t)
_pred_nout = _fn('rill_predictor_num_outputs', ctypes.c_size_t, _vp)
_pred_out_name = _fn('rill_predictor_output_name', ctypes.c_char_p, _vp, ctypes.c_size_t)
_INFO_ARGS = (_vp, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int),
              ctypes.POINTER(ctypes.POINTER(ctypes.c_int64)), ctypes.POINTER(ctypes.c_size_t))
_pred_in_info = _fn('rill_predictor_input_info', c_status_p, *_INFO_ARGS)
_pred_out_info = _fn('rill_predictor_output_info', c_status_p, *_INFO_ARGS)
_pred_run = _fn('rill_predictor_run', c_status_p, _vp, core.c_char_pp, ctypes.POINTER(_vp),
                ctypes.c_size_t, ctypes.POINTER(_vp))
_pred_mem = _fn('rill_predictor_memory_bytes', ctypes.c_size_t, _vp)
_pred_param_bytes = _fn('rill_predictor_param_bytes', ctypes.c_size_t, _vp)
_pred_program = _fn('rill_predictor_program', _vp, _vp)

_SCHEDULES = {None: core.SCHEDULE_AUTO, False: core.SCHEDULE_SEQUENTIAL,
              True: core.SCHEDULE_PARALLEL}


class Config(object):
    """What to load and how (rill_predictor_config):

    - model_path: a model directory (`__model__` + one file per variable or a combined
      file), a `__model__` file, a 2.x `.pdmodel` file or prefix;
    - params_file: the combined parameter file, its name in the model's directory or
      its path (Paddle's Config(prog_file, params_file)); None: looked for by the
      usual names, else one file per variable;
    - threads: compute threads (0: one per core);
    - opt_level: 0 runs the program as saved, 1 folds dropout and batch_norm, 2 (default)
      also fuses fc and conv2d + bias + activation and runs activations in place;
      `passes` (a mask of PASS_* bits) overrides the level;
    - memory_optim: temporaries share buffers by liveness (default on);
    - parallel: None (AUTO), True (PARALLEL) or False (SEQUENTIAL) schedule;
    - allow_file_ops: None (default) refuses a model whose ops read or write files (save,
      load, checkpoint...) with FailedPreconditionError naming the op and the path; a
      directory allows them where every such path resolves inside it;
    - device: where it runs, 'cpu' (default) or 'cuda:N' (Paddle's enable_use_gpu);
      a place that cannot be used raises UnimplementedError saying why.

    Each setting is checked by C when set: a bad one raises InvalidArgumentError."""

    def __init__(self, model_path, params_file=None, threads=0, opt_level=2, passes=None,
                 memory_optim=True, parallel=None, allow_file_ops=None, device='cpu'):
        if not isinstance(model_path, (str, bytes, os.PathLike)) or not os.fspath(model_path):
            raise error_class('INVALID_ARGUMENT')(
                'Config: model_path must be a non-empty path, got %r' % (model_path,))
        self._h = None
        out = _vp()
        check(_cfg_create(os.fsencode(model_path), ctypes.byref(out)))
        self._h = out.value
        self.model_path = os.fsdecode(model_path)
        self.params_file = None
        self.threads = 0
        self.opt_level = 2
        self.passes = None
        self.memory_optim = True
        self.parallel = None
        self.allow_file_ops = None
        self.device = 'cpu'
        if params_file is not None:
            self.set_params_file(params_file)
        self.set_threads(threads)
        self.set_opt_level(opt_level)
        if passes is not None:
            self.set_passes(passes)
        self.set_memory_optim(memory_optim)
        self.set_parallel(parallel)
        if allow_file_ops is not None:
            self.set_allow_file_ops(allow_file_ops)
        if device != 'cpu':
            self.set_device(device)

    def __del__(self):
        if getattr(self, '_h', None):
            _cfg_destroy(self._h)
        self._h = None

    def __repr__(self):
        return ('Config(%r, params_file=%r, threads=%d, opt_level=%d, passes=%r, '
                'memory_optim=%r, parallel=%r, allow_file_ops=%r)' % (
                    self.model_path, self.params_file, self.threads, self.opt_level,
                    self.passes, self.memory_optim, self.parallel, self.allow_file_ops))

    @staticmethod
    def _int(what, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise error_class('INVALID_ARGUMENT')('Config: %s must be an int, got %r' %
                                                  (what, value))
        if not -2**31 <= value < 2**31:
            raise error_class('INVALID_ARGUMENT')('Config: %s %d is out of range' %
                                                  (what, value))
        return int(value)

    def set_params_file(self, params_file):
        check(_cfg_params(self._h, os.fsencode(params_file) if params_file else None))
        self.params_file = os.fsdecode(params_file) if params_file else None

    def set_threads(self, threads):
        check(_cfg_threads(self._h, self._int('threads', threads)))
        self.threads = int(threads)

    def set_opt_level(self, level):
        check(_cfg_level(self._h, self._int('opt_level', level)))
        self.opt_level = int(level)
        self.passes = None

    def set_passes(self, passes):
        passes = self._int('passes', passes)
        if passes < 0:
            raise error_class('INVALID_ARGUMENT')('Config: passes must be a mask of PASS_* '
                                                  'bits, got %d' % passes)
        check(_cfg_passes(self._h, passes))
        self.passes = passes

    def set_memory_optim(self, enabled):
        check(_cfg_memopt(self._h, bool(enabled)))
        self.memory_optim = bool(enabled)

    def set_parallel(self, parallel):
        if parallel not in _SCHEDULES:
            raise error_class('INVALID_ARGUMENT')(
                'Config: parallel must be None, True or False, got %r' % (parallel,))
        check(_cfg_sched(self._h, _SCHEDULES[parallel]))
        self.parallel = parallel

    def set_allow_file_ops(self, directory):
        if directory is not None and (not isinstance(directory, (str, bytes, os.PathLike))
                                      or not os.fspath(directory)):
            raise error_class('INVALID_ARGUMENT')(
                'Config: allow_file_ops must be a directory path or None, got %r' %
                (directory,))
        check(_cfg_file_ops(self._h, os.fsencode(directory) if directory is not None
                            else None))
        self.allow_file_ops = os.fsdecode(directory) if directory is not None else None

    def set_device(self, device):
        """'cpu', 'cuda:N' or 'gpu:N': checked now (rill_predictor_config_set_place)."""
        if not isinstance(device, str):
            raise error_class('INVALID_ARGUMENT')('Config: device must be a string such as '
                                                  "'cuda:0', got %r" % (device,))
        place = _Place()
        check(_parse_place(device.encode(), ctypes.byref(place)))
        check(_cfg_place(self._h, place))
        self.device = device

    # Paddle Inference's names.
    def enable_use_gpu(self, memory_pool_init_size_mb=100, device_id=0):
        """Paddle's switch to the GPU: runs on cuda:device_id. The memory pool grows as
        needed (the caching allocator), so the initial size is not used."""
        self.set_device('cuda:%d' % self._int('device_id', device_id))

    def disable_gpu(self):
        self.set_device('cpu')

    def use_gpu(self):
        return self.device != 'cpu'

    def gpu_device_id(self):
        return int(self.device.split(':')[1]) if ':' in self.device and self.use_gpu() else 0

    def set_cpu_math_library_num_threads(self, n):
        self.set_threads(n)

    def cpu_math_library_num_threads(self):
        return self.threads

    def switch_ir_optim(self, x=True):
        self.set_opt_level(2 if x else 0)

    def ir_optim(self):
        return self.passes != 0 if self.passes is not None else self.opt_level > 0

    def enable_memory_optim(self, x=True):
        self.set_memory_optim(x)

    def model_dir(self):
        return self.model_path


def _info(fn, h, i):
    dtype = ctypes.c_int()
    dims = ctypes.POINTER(ctypes.c_int64)()
    nd = ctypes.c_size_t()
    check(fn(h, i, ctypes.byref(dtype), ctypes.byref(dims), ctypes.byref(nd)))
    return np.dtype(core.DTYPE_TO_NP[dtype.value]), [dims[k] for k in range(nd.value)]


class _InputHandle(object):
    """Paddle Inference's input handle: copy_from_cpu(array) stages the input for the
    next run() without arguments."""

    def __init__(self, predictor, name):
        self._p, self._name = predictor, name

    def name(self):
        return self._name

    def copy_from_cpu(self, array):
        self._p._staged[self._name] = np.array(array, copy=True)

    def set_lod(self, lod):
        if self._name not in self._p._staged:
            raise error_class('FAILED_PRECONDITION')(
                "input '%s': copy_from_cpu before set_lod" % self._name)
        value = self._p._staged[self._name]
        arr = value[0] if isinstance(value, tuple) else value
        self._p._staged[self._name] = (arr, core.lod_offsets(lod, "input '%s': LoD" % self._name))

    def reshape(self, shape):
        pass  # the shape comes with the array

    def shape(self):
        return list(self._p.input_spec(self._name)[1])


class _OutputHandle(object):
    def __init__(self, predictor, name):
        self._p, self._name = predictor, name

    def name(self):
        return self._name

    def _tensor(self):
        t = self._p._last.get(self._name)
        if t is None:
            raise error_class('FAILED_PRECONDITION')(
                "output '%s': the predictor has not run yet" % self._name)
        return t

    def copy_to_cpu(self):
        return self._tensor().numpy(copy=True)

    def shape(self):
        return self._tensor().shape()

    def lod(self):
        return self._tensor().lod()


class Predictor(object):
    """A loaded, optimized model (rill_predictor). run() may be called any number of
    times; a predictor serves one thread at a time (a run while another thread's run is
    in progress raises FailedPreconditionError): clone() gives another thread its own
    predictor over the same weights (shared read-only, never copied)."""

    def __init__(self, config, _handle=None):
        self._h = None
        if _handle is None:
            if not isinstance(config, Config):
                raise TypeError('Predictor: config must be a rill.inference.Config, got %r'
                                % (config,))
            out = _vp()
            check(_pred_create(config._h, ctypes.byref(out)))
            _handle = out.value
        self._h = _handle
        self.config = config
        h = self._h
        self._inputs = [_pred_in_name(h, i).decode() for i in range(_pred_nin(h))]
        self._outputs = [_pred_out_name(h, i).decode() for i in range(_pred_nout(h))]
        self._in_specs = {n: _info(_pred_in_info, h, i) for i, n in enumerate(self._inputs)}
        self._out_specs = {n: _info(_pred_out_info, h, i) for i, n in enumerate(self._outputs)}
        self._staged = {}
        self._last = {}
        self._name_arrays = {}

    def __del__(self):
        if getattr(self, '_h', None):
            _pred_destroy(self._h)
        self._h = None

    def clone(self):
        """Another predictor over the same program and weights, with its own executor and
        temporaries: one per thread."""
        out = _vp()
        check(_pred_clone(self._h, ctypes.byref(out)))
        return Predictor(self.config, _handle=out.value)

    def get_input_names(self):
        return list(self._inputs)

    def get_output_names(self):
        return list(self._outputs)

    def input_spec(self, name):
        """(numpy dtype, declared dims with -1 for any extent) of an input."""
        try:
            return self._in_specs[name]
        except KeyError:
            raise error_class('NOT_FOUND')("the model has no input '%s' (its inputs: %s)"
                                           % (name, ', '.join(self._inputs))) from None

    def output_spec(self, name):
        try:
            return self._out_specs[name]
        except KeyError:
            raise error_class('NOT_FOUND')("the model has no output '%s' (its outputs: %s)"
                                           % (name, ', '.join(self._outputs))) from None

    def get_input_handle(self, name):
        self.input_spec(name)
        return _InputHandle(self, name)

    def get_output_handle(self, name):
        self.output_spec(name)
        return _OutputHandle(self, name)

    def memory_bytes(self):
        """Bytes the temporaries of the last run held (0 before the first run)."""
        return _pred_mem(self._h)

    def param_bytes(self):
        """Bytes of the loaded (folded) weights, shared by every clone."""
        return _pred_param_bytes(self._h)

    def program(self):
        """The program the predictor runs, after the passes (a rill.Program copy)."""
        from .framework import Program
        return Program.parse_from_string(core.serialize_handle(_pred_program(self._h)))

    def _tensor(self, name, value):
        spec = self._in_specs.get(name)
        if type(value) is np.ndarray and spec is not None and value.dtype == spec[0]:
            return Tensor.from_numpy(value)
        lod = None
        if isinstance(value, tuple) and len(value) == 2 and not np.isscalar(value[1]):
            value, lod = value
        elif hasattr(value, 'lod') and hasattr(value, '_array'):  # rill.LoDTensor
            value, lod = value._array, value.lod()
        arr = np.asarray(value)
        if spec is not None and arr.dtype != spec[0]:
            want = spec[0]
            if (arr.dtype.kind in 'f' and want.kind in 'f') or \
                    (arr.dtype.kind in 'iu' and want.kind in 'iu'):
                arr = arr.astype(want)  # another width of the same kind
        t = Tensor.from_numpy(arr)
        if lod:
            try:
                t.set_lod(lod)
            except core.Error as e:
                raise type(e)("input '%s': %s" % (name, e.message)) from None
        return t

    def run(self, inputs=None):
        """Runs the model. inputs: {name: array | (array, lod) | LoDTensor}, or a list
        in the order of get_input_names(); None runs on what the input handles staged.
        Returns the outputs as numpy arrays in the order of get_output_names().
        A wrong or missing name, a dtype or a shape the model does not declare raise
        InvalidArgumentError naming the input; the predictor stays usable."""
        if inputs is None:
            inputs = dict(self._staged)
        elif isinstance(inputs, (list, tuple)):
            if len(inputs) != len(self._inputs):
                raise error_class('INVALID_ARGUMENT')(
                    'Predictor.run: %d inputs given, the model takes %d (%s)' %
                    (len(inputs), len(self._inputs), ', '.join(self._inputs)))
            inputs = dict(zip(self._inputs, inputs))
        elif not isinstance(inputs, dict):
            raise TypeError('Predictor.run: inputs must be a dict {name: array} or a list, '
                            'got %r' % (type(inputs).__name__,))
        names = tuple(inputs)
        cnames = self._name_arrays.get(names)
        if cnames is None:
            for name in names:
                if not isinstance(name, str):
                    raise TypeError('Predictor.run: input names must be strings, got %r'
                                    % (name,))
            cnames = core._cstrs(names)
            if len(self._name_arrays) > 16:
                self._name_arrays.clear()
            self._name_arrays[names] = cnames
        tensors = [self._tensor(name, value) for name, value in inputs.items()]
        n = len(names)
        ctensors = (_vp * max(1, n))(*[t._h for t in tensors])
        # A fresh array per call: the C predictor refuses a second thread's run
        # (FailedPreconditionError), and its outputs must not land where another
        # thread's call reads them.
        outs = (_vp * max(1, len(self._outputs)))()
        check(_pred_run(self._h, cnames, ctensors, n, outs))
        result = [Tensor(outs[i]) for i in range(len(self._outputs))]
        self._last = dict(zip(self._outputs, result))
        return [t.numpy(copy=False) for t in result]


def create_predictor(config):
    """Paddle Inference's name for Predictor(config)."""
    return Predictor(config)
