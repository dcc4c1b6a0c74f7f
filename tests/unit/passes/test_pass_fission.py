import numpy as np
import pytest

import ir_samples
from ir_interp import LocalMem, run_kernel
from ir_samples import L
from pysycl.errors import errc, exception
from pysycl.ir.builder import Builder
from pysycl.ir.core import Function, Module, Param, Region
from pysycl.ir.parser import parse_module
from pysycl.ir.printer import print_module
from pysycl.ir.types import BOOL, F32, I64, AccessorType, LocalAccessorType, PointerType
from pysycl.ir.verifier import verify_module
from pysycl.passes.lower_group_reduce import lower_group_reduce
from pysycl.passes.work_group_fission import work_group_fission


def shape(r: Region, depth=0):
    """Op names of group-level structure: wg.items collapsed to one word."""
    out = []
    for op in r.ops:
        if op.name == "wg.items":
            out.append("items")
        elif op.regions:
            out.append((op.name, [shape(reg) for reg in op.regions]))
        else:
            out.append(op.name)
    return out


def fission(m):
    work_group_fission(m)
    verify_module(m)
    assert print_module(parse_module(print_module(m))) == print_module(m)
    return m


def test_reduction_for_loop_shape():
    m = fission(ir_samples.tree_reduction("for"))
    k = m.functions[0]
    assert shape(k.body) == ["var", "var", "items", "const", "const",
                             ("for", [["items"]]), "items"]
    assert not any(op.name == "barrier" for op in k.walk())
    decls = {op.attrs["name"]: op.attrs.get("per_item") for op in k.body.ops if op.name == "var"}
    assert decls == {"k": None, "s": True}


def test_reduction_while_loop_shape():
    m = fission(ir_samples.tree_reduction("while"))
    k = m.functions[0]
    assert shape(k.body) == ["var", "var", "var", "items", "items",
                             ("while", [["items", "var.load", "yield"], ["items", "items"]]),
                             "items"]
    decls = {op.attrs["name"]: op.attrs.get("per_item") for op in k.body.ops if op.name == "var"}
    assert decls == {"k": None, "s": True, "wg.u0": False}


def reduce_args(inp, groups, local, steps):
    out = np.zeros(groups, np.float32)
    return out, {"inp": inp, "out": out, "scratch": LocalMem((local,), np.float32),
                 "steps": np.int64(steps)}


@pytest.mark.parametrize("kind", ["for", "while"])
@pytest.mark.parametrize("local,groups", [(1, 3), (2, 2), (8, 4), (16, 2), (32, 1)])
def test_fissioned_reduction_matches_numpy(kind, local, groups):
    rng = np.random.default_rng(local * 7 + groups)
    inp = rng.integers(-50, 50, local * groups).astype(np.float32)  # exact in float32
    steps = int(np.log2(local))
    m = ir_samples.tree_reduction(kind)
    before, args = reduce_args(inp, groups, local, steps)
    run_kernel(m, "red.sum", args, (local * groups,), (local,))
    fission(m)
    after, args = reduce_args(inp, groups, local, steps)
    run_kernel(m, "red.sum", args, (local * groups,), (local,))
    expect = inp.reshape(groups, local).sum(axis=1)
    np.testing.assert_array_equal(before, expect)
    np.testing.assert_array_equal(after, expect)


def test_kernels_without_barriers_are_unchanged():
    for name in ("vector_add", "loop_break_continue", "while_loop", "aggregates"):
        m = ir_samples.ALL[name]()
        text = print_module(m)
        work_group_fission(m)
        assert print_module(m) == text


def _divergent_barrier_kernel():
    ps = [Param("out", AccessorType(F32, 1))]
    body = Region()
    b = Builder(body, L(80))
    lid = b.op("wi.local_id", type=I64, dim=0)
    then, _ = b.if_(b.cmp("lt", lid, b.const(4, I64)), loc=L(81))
    then.op("barrier", scope="work_group", loc=L(82, 8))
    return Module("bad", [Function("bad.k", "kernel", ps, body=body)])


def test_barrier_in_non_uniform_if_is_an_error_at_the_barrier():
    with pytest.raises(exception) as info:
        work_group_fission(_divergent_barrier_kernel())
    assert info.value.code() == errc.build
    msg = str(info.value)
    assert msg.startswith("kernels.py:82:8: group_barrier inside a if whose condition (at "
                          "kernels.py:81:4) may differ between the work-items")


def test_non_uniformity_flows_through_vars_and_loads():
    ps = [Param("inp", AccessorType(I64, 1))]
    body = Region()
    b = Builder(body, L(90))
    b.var("n", I64)
    b.store_var("n", b.load(b.op("acc.ptr", ps[0].value, b.const(0, I64), type=PointerType(I64))))
    b.var("i", I64)
    loop = b.for_("i", b.const(0, I64), b.load_var("n", I64), b.const(1, I64), loc=L(91))
    loop.op("barrier", scope="work_group", loc=L(92, 8))
    with pytest.raises(exception, match="kernels.py:92:8: group_barrier inside a loop whose "
                                        "trip count"):
        work_group_fission(Module("m", [Function("m.k", "kernel", ps, body=body)]))


