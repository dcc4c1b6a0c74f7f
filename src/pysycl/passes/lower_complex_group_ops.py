"""Lower group operations on complex numbers for the SPIR-V and PTX targets, whose group
primitives (OpenCL's group built-ins, PTX warp shuffles) move and combine single 32- or
64-bit numbers: a complex value goes through them as its two parts.

* ``group.broadcast``, ``group.shuffle``, and ``group.reduce``/``group.scan`` with
  ``plus``: the same op on the real part and on the imaginary part (complex addition
  is part by part, so the sums are those of the complex values);
* ``group.reduce``/``group.scan`` with ``multiplies`` (the SYCL complex extension's
  other group operator): a product does not split into parts, so every work-item
  multiplies the group's values in local id order, fetching them one by one with
  ``group.broadcast`` (a work-group) or ``group.shuffle {mode = idx}`` (a sub-group)
  of the parts. That is n steps for n work-items, but every work-item computes the
  same product in the same order, so all get the same bits, as on the native CPU,
  whose sequential lowering (lower_group_reduce) combines complex values directly::

    %r = group.reduce %z {op = "multiplies", scope = "work_group"} : c64
  becomes
    acc = make(broadcast(real(%z), 0), broadcast(imag(%z), 0))
    for j in 1..n: acc = acc * make(broadcast(real(%z), j), broadcast(imag(%z), j))
    %r = make(real(acc), imag(acc))

  (scans multiply only the values of ids up to their own, or below it; an exclusive
  scan's first work-item gets 1).

>>> from pysycl.ir.core import Module
>>> lower_complex_group_ops(Module("m")).functions
[]
"""
from __future__ import annotations

from pysycl.ir.builder import Builder
from pysycl.ir.core import Function, Module, Op, Region, Value
from pysycl.ir.types import I64, ComplexType

_GROUP_OPS = ("group.broadcast", "group.shuffle", "group.reduce", "group.scan")


def lower_complex_group_ops(m: Module, options=None) -> Module:
    """Rewrite the complex group operations of every function of ``m`` (in place)."""
    for f in m.functions:
        if f.body is not None:
            decls: list[Op] = []
            _region(f, f.body, decls)
            f.body.ops[0:0] = decls      # declarations come first, as the frontend's
    return m


def _region(f: Function, r: Region, decls: list[Op]) -> None:
    out: list[Op] = []
    for op in r.ops:
        for reg in op.regions:
            _region(f, reg, decls)
        if op.name in _GROUP_OPS and isinstance(op.type, ComplexType):
            b = Builder(Region(), op.loc)
            split = _product if op.attrs.get("op") == "multiplies" else _part_by_part
            parts = split(f, b, op, decls)
            out.extend(b.region.ops)
            # The op's result Value stays the same object, so its users need no rewriting.
            op.name, op.operands, op.attrs = "complex.make", parts, {}
        out.append(op)
    r.ops = out


def _parts(b: Builder, z: Value) -> list[Value]:
    return [b.op(f"complex.{p}", z, type=z.type.elem) for p in ("real", "imag")]


def _part_by_part(f: Function, b: Builder, op: Op, decls: list[Op]) -> list[Value]:
    z, *rest = op.operands
    return [b.op(op.name, part, *rest, type=part.type, attrs=dict(op.attrs))
            for part in _parts(b, z)]


def _product(f: Function, b: Builder, op: Op, decls: list[Op]) -> list[Value]:
    t, scope = op.type, op.attrs["scope"]
    parts = _parts(b, op.operands[0])
    if scope == "sub_group":
        n, lid = b.op("sg.local_range", type=I64), b.op("sg.local_id", type=I64)
    else:
        n = b.op("wi.local_range", type=I64, dim=0)
        for d in (1, 2):        # a dimension the range lacks has range 1
            n = b.op("mul", n, b.op("wi.local_range", type=I64, dim=d), type=I64)
        lid = b.op("wi.local_linear_id", type=I64)

    def value_of(bb: Builder, j: Value) -> Value:
        if scope == "sub_group":
            got = [bb.op("group.shuffle", p, j, type=p.type, mode="idx", scope=scope)
                   for p in parts]
        else:
            got = [bb.op("group.broadcast", p, j, type=p.type, scope=scope) for p in parts]
        return bb.op("complex.make", *got, type=t)

    acc, j = _declare(f, decls, "acc", t), _declare(f, decls, "j", I64)
    b.store_var(acc, value_of(b, b.const(0, I64)))
    body = b.for_(j, b.const(1, I64), n, b.const(1, I64))
    jv = body.load_var(j, I64)
    product = body.op("complex.mul", body.load_var(acc, t), value_of(body, jv), type=t)
    if op.name == "group.scan":
        take = body.cmp("le" if op.attrs["inclusive"] else "lt", jv, lid)
        product = body.op("select", take, product, body.load_var(acc, t), type=t)
    body.store_var(acc, product)
    result = b.load_var(acc, t)
    if op.name == "group.scan" and not op.attrs["inclusive"]:
        first = b.cmp("eq", lid, b.const(0, I64))
        result = b.op("select", first, b.const(1 + 0j, t), result, type=t)
    return _parts(b, result)


def _declare(f: Function, decls: list[Op], what: str, t) -> str:
    """A new var for the top of ``f`` (added to ``decls``)."""
    taken = {op.attrs["name"] for op in (*f.body.ops, *decls) if op.name == "var"}
    k = 0
    while f"cgroup.{what}{k}" in taken:
        k += 1
    name = f"cgroup.{what}{k}"
    decls.append(Op("var", attrs={"name": name, "type": t}, loc=f.loc))
    return name


__all__ = ["lower_complex_group_ops"]
