"""End to end on the host: hand-built IR -> LLVM -> object -> LLJIT -> thread pool."""
from __future__ import annotations

import numpy as np
import pytest

from native_harness import (acc_args, acc_ptr, acc_type, i64, kernel, llvm_text, load, local,
                            scalar, spec)
from pysycl.backends.base import KernelArg, KernelArgKind
from pysycl.ir.core import Function, Param, Region
from pysycl.ir.builder import Builder
from pysycl.ir.types import (BOOL, F32, F64, I32, I64, ArrayType, IndexSpaceType,
                             LocalAccessorType, PointerType, SCALARS, StructField, StructType)

NUMERIC = [n for n in SCALARS if n != "bool"]


def _binop_kernel(op: str, t, out_t=None):
    m, b, (it, x, y, z) = kernel(f"k_{op}_{t}", [
        Param("it", IndexSpaceType("item", 1)), Param("x", acc_type(t)),
        Param("y", acc_type(t)), Param("z", acc_type(out_t or t))])
    gid = b.op("wi.global_id", type=I64, dim=0)
    r = b.op(op, b.load(acc_ptr(b, x, gid)), b.load(acc_ptr(b, y, gid)), type=out_t or t)
    b.store(acc_ptr(b, z, gid), r)
    return m


def _run_binop(op, dtype, xs, ys, out_dtype=None, local_size=None):
    t = _ir(dtype)
    out_t = _ir(out_dtype) if out_dtype else None
    prog = load(_binop_kernel(op, t, out_t))
    out = np.zeros(len(xs), dtype=out_dtype or dtype)
    prog.launch(f"k_{op}_{t}", (len(xs),), local_size,
                acc_args(xs) + acc_args(ys) + acc_args(out) + [spec()])
    return out


def _ir(dtype):
    from pysycl.ir.types import scalar_from_dtype
    return scalar_from_dtype(dtype)


@pytest.mark.parametrize("name", NUMERIC)
def test_vector_add_every_scalar_type(name):
    dt = SCALARS[name].dtype
    rng = np.random.default_rng(1)
    n = 100_003   # odd: exercises the clamped last group of a range launch
    if dt.kind == "f":
        xs, ys = rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt)
    else:
        info = np.iinfo(dt)
        xs = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        ys = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    with np.errstate(over="ignore"):
        expect = xs + ys
    np.testing.assert_array_equal(_run_binop("add", dt, xs, ys), expect)


@pytest.mark.parametrize("dtype", ["i8", "i32", "i64", "u8", "u32", "u64"])
def test_integer_floordiv_mod_match_numpy(dtype):
    dtype = SCALARS[dtype].dtype
    info = np.iinfo(dtype)
    cands = {int(info.min), int(info.min) + 1, -7, -3, -1, 0, 1, 3, 7, int(info.max) - 1, int(info.max)}
    vals = np.array(sorted(v for v in cands if info.min <= v <= info.max), dtype=dtype)
    xs, ys = np.repeat(vals, len(vals)), np.tile(vals, len(vals))
    with np.errstate(all="ignore"):
        fd, md = xs // ys, xs % ys
    np.testing.assert_array_equal(_run_binop("floordiv", dtype, xs, ys), fd)
    np.testing.assert_array_equal(_run_binop("mod", dtype, xs, ys), md)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_float_floordiv_mod_match_numpy(dtype):
    dtype = SCALARS[dtype].dtype
    vals = np.array([-7.5, -3.0, -1.0, -0.0, 0.0, 0.1, 1.0, 2.5, 7.0, np.inf, -np.inf, np.nan],
                    dtype=dtype)
    xs, ys = np.repeat(vals, len(vals)), np.tile(vals, len(vals))
    with np.errstate(all="ignore"):
        fd, md = np.floor_divide(xs, ys), np.mod(xs, ys)
    np.testing.assert_array_equal(_run_binop("floordiv", dtype, xs, ys), fd)
    np.testing.assert_array_equal(_run_binop("mod", dtype, xs, ys), md)


@pytest.mark.parametrize("op,ref", [("min", np.minimum), ("max", np.maximum),
                                    ("shl", np.left_shift), ("shr", np.right_shift),
                                    ("pow", np.power), ("sub", np.subtract),
                                    ("mul", np.multiply), ("xor", np.bitwise_xor)])
