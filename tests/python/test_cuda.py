"""fluid.CUDAPlace, fluid.core.is_compiled_with_cuda() and rill.cuda: on a machine
without a CUDA device an executor for CUDAPlace(0) is refused with the reason and the
CPU path still works; with one, a small network gives the CPU's numbers. Tests that
need a device skip without one, saying so."""
import json
import numpy as np
import pytest

import rill as fluid
from conftest import load_example

L = fluid.layers

needs_device = pytest.mark.skipif(
    fluid.cuda.device_count() == 0,
    reason='no CUDA device: %s' % fluid.cuda.unavailable_reason())


def net():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5  # the same weights on both places
    with fluid.program_guard(main, startup):
        x = L.data('x', shape=[13])
        h = L.fc(x, 33, act='relu')
        y = L.softmax(L.fc(h, 7) * 0.5 + 0.25)
    return main, startup, y


def run_on(place, xv):
    main, startup, y = net()
    scope = fluid.Scope()
    exe = fluid.Executor(place)
    with fluid.scope_guard(scope):
        fluid.Executor(fluid.CPUPlace()).run(startup)
        out, = exe.run(main, feed={'x': xv}, fetch_list=[y])
    exe.close()
    return out


def test_build_and_device_count_are_reported():
    assert isinstance(fluid.core.is_compiled_with_cuda(), bool)
    assert fluid.core.is_compiled_with_cuda() == fluid.cuda.is_compiled()
    n = fluid.cuda.device_count()
    assert n >= 0 and fluid.core.get_cuda_device_count() == n
    assert (fluid.cuda.unavailable_reason() is None) == (n > 0)


def test_places_compare_by_id():
    assert fluid.CUDAPlace(0) == fluid.CUDAPlace(0) != fluid.CUDAPlace(1)
    assert fluid.CUDAPlace(2).get_device_id() == 2
    assert repr(fluid.CUDAPlace(1)) == 'CUDAPlace(1)'


def test_without_a_device_the_executor_says_why_and_the_cpu_works():
    if fluid.cuda.device_count() > 0:
        pytest.skip('a CUDA device is present: this test covers machines without one')
    reason = fluid.cuda.unavailable_reason()
    with pytest.raises(fluid.UnimplementedError) as e:
        fluid.Executor(fluid.CUDAPlace(0))
    assert 'place cuda:0 has no registered backend' in str(e.value)
    if fluid.core.is_compiled_with_cuda():
        assert reason in str(e.value)
    xv = np.random.RandomState(1).rand(4, 13).astype('float32')
    out = run_on(fluid.CPUPlace(), xv)
    np.testing.assert_allclose(out.sum(1), np.ones(4), rtol=1e-5)


@needs_device
def test_a_device_id_that_does_not_exist_is_named():
    n = fluid.cuda.device_count()
    with pytest.raises(fluid.InvalidArgumentError, match='place cuda:%d does not exist' % n):
        fluid.Executor(fluid.CUDAPlace(n))


@needs_device
def test_a_network_gives_the_cpus_numbers_on_the_device():
    xv = np.random.RandomState(2).rand(16, 13).astype('float32')
    cpu = run_on(fluid.CPUPlace(), xv)
    gpu = run_on(fluid.CUDAPlace(0), xv)
    np.testing.assert_allclose(gpu, cpu, rtol=1e-4, atol=1e-6)


def test_inference_config_takes_the_device():
    import os
    shared = os.environ.get('RILL_SHARED_DIR') or os.path.join(
        os.path.dirname(__file__), '..', '..', '..', 'shared')
    model = os.path.join(shared, 'models', 'fit_a_line_raftliu')
    cfg = fluid.inference.Config(model)
    assert not cfg.use_gpu()
    with pytest.raises(fluid.InvalidArgumentError, match="place 'tpu:0'"):
        cfg.set_device('tpu:0')
    if fluid.cuda.device_count() == 0:
        with pytest.raises(fluid.UnimplementedError, match='place cuda:0 has no registered backend'):
            cfg.enable_use_gpu(100, 0)
        assert not cfg.use_gpu()
    else:
        cfg.enable_use_gpu(100, 0)
        assert cfg.use_gpu() and cfg.gpu_device_id() == 0


def test_memory_stats_name_the_reason_or_count_the_bytes():
    if fluid.cuda.device_count() == 0:
        with pytest.raises(fluid.UnimplementedError, match='place cuda:0 has no registered backend'):
            fluid.cuda.memory_stats(0)
        return
    xv = np.random.RandomState(3).rand(8, 13).astype('float32')
    run_on(fluid.CUDAPlace(0), xv)
    s = fluid.cuda.memory_stats(0)
    assert s['device_allocs'] > 0 and s['peak_bytes'] >= s['current_bytes'] >= 0


def run_steps(place, main, startup, feed, loss, steps, startup_place=None):
    """The losses of `steps` runs of main on one feed at `place`, from startup run on the
    CPU (the same values on both places) or on `startup_place`, and the float32
    persistables after them: parameters, optimizer state, batch_norm's running
    statistics."""
    scope = fluid.Scope()
    exe = fluid.Executor(place)
    losses = []
    with fluid.scope_guard(scope):
        fluid.Executor(startup_place or fluid.CPUPlace()).run(startup)
        for _ in range(steps):
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0][0]))
        names = [v.name for v in main.list_vars() if fluid.io.is_persistable(v)
                 and scope.find_var(v.name) is not None and v.dtype == 'float32']
        state = {n: np.array(scope.find_var(n).get_tensor()) for n in names}
    exe.close()
    return losses, state


