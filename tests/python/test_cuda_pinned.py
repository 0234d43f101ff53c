"""fluid.CUDAPinnedPlace, fluid.cuda_pinned_places and fluid.profiler.cuda_profiler
(doc/design/cuda.md): pinned tensors read back and feed as they were written (in
page-locked memory when a CUDA device can be used, plain host memory otherwise), the
places a DataLoader and an Executor take, cuda_profiler's argument checks and, without a
device, its error. Tests that need a device skip without one, saying so."""
import numpy as np
import pytest

import rill as fluid
import rill.profiler as profiler

L = fluid.layers

has_device = fluid.cuda.device_count() > 0
needs_device = pytest.mark.skipif(
    not has_device, reason='no CUDA device: %s' % fluid.cuda.unavailable_reason())
needs_no_device = pytest.mark.skipif(has_device, reason='a CUDA device is present')


def test_pinned_place_is_exported_and_compares_equal():
    assert fluid.CUDAPinnedPlace() == fluid.core.CUDAPinnedPlace()
    assert fluid.CUDAPinnedPlace() != fluid.CPUPlace()
    assert repr(fluid.CUDAPinnedPlace()) == 'CUDAPinnedPlace'
    assert len({fluid.CUDAPinnedPlace(), fluid.CUDAPinnedPlace()}) == 1


def test_cuda_pinned_places_follows_paddle():
    if not fluid.is_compiled_with_cuda():
        with pytest.raises(AssertionError, match='Not compiled with CUDA'):
            fluid.cuda_pinned_places()
        return
    assert fluid.cuda_pinned_places() == [fluid.CUDAPinnedPlace()] * fluid.cuda.device_count()
    assert fluid.cuda_pinned_places(3) == [fluid.CUDAPinnedPlace()] * 3
    assert fluid.framework.cuda_pinned_places(0) == []


@pytest.mark.parametrize('dtype', ['float32', 'int64', 'float64', 'uint8'])
def test_pinned_tensor_round_trips(dtype):
    a = (np.arange(24).reshape(2, 3, 4) * 3 - 7).astype(dtype)
    t = fluid.LoDTensor()
    t.set(a, fluid.CUDAPinnedPlace())
    a[0, 0, 0] = 99  # the tensor holds its own copy
    got = np.array(t)
    assert got.dtype == np.dtype(dtype) and got.shape == (2, 3, 4)
    assert got[0, 0, 0] == np.array(-7).astype(dtype)
    np.testing.assert_array_equal(got.reshape(-1)[1:], a.reshape(-1)[1:])
    assert t._is_pinned() == has_device
    t.set_recursive_sequence_lengths([[1, 1]])
    assert t.recursive_sequence_lengths() == [[1, 1]]


def test_pinned_tensor_feeds_the_executor():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 3], 'float32')
        y = L.scale(x, 2.0, bias=1.0)
    t = fluid.LoDTensor()
    xv = np.arange(6, dtype='float32').reshape(2, 3)
    t.set(xv, fluid.CUDAPinnedPlace())
    out, = fluid.Executor(fluid.CPUPlace()).run(main, feed={'x': t}, fetch_list=[y])
    np.testing.assert_allclose(out, xv * 2 + 1)


def test_a_place_that_is_not_one_is_refused():
    with pytest.raises(TypeError, match='CUDAPinnedPlace'):
        fluid.LoDTensor().set(np.zeros(2), 'cpu')


def test_executor_refuses_the_pinned_place():
    with pytest.raises(fluid.core.Error, match='CUDAPinnedPlace is host memory'):
        fluid.Executor(fluid.CUDAPinnedPlace())


def test_data_loader_takes_pinned_places():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 2], 'float32')
        y = L.reduce_sum(x)
        loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=4)

    def batches():
        for i in range(3):
            yield [np.full((2, 2), i, 'float32')]
    loader.set_batch_generator(batches, places=[fluid.CUDAPinnedPlace()])
    exe = fluid.Executor(fluid.CPUPlace())
    got = [float(np.asarray(exe.run(main, feed=d, fetch_list=[y])[0]).reshape(-1)[0])
           for d in loader()]
    assert got == [0.0, 4.0, 8.0]
    with pytest.raises(TypeError, match='unsupported place'):
        loader.set_batch_generator(batches, places=['gpu'])


def test_cuda_profiler_checks_its_arguments():
    with pytest.raises(ValueError, match="'kvp' or 'csv'"):
        with profiler.cuda_profiler('/tmp/rill_cuda_profile.txt', 'json'):
            pass
    with pytest.raises(TypeError, match='config'):
        with profiler.cuda_profiler('/tmp/rill_cuda_profile.txt', 'kvp', config='streamid'):
            pass
    with pytest.raises(TypeError, match='output_file'):
        with profiler.cuda_profiler(None):
            pass


@needs_no_device
def test_cuda_profiler_without_a_device_says_why():
    ran = []
    with pytest.raises(fluid.core.Error, match='no CUDA device to profile') as e:
        with profiler.cuda_profiler('/tmp/rill_cuda_profile.txt', 'csv'):
            ran.append(1)
    assert ran == []
    assert fluid.cuda.unavailable_reason() in str(e.value)


@needs_no_device
def test_device_profiler_of_the_cpu_is_unimplemented():
    with pytest.raises(fluid.core.Error, match='has no profiler'):
        fluid.core.device_profiler(fluid.core.DEVICE_CPU, 0, True)


@needs_device
def test_cuda_profiler_starts_and_stops_around_a_run():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 3], 'float32')
        y = L.relu(L.scale(x, 2.0))
    exe = fluid.Executor(fluid.CUDAPlace(0))
    xv = np.array([[-1, 0, 2]], 'float32')
    for mode in ('csv', 'kvp'):
        with profiler.cuda_profiler('/tmp/rill_cuda_profile.txt', mode):
            out, = exe.run(main, feed={'x': xv}, fetch_list=[y])
        np.testing.assert_allclose(out, [[0, 0, 4]])
    exe.close()


@needs_device
def test_pinned_tensor_feeds_the_device():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data('x', [None, 4], 'float32')
        y = L.elementwise_add(x, x)
    t = fluid.LoDTensor()
    xv = np.random.RandomState(3).rand(5, 4).astype('float32')
    t.set(xv, fluid.CUDAPinnedPlace())
    assert t._is_pinned()
    exe = fluid.Executor(fluid.CUDAPlace(0))
    out, = exe.run(main, feed={'x': t}, fetch_list=[y])
    np.testing.assert_allclose(out, 2 * xv, rtol=1e-6)
    exe.close()
