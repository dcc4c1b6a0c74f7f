"""Rules for constants, arithmetic, comparisons, conversions and math, on scalars and
``vec`` values alike (LLVM instructions accept vectors, so every rule here does too).

Semantics are NumPy's: integers wrap; ``//`` and ``%`` floor like
Python and never trap (x86 ``idiv`` traps on ``/0`` and ``MIN/-1``, which would kill the
process, so those give NumPy's 0 / wrapped results instead); shifts by the bit width or
more give NumPy's results; float32 stays float32.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as ll

from ..ir.ops import MATH_FUNCTIONS, MATH_PREDICATES
from ..ir.types import ArrayType, ComplexType, ScalarType, StructType, TupleType, Type, VecType
from . import types as lt
from .context import LoweringContext, rule


def scalar_of(t: Type) -> ScalarType:
    return t.elem if isinstance(t, VecType) else t


def const(ctx: LoweringContext, t: Type, value) -> ll.Constant:
    """An LLVM constant of IR type ``t`` in register form (splat for vectors)."""
    lltype = ctx.vtype(t)
    if isinstance(t, VecType):
        return ll.Constant(lltype, [const(ctx, t.elem, value)] * t.n)
    if isinstance(t, ComplexType):
        z = complex(value)
        return ll.Constant(lltype, [const(ctx, t.elem, z.real), const(ctx, t.elem, z.imag)])
    s = scalar_of(t)
    if s.is_float:
        return ll.Constant(lltype, float(value))
    if s.is_bool:
        return ll.Constant(lltype, int(bool(value)))
    # Wrap to the type like NumPy, then print as the signed two's-complement value.
    return ll.Constant(lltype, int(np.array(value).astype(s.dtype).view(f"i{s.size}")))


def const_from_bytes(ctx: LoweringContext, t: Type, data: bytes) -> ll.Constant:
    if isinstance(t, ScalarType):
        v = np.frombuffer(data[:t.size], dtype=t.dtype)[0]
        return ll.Constant(ctx.mtype(t), float(v) if t.is_float else int(v))
    if isinstance(t, VecType):
        return ll.Constant(ctx.mtype(t), [const_from_bytes(ctx, t.elem, data[i * t.elem.size:])
                                          for i in range(t.n)])
    if isinstance(t, ComplexType):
        return const(ctx, t, np.frombuffer(data[:t.size], dtype=t.dtype)[0])
    if isinstance(t, ArrayType):
        n = t.elem.size
        return ll.Constant(ctx.mtype(t), [const_from_bytes(ctx, t.elem, data[i * n:(i + 1) * n])
                                          for i in range(t.n)])
    if isinstance(t, StructType):
        llt = ctx.mtype(t)
        elems, pos = [], 0
        fields = sorted(t.fields, key=lambda f: f.offset)
        for e in llt.elements:
            if fields and pos == fields[0].offset:
                f = fields.pop(0)
                elems.append(const_from_bytes(ctx, f.type, data[f.offset:f.offset + f.type.size]))
                pos += f.type.size
            else:
                elems.append(ll.Constant(e, bytearray(data[pos:pos + e.count])))
                pos += e.count
        return ll.Constant(llt, elems)
    raise TypeError(f"no constant of type {t}")


@rule("const")
def lower_const(ctx, op):
    v = op.attrs["value"]
    if isinstance(v, (bytes, bytearray)):
        if isinstance(op.type, TupleType):
            raise ctx.error(op, "tuple constants must be built with tuple.make")
        c = const_from_bytes(ctx, op.type, bytes(v))
        return ctx.to_value(c, op.type) if isinstance(op.type, ScalarType) else c
    return const(ctx, op.type, v)


# Binary arithmetic -------------------------------------------------------------------
def _coerce(ctx, op):
    """Operands converted to the result type (``div`` of ints gives a float)."""
    return [convert(ctx, ctx.get(v), v.type, op.type) for v in op.operands]


_INT_BINOPS = {"add": "add", "sub": "sub", "mul": "mul", "and": "and_", "or": "or_", "xor": "xor"}
_FLOAT_BINOPS = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}


def partwise(ctx, op):
    """``add``, ``sub`` and ``neg`` of complex numbers: the float op on each part."""
    bld, flags = ctx.builder, ctx.lowering.float_flags
    z = ll.Constant(ctx.vtype(op.type), ll.Undefined)
    for k in (0, 1):
        parts = [bld.extract_value(ctx.get(v), k) for v in op.operands]
        part = bld.fneg(*parts) if op.name == "neg" else \
            getattr(bld, _FLOAT_BINOPS[op.name])(*parts, flags=flags)
        z = bld.insert_value(z, part, k)
    return z


@rule("add", "sub", "mul", "and", "or", "xor")
def lower_simple_binop(ctx, op):
    if isinstance(op.type, ComplexType):
        return partwise(ctx, op)
    a, b = _coerce(ctx, op)
    s = scalar_of(op.type)
    if s.is_float:
        if op.name not in _FLOAT_BINOPS:
            raise ctx.error(op, f"{op.name} is not defined on {op.type}")
        flags = ctx.lowering.float_flags
        if op.attrs.get("reassoc"):
            flags = flags + ctx.lowering.reassoc_flags
        elif op.name in ("add", "sub"):
            fused = _mul_add(ctx, op, a, b)
            if fused is not None:
                return fused
        return getattr(ctx.builder, _FLOAT_BINOPS[op.name])(a, b, flags=flags)
    return getattr(ctx.builder, _INT_BINOPS[op.name])(a, b)


def _mul_add(ctx, op, a, b):
    """``x * y + c``, ``c + x * y``, ``x * y - c`` or ``c - x * y`` through the target's
    ``mul_add`` where it contracts expressions (``TargetLowering.contract_expressions``);
    None when it does not, or no operand is a product of this expression. The product
    must be this op's operand directly and used nowhere else: one expression, as
    OpenCL C contracts; a product kept in a variable stays rounded."""
    if not ctx.lowering.contract_expressions:
        return None
    for side, v in enumerate(op.operands):
        m = v.owner
        if m is None or m.name != "mul" or m.type != op.type or m.attrs.get("reassoc"):
            continue
        prod = (a, b)[side]
        if not (isinstance(prod, ll.Instruction) and prod.opname == "fmul") \
                or ctx.use_count(v) != 1:
            continue
        x, y = prod.operands
        c = (a, b)[1 - side]
        if op.name == "sub":
            if side == 0:
                c = ctx.builder.fneg(c)       # x*y - c = x*y + (-c), exactly
            else:
                x = ctx.builder.fneg(x)       # c - x*y = (-x)*y + c, exactly
        return ctx.lowering.mul_add(ctx, x, y, c)
    return None


@rule("div")
def lower_div(ctx, op):
    if not scalar_of(op.type).is_float:
        raise ctx.error(op, f"true division must have a float result, not {op.type}")
    a, b = _coerce(ctx, op)
    return ctx.builder.fdiv(a, b)


def _safe_divisor(ctx, a, b, t):
    """(divisor with 0 and -1 replaced by 1, b == 0, b == -1 (signed only))."""
    bld = ctx.builder
    zero, one = const(ctx, t, 0), const(ctx, t, 1)
    is_zero = bld.icmp_unsigned("==", b, zero)
    bad = is_zero
    is_m1 = None
    if scalar_of(t).is_signed:
        is_m1 = bld.icmp_signed("==", b, const(ctx, t, -1))
        bad = bld.or_(is_zero, is_m1)
    return bld.select(bad, one, b), is_zero, is_m1


def int_floordiv_mod(ctx, a, b, t):
    """Python floor division and modulo for integers; NumPy gives 0 for a zero divisor."""
    bld, zero = ctx.builder, const(ctx, t, 0)
    d, is_zero, is_m1 = _safe_divisor(ctx, a, b, t)
    if not scalar_of(t).is_signed:
        q, r = bld.udiv(a, d), bld.urem(a, d)
        return bld.select(is_zero, zero, q), bld.select(is_zero, zero, r)
    q, r = bld.sdiv(a, d), bld.srem(a, d)
    # floor: when the remainder is non-zero and its sign differs from b's, step down.
    adjust = bld.and_(bld.icmp_signed("!=", r, zero),
                      bld.icmp_signed("<", bld.xor(r, b), zero))
    q = bld.select(adjust, bld.sub(q, const(ctx, t, 1)), q)
    r = bld.select(adjust, bld.add(r, b), r)
    q = bld.select(is_m1, bld.sub(zero, a), q)         # MIN // -1 wraps to MIN, like NumPy
    r = bld.select(is_m1, zero, r)
    return bld.select(is_zero, zero, q), bld.select(is_zero, zero, r)


def float_floordiv_mod(ctx, a, b, t):
    """NumPy's ``npy_divmod`` (numpy/_core/src/npymath/npy_math_internal.h.src)."""
    bld = ctx.builder
    zero, one, half = const(ctx, t, 0.0), const(ctx, t, 1.0), const(ctx, t, 0.5)
    mod = bld.frem(a, b)
    div = bld.fdiv(bld.fsub(a, mod), b)
    sign_differs = bld.icmp_unsigned("!=", bld.fcmp_ordered("<", b, zero),
                                     bld.fcmp_ordered("<", mod, zero))
    adjust = bld.and_(bld.fcmp_unordered("!=", mod, zero), sign_differs)
    mod = bld.select(adjust, bld.fadd(mod, b), mod)
    div = bld.select(adjust, bld.fsub(div, one), div)
    mod = bld.select(bld.fcmp_ordered("==", mod, zero), intrinsic(ctx, "copysign", [zero, b]), mod)
    floordiv = intrinsic(ctx, "floor", [div])
    floordiv = bld.select(bld.fcmp_ordered(">", bld.fsub(div, floordiv), half),
                          bld.fadd(floordiv, one), floordiv)
    floordiv = bld.select(bld.fcmp_ordered("==", div, zero),
                          intrinsic(ctx, "copysign", [zero, bld.fdiv(a, b)]), floordiv)
    b_zero = bld.fcmp_ordered("==", b, zero)
    floordiv = bld.select(b_zero, bld.fdiv(a, b), floordiv)
    mod = bld.select(b_zero, bld.frem(a, b), mod)
    return floordiv, mod