def train_on(place, opt, act, steps=10, startup_place=None):
    """run_steps of an MLP (fc-act, fc-act gated by an fc-sigmoid, fc softmax, cross
    entropy, mean) with optimizer `opt` on one batch."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 9
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data('x', shape=[20])
        label = L.data('label', shape=[1], dtype='int64')
        h = L.fc(L.fc(x, 32, act=act), 24, act=act)
        h = L.elementwise_mul(h, L.fc(x, 24, act='sigmoid'))  # a gate: mul's gradient
        loss = L.mean(L.cross_entropy(L.fc(h, 5, act='softmax'), label))
        opt.minimize(loss)
    rng = np.random.RandomState(4)
    feed = {'x': rng.rand(16, 20).astype('float32'),
            'label': rng.randint(0, 5, (16, 1)).astype('int64')}
    return run_steps(place, main, startup, feed, loss, steps, startup_place)


@needs_device
@pytest.mark.parametrize('act,opt', [('relu', lambda: fluid.optimizer.SGD(0.5)),
                                     ('tanh', lambda: fluid.optimizer.Momentum(0.1, 0.9)),
                                     ('relu', lambda: fluid.optimizer.Adam(0.01))])
def test_an_mlp_trains_on_the_device_as_on_the_cpu(act, opt):
    """The backward pass (mul, elementwise, activation, softmax and mean gradients) and
    the optimizers on the device give the CPU's losses, parameters and optimizer state."""
    cpu_losses, cpu = train_on(fluid.CPUPlace(), opt(), act)
    gpu_losses, gpu = train_on(fluid.CUDAPlace(0), opt(), act)
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4)
    assert cpu_losses[-1] < cpu_losses[0]
    assert sorted(gpu) == sorted(cpu)
    for name in cpu:
        np.testing.assert_allclose(gpu[name], cpu[name], rtol=1e-3, atol=1e-5, err_msg=name)


@needs_device
def test_an_optimizer_without_a_device_kernel_updates_device_state_in_place():
    """Adadelta has no device kernel. With its startup run on the device, its state lives
    there, and the op runs on the host over copies of it: it still sees that its
    AvgSquaredUpdateOut is its AvgSquaredUpdate (one variable, updated in place), which
    changes its arithmetic as in Paddle, and gives the CPU's numbers."""
    cpu_losses, cpu = train_on(fluid.CPUPlace(), fluid.optimizer.Adadelta(1.0), 'tanh')
    gpu_losses, gpu = train_on(fluid.CUDAPlace(0), fluid.optimizer.Adadelta(1.0), 'tanh',
                               startup_place=fluid.CUDAPlace(0))
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4)
    assert cpu_losses[-1] < cpu_losses[0]
    for name in cpu:
        np.testing.assert_allclose(gpu[name], cpu[name], rtol=1e-3, atol=1e-5, err_msg=name)


def train_conv_on(place, layout='NCHW', steps=6):
    """run_steps of a small conv net (conv2d, batch_norm with relu, max pool2d, global
    average pool2d, fc softmax) with Momentum on one batch, its images in `layout` (NCHW
    or NHWC, the layers' data_format / data_layout)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = L.data('img', shape=[2, 10, 10] if layout == 'NCHW' else [10, 10, 2])
        label = L.data('label', shape=[1], dtype='int64')
        h = L.batch_norm(L.conv2d(img, 6, 3, padding=1, data_format=layout), act='relu',
                         data_layout=layout)
        h = L.pool2d(h, pool_size=3, pool_type='max', pool_stride=2, pool_padding=1,
                     data_format=layout)
        h = L.pool2d(h, pool_type='avg', global_pooling=True, data_format=layout)
        loss = L.mean(L.cross_entropy(L.fc(h, 4, act='softmax'), label))
        fluid.optimizer.Momentum(0.05, 0.9).minimize(loss)
    rng = np.random.RandomState(6)
    images = rng.rand(8, 2, 10, 10).astype('float32')
    feed = {'img': images if layout == 'NCHW' else images.transpose(0, 2, 3, 1).copy(),
            'label': rng.randint(0, 4, (8, 1)).astype('int64')}
    return run_steps(place, main, startup, feed, loss, steps)


@needs_device
@pytest.mark.parametrize('layout', ['NCHW', 'NHWC'])
def test_a_conv_net_trains_on_the_device_as_on_the_cpu(layout):
    """conv2d, pool2d (max and avg), batch_norm with its running statistics, and their
    gradients, channels first or last: the CPU's losses, parameters and statistics."""
    cpu_losses, cpu = train_conv_on(fluid.CPUPlace(), layout)
    gpu_losses, gpu = train_conv_on(fluid.CUDAPlace(0), layout)
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4)
    assert cpu_losses[-1] < cpu_losses[0]
    # batch_norm's running mean and variance are compared too
    assert sorted(gpu) == sorted(cpu) and {'batch_norm_0.w_1', 'batch_norm_0.w_2'} <= set(cpu)
    for name in cpu:
        np.testing.assert_allclose(gpu[name], cpu[name], rtol=1e-3, atol=1e-5, err_msg=name)


def test_a_channels_last_conv_net_trains_as_the_channels_first_one():
    """On the CPU: the same images and starting weights (a conv filter is OIHW in both
    layouts, and the global pool leaves the fc one value a channel) give the same losses,
    parameters and batch_norm statistics in NHWC as in NCHW."""
    nchw_losses, nchw = train_conv_on(fluid.CPUPlace(), 'NCHW')
    nhwc_losses, nhwc = train_conv_on(fluid.CPUPlace(), 'NHWC')
    np.testing.assert_allclose(nhwc_losses, nchw_losses, rtol=1e-5)
    assert nchw_losses[-1] < nchw_losses[0]
    assert sorted(nhwc) == sorted(nchw) and 'batch_norm_0.w_1' in nchw
    for name in nchw:
        np.testing.assert_allclose(nhwc[name], nchw[name], rtol=1e-4, atol=1e-6, err_msg=name)


def train_embedding_on(place, is_sparse, opt=None, steps=8):
    """run_steps of a word2vec-style net (four context words through one shared
    embedding, concatenated, fc, softmax cross entropy) with `opt` (SGD by default); the
    embedding's gradient dense or selected rows."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = [L.data('w%d' % i, shape=[1], dtype='int64') for i in range(4)]
        target = L.data('target', shape=[1], dtype='int64')
        embs = [L.embedding(w, size=[50, 16], is_sparse=is_sparse, param_attr='emb') for w in words]
        h = L.fc(L.concat(embs, axis=1), 32, act='sigmoid')
        loss = L.mean(L.cross_entropy(L.fc(h, 50, act='softmax'), target))
        (opt() if opt else fluid.optimizer.SGD(0.5)).minimize(loss)
    rng = np.random.RandomState(6)
    feed = {('w%d' % i): rng.randint(0, 50, (24, 1)).astype('int64') for i in range(4)}
    feed['target'] = rng.randint(0, 50, (24, 1)).astype('int64')
    return run_steps(place, main, startup, feed, loss, steps)


@needs_device
@pytest.mark.parametrize('is_sparse,opt', [(False, None), (True, None),
                                           (True, lambda: fluid.optimizer.Momentum(0.1, 0.9)),
                                           (True, lambda: fluid.optimizer.Adagrad(0.2)),
                                           (True, lambda: fluid.optimizer.Adam(0.05)),
                                           (True, lambda: fluid.optimizer.Adam(0.05, lazy_mode=True)),
                                           (True, lambda: fluid.optimizer.SGD(
                                               0.5, grad_clip=fluid.clip.GradientClipByValue(0.002))),
                                           (True, lambda: fluid.optimizer.Momentum(
                                               0.1, 0.9, grad_clip=fluid.clip.GradientClipByGlobalNorm(0.05)))])
def test_an_embedding_trains_on_the_device_as_on_the_cpu(is_sparse, opt):
    """lookup_table and its gradient, dense or as selected rows (the four lookups'
    summed by concatenation) into sparse sgd, momentum, adagrad or adam (every row, or
    lazily the rows present), or clipped by value (the rows merged, then clipped) or by
    the global norm (the rows scaled by elementwise_mul on the device), concat and its
    gradient: the CPU's losses and embedding."""
    cpu_losses, cpu = train_embedding_on(fluid.CPUPlace(), is_sparse, opt)
    gpu_losses, gpu = train_embedding_on(fluid.CUDAPlace(0), is_sparse, opt)
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4)
    assert cpu_losses[-1] < cpu_losses[0]
    for name in cpu:
        np.testing.assert_allclose(gpu[name], cpu[name], rtol=1e-3, atol=1e-5, err_msg=name)


