"""Specialization constants (SYCL 2020 4.9.5, seeds 000/001/002) in whole programs."""
import numpy as np
import pytest

import pysycl as sycl

# The seeds' convolution as `pysycl demo` ships it: coefficients as a specialization
# constant (pysycl.examples.convolution); checked against the NumPy reference below.
from pysycl.examples.convolution import coeff_id, convolution  # noqa: E402


def reference(image, coefficients):
    padded = np.pad(image, 1)
    rows, cols = image.shape
    out = np.zeros_like(image)
    for i in range(3):
        for j in range(3):
            out += coefficients[i, j] * padded[i:i + rows, j:j + cols]
    return out


def convolve(q, image, coefficients=None, bundle=None):
    result = np.full_like(image, np.nan)
    with sycl.buffer(image) as b_in, sycl.buffer(result) as b_out:
        def cgf(cgh):
            if bundle is not None:
                cgh.use_kernel_bundle(bundle)
            if coefficients is not None:
                cgh.set_specialization_constant(coeff_id, coefficients)
            cgh.parallel_for(sycl.range(*image.shape), convolution,
                             sycl.accessor(b_in, cgh, sycl.read_only),
                             sycl.accessor(b_out, cgh, sycl.write_only, sycl.no_init))
        q.submit(cgf).wait()
    return result


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def test_convolution_coefficients_set_on_handler(queue, rng):
    image = rng.standard_normal((37, 29)).astype(np.float32)
    for _ in range(3):
        coefficients = rng.standard_normal((3, 3)).astype(np.float32)
        np.testing.assert_allclose(convolve(queue, image, coefficients),
                                   reference(image, coefficients), rtol=1e-5, atol=1e-5)
    # unset: the default, which is zero
    np.testing.assert_array_equal(convolve(queue, image), np.zeros_like(image))


def test_convolution_coefficients_set_on_input_bundle(queue, rng):
    ctx = queue.get_context()
    image = rng.standard_normal((20, 31)).astype(np.float32)
    c1 = rng.standard_normal((3, 3)).astype(np.float32)
    c2 = rng.standard_normal((3, 3)).astype(np.float32)
    inp = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel=convolution)
    assert inp.contains_specialization_constants()
    assert inp.has_specialization_constant(coeff_id)
    inp.set_specialization_constant(coeff_id, c1)
    np.testing.assert_array_equal(inp.get_specialization_constant(coeff_id), c1)
    exe1 = sycl.build(inp)
    inp.set_specialization_constant(coeff_id, c2)
    exe2 = sycl.build(inp)
    np.testing.assert_array_equal(exe1.get_specialization_constant(coeff_id), c1)
    np.testing.assert_array_equal(exe2.get_specialization_constant(coeff_id), c2)
    with pytest.raises(sycl.exception) as info:            # input bundles only
        exe1.set_specialization_constant(coeff_id, c2)
    assert info.value.code() == sycl.errc.invalid
    # each executable bundle keeps its own values, used in any order
    for exe, c in ((exe2, c2), (exe1, c1), (exe2, c2)):
        np.testing.assert_allclose(convolve(queue, image, bundle=exe), reference(image, c),
                                   rtol=1e-5, atol=1e-5)
    # through compile + link as well
    inp.set_specialization_constant(coeff_id, c1)
    exe3 = sycl.link(sycl.compile(inp))
    np.testing.assert_allclose(convolve(queue, image, bundle=exe3), reference(image, c1),
                               rtol=1e-5, atol=1e-5)


# Every type, set and unset ------------------------------------------------------------------
@sycl.struct
class Point:
    x: np.float32
    y: np.int16


inner_t = np.dtype([("tag", np.int8), ("value", np.float64)], align=True)   # 7 bytes padding
outer_t = np.dtype([("a", np.int16), ("inner", inner_t), ("arr", np.int32, (3,)),
                    ("f", np.float32), ("flag", np.bool_)], align=True)

