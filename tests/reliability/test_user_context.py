"""Every API on a queue built on a user-made ``sycl.context`` (not the platform default
one): kernels with buffers, USM of each kind, copies and fills, spec constants (the
hidden spec-constant buffer), device globals, kernel bundles built for the context,
events and errors. On OpenCL a user context is a separate ``cl_context``: memory,
programs and queues made in the default one do not work there."""
import numpy as np
import pytest

import pysycl as sycl

scale_id = sycl.specialization_id(np.float32, 2.0)
total = sycl.device_global(np.int32)


@sycl.kernel
def scale(i: sycl.item[1], h: sycl.kernel_handler, a: sycl.accessor[np.float32, 1]):
    a[i] = a[i] * h.get_specialization_constant(scale_id)


@sycl.kernel
def axpy(i: sycl.item[1], x: sycl.global_ptr[np.float32], y: sycl.global_ptr[np.float32],
         alpha: np.float32):
    y[i] = alpha * x[i] + y[i]


@sycl.kernel
def accumulate(v: np.int32):
    total.set(total.get() + v)


@pytest.fixture
def rng():
    return np.random.default_rng(2121)


@pytest.fixture
def ctx_queue(device):
    ctx = sycl.context(device)
    q = sycl.queue(ctx, device)
    assert q.get_context() is ctx
    yield q
    q.wait()


def test_buffer_kernel_with_spec_constant(ctx_queue, rng):
    x = rng.standard_normal(64).astype(np.float32)
    expect = x * 3.5
    with sycl.buffer(x) as b:
        def cgf(cgh):
            cgh.set_specialization_constant(scale_id, np.float32(3.5))
            cgh.parallel_for(sycl.range(64), scale, sycl.accessor(b, cgh))
        ctx_queue.submit(cgf).wait()
    np.testing.assert_allclose(x, expect, rtol=1e-6)
    # The default value goes through the (emulated) spec-constant buffer too.
    y = rng.standard_normal(16).astype(np.float32)
    expect = y * 2.0
    with sycl.buffer(y) as b:
        ctx_queue.submit(lambda cgh: cgh.parallel_for(
            sycl.range(16), scale, sycl.accessor(b, cgh))).wait()
    np.testing.assert_allclose(y, expect, rtol=1e-6)


@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_usm_copy_fill_and_kernel(ctx_queue, rng, kind):
    q = ctx_queue
    if not q.get_device().has(getattr(sycl.aspect, f"usm_{kind}_allocations")):
        pytest.skip(f"no {kind} USM")
    n = 256
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    malloc = getattr(sycl, f"malloc_{kind}")
    dx, dy = malloc(n, np.float32, q), malloc(n, np.float32, q)
    try:
        q.memcpy(dx, x).wait()
        q.copy(y, dy).wait()
        q.parallel_for(sycl.range(n), axpy, dx, dy, np.float32(0.5)).wait()
        out = np.empty(n, np.float32)
        q.memcpy(out, dy).wait()
        np.testing.assert_allclose(out, 0.5 * x + y, rtol=1e-6)
        q.fill(dy, np.float32(1.25)).wait()
        q.memcpy(out, dy).wait()
        assert (out == np.float32(1.25)).all()
    finally:
        sycl.free(dx, q)
        sycl.free(dy, q)


def test_usm_made_for_the_context(device, rng):
    ctx = sycl.context(device)
    q = sycl.queue(ctx, device)
    a = sycl.malloc_shared(32, np.float32, context=ctx, q=q) \
        if device.has(sycl.aspect.usm_shared_allocations) else None
    if a is None:
        pytest.skip("no shared USM")
    x = rng.standard_normal(32).astype(np.float32)
    try:
        np.asarray(a)[:] = x
        q.parallel_for(sycl.range(32), axpy, a, a, np.float32(2.0)).wait()
        np.testing.assert_allclose(np.asarray(a), 3.0 * x, rtol=1e-6)
    finally:
        sycl.free(a, q)


def test_device_global_in_a_user_context(device, rng):
    """Kernels and host copies of a user context reach one instance of the variable;
    where the context is a driver context of its own (OpenCL) that instance is not
    the default context's."""
    q_default = sycl.queue(device)
    q = sycl.queue(sycl.context(device), device)
    values = rng.integers(1, 100, 3).astype(np.int32)
    start = np.zeros(1, np.int32)
    q.copy(total, start).wait()
    for v in values:
        q.single_task(accumulate, v).wait()
    out = np.full(1, -1, np.int32)
    q.copy(total, out).wait()
    assert out[0] == start[0] + values.sum()
    if device.backend.name == "opencl":
        q_default.copy(total, out).wait()
        assert out[0] == 0                   # the default context's instance is untouched


def test_kernel_bundle_built_for_the_context(ctx_queue, rng):
    q = ctx_queue
    ctx = q.get_context()
    kb = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input,
                                kernel_ids=[sycl.get_kernel_id(scale)])
    kb.set_specialization_constant(scale_id, np.float32(-1.5))
    exe = sycl.build(kb)
    x = rng.standard_normal(40).astype(np.float32)
    expect = x * -1.5
    with sycl.buffer(x) as b:
        def cgf(cgh):
            cgh.use_kernel_bundle(exe)
            cgh.parallel_for(sycl.range(40), scale, sycl.accessor(b, cgh))
        q.submit(cgf).wait()
    np.testing.assert_allclose(x, expect, rtol=1e-6)


def test_events_and_host_tasks(ctx_queue, rng):
    q = ctx_queue
    x = rng.standard_normal(8).astype(np.float32)
    seen = []
    with sycl.buffer(x.copy()) as b:
        e1 = q.submit(lambda cgh: cgh.parallel_for(sycl.range(8), scale,
                                                   sycl.accessor(b, cgh)))

        def read(cgh):
            acc = sycl.accessor(b, cgh, sycl.read_only)
            cgh.host_task(lambda: seen.append(np.array(acc[:])))
        e2 = q.submit(read)
        sycl.event.wait_list([e1, e2])
    np.testing.assert_allclose(seen[0], x * 2.0, rtol=1e-6)
    assert e2.status == sycl.info.event_command_status.complete


def test_launch_error_on_user_context_is_raised(ctx_queue):
    """A kernel that cannot launch is an error at wait(), never a silent no-op."""
    q = ctx_queue
    data = np.zeros(6, np.float32)
    with pytest.raises(sycl.exception):
        with sycl.buffer(data) as b:
            q.submit(lambda cgh: cgh.parallel_for(
                sycl.nd_range(sycl.range(6), sycl.range(4)), scale,
                sycl.accessor(b, cgh))).wait()
