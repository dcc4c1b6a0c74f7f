"""Codegen without running anything: rule coverage, LLVM text conventions, errors."""
from __future__ import annotations

import re

import pytest

from pysycl.backends.native_cpu.compiler import NativeCpuCompiler
from pysycl.backends.native_cpu.lowering import NativeCpuLowering
from pysycl.backends.native_cpu.target import entry_symbol, native_cpu_target
from pysycl.codegen import (RULES, TargetLowering, device_global_symbol, lower_module,
                            missing_rules)
from pysycl.errors import errc, exception
from pysycl.ir.builder import Builder
from pysycl.ir.core import DeviceGlobalDecl, Function, Module, Param, Region
from pysycl.ir.ops import CATALOGUE
from pysycl.ir.types import (F32, F64, I32, I64, AccessorType, IndexSpaceType, PointerType)


def lowering():
    return NativeCpuLowering(native_cpu_target())


def one_kernel(params, props=None):
    body = Region()
    fn = Function("k", "kernel", params, body=body, properties=props or {})
    return Module("m", [fn]), Builder(body), [p.value for p in params]


def kernel_text(text: str) -> str:
    """The lowered kernel function alone (the entry wrapper follows it)."""
    return text[text.index('define internal void @"k"'):text.index("define void @")]


def test_every_catalogue_op_has_a_rule():
    assert set(CATALOGUE) <= set(RULES)
    assert missing_rules(TargetLowering()) == []
    # native_cpu: nothing missing and nothing documented as unsupported either
    assert missing_rules(lowering()) == []
    assert lowering().unsupported == {}


def test_vector_add_kernel_signature_follows_the_abi():
    acc = AccessorType(F32, 2)
    m, b, (it, a) = one_kernel([Param("it", IndexSpaceType("item", 2)),
                                Param("a", acc, {"sycl-restrict": "", "sycl-alignment": "64"})],
                               {"sycl-work-group-size": "16,1,1"})
    text = str(lower_module(m, lowering()))
    sig = re.search(r'define internal void @"k"\((.*?)\)', text).group(1)
    # accessor: ptr, 2 x i64 access range, 2 x i64 memory range, 2 x i64 offset, i64 base;
    # then the spec buffer; then 18 hidden i64
    assert sig.startswith('ptr "sycl-alignment"="64" "sycl-restrict" noalias align 64 %"a", '
                          + ", ".join(f'i64 %"a.{k}"' for k in range(1, 8))
                          + ', ptr %"__spec_buffer"')
    assert sig.count("i64") == 7 + 18
    assert '"sycl-work-group-size"="16,1,1"' in text
    assert f'define void @"{entry_symbol("k")}"(ptr noalias %"args", ptr noalias %"launch", ' \
           f'i64 %"group_begin", i64 %"group_end", ptr noalias %"local_mem")' in text


def test_float32_math_emits_no_double():
    m, b, (x,) = one_kernel([Param("x", F32)])
    v = x
    for name in ("sqrt", "rsqrt", "exp", "sin", "tanh", "floor", "round", "fabs"):
        v = b.op(f"math.{name}", v, type=F32)
    b.op("math.pow", v, b.op("math.atan2", v, x, type=F32), type=F32)
    b.op("math.isnan", v, type=__import__("pysycl.ir.types", fromlist=["BOOL"]).BOOL)
    text = str(lower_module(m, lowering()))
    assert "double" not in text
    assert re.search(r'@"?llvm\.sin\.f32', text) and re.search(r'@"?llvm\.roundeven\.f32', text)


def test_vector_add_is_vectorised_after_o3():
    acc = AccessorType(F32, 1)
    m, b, (it, a, c) = one_kernel([Param("it", IndexSpaceType("item", 1)),
                                   Param("a", acc), Param("c", acc)])
    gid = b.op("wi.global_id", type=I64, dim=0)
    pa = b.op("acc.ptr", a, gid, type=PointerType(F32))
    pc = b.op("acc.ptr", c, gid, type=PointerType(F32))
    b.store(pc, b.op("add", b.load(pa), b.load(pc), type=F32))
    opt = NativeCpuCompiler().optimized_ir(str(lower_module(m, lowering())))
    assert re.search(r"<\d+ x float>", opt)


def test_spec_get_must_be_lowered_before_codegen():
    m, b, _ = one_kernel([])
    b.op("spec.get", type=I32, id="app.coeff")
    with pytest.raises(exception) as e:
        lower_module(m, lowering())
    assert e.value.code() is errc.build and "app.coeff" in str(e.value)


def test_work_group_barrier_outside_fission_is_an_error():
    m, b, _ = one_kernel([])
    b.op("barrier", scope="work_group")
    with pytest.raises(exception, match="work_group_fission"):
        lower_module(m, lowering())


def test_spec_native_is_an_error_on_native_cpu():
    m, b, _ = one_kernel([])
    b.op("spec.native", type=I32, leaf_ids=[1], default=b"\0\0\0\0")
    with pytest.raises(exception, match="native specialization"):
        lower_module(m, lowering())


def test_device_globals_are_exported_zero_initialised_symbols():
    m, b, _ = one_kernel([])
    m.device_globals.append(DeviceGlobalDecl("app.table#2", F64, {"sycl-host-access": "1"}))
    b.store(b.op("dg.addr", type=PointerType(F64), id="app.table#2"), b.const(1.0, F64))
    text = str(lower_module(m, lowering()))
    sym = device_global_symbol("app.table#2")
    assert re.fullmatch(r"__pysycl_dg_app_table_2_[0-9a-f]{8}", sym)
    assert f'@"{sym}" = global double 0x0' in text or f'@"{sym}" = global double 0.0' in text
    assert device_global_symbol("app.table#2") == sym  # deterministic


def test_for_loop_trip_count_is_computed_once_in_i64():
    m, b, (n,) = one_kernel([Param("n", I32)])
    b.var("i", I32)
    b.for_("i", n, b.const(0, I32), b.const(-2, I32))
    text = str(lower_module(m, lowering()))
    assert kernel_text(text).count("udiv i64") == 1


def test_unknown_callee_is_reported():
    m, b, _ = one_kernel([])
    b.op("call", type=I32, callee="nowhere")
    with pytest.raises(exception, match="nowhere"):
        lower_module(m, lowering())
