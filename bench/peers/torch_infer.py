"""Inference on the GPU (or the CPU): rill's Predictor against PyTorch running the same
model, in the same process, on the same device, in interleaved rounds.

Models: every folder of ../shared/models with refs/meta.json (its inputs: refs/
input_<feed>.npy, tiled along the batch axis for batch 64), and ResNet-50
(../shared/programs/paddle_inference_demo_resnet50.pdmodel, which has no parameters: each
run gives it random ones, saved beside the build and loaded by both sides, and a random
image batch).

The PyTorch model is the program itself, op by op: TorchProgram reads the ProgramDesc
through rill's Python package and runs each op as the torch.nn.functional call Paddle's
op stands for (conv2d, batch_norm, pool2d, mul, matmul, elementwise_add with Paddle's
axis broadcasting, activations, softmax, concat, lookup_table_v2, reshape2, dropout in
inference), on the parameters rill loaded. It runs in eager mode under
torch.inference_mode(), with cudnn.benchmark on; rill runs its inference passes (-O2:
batch_norm folded, fc and conv+bias+activation fused). Neither side may use TF32 unless
--tf32 allows it to both (torch.backends.*.allow_tf32; RILL_CUDA_TF32=1). Each side is
timed on one run from host arrays to host arrays: the inputs copied to the device, the
model, the outputs copied back.

Before timing, the two sides' outputs are compared (the largest difference at most
--tol (1e-3) of the output's largest magnitude); a model on which they disagree is
reported and not timed.

Each round, every (model, batch) is run by each side for --budget seconds after a few
warm-up runs, the side that goes first alternating, with --settle seconds between two
sides; a side's figure for the round is its median run. The ratio rill / PyTorch is taken per round and printed as the median
over --rounds rounds with min..max, with the target: at most 1.0.

ONNX Runtime's CUDA provider is a second peer when onnxruntime has it (onnxruntime-gpu):
the PyTorch model is exported with torch.onnx.export (tracing) and run by ORT on the same
device; the ratio is then against the faster peer. Otherwise the output says why it is
left out.

    RILL_LIB=build/librill.so PYTHONPATH=python python3 bench/peers/torch_infer.py \\
        [--device cuda:0|cpu] [--rounds 5] [--batches 1,64] [--only NAME,...]

Prints a header naming the device and the versions, one RESULT line per model and batch
  RESULT model=<m> batch=<b> rill_ms=<x> torch_ms=<x> [ort_ms=<x>] ratio=<x> ratio_min=<x>
         ratio_max=<x> rounds=<n> target=met|missed
and a SKIP line for anything not measured, with the reason."""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'python'))
import rill  # noqa: E402
from rill import inference  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the model preparation below is usable without it; main() says so
    torch = F = None

RESNET50 = 'paddle_inference_demo_resnet50.pdmodel'


# ------------------------------------------------------------------ the torch model ----

def _pair(v, n=2):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 else v


def _pads(paddings):
    """Paddle's paddings ([h, w] or [top, bottom, left, right]) as (symmetric (h, w),
    or None and F.pad's (left, right, top, bottom))."""
    p = list(paddings)
    if len(p) == 2:
        return (p[0], p[1]), None
    if p[0] == p[1] and p[2] == p[3]:
        return (p[0], p[2]), None
    return (0, 0), (p[2], p[3], p[0], p[1])


def _same_pads(size, kernel, stride, dilation):
    """Paddle's padding_algorithm SAME for one spatial axis: (before, after)."""
    out = (size + stride - 1) // stride
    need = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    return need // 2, need - need // 2


def _resolve_pads(op, x, kernel, strides, dilations):
    algo = op.attr('padding_algorithm') if op.has_attr('padding_algorithm') else 'EXPLICIT'
    if algo == 'VALID':
        return (0, 0), None
    if algo == 'SAME':
        (t, b), (l, r) = (_same_pads(x.shape[2 + i], kernel[i], strides[i], dilations[i])
                          for i in range(2))
        if t == b and l == r:
            return (t, l), None
        return (0, 0), (l, r, t, b)
    return _pads(op.attr('paddings'))


