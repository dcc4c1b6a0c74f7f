"""device_global end to end on every device (seed 004 + ext device_global): zero-init,
host copies in and out (count/start_index/offset), subscript writes read by a second
kernel (another image), persistence across launches, bundles and spec-constant
changes, out-of-range copies, host_access, device_image_scope, shadowed names."""
import numpy as np
import pytest

import pysycl as sycl

I32, F32 = np.int32, np.float32

zero_probe = sycl.device_global(np.dtype((I32, 4)))
counter = sycl.device_global(I32)
table = sycl.device_global(np.dtype((F32, 8)))
persist = sycl.device_global(I32)
spec_persist = sycl.device_global(I32)
bundle_persist = sycl.device_global(I32)
ranges = sycl.device_global(np.dtype((I32, 4)))
unused = sycl.device_global(np.dtype((I32, 2)))
scoped = sycl.device_global(I32, sycl.properties(sycl.device_image_scope))
scoped_multi = sycl.device_global(I32, sycl.properties(sycl.device_image_scope))
read_only = sycl.device_global(I32, sycl.properties(sycl.device_image_scope,
                                                    sycl.host_access(sycl.host_access_mode.read)))
write_only = sycl.device_global(I32, sycl.properties(sycl.device_image_scope,
                                                     sycl.host_access(sycl.host_access_mode.write)))
step = sycl.specialization_id(I32, 1)


@sycl.struct
class Pair:
    a: np.int32
    b: np.float32


pair = sycl.device_global(Pair.dtype)


@sycl.kernel
def read_zero(out: sycl.global_ptr[I32]):
    for k in range(4):
        out[k] = zero_probe[k]


@sycl.kernel
def bump(out: sycl.global_ptr[I32]):
    counter.set(counter.get() + 1)
    out[0] = counter.get()


@sycl.kernel
def write_table(i: sycl.id[1]):
    table[i[0]] = F32(i[0]) * 2.5


@sycl.kernel
def read_table(i: sycl.id[1], out: sycl.global_ptr[F32]):
    out[i[0]] = table[i[0]]


@sycl.kernel
def add_persist(v: np.int32):
    persist.set(persist.get() + v)


@sycl.kernel
def get_persist(out: sycl.global_ptr[I32]):
    out[0] = persist.get()


@sycl.kernel
def add_spec(h: sycl.kernel_handler):
    spec_persist.set(spec_persist.get() + h.get_specialization_constant(step))


@sycl.kernel
def add_bundle():
    bundle_persist.set(bundle_persist.get() + 10)


@sycl.kernel
def add_bundle_other():
    bundle_persist.set(bundle_persist.get() + 100)


@sycl.kernel
def scoped_inc(out: sycl.global_ptr[I32]):
    scoped.set(scoped.get() + 1)
    out[0] = scoped.get()


@sycl.kernel
def scoped_multi_a(v: np.int32):
    scoped_multi.set(v)


@sycl.kernel
def scoped_multi_b(out: sycl.global_ptr[I32]):
    out[0] = scoped_multi.get()


@sycl.kernel
def pair_update():
    pair.a = pair.a + 1
    pair.b = pair.b * 2.0


def _single(q, kernel, *args):
    q.single_task(kernel, *args).wait()


def _read(q, dg, dtype, n):
    out = np.full(n, -7, dtype)
    q.copy(dg, out).wait()
    return out


def test_zero_initialised(queue):
    assert _read(queue, zero_probe, I32, 4).tolist() == [0, 0, 0, 0]
    out = sycl.malloc_shared(4, I32, queue)
    _single(queue, read_zero, out)
    assert out[:].tolist() == [0, 0, 0, 0]


def test_persists_across_launches_and_copy_in_out(queue):
    out = sycl.malloc_shared(1, I32, queue)
    _single(queue, bump, out)
    _single(queue, bump, out)
    assert out[0] == 2
    queue.copy(np.array([40], I32), counter).wait()
    _single(queue, bump, out)
    assert out[0] == 41
    assert _read(queue, counter, I32, 1).tolist() == [41]


