"""The CUDA driver on a real GPU: discovery, USM, copies, launches, events, device globals."""
from __future__ import annotations

import struct
import threading

import numpy as np
import pytest

from pysycl.backends.base import KernelArg, KernelArgKind
from pysycl.backends.cuda.launch_call import launch_call
from pysycl.errors import errc, exception

from cuda_kernels_ir import FILL2D, GLOBALS, HISTOGRAM, MATH, REDUCE, SPIN, VADD

pytestmark = pytest.mark.cuda

MEM, SCALAR, LOCAL = KernelArgKind.mem, KernelArgKind.scalar, KernelArgKind.local


def mem(x):
    return KernelArg(MEM, x)


def i64(v):
    return KernelArg(SCALAR, struct.pack("<q", v))


def i32(v):
    return KernelArg(SCALAR, struct.pack("<i", v))


def to_device(driver, device, stream, array, kind="device"):
    buf = driver.alloc(device, array.nbytes, kind)
    driver.copy(stream, buf, 0, array, 0, array.nbytes)
    return buf


def from_device(driver, stream, buf, dtype, count):
    out = np.empty(count, dtype)
    driver.copy(stream, out, 0, buf, 0, out.nbytes).wait()
    return out


def test_discovery(device):
    assert device.backend == "cuda" and device.device_type == "gpu"
    cc = device.extra["compute_capability"]
    assert device.target.cpu == f"sm_{cc[0]}{cc[1]}" or cc[0] * 10 + cc[1] > 121
    assert {"gpu", "fp64", "atomic64", "usm_device_allocations", "queue_profiling"} <= device.aspects
    assert device.max_compute_units > 0 and device.max_work_group_size >= 1024
    assert device.local_mem_size >= 48 * 1024 and device.sub_group_sizes == (32,)


def test_vector_add(driver, device, stream, build):
    prog = build(VADD, ["vadd"])
    n = (1 << 20) + 256
    rng = np.random.default_rng(0)
    a, b = rng.random(n, np.float32), rng.random(n, np.float32)
    da, db = to_device(driver, device, stream, a), to_device(driver, device, stream, b)
    dc = driver.alloc(device, a.nbytes, "device")
    driver.launch(stream, prog, "vadd", [n], [256], [mem(da), mem(db), mem(dc), i64(n), mem(None)])
    np.testing.assert_array_equal(from_device(driver, stream, dc, np.float32, n), a + b)
    for x in (da, db, dc):
        driver.free(x)


def test_local_memory_reduction_with_barrier(driver, device, stream, build):
    prog = build(REDUCE, ["reduce"])
    n = 256 * 512
    data = np.random.default_rng(1).integers(-1000, 1000, n, dtype=np.int32)
    din = to_device(driver, device, stream, data)
    out = driver.alloc(device, 4, "device")
    args = [mem(din), mem(out), KernelArg(LOCAL, 256 * 4), i64(256), mem(None)]
    for scratch in (0, 100 * 1024):       # then 100 KiB: past the 48 KiB default
        driver.fill(stream, out, 0, b"\0" * 4, 4)
        driver.launch(stream, prog, "reduce", [n], [256], args, local_mem_bytes=scratch)
        assert from_device(driver, stream, out, np.int32, 1)[0] == data.sum()
    with pytest.raises(exception) as info:
        driver.launch(stream, prog, "reduce", [n], [256], args, local_mem_bytes=1 << 20)
    assert info.value.code() is errc.memory_allocation


def test_atomics(driver, device, stream, build):
    prog = build(HISTOGRAM, ["histogram"])
    n = 1 << 18
    data = np.random.default_rng(2).integers(0, 1 << 30, n, dtype=np.int32)
    d = to_device(driver, device, stream, data)
    bins, total = driver.alloc(device, 64 * 4, "device"), driver.alloc(device, 8, "device")
    driver.fill(stream, bins, 0, b"\0", 256)
    driver.fill(stream, total, 0, b"\0", 8)
    driver.launch(stream, prog, "histogram", [n], None, [mem(d), mem(bins), mem(total), mem(None)])
    np.testing.assert_array_equal(from_device(driver, stream, bins, np.int32, 64),
                                  np.bincount(data & 63, minlength=64))
    assert from_device(driver, stream, total, np.int64, 1)[0] == data.astype(np.int64).sum()


