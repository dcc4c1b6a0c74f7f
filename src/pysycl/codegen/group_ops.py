"""What the backends share to lower group algorithms (SYCL 2020 4.17.4): the binary
function of each SYCL function object in LLVM IR, and the normal form in which a value
travels through a backend's group primitives.

The function objects combine as the IR's ops do (``ir/builder.Builder.combine``):
``minimum``/``maximum`` are Python's ``min``/``max``, bool arithmetic is NumPy's (``+``
is or, ``*`` is and), ``logical_*`` give 1 or 0 in the operands' type.

Group primitives (OpenCL built-ins, PTX shuffles) work on 32- and 64-bit words, so
:func:`widen` maps a value to one: bools and the logical operators become 0/1 integers
with ``min``/``max`` as their operator (and over 0/1 is min, or is max, xor is a sum's
parity), small integers extend to 32 bits (sums, products and bit operations keep their
low bits, min and max their order), half floats become floats; ``Widened.back`` maps the
result to the value's own type.

>>> from pysycl.ir.types import BOOL
>>> widened_operator("logical_and", BOOL)
'minimum'
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir as ll

from ..functional import known_identity
from ..ir.types import BOOL, F32, I32, U32, ScalarType, Type, VecType
from . import types as lt
from .rules_scalar import compare, const, convert, scalar_of

_BOOL_OPS = {"plus": "maximum", "multiplies": "minimum", "minimum": "minimum",
             "maximum": "maximum", "bit_and": "minimum", "bit_or": "maximum",
             "bit_xor": "plus", "logical_and": "minimum", "logical_or": "maximum"}


def combiner(ctx, kind: str, t: Type) -> Callable[[ll.Value, ll.Value], ll.Value]:
    """``kind(x, y)`` on LLVM values of IR scalar type ``t``."""
    b, s = ctx.builder, scalar_of(t)
    if s.is_bool:
        kind = {"plus": "bit_or", "multiplies": "bit_and", "minimum": "bit_and",
                "maximum": "bit_or", "logical_and": "bit_and",
                "logical_or": "bit_or"}.get(kind, kind)
    if kind == "plus":
        return (lambda x, y: b.fadd(x, y)) if s.is_float else (lambda x, y: b.add(x, y))
    if kind == "multiplies":
        return (lambda x, y: b.fmul(x, y)) if s.is_float else (lambda x, y: b.mul(x, y))
    if kind in ("minimum", "maximum"):
        pred = "<" if kind == "minimum" else ">"
        # Python's min(a, b) is ``b if b < a else a`` (rules_scalar.lower_min_max).
        return lambda x, y: b.select(compare(ctx, pred, y, x, s), y, x)
    if kind in ("bit_and", "bit_or", "bit_xor"):
        return getattr(b, {"bit_and": "and_", "bit_or": "or_", "bit_xor": "xor"}[kind])
    if kind in ("logical_and", "logical_or"):
        zero = const(ctx, t, 0)

        def logical(x, y):
            px, py = (compare(ctx, "!=", v, zero, s) for v in (x, y))
            r = b.and_(px, py) if kind == "logical_and" else b.or_(px, py)
            return convert(ctx, r, BOOL, t)
        return logical
    raise ctx.error(None, f"unknown group operator {kind!r}")


def widened_operator(kind: str, t: Type) -> str:
    """The operator on :func:`widen`'s value that computes ``kind`` on ``t`` values."""
    s = scalar_of(t)
    if s.is_bool or kind in ("logical_and", "logical_or"):
        return _BOOL_OPS[kind]
    return kind


class Widened:
    """A value in a group primitive's word type: ``value`` (LLVM), ``type`` (IR
    scalar), ``kind`` (the operator on it) and ``back(result)``."""

    def __init__(self, value, type_: ScalarType, kind: str, back):
        self.value, self.type, self.kind, self.back = value, type_, kind, back