@rule("floordiv", "mod")
def lower_floordiv_mod(ctx, op):
    a, b = _coerce(ctx, op)
    fn = float_floordiv_mod if scalar_of(op.type).is_float else int_floordiv_mod
    q, r = fn(ctx, a, b, op.type)
    return q if op.name == "floordiv" else r


@rule("pow")
def lower_pow(ctx, op):
    a, b = _coerce(ctx, op)
    if scalar_of(op.type).is_float:
        return intrinsic(ctx, "pow", [a, b])
    if isinstance(op.type, VecType):
        raise ctx.error(op, "integer ** on vec values is not supported")
    return ctx.builder.call(_ipow_function(ctx, op.type), [a, b])


def _ipow_function(ctx, t: ScalarType) -> ll.Function:
    """Exponentiation by squaring; a negative exponent gives 0 (NumPy raises instead)."""
    name = f"__pysycl_ipow_{t.name}"
    if name in ctx.llmodule.globals:
        return ctx.llmodule.globals[name]
    llt = ctx.vtype(t)
    fn = ll.Function(ctx.llmodule, ll.FunctionType(llt, [llt, llt]), name)
    fn.linkage = "internal"
    base, exp = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    loop, body, done = (fn.append_basic_block(n) for n in ("loop", "body", "done"))
    b.branch(loop)
    b.position_at_end(loop)
    acc = b.phi(llt); x = b.phi(llt); e = b.phi(llt)
    zero, one = ll.Constant(llt, 0), ll.Constant(llt, 1)
    acc.add_incoming(one, fn.blocks[0]); x.add_incoming(base, fn.blocks[0])
    e.add_incoming(exp, fn.blocks[0])
    cmp = b.icmp_signed if t.is_signed else b.icmp_unsigned
    b.cbranch(cmp(">", e, zero), body, done)
    b.position_at_end(body)
    odd = b.icmp_unsigned("!=", b.and_(e, one), zero)
    acc2 = b.select(odd, b.mul(acc, x), acc)
    acc.add_incoming(acc2, body); x.add_incoming(b.mul(x, x), body)
    e.add_incoming(b.lshr(e, one), body)
    b.branch(loop)
    b.position_at_end(done)
    neg = b.icmp_signed("<", exp, zero) if t.is_signed else ll.Constant(lt.I1, 0)
    b.ret(b.select(neg, zero, acc))
    return fn