# An over-aligned member (offset 16 in a 32-byte struct), explicit offsets/itemsize.
overaligned_t = np.dtype({"names": ["c", "v", "s"], "formats": [np.int8, np.float32, np.int16],
                          "offsets": [0, 16, 20], "itemsize": 32})

SCALARS = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64, np.float16, np.float32, np.float64]


def _needs(dt):
    dt = np.dtype(dt)
    found = set()
    for base in ([dt] if dt.fields is None else [f[0] for f in dt.fields.values()]):
        base = base.base if base.subdtype else base
        if base.fields is not None:
            found |= _needs(base)
        elif base == np.float16:
            found.add("fp16")
        elif base == np.float64:
            found.add("fp64")
    return found


def _random_value(rng, dt):
    dt = np.dtype(dt)
    arr = np.zeros((), dt)
    if dt.fields is None and dt.subdtype is None:
        if dt == np.bool_:
            return np.bool_(True)
        if dt.kind in "iu":
            info = np.iinfo(dt)
            return rng.integers(info.min, info.max, endpoint=True, dtype=dt)
        return dt.type(rng.standard_normal() * 100)
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        return np.array([_random_value(rng, base) for _ in range(int(np.prod(shape)))],
                        base).reshape(shape)
    for name in dt.names:
        arr[name] = _random_value(rng, dt.fields[name][0])
    return arr[()]


class Case:
    def __init__(self, name, dtype, default):
        self.name, self.spec_type, self.default = name, dtype, default
        self.dtype = dtype.dtype if hasattr(dtype, "__pysycl_struct__") else np.dtype(dtype)


def _cases():
    rng = np.random.default_rng(99)
    cases = [Case(np.dtype(t).name, t, _random_value(rng, t)) for t in SCALARS]
    cases += [
        Case("nested_struct", outer_t, _random_value(rng, outer_t)),
        Case("sycl_struct", Point, Point(np.float32(1.5), np.int16(-3))),
        Case("overaligned_struct", overaligned_t, (5, 2.5, 7)),
        Case("tuple_default_struct", inner_t, (3, -1.25)),
        Case("array_f32", np.dtype((np.float32, (5,))), rng.standard_normal(5)),
        Case("array_i64_2d", np.dtype((np.int64, (2, 3))),
             rng.integers(-10 ** 12, 10 ** 12, (2, 3))),
        Case("vec3_f32", sycl.vec(np.float32, 3), (1.25, -2.5, 3.75, 0.0)),
        Case("vec2_f64", sycl.vec(np.float64, 2), (-0.125, 1e300)),
        Case("vec4_i32", sycl.vec(np.int32, 4), (7, -8, 9, -10)),
    ]
    return cases


CASES = _cases()
_readers = {}


def _flat_count(dt):
    """Elements that carry a value (a vec3 has a 4th, padding lane)."""
    lanes = (dt.metadata or {}).get("pysycl_vec")
    if lanes:
        return lanes
    return int(np.prod(dt.subdtype[1])) if dt.subdtype is not None else 1


