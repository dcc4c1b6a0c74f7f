"""``sycl.reduction`` and ``sycl.reducer`` (SYCL 2020 4.10.6) end to end on every device,
against NumPy on random data: float sums within a bound that grows with the length
(any summation order), everything else exact."""
import numpy as np
import pytest

import pysycl as sycl

RNG_SEED = 20260418
INIT = sycl.property.reduction.initialize_to_identity()


@pytest.fixture
def rng():
    return np.random.default_rng(RNG_SEED)


def usm(queue, host):
    a = sycl.malloc_shared(host.shape, host.dtype, queue)
    np.asarray(a)[...] = host
    return a


def sum_bound(x, start=0.0) -> float:
    """|error| of a float sum of ``x`` (and ``start``) in any order, to first order:
    (n + 1) ulp-sized roundings of partial sums at most sum(|x|) (Higham, 4.2)."""
    eps = np.finfo(x.dtype).eps
    return (x.size + 1) * eps * (np.abs(x.astype(np.float64)).sum() + abs(start))


# Kernels -----------------------------------------------------------------------------------
@sycl.kernel
def sum_f32(it: sycl.item[1], x: sycl.global_ptr[np.float32], s: sycl.reducer[np.float32]):
    s += x[it.get_id(0)]


@sycl.kernel
def sum_f64(it: sycl.item[1], x: sycl.global_ptr[np.float64], s: sycl.reducer[np.float64]):
    s.combine(x[it.get_id(0)])


@sycl.kernel
def nd_stats(nd: sycl.nd_item[1], x: sycl.global_ptr[np.int32], s: sycl.reducer[np.int64],
             lo: sycl.reducer[np.int32, sycl.minimum], hi: sycl.reducer[np.int32, sycl.maximum],
             f: sycl.reducer[np.float32]):
    v = x[nd.get_global_id(0)]
    s += v
    lo.combine(v)
    hi.combine(v)
    f += np.float32(v) * np.float32(0.5)


_combine_kernels = {}


def combine_kernel(dtype, op):
    """``r.combine(x[i])`` over an nd_range, for reducer[dtype, op]."""
    key = (np.dtype(dtype), op)
    if key not in _combine_kernels:
        dt = np.dtype(dtype)

        @sycl.kernel(name=f"e2e_reduce_{dt.name}_{op.__name__}")
        def k(nd: sycl.nd_item[1], x: sycl.global_ptr[dt], r: sycl.reducer[dt, op]):
            r.combine(x[nd.get_global_id(0)])
        _combine_kernels[key] = k
    return _combine_kernels[key]