def test_int32_binops(op, ref):
    xs = np.array([-9, -2, 0, 3, 5, 2**31 - 1, -2**31, 7], dtype=np.int32)
    ys = np.array([2, 3, 31, 0, 33, 1, 3, 40], dtype=np.int32)
    with np.errstate(all="ignore"):
        expect = ref(xs, ys)
    if op in ("shl", "shr"):   # NumPy defers to C for counts >= 32: compare Python's answer
        expect = np.array([_py_shift(op, int(x), int(y)) for x, y in zip(xs, ys)], np.int32)
    np.testing.assert_array_equal(_run_binop(op, np.int32, xs, ys), expect)


def _py_shift(op, x, y):
    r = x << y if op == "shl" else x >> y
    return np.array(r & 0xFFFFFFFF, np.uint32).view(np.int32)


def test_float32_math_stays_float32_and_matches_numpy():
    from pysycl.frontend import sycl_math
    from pysycl.ir.ops import MATH_FUNCTIONS, MATH_PREDICATES
    unary = [n for n, k in MATH_FUNCTIONS.items() if k == 1 and n not in MATH_PREDICATES]
    params = [Param("it", IndexSpaceType("item", 1)), Param("x", acc_type(F32)),
              Param("out", acc_type(F32, 2))]
    m, b, (_, x, out) = kernel("math32", params)
    gid = b.op("wi.global_id", type=I64, dim=0)
    v = b.load(acc_ptr(b, x, gid))
    for row, name in enumerate(unary):
        r = b.op(f"math.{name}", v, type=F32)
        b.store(acc_ptr(b, out, b.const(row, I64), gid), r)
    text = llvm_text(m)
    assert "double" not in text and "f64" not in text
    xs = np.linspace(0.05, 0.95, 64, dtype=np.float32)
    res = np.zeros((len(unary), 64), np.float32)
    load(m).launch("math32", (64,), None, acc_args(xs) + acc_args(res) + [spec()])
    refs = {"rsqrt": lambda a: 1 / np.sqrt(a), "fabs": np.abs, "asin": np.arcsin,
            "acos": np.arccos, "atan": np.arctan}
    for row, name in enumerate(unary):
        ref = refs.get(name) or getattr(sycl_math, name)   # NumPy, or math where it has none
        np.testing.assert_allclose(res[row], ref(xs).astype(np.float32), rtol=2e-6, err_msg=name)


def conv3x3_module():
    """out[i, j] = sum of w[di, dj] * img[i+di-1, j+dj-1] for interior points, else img."""
    params = [Param("it", IndexSpaceType("item", 2)), Param("img", acc_type(F32, 2, "read_only")),
              Param("w", acc_type(F32, 1, "read_only")), Param("out", acc_type(F32, 2, "write_only"))]
    m, b, (_, img, w, out) = kernel("conv3x3", params)
    i, j = (b.op("wi.global_id", type=I64, dim=d) for d in (0, 1))
    h, wd = (b.op("acc.range", img, type=I64, dim=d) for d in (0, 1))
    one = b.const(1, I64)
    inner = b.op("and", b.op("and", b.cmp("ge", i, one), b.cmp("lt", i, b.op("sub", h, one, type=I64)),
                             type=BOOL),
                 b.op("and", b.cmp("ge", j, one), b.cmp("lt", j, b.op("sub", wd, one, type=I64)),
                      type=BOOL), type=BOOL)
    then, other = b.if_(inner)
    acc = None
    for di in range(3):
        for dj in range(3):
            ii = then.op("add", i, then.const(di - 1, I64), type=I64)
            jj = then.op("add", j, then.const(dj - 1, I64), type=I64)
            term = then.op("mul", then.load(acc_ptr(then, w, then.const(3 * di + dj, I64))),
                           then.load(acc_ptr(then, img, ii, jj)), type=F32)
            acc = term if acc is None else then.op("add", acc, term, type=F32)
    then.store(acc_ptr(then, out, i, j), acc)
    other.store(acc_ptr(other, out, i, j), other.load(acc_ptr(other, img, i, j)))
    return m


