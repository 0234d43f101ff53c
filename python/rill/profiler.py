"""fluid.profiler: the per-op report and a timeline of every run, over librill's
process-wide profiler (doc/design/profiler.md).

Fluid 1.8's names and arguments. The file written to `profile_path` is a Chrome /
Perfetto trace-event JSON file (open it in ui.perfetto.dev or chrome://tracing), not
Fluid's protobuf profile: it is what Fluid's tools/timeline.py made of that file."""
import contextlib
import ctypes
import sys

from . import core

__all__ = ['profiler', 'start_profiler', 'stop_profiler', 'reset_profiler', 'cuda_profiler',
           'Summary']

_STATES = {'CPU': 0, 'GPU': 1, 'All': 2}
_KEYS = {'default': 0, 'calls': 1, 'total': 2, 'max': 3, 'min': 4, 'ave': 5}
_TRACER_OPTIONS = ('Default', 'OpDetail', 'AllOpDetail')


class _Options(ctypes.Structure):
    _fields_ = [('struct_size', ctypes.c_uint32), ('state', ctypes.c_int),
                ('events_per_thread', ctypes.c_uint32)]


class _Row(ctypes.Structure):
    _fields_ = [('name', ctypes.c_char_p), ('block', ctypes.c_int32), ('index', ctypes.c_int32),
                ('calls', ctypes.c_uint64), ('total_ms', ctypes.c_double),
                ('min_ms', ctypes.c_double), ('max_ms', ctypes.c_double),
                ('ave_ms', ctypes.c_double), ('ratio', ctypes.c_double),
                ('first_end_ns', ctypes.c_int64)]


_fn = core._fn
_start = _fn('rill_profiler_start', core.c_status_p, ctypes.POINTER(_Options))
_stop = _fn('rill_profiler_stop', core.c_status_p, ctypes.c_char_p,
            ctypes.POINTER(ctypes.c_void_p))
_reset = _fn('rill_profiler_reset', None)
_enabled = _fn('rill_profiler_enabled', ctypes.c_bool)
_sort = _fn('rill_profiler_summary_sort', None, ctypes.c_void_p, ctypes.c_int)
_rows = _fn('rill_profiler_summary_rows', ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int)
_row = _fn('rill_profiler_summary_row', ctypes.POINTER(_Row), ctypes.c_void_p, ctypes.c_int,
           ctypes.c_size_t)
_dropped = _fn('rill_profiler_summary_dropped', ctypes.c_uint64, ctypes.c_void_p)
_events = _fn('rill_profiler_summary_events', ctypes.c_uint64, ctypes.c_void_p)
_wall = _fn('rill_profiler_summary_wall_ms', ctypes.c_double, ctypes.c_void_p)
_threads = _fn('rill_profiler_summary_threads', ctypes.c_int32, ctypes.c_void_p)
_format = _fn('rill_profiler_summary_format', core.c_status_p, ctypes.c_void_p, ctypes.c_int,
              ctypes.POINTER(ctypes.c_void_p))
_destroy = _fn('rill_profiler_summary_destroy', None, ctypes.c_void_p)


class Summary(object):
    """What a stop measured: `by_type` and `by_instance` are lists of dicts (name, block,
    index, calls, total, min, max, ave, ratio; times in ms) sorted by the key; `text`
    is the report as printed; `dropped`, `events`, `wall_ms`, `threads`."""

    def __init__(self, handle, key):
        try:
            _sort(handle, _KEYS[key])
            self.by_type = self._table(handle, 0)
            self.by_instance = self._table(handle, 1)
            self.dropped = int(_dropped(handle))
            self.events = int(_events(handle))
            self.wall_ms = float(_wall(handle))
            self.threads = int(_threads(handle))
            out = ctypes.c_void_p()
            core.check(_format(handle, _KEYS[key], ctypes.byref(out)), 'profiler')
            try:
                self.text = ctypes.string_at(out.value).decode('utf-8', 'replace')
            finally:
                core._free_buffer(out)
        finally:
            _destroy(handle)

    @staticmethod
    def _table(handle, table):
        rows = []
        for i in range(_rows(handle, table)):
            r = _row(handle, table, i).contents
            rows.append({'name': r.name.decode(), 'block': r.block, 'index': r.index,
                         'calls': r.calls, 'total': r.total_ms, 'min': r.min_ms,
                         'max': r.max_ms, 'ave': r.ave_ms, 'ratio': r.ratio})
        return rows


def _check_state(state):
    if state not in _STATES:
        raise ValueError("The state must be 'CPU' or 'GPU' or 'All'.")


