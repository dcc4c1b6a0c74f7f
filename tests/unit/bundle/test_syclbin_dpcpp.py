"""SYCLBIN as DPC++ writes and reads it: every file pysycl writes parses with a reader
written from the DPC++ sources (dpcpp_syclbin.py, no pysycl code), SPIR-V sits in a
type-0 IR module, and files laid out by DPC++'s three writers around SPIR-V that
pysycl compiled load and run on the OpenCL device, spec constants by SpecId."""
import os
import random
import struct
import sys

import numpy as np
import pytest

import pysycl as sycl
from pysycl.bundle import aot, syclbin

sys.path.insert(0, os.path.dirname(__file__))
import dpcpp_syclbin as dpcpp  # noqa: E402

SPIRV_MAGIC = struct.pack("<I", 0x07230203)

shift_id = sycl.specialization_id(np.int32, 3)


@sycl.kernel(name="syclbin_dpcpp.shift")
def shift(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[np.int32],
          out: sycl.global_ptr[np.int32], a: np.int32):
    i = it.get_id(0)
    out[i] = a * x[i] + h.get_specialization_constant(shift_id)


def _devices(backend=None):
    devs = [d for p in sycl.platform.get_platforms() for d in p.get_devices()]
    return [d for d in devs if backend is None or d.backend.name == backend]


@pytest.fixture(scope="module")
def opencl_queue():
    devs = _devices("opencl")
    if not devs:
        pytest.skip("no OpenCL device")
    return sycl.queue(devs[0])


def run_shift(q, bundle, expect_shift):
    rng = np.random.default_rng(11)
    n = 97
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    a = int(rng.integers(2, 50))
    dx, out = sycl.malloc_shared(n, np.int32, q), sycl.malloc_shared(n, np.int32, q)
    try:
        np.asarray(dx)[:] = x
        np.asarray(out)[:] = -1

        def cgf(cgh):
            cgh.use_kernel_bundle(bundle)
            cgh.parallel_for(sycl.range(n), shift, dx, out, np.int32(a))
        q.submit(cgf).wait()
        np.testing.assert_array_equal(np.asarray(out), a * x + expect_shift)
    finally:
        sycl.free(dx, q)
        sycl.free(out, q)


# -- pysycl's files, read the way DPC++ reads them ------------------------------------------

@pytest.mark.parametrize("state", ["input", "object", "executable"])
def test_dpcpp_reader_parses_every_file_we_write(tmp_path, state):
    for dev in _devices():
        ctx = sycl.context(dev)
        kb = sycl.get_kernel_bundle(ctx, sycl.bundle_state.input, kernel=shift)
        kb = {"input": lambda: kb, "object": lambda: sycl.compile(kb),
              "executable": lambda: sycl.build(kb)}[state]()
        path = tmp_path / f"{dev.backend.name}.syclbin"
        sycl.save_kernel_bundle(kb, path)
        f = dpcpp.read(path.read_bytes())
        # What the 2026.2 runtime reads: SYBI v1 as the one IMG_SYCLBIN entry.
        assert f["layout"] == "sybi-in-offload-v2"
        assert [e["kind"] for e in f["envelope"]] == [dpcpp.IMG_SYCLBIN]
        assert f["global"][dpcpp.GLOBAL]["state"] == sycl.bundle_state[state].value
        assert len(f["modules"]) == len(list(kb))
        for am in f["modules"]:
            assert "syclbin_dpcpp.shift" in am["metadata"]["SYCL/kernel names"]
            if state == "executable":   # IDs are assigned by the link
                assert "SYCL/specialization constants" in am["metadata"]
            # Every IR module is SPIR-V (the runtime JIT-compiles each as SPIR-V).
            for ir in am["ir"]:
                assert ir["metadata"][dpcpp.IR_META] == {"type": 0,
                                                         "target": b"spir64-unknown-unknown"}
                assert ir["bytes"][:4] == SPIRV_MAGIC
            targets = [n["metadata"][dpcpp.NATIVE_META]["target"] for n in am["native"]]
            # pysycl IR travels in a native image of a target DPC++ has no device for.
            assert b"pysycl-unknown-unknown" in targets
            if state == "executable" and dev.backend.name == "opencl":
                assert len(am["ir"]) == 1
            elif state == "executable":
                assert b"x86_64-unknown-linux-gnu" in targets and not am["ir"]
            else:
                assert not am["ir"] and targets == [b"pysycl-unknown-unknown"]


