"""IR -> LLVM -> PTX for CUDA (``backends/cuda/lowering.py``), golden checks on the text
with no GPU; the tests marked ``cuda`` run the same kernels on a GPU against NumPy."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import pysycl as sycl

from pysycl.backends.base import KernelArg, KernelArgKind
from pysycl.backends.cuda.compiler import compile_ptx, find_libdevice
from pysycl.backends.cuda.lowering import CudaLowering
from pysycl.backends.cuda.target import cuda_target
from pysycl.codegen import lower_module, missing_rules
from pysycl.errors import errc, exception
from pysycl.ir.builder import Builder
from pysycl.ir.core import Function, Module, Param, Region
from pysycl.ir.types import (F32, F64, I32, I64, AccessorType, IndexSpaceType,
                             LocalAccessorType, PointerType, StructField, StructType)

SM90 = cuda_target((9, 0))


# Building blocks ---------------------------------------------------------------------------
def kernel(name: str, params: list[Param], **props):
    body = Region()
    fn = Function(name, "kernel", params, body=body, properties=props)
    return Module(name, [fn]), Builder(body), [p.value for p in params]


def acc(t, dims=1):
    return AccessorType(t, dims, "read_write")


def at(b: Builder, a, *idx):
    return b.op("acc.ptr", a, *idx, type=PointerType(a.type.elem))


def gid(b: Builder, dim=0):
    return b.op("wi.global_id", type=I64, dim=dim)


def llvm_of(module: Module) -> str:
    return str(lower_module(module, CudaLowering(SM90)))


def ptx_of(module: Module) -> str:
    return compile_ptx(llvm_of(module), [k.name for k in module.kernels], cpu="sm_90",
                       libdevice=find_libdevice())


def vadd_module(t=F32, name="vadd"):
    m, b, (_, x, y, z) = kernel(name, [Param("it", IndexSpaceType("item", 1)),
                                       Param("x", acc(t)), Param("y", acc(t)), Param("z", acc(t))])
    i = gid(b)
    b.store(at(b, z, i), b.op("add", b.load(at(b, x, i)), b.load(at(b, y, i)), type=t))
    return m


def fill2d_module():
    """out[r, c] = r * 1000 + c over a 2-d range: SYCL dim 0 is CUDA y."""
    m, b, (_, out) = kernel("fill2d", [Param("it", IndexSpaceType("item", 2)),
                                       Param("out", acc(I64, 2))])
    r, c = gid(b, 0), gid(b, 1)
    b.store(at(b, out, r, c), b.op("add", b.op("mul", r, b.const(1000, I64), type=I64), c,
                                   type=I64))
    return m


def reduce_module(scope: str, op: str = "plus", t=F32, name=None):
    """out[gid] = reduce_over_group(x[gid]) at ``scope``."""
    name = name or f"reduce_{scope}_{op}_{t}"
    m, b, (_, x, out) = kernel(name, [Param("it", IndexSpaceType("nd_item", 1)),
                                      Param("x", acc(t)), Param("out", acc(t))])
    i = gid(b)
    r = b.op("group.reduce", b.load(at(b, x, i)), type=t, op=op, scope=scope)
    b.store(at(b, out, i), r)
    return m


def local_reverse_module():
    """Reverse each work-group's slice through a local accessor and a barrier."""
    m, b, (_, x, out, tile) = kernel("local_reverse", [
        Param("it", IndexSpaceType("nd_item", 1)), Param("x", acc(F32)), Param("out", acc(F32)),
        Param("tile", LocalAccessorType(F32, 1))])
    i, lid = gid(b), b.op("wi.local_id", type=I64, dim=0)
    n = b.op("wi.local_range", type=I64, dim=0)
    b.store(at(b, tile, lid), b.load(at(b, x, i)))
    b.op("barrier", scope="work_group")
    j = b.op("sub", b.op("sub", n, b.const(1, I64), type=I64), lid, type=I64)
    b.store(at(b, out, i), b.load(at(b, tile, j)))
    return m


