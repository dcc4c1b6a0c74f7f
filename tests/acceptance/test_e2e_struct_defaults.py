"""``@sycl.struct`` field defaults (C++ default member initializers) hold wherever a value of
the type is made: construction on the host and in kernels, a specialization_id's default
(and the default-values property set), a device_global's initial value."""
import numpy as np
import pytest

import pysycl as sycl

_rng = np.random.default_rng(77)
A = int(_rng.integers(100, 10 ** 6))
V = tuple(float(np.float32(x)) for x in _rng.uniform(-9, 9, 2))
X = int(_rng.integers(-10 ** 6, -100))
Y = float(np.float32(_rng.uniform(1, 2)))


@sycl.struct
class Inner:
    a: np.int32 = A
    v: sycl.vec(np.float32, 2) = V


@sycl.struct
class Outer:
    x: np.int32 = X
    y: np.float32 = Y
    inner: Inner            # no default of its own: Inner's defaults


outer_id = sycl.specialization_id(Outer)            # no default given: Outer()
set_id = sycl.specialization_id(Outer.dtype)        # by dtype: the same defaults
outer_dg = sycl.device_global(Outer)
fresh_dg = sycl.device_global(Outer)                # read by the host before any kernel
scoped_dg = sycl.device_global(Outer, sycl.properties(sycl.device_image_scope))


def reference(**fields) -> np.ndarray:
    """The expected value, built with NumPy from the defaults above."""
    want = np.zeros((), Outer.dtype)
    want["x"], want["y"] = fields.get("x", X), fields.get("y", Y)
    want["inner"]["a"] = fields.get("a", A)
    want["inner"]["v"] = V
    return want


@sycl.kernel
def read_defaults(h: sycl.kernel_handler, out: sycl.global_ptr[Outer]):
    out[0] = h.get_specialization_constant(outer_id)
    out[1] = h.get_specialization_constant(set_id)
    out[2] = outer_dg.get()
    out[3] = scoped_dg.get()
    out[4] = Outer()                  # made in the kernel: every default
    out[5] = Outer(x=np.int32(5))     # the others' defaults
    out[6] = Outer(np.int32(6), np.float32(0.5), Inner(a=np.int32(7)))


def _launch(queue, bundle=None):
    out = sycl.malloc_shared(7, Outer.dtype, queue)
    try:
        def cgf(cgh):
            if bundle is not None:
                cgh.use_kernel_bundle(bundle)
            cgh.single_task(read_defaults, out)
        queue.submit(cgf).wait()
        return np.asarray(out).copy()
    finally:
        sycl.free(out, queue)


def _same(got, want):
    """Field by field (a kernel need not write padding bytes)."""
    clean = np.zeros((), Outer.dtype)
    clean[()] = got                   # assignment copies the fields, not the padding
    assert clean.tobytes() == np.asarray(want).tobytes(), (got, want)


def test_host_construction():
    o = Outer()
    assert (o.x, o.y, o.inner.a, tuple(o.inner.v)) == (X, Y, A, V)
    assert isinstance(o.inner, Inner) and Outer().inner is not o.inner
    _same(o.as_void(), reference())
    _same(Outer(y=0.25).as_void(), reference(y=0.25))


def test_defaults_in_kernels_spec_constants_and_device_globals(queue):
    want = reference()
    got = np.full(1, 0x5A, np.uint8).repeat(Outer.dtype.itemsize).view(Outer.dtype)
    queue.copy(fresh_dg, got).wait()         # before any kernel: the initial value
    _same(got[0], want)
    out = _launch(queue)
    for i in range(5):
        _same(out[i], want)
    _same(out[5], reference(x=5))
    _same(out[6], reference(x=6, y=0.5, a=7))


def test_bundle_defaults_and_property_set(queue):
    ctx = queue.get_context()
    inp = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, devices=[queue.get_device()],
                                 kernel=read_defaults)
    _same(inp.get_specialization_constant(outer_id), reference())
    inp.set_specialization_constant(set_id, Outer(x=np.int32(11)))
    exe = sycl.build(inp)
    blobs = [img.property_sets["SYCL/specialization constants default values"]["all"]
             for img in exe]
    assert blobs and all(reference().tobytes() * 2 == b for b in blobs)
    out = _launch(queue, exe)
    _same(out[0], reference())
    _same(out[1], reference(x=11))


@pytest.mark.parametrize("bad, kind", [(2 ** 40, OverflowError), ("many", ValueError)])
def test_a_default_the_field_cannot_hold_is_an_error(bad, kind):
    with pytest.raises(sycl.exception) as info:
        @sycl.struct
        class Bad:
            n: np.int32 = bad
    assert isinstance(info.value, kind) and info.value.code() == sycl.errc.invalid
    assert "'n'" in str(info.value) and repr(bad) in str(info.value)
