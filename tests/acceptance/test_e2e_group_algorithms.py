"""Group algorithms (SYCL 2020 4.17.4) end to end on every device, for work-groups of
several sizes (not only powers of two) and for sub-groups, against NumPy on random data:
broadcast, votes, reductions and scans with and without an initial value, the joint forms
over memory, and the sub-group shuffles."""
import numpy as np
import pytest

import pysycl as sycl

RNG_SEED = 20260419
I32 = np.int32


pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered")


@pytest.fixture
def rng():
    return np.random.default_rng(RNG_SEED)


def usm(queue, host):
    a = sycl.malloc_shared(host.shape, host.dtype, queue)
    np.asarray(a)[...] = host
    return a


# NumPy references --------------------------------------------------------------------------
UFUNC = {sycl.plus: np.add, sycl.multiplies: np.multiply, sycl.minimum: np.minimum,
         sycl.maximum: np.maximum, sycl.bit_and: np.bitwise_and, sycl.bit_or: np.bitwise_or,
         sycl.bit_xor: np.bitwise_xor, sycl.logical_and: np.logical_and,
         sycl.logical_or: np.logical_or}


def scan(op, x, inclusive, init=None):
    """SYCL's scan of the 1-D array ``x`` (in ``x``'s type). Every result is a value of
    the operator (``op(init, identity)`` for an exclusive scan's first), so the logical
    operators give 0 or 1 throughout."""
    dt = x.dtype
    ident = sycl.known_identity(op(), dt)
    start = ident if init is None else dt.type(init)
    out, acc = np.empty_like(x), start
    for i, v in enumerate(x):   # (integer products wrap, as in the kernel)
        if not inclusive:
            out[i] = op()(acc, ident)
        acc = dt.type(op()(acc, v))
        if inclusive:
            out[i] = acc
    return out


def reduce(op, x, init=None):
    acc = sycl.known_identity(op(), x.dtype) if init is None else x.dtype.type(init)
    for v in x:
        acc = x.dtype.type(op()(acc, v))
    return acc


def data(rng, op, dt, n):
    if op is sycl.multiplies:
        return rng.choice(np.array([1, 1, 1, 3, 5, -1, 7], dt), n)
    if op in (sycl.logical_and, sycl.logical_or):
        keep = 0.97 if op is sycl.logical_and else 0.03
        return np.where(rng.random(n) < keep, rng.integers(1, 9, n), 0).astype(dt)
    return rng.integers(-10**6, 10**6, n).astype(dt)


# Work-group algorithms ---------------------------------------------------------------------
_wg_kernels = {}


def work_group_kernel(op):
    if op not in _wg_kernels:
        @sycl.kernel(name=f"e2e_wg_algorithms_{op.__name__}")
        def k(nd: sycl.nd_item[1], x: sycl.global_ptr[I32], out: sycl.global_ptr[I32],
              root: np.int64):
            g = nd.get_group()
            i = nd.get_global_id(0)
            v = x[i]
            o = i * 8
            out[o] = sycl.reduce_over_group(g, v, op())
            out[o + 1] = sycl.reduce_over_group(g, v, I32(3), op())
            out[o + 2] = sycl.inclusive_scan_over_group(g, v, op())
            out[o + 3] = sycl.inclusive_scan_over_group(g, v, op(), I32(3))
            out[o + 4] = sycl.exclusive_scan_over_group(g, v, op())
            out[o + 5] = sycl.exclusive_scan_over_group(g, v, I32(3), op())
            out[o + 6] = sycl.group_broadcast(g, v, root)
            out[o + 7] = sycl.group_broadcast(g, v)
        _wg_kernels[op] = k
    return _wg_kernels[op]


OPS = [sycl.plus, sycl.multiplies, sycl.minimum, sycl.maximum, sycl.bit_and, sycl.bit_or,
       sycl.bit_xor, sycl.logical_and, sycl.logical_or]