def train_text_on(place, steps=6):
    """run_steps of a text classifier over sequences of word ids (embedding,
    sequence_conv_pool with sqrt pooling beside a max sequence_pool, fc softmax), as
    Fluid's sentiment examples build it: its sequence ops run on `place` too."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = L.data('words', shape=[1], dtype='int64', lod_level=1)
        label = L.data('label', shape=[1], dtype='int64')
        emb = L.embedding(words, size=[60, 8])
        conv = fluid.nets.sequence_conv_pool(input=emb, num_filters=6, filter_size=3, act='tanh',
                                             pool_type='sqrt')
        h = L.concat([conv, L.sequence_pool(emb, 'max')], axis=1)
        loss = L.mean(L.cross_entropy(L.fc(h, 3, act='softmax'), label))
        fluid.optimizer.SGD(0.5).minimize(loss)
    rng = np.random.RandomState(8)
    lens = [3, 5, 1, 4, 2]
    ids = rng.randint(0, 60, (sum(lens), 1)).astype('int64')
    feed = {'words': fluid.create_lod_tensor(ids, [lens], fluid.CPUPlace()),
            'label': rng.randint(0, 3, (len(lens), 1)).astype('int64')}
    return run_steps(place, main, startup, feed, loss, steps)


@needs_device
def test_a_text_classifier_trains_on_the_device_as_on_the_cpu():
    """sequence_conv and sequence_pool with their gradients over LoD input on the
    device: the CPU's losses and parameters."""
    cpu_losses, cpu = train_text_on(fluid.CPUPlace())
    gpu_losses, gpu = train_text_on(fluid.CUDAPlace(0))
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4)
    assert cpu_losses[-1] < cpu_losses[0]
    for name in cpu:
        np.testing.assert_allclose(gpu[name], cpu[name], rtol=1e-3, atol=1e-5, err_msg=name)