def test_subscript_writes_read_by_second_kernel(queue):
    queue.parallel_for(8, write_table).wait()
    out = sycl.malloc_shared(8, F32, queue)
    queue.parallel_for(8, read_table, out).wait()
    np.testing.assert_array_equal(out[:], np.arange(8, dtype=F32) * 2.5)
    np.testing.assert_array_equal(_read(queue, table, F32, 8), np.arange(8, dtype=F32) * 2.5)


def test_copy_count_start_index_and_memcpy_offset(queue):
    queue.copy(np.array([1, 2, 3, 4], I32), ranges).wait()
    queue.copy(np.array([9, 8], I32), ranges, count=2, start_index=1).wait()
    assert _read(queue, ranges, I32, 4).tolist() == [1, 9, 8, 4]
    part = np.zeros(2, I32)
    queue.copy(ranges, part, count=2, start_index=2).wait()
    assert part.tolist() == [8, 4]
    queue.memcpy(ranges, np.array([77], I32), 4, offset=12).wait()
    got = np.zeros(1, I32)
    queue.memcpy(got, ranges, 4, offset=12).wait()
    assert got.tolist() == [77]
    # the handler has the same calls
    queue.submit(lambda cgh: cgh.copy(np.array([5], I32), ranges, count=1, start_index=0)).wait()
    assert _read(queue, ranges, I32, 4).tolist() == [5, 9, 8, 77]


positional = sycl.device_global(np.dtype((np.float64, 16)))


def test_queue_shortcuts_take_offset_and_events_positionally(queue):
    """SYCL 2020's queue shortcuts for device_global: memcpy(dest, src, num_bytes,
    offset[, events]) and copy(src, dest, count, start_index[, events]), both ways."""
    rng = np.random.default_rng(17)
    whole = rng.standard_normal(16)
    queue.memcpy(positional, whole).wait()
    part = rng.standard_normal(5)
    ev = queue.memcpy(positional, part, 5 * 8, 3 * 8)                   # to, offset 3
    got = np.zeros(4)
    queue.memcpy(got, positional, 4 * 8, 6 * 8, ev).wait()              # from, after ev
    expect = whole.copy()
    expect[3:8] = part
    np.testing.assert_array_equal(got, expect[6:10])
    more = rng.standard_normal(2)
    ev = queue.copy(more, positional, 2, 14)                            # to, start 14
    tail = np.zeros(3)
    queue.copy(positional, tail, 3, 13, [ev]).wait()                    # from, after [ev]
    expect[14:16] = more
    np.testing.assert_array_equal(tail, expect[13:16])
    # the USM forms: events in the offset's place
    src = sycl.malloc_shared(16, np.float64, queue)
    try:
        np.asarray(src)[:] = rng.standard_normal(16)
        filled = queue.fill(src, 2.5, 8)
        out = np.zeros(16)
        queue.memcpy(out, src, 16 * 8, filled).wait()
        np.testing.assert_array_equal(out[:8], 2.5)
        np.testing.assert_array_equal(out[8:], np.asarray(src)[8:])
    finally:
        sycl.free(src, queue)
    with pytest.raises(sycl.exception) as err:
        queue.memcpy(got, positional, 8, ev, depends_on=[ev])
    assert err.value.code() == sycl.errc.invalid


@pytest.mark.parametrize("call", [
    lambda q: q.copy(np.zeros(2, I32), ranges, count=2, start_index=3),
    lambda q: q.copy(np.zeros(5, I32), ranges),
    lambda q: q.copy(ranges, np.zeros(4, I32), count=1, start_index=4),
    lambda q: q.memcpy(ranges, np.zeros(4, np.uint8), 4, offset=13),
    lambda q: q.memcpy(np.zeros(32, np.uint8), ranges, 20),
])
def test_out_of_range_copy_is_invalid(queue, call):
    with pytest.raises(sycl.exception) as e:
        call(queue)
    assert e.value.code() == sycl.errc.invalid


def test_persists_across_spec_constant_changes(queue):
    for value in (1, 5, 1, 20):
        def cgf(cgh, value=value):
            cgh.set_specialization_constant(step, value)
            cgh.single_task(add_spec)
        queue.submit(cgf).wait()
    assert _read(queue, spec_persist, I32, 1).tolist() == [27]