# Float sums ---------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 1000, 8193, 100003])
def test_float32_sum_over_a_range(queue, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    dx, total = usm(queue, x), usm(queue, np.array([1.5], np.float32))
    queue.parallel_for(n, sum_f32, dx, sycl.reduction(total, sycl.plus())).wait()
    want = x.astype(np.float64).sum() + 1.5
    assert abs(float(np.asarray(total)[0]) - want) <= sum_bound(x, 1.5)


def test_float64_sum_with_initialize_to_identity(queue, rng):
    require(queue.get_device(), sycl.aspect.fp64)
    n = 50001
    x = rng.uniform(-1e3, 1e3, n)
    dx, total = usm(queue, x), usm(queue, np.array([1e9]))
    queue.parallel_for(n, sum_f64, dx, sycl.reduction(total, sycl.plus(), INIT)).wait()
    assert abs(np.asarray(total)[0] - x.sum()) <= sum_bound(x)


@pytest.mark.parametrize("wg", [1, 7, 16, 100, 256])
def test_several_reducers_over_work_groups_of_any_size(queue, rng, wg):
    groups = 37
    n = wg * groups
    x = rng.integers(-2**20, 2**20, n, dtype=np.int32)
    dx = usm(queue, x)
    s, lo, hi, f = (usm(queue, np.array([v], t)) for v, t in
                    ((5, np.int64), (0, np.int32), (0, np.int32), (0, np.float32)))
    queue.parallel_for(sycl.nd_range(n, wg), nd_stats, dx, sycl.reduction(s, sycl.plus()),
                       sycl.reduction(lo, sycl.minimum(), INIT),
                       sycl.reduction(hi, sycl.maximum(), INIT),
                       sycl.reduction(f, sycl.plus(), INIT)).wait()
    assert np.asarray(s)[0] == x.astype(np.int64).sum() + 5
    assert np.asarray(lo)[0] == x.min() and np.asarray(hi)[0] == x.max()
    half = x.astype(np.float32) * np.float32(0.5)
    assert abs(float(np.asarray(f)[0]) - half.astype(np.float64).sum()) <= sum_bound(half)


# Every operator -----------------------------------------------------------------------------
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64]
CASES = ([(sycl.plus, t) for t in INTS + [np.bool_]] +
         [(sycl.multiplies, t) for t in (np.int8, np.int32, np.int64, np.uint32, np.bool_)] +
         [(op, t) for op in (sycl.minimum, sycl.maximum)
          for t in INTS + [np.float16, np.float32, np.float64, np.bool_]] +
         [(op, t) for op in (sycl.bit_and, sycl.bit_or, sycl.bit_xor)
          for t in (np.int8, np.int32, np.int64, np.uint16, np.uint64, np.bool_)] +
         [(op, t) for op in (sycl.logical_and, sycl.logical_or)
          for t in (np.bool_, np.int32, np.uint8)] +
         [(sycl.plus, np.float16), (sycl.multiplies, np.float32)])


def _data(rng, op, dt, n):
    if dt.kind == "b":
        # mostly true for and/multiplies/minimum, mostly false for the others, so the
        # answer depends on every element
        p = 0.999 if op in (sycl.bit_and, sycl.logical_and, sycl.multiplies, sycl.minimum) \
            else 0.001
        return rng.random(n) < p
    if op is sycl.multiplies:
        if dt.kind == "f":
            return rng.uniform(0.999, 1.001, n).astype(dt)
        return rng.choice(np.array([1, 1, 1, 3, 5, 7, 127], dt), n)   # odd: never 0
    if op in (sycl.logical_and, sycl.logical_or):
        keep = 0.999 if op is sycl.logical_and else 0.001
        return np.where(rng.random(n) < keep, rng.integers(1, 100, n), 0).astype(dt)
    if op is sycl.plus and dt.kind == "f":
        return rng.integers(0, 3, n).astype(dt)   # float16 sums stay exact
    if dt.kind == "f":
        return rng.standard_normal(n).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)


def _numpy_reduce(op, x):
    dt = x.dtype
    if op is sycl.plus:
        return np.logical_or.reduce(x) if dt.kind == "b" else np.add.reduce(x, dtype=dt)
    if op is sycl.multiplies:
        return np.logical_and.reduce(x) if dt.kind == "b" else np.multiply.reduce(x, dtype=dt)
    ufunc = {sycl.minimum: np.minimum, sycl.maximum: np.maximum, sycl.bit_and: np.bitwise_and,
             sycl.bit_or: np.bitwise_or, sycl.bit_xor: np.bitwise_xor,
             sycl.logical_and: np.logical_and, sycl.logical_or: np.logical_or}[op]
    return dt.type(ufunc.reduce(x))


@pytest.mark.parametrize("op,dtype", CASES,
                         ids=[f"{o.__name__}-{np.dtype(t).name}" for o, t in CASES])
def test_operator_on_type(queue, rng, op, dtype):
    dt = np.dtype(dtype)
    if dt.itemsize == 8 and dt.kind in "iuf":
        require(queue.get_device(), sycl.aspect.atomic64)
    if dt == np.float16:
        require(queue.get_device(), sycl.aspect.fp16)
    wg, groups = 100, 23                  # several sub-groups per work-group, not a power of 2
    n = wg * groups
    x = _data(rng, op, dt, n)
    out = usm(queue, np.zeros(1, dt))
    queue.parallel_for(sycl.nd_range(n, wg), combine_kernel(dt, op), usm(queue, x),
                       sycl.reduction(out, op(), INIT)).wait()
    got, want = np.asarray(out)[0], _numpy_reduce(op, x)
    if op is sycl.multiplies and dt.kind == "f":
        assert abs(got - want) <= n * 2 * np.finfo(dt).eps * abs(want)
    else:
        assert got == want, (got, want)