def widen(ctx, kind: str | None, t: Type, value: ll.Value) -> Widened:
    """``value`` (IR type ``t``) as a 32/64-bit word for group primitives (module doc);
    ``kind`` None: a value that is only moved (broadcast, shuffle), not combined."""
    if isinstance(t, VecType):
        raise ctx.error(None, f"group algorithms on vec values ({t}) are not supported here")
    b, s = ctx.builder, t
    if kind is not None and (s.is_bool or kind in ("logical_and", "logical_or")):
        op = widened_operator(kind, t)
        pred = value if s.is_bool else compare(ctx, "!=", value, const(ctx, t, 0), s)
        word = b.zext(pred, lt.I32)

        def back(r):
            if op == "plus":        # xor over 0/1: the parity of the sum
                r = b.and_(r, ll.Constant(lt.I32, 1))
            # > 0: an exclusive scan's first work-item gets the word operator's identity,
            # INT_MAX for min (true, and's identity), INT_MIN for max (false, or's)
            return convert(ctx, b.icmp_signed(">", r, ll.Constant(lt.I32, 0)), BOOL, t)
        return Widened(word, I32, op, back)
    if s.is_bool:
        return Widened(b.zext(value, lt.I32), U32, kind, lambda r: convert(ctx, r, U32, t))
    if s.is_float and s.bits < 32:
        return Widened(b.fpext(value, ll.FloatType()), F32, kind,
                       lambda r: b.fptrunc(r, ctx.vtype(t)))
    if not s.is_float and s.bits < 32:
        wide = ScalarType("i32" if s.is_signed else "u32")
        word = b.sext(value, lt.I32) if s.is_signed else b.zext(value, lt.I32)
        return Widened(word, wide, kind, lambda r: b.trunc(r, ctx.vtype(t)))
    return Widened(value, s, kind, lambda r: r)


def truth_value(ctx, kind: str, t: Type, value: ll.Value) -> ll.Value:
    """``value`` as the logical operators see it, 0 or 1 in its type (so a group of one
    work-item gives ``kind(identity, x)`` as every other); other operators: itself."""
    s = scalar_of(t)
    if not kind.startswith("logical_") or s.is_bool:
        return value
    return convert(ctx, compare(ctx, "!=", value, const(ctx, t, 0), s), BOOL, t)


def identity(ctx, kind: str, t: ScalarType) -> ll.Constant:
    """The LLVM constant of ``kind``'s identity for ``t`` (SYCL's known identity)."""
    v = known_identity(kind, t.dtype)
    return const(ctx, t, bool(v) if t.is_bool else v.item())


__all__ = ["Widened", "combiner", "identity", "truth_value", "widen", "widened_operator"]


def fold_slots(ctx, slots: ll.Value, t: Type, start: ll.Value, end: ll.Value,
               first: ll.Value, combine, align: int, name: str) -> ll.Value:
    """``first`` combined with ``slots[start:end]`` (i32 bounds) in order: what a
    work-group reduce or scan reads back from the per-sub-group totals its leaders
    stored in local scratch memory."""
    b = ctx.builder
    mt = ctx.mtype(t)
    acc = ctx.alloca(mt, name=name)
    ctx.store(first, acc, t)
    fn = b.block.function
    head, body, done = (fn.append_basic_block(f"{name}.{s}") for s in ("cond", "body", "end"))
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(lt.I32, name=f"{name}.slot")
    i.add_incoming(start, pre)
    b.cbranch(b.icmp_unsigned("<", i, end), body, done)
    b.position_at_end(body)
    x = ctx.load(b.gep(slots, [i], source_etype=mt), t, align=align)
    ctx.store(combine(ctx.load(acc, t), x), acc, t)
    i.add_incoming(b.add(i, ll.Constant(lt.I32, 1)), b.block)
    b.branch(head)
    b.position_at_end(done)
    return ctx.load(acc, t)