def conv3x3_numpy(img, w):
    out = img.copy()
    acc = np.zeros_like(img[1:-1, 1:-1])
    for di in range(3):
        for dj in range(3):
            acc = acc + w[3 * di + dj] * img[di:di + img.shape[0] - 2, dj:dj + img.shape[1] - 2]
    out[1:-1, 1:-1] = acc
    return out


@pytest.mark.parametrize("local_size", [None, (4, 16), (1, 64)])
def test_conv3x3_with_boundary_checks(local_size):
    img = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
    w = np.arange(1, 10, dtype=np.float32) / 10
    out = np.zeros_like(img)
    load(conv3x3_module()).launch("conv3x3", img.shape, local_size,
                                   acc_args(img) + acc_args(w) + acc_args(out) + [spec()])
    np.testing.assert_allclose(out, conv3x3_numpy(img, w), rtol=1e-5, atol=1e-5)


def test_struct_and_fixed_array_arguments():
    pt = StructType("P", (StructField("scale", F32, 0), StructField("flag", BOOL, 4),
                          StructField("bias", F64, 8)), 16, 8)
    arr = ArrayType(I32, 4)
    params = [Param("it", IndexSpaceType("item", 1)), Param("p", pt), Param("k", arr),
              Param("out", acc_type(F64))]
    m, b, (_, p, k, out) = kernel("structs", params)
    gid = b.op("wi.global_id", type=I64, dim=0)
    kk = b.op("cast", b.op("array.get", k, b.op("mod", gid, b.const(4, I64), type=I64), type=I32),
              type=F64)
    scale = b.op("cast", b.op("struct.get", p, type=F32, field="scale"), type=F64)
    val = b.op("add", b.op("mul", kk, scale, type=F64), b.op("struct.get", p, type=F64, field=2),
               type=F64)
    flag = b.op("struct.get", p, type=BOOL, field="flag")
    b.store(acc_ptr(b, out, gid), b.op("select", flag, val, b.op("neg", val, type=F64), type=F64))
    from pysycl.ir.types import dtype_of
    pv = np.zeros((), dtype_of(pt)); pv["scale"], pv["flag"], pv["bias"] = 2.5, 1, 0.25
    kv = np.array([1, -2, 3, 40], np.int32)
    res = np.zeros(10)
    load(m).launch("structs", (10,), None,
                   [KernelArg(KernelArgKind.bytes, pv.tobytes()), KernelArg(KernelArgKind.bytes, kv.tobytes())]
                   + acc_args(res) + [spec()])
    np.testing.assert_array_equal(res, kv[np.arange(10) % 4] * 2.5 + 0.25)


def test_nested_device_function_calls():
    x = Param("x", F32)
    body = Region(); fb = Builder(body)
    fb.op("return", fb.op("mul", x.value, x.value, type=F32))
    square = Function("square", "device", [x], F32, body)
    y, a = Param("y", F32), Param("a", acc_type(F32))
    body2 = Region(); gb = Builder(body2)
    s = gb.op("call", y.value, type=F32, callee="square")
    gid = gb.op("wi.global_id", type=I64, dim=0)   # device functions see the work-item too
    gb.op("return", gb.op("add", s, gb.op("load", acc_ptr(gb, a.value, gid), type=F32), type=F32))
    sq_plus = Function("sq_plus", "device", [y, a], F32, body2)
    m, b, (_, acc) = kernel("calls", [Param("it", IndexSpaceType("item", 1)), Param("acc", acc_type(F32))])
    m.functions += [square, sq_plus]
    gid = b.op("wi.global_id", type=I64, dim=0)
    v = b.op("call", b.op("cast", gid, type=F32), acc, type=F32, callee="sq_plus")
    b.store(acc_ptr(b, acc, gid), v)
    data = np.arange(50, dtype=np.float32)
    load(m).launch("calls", (50,), (10,), acc_args(data) + [spec()])
    np.testing.assert_array_equal(data, np.arange(50) ** 2 + np.arange(50))


