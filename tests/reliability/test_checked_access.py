"""Checked builds (``PYSYCL_DEBUG=bounds``): an accessor or USM index out of range never
reads or writes memory; the work-item stops, the launch's error is ``errc.kernel`` naming
the kernel, the argument, the index and the extent, it arrives through the queue's
asynchronous errors, and the process keeps working (and exits cleanly)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pysycl as sycl


@pytest.fixture(autouse=True)
def checked(monkeypatch):
    monkeypatch.setenv("PYSYCL_DEBUG", "bounds")


def _kernel_error(fn) -> sycl.exception:
    """The error of the launch ``fn`` makes (``wait()`` or ``wait_and_throw()``)."""
    with pytest.raises(sycl.exception) as info:
        fn()
    assert info.value.code() == sycl.errc.kernel, str(info.value)
    return info.value


def _run(q, launch):
    launch().wait()
    q.wait_and_throw()


@sycl.kernel
def shift_store(it: sycl.item[1], x: sycl.accessor[np.float32, 1, sycl.read_only],
                y: sycl.accessor[np.float32, 1, sycl.write_only], k: np.int64):
    y[it.get_id(0) + k] = x[it]


@sycl.kernel
def shift_load(it: sycl.item[1], x: sycl.accessor[np.float32, 1, sycl.read_only],
               y: sycl.accessor[np.float32, 1, sycl.write_only], k: np.int64):
    y[it] = x[it.get_id(0) + k]


@sycl.kernel
def usm_store(it: sycl.item[1], p: sycl.global_ptr[np.float32], k: np.int64,
              v: np.float32):
    q = p + k
    q[it.get_id(0)] = v


@sycl.kernel
def usm_load(it: sycl.item[1], src: sycl.global_ptr[np.float32],
             dst: sycl.global_ptr[np.float32], k: np.int64):
    dst[it.get_id(0)] = src[it.get_id(0) + k] * np.float32(2)


@sycl.kernel
def grid_store(it: sycl.item[2], a: sycl.accessor[np.int32, 2, sycl.write_only],
               dr: np.int64, dc: np.int64):
    a[it.get_id(0) + dr, it.get_id(1) + dc] = np.int32(it.get_linear_id())


@sycl.kernel
def atomic_count(it: sycl.item[1], hist: sycl.global_ptr[np.int32],
                 keys: sycl.global_ptr[np.int64]):
    sycl.atomic_ref(hist, keys[it.get_id(0)]).fetch_add(np.int32(1))


@sycl.kernel
def local_reverse(it: sycl.nd_item[1], x: sycl.accessor[np.float32, 1, sycl.read_write],
                  tmp: sycl.local_accessor[np.float32, 1], k: np.int64):
    lid = it.get_local_id(0)
    tmp[lid + k] = x[it.get_global_id(0)]
    sycl.group_barrier(it.get_group())
    x[it.get_global_id(0)] = tmp[it.get_local_range(0) - 1 - lid]


def test_accessor_store_past_the_end(queue, rng):
    x = rng.standard_normal(10).astype(np.float32)
    big = np.full(16, -1.0, np.float32)      # the buffer's memory is big[:10]
    view = big[:10]

    def launch(k):
        with sycl.buffer(x) as bx, sycl.buffer(view) as by:
            _run(queue, lambda: queue.submit(lambda cgh: cgh.parallel_for(
                10, shift_store, sycl.accessor(bx, cgh, sycl.read_only),
                sycl.accessor(by, cgh, sycl.write_only), np.int64(k))))
    err = _kernel_error(lambda: launch(3))
    text = str(err)
    assert "shift_store" in text and "'y'" in text and "of 10 elements" in text, text
    assert "index 1" in text, text      # items 7, 8, 9 fail with 10, 11, 12: one is named
    assert f"{os.path.basename(__file__)}:" in text
    np.testing.assert_array_equal(big[10:], -1.0)        # nothing written past the end
    np.testing.assert_array_equal(view[3:], x[:7])       # in-range items did their work
    launch(0)                                            # the queue still works
    np.testing.assert_array_equal(view, x)


def test_accessor_load_out_of_range_and_negative(queue, rng):
    x = rng.standard_normal(12).astype(np.float32)
    for k, bad in ((5, "index 12"), (-3, "index -")):
        y = np.zeros(12, np.float32)
        with sycl.buffer(x) as bx, sycl.buffer(y) as by:
            err = _kernel_error(lambda: _run(queue, lambda: queue.submit(
                lambda cgh: cgh.parallel_for(12, shift_load,
                                             sycl.accessor(bx, cgh, sycl.read_only),
                                             sycl.accessor(by, cgh, sycl.write_only),
                                             np.int64(k)))))
        assert "'x'" in str(err) and bad in str(err) and "of 12 elements" in str(err)
        ok = np.arange(12) + k
        good = (ok >= 0) & (ok < 12)
        np.testing.assert_array_equal(y[good], x[ok[good]])


def test_two_dimensional_accessor_names_the_dimension(queue):
    a = np.full((6, 5), -7, np.int32)
    with sycl.buffer(a) as ba:
        err = _kernel_error(lambda: _run(queue, lambda: queue.submit(
            lambda cgh: cgh.parallel_for((6, 5), grid_store,
                                         sycl.accessor(ba, cgh, sycl.write_only),
                                         np.int64(0), np.int64(1)))))
    assert "dimension 1" in str(err) and "index 5" in str(err) and "of 5 elements" in str(err)
    expected = np.arange(30, dtype=np.int32).reshape(6, 5)
    np.testing.assert_array_equal(a[:, 1:], expected[:, :4])


def test_usm_store_past_its_allocation(queue, rng):
    n = 8
    p = sycl.malloc_shared(n, np.float32, queue)
    p[:] = 0
    v = np.float32(rng.standard_normal())
    err = _kernel_error(lambda: _run(queue, lambda: queue.parallel_for(
        n, usm_store, p, np.int64(3), v)))
    text = str(err)
    assert "usm_store" in text and "USM pointer 'p'" in text and "of 8 elements" in text
    assert any(f"index {i}" in text for i in (8, 9, 10)), text
    np.testing.assert_array_equal(p.to_numpy(), [0, 0, 0, v, v, v, v, v])
    queue.parallel_for(n, usm_store, p, np.int64(0), v).wait()   # still usable
    queue.wait_and_throw()
    np.testing.assert_array_equal(p.to_numpy(), np.full(n, v))


@sycl.device
def put(dst: sycl.global_ptr[np.float32], i: np.int64, v: np.float32) -> None:
    dst[i] = v


@sycl.kernel
def store_through_device_function(it: sycl.item[1], p: sycl.global_ptr[np.float32],
                                  k: np.int64):
    put(p + k, it.get_id(0), np.float32(it.get_id(0)))


def test_device_function_pointer_parameter(queue):
    """A pointer passed to a device function keeps its extent: the bytes after it."""
    n = 10
    p = sycl.malloc_shared(n, np.float32, queue)
    p[:] = -1
    err = _kernel_error(lambda: _run(queue, lambda: queue.parallel_for(
        n, store_through_device_function, p, np.int64(4))))
    assert "USM pointer 'dst'" in str(err) and "of 6 elements" in str(err), str(err)
    np.testing.assert_array_equal(p.to_numpy(), [-1, -1, -1, -1, 0, 1, 2, 3, 4, 5])
    queue.parallel_for(n, store_through_device_function, p, np.int64(0)).wait()
    queue.wait_and_throw()
    np.testing.assert_array_equal(p.to_numpy(), np.arange(n))


def test_usm_load_out_of_range(queue, rng):
    n = 16
    src = sycl.malloc_shared(n, np.float32, queue)
    dst = sycl.malloc_shared(n, np.float32, queue)
    data = rng.standard_normal(n).astype(np.float32)
    src[:] = data
    dst[:] = 0
    err = _kernel_error(lambda: _run(queue, lambda: queue.parallel_for(
        n, usm_load, src, dst, np.int64(-4))))
    assert "USM pointer 'src'" in str(err) and "index -" in str(err)
    np.testing.assert_array_equal(dst.to_numpy()[4:], data[:12] * 2)


def test_atomic_at_a_bad_key(queue, rng):
    bins = 8
    hist = sycl.malloc_shared(bins, np.int32, queue)
    hist[:] = 0
    keys = rng.integers(0, bins, 64).astype(np.int64)
    keys[17] = bins + 3
    d_keys = sycl.malloc_shared(64, np.int64, queue)
    d_keys[:] = keys
    err = _kernel_error(lambda: _run(queue, lambda: queue.parallel_for(
        64, atomic_count, hist, d_keys)))
    assert f"index {bins + 3}" in str(err) and "'hist'" in str(err)
    good = keys[keys < bins]
    np.testing.assert_array_equal(hist.to_numpy(), np.bincount(good, minlength=bins))


def test_local_accessor_with_barrier(queue, rng):
    """A work-group kernel: the failing items stop, nothing hangs at the barrier."""
    wg = 8
    x = rng.standard_normal(4 * wg).astype(np.float32)
    with sycl.buffer(x.copy()) as bx:
        err = _kernel_error(lambda: _run(queue, lambda: queue.submit(
            lambda cgh: cgh.parallel_for(sycl.nd_range(4 * wg, wg), local_reverse,
                                         sycl.accessor(bx, cgh, sycl.read_write),
                                         cgh.local_accessor(np.float32, (wg,)),
                                         np.int64(wg)))))
    assert "local accessor 'tmp'" in str(err)
    y = x.copy()
    with sycl.buffer(y) as by:
        _run(queue, lambda: queue.submit(
            lambda cgh: cgh.parallel_for(sycl.nd_range(4 * wg, wg), local_reverse,
                                         sycl.accessor(by, cgh, sycl.read_write),
                                         cgh.local_accessor(np.float32, (wg,)), np.int64(0))))
    np.testing.assert_array_equal(y, x.reshape(4, wg)[:, ::-1].ravel())


def test_error_goes_to_the_async_handler(device):
    seen = []
    q = sycl.queue(device, async_handler=seen.extend)
    p = sycl.malloc_shared(4, np.float32, q)
    q.parallel_for(4, usm_store, p, np.int64(1), np.float32(2)).wait()
    q.wait_and_throw()
    assert len(seen) == 1 and seen[0].code() == sycl.errc.kernel
    assert "USM pointer 'p'" in str(seen[0])


def test_checked_results_match_numpy(queue, rng):
    """A checked build computes what an unchecked one does: the 3x3 convolution of the
    benchmarks (2-D accessors and a USM coefficient array) against NumPy."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from benchmarks import kernels as K
    n, m = 37, 53
    img = rng.standard_normal((n, m)).astype(np.float32)
    coeff = rng.standard_normal(9).astype(np.float32)
    d_coeff = sycl.malloc_shared(9, np.float32, queue)
    d_coeff[:] = coeff
    out = np.zeros_like(img)
    with sycl.buffer(img) as b_in, sycl.buffer(out) as b_out:
        _run(queue, lambda: queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(n, m), K.conv3x3_args, d_coeff, sycl.accessor(b_in, cgh, sycl.read_only),
            sycl.accessor(b_out, cgh, sycl.write_only, sycl.no_init))))
    padded = np.pad(img, 1)
    c = coeff.reshape(3, 3)
    expected = sum(c[i, j] * padded[i:i + n, j:j + m] for i in range(3) for j in range(3))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


