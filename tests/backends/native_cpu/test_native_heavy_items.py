"""Launches with few but heavy work-items (each loops over many elements) still use every
thread: the executor times the first work-group of a launch it would run inline and
hands the rest to the pool when it is slow (no timing thresholds here: the limit is
forced to zero or infinity)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import pysycl as sycl
from pysycl.backends.native_cpu import executor


def _record():
    calls = []

    def fn(argv, words, begin, end, mem):
        calls.append((begin, end, threading.current_thread().name))
    return calls, fn


def _covered(calls, ngroups):
    seen = sorted((b, e) for b, e, _ in calls)
    assert seen[0][0] == 0 and seen[-1][1] == ngroups
    assert all(a[1] == b[0] for a, b in zip(seen, seen[1:])), seen


@pytest.mark.parametrize("ngroups", [2, 3, 64])
def test_heavy_first_group_sends_the_rest_to_the_pool(monkeypatch, ngroups):
    monkeypatch.setattr(executor, "INLINE_SECONDS", 0.0)
    pool = executor.WorkerPool(2)
    calls, fn = _record()
    pool.run(fn, 0, 0, ngroups, 0, True, items=ngroups)
    me = threading.current_thread().name
    assert calls[0] == (0, 1, me)          # the timed first group, on the caller
    _covered(calls, ngroups)
    assert len(calls) > 2 or ngroups == 2   # the rest in chunks


def test_light_first_group_runs_the_rest_inline(monkeypatch):
    monkeypatch.setattr(executor, "INLINE_SECONDS", float("inf"))
    pool = executor.WorkerPool(2)
    calls, fn = _record()
    pool.run(fn, 0, 0, 10, 0, True, items=10)
    me = threading.current_thread().name
    assert calls == [(0, 1, me), (1, 10, me)]


@sycl.kernel
def _chunk_hist(nd: sycl.nd_item[1], x: sycl.global_ptr[np.int32],
                bins: sycl.global_ptr[np.int32], n: np.int64, nbins: np.int32,
                hist: sycl.local_accessor[np.int32, 1]):
    lid = nd.get_local_id(0)
    wg = nd.get_local_range(0)
    for b in range(lid, nbins, wg):
        hist[b] = np.int32(0)
    sycl.group_barrier(nd.get_group())
    lo = nd.get_global_id(0) * 64
    hi = min(lo + 64, n)
    for i in range(lo, hi):
        sycl.atomic_ref(hist, x[i] % nbins).fetch_add(np.int32(1))
    sycl.group_barrier(nd.get_group())
    for b in range(lid, nbins, wg):
        sycl.atomic_ref(bins, b).fetch_add(hist[b])


@pytest.mark.parametrize("limit", [0.0, float("inf")])
def test_privatised_histogram_either_way(monkeypatch, limit):
    monkeypatch.setattr(executor, "INLINE_SECONDS", limit)
    q = next((sycl.queue(d) for d in sycl.device.get_devices()
              if str(d.backend).endswith("native_cpu")), None)
    if q is None:
        pytest.skip("no native_cpu device")
    n, nbins, wg = 100_003, 37, 8
    items = -(-(-(-n // 64)) // wg) * wg
    rng = np.random.default_rng(5)
    x = sycl.malloc_shared((n,), np.int32, q)
    bins = sycl.malloc_shared((nbins,), np.int32, q)
    np.asarray(x)[...] = rng.integers(-1000, 1000, n, dtype=np.int32)
    np.asarray(bins)[...] = 0
    q.submit(lambda h: h.parallel_for(sycl.nd_range(sycl.range(items), sycl.range(wg)),
                                      _chunk_hist, x, bins, np.int64(n), np.int32(nbins),
                                      h.local_accessor(np.int32, (nbins,)))).wait()
    ref = np.bincount(np.asarray(x) % nbins, minlength=nbins)
    np.testing.assert_array_equal(np.asarray(bins), ref)
    for p in (x, bins):
        sycl.free(p, q)
