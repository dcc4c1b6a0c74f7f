"""Checked builds (``PYSYCL_DEBUG=bounds``): every accessor access and every access through
a USM pointer parameter is preceded by a ``check`` of its index against its extent.

For ``acc[i, j]`` each index is compared with the accessor's range in its dimension; for
``p[i]``, ``(p + k)[i]`` and fields of such elements (a chain of ``ptr.offset`` /
``ptr.field`` / ``ptr.elem`` ops back to a ``global_ptr`` parameter ``p``), the
element index from ``p`` (the sum of the offsets) is compared with ``ptr.extent(p)``,
the elements from ``p`` to the end of the memory the launch gave it. The checks are plain
``cmp`` ops (``0 <= i`` and ``i < n``, signed i64): on the native CPU
``passes/split_item_range`` proves them for the interior of each row like a kernel's own
guards, so the interior loop runs without them and still vectorises. A ``check`` that
fails records the failure (``codegen.debug_checks``) and stops the work-item before the
access, so a bad index never reads or writes memory.

A local that only ever holds pointers into one parameter (``q = p + k``, ``q = q + 1``)
gets a shadow local with its element offset, so accesses through it are checked too
(the ``var`` op names the parameter in ``usm_root``). A device function's pointer
parameters are roots too: in a checked build each comes with the bytes from it to the
end of its memory, which the caller computes (``codegen.debug_checks.bytes_after``).
Pointers the pass cannot trace to a parameter (a local that holds pointers into different
parameters) are not checked; accessors are checked wherever they are indexed.

>>> from pysycl.ir.core import Module
>>> insert_bounds_checks(Module("m")).functions
[]
"""
from __future__ import annotations

from pysycl.ir.core import Function, Module, Op, Region, Value
from pysycl.ir.types import BOOL, I64, AccessorType, PointerType, ScalarType

# Ops that read or write memory through their pointer operand 0.
_ACCESSES = frozenset({"load", "store", "atomic.rmw", "atomic.cmpxchg", "atomic.load",
                       "atomic.store"})


def insert_bounds_checks(m: Module, options=None) -> Module:
    """Add the checks to every function of ``m`` (in place); return ``m``."""
    for f in m.functions:
        if f.body is not None:
            _Checker(f).region(f.body)
    return m


_MISSING = object()


