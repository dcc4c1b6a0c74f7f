"""A property on the wrong kind of object is ``errc.invalid`` naming the property and the
object (SYCL 2020 4.5.4, sycl_ext_oneapi_properties): device_global properties on
kernels, launches and kernel arguments; kernel and argument properties on
device_globals, builds and accessors. The right kinds still work, on every device."""
import os

import numpy as np
import pytest

import pysycl as sycl
from pysycl.frontend import registry

F32 = np.float32
HERE = os.path.basename(__file__)


@sycl.kernel
def scale(it: sycl.id[1], a: F32, x: sycl.global_ptr[F32], y: sycl.global_ptr[F32]):
    y[it[0]] = a * x[it[0]]


@pytest.fixture(autouse=True)
def _forget_kernels_defined_in_tests():
    """Kernels a test defines to be refused stay out of the application's bundles."""
    yield
    registry.forget_module(__name__)
    registry.register_kernel(scale)


@pytest.fixture
def rng():
    return np.random.default_rng(13)


def _invalid(call, *needles):
    with pytest.raises(sycl.exception) as err:
        call()
    assert err.value.code() == sycl.errc.invalid
    for needle in needles:
        assert needle in str(err.value), str(err.value)
    return err.value


@pytest.mark.parametrize("prop, shown", [
    (sycl.restrict, "restrict"), (sycl.alignment(16), "alignment(16)"),
    (sycl.work_group_size(4), "work_group_size(4)"), (sycl.sub_group_size(8), "sub_group_size(8)"),
    (sycl.device_has(sycl.aspect.fp64), "device_has(aspect.fp64)"), (sycl.no_init, "no_init"),
    (sycl.spec_constant_lowering("emulated"), "spec_constant_lowering"),
])
def test_device_global_takes_only_device_global_properties(prop, shown):
    line = None

    def make():
        nonlocal line
        line = make.__code__.co_firstlineno + 3
        return sycl.device_global(np.int32, sycl.properties(prop))
    err = _invalid(make, shown, "sycl.device_global at ")
    assert f"{HERE}:{line}" in str(err)


def test_device_global_properties_still_accepted():
    dg = sycl.device_global(np.int32, sycl.properties(
        sycl.device_image_scope, sycl.host_access(sycl.host_access_mode.read),
        sycl.init_mode(sycl.init_mode_enum.reset), sycl.implement_in_csr(True)))
    assert len(dg.properties) == 4


@pytest.mark.parametrize("prop, shown", [
    (sycl.device_image_scope, "device_image_scope"),
    (sycl.host_access(sycl.host_access_mode.read), "host_access(host_access_mode.read)"),
    (sycl.restrict, "restrict"),
])
def test_kernel_takes_only_kernel_properties(prop, shown):
    def define():
        @sycl.kernel(properties=sycl.properties(prop))
        def refused(it: sycl.id[1], y: sycl.global_ptr[F32]):
            y[it[0]] = F32(1)
        return refused
    _invalid(define, shown, "@sycl.kernel", "refused")


def _run_scale(queue, rng, **launch):
    n = 257
    x = rng.standard_normal(n).astype(F32)
    a = F32(rng.standard_normal())
    dx, dy = sycl.malloc_shared(n, F32, queue), sycl.malloc_shared(n, F32, queue)
    try:
        np.asarray(dx)[:] = x
        queue.parallel_for(sycl.range(n), scale, a, dx, dy, **launch).wait()
        np.testing.assert_allclose(np.asarray(dy), a * x, rtol=1e-6)
    finally:
        sycl.free(dx, queue)
        sycl.free(dy, queue)


def test_launch_takes_kernel_and_build_properties_only(queue, rng):
    for prop, shown in ((sycl.device_image_scope, "device_image_scope"),
                        (sycl.host_access(sycl.host_access_mode.write), "host_access"),
                        (sycl.alignment(8), "alignment(8)")):
        _invalid(lambda: _run_scale(queue, rng, properties=sycl.properties(prop)),
                 shown, "the launch of kernel", "scale")
    _run_scale(queue, rng, properties=sycl.properties(sycl.spec_constant_lowering("emulated")))
    _run_scale(queue, rng)


def test_kernel_parameter_takes_only_argument_properties(queue, rng):
    @sycl.kernel
    def annotated(it: sycl.id[1], x: sycl.global_ptr[F32, sycl.properties(sycl.device_image_scope)]):
        x[it[0]] = F32(0)

    @sycl.kernel
    def on_accessor(it: sycl.id[1],
                    a: sycl.accessor[F32, 1, sycl.read_write, sycl.properties(sycl.work_group_size(2))]):
        a[it[0]] = F32(0)
    x = sycl.malloc_shared(4, F32, queue)
    try:
        _invalid(lambda: queue.parallel_for(4, annotated, x).wait(),
                 "device_image_scope", "parameter x of kernel", "annotated")
        with sycl.buffer(np.zeros(4, F32)) as buf:
            _invalid(lambda: queue.submit(lambda cgh: cgh.parallel_for(
                4, on_accessor, sycl.accessor(buf, cgh, sycl.read_write))).wait(),
                "work_group_size(2)", "parameter a of kernel", "on_accessor")
    finally:
        sycl.free(x, queue)
    _run_scale(queue, rng)


def test_builds_and_accessors_refuse_other_properties(queue, rng):
    ctx = queue.get_context()
    kb = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel=scale)
    wgs = sycl.properties(sycl.work_group_size(4))
    _invalid(lambda: sycl.build(kb, properties=wgs), "sycl.build", "work_group_size(4)")
    _invalid(lambda: sycl.compile(kb, properties=wgs), "sycl.compile")
    obj = sycl.compile(kb)
    _invalid(lambda: sycl.link(obj, properties=sycl.properties(sycl.device_image_scope)),
             "sycl.link", "device_image_scope")
    exe = sycl.link(obj, properties=sycl.properties(sycl.spec_constant_lowering("auto")))
    assert exe.has_kernel(scale)
    data = rng.standard_normal(8).astype(F32)
    with sycl.buffer(data.copy()) as buf:
        _invalid(lambda: queue.submit(lambda cgh: sycl.accessor(
            buf, cgh, sycl.read_write, sycl.properties(sycl.restrict))),
            "sycl.accessor does not take the property restrict")
        _invalid(lambda: sycl.host_accessor(buf, sycl.read_only, sycl.properties(sycl.alignment(4))),
                 "sycl.host_accessor", "alignment(4)")
        with sycl.host_accessor(buf, sycl.read_only) as view:
            np.testing.assert_array_equal(view, data)
