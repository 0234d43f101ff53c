"""Fluid's dataset training path: DatasetFactory's QueueDataset and InMemoryDataset over
MultiSlot files, Executor.train_from_dataset / infer_from_dataset (Hogwild workers),
DataFeedDesc and the trainer descriptions. Paddle 1.8.5's numbers for one case are in
paddle18/train_from_dataset (gen_train_from_dataset.py)."""
import os
import sys

import numpy as np
import pytest

import rill as fluid
from rill import multislot
from rill.multislot import MultiSlotFormatError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'paddle18'))
import gen_train_from_dataset as gen  # noqa: E402

EXPECTED = os.path.join(gen.OUT, 'expected.npz')


def read_lines(path):
    with open(path) as f:
        return f.read().splitlines()


def dataset(kind, feeds, paths, batch=gen.BATCH, thread=1):
    ds = fluid.DatasetFactory().create_dataset(kind)
    ds.set_use_var(feeds)
    ds.set_batch_size(batch)
    ds.set_thread(thread)
    ds.set_filelist(paths)
    ds.set_pipe_command('cat')
    if kind == 'InMemoryDataset':
        ds.load_into_memory()
    return ds


def setup(scope, start=None):
    prog, startup, test, feeds, loss = gen.build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    for k, v in (start or gen.start_params()).items():
        scope.find_var(k).get_tensor().set(v, fluid.CPUPlace())
    return exe, prog, test, feeds, loss


@pytest.mark.parametrize('kind', ['QueueDataset', 'InMemoryDataset'])
def test_matches_paddle_losses_and_parameters(kind, tmp_path, capsys):
    want = np.load(EXPECTED)
    paths = gen.write_data(str(tmp_path))
    scope = fluid.Scope()
    exe, prog, test, feeds, loss = setup(scope)
    ds = dataset(kind, feeds, paths)
    capsys.readouterr()
    exe.train_from_dataset(prog, ds, scope=scope, thread=1, fetch_list=[loss],
                           fetch_info=['loss'], print_period=1)
    exe.infer_from_dataset(test, ds, scope=scope, thread=1, fetch_list=[loss],
                           fetch_info=['infer'], print_period=1)
    text = capsys.readouterr().out
    losses = gen.printed_losses(text, 'loss')
    assert len(losses) == len(want['losses']) == 9
    np.testing.assert_allclose(losses, want['losses'], rtol=1e-5)
    np.testing.assert_allclose(gen.printed_losses(text, 'infer'), want['infer'], rtol=1e-5)
    for k in gen.PARAMS:
        got = np.array(scope.find_var(k).get_tensor())
        np.testing.assert_allclose(got, want['final/' + k], rtol=1e-5, atol=1e-7,
                                   err_msg=k)
        assert not np.array_equal(got, want['start/' + k]) or k == 'fc_o.b'


def test_printout_has_paddles_layout(tmp_path, capsys):
    paths = gen.write_data(str(tmp_path))
    scope = fluid.Scope()
    exe, prog, test, feeds, loss = setup(scope)
    ds = dataset('QueueDataset', feeds, paths[:1], batch=20)
    capsys.readouterr()
    exe.infer_from_dataset(test, ds, scope=scope, fetch_list=[feeds[1], loss],
                           fetch_info=['ids_b', 'L'], print_period=2)
    out = capsys.readouterr().out
    # 40 lines in batches of 20: the second batch prints
    blocks = out.split('\t\n')
    assert len(blocks) == 3 and blocks[2] == ''
    ids_lines = blocks[0].split('\n')
    assert ids_lines[0].startswith('ids_b\tids_b\t\tlod: {{0, ')
    assert ids_lines[1].startswith('\tdim: ') and ids_lines[1].endswith(', 1')
    assert ids_lines[2:4] == ['\tlayout: NCHW', '\tdtype: int64_t']
    want = [l.split() for l in read_lines(paths[0])[20:40]]
    ids = [x for l in want for x in l[2 + int(l[0]):2 + int(l[0]) + int(l[1 + int(l[0])])]]
    assert ids_lines[4] == '\tdata: [%s]' % ' '.join(ids)
    assert blocks[1].startswith('L\tmean_0.tmp_0\t\tlod: {}\n\tdim: 1\n') or \
        blocks[1].startswith('L\t%s\t\tlod: {}\n\tdim: 1\n' % loss.name)