def test_atomic_histogram_from_many_threads():
    params = [Param("it", IndexSpaceType("item", 1)), Param("x", acc_type(I32, 1, "read_only")),
              Param("hist", acc_type(I32))]
    m, b, (_, x, hist) = kernel("histogram", params)
    gid = b.op("wi.global_id", type=I64, dim=0)
    bin_ = b.load(acc_ptr(b, x, gid))
    b.op("atomic.rmw", acc_ptr(b, hist, bin_), b.const(1, I32), type=I32, op="add",
         order="relaxed", scope="device")
    data = np.random.default_rng(3).integers(0, 16, 1 << 20, dtype=np.int32)
    hist_out = np.zeros(16, np.int32)
    load(m).launch("histogram", (data.size,), (256,), acc_args(data) + acc_args(hist_out) + [spec()])
    np.testing.assert_array_equal(hist_out, np.bincount(data, minlength=16))


def tree_reduction_module():
    """Post-fission form of: x = 2*inp[gid]; scratch[lid] = x; barrier;
    s = L//2; while s > 0: (if lid < s: scratch[lid] += scratch[lid+s]); barrier; s //= 2;
    if lid == 0: out[group] = scratch[0] + x - x (x is per-item, live across barriers)."""
    params = [Param("it", IndexSpaceType("nd_item", 1)), Param("inp", acc_type(F32, 1, "read_only")),
              Param("out", acc_type(F32)), Param("scratch", LocalAccessorType(F32, 1))]
    m, b, (_, inp, out, scratch) = kernel("tree_reduce", params)
    b.var("x", F32, per_item=True)
    b.var("s", I64)
    items = b.items()
    lid, gid = (items.op(f"wi.{q}", type=I64, dim=0) for q in ("local_id", "global_id"))
    items.store_var("x", items.op("mul", items.const(2.0, F32), items.load(acc_ptr(items, inp, gid)), type=F32))
    items.store(acc_ptr(items, scratch, lid), items.load_var("x", F32))
    b.store_var("s", b.op("floordiv", b.op("wi.local_range", type=I64, dim=0), b.const(2, I64), type=I64))
    cond, body = b.while_()
    cond.op("yield", cond.cmp("gt", cond.load_var("s", I64), cond.const(0, I64)))
    step = body.items()
    lid = step.op("wi.local_id", type=I64, dim=0)
    s = step.load_var("s", I64)
    then, _ = step.if_(step.cmp("lt", lid, s))
    dst = acc_ptr(then, scratch, lid)
    then.store(dst, then.op("add", then.load(dst), then.load(acc_ptr(then, scratch, then.op("add", lid, s, type=I64))), type=F32))
    body.store_var("s", body.op("floordiv", body.load_var("s", I64), body.const(2, I64), type=I64))
    last = b.items()
    lid = last.op("wi.local_id", type=I64, dim=0)
    then, _ = last.if_(last.cmp("eq", lid, last.const(0, I64)))
    x = then.load_var("x", F32)
    total = then.op("sub", then.op("add", then.load(acc_ptr(then, scratch, then.const(0, I64))), x, type=F32), x, type=F32)
    then.store(acc_ptr(then, out, then.op("wi.group_id", type=I64, dim=0)), total)
    return m


