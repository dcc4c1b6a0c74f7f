"""Complex numbers in reductions and group algorithms (the SYCL complex extension's
operators there: ``sycl.plus`` and ``sycl.multiplies``) on every device against NumPy:
``sycl.reduction`` over USM and spans, ``reduce_over_group``, the scans, ``joint_reduce``
and the joint scans, broadcast and shuffles, for work-groups and sub-groups; other
operators are clear errors naming the operator and the type; the PTX builds with no GPU."""

import sys

import numpy as np
import pytest

import pysycl as sycl
from pysycl.errors import compile_error
from test_complex import DTYPES, _skip_without_fp64, _usm, part_type


def unit_circle(rng, n, dt):
    """Random numbers near the unit circle: a product of hundreds stays near 1 in size,
    so its error is measured against a number of size 1."""
    z = np.exp(1j * rng.uniform(-np.pi, np.pi, n)) * (1 + 0.02 * rng.standard_normal(n))
    return z.astype(dt)


def sum_bound(x, dt, n):
    """How far a sum of ``n`` terms in the part type may be from the exact one (in any
    order): n eps times the sum of the terms' sizes."""
    return 2 * n * np.finfo(part_type(dt)).eps * np.abs(x).sum()


def product_bound(dt, n):
    """Relative error of a product of n factors near the unit circle: each complex
    product adds at most about 2 eps (in any order)."""
    return 4 * n * np.finfo(part_type(dt)).eps


def make_reductions(dt):
    @sycl.kernel
    def complex_reductions(it: sycl.item[1], x: sycl.global_ptr[dt], u: sycl.global_ptr[dt],
                           total: sycl.reducer[dt], product: sycl.reducer[dt],
                           parts: sycl.reducer[dt, 4, sycl.plus]):
        i = it.get_id(0)
        total += x[i]
        product *= u[i]
        parts[i % 4].combine(x[i] * 1j)
    return complex_reductions


REDUCTIONS = {dt: make_reductions(dt) for dt in DTYPES}


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_reductions_with_plus_and_multiplies_match_numpy(queue, dt):
    """A sum starts from the memory's old value (no initialize_to_identity), a product
    from its identity 1, a span of four sums from a given identity."""
    _skip_without_fp64(queue, dt)
    rng = np.random.default_rng(41)
    n = 1000
    x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    u = unit_circle(rng, n, dt)
    total = sycl.malloc_shared(1, dt, queue)
    before = dt(complex(*rng.standard_normal(2)))
    total[0] = before
    product = sycl.malloc_shared(1, dt, queue)
    parts = sycl.malloc_shared(4, dt, queue)
    fresh = sycl.property.reduction.initialize_to_identity()
    queue.parallel_for(n, REDUCTIONS[dt], _usm(queue, x), _usm(queue, u),
                       sycl.reduction(total, sycl.plus()),
                       sycl.reduction(product, sycl.multiplies(), fresh),
                       sycl.reduction(sycl.span(parts, 4), 0j, sycl.plus(), fresh)).wait()
    exact = x.astype(np.complex128)
    assert abs(total[0] - (exact.sum() + before)) <= sum_bound(x, dt, n + 1)
    want = np.prod(u.astype(np.complex128))
    assert abs(product[0] - want) <= product_bound(dt, n) * abs(want)
    spans = (exact * 1j).reshape(-1, 4).sum(axis=0)
    np.testing.assert_array_less(np.abs(parts.to_numpy() - spans), sum_bound(x, dt, n))


def make_group_kernel(dt):
    @sycl.kernel
    def complex_groups(nd: sycl.nd_item[1], x: sycl.global_ptr[dt], out: sycl.global_ptr[dt],
                       sg_info: sycl.global_ptr[np.int64], n: np.int64):
        g, sg = nd.get_group(), nd.get_sub_group()
        i = nd.get_global_id(0)
        z = x[i]
        out[0 * n + i] = sycl.reduce_over_group(g, z, sycl.plus())
        out[1 * n + i] = sycl.reduce_over_group(g, z, sycl.multiplies())
        out[2 * n + i] = sycl.reduce_over_group(g, z, 1j, sycl.multiplies())
        out[3 * n + i] = sycl.inclusive_scan_over_group(g, z, sycl.plus())
        out[4 * n + i] = sycl.inclusive_scan_over_group(g, z, sycl.multiplies())
        out[5 * n + i] = sycl.exclusive_scan_over_group(g, z, sycl.multiplies())
        out[6 * n + i] = sycl.exclusive_scan_over_group(g, z, 2 - 1j, sycl.plus())
        out[7 * n + i] = sycl.group_broadcast(g, z, 3)
        start = x + nd.get_group(0) * nd.get_local_range(0)
        end = start + nd.get_local_range(0)
        out[8 * n + i] = sycl.joint_reduce(g, start, end, sycl.multiplies())
        out[9 * n + i] = sycl.joint_reduce(g, start, end, 0.5j, sycl.plus())
        out[10 * n + i] = sycl.reduce_over_group(sg, z, sycl.plus())
        out[11 * n + i] = sycl.reduce_over_group(sg, z, sycl.multiplies())
        out[12 * n + i] = sycl.inclusive_scan_over_group(sg, z, sycl.multiplies())
        out[13 * n + i] = sycl.exclusive_scan_over_group(sg, z, sycl.plus())
        out[14 * n + i] = sycl.select_from_group(sg, z, 0)
        out[15 * n + i] = sycl.shift_group_left(sg, z, 1)
        sg_info[2 * i] = sg.get_local_linear_range()
        sg_info[2 * i + 1] = sg.get_local_linear_id()
    return complex_groups


