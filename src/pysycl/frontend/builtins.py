"""The builtin catalogue: every free function of the kernel language, in one table.

An entry maps the Python objects that spell a builtin (``sycl.math.sqrt``, ``math.sqrt``,
``np.sqrt``) to one lowering rule that types the call and emits its ops (
Warp's ``add_builtin``). :func:`catalogue` lists them for reference docs and tests.

>>> lookup(abs).name
'abs'
"""
from __future__ import annotations

import builtins as py
import math
from typing import Callable

import numpy as np

from .. import functional
from .._records import FrozenValue
from ..ir import types as T
from ..ir.ops import COMPLEX_FUNCTIONS, MATH_FUNCTIONS, MATH_PREDICATES
from ..ir.type_rules import int32_like
from ..ir.core import Value
from ..errors import exception
from ..types import address_space, as_dtype, memory_order, memory_scope
from . import kernel_api, sycl_math
from .lowering import fv_type_name, type_name
from .typing_rules import math_result, PY_OPS
from .values import (AtomicHandle, GroupHandle, Lit, Obj, Ptr, SpecPlaceholder, TupleVal, Weak,
                     is_complex, promo_type)


class Builtin(FrozenValue):
    """One catalogue entry (a frozen value class, _records.py)."""

    __slots__ = _fields = ("name", "lower", "doc")
    name: str
    lower: Callable     # lower(lowerer, call_node) -> expression value
    doc: str

    def __init__(self, name, lower, doc):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "doc", doc)


_by_id: dict[int, tuple[object, Builtin]] = {}
# Classes of layers the frontend must not import (runtime's sycl.id / sycl.range) name
# their builtin in a ``__pysycl_builtin__`` class attribute instead (layering:
# the frontend imports only ir and the shared vocabulary).
_by_marker: dict[str, Builtin] = {}


def add_builtin(name: str, objects, doc: str = "", markers: tuple[str, ...] = ()):
    def register(lower):
        entry = Builtin(name, lower, doc or (lower.__doc__ or "").strip())
        for obj in objects:
            if obj is not None:
                _by_id[id(obj)] = (obj, entry)
        for marker in markers:
            _by_marker[marker] = entry
        return lower
    return register


def lookup(obj) -> Builtin | None:
    hit = _by_id.get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1]
    marker = getattr(obj, "__pysycl_builtin__", None) if isinstance(obj, type) else None
    return _by_marker.get(marker) if isinstance(marker, str) else None


def catalogue() -> dict[str, Builtin]:
    entries = {b.name: b for _o, b in _by_id.values()}
    entries.update({b.name: b for b in _by_marker.values()})
    return entries


def spellings(entry: Builtin) -> list[str]:
    """How kernel code may spell ``entry`` (``["math.sqrt", "np.sqrt", "sycl.math.sqrt"]``)."""
    found = {_spelling(obj) for obj, b in _by_id.values() if b is entry}
    found.update(m for m, b in _by_marker.items() if b is entry)
    return sorted(found)


def _spelling(obj) -> str:
    module = getattr(obj, "__module__", "") or ""
    name = getattr(obj, "__name__", repr(obj))
    if module == "builtins":
        return name
    if module in ("math", "cmath"):
        return f"{module}.{name}"
    if module.startswith("numpy"):
        return f"np.{name}"
    if module.endswith("sycl_math"):
        return f"sycl.math.{name}"
    return f"sycl.{name}"


def _args(lw, node, n: int | tuple, name: str, weak: bool = False) -> list:
    counts = n if isinstance(n, tuple) else (n,)
    if node.keywords:
        lw.error(node, f"{name}() takes no keyword arguments")
    if len(node.args) not in counts:
        lw.error(node, f"{name}() takes {' or '.join(map(str, counts))} argument(s), got {len(node.args)}")
    return [lw.wexpr(a) if weak else lw.expr(a) for a in node.args]


_weak = promo_type


# Math --------------------------------------------------------------------------------
# Functions where SYCL 2020 takes a scalar beside a vec (``fmin(genfloat x, sgenfloat y)``):
# the argument positions that may be scalars.
_SCALAR_BESIDE_VEC = {"fmin": (1,), "fmax": (1,), "mix": (2,), "step": (0,),
                      "smoothstep": (0, 1)}


