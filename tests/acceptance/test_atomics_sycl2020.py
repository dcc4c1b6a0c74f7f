"""Atomics as SYCL 2020 writes them (4.15): ``atomic_ref[T, order, scope, space]``,
memory orders and scopes on every operation, ``atomic_fence``, and float min/max on
work-group local memory, on every device, against NumPy."""
from __future__ import annotations

import re

import numpy as np
import pytest

import pysycl as sycl

O, S, AS = sycl.memory_order, sycl.memory_scope, sycl.access.address_space


@sycl.kernel
def group_extremes(it: sycl.nd_item[1], x: sycl.global_ptr[np.float32],
                   lo: sycl.global_ptr[np.float32], hi: sycl.global_ptr[np.float32],
                   loc: sycl.local_accessor[np.float32, 1]):
    lid = it.get_local_id(0)
    if lid == 0:
        loc[0] = np.float32(np.inf)
        loc[1] = np.float32(-np.inf)
    sycl.group_barrier(it.get_group())
    v = x[it.get_global_id(0)]
    small = sycl.atomic_ref[np.float32, O.relaxed, S.work_group, AS.local_space](loc[0])
    small.fetch_min(v, O.relaxed)
    big = sycl.atomic_ref(loc, 1, scope=S.work_group)
    big.fetch_max(v, O.acq_rel, S.work_group)
    sycl.group_barrier(it.get_group())
    if lid == 0:
        g = it.get_group_linear_id()
        lo[g] = loc[0]
        hi[g] = loc[1]


@sycl.kernel
def ordered_counting(it: sycl.item[1], counter: sycl.global_ptr[np.int64],
                     flags: sycl.global_ptr[np.int32], x: sycl.global_ptr[np.float64],
                     best: sycl.global_ptr[np.float64]):
    c = sycl.atomic_ref[np.int64, O.relaxed, S.device](counter[0])
    ticket = c.fetch_add(np.int64(1), O.seq_cst, S.device)
    sycl.atomic_ref(flags, ticket).store(np.int32(1), O.release)
    sycl.atomic_fence(O.seq_cst, S.device)
    seen = sycl.atomic_ref(flags, ticket).load(O.acquire, S.device)
    # A lock-free maximum through a compare-exchange loop (the weak form, as C++ writes it).
    b = sycl.atomic_ref(best, 0)
    old = b.load(O.relaxed)
    v = x[it.get_id(0)] + np.float64(seen - 1)
    while old < v and not b.compare_exchange_weak(old, v, O.acq_rel, O.relaxed):
        pass


@pytest.mark.parametrize("wg", [1, 7, 64])
def test_float_min_max_on_local_memory(queue, wg):
    groups = 13
    x = np.random.default_rng(wg).standard_normal(groups * wg).astype(np.float32)
    dx = sycl.malloc_shared(x.size, np.float32, queue)
    lo = sycl.malloc_shared(groups, np.float32, queue)
    hi = sycl.malloc_shared(groups, np.float32, queue)
    dx[:] = x
    queue.submit(lambda h: h.parallel_for(sycl.nd_range(x.size, wg), group_extremes, dx, lo,
                                          hi, sycl.local_accessor(np.float32, 2, h))).wait()
    np.testing.assert_array_equal(lo.to_numpy(), x.reshape(groups, wg).min(axis=1))
    np.testing.assert_array_equal(hi.to_numpy(), x.reshape(groups, wg).max(axis=1))


def test_orders_scopes_fence_and_compare_exchange_weak(queue):
    n = 3000
    x = np.random.default_rng(9).standard_normal(n)
    counter = sycl.malloc_shared(1, np.int64, queue)
    flags = sycl.malloc_shared(n, np.int32, queue)
    dx = sycl.malloc_shared(n, np.float64, queue)
    best = sycl.malloc_shared(1, np.float64, queue)
    counter[:], flags[:], dx[:], best[:] = 0, 0, x, -np.inf
    queue.parallel_for(n, ordered_counting, counter, flags, dx, best).wait()
    assert counter.to_numpy()[0] == n
    assert (flags.to_numpy() == 1).all()
    assert best.to_numpy()[0] == x.max()


@sycl.kernel
def compound_histogram(it: sycl.item[1], x: sycl.accessor[np.int32, 1, sycl.access_mode.read],
                       counts: sycl.accessor[np.int32, 1, sycl.access_mode.read_write],
                       bits: sycl.global_ptr[np.uint64], total: sycl.global_ptr[np.float64]):
    v = x[it]
    c = sycl.atomic_ref(counts, v % 16)
    c += 3
    c -= 1
    b = sycl.atomic_ref[np.uint64, O.relaxed, S.device](bits[0])
    b |= np.uint64(1) << np.uint64(v % 64)
    b2 = sycl.atomic_ref(bits, 1)
    b2 ^= np.uint64(v)
    b3 = sycl.atomic_ref(bits, 2)
    b3 &= np.uint64(v) | np.uint64(0xFFFF0000)
    t = sycl.atomic_ref(total, 0)
    t += np.float64(v) * 0.5
    t -= 0.25
    if not (t.is_lock_free() and c.is_lock_free()):
        t += 1.0e9      # (never: both are lock-free, so the sum below stays exact)