def test_dpcpp_reader_parses_aot_files(tmp_path):
    kb = aot.compile_modules([__name__], ["native_cpu", "spirv64"], "executable")
    path = tmp_path / "aot.syclbin"
    sycl.save_kernel_bundle(kb, path)
    f = dpcpp.read(path.read_bytes())
    irs = [ir for am in f["modules"] for ir in am["ir"]]
    assert irs and all(ir["metadata"][dpcpp.IR_META]["type"] == 0 for ir in irs)
    assert all(ir["bytes"][:4] == SPIRV_MAGIC for ir in irs)


# -- DPC++'s files, read and run by pysycl ---------------------------------------------------

def _spirv_module(q):
    """The SPIR-V pysycl compiles for ``shift`` and the SYCL/ sets sycl-post-link would
    give it, as one DPC++ abstract module."""
    exe = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.executable, kernel=shift)
    (img,) = [i for i in exe if i.format == "spirv"]
    sets = {name: props for name, props in img.property_sets.items() if name.startswith("SYCL/")}
    return {"metadata": sets, "ir": [(img.binary, "spir64-unknown-unknown")]}


@pytest.mark.opencl
@pytest.mark.parametrize("writer", sorted(dpcpp.WRITERS))
def test_dpcpp_layouts_load_and_run_on_opencl(tmp_path, opencl_queue, writer):
    q = opencl_queue
    ctx = q.get_context()
    module = _spirv_module(q)
    write = dpcpp.WRITERS[writer]
    # executable: the SPIR-V runs as it is, the spec constant at its default
    path = tmp_path / "exe.syclbin"
    path.write_bytes(write(2, [module]))
    exe = sycl.load_kernel_bundle(ctx, path, sycl.bundle_state.executable)
    assert exe.has_kernel(sycl.get_kernel_id(shift))
    run_shift(q, exe, 3)
    # input: a value set by the constant's symbolic ID reaches its SpecId
    path = tmp_path / "input.syclbin"
    path.write_bytes(write(0, [module]))
    inp = sycl.load_kernel_bundle(ctx, path)
    assert inp.state is sycl.bundle_state.input and inp.has_specialization_constant(shift_id)
    inp.set_specialization_constant(shift_id, 41)
    run_shift(q, sycl.build(inp), 41)
    run_shift(q, sycl.link(sycl.compile(inp)), 41)
    # object
    path = tmp_path / "object.syclbin"
    path.write_bytes(write(1, [module]))
    run_shift(q, sycl.link(sycl.load_kernel_bundle(ctx, path)), 3)


@pytest.mark.parametrize("writer", sorted(dpcpp.WRITERS))
def test_inspect_describes_dpcpp_files(tmp_path, writer):
    spirv = SPIRV_MAGIC + bytes(20)
    module = {"metadata": {"SYCL/kernel names": {"__sycl_kernel_iota": 1},
                           "SYCL/misc properties": {"optLevel": 2}},
              "ir": [(spirv, "spir64-unknown-unknown")]}
    path = tmp_path / "f.syclbin"
    path.write_bytes(dpcpp.WRITERS[writer](0, [module]))
    text = aot.describe_file(path)
    assert "state input, 1 images" in text
    assert "kernels: __sycl_kernel_iota" in text
    assert "ir module: SPIR-V, 24 bytes" in text
    assert "optLevel=1|2" in text
    f = syclbin.read_syclbin(path.read_bytes())
    assert f.abstract_modules[0].ir_modules[0] == syclbin.IRModule(
        syclbin.IR_TYPE_SPIRV, spirv, "spir64-unknown-unknown" if writer != "clang-linker-wrapper"
        else None)


def _invalid(data):
    with pytest.raises(sycl.exception) as info:
        syclbin.read_syclbin(data)
    assert info.value.code() == sycl.errc.invalid
    return str(info.value)


def _v2_file():
    module = {"metadata": {"SYCL/kernel names": {"k": 1}},
              "ir": [(SPIRV_MAGIC + bytes(4), "spir64-unknown-unknown")]}
    return dpcpp.write_v2(2, [module])


