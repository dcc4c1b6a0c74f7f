"""Complex numbers in kernels: NumPy's ``complex64``/``complex128`` and Python's
``complex`` (weak, like a Python float), as the SYCL extension
``sycl::ext::oneapi::experimental::complex`` offers them.

* Arithmetic ``+ - * / **`` and unary ``-`` with NumPy's promotion (``f32 * 1j`` is
  complex64, ``c64 + f64`` complex128); ``//``, ``%``, ``min``/``max`` and ordering
  comparisons are errors, as in Python (NumPy orders complex numbers
  lexicographically; Python does not, and kernel code follows Python there).
* ``==``/``!=`` compare both parts; ``bool(z)`` is ``z != 0``.
* ``z.real``, ``z.imag``, ``z.conjugate()`` (also on real numbers, as NumPy scalars have
  them); the functions below, with every spelling the catalogue knows: the SYCL
  extension's list (abs, arg, norm, conj, proj, polar, exp, log, log10, pow, sqrt, the
  trigonometric and hyperbolic functions and their inverses, real, imag) as
  ``sycl.math.*``, ``np.*`` and ``cmath.*`` where those have them.

``+``, ``-`` and unary ``-`` are the IR's part-by-part ``add``/``sub``/``neg``; the
rest lowers to ``complex.*`` ops, whose algorithms (Smith's division, ``hypot``, C99
branch cuts and special values) live in ``codegen/rules_complex.py`` and
``codegen/rules_complex_trig.py``.

>>> "conj" in sycl_math.__all__
True
"""
from __future__ import annotations

import builtins as py
import cmath

import numpy as np

from ..ir import types as T
from ..ir.core import Value
from ..ir.ops import COMPLEX_FUNCTIONS
from . import sycl_math
from .builtins import _args, add_builtin
from .expressions import SYMBOLS
from .lowering import fv_type_name, type_name
from .typing_rules import PY_CMPS, complex_result, math_result, weak_storage_type
from .values import Lit, Obj, TupleVal, Weak, is_complex, is_weak, promo_type

#: Arithmetic on complex numbers: IR op of each Python operator (pow is built here).
OPS = {"add": "add", "sub": "sub", "mul": "complex.mul", "div": "complex.div"}
#: Functions of complex numbers with an op of their own (np.exp(z) ...).
_FUNCTIONS = COMPLEX_FUNCTIONS
#: NumPy's exact integer powers: exponents n with |n| < 100 (npy_cpow).
_INT_POWER_LIMIT = 100


