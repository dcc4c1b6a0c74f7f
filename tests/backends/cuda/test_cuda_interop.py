"""CUDA interop on a real GPU: PyTorch and CuPy arrays as kernel arguments without copies,
USM device memory handed to PyTorch and CuPy without copies, queues on existing CUDA
streams, and the runtime paths the acceptance suite found broken on CUDA (buffer
write-back, device-memory ``to_numpy``, 1-D work-group limits, online-tool aspects,
managed-memory limit). Skips without a GPU; the PyTorch / CuPy tests skip without them."""
from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl

pytestmark = pytest.mark.cuda

F32 = np.float32


@sycl.kernel
def axpy(it: sycl.item[1], a: F32, x: sycl.global_ptr[F32], y: sycl.global_ptr[F32]):
    i = it.get_id(0)
    y[i] = a * x[i] + y[i]


@sycl.kernel
def group_sum(nd: sycl.nd_item[1], x: sycl.global_ptr[F32], out: sycl.global_ptr[F32],
              scratch: sycl.local_accessor[F32, 1]):
    lid = nd.get_local_id(0)
    scratch[lid] = x[nd.get_global_id(0)]
    sycl.group_barrier(nd.get_group())
    if lid == 0:
        s = F32(0)
        for k in range(nd.get_local_range(0)):
            s += scratch[k]
        out[nd.get_group(0)] = s


@pytest.fixture(scope="module")
def gpu():
    gpus = [d for d in sycl.device.get_devices() if d.backend.name == "cuda"]
    if not gpus:
        pytest.skip("no CUDA GPU")
    return gpus[0]


@pytest.fixture(scope="module")
def q(gpu):
    return sycl.queue(gpu)


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    return torch


@pytest.fixture(scope="module")
def cp():
    cp = pytest.importorskip("cupy")
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001
        pytest.skip("CuPy without a GPU")
    return cp


# -- the acceptance suite's CUDA failures -----------------------------------------------
def test_buffer_round_trip_on_a_cuda_queue(q):
    x = np.arange(1000, dtype=F32)
    y = np.ones(1000, F32)
    with sycl.buffer(np.zeros(4)) as _b:   # write-back of a buffer no kernel used
        pass
    with sycl.buffer(x) as bx, sycl.buffer(y) as by:
        q.submit(lambda cgh: cgh.parallel_for(
            sycl.range(1000), axpy_acc, F32(2), sycl.accessor(bx, cgh, sycl.read_only),
            sycl.accessor(by, cgh, sycl.read_write))).wait()
    np.testing.assert_array_equal(y, 2 * x + 1)


@sycl.kernel
def axpy_acc(it: sycl.item[1], a: F32, x: sycl.accessor[F32, 1, sycl.read_only],
             y: sycl.accessor[F32, 1, sycl.read_write]):
    y[it] = a * x[it] + y[it]


def test_device_usm_to_numpy_and_dotted_kernel_names(q):
    x = sycl.malloc_device(4096, F32, q)
    y = sycl.malloc_device(4096, F32, q)
    try:
        q.memcpy(x, np.arange(4096, dtype=F32)).wait()
        q.fill(y, F32(1)).wait()
        q.parallel_for(sycl.range(4096), axpy, F32(3), x, y).wait()   # "test_cuda_interop.axpy"
        np.testing.assert_array_equal(y.to_numpy(), 3 * np.arange(4096, dtype=F32) + 1)
    finally:
        sycl.free(x, q)
        sycl.free(y, q)


