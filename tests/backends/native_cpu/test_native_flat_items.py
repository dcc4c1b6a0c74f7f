"""1-D range kernels that ask only global questions (ids, linear id, range, offset) run the
items of all their work-groups as one loop: results against NumPy at sizes around the
executor's group size, over ranges and over nd_ranges with offsets; kernels that ask
local or group ids keep the loop over groups."""
from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from native_harness import llvm_text
from pysycl.backends.native_cpu.executor import RANGE_GROUP_ITEMS

F32, I64 = np.float32, np.int64


def _native_queue():
    for dev in sycl.device.get_devices():
        if str(dev.backend).endswith("native_cpu"):
            return sycl.queue(dev)
    pytest.skip("no native_cpu device")


@sycl.kernel
def _axpb(it: sycl.item[1], x: sycl.global_ptr[F32], y: sycl.global_ptr[F32],
          ids: sycl.global_ptr[I64], a: F32):
    i = it.get_id(0)
    if x[i] > F32(0):
        y[i] = a * x[i] + y[i]
    else:
        y[i] = y[i] - F32(1)
    ids[i] = it.get_linear_id() * I64(1000003) + it.get_range(0)


@sycl.kernel
def _shift(i: sycl.id[1], x: sycl.global_ptr[F32], y: sycl.global_ptr[F32]):
    y[i] = x[i] * F32(3) - F32(2)


@sycl.kernel
def _local_ids(it: sycl.nd_item[1], out: sycl.global_ptr[I64]):
    out[it.get_global_id(0)] = it.get_local_id(0) * I64(100000) + it.get_group(0)


SIZES = [1, 5, RANGE_GROUP_ITEMS - 1, RANGE_GROUP_ITEMS, RANGE_GROUP_ITEMS + 1,
         3 * RANGE_GROUP_ITEMS + 37]


@pytest.mark.parametrize("n", SIZES)
def test_range_launch_matches_numpy(n):
    q = _native_queue()
    rng = np.random.default_rng(n)
    xs = rng.standard_normal(n).astype(F32)
    ys = rng.standard_normal(n).astype(F32)
    x, y = (sycl.malloc_shared((n,), F32, q) for _ in range(2))
    ids = sycl.malloc_shared((n,), I64, q)
    x[:], y[:], ids[:] = xs, ys, -1
    q.parallel_for(n, _axpb, x, y, ids, F32(2.5)).wait()
    np.testing.assert_allclose(np.asarray(y), np.where(xs > 0, F32(2.5) * xs + ys, ys - 1),
                               rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(ids), np.arange(n) * 1000003 + n)
    out = sycl.malloc_shared((n,), F32, q)
    out[:] = 0
    q.parallel_for(n, _shift, x, out).wait()
    np.testing.assert_allclose(np.asarray(out), xs * 3 - 2, rtol=1e-6)


@pytest.mark.parametrize("n,local,offset", [(64, 16, 5), (96, 32, 0), (8, 8, 3)])
def test_nd_range_with_offset_matches_numpy(n, local, offset):
    """An ``item`` kernel launched over an nd_range with a global offset: ids start at
    the offset, the linear id subtracts it (SYCL 2020 4.9.1.7)."""
    q = _native_queue()
    rng = np.random.default_rng(offset)
    size = n + offset
    xs = rng.standard_normal(size).astype(F32)
    ys = rng.standard_normal(size).astype(F32)
    x, y = (sycl.malloc_shared((size,), F32, q) for _ in range(2))
    ids = sycl.malloc_shared((size,), I64, q)
    x[:], y[:], ids[:] = xs, ys, -1
    q.submit(lambda h: h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(local),
                                                    sycl.id(offset)),
                                      _axpb, x, y, ids, F32(0.5))).wait()
    inside = slice(offset, offset + n)
    want_y = ys.copy()
    want_y[inside] = np.where(xs[inside] > 0, F32(0.5) * xs[inside] + ys[inside],
                              ys[inside] - 1)
    want_ids = np.full(size, -1, dtype=I64)
    want_ids[inside] = np.arange(n) * 1000003 + n
    np.testing.assert_allclose(np.asarray(y), want_y, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(ids), want_ids)


def test_local_ids_still_come_from_groups():
    q = _native_queue()
    n, local = 48, 16
    out = sycl.malloc_shared((n,), I64, q)
    out[:] = -1
    q.submit(lambda h: h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(local)),
                                      _local_ids, out)).wait()
    gid = np.arange(n)
    np.testing.assert_array_equal(np.asarray(out), (gid % local) * 100000 + gid // local)


def test_only_kernels_asking_global_questions_lose_the_group_loop():
    assert "group.cond" not in llvm_text(_axpb.ir_module())
    assert "group.cond" not in llvm_text(_shift.ir_module())
    assert "group.cond" in llvm_text(_local_ids.ir_module())