def test_v2_layout_is_read_strictly():
    good = _v2_file()
    assert syclbin.read_syclbin(good).abstract_modules[0].property_sets["SYCL/kernel names"] \
        == {"k": 1}
    _, entries = syclbin.read_offload_binary(good)
    assert [e.strings["role"] for e in entries] == ["global_metadata", "am_metadata", "ir"]

    def rewrite(k, drop=None, **strings):
        images = [{"okind": 8, "image": e.image, "strings": dict(e.strings)} for e in entries]
        images[k]["strings"].update(strings)
        return dpcpp._offload_binary([im for i, im in enumerate(images) if i != drop], version=2)
    assert "unknown role" in _invalid(rewrite(1, role="extra"))
    assert "two global_metadata" in _invalid(rewrite(1, role="global_metadata"))
    assert "am_index" in _invalid(rewrite(2, am_index="-1"))
    assert "out of range" in _invalid(rewrite(2, am_index="9"))
    assert "sycl_format_version" in _invalid(rewrite(0, sycl_format_version="3"))
    assert "no am_metadata" in _invalid(rewrite(0, drop=1))
    assert "no global_metadata" in _invalid(rewrite(1, drop=0))


def test_checksum_required_only_for_pysycl_content():
    dpcpp_file = dpcpp.write_runtime(2, [{"metadata": {"SYCL/kernel names": {"k": 1}},
                                          "ir": [(SPIRV_MAGIC, "spir64-unknown-unknown")]}])
    assert syclbin.read_syclbin(dpcpp_file).state == syclbin.SyclbinState.executable
    with_ir = dpcpp.write_runtime(2, [{"metadata": {"PYSYCL/image": {"target": b"spirv64"}},
                                       "native": [(b"module", "pysycl_ir",
                                                   "pysycl-unknown-unknown")]}])
    assert "checksum" in _invalid(with_ir)
    assert "checksum" in _invalid(dpcpp.write_v2(2, [{"metadata": {"PYSYCL/image": {}}}]))


@pytest.mark.parametrize("writer", sorted(dpcpp.WRITERS))
def test_dpcpp_layouts_fuzzed_raise_only_invalid(writer):
    module = {"metadata": {"SYCL/kernel names": {"k": 1}},
              "ir": [(SPIRV_MAGIC + bytes(12), "spir64-unknown-unknown")],
              "native": [(b"\x7fELF" + bytes(12), "intel_gpu_bmg_g21", "spir64_gen-unknown-unknown")]}
    seed = dpcpp.WRITERS[writer](0, [module, module])
    rng = random.Random(13)
    for n in range(0, len(seed), 3):
        try:
            syclbin.read_syclbin(seed[:n])
        except sycl.exception as e:
            assert e.code() == sycl.errc.invalid
    for _ in range(400):
        data = bytearray(seed)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(data) - 8) & ~7
            if rng.random() < 0.5:
                data[pos + rng.randrange(8)] = rng.randrange(256)
            else:
                struct.pack_into("<Q", data, pos, rng.choice([0, 1, 1 << 63, rng.randrange(1 << 64)]))
        try:
            syclbin.read_syclbin(bytes(data))
        except sycl.exception as e:
            assert e.code() == sycl.errc.invalid


# -- DPC++'s property sets --------------------------------------------------------------------

@sycl.kernel(name="syclbin_dpcpp.tiled", properties=sycl.properties(
    sycl.work_group_size(2, 4), sycl.max_work_group_size(2, 8),
    sycl.max_linear_work_group_size(16), sycl.device_has(sycl.aspect.fp64)))
def tiled(it: sycl.nd_item[2], acc: sycl.accessor[np.float32, 2, sycl.read_write],
          x: np.float32):
    acc[it.get_global_id()] = acc[it.get_global_id()] * x


def test_property_sets_as_sycl_post_link_writes_them(tmp_path):
    dev = _devices()[0]
    kb = sycl.get_kernel_bundle(sycl.context(dev), sycl.bundle_state.input, kernel=tiled)
    path = tmp_path / "t.syclbin"
    sycl.save_kernel_bundle(kb, path)
    (am,) = dpcpp.read(path.read_bytes())["modules"]
    meta = am["metadata"]
    assert "SYCL/kernel properties" not in meta     # not a DPC++ set
    fp64 = int(sycl.aspect.fp64.value)
    reqs = meta["SYCL/device requirements"]
    # u32 aspects; u64 work-group size in SPIR-V's (reversed) order
    assert reqs == {"aspects": struct.pack("<I", fp64),
                    "reqd_work_group_size_uint64_t": struct.pack("<QQ", 4, 2)}
    assert meta["SYCL/misc properties"] == {"optLevel": 3}
    # the accessor (pointer, 2 access ranges, 2 memory ranges, 2 offsets, base), x, the
    # spec-constant buffer: 10 arguments, none removed
    assert meta["SYCL/kernel param opt"] == {"syclbin_dpcpp.tiled": bytes(2)}
    assert meta["SYCL/program metadata"] == {
        "syclbin_dpcpp.tiled@reqd_work_group_size": struct.pack("<II", 4, 2),
        "syclbin_dpcpp.tiled@max_work_group_size": struct.pack("<II", 8, 2),
        "syclbin_dpcpp.tiled@max_linear_work_group_size": struct.pack("<Q", 16)}
    text = path.read_bytes()
    # the bit size of the mask is the argument count, not a whole byte
    assert b"syclbin_dpcpp.tiled=2|" + dpcpp.b64_encode(struct.pack("<Q", 10) + bytes(2)).encode() \
        in text
    # DPC++'s published encodings (sycl-post-link lit tests)
    from pysycl.bundle import property_sets as ps
    assert ps.encode_value(ps.device_requirements_property_set()["aspects"]) == "2|AAAAAAAAAAA"
    assert ps.encode_value(ps.device_requirements_property_set(
        (), [64])["reqd_work_group_size_uint64_t"]) == "2|ABAAAAAAAAAQAAAAAAAAAA"