def test_one_dimensional_work_groups_use_the_last_limit(q, gpu):
    assert gpu.max_work_item_sizes[-1] >= 256 > gpu.max_work_item_sizes[0]
    n, wg = 1024, 256
    x = sycl.malloc_shared(n, F32, q)
    out = sycl.malloc_shared(n // wg, F32, q)
    np.asarray(x)[:] = np.arange(n, dtype=F32)
    try:
        q.submit(lambda cgh: cgh.parallel_for(
            sycl.nd_range(sycl.range(n), sycl.range(wg)), group_sum, x, out,
            cgh.local_accessor(F32, (wg,)))).wait()
        np.testing.assert_allclose(np.asarray(out),
                                   np.arange(n, dtype=F32).reshape(-1, wg).sum(1))
    finally:
        sycl.free(x, q)
        sycl.free(out, q)


def test_online_tools_are_advertised(gpu):
    assert gpu.has(sycl.aspect.online_compiler) and gpu.has(sycl.aspect.online_linker)


def test_malloc_shared_never_asks_for_more_than_is_free(q, gpu):
    too_big = gpu.get_info(sycl.info.device.global_mem_size) // 4 + (1 << 28)
    with pytest.raises(sycl.exception) as e:
        sycl.malloc_shared(too_big, F32, q)
    assert e.value.code() == sycl.errc.memory_allocation


# -- foreign arrays as kernel arguments -------------------------------------------------
def test_torch_tensors_as_global_ptr_without_copies(q, torch):
    x = torch.arange(10000, dtype=torch.float32, device="cuda")
    y = torch.ones(10000, dtype=torch.float32, device="cuda")
    before = y.data_ptr()
    q.parallel_for(sycl.range(10000), axpy, F32(2), x, y).wait()
    assert y.data_ptr() == before
    torch.testing.assert_close(y.cpu(), (2 * torch.arange(10000.0) + 1))


def test_torch_work_on_the_default_stream_is_ordered_before_the_kernel(q, torch):
    # Work PyTorch queued (not finished) on its stream must be done before the kernel
    # reads the tensor: __dlpack__(stream=queue's stream) orders it.
    x = torch.empty(1 << 22, dtype=torch.float32, device="cuda")
    y = torch.zeros_like(x)
    for _ in range(20):
        x.fill_(1.0)
        x.mul_(3.0)
    q.parallel_for(sycl.range(x.numel()), axpy, F32(1), x, y).wait()
    assert float(y.min()) == 3.0 and float(y.max()) == 3.0


def test_repeat_launches_stay_ordered_and_follow_a_resized_tensor(q, torch):
    # The second launch with the same tensors takes the remembered export: PyTorch's
    # later work on its stream must still come first, and a tensor whose storage moved
    # (resize_) is exported again.
    n = 1 << 22
    x = torch.ones(n, dtype=torch.float32, device="cuda")
    y = torch.zeros_like(x)
    q.parallel_for(sycl.range(n), axpy, F32(1), x, y).wait()
    assert float(y.max()) == 1.0
    y.zero_()
    torch.cuda.synchronize()
    for _ in range(3):
        # PyTorch's stream stays busy (a GPU spin of tens of milliseconds) before the
        # writes: an unordered kernel reads the old values.
        torch.cuda._sleep(50_000_000)
        x.fill_(2.0)
        x.mul_(3.0)
        q.parallel_for(sycl.range(n), axpy, F32(1), x, y).wait()
        assert float(y.min()) == 6.0 and float(y.max()) == 6.0
        y.zero_()
        x.fill_(1.0)
        torch.cuda.synchronize()
    old = x.data_ptr()
    x.resize_(4 * n)
    x.fill_(5.0)
    assert x.data_ptr() != old
    y.zero_()
    q.parallel_for(sycl.range(n), axpy, F32(1), x, y).wait()
    assert float(y.min()) == 5.0 and float(y.max()) == 5.0


def test_repeat_launches_wait_for_a_cupy_stream(q, cp):
    n = 1 << 22
    x, y = cp.ones(n, dtype=cp.float32), cp.zeros(n, dtype=cp.float32)
    q.parallel_for(sycl.range(n), axpy, F32(1), x, y).wait()
    y.fill(0)
    cp.cuda.Device().synchronize()
    # The stream stays busy (a GPU spin of tens of milliseconds) before the writes: an
    # unordered kernel reads the old values.
    spin = cp.RawKernel(r'''extern "C" __global__ void spin(long long cycles) {
        long long start = clock64(); while (clock64() - start < cycles) {} }''', "spin")
    with cp.cuda.Stream(non_blocking=True):
        for value in (2.0, 3.0):
            spin((1,), (1,), (np.int64(50_000_000),))
            x.fill(value)
            x *= 4.0
            q.parallel_for(sycl.range(n), axpy, F32(1), x, y).wait()
            assert float(y.min()) == 4 * value and float(y.max()) == 4 * value
            y.fill(0)


def _spin_kernel(cp):
    return cp.RawKernel(r'''extern "C" __global__ void spin(long long cycles) {
        long long start = clock64(); while (clock64() - start < cycles) {} }''', "spin")


def test_default_stream_work_is_ordered_both_ways_without_asking(q, cp, monkeypatch):
    # A queue's stream is a blocking one: CuPy's work on its default (legacy) stream
    # comes first without the runtime asking the driver, and CuPy's later work comes
    # after the kernel without a wait in between.
    from pysycl.backends.cuda import driver as cuda_driver
    asked = []
    real = cuda_driver.CudaDriver.wait_foreign_stream
    monkeypatch.setattr(cuda_driver.CudaDriver, "wait_foreign_stream",
                        lambda self, *a: asked.append(a) or real(self, *a))
    n = 1 << 22
    rng = np.random.default_rng(7)
    host = rng.standard_normal(n).astype(F32)
    x, y = cp.asarray(host), cp.zeros(n, cp.float32)
    spin = _spin_kernel(cp)
    q.parallel_for(sycl.range(n), axpy, F32(1), x, y).wait()
    y.fill(0)
    for scale in (2.0, -3.0):
        spin((1,), (1,), (np.int64(50_000_000),))   # CuPy's stream stays busy
        x *= F32(scale)
        q.parallel_for(sycl.range(n), axpy, F32(1), x, y)   # no wait: CuPy reads after
        got = cp.asnumpy(y * F32(2))
        host *= F32(scale)
        np.testing.assert_allclose(got, 2 * host, rtol=1e-6)
        y.fill(0)
    assert not asked


def test_remembered_cupy_arrays_follow_stream_switches(q, cp):
    # The remembered-array path reads CuPy's current stream at each launch: a switch to
    # a non-blocking stream is waited for, the null stream again needs nothing.
    n = 1 << 22
    rng = np.random.default_rng(8)
    host = rng.standard_normal(n).astype(F32)
    x, y = cp.asarray(host), cp.zeros(n, cp.float32)
    spin = _spin_kernel(cp)
    q.parallel_for(sycl.range(n), axpy, F32(1), x, y).wait()
    want = host.copy()
    for step in range(4):
        y.fill(0)
        cp.cuda.Device().synchronize()
        if step % 2:
            with cp.cuda.Stream(non_blocking=True):
                spin((1,), (1,), (np.int64(50_000_000),))
                x += F32(1)
                q.parallel_for(sycl.range(n), axpy, F32(1), x, y).wait()
        else:
            spin((1,), (1,), (np.int64(50_000_000),))
            x += F32(1)
            q.parallel_for(sycl.range(n), axpy, F32(1), x, y).wait()
        want += F32(1)
        np.testing.assert_allclose(cp.asnumpy(y), want, rtol=1e-6)


def test_remembered_arrays_are_checked_for_their_type(q, cp):
    x = cp.asarray(np.arange(64, dtype=F32))
    y = cp.zeros(64, cp.float32)
    q.parallel_for(sycl.range(64), axpy, F32(2), x, y).wait()
    wrong = cp.zeros(64, cp.int32)
    q.parallel_for(sycl.range(64), axpy, F32(2), x, wrong.view(cp.float32)).wait()
    for _ in range(2):   # the second time, remembered
        with pytest.raises(TypeError, match="int32"):
            q.parallel_for(sycl.range(64), axpy, F32(2), x, wrong)
    np.testing.assert_allclose(cp.asnumpy(y), 2 * np.arange(64, dtype=F32))


def test_torch_rejections(q, torch, monkeypatch):
    from pysycl.runtime import args
    monkeypatch.setattr(args, "_staging_warned", False)   # the warning is shown once
    y = torch.ones(16, device="cuda")
    with pytest.raises(sycl.exception) as e:     # not contiguous
        q.parallel_for(sycl.range(8), axpy, F32(1), torch.ones(16, device="cuda")[::2], y)
    assert e.value.code() == sycl.errc.kernel_argument
    with pytest.warns(RuntimeWarning, match="copied to the device"):   # host memory
        q.parallel_for(sycl.range(16), axpy, F32(1), torch.full((16,), 2.0), y).wait()
    torch.testing.assert_close(y.cpu(), torch.full((16,), 3.0))
    with pytest.raises(sycl.exception):          # wrong element type
        q.parallel_for(sycl.range(16), axpy, F32(1), torch.ones(16, device="cuda",
                                                                dtype=torch.float64), y)


def test_cupy_arrays_as_global_ptr_without_copies(q, cp):
    x = cp.arange(5000, dtype=cp.float32)
    y = cp.full(5000, 2, dtype=cp.float32)
    ptr = y.data.ptr
    q.parallel_for(sycl.range(5000), axpy, F32(0.5), x, y).wait()
    assert y.data.ptr == ptr
    np.testing.assert_allclose(cp.asnumpy(y), 0.5 * np.arange(5000, dtype=F32) + 2)


class _CaiOnly:
    """An object with only ``__cuda_array_interface__`` (as Numba's device arrays)."""

    def __init__(self, arr):
        self._arr = arr
        self.__cuda_array_interface__ = arr.__cuda_array_interface__


def test_cuda_array_interface_only_objects(q, cp):
    x, y = cp.arange(256, dtype=cp.float32), cp.zeros(256, dtype=cp.float32)
    q.parallel_for(sycl.range(256), axpy, F32(1), _CaiOnly(x), _CaiOnly(y)).wait()
    np.testing.assert_array_equal(cp.asnumpy(y), np.arange(256, dtype=F32))


# -- USM to PyTorch / CuPy ----------------------------------------------------------------
def test_device_usm_to_torch_without_copies(q, torch):
    a = sycl.malloc_device((64, 3), F32, q)
    try:
        q.memcpy(a, np.arange(192, dtype=F32).reshape(64, 3)).wait()
        t = torch.from_dlpack(a)
        assert t.device.type == "cuda" and t.data_ptr() == a.ptr and tuple(t.shape) == (64, 3)
        t += 1
        torch.cuda.synchronize()
        np.testing.assert_array_equal(a.to_numpy(), np.arange(192, dtype=F32).reshape(64, 3) + 1)
        del t
    finally:
        sycl.free(a, q)


def test_device_usm_to_cupy_without_copies(q, cp):
    a = sycl.malloc_device(1000, np.int32, q)
    try:
        q.fill(a, np.int32(7)).wait()
        c = cp.asarray(a)
        assert c.data.ptr == a.ptr and c.dtype == cp.int32 and c.shape == (1000,)
        assert int(c.sum()) == 7000
        c[:] = 3
        cp.cuda.Device().synchronize()
        assert (a.to_numpy() == 3).all()
        d = cp.from_dlpack(a)
        assert d.data.ptr == a.ptr
        del c, d
    finally:
        sycl.free(a, q)


# -- queues on existing streams -------------------------------------------------------------
def test_queue_on_a_torch_stream(torch):
    s = torch.cuda.Stream()
    q = sycl.queue.from_native(s, in_order=True)
    assert q.get_native() == s.cuda_stream
    assert q.get_device().backend.name == "cuda"
    with torch.cuda.stream(s):
        x = torch.full((1 << 20,), 2.0, device="cuda")
        y = torch.zeros_like(x)
        q.parallel_for(sycl.range(x.numel()), axpy, F32(4), x, y)   # same stream: ordered
        z = y * 2                                                    # ordered after it
    s.synchronize()
    assert float(z.min()) == 16.0 and float(z.max()) == 16.0


def test_queue_on_a_cupy_stream(cp, gpu):
    s = cp.cuda.Stream(non_blocking=True)
    q = sycl.queue(gpu, native_stream=s)
    assert q.get_native() == s.ptr
    with s:
        x = cp.arange(4096, dtype=cp.float32)
        y = cp.zeros_like(x)
    q.parallel_for(sycl.range(4096), axpy, F32(1), x, y).wait()
    np.testing.assert_array_equal(cp.asnumpy(y), np.arange(4096, dtype=F32))
    q2 = sycl.queue.from_native(s.ptr, gpu)
    assert q2.get_native() == s.ptr