class TorchProgram(object):
    """The global block of a rill Program run op by op with torch on `device`, its
    parameters taken from `params` (name -> numpy array)."""

    def __init__(self, program, feeds, fetches, params, device):
        self.device = device
        self.feeds = list(feeds)
        self.fetches = list(fetches)
        self.ops = [op for op in program.global_block().ops if op.type not in ('feed', 'fetch')]
        self.params = {k: torch.from_numpy(np.ascontiguousarray(v)).to(device)
                       for k, v in params.items()}
        for op in self.ops:
            if not hasattr(self, '_op_' + op.type):
                raise NotImplementedError('op %s has no torch translation' % op.type)

    def __call__(self, *inputs):
        env = dict(self.params)
        env.update(zip(self.feeds, inputs))
        for op in self.ops:
            getattr(self, '_op_' + op.type)(op, env)
        return [env[n] for n in self.fetches]

    # Each _op_<type>(op, env) reads its inputs from env and writes its outputs there.

    @staticmethod
    def _in(op, env, slot):
        names = op.input(slot)
        return env[names[0]] if names else None

    @staticmethod
    def _out(op, env, value, slot='Out'):
        env[op.output(slot)[0]] = value

    def _unary(self, op, env, fn):
        self._out(op, env, fn(self._in(op, env, 'X')))

    def _op_relu(self, op, env):
        self._unary(op, env, F.relu)

    def _op_relu6(self, op, env):
        t = op.attr('threshold') if op.has_attr('threshold') else 6.0
        self._unary(op, env, lambda x: torch.clamp(x, 0.0, t))

    def _op_tanh(self, op, env):
        self._unary(op, env, torch.tanh)

    def _op_sigmoid(self, op, env):
        self._unary(op, env, torch.sigmoid)

    def _op_softmax(self, op, env):
        axis = op.attr('axis') if op.has_attr('axis') else -1
        self._unary(op, env, lambda x: F.softmax(x, dim=axis))

    def _op_scale(self, op, env):
        s = op.attr('scale') if op.has_attr('scale') else 1.0
        b = op.attr('bias') if op.has_attr('bias') else 0.0
        after = op.attr('bias_after_scale') if op.has_attr('bias_after_scale') else True
        if after:
            self._unary(op, env, lambda x: x * s + b if b else x * s)
        else:
            self._unary(op, env, lambda x: (x + b) * s)

    def _op_dropout(self, op, env):
        impl = op.attr('dropout_implementation') if op.has_attr('dropout_implementation') \
            else 'downgrade_in_infer'
        p = op.attr('dropout_prob') if op.has_attr('dropout_prob') else 0.5
        if impl == 'upscale_in_train':
            self._unary(op, env, lambda x: x)
        else:
            self._unary(op, env, lambda x: x * (1.0 - p))

    def _op_elementwise_add(self, op, env):
        x, y = self._in(op, env, 'X'), self._in(op, env, 'Y')
        if y.dim() < x.dim():
            axis = op.attr('axis') if op.has_attr('axis') else -1
            if axis < 0:
                axis = x.dim() - y.dim()
            y = y.reshape([1] * axis + list(y.shape) + [1] * (x.dim() - axis - y.dim()))
        self._out(op, env, x + y)

    def _op_mul(self, op, env):
        x, y = self._in(op, env, 'X'), self._in(op, env, 'Y')
        xd = op.attr('x_num_col_dims') if op.has_attr('x_num_col_dims') else 1
        yd = op.attr('y_num_col_dims') if op.has_attr('y_num_col_dims') else 1
        lead = list(x.shape[:xd])
        out = x.reshape(int(np.prod(lead)), -1) @ y.reshape(int(np.prod(y.shape[:yd])), -1)
        self._out(op, env, out.reshape(lead + list(y.shape[yd:])))

    def _op_matmul(self, op, env):
        x, y = self._in(op, env, 'X'), self._in(op, env, 'Y')
        if op.has_attr('transpose_X') and op.attr('transpose_X'):
            x = x.transpose(-1, -2)
        if op.has_attr('transpose_Y') and op.attr('transpose_Y'):
            y = y.transpose(-1, -2)
        alpha = op.attr('alpha') if op.has_attr('alpha') else 1.0
        out = torch.matmul(x, y)
        self._out(op, env, out * alpha if alpha != 1.0 else out)

    def _op_batch_norm(self, op, env):
        x = self._in(op, env, 'X')
        eps = op.attr('epsilon') if op.has_attr('epsilon') else 1e-5
        self._out(op, env, F.batch_norm(x, self._in(op, env, 'Mean'),
                                        self._in(op, env, 'Variance'),
                                        self._in(op, env, 'Scale'), self._in(op, env, 'Bias'),
                                        training=False, eps=eps), 'Y')

    def _conv(self, op, env):
        x, w = self._in(op, env, 'Input'), self._in(op, env, 'Filter')
        strides = _pair(op.attr('strides'))
        dilations = _pair(op.attr('dilations') if op.has_attr('dilations') else [1])
        pad, asym = _resolve_pads(op, x, list(w.shape[2:]), strides, dilations)
        if asym is not None:
            x = F.pad(x, asym)
        groups = op.attr('groups') if op.has_attr('groups') else 1
        b = self._in(op, env, 'Bias') if 'Bias' in op.input_names else None
        self._out(op, env, F.conv2d(x, w, b, strides, pad, dilations, groups), 'Output')

    _op_conv2d = _conv
    _op_depthwise_conv2d = _conv

    def _op_pool2d(self, op, env):
        x = self._in(op, env, 'X')
        kind = op.attr('pooling_type')
        if (op.has_attr('global_pooling') and op.attr('global_pooling')) or \
                (op.has_attr('adaptive') and op.attr('adaptive')):
            size = [1, 1] if op.has_attr('global_pooling') and op.attr('global_pooling') \
                else _pair(op.attr('ksize'))
            fn = F.adaptive_max_pool2d if kind == 'max' else F.adaptive_avg_pool2d
            self._out(op, env, fn(x, size))
            return
        k, s = _pair(op.attr('ksize')), _pair(op.attr('strides'))
        pad, asym = _resolve_pads(op, x, k, s, [1, 1])
        ceil = op.has_attr('ceil_mode') and op.attr('ceil_mode')
        if kind == 'max':
            if asym is not None:
                x = F.pad(x, asym, value=float('-inf'))
            out = F.max_pool2d(x, k, s, pad, ceil_mode=ceil)
        else:
            exclusive = op.attr('exclusive') if op.has_attr('exclusive') else True
            if asym is not None:
                raise NotImplementedError('pool2d: average pooling with asymmetric padding')
            out = F.avg_pool2d(x, k, s, pad, ceil_mode=ceil, count_include_pad=not exclusive)
        self._out(op, env, out)

    def _op_concat(self, op, env):
        axis = op.attr('axis') if op.has_attr('axis') else 0
        self._out(op, env, torch.cat([env[n] for n in op.input('X')], dim=axis))

    def _op_lookup_table_v2(self, op, env):
        ids, w = self._in(op, env, 'Ids'), self._in(op, env, 'W')
        pad = op.attr('padding_idx') if op.has_attr('padding_idx') else -1
        self._out(op, env, F.embedding(ids, w, padding_idx=None if pad < 0 else pad))

    def _op_reshape2(self, op, env):
        x = self._in(op, env, 'X')
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(op.attr('shape'))]
        self._out(op, env, x.reshape(shape))


