"""Fluid 1.x's trainer descriptions (paddle.fluid.trainer_desc) and the trainer that runs
Executor.train_from_dataset / infer_from_dataset.

MultiTrainer runs a program over a dataset's batches on worker threads, Hogwild as
Paddle's MultiTrainer with HogwildWorkers does: every worker runs the whole program on its
own batches, with its own executor (a rill executor runs one program at a time) and its
own temporaries, while the parameters (the persistable variables of the scope) are shared
and updated by every worker without locks. Worker 0 prints the fetch_list every
print_period batches as Paddle does.

DistMultiTrainer (parameter-server tables pulled and pushed by DownpourWorkers) and
PipelineTrainer (program sections on a pipeline of devices) describe what rill does not
run: they can be built and printed, and running them raises NotImplementedError."""

import sys
import threading
import time

import numpy as np

from .data_feed_desc import _Message

__all__ = ['TrainerDesc', 'MultiTrainer', 'DistMultiTrainer', 'PipelineTrainer']


class TrainerDesc(object):
    """What a trainer is to do: thread count, debug, the variables to print and how
    often, the program. str() gives it in protobuf text format (Paddle's
    trainer_desc.proto)."""

    def __init__(self):
        self.proto_desc = _Message('TrainerDesc')
        import multiprocessing
        self.proto_desc.thread_num = multiprocessing.cpu_count()
        self._fleet_desc = None
        self._device_worker = None
        self._program = None
        self._infer = False
        self._fetch_vars = []
        self._adjust_ins_weight = None
        self._copy_table_config = None

    def _set_fetch_var_and_info(self, fetch_vars, fetch_info, print_period):
        fetch_info = list(fetch_info)
        fc = self.proto_desc.fetch_config
        for i, v in enumerate(fetch_vars):
            fc.fetch_var_names.append(v if isinstance(v, str) else v.name)
            fc.fetch_var_str_format.append(fetch_info[i])
        fc.print_period = print_period

    def _set_debug(self, debug):
        self.proto_desc.debug = debug

    def _set_thread(self, thread_num):
        self.proto_desc.thread_num = thread_num

    def _set_device_worker(self, device_worker):
        self._device_worker = device_worker

    def _set_infer(self, infer):
        self._infer = infer

    def _set_fleet_desc(self, fleet_desc):
        self._fleet_desc = fleet_desc

    def _gen_trainer_desc(self):
        pass

    def _set_program(self, program):
        self._program = program

    def _set_use_cvm(self, use_cvm=False):
        self.proto_desc.use_cvm = use_cvm

    def _set_no_cvm(self, no_cvm=False):
        self.proto_desc.no_cvm = no_cvm

    def _set_scale_datanorm(self, scale_datanorm=-1):
        self.proto_desc.scale_datanorm = scale_datanorm

    def _set_dump_slot(self, dump_slot):
        self.proto_desc.dump_slot = dump_slot

    def _set_mpi_rank(self, mpi_rank):
        self.proto_desc.mpi_rank = mpi_rank

    def _set_mpi_size(self, mpi_size):
        self.proto_desc.mpi_size = mpi_size

    def _set_dump_fields(self, dump_fields):
        self.proto_desc.dump_fields.extend(dump_fields)

    def _set_dump_fields_path(self, path):
        self.proto_desc.dump_fields_path = path

    def _set_dump_file_num(self, dump_file_num):
        self.proto_desc.dump_file_num = dump_file_num

    def _set_dump_converter(self, converter):
        self.proto_desc.dump_converter = converter

    def _set_dump_param(self, dump_param):
        self.proto_desc.dump_param.extend(dump_param)

    def _set_thread_barrier(self, thread_barrier):
        self.proto_desc.thread_barrier = thread_barrier

    def _set_check_nan_var_names(self, check_nan_var_names):
        self.proto_desc.check_nan_var_names.extend(check_nan_var_names)

    def _set_loss_names(self, loss_names):
        self.proto_desc.loss_names.extend(loss_names)

    def _set_adjust_ins_weight(self, config_dict):
        self._adjust_ins_weight = dict(config_dict)

    def _set_copy_table_config(self, config_dict):
        self._copy_table_config = dict(config_dict)

    def _desc(self):
        return self.proto_desc.to_text()

    def __str__(self):
        return self.proto_desc.to_text()


class MultiTrainer(TrainerDesc):
    """Hogwild training on worker threads sharing the scope's parameters."""

    def _gen_trainer_desc(self):
        super(MultiTrainer, self)._gen_trainer_desc()
        self.proto_desc.class_name = 'MultiTrainer'
        self.proto_desc.device_worker_name = 'HogwildWorker'

    def _run(self, executor, dataset, scope):
        return _run_hogwild(self, executor, dataset, scope)


class DistMultiTrainer(TrainerDesc):
    """Paddle's trainer for parameter-server (fleet) programs: described, not run."""

    def _gen_trainer_desc(self):
        super(DistMultiTrainer, self)._gen_trainer_desc()
        self.proto_desc.class_name = 'DistMultiTrainer'
        if self._program is None:
            raise RuntimeError('None Program')
        self.proto_desc.device_worker_name = 'DownpourWorker'

    def _run(self, executor, dataset, scope):
        raise NotImplementedError(
            'train_from_dataset: the program was set up for a fleet parameter server '
            '(DistMultiTrainer, DownpourSGD workers pulling and pushing sparse tables), '
            'which rill does not run; rill trains such programs with the '
            'DistributeTranspiler (doc/design/distributed.md)')


