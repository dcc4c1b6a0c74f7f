"""The row split (passes/split_item_range) on kernels written the way users write them:
bounds from scalar arguments (int32 and int64), ``continue``/``break`` guards, early
returns, ``and``/``or`` chains and ``not``, ``==``/``!=`` tests, flattened ``row * w +
col`` pointer indexing, 1-D and 2-D ranges and nd_ranges. For each form: the split
happened with the comparisons the form needs folded to the right value on the interior
(the IR after the native pipeline), and the results match NumPy on random data, with
rows shorter than the halo and nd_ranges with local sizes and offsets."""
from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl

f32 = np.float32
i32 = np.int32


@sycl.kernel
def conv_continue(it: sycl.item[2], inp: sycl.global_ptr[f32], coeff: sycl.global_ptr[f32],
                  out: sycl.global_ptr[f32], h: i32, w: i32):
    row = it.get_id(0)
    col = it.get_id(1)
    acc = f32(0)
    for i in range(-1, 2):
        r = row + i
        if r < 0 or r >= h:
            continue
        for j in range(-1, 2):
            c = col + j
            if not (c >= 0 and c < w):
                continue
            acc += coeff[(i + 1) * 3 + (j + 1)] * inp[r * w + c]
    out[row * w + col] = acc


@sycl.kernel
def fir_break(it: sycl.item[1], x: sycl.global_ptr[f32], taps: sycl.global_ptr[f32],
              y: sycl.global_ptr[f32], n: i32, ntaps: i32):
    i = it.get_id(0)
    acc = f32(0)
    for k in range(ntaps):
        if i + k >= n:
            break
        acc += taps[k] * x[i + k]
    y[i] = acc


@sycl.kernel
def stencil_return(it: sycl.item[2], a: sycl.global_ptr[f32], b: sycl.global_ptr[f32],
                   h: i32, w: i32):
    r = it.get_id(0)
    c = it.get_id(1)
    if r == 0 or c == 0 or r >= h - 1 or c >= w - 1:
        b[r * w + c] = a[r * w + c]
        return
    b[r * w + c] = f32(0.25) * (a[(r - 1) * w + c] + a[(r + 1) * w + c] +
                                a[r * w + c - 1] + a[r * w + c + 1])


@sycl.kernel
def padded_nd(nd: sycl.nd_item[2], a: sycl.global_ptr[f32], b: sycl.global_ptr[f32],
              h: int, w: int):
    """An nd_range rounded up to the work-group size: items past the array return; a
    column test with ``!=`` picks the last column out."""
    r = nd.get_global_id(0)
    c = nd.get_global_id(1)
    if r >= h or c >= w:
        return
    v = a[r * w + c]
    if c != w - 1:
        v += a[r * w + c + 1]
    b[r * w + c] = v


@sycl.kernel
def window_1d(it: sycl.item[1], x: sycl.global_ptr[f32], y: sycl.global_ptr[f32], n: int,
              half: i32):
    """A moving sum over a window of ``2 * half + 1`` with a scalar-argument radius."""
    i = it.get_id(0)
    acc = f32(0)
    for k in range(-half, half + 1):
        j = i + k
        if j < 0:
            continue
        if j >= n:
            break
        acc += x[j]
    y[i] = acc


def _queue():
    return sycl.queue(sycl.cpu_selector_v)


def _native_ir(kernel):
    """The kernel's IR after the native CPU pipeline."""
    from pysycl.bundle import toolchain
    from pysycl.passes.spec_constants import lower_spec_constants
    q = _queue()
    exe = sycl.build(sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.input,
                                            devices=[q.get_device()],
                                            kernel_ids=[sycl.get_kernel_id(kernel)]))
    lk = next(i for i in exe if i.has_kernel(kernel))._linked
    module = toolchain.clone(lk.module)
    lower_spec_constants(module, lk.spec_ids, "literal", None)
    return toolchain.kernel_passes(module, toolchain.device_target(q.get_device())).kernels[0]


def _interior(kernel) -> list[tuple[str, bool]]:
    """(predicate, value on the interior) of the folded comparisons, in program order;
    the kernel must be a row kernel."""
    k = _native_ir(kernel)
    assert k.attrs.get("wi_rows"), "the row was not split"
    assert [op.name for op in k.body.ops][-1] == "wg.items"
    return [(op.attrs["pred"], op.attrs["interior"]) for op in k.walk()
            if op.name == "cmp" and "interior" in op.attrs]


@pytest.mark.parametrize("kernel,expected", [
    # ``r < 0 or r >= h`` / ``not (c >= 0 and c < w)`` guard a continue: false, true.
    (conv_continue, [("lt", False), ("ge", False), ("ge", True), ("lt", True)]),
    (fir_break, [("ge", False)]),
    (stencil_return, [("eq", False), ("eq", False), ("ge", False), ("ge", False)]),
    (padded_nd, [("ge", False), ("ge", False), ("ne", True)]),
    (window_1d, [("lt", False), ("ge", False)]),
], ids=lambda v: getattr(v, "__name__", None) if callable(v) else "")
def test_split_happens_with_the_wanted_values(kernel, expected):
    assert _interior(kernel) == expected