@pytest.mark.parametrize("group", [1, 2, 16, 64, 256])
def test_work_group_tree_reduction_with_barriers(group):
    data = np.arange(1024, dtype=np.float32) % 7
    out = np.zeros(1024 // group, np.float32)
    load(tree_reduction_module()).launch(
        "tree_reduce", (1024,), (group,),
        acc_args(data) + acc_args(out) + local(4 * group, group) + [spec()])
    np.testing.assert_array_equal(out, 2 * data.reshape(-1, group).sum(axis=1))


def test_loops_break_continue_and_negative_steps():
    params = [Param("it", IndexSpaceType("item", 1)), Param("out", acc_type(I64)), Param("n", I32)]
    m, b, (_, out, n) = kernel("loops", params)
    b.var("i", I32); b.var("s", I64)
    b.store_var("s", b.const(0, I64))
    gid = b.op("wi.global_id", type=I64, dim=0)
    # for i in range(n, -n, -3): if i == 4: continue; if s > 50: break; s += i * gid
    loop = b.for_("i", n, loop_neg := b.op("neg", n, type=I32), b.const(-3, I32))
    i = loop.op("cast", loop.load_var("i", I32), type=I64)
    then, _ = loop.if_(loop.cmp("eq", i, loop.const(4, I64)))
    then.op("continue")
    then, _ = loop.if_(loop.cmp("gt", loop.load_var("s", I64), loop.const(50, I64)))
    then.op("break")
    loop.store_var("s", loop.op("add", loop.load_var("s", I64), loop.op("mul", i, gid, type=I64), type=I64))
    b.store(acc_ptr(b, out, gid), b.load_var("s", I64))
    res = np.zeros(8, np.int64)
    load(m).launch("loops", (8,), None, acc_args(res) + [scalar(10, np.int32), spec()])
    expect = []
    for g in range(8):
        s = 0
        for i in range(10, -10, -3):
            if i == 4:
                continue
            if s > 50:
                break
            s += i * g
        expect.append(s)
    np.testing.assert_array_equal(res, expect)
    assert loop_neg is not None


def test_casts_follow_numpy_astype():
    xs = np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 100.9], np.float64)
    m, b, (_, x, out, flags) = kernel("casts", [
        Param("it", IndexSpaceType("item", 1)), Param("x", acc_type(F64)),
        Param("out", acc_type(I32)), Param("flags", acc_type(BOOL))])
    gid = b.op("wi.global_id", type=I64, dim=0)
    v = b.load(acc_ptr(b, x, gid))
    b.store(acc_ptr(b, out, gid), b.op("cast", v, type=I32))
    b.store(acc_ptr(b, flags, gid), b.op("cast", v, type=BOOL))
    res, fl = np.zeros(6, np.int32), np.zeros(6, np.bool_)
    load(m).launch("casts", (6,), None, acc_args(xs) + acc_args(res) + acc_args(fl) + [spec()])
    np.testing.assert_array_equal(res, xs.astype(np.int32))
    np.testing.assert_array_equal(fl, xs.astype(np.bool_))


def test_spec_load_unaligned_and_device_global():
    from pysycl.ir.core import DeviceGlobalDecl
    m, b, (_, out) = kernel("specs", [Param("it", IndexSpaceType("item", 1)), Param("out", acc_type(F64))])
    m.device_globals.append(DeviceGlobalDecl("app.counter", I64, {"sycl-device-image-scope": ""}))
    v = b.op("spec.load", type=F64, offset=3)
    b.store(acc_ptr(b, out, b.op("wi.global_id", type=I64, dim=0)), v)
    b.op("atomic.rmw", b.op("dg.addr", type=PointerType(I64), id="app.counter"), b.const(1, I64),
         type=I64, op="add", order="relaxed", scope="device")
    buf = np.zeros(16, np.uint8)
    buf[3:11] = np.frombuffer(np.float64(6.25).tobytes(), np.uint8)
    res = np.zeros(100_000)
    prog = load(m, device_globals=["app.counter"])
    prog.launch("specs", (res.size,), None, acc_args(res) + [spec(buf)])
    assert (res == 6.25).all()
    import ctypes
    assert ctypes.c_int64.from_address(prog.device_global_address("app.counter")).value == res.size


def test_accessor_offset_and_2d_nd_range_ids():
    m, b, (_, out) = kernel("ids", [Param("it", IndexSpaceType("nd_item", 2)), Param("out", acc_type(I64, 2))])
    i, j = (b.op("wi.global_id", type=I64, dim=d) for d in (0, 1))
    lin = b.op("wi.global_linear_id", type=I64)
    grp = b.op("wi.group_linear_id", type=I64)
    b.store(acc_ptr(b, out, i, j), b.op("add", b.op("mul", lin, b.const(1000, I64), type=I64), grp, type=I64))
    res = np.zeros((8, 12), np.int64)
    load(m).launch("ids", (8, 12), (2, 4), acc_args(res) + [spec()])
    lin = np.arange(96).reshape(8, 12)
    grp = (np.arange(8)[:, None] // 2) * 3 + np.arange(12)[None, :] // 4
    np.testing.assert_array_equal(res, lin * 1000 + grp)