def test_persists_across_bundles(queue):
    ctx = queue.get_context()
    exe1 = sycl.build(sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel=add_bundle))
    exe2 = sycl.build(sycl.get_kernel_bundle(ctx, sycl.bundle_state.input,
                                             kernel_ids=[sycl.get_kernel_id(add_bundle),
                                                         sycl.get_kernel_id(add_bundle_other)]))
    for kb, k in ((exe1, add_bundle), (exe2, add_bundle), (exe2, add_bundle_other),
                  (None, add_bundle)):
        def cgf(cgh, kb=kb, k=k):
            if kb is not None:
                cgh.use_kernel_bundle(kb)
            cgh.single_task(k)
        queue.submit(cgf).wait()
    assert _read(queue, bundle_persist, I32, 1).tolist() == [130]


def test_values_persist_between_two_kernels_with_args(queue):
    queue.copy(np.array([0], I32), persist).wait()
    for v in (3, 4):
        queue.single_task(add_persist, I32(v)).wait()
    out = sycl.malloc_shared(1, I32, queue)
    _single(queue, get_persist, out)
    assert out[0] == 7


def test_struct_fields(queue):
    queue.copy(np.array([(3, 1.5)], Pair.dtype), pair).wait()
    _single(queue, pair_update)
    got = np.zeros(1, Pair.dtype)
    queue.copy(pair, got).wait()
    assert got["a"][0] == 4 and got["b"][0] == 3.0


def test_variable_no_kernel_uses_round_trips(queue):
    assert _read(queue, unused, I32, 2).tolist() == [0, 0]
    queue.copy(np.array([42, 24], I32), unused).wait()
    assert _read(queue, unused, I32, 2).tolist() == [42, 24]


def test_device_image_scope_copy_before_first_kernel(queue):
    queue.copy(np.array([41], I32), scoped).wait()
    out = sycl.malloc_shared(1, I32, queue)
    _single(queue, scoped_inc, out)           # the first kernel sees the copied value
    assert out[0] == 42
    assert _read(queue, scoped, I32, 1).tolist() == [42]


def test_device_image_scope_kernels_of_a_module_share_one_copy(queue):
    """DPC++'s per-source split: the kernels of one translation unit (a Python module)
    that use a device_image_scope variable are in one image, so a value one kernel
    writes is the value another reads, and the host copies reach the same copy."""
    rng = np.random.default_rng()
    v, w = (int(x) for x in rng.integers(1, 2 ** 30, 2))
    out = sycl.malloc_shared(1, I32, queue)
    _single(queue, scoped_multi_a, I32(v))
    _single(queue, scoped_multi_b, out)
    assert out[0] == v
    assert _read(queue, scoped_multi, I32, 1).tolist() == [v]
    queue.copy(np.array([w], I32), scoped_multi).wait()
    _single(queue, scoped_multi_b, out)
    assert out[0] == w
    exe = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.executable,
                                 kernel=scoped_multi_a)
    (img,) = [i for i in exe if i.has_kernel(scoped_multi_a)]
    assert img.has_kernel(scoped_multi_b) and not img.has_kernel(bump)
    linked = sycl.link(sycl.compile(sycl.get_kernel_bundle(
        queue.get_context(), sycl.bundle_state.input, kernel=scoped_multi_b)))
    assert [i.has_kernel(scoped_multi_a) for i in linked if i.has_kernel(scoped_multi_b)] \
        == [True]


def test_device_image_scope_in_two_images_is_invalid(queue):
    """The same kernels from a second bundle are a second image holding the variable
    (as in DPC++): a host copy cannot tell which one is meant."""
    _single(queue, scoped_multi_a, I32(1))
    other = sycl.build(sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.input,
                                              kernel=scoped_multi_a))
    queue.submit(lambda cgh: (cgh.use_kernel_bundle(other),
                              cgh.single_task(scoped_multi_a, I32(2)))).wait()
    with pytest.raises(sycl.exception) as e:
        queue.copy(np.array([1], I32), scoped_multi)
    assert e.value.code() == sycl.errc.invalid
    assert "2 device images" in str(e.value)


def test_host_access_is_enforced(queue):
    with pytest.raises(sycl.exception) as e:
        queue.copy(np.array([1], I32), read_only)
    assert e.value.code() == sycl.errc.invalid
    assert _read(queue, read_only, I32, 1).tolist() == [0]
    with pytest.raises(sycl.exception) as e:
        queue.copy(write_only, np.zeros(1, I32))
    assert e.value.code() == sycl.errc.invalid
    queue.copy(np.array([3], I32), write_only).wait()