def test_compound_assignment_on_atomic_ref_is_atomic(queue):
    """SYCL 2020 4.15.3: ``a += x`` (and -=, &=, |=, ^=) on an atomic_ref is the atomic
    fetch_op, so every work-item's update lands (a split load/store would lose some)."""
    n = 5000
    x = np.random.default_rng(11).integers(0, 1 << 20, n).astype(np.int32)
    xb, cb = sycl.buffer(x), sycl.buffer(np.zeros(16, np.int32))
    bits, total = sycl.malloc_shared(3, np.uint64, queue), sycl.malloc_shared(1, np.float64, queue)
    bits[:] = np.array([0, 0x5A5A, 0xFFFFFFFF], np.uint64)
    total[:] = 10.0

    def cg(h):
        h.parallel_for(n, compound_histogram, xb.get_access(h, sycl.access_mode.read),
                       cb.get_access(h, sycl.access_mode.read_write), bits, total)
    queue.submit(cg).wait()
    np.testing.assert_array_equal(np.asarray(cb.get_host_access()),
                                  2 * np.bincount(x % 16, minlength=16))
    u = x.astype(np.uint64)
    want_bits = [np.bitwise_or.reduce(np.uint64(1) << (u % np.uint64(64))),
                 np.bitwise_xor.reduce(u) ^ np.uint64(0x5A5A),
                 np.bitwise_and.reduce(u | np.uint64(0xFFFF0000)) & np.uint64(0xFFFFFFFF)]
    np.testing.assert_array_equal(bits.to_numpy(), np.array(want_bits, np.uint64))
    assert total.to_numpy()[0] == 10.0 + (x.astype(np.float64) * 0.5 - 0.25).sum()


@sycl.kernel
def cas_by_bits(it: sycl.item[1], cell: sycl.global_ptr[np.float32],
                ok: sycl.global_ptr[np.int32], seen: sycl.global_ptr[np.float32],
                spins: sycl.global_ptr[np.int32]):
    i = it.get_id(0)
    a = sycl.atomic_ref(cell, i)
    expected = np.float32(0.0)
    ok[i] = np.int32(a.compare_exchange_strong(expected, np.float32(7.0)))
    seen[i] = expected
    # A CAS loop as users write it for float atomics it must end on a NaN too.
    n = np.int32(0)
    cur = a.load()
    while not a.compare_exchange_weak(cur, cur + np.float32(1.0)) and n < 100:
        n += 1
    spins[i] = n


def test_compare_exchange_on_floats_compares_bits(queue):
    """compare_exchange succeeds exactly when the stored bits equal ``expected``'s, as
    C++ atomics compare: -0.0 is not 0.0 there, and a NaN matches its own bits."""
    start = np.array([0.0, -0.0, np.nan, 3.5, 0.0], np.float32)
    cell = sycl.malloc_shared(start.size, np.float32, queue)
    ok, spins = (sycl.malloc_shared(start.size, np.int32, queue) for _ in range(2))
    seen = sycl.malloc_shared(start.size, np.float32, queue)
    cell[:] = start
    queue.parallel_for(start.size, cas_by_bits, cell, ok, seen, spins).wait()
    matched = start.view(np.int32) == np.float32(0.0).view(np.int32)
    np.testing.assert_array_equal(ok.to_numpy(), matched.astype(np.int32))
    np.testing.assert_array_equal(seen.to_numpy().view(np.int32),
                                  np.where(matched, 0, start.view(np.int32)))
    np.testing.assert_array_equal(spins.to_numpy(), np.zeros(start.size, np.int32))
    after = np.where(matched, np.float32(7.0), start) + np.float32(1.0)
    np.testing.assert_array_equal(cell.to_numpy(), after)


@sycl.kernel
def group_sums(it: sycl.nd_item[1], x: sycl.global_ptr[np.int32], out: sycl.global_ptr[np.int32],
               loc: sycl.local_accessor[np.int32, 1]):
    if it.get_local_id(0) == 0:
        loc[0] = 0
    sycl.group_barrier(it.get_group())
    # The address space after the scope, as C++'s atomic_ref<T, order, scope, space>.
    s = sycl.atomic_ref(loc, 0, O.relaxed, S.work_group, AS.local_space)
    s += x[it.get_global_id(0)]
    sycl.group_barrier(it.get_group())
    if it.get_local_id(0) == 0:
        g = sycl.atomic_ref(out, it.get_group_linear_id(), space=AS.generic_space)
        g.store(loc[0])