def _check_key(sorted_key):
    key = 'default' if sorted_key is None else sorted_key
    if key not in _KEYS:
        raise ValueError("The sorted_key must be None or in 'calls', 'total', "
                         "'max', 'min' and 'ave'")
    return key


def start_profiler(state, tracer_option='Default', events_per_thread=0):
    """Turns the profiler on. state: 'CPU', 'GPU' or 'All' (rill runs on the CPU; all
    three record the same). tracer_option: 'Default', 'OpDetail' or 'AllOpDetail'
    (accepted; rill always records every op). events_per_thread: the size of each
    thread's buffer (0: 32768); events beyond it are dropped and counted. Starting an
    already started profiler does nothing, as in Fluid."""
    _check_state(state)
    if tracer_option not in _TRACER_OPTIONS:
        raise ValueError("tracer_option must be 'Default', 'OpDetail', 'AllOpDetail'")
    if _enabled():
        return
    opts = _Options(ctypes.sizeof(_Options), _STATES[state], int(events_per_thread))
    core.check(_start(ctypes.byref(opts)), 'start_profiler')


def stop_profiler(sorted_key=None, profile_path='/tmp/profile', print_summary=True):
    """Stops the profiler, writes the timeline (trace-event JSON) to profile_path (None:
    no file), prints the report sorted by sorted_key (None: by first end time; 'calls',
    'total', 'max', 'min', 'ave') and returns it as a Summary. Stopping a profiler that
    is not on returns None, as Fluid does nothing."""
    key = _check_key(sorted_key)
    if not _enabled():
        return None
    handle = ctypes.c_void_p()
    path = None if profile_path is None else str(profile_path).encode()
    core.check(_stop(path, ctypes.byref(handle)), 'stop_profiler')
    summary = Summary(handle, key)
    if print_summary:
        sys.stdout.write(summary.text)
        sys.stdout.flush()
    return summary


def reset_profiler():
    """Drops what the profiler recorded so far; it stays on."""
    _reset()


@contextlib.contextmanager
def profiler(state, sorted_key=None, profile_path='/tmp/profile', tracer_option='Default'):
    """with profiler('CPU', 'total', '/tmp/profile'): ... runs the block with the profiler
    on, then prints the report and writes the timeline (see stop_profiler)."""
    _check_state(state)
    _check_key(sorted_key)
    start_profiler(state, tracer_option)
    try:
        yield
    finally:
        stop_profiler(sorted_key, profile_path)


# Paddle's default nvprof configuration (fluid.profiler.NVPROF_CONFIG).
NVPROF_CONFIG = ['gpustarttimestamp', 'gpuendtimestamp', 'gridsize3d', 'threadblocksize',
                 'streamid', 'enableonstart 0', 'conckerneltrace']


@contextlib.contextmanager
def cuda_profiler(output_file, output_mode=None, config=None):
    """Fluid's cuda_profiler: the CUDA profiler records between entering and leaving
    (cudaProfilerStart and cudaProfilerStop on every CUDA device of the process, through
    the CUDA backend: rill_device_profiler_start/stop). The records are taken by the
    profiling tool the process runs under with a capture range on the profiler API
    (`nsys profile --capture-range=cudaProfilerApi -o OUTPUT_FILE`, `ncu
    --profile-from-start off`), which writes them: the CUDA runtime no longer has the
    cudaProfilerInitialize through which Paddle handed it output_file, output_mode and
    config. Those are checked as Paddle checks them: output_mode 'kvp' or 'csv'
    (default) else ValueError; config a list of strings (default NVPROF_CONFIG).
    Without a CUDA device (a build without the backend, no driver, no device) entering
    raises UnimplementedError saying why, where Paddle's CPU build fails too."""
    if output_mode is None:
        output_mode = 'csv'
    if output_mode not in ['kvp', 'csv']:
        raise ValueError("The output mode must be 'kvp' or 'csv'.")
    if not isinstance(output_file, str) or not output_file:
        raise TypeError('cuda_profiler: output_file must be a file name, got %r' % (output_file,))
    config = NVPROF_CONFIG if config is None else config
    if not isinstance(config, (list, tuple)) or not all(isinstance(c, str) for c in config):
        raise TypeError('cuda_profiler: config must be a list of strings, got %r' % (config,))
    n, reason = core.cuda_device_count()
    if not n:
        raise core.error_class('UNIMPLEMENTED')(
            'fluid.profiler.cuda_profiler: no CUDA device to profile: %s' % reason)
    started = []
    try:
        for i in range(n):
            core.device_profiler(core.DEVICE_CUDA, i, True)
            started.append(i)
        yield
    finally:
        for i in started:
            core.device_profiler(core.DEVICE_CUDA, i, False)
