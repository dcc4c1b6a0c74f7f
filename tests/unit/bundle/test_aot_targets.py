"""Ahead-of-time bundles for a list of targets (real toolchain): a kernel that does
not fit a target is left out of that target's images (errc.kernel_not_supported when
launched there) while the other targets build; input-state files take spec-constant
values after loading."""
import os
import sys

import numpy as np
import pytest

import pysycl as sycl
from pysycl.bundle import aot

sys.path.insert(0, os.path.dirname(__file__))
import aot_targets_mod as mod  # noqa: E402

TARGETS = ["native_cpu", "spirv64", "nvptx64-sm_90"]


def _devices():
    return [d for p in sycl.platform.get_platforms() for d in p.get_devices()]


def _run(q, kernel, bundle, nd=False):
    x = np.random.default_rng(3).integers(-100, 100, 64).astype(np.int32)
    dx = sycl.malloc_shared(64, np.int32, q)
    try:
        np.asarray(dx)[:] = x
        rng = sycl.nd_range(64, 16) if nd else sycl.range(64)
        q.submit(lambda h: (h.use_kernel_bundle(bundle), h.parallel_for(rng, kernel, dx))).wait()
        return x, np.asarray(dx).copy()
    finally:
        sycl.free(dx, q)


def test_kernel_left_out_of_targets_it_does_not_fit(tmp_path):
    kb = aot.compile_modules([mod], TARGETS, "executable")
    where = {}
    for img in kb:
        for kid in img.get_kernel_ids():
            where.setdefault(kid.get_name(), set()).add(img.target)
    assert where["aot_targets.plain"] == {"native_cpu", "spirv64", "nvptx64-sm_90"}
    assert where["aot_targets.sg16"] == {"spirv64"}      # no 16-wide sub-groups elsewhere
    path = tmp_path / "all.syclbin"
    sycl.save_kernel_bundle(kb, path)
    for dev in _devices():
        q = sycl.queue(dev)
        loaded = sycl.load_kernel_bundle(q.get_context(), path)
        x, out = _run(q, mod.plain, loaded)
        np.testing.assert_array_equal(out, x * 2)
        if 16 in dev.get_info(sycl.info.device.sub_group_sizes):
            x, out = _run(q, mod.sg16, loaded, nd=True)
            np.testing.assert_array_equal(out, x + 1)
        else:
            with pytest.raises(sycl.exception) as info:
                _run(q, mod.sg16, loaded, nd=True)
            assert info.value.code() == sycl.errc.kernel_not_supported


def test_kernel_that_fits_no_target_is_in_no_image(tmp_path):
    kb = aot.compile_modules([mod], ["native_cpu", "nvptx64-sm_90"], "executable")
    assert not kb.has_kernel(sycl.get_kernel_id(mod.sg16))
    assert kb.has_kernel(sycl.get_kernel_id(mod.plain))
    path = tmp_path / "k.syclbin"
    sycl.save_kernel_bundle(kb, path)
    q = _native_queue()
    with pytest.raises(sycl.exception) as info:
        _run(q, mod.sg16, sycl.load_kernel_bundle(q.get_context(), path), nd=True)
    assert info.value.code() == sycl.errc.kernel_not_supported


def test_input_state_file_takes_spec_constant_values(tmp_path):
    kb = aot.compile_modules([mod], ["native_cpu"], "input")
    assert kb.state is sycl.bundle_state.input
    path = tmp_path / "in.syclbin"
    sycl.save_kernel_bundle(kb, path)
    for dev in _devices():
        q = sycl.queue(dev)
        inp = sycl.load_kernel_bundle(q.get_context(), path, sycl.bundle_state.input)
        inp.set_specialization_constant(mod.offset_id, 1234)
        x, out = _run(q, mod.offset, sycl.build(inp))
        np.testing.assert_array_equal(out, x + 1234)


def _native_queue():
    return sycl.queue([d for d in _devices() if d.backend.name == "native_cpu"][0])


def test_generic_cpu_level_file_records_and_checks_cpu_features(tmp_path):
    from pysycl.bundle import syclbin
    kb = aot.compile_modules([mod], ["native_cpu"], "executable", cpu="x86-64-v2")
    assert {img.target for img in kb} == {"native_cpu-x86-64-v2"}
    path = tmp_path / "v2.syclbin"
    sycl.save_kernel_bundle(kb, path)
    f = syclbin.read_syclbin(path.read_bytes())
    info = f.abstract_modules[0].property_sets["PYSYCL/image"]
    assert info["cpu"] == b"x86-64-v2"
    assert set(info["cpu_features"].split(b",")) >= {b"sse4.2", b"popcnt", b"ssse3"}
    assert b"avx2" not in info["cpu_features"].split(b",")    # not an x86-64-v2 feature
    q = _native_queue()
    x, out = _run(q, mod.plain, sycl.load_kernel_bundle(q.get_context(), path))
    np.testing.assert_array_equal(out, x * 2)
    # A CPU without a feature the image needs refuses the file (no SIGILL at launch):
    # a file this user signed (a changed file is built again from its IR instead).
    from pysycl.bundle import signing
    for am in f.abstract_modules:
        am.property_sets["PYSYCL/image"]["cpu_features"] += b",pysycl-test-missing-feature"
        signing.sign(am)
    path.write_bytes(syclbin.write_syclbin(f))
    with pytest.raises(sycl.exception) as info:
        sycl.load_kernel_bundle(q.get_context(), path)
    assert info.value.code() == sycl.errc.feature_not_supported
    assert "pysycl-test-missing-feature" in str(info.value) and "--cpu" in str(info.value)


def test_host_cpu_file_lists_the_host_features(tmp_path):
    from pysycl.bundle import syclbin
    path = tmp_path / "host.syclbin"
    sycl.save_kernel_bundle(aot.compile_modules([mod], ["native_cpu"], "executable"), path)
    info = syclbin.read_syclbin(path.read_bytes()).abstract_modules[0].property_sets["PYSYCL/image"]
    host = sycl.device([d for d in _devices() if d.backend.name == "native_cpu"][0]).target
    assert info["cpu"].decode() == host.cpu
    assert set(info["cpu_features"].decode().split(",")) == {
        f[1:] for f in host.features.split(",") if f.startswith("+")}


def test_unknown_cpu_level_is_invalid():
    with pytest.raises(sycl.exception) as info:
        aot.compile_modules([mod], ["native_cpu"], "executable", cpu="x86-64-v9")
    assert info.value.code() == sycl.errc.invalid and "native_cpu-x86-64-v9" in str(info.value)