class ComplexRules:
    """Mixin of the function lowerer: the complex cases of operators and attributes."""

    # Operators ----------------------------------------------------------------------
    def complex_binop(self, op: str, a, b, node):
        """``a <op> b`` with a complex side (two Python numbers: a Python complex)."""
        weak = is_weak(a) and is_weak(b)
        types = [weak_storage_type(x) if weak else promo_type(x) for x in (a, b)]
        if op in ("min", "max"):
            self.error(node, f"{op}() of complex numbers: complex numbers are not ordered",
                       "compare abs(z), z.real or z.imag")
        ty = self.promote(op, *types, node)       # complex // and % are TypeErrors
        if op == "pow":
            v = self.complex_power(a, b, ty, node)
        elif op in OPS:
            v = self.value(OPS[op], [self.coerce(a, ty, node), self.coerce(b, ty, node)],
                           ty, node=node)
        else:
            self.error(node, f"unsupported operand types for {SYMBOLS[op]}: "
                       f"{fv_type_name(a)} and {fv_type_name(b)}")
        return Weak(v) if weak else v

    def complex_compare(self, pred: str, a, b, node):
        """``==``/``!=`` part by part (NaN parts are unequal, as in Python)."""
        if pred not in ("eq", "ne"):
            sym = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}[pred]
            self.error(node, f"'{sym}' is not supported between {fv_type_name(a)} and "
                       f"{fv_type_name(b)}: complex numbers are not ordered (Python's "
                       "TypeError)", "compare abs(z), z.real or z.imag")
        if isinstance(a, Lit) and isinstance(b, Lit):
            return Lit(PY_CMPS[pred](a.value, b.value))
        ty = self.promote("add", promo_type(a), promo_type(b), node)
        parts = zip(self.complex_parts(self.coerce(a, ty, node), node),
                    self.complex_parts(self.coerce(b, ty, node), node))
        same = [self.value("cmp", [x, y], T.BOOL, {"pred": pred}, node) for x, y in parts]
        return self.value("and" if pred == "eq" else "or", same, T.BOOL, node=node)

    def complex_power(self, a, b, ty: T.ComplexType, node) -> Value:
        """NumPy's ``npy_cpow``: ``a ** 0`` is 1; ``0 ** b`` is 0 for ``b.real > 0``, else
        NaN; a whole exponent below 100 in size is repeated multiplication (a constant
        one unrolled, one known at run time through selects over its bits), any other
        ``exp(b * log(a))`` (the C library's ``cpow``, which NumPy calls)."""
        base = self.coerce(a, ty, node)
        n = _small_integer(b)
        if n is not None:
            return self._integer_power(base, n, node)
        e = self.coerce(b, ty, node)
        er, ei = self.complex_parts(e, node)
        log = self.complex_function("log", base, node)
        power = self.complex_function("exp", self._mul(e, log, node), node)
        whole, r = self._run_time_integer_power(base, er, ei, node)
        power = self._select(whole, r, power, node)
        zero_base = self.complex_compare("eq", base, self.const(0, ty, node), node)
        positive = self._cmp("gt", er, self.const(0, ty.elem, node), node)
        of_zero = self._select(positive, self.const(0, ty, node), self._nan(ty, node), node)
        power = self._select(zero_base, of_zero, power, node)
        zero_exp = self.complex_compare("eq", e, self.const(0, ty, node), node)
        return self._select(zero_exp, self.const(1, ty, node), power, node)

    def _integer_power(self, z: Value, n: int, node) -> Value:
        """``z ** n`` for a constant ``n`` (|n| < 100), multiplication for
        multiplication as NumPy's loop does it."""
        ty = z.type
        if n == 0:
            return self.const(1, ty, node)
        if 1 <= n <= 3:   # NumPy unrolls these (better with infinities)
            return z if n == 1 else self._mul(z, z, node) if n == 2 else \
                self._mul(z, self._mul(z, z, node), node)
        acc, p, k, mask = self.const(1, ty, node), z, abs(n), 1
        while True:
            if k & mask:
                acc = self._mul(acc, p, node)
            mask <<= 1
            if k < mask:
                break
            p = self._mul(p, p, node)
        if n > 0:
            return acc
        zero = self.complex_compare("eq", z, self.const(0, ty, node), node)
        return self._select(zero, self._nan(ty, node), self._reciprocal(acc, node), node)

    def _run_time_integer_power(self, z: Value, er: Value, ei: Value, node):
        """(whether the exponent ``er + ei*1j`` is a whole number below 100 in size,
        ``z`` to that power): NumPy's loop over the exponent's bits as selects."""
        ty, f = z.type, z.type.elem
        zero = self.const(0, f, node)
        whole = self.value("and", [
            self._cmp("eq", ei, zero, node),
            self.value("and", [
                self._cmp("eq", er, self.value("math.trunc", [er], f, node=node), node),
                self._cmp("lt", self.value("math.fabs", [er], f, node=node),
                          self.const(_INT_POWER_LIMIT, f, node), node)], T.BOOL, node=node)],
            T.BOOL, node=node)
        # The exponent as an int64 (0 where it is not whole: no out-of-range conversion).
        n = self.value("cast", [self.value("math.fabs", [self._select(whole, er, zero, node)],
                                           f, node=node)], T.I64, node=node)
        acc, p, square = self.const(1, ty, node), z, None
        for bit in range(_INT_POWER_LIMIT.bit_length()):
            is_set = self._cmp("ne", self.value("and", [n, self.const(1 << bit, T.I64, node)],
                                                 T.I64, node=node), self.const(0, T.I64, node),
                               node)
            acc = self._select(is_set, self._mul(acc, p, node), acc, node)
            p = self._mul(p, p, node)
            square = square or p
        # NumPy unrolls the positive exponents 1, 2 and 3 (better with infinities).
        for k, unrolled in ((3, self._mul(z, square, node)), (2, square), (1, z)):
            exponent_is_k = self._cmp("eq", er, self.const(k, f, node), node)
            acc = self._select(exponent_is_k, unrolled, acc, node)
        negative = self._cmp("lt", er, zero, node)
        return whole, self._select(negative, self._reciprocal(acc, node), acc, node)

    def _mul(self, x: Value, y: Value, node) -> Value:
        return self.value("complex.mul", [x, y], x.type, node=node)

    def _reciprocal(self, z: Value, node) -> Value:
        return self.value("complex.div", [self.const(1, z.type, node), z], z.type, node=node)

    def _select(self, cond: Value, x: Value, y: Value, node) -> Value:
        return self.value("select", [cond, x, y], x.type, node=node)

    def _cmp(self, pred: str, x: Value, y: Value, node) -> Value:
        return self.value("cmp", [x, y], T.BOOL, {"pred": pred}, node)

    def _nan(self, ty: T.ComplexType, node) -> Value:
        return self.const(complex(np.nan, np.nan), ty, node)

    # Attributes and methods -------------------------------------------------------------
    def number_attribute(self, v: Value, attr: str, node):
        """``x.real`` / ``x.imag`` of a number (a real number's imag is a zero of its
        type, as NumPy scalars have it)."""
        if attr not in ("real", "imag"):
            self.error(node, f"'{attr}' is not an attribute of a {type_name(v.type)} value",
                       "numbers have .real, .imag and .conjugate()")
        if isinstance(v.type, T.ComplexType):
            return self.value(f"complex.{attr}", [v], v.type.elem, node=node)
        return v if attr == "real" else self.const(0, v.type, node)

    def number_method(self, v: Value, name: str, node):
        if name != "conjugate" or node.args or node.keywords:
            self.error(node.func, f"'{name}' is not a method of a {type_name(v.type)} value "
                       "with these arguments", "numbers have .conjugate()")
        return self.conjugate(v, node) if isinstance(v.type, T.ComplexType) else v

    def conjugate(self, v: Value, node) -> Value:
        """``np.conj(v)``: a real number is its own conjugate, in the type NumPy's
        ``conjugate`` gives it (a bool becomes int8; the scalar method keeps it)."""
        if not isinstance(v.type, T.ComplexType):
            out = np.conjugate.resolve_dtypes((v.type.dtype, None))[1]
            return self.cast(v, T.number_from_dtype(out), node)
        re, im = self.complex_parts(v, node)
        return self.value("complex.make", [re, self.value("neg", [im], im.type, node=node)],
                          v.type, node=node)

    # Functions ---------------------------------------------------------------------------
    def complex_function(self, name: str, z: Value, node) -> Value:
        return self.value(f"complex.{name}", [z], z.type, node=node)

    def complex_math(self, name: str, args: list, node):
        """A math builtin of the catalogue called with a complex argument."""
        callee = self.peek_callee(node.func)
        if isinstance(callee, Obj) and getattr(callee.value, "__module__", None) == "math":
            self.error(node, f"math.{name}() takes real numbers (Python's TypeError for a "
                       "complex one)", f"use cmath.{name} or np.{name} for complex numbers")
        if name in ("isnan", "isinf", "isfinite") and len(args) == 1:
            return self._complex_predicate(name, args[0], node)
        if name == "pow" and len(args) == 2:      # np.power(z, w) is z ** w
            return self.complex_binop("pow", *args, node)
        if name not in _FUNCTIONS or len(args) != 1:
            self.error(node, f"{name}() of complex numbers is not supported in kernel code",
                       "complex functions: abs, angle (arg), conj, real, imag, exp, log, "
                       "log10, sqrt, power, sin, cos, tan, arcsin, arccos, arctan, sinh, "
                       "cosh, tanh, arcsinh, arccosh, arctanh, isnan, isinf, isfinite, "
                       "sycl.math.norm, sycl.math.polar, sycl.math.proj")
        z = self.coerce(args[0], complex_result([promo_type(args[0])]), node)
        return self.complex_function(name, z, node)

    def _complex_predicate(self, name: str, x, node) -> Value:
        """``np.isnan(z)``: either part NaN; ``isinf``: either part infinite;
        ``isfinite``: both parts finite (NumPy's definitions)."""
        z = self.coerce(x, complex_result([promo_type(x)]), node)
        re, im = (self.value(f"math.{name}", [p], T.BOOL, node=node)
                  for p in self.complex_parts(z, node))
        return self.value("and" if name == "isfinite" else "or", [re, im], T.BOOL, node=node)


