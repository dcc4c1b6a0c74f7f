"""Float contraction and the native CPU.

The native CPU rounds ``a * b + c`` twice, as NumPy does: no ``llvm.fmuladd`` in its
code and results equal to NumPy's bit for bit (FIR, the four add/sub forms, products
kept in variables). The shared contraction rule (``codegen/rules_scalar._mul_add``, the
OpenCL backend's ``mad``) is also checked here on host code, through a lowering that
turns it on with the default ``TargetLowering.mul_add`` (``llvm.fmuladd``): a product
feeding an add or a subtraction in one expression is contracted, scalar or vec; a
product kept in a variable (used once or twice) or widened before the add is not; its
results are one of the two NumPy roundings."""
from __future__ import annotations

import re

import numpy as np
import pytest

import pysycl as sycl
from pysycl.backends.base import KernelArg, KernelArgKind
from pysycl.backends.native_cpu.compiler import NativeCpuCompiler
from pysycl.backends.native_cpu.executor import default_executor
from pysycl.backends.native_cpu.lowering import NativeCpuLowering
from pysycl.backends.native_cpu.target import native_cpu_target
from pysycl.bundle import toolchain
from pysycl.bundle.kernel_id import get_kernel_id
from pysycl.bundle.linker import default_linked_kernel
from pysycl.codegen import lower_module
from pysycl.passes.spec_constants import lower_spec_constants

F32, F64, I32 = np.float32, np.float64, np.int32
F4 = sycl.vec(np.float32, 4)
taps_id = sycl.specialization_id(I32, 16)


@sycl.kernel
def k_fir(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[F32],
          taps: sycl.global_ptr[F32], y: sycl.global_ptr[F32]):
    i = it.get_id(0)
    acc = F32(0)
    for k in range(h.get_specialization_constant(taps_id)):
        acc += taps[k] * x[i + k]
    y[i] = acc


@sycl.kernel
def k_forms(i: sycl.id[1], a: sycl.global_ptr[F32], b: sycl.global_ptr[F32],
            c: sycl.global_ptr[F32], out: sycl.global_ptr[F32]):
    j = i[0]
    n = 4 * j
    out[n] = a[j] * b[j] + c[j]
    out[n + 1] = c[j] + a[j] * b[j]
    out[n + 2] = a[j] * b[j] - c[j]
    out[n + 3] = c[j] - a[j] * b[j]


@sycl.kernel
def k_kept(i: sycl.id[1], a: sycl.global_ptr[F32], b: sycl.global_ptr[F32],
           c: sycl.global_ptr[F32], d: sycl.global_ptr[F64], out: sycl.global_ptr[F32],
           wide: sycl.global_ptr[F64]):
    j = i[0]
    p = a[j] * b[j]                  # a product kept in a variable: rounded on its own
    out[2 * j] = p + c[j]
    out[2 * j + 1] = p - c[j]        # ... and used twice
    wide[j] = c[j] * a[j] + d[j]     # f32 product widened to f64 before the add


@sycl.kernel
def k_vec(i: sycl.id[1], a: sycl.global_ptr[F4], b: sycl.global_ptr[F4],
          c: sycl.global_ptr[F4], out: sycl.global_ptr[F4]):
    out[i[0]] = a[i[0]] * b[i[0]] - c[i[0]]


class _ContractingLowering(NativeCpuLowering):
    """The host lowering with the shared contraction rule on (default ``mul_add``)."""
    contract_expressions = True


def _linked(kernel):
    lk = default_linked_kernel(get_kernel_id(kernel))
    module = toolchain.clone(lk.module)
    lower_spec_constants(module, lk.spec_ids, "literal", None)
    return lk, module


def _native_llvm(kernel) -> str:
    """The kernel's LLVM IR as the native CPU device builds it (spec constants at their
    defaults)."""
    return toolchain.codegen(_linked(kernel)[1], native_cpu_target())


def _contracting_llvm(kernel) -> str:
    return str(lower_module(_linked(kernel)[1], _ContractingLowering(native_cpu_target())))


def _count(text: str, pattern: str) -> int:
    return len(re.findall(pattern, text))


# The native CPU: two roundings -----------------------------------------------------------------
def test_native_code_has_no_contraction():
    for kernel in (k_fir, k_forms, k_vec):
        opt = NativeCpuCompiler().optimized_ir(_native_llvm(kernel))
        assert "fmuladd" not in opt and "llvm.fma" not in opt, kernel.__name__
    if "+fma" in native_cpu_target().features.split(","):
        asm = NativeCpuCompiler().assembly(_native_llvm(k_fir))
        assert _count(asm, r"\bvfn?m(add|sub)\w*[ps]s\b") == 0
        assert _count(asm, r"\bvmulps\b") >= 16            # 16 taps, a multiply each


# The shared rule on host code ----------------------------------------------------------------
def test_rule_contracts_the_four_forms_with_the_right_negation():
    opt = NativeCpuCompiler().optimized_ir(_contracting_llvm(k_forms))
    assert _count(opt, r"call float @llvm\.fmuladd\.f32\(") == 4
    assert _count(opt, r"\bfneg float\b") == 2              # -c and -a
    assert _count(opt, r"\bf(mul|add|sub) float\b") == 0