def test_known_identities_match_sycl():
    assert sycl.known_identity(sycl.plus(), np.float32) == 0
    assert sycl.known_identity(sycl.multiplies, np.int16) == 1
    assert sycl.known_identity(sycl.minimum(), np.float64) == np.inf
    assert sycl.known_identity(sycl.maximum(), np.int8) == -128
    assert sycl.known_identity(sycl.bit_and(), np.uint16) == 0xFFFF
    assert sycl.known_identity(sycl.bit_and(), np.int32) == -1
    assert sycl.known_identity(sycl.logical_and(), np.bool_)
    assert not sycl.has_known_identity(sycl.bit_or(), np.float32)
    assert sycl.plus()(2, 3) == 5 and sycl.minimum()(4, 1) == 1
    assert sycl.logical_or()(np.int32(0), np.int32(7)) == 1


# Memory, identities, properties --------------------------------------------------------------
def test_result_keeps_its_old_value_unless_initialized(queue, rng):
    n = 4097
    x = rng.integers(-50, 50, n).astype(np.int32)
    dx = usm(queue, x)
    total = usm(queue, np.array([1000], np.int32))
    red = sycl.reduction(total, sycl.plus())          # reused across launches
    k = combine_kernel(np.int32, sycl.plus)
    for _ in range(3):
        queue.parallel_for(sycl.nd_range(n, 17), k, dx, red).wait()
    assert np.asarray(total)[0] == 1000 + 3 * x.sum()
    queue.parallel_for(sycl.nd_range(n, 17), k, dx, sycl.reduction(total, sycl.plus(),
                                                                   INIT)).wait()
    assert np.asarray(total)[0] == x.sum()


@sycl.kernel
def min_with_identity(it: sycl.item[1], x: sycl.global_ptr[np.float32],
                      m: sycl.reducer[np.float32, sycl.minimum], ident: sycl.global_ptr[np.float32]):
    m.combine(x[it.get_id(0)])
    if it.get_id(0) == 0:
        ident[0] = m.identity()


def test_user_identity_is_the_reducers(queue, rng):
    n = 999
    x = rng.uniform(0, 100, n).astype(np.float32)
    m, ident = usm(queue, np.array([7.0], np.float32)), usm(queue, np.zeros(1, np.float32))
    queue.parallel_for(n, min_with_identity, usm(queue, x),
                       sycl.reduction(m, 1e30, sycl.minimum(), INIT), ident).wait()
    assert np.asarray(m)[0] == x.min()
    assert np.asarray(ident)[0] == np.float32(1e30)


@sycl.kernel
def histogram(it: sycl.item[1], x: sycl.global_ptr[np.int32], h: sycl.reducer[np.int32, 16],
              top: sycl.reducer[np.int32, 16, sycl.maximum]):
    v = x[it.get_id(0)]
    h[v % 16] += 1
    top[v % 16].combine(v)


@sycl.kernel
def histogram_and_max(it: sycl.item[1], x: sycl.global_ptr[np.int32],
                      h: sycl.reducer[np.int32, 16], top: sycl.reducer[np.int32, sycl.maximum]):
    v = x[it.get_id(0)]
    h[v % 16] += 1
    top.combine(v)