def atomic_sum_module(scope="device", order="relaxed"):
    m, b, (_, x, total) = kernel(f"atomic_sum_{scope}", [
        Param("it", IndexSpaceType("item", 1)), Param("x", acc(F32)), Param("total", acc(F32))])
    b.op("atomic.rmw", at(b, total, b.const(0, I64)), b.load(at(b, x, gid(b))), type=F32,
         op="add", order=order, scope=scope)
    return m


def math_module(t=F32):
    m, b, (_, x, out) = kernel(f"math_{t}", [Param("it", IndexSpaceType("item", 1)),
                                             Param("x", acc(t)), Param("out", acc(t))])
    i = gid(b)
    v = b.load(at(b, x, i))
    s = b.op("math.sin", v, type=t)
    e = b.op("math.exp", b.op("math.sqrt", b.op("math.fabs", v, type=t), type=t), type=t)
    p = b.op("pow", b.op("math.fabs", v, type=t), b.const(1.5, t), type=t)
    b.store(at(b, out, i), b.op("add", b.op("add", s, e, type=t), p, type=t))
    return m


# Golden checks (no GPU) ---------------------------------------------------------------------
def test_kernel_is_a_ptx_entry_around_an_inlined_body():
    text = llvm_of(vadd_module())
    assert 'define ptx_kernel void @"vadd"(' in text
    assert 'define internal void @"vadd.body"(' in text and "alwaysinline" in text
    ptx = ptx_of(vadd_module())
    assert ".visible .entry vadd(" in ptx and "vadd.body" not in ptx
    assert "%tid.x" in ptx and "%ctaid.x" in ptx and "%ntid.x" in ptx
    # accessor = (ptr, range, offset) then the spec-constant buffer, last
    assert ptx.count(".param .u64 .ptr .global") == 4 and "vadd_param_9" in ptx


def test_sycl_dimensions_map_to_reversed_cuda_axes():
    text = llvm_of(fill2d_module())
    body = text.split('@"fill2d.body"', 1)[1]
    # get_global_id(0) of a 2-d range reads y, get_global_id(1) reads x
    first_y = body.index("sreg.ctaid.y")
    first_x = body.index("sreg.ctaid.x")
    assert first_y < first_x
    assert "sreg.ctaid.z" not in body


def test_launch_bounds_and_properties_become_attributes():
    m = vadd_module()
    m.functions[0].properties.update({"sycl-work-group-size": "2,32",
                                      "sycl-sub-group-size": "32"})
    text = llvm_of(m)
    assert '"nvvm.reqntid"="32,2"' in text and '"sycl-work-group-size"="2,32"' in text
    ptx = compile_ptx(text, ["vadd"], cpu="sm_90")
    assert ".reqntid 32, 2" in ptx
    m = vadd_module()
    m.functions[0].properties["sycl-max-work-group-size"] = "4,64"
    assert ".maxntid 64, 4" in ptx_of(m)
    m = vadd_module()
    m.functions[0].properties["sycl-max-linear-work-group-size"] = "128"
    assert ".maxntid 128" in ptx_of(m)


def test_unsupported_sub_group_size_is_rejected():
    m = vadd_module()
    m.functions[0].properties["sycl-sub-group-size"] = "16"
    with pytest.raises(exception) as e:
        llvm_of(m)
    assert e.value.code() == errc.kernel_not_supported and "warps of 32" in str(e.value)


def test_barriers():
    ptx = ptx_of(local_reverse_module())
    assert "bar.sync \t0;" in ptx or "bar.sync 0;" in ptx or "barrier.sync" in ptx
    m, b, (_,) = kernel("sgbar", [Param("it", IndexSpaceType("nd_item", 1))])
    b.op("barrier", scope="sub_group")
    assert "bar.warp.sync" in ptx_of(m)


