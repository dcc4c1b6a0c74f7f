"""Specialization constants: SYCL 2020 4.9.5 rules, layout in every set order, values
through compile/link/build/join, separately compiled modules, lowering equivalence and
the literal-build cache. Every test runs on every device (the ``queue`` fixture)."""
import itertools
import os
import sys

import numpy as np
import pytest

import pysycl as sycl
from pysycl.bundle import stats
from pysycl.host_objects import value_bytes

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "spec_modules"))
import spec_mod_a  # noqa: E402
import spec_mod_b  # noqa: E402


def _need_fp64(queue):
    if not queue.get_device().has(sycl.aspect.fp64):
        pytest.skip("needs fp64")


def _lowering_props(mode):
    return sycl.properties(sycl.spec_constant_lowering(mode))


def _modes_for(queue):
    """Lowerings to compare on this device: literal and emulated everywhere, native
    where the target takes SPIR-V spec constants."""
    modes = ["literal", "emulated"]
    tgt = getattr(queue.get_device(), "_desc", None)
    if getattr(getattr(tgt, "target", None), "native_spec_constants", False):
        modes.append("native")
    return modes


# Seed 000's composite: {A a[2]; vec<int,2> b}, A = {int x; float y} -----------------------
a_t = np.dtype([("x", np.int32), ("y", np.float32)], align=True)
pod_t = np.dtype([("a", a_t, (2,)), ("b", sycl.vec(np.int32, 2))], align=True)
i32_id = sycl.specialization_id(np.int32)
pod_id = sycl.specialization_id(pod_t)


@sycl.kernel
def read_pod(h: sycl.kernel_handler, out_i: sycl.accessor[np.int32, 1, sycl.write_only],
             out_pod: sycl.accessor[pod_t, 1, sycl.write_only]):
    out_i[0] = h.get_specialization_constant(i32_id)
    out_pod[0] = h.get_specialization_constant(pod_id)


def _gold(goldi, goldf):
    return (((goldi, goldf), (goldi + 1, goldf + 1)), (goldi, goldi))


def _run_pod(queue, kernel=read_pod, values=None, bundle=None):
    out_i = np.full(1, -1, np.int32)
    out_pod = np.zeros(1, pod_t)
    out_pod.view(np.uint8)[:] = 0xAB
    with sycl.buffer(out_i) as bi, sycl.buffer(out_pod) as bp:
        def cgf(cgh):
            if bundle is not None:
                cgh.use_kernel_bundle(bundle)
            for sid, v in (values or {}).items():
                cgh.set_specialization_constant(sid, v)
            cgh.single_task(kernel, sycl.accessor(bi, cgh, sycl.write_only),
                            sycl.accessor(bp, cgh, sycl.write_only))
        queue.submit(cgf).wait()
    return int(out_i[0]), out_pod[0]


def _pod_equal(got, expected):
    exp = np.frombuffer(value_bytes(expected, pod_t), pod_t)[0]
    assert got["a"]["x"].tolist() == exp["a"]["x"].tolist()
    assert got["a"]["y"].tolist() == exp["a"]["y"].tolist()
    assert got["b"].tolist() == exp["b"].tolist()


def test_seed000_composite_in_all_three_api_styles(queue):
    rng = np.random.default_rng(0)
    goldi, goldf = int(rng.integers(-1000, 1000)), float(np.float32(rng.standard_normal()))
    gold = _gold(goldi, goldf)
    # SYCL 2020 handler style, and unset (zero)
    got_i, got_pod = _run_pod(queue, values={i32_id: goldi, pod_id: gold})
    assert got_i == goldi
    _pod_equal(got_pod, gold)
    got_i, got_pod = _run_pod(queue)
    assert got_i == 0
    _pod_equal(got_pod, np.zeros((), pod_t))
    # kernel_bundle style
    inp = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.input,
                                 devices=[queue.get_device()], kernel=read_pod)
    inp.set_specialization_constant(i32_id, goldi + 5)
    inp.set_specialization_constant(pod_id, np.frombuffer(value_bytes(gold, pod_t), pod_t)[0])  # np.void
    got_i, got_pod = _run_pod(queue, bundle=sycl.build(inp))
    assert got_i == goldi + 5
    _pod_equal(got_pod, gold)
    # seed-0 style: sycl.compat.program
    prog = sycl.compat.program(queue.get_context(), [queue.get_device()])
    i32 = prog.set_spec_constant(i32_id, goldi - 1)
    pod = prog.set_spec_constant(pod_id, _gold(goldi - 1, goldf))
    assert isinstance(i32, sycl.spec_constant) and i32.get() == goldi - 1
    assert pod.get() == _gold(goldi - 1, goldf)
    prog.build_with_kernel_type(read_pod)
    with pytest.raises(sycl.exception) as info:
        prog.build_with_kernel_type(read_pod)
    assert info.value.code() == sycl.errc.invalid
    got_i, got_pod = _run_pod(queue, kernel=prog.get_kernel(read_pod))
    assert got_i == goldi - 1
    _pod_equal(got_pod, _gold(goldi - 1, goldf))


