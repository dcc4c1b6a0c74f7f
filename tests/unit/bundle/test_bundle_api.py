"""Kernel bundles with hand-built IR and a fake toolchain (no frontend, LLVM or device)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import pysycl.bundle as B
from pysycl.bundle import stats
from pysycl.detail import clear_caches
from pysycl.errors import errc, exception
from pysycl.frontend import registry

from bundle_fakes import (FAKE_SPIRV, FakeContext, FakeDevice, FakeExternal, FakeKernel,
                          external_module, install_fake_toolchain, kernel_module,
                          remove_fake_toolchain, spec_decl)

MOD_A = "bundle_test_mod_a"
MOD_B = "bundle_test_mod_b"
INT_ID = spec_decl(f"{MOD_A}.id_int", np.int32, 42)


class Spec:
    """Stands in for sycl.specialization_id."""

    def __init__(self, uid, dtype, default):
        self.unique_id, self.dtype, self.default = uid, np.dtype(dtype), default
        self.default_bytes = np.array(default, dtype=self.dtype).tobytes()


SPEC_INT = Spec(INT_ID.unique_id, np.int32, 42)


@pytest.fixture
def env(monkeypatch, tmp_path):
    driver = install_fake_toolchain(monkeypatch, tmp_path)
    saved_k, saved_e = dict(registry._kernels), dict(registry._externals)
    # Hermetic: kernels and externals of other test modules must not join these bundles.
    registry._kernels.clear()
    registry._externals.clear()
    ka = FakeKernel(MOD_A, "uses_ext", lambda n: kernel_module(
        n, spec=[INT_ID.unique_id], calls=["helper"], spec_decls=[INT_ID]))
    kb = FakeKernel(MOD_A, "plain", lambda n: kernel_module(n))
    ext = FakeExternal(MOD_B, "helper", lambda n: external_module(MOD_B, ["helper"]))
    ext.name = "helper"
    registry.register_kernel(ka)
    registry.register_kernel(kb)
    registry.register_external(ext)
    dev = FakeDevice("cpu0")
    ctx = FakeContext(dev)
    clear_caches()
    yield dict(ctx=ctx, dev=dev, ka=ka, kb=kb, driver=driver)
    clear_caches()
    registry._kernels.clear(); registry._kernels.update(saved_k)
    registry._externals.clear(); registry._externals.update(saved_e)
    remove_fake_toolchain()


def test_kernel_ids(env):
    kid = B.get_kernel_id(env["ka"])
    assert kid is B.get_kernel_id(env["ka"]) and kid == B.get_kernel_id(env["ka"])
    assert kid.get_name() == f"{MOD_A}.uses_ext"
    assert kid in B.get_kernel_ids() and B.get_kernel_id(env["kb"]) in B.get_kernel_ids()
    with pytest.raises(exception) as e:
        B.kernel_id()
    assert e.value.code() is errc.invalid


def test_input_bundle_split_per_kernel_and_library(env):
    kb = B.get_kernel_bundle(env["ctx"], B.bundle_state.input)
    images = list(kb)
    assert kb.state is B.bundle_state.input and not kb.empty()
    kernels = [i for i in images if i.get_kernel_ids()]
    libs = [i for i in images if not i.get_kernel_ids()]
    assert all(len(i.get_kernel_ids()) == 1 for i in kernels)
    assert [lib.exports for lib in libs] == [["helper"]]
    img = next(i for i in kernels if i.has_kernel(env["ka"]))
    assert img.format == "ir" and img.imports == ["helper"]
    assert "SYCL/imported symbols" in img.property_sets
    assert kb.has_kernel(env["ka"], env["dev"])
    assert kb.contains_specialization_constants()
    assert kb.has_specialization_constant(SPEC_INT)


@pytest.mark.parametrize("state", list(B.bundle_state))
def test_error_rules_devices(env, state):
    other = FakeDevice("elsewhere")
    for devs in ([], [other]):
        with pytest.raises(exception) as e:
            B.get_kernel_bundle(env["ctx"], state, devices=devs)
        assert e.value.code() is errc.invalid
        with pytest.raises(exception) as e:
            B.has_kernel_bundle(env["ctx"], state, devices=devs)
        assert e.value.code() is errc.invalid


def test_error_rules_online_tools(env):
    bare = FakeDevice("no-tools", aspects=("cpu",))
    ctx = FakeContext(bare)
    for state in (B.bundle_state.input, B.bundle_state.object):
        with pytest.raises(exception) as e:
            B.get_kernel_bundle(ctx, state)
        assert e.value.code() is errc.invalid and "online" in str(e.value)
        assert not B.has_kernel_bundle(ctx, state)
    assert B.has_kernel_bundle(ctx, B.bundle_state.executable)


def test_error_rules_incompatible_kernel(env):
    k = FakeKernel(MOD_A, "needs_fp64", lambda n: kernel_module(n, props={"sycl-device-has": "6"}))
    registry.register_kernel(k)
    assert not B.is_compatible([k], env["dev"])
    assert B.is_compatible([], env["dev"]) and B.is_compatible([env["kb"]], env["dev"])
    with pytest.raises(exception) as e:
        B.get_kernel_bundle(env["ctx"], B.bundle_state.input, kernel_ids=[k])
    assert e.value.code() is errc.invalid and "incompatible" in str(e.value)
    assert not B.has_kernel_bundle(env["ctx"], B.bundle_state.input, kernel_ids=[k])


def test_state_mismatch_and_spec_constant_rules(env):
    kb = B.get_kernel_bundle(env["ctx"], B.bundle_state.input)
    assert kb.get_specialization_constant(SPEC_INT) == 42
    kb.set_specialization_constant(SPEC_INT, 7)
    assert kb.get_specialization_constant(SPEC_INT) == np.int32(7)
    assert isinstance(kb.get_specialization_constant(SPEC_INT), np.int32)
    for fn in (B.link, lambda b: b.get_kernel(env["ka"])):
        with pytest.raises(exception) as e:
            fn(kb)
        assert e.value.code() is errc.invalid
    obj = B.compile(kb)
    assert obj.state is B.bundle_state.object
    assert obj.get_specialization_constant(SPEC_INT) == 7   # carried
    with pytest.raises(exception) as e:
        obj.set_specialization_constant(SPEC_INT, 1)
    assert e.value.code() is errc.invalid
    for fn in (B.compile, B.build):
        with pytest.raises(exception) as e:
            fn(obj)
        assert e.value.code() is errc.invalid
    with pytest.raises(exception) as e:
        B.compile(kb, devices=[])
    assert e.value.code() is errc.invalid
    with pytest.raises(exception) as e:
        B.link(obj, devices=[FakeDevice("x")])
    assert e.value.code() is errc.invalid
    exe = B.link(obj)
    assert exe.state is B.bundle_state.executable
    assert exe.get_specialization_constant(SPEC_INT) == 7
    k = exe.get_kernel(env["ka"])
    assert k.get_info("function_name") == f"{MOD_A}.uses_ext"
    assert k.get_kernel_bundle() is exe and k.get_context() is env["ctx"]
    img = next(i for i in exe if i.has_kernel(env["ka"]))
    assert img.spec_constant_lowering == "literal" and img.target == "native_cpu"
    assert img.property_sets["SYCL/specialization constants"] == {
        INT_ID.unique_id: bytes.fromhex("000000000000000004000000")}
    assert "llvm" in img.asm and "ir" in img.asm
    assert not B.kernel_bundle(env["ctx"], [env["dev"]], B.bundle_state.input).native_specialization_constant()
    assert not exe.native_specialization_constant()


def test_two_modules_linked_through_external_and_unresolved(env):
    objs = B.get_kernel_bundle(env["ctx"], B.bundle_state.object)
    exe = B.link(objs)
    assert exe.has_kernel(env["ka"]) and exe.has_kernel(env["kb"])
    # The kernel alone cannot link: its import is not in the bundle.
    only = B.kernel_bundle(env["ctx"], [env["dev"]], B.bundle_state.object,
                           [i for i in objs if i.has_kernel(env["ka"])])
    with pytest.raises(exception) as e:
        B.link(only)
    assert e.value.code() is errc.build and "helper" in str(e.value)


def test_duplicate_kernel_and_symbol_at_link(env):
    objs = B.get_kernel_bundle(env["ctx"], B.bundle_state.object)
    dup_k = FakeKernel("bundle_test_dup", "x", lambda n: kernel_module(f"{MOD_A}.plain"))
    from pysycl.bundle.sources import input_image, object_image
    from pysycl.bundle.kernel_id import get_kernel_id
    img = object_image(input_image(get_kernel_id(dup_k)))
    with pytest.raises(exception) as e:
        B.link([objs, B.kernel_bundle(env["ctx"], [env["dev"]], B.bundle_state.object, [img])])
    assert f"{MOD_A}.plain" in str(e.value)
    ext2 = FakeExternal("bundle_test_dup2", "helper", lambda n: external_module("m", ["helper"]))
    img2 = object_image(input_image(get_kernel_id(FakeKernel("bundle_test_dup2", "k", lambda n: external_module(n, ["helper"])))))
    with pytest.raises(exception) as e:
        B.link([objs, B.kernel_bundle(env["ctx"], [env["dev"]], B.bundle_state.object, [img2])])
    assert "helper" in str(e.value)
    del ext2


def test_join(env):
    empty = B.join([])
    assert empty.empty()
    kb = B.get_kernel_bundle(env["ctx"], B.bundle_state.input)
    kb.set_specialization_constant(SPEC_INT, 5)
    j = B.join([kb, kb])
    assert set(j) == set(kb) and j.get_specialization_constant(SPEC_INT) == 5
    other = B.get_kernel_bundle(FakeContext(env["dev"]), B.bundle_state.input)
    with pytest.raises(exception) as e:
        B.join([kb, other])
    assert e.value.code() is errc.invalid


def test_default_lookup_caches_and_launches(env):
    from pysycl.bundle.launch import get_launcher
    launcher = get_launcher(env["ka"], env["dev"], env["ctx"])
    before = stats.snapshot()
    again = get_launcher(env["ka"], env["dev"], env["ctx"])
    assert again is launcher and stats.snapshot() == before
    launcher.launch(None, (4,), None, None, [], 0)
    launcher.launch(None, (4,), None, None, [], 0)
    assert env["driver"].loads == 1 and len(env["driver"].launches) == 2
    assert launcher.kernel_name == f"{MOD_A}.uses_ext" and launcher.index_kind == "id"
    # A new value set is a new (literal) build; the old one stays cached.
    other = get_launcher(env["ka"], env["dev"], env["ctx"], spec_values={SPEC_INT: 9})
    assert other is not launcher and other.image is not launcher.image
    assert b"value = 9" in other.image.binary


def test_use_kernel_bundle_lookup(env):
    from pysycl.bundle.launch import get_launcher
    exe = B.get_kernel_bundle(env["ctx"], B.bundle_state.executable, kernel=env["kb"])
    assert get_launcher(env["kb"], env["dev"], env["ctx"], bundle=exe).image in list(exe)
    with pytest.raises(exception) as e:
        get_launcher(env["ka"], env["dev"], env["ctx"], bundle=B.join([exe, B.kernel_bundle(
            env["ctx"], [env["dev"]], B.bundle_state.executable)]).__class__(
            env["ctx"], [env["dev"]], B.bundle_state.executable))
    assert e.value.code() is errc.kernel_not_supported


def test_emulated_lowering_buffer(env):
    from pysycl.bundle.launch import get_launcher
    from pysycl.properties import properties, spec_constant_lowering
    props = properties(spec_constant_lowering("emulated"))
    launcher = get_launcher(env["ka"], env["dev"], env["ctx"], spec_values={SPEC_INT: 3},
                            launch_properties=props)
    assert launcher.image.spec_constant_lowering == "emulated"
    assert launcher.spec_buffer == np.int32(3).tobytes()
    launcher.launch(None, (1,), None, None, [], 0)
    assert bytes(env["driver"].launches[-1][3][-1].value) == np.int32(3).tobytes()


def test_native_lowering_on_spirv(env):
    dev = FakeDevice("gpu0", target=FAKE_SPIRV)
    ctx = FakeContext(dev)
    kb = B.get_kernel_bundle(ctx, B.bundle_state.input)
    kb.set_specialization_constant(SPEC_INT, 11)
    exe = B.build(kb)
    assert exe.native_specialization_constant()
    from pysycl.bundle.launch import get_launcher
    launcher = get_launcher(env["ka"], dev, ctx, bundle=exe)
    assert launcher.program.spec == {0: np.int32(11).tobytes()}


def test_eight_threads_build_once(env):
    from pysycl.bundle.launch import get_launcher
    before = stats.codegen_count
    out, barrier = [], threading.Barrier(8)

    def work():
        barrier.wait()
        out.append(get_launcher(env["kb"], env["dev"], env["ctx"], spec_values={SPEC_INT: 1}))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(x) for x in out}) == 1
    assert stats.codegen_count - before <= 1


def test_save_load_round_trip(env, tmp_path):
    kb = B.get_kernel_bundle(env["ctx"], B.bundle_state.input)
    kb.set_specialization_constant(SPEC_INT, 13)
    exe = B.build(kb)
    path = tmp_path / "b.syclbin"
    B.save_kernel_bundle(exe, path)
    before = stats.codegen_count
    loaded = B.load_kernel_bundle(env["ctx"], path)
    assert stats.codegen_count == before
    assert loaded.state is B.bundle_state.executable and loaded.has_kernel(env["ka"])
    assert loaded.get_specialization_constant(SPEC_INT) == 13
    img = next(i for i in loaded if i.has_kernel(env["ka"]))
    assert img.binary == next(i for i in exe if i.has_kernel(env["ka"])).binary
    obj = B.get_kernel_bundle(env["ctx"], B.bundle_state.object)
    B.save_kernel_bundle(obj, tmp_path / "o.syclbin")
    back = B.load_kernel_bundle(env["ctx"], tmp_path / "o.syclbin")
    assert back.state is B.bundle_state.object and back.has_kernel(env["ka"])


def test_save_replaces_atomically_and_names_a_missing_folder(env, tmp_path):
    import os
    exe = B.build(B.get_kernel_bundle(env["ctx"], B.bundle_state.input))
    obj = B.get_kernel_bundle(env["ctx"], B.bundle_state.object)
    path = tmp_path / "b.syclbin"
    B.save_kernel_bundle(exe, path)
    B.save_kernel_bundle(obj, path)                    # over an existing file
    assert os.listdir(tmp_path) == ["b.syclbin"]       # no file of the write left over
    assert B.load_kernel_bundle(env["ctx"], path).state is B.bundle_state.object
    mode = os.stat(path).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask                      # as any file the user writes
    missing = tmp_path / "no" / "such" / "b.syclbin"
    with pytest.raises(exception) as e:
        B.save_kernel_bundle(exe, missing)
    assert e.value.code() is errc.invalid and str(missing) in str(e.value)
    assert os.listdir(tmp_path) == ["b.syclbin"]
