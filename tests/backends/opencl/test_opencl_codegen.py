"""OpenCL (SPIR-V) code generation: golden checks of the SPIR-V disassembly for each
property category, native specialization constants end to end (input bundle and
handler; scalar, struct, array, vec; a spec constant as a loop trip count),
reqd_work_group_size enforced by the runtime, and the rule coverage of the target.

Every module compiled here is also run through ``spirv-val`` (``PYSYCL_SPIRV_VALIDATE``).
"""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import pysycl as sycl
from pysycl.backends.opencl.compiler import SpirvCompiler, validate
from pysycl.backends.opencl.lowering import (OpenClLowering, mangled, opencl_order,
                                             required_extensions)
from pysycl.backends.opencl.target import SPIRV64
from pysycl.bundle import toolchain
from pysycl.bundle.kernel_id import get_kernel_id
from pysycl.bundle.linker import default_linked_kernel
from pysycl.codegen import missing_rules
from pysycl.passes.spec_constants import lower_spec_constants

F32, I32, I64 = np.float32, np.int32, np.int64
HAVE_SPIRV_TOOLS = shutil.which("spirv-dis") is not None and shutil.which("spirv-val") is not None
needs_tools = pytest.mark.skipif(not HAVE_SPIRV_TOOLS, reason="SPIRV-Tools not installed")


@pytest.fixture(autouse=True)
def _validate_every_module(monkeypatch):
    if shutil.which("spirv-val"):
        monkeypatch.setenv("PYSYCL_SPIRV_VALIDATE", "1")


# Kernels ----------------------------------------------------------------------------------
@sycl.kernel(properties=sycl.properties(sycl.work_group_size(8, 4)))
def k_wg(it: sycl.nd_item[2], out: sycl.global_ptr[F32]):
    out[it.get_global_linear_id()] = F32(it.get_local_id(0) * 100 + it.get_local_id(1))


@sycl.kernel(properties=sycl.properties(sycl.sub_group_size(16),
                                        sycl.work_group_size_hint(32)))
def k_sg(it: sycl.nd_item[1], out: sycl.global_ptr[I32]):
    # Every work-item gets its sub-group's size: the sum of ones over the sub-group.
    out[it.get_global_id(0)] = sycl.reduce_over_group(it.get_sub_group(), I32(1), sycl.plus())


@sycl.kernel
def k_align(i: sycl.id[1], a: sycl.annotated_ptr[F32, sycl.properties(sycl.restrict,
                                                                       sycl.alignment(64))],
            b: sycl.global_ptr[F32]):
    a[i[0]] = b[i[0]] * F32(2)


@sycl.kernel
def k_fadd(i: sycl.id[1], x: sycl.global_ptr[F32], total: sycl.global_ptr[F32]):
    sycl.atomic_ref(total, 0).fetch_add(x[i[0]])


@sycl.kernel
def k_tree_sum(nd: sycl.nd_item[1], x: sycl.global_ptr[F32], total: sycl.global_ptr[F32],
               scratch: sycl.local_accessor[F32, 1]):
    # benchmarks/kernels.py reduce_sum: a local-memory tree with a barrier in the loop,
    # then one float atomic add per work-group.
    lid = nd.get_local_id(0)
    scratch[lid] = x[nd.get_global_id(0)]
    stride = nd.get_local_range(0) // 2
    while stride > 0:
        sycl.group_barrier(nd.get_group())
        if lid < stride:
            scratch[lid] += scratch[lid + stride]
        stride //= 2
    if lid == 0:
        sycl.atomic_ref(total, 0).fetch_add(scratch[0])


i_id = sycl.specialization_id(I32, 7)
pair_t = np.dtype([("a", np.int32), ("b", np.float32)], align=True)
pair_id = sycl.specialization_id(pair_t, (3, 1.5))
arr_id = sycl.specialization_id(np.dtype((np.float32, (3,))), (1.0, 2.0, 3.0))
vec_id = sycl.specialization_id(sycl.vec(np.int32, 4), (1, 2, 3, 4))
trips_id = sycl.specialization_id(I32, 3)