@pytest.mark.parametrize("wg", [1, 7, 16, 100])
@pytest.mark.parametrize("op", OPS, ids=[o.__name__ for o in OPS])
def test_work_group_reduce_scan_broadcast(queue, rng, op, wg):
    groups = 5
    x = data(rng, op, np.dtype(I32), wg * groups)
    out = usm(queue, np.zeros(8 * x.size, I32))
    root = (wg - 1) // 2
    queue.parallel_for(sycl.nd_range(x.size, wg), work_group_kernel(op), usm(queue, x), out,
                       root).wait()
    got = np.asarray(out).reshape(groups, wg, 8)
    for gi, part in enumerate(x.reshape(groups, wg)):
        r = got[gi]
        assert (r[:, 0] == reduce(op, part)).all()
        assert (r[:, 1] == reduce(op, part, 3)).all()
        np.testing.assert_array_equal(r[:, 2], scan(op, part, True))
        np.testing.assert_array_equal(r[:, 3], scan(op, part, True, 3))
        np.testing.assert_array_equal(r[:, 4], scan(op, part, False))
        np.testing.assert_array_equal(r[:, 5], scan(op, part, False, 3))
        assert (r[:, 6] == part[root]).all() and (r[:, 7] == part[0]).all()


@sycl.device
def is_odd(v: np.int32) -> bool:
    return v % 2 == 1


@sycl.kernel
def votes(nd: sycl.nd_item[1], x: sycl.global_ptr[I32], out: sycl.global_ptr[I32]):
    g = nd.get_group()
    sg = nd.get_sub_group()
    i = nd.get_global_id(0)
    v = x[i]
    out[i * 8] = sycl.any_of_group(g, v > 90)
    out[i * 8 + 1] = sycl.all_of_group(g, v > 5)
    out[i * 8 + 2] = sycl.none_of_group(g, v > 95)
    out[i * 8 + 3] = sycl.any_of_group(g, v, is_odd)
    out[i * 8 + 4] = sycl.all_of_group(g, v, is_odd)
    out[i * 8 + 5] = sycl.any_of_group(sg, v > 90)
    out[i * 8 + 6] = sg.get_group_id()
    out[i * 8 + 7] = sycl.none_of_group(sg, v, is_odd)


@pytest.mark.parametrize("wg", [3, 32, 60])
def test_votes(queue, rng, wg):
    groups = 7
    x = rng.integers(0, 100, wg * groups).astype(I32)
    x[:wg] |= 1                       # one group of odd values only
    x[wg:2 * wg] = rng.integers(6, 90, wg)
    out = usm(queue, np.zeros(8 * x.size, I32))
    queue.parallel_for(sycl.nd_range(x.size, wg), votes, usm(queue, x), out).wait()
    got = np.asarray(out).reshape(groups, wg, 8)
    for gi, part in enumerate(x.reshape(groups, wg)):
        r = got[gi]
        assert (r[:, 0] == (part > 90).any()).all()
        assert (r[:, 1] == (part > 5).all()).all()
        assert (r[:, 2] == (~(part > 95)).all()).all()
        assert (r[:, 3] == (part % 2 == 1).any()).all()
        assert (r[:, 4] == (part % 2 == 1).all()).all()
        for s in np.unique(r[:, 6]):
            members = r[:, 6] == s
            assert (r[members, 5] == (part[members] > 90).any()).all()
            assert (r[members, 7] == (part[members] % 2 == 0).all()).all()


@sycl.kernel
def float_scan(nd: sycl.nd_item[1], x: sycl.global_ptr[np.float32],
               out: sycl.global_ptr[np.float32]):
    g = nd.get_group()
    i = nd.get_global_id(0)
    out[2 * i] = sycl.inclusive_scan_over_group(g, x[i], sycl.plus())
    out[2 * i + 1] = sycl.exclusive_scan_over_group(g, x[i], sycl.minimum())


def test_float_scans(queue, rng):
    wg, groups = 50, 6
    x = rng.standard_normal(wg * groups).astype(np.float32)
    out = usm(queue, np.zeros(2 * x.size, np.float32))
    queue.parallel_for(sycl.nd_range(x.size, wg), float_scan, usm(queue, x), out).wait()
    got = np.asarray(out).reshape(groups, wg, 2)
    for gi, part in enumerate(x.reshape(groups, wg)):
        want = np.cumsum(part.astype(np.float64))
        bound = (np.arange(wg) + 2) * np.finfo(np.float32).eps * np.cumsum(np.abs(part))
        assert (np.abs(got[gi, :, 0] - want) <= bound).all()
        np.testing.assert_array_equal(got[gi, :, 1], scan(sycl.minimum, part, False))


@sycl.kernel
def broadcast_2d(nd: sycl.nd_item[2], x: sycl.global_ptr[np.float64],
                 out: sycl.global_ptr[np.float64]):
    g = nd.get_group()
    i = nd.get_global_linear_id()
    v = x[i]
    out[2 * i] = sycl.group_broadcast(g, v, sycl.id(1, 2))
    out[2 * i + 1] = sycl.reduce_over_group(g, v, sycl.maximum())