def test_local_accessor_is_an_i32_offset_into_the_dynamic_shared_buffer():
    text = llvm_of(local_reverse_module())
    assert '@"__pysycl_local_mem" = external addrspace(3) global [0 x i8], align 16' in text
    ptx = ptx_of(local_reverse_module())
    assert ".extern .shared .align 16 .b8 __pysycl_local_mem[];" in ptx
    # x and out (ptr, access range, memory range, offset, base), tile (i32 offset, i64
    # range), spec
    assert ".param .u32 local_reverse_param_10," in ptx
    assert ".param .u64 local_reverse_param_11," in ptx
    assert "ld.param.s32" in ptx or "ld.param.b32" in ptx or "ld.param.u32" in ptx
    assert "st.shared" in ptx and "ld.shared" in ptx


def test_float_atomic_add_and_scopes():
    ptx = ptx_of(atomic_sum_module("device"))
    assert "atom.global.add.f32" in ptx
    text = llvm_of(atomic_sum_module("work_group"))
    assert 'atomicrmw fadd ptr addrspace(1)' in text and 'syncscope("block") monotonic' in text
    assert "atom" in ptx_of(atomic_sum_module("work_group"))
    assert 'syncscope' not in llvm_of(atomic_sum_module("system"))


@pytest.mark.parametrize("order, before, after", [
    ("relaxed", None, None),
    ("release", "fence.acq_rel.gpu", None),
    ("acquire", None, "fence.acq_rel.gpu"),
    ("acq_rel", "fence.acq_rel.gpu", "fence.acq_rel.gpu"),
    ("seq_cst", "fence.sc.gpu", "fence.acq_rel.gpu"),
])
def test_read_modify_writes_keep_their_ordering(order, before, after):
    # NVPTX emits every atomicrmw as a relaxed atom: the ordering must come from fences
    # of the same scope around it (a last work-group reading the others' results, a
    # lock, message passing).
    ptx = ptx_of(atomic_sum_module("device", order))
    lines = [l.strip().rstrip(";") for l in ptx.splitlines()
             if l.strip().startswith(("atom", "red", "fence"))]
    at_ = next(i for i, l in enumerate(lines) if l.startswith(("atom", "red")))
    assert (lines[at_ - 1] if at_ and lines[at_ - 1].startswith("fence") else None) == before
    follows = lines[at_ + 1] if at_ + 1 < len(lines) else None
    assert (follows if follows and follows.startswith("fence") else None) == after
    block = ptx_of(atomic_sum_module("work_group", order))
    assert ("fence.acq_rel.cta" in block or "fence.sc.cta" in block) == (order != "relaxed")


def test_float32_math_stays_float32_through_libdevice(libdevice):
    text = llvm_of(math_module(F32))
    for fn in ("__nv_sinf", "__nv_expf", "__nv_powf"):
        assert f'@"{fn}"(float' in text
    assert "double" not in text
    ptx = ptx_of(math_module(F32))
    # f32 in, f32 out: no widening of the operand (libdevice's own Payne-Hanek reduction
    # for huge arguments does use f64 integers internally; that is not a widened call)
    assert "__nv_" not in ptx and "cvt.f64.f32" not in ptx and "sin.approx" not in ptx
    text64 = llvm_of(math_module(F64))
    assert '@"__nv_sin"(double' in text64 and '@"__nv_pow"(double' in text64


def test_sub_group_reduce_is_a_shuffle_butterfly():
    ptx = ptx_of(reduce_module("sub_group"))
    assert ptx.count("shfl.sync.bfly.b32") == 5 and "shfl.sync.idx.b32" in ptx
    ptx64 = ptx_of(reduce_module("sub_group", "maximum", F64))
    assert ptx64.count("shfl.sync.bfly.b32") == 10      # two 32-bit words a step


def test_work_group_reduce_uses_shared_slots_and_barriers():
    ptx = ptx_of(reduce_module("work_group", "minimum", I32))
    assert ".shared .align 16 .b8 __pysycl_group_scratch[256]" in ptx
    assert ptx.count("bar.sync") == 2 and "shfl.sync.bfly" in ptx


