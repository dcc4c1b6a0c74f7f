"""SYCL 2020 integer functions (4.17.6) in the builtin catalogue: ``sycl.math.popcount``,
``clz``, ``ctz``, ``abs_diff``, ``add_sat``, ``sub_sat``, ``hadd``, ``rhadd``,
``rotate``, ``mul_hi``, ``mad_hi``, ``mul24``, ``mad24`` and ``upsample``, on integer
scalars and integer vecs (element by element).

The IR has no bit-counting or saturating ops, so each is composed here from its
element ops (and, or, xor, shifts, add, mul, cmp, select), on the unsigned type of the
argument's width where the bits matter; LLVM recognises the patterns (a population
count becomes ``popcnt``). Every argument has the first one's type, as SYCL requires.

>>> lookup(sycl_math.popcount).name
'math.popcount'
"""
from __future__ import annotations

from ..ir import types as T
from ..ir.core import Value
from . import sycl_math
from .builtins import _args, add_builtin, lookup  # noqa: F401 - lookup: doctest
from .lowering import fv_type_name, type_name
from .values import Lit

_UNSIGNED = {8: T.U8, 16: T.U16, 32: T.U32, 64: T.U64}
_SIGNED = {8: T.I8, 16: T.I16, 32: T.I32, 64: T.I64}


def _elem(t: T.Type) -> T.ScalarType:
    return t.elem if isinstance(t, T.VecType) else t


def _like(t: T.Type, elem: T.ScalarType) -> T.Type:
    """``t`` with ``elem`` elements (a vec of the same length, or ``elem`` itself)."""
    return T.VecType(elem, t.n) if isinstance(t, T.VecType) else elem


def _operands(lw, node, name: str, nargs: int) -> list[Value]:
    """The arguments as values of one integer type (scalar or vec): the first
    argument's; a Python int takes it (as ``x + 1`` does)."""
    args = [lw.operand(a, node) for a in _args(lw, node, nargs, name, weak=True)]
    first = next((a for a in args if isinstance(a, Value)), None)
    t = first.type if first is not None else T.I64
    if not (isinstance(_elem(t), T.ScalarType) and _elem(t).is_int):
        lw.error(node, f"{name}() takes integers or integer vecs, not {fv_type_name(first)}")
    out = []
    for a, arg in zip(args, node.args):
        if isinstance(a, Value) and a.type != t and not (
                isinstance(a.type, T.ScalarType) and isinstance(t, T.VecType) and
                a.type == t.elem):
            lw.error(arg, f"{name}(): every argument is a {type_name(t)} here, not "
                     f"{type_name(a.type)}",
                     "convert it first, e.g. np.int32(x)")
        if isinstance(a, Lit) and not isinstance(a.value, int):
            lw.error(arg, f"{name}() takes integers, not Python {type(a.value).__name__}")
        out.append(lw.coerce(a, t, node))
    return out


class _Ops:
    """Element ops on values of one type (``t``) for the compositions below."""

    def __init__(self, lw, node, t: T.Type):
        self.lw, self.node, self.t = lw, node, t

    def c(self, value: int, t: T.Type | None = None) -> Value:
        return self.lw.const(value, t or self.t, self.node)

    def op(self, name: str, *args: Value) -> Value:
        return self.lw.value(name, list(args), args[0].type, node=self.node)

    def cmp(self, pred: str, a: Value, b: Value) -> Value:
        truth = _like(a.type, T.BOOL)
        return self.lw.value("cmp", [a, b], truth, {"pred": pred}, node=self.node)

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        return self.lw.value("select", [cond, a, b], a.type, node=self.node)

    def bitcast(self, v: Value, elem: T.ScalarType) -> Value:
        t = _like(v.type, elem)
        return v if t == v.type else self.lw.value("bitcast", [v], t, node=self.node)

    def cast(self, v: Value, elem: T.ScalarType) -> Value:
        t = _like(v.type, elem)
        return v if t == v.type else self.lw.value("cast", [v], t, node=self.node)


def _unsigned(o: _Ops, v: Value) -> Value:
    return o.bitcast(v, _UNSIGNED[_elem(v.type).bits])