def train_recurrent_on(place, steps=5, trace=None):
    """run_steps of a recurrent text classifier as Fluid's sentiment examples build it
    (embedding, fc to 4 x the hidden size, dynamic_lstm with peepholes beside a reversed
    one without and a dynamic_gru in origin mode, max, last and average pooling, fc
    softmax) with Adam; with `trace`, one more step under the profiler writes its
    timeline there."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = L.data('words', shape=[1], dtype='int64', lod_level=1)
        label = L.data('label', shape=[1], dtype='int64')
        emb = L.embedding(words, size=[60, 8])
        fwd, _ = L.dynamic_lstm(L.fc(emb, 24), 24, use_peepholes=True)
        back, _ = L.dynamic_lstm(L.fc(emb, 24), 24, is_reverse=True, use_peepholes=False)
        gru = L.dynamic_gru(L.fc(emb, 15), 5, origin_mode=True)
        h = L.concat([L.sequence_pool(fwd, 'max'), L.sequence_pool(back, 'last'),
                      L.sequence_pool(gru, 'average')], axis=1)
        loss = L.mean(L.cross_entropy(L.fc(h, 3, act='softmax'), label))
        fluid.optimizer.Adam(0.05).minimize(loss)
    rng = np.random.RandomState(8)
    lens = [3, 5, 1, 4, 2]
    ids = rng.randint(0, 60, (sum(lens), 1)).astype('int64')
    feed = {'words': fluid.create_lod_tensor(ids, [lens], fluid.CPUPlace()),
            'label': rng.randint(0, 3, (len(lens), 1)).astype('int64')}
    result = run_steps(place, main, startup, feed, loss, steps)
    if trace is None:
        return result
    scope = fluid.Scope()
    exe = fluid.Executor(place)
    with fluid.scope_guard(scope):
        fluid.Executor(fluid.CPUPlace()).run(startup)
        exe.run(main, feed=feed, fetch_list=[loss])
        fluid.profiler.start_profiler('All')
        exe.run(main, feed=feed, fetch_list=[loss])
        fluid.profiler.stop_profiler(profile_path=str(trace), print_summary=False)
    exe.close()
    return result, main


@needs_device
def test_lstm_and_gru_train_on_the_device_as_on_the_cpu(tmp_path):
    """lstm, gru and their gradients on the device (forwards and reversed, with and
    without peepholes, over sequences of different lengths): the CPU's losses and
    parameters, and nothing the recurrent ops read or write is copied between the
    places."""
    cpu_losses, cpu = train_recurrent_on(fluid.CPUPlace())
    (gpu_losses, gpu), main = train_recurrent_on(fluid.CUDAPlace(0), trace=tmp_path / 'trace.json')
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4)
    assert cpu_losses[-1] < cpu_losses[0]
    for name in cpu:
        np.testing.assert_allclose(gpu[name], cpu[name], rtol=1e-3, atol=1e-5, err_msg=name)
    kinds = ('lstm', 'lstm_grad', 'gru', 'gru_grad')
    ops = [op for op in main.global_block().ops if op.type in kinds]
    assert sorted({op.type for op in ops}) == sorted(kinds)
    recurrent = {n for op in ops for n in op.input_arg_names + op.output_arg_names}
    events = json.load(open(str(tmp_path / 'trace.json')))['traceEvents']
    copied = {e['args']['var'] for e in events if e.get('cat') == 'memcpy'}
    assert 'words' in copied  # the feed's copy is recorded
    assert not copied & recurrent, sorted(copied & recurrent)


def train_dynamic_rnn_on(place, trace, steps=4):
    """run_steps of a DynamicRNN over an embedded LoD batch (a tanh fc of each step's row
    and the memory, the last step pooled, a squared error) with SGD, then one more step
    under the profiler writing its timeline to `trace`: ((losses, parameters), the
    variables its copies moved, the step counter's name)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = L.data('words', shape=[1], dtype='int64', lod_level=1)
        target = L.data('target', shape=[1], dtype='float32')
        emb = L.embedding(words, size=[30, 6])
        rnn = L.DynamicRNN()
        with rnn.block():
            row = rnn.step_input(emb)
            prev = rnn.memory(shape=[6], value=0.0)
            h = L.fc([row, prev], 6, act='tanh')
            rnn.update_memory(prev, h)
            rnn.output(h)
        pred = L.fc(L.sequence_pool(rnn(), 'last'), 1)
        loss = L.mean(L.square_error_cost(pred, target))
        fluid.optimizer.SGD(0.1).minimize(loss)
    rng = np.random.RandomState(9)
    lens = [4, 2, 5]
    ids = rng.randint(0, 30, (sum(lens), 1)).astype('int64')
    feed = {'words': fluid.create_lod_tensor(ids, [lens], fluid.CPUPlace()),
            'target': rng.rand(len(lens), 1).astype('float32')}
    result = run_steps(place, main, startup, feed, loss, steps)
    _, copies = run_twice_profiled(place, startup, main, feed, [loss], trace)
    return result, copies, rnn.step_idx.name


@needs_device
def test_a_dynamic_rnn_keeps_its_step_counter_on_the_host(tmp_path):
    """DynamicRNN makes its step counter and loop condition with force_cpu, as Fluid's
    does: fill_constant and less_than run on the host, and so does increment, which runs
    where its counter is kept. The tensor-array ops that index with the counter read it
    where it is, so it never moves between the places (it moved before every read, nine
    times a step, on the device); the numbers are the CPU's."""
    (cpu_losses, cpu), _, _ = train_dynamic_rnn_on(fluid.CPUPlace(), tmp_path / 'cpu.json')
    (gpu_losses, gpu), copies, counter = train_dynamic_rnn_on(fluid.CUDAPlace(0), tmp_path / 'gpu.json')
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-5)
    assert cpu_losses[-1] < cpu_losses[0]
    for name in cpu:
        np.testing.assert_allclose(gpu[name], cpu[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert counter not in copies, sorted(copies)
    assert 'words' in copies and 'target' in copies


def train_control_flow_on(place, trace, steps=4):
    """run_steps of a network whose ops run inside sub-blocks: a StaticRNN over a
    [T, batch, 4] sequence (fc of the step and the memory, tanh), layers.cond on a
    comparison of its last output, a While loop scaling a copy of the branch's result
    three times, fc softmax, SGD; then one more step under the profiler, writing its
    timeline to `trace`. Returns (losses, parameters) of the profiled run's scope."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        seq = L.data('seq', [5, 3, 4], dtype='float32', append_batch_size=False)
        label = L.data('label', [3, 1], dtype='int64', append_batch_size=False)
        rnn = L.StaticRNN()
        with rnn.step():
            w = rnn.step_input(seq)
            prev = rnn.memory(shape=[-1, 8], batch_ref=w)
            h = L.fc([w, prev], 8, act='tanh')
            rnn.update_memory(prev, h)
            rnn.step_output(h)
        last = L.reshape(L.slice(rnn(), axes=[0], starts=[4], ends=[5]), [3, 8])
        positive = L.less_than(L.fill_constant([1], 'float32', 0.0),
                               L.reshape(L.reduce_sum(last), [1]))
        branch = L.cond(positive, lambda: L.scale(last, 2.0), lambda: L.scale(last, 0.5))
        i = L.fill_constant([1], 'int64', 0)
        n = L.fill_constant([1], 'int64', 3)
        going = L.less_than(i, n)
        acc = L.assign(branch)
        loop = L.While(going)
        with loop.block():
            L.assign(L.scale(acc, 1.1), acc)
            L.increment(i, in_place=True)
            L.less_than(i, n, cond=going)
        prob = L.fc(L.elementwise_add(acc, branch), 3, act='softmax')
        loss = L.mean(L.cross_entropy(prob, label))
        fluid.optimizer.SGD(0.1).minimize(loss)
    rng = np.random.RandomState(1)
    feed = {'seq': rng.rand(5, 3, 4).astype('float32'),
            'label': rng.randint(0, 3, (3, 1)).astype('int64')}
    scope = fluid.Scope()
    exe = fluid.Executor(place)
    losses = []
    with fluid.scope_guard(scope):
        fluid.Executor(fluid.CPUPlace()).run(startup)
        for _ in range(steps):
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0][0]))
        fluid.profiler.start_profiler('All')
        losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0][0]))
        fluid.profiler.stop_profiler(profile_path=str(trace), print_summary=False)
        params = {p.name: np.array(scope.find_var(p.name).get_tensor())
                  for p in main.all_parameters()}
    exe.close()
    return losses, params


@needs_device
def test_control_flow_trains_on_the_device_as_on_the_cpu(tmp_path):
    """StaticRNN, cond and While on the device: the step ops run there, the sub-block ops
    read their conditions and the steps' values where the device left them (the emulated
    device faults on any host read of its memory), and the result is the CPU's. The
    sub-block ops hand their blocks the variables where they are: the sequence is copied
    to the device once per run, not once per step, the weights the steps read never
    move, nor their gradients, which recurrent_grad sums there, and no variable moves
    more than once a run."""
    cpu_losses, cpu = train_control_flow_on(fluid.CPUPlace(), tmp_path / 'cpu.json')
    gpu_losses, gpu = train_control_flow_on(fluid.CUDAPlace(0), tmp_path / 'gpu.json')
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-5)
    assert cpu_losses[-1] < cpu_losses[0]
    assert sorted(gpu) == sorted(cpu) and len(cpu) == 5
    for name in cpu:
        np.testing.assert_allclose(gpu[name], cpu[name], rtol=1e-5, atol=1e-6, err_msg=name)
    events = json.load(open(str(tmp_path / 'gpu.json')))['traceEvents']
    copies = [e['args']['var'] for e in events if e.get('cat') == 'memcpy']
    assert copies.count('seq') == 1, copies
    # Nothing moves once per step: not the loop's counter (increment runs on the
    # device), not the steps' rows, states or gradients.
    assert max(copies.count(v) for v in copies) == 1, sorted(copies)
    assert not {'fc_0.w_0', 'fc_0.w_1', 'fc_0.b_0'} & set(copies), copies
    # recurrent_grad sums the steps' parameter gradients on the device, where the
    # steps' ops left them.
    assert not {'fc_0.w_0@GRAD', 'fc_0.w_1@GRAD', 'fc_0.b_0@GRAD'} & set(copies), copies
    # Nor anything else: slice and its gradient infer from metadata (no bound tensors
    # given), and the branch not taken zeroes its gradient on the device. Only the two
    # feeds and the fetched loss move.
    assert len(copies) == 3 and {'seq', 'label'} < set(copies), copies
    ran = {e['name'] for e in events if e.get('cat') == 'op'}
    assert {'recurrent', 'recurrent_grad', 'conditional_block', 'conditional_block_grad', 'while',
            'while_grad'} <= ran, ran


def shape_ops_on(place, trace):
    """slice, expand, resize_bilinear (an output size), one_hot and topk on a [2, 3, 8, 8]
    feature map, run twice, the second under the profiler: (outputs, copies)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data('x', [2, 3, 8, 8], dtype='float32', append_batch_size=False)
        ids = L.data('ids', [4, 1], dtype='int64', append_batch_size=False)
        box = L.slice(x, axes=[2, 3], starts=[1, 2], ends=[7, 8])
        tiled = L.expand(box, [1, 2, 1, 1])
        big = L.resize_bilinear(tiled, out_shape=[12, 10])
        values, indices = L.topk(L.reshape(big, [12, 120]), k=3)
        hot = L.one_hot(ids, depth=5)
    rng = np.random.RandomState(4)
    feed = {'x': rng.rand(2, 3, 8, 8).astype('float32'),
            'ids': rng.randint(0, 5, (4, 1)).astype('int64')}
    return run_twice_profiled(place, None, main, feed, [big, values, indices, hot], trace)


def run_twice_profiled(place, startup, main, feed, fetch, trace):
    """Runs startup (if any) on the CPU, then main on `place` twice, the second time
    under the profiler writing its timeline to `trace`: (the second run's outputs, the
    variables its copies between places moved, in order)."""
    exe = fluid.Executor(place)
    with fluid.scope_guard(fluid.Scope()):
        if startup is not None:
            fluid.Executor(fluid.CPUPlace()).run(startup)
        exe.run(main, feed=feed, fetch_list=fetch)
        fluid.profiler.start_profiler('All')
        outs = exe.run(main, feed=feed, fetch_list=fetch)
        fluid.profiler.stop_profiler(profile_path=str(trace), print_summary=False)
    exe.close()
    events = json.load(open(str(trace)))['traceEvents']
    return outs, [e['args']['var'] for e in events if e.get('cat') == 'memcpy']


@needs_device
def test_ops_with_bound_inputs_infer_without_copying_their_data(tmp_path):
    """Ops whose shape inference may read a bound tensor (slice's starts, expand's times,
    an interpolation's size, top_k's K, one_hot's depth) given none infer from metadata
    on the device: nothing but the feeds and the fetched outputs moves, and the numbers
    are the CPU's."""
    cpu, _ = shape_ops_on(fluid.CPUPlace(), tmp_path / 'cpu.json')
    gpu, copies = shape_ops_on(fluid.CUDAPlace(0), tmp_path / 'gpu.json')
    for c, g in zip(cpu, gpu):
        np.testing.assert_allclose(g, c, rtol=1e-6, atol=1e-7)
    assert sorted(copies[:2]) == ['ids', 'x'], copies
    assert len(copies) == 2 + 4, copies  # the feeds, then the four fetches


def classifier_on(place, trace):
    """A classifier's training step as Fluid scripts write it (fc, softmax,
    cross_entropy, accuracy, Adam), with the ops that infer from shapes alone beside it
    (argmax of the prediction, a uniform_random_batch_size_like noise and a
    fill_constant_batch_size_like mask), run twice, the second under the profiler:
    (outputs, copies)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data('x', [12])
        label = L.data('label', [1], dtype='int64')
        noise = fluid.layers.uniform_random_batch_size_like(x, [-1, 12], min=-0.01, max=0.01)
        mask = fluid.layers.fill_constant_batch_size_like(x, [-1, 12], 'float32', 1.0)
        hidden = L.fc(L.elementwise_mul(L.elementwise_add(x, noise), mask), 16, act='relu')
        prediction = L.fc(hidden, 4, act='softmax')
        loss = L.mean(L.cross_entropy(prediction, label))
        acc = L.accuracy(prediction, label)
        guess = L.argmax(prediction, axis=1)
        fluid.optimizer.Adam(0.01).minimize(loss)
    rng = np.random.RandomState(6)
    feed = {'x': rng.rand(8, 12).astype('float32'),
            'label': rng.randint(0, 4, (8, 1)).astype('int64')}
    outs, copies = run_twice_profiled(place, startup, main, feed, [loss, acc, guess], trace)
    return outs, copies, noise.name


@needs_device
def test_a_classifier_step_copies_only_its_feeds_and_fetches(tmp_path):
    """accuracy, argmax and the *_batch_size_like ops infer their outputs from their
    inputs' shapes, so on the device they read their inputs where the device left them:
    a training step with them moves its two feeds there and its three fetches back, and
    nothing else (accuracy alone once moved the top-k values, their indices and the labels
    to the host on every step, and the random op the whole input it takes its batch size
    from). The random op itself runs on the host, where the CPU's generator draws its
    numbers, and its output moves to the device once. The numbers are the CPU's."""
    cpu, _, _ = classifier_on(fluid.CPUPlace(), tmp_path / 'cpu.json')
    gpu, copies, noise = classifier_on(fluid.CUDAPlace(0), tmp_path / 'gpu.json')
    for c, g in zip(cpu, gpu):
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-6)
    assert sorted(copies[:3]) == sorted(['label', 'x', noise]), copies
    assert len(copies) == 3 + 3, copies