# ------------------------------------------------------------------ the models ----

def _load(model_dir, model_file=None, params_file=None):
    """(program, feeds, fetch names, params) of a saved model, read by rill on the CPU."""
    scope = rill.Scope()
    with rill.scope_guard(scope):
        exe = rill.Executor(rill.CPUPlace())
        program, feeds, fetches = rill.io.load_inference_model(
            model_dir, exe, model_filename=model_file, params_filename=params_file)
    params = {}
    for v in program.global_block().vars.values():
        if v.persistable and scope.find_var(v.name) is not None and \
                v.name not in ('feed', 'fetch'):
            try:
                params[v.name] = np.array(scope.find_var(v.name).get_tensor())
            except rill.core.Error:
                pass  # a persistable variable that holds no dense tensor
    return program, feeds, [f.name for f in fetches], params


def _model_files(d):
    """(model file, params file) names of a shared model folder, for load_inference_model
    and inference.Config."""
    if os.path.exists(os.path.join(d, 'model.pdmodel')):
        return 'model.pdmodel', 'model.pdiparams'
    if os.path.exists(os.path.join(d, 'params')):
        return '__model__', 'params'
    return None, None


def shared_models(models_dir):
    """[(name, dir, model file, params file, {feed: batch-1 array})] of the shared models."""
    out = []
    for name in sorted(os.listdir(models_dir)):
        d = os.path.join(models_dir, name)
        meta_path = os.path.join(d, 'refs', 'meta.json')
        if not os.path.exists(meta_path):
            continue
        with open(meta_path) as f:
            meta = json.load(f)
        inputs = {feed: np.load(os.path.join(d, 'refs', 'input_%s.npy' % feed))
                  for feed in meta['feed_order']}
        out.append((name, d) + _model_files(d) + (inputs,))
    return out


