"""Lower work-group ``group.reduce`` for the native CPU device (runs before fission).

``%r = group.reduce %x {op, scope = "work_group"}`` becomes a sequential reduction into a
group var, then a barrier, then a read::

    var {name = "wg.r0", per_item = false, type = !T}      (at the top of the kernel)
    %lid = wi.local_linear_id
    if (%lid == 0) { var.store %x -> wg.r0 } else { wg.r0 = op(wg.r0, %x) }
    barrier {scope = "work_group"}
    %r = var.load wg.r0

Work-group fission then runs the accumulation once per item in local linear order (item 0
first, so no identity element is needed and floats add in a fixed order) and the read
after the barrier in the next region. ``per_item = false`` marks the var as one copy per
work-group, which fission leaves alone. The native CPU's sub-groups have one work-item, so
``scope = "sub_group"`` reductions are the identity and are left to codegen.

>>> from pysycl.ir.core import Module
>>> lower_group_reduce(Module("m")).functions
[]
"""
from __future__ import annotations

from pysycl.ir.builder import Builder
from pysycl.ir.core import Module, Op, Region
from pysycl.ir.types import BOOL, I64

def lower_group_reduce(m: Module, options=None) -> Module:
    """Lower every work-group reduction of every kernel of ``m`` (in place; returns ``m``)."""
    for f in m.kernels:
        if f.body is not None:
            decls: list[Op] = []
            _region(f.body, decls)
            f.body.ops[0:0] = decls
    return m


def _region(r: Region, decls: list[Op]) -> None:
    out: list[Op] = []
    for op in r.ops:
        for reg in op.regions:
            _region(reg, decls)
        if op.name == "group.reduce" and op.attrs.get("scope") == "work_group":
            out.extend(_lower(op, decls))
        else:
            out.append(op)
    r.ops = out


def _lower(op: Op, decls: list[Op]) -> list[Op]:
    name, t, x = f"wg.r{len(decls)}", op.type, op.operands[0]
    decls.append(Op("var", attrs={"name": name, "type": t, "per_item": False}, loc=op.loc))
    ops = Region()
    b = Builder(ops, op.loc)
    lid = b.op("wi.local_linear_id", type=I64)
    first, rest = b.if_(b.op("cmp", lid, b.const(0, I64), type=BOOL, pred="eq"))
    first.store_var(name, x)
    rest.store_var(name, rest.combine(op.attrs["op"], rest.load_var(name, t), x))
    b.op("barrier", scope="work_group")
    # The reduce's result Value stays the same object, so its users need no rewriting.
    ops.append(_retarget(op, name))
    return ops.ops


def _retarget(op: Op, name: str) -> Op:
    op.name, op.operands, op.attrs = "var.load", [], {"name": name}
    return op