def _uniform_break_kernel():
    """acc[lid] accumulates k over a group loop that a uniform `if k == stop: break` ends."""
    ps = [Param("acc", AccessorType(I64, 1)), Param("stop", I64)]
    body = Region()
    b = Builder(body, L(100))
    b.var("k", I64)
    b.var("t", I64)
    b.store_var("t", b.const(0, I64))
    loop = b.for_("k", b.const(0, I64), b.const(10, I64), b.const(1, I64))
    then, _ = loop.if_(loop.cmp("eq", loop.load_var("k", I64), ps[1].value))
    then.op("break")
    loop.store_var("t", loop.op("add", loop.load_var("t", I64), loop.load_var("k", I64), type=I64))
    loop.op("barrier", scope="work_group")
    gid = b.op("wi.global_id", type=I64, dim=0)
    b.store(b.op("acc.ptr", ps[0].value, gid, type=PointerType(I64)), b.load_var("t", I64))
    return Module("brk", [Function("brk.k", "kernel", ps, body=body)])


def test_uniform_break_stays_at_group_level():
    m = fission(_uniform_break_kernel())
    loop = next(op for op in m.functions[0].body.ops if op.name == "for")
    assert shape(loop.regions[0]) == ["items", "var.load", ("if", [["break"], []]), "items"]
    out = np.zeros(8, np.int64)
    run_kernel(m, "brk.k", {"acc": out, "stop": np.int64(4)}, (8,), (4,))
    np.testing.assert_array_equal(out, np.full(8, 0 + 1 + 2 + 3))


def _group_sum_kernel(op="plus"):
    ps = [Param("inp", AccessorType(F32, 1)), Param("out", AccessorType(F32, 1))]
    body = Region()
    b = Builder(body, L(110))
    gid = b.op("wi.global_id", type=I64, dim=0)
    x = b.load(b.op("acc.ptr", ps[0].value, gid, type=PointerType(F32)))
    r = b.op("group.reduce", x, type=F32, op=op, scope="work_group", loc=L(111))
    b.store(b.op("acc.ptr", ps[1].value, gid, type=PointerType(F32)), r)
    return Module("gr", [Function("gr.k", "kernel", ps, body=body)])


@pytest.mark.parametrize("op,fn", [("plus", np.sum), ("minimum", np.min), ("maximum", np.max)])
def test_group_reduce_lowered_then_fissioned(op, fn):
    m = _group_sum_kernel(op)
    lower_group_reduce(m)
    verify_module(m)
    fission(m)
    inp = np.arange(24, dtype=np.float32)[::-1].copy()
    out = np.zeros(24, np.float32)
    run_kernel(m, "gr.k", {"inp": inp, "out": out}, (24,), (6,))
    np.testing.assert_array_equal(out, np.repeat(fn(inp.reshape(4, 6), axis=1), 6))


def test_early_return_and_barrier_in_called_function_are_rejected():
    m = _divergent_barrier_kernel()
    body = m.functions[0].body
    Builder(body, L(83)).if_(Builder(body).const(True, BOOL))[0].op("return", loc=L(84))
    with pytest.raises(exception, match="kernels.py:84:4: kernel 'bad.k' uses group_barrier"):
        work_group_fission(m)
    helper = Function("gr.helper", "device", [], body=Region())
    Builder(helper.body).op("barrier", scope="work_group")
    m = _group_sum_kernel()
    m.functions.insert(0, helper)
    lower_group_reduce(m)
    Builder(m.functions[1].body, L(120)).op("call", callee="gr.helper")
    with pytest.raises(exception, match="kernels.py:120:4: device function 'gr.helper' uses "
                                        "group_barrier"):
        work_group_fission(m)


def test_local_accessor_kernel_with_values_crossing_regions():
    """A loaded value used after a barrier travels in a per-item var."""
    ps = [Param("inp", AccessorType(F32, 1)), Param("out", AccessorType(F32, 1)),
          Param("tile", LocalAccessorType(F32, 1))]
    body = Region()
    b = Builder(body, L(130))
    lid = b.op("wi.local_id", type=I64, dim=0)
    lr = b.op("wi.local_range", type=I64, dim=0)
    gid = b.op("wi.global_id", type=I64, dim=0)
    mine = b.load(b.op("acc.ptr", ps[0].value, gid, type=PointerType(F32)))
    b.store(b.op("acc.ptr", ps[2].value, lid, type=PointerType(F32, "local")), mine)
    b.op("barrier", scope="work_group")
    rev = b.op("sub", b.op("sub", lr, b.const(1, I64), type=I64), lid, type=I64)
    other = b.load(b.op("acc.ptr", ps[2].value, rev, type=PointerType(F32, "local")))
    b.store(b.op("acc.ptr", ps[1].value, gid, type=PointerType(F32)),
            b.op("sub", other, mine, type=F32))
    m = fission(Module("rev", [Function("rev.k", "kernel", ps, body=body)]))
    names = [op.attrs["name"] for op in m.functions[0].body.ops if op.name == "var"]
    assert names == ["wg.p0"]
    inp = np.arange(12, dtype=np.float32) ** 2
    out = np.zeros(12, np.float32)
    run_kernel(m, "rev.k", {"inp": inp, "out": out, "tile": LocalMem((4,), np.float32)},
               (12,), (4,))
    g = inp.reshape(3, 4)
    np.testing.assert_array_equal(out, (g[:, ::-1] - g).reshape(-1))


def test_fission_alone_lowers_work_group_reductions():
    m = fission(_group_sum_kernel())
    assert not any(op.name in ("group.reduce", "barrier") for op in m.functions[0].walk())
    decls = [(op.attrs["name"], op.attrs["per_item"]) for op in m.functions[0].body.ops
             if op.name == "var"]
    assert decls == [("wg.r0", False)]  # the global id is recomputed, not kept per item