_CRASH = textwrap.dedent("""
    import sys, numpy as np, pysycl as sycl

    @sycl.kernel
    def far_store(it: sycl.item[1], p: sycl.global_ptr[np.float32], k: np.int64):
        p[it.get_id(0) + k] = np.float32(1)

    @sycl.kernel
    def far_acc(it: sycl.item[1], a: sycl.accessor[np.float32, 1, sycl.write_only],
                k: np.int64):
        a[it.get_id(0) + k] = np.float32(1)

    dev = [d for d in sycl.device.get_devices() if d.backend.name == sys.argv[1]][0]
    q = sycl.queue(dev)
    p = sycl.malloc_shared(16, np.float32, q)
    for k in (1 << 26, -(1 << 26)):
        try:
            q.parallel_for(16, far_store, p, np.int64(k)).wait()
            q.wait_and_throw()
        except sycl.exception as e:
            print("usm:", e.code().name)
        a = np.zeros(16, np.float32)
        try:
            with sycl.buffer(a) as b:
                q.submit(lambda cgh: cgh.parallel_for(
                    16, far_acc, sycl.accessor(b, cgh, sycl.write_only), np.int64(k))).wait()
                q.wait_and_throw()
        except sycl.exception as e:
            print("acc:", e.code().name)
    print("done")
""")


