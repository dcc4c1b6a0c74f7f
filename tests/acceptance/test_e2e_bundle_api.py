"""The rest of the kernel-bundle API (SYCL 2020 4.11, 4.5.1 and the SYCL Modules
proposal's forms): placeholder spec constants from the handler, bundle iteration and
names, the context's bundles per module, and OpenCL programs in and out through
``sycl.get_native`` / ``sycl.make_kernel_bundle``."""
import numpy as np
import pytest

import pysycl as sycl

F32 = np.float32
gain_id = sycl.specialization_id(F32, 1.5)


@sycl.kernel
def gained(it: sycl.id[1], g: sycl.spec_constant[F32, gain_id], x: sycl.global_ptr[F32],
           y: sycl.global_ptr[F32]):
    y[it[0]] = sycl.get_spec_constant(g) * x[it[0]] + g.get()


@sycl.kernel
def axpy(it: sycl.id[1], a: F32, x: sycl.global_ptr[F32], y: sycl.global_ptr[F32]):
    y[it[0]] = a * x[it[0]] + y[it[0]]


@pytest.fixture
def rng():
    return np.random.default_rng(23)


def _arrays(q, rng, n):
    x, y = rng.standard_normal(n).astype(F32), rng.standard_normal(n).astype(F32)
    dx, dy = sycl.malloc_shared(n, F32, q), sycl.malloc_shared(n, F32, q)
    np.asarray(dx)[:], np.asarray(dy)[:] = x, y
    return x, y, dx, dy


def test_handler_get_spec_constant_gives_a_placeholder(queue, rng):
    n = 100
    x, _y, dx, dy = _arrays(queue, rng, n)
    try:
        for value in (None, F32(rng.standard_normal())):
            seen = []

            def cgf(cgh):
                if value is not None:
                    cgh.set_specialization_constant(gain_id, value)
                p = cgh.get_spec_constant(gain_id)       # the group's value, else the default
                seen.append(sycl.get_spec_constant(p))
                cgh.parallel_for(n, gained, p, dx, dy)
            queue.submit(cgf).wait()
            g = F32(1.5) if value is None else value
            assert seen == [g]
            # (atol: CUDA contracts g * x + g into one fma, which rounds once)
            np.testing.assert_allclose(np.asarray(dy), g * x + g, rtol=1e-6, atol=1e-6)
    finally:
        sycl.free(dx, queue)
        sycl.free(dy, queue)
    with pytest.raises(sycl.exception) as err:
        sycl.get_spec_constant(3)
    assert err.value.code() == sycl.errc.invalid


def test_bundle_iteration_names_and_queries(queue):
    ctx = queue.get_context()
    exe = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable,
                                 kernel_ids=[sycl.get_kernel_id(axpy), sycl.get_kernel_id(gained)])
    assert list(exe.begin()) == list(exe) and len(list(exe)) == 2
    assert list(exe.end()) == []
    assert sorted(exe.get_kernel_names()) == sorted(k.get_name() for k in exe.get_kernel_ids())
    assert exe.get_context() == ctx and exe.get_devices() == [queue.get_device()]
    assert exe.contains_specialization_constants()
    assert exe.native_specialization_constant() == (
        queue.get_device().backend == sycl.backend.opencl)
    k = exe.get_kernel(axpy)
    assert k.get_backend() == queue.get_device().backend == exe.get_backend()


def test_context_lists_a_bundle_per_module(queue):
    ctx = queue.get_context()
    bundles = ctx.get_kernel_bundles(sycl.bundle_state.input)
    mine = [b for b in bundles if b.has_kernel(axpy)]
    assert len(mine) == 1 and mine[0].has_kernel(gained)
    assert mine[0].state == sycl.bundle_state.input
    for b in bundles:   # one translation unit each
        assert len({img.translation_unit for img in b}) == 1


def _opencl_only(device):
    if device.backend != sycl.backend.opencl:
        pytest.skip("OpenCL programs in and out")


def test_native_programs_in_and_out(device, rng):
    ctx = sycl.context(device)
    q = sycl.queue(device, ctx)
    exe = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable, kernel=axpy)
    if device.backend != sycl.backend.opencl:
        with pytest.raises(sycl.exception) as err:
            sycl.get_native(exe)
        assert err.value.code() == sycl.errc.feature_not_supported
        return
    import pyopencl as cl
    with pytest.raises(sycl.exception) as err:
        sycl.get_native(exe, sycl.backend.cuda)
    assert err.value.code() == sycl.errc.backend_mismatch
    programs = sycl.get_native(exe, sycl.backend.opencl)
    assert len(programs) == 1 and isinstance(programs[0], cl.Program)
    assert sycl.get_kernel_id(axpy).get_name() in programs[0].kernel_names.split(";")
    again = sycl.make_kernel_bundle(programs[0], ctx)
    assert again.state == sycl.bundle_state.executable and again.has_kernel(axpy)
    n = 333
    x, y, dx, dy = _arrays(q, rng, n)
    a = F32(rng.standard_normal())
    try:
        q.submit(lambda cgh: (cgh.use_kernel_bundle(again),
                              cgh.parallel_for(n, axpy, a, dx, dy))).wait()
        np.testing.assert_allclose(np.asarray(dy), a * x + y, rtol=1e-5)
    finally:
        sycl.free(dx, q)
        sycl.free(dy, q)


def test_foreign_opencl_program(device, rng):
    _opencl_only(device)
    import pyopencl as cl
    ctx = sycl.context(device)
    cl_ctx = sycl.get_native(ctx)
    assert isinstance(cl_ctx, cl.Context) and sycl.get_native(device) in cl_ctx.devices
    src = "__kernel void twice(__global float* a) { a[get_global_id(0)] *= 2.0f; }"
    prg = cl.Program(cl_ctx, src).build(devices=[sycl.get_native(device)])
    kb = sycl.make_kernel_bundle(prg, ctx)
    assert kb.get_kernel_names() == ["twice"]
    k = kb.get_kernel(kb.get_kernel_ids()[0])
    native = sycl.get_native(k)
    assert isinstance(native, cl.Kernel)
    data = rng.standard_normal(64).astype(F32)
    cq = cl.CommandQueue(cl_ctx, sycl.get_native(device))
    buf = cl.Buffer(cl_ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
    native(cq, data.shape, None, buf)
    out = np.empty_like(data)
    cl.enqueue_copy(cq, out, buf).wait()
    np.testing.assert_array_equal(out, data * 2)
    q = sycl.queue(device, ctx)
    y = sycl.malloc_shared(4, F32, q)
    try:
        with pytest.raises(sycl.exception) as err:
            q.submit(lambda cgh: (cgh.use_kernel_bundle(kb), cgh.parallel_for(4, k, y))).wait()
        assert err.value.code() == sycl.errc.kernel_not_supported
        assert "twice" in str(err.value)
    finally:
        sycl.free(y, q)
    unbuilt = cl.Program(cl_ctx, src)
    with pytest.raises(sycl.exception) as err:
        sycl.make_kernel_bundle(unbuilt, ctx)
    assert err.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception) as err:
        sycl.make_kernel_bundle(prg, ctx, sycl.bundle_state.input)
    assert err.value.code() == sycl.errc.feature_not_supported
