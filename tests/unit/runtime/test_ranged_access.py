"""Ranged accessors (a box of ``range`` elements at ``offset``) on every path that
takes one, in 1, 2 and 3 dimensions, checked against NumPy slicing of random data:
handler.copy/fill/memcpy in both directions and between accessors, kernels, host
tasks, host_accessor, update_host, write-back, and no_init keeping what lies outside
the range (SYCL 2020 4.7.6.8, 4.9.4.3)."""
import numpy as np
import pytest

from runtime_api import sycl

# (buffer shape, range, offset): boxes with gaps between rows, boxes whose inner
# dimensions are whole (one run per outer index, or one run in all), single elements.
CASES = [
    ((16,), (5,), (7,)),
    ((6, 7), (3, 4), (2, 1)),
    ((6, 7), (3, 7), (2, 0)),
    ((6, 7), (1, 5), (5, 2)),
    ((4, 5, 6), (2, 3, 4), (1, 2, 1)),
    ((4, 5, 6), (2, 2, 6), (1, 1, 0)),
    ((4, 5, 6), (2, 5, 6), (1, 0, 0)),
    ((4, 5, 6), (3, 1, 2), (0, 4, 3)),
]
IDS = [f"{len(s)}d-{'x'.join(map(str, r))}@{','.join(map(str, o))}" for s, r, o in CASES]


def _box(rng, off):
    return tuple(slice(o, o + r) for o, r in zip(off, rng))


def _data(shape, seed, dtype=np.int32):
    return np.random.default_rng(seed).integers(-1000, 1000, shape).astype(dtype)


@pytest.mark.parametrize("shape,rng,off", CASES, ids=IDS)
def test_copy_ranged_accessor_to_host(queue, shape, rng, off):
    a = _data(shape, 1)
    out = np.zeros(int(np.prod(rng)), np.int32)
    with sycl.buffer(a.copy()) as b:
        queue.submit(lambda cgh: cgh.copy(
            sycl.accessor(b, cgh, sycl.range(*rng), sycl.id(*off), sycl.read_only),
            out)).wait()
    np.testing.assert_array_equal(out, a[_box(rng, off)].ravel())


@pytest.mark.parametrize("shape,rng,off", CASES, ids=IDS)
def test_copy_host_to_ranged_accessor_keeps_the_rest(queue, shape, rng, off):
    a, src = _data(shape, 2), _data(rng, 3)
    got = a.copy()
    with sycl.buffer(got) as b:
        queue.submit(lambda cgh: cgh.copy(
            src, sycl.accessor(b, cgh, sycl.range(*rng), sycl.id(*off), sycl.write_only))
        ).wait()
    ref = a.copy()
    ref[_box(rng, off)] = src
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("shape,rng,off", CASES, ids=IDS)
def test_copy_between_ranged_accessors(queue, shape, rng, off):
    """Same box shape at another offset of another buffer, and the box into a 1-D
    ranged accessor (element order: row-major in each accessor's range)."""
    a, d = _data(shape, 4), _data(shape, 5)
    off2 = tuple(s - r for s, r in zip(shape, rng))          # the far corner
    n = int(np.prod(rng))
    flat = _data(n + 9, 6)
    with sycl.buffer(a) as ba, sycl.buffer(d) as bd, sycl.buffer(flat.copy()) as bf:
        queue.submit(lambda cgh: cgh.copy(
            sycl.accessor(ba, cgh, sycl.range(*rng), sycl.id(*off), sycl.read_only),
            sycl.accessor(bd, cgh, sycl.range(*rng), sycl.id(*off2), sycl.write_only)))
        queue.submit(lambda cgh: cgh.copy(
            sycl.accessor(ba, cgh, sycl.range(*rng), sycl.id(*off), sycl.read_only),
            sycl.accessor(bf, cgh, sycl.range(n), sycl.id(4), sycl.read_write)))
        queue.wait()
        with sycl.host_accessor(bd, sycl.read_only) as got_d, \
                sycl.host_accessor(bf, sycl.read_only) as got_f:
            ref_d = d.copy()
            ref_d[_box(rng, off2)] = a[_box(rng, off)]
            np.testing.assert_array_equal(got_d, ref_d)
            ref_f = flat.copy()
            ref_f[4:4 + n] = a[_box(rng, off)].ravel()
            np.testing.assert_array_equal(got_f, ref_f)


