"""SpirvCompiler and its worker: no device needed."""
import os
import shutil
import signal

import pytest

from opencl_kernels_ir import (BITREVERSE, FLOAT_ATOMIC_SUM, I128, LOCAL_REDUCE, SPEC_SCALE,
                               STRUCT_SAXPY, VADD)
from pysycl.backends.opencl import compiler as compiler_mod
from pysycl.backends.opencl.compiler import SpirvCompiler, SpirvWorker
from pysycl.backends.opencl.target import SPIRV64, spirv_target, target_for_il_version
from pysycl.errors import errc, exception

needs_spirv_val = pytest.mark.skipif(shutil.which("spirv-val") is None,
                                     reason="spirv-val (SPIRV-Tools) not on PATH")

SPIRV_MAGIC = b"\x03\x02\x23\x07"


def test_target():
    assert SPIRV64.triple == "spirv64-unknown-unknown"
    assert SPIRV64.native_spec_constants and SPIRV64.binary_format == "spirv"
    from pysycl.backends.base import AddressSpace as A
    assert [SPIRV64.addrspace(s) for s in (A.private, A.global_, A.constant, A.local, A.generic)] \
        == [0, 1, 2, 3, 4]
    assert spirv_target((1, 2)).triple == "spirv64v1.2-unknown-unknown"
    assert target_for_il_version("SPIR-V_1.0 SPIR-V_1.4") is SPIRV64
    assert target_for_il_version("SPIR-V_1.0 SPIR-V_1.2").triple.startswith("spirv64v1.2")
    assert target_for_il_version("") is None


def test_compile_emits_spirv(compiler):
    spv = compiler.compile(VADD, ["vadd"])
    assert spv[:4] == SPIRV_MAGIC
    assert set(compiler.last_timings) >= {"parse", "opt", "emit", "total"}


@needs_spirv_val
def test_output_validates_and_helper_is_inlined(compiler):
    spv = compiler.compile(VADD, ["vadd"])
    compiler.validate(spv)
    text = compiler.disassemble(spv)
    assert 'OpEntryPoint Kernel' in text and '"vadd"' in text
    assert "OpFAdd" in text
    assert '"add" Export' not in text      # internalised and inlined


def test_spirv_version_follows_target():
    spv = SpirvCompiler(spirv_target((1, 2))).compile(VADD, ["vadd"])
    assert spv[4:8] == bytes([0, 2, 1, 0])     # version word 0x00010200


@pytest.mark.parametrize("ir,kernel,needle", [
    (BITREVERSE, "brev", "LLVM ERROR"),
    (I128, "wide", ""),
    (FLOAT_ATOMIC_SUM, "fsum", "LLVM ERROR"),
])
def test_llvm_abort_becomes_build_error_and_worker_goes_on(compiler, ir, kernel, needle):
    worker = compiler_mod.shared_worker()
    good = compiler.compile(VADD, ["vadd"])
    pid = worker.pid
    with pytest.raises(exception) as info:
        compiler.compile(ir, [kernel])
    assert info.value.code() is errc.build
    assert "crashed LLVM" in str(info.value) and needle in str(info.value)
    # only the child compiling that module died: the same worker answers, unchanged
    assert compiler.compile(VADD, ["vadd"]) == good
    assert worker.pid == pid


def test_bitreverse_compiles_with_extension(compiler):
    spv = compiler.compile(BITREVERSE, ["brev"], extensions=frozenset({"SPV_KHR_bit_instructions"}))
    if shutil.which("spirv-dis"):
        assert "OpBitReverse" in compiler.disassemble(spv)
    # the extension set is per request: the next compile without it fails again
    with pytest.raises(exception):
        compiler.compile(BITREVERSE, ["brev"])


def test_unknown_extension_is_a_build_error_without_crash(compiler):
    worker = compiler_mod.shared_worker()
    compiler.compile(VADD, ["vadd"])
    pid = worker.pid
    with pytest.raises(exception, match="Unknown SPIR-V extension") as info:
        compiler.compile(VADD, ["vadd"], extensions=frozenset({"SPV_NOT_AN_EXTENSION"}))
    assert info.value.code() is errc.build
    assert worker.pid == pid
    with pytest.raises(exception, match="invalid SPIR-V extension name"):
        compiler.compile(VADD, ["vadd"], extensions=frozenset({"+A,B"}))


def test_parse_error_and_missing_kernel(compiler):
    with pytest.raises(exception, match="parsing error") as info:
        compiler.compile("define void @", ["k"])
    assert info.value.code() is errc.build
    with pytest.raises(exception, match="not defined in the module: nope"):
        compiler.compile(VADD, ["nope"])


def test_private_worker_restart_counts():
    w = SpirvWorker()
    c = SpirvCompiler(worker=w)
    c.compile(VADD, ["vadd"])
    assert w.starts == 1 and w.start_seconds > 0
    with pytest.raises(exception):
        c.compile(I128, ["wide"])     # kills the compiling child, not the worker
    c.compile(VADD, ["vadd"])
    assert w.starts == 1
    os.kill(w.pid, signal.SIGKILL)    # a worker that died is started again
    os.waitpid(w.pid, 0)
    assert c.compile(VADD, ["vadd"])[:4] == SPIRV_MAGIC
    assert w.starts == 2
    w.close()
    assert w.pid is None


def test_output_does_not_depend_on_earlier_compiles():
    """A module's SPIR-V is what a process that compiled nothing before makes of it, however
    many modules the worker compiled earlier. LLVM state that outlives a module changed
    later modules: named struct types pile up in the global LLVMContext (``struct.P.0``,
    ``struct.P.1``...), and stale SPIR-V backend tables gave IDs defined twice, which
    Intel's OpenCL CPU runtime crashes on."""
    kernels = [(VADD, ["vadd"]), (STRUCT_SAXPY, ["saxpy"]), (LOCAL_REDUCE, ["reduce"]),
               (SPEC_SCALE, ["scale"])]
    fresh = []
    for ir, names in kernels:      # each the first module of its own worker process
        w = SpirvWorker()
        fresh.append(SpirvCompiler(worker=w).compile(ir, names))
        w.close()
    w = SpirvWorker()
    c = SpirvCompiler(worker=w)
    try:
        for _ in range(10):
            assert [c.compile(ir, names) for ir, names in kernels] == fresh
        assert w.starts == 1
    finally:
        w.close()


def test_concurrent_compiles_are_serialised(compiler):
    import concurrent.futures as cf
    with cf.ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda _: compiler.compile(VADD, ["vadd"]), range(8)))
    assert len(set(outs)) == 1


@needs_spirv_val
def test_validate_reports_rejection(compiler):
    with pytest.raises(exception, match="spirv-val rejected") as info:
        compiler.validate(SPIRV_MAGIC + b"\0" * 16)
    assert info.value.code() is errc.build
