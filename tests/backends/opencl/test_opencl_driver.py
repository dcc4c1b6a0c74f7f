"""Kernels compiled by SpirvCompiler and run through OpenCLDriver, checked with NumPy."""
import struct

import numpy as np
import pytest

from opencl_kernels_ir import (DEVICE_GLOBAL, FLOAT_ATOMIC_SUM, INDEX_2D, LOCAL_REDUCE,
                               SPEC_SCALE, STRUCT_SAXPY, VADD)
from pysycl.backends.base import KernelArg, KernelArgKind
from pysycl.backends.opencl.driver import OpenCLDriver
from pysycl.errors import errc, exception

pytestmark = pytest.mark.opencl
rng = np.random.default_rng(1234)


def mem(a):
    return KernelArg(KernelArgKind.mem, a)


def scalar(v):
    return KernelArg(KernelArgKind.scalar, v.tobytes())


def upload(driver, device, queue, array, kind):
    alloc = driver.alloc(device, array.nbytes, kind)
    driver.copy(queue, alloc, 0, memoryview(array), 0, array.nbytes).wait()
    return alloc


def download(driver, queue, alloc, like, wait_for=()):
    out = np.empty_like(like)
    driver.copy(queue, memoryview(out), 0, alloc, 0, out.nbytes, wait_for=wait_for).wait()
    return out


def test_discovery_describes_device(device):
    assert device.backend == "opencl" and device.target.binary_format == "spirv"
    assert device.device_type in device.aspects
    assert "SPIR-V" in device.extra["il_version"]
    assert device.max_work_group_size >= 1 and len(device.max_work_item_sizes) == 3


@pytest.mark.parametrize("kind", ["buffer", "device", "shared", "host"])
def test_vector_add(driver, device, queue, build, kind):
    if kind != "buffer" and f"usm_{kind}_allocations" not in device.aspects:
        pytest.skip(f"no {kind} USM")
    n = 1000
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    prg = build(VADD, ["vadd"])
    A, B = upload(driver, device, queue, a, kind), upload(driver, device, queue, b, kind)
    O = driver.alloc(device, a.nbytes, kind)
    ev = driver.launch(queue, prg, "vadd", [1024], [64], [mem(O), mem(A), mem(B), scalar(np.int64(n))])
    np.testing.assert_array_equal(download(driver, queue, O, a, [ev]), a + b)
    submit, start, end = ev.profiling_ns()
    assert submit <= start <= end
    for x in (A, B, O):
        driver.free(x)


@pytest.mark.parametrize("override", [None, 1000, -7])
def test_spec_constant_override(driver, device, queue, build, override):
    x = rng.integers(-1000, 1000, 256, dtype=np.int32)
    spec = None if override is None else {7: np.int32(override).tobytes()}
    prg = build(SPEC_SCALE, ["scale"], spec_constants=spec)
    X, O = upload(driver, device, queue, x, "buffer"), driver.alloc(device, x.nbytes, "buffer")
    ev = driver.launch(queue, prg, "scale", [x.size], None, [mem(O), mem(X)])
    np.testing.assert_array_equal(download(driver, queue, O, x, [ev]), x * (override or 3))


def test_struct_byval_argument(driver, device, queue, build):
    n = 300
    x = rng.random(512, dtype=np.float32)
    params = np.array([(2.5, -1.0, n)], dtype=[("a", "<f4"), ("b", "<f4"), ("n", "<i4")])
    prg = build(STRUCT_SAXPY, ["saxpy"])
    X, Y = upload(driver, device, queue, x, "buffer"), upload(driver, device, queue, np.zeros_like(x), "buffer")
    ev = driver.launch(queue, prg, "saxpy", [x.size], None,
                       [mem(Y), mem(X), KernelArg(KernelArgKind.bytes, params.tobytes())])
    y = download(driver, queue, Y, x, [ev])
    np.testing.assert_allclose(y[:n], np.float32(2.5) * x[:n] - 1, rtol=1e-6)
    assert not y[n:].any()


