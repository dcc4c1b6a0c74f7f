"""Index-set splitting of the native CPU's work-item rows (passes/split_item_range):
bounds checks of the last-dimension id hold on an interior interval of each row, which
runs with the checks folded to true. Results against NumPy on random data, with rows
shorter than the halo, sizes that are not multiples of the vector width, nd_ranges with
local sizes and offsets, extreme bounds; plus structural checks of the rewrite and of the
vectorised interior (no masked gathers). Timings live in benchmarks/."""
from __future__ import annotations

import re

import numpy as np
import pytest

import pysycl as sycl
from pysycl.backends.native_cpu.compiler import NativeCpuCompiler
from pysycl.ir.builder import Builder
from pysycl.ir.core import Function, Module, Param, Region
from pysycl.ir.types import F32, I64, IndexSpaceType, PointerType
from pysycl.passes.split_item_range import split_item_range

f32 = np.float32
i64 = np.int64
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


@sycl.kernel
def conv3x3_ptr(it: sycl.item[2], coeff: sycl.global_ptr[f32],
                inp: sycl.accessor[f32, 2, sycl.read_only],
                out: sycl.accessor[f32, 2, sycl.write_only]):
    rows = inp.get_range(0)
    cols = inp.get_range(1)
    acc = f32(0)
    for i in range(-1, 2):
        r = it.get_id(0) + i
        if r >= 0 and r < rows:
            for j in range(-1, 2):
                c = it.get_id(1) + j
                if c >= 0 and c < cols:
                    acc += coeff[(i + 1) * 3 + j + 1] * inp[r, c]
    out[it] = acc


@sycl.kernel
def conv5_nd(nd: sycl.nd_item[2], coeff: sycl.global_ptr[f32], inp: sycl.global_ptr[f32],
             out: sycl.global_ptr[f32], rows: i64, cols: i64):
    """A 5-wide row stencil over an nd_range (local sizes, offsets): global ids, a
    uniform row check, a loop variable, locals holding the column."""
    r = nd.get_global_id(0)
    c0 = nd.get_global_id(1)
    acc = f32(0)
    if r < rows:
        for j in range(-2, 3):
            c = c0 + j
            if c >= 0 and c < cols:
                acc += coeff[j + 2] * inp[r * cols + c]
    out[r * cols + c0] = acc + f32(nd.get_local_linear_id())


@sycl.kernel
def guards_1d(it: sycl.item[1], x: sycl.global_ptr[f32], y: sycl.global_ptr[f32], n: i64,
              k: i64, lo: i64, hi: i64):
    """Every comparison form: ge/gt/le/lt, the id on either side, negated, a constant
    multiple of a kernel argument, min/max of arguments."""
    i = it.get_id(0)
    acc = f32(0)
    if i - k >= 0 and i - k < n:
        acc += x[i - k]
    if n - 1 - i >= k and i + k >= 0:
        acc += f32(2) * x[i + k]
    if i > lo and i <= hi:
        acc += f32(4) * x[i]
    if -i < -3:
        acc += f32(8)
    if 2 * k > i + 1:
        acc += f32(16)
    if i < min(hi, n - 2) and i >= max(lo, 0):
        acc += f32(32)
    y[i] = acc


def guards_1d_ref(x, n, k, lo, hi):
    with np.errstate(over="ignore"):
        i = np.arange(n, dtype=np.int64)
        k, lo, hi, n64 = np.int64(k), np.int64(lo), np.int64(hi), np.int64(n)
        y = np.zeros(n, np.float64)
        m = (i - k >= 0) & (i - k < n64)
        y[m] += x[(i - k)[m]]
        m = (n64 - 1 - i >= k) & (i + k >= 0)
        y[m] += 2 * x[(i + k)[m]]
        m = (i > lo) & (i <= hi)
        y[m] += 4 * x[i[m]]
        y[-i < -3] += 8
        y[2 * k > i + 1] += 16
        y[(i < min(hi, n64 - 2)) & (i >= max(lo, 0))] += 32
    return y


@sycl.kernel
def wrap_guard(it: sycl.item[1], y: sycl.global_ptr[i64], k: i64, n: i64):
    """Bounds checks on values that wrap (extreme arguments): the interior must not
    assume arithmetic that the kernel does not do."""
    i = it.get_id(0)
    v = i64(0)
    if i + k < n:
        v += 1
    if i - k >= n:
        v += 2
    y[i] = v