@rule("min", "max")
def lower_min_max(ctx, op):
    # Python's min(a, b) is ``b if b < a else a`` (and max with >): NaN handling follows.
    a, b = _coerce(ctx, op)
    pred = "<" if op.name == "min" else ">"
    return ctx.builder.select(compare(ctx, pred, b, a, scalar_of(op.type)), b, a)


@rule("shl", "shr")
def lower_shift(ctx, op):
    a, b = _coerce(ctx, op)
    s, bld = scalar_of(op.type), ctx.builder
    bits = const(ctx, op.type, s.bits)
    in_range = bld.icmp_unsigned("<", b, bits)
    if op.name == "shr" and s.is_signed:
        # NumPy: a >> n for n >= bits is the sign fill, i.e. a >> (bits-1).
        return bld.ashr(a, bld.select(in_range, b, const(ctx, op.type, s.bits - 1)))
    shifted = bld.shl(a, b) if op.name == "shl" else bld.lshr(a, b)
    return bld.select(in_range, shifted, const(ctx, op.type, 0))


@rule("neg")
def lower_neg(ctx, op):
    if isinstance(op.type, ComplexType):
        return partwise(ctx, op)
    a = ctx.get(op.operands[0])
    if scalar_of(op.type).is_float:
        return ctx.builder.fneg(a)
    return ctx.builder.sub(const(ctx, op.type, 0), a)