def test_libdevice_math_matches_numpy(driver, device, stream, build, libdevice):
    prog = build(MATH, ["math"])
    n = 1 << 16
    x = np.random.default_rng(3).uniform(-100, 100, n).astype(np.float32)
    dx = to_device(driver, device, stream, x)
    of, od = driver.alloc(device, n * 4, "device"), driver.alloc(device, n * 8, "device")
    driver.launch(stream, prog, "math", [n], [128], [mem(dx), mem(of), mem(od), mem(None)])
    np.testing.assert_allclose(from_device(driver, stream, of, np.float32, n),
                               np.sin(x), atol=2e-6, rtol=1e-5)
    np.testing.assert_allclose(from_device(driver, stream, od, np.float64, n),
                               np.cos(x.astype(np.float64)), atol=1e-15, rtol=1e-14)


def test_two_dimensional_range(driver, device, stream, build):
    prog = build(FILL2D, ["fill2d"])
    rows, cols = 64, 96
    out = driver.alloc(device, rows * cols * 4, "device")
    driver.launch(stream, prog, "fill2d", [rows, cols], [2, 32], [mem(out), i64(cols), mem(None)])
    got = from_device(driver, stream, out, np.int32, rows * cols).reshape(rows, cols)
    r, c = np.mgrid[0:rows, 0:cols]
    np.testing.assert_array_equal(got, r * 1000 + c)


def test_usm_kinds_copies_and_fills(driver, device, stream):
    n = 4096
    src = np.arange(n, dtype=np.uint8)
    d = driver.alloc(device, n, "device")
    h = driver.alloc(device, n, "host")
    s = driver.alloc(device, n, "shared")
    assert d.host_view() is None and len(h.host_view()) == n and len(s.host_view()) == n
    driver.copy(stream, d, 0, src, 0, n)          # host buffer -> device
    driver.copy(stream, s, 0, d, 0, n)            # device -> shared
    driver.copy(stream, h, 16, s, 0, n - 16)      # shared -> pinned host, with offset
    driver.synchronize(stream)
    assert bytes(h.host_view()[16:]) == src[:n - 16].tobytes()
    assert bytes(s.host_view()) == src.tobytes()
    out = bytearray(n)
    driver.copy(stream, out, 0, h, 0, n).wait()   # host alloc -> host buffer
    assert out[16:] == src[:n - 16].tobytes()
    back = bytearray(8)
    driver.copy(stream, back, 0, b"abcdefgh", 0, 8)  # host -> host
    assert back == b"abcdefgh"
    for pattern in (b"\x07", b"\x01\x02", b"\x01\x02\x03\x04", bytes(range(8)), b"xyz",
                    bytes(range(16))):
        size = len(pattern) * 100
        driver.fill(stream, d, 0, b"\0", n)
        driver.fill(stream, d, len(pattern) * 4, pattern, size)
        got = np.empty(n, np.uint8)
        driver.copy(stream, got, 0, d, 0, n).wait()
        want = bytes(len(pattern) * 4) + pattern * 100
        assert got[:len(want)].tobytes() == want, pattern
        assert not got[len(want):].any()
    driver.fill(stream, h, 0, b"\x05\x06\x07\x08", 64)   # fill pinned host memory
    driver.fill(stream, s, 0, b"\x09", 64)               # and managed memory
    driver.synchronize(stream)
    assert bytes(h.host_view()[:8]) == b"\x05\x06\x07\x08" * 2 and s.host_view()[63] == 9
    with pytest.raises(exception):
        driver.copy(stream, d, n - 4, src, 0, 8)
    for x in (d, h, s):
        driver.free(x)
    driver.free(d)                                 # double free is a no-op
    with pytest.raises(exception) as info:
        driver.alloc(device, 1 << 50, "device")
    assert info.value.code() is errc.memory_allocation


def test_shared_memory_written_by_kernel_is_visible_on_host(driver, device, stream, build):
    prog = build(FILL2D, ["fill2d"])
    s = driver.alloc(device, 32 * 32 * 4, "shared")
    driver.launch(stream, prog, "fill2d", [32, 32], None, [mem(s), i64(32), mem(None)]).wait()
    got = np.frombuffer(s.host_view(), np.int32).reshape(32, 32)
    assert got[5, 7] == 5007
    driver.free(s)


