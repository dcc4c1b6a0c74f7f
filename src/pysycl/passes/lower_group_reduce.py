"""Lower the group algorithms for the native CPU device (runs before fission).

One thread runs a work-group's items in local linear order, so each work-group
operation becomes a group var that the items update in turn, then a barrier:

* ``%r = group.reduce %x {op, scope = "work_group"}``::

    var {name = "wg.r0", per_item = false, type = !T}      (at the top of the kernel)
    if (lid == 0) { wg.r0 = %x } else { wg.r0 = op(wg.r0, %x) }
    barrier {scope = "work_group"}
    %r = var.load wg.r0

  (item 0 first, so no identity element is needed and floats add in a fixed order);
* ``group.scan``: the same running value, read by each item right after (inclusive) or
  before (exclusive; item 0 reads the identity) its own update, then a barrier, so that
  a scan in a loop is one step of the loop for every item;
* ``group.broadcast %x, %id``: ``if (lid == id) wg.b = %x``, barrier, read.

Work-group fission then runs the updates once per item, the reads after a barrier in
the next region. ``per_item = false`` marks a var as one copy per work-group, which
fission leaves alone. The native CPU's sub-groups have one work-item: a sub-group
reduction, inclusive scan, broadcast or shuffle is the value itself, an exclusive scan
the operator's identity.

>>> from pysycl.ir.core import Module
>>> lower_group_reduce(Module("m")).functions
[]
"""
from __future__ import annotations

from pysycl.functional import known_identity
from pysycl.ir.builder import Builder
from pysycl.ir.core import Module, Op, Region
from pysycl.ir.types import BOOL, I64

_GROUP_OPS = ("group.reduce", "group.scan", "group.broadcast", "group.shuffle")


def lower_group_reduce(m: Module, options=None) -> Module:
    """Lower every group operation of every kernel of ``m`` (in place; returns ``m``)."""
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
        if op.name not in _GROUP_OPS:
            out.append(op)
        elif op.attrs.get("scope") == "sub_group":
            one = _one_item(op)
            out.extend(one if isinstance(one, list) else [one])
        elif op.name == "group.reduce":
            out.extend(_reduce(op, decls))
        elif op.name == "group.scan":
            out.extend(_scan(op, decls))
        elif op.name == "group.broadcast":
            out.extend(_broadcast(op, decls))
        else:
            out.append(op)     # codegen reports what it cannot lower
    r.ops = out


def _one_item(op: Op) -> Op:
    """A sub-group operation over the one work-item of a native CPU sub-group."""
    if op.name == "group.scan" and not op.attrs["inclusive"]:
        return _to_const(op, _identity(op))
    if op.name in ("group.reduce", "group.scan") and op.attrs["op"].startswith("logical_") \
            and op.type != BOOL:
        x = op.operands[0]          # op(identity, x): 0 or 1
        zero = Op("const", type=op.type, attrs={"value": 0}, loc=op.loc)
        ne = Op("cmp", [x, zero.result], BOOL, {"pred": "ne"}, loc=op.loc)
        op.name, op.operands, op.attrs = "cast", [ne.result], {}
        return [zero, ne, op]
    if op.name == "group.reduce":
        return op          # codegen: NativeCpuLowering.sub_group_reduce
    op.name, op.operands, op.attrs = "cast", [op.operands[0]], {}   # the value itself
    return op


def _identity(op: Op):
    t = op.type
    v = known_identity(op.attrs["op"], t.dtype)
    return bool(v) if t == BOOL else v.item()


def _to_const(op: Op, value) -> Op:
    op.name, op.operands, op.attrs = "const", [], {"value": value}
    return op


def _group_var(op: Op, decls: list[Op], prefix: str) -> str:
    name = f"wg.{prefix}{len(decls)}"
    decls.append(Op("var", attrs={"name": name, "type": op.type, "per_item": False},
                    loc=op.loc))
    return name


def _truth(b: Builder, op: Op):
    """The operand as the logical operators see it: 0 or 1 in its type (a group of one
    work-item gives ``op(identity, x)``, as every other)."""
    x, t = op.operands[0], op.type
    if not op.attrs["op"].startswith("logical_") or t == BOOL:
        return x
    return b.op("cast", b.cmp("ne", x, b.const(0, t)), type=t)


def _reduce(op: Op, decls: list[Op]) -> list[Op]:
    name, t = _group_var(op, decls, "r"), op.type
    ops = Region()
    b = Builder(ops, op.loc)
    x = _truth(b, op)
    lid = b.op("wi.local_linear_id", type=I64)
    first, rest = b.if_(b.cmp("eq", lid, b.const(0, I64)))
    first.store_var(name, x)
    rest.store_var(name, rest.combine(op.attrs["op"], rest.load_var(name, t), x))
    b.op("barrier", scope="work_group")
    # The op's result Value stays the same object, so its users need no rewriting.
    ops.append(_retarget(op, name))
    return ops.ops


def _scan(op: Op, decls: list[Op]) -> list[Op]:
    name, t = _group_var(op, decls, "s"), op.type
    kind, inclusive = op.attrs["op"], op.attrs["inclusive"]
    ops = Region()
    b = Builder(ops, op.loc)
    x = _truth(b, op)
    lid = b.op("wi.local_linear_id", type=I64)
    first, rest = b.if_(b.cmp("eq", lid, b.const(0, I64)))
    if inclusive:
        first.store_var(name, x)
        rest.store_var(name, rest.combine(kind, rest.load_var(name, t), x))
        ops.append(_retarget(op, name))
    else:
        first.store_var(name, first.const(_identity(op), t))
        ops.append(_retarget(op, name))
        b.store_var(name, b.combine(kind, op.result, x))
    b.op("barrier", scope="work_group")
    return ops.ops


def _broadcast(op: Op, decls: list[Op]) -> list[Op]:
    name = _group_var(op, decls, "b")
    x, at = op.operands
    ops = Region()
    b = Builder(ops, op.loc)
    lid = b.op("wi.local_linear_id", type=I64)
    then, _ = b.if_(b.cmp("eq", lid, at))
    then.store_var(name, x)
    b.op("barrier", scope="work_group")
    ops.append(_retarget(op, name))
    return ops.ops


def _retarget(op: Op, name: str) -> Op:
    op.name, op.operands, op.attrs = "var.load", [], {"name": name}
    return op