def test_device_globals_property_set(queue):
    queue.single_task(bump, sycl.malloc_shared(1, I32, queue)).wait()
    ctx = queue.get_context()
    kb = sycl.build(sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel=scoped_inc))
    sets = [img.property_sets for img in kb.get_device_images()] if hasattr(
        kb, "get_device_images") else [img.property_sets for img in kb]
    found = [s["SYCL/device globals"] for s in sets if "SYCL/device globals" in s]
    assert found
    from pysycl.bundle.property_sets import unpack_device_global_descriptor
    assert unpack_device_global_descriptor(found[0][scoped.unique_id]) == (4, True)


# Shadowed names: same name in a function scope, its own ID and its own storage ---------
def _make_shadow():
    counter = sycl.device_global(I32)     # noqa: F811 - shadows the module-level one

    @sycl.kernel
    def bump_local(out: sycl.global_ptr[I32]):
        counter.set(counter.get() + 100)
        out[0] = counter.get()
    return counter, bump_local


def test_shadowed_names_are_independent(queue):
    local_counter, bump_local = _make_shadow()
    assert local_counter.unique_id != counter.unique_id
    assert counter.unique_id == f"{__name__}.counter"
    before = _read(queue, counter, I32, 1)[0]
    out = sycl.malloc_shared(1, I32, queue)
    _single(queue, bump_local, out)
    assert out[0] == 100
    assert _read(queue, counter, I32, 1)[0] == before
    assert _read(queue, local_counter, I32, 1)[0] == 100


def test_module_objects_registered_before_kernels_run(queue):
    from pysycl.detail import registered_unique_ids
    _single(queue, bump, sycl.malloc_shared(1, I32, queue))
    ids = registered_unique_ids()
    for obj in (unused, step, write_only):
        assert obj.unique_id in ids


# device_image_scope across Python modules and processes (subprocesses: the modules
# below are this test's own program) ---------------------------------------------------
SCOPE_OWNER = """
    import numpy as np
    import pysycl as sycl

    shared = sycl.device_global(np.int32, sycl.properties(sycl.device_image_scope))

    @sycl.kernel
    def put(v: np.int32):
        shared.set(v)

    @sycl.kernel
    def take(out: sycl.global_ptr[np.int32]):
        out[0] = shared.get()
"""

SCOPE_OTHER = """
    import numpy as np
    import pysycl as sycl
    from scope_owner import shared

    @sycl.kernel
    def take_too(out: sycl.global_ptr[np.int32]):
        out[0] = shared.get()
"""

SCOPE_SCRIPT = """
    import sys
    import numpy as np
    import pysycl as sycl
    import scope_owner as a

    backend, index, v = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    q = sycl.queue([d for d in sycl.device.get_devices() if d.backend.name == backend][index])
    out = sycl.malloc_shared(1, np.int32, q)
    q.single_task(a.put, np.int32(v)).wait()
    q.single_task(a.take, out).wait()
    back = np.zeros(1, np.int32)
    q.copy(a.shared, back).wait()
    print(int(out[0]), int(back[0]))
    import scope_other as b
    for attempt in ("submit", "link"):
        try:
            if attempt == "submit":
                q.single_task(b.take_too, out).wait()
            else:
                ids = [sycl.get_kernel_id(k) for k in (a.take, b.take_too)]
                sycl.link(sycl.compile(sycl.get_kernel_bundle(
                    q.get_context(), sycl.bundle_state.input, kernel_ids=ids)))
            print(attempt, "ran")
        except sycl.exception as e:
            print(attempt, e.code().name, e)
"""