@pytest.mark.parametrize("shape,rng,off", CASES, ids=IDS)
def test_fill_ranged_accessor_stays_inside(queue, shape, rng, off):
    a = _data(shape, 7)
    got = a.copy()
    with sycl.buffer(got) as b:
        queue.submit(lambda cgh: cgh.fill(
            sycl.accessor(b, cgh, sycl.range(*rng), sycl.id(*off), sycl.write_only),
            np.int32(-7))).wait()
    ref = a.copy()
    ref[_box(rng, off)] = -7
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("shape,rng,off", CASES, ids=IDS)
def test_partial_count_follows_the_range_row_major(queue, shape, rng, off):
    """copy/fill/memcpy with a count below the range take its first elements."""
    n = int(np.prod(rng))
    k = max(1, n - 3)
    a = _data(shape, 8)
    src = _data(n, 9)
    got_copy, got_fill, got_mem = a.copy(), a.copy(), a.copy()
    with sycl.buffer(got_copy) as bc, sycl.buffer(got_fill) as bf, \
            sycl.buffer(got_mem) as bm:
        queue.submit(lambda cgh: cgh.copy(
            src, sycl.accessor(bc, cgh, sycl.range(*rng), sycl.id(*off), sycl.write_only), k))
        queue.submit(lambda cgh: cgh.fill(
            sycl.accessor(bf, cgh, sycl.range(*rng), sycl.id(*off), sycl.write_only), 5, k))
        queue.submit(lambda cgh: cgh.memcpy(
            sycl.accessor(bm, cgh, sycl.range(*rng), sycl.id(*off), sycl.write_only), src,
            k * 4))
        queue.wait()
    for got, values in ((got_copy, src[:k]), (got_fill, np.full(k, 5)), (got_mem, src[:k])):
        ref = a.copy()
        view = ref[_box(rng, off)]
        flat = view.reshape(-1).copy()
        flat[:k] = values
        ref[_box(rng, off)] = flat.reshape(view.shape)
        np.testing.assert_array_equal(got, ref)


@sycl.kernel
def ranged_twice_1d(it: sycl.item[1], acc: sycl.accessor[np.int32, 1, sycl.read_write]):
    acc[it] = acc[it] * np.int32(2) + np.int32(1)


@sycl.kernel
def ranged_twice_2d(it: sycl.item[2], acc: sycl.accessor[np.int32, 2, sycl.read_write]):
    acc[it] = acc[it] * np.int32(2) + np.int32(1)


@sycl.kernel
def ranged_twice_3d(it: sycl.item[3], acc: sycl.accessor[np.int32, 3, sycl.read_write]):
    acc[it] = acc[it] * np.int32(2) + np.int32(1)


TWICE = {1: ranged_twice_1d, 2: ranged_twice_2d, 3: ranged_twice_3d}