def mean_loss(exe, test, loss, scope, paths, feeds):
    parser = multislot.MultiSlotParser(
        [multislot.Slot(v.name, 'float' if v.dtype == np.float32 else 'uint64',
                        v.lod_level == 0, True, v.shape) for v in feeds])
    cols = multislot.Columns.concat([parser.parse(read_lines(p), p) for p in paths],
                                    parser.used)
    l, = exe.run(test, feed=cols.feed(), fetch_list=[loss], scope=scope)
    return float(np.asarray(l).reshape(-1)[0])


@pytest.mark.parametrize('kind', ['QueueDataset', 'InMemoryDataset'])
@pytest.mark.parametrize('thread', [1, 2])
def test_loss_falls(kind, thread, tmp_path):
    paths = gen.write_data(str(tmp_path))
    scope = fluid.Scope()
    exe, prog, test, feeds, loss = setup(scope)
    before = mean_loss(exe, test, loss, scope, paths, feeds)
    ds = dataset(kind, feeds, paths, batch=4, thread=thread)
    for epoch in range(15):
        if kind == 'InMemoryDataset':
            ds.local_shuffle(seed=epoch)
        exe.train_from_dataset(prog, ds, scope=scope, thread=thread)
    after = mean_loss(exe, test, loss, scope, paths, feeds)
    assert after < 0.9 * before, (before, after)


def test_in_memory_dataset_sizes_shuffle_and_release(tmp_path):
    paths = gen.write_data(str(tmp_path))
    prog, startup, test, feeds, loss = gen.build(fluid)
    ds = dataset('InMemoryDataset', feeds, paths, thread=2)
    assert ds.get_memory_data_size() == 68 and ds.get_shuffle_data_size() == 68
    order0 = ds._order.copy()
    ds.local_shuffle(seed=3)
    o1 = ds._order.copy()
    ds._order = order0.copy()
    ds.global_shuffle(seed=3)
    assert np.array_equal(ds._order, o1) and not np.array_equal(o1, order0)
    assert sorted(o1.tolist()) == list(range(68))
    ds.release_memory()
    assert ds.get_memory_data_size() == 0
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(RuntimeError, match='load_into_memory'):
        exe.train_from_dataset(prog, ds)
    ds.preload_into_memory(thread_num=2)
    ds.wait_preload_done()
    assert ds.get_memory_data_size() == 68


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


SLOTS = [multislot.Slot('ids', 'uint64'), multislot.Slot('skip', 'float', used=False),
         multislot.Slot('d', 'float', dense=True, shape=[-1, 2])]


@pytest.mark.parametrize('line,msg', [
    ('x 1 1 0.5 2 1 2', "line 2, slot 'ids': the count 'x' is not a positive integer"),
    ('0 1 0.5 2 1 2', "line 2, slot 'ids': the count '0' is not a positive integer"),
    ('1 1 1 0.5 2 1', "line 2, slot 'd': the count says 2 values, the line has 1 more"),
    ('1 7 1 0.5', "line 2, slot 'd': the line ends before this slot"),
    ('1 a 1 0.5 2 1 2', "line 2, slot 'ids': value #1 'a' is not an unsigned integer id"),
    ('1 1.5 1 0.5 2 1 2', "line 2, slot 'ids': value #1 '1.5' is not an unsigned"),
    ('1 3 1 0.5 2 1 q', "line 2, slot 'd': value #2 'q' is not a number"),
    ('1 -4 1 0.5 2 1 2', "line 2, slot 'ids': the id -4 is not an unsigned 64-bit"),
    ('1 3 1 0.5 3 1 2 3', "line 2, slot 'd': a dense slot of 2 values per instance has 3"),
    ('1 3 1 0.5 2 1 2 9', "line 2: 1 fields after the last slot ('9'...)"),
    ('', 'line 2: the line is empty'),
])
def test_parser_errors_name_file_line_and_slot(tmp_path, line, msg):
    path = write(tmp_path, 'bad.txt', '1 5 1 0.5 2 1 2\n%s\n' % line)
    parser = multislot.MultiSlotParser(SLOTS)
    with pytest.raises(MultiSlotFormatError) as e:
        parser.parse(read_lines(path), path)
    assert str(e.value).startswith(path + ', line 2')
    assert msg in str(e.value)


