import numpy as np
import pytest

from ir_interp import run_kernel
from ir_samples import L
from pysycl.errors import errc, exception
from pysycl.ir.builder import Builder
from pysycl.ir.core import Function, Module, Param, Region
from pysycl.ir.printer import print_module
from pysycl.ir.types import I32, I64, AccessorType, PointerType
from pysycl.ir.verifier import verify_module
from pysycl.passes.unroll_static_range import unroll_static_range


def _kernel(lo=0, hi=4, step=1, nested=False, assign=False, hi_param=False):
    """out[gid] = sum over static_range(lo, hi, step) of i * 10 (+ inner static_range(i))."""
    ps = [Param("out", AccessorType(I64, 1)), Param("n", I64)]
    body = Region()
    b = Builder(body, L(140))
    for v in ("i", "j", "t"):
        b.var(v, I64)
    b.store_var("t", b.const(0, I64))
    b.store_var("i", b.const(7, I64))  # what a zero-trip loop leaves behind
    hi_v = ps[1].value if hi_param else b.const(hi, I64)
    loop = b.for_("i", b.const(lo, I64), hi_v, b.const(step, I64), unroll=True, loc=L(141))
    i = loop.load_var("i", I64)
    loop.store_var("t", loop.op("add", loop.load_var("t", I64),
                                loop.op("mul", i, loop.const(10, I64), type=I64), type=I64))
    if nested:
        inner = loop.for_("j", loop.const(0, I64), loop.load_var("i", I64), loop.const(1, I64),
                          unroll=True)
        inner.store_var("t", inner.op("add", inner.load_var("t", I64), inner.load_var("j", I64),
                                      type=I64))
    if assign:
        loop.store_var("i", loop.const(100, I64))
    gid = b.op("wi.global_id", type=I64, dim=0)
    # reading i after the loop sees its last value, as in Python
    total = b.op("add", b.load_var("t", I64), b.load_var("i", I64), type=I64)
    b.store(b.op("acc.ptr", ps[0].value, gid, type=PointerType(I64)), total)
    return Module("u", [Function("u.k", "kernel", ps, body=body)])


def _run(m):
    out = np.zeros(2, np.int64)
    run_kernel(m, "u.k", {"out": out, "n": np.int64(3)}, (2,), (1,))
    return out[0]


@pytest.mark.parametrize("kw", [dict(), dict(lo=5, hi=-3, step=-2), dict(hi=0),
                                dict(nested=True), dict(assign=True)])
def test_unrolled_kernel_computes_the_same(kw):
    m = _kernel(**kw)
    expect = _run(m)
    unroll_static_range(m)
    verify_module(m)
    assert not any(op.name == "for" for op in m.functions[0].walk())
    assert _run(m) == expect


def test_loop_var_reads_become_constants():
    m = unroll_static_range(_kernel(hi=3))
    text = print_module(m, locs=False)
    assert 'var.load {name = "i"}' in text  # only the read after the loop remains
    assert text.count('var.load {name = "i"}') == 1
    muls = [op for op in m.functions[0].walk() if op.name == "mul"]
    assert [op.operands[0].owner.attrs["value"] for op in muls] == [0, 1, 2]
    assert all(op.operands[0].owner.name == "const" for op in muls)


def test_non_constant_bound_is_a_build_error_at_the_loop():
    with pytest.raises(exception) as info:
        unroll_static_range(_kernel(hi_param=True))
    assert info.value.code() == errc.build
    assert str(info.value) == ("kernels.py:141:4: sycl.static_range needs bounds known at "
                               "compile time, but the stop of this loop is not a constant")


def test_break_in_static_range_is_rejected():
    m = _kernel()
    loop = next(op for op in m.functions[0].walk() if op.name == "for")
    then, _ = Builder(loop.regions[0], L(150)).if_(Builder(loop.regions[0]).const(True, I32))
    then.op("break", loc=L(151, 8))
    with pytest.raises(exception, match="kernels.py:151:8: break inside the sycl.static_range "
                                        "loop at kernels.py:141:4"):
        unroll_static_range(m)


def test_loops_without_unroll_are_kept():
    m = _kernel()
    loop = next(op for op in m.functions[0].walk() if op.name == "for")
    del loop.attrs["unroll"]
    text = print_module(m)
    assert print_module(unroll_static_range(m)) == text