def _small_integer(b) -> int | None:
    """The exponent as an int when it is a constant whole number below 100 in size."""
    if not isinstance(b, Lit):
        return None
    v = b.value
    if isinstance(v, complex):
        if v.imag != 0:
            return None
        v = v.real
    if isinstance(v, float) and not v.is_integer():
        return None
    n = int(v)
    return n if -_INT_POWER_LIMIT < n < _INT_POWER_LIMIT else None


# Builtins -------------------------------------------------------------------------------
def _number(lw, node, name: str):
    """The one argument of ``name``, a number (a complex or real value, or a literal)."""
    (x,) = [lw.operand(a, node) for a in _args(lw, node, 1, name, weak=True)]
    if isinstance(x, Value) and not isinstance(x.type, T.NUMBER_TYPES):
        lw.error(node, f"{name}() takes a number, not {type_name(x.type)}")
    return x


def _real_value(lw, fv, ty: T.ScalarType, node) -> Value:
    if is_complex(fv):
        lw.error(node, f"a real number is needed here, not {fv_type_name(fv)}",
                 "take its .real or .imag")
    return lw.coerce(fv, ty, node)


def _construct(ty: T.ComplexType | None):
    """``np.complex64(x)``, ``np.complex64(re, im)``; ``ty`` None: Python's ``complex``,
    whose result is a Python complex (weak, complex128 storage)."""
    name = "complex" if ty is None else f"np.{ty.dtype}"

    def lower(lw, node):
        args = [lw.operand(a, node) for a in _args(lw, node, (0, 1, 2), name, weak=True)]
        if ty is None and all(isinstance(a, Lit) for a in args):
            try:
                return Lit(complex(*(a.value for a in args)))
            except (TypeError, ValueError) as e:
                lw.error(node, f"complex(): {e}")
        want = ty or T.C128
        if not args:
            v = lw.const(0, want, node)
        elif len(args) == 1:
            v = lw.coerce(args[0], want, node)
        else:
            re, im = (_real_value(lw, a, want.elem, n) for a, n in zip(args, node.args))
            v = lw.value("complex.make", [re, im], want, node=node)
        return Weak(v) if ty is None else v
    lower.__doc__ = (f"{name}(x) or {name}(re, im): a "
                     + ("Python complex (weak, complex128 storage)" if ty is None
                        else f"{ty.dtype} value"))
    return lower