@pytest.mark.opencl
def test_kernel_properties_come_back_from_dpcpp_sets(tmp_path, opencl_queue):
    """A DPC++ file has no pysycl IR: the required work-group size is read from its
    program metadata and enforced at launch."""
    q = opencl_queue
    exe = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.executable, kernel=tiled)
    if not exe.has_kernel(sycl.get_kernel_id(tiled)):
        pytest.skip("the OpenCL device has no fp64")
    (img,) = [i for i in exe if i.format == "spirv"]
    sets = {n: p for n, p in img.property_sets.items() if n.startswith("SYCL/")}
    path = tmp_path / "t.syclbin"
    path.write_bytes(dpcpp.write_runtime(2, [{"metadata": sets,
                                             "ir": [(img.binary, "spir64-unknown-unknown")]}]))
    loaded = sycl.load_kernel_bundle(q.get_context(), path)
    (limg,) = list(loaded)
    fn = limg.kernel_function(sycl.get_kernel_id(tiled))
    assert fn.properties["sycl-work-group-size"] == "2,4"
    assert fn.properties["sycl-max-linear-work-group-size"] == "16"
    data = np.random.default_rng(5).standard_normal((4, 8)).astype(np.float32)
    expect = data * 3
    with sycl.buffer(data) as buf:
        q.submit(lambda h: (h.use_kernel_bundle(loaded), h.parallel_for(
            sycl.nd_range((4, 8), (2, 4)), tiled, sycl.accessor(buf, h, sycl.read_write),
            np.float32(3)))).wait()
    np.testing.assert_allclose(data, expect)
    with pytest.raises(sycl.exception) as info, sycl.buffer(data) as buf:
        q.submit(lambda h: (h.use_kernel_bundle(loaded), h.parallel_for(
            sycl.nd_range((4, 8), (4, 4)), tiled, sycl.accessor(buf, h, sycl.read_write),
            np.float32(3)))).wait()
    assert info.value.code() == sycl.errc.nd_range


@pytest.mark.opencl
def test_kernel_of_a_foreign_file_without_definition_is_not_supported(tmp_path, opencl_queue):
    q = opencl_queue
    path = tmp_path / "f.syclbin"
    path.write_bytes(dpcpp.write_runtime(2, [{
        "metadata": {"SYCL/kernel names": {"__sycl_kernel_iota": 1}},
        "ir": [(_spirv_module(q)["ir"][0][0], "spir64-unknown-unknown")]}]))
    kb = sycl.load_kernel_bundle(q.get_context(), path)
    assert [k.get_name() for k in kb.get_kernel_ids()] == ["__sycl_kernel_iota"]
    k = kb.get_kernel(kb.get_kernel_ids()[0])
    out = sycl.malloc_shared(4, np.int32, q)
    try:
        with pytest.raises(sycl.exception) as info:
            q.submit(lambda h: (h.use_kernel_bundle(kb),
                                h.parallel_for(sycl.range(4), k, out))).wait()
        assert info.value.code() == sycl.errc.kernel_not_supported
        assert "arguments are unknown" in str(info.value)
    finally:
        sycl.free(out, q)


# -- the loader on well-formed files with malformed contents ---------------------------------