def _math_operands(lw, node, name: str, nargs, ints: bool = True, args=None) -> list:
    """The arguments of float math function ``name`` as values of the type it computes
    in: a float keeps its precision, an integer computes in float64 (``ints``: else it is
    an error, as for SYCL's frexp); with a vec among them, that vec, element by element
    (``VecRules.vec_math_type``). ``args``: the arguments already lowered."""
    if args is None:
        args = [lw.operand(a, node) for a in _args(lw, node, nargs, name, weak=True)]
    ty = lw.vec_math_type(name, args, node, _SCALAR_BESIDE_VEC.get(name, ()))
    if ty is None:
        for a, arg in zip(args, node.args):
            if isinstance(a, Value) and not isinstance(a.type, T.ScalarType):
                lw.error(arg, f"{name}() takes scalars or float vecs, not {a.type}")
            if not ints and not _weak_is_float(a):
                lw.error(arg, f"{name}() takes a float, not {fv_type_name(a)}",
                         "convert it first: np.float64(n) or np.float32(n)")
        ty = math_result([_weak(a) for a in args])
    return [lw.coerce(a, ty, node) for a in args]


def _weak_is_float(a) -> bool:
    t = _weak(a)
    return t is float if isinstance(t, type) else t.is_float


def scalar_of(t: T.Type) -> T.ScalarType:
    return t.elem if isinstance(t, T.VecType) else t


def _truth_type(t: T.Type) -> T.Type:
    """What a predicate on ``t`` values gives in the IR: bool, or a vec of bools."""
    return T.VecType(T.BOOL, t.n) if isinstance(t, T.VecType) else T.BOOL


def _math_op(lw, name: str, args: list, node):
    """IR op ``math.<name>`` on same-typed float operands (a predicate gives bools)."""
    t = args[0].type
    return lw.value(f"math.{name}", args, _truth_type(t) if name in MATH_PREDICATES else t,
                    node=node)


def _relational(lw, truth: Value, t: T.Type, node):
    """A predicate's result as the user sees it: a bool, or for a vec SYCL's mask vec
    (-1/0 in the signed integer of the element's size)."""
    return lw.vec_mask(truth, t, node) if isinstance(t, T.VecType) else truth


def _math_rule(name: str, nargs: int):
    def lower(lw, node):
        args = [lw.operand(a, node) for a in _args(lw, node, nargs, name, weak=True)]
        if any(is_complex(a) for a in args):
            return lw.complex_math(name, args, node)   # complex_numbers.ComplexRules
        vals = _math_operands(lw, node, name, nargs, args=args)
        r = _math_op(lw, name, vals, node)
        return _relational(lw, r, vals[0].type, node) if name in MATH_PREDICATES else r
    return lower


def _spellings(name: str) -> list:
    np_name = sycl_math.NUMPY_NAMES.get(name, name)
    return [getattr(sycl_math, name), getattr(math, sycl_math.MATH_NAMES.get(name, name), None),
            getattr(np, np_name, None) if np_name is not None else None]


_VEC_NOTE = "; on a vec element by element"


def _complex_note(name: str) -> str:
    """What the math function ``name`` does with a complex argument (np.sin(z) ...)."""
    if name in COMPLEX_FUNCTIONS:
        return f"; of a complex z, IR op complex.{name}"
    if name == "pow":
        return "; with a complex side, z ** w"
    return "; of a complex z, NumPy's test of its parts" if name in MATH_PREDICATES else ""


for _name, _n in MATH_FUNCTIONS.items():
    add_builtin(f"math.{_name}", _spellings(_name),
                f"{_name}: IR op math.{_name}; float32 stays float32, integers compute in float64"
                + (", a vec gives a -1/0 mask vec" if _name in MATH_PREDICATES else _VEC_NOTE)
                + _complex_note(_name))(_math_rule(_name, _n))


def _float_operand(lw, node, name: str):
    """The one argument of ``name`` as a float value or float vec (integers compute in
    float64)."""
    return _math_operands(lw, node, name, 1)[0]


@add_builtin("math.ldexp", [sycl_math.ldexp, math.ldexp, np.ldexp])
def _ldexp(lw, node):
    """ldexp(x, n): IR op math.ldexp (x * 2**n, exactly; n as int32); a vec x takes an int
    vec of its length or one int for every element."""
    x, n = [lw.operand(a, node) for a in _args(lw, node, 2, "ldexp", weak=True)]
    vt = lw.vec_math_type("ldexp", [x], node)
    fx = lw.coerce(x, vt or math_result([_weak(x)]), node)
    nt = n.type if isinstance(n, Value) else None
    if isinstance(nt, T.VecType) and vt is None:
        lw.error(node.args[1], f"ldexp(): the exponent is a {nt} but x is a scalar",
                 "make x a vec of the same length")
    elem = nt.elem if isinstance(nt, T.VecType) else nt
    if elem is not None and not (isinstance(elem, T.ScalarType) and elem.is_int):
        lw.error(node.args[1], f"ldexp's exponent is an integer, not {nt}")
    if isinstance(n, Lit) and not isinstance(n.value, int):
        lw.error(node.args[1], f"ldexp's exponent is an integer, not Python {type(n.value).__name__}")
    if isinstance(nt, T.VecType) and nt.n != vt.n:
        lw.error(node.args[1], f"ldexp(): vec arguments of different lengths, {vt} and {nt}")
    kt = int32_like(fx.type)
    k = lw.cast(n, kt, node) if isinstance(nt, T.VecType) else lw.coerce(n, kt, node)
    return lw.value("math.ldexp", [fx, k], fx.type, node=node)