add_builtin("complex", [py.complex])(_construct(None))
add_builtin("np.complex64", [np.complex64])(_construct(T.C64))
add_builtin("np.complex128", [np.complex128])(_construct(T.C128))


def _keep_weak(lw, x, fn, lit_fn, node):
    """``fn(value)`` for a run-time number; ``lit_fn`` folds a literal; a Python number
    stays one when ``fn`` keeps the storage type."""
    if isinstance(x, Lit):
        return Lit(lit_fn(x.value))
    if isinstance(x, Weak):
        r = fn(x.value)
        return Weak(r) if r.type in (T.I64, T.F64, T.C128) else r
    return fn(lw.materialize(x, node))


@add_builtin("math.conj", [sycl_math.conj, np.conj, np.conjugate])
def _conj(lw, node):
    """conj(z): the complex conjugate; a real number is its own (NumPy's np.conj)."""
    x = _number(lw, node, "conj")
    return _keep_weak(lw, x, lambda v: lw.conjugate(v, node), lambda v: v.conjugate(), node)


def _part(attr: str):
    def lower(lw, node):
        x = _number(lw, node, attr)
        return _keep_weak(lw, x, lambda v: lw.number_attribute(v, attr, node),
                          lambda v: getattr(v, attr), node)
    lower.__doc__ = f"{attr}(z): z.{attr}" + (" (a real x is itself, as np.real)" if attr == "real"
                                              else " (0 in a real x's type, as np.imag)")
    return lower


