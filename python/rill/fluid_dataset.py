"""Fluid 1.x's datasets (paddle.fluid.dataset): MultiSlot text files read for
Executor.train_from_dataset / infer_from_dataset.

    dataset = fluid.DatasetFactory().create_dataset('QueueDataset')  # or 'InMemoryDataset'
    dataset.set_use_var([ids, dense, label])
    dataset.set_batch_size(32); dataset.set_thread(2)
    dataset.set_filelist(['part-0', 'part-1']); dataset.set_pipe_command('cat')
    exe.train_from_dataset(fluid.default_main_program(), dataset)

A QueueDataset streams its files while training: each worker thread takes the next file
not yet taken, runs it through the pipe command, and makes batches of the lines it reads
(a batch may span two files of one worker). An InMemoryDataset reads every file at
load_into_memory(); local_shuffle() and global_shuffle() (one machine: the same) reorder
the instances; training makes batches of the instances in that order, shared out among
the workers. The line format: rill.multislot."""

import os
import random
import shlex
import subprocess
import threading

import numpy as np

from . import multislot
from .data_feed_desc import _Message

__all__ = ['DatasetFactory', 'InMemoryDataset', 'QueueDataset']


class DatasetFactory(object):
    """create_dataset(datafeed_class='QueueDataset'): a QueueDataset or InMemoryDataset
    (FileInstantDataset and BoxPSDataset exist to say that rill lacks them)."""

    def create_dataset(self, datafeed_class='QueueDataset'):
        cls = _CLASSES.get(datafeed_class)
        if cls is None:
            raise ValueError('datafeed class %s does not exist' % datafeed_class)
        return cls()