@pytest.mark.parametrize("shape,rng,off", CASES, ids=IDS)
def test_kernel_indexes_from_the_offset(queue, shape, rng, off):
    a = _data(shape, 10)
    got = a.copy()
    with sycl.buffer(got) as b:
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(*rng), TWICE[len(shape)],
            sycl.accessor(b, cgh, sycl.range(*rng), sycl.id(*off), sycl.read_write))).wait()
    ref = a.copy()
    ref[_box(rng, off)] = ref[_box(rng, off)] * 2 + 1
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("shape,rng,off", CASES, ids=IDS)
def test_host_task_and_host_accessor_see_the_box(queue, shape, rng, off):
    a = _data(shape, 11)
    got = a.copy()
    seen = {}
    with sycl.buffer(got) as b:
        def cgf(cgh):
            acc = sycl.accessor(b, cgh, sycl.range(*rng), sycl.id(*off), sycl.read_write)

            def task():
                seen["box"] = np.array(acc[...])
                acc[...] = -np.asarray(acc[...])
            cgh.host_task(task)
        queue.submit(cgf)
        with sycl.host_accessor(b, sycl.range(*rng), sycl.id(*off), sycl.read_write) as v:
            assert v.shape == tuple(rng)
            np.testing.assert_array_equal(v, -a[_box(rng, off)])
            v[...] += 3
        h = sycl.host_accessor(b, sycl.range(*rng), sycl.id(*off), sycl.read_only)
        assert tuple(h.get_range()) == tuple(rng) and tuple(h.get_offset()) == tuple(off)
        assert h.get_count() == int(np.prod(rng))
        with pytest.raises(ValueError):
            h[(0,) * len(shape)] = 1                      # read_only view
        h.close()
    np.testing.assert_array_equal(seen["box"], a[_box(rng, off)])
    ref = a.copy()
    ref[_box(rng, off)] = 3 - a[_box(rng, off)]
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("shape,rng,off", CASES, ids=IDS)
def test_no_init_on_a_range_keeps_data_outside_it(queue, shape, rng, off):
    """DPC++'s ranged_no_init: no_init lets the command skip copying in only what it
    overwrites; after a device copy exists the rest must survive too."""
    a = _data(shape, 12)
    got = a.copy()
    with sycl.buffer(got) as b:
        # Make the device copy current first, then write the box through no_init.
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(*shape), TWICE[len(shape)], sycl.accessor(b, cgh, sycl.read_write)))
        queue.submit(lambda cgh: cgh.fill(sycl.accessor(
            b, cgh, sycl.range(*rng), sycl.id(*off), sycl.write_only, sycl.no_init), 7))
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(*rng), TWICE[len(shape)], sycl.accessor(
                b, cgh, sycl.range(*rng), sycl.id(*off), sycl.read_write,
                sycl.property_list(sycl.no_init) if hasattr(sycl, "property_list")
                else sycl.no_init)))
    ref = a * 2 + 1
    ref[_box(rng, off)] = 15
    np.testing.assert_array_equal(got, ref)


def test_no_init_over_the_whole_buffer_skips_the_copy_in(queue):
    a = _data((5, 6), 13)
    with sycl.buffer(a.copy()) as b:
        queue.submit(lambda cgh: cgh.copy(
            a * 3, sycl.accessor(b, cgh, sycl.write_only, sycl.no_init))).wait()
        with sycl.host_accessor(b, sycl.read_only) as v:
            np.testing.assert_array_equal(v, a * 3)


@pytest.mark.parametrize("shape,rng,off", CASES, ids=IDS)
def test_update_host_makes_the_array_current(queue, shape, rng, off):
    a = _data(shape, 14)
    host = a.copy()
    b = sycl.buffer(host)
    queue.submit(lambda cgh: cgh.parallel_for(
        sycl.range(*rng), TWICE[len(shape)],
        sycl.accessor(b, cgh, sycl.range(*rng), sycl.id(*off), sycl.read_write)))
    queue.submit(lambda cgh: cgh.update_host(
        sycl.accessor(b, cgh, sycl.range(*rng), sycl.id(*off), sycl.read_only))).wait()
    ref = a.copy()
    ref[_box(rng, off)] = ref[_box(rng, off)] * 2 + 1
    np.testing.assert_array_equal(host, ref)    # before close: the host array itself
    b.close()


def test_queue_update_host_shortcut(queue):
    data = np.random.default_rng(3).integers(-10 ** 6, 10 ** 6, 40).astype(np.int32)
    host = data.copy()
    b = sycl.buffer(host)
    queue.submit(lambda cgh: cgh.parallel_for(
        sycl.range(40), TWICE[1], sycl.accessor(b, cgh, sycl.read_write)))
    queue.update_host(sycl.accessor(b, sycl.read_only)).wait()   # a placeholder accessor
    np.testing.assert_array_equal(host, data * 2 + 1)             # before close
    b.close()