def detection_heads_on(place, trace):
    """An SSD head (prior_box on a conv map, box_coder decoding the conv's offsets) and a
    YOLOv3 head (yolo_box) on an image [2, 3, 32, 32], run twice, the second under the
    profiler: (outputs, copies, the names of the reshaped priors and variances)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        image = L.data('image', [2, 3, 32, 32], dtype='float32', append_batch_size=False)
        size = L.data('size', [2, 2], dtype='int32', append_batch_size=False)
        fmap = L.conv2d(image, 16, 3, stride=4, padding=1)  # [2, 16, 8, 8]
        boxes, variances = fluid.layers.prior_box(fmap, image, min_sizes=[8.], max_sizes=[16.],
                                                  aspect_ratios=[2.], flip=True, clip=True)
        priors = L.reshape(boxes, [-1, 4])  # 8 * 8 * 4 priors
        pvar = L.reshape(variances, [-1, 4])
        loc = L.reshape(L.transpose(L.conv2d(fmap, 16, 1), [0, 2, 3, 1]), [2, -1, 4])
        decoded = fluid.layers.box_coder(priors, pvar, loc, code_type='decode_center_size')
        head = L.conv2d(fmap, 2 * (5 + 3), 1)
        ybox, yscore = fluid.layers.yolo_box(head, size, anchors=[10, 13, 16, 30], class_num=3,
                                             conf_thresh=0.4, downsample_ratio=4)
    rng = np.random.RandomState(5)
    feed = {'image': rng.rand(2, 3, 32, 32).astype('float32'),
            'size': np.array([[32, 32], [28, 30]], dtype='int32')}
    outs, copies = run_twice_profiled(place, startup, main, feed, [decoded, ybox, yscore], trace)
    return outs, copies, [priors.name, pvar.name]


@needs_device
def test_detection_heads_decode_on_the_device(tmp_path):
    """box_coder and yolo_box run on the device, prior_box on the host from the feature
    map's shape alone: the map never leaves the device, and only the feeds, the priors
    and their variances, and the fetched outputs move."""
    cpu, _, _ = detection_heads_on(fluid.CPUPlace(), tmp_path / 'cpu.json')
    gpu, copies, priors = detection_heads_on(fluid.CUDAPlace(0), tmp_path / 'gpu.json')
    for c, g in zip(cpu, gpu):
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-5)
    assert 0 < (cpu[1] != 0).sum() < cpu[1].size  # some cells above conf_thresh, some below
    assert sorted(copies[:2]) == ['image', 'size'], copies
    # prior_box and the reshapes viewing its outputs run on the host, from shapes alone
    assert sorted(copies[2:4]) == sorted(priors), copies
    assert len(copies) == 2 + 2 + 3, copies  # and the three fetches


def train_three_steps(place, startup, main, feed, loss, params, trace):
    """Runs startup on the CPU, then three steps of main on `place`, the last under the
    profiler: (the losses, the values of params after, the variables copies moved)."""
    exe = fluid.Executor(place)
    losses = []
    with fluid.scope_guard(fluid.Scope()):
        fluid.Executor(fluid.CPUPlace()).run(startup)
        for step in range(3):
            if step == 2:
                fluid.profiler.start_profiler('All')
            losses.append(exe.run(main, feed=feed, fetch_list=[loss])[0])
        fluid.profiler.stop_profiler(profile_path=str(trace), print_summary=False)
        after = [np.array(fluid.global_scope().find_var(p.name).get_tensor()) for p in params]
    exe.close()
    events = json.load(open(str(trace)))['traceEvents']
    return losses, after, [e['args']['var'] for e in events if e.get('cat') == 'memcpy']


def rnn_op_training_on(place, trace):
    """Paddle 2.x's rnn op (two bidirectional LSTM layers, dropout 0.3 between them with a
    fixed seed, sequences of their own lengths) under a mean-square loss, trained by SGD
    for three steps, the last under the profiler: (losses, the weights after, copies)."""
    T, N, I, H, layers, D = 6, 4, 5, 3, 2, 2
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 9
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        block = main.global_block()
        x = fluid.data('x', [T, N, I], 'float32')
        lens = fluid.data('lens', [N], 'int64')
        weights, biases = [], []
        for l in range(layers):
            for d in range(D):
                for k, width in enumerate([I if l == 0 else D * H, H]):
                    weights.append(L.create_parameter([4 * H, width], 'float32',
                                                      name='w_%d_%d_%d' % (l, d, k)))
                    biases.append(L.create_parameter([4 * H], 'float32', name='b_%d_%d_%d' % (l, d, k)))
        h0 = L.fill_constant([layers * D, N, H], 'float32', 0.1)
        c0 = L.fill_constant([layers * D, N, H], 'float32', -0.1)
        out, h_n, c_n, reserve = [block.create_var(name=n, dtype='float32')
                                  for n in ('out', 'h_n', 'c_n', 'reserve')]
        mask = block.create_var(name='mask', dtype='uint8')
        block.append_op(type='rnn', inputs={'Input': [x], 'PreState': [h0, c0],
                                            'WeightList': weights + biases, 'SequenceLength': [lens]},
                        outputs={'Out': [out], 'State': [h_n, c_n], 'Reserve': [reserve],
                                 'DropoutState': [mask]},
                        attrs={'mode': 'LSTM', 'hidden_size': H, 'num_layers': layers,
                               'is_bidirec': True, 'dropout_prob': 0.3, 'seed': 5, 'is_test': False})
        loss = L.mean(L.square(out)) + L.mean(L.square(h_n)) + L.mean(c_n)
        fluid.optimizer.SGD(0.5).minimize(loss)
    rng = np.random.RandomState(2)
    feed = {'x': rng.uniform(-1, 1, (T, N, I)).astype('float32'),
            'lens': np.array([6, 3, 0, 5], dtype='int64')}
    return train_three_steps(place, startup, main, feed, loss, weights + biases, trace)


@needs_device
def test_the_rnn_op_trains_on_the_device(tmp_path):
    """rnn and rnn_grad run on the device: the same losses and weights as the CPU's (the
    dropout mask drawn by the CPU's generator), and a step moves neither the weights nor
    what the forward keeps for the backward."""
    cpu, cpu_w, _ = rnn_op_training_on(fluid.CPUPlace(), tmp_path / 'cpu.json')
    gpu, gpu_w, copies = rnn_op_training_on(fluid.CUDAPlace(0), tmp_path / 'gpu.json')
    np.testing.assert_allclose(gpu, cpu, rtol=1e-5)
    assert cpu[2] < cpu[0]
    for c, g in zip(cpu_w, gpu_w):
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-6)
    # x up and the loss down; SequenceLength stays on the host, where it is read
    assert copies.count('x') == 1 and len(copies) == 2, copies


def recurrent_inference_on(place, trace):
    """Fluid 1.x's layers.lstm (the cudnn_lstm op), two bidirectional layers in
    inference, run twice, the second under the profiler: (outputs, copies)."""
    T, N, I, H, layers = 7, 3, 5, 6, 2
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 6
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data('x', [T, N, I], 'float32')
        h0 = fluid.data('h0', [layers * 2, N, H], 'float32')
        c0 = fluid.data('c0', [layers * 2, N, H], 'float32')
        out, last_h, last_c = L.lstm(x, h0, c0, T, H, layers, is_bidirec=True, is_test=True)
    rng = np.random.RandomState(8)
    feed = {'x': rng.uniform(-1, 1, (T, N, I)).astype('float32'),
            'h0': rng.uniform(-.5, .5, (layers * 2, N, H)).astype('float32'),
            'c0': rng.uniform(-.5, .5, (layers * 2, N, H)).astype('float32')}
    return run_twice_profiled(place, startup, main, feed, [out, last_h, last_c], trace)


@needs_device
def test_a_bidirectional_lstm_infers_on_the_device(tmp_path):
    """layers.lstm in inference runs on the device (its flat weight, moved there by the
    first run, stays): the CPU's outputs, and a run copies only its feeds and fetches."""
    cpu, _ = recurrent_inference_on(fluid.CPUPlace(), tmp_path / 'cpu.json')
    gpu, copies = recurrent_inference_on(fluid.CUDAPlace(0), tmp_path / 'gpu.json')
    for c, g in zip(cpu, gpu):
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-6)
    assert sorted(copies[:3]) == ['c0', 'h0', 'x'], copies
    assert len(copies) == 3 + 3, copies