def test_parser_errors_reach_train_from_dataset(tmp_path):
    prog, startup, test, feeds, loss = gen.build(fluid)
    good = gen.write_data(str(tmp_path))
    bad = write(tmp_path, 'bad.txt', '1 3 1 4 4 0.1 0.2 0.3 0.4 1 z\n')
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    ds = dataset('QueueDataset', feeds, good + [bad], thread=2)
    with pytest.raises(MultiSlotFormatError, match=r"bad.txt, line 1, slot 'label': value #1 'z'"):
        exe.train_from_dataset(prog, ds, scope=scope)
    ds = fluid.DatasetFactory().create_dataset('InMemoryDataset')
    ds.set_use_var(feeds)
    ds.set_filelist([bad])
    with pytest.raises(MultiSlotFormatError, match='bad.txt, line 1'):
        ds.load_into_memory()


def test_parser_columns_and_in_memory_zero_ids(tmp_path):
    # Paddle 1.8.5 (recorded by hand): the queue feed keeps ids 0; the in-memory feed
    # drops them from sparse slots and pads an emptied slot with one 0
    text = '2 0 5 1 9 2 0.0 0.5\n3 1 0 2 1 9 2 0.1 0.0\n1 0 1 9 2 1 1\n'
    queue = multislot.MultiSlotParser(SLOTS).parse(text.splitlines(), 'x')
    mem = multislot.MultiSlotParser(SLOTS, drop_zeros=True).parse(text.splitlines(), 'x')
    fq, fm = queue.feed(), mem.feed()
    assert fq['ids'][0].reshape(-1).tolist() == [0, 5, 1, 0, 2, 0]
    assert fq['ids'][1] == [[0, 2, 5, 6]]
    assert fm['ids'][0].reshape(-1).tolist() == [5, 1, 2, 0]
    assert fm['ids'][1] == [[0, 1, 3, 4]]
    for f in (fq, fm):
        assert f['d'].dtype == np.float32
        np.testing.assert_array_equal(f['d'], np.float32([[0.0, 0.5], [0.1, 0.0], [1.0, 1.0]]))
        assert 'skip' not in f
    sub = queue.take([2, 0])
    assert sub.feed()['ids'][0].reshape(-1).tolist() == [0, 0, 5]
    np.testing.assert_array_equal(sub.feed()['d'], [[1.0, 1.0], [0.0, 0.5]])
    big = multislot.MultiSlotParser([multislot.Slot('u', 'uint64')]).parse(
        ['1 18446744073709551615'], 'x')
    assert big.values[0].tolist() == [-1]  # uint64 ids are fed as int64, as in Paddle


def test_pipe_command_runs_per_file(tmp_path):
    prog, startup, test, feeds, loss = gen.build(fluid)
    paths = gen.write_data(str(tmp_path))
    tagged = []
    for p in paths:
        q = p + '.tagged'
        with open(q, 'w') as f:
            f.write(''.join('X %s\n' % l for l in read_lines(p)))
        tagged.append(q)
    ds = fluid.DatasetFactory().create_dataset('InMemoryDataset')
    ds.set_use_var(feeds)
    ds.set_filelist(tagged)
    ds.set_pipe_command("sed -e 's/^X //'")
    ds.load_into_memory()
    assert ds.get_memory_data_size() == 68
    ds.set_pipe_command('exit 3')
    with pytest.raises(RuntimeError, match="the pipe command 'exit 3' exited with status 3"):
        ds.load_into_memory()


def test_dataset_desc_reads_as_paddles(tmp_path):
    prog, startup, test, feeds, loss = gen.build(fluid)
    ds = fluid.DatasetFactory().create_dataset('QueueDataset')
    ds.set_use_var([feeds[0], feeds[2]])
    ds.set_batch_size(2)
    # Paddle 1.8.5's desc() of the same calls
    assert ds.desc() == (
        'name: "MultiSlotDataFeed"\nbatch_size: 2\nmulti_slot_desc {\n  slots {\n'
        '    name: "ids_a"\n    type: "uint64"\n    is_used: true\n  }\n  slots {\n'
        '    name: "dense"\n    type: "float"\n    is_dense: true\n    is_used: true\n'
        '    shape: -1\n    shape: 4\n  }\n}\npipe_command: "cat"\n')
    mem = fluid.DatasetFactory().create_dataset('InMemoryDataset')
    assert mem.desc().startswith('name: "MultiSlotInMemoryDataFeed"\n')
    with pytest.raises(ValueError, match='datafeed class Nope does not exist'):
        fluid.DatasetFactory().create_dataset('Nope')
    for name in ('FileInstantDataset', 'BoxPSDataset'):
        with pytest.raises(NotImplementedError, match=name):
            fluid.DatasetFactory().create_dataset(name)
    q = fluid.DatasetFactory().create_dataset()
    with pytest.raises(NotImplementedError, match='InMemoryDataset for local_shuffle'):
        q.local_shuffle()
    assert fluid.dataset.DatasetFactory is fluid.DatasetFactory