def test_accessor_queries_and_bad_ranges(queue):
    b = sycl.buffer(np.zeros((4, 6), np.float32))
    seen = {}

    def cgf(cgh):
        acc = sycl.accessor(b, cgh, sycl.range(2, 3), sycl.id(1, 2), sycl.read_only)
        seen.update(range=tuple(acc.get_range()), offset=tuple(acc.get_offset()),
                    count=acc.get_count(), size=acc.get_size())
        cgh.host_task(lambda: None)
    queue.submit(cgf).wait()
    assert seen == {"range": (2, 3), "offset": (1, 2), "count": 6, "size": 24}
    for rng, off in (((3, 3), (2, 0)), ((2, 7), (0, 0)), ((2,), (0,))):
        with pytest.raises(sycl.exception) as e:
            queue.submit(lambda cgh: sycl.accessor(b, cgh, sycl.range(*rng), sycl.id(*off)))
        assert e.value.code() == sycl.errc.accessor
        with pytest.raises(sycl.exception) as e:
            sycl.host_accessor(b, sycl.range(*rng), sycl.id(*off))
        assert e.value.code() == sycl.errc.accessor
    b.close()


def test_sycl2020_size_queries_of_buffers_and_accessors(queue):
    # SYCL 2020 spells these size() and byte_size(); buf.size is also an int as on
    # NumPy arrays, so both buf.size and buf.size() give the element count.
    rng = np.random.default_rng(21)
    shape = tuple(int(v) for v in rng.integers(3, 9, 2))
    b = sycl.buffer(rng.random(shape))
    n = shape[0] * shape[1]
    assert b.size == n and b.size() == n and b.byte_size() == 8 * n
    assert b.size + 1 == n + 1 and type(b.size * 2) is int
    seen = {}

    def cgf(cgh):
        acc = sycl.accessor(b, cgh, sycl.range(2, 3), sycl.id(1, 2), sycl.read_only)
        local = sycl.local_accessor(np.int16, (4, 5), cgh)
        seen.update(acc=(acc.size(), acc.byte_size(), acc.empty()),
                    local=(local.size(), local.byte_size(), local.empty()))
        cgh.host_task(lambda: None)
    queue.submit(cgf).wait()
    assert seen == {"acc": (6, 48, False), "local": (20, 40, False)}
    with sycl.host_accessor(b, sycl.range(1, 2), sycl.id(2, 1), sycl.read_only) as view:
        assert view.shape == (1, 2)
    host = sycl.host_accessor(b, sycl.range(1, 2), sycl.id(2, 1), sycl.read_only)
    assert (host.size(), host.byte_size(), host.empty()) == (2, 16, False)
    assert host.max_size() >= b.size
    other = sycl.host_accessor(b, sycl.range(2, 3), sycl.id(0, 0), sycl.read_only)
    first, second = np.array(host), np.array(other)
    host.swap(other)                                  # SYCL's accessor::swap
    np.testing.assert_array_equal(np.array(host), second)
    np.testing.assert_array_equal(np.array(other), first)
    assert (host.size(), other.size()) == (6, 2)
    host.close()
    other.close()
    swapped = {}

    def cgf(cgh):
        a1 = sycl.accessor(b, cgh, sycl.range(1, 1), sycl.id(0, 0), sycl.read_only)
        a2 = sycl.accessor(b, cgh, sycl.range(2, 2), sycl.id(1, 1), sycl.read_only)
        a1.swap(a2)
        swapped.update(a1=(a1.size(), tuple(a1.get_offset())), a2=a2.size(),
                       max=a1.max_size())
        cgh.host_task(lambda: None)
    queue.submit(cgf).wait()
    assert swapped["a1"] == (4, (1, 1)) and swapped["a2"] == 1 and swapped["max"] >= 4
    b.close()


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_write_back_through_a_non_contiguous_array(queue, dims):
    shape = (8, 6, 4)[:dims]
    big = _data(tuple(2 * s for s in shape), 15)
    view = big[(slice(None, None, 2),) * dims]         # a strided view of the user's
    before = big.copy()
    with sycl.buffer(view) as b:
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(*shape), TWICE[dims], sycl.accessor(b, cgh, sycl.read_write)))
    ref = before.copy()
    ref[(slice(None, None, 2),) * dims] = before[(slice(None, None, 2),) * dims] * 2 + 1
    np.testing.assert_array_equal(big, ref)