class DatasetBase(object):
    """What both datasets share: the data feed description (desc()), the file list, the
    pipe command, the batch size, the thread count."""

    _feed_name = ''

    def __init__(self):
        self.proto_desc = _Message('DataFeedDesc')
        self.proto_desc.pipe_command = 'cat'
        self.proto_desc.name = self._feed_name
        self.thread_num = 1
        self.filelist = []

    def set_pipe_command(self, pipe_command):
        """A shell command each file is piped through (its stdin is the file, its stdout
        the MultiSlot lines); "cat" reads the file as it is."""
        self.proto_desc.pipe_command = pipe_command

    def set_rank_offset(self, rank_offset):
        self.proto_desc.rank_offset = rank_offset

    def set_batch_size(self, batch_size):
        """Instances per batch (the last batch of a worker may hold fewer)."""
        if int(batch_size) <= 0:
            raise ValueError('set_batch_size: the batch size must be positive, got %r'
                             % (batch_size,))
        self.proto_desc.batch_size = batch_size

    def set_pv_batch_size(self, pv_batch_size):
        self.proto_desc.pv_batch_size = pv_batch_size

    def set_thread(self, thread_num):
        """Reader threads; train_from_dataset runs as many workers (a QueueDataset: no
        more than it has files)."""
        if int(thread_num) <= 0:
            raise ValueError('set_thread: the thread count must be positive, got %r'
                             % (thread_num,))
        self.thread_num = int(thread_num)

    def set_filelist(self, filelist):
        """The data files, read in this order."""
        if isinstance(filelist, str):
            raise TypeError('set_filelist takes a list of file names, got the string %r'
                            % filelist)
        self.filelist = list(filelist)

    def set_use_var(self, var_list):
        """The variables the slots feed, one slot per variable in the order of the
        lines' slots: float32 -> 'float', int64 -> 'uint64'; a variable without LoD
        (lod_level 0) is a dense slot of its shape."""
        multi_slot = self.proto_desc.multi_slot_desc
        for var in var_list:
            slot = multi_slot.add('slots')
            slot.is_used = True
            slot.name = var.name
            if var.lod_level == 0:
                slot.is_dense = True
                slot.shape.extend(int(d) for d in var.shape)
            if var.dtype == np.float32:
                slot.type = 'float'
            elif var.dtype == np.int64:
                slot.type = 'uint64'
            else:
                raise ValueError('Currently, fluid.dataset only supports dtype=float32 and '
                                 'dtype=int64 (variable %s is %s)' % (var.name, var.dtype))

    def set_hdfs_config(self, fs_name, fs_ugi):
        raise NotImplementedError('%s.set_hdfs_config: rill reads local files only (HDFS '
                                  'is not supported)' % type(self).__name__)

    def set_download_cmd(self, download_cmd):
        raise NotImplementedError('%s.set_download_cmd: rill reads local files only; use '
                                  'set_pipe_command to transform them'
                                  % type(self).__name__)

    def set_fea_eval(self, record_candidate_size, fea_eval=True):
        raise NotImplementedError('%s.set_fea_eval (slots_shuffle feature evaluation) is '
                                  'not supported by rill' % type(self).__name__)

    def slots_shuffle(self, slots):
        raise NotImplementedError('%s.slots_shuffle is not supported by rill'
                                  % type(self).__name__)

    def desc(self):
        """The data feed description in protobuf text format."""
        return self.proto_desc.to_text()

    # -- rill's reading side

    def _slots(self):
        slots = [multislot.Slot(s.name, s.type, s.is_dense, s.is_used, s.shape)
                 for s in self.proto_desc.multi_slot_desc.slots]
        if not any(s.used for s in slots):
            raise ValueError('%s: no slot is used; call set_use_var([...]) with the '
                             'variables the data feeds' % type(self).__name__)
        return slots

    def _parser(self):
        return multislot.MultiSlotParser(self._slots(),
                                         drop_zeros=isinstance(self, InMemoryDataset))

    def _check_filelist(self):
        if not self.filelist:
            raise ValueError('%s: the file list is empty; call set_filelist([...])'
                             % type(self).__name__)

    def _open_lines(self, path):
        """An iterator over the lines of `path` run through the pipe command, and
        done(check=True) to call after: it raises if the command failed, or with
        check=False (the reading was cut short) ends the command quietly."""
        cmd = self.proto_desc.pipe_command.strip()
        gz = path.endswith('.gz')
        if cmd in ('', 'cat') and not gz:
            f = open(path, 'r')
            return f, lambda check=True: f.close()
        if not os.path.exists(path):
            raise FileNotFoundError('%s: no such data file' % path)
        shell = 'gzip -dc -- %s' % shlex.quote(path) if gz else None
        if shell and cmd not in ('', 'cat'):
            shell += ' | ' + cmd
        src = None if shell else open(path, 'rb')
        proc = subprocess.Popen(shell or cmd, shell=True, stdin=src, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True)
        if src is not None:
            src.close()
        err = []
        t = threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True)
        t.start()

        def done(check=True):
            if not check and proc.poll() is None:
                proc.kill()
            proc.stdout.close()
            rc = proc.wait()
            t.join()
            proc.stderr.close()
            if check and rc != 0:
                raise RuntimeError("%s: the pipe command %r exited with status %d: %s"
                                   % (path, shell or cmd, rc, (err[0] if err else '')
                                      .strip()[-500:]))
        return proc.stdout, done

    def _read_file(self, path, parser):
        lines, done = self._open_lines(path)
        try:
            cols = parser.parse(lines, path)
        except BaseException:
            done(check=False)
            raise
        done()
        return cols


class QueueDataset(DatasetBase):
    """Streams its files during training (Paddle's MultiSlotDataFeed)."""

    _feed_name = 'MultiSlotDataFeed'

    def local_shuffle(self):
        raise NotImplementedError('QueueDataset does not support local shuffle, please use '
                                  'InMemoryDataset for local_shuffle')

    def global_shuffle(self, fleet=None):
        raise NotImplementedError('QueueDataset does not support global shuffle, please use '
                                  'InMemoryDataset for global_shuffle')

    def _workers(self, thread):
        self._check_filelist()
        return max(1, min(self.thread_num, len(self.filelist)))

    def _batch_source(self):
        """batches(worker): the batches (Columns) of one worker, which takes files
        until none is left."""
        parser = self._parser()
        batch = self.proto_desc.batch_size
        files = list(self.filelist)
        lock = threading.Lock()
        next_file = [0]

        def take_file():
            with lock:
                if next_file[0] >= len(files):
                    return None
                next_file[0] += 1
                return files[next_file[0] - 1]

        def batches(worker):
            parts, have = [], 0
            while True:
                path = take_file()
                if path is None:
                    break
                lines, done = self._open_lines(path)
                read_all = False
                try:
                    pending, first = [], 1
                    for lineno, line in enumerate(lines, 1):
                        if not pending:
                            first = lineno
                        pending.append(line)
                        if have + len(pending) == batch:
                            parts.append(parser.parse(pending, path, first))
                            yield multislot.Columns.concat(parts, parser.used)
                            parts, have, pending = [], 0, []
                    if pending:
                        parts.append(parser.parse(pending, path, first))
                        have += len(pending)
                    read_all = True
                finally:
                    done(check=read_all)
            if have:
                yield multislot.Columns.concat(parts, parser.used)
        return batches