def _pair_rule(name: str, nargs: int):
    """frexp, lgamma_r, remquo: the IR op's (float, int32) pair as a Python tuple."""
    def lower(lw, node):
        vals = _math_operands(lw, node, name, nargs, ints=False)
        t = vals[0].type
        pair = lw.value(f"math.{name}", vals, T.TupleType((t, int32_like(t))), node=node)
        return TupleVal(tuple(lw.value("tuple.get", [pair], e, {"index": i}, node)
                              for i, e in enumerate(pair.type.elems)))
    return lower


add_builtin("math.frexp", [sycl_math.frexp, math.frexp, np.frexp],
            "frexp(x) -> (mantissa, exponent): IR op math.frexp; x == mantissa * 2**exponent "
            "with the mantissa's magnitude in [0.5, 1) (0, inf and NaN: x itself, exponent 0); "
            "the exponent is int32 (a vec of int32 for a vec)")(_pair_rule("frexp", 1))
add_builtin("math.lgamma_r", [sycl_math.lgamma_r],
            "lgamma_r(x) -> (lgamma(x), sign): IR op math.lgamma_r; sign is the int32 +-1 sign "
            "of tgamma(x) (a vec of int32 for a vec)")(_pair_rule("lgamma_r", 1))
add_builtin("math.remquo", [sycl_math.remquo],
            "remquo(x, y) -> (remainder(x, y), quo): IR op math.remquo; quo is an int32 with "
            "the sign of x / y and at least the 3 low bits of the rounded quotient, 0 where the "
            "remainder is NaN (a vec of int32 for vecs)")(_pair_rule("remquo", 2))


def _scale_rule(name: str, factor: float):
    def lower(lw, node):
        x = _float_operand(lw, node, name)
        return lw.value("mul", [x, lw.const(factor, x.type, node)], x.type, node=node)
    return lower


add_builtin("math.degrees", [sycl_math.degrees, math.degrees, np.degrees, np.rad2deg],
            "degrees(x): x * (180 / pi)")(_scale_rule("degrees", 180 / math.pi))
add_builtin("math.radians", [sycl_math.radians, math.radians, np.radians, np.deg2rad],
            "radians(x): x * (pi / 180)")(_scale_rule("radians", math.pi / 180))


def _select(lw, cond, a, b, node):
    return lw.value("select", [cond, a, b], a.type, node=node)


def _cmp(lw, pred: str, a, b, node):
    return lw.value("cmp", [a, b], _truth_type(a.type), {"pred": pred}, node=node)


@add_builtin("math.sign", [sycl_math.sign, np.sign])
def _sign(lw, node):
    """np.sign(x): 1, -1, 0 (NaN stays NaN), in x's type; a float vec element by element."""
    (x,) = [lw.operand(a, node) for a in _args(lw, node, 1, "sign", weak=True)]
    if lw.vec_math_type("sign", [x], node) is None:
        x = lw.materialize(x, node)
    if not isinstance(x.type, (T.ScalarType, T.VecType)):
        lw.error(node, f"sign() takes scalars or float vecs, not {x.type}")
    zero, one, minus = (lw.const(v, x.type, node) for v in (0, 1, -1))
    rest = _select(lw, _math_op(lw, "isnan", [x], node), x, zero, node) \
        if scalar_of(x.type).is_float else zero
    rest = _select(lw, _cmp(lw, "lt", x, zero, node), minus, rest, node)
    return _select(lw, _cmp(lw, "gt", x, zero, node), one, rest, node)


@add_builtin("math.signbit", [sycl_math.signbit, np.signbit])
def _signbit(lw, node):
    """signbit(x): whether x's sign bit is set (true for -0.0 and negative NaNs); a vec
    gives a -1/0 mask vec."""
    x = _float_operand(lw, node, "signbit")
    s = scalar_of(x.type)
    bits = {2: T.I16, 4: T.I32, 8: T.I64}[s.size]
    it = T.VecType(bits, x.type.n) if isinstance(x.type, T.VecType) else bits
    raw = lw.value("bitcast", [x], it, node=node)
    truth = _cmp(lw, "lt", raw, lw.const(0, it, node), node)
    return _relational(lw, truth, x.type, node)


