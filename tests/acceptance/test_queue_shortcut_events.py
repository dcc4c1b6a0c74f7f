"""Queue launch shortcuts take their dependency events before the kernel, as SYCL
2020's overloads do (``q.parallel_for(range, event, kernel, ...)``, ``q.parallel_for(
range, [events], kernel, ...)``, ``q.single_task(event, kernel, ...)``), and the launch
runs after them."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import pysycl as sycl

f32 = np.float32


@sycl.kernel
def scale_add(it: sycl.item[1], x: sycl.global_ptr[f32], y: sycl.global_ptr[f32], k: f32):
    i = it.get_id(0)
    y[i] = y[i] * k + x[i]


@sycl.kernel
def double_first(y: sycl.global_ptr[f32]):
    y[0] = y[0] * f32(2)


def test_events_before_the_kernel_order_the_launch(queue):
    rng = np.random.default_rng(31)
    n = 257
    hx = rng.integers(0, 8, n).astype(f32)
    x = sycl.malloc_shared(n, f32, queue)
    y = sycl.malloc_shared(n, f32, queue)
    x[:] = hx
    y[:] = 0
    gate = threading.Event()

    def fill_ones():                   # held until the gate opens: launches must wait
        gate.wait(10)
        np.asarray(y)[:] = 1
    blocker = queue.host_task(fill_ones)
    e1 = queue.parallel_for(n, blocker, scale_add, x, y, f32(2))
    e2 = queue.parallel_for(sycl.range(n), [blocker, e1], scale_add, x, y, f32(3))
    e3 = queue.single_task(e2, double_first, y)
    e4 = queue.single_task([e3], double_first, y)
    gate.set()
    e4.wait()
    expected = (2 + hx) * 3 + hx       # ((1 * 2 + x) * 3 + x), then y[0] doubled twice
    expected[0] *= 4
    np.testing.assert_array_equal(np.asarray(y), expected)
    for ev in (e1, e2, e3):
        assert ev.status.name == "complete"
    sycl.free(x, queue)
    sycl.free(y, queue)


def test_events_given_twice_or_without_a_kernel_are_errors(queue):
    ev = queue.submit_barrier()
    with pytest.raises(sycl.exception) as e:
        queue.parallel_for(4, ev, double_first, depends_on=[ev])
    assert e.value.code() == sycl.errc.invalid
    with pytest.raises(TypeError) as e:
        queue.parallel_for(4, ev)
    assert isinstance(e.value, sycl.exception) and e.value.code() == sycl.errc.invalid
    with pytest.raises(TypeError):
        queue.single_task([ev])
    queue.wait()


@sycl.kernel
def mark_from(it: sycl.item[1], out: sycl.global_ptr[np.int64]):
    i = it.get_id(0)
    out[i] = it.get_linear_id() * 1000 + it.get_offset(0)


def test_the_deprecated_offset_form_runs_from_its_offset(queue):
    # q.parallel_for(range, id offset, [events,] kernel, ...): ids run from the offset;
    # the linear id counts from 0 (the offset subtracted first, as DPC++'s item does).
    if queue.get_device().backend == sycl.backend.cuda:
        pytest.skip("the CUDA driver takes no global offset")
    rng = np.random.default_rng(32)
    n, off = int(rng.integers(5, 40)), int(rng.integers(1, 20))
    out = sycl.malloc_shared(64, np.int64, queue)
    out[:] = -1
    ev = queue.parallel_for(sycl.range(n), sycl.id(off), mark_from, out)
    queue.parallel_for(sycl.range(2), sycl.id(60), ev, mark_from, out).wait()
    expected = np.full(64, -1, np.int64)
    ids = np.arange(off, off + n)
    expected[ids] = np.arange(n) * 1000 + off
    expected[60:62] = np.arange(2) * 1000 + 60
    np.testing.assert_array_equal(out.to_numpy(), expected)
    sycl.free(out, queue)