@sycl.kernel
def triangle(it: sycl.item[2], out: sycl.accessor[f32, 2, sycl.write_only], band: i64):
    """Bounds that depend on the row (the other dimension's id)."""
    r = it.get_id(0)
    c = it.get_id(1)
    v = f32(0)
    if c <= r:
        v += f32(1)
    if c - r < band and r - c < band:
        v += f32(2)
    if it.get_linear_id() < 3 * it.get_range(1) + 5:
        v += f32(4)
    out[it] = v


def triangle_ref(shape, band):
    r, c = np.indices(shape)
    lin = r * shape[1] + c
    return ((c <= r) * 1 + ((c - r < band) & (r - c < band)) * 2
            + (lin < 3 * shape[1] + 5) * 4).astype(np.float32)


def _queue():
    for dev in sycl.device.get_devices():
        if str(dev.backend).endswith("native_cpu"):
            return sycl.queue(dev)
    pytest.skip("no native_cpu device")


def conv3x3_ref(img, coeff):
    padded = np.pad(img.astype(np.float64), 1)
    n, m = img.shape
    return sum(coeff[i, j] * padded[i:i + n, j:j + m] for i in range(3) for j in range(3))


@pytest.mark.parametrize("shape", [(1, 1), (1, 2), (2, 1), (3, 3), (2, 17), (5, 31),
                                   (17, 5), (33, 129), (64, 1000)])
def test_conv3x3_pointer_coefficients(shape):
    q = _queue()
    rng = np.random.default_rng(sum(shape))
    img = rng.standard_normal(shape, dtype=f32)
    coeff = rng.standard_normal((3, 3), dtype=f32)
    out = np.full(shape, np.nan, f32)
    d_coeff = sycl.malloc_shared((9,), f32, q)
    np.asarray(d_coeff)[...] = coeff.ravel()
    with sycl.buffer(img) as b_in, sycl.buffer(out) as b_out:
        q.submit(lambda h: h.parallel_for(
            sycl.range(*shape), conv3x3_ptr, d_coeff, sycl.accessor(b_in, h, sycl.read_only),
            sycl.accessor(b_out, h, sycl.write_only, sycl.no_init))).wait()
    np.testing.assert_allclose(out, conv3x3_ref(img, coeff), rtol=1e-5, atol=1e-5)
    sycl.free(d_coeff, q)


@pytest.mark.parametrize("shape,local,offset", [
    ((4, 24), (2, 8), (0, 0)), ((6, 40), (3, 4), (0, 0)), ((4, 16), (4, 16), (1, 3)),
    ((2, 6), (1, 2), (2, 5)), ((8, 2), (2, 2), (0, 1)), ((3, 48), (1, 16), (1, 0))])
def test_conv5_nd_range_with_offsets(shape, local, offset):
    q = _queue()
    rows, cols = shape[0] + offset[0], shape[1] + offset[1] + 1   # one column never written
    rng = np.random.default_rng(rows * cols)
    img = rng.standard_normal((rows, cols), dtype=f32)
    coeff = rng.standard_normal(5, dtype=f32)
    d_coeff, d_in, d_out = (sycl.malloc_shared((n,), f32, q) for n in (5, rows * cols,
                                                                         rows * cols))
    np.asarray(d_coeff)[...] = coeff
    np.asarray(d_in)[...] = img.ravel()
    np.asarray(d_out)[...] = -1
    q.submit(lambda h: h.parallel_for(sycl.nd_range(sycl.range(*shape), sycl.range(*local),
                                                    offset), conv5_nd, d_coeff, d_in, d_out,
                                      i64(rows), i64(cols))).wait()
    padded = np.pad(img.astype(np.float64), ((0, 0), (2, 2)))
    full = sum(coeff[j] * padded[:, j:j + cols] for j in range(5))
    lr, lc = np.indices(shape)
    full_ref = np.full((rows, cols), -1.0)
    o0, o1 = offset
    full_ref[o0:, o1:o1 + shape[1]] = (full[o0:, o1:o1 + shape[1]]
                                       + (lr % local[0]) * local[1] + lc % local[1])
    np.testing.assert_allclose(np.asarray(d_out).reshape(rows, cols), full_ref, rtol=1e-5,
                               atol=1e-5)
    for p in (d_coeff, d_in, d_out):
        sycl.free(p, q)