def _popcount_bits(o: _Ops, u: Value) -> Value:
    """The set bits of unsigned ``u`` (the SWAR count; LLVM makes it one instruction)."""
    bits = _elem(u.type).bits
    ones = (1 << bits) - 1

    def mask(pattern: int) -> Value:
        return o.c(int.from_bytes(bytes([pattern]) * (bits // 8), "little") & ones, u.type)
    u = o.op("sub", u, o.op("and", o.op("shr", u, o.c(1, u.type)), mask(0x55)))
    u = o.op("add", o.op("and", u, mask(0x33)), o.op("and", o.op("shr", u, o.c(2, u.type)),
                                                      mask(0x33)))
    u = o.op("and", o.op("add", u, o.op("shr", u, o.c(4, u.type))), mask(0x0F))
    if bits > 8:
        u = o.op("shr", o.op("mul", u, mask(0x01)), o.c(bits - 8, u.type))
    return u


def _popcount(lw, node):
    """popcount(x): the number of set bits."""
    (x,) = _operands(lw, node, "popcount", 1)
    o = _Ops(lw, node, x.type)
    return o.bitcast(_popcount_bits(o, _unsigned(o, x)), _elem(x.type))


def _clz(lw, node):
    """clz(x): the number of leading zero bits (the width for 0)."""
    (x,) = _operands(lw, node, "clz", 1)
    o = _Ops(lw, node, x.type)
    u = _unsigned(o, x)
    bits = _elem(x.type).bits
    zero = o.c(0, u.type)
    n = zero
    shift = bits // 2
    while shift:
        top_clear = o.cmp("eq", o.op("shr", u, o.c(bits - shift, u.type)), zero)
        n = o.op("add", n, o.select(top_clear, o.c(shift, u.type), zero))
        u = o.select(top_clear, o.op("shl", u, o.c(shift, u.type)), u)
        shift //= 2
    n = o.select(o.cmp("eq", _unsigned(o, x), zero), o.c(bits, u.type), n)
    return o.bitcast(n, _elem(x.type))


def _ctz(lw, node):
    """ctz(x): the number of trailing zero bits (the width for 0): popcount((x & -x) - 1)."""
    (x,) = _operands(lw, node, "ctz", 1)
    o = _Ops(lw, node, x.type)
    u = _unsigned(o, x)
    lowest = o.op("and", u, o.op("sub", o.c(0, u.type), u))
    return o.bitcast(_popcount_bits(o, o.op("sub", lowest, o.c(1, u.type))), _elem(x.type))


def _abs_diff(lw, node):
    """abs_diff(x, y): |x - y| without overflow in the subtraction (the bits of the
    difference as x's type)."""
    x, y = _operands(lw, node, "abs_diff", 2)
    o = _Ops(lw, node, x.type)
    ux, uy = _unsigned(o, x), _unsigned(o, y)
    d = o.select(o.cmp("gt", x, y), o.op("sub", ux, uy), o.op("sub", uy, ux))
    return o.bitcast(d, _elem(x.type))


def _limits(elem: T.ScalarType) -> tuple[int, int]:
    bits = elem.bits
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if elem.is_signed else (0, (1 << bits) - 1)


def _saturating(name: str):
    def lower(lw, node):
        x, y = _operands(lw, node, name, 2)
        o = _Ops(lw, node, x.type)
        elem = _elem(x.type)
        lo, hi = _limits(elem)
        op = "add" if name == "add_sat" else "sub"
        r = o.op(op, x, y)          # wraps
        if elem.is_signed:
            # Overflow: the operands' signs (y's flipped for sub) agree and r's differs.
            ry = o.op("xor", r, y) if op == "add" else o.op("xor", x, y)
            flag = o.op("and", o.op("xor", x, r), ry)
            over = o.cmp("lt", flag, o.c(0))
            bound = o.select(o.cmp("lt", x, o.c(0)), o.c(lo), o.c(hi))
        else:
            over = o.cmp("lt", r, x) if op == "add" else o.cmp("lt", x, y)
            bound = o.c(hi if op == "add" else lo)
        return o.select(over, bound, r)
    lower.__doc__ = (f"{name}(x, y): x {'+' if name == 'add_sat' else '-'} y, saturated to "
                     "the type's range")
    return lower


def _halving(name: str):
    def lower(lw, node):
        x, y = _operands(lw, node, name, 2)
        o = _Ops(lw, node, x.type)
        one = o.c(1)
        half = o.op("add", o.op("shr", x, one), o.op("shr", y, one))
        low = o.op("and", x, y) if name == "hadd" else o.op("or", x, y)
        return o.op("add", half, o.op("and", low, one))
    lower.__doc__ = (f"{name}(x, y): (x + y{' + 1' if name == 'rhadd' else ''}) >> 1 "
                     "without overflow in the sum")
    return lower


def _rotate(lw, node):
    """rotate(v, i): v's bits rotated left by i (modulo the width)."""
    v, i = _operands(lw, node, "rotate", 2)
    o = _Ops(lw, node, v.type)
    u, k = _unsigned(o, v), _unsigned(o, i)
    bits = _elem(v.type).bits
    k = o.op("and", k, o.c(bits - 1, k.type))
    right = o.op("and", o.op("sub", o.c(bits, k.type), k), o.c(bits - 1, k.type))
    left_part = o.op("shl", u, k)
    right_part = o.select(o.cmp("eq", k, o.c(0, k.type)), o.c(0, u.type), o.op("shr", u, right))
    return o.bitcast(o.op("or", left_part, right_part), _elem(v.type))


def _mul_hi_values(o: _Ops, x: Value, y: Value) -> Value:
    """The high half of the full product of x and y (their type)."""
    elem = _elem(x.type)
    bits = elem.bits
    if bits < 64:
        wide = T.I64 if elem.is_signed else T.U64
        p = o.op("mul", o.cast(x, wide), o.cast(y, wide))
        return o.cast(o.op("shr", p, o.c(bits, p.type)), elem)
    # 64 bits: the unsigned high half by schoolbook multiplication of 16-bit limbs (LLVM
    # folds the usual 32-bit-halves form into a 128-bit multiply, which SPIR-V cannot
    # express), then the signed correction
    # hi(x * y) = uhi(x, y) - (x < 0 ? y : 0) - (y < 0 ? x : 0) (mod 2**64).
    ux, uy = _unsigned(o, x), _unsigned(o, y)
    m16 = o.c(0xFFFF, ux.type)
    xs = [o.op("and", o.op("shr", ux, o.c(16 * k, ux.type)), m16) for k in range(4)]
    ys = [o.op("and", o.op("shr", uy, o.c(16 * k, ux.type)), m16) for k in range(4)]
    carry = o.c(0, ux.type)
    digits = []
    for k in range(8):
        column = carry
        for i in range(max(0, k - 3), min(3, k) + 1):
            column = o.op("add", column, o.op("mul", xs[i], ys[k - i]))
        digits.append(o.op("and", column, m16))
        carry = o.op("shr", column, o.c(16, ux.type))
    hi = digits[4]
    for k in range(5, 8):
        hi = o.op("or", hi, o.op("shl", digits[k], o.c(16 * (k - 4), ux.type)))
    if elem.is_signed:
        zero = o.c(0, ux.type)
        hi = o.op("sub", hi, o.select(o.cmp("lt", x, o.c(0)), uy, zero))
        hi = o.op("sub", hi, o.select(o.cmp("lt", y, o.c(0)), ux, zero))
    return o.bitcast(hi, elem)


def _mul_hi(lw, node):
    """mul_hi(x, y): the high half of the full product x * y."""
    x, y = _operands(lw, node, "mul_hi", 2)
    return _mul_hi_values(_Ops(lw, node, x.type), x, y)


def _mad_hi(lw, node):
    """mad_hi(a, b, c): mul_hi(a, b) + c (wrapping)."""
    a, b, c = _operands(lw, node, "mad_hi", 3)
    o = _Ops(lw, node, a.type)
    return o.op("add", _mul_hi_values(o, a, b), c)


def _check_24(lw, node, name: str, v: Value) -> None:
    if _elem(v.type).bits != 32:
        lw.error(node, f"{name}() takes 32-bit integers, not {type_name(v.type)}")


def _mul24(lw, node):
    """mul24(x, y): x * y for 32-bit integers whose values fit 24 bits."""
    x, y = _operands(lw, node, "mul24", 2)
    _check_24(lw, node, "mul24", x)
    return _Ops(lw, node, x.type).op("mul", x, y)


def _mad24(lw, node):
    """mad24(x, y, z): x * y + z for 32-bit integers whose x and y fit 24 bits."""
    x, y, z = _operands(lw, node, "mad24", 3)
    _check_24(lw, node, "mad24", x)
    o = _Ops(lw, node, x.type)
    return o.op("add", o.op("mul", x, y), z)


def _upsample(lw, node):
    """upsample(hi, lo): (hi << width) | lo in the integer of twice the width (signed as
    hi; lo is unsigned of hi's width)."""
    args = [lw.operand(a, node) for a in _args(lw, node, 2, "upsample", weak=True)]
    hi, lo = (lw.materialize(a, node) if not isinstance(a, Value) else a for a in args)
    eh, el = _elem(hi.type), _elem(lo.type)
    if not (eh.is_int and el.is_int and not el.is_signed and eh.bits == el.bits and
            eh.bits < 64 and isinstance(hi.type, T.VecType) == isinstance(lo.type, T.VecType)):
        lw.error(node, f"upsample(hi, lo) takes an 8, 16 or 32-bit integer hi and the unsigned "
                 f"integer of its width lo, not {type_name(hi.type)} and {type_name(lo.type)}")
    wide = (_SIGNED if eh.is_signed else _UNSIGNED)[eh.bits * 2]
    o = _Ops(lw, node, _like(hi.type, wide))
    h = o.op("shl", o.cast(hi, wide), o.c(eh.bits))
    return o.op("or", h, o.cast(lo, wide))


for _name, _rule in (("popcount", _popcount), ("clz", _clz), ("ctz", _ctz),
                     ("abs_diff", _abs_diff), ("add_sat", _saturating("add_sat")),
                     ("sub_sat", _saturating("sub_sat")), ("hadd", _halving("hadd")),
                     ("rhadd", _halving("rhadd")), ("rotate", _rotate), ("mul_hi", _mul_hi),
                     ("mad_hi", _mad_hi), ("mul24", _mul24), ("mad24", _mad24),
                     ("upsample", _upsample)):
    add_builtin(f"math.{_name}", [getattr(sycl_math, _name)])(_rule)