add_builtin("math.real", [sycl_math.real, np.real])(_part("real"))
add_builtin("math.imag", [sycl_math.imag, np.imag])(_part("imag"))


@add_builtin("math.arg", [sycl_math.arg, np.angle, cmath.phase])
def _arg(lw, node):
    """arg(z): the phase atan2(z.imag, z.real) in z's part type; a real x gives 0 or pi
    (float32 stays float32, integers compute in float64)."""
    x = _number(lw, node, "arg")
    if is_complex(x):
        z = lw.coerce(x, complex_result([promo_type(x)]), node)
        return lw.value("complex.arg", [z], z.type.elem, node=node)
    ty = math_result([promo_type(x)])
    return lw.value("math.atan2", [lw.const(0, ty, node), lw.coerce(x, ty, node)], ty,
                    node=node)


@add_builtin("math.norm", [sycl_math.norm])
def _norm(lw, node):
    """norm(z): z.real**2 + z.imag**2 (SYCL's complex norm), x*x for a real x."""
    x = _number(lw, node, "norm")
    if is_complex(x):
        z = lw.coerce(x, complex_result([promo_type(x)]), node)
        re, im = (lw.value("mul", [p, p], p.type, node=node) for p in lw.complex_parts(z, node))
        return lw.value("add", [re, im], z.type.elem, node=node)
    v = lw.coerce(x, math_result([promo_type(x)]), node)
    return lw.value("mul", [v, v], v.type, node=node)


def _from_polar(name: str, counts: tuple):
    def lower(lw, node):
        args = [lw.operand(a, node) for a in _args(lw, node, counts, name, weak=True)]
        for a, n in zip(args, node.args):
            if is_complex(a):
                lw.error(n, f"{name}() takes real numbers, not {fv_type_name(a)}")
        ty = math_result([promo_type(a) for a in args])
        rho = lw.coerce(args[0], ty, node)
        theta = lw.coerce(args[1], ty, node) if len(args) > 1 else lw.const(0, ty, node)
        re, im = (lw.value("mul", [rho, lw.value(f"math.{f}", [theta], ty, node=node)], ty,
                           node=node) for f in ("cos", "sin"))
        return lw.value("complex.make", [re, im], complex_result([ty]), node=node)
    lower.__doc__ = f"{name}(rho, theta): rho * (cos(theta) + 1j * sin(theta))"
    return lower


add_builtin("math.polar", [sycl_math.polar])(_from_polar("polar", (1, 2)))
add_builtin("cmath.rect", [cmath.rect])(_from_polar("rect", (2,)))


@add_builtin("cmath.polar", [cmath.polar])
def _to_polar(lw, node):
    """cmath.polar(z) -> (abs(z), phase(z))."""
    x = _number(lw, node, "polar")
    z = lw.coerce(x, complex_result([promo_type(x)]), node)
    return TupleVal((lw.value("complex.abs", [z], z.type.elem, node=node),
                     lw.value("complex.arg", [z], z.type.elem, node=node)))


def _cmath(name: str):
    def lower(lw, node):
        x = _number(lw, node, f"cmath.{name}")
        z = lw.coerce(x, complex_result([promo_type(x)]), node)
        if name in _FUNCTIONS:
            return lw.complex_function(name, z, node)
        return lw.complex_math(name, [z], node)
    lower.__doc__ = (f"cmath.{name}(x): complex {name}; a real x is taken as complex "
                     "(complex64 for float32, complex128 otherwise)")
    return lower


for _name in (*_FUNCTIONS, "isnan", "isinf", "isfinite"):
    if hasattr(cmath, _name):                    # cmath has no proj
        add_builtin(f"cmath.{_name}", [getattr(cmath, _name)])(_cmath(_name))


@add_builtin("math.proj", [sycl_math.proj])
def _proj(lw, node):
    """proj(z): the Riemann sphere's projection (C99's cproj): inf + i copysign(0, z.imag)
    where a part of z is infinite, else z; a real x is taken as complex."""
    x = _number(lw, node, "proj")
    z = lw.coerce(x, complex_result([promo_type(x)]), node)
    return lw.complex_function("proj", z, node)