_ODD_VALUES = [0, 1, 0xFFFFFFFF, b"", b"\x00", b"\xff\xfe", bytes(12), struct.pack("<III", 0, 0, 4),
               struct.pack("<III", 0xFFFFFFFF, 0, 4), b"x" * 13, b"spirv64", b"native_cpu",
               b"object", b"native", b"bogus"]


def _load_and_use(ctx, path):
    """Load, query, build or link: only sycl.exception may come out."""
    try:
        kb = sycl.load_kernel_bundle(ctx, path)
        for img in kb:
            for kid in img.get_kernel_ids():
                img.kernel_function(kid)
        if kb.state is sycl.bundle_state.input:
            sycl.build(kb)
        elif kb.state is sycl.bundle_state.object:
            sycl.link(kb)
    except sycl.exception as e:
        assert e.code() in (sycl.errc.invalid, sycl.errc.build, sycl.errc.feature_not_supported,
                            sycl.errc.kernel_not_supported), e


@pytest.mark.opencl
def test_dpcpp_files_with_odd_property_values(tmp_path, opencl_queue):
    module = _spirv_module(opencl_queue)
    rng = random.Random(21)
    path = tmp_path / "f.syclbin"
    for _ in range(120):
        meta = {name: dict(props) for name, props in module["metadata"].items()}
        for _ in range(rng.randint(1, 3)):
            name = rng.choice(list(meta) + ["SYCL/device requirements", "SYCL/program metadata"])
            props = meta.setdefault(name, {})
            key = rng.choice(list(props) + ["aspects", "reqd_sub_group_size", "all",
                                            "reqd_work_group_size_uint64_t",
                                            "syclbin_dpcpp.shift@reqd_work_group_size"])
            props[key] = rng.choice(_ODD_VALUES)
        write = rng.choice(list(dpcpp.WRITERS.values()))
        path.write_bytes(write(rng.randrange(3), [{"metadata": meta, "ir": module["ir"]}]))
        _load_and_use(opencl_queue.get_context(), path)


def test_pysycl_files_with_odd_contents(tmp_path):
    seeds = []
    for state in ("input", "executable"):
        sycl.save_kernel_bundle(aot.compile_modules([__name__], ["native_cpu", "spirv64"],
                                                    state), tmp_path / "s.syclbin")
        seeds.append((tmp_path / "s.syclbin").read_bytes())
    rng = random.Random(22)
    path = tmp_path / "f.syclbin"
    contexts = [sycl.context(d) for d in _devices()]
    for _ in range(120):
        f = syclbin.read_syclbin(rng.choice(seeds))
        am = rng.choice(f.abstract_modules)
        roll = rng.random()
        if roll < 0.2 and am.native_images:
            img = rng.choice(am.native_images)
            img.data = rng.choice([b"", b"garbage", img.data[:len(img.data) // 2]])
        elif roll < 0.3 and am.native_images:
            rng.choice(am.native_images).arch = rng.choice(["spirv64", "bogus", "native_cpu-x86-64-v4"])
        else:
            name = rng.choice(list(am.property_sets) + ["PYSYCL/image"])
            props = am.property_sets.add_set(name)
            key = rng.choice(list(props) + ["target", "format", "spec_constant_lowering",
                                            "cpu_features"])
            props[key] = rng.choice(_ODD_VALUES)
        path.write_bytes(syclbin.write_syclbin(f))
        _load_and_use(rng.choice(contexts), path)


@pytest.mark.opencl
@pytest.mark.parametrize("writer", sorted(dpcpp.WRITERS))
def test_dpcpp_native_images_are_listed_and_skipped(tmp_path, opencl_queue, writer):
    """An AOT image of DPC++ (here an ocloc-style blob) sits beside the SPIR-V: pysycl
    lists it, cannot load it, and runs the SPIR-V; the first writer gave it no target."""
    q = opencl_queue
    module = dict(_spirv_module(q), native=[(b"\x7fELF" + bytes(60), "intel_gpu_bmg_g21",
                                             "spir64_gen-unknown-unknown")])
    path = tmp_path / "f.syclbin"
    path.write_bytes(dpcpp.WRITERS[writer](2, [module]))
    (am,) = syclbin.read_syclbin(path.read_bytes()).abstract_modules
    assert [n.arch for n in am.native_images] == ["intel_gpu_bmg_g21"]
    assert am.native_images[0].target == (None if writer == "clang-linker-wrapper"
                                          else "spir64_gen-unknown-unknown")
    assert "arch intel_gpu_bmg_g21" in aot.describe_file(path)
    run_shift(q, sycl.load_kernel_bundle(q.get_context(), path), 3)