# Four constants of mixed sizes, every set order --------------------------------------------
pad_t = np.dtype([("c", np.int8), ("d", np.float64), ("s", np.int16)], align=True)
c8_id = sycl.specialization_id(np.int8, 1)          # then a float64 at buffer offset 1
c64_id = sycl.specialization_id(np.float64, 2.0)
cs_id = sycl.specialization_id(pad_t, (3, 4.0, 5))
cv_id = sycl.specialization_id(sycl.vec(np.float32, 3), (6, 7, 8, 0))
FOUR = (c8_id, c64_id, cs_id, cv_id)


@sycl.kernel
def read_four(h: sycl.kernel_handler, o8: sycl.global_ptr[np.int8],
              o64: sycl.global_ptr[np.float64], os_: sycl.accessor[pad_t, 1, sycl.write_only],
              ov: sycl.global_ptr[np.float32]):
    o8[0] = h.get_specialization_constant(c8_id)
    o64[0] = h.get_specialization_constant(c64_id)
    os_[0] = h.get_specialization_constant(cs_id)
    v = h.get_specialization_constant(cv_id)
    for k in range(3):
        ov[k] = v[k]


def _random_four(rng):
    return {c8_id: np.int8(rng.integers(-128, 128)),
            c64_id: float(rng.standard_normal() * 1e6),
            cs_id: (int(rng.integers(-128, 128)), float(rng.standard_normal()),
                    int(rng.integers(-2 ** 15, 2 ** 15))),
            cv_id: tuple(float(np.float32(x)) for x in rng.standard_normal(3)) + (0.0,)}


def _run_four(queue, order=None, values=None, bundle=None):
    o8 = sycl.malloc_shared(1, np.int8, queue)
    o64 = sycl.malloc_shared(1, np.float64, queue)
    ov = sycl.malloc_shared(3, np.float32, queue)
    os_ = np.zeros(1, pad_t)
    try:
        with sycl.buffer(os_) as b:
            def cgf(cgh):
                if bundle is not None:
                    cgh.use_kernel_bundle(bundle)
                for sid in (order or ()):
                    cgh.set_specialization_constant(sid, values[sid])
                cgh.single_task(read_four, o8, o64, sycl.accessor(b, cgh, sycl.write_only), ov)
            queue.submit(cgf).wait()
        return (int(np.asarray(o8)[0]), float(np.asarray(o64)[0]),
                (int(os_[0]["c"]), float(os_[0]["d"]), int(os_[0]["s"])),
                tuple(np.asarray(ov).tolist()))
    finally:
        for p in (o8, o64, ov):
            sycl.free(p, queue)


def _expected_four(values):
    v = values
    return (int(v[c8_id]), float(v[c64_id]), (int(v[cs_id][0]), float(v[cs_id][1]),
                                              int(v[cs_id][2])), tuple(v[cv_id][:3]))


def test_four_constants_of_mixed_sizes_in_every_set_order(queue):
    _need_fp64(queue)
    rng = np.random.default_rng(42)
    assert _run_four(queue) == (1, 2.0, (3, 4.0, 5), (6.0, 7.0, 8.0))     # defaults
    emulated = {}
    for order in itertools.permutations(FOUR):
        values = _random_four(rng)
        expected = _expected_four(values)
        assert _run_four(queue, order, values) == expected, order        # handler (auto)
        inp = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.input,
                                     devices=[queue.get_device()], kernel=read_four)
        for sid in order:
            inp.set_specialization_constant(sid, values[sid])
        for mode in _modes_for(queue):
            exe = sycl.build(inp, properties=_lowering_props(mode))
            assert {i.spec_constant_lowering for i in exe} == {mode}
            got = _run_four(queue, bundle=exe)
            assert got == expected, (mode, order)
            emulated.setdefault(mode, []).append(got)
    assert emulated["literal"] == emulated["emulated"]