def test_rule_leaves_kept_widened_and_twice_used_products():
    opt = NativeCpuCompiler().optimized_ir(_contracting_llvm(k_kept))
    assert "fmuladd" not in opt
    assert _count(opt, r"\bfmul float\b") == 2       # p, and c * a before the widening
    assert _count(opt, r"\bfadd float\b") == 1 and _count(opt, r"\bfsub float\b") == 1
    assert _count(opt, r"\bfadd double\b") == 1


def test_rule_contracts_vec_operands_into_one_vector_fmuladd():
    ir = _contracting_llvm(k_vec)
    assert _count(ir, r"@\"?llvm\.fmuladd\.v4f32\"?\(") == 2   # its declaration and the call
    assert _count(ir, r"\bfsub <4 x float>") == 0


def test_rule_makes_the_fir_taps_multiply_adds():
    ir = _contracting_llvm(k_fir)
    opt = NativeCpuCompiler().optimized_ir(ir)
    assert "fmuladd" in opt
    assert _count(opt, r"\bf(mul|add) (float|<\d+ x float>)") == 0
    if "+fma" in native_cpu_target().features.split(","):
        asm = NativeCpuCompiler().assembly(ir)
        assert _count(asm, r"\bvfmadd\d+[ps]s\b") >= 16     # 16 taps, each one FMA
        assert _count(asm, r"\bv(mul|add)[ps]s\b") == 0


def test_rule_gives_a_rounding_of_the_exact_result():
    """The contracted forms run (host code from the contracting lowering): every element
    is the fused or the separate NumPy rounding, and where the two differ, the fused one
    shows when the CPU has FMA."""
    n = 1000
    rng = np.random.default_rng(17)
    a, b, c = (rng.standard_normal(n, dtype=F32) for _ in range(3))
    out = np.full(4 * n, np.nan, F32)
    lk, _ = _linked(k_forms)
    obj = NativeCpuCompiler().compile(_contracting_llvm(k_forms), [lk.name])
    program = default_executor().load(obj, [lk.name])
    program.launch(lk.name, (n,), None,
                   [KernelArg(KernelArgKind.mem, v.ctypes.data) for v in (a, b, c, out)]
                   + [KernelArg(KernelArgKind.mem, 0)])      # no spec-constant buffer
    got = out.reshape(n, 4)
    p, exact_p = a * b, a.astype(F64) * b.astype(F64)
    fused_seen = 0
    for col, (sp, sc) in enumerate([(1, 1), (1, 1), (1, -1), (-1, 1)]):
        fused = (sp * exact_p + sc * c.astype(F64)).astype(F32)
        separate = (F32(sp) * p + F32(sc) * c).astype(F32)
        ok = (got[:, col] == fused) | (got[:, col] == separate)
        assert ok.all(), (col, got[~ok, col][:5], fused[~ok][:5], separate[~ok][:5])
        fused_seen += int(((got[:, col] == fused) & (fused != separate)).sum())
    if "+fma" in native_cpu_target().features.split(","):
        assert fused_seen > 0


# Results on the device ----------------------------------------------------------------------
def _native_queue():
    for dev in sycl.device.get_devices():
        if str(dev.backend).endswith("native_cpu"):
            return sycl.queue(dev)
    pytest.skip("no native_cpu device")


@pytest.fixture(scope="module")
def native_queue():
    return _native_queue()


def test_forms_round_like_numpy(native_queue):
    n = 1000
    rng = np.random.default_rng(19)
    a, b, c = (rng.standard_normal(n, dtype=F32) for _ in range(3))
    out = np.full(4 * n, np.nan, F32)
    native_queue.parallel_for(sycl.range(n), k_forms, a, b, c, out).wait()
    p = a * b
    np.testing.assert_array_equal(out.reshape(n, 4), np.stack([p + c, c + p, p - c, c - p], 1))


def test_kept_products_round_like_numpy(native_queue):
    n = 1000
    rng = np.random.default_rng(23)
    a, b, c = (rng.standard_normal(n, dtype=F32) for _ in range(3))
    d = rng.standard_normal(n)
    out, wide = np.full(2 * n, np.nan, F32), np.full(n, np.nan)
    native_queue.parallel_for(sycl.range(n), k_kept, a, b, c, d, out, wide).wait()
    p = a * b
    np.testing.assert_array_equal(out.reshape(n, 2), np.stack([p + c, p - c], 1))
    np.testing.assert_array_equal(wide, (c * a).astype(F64) + d)


@pytest.mark.parametrize("ntaps", [7, 16, 33])
def test_fir_rounds_like_numpy(native_queue, ntaps):
    n = 4096 + 3               # a remainder after the vector loop
    rng = np.random.default_rng(ntaps)
    x = rng.standard_normal(n + ntaps, dtype=F32)
    taps = rng.standard_normal(ntaps, dtype=F32)
    y = np.full(n, np.nan, F32)

    def cgf(cgh):
        cgh.set_specialization_constant(taps_id, ntaps)
        cgh.parallel_for(sycl.range(n), k_fir, x, taps, y)
    native_queue.submit(cgf).wait()
    expected = np.zeros(n, F32)
    for k in range(ntaps):                 # the kernel's order: acc += taps[k] * x[i + k]
        expected += taps[k] * x[k:k + n]
    np.testing.assert_array_equal(y, expected)
