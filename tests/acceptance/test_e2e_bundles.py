"""Kernel bundles (SYCL 2020 4.11) as a program uses them: get_kernel_bundle, compile, link,
build, join, separate compilation through @sycl.external, this_module, use_kernel_bundle."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pysycl as sycl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "modules"))

import e2e_geometry  # noqa: E402  (defines the external functions)
import e2e_no_kernels  # noqa: E402
import e2e_shapes  # noqa: E402


@sycl.kernel
def affine_i64(it: sycl.item[1], x: sycl.global_ptr[np.int64], out: sycl.global_ptr[np.int64],
               a: np.int64, b: np.int64):
    i = it.get_id(0)
    out[i] = a * x[i] + b


@sycl.kernel(name="e2e.bundles.negate")
def negate_f32(it: sycl.item[1], x: sycl.global_ptr[np.float32], out: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    out[i] = -x[i]


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def run_affine(q, kernel, rng, bundle=None):
    n = 129
    x = rng.integers(-10 ** 6, 10 ** 6, n).astype(np.int64)
    a, b = int(rng.integers(-50, 50)), int(rng.integers(-10 ** 6, 10 ** 6))
    dx, out = sycl.malloc_shared(n, np.int64, q), sycl.malloc_shared(n, np.int64, q)
    try:
        np.asarray(dx)[:] = x

        def cgf(cgh):
            if bundle is not None:
                cgh.use_kernel_bundle(bundle)
            cgh.parallel_for(sycl.range(n), kernel, dx, out, np.int64(a), np.int64(b))
        q.submit(cgf).wait()
        np.testing.assert_array_equal(np.asarray(out), a * x + b)
    finally:
        sycl.free(dx, q)
        sycl.free(out, q)


def test_kernel_ids():
    kid = sycl.get_kernel_id(affine_i64)
    assert isinstance(kid, sycl.kernel_id)
    assert kid is sycl.get_kernel_id(affine_i64)
    assert kid.get_name() == f"{__name__}.affine_i64"
    assert sycl.get_kernel_id(negate_f32).get_name() == "e2e.bundles.negate"
    ids = sycl.get_kernel_ids()
    assert kid in ids and sycl.get_kernel_id(e2e_shapes.norms) in ids
    with pytest.raises(sycl.exception) as info:
        sycl.get_kernel_id(run_affine)
    assert info.value.code() == sycl.errc.invalid


def test_states_compile_link_build(queue, rng):
    ctx, dev = queue.get_context(), queue.get_device()
    kid = sycl.get_kernel_id(affine_i64)
    inp = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel_ids=[kid])
    assert isinstance(inp, sycl.kernel_bundle)
    assert inp.state == sycl.bundle_state.input and not inp.empty()
    assert inp.get_context() == ctx and dev in inp.get_devices()
    assert inp.has_kernel(kid) and inp.has_kernel(affine_i64, dev)
    assert kid in inp.get_kernel_ids()
    assert not inp.has_kernel(negate_f32)
    with pytest.raises(sycl.exception) as info:
        inp.get_kernel(kid)                      # only executable bundles give kernels
    assert info.value.code() == sycl.errc.invalid

    obj = sycl.compile(inp)
    assert obj.state == sycl.bundle_state.object and obj.has_kernel(kid)
    exe = sycl.link(obj)
    assert exe.state == sycl.bundle_state.executable and exe.has_kernel(kid)
    exe2 = sycl.build(inp)
    assert exe2.state == sycl.bundle_state.executable and exe2.has_kernel(kid)
    for kb in (exe, exe2):
        run_affine(queue, affine_i64, rng, bundle=kb)

    k = exe.get_kernel(affine_i64)
    assert isinstance(k, sycl.kernel)
    assert k.get_info(sycl.info.kernel.function_name) == kid.get_name()
    assert k.get_kernel_bundle() == exe and k.get_context() == ctx
    run_affine(queue, k, rng)                    # a sycl.kernel object launches too


offset_id = sycl.specialization_id(np.int64, 0)


@sycl.kernel
def offset_fill(it: sycl.item[1], h: sycl.kernel_handler, out: sycl.global_ptr[np.int64]):
    out[it.get_id(0)] = it.get_id(0) + h.get_specialization_constant(offset_id)


def test_kernel_object_runs_from_its_own_bundle(queue, rng):
    """SYCL 2020 4.9.4.2: parallel_for(range, kernel_object) ignores a bundle bound with
    use_kernel_bundle and runs the kernel from the bundle it was taken from (its code and
    specialization-constant values)."""
    ctx = queue.get_context()
    kid = sycl.get_kernel_id(offset_fill)
    va, vb = (int(v) for v in rng.integers(1, 10 ** 6, 2))

    def built(value):
        kb = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel_ids=[kid])
        kb.set_specialization_constant(offset_id, value)
        return sycl.build(kb)
    a, b = built(va), built(vb)
    out = sycl.malloc_shared(16, np.int64, queue)
    for bound in (b, a, None):
        out[:] = -1

        def cgf(cgh, bound=bound):
            if bound is not None:
                cgh.use_kernel_bundle(bound)
            cgh.parallel_for(16, a.get_kernel(kid), out)
        queue.submit(cgf).wait()
        np.testing.assert_array_equal(out.to_numpy(), np.arange(16) + va)
    queue.submit(lambda cgh: (cgh.use_kernel_bundle(b), cgh.parallel_for(16, offset_fill, out))
                 ).wait()
    np.testing.assert_array_equal(out.to_numpy(), np.arange(16) + vb)   # the function: b's
    others = [d for d in sycl.device.get_devices() if d.backend != queue.get_device().backend]
    if others:    # a bundle of this context has no image for another backend's device
        q2 = sycl.queue(others[0])
        mem = sycl.malloc_shared(16, np.int64, q2)
        with pytest.raises(sycl.exception) as info:
            q2.parallel_for(16, a.get_kernel(kid), mem).wait()
        assert info.value.code() == sycl.errc.kernel_not_supported
        assert "taken from" in str(info.value)


def test_device_images(queue):
    ctx = queue.get_context()
    exe = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable,
                                 kernel_ids=[sycl.get_kernel_id(affine_i64)])
    images = list(exe)
    assert images and all(isinstance(img, sycl.device_image) for img in images)
    img = next(i for i in images if i.has_kernel(affine_i64))
    assert img.state == sycl.bundle_state.executable
    assert img.has_kernel(sycl.get_kernel_id(affine_i64), queue.get_device())
    assert not img.has_kernel(negate_f32)
    assert isinstance(img.target, str) and img.target
    assert img.format in ("ir", "spirv", "ptx", "cubin", "object")
    assert isinstance(img.property_sets, dict)
    assert "ir" in img.asm and "affine_i64" in img.asm["ir"]


def test_get_kernel_bundle_forms(queue, rng):
    ctx = queue.get_context()
    one = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable, kernel=negate_f32)
    assert one.has_kernel(negate_f32) and not one.has_kernel(affine_i64)
    # (no kernel_ids would take every kernel of the process, other tests' broken ones too)
    kids = [sycl.get_kernel_id(k) for k in (affine_i64, negate_f32, e2e_shapes.norms)]
    several = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel_ids=kids)
    assert several.has_kernel(affine_i64) and several.has_kernel(e2e_shapes.norms)
    picked = sycl.get_kernel_bundle(
        ctx, sycl.bundle_state.input,
        kernel_ids=[sycl.get_kernel_id(affine_i64), sycl.get_kernel_id(negate_f32)])
    assert picked.has_kernel(affine_i64) and picked.has_kernel(negate_f32)
    assert not picked.has_kernel(e2e_shapes.norms)
    assert sycl.has_kernel_bundle(ctx, sycl.bundle_state.executable,
                                  kernel_ids=[sycl.get_kernel_id(affine_i64)])
    assert sycl.is_compatible([sycl.get_kernel_id(affine_i64)], queue.get_device())
    run_affine(queue, affine_i64, rng, bundle=sycl.build(picked))


def test_join(queue, rng):
    ctx = queue.get_context()
    a = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable, kernel=affine_i64)
    b = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable, kernel=negate_f32)
    both = sycl.join([a, b])
    assert both.state == sycl.bundle_state.executable
    assert both.has_kernel(affine_i64) and both.has_kernel(negate_f32)
    assert set(both.get_kernel_ids()) == set(a.get_kernel_ids()) | set(b.get_kernel_ids())
    run_affine(queue, affine_i64, rng, bundle=both)
    n = 50
    x = rng.standard_normal(n).astype(np.float32)
    dx, out = sycl.malloc_shared(n, np.float32, queue), sycl.malloc_shared(n, np.float32, queue)
    try:
        np.asarray(dx)[:] = x

        def cgf(cgh):
            cgh.use_kernel_bundle(both)
            cgh.parallel_for(sycl.range(n), negate_f32, dx, out)
        queue.submit(cgf).wait()
        np.testing.assert_array_equal(np.asarray(out), -x)
    finally:
        sycl.free(dx, queue)
        sycl.free(out, queue)


SELECTOR_PROGRAM = textwrap.dedent("""
    import numpy as np
    import pysycl as sycl

    @sycl.kernel
    def keep_me(it: sycl.item[1], out: sycl.global_ptr[np.int32]):
        out[it.get_id(0)] = np.int32(it.get_id(0)) * 5

    @sycl.kernel
    def drop_me(it: sycl.item[1], out: sycl.global_ptr[np.int32]):
        out[it.get_id(0)] = np.int32(1)

    q = sycl.queue(sycl.device.get_devices()[{index}])
    kb = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.executable,
                                selector=lambda img: img.has_kernel(keep_me))
    assert kb.has_kernel(keep_me) and not kb.has_kernel(drop_me), list(kb)
    out = sycl.malloc_shared(6, np.int32, q)
    def cgf(cgh):
        cgh.use_kernel_bundle(kb)
        cgh.parallel_for(sycl.range(6), keep_me, out)
    q.submit(cgf).wait()
    print([int(v) for v in np.asarray(out)])
