"""Hand-built IR for representative kernels, shared by the ir and passes tests.

Each builder returns a fresh Module that passes the verifier. They are written the way
the frontend is expected to emit IR: var slots declared at the top, loads/stores of slots
for Python locals, typed constants next to their use.
"""
from __future__ import annotations

import numpy as np

from pysycl.ir.builder import Builder
from pysycl.ir.core import DeviceGlobalDecl, Function, Loc, Module, Param, Region, SpecConstantDecl
from pysycl.ir.types import (BOOL, C64, C128, F32, F64, I32, I64, VOID, AccessorType, ArrayType,
                             IndexSpaceType, LocalAccessorType, PointerType, StructField,
                             StructType, TupleType)

FILE = "kernels.py"


def L(line: int, col: int = 4) -> Loc:
    return Loc(FILE, line, col)


def vector_add() -> Module:
    ps = [Param("it", IndexSpaceType("item", 1)),
          Param("a", AccessorType(F32, 1, "read_only"), {"sycl-restrict": ""}),
          Param("b", AccessorType(F32, 1, "read_only")),
          Param("c", AccessorType(F32, 1, "write_only"))]
    body = Region()
    b = Builder(body, L(3))
    a, bb, c = (p.value for p in ps[1:])
    gid = b.op("wi.global_id", type=I64, dim=0, loc=L(3, 8))
    x = b.load(b.op("acc.ptr", a, gid, type=PointerType(F32)))
    y = b.load(b.op("acc.ptr", bb, gid, type=PointerType(F32)))
    s = b.op("add", x, y, type=F32, loc=L(4, 11))
    b.store(b.op("acc.ptr", c, gid, type=PointerType(F32)), s, loc=L(4))
    k = Function("demo.vadd", "kernel", ps, body=body, loc=L(1, 0),
                 properties={"sycl-work-group-size": "16"})
    return Module("demo", [k], attrs={"source": FILE})


def loop_break_continue() -> Module:
    """for i in range(n): if i % 3 == 0: continue; if s > 100: break; s += i; out[gid] = s"""
    ps = [Param("out", AccessorType(I64, 1, "read_write")), Param("n", I64)]
    body = Region()
    b = Builder(body, L(10))
    b.var("i", I64)
    b.var("s", I64)
    b.store_var("s", b.const(0, I64))
    loop = b.for_("i", b.const(0, I64), ps[1].value, b.const(1, I64), loc=L(11))
    i = loop.load_var("i", I64)
    then, _ = loop.if_(loop.cmp("eq", loop.op("mod", i, loop.const(3, I64), type=I64),
                                loop.const(0, I64)), loc=L(12))
    then.op("continue", loc=L(12, 8))
    s = loop.load_var("s", I64)
    then2, _ = loop.if_(loop.cmp("gt", s, loop.const(100, I64)), loc=L(13))
    then2.op("break", loc=L(13, 8))
    loop.store_var("s", loop.op("add", loop.load_var("s", I64), loop.load_var("i", I64), type=I64))
    gid = b.op("wi.global_id", type=I64, dim=0)
    b.store(b.op("acc.ptr", ps[0].value, gid, type=PointerType(I64)), b.load_var("s", I64))
    return Module("loops", [Function("loops.k", "kernel", ps, body=body, loc=L(9, 0))])


def while_loop() -> Module:
    """Collatz step count of x = inp[gid] into out[gid]."""
    ps = [Param("inp", AccessorType(I64, 1, "read_only")), Param("out", AccessorType(I32, 1))]
    body = Region()
    b = Builder(body, L(20))
    b.var("x", I64)
    b.var("steps", I32)
    gid = b.op("wi.global_id", type=I64, dim=0)
    b.store_var("x", b.load(b.op("acc.ptr", ps[0].value, gid, type=PointerType(I64))))
    b.store_var("steps", b.const(0, I32))
    cond, loop = b.while_(loc=L(22))
    cond.op("yield", cond.cmp("ne", cond.load_var("x", I64), cond.const(1, I64)))
    x = loop.load_var("x", I64)
    even = loop.cmp("eq", loop.op("mod", x, loop.const(2, I64), type=I64), loop.const(0, I64))
    then, other = loop.if_(even)
    then.store_var("x", then.op("floordiv", x, then.const(2, I64), type=I64))
    other.store_var("x", other.op("add", other.op("mul", x, other.const(3, I64), type=I64),
                                  other.const(1, I64), type=I64))
    loop.store_var("steps", loop.op("add", loop.load_var("steps", I32), loop.const(1, I32),
                                    type=I32))
    b.store(b.op("acc.ptr", ps[1].value, gid, type=PointerType(I32)), b.load_var("steps", I32))
    return Module("whiles", [Function("whiles.collatz", "kernel", ps, body=body)])