@rule("not")
def lower_not(ctx, op):
    a = ctx.get(op.operands[0])
    return ctx.builder.xor(a, const(ctx, op.type, 1 if scalar_of(op.type).is_bool else -1))


@rule("abs")
def lower_abs(ctx, op):
    a, s = ctx.get(op.operands[0]), scalar_of(op.type)
    if s.is_float:
        return intrinsic(ctx, "fabs", [a])
    if not s.is_signed:
        return a
    neg = ctx.builder.icmp_signed("<", a, const(ctx, op.type, 0))
    return ctx.builder.select(neg, ctx.builder.sub(const(ctx, op.type, 0), a), a)


# Comparisons, conversions, select ----------------------------------------------------
_PREDS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def compare(ctx, pred: str, a, b, s: ScalarType):
    bld = ctx.builder
    if s.is_float:  # ordered, except != which is true for NaN like Python
        return bld.fcmp_unordered(pred, a, b) if pred == "!=" else bld.fcmp_ordered(pred, a, b)
    return (bld.icmp_signed if s.is_signed else bld.icmp_unsigned)(pred, a, b)


@rule("bitcast")
def lower_bitcast(ctx, op):
    return ctx.builder.bitcast(ctx.get(op.operands[0]), ctx.vtype(op.type))


@rule("cmp")
def lower_cmp(ctx, op):
    a, b = ctx.operands(op)
    return compare(ctx, _PREDS[op.attrs["pred"]], a, b, scalar_of(op.operands[0].type))


def convert(ctx, v, src: Type, dst: Type):
    """NumPy ``astype`` between scalar (or same-length vec) types."""
    if src == dst:
        return v
    s, d, bld, llt = scalar_of(src), scalar_of(dst), ctx.builder, ctx.vtype(dst)
    if d.is_bool:
        if s.is_float:
            return bld.fcmp_unordered("!=", v, const(ctx, src, 0.0))
        return bld.icmp_unsigned("!=", v, const(ctx, src, 0))
    if s.is_bool:
        return bld.uitofp(v, llt) if d.is_float else bld.zext(v, llt)
    if s.is_float and d.is_float:
        return bld.fpext(v, llt) if d.size > s.size else bld.fptrunc(v, llt)
    if s.is_float:
        return bld.fptosi(v, llt) if d.is_signed else bld.fptoui(v, llt)
    if d.is_float:
        return bld.sitofp(v, llt) if s.is_signed else bld.uitofp(v, llt)
    if d.bits < s.bits:
        return bld.trunc(v, llt)
    if d.bits > s.bits:
        return bld.sext(v, llt) if s.is_signed else bld.zext(v, llt)
    return v