@add_builtin("math.modf", [sycl_math.modf, math.modf, np.modf])
def _modf(lw, node):
    """modf(x) -> (fractional part, integral part), each with the sign of x; +-inf gives
    (+-0, +-inf), as C and Python do."""
    x = _float_operand(lw, node, "modf")
    whole = _math_op(lw, "trunc", [x], node)
    part = lw.value("sub", [x, whole], x.type, node=node)
    part = _select(lw, _math_op(lw, "isinf", [x], node), lw.const(0.0, x.type, node), part, node)
    return TupleVal((_math_op(lw, "copysign", [part, x], node), whole))


@add_builtin("math.sincos", [sycl_math.sincos])
def _sincos(lw, node):
    """sincos(x) -> (sin(x), cos(x))."""
    x = _float_operand(lw, node, "sincos")
    return TupleVal((_math_op(lw, "sin", [x], node), _math_op(lw, "cos", [x], node)))


@add_builtin("math.fract", [sycl_math.fract])
def _fract(lw, node):
    """fract(x) -> (min(x - floor(x), the float below 1), floor(x)); +-inf gives +-0 and
    NaN NaN, as OpenCL's fract."""
    x = _float_operand(lw, node, "fract")
    dtype = scalar_of(x.type).dtype
    below_one = float(np.nextafter(dtype.type(1), dtype.type(0)))
    floor = _math_op(lw, "floor", [x], node)
    diff = lw.value("sub", [x, floor], x.type, node=node)
    part = _math_op(lw, "fmin", [diff, lw.const(below_one, x.type, node)], node)
    zero = _math_op(lw, "copysign", [lw.const(0.0, x.type, node), x], node)
    part = _select(lw, _math_op(lw, "isnan", [x], node), x, part, node)   # fmin drops NaN
    return TupleVal((_select(lw, _math_op(lw, "isinf", [x], node), zero, part, node), floor))


# Geometric functions (SYCL 2020 4.17.8) --------------------------------------------------
def _geometric_operands(lw, node, name: str, nargs: int) -> list:
    """The arguments as one float type: a float scalar, or a float vec of 2 to 4
    elements (3 or 4 for cross)."""
    vals = _math_operands(lw, node, name, nargs)
    t = vals[0].type
    sizes = (3, 4) if name == "cross" else (2, 3, 4)
    if isinstance(t, T.VecType) and t.n not in sizes or \
            name == "cross" and not isinstance(t, T.VecType):
        lw.error(node, f"{name}() takes float vecs of {' or '.join(map(str, sizes))} elements"
                 + ("" if name == "cross" else " or float scalars") + f", not {t}")
    return vals


def _elements(lw, v, node) -> list:
    if not isinstance(v.type, T.VecType):
        return [v]
    return [lw.value("vec.get", [v, lw.const(i, T.I64, node)], v.type.elem, node=node)
            for i in range(v.type.n)]


def _dot(lw, a, b, node):
    elem = scalar_of(a.type)
    total = None
    for x, y in zip(_elements(lw, a, node), _elements(lw, b, node)):
        term = lw.value("mul", [x, y], elem, node=node)
        total = term if total is None else lw.value("add", [total, term], elem, node=node)
    return total


def _length(lw, p, node):
    if not isinstance(p.type, T.VecType):
        return _math_op(lw, "fabs", [p], node)
    return _math_op(lw, "sqrt", [_dot(lw, p, p, node)], node)


def _normalize(lw, p, node):
    """``p / length(p)``; a zero vec (or 0.0) stays as it is rather than becoming NaN."""
    n = _length(lw, p, node)
    zero = lw.const(0.0, n.type, node)
    safe = _select(lw, _cmp(lw, "eq", n, zero, node), lw.const(1.0, n.type, node), n, node)
    if isinstance(p.type, T.VecType):
        safe = lw.value("vec.make", [safe] * p.type.n, p.type, node=node)
    return lw.value("div", [p, safe], p.type, node=node)


def _cross(lw, a, b, node):
    elem = scalar_of(a.type)
    x, y = _elements(lw, a, node), _elements(lw, b, node)

    def term(i, j):   # x[i] * y[j] - x[j] * y[i]
        return lw.value("sub", [lw.value("mul", [x[i], y[j]], elem, node=node),
                                lw.value("mul", [x[j], y[i]], elem, node=node)], elem, node=node)
    items = [term(1, 2), term(2, 0), term(0, 1)]
    if a.type.n == 4:
        items.append(lw.const(0.0, elem, node))
    return lw.value("vec.make", items, a.type, node=node)