@sycl.kernel
def k_spec(h: sycl.kernel_handler, out_i: sycl.global_ptr[I32], out_f: sycl.global_ptr[F32]):
    p = h.get_specialization_constant(pair_id)
    a = h.get_specialization_constant(arr_id)
    v = h.get_specialization_constant(vec_id)
    out_i[0] = h.get_specialization_constant(i_id)
    out_i[1] = p.a
    out_f[0] = p.b
    out_f[1] = a[0]
    out_f[2] = a[1]
    out_f[3] = a[2]
    out_i[2] = v[0]
    out_i[3] = v[1]
    out_i[4] = v[2]
    out_i[5] = v[3]


@sycl.kernel
def k_trips(it: sycl.item[1], h: sycl.kernel_handler, x: sycl.global_ptr[I64],
            out: sycl.global_ptr[I64]):
    i = it.get_id(0)
    acc = I64(0)
    for k in range(h.get_specialization_constant(trips_id)):
        acc += x[i] * (k + 1)
    out[i] = acc


# Helpers ----------------------------------------------------------------------------------
def _llvm(kernel, mode="native"):
    lk = default_linked_kernel(get_kernel_id(kernel))
    module = toolchain.clone(lk.module)
    lower_spec_constants(module, lk.spec_ids, mode, None)
    return lk, toolchain.codegen(module, SPIRV64)


def _spirv(kernel, mode="native"):
    lk, ir = _llvm(kernel, mode)
    c = SpirvCompiler()
    spv = c.compile(ir, [lk.name])
    validate(spv)
    return lk, ir, c.disassemble(spv)


@pytest.fixture(scope="module")
def cl_queue():
    devs = [d for d in sycl.device.get_devices() if d.backend.name == "opencl"]
    if not devs:
        pytest.skip("no OpenCL device")
    return sycl.queue(devs[0])


# Unit: helpers ----------------------------------------------------------------------------
def test_mangled_names_and_orders():
    assert mangled("__spirv_BuiltInGlobalInvocationId", "i") == \
        "_Z33__spirv_BuiltInGlobalInvocationIdi"
    assert mangled("__spirv_ControlBarrier", "iii") == "_Z22__spirv_ControlBarrieriii"
    assert opencl_order((8, 4)) == [4, 8, 1]
    assert opencl_order((16,)) == [16, 1, 1]


def test_rule_coverage_lists_ops_without_an_opencl_rule():
    lowering = OpenClLowering(SPIRV64)
    # Only the native CPU's work-group fission op is outside the target, by design.
    assert missing_rules(lowering) == []
    assert set(lowering.unsupported) == {"wg.items"}


# Golden SPIR-V ------------------------------------------------------------------------------
@needs_tools
def test_kernel_is_spir_kernel_with_mangled_builtins():
    lk, ir, asm = _spirv(k_wg)
    assert re.search(r'define spir_kernel void @"[^"]*k_wg"', ir)
    assert "@_Z32__spirv_BuiltInLocalInvocationIdi" in ir.replace('"', "")
    assert "BuiltIn LocalInvocationId" in asm
    assert re.search(r"OpEntryPoint Kernel %\w+ \"[^\"]*k_wg\"", asm)


@needs_tools
def test_work_group_size_is_local_size_execution_mode():
    lk, ir, asm = _spirv(k_wg)
    assert "!spirv.ExecutionMode" in ir
    # SYCL (8, 4) is OpenCL (4, 8, 1): the rightmost SYCL dimension varies fastest.
    assert re.search(r"OpExecutionMode %\w+ LocalSize 4 8 1", asm), asm


@needs_tools
def test_sub_group_size_and_hint_are_execution_modes():
    lk, ir, asm = _spirv(k_sg)
    assert re.search(r"OpExecutionMode %\w+ SubgroupSize 16", asm), asm
    assert re.search(r"OpExecutionMode %\w+ LocalSizeHint 32 1 1", asm), asm


@needs_tools
def test_alignment_is_a_parameter_decoration_and_restrict_is_noalias():
    lk, ir, asm = _spirv(k_align)
    assert "!spirv.ParameterDecorations" in ir
    assert re.search(r"OpDecorate %\w+ Alignment 64", asm), asm
    assert re.search(r"OpDecorate %\w+ FuncParamAttr NoAlias", asm), asm