def test_sub_group_queries():
    m, b, (_, out) = kernel("sgq", [Param("it", IndexSpaceType("nd_item", 1)),
                                    Param("out", acc(I64))])
    i = gid(b)
    vals = [b.op(f"sg.{q}", type=I64) for q in ("local_id", "local_range", "group_id",
                                                "group_range")]
    s = vals[0]
    for v in vals[1:]:
        s = b.op("add", b.op("mul", s, b.const(100, I64), type=I64), v, type=I64)
    b.store(at(b, out, i), s)
    ptx = ptx_of(m)
    assert "%laneid" in ptx and "%warpid" not in ptx


def test_device_globals_are_externally_initialized_module_variables():
    from pysycl.codegen import device_global_symbol
    from pysycl.ir.core import DeviceGlobalDecl
    m, b, (_, out) = kernel("use_dg", [Param("it", IndexSpaceType("item", 1)),
                                       Param("out", acc(F32))])
    m.device_globals.append(DeviceGlobalDecl("app.scale", F32))
    p = b.op("dg.addr", type=PointerType(F32, "global"), id="app.scale")
    b.store(at(b, out, gid(b)), b.load(p))
    sym = device_global_symbol("app.scale")
    text = llvm_of(m)
    assert f'@"{sym}" = addrspace(1) externally_initialized global float' in text
    assert f".visible .global .align 8 .f32 {sym}" in ptx_of(m)


def test_struct_argument_is_byval_param():
    st = StructType("pair", (StructField("a", F64, 0), StructField("b", I32, 8)), 16, 8)
    m, b, (_, prm, out) = kernel("structarg", [Param("it", IndexSpaceType("item", 1)),
                                               Param("p", st), Param("out", acc(F64))])
    a = b.op("struct.get", prm, type=F64, field="a")
    c = b.op("cast", b.op("struct.get", prm, type=I32, field="b"), type=F64)
    b.store(at(b, out, gid(b)), b.op("add", a, c, type=F64))
    text = llvm_of(m)
    assert "ptr byval(<{double, i32, [4 x i8]}>) align 8" in text
    assert ".param .align 8 .b8 structarg_param_0[16]" in ptx_of(m)


def test_device_function_takes_the_dimension_count():
    body = Region()
    helper = Function("helper", "device", [], body=body, return_type=I64)
    hb = Builder(body)
    hb.op("return", gid(hb, 0))
    m, b, (_, out) = kernel("caller", [Param("it", IndexSpaceType("item", 2)),
                                       Param("out", acc(I64, 2))])
    m.functions.append(helper)
    v = b.op("call", type=I64, callee="helper")
    b.store(at(b, out, gid(b, 0), gid(b, 1)), v)
    text = llvm_of(m)
    assert 'define internal i64 @"helper"(ptr addrspace(1) %"__spec_buffer", i32 %"__sycl_dims")' in text
    assert 'i32 2)' in text
    ptx = ptx_of(m)
    assert ".func" not in ptx                 # inlined; the axis select folded to y
    assert "%ctaid.y" in ptx


def test_spec_native_is_unsupported_but_emulated_loads_work():
    m, b, (_, out) = kernel("spec", [Param("it", IndexSpaceType("item", 1)),
                                     Param("out", acc(F32))])
    b.store(at(b, out, gid(b)), b.op("spec.load", type=F32, offset=4))
    assert "ld.global" in ptx_of(m)
    m, b, (_, out) = kernel("specn", [Param("it", IndexSpaceType("item", 1)),
                                      Param("out", acc(F32))])
    b.store(at(b, out, gid(b)), b.op("spec.native", type=F32, leaf_ids=[0], default=b"\0" * 4))
    with pytest.raises(exception) as e:
        llvm_of(m)
    assert e.value.code() == errc.build and "literal or emulated" in str(e.value)


def test_rule_coverage():
    lowering = CudaLowering(SM90)
    assert missing_rules(lowering) == []
    # documented: no native spec constants in PTX, no work-group fission on GPUs
    assert sorted(lowering.unsupported) == ["spec.native", "wg.items"]


def test_registry_finds_the_cuda_lowering_and_target():
    from pysycl.backends import registry
    assert isinstance(registry.get_lowering("nvptx64-sm_90"), CudaLowering)
    assert registry.get_target("nvptx64-sm_89") == cuda_target((8, 9))
    assert type(registry.get_lowering("native_cpu")).__name__ == "NativeCpuLowering"