def test_profiling_events(driver, device, build):
    prog = build(SPIN, ["spin"])
    st = driver.create_stream(device, profiling=True)
    out = driver.alloc(device, 1024 * 4, "device")
    short = driver.launch(st, prog, "spin", [1024], [128], [mem(out), i32(1000), mem(None)])
    long = driver.launch(st, prog, "spin", [1024], [128], [mem(out), i32(200000), mem(None)])
    s0, b0, e0 = short.profiling_ns()
    s1, b1, e1 = long.profiling_ns()
    assert s0 <= b0 <= e0 and b1 <= e1 and s0 <= s1 and b1 >= e0 - 2000  # 0.5 us event resolution
    assert (e1 - b1) > 10 * (e0 - b0) and (e1 - b1) > 50_000
    copy = driver.copy(st, np.empty(1024, np.float32), 0, out, 0, 4096)
    assert copy.profiling_ns()[2] >= copy.profiling_ns()[1]
    # explicit timing events and a cross-stream dependency
    t0 = driver.record_event(st, timing=True)
    driver.launch(st, prog, "spin", [1024], [128], [mem(out), i32(100000), mem(None)])
    t1 = driver.record_event(st, timing=True)
    other = driver.create_stream(device, profiling=False)
    driver.wait_event(other, t1)
    driver.fill(other, out, 0, b"\0", 4096)
    driver.synchronize(other)
    assert t1.is_complete() and driver.elapsed_ns(t0, t1) > 10_000
    plain = driver.create_stream(device, profiling=False)
    tok = driver.launch(plain, prog, "spin", [128], [128], [mem(out), i32(10), mem(None)])
    with pytest.raises(exception) as info:
        tok.profiling_ns()
    assert info.value.code() is errc.profiling
    for s in (st, other, plain):
        driver.synchronize(s)
        driver.destroy_stream(s)
    driver.free(out)


def test_device_globals(driver, device, stream, build):
    prog = build(GLOBALS, ["use_globals"])
    scale = np.array([1.5, -2.0, 3.25, 8.0], np.float32)
    assert driver.device_global(prog, "dg_scale").nbytes == 16
    driver.write_global(stream, prog, "dg_scale", scale)
    driver.write_global(stream, prog, "dg_counter", np.array([10], np.int32))
    out = driver.alloc(device, 256 * 4, "device")
    driver.launch(stream, prog, "use_globals", [256], [64], [mem(out), mem(None)])
    np.testing.assert_array_equal(from_device(driver, stream, out, np.float32, 256),
                                  np.tile(scale, 64))
    counter = np.zeros(1, np.int32)
    driver.read_global(stream, prog, "dg_counter", counter).wait()
    assert counter[0] == 10 + 256
    part = np.zeros(2, np.float32)
    driver.read_global(stream, prog, "dg_scale", part, offset=8).wait()
    np.testing.assert_array_equal(part, scale[2:])
    with pytest.raises(exception) as info:
        driver.device_global(prog, "nope")
    assert info.value.code() is errc.invalid


def test_jit_errors_and_argument_checks(driver, device, stream, build):
    bad = b".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n"
    with pytest.raises(exception) as info:
        driver.load(device, bad, ["k"])
    assert info.value.code() is errc.build and "bogus" in str(info.value)
    prog = build(VADD, ["vadd"])
    out = driver.alloc(device, 64, "device")
    with pytest.raises(exception) as info:
        driver.launch(stream, prog, "vadd", [16], [16], [mem(out), mem(out), mem(out), i32(16), mem(None)])
    assert info.value.code() is errc.kernel_argument
    with pytest.raises(exception) as info:
        driver.launch(stream, prog, "vadd", [16], [16], [mem(out)])
    assert info.value.code() is errc.kernel_argument
    with pytest.raises(exception) as info:
        driver.launch(stream, prog, "nope", [16], [16], [])
    assert info.value.code() is errc.invalid
    with pytest.raises(exception) as info:
        driver.load(device, b"", ["k"], spec_constants={1: b"\0"})
    assert info.value.code() is errc.feature_not_supported
    driver.free(out)