def reader(case):
    """Kernel that writes three constants of the case's type: set, unset with a default,
    unset without a default. Arrays and vectors are written element by element."""
    if case.name in _readers:
        return _readers[case.name]
    dt = case.dtype
    with_value = sycl.specialization_id(case.spec_type, case.default)
    with_default = sycl.specialization_id(case.spec_type, case.default)
    zero = sycl.specialization_id(case.spec_type)
    if dt.subdtype is None:
        elem = dt

        @sycl.kernel(name=f"e2e_spec_reader_{case.name}")
        def read(h: sycl.kernel_handler, out: sycl.accessor[elem, 1, sycl.write_only]):
            out[0] = h.get_specialization_constant(with_value)
            out[1] = h.get_specialization_constant(with_default)
            out[2] = h.get_specialization_constant(zero)
    else:
        elem = dt.subdtype[0]
        n = _flat_count(dt)
        shape = dt.subdtype[1]
        if len(shape) == 1:
            @sycl.kernel(name=f"e2e_spec_reader_{case.name}")
            def read(h: sycl.kernel_handler, out: sycl.global_ptr[elem]):
                a = h.get_specialization_constant(with_value)
                b = h.get_specialization_constant(with_default)
                c = h.get_specialization_constant(zero)
                for k in range(n):
                    out[k] = a[k]
                    out[n + k] = b[k]
                    out[2 * n + k] = c[k]
        else:
            cols = shape[1]

            @sycl.kernel(name=f"e2e_spec_reader_{case.name}")
            def read(h: sycl.kernel_handler, out: sycl.global_ptr[elem]):
                a = h.get_specialization_constant(with_value)
                b = h.get_specialization_constant(with_default)
                c = h.get_specialization_constant(zero)
                for k in range(n):
                    out[k] = a[k // cols][k % cols]
                    out[n + k] = b[k // cols][k % cols]
                    out[2 * n + k] = c[k // cols][k % cols]
    _readers[case.name] = (read, with_value, with_default, zero)
    return _readers[case.name]


def _as_array(value, dt):
    arr = np.zeros((), dt)
    if hasattr(value, "as_void"):
        value = value.as_void()
    arr[()] = value
    return arr


def _assert_same(got, expected):
    """Field by field (padding bytes may differ)."""
    if got.dtype.names:
        for name in got.dtype.names:
            _assert_same(got[name], expected[name])
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_type_read_back_after_set_and_unset(queue, case):
    dev = queue.get_device()
    for need in _needs(case.dtype):
        if not dev.has(getattr(sycl.aspect, need)):
            pytest.skip(f"{dev.name} lacks {need}")
    kernel, with_value, with_default, zero = reader(case)
    rng = np.random.default_rng(abs(hash(case.name)) % 2 ** 32)
    value = _random_value(rng, case.dtype) if case.name != "sycl_struct" else \
        Point(np.float32(-7.25), np.int16(12345))
    if case.name.startswith("vec3"):
        value[3] = 0
    dt = case.dtype
    if dt.subdtype is None:
        out = np.zeros(3, dt)
        out_bytes = np.frombuffer(rng.bytes(out.nbytes), np.uint8)
        out.view(np.uint8)[:] = out_bytes                # garbage, not zeros
        with sycl.buffer(out) as b:
            def cgf(cgh):
                cgh.set_specialization_constant(with_value, value)
                _assert_same(_as_array(cgh.get_specialization_constant(with_value), dt),
                             _as_array(value, dt))
                cgh.single_task(kernel, sycl.accessor(b, cgh, sycl.write_only))
            queue.submit(cgf).wait()
        got = [out[0], out[1], out[2]]
    else:
        base, n = dt.subdtype[0], _flat_count(dt)
        ptr = sycl.malloc_shared(3 * n, base, queue)
        try:
            np.asarray(ptr)[:] = 99
            queue.submit(lambda cgh: (cgh.set_specialization_constant(with_value, value),
                                      cgh.single_task(kernel, ptr))).wait()
            flat = np.asarray(ptr).copy()
        finally:
            sycl.free(ptr, queue)
        got = [flat[:n], flat[n:2 * n], flat[2 * n:3 * n]]
    expected = [_as_array(value, dt), _as_array(case.default, dt), np.zeros((), dt)]
    for g, e in zip(got, expected):
        if dt.subdtype is None:
            _assert_same(np.asarray(g), e)
        else:
            _assert_same(np.asarray(g), e.reshape(-1)[:_flat_count(dt)])


# Isolation between command groups ----------------------------------------------------------
scale_id = sycl.specialization_id(np.int32, 5)


@sycl.kernel
def scaled_fill(it: sycl.item[1], h: sycl.kernel_handler, out: sycl.global_ptr[np.int32]):
    out[it.get_id(0)] = np.int32(it.get_id(0)) * h.get_specialization_constant(scale_id)


def test_values_never_leak_between_command_groups(queue):
    n = 16
    out = sycl.malloc_shared(n, np.int32, queue)
    try:
        def run(value=None):
            def cgf(cgh):
                if value is not None:
                    cgh.set_specialization_constant(scale_id, value)
                    assert cgh.get_specialization_constant(scale_id) == value
                else:
                    assert cgh.get_specialization_constant(scale_id) == 5
                cgh.parallel_for(sycl.range(n), scaled_fill, out)
            queue.submit(cgf).wait()
            return list(np.asarray(out))
        idx = np.arange(n)
        assert run(-3) == list(idx * -3)
        assert run() == list(idx * 5)            # back to the default
        assert run(11) == list(idx * 11)
        assert run(11) == list(idx * 11)
        assert run() == list(idx * 5)
        # the last set on a handler wins
        def twice(cgh):
            cgh.set_specialization_constant(scale_id, 2)
            cgh.set_specialization_constant(scale_id, 4)
            cgh.parallel_for(sycl.range(n), scaled_fill, out)
        queue.submit(twice).wait()
        assert list(np.asarray(out)) == list(idx * 4)
    finally:
        sycl.free(out, queue)


@sycl.kernel
def scaled_sum(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[np.int32],
               total: sycl.reducer[np.int32]):
    total += x[it.get_id(0)] * h.get_specialization_constant(scale_id)


def test_value_set_after_the_launch_in_the_group_applies(queue, rng):
    # The launch happens when the command group is complete: a value set after
    # parallel_for in the same group is the one the kernel reads (the last set wins).
    n = 32
    out = sycl.malloc_shared(n, np.int32, queue)
    x = sycl.malloc_shared(n, np.int32, queue)
    total = sycl.malloc_shared(1, np.int32, queue)
    x[:] = rng.integers(-50, 50, n)
    a, b = (int(v) for v in rng.integers(6, 40, 2))

    def late(cgh):
        cgh.parallel_for(sycl.range(n), scaled_fill, out)
        cgh.set_specialization_constant(scale_id, a)
    queue.submit(late).wait()
    np.testing.assert_array_equal(out.to_numpy(), np.arange(n) * a)

    def reduction_then_set(cgh):
        cgh.set_specialization_constant(scale_id, a)
        cgh.parallel_for(sycl.range(n), sycl.reduction(total, sycl.plus(),
                         sycl.property.reduction.initialize_to_identity()), scaled_sum, x)
        cgh.set_specialization_constant(scale_id, b)
    queue.submit(reduction_then_set).wait()
    assert total[0] == int(x.to_numpy().sum()) * b
    queue.parallel_for(sycl.range(n), scaled_fill, out).wait()       # default again
    np.testing.assert_array_equal(out.to_numpy(), np.arange(n) * 5)


# A spec constant as a loop trip count -----------------------------------------------------
trips_id = sycl.specialization_id(np.int32, 3)


@sycl.kernel
def repeated_sum(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[np.int64],
                 out: sycl.global_ptr[np.int64]):
    i = it.get_id(0)
    acc = np.int64(0)
    for k in range(h.get_specialization_constant(trips_id)):
        acc += x[i] * (k + 1)
    out[i] = acc


@pytest.mark.parametrize("trips", [None, 0, 1, 7, 100])
def test_spec_constant_as_loop_trip_count(queue, trips):
    rng = np.random.default_rng(5)
    n = 64
    x = rng.integers(-10 ** 6, 10 ** 6, n).astype(np.int64)
    dx, out = sycl.malloc_shared(n, np.int64, queue), sycl.malloc_shared(n, np.int64, queue)
    try:
        np.asarray(dx)[:] = x
        np.asarray(out)[:] = 12345

        def cgf(cgh):
            if trips is not None:
                cgh.set_specialization_constant(trips_id, trips)
            cgh.parallel_for(sycl.range(n), repeated_sum, dx, out)
        queue.submit(cgf).wait()
        t = 3 if trips is None else trips
        np.testing.assert_array_equal(np.asarray(out), x * (t * (t + 1) // 2))
    finally:
        sycl.free(dx, queue)
        sycl.free(out, queue)


# Literal and emulated lowering -----------------------------------------------------------
def test_literal_and_emulated_lowering_agree(queue, rng):
    ctx = queue.get_context()
    image = rng.standard_normal((33, 47)).astype(np.float32)
    coefficients = rng.standard_normal((3, 3)).astype(np.float32)
    inp = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel=convolution)
    inp.set_specialization_constant(coeff_id, coefficients)
    results = {}
    for mode in ("literal", "emulated"):
        exe = sycl.build(inp, properties=sycl.properties(sycl.spec_constant_lowering(mode)))
        modes = {img.spec_constant_lowering for img in exe if img.has_kernel(convolution)}
        assert modes == {mode}, modes
        results[mode] = convolve(queue, image, bundle=exe)
    np.testing.assert_array_equal(results["literal"], results["emulated"])
    np.testing.assert_allclose(results["literal"], reference(image, coefficients),
                               rtol=1e-5, atol=1e-5)
    default = sycl.build(inp)
    assert {img.spec_constant_lowering for img in default if img.has_kernel(convolution)} <= {
        "native", "literal", "emulated"}
    np.testing.assert_array_equal(convolve(queue, image, bundle=default), results["literal"])


def test_emulated_lowering_all_types(queue):
    """The emulated buffer layout must hold every kind of constant (structs with padding)."""
    case = next(c for c in CASES if c.name == "nested_struct")
    if not queue.get_device().has(sycl.aspect.fp64):
        pytest.skip("needs fp64")
    kernel, with_value, with_default, zero = reader(case)
    value = _random_value(np.random.default_rng(3), outer_t)
    inp = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.input, kernel=kernel)
    inp.set_specialization_constant(with_value, value)
    exe = sycl.build(inp, properties=sycl.properties(sycl.spec_constant_lowering("emulated")))
    out = np.zeros(3, outer_t)
    with sycl.buffer(out) as b:
        def cgf(cgh):
            cgh.use_kernel_bundle(exe)
            cgh.single_task(kernel, sycl.accessor(b, cgh, sycl.write_only))
        queue.submit(cgf).wait()
    _assert_same(out[0], _as_array(value, outer_t))
    _assert_same(out[1], _as_array(case.default, outer_t))
    _assert_same(out[2], np.zeros((), outer_t))


# Placeholder style (seed 002) --------------------------------------------------------------
offset_id = sycl.specialization_id(np.float64, 0.5)


@sycl.kernel
def add_offset(it: sycl.item[1], off: sycl.spec_constant[np.float64, offset_id],
               x: sycl.global_ptr[np.float64]):
    x[it.get_id(0)] += off.get()


def test_placeholder_spec_constant_argument(queue, rng):
    if not queue.get_device().has(sycl.aspect.fp64):
        pytest.skip("needs fp64")
    n = 40
    x = rng.standard_normal(n)
    dx = sycl.malloc_shared(n, np.float64, queue)
    try:
        np.asarray(dx)[:] = x
        value = float(rng.standard_normal())

        def cgf(cgh):
            p = cgh.set_spec_constant(offset_id, value)
            assert isinstance(p, sycl.spec_constant)
            cgh.parallel_for(sycl.range(n), add_offset, p, dx)
        queue.submit(cgf).wait()
        np.testing.assert_allclose(np.asarray(dx), x + value, rtol=1e-15)
    finally:
        sycl.free(dx, queue)


# A placeholder reads its constant under the constant's own ID (SYCL 1.2.1 spec_constant<T, ID>)
shift_id = sycl.specialization_id(np.float32, 0.25)
other_id = sycl.specialization_id(np.float32, 4.0)


@sycl.kernel
def shift_add(it: sycl.item[1], s: sycl.spec_constant[shift_id], x: sycl.global_ptr[np.float32]):
    x[it.get_id(0)] += s.get()


@sycl.kernel
def shift_scale(it: sycl.item[1], s: sycl.spec_constant[np.float32, shift_id],
                x: sycl.global_ptr[np.float32]):
    x[it.get_id(0)] *= s.get()


def _run_shift(queue, kernel, x, make_placeholder, bundle=None):
    dx = sycl.malloc_shared(x.size, np.float32, queue)
    try:
        np.asarray(dx)[:] = x

        def cgf(cgh):
            if bundle is not None:
                cgh.use_kernel_bundle(bundle)
            cgh.parallel_for(sycl.range(x.size), kernel, make_placeholder(cgh), dx)
        queue.submit(cgf).wait()
        return np.asarray(dx).copy()
    finally:
        sycl.free(dx, queue)


def test_placeholder_uses_the_constants_own_id(queue, rng):
    ctx = queue.get_context()
    x = rng.standard_normal(33).astype(np.float32)
    v = np.float32(rng.uniform(1, 2))
    # SYCL 1.2.1 program: the built program has the constant the kernel reads
    prog = sycl.compat.program(ctx)
    p = prog.set_spec_constant(shift_id, v)
    prog.build_with_kernel_type(shift_add)
    assert prog.has_spec_constant(shift_id) and not prog.has_spec_constant(other_id)
    np.testing.assert_array_equal(
        _run_shift(queue, prog.get_kernel(shift_add), x, lambda cgh: p), x + v)
    # two kernels, one constant: one symbolic ID (hence one SpecId) in the linked image
    inp = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input,
                                 kernel_ids=[sycl.get_kernel_id(shift_add),
                                             sycl.get_kernel_id(shift_scale)])
    assert inp.has_specialization_constant(shift_id)
    w = np.float32(rng.uniform(2, 3))
    inp.set_specialization_constant(shift_id, w)
    exe = sycl.link(sycl.compile(inp))
    ids = set()
    for img in exe:
        ids.update(img.property_sets.get("SYCL/specialization constants", {}))
    assert ids == {shift_id.unique_id}
    np.testing.assert_array_equal(
        _run_shift(queue, exe.get_kernel(shift_scale), x,
                   lambda cgh: sycl.spec_constant(shift_id, w)), x * w)
    # the handler path: the group's value
    u = np.float32(rng.uniform(3, 4))
    np.testing.assert_array_equal(
        _run_shift(queue, shift_scale, x, lambda cgh: cgh.set_spec_constant(shift_id, u)), x * u)


def test_placeholder_mismatches_are_errors(queue, rng):
    x = rng.standard_normal(5).astype(np.float32)
    with pytest.raises(sycl.exception) as info:          # another constant's placeholder
        _run_shift(queue, shift_add, x, lambda cgh: cgh.set_spec_constant(other_id, 1.0))
    assert info.value.code() == sycl.errc.kernel_argument
    assert shift_id.unique_id in str(info.value) and other_id.unique_id in str(info.value)
    exe = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.executable,
                                 kernel=shift_add)
    with pytest.raises(sycl.exception) as info:          # a value the bundle does not hold
        _run_shift(queue, shift_add, x, lambda cgh: sycl.spec_constant(shift_id, 9.0), exe)
    assert info.value.code() == sycl.errc.invalid


# Rule violations -------------------------------------------------------------------------
def test_handler_value_and_bundle_in_one_command_group(queue, rng):
    ctx = queue.get_context()
    image = rng.standard_normal((8, 8)).astype(np.float32)
    exe = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable, kernel=convolution)
    c = rng.standard_normal((3, 3)).astype(np.float32)
    b_in, b_out = sycl.buffer(image.copy()), sycl.buffer(np.zeros_like(image))

    def launch(cgh):
        cgh.parallel_for(sycl.range(8, 8), convolution, sycl.accessor(b_in, cgh, sycl.read_only),
                         sycl.accessor(b_out, cgh, sycl.write_only))

    def set_then_use(cgh):
        cgh.set_specialization_constant(coeff_id, c)
        cgh.use_kernel_bundle(exe)
        launch(cgh)

    def use_then_set(cgh):
        cgh.use_kernel_bundle(exe)
        cgh.set_specialization_constant(coeff_id, c)
        launch(cgh)

    def use_then_get(cgh):
        cgh.use_kernel_bundle(exe)
        cgh.get_specialization_constant(coeff_id)
        launch(cgh)

    for cgf in (set_then_use, use_then_set, use_then_get):
        with pytest.raises(sycl.exception) as info:
            queue.submit(cgf).wait()
        assert info.value.code() == sycl.errc.invalid, cgf.__name__
    b_in.close()
    b_out.close()
    # the queue is fine afterwards
    np.testing.assert_allclose(convolve(queue, image, c), reference(image, c), rtol=1e-5,
                               atol=1e-5)