def lstm_training_on(place, trace):
    """Fluid 1.x's layers.lstm (cudnn_lstm and cudnn_lstm_grad): two bidirectional layers
    with dropout 0.5 between them (seed 4), under a squared loss, trained by SGD for three
    steps, the last under the profiler: (losses, the flat weight after, copies)."""
    T, N, I, H, layers = 5, 3, 4, 3, 2
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 6
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data('x', [T, N, I], 'float32')
        h0 = L.fill_constant([layers * 2, N, H], 'float32', 0.0)
        c0 = L.fill_constant([layers * 2, N, H], 'float32', 0.0)
        out, last_h, last_c = L.lstm(x, h0, c0, T, H, layers, dropout_prob=0.5, is_bidirec=True, seed=4)
        loss = L.mean(L.square(out)) + L.mean(last_c) + L.mean(L.square(last_h))
        fluid.optimizer.SGD(0.5).minimize(loss)
    w = [v for v in main.global_block().all_parameters()][0]
    rng = np.random.RandomState(3)
    feed = {'x': rng.uniform(-1, 1, (T, N, I)).astype('float32')}
    return train_three_steps(place, startup, main, feed, loss, [w], trace)


@needs_device
def test_a_dropout_lstm_trains_on_the_device(tmp_path):
    """cudnn_lstm's training form and its gradient run on the device: the mask between
    the layers is the CPU's (drawn by its generator, kept in Reserve as the CPU keeps
    it), so the losses and the trained weight are the CPU's; a step moves only x and the
    loss."""
    cpu, cpu_w, _ = lstm_training_on(fluid.CPUPlace(), tmp_path / 'cpu.json')
    gpu, gpu_w, copies = lstm_training_on(fluid.CUDAPlace(0), tmp_path / 'gpu.json')
    np.testing.assert_allclose(gpu, cpu, rtol=1e-5)
    assert cpu[2] < cpu[0]
    np.testing.assert_allclose(gpu_w[0], cpu_w[0], rtol=1e-4, atol=1e-6)
    assert copies.count('x') == 1 and len(copies) == 2, copies