def _geometric_rule(name: str):
    nargs = 2 if name in ("dot", "cross", "distance", "fast_distance") else 1
    base = name.removeprefix("fast_")

    def lower(lw, node):
        vals = _geometric_operands(lw, node, name, nargs)
        if base == "dot":
            return _dot(lw, *vals, node)
        if base == "cross":
            return _cross(lw, *vals, node)
        if base == "length":
            return _length(lw, vals[0], node)
        if base == "distance":
            diff = lw.value("sub", vals, vals[0].type, node=node)
            return _length(lw, diff, node)
        return _normalize(lw, vals[0], node)
    return lower


_GEOMETRIC_DOCS = {
    "dot": "dot(p0, p1): the sum of the element products of two float vecs (of scalars, "
           "their product)",
    "cross": "cross(p0, p1): the cross product of two float vecs of 3 or 4 elements (the "
             "4th element of the result is 0)",
    "length": "length(p): sqrt(dot(p, p)) (of a scalar, its magnitude)",
    "distance": "distance(p0, p1): length(p0 - p1)",
    "normalize": "normalize(p): p / length(p); a zero vec stays zero",
}
for _name in sycl_math.GEOMETRIC:
    _base = _name.removeprefix("fast_")
    add_builtin(f"math.{_name}", [getattr(sycl_math, _name)],
                _GEOMETRIC_DOCS[_base] + (f" (as {_base})" if _name != _base else ""))(
        _geometric_rule(_name))


# Common functions (SYCL 2020 4.17.7) ------------------------------------------------------
@add_builtin("math.clamp", [sycl_math.clamp, np.clip])
def _clamp(lw, node):
    """clamp(x, minval, maxval) / np.clip: min(max(x, minval), maxval) with NumPy
    promotion (integers stay integers; a vec with scalar bounds)."""
    x, lo, hi = [lw.operand(a, node) for a in _args(lw, node, 3, "clamp", weak=True)]
    return lw.binop("min", lw.binop("max", x, lo, node), hi, node)


@add_builtin("math.mix", [sycl_math.mix])
def _mix(lw, node):
    """mix(x, y, a): x + (y - x) * a, in float (a may be a scalar beside vecs)."""
    x, y, a = _math_operands(lw, node, "mix", 3)
    diff = lw.value("sub", [y, x], x.type, node=node)
    return lw.value("add", [x, lw.value("mul", [diff, a], x.type, node=node)], x.type,
                    node=node)


@add_builtin("math.step", [sycl_math.step])
def _step(lw, node):
    """step(edge, x): 0.0 where x < edge, else 1.0 (edge may be a scalar beside a vec)."""
    edge, x = _math_operands(lw, node, "step", 2)
    return _select(lw, _cmp(lw, "lt", x, edge, node), lw.const(0.0, x.type, node),
                   lw.const(1.0, x.type, node), node)


@add_builtin("math.smoothstep", [sycl_math.smoothstep])
def _smoothstep(lw, node):
    """smoothstep(edge0, edge1, x): t * t * (3 - 2 t), t = clamp((x - edge0) / (edge1 -
    edge0), 0, 1) (the edges may be scalars beside a vec)."""
    e0, e1, x = _math_operands(lw, node, "smoothstep", 3)
    t_type = x.type

    def op(name, *args):
        return lw.value(name, list(args), t_type, node=node)
    t = op("div", op("sub", x, e0), op("sub", e1, e0))
    t = _math_op(lw, "fmin", [_math_op(lw, "fmax", [t, lw.const(0.0, t_type, node)], node),
                              lw.const(1.0, t_type, node)], node)
    three_less = op("sub", lw.const(3.0, t_type, node), op("mul", lw.const(2.0, t_type, node), t))
    return op("mul", op("mul", t, t), three_less)


def _relaxed_rules(space: str, ns) -> None:
    """``sycl.math.native.*`` / ``half_precision.*``: the full-accuracy ops (``cos``,
    ``powr``... are the sycl.math functions themselves; recip, divide and exp10 are
    their own)."""
    add_builtin(f"math.{space}.recip", [ns.recip], f"sycl.math.{space}.recip: 1 / x")(
        lambda lw, node: (lambda x: lw.value("div", [lw.const(1.0, x.type, node), x], x.type,
                                             node=node))(_float_operand(lw, node, "recip")))
    add_builtin(f"math.{space}.divide", [ns.divide], f"sycl.math.{space}.divide: x / y")(
        lambda lw, node: lw.binop("div", *[lw.operand(a, node) for a in
                                           _args(lw, node, 2, "divide", weak=True)], node))
    add_builtin(f"math.{space}.exp10", [ns.exp10], f"sycl.math.{space}.exp10: 10 ** x")(
        lambda lw, node: (lambda x: _math_op(lw, "pow", [lw.const(10.0, x.type, node), x],
                                             node))(_float_operand(lw, node, "exp10")))