def test_two_dimensional_work_group(queue, rng):
    G, L = (4, 6), (2, 3)
    x = rng.standard_normal(G[0] * G[1])
    out = usm(queue, np.zeros(2 * x.size))
    queue.parallel_for(sycl.nd_range(sycl.range(*G), sycl.range(*L)), broadcast_2d,
                       usm(queue, x), out).wait()
    got = np.asarray(out).reshape(G[0], G[1], 2)
    xs = x.reshape(G)
    for a in range(G[0] // L[0]):
        for b in range(G[1] // L[1]):
            tile = xs[a * L[0]:(a + 1) * L[0], b * L[1]:(b + 1) * L[1]]
            res = got[a * L[0]:(a + 1) * L[0], b * L[1]:(b + 1) * L[1]]
            assert (res[..., 0] == tile[1, 2]).all() and (res[..., 1] == tile.max()).all()


# Sub-group algorithms and shuffles ----------------------------------------------------------
@sycl.kernel
def sub_group_algorithms(nd: sycl.nd_item[1], x: sycl.global_ptr[I32], out: sycl.global_ptr[I32],
                         delta: np.int64, mask: np.int64):
    sg = nd.get_sub_group()
    i = nd.get_global_id(0)
    v = x[i]
    o = i * 12
    out[o] = sg.get_group_id()
    out[o + 1] = sg.get_local_id()
    out[o + 2] = sg.get_local_range()
    out[o + 3] = sycl.reduce_over_group(sg, v, sycl.plus())
    out[o + 4] = sycl.inclusive_scan_over_group(sg, v, sycl.maximum())
    out[o + 5] = sycl.exclusive_scan_over_group(sg, v, I32(7), sycl.bit_xor())
    out[o + 6] = sycl.group_broadcast(sg, v, 0)
    out[o + 7] = sycl.shift_group_left(sg, v, delta)
    out[o + 8] = sycl.shift_group_right(sg, v, delta)
    out[o + 9] = sycl.permute_group_by_xor(sg, v, mask)
    out[o + 10] = sycl.select_from_group(sg, v, sg.get_local_range() - 1 - sg.get_local_id())
    out[o + 11] = sycl.inclusive_scan_over_group(sg, v, sycl.multiplies())


@pytest.mark.parametrize("wg,delta,mask", [(16, 1, 1), (24, 3, 2), (100, 2, 5)])
def test_sub_group_algorithms(queue, rng, wg, delta, mask):
    groups = 3
    x = rng.choice(np.array([1, 3, -1, 5, 7, 9, -3], I32), wg * groups)
    out = usm(queue, np.zeros(12 * x.size, I32))
    queue.parallel_for(sycl.nd_range(x.size, wg), sub_group_algorithms, usm(queue, x), out,
                       delta, mask).wait()
    got = np.asarray(out).reshape(groups, wg, 12)
    for gi, part in enumerate(x.reshape(groups, wg)):
        r = got[gi]
        for s in np.unique(r[:, 0]):
            members = np.flatnonzero(r[:, 0] == s)
            members = members[np.argsort(r[members, 1])]
            size = r[members[0], 2]
            assert len(members) == size and (r[members, 1] == np.arange(size)).all()
            v, rs = part[members], r[members]
            assert (rs[:, 3] == reduce(sycl.plus, v)).all()
            np.testing.assert_array_equal(rs[:, 4], scan(sycl.maximum, v, True))
            np.testing.assert_array_equal(rs[:, 5], scan(sycl.bit_xor, v, False, 7))
            assert (rs[:, 6] == v[0]).all()
            lanes = np.arange(size)
            ok = lanes + delta < size         # SYCL leaves the others unspecified
            np.testing.assert_array_equal(rs[ok, 7], v[(lanes + delta)[ok]])
            ok = lanes - delta >= 0
            np.testing.assert_array_equal(rs[ok, 8], v[(lanes - delta)[ok]])
            ok = (lanes ^ mask) < size
            np.testing.assert_array_equal(rs[ok, 9], v[(lanes ^ mask)[ok]])
            np.testing.assert_array_equal(rs[:, 10], v[::-1])
            np.testing.assert_array_equal(rs[:, 11], scan(sycl.multiplies, v, True))


# Joint algorithms over memory ---------------------------------------------------------------
@sycl.device
def above(v: np.float32) -> bool:
    return v > 0.98


@sycl.kernel
def joint(nd: sycl.nd_item[1], x: sycl.global_ptr[np.float32], n: np.int64,
          res: sycl.global_ptr[np.float32], incl: sycl.global_ptr[np.float32],
          excl: sycl.global_ptr[np.float32]):
    g = nd.get_group()
    gid = nd.get_group(0)
    first = x + gid * n
    last = first + n
    s = sycl.joint_reduce(g, first, last, sycl.plus())
    m = sycl.joint_reduce(g, first, last, np.float32(0.5), sycl.maximum())
    anyv = sycl.joint_any_of(g, first, last, above)
    allv = sycl.joint_all_of(g, first, last, above)
    nonev = sycl.joint_none_of(g, first, last, above)
    end = sycl.joint_inclusive_scan(g, first, last, incl + gid * (n + 1), sycl.plus())
    end2 = sycl.joint_exclusive_scan(g, first, last, excl + gid * (n + 1), np.float32(10),
                                     sycl.minimum())
    if nd.get_local_id(0) == 0:
        res[gid * 5] = s
        res[gid * 5 + 1] = m
        res[gid * 5 + 2] = anyv
        res[gid * 5 + 3] = allv
        res[gid * 5 + 4] = nonev
        end[0] = -1.0                  # the scans return the end of what they wrote
        end2[0] = -2.0


@pytest.mark.parametrize("wg,n", [(10, 37), (16, 5), (7, 1), (64, 0), (32, 200)])
def test_joint_algorithms(queue, rng, wg, n):
    groups = 4
    x = rng.random(groups * n).astype(np.float32)
    if n:
        x[:n] = 0.99                   # a group whose elements all pass the predicate
    res = usm(queue, np.zeros(5 * groups, np.float32))
    incl = usm(queue, np.zeros(groups * (n + 1), np.float32))
    excl = usm(queue, np.zeros(groups * (n + 1), np.float32))
    queue.parallel_for(sycl.nd_range(groups * wg, wg), joint, usm(queue, x), n, res, incl,
                       excl).wait()
    r = np.asarray(res).reshape(groups, 5)
    inc = np.asarray(incl).reshape(groups, n + 1)
    exc = np.asarray(excl).reshape(groups, n + 1)
    for gi in range(groups):
        part = x[gi * n:(gi + 1) * n]
        wide = part.astype(np.float64)
        assert abs(r[gi, 0] - wide.sum()) <= (n + 1) * np.finfo(np.float32).eps * wide.sum()
        assert r[gi, 1] == max(part.max(initial=0.5), 0.5)
        assert r[gi, 2:].tolist() == [(part > 0.98).any(), (part > 0.98).all(),
                                      not (part > 0.98).any()]
        bound = (np.arange(n) + 2) * np.finfo(np.float32).eps * np.cumsum(wide)
        assert (np.abs(inc[gi, :n] - np.cumsum(wide)) <= bound).all() and inc[gi, n] == -1
        np.testing.assert_array_equal(exc[gi, :n], scan(sycl.minimum, part, False, 10))
        assert exc[gi, n] == -2


# Errors -----------------------------------------------------------------------------------
def test_group_algorithm_misuse_is_a_compile_error():
    q = sycl.queue([d for d in sycl.device.get_devices() if d.backend.name == "native_cpu"][0])
    x = usm(q, np.ones(8, np.float32))

    @sycl.kernel
    def shifts_a_work_group(nd: sycl.nd_item[1], x: sycl.global_ptr[np.float32]):
        x[0] = sycl.shift_group_left(nd.get_group(), x[0])

    @sycl.kernel
    def float_bit_and(nd: sycl.nd_item[1], x: sycl.global_ptr[np.float32]):
        x[0] = sycl.reduce_over_group(nd.get_group(), x[0], sycl.bit_and())

    @sycl.kernel
    def joint_of_values(nd: sycl.nd_item[1], x: sycl.global_ptr[np.float32]):
        x[0] = sycl.joint_reduce(nd.get_group(), x[0], x[1], sycl.plus())

    @sycl.kernel
    def no_operator(nd: sycl.nd_item[1], x: sycl.global_ptr[np.float32]):
        x[0] = sycl.inclusive_scan_over_group(nd.get_group(), x[0], 3)

    for k, what in ((shifts_a_work_group, "sub_group only"),
                    (float_bit_and, "needs integers or bool"),
                    (joint_of_values, "range of two pointers"),
                    (no_operator, "SYCL function object")):
        with pytest.raises(sycl.compile_error, match=what):
            q.parallel_for(sycl.nd_range(8, 4), k, x)