@rule("cast")
def lower_cast(ctx, op):
    (v,) = op.operands
    if isinstance(v.type, VecType) and isinstance(op.type, ScalarType):
        raise ctx.error(op, f"cannot cast {v.type} to {op.type}")
    if isinstance(op.type, VecType) and isinstance(v.type, ScalarType):
        s = convert(ctx, ctx.get(v), v.type, op.type.elem)
        return splat(ctx, s, op.type)
    return convert(ctx, ctx.get(v), v.type, op.type)


def select_fields(b: ll.IRBuilder, cond, x, y):
    """``cond ? x : y``; a struct value (a complex number) field by field: the SPIR-V
    backend cannot lower a ``select`` of a struct ("illegal aggregate intrinsic user")."""
    if not isinstance(x.type, ll.LiteralStructType):
        return b.select(cond, x, y)
    z = ll.Constant(x.type, ll.Undefined)
    for k in range(len(x.type.elements)):
        z = b.insert_value(z, b.select(cond, b.extract_value(x, k), b.extract_value(y, k)), k)
    return z


@rule("select")
def lower_select(ctx, op):
    return select_fields(ctx.builder, *ctx.operands(op))


def splat(ctx, scalar, t: VecType):
    vec = ll.Constant(ctx.vtype(t), ll.Undefined)
    for i in range(t.n):
        vec = ctx.builder.insert_element(vec, scalar, ll.Constant(lt.I32, i))
    return vec


# Math ----------------------------------------------------------------------------------
_INTRINSICS = {"fabs": "llvm.fabs", "sqrt": "llvm.sqrt", "exp": "llvm.exp", "exp2": "llvm.exp2",
               "log": "llvm.log", "log2": "llvm.log2", "log10": "llvm.log10",
               "sin": "llvm.sin", "cos": "llvm.cos", "tan": "llvm.tan", "asin": "llvm.asin",
               "acos": "llvm.acos", "atan": "llvm.atan", "sinh": "llvm.sinh",
               "cosh": "llvm.cosh", "tanh": "llvm.tanh", "floor": "llvm.floor",
               "ceil": "llvm.ceil", "trunc": "llvm.trunc",
               # Python round() and np.round round half to even.
               "round": "llvm.roundeven", "pow": "llvm.pow", "atan2": "llvm.atan2",
               "fmin": "llvm.minnum", "fmax": "llvm.maxnum", "copysign": "llvm.copysign",
               "fma": "llvm.fma"}


def _overload_suffix(t: ll.Type) -> str:
    # llvmlite's own (``intrinsic_name``) knows no vector types: ``v4f32``.
    if isinstance(t, ll.VectorType):
        return f"v{t.count}{t.element.intrinsic_name}"
    return t.intrinsic_name


def declare_overloaded(ctx, base: str, overloads: list, fnty: ll.FunctionType) -> ll.Function:
    """The LLVM intrinsic ``base`` at the overload types ``overloads`` (scalars or
    vectors): ``llvm.sqrt.v4f32``, ``llvm.ldexp.f64.i32``."""
    name = ".".join([base, *map(_overload_suffix, overloads)])
    fn = ctx.llmodule.globals.get(name)
    return fn if fn is not None else ll.Function(ctx.llmodule, fnty, name)


def intrinsic(ctx, name: str, args: list):
    """Call the overloaded LLVM intrinsic for math function ``name`` at the args' type."""
    llt = args[0].type
    fn = declare_overloaded(ctx, _INTRINSICS[name], [llt], ll.FunctionType(llt, [llt] * len(args)))
    return ctx.builder.call(fn, args)


# Functions with no LLVM intrinsic: the C library's (native CPU; device targets map them
# to their own libraries in their lowering's ``math``).
_LIBM = frozenset({"erf", "erfc", "log1p", "expm1", "cbrt", "tgamma", "lgamma", "asinh",
                   "acosh", "atanh", "hypot", "remainder"})