def test_span_reductions(queue, rng):
    n = 30011
    x = rng.integers(0, 10**6, n).astype(np.int32)
    h = usm(queue, np.arange(16, dtype=np.int32))
    top = usm(queue, np.zeros(16, np.int32))
    queue.parallel_for(n, histogram, usm(queue, x), sycl.reduction(sycl.span(h, 16), sycl.plus()),
                       sycl.reduction(sycl.span(top), sycl.maximum(), INIT)).wait()
    np.testing.assert_array_equal(np.asarray(h), np.bincount(x % 16, minlength=16) + np.arange(16))
    want = np.full(16, np.iinfo(np.int32).min, np.int32)
    np.maximum.at(want, x % 16, x)
    np.testing.assert_array_equal(np.asarray(top), want)


def test_buffer_reduction(queue, rng):
    n = 12345
    x = rng.standard_normal(n).astype(np.float32)
    host = np.array([2.0], np.float32)
    with sycl.buffer(x) as bx, sycl.buffer(host) as bt:
        def cgf(cgh):
            @sycl.kernel
            def buffer_sum(it: sycl.item[1], a: sycl.accessor[np.float32, 1, sycl.read_only],
                           s: sycl.reducer[np.float32]):
                s += a[it]
            cgh.parallel_for(n, buffer_sum, sycl.accessor(bx, cgh, sycl.read_only),
                             sycl.reduction(bt, cgh, sycl.plus()))
        queue.submit(cgf).wait()
    assert abs(float(host[0]) - (x.astype(np.float64).sum() + 2.0)) <= sum_bound(x, 2.0)


@pytest.mark.parametrize("init", [False, True], ids=["combined", "identity"])
def test_reductions_into_sub_buffers(queue, rng, init):
    """A sub-buffer's result goes to its own elements of the parent (it went to the
    parent's first ones, starting from their value), and only there."""
    n = 5001
    x = rng.integers(0, 10**6, n).astype(np.int32)
    props = [INIT] if init else []
    start = rng.integers(-50, 50, 40).astype(np.int32)
    host = start.copy()
    with sycl.buffer(host) as parent:
        one = sycl.buffer(parent, sycl.id(5), sycl.range(1))
        span16 = sycl.buffer(parent, sycl.id(19), sycl.range(16))
        queue.submit(lambda cgh: cgh.parallel_for(
            n, histogram_and_max, usm(queue, x), sycl.reduction(span16, cgh, sycl.plus(), *props),
            sycl.reduction(one, cgh, sycl.maximum(), *props))).wait()
    want = start.copy()
    want[19:35] = np.bincount(x % 16, minlength=16) + (0 if init else start[19:35])
    want[5] = x.max() if init else max(x.max(), start[5])
    np.testing.assert_array_equal(host, want)


def test_reductions_before_the_kernel_as_cpp_writes_them(queue, rng):
    n = 4000
    x = rng.integers(-9, 9, n).astype(np.int32)
    dx = usm(queue, x)
    s, lo, hi, f = (usm(queue, np.zeros(1, t)) for t in (np.int64, np.int32, np.int32,
                                                          np.float32))
    reds = [sycl.reduction(s, sycl.plus(), INIT), sycl.reduction(lo, sycl.minimum(), INIT),
            sycl.reduction(hi, sycl.maximum(), INIT), sycl.reduction(f, sycl.plus(), INIT)]
    queue.submit(lambda cgh: cgh.parallel_for(sycl.nd_range(n, 40), *reds, nd_stats, dx)).wait()
    assert (np.asarray(s)[0], np.asarray(lo)[0], np.asarray(hi)[0]) == (x.sum(), x.min(), x.max())
    np.asarray(s)[0] = 0
    queue.parallel_for(sycl.nd_range(n, 40), *reds, nd_stats, dx).wait()
    assert np.asarray(s)[0] == x.sum()


@sycl.kernel
def positives(it: sycl.item[1], x: sycl.global_ptr[np.int32], count: sycl.reducer[np.int32],
              firsts: sycl.reducer[np.int64]):
    i = it.get_id(0)
    if x[i] <= 0:
        return
    count += 1
    for k in range(8):          # the first odd value among x[i], x[i]+1, ...
        if (x[i] + k) % 2 == 1:
            firsts += x[i] + k
            return
    firsts += -1