POINT = StructType("Point", (StructField("x", F32, 0), StructField("y", F32, 4)), 8, 4)


def aggregates() -> Module:
    """Structs, arrays, tuples, a spec constant, a device global, a device function call,
    an external definition and an import declaration; floats of every awkward kind."""
    m = Module("agg", spec_constants=[SpecConstantDecl(
        "agg.coeff", ArrayType(F32, 3), np.array([1, 2, 3], np.float32).tobytes())],
        device_globals=[DeviceGlobalDecl("agg.count", I32, {"sycl-device-image-scope": ""})])
    m.functions.append(_norm2())
    m.functions.append(Function("lib.scale", "declare", [Param("x", F32)], F32))
    m.functions.append(_aggregate_kernel())
    return m


def _norm2() -> Function:
    p = Param("p", POINT)
    body = Region()
    b = Builder(body, L(30))
    x, y = (b.op("struct.get", p.value, type=F32, field=f) for f in ("x", "y"))
    b.op("return", b.op("add", b.op("mul", x, x, type=F32), b.op("mul", y, y, type=F32), type=F32))
    return Function("agg.norm2", "external", [p], F32, body, L(29, 0))


def _aggregate_kernel() -> Function:
    ps = [Param("out", AccessorType(F32, 1)), Param("weird name", F32)]
    body = Region()
    b = Builder(body, L(40))
    raw = np.array([1.5, -0.0], np.float32).tobytes()
    pt = b.const(raw, POINT)
    one = b.const(float("inf"), F32)
    pt2 = b.op("struct.insert", pt, one, type=POINT, field="y")
    pt3 = b.op("struct.make", b.const(-0.0, F32), b.const(float("nan"), F32), type=POINT)
    n = b.op("call", pt2, type=F32, callee="agg.norm2")
    n = b.op("call", n, type=F32, callee="lib.scale")
    coeff = b.op("spec.get", type=ArrayType(F32, 3), id="agg.coeff")
    c1 = b.op("array.get", coeff, b.const(1, I64), type=F32)
    arr = b.op("array.make", c1, n, ps[1].value, type=ArrayType(F32, 3))
    tup = b.op("tuple.make", c1, b.const(True, BOOL), type=TupleType((F32, BOOL)))
    t0 = b.op("tuple.get", tup, type=F32, index=0)
    dg = b.op("dg.addr", type=PointerType(I32), id="agg.count")
    b.op("atomic.rmw", dg, b.const(1, I32), type=I32, op="add", order="relaxed", scope="device")
    _ = (pt3, arr)
    gid = b.op("wi.global_id", type=I64, dim=0)
    b.store(b.op("acc.ptr", ps[0].value, gid, type=PointerType(F32)),
            b.op("add", t0, b.op("struct.get", pt3, type=F32, field=0), type=F32))
    b.op("assert", b.const(True, BOOL), msg='tab\t"quote" \u00e9\x01')
    return Function("agg.k", "kernel", ps, body=body, attrs={
        "misc": [1, -2, 2.5, float("-inf"), None, True, (F32, "x"), {"k": b"\x00\xff"}, ()],
        "nan_payload": np.frombuffer(np.uint64(0x7FF0000000000123).tobytes(), np.float64)[0]})