def lstmp_training_on(place, trace):
    """dynamic_lstmp with peepholes, cell_clip and proj_clip over sequences of 3, 1, 4
    and 2 steps (one reversed layer without them stacked on it), last-step pooling and a
    mean, trained by SGD for three steps, the last under the profiler: (losses, the
    weights after, copies)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data('x', shape=[6], dtype='float32', lod_level=1)
        r, _ = L.dynamic_lstmp(L.fc(x, 4 * 5), 4 * 5, 3, use_peepholes=True, cell_clip=0.4,
                               proj_clip=0.3)
        r2, _ = L.dynamic_lstmp(L.fc(r, 4 * 4), 4 * 4, 2, use_peepholes=False, is_reverse=True,
                                proj_activation='sigmoid')
        loss = L.mean(L.sequence_pool(r, 'last')) + L.mean(L.sequence_pool(r2, 'max'))
        fluid.optimizer.SGD(0.5).minimize(loss)
    params = main.global_block().all_parameters()
    rng = np.random.RandomState(4)
    lens = [3, 1, 4, 2]
    feed = {'x': fluid.create_lod_tensor(rng.uniform(-1, 1, (sum(lens), 6)).astype('float32'),
                                         [lens], fluid.CPUPlace())}
    return train_three_steps(place, startup, main, feed, loss, params, trace)


@needs_device
def test_lstmp_trains_on_the_device(tmp_path):
    """lstmp and lstmp_grad run on the device (the projection's clip and activation, the
    cell's clip): the CPU's losses and trained weights, and a step moves only x and the
    loss."""
    cpu, cpu_w, _ = lstmp_training_on(fluid.CPUPlace(), tmp_path / 'cpu.json')
    gpu, gpu_w, copies = lstmp_training_on(fluid.CUDAPlace(0), tmp_path / 'gpu.json')
    np.testing.assert_allclose(gpu, cpu, rtol=1e-5)
    assert cpu[2] < cpu[0]
    assert len(cpu_w) == 10  # two fc layers (W, b) and two lstmp layers (W, ProjWeight, b)
    for c, g in zip(cpu_w, gpu_w):
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-6)
    assert copies.count('x') == 1 and len(copies) == 2, copies


def unused_output_training_on(place, trace):
    """An fc split in two of which the loss reads one half, beside an int64 fill_any_like
    and a zeros_like; the backward pass zeroes the other half's gradient with
    fill_zeros_like. Three SGD steps, the last under the profiler: (losses, the fc's
    weights after, copies)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 2
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data('x', shape=[6], dtype='float32')
        used, unused = L.split(L.fc(x, 8), 2, dim=1)
        ones = L.cast(L.full_like(used, 1.0, dtype='int64'), 'float32')
        loss = L.mean(L.square(used)) + L.mean(ones) + L.mean(L.zeros_like(used))
        fluid.optimizer.SGD(0.5).minimize(loss)
    # zeros_like's, and the backward pass's for the unused half's gradient
    assert [op.type for op in main.global_block().ops].count('fill_zeros_like') == 2
    params = main.global_block().all_parameters()
    feed = {'x': np.random.RandomState(6).uniform(-1, 1, (5, 6)).astype('float32')}
    return train_three_steps(place, startup, main, feed, loss, params, trace)


@needs_device
def test_zeroed_gradients_are_made_on_the_device(tmp_path):
    """fill_zeros_like and fill_any_like run on the device: the gradient of the output no
    op reads is zeroed there, not on the host and copied up on every step, and the
    training is the CPU's."""
    cpu, cpu_w, _ = unused_output_training_on(fluid.CPUPlace(), tmp_path / 'cpu.json')
    gpu, gpu_w, copies = unused_output_training_on(fluid.CUDAPlace(0), tmp_path / 'gpu.json')
    np.testing.assert_allclose(gpu, cpu, rtol=1e-6)
    assert cpu[2] < cpu[0]
    for c, g in zip(cpu_w, gpu_w):
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-7)
    assert copies.count('x') == 1 and len(copies) == 2, copies