def random_resnet50(pdmodel, where, seed=0):
    """A model directory under `where` holding the parameter-less ResNet-50 program as
    __model__ and random parameters (filters and weights of variance 1 / fan-in,
    batch_norm statistics near 1, which keep the softmax away from saturation), saved by
    rill; and its {feed: batch-1 array}."""
    rng = np.random.default_rng(seed)
    with open(pdmodel, 'rb') as f:
        data = f.read()
    program = rill.Program.parse_from_string(data)
    block = program.global_block()
    roles = {}
    for op in block.ops:
        for slot in op.input_names:
            for n in op.input(slot):
                roles.setdefault(n, (op.type, slot))
    scope = rill.Scope()
    feeds = []
    for v in block.vars.values():
        if v.name in ('feed', 'fetch'):
            continue
        if not v.persistable:
            continue
        shape = [int(d) for d in v.shape]
        role = roles.get(v.name, ('', ''))
        if role[0] == 'batch_norm' and role[1] in ('Variance', 'Scale'):
            value = rng.uniform(0.8, 1.2, shape)
        elif role[0] == 'batch_norm':
            value = rng.uniform(-0.1, 0.1, shape)
        elif len(shape) >= 2:
            fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[0]
            value = rng.normal(0.0, np.sqrt(1.0 / fan_in), shape)
        else:
            value = rng.uniform(-0.1, 0.1, shape)
        scope.var(v.name).get_tensor().set(value.astype('float32'), rill.CPUPlace())
    for op in block.ops:
        if op.type == 'feed':
            feeds.append(op.output('Out')[0])
    d = os.path.join(where, 'resnet50')
    with rill.scope_guard(scope):
        exe = rill.Executor(rill.CPUPlace())
        rill.io.save_persistables(exe, d, program)
    with open(os.path.join(d, '__model__'), 'wb') as f:
        f.write(data)
    shape = [1] + [int(x) for x in block.var(feeds[0]).shape[1:]]
    return d, {feeds[0]: rng.uniform(-1, 1, shape).astype('float32')}


def batched(inputs, batch):
    """The batch-1 inputs tiled along axis 0 to `batch` rows."""
    return {k: np.ascontiguousarray(np.concatenate([v] * batch, axis=0)[:batch * v.shape[0]])
            if batch > 1 else v for k, v in inputs.items()}


# ------------------------------------------------------------------ timing ----