@sycl.kernel
def ranged_queries_2d(it: sycl.item[2], acc: sycl.accessor[np.int64, 2, sycl.read_write],
                      out: sycl.accessor[np.int64, 1, sycl.write_only]):
    if it.get_id(0) == 0 and it.get_id(1) == 0:
        r0, r1 = acc.get_range()
        o0, o1 = acc.get_offset()
        out[0] = r0
        out[1] = acc.get_range(1)
        out[2] = o0
        out[3] = acc.get_offset(1)
        out[4] = r1 * np.int64(100) + o1
        p = acc.get_pointer()
        out[5] = p[0]
        m = acc.get_multi_ptr()
        out[6] = m[7]
    acc[it] = -acc[it]


@sycl.kernel
def ranged_queries_3d(it: sycl.item[3], acc: sycl.accessor[np.int64, 3, sycl.read_write],
                      out: sycl.accessor[np.int64, 1, sycl.write_only]):
    if it.get_linear_id() == 0:
        out[0], out[1], out[2] = acc.get_range()
        out[3], out[4], out[5] = acc.get_offset()
        out[6] = acc.get_pointer()[5]
    acc[it] = -acc[it]


@pytest.mark.parametrize("sub", [False, True], ids=["buffer", "sub-buffer"])
@pytest.mark.parametrize("shape,rng,off", [c for c in CASES if len(c[0]) in (2, 3)],
                         ids=[i for c, i in zip(CASES, IDS) if len(c[0]) in (2, 3)])
def test_kernel_queries_of_a_ranged_accessor(queue, shape, rng, off, sub):
    """get_range/get_offset are the accessor's; get_pointer/get_multi_ptr point at the
    first element of its buffer (SYCL 2020 4.7.6.9), for a sub-buffer its first one."""
    parent_shape = (3 + shape[0], *shape[1:])          # a sub-buffer from row 2 or so
    a = np.random.default_rng(16).integers(-999, 999, parent_shape)
    got = a.copy()
    out = np.zeros(7, np.int64)
    start = 2 if sub else 0
    with sycl.buffer(got) as parent, sycl.buffer(out) as bo:
        b = sycl.buffer(parent, sycl.id(start, *[0] * (len(shape) - 1)),
                        sycl.range(*shape)) if sub else \
            sycl.buffer(parent, sycl.id(*[0] * len(shape)), sycl.range(*shape))
        kern = ranged_queries_2d if len(shape) == 2 else ranged_queries_3d
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(*rng), kern,
            sycl.accessor(b, cgh, sycl.range(*rng), sycl.id(*off), sycl.read_write),
            sycl.accessor(bo, cgh, sycl.write_only)))
    view = a[start:start + shape[0]]
    if len(shape) == 2:
        assert out.tolist() == [rng[0], rng[1], off[0], off[1], rng[1] * 100 + off[1],
                                view.reshape(-1)[0], view.reshape(-1)[7]]
    else:
        assert out.tolist() == [*rng, *off, view.reshape(-1)[5]]
    ref = a.copy()
    ref[start:start + shape[0]][_box(rng, off)] *= -1
    np.testing.assert_array_equal(got, ref)


@sycl.kernel
def local_reverse_by_pointer(nd: sycl.nd_item[1], x: sycl.accessor[np.int32, 1, sycl.read_only],
                             y: sycl.accessor[np.int32, 1, sycl.write_only],
                             tile: sycl.local_accessor[np.int32, 1]):
    i = nd.get_local_id(0)
    n = nd.get_local_range(0)
    p = tile.get_multi_ptr()
    p[i] = x[nd.get_global_id(0)]
    sycl.group_barrier(nd.get_group())
    q = tile.get_pointer()
    y[nd.get_global_id(0)] = q[n - np.int64(1) - i]


def test_local_accessor_get_multi_ptr_in_a_kernel(queue):
    x = np.random.default_rng(17).integers(-99, 99, 64).astype(np.int32)
    y = np.zeros_like(x)
    with sycl.buffer(x) as bx, sycl.buffer(y) as by:
        queue.submit(lambda cgh: cgh.parallel_for(
            sycl.nd_range(sycl.range(64), sycl.range(16)), local_reverse_by_pointer,
            sycl.accessor(bx, cgh, sycl.read_only), sycl.accessor(by, cgh, sycl.write_only),
            cgh.local_accessor(np.int32, 16)))
    np.testing.assert_array_equal(y, x.reshape(4, 16)[:, ::-1].reshape(-1))