def test_early_returns_still_combine(queue, rng):
    n = 10007
    x = rng.integers(-100, 100, n).astype(np.int32)
    c, fs = usm(queue, np.zeros(1, np.int32)), usm(queue, np.zeros(1, np.int64))
    queue.parallel_for(n, positives, usm(queue, x), sycl.reduction(c, sycl.plus()),
                       sycl.reduction(fs, sycl.plus())).wait()
    pos = x[x > 0].astype(np.int64)
    assert np.asarray(c)[0] == pos.size
    assert np.asarray(fs)[0] == (pos + (pos % 2 == 0)).sum()


@sycl.kernel
def sum_2d(it: sycl.item[2], x: sycl.global_ptr[np.int64], s: sycl.reducer[np.int64]):
    s += x[it.get_id(0) * it.get_range(1) + it.get_id(1)] * (it.get_id(1) + 1)


def test_two_dimensional_range(queue, rng):
    rows, cols = 37, 9001            # rows of the native CPU's groups end part-way
    x = rng.integers(-1000, 1000, (rows, cols)).astype(np.int64)
    s = usm(queue, np.zeros(1, np.int64))
    queue.parallel_for(sycl.range(rows, cols), sum_2d, usm(queue, x),
                       sycl.reduction(s, sycl.plus())).wait()
    assert np.asarray(s)[0] == (x * np.arange(1, cols + 1)).sum()


@sycl.kernel
def tiled_sum(nd: sycl.nd_item[1], x: sycl.global_ptr[np.int32],
              tile: sycl.local_accessor[np.int32, 1], s: sycl.reducer[np.int32]):
    lid = nd.get_local_id(0)
    n = nd.get_local_range(0)
    tile[lid] = x[nd.get_global_id(0)]
    sycl.group_barrier(nd.get_group())
    s += tile[(lid + 1) % n] * (lid + 1)


def test_reducer_in_a_kernel_with_barriers_and_local_memory(queue, rng):
    wg, groups = 24, 50
    x = rng.integers(-100, 100, wg * groups).astype(np.int32)
    s = usm(queue, np.zeros(1, np.int32))
    queue.submit(lambda cgh: cgh.parallel_for(
        sycl.nd_range(wg * groups, wg), tiled_sum, usm(queue, x),
        cgh.local_accessor(np.int32, (wg,)), sycl.reduction(s, sycl.plus()))).wait()
    t = x.reshape(groups, wg)
    assert np.asarray(s)[0] == (np.roll(t, -1, axis=1) * np.arange(1, wg + 1)).sum()


def require(device, *aspects):
    for a in aspects:
        if not device.has(a):
            pytest.skip(f"{device.name} lacks aspect {a.name}")


# Errors (no device work: the native CPU) ----------------------------------------------------
@pytest.fixture
def native():
    return sycl.queue([d for d in sycl.device.get_devices() if d.backend.name == "native_cpu"][0])


def test_operator_mismatch_names_both(native):
    x, s = usm(native, np.ones(4, np.float32)), usm(native, np.zeros(1, np.float32))
    with pytest.raises(sycl.exception) as e:
        native.parallel_for(4, sum_f32, x, sycl.reduction(s, sycl.maximum()))
    assert e.value.code() == sycl.errc.kernel_argument
    assert "sycl.maximum()" in str(e.value) and "sycl.plus()" in str(e.value)


def test_type_and_extent_mismatches(native):
    x = usm(native, np.ones(4, np.float32))
    with pytest.raises(sycl.exception, match="float64") as e:
        native.parallel_for(4, sum_f32, x, sycl.reduction(usm(native, np.zeros(1)), sycl.plus()))
    assert e.value.code() == sycl.errc.kernel_argument
    h = usm(native, np.zeros(8, np.int32))
    with pytest.raises(sycl.exception, match="span of 16") as e:
        native.parallel_for(4, histogram, usm(native, np.ones(4, np.int32)),
                            sycl.reduction(sycl.span(h, 8), sycl.plus()),
                            sycl.reduction(sycl.span(h, 8), sycl.maximum()))
    assert e.value.code() == sycl.errc.kernel_argument