def tree_reduction(kind: str = "for") -> Module:
    """Work-group sum in local memory; ``kind`` picks the loop: ``for`` over a kernel
    argument ``steps`` (stride = 1 << k) or ``while s > 0`` with ``s //= 2``."""
    ps = [Param("nd", IndexSpaceType("nd_item", 1)), Param("inp", AccessorType(F32, 1, "read_only")),
          Param("out", AccessorType(F32, 1, "write_only")),
          Param("scratch", LocalAccessorType(F32, 1)), Param("steps", I64)]
    nd, inp, out, scratch, steps = (p.value for p in ps)
    body = Region()
    b = Builder(body, L(50))
    b.var("k", I64)
    b.var("s", I64)
    lid = b.op("wi.local_id", type=I64, dim=0, loc=L(51))
    gid = b.op("wi.global_id", type=I64, dim=0, loc=L(52))
    lr = b.op("wi.local_range", type=I64, dim=0, loc=L(53))
    b.store(b.op("acc.ptr", scratch, lid, type=PointerType(F32, "local")),
            b.load(b.op("acc.ptr", inp, gid, type=PointerType(F32))), loc=L(54))
    b.op("barrier", scope="work_group", loc=L(55))
    if kind == "for":
        loop = b.for_("k", b.const(0, I64), steps, b.const(1, I64), loc=L(56))
        s = loop.op("shl", loop.const(1, I64), loop.load_var("k", I64), type=I64)
        loop.store_var("s", s)
        two_s = loop.op("mul", loop.const(2, I64), s, type=I64)
        active = loop.cmp("eq", loop.op("mod", lid, two_s, type=I64), loop.const(0, I64))
        fits = loop.cmp("lt", loop.op("add", lid, s, type=I64), lr)
        cond = loop.op("and", active, fits, type=BOOL)
    else:
        b.store_var("s", b.op("floordiv", lr, b.const(2, I64), type=I64))
        cnd, loop = b.while_(loc=L(56))
        cnd.op("yield", cnd.cmp("gt", cnd.load_var("s", I64), cnd.const(0, I64)))
        s = loop.load_var("s", I64)
        cond = loop.cmp("lt", lid, s)
    then, _ = loop.if_(cond, loc=L(57))
    mine = then.op("acc.ptr", scratch, lid, type=PointerType(F32, "local"))
    other = then.op("acc.ptr", scratch, then.op("add", lid, s, type=I64),
                    type=PointerType(F32, "local"))
    then.store(mine, then.op("add", then.load(mine), then.load(other), type=F32), loc=L(58))
    loop.op("barrier", scope="work_group", loc=L(59))
    if kind != "for":
        loop.store_var("s", loop.op("floordiv", loop.load_var("s", I64), loop.const(2, I64),
                                    type=I64))
    first, _ = b.if_(b.cmp("eq", lid, b.const(0, I64)), loc=L(60))
    grp = first.op("wi.group_id", type=I64, dim=0)
    first.store(first.op("acc.ptr", out, grp, type=PointerType(F32)),
                first.load(first.op("acc.ptr", scratch, first.const(0, I64),
                                    type=PointerType(F32, "local"))), loc=L(61))
    _ = (nd, VOID)
    return Module("red", [Function("red.sum", "kernel", ps, body=body, loc=L(49, 0))])


def complex_numbers() -> Module:
    """out[gid] = sqrt(a[gid] / s) * (x + 0.5j) and |a[gid]| into r[gid], complex128
    conversion of the complex64 input through its parts."""
    ps = [Param("a", PointerType(C64)), Param("s", C64), Param("x", F32),
          Param("out", PointerType(C128)), Param("r", PointerType(F32))]
    body = Region()
    b = Builder(body, L(60))
    a, s, x, out, r = (p.value for p in ps)
    gid = b.op("wi.global_id", type=I64, dim=0)
    z = b.load(b.op("ptr.offset", a, gid, type=PointerType(C64)))
    q = b.op("complex.sqrt", b.op("complex.div", z, s, type=C64), type=C64, loc=L(61, 11))
    half = b.op("const", type=C64, value=np.array(0.5j, "<c8").tobytes())
    xc = b.op("complex.make", x, b.const(0.0, F32), type=C64)
    y = b.op("complex.mul", q, b.op("add", xc, half, type=C64), type=C64)
    wide = b.op("complex.make", b.op("cast", b.op("complex.real", y, type=F32), type=F64),
                b.op("cast", b.op("complex.imag", y, type=F32), type=F64), type=C128)
    b.store(b.op("ptr.offset", out, gid, type=PointerType(C128)), wide)
    b.store(b.op("ptr.offset", r, gid, type=PointerType(F32)), b.op("complex.abs", z, type=F32))
    k = Function("cplx.k", "kernel", ps, body=body, loc=L(59, 0), attrs={"dims": 1})
    return Module("cplx", [k])


ALL = {"vector_add": vector_add, "complex_numbers": complex_numbers, "loop_break_continue": loop_break_continue,
       "while_loop": while_loop, "aggregates": aggregates,
       "tree_reduction_for": lambda: tree_reduction("for"),
       "tree_reduction_while": lambda: tree_reduction("while")}