PROTO = '''name: "MultiSlotDataFeed"
batch_size: 2
multi_slot_desc {
    slots {
         name: "words"
         type: "uint64"
         is_dense: false
         is_used: true
     }
     slots {
         name: "label"
         type: "uint64"
         is_dense: false
         is_used: false
    }
}
'''


def test_data_feed_desc_round_trip(tmp_path):
    path = write(tmp_path, 'data.proto', PROTO)
    d = fluid.DataFeedDesc(path)
    d.set_batch_size(128)
    d.set_dense_slots(['words'])
    d.set_use_slots(['label'])
    text = d.desc()
    # Paddle 1.8.5's desc() after the same calls
    assert text == (
        'name: "MultiSlotDataFeed"\nbatch_size: 128\nmulti_slot_desc {\n  slots {\n'
        '    name: "words"\n    type: "uint64"\n    is_dense: true\n    is_used: true\n'
        '  }\n  slots {\n    name: "label"\n    type: "uint64"\n    is_dense: false\n'
        '    is_used: true\n  }\n}\npipe_command: "cat"\n')
    again = fluid.DataFeedDesc(write(tmp_path, 'again.proto', text))
    assert again.desc() == text
    with pytest.raises(KeyError, match="no slot named 'nope'"):
        d.set_dense_slots(['nope'])
    bad = write(tmp_path, 'bad.proto', 'name: "MultiSlotDataFeed"\nbatch_size: two\n')
    with pytest.raises(ValueError, match=r'bad.proto:2: batch_size takes an integer'):
        fluid.DataFeedDesc(bad)
    bad = write(tmp_path, 'bad2.proto', 'multi_slot_desc { slots { name: "a" } }\n')
    with pytest.raises(ValueError, match="Slot misses its required field 'type'"):
        fluid.DataFeedDesc(bad)
    bad = write(tmp_path, 'bad3.proto', 'multi_slot_desc { slots { name: "a" type: "float"')
    with pytest.raises(ValueError, match="not closed"):
        fluid.DataFeedDesc(bad)


def test_trainer_descs(tmp_path):
    prog, startup, test, feeds, loss = gen.build(fluid)
    t = fluid.MultiTrainer()
    t._set_program(prog)
    t._set_thread(3)
    t._set_debug(True)
    t._set_fetch_var_and_info([loss], ['L'], 5)
    t._gen_trainer_desc()
    # as Paddle 1.8.5's str() of a MultiTrainer given the same settings
    assert str(t) == (
        'class_name: "MultiTrainer"\ndevice_worker_name: "HogwildWorker"\nthread_num: 3\n'
        'debug: true\nfetch_config {\n  fetch_var_names: "%s"\n  fetch_var_str_format: '
        '"L"\n  print_period: 5\n}\n' % loss.name)
    assert isinstance(t, fluid.TrainerDesc)
    paths = gen.write_data(str(tmp_path))
    ds = dataset('QueueDataset', feeds, paths)
    exe = fluid.Executor(fluid.CPUPlace())
    prog._fleet_opt = {'trainer': 'DistMultiTrainer', 'device_worker': 'DownpourSGD'}
    with pytest.raises(NotImplementedError, match='DistMultiTrainer'):
        exe.train_from_dataset(prog, ds)
    del prog._fleet_opt
    prog._pipeline_opt = {'trainer': 'PipelineTrainer'}
    with pytest.raises(NotImplementedError, match='PipelineTrainer'):
        exe.train_from_dataset(prog, ds)
    del prog._pipeline_opt
    with pytest.raises(ValueError, match='fetch_list has 1 variables, fetch_info 0'):
        exe.train_from_dataset(prog, ds, fetch_list=[loss])
    for cls in (fluid.DistMultiTrainer, fluid.PipelineTrainer):
        with pytest.raises(RuntimeError, match='None Program'):
            cls()._gen_trainer_desc()


