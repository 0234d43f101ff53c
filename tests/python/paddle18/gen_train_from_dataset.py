"""Writes train_from_dataset/: two MultiSlot data files (part-0.txt, part-1.txt: two id
slots, a dense slot of 4 floats, a label) and expected.npz with Paddle 1.8.5's numbers for
a small CTR model (`build`: an embedding per id slot, summed, joined with the dense slot,
two fc layers, softmax cross entropy, SGD) trained with Executor.train_from_dataset on a
QueueDataset, one thread, batches of 8: the starting parameters (seeded), the loss of
every batch as Paddle's trainer prints it (print_period=1), the trained parameters, and
the losses of infer_from_dataset over the same files with the trained parameters on the
program cloned for test. `build` and `write_data` are shared with
tests/python/test_train_from_dataset.py. Run with PaddlePaddle 1.8.5 (README.md)."""
import os
import re
import sys
import tempfile

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'train_from_dataset')
VOCAB, EMB, DENSE, HIDDEN = 30, 4, 4, 8
FILES = (('part-0.txt', 40), ('part-1.txt', 28))
BATCH = 8
PARAMS = ('emb_a', 'emb_b', 'fc_h.w', 'fc_h.b', 'fc_o.w', 'fc_o.b')


def lines(seed, n):
    """n seeded MultiSlot lines: ids_a (1-3 ids), ids_b (1-2 ids), dense (4 floats),
    label. Ids start at 1: Paddle's in-memory feed drops id 0 of sparse slots."""
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(n):
        a = rng.randint(1, VOCAB, rng.randint(1, 4))
        b = rng.randint(1, VOCAB, rng.randint(1, 3))
        d = np.round(rng.uniform(-1, 1, DENSE), 3)
        y = int((a.sum() + 2 * d[0]) % 2 > 1)
        out.append(' '.join([str(len(a))] + [str(x) for x in a] + [str(len(b))] +
                            [str(x) for x in b] + [str(DENSE)] + ['%g' % x for x in d] +
                            ['1', str(y)]))
    return out


def write_data(directory):
    """The data files in `directory`; their paths."""
    paths = []
    for i, (name, n) in enumerate(FILES):
        path = os.path.join(directory, name)
        with open(path, 'w') as f:
            f.write('\n'.join(lines(100 + i, n)) + '\n')
        paths.append(path)
    return paths


def start_params():
    rng = np.random.RandomState(7)
    x_width = 2 * EMB + DENSE
    return {'emb_a': rng.uniform(-0.5, 0.5, (VOCAB, EMB)).astype('float32'),
            'emb_b': rng.uniform(-0.5, 0.5, (VOCAB, EMB)).astype('float32'),
            'fc_h.w': rng.uniform(-0.4, 0.4, (x_width, HIDDEN)).astype('float32'),
            'fc_h.b': rng.uniform(-0.1, 0.1, (HIDDEN,)).astype('float32'),
            'fc_o.w': rng.uniform(-0.4, 0.4, (HIDDEN, 2)).astype('float32'),
            'fc_o.b': np.zeros((2,), 'float32')}


def build(fluid):
    """(main, startup, test program, feed variables, loss)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids_a = fluid.layers.data(name='ids_a', shape=[1], dtype='int64', lod_level=1)
        ids_b = fluid.layers.data(name='ids_b', shape=[1], dtype='int64', lod_level=1)
        dense = fluid.layers.data(name='dense', shape=[DENSE], dtype='float32')
        label = fluid.layers.data(name='label', shape=[1], dtype='int64')
        pooled = []
        for ids, name in ((ids_a, 'emb_a'), (ids_b, 'emb_b')):
            emb = fluid.layers.embedding(ids, size=[VOCAB, EMB], is_sparse=True,
                                         param_attr=fluid.ParamAttr(name=name))
            pooled.append(fluid.layers.sequence_pool(emb, 'sum'))
        x = fluid.layers.concat(pooled + [dense], axis=1)
        h = fluid.layers.fc(x, HIDDEN, act='relu', param_attr=fluid.ParamAttr(name='fc_h.w'),
                            bias_attr=fluid.ParamAttr(name='fc_h.b'))
        pred = fluid.layers.fc(h, 2, act='softmax', param_attr=fluid.ParamAttr(name='fc_o.w'),
                               bias_attr=fluid.ParamAttr(name='fc_o.b'))
        loss = fluid.layers.mean(fluid.layers.cross_entropy(pred, label))
        test = main.clone(for_test=True)
        fluid.optimizer.SGD(0.05).minimize(loss)
    return main, startup, test, [ids_a, ids_b, dense, label], loss


def printed_losses(text, info):
    """The values of the `info` variable in a trainer's printout."""
    return [float(m) for m in re.findall(r'^%s\t[^\n]*\n(?:\t[^\n]*\n)*?\tdata: \[([^\]]+)\]'
                                         % re.escape(info), text, re.M)]


def main():
    import paddle.fluid as fluid
    os.makedirs(OUT, exist_ok=True)
    paths = write_data(OUT)
    prog, startup, test, feeds, loss = build(fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    start = start_params()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for k, v in start.items():
            scope.find_var(k).get_tensor().set(v, fluid.CPUPlace())
        ds = fluid.DatasetFactory().create_dataset('QueueDataset')
        ds.set_use_var(feeds)
        ds.set_batch_size(BATCH)
        ds.set_thread(1)
        ds.set_filelist(paths)
        ds.set_pipe_command('cat')
        # the trainer prints on the C++ stdout: catch file descriptor 1
        with tempfile.TemporaryFile('w+') as cap:
            sys.stdout.flush()
            saved = os.dup(1)
            os.dup2(cap.fileno(), 1)
            try:
                exe.train_from_dataset(prog, ds, thread=1, fetch_list=[loss],
                                       fetch_info=['loss'], print_period=1)
                exe.infer_from_dataset(test, ds, thread=1, fetch_list=[loss],
                                       fetch_info=['infer'], print_period=1)
            finally:
                sys.stdout.flush()
                os.dup2(saved, 1)
                os.close(saved)
            cap.seek(0)
            text = cap.read()
        final = {k: np.array(scope.find_var(k).get_tensor()) for k in PARAMS}
    for f in os.listdir('.'):
        if f.endswith('_train_desc.prototxt'):
            os.remove(f)
    losses = printed_losses(text, 'loss')
    infer = printed_losses(text, 'infer')
    arrays = {'losses': np.array(losses, 'float64'), 'infer': np.array(infer, 'float64')}
    arrays.update({'start/' + k: v for k, v in start.items()})
    arrays.update({'final/' + k: v for k, v in final.items()})
    np.savez(os.path.join(OUT, 'expected.npz'), **arrays)
    print('train_from_dataset', len(losses), losses[0], losses[-1], len(infer))


if __name__ == '__main__':
    main()