def per_lane(ctx, scalar_fn, args: list):
    """``scalar_fn`` (LLVM scalars -> an LLVM scalar, or a tuple of them) over the lanes
    of the vector ``args`` (scalar arguments go to every lane): the vector of its results
    (a tuple of vectors). The element-wise form of every math function a target computes
    with a scalar library call."""
    b = ctx.builder
    n = next(a.type.count for a in args if isinstance(a.type, ll.VectorType))
    lanes = []
    for i in range(n):
        k = ll.Constant(lt.I32, i)
        lanes.append(scalar_fn(*[b.extract_element(a, k) if isinstance(a.type, ll.VectorType)
                                 else a for a in args]))
    single = not isinstance(lanes[0], tuple)
    outs = []
    for j in range(1 if single else len(lanes[0])):
        parts = [lane if single else lane[j] for lane in lanes]
        out = ll.Constant(ll.VectorType(parts[0].type, n), ll.Undefined)
        for i, part in enumerate(parts):
            out = b.insert_element(out, part, ll.Constant(lt.I32, i))
        outs.append(out)
    return outs[0] if single else tuple(outs)


def libm_call(ctx, name: str, args: list):
    """``<name>f`` for float, ``<name>`` for double (half through float); vectors element
    by element."""
    b, ty = ctx.builder, args[0].type
    if isinstance(ty, ll.VectorType):
        return per_lane(ctx, lambda *xs: libm_call(ctx, name, list(xs)), args)
    if isinstance(ty, ll.HalfType):
        wide = [b.fpext(a, ll.FloatType()) for a in args]
        return b.fptrunc(libm_call(ctx, name, wide), ty)
    symbol = f"{name}f" if isinstance(ty, ll.FloatType) else name
    fn = ctx.llmodule.globals.get(symbol)
    if fn is None:
        fn = ll.Function(ctx.llmodule, ll.FunctionType(ty, [ty] * len(args)), symbol)
    return b.call(fn, args)


def real_math(ctx, name: str, args: list, result_type: Type):
    """Math function ``name`` of the catalogue on float (or float vec) LLVM values, the
    target's way: its ``math`` hook, else an LLVM intrinsic or the C library."""
    custom = ctx.lowering.math(ctx, name, args, result_type)
    if custom is not None:
        return custom
    bld = ctx.builder
    if name == "rsqrt":
        return bld.fdiv(float_const(args[0].type, 1.0), intrinsic(ctx, "sqrt", args))
    if name == "isnan":
        return bld.fcmp_unordered("uno", args[0], args[0])
    if name in ("isinf", "isfinite"):
        inf = float_const(args[0].type, np.inf)
        return bld.fcmp_ordered("==" if name == "isinf" else "!=",
                                intrinsic(ctx, "fabs", args), inf)
    if name == "fmod":     # LLVM's frem is C's fmod
        return bld.frem(*args)
    if name in _LIBM:
        return libm_call(ctx, name, args)
    return intrinsic(ctx, name, args)


def float_const(llt: ll.Type, value: float) -> ll.Constant:
    """``value`` as a constant of the float (or float vector) LLVM type ``llt``."""
    if isinstance(llt, ll.VectorType):
        return ll.Constant(llt, [ll.Constant(llt.element, float(value))] * llt.count)
    return ll.Constant(llt, float(value))


def _math_rule(name: str):
    def lower_math(ctx, op):
        ftype = op.type if name not in MATH_PREDICATES else op.operands[0].type
        if not scalar_of(ftype).is_float:
            ftype = op.type if scalar_of(op.type).is_float else ScalarType("f64")
        args = [convert(ctx, ctx.get(v), v.type, ftype) for v in op.operands]
        return real_math(ctx, name, args, op.type)
    lower_math.__name__ = f"lower_math_{name}"
    return lower_math


@rule("math.ldexp")
def lower_ldexp(ctx, op):
    x, n = op.operands
    fx = ctx.get(x)
    custom = ctx.lowering.math(ctx, "ldexp", [fx, ctx.get(n)], op.type)
    if custom is not None:
        return custom
    k = ctx.get(n)      # i32, or a vector of i32 for a vector x
    fn = declare_overloaded(ctx, "llvm.ldexp", [fx.type, k.type],
                            ll.FunctionType(fx.type, [fx.type, k.type]))
    return ctx.builder.call(fn, [fx, k])


def _register_math():
    for name in MATH_FUNCTIONS:
        rule(f"math.{name}")(_math_rule(name))


_register_math()