class _Checker:
    def __init__(self, f: Function):
        self.f = f
        # USM parameters of a kernel: their values are the roots that have an extent.
        # Device functions get their size from the caller (codegen's bytes_after).
        self.usm = {p.value: p for p in f.params
                    if isinstance(p.type, PointerType) and p.type.space == "global"}
        self.names = {p.value: p.name for p in f.params}
        # Locals that only ever hold pointers into one USM parameter -> its value; each
        # gets a shadow local with its element offset from the parameter.
        self.vars = self._pointer_vars() if self.usm else {}

    def region(self, r: Region) -> None:
        out: list[Op] = []
        for op in r.ops:
            for sub in op.regions:
                self.region(sub)
            if op.name == "acc.ptr":
                out += self.accessor(op)
            elif op.name in _ACCESSES:
                out += self.pointer(op)
            out.append(op)
            name = op.attrs.get("name")
            if name in self.vars and op.name == "var":
                op.attrs["usm_root"] = self.usm[self.vars[name]].name
                out.append(Op("var", [], attrs={"name": _shadow(name), "type": I64},
                              loc=op.loc))
            elif name in self.vars and op.name == "var.store":
                ops: list[Op] = []
                off = self.offset(op.operands[0], ops, op)
                out += ops + [Op("var.store", [off], attrs={"name": _shadow(name)},
                                 loc=op.loc)]
        r.ops = out

    # Accessors --------------------------------------------------------------------------
    def accessor(self, op: Op) -> list[Op]:
        acc, *idx = op.operands
        name = self.names.get(acc, "accessor")
        kind = "accessor" if isinstance(acc.type, AccessorType) else "local accessor"
        ops: list[Op] = []
        for d, i in enumerate(idx):
            n = Op("acc.range", [acc], I64, {"dim": d}, loc=op.loc)
            where = f" in dimension {d}" if len(idx) > 1 else ""
            ops.append(n)
            ops += self.compare(op, i, n.result, f"{kind} '{name}'{where}")
        return ops

    # USM pointers -----------------------------------------------------------------------
    def pointer(self, access: Op) -> list[Op]:
        v = access.operands[0]
        # p[i].field and p[i][j] (a fixed array element: codegen checks j) address
        # inside element p[i]: check the element.
        while v.owner is not None and v.owner.name in ("ptr.field", "ptr.elem"):
            v = v.owner.operands[0]
        root = self.root(v)
        if root is None:
            return []
        ops: list[Op] = []
        total = self.offset(v, ops, access)
        ext = Op("ptr.extent", [root], I64, loc=access.loc)
        ops.append(ext)
        return ops + self.compare(access, total, ext.result,
                                  f"USM pointer '{self.usm[root].name}'", widened=True)

    def root(self, v: Value, roots=None) -> Value | None:
        """The USM parameter ``v`` points into (through ``ptr.offset`` and tracked
        locals), or None."""
        roots = self.vars if roots is None else roots
        while v.owner is not None and v.owner.name == "ptr.offset":
            v = v.owner.operands[0]
        if v in self.usm:
            return v
        if v.owner is not None and v.owner.name == "var.load":
            r = roots.get(v.owner.attrs["name"])
            return None if r is _MISSING else r
        return None

    def offset(self, v: Value, ops: list[Op], at: Op) -> Value:
        """The element offset (i64) of pointer ``v`` from its USM parameter."""
        terms = []
        while v.owner is not None and v.owner.name == "ptr.offset":
            terms.append(self.as_i64(v.owner.operands[1], ops, at))
            v = v.owner.operands[0]
        if v in self.usm:
            base = Op("const", [], I64, {"value": 0}, loc=at.loc)
        else:
            base = Op("var.load", [], I64, {"name": _shadow(v.owner.attrs["name"])},
                      loc=at.loc)
        ops.append(base)
        total = base.result
        for t in reversed(terms):
            add = Op("add", [total, t], I64, loc=at.loc)
            ops.append(add)
            total = add.result
        return total

    def _pointer_vars(self) -> dict[str, Value]:
        """Locals of global pointer type whose every store is a pointer into the same USM
        parameter (a fixed point: ``q = q + 1`` keeps ``q``'s parameter)."""
        names = {op.attrs["name"] for op in self.f.walk() if op.name == "var"
                 and isinstance(op.attrs["type"], PointerType)
                 and op.attrs["type"].space == "global"}
        stores = [op for op in self.f.walk() if op.name == "var.store"
                  and op.attrs["name"] in names]
        roots: dict[str, object] = {n: _MISSING for n in names}
        changed = True
        while changed:
            changed = False
            for op in stores:
                name, v = op.attrs["name"], op.operands[0]
                while v.owner is not None and v.owner.name == "ptr.offset":
                    v = v.owner.operands[0]
                if v.owner is not None and v.owner.name == "var.load" and \
                        roots.get(v.owner.attrs["name"]) is _MISSING:
                    continue                       # not known yet
                r = self.root(op.operands[0], roots)
                old = roots[name]
                new = r if old is _MISSING else (old if old is r else None)
                if new is not old:
                    roots[name] = new
                    changed = True
        return {n: r for n, r in roots.items() if r is not None and r is not _MISSING}

    # Shared -----------------------------------------------------------------------------
    def compare(self, at: Op, index: Value, extent: Value, what: str,
                widened: bool = False) -> list[Op]:
        """``check(0 <= index < extent)`` before ``at``."""
        ops: list[Op] = []
        i = index if widened else self.as_i64(index, ops, at)
        zero = Op("const", [], I64, {"value": 0}, loc=at.loc)
        ge = Op("cmp", [i, zero.result], BOOL, {"pred": "ge"}, loc=at.loc)
        lt = Op("cmp", [i, extent], BOOL, {"pred": "lt"}, loc=at.loc)
        ok = Op("and", [ge.result, lt.result], BOOL, loc=at.loc)
        check = Op("check", [ok.result, i, extent], attrs={"what": what}, loc=at.loc)
        return ops + [zero, ge, lt, ok, check]

    @staticmethod
    def as_i64(v: Value, ops: list[Op], at: Op) -> Value:
        """``v`` (an integer) as i64: signed types keep their value; an unsigned 64-bit
        index beyond 2**63 turns negative, which fails ``0 <= i`` as it should."""
        if v.type == I64:
            return v
        if not isinstance(v.type, ScalarType):
            raise TypeError(f"index of type {v.type}")
        cast = Op("cast", [v], I64, loc=at.loc)
        ops.append(cast)
        return cast.result


def _shadow(name: str) -> str:
    """The local holding the element offset of pointer local ``name``."""
    return f"{name}#offset"


__all__ = ["insert_bounds_checks"]