_relaxed_rules("native", sycl_math.native)
_relaxed_rules("half_precision", sycl_math.half_precision)


@add_builtin("abs", [py.abs, np.abs, np.absolute])
def _abs(lw, node):
    """abs(x): IR op abs in x's type; of a complex z, IR op complex.abs (hypot of its
    parts, in their type)."""
    (x,) = [lw.operand(a, node) for a in _args(lw, node, 1, "abs", weak=True)]
    if isinstance(x, Lit):
        return Lit(abs(x.value))
    v = x.value if isinstance(x, Weak) else x
    if isinstance(v.type, T.ComplexType):
        r = lw.value("complex.abs", [v], v.type.elem, node=node)
    else:
        r = lw.value("abs", [v], v.type, node=node)
    return Weak(r) if isinstance(x, Weak) else r


def _minmax(op):
    def lower(lw, node):
        if node.keywords or len(node.args) < 2:
            lw.error(node, f"{op}() in kernel code takes two or more positional arguments")
        acc = lw.operand(lw.wexpr(node.args[0]), node)
        for a in node.args[1:]:
            b = lw.operand(lw.wexpr(a), node)
            if isinstance(acc, Weak) or isinstance(b, Weak) or is_complex(acc) or \
                    is_complex(b):
                acc = lw.binop(op, acc, b, node)  # NumPy promotion, Python numbers weak
                continue
            if isinstance(acc, Lit) and isinstance(b, Lit):
                acc = Lit(PY_OPS[op](acc.value, b.value))
                continue
            ty = lw.promote(op, _weak(acc), _weak(b), node)
            acc = lw.value(op, [lw.coerce(acc, ty, node), lw.coerce(b, ty, node)], ty, node=node)
        return acc
    return lower


add_builtin("min", [py.min, np.minimum], "min(a, b, ...): IR op min, NumPy promotion")(_minmax("min"))
add_builtin("max", [py.max, np.maximum], "max(a, b, ...): IR op max, NumPy promotion")(_minmax("max"))


# Conversions -------------------------------------------------------------------------
def _conversion(ty: T.ScalarType, pyconv=None):
    def lower(lw, node):
        args = _args(lw, node, (0, 1), pyconv.__name__ if pyconv else str(ty.dtype), weak=True)
        if not args:
            return Lit(pyconv()) if pyconv is not None else lw.const(0, ty, node)
        x = args[0]
        if pyconv is not None and isinstance(x, Lit):
            return Lit(pyconv(x.value))  # int(2.5) stays a weak Python literal, as in Python
        if ty.is_bool:
            return lw.truth(x, node)
        if isinstance(x, Lit):
            return lw.coerce(x, ty, node)
        v = lw.coerce(lw.operand(x, node), ty, node)
        # int(x) and float(x) are Python numbers (weak, int64/float64 storage), as in Python:
        # float(i) * x_f32 is float32. np.int64(x), np.float64(x) are strong.
        return Weak(v) if pyconv is not None else v
    return lower


add_builtin("int", [py.int], "int(x): a Python int (weak, int64 storage), truncating toward zero; "
            "int(literal) stays a weak literal")(_conversion(T.I64, int))
add_builtin("float", [py.float], "float(x): a Python float (weak, float64 storage)")(
    _conversion(T.F64, float))
add_builtin("bool", [py.bool], "bool(x): x != 0")(_conversion(T.BOOL, bool))
for _name, _st in T.SCALARS.items():
    add_builtin(f"np.{_st.dtype.name}", [_st.dtype.type],
                f"np.{_st.dtype.name}(x): convert like astype")(_conversion(_st))


@add_builtin("sycl.id", [], markers=("sycl.id", "sycl.range"))
def _index_tuple(lw, node):
    """sycl.id(i, j) / sycl.range(m, n): a tuple of int64 indices (acc[sycl.id(i, j)])."""
    if node.keywords or not 1 <= len(node.args) <= 3:
        lw.error(node, "sycl.id() and sycl.range() take 1 to 3 integer arguments")
    return TupleVal(tuple(lw.index_value(lw.expr(a), a) for a in node.args))