def test_emulated_offsets_are_unaligned_and_match_the_property_sets(queue):
    inp = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.input,
                                 devices=[queue.get_device()], kernel=read_four)
    exe = sycl.build(inp, properties=_lowering_props("emulated"))
    (img,) = list(exe)
    ids = img.spec_ids
    assert ids.offsets == {c8_id.unique_id: 0, c64_id.unique_id: 1, cs_id.unique_id: 9,
                           cv_id.unique_id: 33}
    sets = img.property_sets
    assert set(sets["SYCL/specialization constants"]) == {s.unique_id for s in FOUR}
    blob = sets["SYCL/specialization constants default values"]["all"]
    assert blob[:1] == np.int8(1).tobytes() and blob[1:9] == np.float64(2.0).tobytes()
    assert blob[9:33] == np.array((3, 4.0, 5), pad_t).tobytes()[:24]


# Isolation between command groups -----------------------------------------------------------
iso_id = sycl.specialization_id(np.int32, 5)


@sycl.kernel
def write_iso(h: sycl.kernel_handler, out: sycl.global_ptr[np.int32]):
    out[0] = h.get_specialization_constant(iso_id)


def test_no_leak_between_invocations_of_one_command_group_function(queue):
    out = sycl.malloc_shared(1, np.int32, queue)
    other = sycl.queue(queue.get_device())
    try:
        calls = []

        def cgf(cgh):          # sets a value only the first time it is called
            calls.append(1)
            if len(calls) == 1:
                cgh.set_specialization_constant(iso_id, 77)
                assert cgh.get_specialization_constant(iso_id) == 77
            else:
                assert cgh.get_specialization_constant(iso_id) == 5
            cgh.single_task(write_iso, out)
        queue.submit(cgf).wait()
        assert np.asarray(out)[0] == 77
        queue.submit(cgf).wait()
        assert np.asarray(out)[0] == 5
        other.submit(lambda cgh: (cgh.set_specialization_constant(iso_id, -1),
                                  cgh.single_task(write_iso, out))).wait()
        assert np.asarray(out)[0] == -1
        queue.single_task(write_iso, out).wait()            # shortcut: default
        assert np.asarray(out)[0] == 5
        # a bundle-bound group sees the bundle's value, not any handler's
        inp = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.input,
                                     devices=[queue.get_device()], kernel=write_iso)
        inp.set_specialization_constant(iso_id, 31)
        exe = sycl.build(inp)
        queue.submit(lambda cgh: (cgh.use_kernel_bundle(exe),
                                  cgh.single_task(write_iso, out))).wait()
        assert np.asarray(out)[0] == 31
        queue.single_task(write_iso, out).wait()
        assert np.asarray(out)[0] == 5
    finally:
        sycl.free(out, queue)


# Rules: errc.invalid, queries, last set wins ------------------------------------------------
unused_id = sycl.specialization_id(np.float32, 1.5)


def test_handler_and_bundle_rules_with_empty_and_non_empty_bundles(queue):
    ctx = queue.get_context()
    devs = [queue.get_device()]
    full = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable, devices=devs,
                                  kernel=write_iso)
    empty = sycl.get_kernel_bundle(ctx, sycl.bundle_state.executable, devices=devs,
                                   selector=lambda img: False)
    assert empty.empty()
    for kb in (empty, full):
        def set_then_use(cgh, kb=kb):
            cgh.set_specialization_constant(iso_id, 1)
            cgh.use_kernel_bundle(kb)

        def use_then_set(cgh, kb=kb):
            cgh.use_kernel_bundle(kb)
            cgh.set_specialization_constant(iso_id, 1)

        def use_then_get(cgh, kb=kb):
            cgh.use_kernel_bundle(kb)
            cgh.get_specialization_constant(iso_id)

        def use_then_placeholder(cgh, kb=kb):
            cgh.use_kernel_bundle(kb)
            cgh.set_spec_constant(iso_id, 1)

        for cgf in (set_then_use, use_then_set, use_then_get, use_then_placeholder):
            with pytest.raises(sycl.exception) as info:
                queue.submit(cgf)
            assert info.value.code() == sycl.errc.invalid, cgf.__name__
    # a value NumPy cannot convert
    with pytest.raises(sycl.exception) as info:
        queue.submit(lambda cgh: cgh.set_specialization_constant(iso_id, "seven"))
    assert info.value.code() == sycl.errc.invalid


