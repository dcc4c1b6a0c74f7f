"""lower_complex_group_ops: complex values reach the devices' group primitives as their
parts (sums, broadcasts and shuffles part by part; products as a loop of broadcasts or
shuffles in local id order), and the result keeps its Value, so users need no rewriting.
What the rewritten code computes is checked on devices (tests/acceptance/
test_complex_groups.py)."""
import pytest

from pysycl.ir.builder import Builder
from pysycl.ir.core import Function, Module, Param, Region
from pysycl.ir.printer import print_module
from pysycl.ir.types import C64, C128, F32, I64, IndexSpaceType, PointerType
from pysycl.ir.verifier import verify_module
from pysycl.passes.lower_complex_group_ops import lower_complex_group_ops


def kernel_with(*group_ops) -> tuple[Module, list]:
    """A kernel storing the results of ``group_ops`` ((name, attrs, complex type) each)
    applied to a loaded complex value."""
    ps = [Param("nd", IndexSpaceType("nd_item", 1)), Param("a", PointerType(C64)),
          Param("b", PointerType(C128))]
    body = Region()
    b = Builder(body)
    gid = b.op("wi.global_id", type=I64, dim=0)
    results = []
    for name, attrs, t in group_ops:
        p = ps[1].value if t == C64 else ps[2].value
        z = b.load(b.op("ptr.offset", p, gid, type=p.type))
        extra = [b.const(1, I64)] if name in ("group.broadcast", "group.shuffle") else []
        r = b.op(name, z, *extra, type=t, attrs=attrs)
        b.store(b.op("ptr.offset", p, gid, type=p.type), r)
        results.append(r)
    return Module("m", [Function("m.k", "kernel", ps, body=body)]), results


def group_ops(m: Module) -> list:
    return [op for op in m.functions[0].body.walk() if op.name.startswith("group.")]


@pytest.mark.parametrize("name, attrs", [
    ("group.reduce", {"op": "plus", "scope": "work_group"}),
    ("group.scan", {"op": "plus", "scope": "sub_group", "inclusive": False}),
    ("group.broadcast", {"scope": "work_group"}),
    ("group.shuffle", {"mode": "xor", "scope": "sub_group"}),
])
def test_sums_and_moves_go_part_by_part(name, attrs):
    m, (r,) = kernel_with((name, attrs, C128))
    lower_complex_group_ops(m)
    verify_module(m)
    ops = group_ops(m)
    assert [(op.name, str(op.type), op.attrs) for op in ops] == [(name, "f64", attrs)] * 2
    assert [op.operands[0].owner.name for op in ops] == ["complex.real", "complex.imag"]
    assert r.owner.name == "complex.make"
    assert [v.owner for v in r.owner.operands] == [op for op in ops]


@pytest.mark.parametrize("name, attrs, fetch", [
    ("group.reduce", {"op": "multiplies", "scope": "work_group"}, "group.broadcast"),
    ("group.scan", {"op": "multiplies", "scope": "work_group", "inclusive": True},
     "group.broadcast"),
    ("group.scan", {"op": "multiplies", "scope": "sub_group", "inclusive": False},
     "group.shuffle"),
])
def test_products_multiply_the_group_values_in_local_id_order(name, attrs, fetch):
    m, (r, _) = kernel_with((name, attrs, C64), (name, attrs, C64))
    lower_complex_group_ops(m)
    verify_module(m)
    text = print_module(m)
    # value 0 before the loop, then j = 1 .. n - 1 inside it, for each of the two ops
    assert {op.name for op in group_ops(m)} == {fetch}
    assert all(str(op.type) == "f32" for op in group_ops(m))
    loops = [op for op in m.functions[0].body.walk() if op.name == "for"]
    assert len(loops) == 2 and all("complex.mul" in [o.name for o in lp.regions[0].walk()]
                                   for lp in loops)
    declared = [op.attrs["name"] for op in m.functions[0].body.ops if op.name == "var"]
    assert declared == ["cgroup.acc0", "cgroup.j0", "cgroup.acc1", "cgroup.j1"]
    assert ("select" in text) == (name == "group.scan")
    assert r.owner.name == "complex.make"


def test_real_group_ops_are_left_alone():
    ps = [Param("a", PointerType(F32))]
    body = Region()
    b = Builder(body)
    x = b.load(ps[0].value)
    b.store(ps[0].value, b.op("group.reduce", x, type=F32, op="multiplies", scope="work_group"))
    m = Module("m", [Function("m.k", "kernel", ps, body=body)])
    before = print_module(m)
    assert print_module(lower_complex_group_ops(m)) == before