@sycl.kernel
def joint_scans(nd: sycl.nd_item[1], x: sycl.global_ptr[np.complex64],
                prods: sycl.global_ptr[np.complex64], sums: sycl.global_ptr[np.complex128]):
    g = nd.get_group()
    base = nd.get_group(0) * 100
    sycl.joint_inclusive_scan(g, x + base, x + base + 100, prods + base, sycl.multiplies())
    sycl.joint_exclusive_scan(g, x + base, x + base + 100, sums + base, 1 + 1j, sycl.plus())


GROUP_KERNELS = {dt: make_group_kernel(dt) for dt in DTYPES}


def expected_group_rows(t, sg_size, lane):
    """NumPy's results for the rows of ``complex_groups``: ``t`` is (groups, wg) in
    complex128; sub-groups are ``sg_size`` work-items in a row of the work-group."""
    groups, wg = t.shape
    whole = lambda v: np.repeat(v[:, None], wg, axis=1)                      # noqa: E731
    prod = np.cumprod(t, axis=1)
    before = np.concatenate([np.ones((groups, 1)), prod[:, :-1]], axis=1)
    sums = np.cumsum(t, axis=1)
    rows = {0: whole(t.sum(1)), 1: whole(prod[:, -1]), 2: whole(1j * prod[:, -1]), 3: sums,
            4: prod, 5: before, 6: 2 - 1j + sums - t, 7: whole(t[:, 3]), 8: whole(prod[:, -1]),
            9: whole(0.5j + t.sum(1))}
    sg = t.reshape(groups, wg // sg_size, sg_size)
    each = lambda v: np.repeat(v[..., None], sg_size, axis=2).reshape(groups, wg)  # noqa: E731
    rows[10] = each(sg.sum(2))
    rows[11] = each(np.prod(sg, axis=2))
    rows[12] = np.cumprod(sg, axis=2).reshape(groups, wg)
    rows[13] = (np.cumsum(sg, axis=2) - sg).reshape(groups, wg)
    rows[14] = each(sg[..., 0])
    left = np.where(lane + 1 < sg_size, np.roll(sg, -1, axis=2).reshape(groups, wg), np.nan)
    rows[15] = left                        # the last lane's value is unspecified (SYCL)
    return rows


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_group_algorithms_with_plus_and_multiplies_match_numpy(queue, dt):
    """Sums within n eps of the terms' sizes (a device adds in its own order), products
    within 4 n eps (multiplied in local id order, as NumPy's cumprod does), moves exact."""
    _skip_without_fp64(queue, dt)
    rng = np.random.default_rng(42)
    wg, groups = 64, 3
    n = wg * groups
    x = unit_circle(rng, n, dt)
    out = sycl.malloc_shared(16 * n, dt, queue)
    info = sycl.malloc_shared(2 * n, np.int64, queue)
    queue.parallel_for(sycl.nd_range(n, wg), GROUP_KERNELS[dt], _usm(queue, x), out, info,
                       n).wait()
    got = out.to_numpy().reshape(16, groups, wg)
    sg_sizes, lanes = info.to_numpy().reshape(n, 2).T
    sg_size = int(sg_sizes[0])
    assert (sg_sizes == sg_size).all() and wg % sg_size == 0, "sub-groups of one size here"
    want = expected_group_rows(x.astype(np.complex128).reshape(groups, wg), sg_size,
                               lanes.reshape(groups, wg))
    for row, w in want.items():
        g = got[row]
        known = ~np.isnan(w)
        if not known.any():          # a shift on sub-groups of one work-item
            continue
        size = np.abs(w[known]).max()
        bound = product_bound(dt, wg) if row in (1, 2, 4, 5, 8, 11, 12) else \
            sum_bound(np.abs(x[:wg]), dt, wg) if row in (0, 3, 6, 9, 10, 13) else 0
        err = np.abs(g[known] - w[known]).max()
        assert err <= bound * max(size, 1), f"row {row}: error {err} above {bound * size}"
    # Every work-item gets the same bits of a group's reduction.
    for row in (0, 1, 2, 8, 9):
        assert all(len(set(got[row, k].tolist())) == 1 for k in range(groups)), row


def test_joint_scans_of_complex_values(queue):
    _skip_without_fp64(queue, np.complex128)
    rng = np.random.default_rng(43)
    x = unit_circle(rng, 200, np.complex64)
    prods = sycl.malloc_shared(200, np.complex64, queue)
    sums = sycl.malloc_shared(200, np.complex128, queue)
    queue.parallel_for(sycl.nd_range(2 * 32, 32), joint_scans, _usm(queue, x), prods,
                       sums).wait()
    t = x.astype(np.complex128).reshape(2, 100)
    want_p = np.cumprod(t, axis=1).ravel()
    want_s = (1 + 1j + np.cumsum(t, axis=1) - t).ravel()
    assert np.abs(prods.to_numpy() - want_p).max() <= product_bound(np.complex64, 100)
    assert np.abs(sums.to_numpy() - want_s).max() <= sum_bound(np.abs(x[:100]), np.complex64, 100)


@pytest.mark.parametrize("call, operator", [
    ("sycl.reduce_over_group(nd.get_group(), z, sycl.minimum())", "minimum"),
    ("sycl.inclusive_scan_over_group(nd.get_group(), z, sycl.maximum())", "maximum"),
    ("sycl.joint_reduce(nd.get_group(), x, x + 4, sycl.bit_xor())", "bit_xor"),
    ("sycl.reduce_over_group(nd.get_sub_group(), z, sycl.logical_or())", "logical_or"),
])
def test_other_group_operators_on_complex_values_are_compile_errors(tmp_path, call, operator):
    kfn, path = _kernel_from_file(tmp_path, "complex_group_error",
                                  "def k(nd: sycl.nd_item[1], x: sycl.global_ptr[np.complex64]):\n"
                                  "    z = x[0]\n"
                                  f"    x[1] = {call}\n")
    with pytest.raises(compile_error) as info:
        kfn.ir_module()
    err = info.value
    assert isinstance(err, sycl.exception) and err.code() == sycl.errc.build
    assert (err.filename, err.lineno) == (path, 7)
    assert f"sycl.{operator}() does not combine complex64 values: complex numbers take " \
           "sycl.plus() or sycl.multiplies()" in err.msg


def test_other_reduction_operators_on_complex_values_are_errors(tmp_path, queue):
    out = sycl.malloc_shared(1, np.complex128, queue)
    with pytest.raises(sycl.exception) as info:
        sycl.reduction(out, sycl.maximum())
    assert info.value.code() == sycl.errc.invalid
    assert "sycl.maximum() does not combine complex128 values" in str(info.value)
    kfn, path = _kernel_from_file(tmp_path, "complex_reducer_error",
                                  "def k(it: sycl.item[1], r: sycl.reducer[np.complex64, "
                                  "sycl.minimum]):\n    r.combine(1j)\n")
    with pytest.raises(compile_error) as info:
        kfn.ir_module()
    assert "reducer 'r': sycl.minimum() does not combine complex64 values" in info.value.msg
    assert info.value.filename == path


def _kernel_from_file(folder, name, text):
    """A kernel ``k`` defined in a file (its fifth line is the ``def``), as users write
    kernels, so errors carry its file and line."""
    import importlib.util
    path = folder / f"{name}.py"
    path.write_text("import numpy as np\nimport pysycl as sycl\n\n@sycl.kernel\n" + text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.k, str(path)


def test_ptx_of_complex_group_algorithms_needs_no_gpu():
    """The CUDA images build without a device: parts through warp shuffles and shared
    memory, products by broadcast."""
    from pysycl.bundle import aot
    kb = aot.compile_modules([sys.modules[__name__]], ["nvptx64-sm_90"], "executable")
    ptx = {kid.get_name().rsplit(".", 1)[1]: img.asm["ptx"] for img in kb
           for kid in img.get_kernel_ids()}
    assert {"complex_groups", "joint_scans", "complex_reductions"} <= set(ptx)
    assert "shfl.sync" in ptx["complex_groups"] and "bar.sync" in ptx["complex_groups"]