@add_builtin("len", [py.len])
def _len(lw, node):
    """len(x) of a fixed array, vec or tuple: a constant."""
    if len(node.args) != 1 or node.keywords:
        lw.error(node, "len() takes one argument")
    place = lw.place(node.args[0])
    if isinstance(place, TupleVal):
        return Lit(len(place.items))
    t = place.pointee if isinstance(place, Ptr) else getattr(place, "type", None)
    if isinstance(t, (T.ArrayType, T.VecType)):
        return Lit(t.n)
    if isinstance(t, T.TupleType):
        return Lit(len(t.elems))
    lw.error(node, "len() needs a fixed array, vec or tuple",
             "use acc.get_range(0) for an accessor's size")


def _loop_only(name):
    def lower(lw, node):
        lw.error(node, f"{name}() can only be used as the iterable of a for loop")
    return lower


add_builtin("range", [py.range], "for i in range(a, b, step): a for op; 1-3 integer arguments "
            "of any int type, negative steps allowed")(_loop_only("range"))
add_builtin("sycl.static_range", [kernel_api.static_range],
            "for i in sycl.static_range(n): a for op the compiler unrolls completely")(
    _loop_only("sycl.static_range"))


@add_builtin("sycl.private_array", [kernel_api.private_array])
def _private_array(lw, node):
    """a = sycl.private_array(dtype, n): a per-work-item array of n elements (n constant)."""
    lw.error(node, "sycl.private_array(dtype, n) must be assigned directly to a local name")


@add_builtin("sycl.get_spec_constant", [kernel_api.get_spec_constant])
def _get_spec_constant(lw, node):
    """sycl.get_spec_constant(p): the value of a sycl.spec_constant[T] parameter, as p.get()
    (IR op spec.get)."""
    p = _args(lw, node, 1, "get_spec_constant")[0]
    if not isinstance(p, SpecPlaceholder):
        lw.error(node.args[0], "get_spec_constant takes a sycl.spec_constant[T] parameter")
    decl = lw.session.use_spec_constant(p.spec_id, lw.src, node)
    return lw.value("spec.get", [], decl.type, {"id": decl.unique_id}, node)


# Groups and atomics --------------------------------------------------------------------
def _group(lw, fv, node) -> GroupHandle:
    if not isinstance(fv, GroupHandle):
        lw.error(node, "expected a group: nd.get_group() or nd.get_sub_group()")
    return fv


@add_builtin("sycl.group_barrier", [kernel_api.group_barrier])
def _group_barrier(lw, node):
    """group_barrier(g): IR op barrier {scope}."""
    g = _group(lw, _args(lw, node, 1, "group_barrier")[0], node)
    lw.emit("barrier", [], attrs={"scope": g.scope}, node=node)
    return Obj(None)


def operator_name(lw, fv, ty, node) -> str:
    """The IR name of a function object given in kernel code (``sycl.plus()``) that
    combines ``ty`` values; a compile error names what is wrong."""
    op = functional.as_operator(fv.value) if isinstance(fv, Obj) else None
    if op is None:
        lw.error(node, "the operator must be a SYCL function object such as sycl.plus()",
                 "sycl.plus, multiplies, minimum, maximum, bit_and, bit_or, bit_xor, "
                 "logical_and, logical_or")
    s = ty.elem if isinstance(ty, T.VecType) else ty
    if not isinstance(s, (T.ScalarType, T.ComplexType)):
        lw.error(node, f"group operators combine numbers or vecs, not {ty}")
    problem = functional.operand_problem(op, s.dtype)     # complex: plus and multiplies
    if problem:
        lw.error(node, problem)
    return op.ir_name


ATOMIC_TYPES = frozenset({T.I32, T.I64, T.U32, T.U64, T.F32, T.F64})


def _enum_attr(lw, fv, enum_cls, node, default) -> str:
    if fv is None:
        return default.value
    if isinstance(fv, Obj) and isinstance(fv.value, enum_cls):
        return fv.value.value
    lw.error(node, f"expected a sycl.{enum_cls.__name__} member")