def test_reduction_arguments_are_checked(native):
    with pytest.raises(sycl.exception, match="needs integers") as e:
        sycl.reduction(usm(native, np.zeros(1, np.float32)), sycl.bit_and())
    assert e.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception, match="operator"):
        sycl.reduction(usm(native, np.zeros(1, np.float32)), 0.0)
    with pytest.raises(sycl.exception, match="does not fit"):
        sycl.reduction(usm(native, np.zeros(1, np.int8)), 1000, sycl.plus())
    with pytest.raises(sycl.exception, match="handler"):
        sycl.reduction(sycl.buffer(np.zeros(1, np.float32)), sycl.plus())


def test_reducer_misuse_is_a_compile_error(native):
    x, s = usm(native, np.ones(4, np.float32)), usm(native, np.zeros(1, np.float32))

    @sycl.kernel
    def no_operator(it: sycl.item[1], x: sycl.global_ptr[np.float32], m: sycl.reducer[np.float32]):
        m.combine(x[it.get_id(0)])

    @sycl.kernel
    def subtracts(it: sycl.item[1], x: sycl.global_ptr[np.float32], m: sycl.reducer[np.float32]):
        m -= x[it.get_id(0)]

    @sycl.kernel
    def assigns(it: sycl.item[1], x: sycl.global_ptr[np.float32], m: sycl.reducer[np.float32]):
        m += x[it.get_id(0)]
        m = x[0]   # noqa: F841

    @sycl.kernel
    def wrong_operator(it: sycl.item[1], x: sycl.global_ptr[np.float32],
                       m: sycl.reducer[np.float32, sycl.minimum]):
        m += x[it.get_id(0)]

    @sycl.kernel
    def reads(it: sycl.item[1], x: sycl.global_ptr[np.float32], m: sycl.reducer[np.float32]):
        x[0] = m

    # combine() only: the launch's reduction gives the operator; compiled on its own
    # (a kernel bundle) the kernel needs it in the annotation.
    native.parallel_for(4, no_operator, x, sycl.reduction(s, sycl.maximum(), INIT)).wait()
    assert np.asarray(s)[0] == 1
    with pytest.raises(sycl.compile_error, match=r"sycl.reducer\[np.float32, sycl.plus\]"):
        sycl.get_kernel_bundle(native.get_context(), sycl.bundle_state.executable,
                               kernel=no_operator)
    for k, what in ((subtracts, "takes +=, *=, &=, |=, ^= or combine"),
                    (assigns, "cannot assign to reducer 'm'"),
                    (wrong_operator, "combines with sycl.minimum()"),
                    (reads, "cannot use a sycl.reducer as a float32 value")):
        with pytest.raises(sycl.compile_error) as e:
            native.parallel_for(4, k, x, sycl.reduction(s, sycl.plus()))
        assert what in str(e.value), str(e.value)


def test_ahead_of_time_leaves_out_kernels_whose_operator_comes_from_the_launch(tmp_path,
                                                                              monkeypatch):
    import importlib
    from pysycl.bundle import aot
    (tmp_path / "aot_reducers_mod.py").write_text(
        "import numpy as np\nimport pysycl as sycl\n\n\n"
        "@sycl.kernel\n"
        "def named(it: sycl.item[1], x: sycl.global_ptr[np.int32], r: sycl.reducer[np.int32]):\n"
        "    r += x[it.get_id(0)]\n\n\n"
        "@sycl.kernel\n"
        "def from_launch(it: sycl.item[1], x: sycl.global_ptr[np.int32],\n"
        "                r: sycl.reducer[np.int32]):\n"
        "    r.combine(x[it.get_id(0)])\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("aot_reducers_mod")
    with pytest.warns(RuntimeWarning, match="from_launch is left out"):
        kb = aot.compile_modules([mod], ["native_cpu"], "input")
    assert {k.get_name() for k in kb.get_kernel_ids()} == {"aot_reducers_mod.named"}