@needs_device
def test_the_examples_train_on_the_device_as_on_the_cpu(tmp_path):
    """recognize_digits' CNN (conv, pool, fc, Adam, accuracy) for 40 steps and word2vec
    (a shared sparse embedding, Adagrad) for one epoch, with --device cuda:0: the
    reloaded models score as the CPU's do."""
    digits = load_example('recognize_digits/train.py', 'recognize_digits')
    cpu = digits.train('cnn', 1, 32, str(tmp_path / 'c'), quiet=True, steps=40)
    gpu = digits.train('cnn', 1, 32, str(tmp_path / 'g'), quiet=True, steps=40,
                       place=digits.place_of('cuda:0'))
    assert abs(gpu - cpu) <= 0.01 and cpu > 0.5
    words = load_example('word2vec/train.py', 'word2vec')
    cpu = words.train(1, 32, str(tmp_path / 'wc'))
    gpu = words.train(1, 32, str(tmp_path / 'wg'), words.place_of('cuda:0'))
    assert abs(gpu - cpu) <= 0.01


def test_the_examples_name_a_bad_device():
    device = load_example('recognize_digits/train.py', 'recognize_digits')
    assert isinstance(device.place_of('cpu'), fluid.CPUPlace)
    assert device.place_of('gpu:1') == fluid.CUDAPlace(1)
    with pytest.raises(ValueError, match="--device must be cpu or cuda:N, not 'tpu'"):
        device.place_of('tpu')


def checkpointed_mlp(ckpt_dir, lr):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = L.data('x', shape=[6])
        y = L.data('y', shape=[1])
        loss = L.mean(L.square_error_cost(L.fc(L.fc(x, 16, act='relu'), 1), y))
        fluid.optimizer.SGD(lr).minimize(
            loss, checkpoint_config=fluid.io.CheckpointConfig(ckpt_dir, every_n_steps=4, max_to_keep=0))
    return main, startup, loss


def checkpoint_run(place, ckpt_dir, steps, lr=0.1, resume=False):
    """Trains `steps` steps at `place` (from the newest checkpoint in ckpt_dir with
    resume); the step it started at, its losses and its parameters."""
    main, startup, loss = checkpointed_mlp(ckpt_dir, lr)
    rs = np.random.RandomState(4)
    xs, ys = rs.rand(steps, 8, 6).astype('float32'), rs.rand(steps, 8, 1).astype('float32')
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        start = fluid.io.load_checkpoint(exe, ckpt_dir, main).step if resume else 0
        losses = [float(exe.run(main, feed={'x': xs[s], 'y': ys[s]}, fetch_list=[loss])[0][0])
                  for s in range(start, steps)]
        exe.close()
        names = [p.name for p in main.global_block().all_parameters()]
        params = {n: np.array(scope.find_var(n).get_tensor()) for n in names}
    return start, losses, params


@needs_device
def test_a_checkpoint_moves_between_the_device_and_the_cpu(tmp_path):
    """A checkpoint written while training on the device resumes on the CPU with the
    device's parameters exactly, and one written on the CPU resumes on the device; for
    the same values (a learning rate of 0) both places write the same bytes (the
    manifest's write time and its own checksum aside)."""
    import os
    gpu_dir, cpu_dir = str(tmp_path / 'gpu'), str(tmp_path / 'cpu')
    _, _, on_gpu = checkpoint_run(fluid.CUDAPlace(0), gpu_dir, 8)
    start, _, at_8 = checkpoint_run(fluid.CPUPlace(), gpu_dir, 8, resume=True)  # loaded, no step run
    assert start == 8
    for name in on_gpu:
        assert at_8[name].tobytes() == on_gpu[name].tobytes(), name
    start, losses, _ = checkpoint_run(fluid.CPUPlace(), gpu_dir, 12, resume=True)
    assert start == 8 and len(losses) == 4 and all(np.isfinite(losses))
    _, _, on_cpu = checkpoint_run(fluid.CPUPlace(), cpu_dir, 8)
    start, _, back = checkpoint_run(fluid.CUDAPlace(0), cpu_dir, 8, resume=True)
    assert start == 8
    for name in on_cpu:
        assert back[name].tobytes() == on_cpu[name].tobytes(), name
    same = {}
    for place, d in ((fluid.CUDAPlace(0), str(tmp_path / 'g0')), (fluid.CPUPlace(), str(tmp_path / 'c0'))):
        checkpoint_run(place, d, 4, lr=0.0)
        ck, = fluid.io.list_checkpoints(d)
        same[d] = {f: open(os.path.join(ck.path, f), 'rb').read() for f in os.listdir(ck.path)}
    g0, c0 = same.values()
    assert sorted(g0) == sorted(c0) and len(g0) > 2
    for f in g0:
        if f == 'MANIFEST':
            def entries(text):
                return [ln for ln in text.decode().splitlines() if not ln.startswith(('time_ns ', 'end '))]
            assert entries(g0[f]) == entries(c0[f])
        else:
            assert g0[f] == c0[f], f