def test_specialization_id_is_not_copyable():
    import copy
    with pytest.raises(TypeError):
        copy.copy(scale_id)
    assert scale_id.unique_id == f"{__name__}.scale_id"


# Seed-0 style (SYCL 1.2.1 program) --------------------------------------------------------
def test_compat_program(queue):
    program = sycl.compat.program(queue.get_context())
    program.set_spec_constant(scale_id, 9)
    program.build_with_kernel_type(scaled_fill)
    k = program.get_kernel(scaled_fill)
    n = 10
    out = sycl.malloc_shared(n, np.int32, queue)
    try:
        queue.submit(lambda cgh: cgh.parallel_for(sycl.range(n), k, out)).wait()
        assert list(np.asarray(out)) == [9 * i for i in range(n)]
    finally:
        sycl.free(out, queue)
    assert program.has_kernel(scaled_fill)
    n = 8
    out = sycl.malloc_shared(n, np.int32, queue)
    try:
        queue.submit(lambda cgh: cgh.parallel_for(sycl.range(n), k, out)).wait()
        assert list(np.asarray(out)) == [9 * i for i in range(n)]
    finally:
        sycl.free(out, queue)


# vec<T, 3> takes three values (its fourth lane is padding) -----------------------------
_VEC3_DEFAULT = np.random.default_rng(31).standard_normal(3).astype(np.float32)
vec3_default_id = sycl.specialization_id(sycl.vec(np.float32, 3), tuple(_VEC3_DEFAULT))
vec3_set_id = sycl.specialization_id(sycl.vec(np.int32, 3), (1, 2, 3))