@needs_tools
def test_spec_constants_are_op_spec_constant_with_the_property_set_ids():
    lk, ir, asm = _spirv(k_spec)
    ids = lk.spec_ids
    leaves = sorted(leaf for sym in ids.ids for leaf, _o, _s in ids.ids[sym]
                    if leaf != 0xFFFFFFFF)
    got = sorted(int(x) for x in re.findall(r"OpDecorate %\w+ SpecId (\d+)", asm))
    assert got == leaves and len(leaves) == 1 + 2 + 3 + 4
    assert asm.count("OpSpecConstant ") >= 10
    (i_leaf,) = [leaf for leaf, _o, _s in ids.ids[i_id.unique_id]]
    # The scalar's default (7) is the OpSpecConstant's literal.
    sid = re.search(rf"OpDecorate (%\w+) SpecId {i_leaf}\b", asm).group(1)
    assert re.search(rf"{sid} = OpSpecConstant %\w+ 7\b", asm), asm


@needs_tools
def test_float_atomic_add_asks_for_its_extension():
    lk, ir = _llvm(k_fadd)
    assert required_extensions(ir) == {"SPV_EXT_shader_atomic_float_add"}
    lk, ir, asm = _spirv(k_fadd)
    assert "OpAtomicFAddEXT" in asm
    assert 'OpExtension "SPV_EXT_shader_atomic_float_add"' in asm


def _int_constants(asm: str) -> dict[str, int]:
    """``%id -> value`` of the integer ``OpConstant``s (and ``OpConstantNull`` as 0)."""
    out = {m[0]: int(m[1]) for m in re.findall(r"(%\w+) = OpConstant %\w+ (-?\d+)\s*$", asm, re.M)}
    out.update({m: 0 for m in re.findall(r"(%\w+) = OpConstantNull", asm)})
    return out


@needs_tools
def test_tree_reduction_barrier_and_atomic_operands():
    """The work-group tree reduction compiles to what OpenCL C gives for it: one
    OpControlBarrier(Workgroup, Workgroup, SeqCst|WorkgroupMemory|CrossWorkgroupMemory)
    kept in the loop, one relaxed device-scope OpAtomicFAddEXT, and local memory used
    through Workgroup pointers (no generic address space). (On the Intel CPU runtime this
    kernel runs as fast as its OpenCL C twin; barrier semantics 0x108 and a work-group
    scope atomic were measured to make no difference.)"""
    _, _, asm = _spirv(k_tree_sum)
    consts = _int_constants(asm)
    barriers = re.findall(r"OpControlBarrier (%\w+) (%\w+) (%\w+)", asm)
    assert [tuple(consts[a] for a in b) for b in barriers] == [(2, 2, 0x10 | 0x100 | 0x200)]
    atomics = re.findall(r"OpAtomicFAddEXT %\w+ %\w+ (%\w+) (%\w+) %\w+", asm)
    assert [(consts[sc], consts[sem]) for sc, sem in atomics] == [(1, 0)]
    assert "OpTypePointer Workgroup" in asm
    assert "OpTypePointer Generic" not in asm and "OpPtrCastToGeneric" not in asm
    # The loop stays a loop (its trip count depends on the work-group size).
    assert "OpPhi" in asm


# Running on the OpenCL device ---------------------------------------------------------------
@pytest.mark.parametrize("wg, groups", [(256, 37), (64, 5), (1, 3)])
def test_tree_reduction_matches_numpy(cl_queue, wg, groups):
    n = wg * groups
    x = np.random.default_rng(wg).random(n, dtype=F32)
    dx = sycl.malloc_shared(n, F32, cl_queue)
    total = sycl.malloc_shared(1, F32, cl_queue)
    try:
        np.asarray(dx)[:] = x
        np.asarray(total)[:] = 0

        def cgf(cgh):
            cgh.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), k_tree_sum,
                             dx, total, cgh.local_accessor(F32, (wg,)))
        cl_queue.submit(cgf).wait()
        got = float(np.asarray(total)[0])
    finally:
        sycl.free(dx, cl_queue)
        sycl.free(total, cl_queue)
    np.testing.assert_allclose(got, x.astype(np.float64).sum(), rtol=1e-5)


def _run_spec(q, bundle=None, values=None):
    oi = sycl.malloc_shared(6, I32, q)
    of = sycl.malloc_shared(4, F32, q)
    try:
        def cgf(cgh):
            if bundle is not None:
                cgh.use_kernel_bundle(bundle)
            for sid, v in (values or {}).items():
                cgh.set_specialization_constant(sid, v)
            cgh.single_task(k_spec, oi, of)
        q.submit(cgf).wait()
        return np.asarray(oi).tolist(), np.asarray(of).tolist()
    finally:
        sycl.free(oi, q)
        sycl.free(of, q)