def test_bundle_queries_and_unused_constants(queue):
    ctx, devs = queue.get_context(), [queue.get_device()]
    empty = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, devices=devs,
                                   selector=lambda img: False)
    assert not empty.contains_specialization_constants()
    assert not empty.native_specialization_constant()
    assert not empty.has_specialization_constant(iso_id)
    assert not sycl.join([]).native_specialization_constant()
    inp = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, devices=devs, kernel=write_iso)
    assert inp.contains_specialization_constants()
    assert inp.has_specialization_constant(iso_id)
    assert not inp.has_specialization_constant(unused_id)
    # a constant no kernel uses can be set and read back
    assert inp.get_specialization_constant(unused_id) == np.float32(1.5)
    inp.set_specialization_constant(unused_id, 2.75)
    assert inp.get_specialization_constant(unused_id) == np.float32(2.75)
    # last set wins
    inp.set_specialization_constant(iso_id, 1)
    inp.set_specialization_constant(iso_id, 2)
    assert inp.get_specialization_constant(iso_id) == 2
    exe = sycl.build(inp)
    assert exe.get_specialization_constant(unused_id) == np.float32(2.75)
    assert exe.get_specialization_constant(iso_id) == 2
    natives = {img.spec_constant_lowering == "native" for img in exe}
    assert exe.native_specialization_constant() == (natives == {True})
    for kb in (sycl.compile(inp), exe):
        with pytest.raises(sycl.exception) as info:
            kb.set_specialization_constant(iso_id, 3)
        assert info.value.code() == sycl.errc.invalid


# compile / link / build / join --------------------------------------------------------------
def _read(queue, kernel, n, bundle=None, values=None):
    out = sycl.malloc_shared(n, np.float64, queue)
    try:
        def cgf(cgh):
            if bundle is not None:
                cgh.use_kernel_bundle(bundle)
            for sid, v in (values or {}).items():
                cgh.set_specialization_constant(sid, v)
            cgh.single_task(kernel, out)
        queue.submit(cgf).wait()
        return np.asarray(out).tolist()
    finally:
        sycl.free(out, queue)


def test_values_carry_through_compile_link_build_and_join(queue):
    _need_fp64(queue)
    ctx, devs = queue.get_context(), [queue.get_device()]
    ia = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, devices=devs,
                                kernel=spec_mod_a.read_a)
    ib = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, devices=devs,
                                kernel=spec_mod_b.read_b)
    ia.set_specialization_constant(spec_mod_a.big, -8.5)
    ib.set_specialization_constant(spec_mod_b.small, (-2, 0.75))
    oa = sycl.compile(ia)
    assert oa.get_specialization_constant(spec_mod_a.big) == -8.5
    assert oa.get_specialization_constant(spec_mod_a.small) == -3        # default
    ea = sycl.link(oa)
    assert ea.get_specialization_constant(spec_mod_a.big) == -8.5
    assert _read(queue, spec_mod_a.read_a, 2, bundle=ea) == [-3.0, -8.5]
    eb = sycl.build(ib)
    assert _read(queue, spec_mod_b.read_b, 3, bundle=eb) == [-2.0, 0.75, 1000.0]
    joined = sycl.join([ea, eb])
    assert joined.get_specialization_constant(spec_mod_a.big) == -8.5
    assert joined.get_specialization_constant(spec_mod_b.small)["i"] == -2
    assert _read(queue, spec_mod_a.read_a, 2, bundle=joined) == [-3.0, -8.5]
    assert _read(queue, spec_mod_b.read_b, 3, bundle=joined) == [-2.0, 0.75, 1000.0]
    # join of input bundles, then build
    ji = sycl.join([ia, ib])
    assert ji.get_specialization_constant(spec_mod_a.big) == -8.5
    ji.set_specialization_constant(spec_mod_b.big, 4)
    ej = sycl.build(ji)
    assert _read(queue, spec_mod_a.read_a, 2, bundle=ej) == [-3.0, -8.5]
    assert _read(queue, spec_mod_b.read_b, 3, bundle=ej) == [-2.0, 0.75, 4.0]