def test_atomic_ref_names_its_address_space(queue):
    groups, wg = 9, 12
    x = np.random.default_rng(5).integers(-1000, 1000, groups * wg).astype(np.int32)
    dx = sycl.malloc_shared(x.size, np.int32, queue)
    out = sycl.malloc_shared(groups, np.int32, queue)
    dx[:] = x
    queue.submit(lambda h: h.parallel_for(sycl.nd_range(x.size, wg), group_sums, dx, out,
                                          sycl.local_accessor(np.int32, 1, h))).wait()
    np.testing.assert_array_equal(out.to_numpy(), x.reshape(groups, wg).sum(axis=1))


@sycl.kernel
def cas_into_elements(it: sycl.item[1], cell: sycl.global_ptr[np.int32],
                      seen: sycl.global_ptr[np.int32]):
    i = it.get_id(0)
    e = sycl.private_array(np.int32, 2)
    e[1] = np.int32(0)
    ok = sycl.atomic_ref(cell, i).compare_exchange_strong(e[1], np.int32(9))
    seen[i * 3] = np.int32(ok)
    seen[i * 3 + 1] = e[1]
    seen[i * 3 + 2] = np.int32(0)
    sycl.atomic_ref(cell, i).compare_exchange_weak(seen[i * 3 + 2], np.int32(5))


def test_compare_exchange_updates_an_expected_element(queue):
    """``expected`` is C++'s T&: an array element or memory given for it receives the
    stored value when the exchange fails, as a local does (it kept its old value)."""
    start = np.random.default_rng(8).integers(-5, 5, 64).astype(np.int32)
    cell = sycl.malloc_shared(start.size, np.int32, queue)
    seen = sycl.malloc_shared(start.size * 3, np.int32, queue)
    cell[:] = start
    queue.parallel_for(start.size, cas_into_elements, cell, seen).wait()
    hit = start == 0
    got = seen.to_numpy().reshape(-1, 3)
    np.testing.assert_array_equal(got[:, 0], hit.astype(np.int32))
    np.testing.assert_array_equal(got[:, 1], start)            # 0 where it matched
    after = np.where(hit, 9, start)
    np.testing.assert_array_equal(got[:, 2], after)            # never 0 == after here
    np.testing.assert_array_equal(cell.to_numpy(), after)


def _compile(source: str, folder):
    """Compile the one kernel of ``source`` (a module file, as kernels need source)."""
    import importlib.util
    path = folder / f"atomics_case_{abs(hash(source))}.py"
    path.write_text("import numpy as np\nimport pysycl as sycl\n"
                    "O, S, AS = sycl.memory_order, sycl.memory_scope, sycl.access.address_space\n"
                    "@sycl.kernel\n" + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.bad.ir_module()


@pytest.mark.parametrize("body, message", [
    ("sycl.atomic_ref(a, 0).load(O.release)", "cannot use memory_order.release"),
    ("sycl.atomic_ref(a, 0).store(np.int32(1), O.acquire)", "cannot use memory_order.acquire"),
    ("sycl.atomic_ref(a, 0).compare_exchange_strong(np.int32(0), np.int32(1), O.relaxed, "
     "O.seq_cst)", "failure order seq_cst"),
    ("sycl.atomic_ref(a, 0).fetch_add(np.int32(1), O.relaxed, S.device, S.device)", "takes 1"),
    ("sycl.atomic_ref(a, 0).fetch_add(np.int32(1), S.device, O.relaxed)", "orders first"),
    ("sycl.atomic_ref[np.float32, O.relaxed, S.device](a[0])", "refers to a int32"),
    ("sycl.atomic_ref[np.int32, O.relaxed, S.device, AS.local_space](a[0])", "global memory"),
    ("sycl.atomic_ref[np.int32, O.relaxed](a[0])", "takes [T, order, scope]"),
    ("sycl.atomic_fence(O.relaxed)", "takes 2"),
    ("sycl.atomic_ref(a, 0, O.relaxed, S.device, AS.local_space)", "global memory"),
    ("sycl.atomic_ref(a, 0, space=S.device)", "is a sycl.access.address_space"),
    ("r = sycl.atomic_ref(a, 0)\n    r *= 2", "supports +=, -=, &=, |= and ^="),
])
def test_misused_atomics_are_compile_errors(body, message, tmp_path):
    src = f"def bad(i: sycl.id[1], a: sycl.global_ptr[np.int32]):\n    {body}\n"
    with pytest.raises(sycl.compile_error, match=re.escape(message)):
        _compile(src, tmp_path)
