"""Bundle files as untrusted input (docs/bundle-files.md): a file's native code runs as
it is only when this user signed it (or the user trusts the file); otherwise it is
built again from the file's pysycl IR, with bounds checks; malformed files are
``errc.invalid`` and never end the process. Cases that could crash run in a
subprocess (a crash is a failure)."""
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl
from pysycl.bundle import signing, stats, syclbin

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks import fuzz_kernels as K  # noqa: E402
from benchmarks import fuzz_syclbin  # noqa: E402

LIMIT_S = 300


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    return fuzz_syclbin.make_seeds(tmp_path_factory.mktemp("seeds"))


@pytest.fixture
def q():
    return sycl.queue([d for d in sycl.device.get_devices() if d.backend.name == "native_cpu"][0])


def _objects(f):
    """(abstract module, native image) of each host object of ``f``."""
    return [(am, n) for am in f.abstract_modules for n in am.native_images
            if n.data[:4] == b"\x7fELF"]


def _write(tmp_path, f, name="case.syclbin") -> Path:
    path = tmp_path / name
    path.write_bytes(syclbin.write_syclbin(f))
    return path


def _load_and_run(q, path, rng) -> None:
    kb = sycl.load_kernel_bundle(q.get_context(), path)
    for kfn, runner in K.RUNNERS.items():
        assert kb.has_kernel(kfn)
        assert runner(q, kb, rng), kfn.__name__


def test_signed_file_runs_its_own_code(q, seeds, tmp_path):
    path = tmp_path / "exe.syclbin"
    path.write_bytes(seeds["executable"])
    before = stats.codegen_count
    _load_and_run(q, path, np.random.default_rng(1))
    assert stats.codegen_count == before       # the file's binaries, no code generation


def _file_code(f) -> dict[str, bytes]:
    """kernel name -> the host object the file gives it."""
    out = {}
    for am, n in _objects(f):
        for name in am.property_sets.get("SYCL/kernel names") or {}:
            out[name] = n.data
    return out


def _assert_not_run_as_is(kb, f) -> None:
    code = _file_code(f)
    for img in kb:
        for kid in img.get_kernel_ids():
            assert img.binary != code[kid.get_name()], kid.get_name()


def test_changed_native_code_is_not_run(q, seeds, tmp_path):
    """Each image's host object replaced by another kernel's (well formed, and pysycl's
    own), the checksum recomputed: the signature no longer verifies, so every kernel is
    built again from the file's IR and computes what the file's IR says."""
    f = syclbin.read_syclbin(seeds["executable"])
    objs = _objects(f)
    datas = [n.data for _am, n in objs]
    for (_am, n), other in zip(objs, datas[1:] + datas[:1]):
        n.data = other
    path = _write(tmp_path, f)
    _assert_not_run_as_is(sycl.load_kernel_bundle(q.get_context(), path), f)
    _load_and_run(q, path, np.random.default_rng(2))


def test_another_users_signature_is_not_trusted(q, seeds, tmp_path, monkeypatch):
    f = syclbin.read_syclbin(seeds["executable"])
    monkeypatch.setenv("PYSYCL_KEY_DIR", str(tmp_path / "other-user"))
    signing._keys.clear()
    try:
        for am in f.abstract_modules:
            signing.sign(am)                     # signed, but under another user's key
        assert all(signing.verify(am) for am in f.abstract_modules)
    finally:
        monkeypatch.undo()
        signing._keys.clear()
    assert not any(signing.verify(am) for am in f.abstract_modules)
    for _am, n in _objects(f):                   # what that user's code does is unknown
        n.data = _elf(seeds, b"fz_axpy") if b"fz_axpy" not in n.data else _elf(seeds)
    path = _write(tmp_path, f)
    _assert_not_run_as_is(sycl.load_kernel_bundle(q.get_context(), path), f)
    _load_and_run(q, path, np.random.default_rng(3))


def _without_ir(f, keep_signature=False):
    for am in f.abstract_modules:
        am.native_images = [n for n in am.native_images
                            if n.target != syclbin.PYSYCL_IR_TARGET]
        if not keep_signature:
            am.property_sets._sets.pop(signing.SIGNATURE_SET, None)
    return f


def test_unsigned_native_code_without_ir_is_refused_unless_trusted(q, seeds, tmp_path,
                                                                   monkeypatch):
    path = _write(tmp_path, _without_ir(syclbin.read_syclbin(seeds["executable"])))
    with pytest.raises(sycl.exception) as info:
        sycl.load_kernel_bundle(q.get_context(), path)
    assert info.value.code() == sycl.errc.invalid
    assert "PYSYCL_TRUST_BUNDLE_CODE" in str(info.value)
    monkeypatch.setenv("PYSYCL_TRUST_BUNDLE_CODE", "1")
    _load_and_run(q, path, np.random.default_rng(4))


@pytest.mark.parametrize("value", [b"\xff\xfe\x80", 7])
def test_a_property_value_that_is_not_text_is_invalid(q, seeds, tmp_path, value):
    """The probe's UnicodeDecodeError: a PYSYCL/image value that is not UTF-8 text (or
    not a byte array at all)."""
    f = syclbin.read_syclbin(seeds["executable"])
    f.abstract_modules[0].property_sets._sets["PYSYCL/image"]["target"] = value
    with pytest.raises(sycl.exception) as info:
        sycl.load_kernel_bundle(q.get_context(), _write(tmp_path, f))
    assert info.value.code() == sycl.errc.invalid and "PYSYCL/image target" in str(info.value)