def test_far_out_of_range_stores_in_a_fresh_process(device, tmp_path):
    """Stores 2**26 elements away crash an unchecked process; a checked one reports them
    and exits cleanly."""
    script = tmp_path / "far.py"
    script.write_text(_CRASH)
    env = dict(os.environ, PYSYCL_DEBUG="bounds")
    r = subprocess.run([sys.executable, str(script), device.backend.name],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.split().count("kernel") == 4, r.stdout
    assert r.stdout.strip().endswith("done")


def test_checked_build_for_cuda_makes_ptx():
    """The CUDA target's checked build (no GPU needed): the failure record and site table
    are visible globals the driver can read, and a ``global_ptr`` parameter takes its size
    as a hidden argument."""
    cuda_compiler = pytest.importorskip("pysycl.backends.cuda.compiler")
    from pysycl.backends.cuda.lowering import CudaLowering
    from pysycl.backends.cuda.target import cuda_target
    from pysycl.codegen import lower_module
    from pysycl.ir import check_record
    from pysycl.passes.bounds_checks import insert_bounds_checks
    try:
        libdevice = cuda_compiler.find_libdevice()
    except sycl.exception as e:
        pytest.skip(f"no libdevice: {e}")
    m = usm_store.ir_module()
    insert_bounds_checks(m)
    lowering = CudaLowering(cuda_target((9, 0)))
    lowering.debug = frozenset({"assert", "bounds"})
    kernel = m.kernels[0].name
    ptx = cuda_compiler.compile_ptx(str(lower_module(m, lowering)), [kernel], cpu="sm_90",
                                    libdevice=libdevice)
    assert f".visible .global .align 8 .b8 {check_record.BOUNDS_RECORD_SYMBOL}[32]" in ptx
    assert f".visible .global .align 8 .b8 {check_record.SITES_SYMBOL}[" in ptx
    params = [line for line in ptx.splitlines() if line.strip().startswith(".param")
              and "_param_" in line and "check_fail" not in line]
    assert len(params) == 5, params   # p, p's size, k, v, the spec-constant buffer


def test_native_interior_has_no_checks():
    """On the native CPU the checks of the convolution hold on the interior of each row
    (passes/split_item_range proves them like the kernel's own guards): the interior loop
    is vectorised with plain loads and no failure path; checks stay on the edges."""
    import re

    from pysycl.backends.native_cpu.compiler import NativeCpuCompiler
    from pysycl.bundle import toolchain
    from pysycl.passes.spec_constants import lower_spec_constants
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from benchmarks import kernels as K
    dev = [d for d in sycl.device.get_devices() if d.backend == sycl.backend.native_cpu][0]
    q = sycl.queue(dev)
    exe = sycl.build(sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input,
                                            devices=[dev],
                                            kernel_ids=[sycl.get_kernel_id(K.conv3x3_args)]))
    lk = next(i for i in exe if i.has_kernel(K.conv3x3_args))._linked
    target = toolchain.device_target(dev)
    module = toolchain.clone(lk.module)
    lower_spec_constants(module, lk.spec_ids, "literal", None)
    module = toolchain.kernel_passes(module, target)
    kernel = module.kernels[0]
    assert kernel.attrs.get("wi_rows")
    checks = [op for op in kernel.walk() if op.name == "check"]
    assert len(checks) == 5, checks        # coeff, inp (two dimensions), out (two)
    assert {c.attrs["what"] for c in checks} >= {"USM pointer 'coeff'",
                                                 "accessor 'out' in dimension 1"}
    guards = {c.operands[0].owner for c in checks}
    cmps = [x.owner for g in guards for x in g.operands]
    assert all(op.name == "cmp" and op.attrs.get("interior") for op in cmps)
    opt = NativeCpuCompiler().optimized_ir(toolchain.codegen(module, target))
    bodies = [blk for blk in opt.split("\n\n") if re.match(r"vector\.body\d*:", blk.strip())]
    tap = r"fmul <(?:8|16) x float>|@llvm\.fmuladd\.v(?:8|16)f32\("   # (may be fused)
    clean = [blk for blk in bodies if "llvm.masked" not in blk and "check_fail" not in blk
             and re.search(tap, blk)]
    assert clean, "no vectorised interior loop free of checks"
    assert "__pysycl_check_fail" in opt       # the edges keep them