def test_device_image_scope_across_modules_and_processes(tmp_path, device_param):
    """Kernels of one module share the variable in a fresh process and in one that
    starts warm from the disk cache; a kernel of another module using it is errc.build
    with DPC++'s message, at submit and at link."""
    import os
    import subprocess
    import sys
    import textwrap
    for name, text in (("scope_owner.py", SCOPE_OWNER), ("scope_other.py", SCOPE_OTHER),
                       ("scope_script.py", SCOPE_SCRIPT)):
        (tmp_path / name).write_text(textwrap.dedent(text))
    env = dict(os.environ, PYSYCL_CACHE="1", PYSYCL_CACHE_DIR=str(tmp_path / "cache"))
    rng = np.random.default_rng()
    for _run in ("cold", "warm"):
        v = int(rng.integers(1, 2 ** 30))
        done = subprocess.run([sys.executable, "scope_script.py", device_param.backend,
                               str(device_param.index), str(v)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0] == f"{v} {v}", (_run, done.stdout)
        message = ('device_global variable scope_owner.shared with property '
                   '"device_image_scope" is used in more than one device image')
        for line, attempt in zip(lines[1:], ("submit", "link")):
            assert line.startswith(f"{attempt} build ") and message in line, done.stdout


# Initial values (ext device_global's device_global(const T& init)) ------------------------
_INIT_RNG = np.random.default_rng(2024)
INIT_TABLE = _INIT_RNG.standard_normal(6).astype(F32)
INIT_SCALAR = int(_INIT_RNG.integers(-10 ** 6, 10 ** 6))
init_scalar = sycl.device_global(I32, INIT_SCALAR)
init_table = sycl.device_global(np.dtype((F32, 6)), INIT_TABLE)
init_copy = sycl.device_global(np.dtype((F32, 6)), init_table)      # init_table's initial value
init_scoped = sycl.device_global(I32, INIT_SCALAR + 1, sycl.properties(sycl.device_image_scope))
init_pair = sycl.device_global(Pair.dtype, Pair(np.int32(-3), np.float32(0.25)))


@sycl.kernel
def read_inits(out: sycl.global_ptr[F32], ints: sycl.global_ptr[I32]):
    for k in range(6):
        out[k] = init_table[k]
        out[6 + k] = init_copy[k]
    ints[0] = init_scalar.get()
    ints[1] = init_scoped.get()
    ints[2] = init_pair.get().a
    out[12] = init_pair.get().b


@sycl.kernel
def scale_table(f: F32):
    for k in range(6):
        init_table[k] = init_table[k] * f


def test_initial_values_on_device_and_host(queue):
    # the host sees the initial value before any kernel ran
    np.testing.assert_array_equal(_read(queue, init_table, F32, 6), INIT_TABLE)
    out = sycl.malloc_shared(13, F32, queue)
    ints = sycl.malloc_shared(3, I32, queue)
    try:
        _single(queue, read_inits, out, ints)
        np.testing.assert_array_equal(np.asarray(out)[:6], INIT_TABLE)
        np.testing.assert_array_equal(np.asarray(out)[6:12], INIT_TABLE)
        assert np.asarray(ints).tolist() == [INIT_SCALAR, INIT_SCALAR + 1, -3]
        assert np.asarray(out)[12] == F32(0.25)
        # Each variable is its own: changing one leaves the one made from its value.
        f = F32(_INIT_RNG.standard_normal())
        _single(queue, scale_table, f)
        _single(queue, read_inits, out, ints)
        np.testing.assert_allclose(np.asarray(out)[:6], INIT_TABLE * f, rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(out)[6:12], INIT_TABLE)
        np.testing.assert_array_equal(_read(queue, init_copy, F32, 6), INIT_TABLE)
    finally:
        sycl.free(out, queue)
        sycl.free(ints, queue)
    assert init_table.initial_value.tolist() == INIT_TABLE.tolist()   # the host object's


def test_device_global_copy_and_init_rules():
    import copy
    for make in (lambda: copy.copy(init_table), lambda: copy.deepcopy(init_table)):
        with pytest.raises(TypeError) as err:
            make()
        assert isinstance(err.value, sycl.exception)
        assert err.value.code() == sycl.errc.invalid
        assert "cannot be copied" in str(err.value)
    with pytest.raises(TypeError) as err:
        sycl.device_global(np.dtype((I32, 6)), init_table)
    assert "int32[6]" in str(err.value) and "float32[6]" in str(err.value)
    with pytest.raises(sycl.exception) as err:
        sycl.device_global(I32, "four")
    assert err.value.code() == sycl.errc.invalid
    props = sycl.device_global(I32, sycl.properties(sycl.device_image_scope))
    assert props.properties.has_property(sycl.device_image_scope) and props.initial_value == 0