def test_bound_launches_on_created_and_legacy_streams(driver, device, stream, build):
    # A bound launch on a created stream goes through the launch call (made on a
    # thread of its own: waited for here), one on the legacy default stream (handle
    # 0) through cuda-bindings; both rewrite their arguments when the sizes or the
    # arrays change between launches, and the launch call makes the last launch again
    # for its version only.
    launch_call()
    for thread in threading.enumerate():
        if thread.name == "pysycl-cuda-launch":
            thread.join(30)
    prog = build(VADD, ["vadd"])
    rng = np.random.default_rng(5)
    n = 4096
    a, b = rng.random(n, np.float32), rng.random(n, np.float32)
    legacy = driver.wrap_stream(device, 0)
    for st in (stream, legacy):
        da, db = to_device(driver, device, st, a), to_device(driver, device, st, b)
        dc, dd = (driver.alloc(device, a.nbytes, "device") for _ in range(2))
        driver.fill(st, dc, 0, b"\0", a.nbytes)
        driver.fill(st, dd, 0, b"\0", a.nbytes)
        launch = driver.bind_launch(st, prog, "vadd", mem(None))
        for size, out in ((n, dc), (n // 2, dd), (n, dd), (0, dc)):
            args = [mem(da), mem(db), mem(out), i64(size)]
            launch((size,), (256,) if size else None, list(args))
            assert launch.replay[0] is None            # not a repeat: nothing to make again
            launch((size,), (256,) if size else None, list(args))
            call, version, _launched = launch.replay
            if st is legacy or not size or launch_call()[0] is None:
                assert call is None
                continue
            assert call(version - 1) == -1 and call(version) == 0   # the same launch
        driver.synchronize(st)
        np.testing.assert_array_equal(from_device(driver, st, dc, np.float32, n), a + b)
        np.testing.assert_array_equal(from_device(driver, st, dd, np.float32, n), a + b)
        for buf in (da, db, dc, dd):
            driver.free(buf)
    driver.destroy_stream(legacy)


def test_wrap_foreign_stream(driver, device, build):
    cupy = pytest.importorskip("cupy")
    prog = build(FILL2D, ["fill2d"])
    cs = cupy.cuda.Stream(non_blocking=True)
    st = driver.wrap_stream(device, cs.ptr)
    arr = cupy.zeros((8, 8), cupy.int32)
    driver.launch(st, prog, "fill2d", [8, 8], None, [mem(arr.data.ptr), i64(8), mem(None)])
    cs.synchronize()
    assert int(arr[3, 4]) == 3004
    driver.destroy_stream(st)   # not owned: the CuPy stream lives on
    cs.synchronize()


def test_one_word_fills_follow_stream_order(driver, device, stream, build):
    # A fill of one 4- or 8-byte word (a reduction's identity) is a stream memory
    # operation on device memory, a memset on managed memory; either way it lands after
    # the work before it (a long kernel writing the same words) and nowhere else.
    rng = np.random.default_rng(11)
    prog = build(SPIN, ["spin"])
    for kind in ("device", "shared"):
        n = 128 * 4
        out = driver.alloc(device, n, kind)
        for size, offset in ((4, 0), (4, 260), (8, 8), (8, 504), (4, 508)):
            word = rng.integers(1, 255, size, dtype=np.uint8).tobytes()
            driver.fill(stream, out, 0, b"\0", n)
            driver.launch(stream, prog, "spin", [128], [128],
                          [mem(out), i32(200000), mem(None)])
            after = from_device(driver, stream, out, np.uint8, n).copy()
            driver.launch(stream, prog, "spin", [128], [128],
                          [mem(out), i32(200000), mem(None)])
            driver.fill(stream, out, offset, word, size)
            got = from_device(driver, stream, out, np.uint8, n)
            want = after.copy()
            want[offset:offset + size] = np.frombuffer(word, np.uint8)
            np.testing.assert_array_equal(got, want, err_msg=f"{kind} {size}@{offset}")
        driver.free(out)


def test_event_pool_recycles_events(driver, device, stream, build):
    prog = build(SPIN, ["spin"])
    out = driver.alloc(device, 128 * 4, "device")
    tokens = [driver.record_event(stream) for _ in range(8)]
    handles = {int(t.end) for t in tokens}
    del tokens
    assert len(device.handle.event_pools[False]) >= 8
    other = driver.create_stream(device, profiling=False)
    driver.launch(stream, prog, "spin", [128], [128], [mem(out), i32(300000), mem(None)])
    done = driver.record_event(stream)        # a recycled event
    assert int(done.end) in handles
    driver.wait_event(other, done)
    driver.fill(other, out, 0, b"\0", 512)    # must run after the spin kernel
    driver.synchronize(other)
    assert done.is_complete()
    assert not from_device(driver, other, out, np.float32, 128).any()
    driver.destroy_stream(other)
    driver.free(out)