def _usm(q, host):
    a = sycl.malloc_shared(host.shape, host.dtype, q)
    np.asarray(a)[...] = host
    return a


@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (7, 5), (33, 70), (64, 1030)])
def test_conv_continue(shape):
    h, w = shape
    q = _queue()
    rng = np.random.default_rng(h * 1000 + w)
    img = rng.standard_normal(shape, dtype=f32)
    coeff = rng.standard_normal((3, 3), dtype=f32)
    d_in, d_co = _usm(q, img.ravel()), _usm(q, coeff.ravel())
    d_out = _usm(q, np.full(h * w, np.nan, f32))
    q.parallel_for(sycl.range(h, w), conv_continue, d_in, d_co, d_out, i32(h), i32(w)).wait()
    padded = np.pad(img, 1)
    ref = sum(coeff[i, j] * padded[i:i + h, j:j + w] for i in range(3) for j in range(3))
    np.testing.assert_allclose(np.asarray(d_out).reshape(shape), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n,ntaps", [(1, 1), (5, 9), (100, 7), (4099, 33)])
def test_fir_break(n, ntaps):
    q = _queue()
    rng = np.random.default_rng(n + ntaps)
    x, taps = rng.standard_normal(n, dtype=f32), rng.standard_normal(ntaps, dtype=f32)
    dx, dt, dy = _usm(q, x), _usm(q, taps), _usm(q, np.full(n, np.nan, f32))
    q.parallel_for(sycl.range(n), fir_break, dx, dt, dy, i32(n), i32(ntaps)).wait()
    ref = np.convolve(np.concatenate([x, np.zeros(ntaps, f32)]), taps[::-1], "valid")[:n]
    np.testing.assert_allclose(np.asarray(dy), ref, rtol=1e-4, atol=1e-4)


def _stencil_ref(a):
    ref = a.copy()
    ref[1:-1, 1:-1] = f32(0.25) * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
    return ref


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 4), (17, 5), (40, 301)])
def test_stencil_return(shape):
    h, w = shape
    q = _queue()
    a = np.random.default_rng(h + 7 * w).standard_normal(shape, dtype=f32)
    da, db = _usm(q, a.ravel()), _usm(q, np.full(h * w, np.nan, f32))
    q.parallel_for(sycl.range(h, w), stencil_return, da, db, i32(h), i32(w)).wait()
    np.testing.assert_allclose(np.asarray(db).reshape(shape), _stencil_ref(a), rtol=1e-6)


@pytest.mark.parametrize("shape,local,offset", [((5, 7), (2, 4), None),
                                                ((30, 100), (4, 32), None),
                                                ((9, 33), (1, 16), (2, 3)),
                                                ((1, 1), (1, 8), None)])
def test_padded_nd(shape, local, offset):
    """Global sizes rounded up to the work-group size; with an offset, the items see the
    array shifted by it (SYCL 1.2.1 offsets)."""
    h, w = shape
    q = _queue()
    a = np.random.default_rng(h * w).standard_normal(shape, dtype=f32)
    da, db = _usm(q, a.ravel()), _usm(q, np.full(h * w, np.nan, f32))
    glob = tuple(-(-s // l) * l for s, l in zip(shape, local))
    ndr = sycl.nd_range(sycl.range(*glob), sycl.range(*local),
                        *((sycl.id(*offset),) if offset else ()))
    q.parallel_for(ndr, padded_nd, da, db, h, w).wait()
    ref = a.copy()
    ref[:, :-1] += a[:, 1:]
    got = np.asarray(db).reshape(shape)
    if offset:     # items start at the offset: rows/columns before it are not written
        r0, c0 = offset
        np.testing.assert_allclose(got[r0:, c0:], ref[r0:, c0:], rtol=1e-6)
        assert np.isnan(got[:r0]).all() and np.isnan(got[:, :c0]).all()
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-6)


@pytest.mark.parametrize("n,half", [(1, 0), (3, 2), (50, 1), (1000, 6)])
def test_window_1d(n, half):
    q = _queue()
    x = np.random.default_rng(n + half).standard_normal(n, dtype=f32)
    dx, dy = _usm(q, x), _usm(q, np.full(n, np.nan, f32))
    q.parallel_for(sycl.range(n), window_1d, dx, dy, n, i32(half)).wait()
    ref = np.array([x[max(i - half, 0):i + half + 1].sum() for i in range(n)], f32)
    np.testing.assert_allclose(np.asarray(dy), ref, rtol=1e-4, atol=1e-5)