def median_run(fn, budget, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    end = time.perf_counter() + budget
    while True:
        t = time.perf_counter()
        fn()
        now = time.perf_counter()
        times.append(now - t)
        if now >= end and len(times) >= 3:
            return statistics.median(times)


def agree(a, b, tol):
    """The largest |a - b| over the largest |b|, and whether it is within tol."""
    a, b = np.asarray(a, 'float64'), np.asarray(b, 'float64')
    if a.shape != b.shape:
        return float('inf'), False
    scale = max(np.abs(b).max(initial=0.0), 1e-30)
    err = np.abs(a - b).max(initial=0.0) / scale
    return err, err <= tol


def ort_session(tprog, inputs, device, where):
    """An ONNX Runtime session (CUDA provider on a CUDA device) on tprog exported to ONNX,
    or the reason there is none."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None, 'onnxruntime is not installed'
    provider = 'CUDAExecutionProvider' if device.type == 'cuda' else 'CPUExecutionProvider'
    if provider not in ort.get_available_providers():
        return None, 'onnxruntime %s has no %s (it needs onnxruntime-gpu)' % (
            ort.__version__, provider)

    class Wrap(torch.nn.Module):
        def forward(self, *xs):
            return tuple(tprog(*xs))

    path = os.path.join(where, 'model.onnx')
    args = tuple(torch.from_numpy(inputs[f]).to(device) for f in tprog.feeds)
    try:
        torch.onnx.export(Wrap(), args, path, input_names=tprog.feeds, dynamo=False,
                          dynamic_axes={f: {0: 'batch'} for f in tprog.feeds})
    except Exception as e:  # noqa: BLE001 -- any exporter failure only skips the peer
        return None, 'torch.onnx.export failed: %s' % str(e).splitlines()[0]
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, opts, providers=[provider]), None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--device', default='cuda:0', help='cuda:N (default cuda:0) or cpu')
    ap.add_argument('--models', default=os.path.join(ROOT, '..', 'shared', 'models'))
    ap.add_argument('--programs', default=os.path.join(ROOT, '..', 'shared', 'programs'))
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--budget', type=float, default=0.2, help='seconds per side and round')
    ap.add_argument('--batches', default='1,64')
    ap.add_argument('--only', default='', help='comma-separated model names')
    ap.add_argument('--settle', type=float, default=0.25,
                    help='seconds between two sides, for the threads of the one that ran to '
                         'stop spinning (ONNX Runtime\'s pool and OpenMP spin after work)')
    ap.add_argument('--tol', type=float, default=1e-3)
    ap.add_argument('--tf32', action='store_true', help='allow TF32 on both sides')
    ap.add_argument('--threads', type=int, default=0, help='CPU threads of both (0: cores)')
    ap.add_argument('--no-ort', action='store_true', help='leave ONNX Runtime out')
    args = ap.parse_args()
    if torch is None:
        print('SKIP all: PyTorch is not installed for %s' % sys.executable)
        return 0

    device = torch.device(args.device)
    if device.type == 'cuda':
        if not torch.cuda.is_available():
            print('SKIP all: PyTorch sees no CUDA device')
            return 0
        torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    if args.tf32:
        os.environ['RILL_CUDA_TF32'] = '1'
    else:
        os.environ.pop('RILL_CUDA_TF32', None)
    threads = args.threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    rill_device = 'cpu' if device.type == 'cpu' else 'cuda:%d' % (device.index or 0)
    batches = [int(b) for b in args.batches.split(',') if b]
    only = set(x for x in args.only.split(',') if x)

    name = torch.cuda.get_device_name(device) if device.type == 'cuda' else 'the CPU'
    print('device: %s (%s); torch %s; rill %s; TF32 %s; rounds %d x %.2f s per side' % (
        args.device, name, torch.__version__, rill.__version__,
        'allowed' if args.tf32 else 'off', args.rounds, args.budget))

    work = tempfile.mkdtemp(prefix='torch_infer.')
    try:
        models = shared_models(args.models) if os.path.isdir(args.models) else []
        r50 = os.path.join(args.programs, RESNET50)
        if os.path.exists(r50) and (not only or 'resnet50' in only):
            d, inputs = random_resnet50(r50, work)
            models.append(('resnet50', d, None, None, inputs))
        cases = []  # (label, rill fn, torch fn, ort fn or None)
        ort_skipped = set()
        for mname, d, mfile, pfile, inputs in models:
            if only and mname not in only:
                continue
            try:
                program, feeds, fetches, params = _load(d, mfile, pfile)
                tprog = TorchProgram(program, feeds, fetches, params, device)
            except (NotImplementedError, rill.core.Error) as e:
                print('SKIP model=%s: %s' % (mname, e))
                continue
            cfg = inference.Config(d if mfile is None else os.path.join(d, mfile), pfile,
                                   threads=args.threads, device=rill_device)
            pred = inference.Predictor(cfg)
            for batch in batches:
                feed = batched(inputs, batch)
                arrays = [feed[f] for f in feeds]
                sess, why = (None, None) if args.no_ort else \
                    ort_session(tprog, feed, device, work)

                def rill_run(pred=pred, arrays=arrays):
                    return pred.run(arrays)

                def torch_run(tprog=tprog, arrays=arrays):
                    with torch.inference_mode():
                        xs = [torch.from_numpy(a).to(device) for a in arrays]
                        return [o.cpu().numpy() for o in tprog(*xs)]

                ort_run = None
                if sess is not None:
                    ort_feed = dict(zip(feeds, arrays))

                    def ort_run(sess=sess, ort_feed=ort_feed):
                        return sess.run(None, ort_feed)

                label = 'model=%s batch=%d' % (mname, batch)
                got, want = rill_run(), torch_run()
                bad = [agree(a, b, args.tol) for a, b in zip(got, want)]
                if not all(ok for _, ok in bad):
                    print('SKIP %s: rill and PyTorch disagree (largest difference %.3g of the '
                          'output\'s magnitude, tolerance %g)' % (
                              label, max(e for e, _ in bad), args.tol))
                    continue
                if ort_run is not None:
                    oerr = [agree(a, b, args.tol) for a, b in zip(ort_run(), want)]
                    if not all(ok for _, ok in oerr):
                        print('SKIP %s ort: ONNX Runtime and PyTorch disagree' % label)
                        ort_run = None
                elif why and why not in ort_skipped:
                    ort_skipped.add(why)
                    print('SKIP ort (%s and every later case): %s' % (label, why))
                cases.append((label, rill_run, torch_run, ort_run))

        per = {label: {'rill': [], 'torch': [], 'ort': [], 'ratio': []} for label, *_ in cases}
        for r in range(args.rounds):
            for label, rill_run, torch_run, ort_run in cases:
                sides = [('rill', rill_run), ('torch', torch_run)]
                if ort_run is not None:
                    sides.append(('ort', ort_run))
                if r % 2:
                    sides.reverse()
                got = {}
                for side, fn in sides:
                    got[side] = median_run(fn, args.budget)
                    time.sleep(args.settle)
                if device.type == 'cuda':
                    torch.cuda.synchronize()
                peer = min(v for k, v in got.items() if k != 'rill')
                rec = per[label]
                for side, v in got.items():
                    rec[side].append(v)
                rec['ratio'].append(got['rill'] / peer)
        missed = 0
        for label, *_ in cases:
            rec = per[label]
            ratio = statistics.median(rec['ratio'])
            ok = ratio <= 1.0
            missed += not ok
            ort = ' ort_ms=%.4f' % (statistics.median(rec['ort']) * 1e3) if rec['ort'] else ''
            print('RESULT %s rill_ms=%.4f torch_ms=%.4f%s ratio=%.3f ratio_min=%.3f '
                  'ratio_max=%.3f rounds=%d target=%s' % (
                      label, statistics.median(rec['rill']) * 1e3,
                      statistics.median(rec['torch']) * 1e3, ort, ratio, min(rec['ratio']),
                      max(rec['ratio']), len(rec['ratio']), 'met' if ok else 'missed'))
        print('rill / fastest peer, target <= 1.0: met on %d of %d (model, batch) cases' % (
            len(cases) - missed, len(cases)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
