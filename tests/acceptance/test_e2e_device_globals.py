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
def scoped_multi_a():
    scoped_multi.set(1)


@sycl.kernel
def scoped_multi_b():
    scoped_multi.set(2)


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


def test_device_image_scope_in_two_images_is_invalid(queue):
    _single(queue, scoped_multi_a)
    _single(queue, scoped_multi_b)
    with pytest.raises(sycl.exception) as e:
        queue.copy(np.array([1], I32), scoped_multi)
    assert e.value.code() == sycl.errc.invalid


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
