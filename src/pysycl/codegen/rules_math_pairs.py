"""Math functions with a second, integer result: ``math.frexp``, ``math.lgamma_r`` and
``math.remquo``. C returns the integer through a pointer argument; the IR op's result is
the tuple (float, i32), vectors of both for a vector operand.

A target computes them in its ``math`` hook (returning the pair) or leaves them to the
defaults here: ``llvm.frexp`` and the C library's ``lgamma_r`` / ``remquo`` (the native
CPU). The helpers (:func:`out_arg_call`, :func:`lgamma_sign`) serve the targets' hooks.
"""
from __future__ import annotations

from llvmlite import ir as ll

from ..ir.ops import MATH_PAIRS
from . import types as lt
from .context import rule
from .rules_scalar import declare_overloaded, intrinsic, per_lane


def int32_like(t: ll.Type) -> ll.Type:
    """i32 in the shape of the LLVM type ``t`` (a vector of i32 for a vector)."""
    return ll.VectorType(lt.I32, t.count) if isinstance(t, ll.VectorType) else lt.I32


def _const(t: ll.Type, value):
    if isinstance(t, ll.VectorType):
        return ll.Constant(t, [ll.Constant(t.element, value)] * t.count)
    return ll.Constant(t, value)


def out_arg_call(ctx, symbol: str, args: list, calling_convention: str = ""):
    """``symbol(*args, &k)`` of a C-style function that stores an int (of the shape of
    ``args[0]``) through its last argument: returns (its result, k). ``k`` lives in an
    entry-block alloca, in the target's private address space."""
    ty = args[0].type
    ity = int32_like(ty)
    slot = ctx.alloca(ity, name=f"{symbol}.out")
    ctx.builder.store(_const(ity, 0), slot)     # what a function that stores nothing gives
    fn = ctx.llmodule.globals.get(symbol)
    if fn is None:
        fn = ll.Function(ctx.llmodule, ll.FunctionType(ty, [a.type for a in args] + [slot.type]),
                         symbol)
        if calling_convention:
            fn.calling_convention = calling_convention
        fn.attributes.add("nounwind")
    return ctx.builder.call(fn, [*args, slot]), ctx.builder.load(slot)


def scalar_out_arg_call(ctx, symbols: tuple[str, str], args: list):
    """:func:`out_arg_call` of ``symbols`` = (float name, double name), element by
    element for vectors, half through float."""
    b, ty = ctx.builder, args[0].type
    if isinstance(ty, ll.VectorType):
        return per_lane(ctx, lambda *xs: scalar_out_arg_call(ctx, symbols, list(xs)), args)
    if isinstance(ty, ll.HalfType):
        value, k = scalar_out_arg_call(ctx, symbols, [b.fpext(a, ll.FloatType()) for a in args])
        return b.fptrunc(value, ty), k
    return out_arg_call(ctx, symbols[0] if isinstance(ty, ll.FloatType) else symbols[1], args)


def lgamma_sign(ctx, x: ll.Value) -> ll.Value:
    """The sign of tgamma(x) as i32 +-1 (vectors lane by lane), as C's ``lgamma_r``
    stores it: -1 for -0 and for a negative non-integer whose floor is odd (tgamma
    changes sign at every pole), +1 elsewhere (poles, infinities and NaN included)."""
    b, ty = ctx.builder, x.type
    zero, half = _const(ty, 0.0), _const(ty, 0.5)
    fl = intrinsic(ctx, "floor", [x])
    h = b.fmul(fl, half)                       # exact: floor(x) is an integer
    odd = b.fcmp_ordered("!=", intrinsic(ctx, "floor", [h]), h)
    between_poles = b.and_(b.fcmp_ordered("<", x, zero), b.fcmp_ordered("!=", fl, x))
    one = _const(ty, 1.0)
    minus_zero = b.and_(b.fcmp_ordered("==", x, zero),
                        b.fcmp_ordered("<", intrinsic(ctx, "copysign", [one, x]), zero))
    negative = b.or_(b.and_(between_poles, odd), minus_zero)
    ity = int32_like(ty)
    return b.select(negative, _const(ity, -1), _const(ity, 1))


def _frexp(ctx, args):
    x = args[0]
    if isinstance(x.type, ll.VectorType):
        # Lane by lane: LLVM 22's x86 backend asserts widening a vector frexp whose
        # exponent vector is narrower than a register ({<2 x double>, <2 x i32>}).
        return per_lane(ctx, lambda lane: _frexp(ctx, [lane]), args)
    ity = int32_like(x.type)
    fn = declare_overloaded(
        ctx, "llvm.frexp", [x.type, ity],
        ll.FunctionType(ll.LiteralStructType([x.type, ity]), [x.type]))
    pair = ctx.builder.call(fn, [x])
    return ctx.builder.extract_value(pair, 0), ctx.builder.extract_value(pair, 1)


# The C library's names (float, double).
LIBM_PAIRS = {"lgamma_r": ("lgammaf_r", "lgamma_r"), "remquo": ("remquof", "remquo")}
_DEFAULTS = {"frexp": _frexp,
             **{n: (lambda ctx, args, s=s: scalar_out_arg_call(ctx, s, args))
                for n, s in LIBM_PAIRS.items()}}


def _pair_rule(name: str):
    def lower_math_pair(ctx, op):
        args = [ctx.get(v) for v in op.operands]
        pair = ctx.lowering.math(ctx, name, args, op.type)
        value, k = pair if pair is not None else _DEFAULTS[name](ctx, args)
        b = ctx.builder
        if name == "frexp":
            # C leaves the exponent of an infinity or NaN unspecified; Python's and
            # NumPy's frexp give 0, and so does every target here.
            x = args[0]
            finite = b.fcmp_ordered("!=", intrinsic(ctx, "fabs", [x]), _const(x.type, float("inf")))
            k = b.select(finite, k, _const(k.type, 0))
        elif name == "remquo":
            # Nor is the quotient defined where the remainder is NaN (x infinite, y 0
            # or NaN); every target gives 0 there.
            k = b.select(b.fcmp_unordered("uno", value, value), _const(k.type, 0), k)
        agg = ll.Constant(ctx.vtype(op.type), ll.Undefined)
        return b.insert_value(b.insert_value(agg, value, 0), k, 1)
    lower_math_pair.__name__ = f"lower_math_{name}"
    return lower_math_pair


for _name in MATH_PAIRS:
    rule(f"math.{_name}")(_pair_rule(_name))