def test_worker_errors_are_raised_not_fatal(tmp_path):
    # Paddle's worker thread aborts the process on a failing op; here the call raises
    prog, startup, test, feeds, loss = gen.build(fluid)
    good = gen.write_data(str(tmp_path))
    far = write(tmp_path, 'far.txt', '1 %d 1 3 4 0.1 0.2 0.3 0.4 1 1\n' % (gen.VOCAB + 5))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    ds = dataset('QueueDataset', feeds, [far] + good, thread=2)
    with pytest.raises(fluid.Error, match='lookup_table'):
        exe.train_from_dataset(prog, ds, scope=scope)
    ds = dataset('QueueDataset', feeds, good, thread=2)
    ds.set_pipe_command('cat; exit 4')
    with pytest.raises(RuntimeError, match="'cat; exit 4' exited with status 4"):
        exe.train_from_dataset(prog, ds, scope=scope)
    # the executor is usable afterwards
    ds.set_pipe_command('cat')
    exe.train_from_dataset(prog, ds, scope=scope)


CTR_SCRIPT = '''
import sys
import paddle.fluid as fluid
from paddle.fluid.dataset import DatasetFactory
from paddle.fluid.trainer_desc import MultiTrainer

ids = fluid.layers.data(name='ids', shape=[1], dtype='int64', lod_level=1)
label = fluid.layers.data(name='label', shape=[1], dtype='int64')
emb = fluid.layers.embedding(ids, size=[10, 4], is_sparse=True)
pred = fluid.layers.fc(fluid.layers.sequence_pool(emb, 'sum'), 2, act='softmax')
loss = fluid.layers.mean(fluid.layers.cross_entropy(pred, label))
fluid.optimizer.SGD(0.1).minimize(loss)
dataset = DatasetFactory().create_dataset('InMemoryDataset')
dataset.set_use_var([ids, label])
dataset.set_batch_size(2)
dataset.set_thread(1)
dataset.set_filelist(sys.argv[1:])
dataset.load_into_memory()
dataset.global_shuffle()
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
exe.train_from_dataset(program=fluid.default_main_program(), dataset=dataset,
                       fetch_list=[loss], fetch_info=['loss'], print_period=2, debug=False)
print('done', dataset.get_memory_data_size(), MultiTrainer.__module__)
'''


def test_a_paddle_script_runs_through_rill_compat(tmp_path):
    import subprocess
    import textwrap
    data = write(tmp_path, 'd.txt', '2 1 2 1 0\n1 3 1 1\n3 4 5 6 1 0\n1 7 1 1\n')
    script = write(tmp_path, 'ctr.py', textwrap.dedent(CTR_SCRIPT))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(root, 'python'),
                                                       os.environ.get('PYTHONPATH', '')]))
    r = subprocess.run([sys.executable, '-m', 'rill.compat', script, data], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count('loss\t') == 1
    assert r.stdout.strip().endswith('done 4 rill.trainer_desc')


def test_debug_reports_each_worker_and_worker_counts(tmp_path, capsys):
    paths = gen.write_data(str(tmp_path))
    scope = fluid.Scope()
    exe, prog, test, feeds, loss = setup(scope)

    def workers(ds, thread):
        capsys.readouterr()
        exe.train_from_dataset(prog, ds, scope=scope, thread=thread, debug=True)
        err = capsys.readouterr().err
        return [l.split(':')[0] for l in err.splitlines() if l.startswith('worker ')]

    # a QueueDataset has the dataset's readers, at most one per file, whatever `thread`
    assert workers(dataset('QueueDataset', feeds, paths[:1], thread=2), 0) == ['worker 0']
    assert workers(dataset('QueueDataset', feeds, paths, thread=1), 2) == ['worker 0']
    assert workers(dataset('QueueDataset', feeds, paths, thread=2), 0) == \
        ['worker 0', 'worker 1']
    # an InMemoryDataset has `thread` workers (0: the dataset's count)
    mem = dataset('InMemoryDataset', feeds, paths, thread=1)
    assert workers(mem, 3) == ['worker 0', 'worker 1', 'worker 2']
    assert workers(mem, 0) == ['worker 0']
    capsys.readouterr()
    exe.train_from_dataset(prog, mem, scope=scope, debug=True)
    line = capsys.readouterr().err.strip()
    assert line.startswith('worker 0: 9 batches, 68 instances, read ') and \
        line.endswith(' instances/s')