@add_builtin("sycl.atomic_ref", [kernel_api.atomic_ref])
def _atomic_ref(lw, node, template=None):
    """atomic_ref(acc_or_ptr, index, order=, scope=), atomic_ref(acc[i]), or
    atomic_ref[T, order, scope, space](acc[i]) (``template``: those parameters)."""
    kw = {k.arg: lw.expr(k.value) for k in node.keywords}
    unknown = set(kw) - {"order", "scope", "space"}
    if unknown or not 1 <= len(node.args) <= 5 or template and (kw or len(node.args) != 1):
        lw.error(node, "use sycl.atomic_ref(acc_or_ptr, index, order=..., scope=..., "
                 "space=...) or sycl.atomic_ref[T, order, scope, space](acc[i])")
    # order, scope and address space may also come positionally, after the index (the
    # C++ template parameters' order).
    for key, arg in zip(("order", "scope", "space"), node.args[2:]):
        if key in kw:
            lw.error(arg, f"atomic_ref got {key} twice")
        kw[key] = lw.expr(arg)
    if len(node.args) >= 2:
        place = lw.place(_synthetic_subscript(node), write=True)
    else:
        place = lw.place(node.args[0], write=True)
    if not isinstance(place, Ptr):
        lw.error(node.args[0], "atomic_ref needs an accessor, a USM pointer or a device_global element")
    if place.readonly:
        lw.error(node.args[0], f"cannot use atomic_ref on read_only accessor '{place.readonly}'")
    if place.pointee not in ATOMIC_TYPES:
        lw.error(node, f"atomic_ref does not support {type_name(place.pointee)}; use int32, "
                 "int64, uint32, uint64, float32 or float64")
    if template is not None:
        return _templated(lw, node, place, template)
    order = _enum_attr(lw, kw.get("order"), memory_order, node, memory_order.relaxed)
    scope = _enum_attr(lw, kw.get("scope"), memory_scope, node, memory_scope.device)
    if "space" in kw:
        space = kw["space"].value if isinstance(kw["space"], Obj) else None
        _check_space(lw, node, place, space)
    return AtomicHandle(place.value, place.pointee, order, scope)


def _check_space(lw, node, place, space) -> None:
    """The address space an atomic_ref names must be where its object lives (generic
    matches any), as C++ would check at compile time."""
    have = getattr(place.value.type, "space", None)
    if not isinstance(space, address_space):
        lw.error(node, "an atomic_ref's address space is a sycl.access.address_space")
    if space is not address_space.generic_space and have is not None and space.value != have:
        lw.error(node, f"atomic_ref[..., {space.name}] refers to {have} memory")


def atomic_ref_template(lw, node, params) -> AtomicHandle:
    """``sycl.atomic_ref[T, order, scope, space](ref)`` (called by the call rules, which
    see the subscript)."""
    return _atomic_ref(lw, node, params)


def _templated(lw, node, place, params) -> AtomicHandle:
    """``atomic_ref[T, order, scope(, space)]``: T must be the referenced element's type
    and space (when given) where it lives, as C++ would check at compile time."""
    if not 3 <= len(params) <= 4:
        lw.error(node.func, "atomic_ref takes [T, order, scope] or [T, order, scope, space]")
    try:
        want = T.type_from_dtype(as_dtype(params[0]))
    except (TypeError, ValueError, exception):
        lw.error(node.func, f"{params[0]!r} is not an element type")
    if want != place.pointee:
        lw.error(node.func, f"atomic_ref[{type_name(want)}, ...] refers to a "
                 f"{type_name(place.pointee)} element")
    if not isinstance(params[1], memory_order) or not isinstance(params[2], memory_scope):
        lw.error(node.func, "atomic_ref[T, order, scope]: order is a sycl.memory_order, scope "
                 "a sycl.memory_scope")
    if len(params) == 4:
        if not isinstance(params[3], address_space):
            lw.error(node.func, "the fourth parameter is a sycl.access.address_space")
        _check_space(lw, node.func, place, params[3])
    return AtomicHandle(place.value, place.pointee, params[1].value, params[2].value)


@add_builtin("sycl.atomic_fence", [kernel_api.atomic_fence])
def _atomic_fence(lw, node):
    """atomic_fence(order, scope): IR op atomic.fence {order, scope}."""
    order, scope = _args(lw, node, 2, "atomic_fence")
    lw.emit("atomic.fence", [], attrs={
        "order": _enum_attr(lw, order, memory_order, node.args[0], None),
        "scope": _enum_attr(lw, scope, memory_scope, node.args[1], None)}, node=node)
    return Obj(None)


def _synthetic_subscript(node):
    import ast
    sub = ast.Subscript(value=node.args[0], slice=node.args[1], ctx=ast.Load())
    return ast.copy_location(sub, node.args[0])


for _cls in functional.OPERATORS.values():
    add_builtin(f"sycl.{_cls.__name__}", [_cls],
                f"sycl.{_cls.__name__}(): function object of group algorithms and reducers "
                f"(op={_cls.ir_name})")(
        lambda lw, node, c=_cls: (_args(lw, node, 0, c.__name__), Obj(c()))[1])