# -- malformed host objects: each is refused, never linked -----------------------------------

def _elf(seeds, name=b"fz_scale"):
    f = syclbin.read_syclbin(seeds["executable"])
    return next(n.data for _am, n in _objects(f) if name in n.data)


def _section_headers(data):
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shnum = struct.unpack_from("<H", data, 0x3C)[0]
    return [(shoff + 64 * i, struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * i))
            for i in range(shnum)]


def _first_rela(data):
    """File offset of the first relocation entry."""
    return next(h[4] for _at, h in _section_headers(data) if h[1] == 4)


MUTATIONS = {
    # field -> (file offset function, struct format, value, text in the message)
    "section header table past the end": (lambda d: 0x28, "<Q", 1 << 40, "run past"),
    "section count": (lambda d: 0x3C, "<H", 0xFFF0, "sections"),
    "section name index": (lambda d: 0x3E, "<H", 0xFFF, "name table index"),
    "section bytes overlap the header": (
        lambda d: next(at for at, h in _section_headers(d) if h[1] == 1 and h[5]) + 24, "<Q",
        40, "overlap"),
    "alignment": (lambda d: next(at for at, h in _section_headers(d) if h[1] == 1) + 48,
                  "<Q", 24, "alignment"),
    "relocation offset": (lambda d: _first_rela(d), "<Q", 1 << 20, "patches bytes"),
    "relocation moved onto the next byte": (lambda d: _first_rela(d), "<Q", None, "not zero"),
    "relocation type": (lambda d: _first_rela(d) + 8, "<I", 10, "type 10"),
    "relocation symbol": (lambda d: _first_rela(d) + 12, "<I", 999, "symbol 999"),
    "relocation addend": (lambda d: _first_rela(d) + 16, "<q", 1 << 40, "reaches"),
}


@pytest.mark.parametrize("what", sorted(MUTATIONS))
def test_malformed_host_objects_are_refused_in_a_fresh_process(seeds, tmp_path, what):
    """Trusted-code files (no IR, PYSYCL_TRUST_BUNDLE_CODE=1) with one field of one host
    object changed: each is errc.invalid at load. The objects behind two of them made
    LLVM's JIT linker abort before it was checked."""
    f = _without_ir(syclbin.read_syclbin(seeds["executable"]))
    am, img = next((am, n) for am, n in _objects(f) if b"fz_scale" in n.data)
    data = bytearray(img.data)
    where, fmt, value, text = MUTATIONS[what]
    at = where(data)
    if value is None:   # one byte later: a fixup that straddles two instructions
        value = struct.unpack_from(fmt, data, at)[0] + 1
    struct.pack_into(fmt, data, at, value)
    img.data = bytes(data)
    path = _write(tmp_path, f)
    script = tmp_path / "load.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        import pysycl as sycl
        import benchmarks.fuzz_kernels
        dev = [d for d in sycl.device.get_devices() if d.backend.name == "native_cpu"][0]
        try:
            sycl.load_kernel_bundle(sycl.queue(dev).get_context(), {str(path)!r})
            print("loaded")
        except sycl.exception as e:
            print(e.code().name, e)
    """))
    env = dict(os.environ, PYSYCL_TRUST_BUNDLE_CODE="1")
    proc = subprocess.run([sys.executable, "-X", "faulthandler", str(script)],
                          capture_output=True, text=True, timeout=LIMIT_S, env=env)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.startswith("invalid "), proc.stdout
    assert text in proc.stdout


def test_unsigned_ir_is_built_with_bounds_checks(seeds, tmp_path, run_python):
    """IR changed so that a kernel indexes local memory 2**32 elements away (what killed
    a fuzzing worker with SIGSEGV): built again from the file, checked, the access is
    not made and the launch raises errc.kernel."""
    f = syclbin.read_syclbin(seeds["input"])
    for am in f.abstract_modules:
        for n in am.native_images:
            if n.target == syclbin.PYSYCL_IR_TARGET and b"fz_reverse" in n.data:
                text = n.data.decode()
                assert "const {value = 1} : i64" in text
                n.data = text.replace("const {value = 1} : i64",
                                      "const {value = 4294967296} : i64", 1).encode()
    path = _write(tmp_path, f)
    out = run_python(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        import numpy as np
        import pysycl as sycl
        from benchmarks import fuzz_kernels as K
        q = sycl.queue([d for d in sycl.device.get_devices() if d.backend.name == "native_cpu"][0])
        kb = sycl.build(sycl.load_kernel_bundle(q.get_context(), {str(path)!r}))
        print(K.RUNNERS[K.fz_scale](q, kb, np.random.default_rng(0)))
        try:
            K.RUNNERS[K.fz_reverse](q, kb, np.random.default_rng(0))
        except sycl.exception as e:
            print(e.code().name, "out of range" in str(e))
    """)
    assert out.split() == ["True", "kernel", "True"]