class PipelineTrainer(TrainerDesc):
    """Paddle's trainer for PipelineOptimizer programs: described, not run."""

    def _gen_trainer_desc(self):
        super(PipelineTrainer, self)._gen_trainer_desc()
        self.proto_desc.class_name = 'PipelineTrainer'
        if self._program is None:
            raise RuntimeError('None Program')
        self.proto_desc.device_worker_name = 'SectionWorker'

    def _run(self, executor, dataset, scope):
        raise NotImplementedError(
            'train_from_dataset: the program was split into pipeline sections '
            '(PipelineTrainer, SectionWorkers on a pipeline of devices), which rill does '
            'not run')


def create_trainer(program):
    """The trainer for `program` as Paddle's TrainerFactory picks it: a PipelineTrainer
    for a program a PipelineOptimizer made, a DistMultiTrainer for a fleet program, else
    a MultiTrainer."""
    if getattr(program, '_pipeline_opt', None):
        trainer = PipelineTrainer()
    elif getattr(program, '_fleet_opt', None):
        trainer = DistMultiTrainer()
        opt = program._fleet_opt
        if 'fleet_desc' in opt:
            trainer._set_fleet_desc(opt['fleet_desc'])
    else:
        trainer = MultiTrainer()
    trainer._set_program(program)
    return trainer


_DTYPE_NAMES = {'float32': 'float', 'float64': 'double', 'int64': 'int64_t', 'int32': 'int',
                'int16': 'int16_t', 'int8': 'int8_t', 'uint8': 'uint8_t', 'bool': 'bool',
                'float16': 'float16'}


def format_fetch(info, name, array, lod):
    """A fetched variable as Paddle's trainers print it (platform::PrintVar)."""
    a = np.asarray(array)
    if a.dtype.kind == 'f':
        data = ' '.join('%g' % x for x in a.reshape(-1).tolist())
    elif a.dtype.kind == 'b':
        data = ' '.join('1' if x else '0' for x in a.reshape(-1).tolist())
    else:
        data = ' '.join('%d' % x for x in a.reshape(-1).tolist())
    lod_s = ''.join('{%s}' % ', '.join('%d' % o for o in level) for level in lod or [])
    return ('%s\t%s\t\tlod: {%s}\n\tdim: %s\n\tlayout: NCHW\n\tdtype: %s\n\tdata: [%s]\n\t\n'
            % (info, name, lod_s, ', '.join('%d' % d for d in a.shape),
               _DTYPE_NAMES.get(a.dtype.name, a.dtype.name), data))


def _run_hogwild(trainer, executor, dataset, scope):
    from .executor import Executor
    program = trainer._program
    desc = trainer.proto_desc
    fc = desc.fetch_config
    fetch_names = list(fc.fetch_var_names)
    fetch_info = list(fc.fetch_var_str_format)
    period = fc.print_period
    if fetch_names and period <= 0:
        raise ValueError('train_from_dataset: print_period must be positive, got %d' % period)
    workers = dataset._workers(desc.thread_num)
    source = dataset._batch_source()
    program._c()  # build the C program once, before the workers share it
    if workers == 1:
        exes = [executor]
    else:
        exes = [Executor(executor.place, num_threads=1) for _ in range(workers)]
    errors = []
    stop = threading.Event()
    out_lock = threading.Lock()
    stats = [None] * workers

    def work(i):
        exe = exes[i]
        batches = source(i)
        n_batches = n_inst = 0
        t_read = t_run = 0.0
        try:
            while not stop.is_set():
                t0 = time.perf_counter()
                cols = next(batches, None)
                if cols is None:
                    break
                feed = cols.feed()
                t1 = time.perf_counter()
                n_batches += 1
                n_inst += len(cols)
                show = i == 0 and fetch_names and n_batches % period == 0
                outs = exe.run(program, feed=feed, fetch_list=fetch_names if show else None,
                               scope=scope, return_numpy=False)
                t_run += time.perf_counter() - t1
                t_read += t1 - t0
                if show:
                    text = ''.join(format_fetch(info, name, t.numpy(), t.lod())
                                   for info, name, t in zip(fetch_info, fetch_names, outs))
                    with out_lock:
                        sys.stdout.write(text)
                        sys.stdout.flush()
        except BaseException as e:  # noqa: B902 - re-raised in the caller's thread
            errors.append(e)
            stop.set()
        finally:
            # a worker stopped early leaves its file: the reader ends its pipe quietly
            close = getattr(batches, 'close', None)
            if close is not None:
                try:
                    close()
                except BaseException as e:  # noqa: B902 - re-raised in the caller's thread
                    errors.append(e)
                    stop.set()
            stats[i] = (n_batches, n_inst, t_read, t_run)

    try:
        if workers == 1:
            work(0)
        else:
            threads = [threading.Thread(target=work, args=(i,), daemon=True)
                       for i in range(workers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        if workers > 1:
            for e in exes:
                e.close()
    if errors:
        raise errors[0]
    if desc.debug:
        for i, (nb, ni, tr, tu) in enumerate(stats):
            total = tr + tu
            sys.stderr.write('worker %d: %d batches, %d instances, read %.3f ms/batch, '
                             'run %.3f ms/batch, IO percent: %.1f, %.2f instances/s\n'
                             % (i, nb, ni, 1e3 * tr / max(nb, 1), 1e3 * tu / max(nb, 1),
                                100 * tr / total if total else 0.0,
                                ni / total if total else 0.0))
    return None