""")


def test_get_kernel_bundle_with_image_selector(device, tmp_path):
    # A program of its own: with no kernel_ids, the bundle starts from every kernel defined
    # in the process (in this test session, other tests' deliberately broken ones too).
    script = tmp_path / "selector_program.py"
    script.write_text(SELECTOR_PROGRAM.format(index=sycl.device.get_devices().index(device)))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == str([5 * i for i in range(6)])


# Separate compilation: two Python modules linked through @sycl.external --------------------
def run_shapes(q, rng, bundle=None):
    n = 300
    xs = rng.standard_normal(n).astype(np.float32)
    ys = rng.standard_normal(n).astype(np.float32)
    a = rng.integers(-1000, 1000, n).astype(np.int64)
    b = rng.integers(-1000, 1000, n).astype(np.int64)
    bufs = [sycl.malloc_shared(n, dt, q) for dt in (np.float32, np.float32, np.float32,
                                                     np.int64, np.int64, np.int64)]
    try:
        for buf, v in zip(bufs, (xs, ys, None, a, b, None)):
            if v is not None:
                np.asarray(buf)[:] = v

        def cg_norms(cgh):
            if bundle is not None:
                cgh.use_kernel_bundle(bundle)
            cgh.parallel_for(sycl.range(n), e2e_shapes.norms, *bufs[:3])

        def cg_mixes(cgh):
            if bundle is not None:
                cgh.use_kernel_bundle(bundle)
            cgh.parallel_for(sycl.range(n), e2e_shapes.mixes, *bufs[3:])
        q.submit(cg_norms).wait()
        q.submit(cg_mixes).wait()
        np.testing.assert_allclose(np.asarray(bufs[2]), xs * xs + ys * ys, rtol=1e-6)
        t = np.arange(n) % 11
        np.testing.assert_array_equal(np.asarray(bufs[5]), a * (10 - t) + b * t)
    finally:
        for buf in bufs:
            sycl.free(buf, q)


def test_external_functions_linked_explicitly(queue, rng):
    ctx = queue.get_context()
    kids = [sycl.get_kernel_id(e2e_shapes.norms), sycl.get_kernel_id(e2e_shapes.mixes)]
    objects = sycl.get_kernel_bundle(ctx, sycl.bundle_state.object, kernel_ids=kids)
    assert objects.has_kernel(kids[0]) and objects.has_kernel(kids[1])
    exe = sycl.link(objects)
    assert exe.has_kernel(kids[0]) and exe.has_kernel(kids[1])
    run_shapes(queue, rng, bundle=exe)


def test_external_functions_compiled_separately_then_linked(queue, rng):
    ctx = queue.get_context()
    kernels = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel=e2e_shapes.norms)
    more = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel=e2e_shapes.mixes)
    # the kernels' images only declare norm2/mix; get_kernel_bundle adds the library image
    exe = sycl.link([sycl.compile(kernels), sycl.compile(more)])
    run_shapes(queue, rng, bundle=exe)


def test_link_uses_only_the_linked_bundles(queue, rng):
    """A module's object bundle links alone only if it defines what it imports: the
    definitions in another imported module count only when that module's bundle is
    linked too (SYCL 2020 4.11.11)."""
    ctx = queue.get_context()
    shapes = e2e_shapes.module_bundle(ctx, sycl.bundle_state.object)
    assert shapes.has_kernel(e2e_shapes.norms) and len(list(shapes)) == 2
    with pytest.raises(sycl.exception) as err:
        sycl.link(shapes)
    assert err.value.code() == sycl.errc.build
    assert "unresolved symbol" in str(err.value)
    assert "'norm2'" in str(err.value) or "'mix'" in str(err.value)
    # An image picked by a selector is linked as it is, too.
    alone = sycl.get_kernel_bundle(ctx, sycl.bundle_state.object,
                                   selector=lambda img: img.has_kernel(e2e_shapes.mixes))
    with pytest.raises(sycl.exception, match="unresolved symbol 'mix'") as err:
        sycl.link(alone)
    assert err.value.code() == sycl.errc.build
    # With the library module's bundle the same objects link and run.
    library = e2e_geometry.module_bundle(ctx, sycl.bundle_state.object)
    assert library.get_kernel_ids() == [] and not library.empty()
    run_shapes(queue, rng, bundle=sycl.link([shapes, library]))
    # The default lookup still finds the library: a kernel launched directly, and
    # get_kernel_bundle's images with the libraries they import.
    run_shapes(queue, rng, bundle=sycl.link(sycl.get_kernel_bundle(
        ctx, sycl.bundle_state.object, kernel_ids=[sycl.get_kernel_id(e2e_shapes.norms),
                                                   sycl.get_kernel_id(e2e_shapes.mixes)])))


def test_external_functions_default_path(queue, rng):
    run_shapes(queue, rng)


# this_module ---------------------------------------------------------------------------
def test_this_module(queue, rng):
    ctx = queue.get_context()
    mine = sycl.this_module.get(ctx, sycl.bundle_state.executable)
    assert mine.has_kernel(affine_i64) and mine.has_kernel(negate_f32)
    assert not mine.has_kernel(e2e_shapes.norms)
    run_affine(queue, affine_i64, rng, bundle=mine)
    assert sycl.this_module.has_any_module(ctx)
    assert sycl.this_module.has_module_in(ctx, sycl.bundle_state.executable)

    theirs = e2e_shapes.module_bundle(ctx, sycl.bundle_state.input)
    assert theirs.state == sycl.bundle_state.input
    assert theirs.has_kernel(e2e_shapes.norms) and not theirs.has_kernel(affine_i64)
    assert e2e_shapes.module_flags(ctx) == (True, True)
    assert e2e_no_kernels.module_flags(ctx) is False


# use_kernel_bundle rules -----------------------------------------------------------------
def test_use_kernel_bundle_without_the_kernel(queue, rng):
    ctx = queue.get_context()
    only_negate = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable, kernel=negate_f32)
    with pytest.raises(sycl.exception) as info:
        run_affine(queue, affine_i64, rng, bundle=only_negate)
    assert info.value.code() == sycl.errc.kernel_not_supported
    assert "affine_i64" in str(info.value)
    run_affine(queue, affine_i64, rng)          # the queue still works


def test_use_kernel_bundle_rejects_input_state_and_other_context(queue, rng):
    ctx = queue.get_context()
    inp = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel=affine_i64)
    with pytest.raises(sycl.exception) as info:
        run_affine(queue, affine_i64, rng, bundle=inp)
    assert info.value.code() == sycl.errc.invalid
    other_ctx = sycl.context([queue.get_device()])
    assert other_ctx != ctx
    foreign = sycl.get_kernel_bundle(other_ctx, sycl.bundle_state.executable, kernel=affine_i64)
    with pytest.raises(sycl.exception) as info:
        run_affine(queue, affine_i64, rng, bundle=foreign)
    assert info.value.code() == sycl.errc.invalid
    run_affine(queue, affine_i64, rng)


def test_save_and_load_bundle(queue, rng, tmp_path):
    ctx = queue.get_context()
    exe = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable, kernel=affine_i64)
    path = tmp_path / "affine.syclbin"
    sycl.save_kernel_bundle(exe, path)
    assert path.stat().st_size > 0
    loaded = sycl.load_kernel_bundle(ctx, path)
    assert loaded.state == sycl.bundle_state.executable and loaded.has_kernel(affine_i64)
    run_affine(queue, affine_i64, rng, bundle=loaded)
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(sycl.exception) as info:
        sycl.load_kernel_bundle(ctx, path)
    assert info.value.code() == sycl.errc.invalid


@sycl.kernel(properties=sycl.properties(sycl.work_group_size(4, 8)))
def fixed_tile(nd: sycl.nd_item[2], out: sycl.global_ptr[np.int64],
               tile: sycl.local_accessor[np.int64, 1]):
    tile[nd.get_local_linear_id()] = nd.get_global_linear_id()
    sycl.group_barrier(nd.get_group())
    out[nd.get_global_linear_id()] = sycl.reduce_over_group(
        nd.get_group(), tile[nd.get_local_linear_id()], sycl.plus())


def test_kernel_device_specific_info(queue):
    """SYCL 2020 4.11.13.2: kernel.get_info(info.kernel_device_specific.X, device); a
    work-group of work_group_size items launches; a required size is reported."""
    dev, ctx = queue.get_device(), queue.get_context()
    ids = [sycl.get_kernel_id(fixed_tile), sycl.get_kernel_id(affine_i64)]
    kb = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable, kernel_ids=ids)
    fixed, free = (kb.get_kernel(k) for k in ids)
    info = sycl.info.kernel_device_specific
    assert fixed.get_info(info.work_group_size, dev) == 32
    assert tuple(fixed.get_info(info.compile_work_group_size, dev)) == (1, 4, 8)
    assert tuple(free.get_info(info.compile_work_group_size, dev)) == (0, 0, 0)
    assert free.get_info(info.work_group_size, dev) == dev.max_work_group_size
    sizes = dev.get_info(sycl.info.device.sub_group_sizes)
    assert free.get_info(info.max_sub_group_size, dev) == max(sizes)
    assert free.get_info(info.preferred_work_group_size_multiple, dev) >= 1
    assert fixed.get_info(info.max_num_sub_groups, dev) * min(sizes) <= 32
    out = sycl.malloc_shared(64, np.int64, queue)
    queue.submit(lambda cgh: cgh.parallel_for(
        sycl.nd_range(sycl.range(8, 8), sycl.range(4, 8)), fixed, out,
        sycl.local_accessor(np.int64, fixed.get_info(info.work_group_size, dev), cgh))).wait()
    ids_by_group = np.arange(64).reshape(2, 32)
    np.testing.assert_array_equal(out.to_numpy(), np.repeat(ids_by_group.sum(1), 32))
    with pytest.raises(sycl.exception) as e:
        fixed.get_info(info.work_group_size)          # the device is needed
    assert e.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception) as e:
        fixed.get_info(sycl.info.device.name)
    assert e.value.code() == sycl.errc.invalid