@pytest.mark.parametrize("local", [16, 64, 256])
def test_local_memory_reduction(driver, device, queue, build, local):
    x = rng.integers(-100, 100, 4096, dtype=np.int32)
    prg = build(LOCAL_REDUCE, ["reduce"])
    X, O = upload(driver, device, queue, x, "buffer"), driver.alloc(device, 4 * (x.size // local), "buffer")
    ev = driver.launch(queue, prg, "reduce", [x.size], [local],
                       [mem(O), mem(X), KernelArg(KernelArgKind.local, 4 * local)])
    out = download(driver, queue, O, np.empty(x.size // local, np.int32), [ev])
    np.testing.assert_array_equal(out, x.reshape(-1, local).sum(axis=1))


def test_arguments_set_only_when_changed(driver, device, queue, build):
    """A kernel object keeps its arguments between launches; the driver sets those that
    changed (by identity or value), whatever the memory kind or path."""
    kinds = ["buffer"] + [k for k in ("device", "shared") if f"usm_{k}_allocations" in
                          device.aspects]
    n = 500
    prg = build(VADD, ["vadd"])
    data = [rng.random(n, dtype=np.float32) for _ in range(3)]
    allocs = {(kind, i): upload(driver, device, queue, data[i], kind)
              for kind in kinds for i in range(3)}
    outs = {kind: driver.alloc(device, 4 * n, kind) for kind in kinds}
    count = scalar(np.int64(n))
    steps = [(ko, ka, kb, i, j, m) for ko in kinds for ka in kinds for kb in kinds
             for (i, j, m) in ((0, 1, n), (1, 2, n), (1, 2, 17), (2, 0, n))]
    for ko, ka, kb, i, j, m in steps:
        O = outs[ko]
        driver.fill(queue, O, 0, b"\0" * 4, 4 * n).wait()
        args = [mem(O), mem(allocs[ka, i]), mem(allocs[kb, j]),
                count if m == n else scalar(np.int64(m))]
        ev = driver.launch(queue, prg, "vadd", [512], None, args)
        got = download(driver, queue, O, data[0], [ev])
        want = np.zeros(n, np.float32)
        want[:m] = (data[i] + data[j])[:m]
        np.testing.assert_array_equal(got, want, err_msg=f"{(ko, ka, kb, i, j, m)}")
    # a mutable value (bytearray) is set again at every launch, even the same object
    raw = bytearray(np.int64(n).tobytes())
    grow = KernelArg(KernelArgKind.scalar, raw)
    O, A, B = outs["buffer"], allocs["buffer", 0], allocs["buffer", 1]
    for m in (n, 9, 100):
        raw[:] = np.int64(m).tobytes()
        driver.fill(queue, O, 0, b"\0" * 4, 4 * n).wait()
        ev = driver.launch(queue, prg, "vadd", [512], None, [mem(O), mem(A), mem(B), grow])
        got = download(driver, queue, O, data[0], [ev])
        assert (got[:m] == (data[0] + data[1])[:m]).all() and not got[m:].any()
    for x in list(allocs.values()) + list(outs.values()):
        driver.free(x)


def test_bound_launch_and_general_launch_share_the_kernel(driver, device, queue, build):
    n = 256
    prg = build(VADD, ["vadd"])
    a, b, c = (rng.random(n, dtype=np.float32) for _ in range(3))
    A, B, C = (upload(driver, device, queue, x, "buffer") for x in (a, b, c))
    O = driver.alloc(device, 4 * n, "buffer")
    bound = driver.bind_launch(queue, prg, "vadd", scalar(np.int64(n)))
    other = driver.bind_launch(queue, prg, "vadd", scalar(np.int64(n // 2)))
    for args, trailing_n, fn in [([mem(O), mem(A), mem(B)], n, bound),
                                 ([mem(O), mem(A), mem(C)], n, bound),
                                 ([mem(O), mem(B), mem(C)], n // 2, other),
                                 ([mem(O), mem(A), mem(B)], n, bound)]:
        driver.fill(queue, O, 0, b"\0" * 4, 4 * n).wait()
        ev = fn((n,), None, list(args))
        assert ev.stream is queue
        got = download(driver, queue, O, a, [ev])
        x, y = ({id(A): a, id(B): b, id(C): c}[id(k.value)] for k in args[1:])
        want = np.zeros(n, np.float32)
        want[:trailing_n] = (x + y)[:trailing_n]
        np.testing.assert_array_equal(got, want)
        # the general launch in between sets the other arguments on the same kernel
        ev = driver.launch(queue, prg, "vadd", [n], None,
                           [mem(O), mem(C), mem(C), scalar(np.int64(n))])
        np.testing.assert_array_equal(download(driver, queue, O, a, [ev]), c + c)
    with pytest.raises(exception) as info:
        bound((10,), (3,), [mem(O), mem(A), mem(B)])
    assert info.value.code() is errc.nd_range


def test_local_size_changes_between_launches(driver, device, queue, build):
    x = rng.integers(-100, 100, 1024, dtype=np.int32)
    prg = build(LOCAL_REDUCE, ["reduce"])
    X = upload(driver, device, queue, x, "buffer")
    for local in (16, 64, 16, 128, 128, 32):
        O = driver.alloc(device, 4 * (x.size // local), "buffer")
        ev = driver.launch(queue, prg, "reduce", [x.size], [local],
                           [mem(O), mem(X), KernelArg(KernelArgKind.local, 4 * local)])
        out = download(driver, queue, O, np.empty(x.size // local, np.int32), [ev])
        np.testing.assert_array_equal(out, x.reshape(-1, local).sum(axis=1))
        driver.free(O)


def test_float_atomic_add(driver, device, queue, build):
    x = rng.random(10000, dtype=np.float32)
    prg = build(FLOAT_ATOMIC_SUM, ["fsum"], extensions=frozenset({"SPV_EXT_shader_atomic_float_add"}))
    X = upload(driver, device, queue, x, "buffer")
    S = upload(driver, device, queue, np.zeros(1, np.float32), "buffer")
    ev = driver.launch(queue, prg, "fsum", [x.size], None, [mem(S), mem(X)])
    total = download(driver, queue, S, np.zeros(1, np.float32), [ev])[0]
    assert total == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-4)


def test_sizes_are_in_sycl_order(driver, device, queue, build):
    rows, cols = 6, 40       # SYCL range<2>(rows, cols): cols varies fastest
    prg = build(INDEX_2D, ["index2d"])
    O = driver.alloc(device, 4 * rows * cols, "buffer")
    ev = driver.launch(queue, prg, "index2d", [rows, cols], [2, 8], [mem(O)])
    out = download(driver, queue, O, np.empty((rows, cols), np.int32), [ev])
    r, c = np.indices((rows, cols))
    np.testing.assert_array_equal(out, r * 1000 + c)


def test_out_of_order_queue_with_dependencies_and_fill(driver, device, build):
    q = driver.create_stream(device, profiling=False, in_order=False)
    n = 4096
    A = driver.alloc(device, 4 * n, "buffer")
    B = driver.alloc(device, 4 * n, "buffer")
    O = driver.alloc(device, 4 * n, "buffer")
    fa = driver.fill(q, A, 0, np.float32(1.5).tobytes(), 4 * n)
    fb = driver.fill(q, B, 0, np.float32(2.0).tobytes(), 4 * n)
    ev = driver.launch(q, build(VADD, ["vadd"]), "vadd", [n], None,
                       [mem(O), mem(A), mem(B), scalar(np.int64(n))], wait_for=[fa, fb])
    c = driver.copy(q, B, 0, O, 0, 4 * n, wait_for=[ev])       # buffer -> buffer
    out = download(driver, q, B, np.empty(n, np.float32), [c])
    assert (out == 3.5).all()


def test_usm_fill_and_host_view(driver, device, queue):
    if "usm_shared_allocations" not in device.aspects:
        pytest.skip("no shared USM")
    S = driver.alloc(device, 64, "shared")
    driver.fill(queue, S, 8, b"\xab\xcd", 32).wait()
    view = S.host_view()
    assert bytes(view[8:40]) == b"\xab\xcd" * 16
    assert driver.alloc(device, 64, "device").host_view() is None
    with pytest.raises(exception, match="not a multiple"):
        driver.fill(queue, S, 0, b"abcd", 6)
    driver.free(S)
    driver.free(S)     # idempotent


def test_device_global_read_write(driver, device, queue, build):
    prg = build(DEVICE_GLOBAL, ["bump"])
    try:
        ptr, size = driver.global_address(prg, "counter")
    except exception as e:
        pytest.skip(str(e))
    assert size == 16 and ptr
    data = bytearray(16)
    driver.read_global(prg, "counter", 0, data)
    assert list(np.frombuffer(data, np.int32)) == [1, 2, 3, 4]
    driver.write_global(prg, "counter", 4, np.array([10, 20], np.int32).tobytes())
    O = driver.alloc(device, 16, "buffer")
    ev = driver.launch(queue, prg, "bump", [4], None, [mem(O)])
    assert list(download(driver, queue, O, np.empty(4, np.int32), [ev])) == [1, 10, 20, 4]
    driver.read_global(prg, "counter", 0, data, stream=queue).wait()
    assert list(np.frombuffer(data, np.int32)) == [2, 11, 21, 5]
    with pytest.raises(exception) as info:
        driver.read_global(prg, "counter", 8, bytearray(16))
    assert info.value.code() is errc.invalid
    with pytest.raises(exception):
        driver.global_address(prg, "no_such_global")


def test_svm_fallback(device, build, compiler):
    drv = OpenCLDriver(prefer_svm=True)
    dev = next(d for d in drv.discover() if d.name == device.name)
    if dev.extra["usm"] != "svm":
        pytest.skip("device offers no SVM")
    q = drv.create_stream(dev, profiling=False)
    n = 256
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    prg = drv.load(dev, compiler.compile(VADD, ["vadd"]), ["vadd"])
    kinds = [k for k in ("device", "shared") if f"usm_{k}_allocations" in dev.aspects]
    for kind in kinds:
        A, B, O = (drv.alloc(dev, 4 * n, kind) for _ in range(3))
        drv.copy(q, A, 0, memoryview(a), 0, 4 * n)
        drv.copy(q, B, 0, memoryview(b), 0, 4 * n)
        ev = drv.launch(q, prg, "vadd", [n], None, [mem(O), mem(A), mem(B), scalar(np.int64(n))])
        np.testing.assert_array_equal(download(drv, q, O, a, [ev]), a + b)


def test_build_and_launch_errors(driver, device, queue, build, compiler):
    for junk, msg in [(b"\x03\x02\x23\x07" + b"\0" * 32, "zero-length instruction"),
                      (b"not SPIR-V, not even close", "not a little-endian SPIR-V"),
                      (struct.pack("<7I", 0x07230203, 0x10400, 0, 9, 0, (5 << 16) | 17, 6), "truncated")]:
        with pytest.raises(exception, match=msg) as info:
            driver.load(device, junk, ["k"])
        assert info.value.code() is errc.build
    prg = build(VADD, ["vadd"])
    with pytest.raises(exception) as info:
        driver.launch(queue, prg, "missing", [4], None, [])
    assert info.value.code() is errc.kernel_not_supported
    with pytest.raises(exception) as info:
        driver.launch(queue, prg, "vadd", [10], [3, 7], [])
    assert info.value.code() is errc.nd_range
    with pytest.raises(exception) as info:
        driver.launch(queue, prg, "vadd", [10], [3], [])       # 10 % 3 != 0
    assert info.value.code() is errc.nd_range
    fresh = build(VADD, ["vadd"])
    with pytest.raises(exception) as info:
        driver.launch(queue, fresh, "vadd", [16], [4], [])     # arguments never set
    assert info.value.code() is errc.kernel_argument


class _DictCodeCache:
    """bundle/cache.DeviceCodeCache's protocol over a dict, counting its use."""

    def __init__(self):
        self.entries, self.gets, self.hits, self.puts = {}, 0, 0, 0

    @staticmethod
    def _key(parts):
        return tuple(sorted(parts.items()))

    def get(self, parts):
        self.gets += 1
        data = self.entries.get(self._key(parts))
        self.hits += data is not None
        return data

    def put(self, parts, data):
        self.puts += 1
        self.entries[self._key(parts)] = data


def _run_scale(driver, device, queue, prg, x):
    X, O = upload(driver, device, queue, x, "buffer"), driver.alloc(device, x.nbytes, "buffer")
    ev = driver.launch(queue, prg, "scale", [x.size], None, [mem(O), mem(X)])
    out = download(driver, queue, O, x, [ev])
    driver.free(X)
    driver.free(O)
    return out


def test_device_binaries_are_cached_per_spec_value_set(driver, device, queue, compiler):
    """A load with a code cache keeps the device binary; the next load of the same
    SPIR-V and spec-constant values builds from it, other values get their own."""
    spv = compiler.compile(SPEC_SCALE, ["scale"])
    x = rng.integers(-1000, 1000, 256, dtype=np.int32)
    cache = _DictCodeCache()
    for round_ in range(2):
        for value in (None, 11, -5):
            spec = None if value is None else {7: np.int32(value).tobytes()}
            prg = driver.load(device, spv, ["scale"], spec, code_cache=cache)
            np.testing.assert_array_equal(_run_scale(driver, device, queue, prg, x),
                                          x * (value or 3))
    assert cache.puts == 3 and len(cache.entries) == 3   # one binary per value set
    assert cache.hits == 3                               # the second round: all from binaries


def test_a_refused_device_binary_is_rebuilt_from_spirv(driver, device, queue, compiler):
    spv = compiler.compile(SPEC_SCALE, ["scale"])
    x = rng.integers(-1000, 1000, 256, dtype=np.int32)
    cache = _DictCodeCache()
    driver.load(device, spv, ["scale"], {7: np.int32(9).tobytes()}, code_cache=cache)
    (key,) = cache.entries
    cache.entries[key] = b"\x7fELF not a program binary" + bytes(64)
    prg = driver.load(device, spv, ["scale"], {7: np.int32(9).tobytes()}, code_cache=cache)
    np.testing.assert_array_equal(_run_scale(driver, device, queue, prg, x), x * 9)
    assert cache.puts == 2 and cache.entries[key] != b"\x7fELF not a program binary" + bytes(64)


_PROCESS = """
import numpy as np
import pysycl as sycl
from pysycl.backends.opencl.driver import OpenCLDriver
used = []
original = OpenCLDriver._from_device_binary
def spy(self, *a, **k):
    program = original(self, *a, **k)
    used.append(program is not None)
    return program
OpenCLDriver._from_device_binary = spy

@sycl.kernel
def twice(it: sycl.item[1], x: sycl.global_ptr[np.float32]):
    x[it.get_id(0)] = x[it.get_id(0)] * np.float32(2)

q = sycl.queue([d for d in sycl.device.get_devices() if d.backend.name == "opencl"][0])
data = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
x = sycl.malloc_shared(data.shape, np.float32, q)
np.asarray(x)[:] = data
q.parallel_for(1000, twice, x).wait()
np.testing.assert_array_equal(np.asarray(x), data * 2)
print("from device binary:", used)
"""


def test_a_second_process_builds_from_the_cached_device_binary(tmp_path, device):
    """End to end: the first process builds SPIR-V and keeps the device binary in the
    disk cache, the second builds its program from that binary."""
    import os
    import subprocess
    import sys
    script = tmp_path / "prog.py"
    script.write_text(_PROCESS)
    env = dict(os.environ, PYSYCL_CACHE_DIR=str(tmp_path / "cache"))
    outs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for out in outs:
        assert out.returncode == 0, out.stderr[-2000:]
    assert outs[0].stdout.strip().endswith("from device binary: []")
    assert outs[1].stdout.strip().endswith("from device binary: [True]")
