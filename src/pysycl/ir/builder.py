"""A small helper that appends ops to a region (used by passes, tests and the frontend).

>>> from pysycl.ir.types import F32
>>> body = Region()
>>> b = Builder(body)
>>> x = b.const(1.5, F32)
>>> y = b.op("add", x, x, type=F32)
>>> [op.name for op in body]
['const', 'add']
"""
from __future__ import annotations

from typing import Any

from .core import UNKNOWN_LOC, Loc, Op, Region, Value
from .types import BOOL, VOID, ComplexType, PointerType, ScalarType, Type, VecType

#: IR op of each SYCL function object (``logical_*`` compare with zero first).
COMBINE_OPS = {"plus": "add", "multiplies": "mul", "minimum": "min", "maximum": "max",
               "bit_and": "and", "bit_or": "or", "bit_xor": "xor", "logical_and": "and",
               "logical_or": "or"}
_BOOL_OPERATORS = {"plus": "bit_or", "multiplies": "bit_and", "minimum": "bit_and",
                   "maximum": "bit_or", "logical_and": "bit_and", "logical_or": "bit_or"}


class Builder:
    """Appends to ``region`` (or inserts at ``index``); ``loc`` is the default location."""

    def __init__(self, region: Region, loc: Loc = UNKNOWN_LOC, index: int | None = None):
        self.region, self.loc, self.index = region, loc, index

    def insert(self, op: Op) -> Op:
        if self.index is None:
            self.region.ops.append(op)
        else:
            self.region.ops.insert(self.index, op)
            self.index += 1
        return op

    def op(self, _op_name: str, *operands: Value, type: Type = VOID, loc: Loc | None = None,
           regions: list[Region] | None = None, attrs: dict[str, Any] | None = None,
           **more_attrs: Any) -> Any:
        """Append an op; return its result, or the op itself when it has none. Attributes
        come as keywords, or in ``attrs`` for the names ``type``/``loc``/``regions``."""
        op = self.insert(Op(_op_name, operands, type, {**(attrs or {}), **more_attrs}, regions,
                            loc or self.loc))
        return op if op.result is None else op.result

    def const(self, value: Any, type: Type, loc: Loc | None = None) -> Value:
        """A constant; a complex one from a Python number (held as its little-endian
        bytes, the IR's form of complex constants)."""
        if isinstance(type, ComplexType) and not isinstance(value, bytes):
            value = type.const_bytes(value)
        return self.op("const", type=type, loc=loc, value=value)

    def var(self, name: str, type: Type, loc: Loc | None = None, **attrs: Any) -> Op:
        return self.op("var", loc=loc, attrs={"name": name, "type": type, **attrs})

    def load_var(self, name: str, type: Type, loc: Loc | None = None) -> Value:
        return self.op("var.load", type=type, loc=loc, name=name)

    def store_var(self, name: str, value: Value, loc: Loc | None = None) -> Op:
        return self.op("var.store", value, loc=loc, name=name)

    def load(self, ptr: Value, loc: Loc | None = None) -> Value:
        assert isinstance(ptr.type, PointerType)
        return self.op("load", ptr, type=ptr.type.pointee, loc=loc)

    def store(self, ptr: Value, value: Value, loc: Loc | None = None) -> Op:
        return self.op("store", ptr, value, loc=loc)

    def cmp(self, pred: str, a: Value, b: Value, loc: Loc | None = None) -> Value:
        return self.op("cmp", a, b, type=BOOL, loc=loc, pred=pred)

    def combine(self, operator: str, a: Value, b: Value, reassoc: bool = False) -> Value:
        """``operator(a, b)`` for a SYCL function object's IR name (``"plus"``...), in
        ``a``'s type. ``reassoc``: the order of a chain of these may change (reductions),
        so a float chain may vectorise.

        >>> from .types import I32
        >>> b = Builder(Region()); x = b.const(2, I32)
        >>> b.combine("logical_or", x, x).type
        i32
        """
        t = a.type
        s = t.elem if isinstance(t, VecType) else t
        if s == BOOL:    # NumPy's bool arithmetic: + is or, * is and
            operator = _BOOL_OPERATORS.get(operator, operator)
        elif operator.startswith("logical_"):
            zero = self.const(0, s) if isinstance(t, ScalarType) else \
                self.op("vec.make", self.const(0, s), type=t)
            mask = BOOL if isinstance(t, ScalarType) else VecType(BOOL, t.n)
            a2 = self.op("cmp", a, zero, type=mask, pred="ne")
            b2 = self.op("cmp", b, zero, type=mask, pred="ne")
            r = self.op(COMBINE_OPS[operator], a2, b2, type=mask)
            return self.op("cast", r, type=t)
        attrs = {"reassoc": True} if reassoc and operator in ("plus", "multiplies") else {}
        if isinstance(t, ComplexType) and operator == "multiplies":
            return self.op("complex.mul", a, b, type=t)      # ``mul`` is for real numbers
        return self.op(COMBINE_OPS[operator], a, b, type=t, attrs=attrs)

    def if_(self, cond: Value, loc: Loc | None = None) -> tuple["Builder", "Builder"]:
        op = self.op("if", cond, loc=loc, regions=[Region(), Region()])
        return Builder(op.regions[0], self.loc), Builder(op.regions[1], self.loc)

    def for_(self, var: str, lo: Value, hi: Value, step: Value, loc: Loc | None = None,
             **attrs: Any) -> "Builder":
        op = self.op("for", lo, hi, step, loc=loc, regions=[Region()], var=var, **attrs)
        return Builder(op.regions[0], self.loc)

    def while_(self, loc: Loc | None = None) -> tuple["Builder", "Builder"]:
        op = self.op("while", loc=loc, regions=[Region(), Region()])
        return Builder(op.regions[0], self.loc), Builder(op.regions[1], self.loc)

    def items(self, loc: Loc | None = None) -> "Builder":
        op = self.op("wg.items", loc=loc, regions=[Region()])
        return Builder(op.regions[0], self.loc)