@pytest.mark.parametrize("n,k,lo,hi", [
    (1, 0, -5, 5), (3, 1, 0, 2), (7, 5, 2, 4), (37, 3, 4, 30), (100, 150, -1, 200),
    (1000, 17, 900, 100), (513, 0, I64_MIN, I64_MAX), (64, 1 << 61, 1 << 61, -(1 << 61)),
    (50, I64_MAX, 10, 20), (50, -(1 << 62) - 7, -3, (1 << 62) + 9)])
def test_guards_1d(n, k, lo, hi):
    q = _queue()
    rng = np.random.default_rng(n)
    x = sycl.malloc_shared((n,), f32, q)
    y = sycl.malloc_shared((n,), f32, q)
    np.asarray(x)[...] = rng.standard_normal(n)
    q.parallel_for(sycl.range(n), guards_1d, x, y, i64(n), i64(k), i64(lo), i64(hi)).wait()
    np.testing.assert_allclose(np.asarray(y), guards_1d_ref(np.asarray(x), n, k, lo, hi),
                               rtol=1e-6, atol=1e-6)
    for p in (x, y):
        sycl.free(p, q)


@pytest.mark.parametrize("k,n", [(0, 10), (I64_MAX, 0), (I64_MIN, 0), (I64_MAX, I64_MIN),
                                 (I64_MIN + 3, I64_MAX), (-5, I64_MIN), ((1 << 60) + 1, 40),
                                 (-(1 << 60), -(1 << 60) + 30)])
def test_wrapping_bounds(k, n):
    q = _queue()
    size = 70
    y = sycl.malloc_shared((size,), i64, q)
    q.parallel_for(sycl.range(size), wrap_guard, y, i64(k), i64(n)).wait()
    with np.errstate(over="ignore"):
        i = np.arange(size, dtype=np.int64)
        ref = (i + np.int64(k) < np.int64(n)) * 1 + (i - np.int64(k) >= np.int64(n)) * 2
    np.testing.assert_array_equal(np.asarray(y), ref)
    sycl.free(y, q)


@pytest.mark.parametrize("shape,band", [((1, 1), 1), ((9, 33), 3), ((40, 17), 0),
                                        ((31, 70), 100)])
def test_row_dependent_bounds(shape, band):
    q = _queue()
    out = np.full(shape, np.nan, f32)
    with sycl.buffer(out) as b:
        q.submit(lambda h: h.parallel_for(sycl.range(*shape), triangle,
                                          sycl.accessor(b, h, sycl.write_only, sycl.no_init),
                                          i64(band))).wait()
    np.testing.assert_array_equal(out, triangle_ref(shape, band))


# Structure -----------------------------------------------------------------------------------
def _kernel_ir(kernel):
    """The kernel's IR after the native CPU pipeline, and its LLVM IR."""
    from pysycl.bundle import toolchain
    from pysycl.passes.spec_constants import lower_spec_constants
    q = _queue()
    exe = sycl.build(sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input,
                                            devices=[q.get_device()],
                                            kernel_ids=[sycl.get_kernel_id(kernel)]))
    lk = next(i for i in exe if i.has_kernel(kernel))._linked
    target = toolchain.device_target(q.get_device())
    module = toolchain.clone(lk.module)
    lower_spec_constants(module, lk.spec_ids, "literal", None)
    module = toolchain.kernel_passes(module, target)
    return module, toolchain.codegen(module, target)


def test_conv3x3_becomes_a_row_kernel_with_proven_guards():
    module, _ = _kernel_ir(conv3x3_ptr)
    k = module.kernels[0]
    assert k.attrs.get("wi_rows")
    items = [op for op in k.body.ops if op.name == "wg.items"]
    assert len(items) == 1 and len(items[0].operands) == 2
    cmps = [op for op in items[0].regions[0].walk() if op.name == "cmp"]
    assert len(cmps) == 4 and all(op.attrs.get("interior") for op in cmps)