def test_two_separately_compiled_modules_linked_without_id_clashes(queue):
    _need_fp64(queue)
    ctx, devs = queue.get_context(), [queue.get_device()]
    assert spec_mod_a.small.unique_id != spec_mod_b.small.unique_id
    oa = sycl.compile(sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, devices=devs,
                                             kernel=spec_mod_a.read_a))
    inb = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, devices=devs,
                                 kernel=spec_mod_b.read_b)
    inb.set_specialization_constant(spec_mod_b.big, -12)
    ob = sycl.compile(inb)
    for mode in _modes_for(queue):
        exe = sycl.link([oa, ob], properties=_lowering_props(mode))
        leaves = {}
        for img in exe:
            for sym, desc in img.property_sets["SYCL/specialization constants"].items():
                ids = [int.from_bytes(desc[i:i + 4], "little") for i in range(0, len(desc), 12)]
                leaves[sym] = [i for i in ids if i != 0xFFFFFFFF]
        assert set(leaves) == {spec_mod_a.small.unique_id, spec_mod_a.big.unique_id,
                               spec_mod_b.small.unique_id, spec_mod_b.big.unique_id}
        flat = [i for v in leaves.values() for i in v]
        assert sorted(flat) == list(range(len(flat))), leaves       # one link, no clashes
        assert _read(queue, spec_mod_a.read_a, 2, bundle=exe) == [-3.0, 0.25]
        assert _read(queue, spec_mod_b.read_b, 3, bundle=exe) == [7.0, 1.5, -12.0]


# Placeholders (seed 002) in two kernels with the same parameter name -------------------------
f_id = sycl.specialization_id(np.float32, 0.5)
n_id = sycl.specialization_id(np.int16, 3)


@sycl.kernel
def ph_float(p: sycl.spec_constant[f_id], out: sycl.global_ptr[np.float64]):
    out[0] = np.float64(p.get())


@sycl.kernel
def ph_int(p: sycl.spec_constant[np.int16, n_id], out: sycl.global_ptr[np.float64]):
    out[0] = np.float64(p.get())


def test_placeholders_bind_per_kernel_and_per_command_group(queue):
    _need_fp64(queue)
    out = sycl.malloc_shared(1, np.float64, queue)
    try:
        for v in (1.25, -3.5, 1.25):
            queue.submit(lambda cgh: cgh.single_task(
                ph_float, cgh.set_spec_constant(f_id, v), out)).wait()
            assert np.asarray(out)[0] == v
            queue.submit(lambda cgh: cgh.single_task(
                ph_int, cgh.set_spec_constant(n_id, int(v * 4)), out)).wait()
            assert np.asarray(out)[0] == int(v * 4)
        with pytest.raises(sycl.exception) as info:
            queue.submit(lambda cgh: cgh.single_task(ph_int, 3, out))
        assert info.value.code() == sycl.errc.kernel_argument
    finally:
        sycl.free(out, queue)


# The literal build cache ------------------------------------------------------------------
def test_literal_builds_are_cached_by_value_bytes(queue):
    out = sycl.malloc_shared(1, np.int32, queue)
    try:
        def run(v):
            queue.submit(lambda cgh: (cgh.set_specialization_constant(iso_id, v),
                                      cgh.single_task(write_iso, out))).wait()
            return int(np.asarray(out)[0])
        base = [123456 + k for k in range(3)]
        for v in base:
            assert run(v) == v
        before = stats.snapshot()
        for v in base + base[::-1] + [np.int32(base[0]), np.int64(base[1])]:
            assert run(v) == v
        after = stats.snapshot()
        assert after["codegen_count"] == before["codegen_count"]
        assert after["target_compile_count"] == before["target_compile_count"]
    finally:
        sycl.free(out, queue)


def test_literal_and_emulated_give_identical_results_for_the_seed_composite(queue):
    rng = np.random.default_rng(8)
    gold = _gold(int(rng.integers(-99, 99)), float(np.float32(rng.standard_normal())))
    inp = sycl.get_kernel_bundle(queue.get_context(), sycl.bundle_state.input,
                                 devices=[queue.get_device()], kernel=read_pod)
    inp.set_specialization_constant(pod_id, gold)
    inp.set_specialization_constant(i32_id, 17)
    results = {}
    for mode in _modes_for(queue):
        i, pod = _run_pod(queue, bundle=sycl.build(inp, properties=_lowering_props(mode)))
        results[mode] = (i, pod.tobytes())
        assert i == 17
        _pod_equal(pod, gold)
    assert len(set(results.values())) == 1, results
