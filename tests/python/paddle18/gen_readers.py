"""The Fluid 1.x data-feeding scripts of tests/python/test_readers.py, written once for
paddle.fluid or rill: SGD on a small network fed by layers.py_reader (read_file,
double_buffer, decorate_paddle_reader or decorate_tensor_provider, LoD ids), by
create_py_reader_by_data, by io.PyReader iterable and not, and through
io.multiprocess_reader over two readers, each over two epochs (start, run until
core.EOFException, reset). Run under Paddle 1.8.5
(`PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python /tmp/pd18/bin/python gen_readers.py`) it
prints Paddle's losses as the REF literal that the test embeds."""
import sys

import numpy as np

SEED = 20201127
N = 8          # samples per epoch
BATCH = 3      # batches of 3, 3, 2
EPOCHS = 2
D, H = 4, 3
VOCAB, EMB = 10, 3

CASES = ('py_reader', 'py_reader_tensor', 'py_reader_lod', 'by_data', 'pyreader_iterable',
         'pyreader_non_iterable', 'multiprocess')


def samples():
    r = np.random.RandomState(SEED)
    xs = r.uniform(-1, 1, (N, D)).astype('float32')
    ys = r.uniform(-1, 1, (N, 1)).astype('float32')

    def reader():
        for i in range(N):
            yield xs[i], ys[i]
    return reader


def split_samples():
    """samples() as two readers of JSON-able lists (Fluid's multiprocess_reader sends
    samples as JSON through its pipes): the first five samples and the last three."""
    everything = [(x.tolist(), y.tolist()) for x, y in samples()()]

    def part(lo, hi):
        def reader():
            for x, y in everything[lo:hi]:
                yield x, y
        return reader
    return [part(0, 5), part(5, N)]


def lod_samples():
    r = np.random.RandomState(SEED + 1)
    lens = [2, 1, 3, 2, 4, 1, 2, 3]
    seqs = [r.randint(0, VOCAB, (n, 1)).astype('int64') for n in lens]
    ys = r.uniform(-1, 1, (N, 1)).astype('float32')

    def reader():
        for s, y in zip(seqs, ys):
            yield s, y
    return reader


def batches():
    """The batches of samples() as (x, y) arrays, for the tensor providers."""
    def reader():
        b = []
        for x, y in samples()():
            b.append((x, y))
            if len(b) == BATCH:
                yield np.stack([p[0] for p in b]), np.stack([p[1] for p in b])
                b = []
        if b:
            yield np.stack([p[0] for p in b]), np.stack([p[1] for p in b])
    return reader


def params():
    r = np.random.RandomState(SEED + 2)
    return {
        'w1': r.uniform(-0.5, 0.5, (D, H)).astype('float32'),
        'b1': r.uniform(-0.5, 0.5, (H,)).astype('float32'),
        'w2': r.uniform(-0.5, 0.5, (H, 1)).astype('float32'),
        'b2': r.uniform(-0.5, 0.5, (1,)).astype('float32'),
        'emb': r.uniform(-0.5, 0.5, (VOCAB, D)).astype('float32'),
    }


def net(fluid, x, y):
    h = fluid.layers.fc(x, H, act='tanh', param_attr=fluid.ParamAttr(name='w1'),
                        bias_attr=fluid.ParamAttr(name='b1'))
    p = fluid.layers.fc(h, 1, param_attr=fluid.ParamAttr(name='w2'),
                        bias_attr=fluid.ParamAttr(name='b2'))
    loss = fluid.layers.mean(fluid.layers.square_error_cost(p, y))
    fluid.optimizer.SGD(learning_rate=0.2).minimize(loss)
    return loss


def build(fluid, case):
    """Returns (main, startup, loss, reader, iterable)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        if case in ('py_reader', 'py_reader_tensor'):
            # py_reader's own double buffer, or none and layers.double_buffer
            reader = fluid.layers.py_reader(
                capacity=4, shapes=[[-1, D], [-1, 1]], dtypes=['float32', 'float32'],
                use_double_buffer=case == 'py_reader')
            if case == 'py_reader':
                reader.decorate_paddle_reader(fluid.io.batch(samples(), BATCH))
                x, y = fluid.layers.read_file(reader)
            else:
                reader.decorate_tensor_provider(batches())
                x, y = fluid.layers.read_file(fluid.layers.double_buffer(reader))
            return main, startup, net(fluid, x, y), reader, False
        if case == 'py_reader_lod':
            reader = fluid.layers.py_reader(
                capacity=2, shapes=[[-1, 1], [-1, 1]], dtypes=['int64', 'float32'],
                lod_levels=[1, 0])
            ids, y = fluid.layers.read_file(reader)
            e = fluid.layers.embedding(ids, [VOCAB, D], param_attr=fluid.ParamAttr(name='emb'))
            x = fluid.layers.sequence_pool(e, 'sum')
            reader.decorate_paddle_reader(fluid.io.batch(lod_samples(), BATCH))
            return main, startup, net(fluid, x, y), reader, False
        if case == 'by_data':
            xd = fluid.data('x', [None, D], 'float32')
            yd = fluid.data('y', [None, 1], 'float32')
            reader = fluid.layers.create_py_reader_by_data(capacity=4, feed_list=[xd, yd])
            x, y = fluid.layers.read_file(reader)
            reader.decorate_sample_list_generator(fluid.io.batch(samples(), BATCH))
            return main, startup, net(fluid, x, y), reader, False
        x = fluid.layers.data('x', [D], dtype='float32')
        y = fluid.layers.data('y', [1], dtype='float32')
        iterable = case in ('pyreader_iterable', 'multiprocess')
        reader = fluid.io.PyReader(feed_list=[x, y], capacity=4, iterable=iterable)
        if case == 'multiprocess':
            reader.decorate_sample_generator(fluid.io.multiprocess_reader(split_samples()),
                                             batch_size=BATCH, drop_last=False,
                                             places=fluid.cpu_places(1))
        elif iterable:
            reader.decorate_sample_generator(samples(), batch_size=BATCH, drop_last=False,
                                             places=fluid.cpu_places(1))
        else:
            reader.decorate_batch_generator(batches())
        return main, startup, net(fluid, x, y), reader, iterable


def run(fluid, case):
    """The loss of every step, one list per epoch."""
    # Paddle's readers keep their queues in the scope current when they are built
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        return _train(fluid, scope, *build(fluid, case))


def _train(fluid, scope, main, startup, loss, reader, iterable):
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    exe.run(startup)
    for name, v in params().items():
        if scope.find_var(name) is not None:
            scope.find_var(name).get_tensor().set(v, place)
    epochs = []
    for _ in range(EPOCHS):
        got = []
        if iterable:
            for data in reader():
                l, = exe.run(main, feed=data, fetch_list=[loss])
                got.append(float(np.array(l).reshape(-1)[0]))
        else:
            reader.start()
            try:
                while True:
                    l, = exe.run(main, fetch_list=[loss])
                    got.append(float(np.array(l).reshape(-1)[0]))
            except fluid.core.EOFException:
                reader.reset()
        epochs.append(got)
    return epochs


def main():
    import paddle
    import paddle.fluid as fluid
    assert paddle.__version__ == '1.8.5', paddle.__version__
    print('REF = {')
    for case in CASES:
        print('    %r: %r,' % (case, [[round(v, 8) for v in e] for e in run(fluid, case)]))
    print('}')


if __name__ == '__main__':
    sys.exit(main())