@sycl.kernel(name="cuda_codegen_saxpy")
def saxpy(it: sycl.item[1], a: np.float32, x: sycl.global_ptr[np.float32],
          y: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    y[i] = a * x[i] + np.sin(y[i])


def test_frontend_kernel_through_the_toolchain():
    from pysycl.bundle import toolchain
    from pysycl.bundle.kernel_id import get_kernel_id
    from pysycl.bundle.linker import default_linked_kernel
    from pysycl.passes.spec_constants import lower_spec_constants

    lk = default_linked_kernel(get_kernel_id(saxpy))
    module = toolchain.clone(lk.module)
    lower_spec_constants(module, lk.spec_ids, "emulated", None)
    text = toolchain.codegen(module, SM90)
    ptx = compile_ptx(text, [lk.name], cpu="sm_90", libdevice=find_libdevice())
    assert f".entry {lk.name}(" in ptx and "cvt.f64.f32" not in ptx


# On the GPU ----------------------------------------------------------------------------------
def _i64(v):
    return KernelArg(KernelArgKind.scalar, struct.pack("<q", int(v)))


class _Gpu:
    """Device arrays for IR kernels: ``arg(arr)`` -> accessor arguments."""

    def __init__(self, driver, device, stream):
        self.driver, self.device, self.stream, self.mem = driver, device, stream, []

    def to_device(self, arr: np.ndarray):
        m = self.driver.alloc(self.device, max(arr.nbytes, 8), "device")
        self.driver.copy(self.stream, m, 0, memoryview(np.ascontiguousarray(arr)).cast("B"), 0,
                         arr.nbytes).wait()
        self.mem.append((m, arr))
        return m

    def acc(self, arr: np.ndarray):
        return ([KernelArg(KernelArgKind.mem, self.to_device(arr))]
                + [_i64(n) for n in arr.shape * 2] + [_i64(0)] * (arr.ndim + 1))

    def back(self, arr: np.ndarray) -> np.ndarray:
        m = next(m for m, a in self.mem if a is arr)
        out = np.empty_like(arr)
        self.driver.copy(self.stream, memoryview(out).cast("B"), 0, m, 0, arr.nbytes).wait()
        return out

    def run(self, module, gsize, lsize, args):
        name = module.kernels[0].name
        ptx = compile_ptx(llvm_of(module), [name], cpu=self.device.target.cpu,
                          libdevice=find_libdevice())
        prog = self.driver.load(self.device, ptx.encode(), [name])
        spec = KernelArg(KernelArgKind.mem, 0)
        self.driver.launch(self.stream, prog, name, gsize, lsize, args + [spec]).wait()

    def close(self):
        for m, _ in self.mem:
            self.driver.free(m)


@pytest.fixture
def gpu(driver, device, stream):
    g = _Gpu(driver, device, stream)
    yield g
    g.close()


@pytest.mark.cuda
def test_gpu_vadd_and_2d_mapping(gpu):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    z = np.zeros_like(x)
    gpu.run(vadd_module(), (1000,), None, gpu.acc(x) + gpu.acc(y) + gpu.acc(z))
    np.testing.assert_array_equal(gpu.back(z), x + y)
    out = np.zeros((6, 40), np.int64)
    gpu.run(fill2d_module(), (6, 40), (2, 8), gpu.acc(out))
    r, c = np.indices(out.shape)
    np.testing.assert_array_equal(gpu.back(out), r * 1000 + c)


@pytest.mark.cuda
@pytest.mark.parametrize("scope,op,dtype,wg", [
    ("sub_group", "plus", np.int32, 64), ("sub_group", "maximum", np.float64, 48),
    ("work_group", "plus", np.int64, 256), ("work_group", "minimum", np.float32, 40),
    ("work_group", "maximum", np.int32, 1000)])
def test_gpu_group_reduce(gpu, scope, op, dtype, wg):
    from pysycl.ir.types import scalar_from_dtype
    n = wg * 3
    rng = np.random.default_rng(1)
    x = rng.integers(-1000, 1000, n).astype(dtype)
    out = np.zeros_like(x)
    gpu.run(reduce_module(scope, op, scalar_from_dtype(dtype)), (n,), (wg,),
            gpu.acc(x) + gpu.acc(out))
    fn = {"plus": np.sum, "minimum": np.min, "maximum": np.max}[op]
    size = 32 if scope == "sub_group" else wg
    expect = np.empty_like(x)
    for g in range(n // wg):           # sub-groups never straddle work-groups
        for s in range(0, wg, size):
            lo, hi = g * wg + s, g * wg + min(s + size, wg)
            expect[lo:hi] = fn(x[lo:hi])
    np.testing.assert_array_equal(gpu.back(out), expect)


@pytest.mark.cuda
def test_gpu_local_accessor_and_barrier(gpu):
    x = np.arange(512, dtype=np.float32)
    out = np.zeros_like(x)
    wg = 128
    local = [KernelArg(KernelArgKind.local, wg * 4), _i64(wg)]
    gpu.run(local_reverse_module(), (512,), (wg,), gpu.acc(x) + gpu.acc(out) + local)
    np.testing.assert_array_equal(gpu.back(out), x.reshape(-1, wg)[:, ::-1].ravel())


@pytest.mark.cuda
def test_gpu_float_atomic_add(gpu):
    x = np.ones(4096, np.float32) * 0.5
    total = np.zeros(1, np.float32)
    gpu.run(atomic_sum_module("device"), (4096,), None, gpu.acc(x) + gpu.acc(total))
    assert gpu.back(total)[0] == 2048.0


@pytest.mark.cuda
def test_gpu_float32_math_matches_numpy(gpu):
    x = np.linspace(-20, 20, 4096, dtype=np.float32)
    out = np.zeros_like(x)
    gpu.run(math_module(F32), (4096,), None, gpu.acc(x) + gpu.acc(out))
    ax = np.abs(x)
    expect = np.sin(x) + np.exp(np.sqrt(ax)) + ax ** np.float32(1.5)
    np.testing.assert_allclose(gpu.back(out), expect, rtol=2e-6, atol=2e-6)


@sycl.kernel(name="cuda_e2e_axpy")
def axpy(it: sycl.item[1], a: np.float32, x: sycl.global_ptr[np.float32],
         y: sycl.global_ptr[np.float32]):
    i = it.get_id(0)
    y[i] = a * x[i] + y[i]


@pytest.mark.cuda
def test_gpu_queue_parallel_for_end_to_end(driver):
    devs = [d for d in sycl.device.get_devices() if d.get_backend() == sycl.backend.cuda]
    if not devs:
        pytest.skip("the runtime lists no CUDA device")
    q = sycl.queue(devs[0])
    n = 10_000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    dx, dy = sycl.malloc_device(n, np.float32, q), sycl.malloc_shared(n, np.float32, q)
    try:
        q.memcpy(dx, x).wait()
        q.memcpy(dy, y).wait()
        q.parallel_for(sycl.range(n), axpy, np.float32(2), dx, dy).wait()
        got = np.asarray(dy).copy()
    finally:
        sycl.free(dx, q)
        sycl.free(dy, q)
    np.testing.assert_array_equal(got, 2 * x + 1)


def test_kernel_names_nvptx_cannot_spell_are_sanitised():
    from pysycl.backends.cuda.target import ptx_symbol
    name = "tests.f.<locals>.vadd"
    ptx = compile_ptx(llvm_of(vadd_module(name=name)), [name], cpu="sm_90")
    assert f".entry {ptx_symbol(name)}(" in ptx and "<" not in ptx_symbol(name)
    assert ptx_symbol("vadd") == "vadd"
    ptx = compile_ptx(llvm_of(vadd_module(name="app.vadd")), ["app.vadd"], cpu="sm_90")
    entry = ptx.split(".entry ", 1)[1].split("(", 1)[0]
    assert entry == ptx_symbol("app.vadd") and "." not in entry and "app.vadd" not in ptx