class InMemoryDataset(DatasetBase):
    """Reads every file into memory at load_into_memory() (Paddle's
    MultiSlotInMemoryDataFeed: in sparse slots, zero ids and floats below 1e-6 are left
    out, and an instance left without a value gets one 0)."""

    _feed_name = 'MultiSlotInMemoryDataFeed'

    def __init__(self):
        super(InMemoryDataset, self).__init__()
        self._data = None        # Columns of every instance, in file order
        self._order = None       # the instance order after shuffles
        self._preload = None
        self._random = random.Random()
        self.queue_num = None
        self.fleet_send_batch_size = None
        self.fleet_send_sleep_seconds = None

    def set_feed_type(self, data_feed_type):
        if data_feed_type != 'MultiSlotInMemoryDataFeed':
            raise NotImplementedError('InMemoryDataset.set_feed_type: rill reads '
                                      'MultiSlotInMemoryDataFeed only, got %r'
                                      % data_feed_type)
        self.proto_desc.name = data_feed_type

    def set_queue_num(self, queue_num):
        self.queue_num = queue_num

    def set_parse_ins_id(self, parse_ins_id):
        self._unsupported_flag('set_parse_ins_id', parse_ins_id)

    def set_parse_content(self, parse_content):
        self._unsupported_flag('set_parse_content', parse_content)

    def set_parse_logkey(self, parse_logkey):
        self._unsupported_flag('set_parse_logkey', parse_logkey)

    def set_merge_by_sid(self, merge_by_sid):
        self.merge_by_sid = merge_by_sid

    def set_enable_pv_merge(self, enable_pv_merge):
        self._unsupported_flag('set_enable_pv_merge', enable_pv_merge)

    def set_merge_by_lineid(self, merge_size=2):
        self._unsupported_flag('set_merge_by_lineid', True)

    def set_fleet_send_batch_size(self, fleet_send_batch_size=1024):
        self.fleet_send_batch_size = fleet_send_batch_size

    def set_fleet_send_sleep_seconds(self, fleet_send_sleep_seconds=0):
        self.fleet_send_sleep_seconds = fleet_send_sleep_seconds

    def _unsupported_flag(self, what, value):
        if value:
            raise NotImplementedError('InMemoryDataset.%s: rill reads MultiSlot lines '
                                      'without instance ids, contents or log keys' % what)

    def load_into_memory(self):
        """Reads every file (thread_num at a time), in file-list order."""
        self._check_filelist()
        parser = self._parser()
        files = list(self.filelist)
        results = [None] * len(files)
        errors = []
        lock = threading.Lock()
        nxt = [0]

        def reader():
            while not errors:
                with lock:
                    i = nxt[0]
                    nxt[0] += 1
                if i >= len(files):
                    return
                try:
                    results[i] = self._read_file(files[i], parser)
                except BaseException as e:  # noqa: B902 - re-raised by the caller
                    errors.append(e)
                    return

        n = max(1, min(self.thread_num, len(files)))
        if n == 1:
            reader()
        else:
            threads = [threading.Thread(target=reader, daemon=True) for _ in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        if errors:
            raise errors[0]
        self._data = multislot.Columns.concat(results, parser.used)
        self._order = np.arange(len(self._data), dtype=np.int64)

    def preload_into_memory(self, thread_num=None):
        """load_into_memory() on a background thread; wait_preload_done() waits."""
        if thread_num is not None:
            self.set_thread(thread_num)
        err = []

        def run():
            try:
                self.load_into_memory()
            except BaseException as e:  # noqa: B902 - raised by wait_preload_done
                err.append(e)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self._preload = (t, err)

    def wait_preload_done(self):
        if self._preload is None:
            return
        t, err = self._preload
        t.join()
        self._preload = None
        if err:
            raise err[0]

    def _loaded(self, what):
        if self._data is None:
            raise RuntimeError('InMemoryDataset.%s: no data in memory; call '
                               'load_into_memory() first' % what)

    def local_shuffle(self, seed=None):
        """Shuffles the instances in memory; `seed` (rill's addition) makes the order
        reproducible."""
        self._loaded('local_shuffle')
        rng = random.Random(seed) if seed is not None else self._random
        order = self._order.tolist()
        rng.shuffle(order)
        self._order = np.array(order, np.int64)

    def global_shuffle(self, fleet=None, thread_num=12, seed=None):
        """On one machine, a local_shuffle(); several trainers (a fleet with more than
        one worker) are not supported."""
        if fleet is not None and fleet.worker_num() > 1:
            raise NotImplementedError('InMemoryDataset.global_shuffle: shuffling across %d '
                                      'trainers is not supported by rill; it shuffles on '
                                      'one machine' % fleet.worker_num())
        self.local_shuffle(seed)

    def release_memory(self):
        """Drops the instances in memory."""
        self._data = None
        self._order = None

    def get_memory_data_size(self, fleet=None):
        """The number of instances in memory (0 when none are)."""
        return 0 if self._data is None else len(self._data)

    def get_shuffle_data_size(self, fleet=None):
        """The number of instances in memory, shuffled or not."""
        return self.get_memory_data_size(fleet)

    def get_pv_data_size(self):
        return 0

    def preprocess_instance(self):
        raise NotImplementedError('InMemoryDataset.preprocess_instance (page-view merging) '
                                  'is not supported by rill')

    def postprocess_instance(self):
        raise NotImplementedError('InMemoryDataset.postprocess_instance (page-view merging) '
                                  'is not supported by rill')

    def set_current_phase(self, current_phase):
        raise NotImplementedError('InMemoryDataset.set_current_phase (page-view merging) '
                                  'is not supported by rill')

    def set_generate_unique_feasigns(self, generate_uni_feasigns, shard_num):
        raise NotImplementedError('InMemoryDataset.set_generate_unique_feasigns (parameter '
                                  'server tables) is not supported by rill')

    def generate_local_tables_unlock(self, table_id, fea_dim, read_thread_num,
                                     consume_thread_num, shard_num):
        raise NotImplementedError('InMemoryDataset.generate_local_tables_unlock (parameter '
                                  'server tables) is not supported by rill')

    def _workers(self, thread):
        return max(1, thread if thread > 0 else self.thread_num)

    def _batch_source(self):
        self._loaded('train_from_dataset')
        data, order = self._data, self._order
        batch = self.proto_desc.batch_size
        starts = range(0, len(order), batch)
        lock = threading.Lock()
        nxt = [0]

        def batches(worker):
            while True:
                with lock:
                    i = nxt[0]
                    nxt[0] += 1
                if i >= len(starts):
                    return
                yield data.take(order[starts[i]:starts[i] + batch])
        return batches


class FileInstantDataset(DatasetBase):
    """Paddle's FileInstantDataset (MultiSlotFileInstantDataFeed, a CUDA build's feed):
    not in rill."""

    def __init__(self):
        raise NotImplementedError('FileInstantDataset (MultiSlotFileInstantDataFeed) is not '
                                  'supported by rill; use QueueDataset or InMemoryDataset')


class BoxPSDataset(InMemoryDataset):
    """Paddle's BoxPSDataset (the BoxPS parameter server's feed): not in rill."""

    def __init__(self):
        raise NotImplementedError('BoxPSDataset (the BoxPS parameter server) is not '
                                  'supported by rill; use QueueDataset or InMemoryDataset')


_CLASSES = {'QueueDataset': QueueDataset, 'InMemoryDataset': InMemoryDataset,
            'FileInstantDataset': FileInstantDataset, 'BoxPSDataset': BoxPSDataset}