@sycl.kernel
def read_vec3(h: sycl.kernel_handler, f: sycl.global_ptr[np.float32],
              i: sycl.global_ptr[np.int32]):
    a = h.get_specialization_constant(vec3_default_id)
    b = h.get_specialization_constant(vec3_set_id)
    for k in range(3):
        f[k] = a[k]
        i[k] = b[k]


def test_vec3_spec_constant_takes_three_values(queue, rng):
    assert np.frombuffer(vec3_default_id.default_bytes, np.float32)[3] == 0
    ints = rng.integers(-10 ** 6, 10 ** 6, 3).astype(np.int32)
    f, i = sycl.malloc_shared(3, np.float32, queue), sycl.malloc_shared(3, np.int32, queue)
    try:
        def cgf(cgh):
            cgh.set_specialization_constant(vec3_set_id, ints)     # three values, an array
            assert cgh.get_specialization_constant(vec3_set_id)[:3].tolist() == ints.tolist()
            cgh.single_task(read_vec3, f, i)
        queue.submit(cgf).wait()
        np.testing.assert_array_equal(np.asarray(f), _VEC3_DEFAULT)
        np.testing.assert_array_equal(np.asarray(i), ints)
        # On an input bundle too, as a tuple of three.
        kb = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.input, kernel=read_vec3)
        kb.set_specialization_constant(vec3_set_id, tuple(int(v) for v in ints[::-1]))
        queue.submit(lambda cgh: (cgh.use_kernel_bundle(sycl.build(kb)),
                                  cgh.single_task(read_vec3, f, i))).wait()
        np.testing.assert_array_equal(np.asarray(i), ints[::-1])
    finally:
        sycl.free(f, queue)
        sycl.free(i, queue)
    with pytest.raises(sycl.exception) as err:       # two values are not a vec<T, 3>
        sycl.specialization_id(sycl.vec(np.float32, 3), (1.0, 2.0))
    assert err.value.code() == sycl.errc.invalid