def test_native_spec_constant_defaults(cl_queue):
    assert _run_spec(cl_queue) == ([7, 3, 1, 2, 3, 4], [1.5, 1.0, 2.0, 3.0])


def test_native_spec_constants_set_on_the_handler(cl_queue):
    values = {i_id: 11, pair_id: (-5, 2.5), arr_id: (4.0, 5.0, 6.0),
              vec_id: (9, 8, 7, 6)}
    assert _run_spec(cl_queue, values=values) == ([11, -5, 9, 8, 7, 6], [2.5, 4.0, 5.0, 6.0])
    # A later command group without values sees the defaults again.
    assert _run_spec(cl_queue) == ([7, 3, 1, 2, 3, 4], [1.5, 1.0, 2.0, 3.0])


def test_native_spec_constants_set_on_an_input_bundle(cl_queue):
    inp = sycl.get_kernel_bundle(cl_queue.get_context(), sycl.bundle_state.input,
                                 devices=[cl_queue.get_device()], kernel=k_spec)
    inp.set_specialization_constant(i_id, -1)
    inp.set_specialization_constant(pair_id, (42, -0.5))
    inp.set_specialization_constant(arr_id, (7.0, 8.0, 9.0))
    inp.set_specialization_constant(vec_id, (0, -1, -2, -3))
    exe = sycl.build(inp, properties=sycl.properties(sycl.spec_constant_lowering("native")))
    assert {img.spec_constant_lowering for img in exe} == {"native"}
    assert exe.native_specialization_constant()
    assert _run_spec(cl_queue, bundle=exe) == ([-1, 42, 0, -1, -2, -3], [-0.5, 7.0, 8.0, 9.0])


@pytest.mark.parametrize("trips", [None, 0, 1, 5])
def test_native_spec_constant_as_loop_trip_count(cl_queue, trips):
    n = 32
    x = np.arange(1, n + 1, dtype=I64)
    dx, out = sycl.malloc_shared(n, I64, cl_queue), sycl.malloc_shared(n, I64, cl_queue)
    try:
        np.asarray(dx)[:] = x

        def cgf(cgh):
            if trips is not None:
                cgh.set_specialization_constant(trips_id, trips)
            cgh.parallel_for(sycl.range(n), k_trips, dx, out)
        cl_queue.submit(cgf).wait()
        got = np.asarray(out).copy()
    finally:
        sycl.free(dx, cl_queue)
        sycl.free(out, cl_queue)
    t = 3 if trips is None else trips
    np.testing.assert_array_equal(got, x * (t * (t + 1) // 2))


def test_reqd_work_group_size_is_enforced(cl_queue):
    out = sycl.malloc_shared(128, F32, cl_queue)
    try:
        cl_queue.parallel_for(sycl.nd_range((16, 8), (8, 4)), k_wg, out).wait()
        got = np.asarray(out).reshape(16, 8)
        r, c = np.meshgrid(np.arange(16), np.arange(8), indexing="ij")
        np.testing.assert_array_equal(got, (r % 8) * 100 + (c % 4))
        with pytest.raises(sycl.exception) as e:
            cl_queue.parallel_for(sycl.nd_range((16, 8), (4, 8)), k_wg, out).wait()
        assert e.value.code() == sycl.errc.nd_range
    finally:
        sycl.free(out, cl_queue)


def test_float_atomic_add_runs(cl_queue):
    n = 1000
    x = sycl.malloc_shared(n, F32, cl_queue)
    total = sycl.malloc_shared(1, F32, cl_queue)
    try:
        np.asarray(x)[:] = np.arange(n, dtype=F32)
        np.asarray(total)[:] = 0
        cl_queue.parallel_for(sycl.range(n), k_fadd, x, total).wait()
        assert float(np.asarray(total)[0]) == float(n * (n - 1) // 2)
    finally:
        sycl.free(x, cl_queue)
        sycl.free(total, cl_queue)


def test_required_sub_group_size_runs(cl_queue):
    if 16 not in cl_queue.get_device().get_info(sycl.info.device.sub_group_sizes):
        pytest.skip("device has no sub-group size 16")
    out = sycl.malloc_shared(64, I32, cl_queue)
    try:
        cl_queue.parallel_for(sycl.nd_range(64, 32), k_sg, out).wait()
        assert np.asarray(out).tolist() == [16] * 64
    finally:
        sycl.free(out, cl_queue)
