"""``bundle.aot`` with the fake toolchain: ahead-of-time object/executable bundles and
``describe`` (no LLVM, no device)."""
from __future__ import annotations

import numpy as np
import pytest

import pysycl.bundle as B
from pysycl.bundle import aot, stats, syclbin
from pysycl.errors import errc, exception
from pysycl.frontend import registry

from bundle_fakes import (FakeContext, FakeDevice, FakeExternal, FakeKernel, external_module,
                          install_fake_toolchain, kernel_module, remove_fake_toolchain,
                          spec_decl)

MOD_K = "aot_test_kernels"
MOD_L = "aot_test_lib"
SPEC = spec_decl(f"{MOD_K}.c", np.int32, 5)


@pytest.fixture
def env(monkeypatch, tmp_path):
    install_fake_toolchain(monkeypatch, tmp_path)
    saved_k, saved_e = dict(registry._kernels), dict(registry._externals)
    registry._kernels.clear()
    registry._externals.clear()
    k = FakeKernel(MOD_K, "k", lambda n: kernel_module(n, spec=[SPEC.unique_id], calls=["ext"],
                                                       spec_decls=[SPEC]))
    ext = FakeExternal(MOD_L, "ext", lambda n: external_module(MOD_L, ["ext"]))
    ext.name = "ext"
    registry.register_kernel(k)
    registry.register_external(ext)
    yield dict(k=k)
    registry._kernels.clear(); registry._kernels.update(saved_k)
    registry._externals.clear(); registry._externals.update(saved_e)
    remove_fake_toolchain()


def test_object_state_keeps_ir_and_imports(env):
    kb = aot.compile_modules([MOD_K], ["native_cpu"], "object")
    assert kb.state is B.bundle_state.object
    (img,) = list(kb)
    assert img.format == "ir" and img.target == "generic" and img.imports == ["ext"]
    lib = aot.compile_modules([MOD_L], ["native_cpu"], "object")
    assert [i.exports for i in lib] == [["ext"]]


def test_executable_state_emulated_per_target(env, tmp_path):
    before = stats.codegen_count
    kb = aot.compile_modules([MOD_K], ["native_cpu"], "executable")
    (img,) = list(kb)      # the library is linked in, not an image of its own
    assert img.state is B.bundle_state.executable and img.target == "native_cpu"
    assert img.spec_constant_lowering == aot.AOT_SPEC_CONSTANT_LOWERING == "emulated"
    assert img.has_kernel(env["k"]) and stats.codegen_count - before == 1
    path = tmp_path / "k.syclbin"
    B.save_kernel_bundle(kb, path)
    text = aot.describe_file(path)
    assert "state executable, 1 images" in text and f"kernels: {MOD_K}.k" in text
    assert "[SYCL/specialization constants]" in text and "spec constants emulated" in text
    # Loaded for a context: bound to its native_cpu device, no code generation.
    dev = FakeDevice("cpu0")
    loaded = B.load_kernel_bundle(FakeContext(dev), path)
    assert loaded.has_kernel(env["k"], dev) and stats.codegen_count - before == 1
    assert loaded.get_specialization_constant(
        type("S", (), {"unique_id": SPEC.unique_id, "dtype": np.dtype(np.int32),
                       "default": 5})()) == 5


def test_unresolved_symbol_names_it(env):
    registry.register_kernel(FakeKernel(MOD_K, "orphan", lambda n: kernel_module(n, calls=["nowhere"])))
    with pytest.raises(exception) as e:
        aot.compile_modules([MOD_K], ["native_cpu"], "executable")
    assert e.value.code() is errc.build and "nowhere" in str(e.value)
    # object state does not resolve imports
    assert not aot.compile_modules([MOD_K], ["native_cpu"], "object").empty()


def test_bad_arguments(env):
    for mods, targets, state in (([MOD_K], ["vax"], "executable"), ([MOD_K], [], "executable"),
                                 (["no_such_module_here"], ["native_cpu"], "object"),
                                 ([], ["native_cpu"], "object"),
                                 ([MOD_K], ["native_cpu"], "nonsense")):
        with pytest.raises(exception) as e:
            aot.compile_modules(mods, targets, state)
        assert e.value.code() is errc.invalid


def test_describe_rejects_garbage(tmp_path):
    p = tmp_path / "x.syclbin"
    p.write_bytes(b"garbage")
    with pytest.raises(exception) as e:
        aot.describe_file(p)
    assert e.value.code() is errc.invalid
    f = syclbin.SyclbinFile(syclbin.SyclbinState.object, [])
    p.write_bytes(syclbin.write_syclbin(f))
    assert "state object, 0 images" in aot.describe_file(p)