def test_conv3x3_interior_loop_has_no_masked_accesses():
    """The coefficient loads are plain loads broadcast to vectors in the interior loop;
    masked gathers remain only in the loop over the row's edges."""
    _, llvm = _kernel_ir(conv3x3_ptr)
    opt = NativeCpuCompiler().optimized_ir(llvm)
    bodies = [blk for blk in opt.split("\n\n") if re.match(r"vector\.body\d*:", blk.strip())]
    # each tap a vector multiply, or a multiply-add (the products feed the sum)
    tap = r"fmul <(?:8|16) x float>|@llvm\.fmuladd\.v(?:8|16)f32\("
    clean = [blk for blk in bodies if "llvm.masked" not in blk and re.search(tap, blk)]
    assert clean, "no vectorised interior loop without masked loads"
    assert len(re.findall(tap, clean[0])) >= 9


# The pass on hand-written IR ---------------------------------------------------------------
def _guarded_kernel(bound_from_memory=False, barrier=False, early_return=False):
    """``if gid < n: p[gid] = 0`` with ``n`` a kernel argument (or loaded from p)."""
    params = [Param("it", IndexSpaceType("item", 1)), Param("p", PointerType(F32)),
              Param("n", I64)]
    body = Region()
    fn = Function("k", "kernel", params, body=body)
    b = Builder(body)
    _, p, n = (x.value for x in params)
    gid = b.op("wi.global_id", type=I64, dim=0)
    if bound_from_memory:
        n = b.op("cast", b.load(p), type=I64)
    if barrier:
        b.op("barrier", scope="work_group")
    then, _ = b.if_(b.cmp("lt", gid, n))
    then.store(then.op("ptr.offset", p, gid, type=PointerType(F32)), then.const(0.0, F32))
    if early_return:
        then.op("return")
    return Module("m", [fn]), fn


def test_pass_rewrites_a_guard_on_an_argument():
    m, fn = _guarded_kernel()
    split_item_range(m)
    assert fn.attrs.get("wi_rows")
    assert [op.name for op in fn.body.ops][-1] == "wg.items"
    cmp = next(op for op in fn.walk() if op.name == "cmp" and op.attrs.get("interior"))
    assert cmp.operands[0].owner.name == "wi.global_id"


def test_pass_splits_a_kernel_with_an_early_return():
    """``if gid < n: p[gid] = 0; return`` (nothing after it): the return skips nothing, so
    the guard is wanted true on the interior; the lowering ends the item at a return."""
    m, fn = _guarded_kernel(early_return=True)
    split_item_range(m)
    assert fn.attrs.get("wi_rows")
    cmp = next(op for op in fn.walk() if op.name == "cmp" and "interior" in op.attrs)
    assert cmp.attrs["interior"] is True and cmp.attrs["pred"] == "lt"


@pytest.mark.parametrize("variant", ["bound_from_memory", "barrier"])
def test_pass_leaves_other_kernels_alone(variant):
    m, fn = _guarded_kernel(**{variant: True})
    before = [op.name for op in fn.walk()]
    split_item_range(m)
    assert "wi_rows" not in fn.attrs
    assert [op.name for op in fn.walk()] == before
    assert not any("interior" in op.attrs for op in fn.walk())


@pytest.mark.parametrize("shape,local_size", [((64, 128), None), ((64, 128), (4, 16)),
                                              ((64, 128), (1, 64)), ((3, 2), None),
                                              ((9, 37), (3, 1)), ((2, 70), None)])
def test_split_hand_written_conv3x3(shape, local_size):
    """The pass on IR built by hand (guards combined with ``and``, accessor ranges),
    then lowered, compiled and launched directly through the executor."""
    from native_harness import acc_args, load, spec
    from test_native_kernels import conv3x3_module, conv3x3_numpy
    m = conv3x3_module()
    split_item_range(m)
    assert m.kernels[0].attrs.get("wi_rows")
    img = np.random.default_rng(sum(shape)).standard_normal(shape).astype(f32)
    w = np.arange(1, 10, dtype=f32) / 10
    out = np.zeros_like(img)
    load(m).launch("conv3x3", img.shape, local_size,
                   acc_args(img) + acc_args(w) + acc_args(out) + [spec()])
    np.testing.assert_allclose(out, conv3x3_numpy(img, w), rtol=1e-5, atol=1e-5)
