"""``sycl.math``: the kernel math functions.

Each name is the IR op ``math.<name>``; single precision stays single precision. On the
host they compute with NumPy so ``@sycl.device`` helpers run in Python too.

>>> float(sqrt(np.float32(4)))
2.0
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..ir.ops import MATH_FUNCTIONS

# Functions of the kernel language beyond the IR's math ops (built from them), and the
# functions of complex numbers (SYCL's sycl::ext::oneapi::experimental::complex).
EXTRA = ("ldexp", "degrees", "radians", "sign", "modf", "sincos", "fract", "frexp",
         "lgamma_r", "remquo", "signbit")
COMPLEX_EXTRA = ("conj", "real", "imag", "arg", "norm", "polar", "proj")
# SYCL 2020 4.17.8 geometric functions, on float scalars and vecs of 2 to 4 elements.
GEOMETRIC = ("dot", "cross", "length", "distance", "normalize", "fast_length",
             "fast_distance", "fast_normalize")
# SYCL 2020 4.17.7 common functions beyond the IR's (degrees, radians, sign are above).
COMMON = ("clamp", "mix", "step", "smoothstep")
# SYCL 2020 4.17.6 integer functions (frontend/integer_math.py lowers them).
INTEGER = ("popcount", "clz", "ctz", "abs_diff", "add_sat", "sub_sat", "hadd", "rhadd",
           "rotate", "mul_hi", "mad_hi", "mul24", "mad24", "upsample")
# SYCL 2020 4.17.9 relational functions (frontend/relational.py lowers them).
RELATIONAL = ("isequal", "isnotequal", "isgreater", "isgreaterequal", "isless",
              "islessequal", "islessgreater", "isordered", "isunordered", "isnormal", "any",
              "all", "bitselect", "select")
__all__ = sorted([*MATH_FUNCTIONS, *EXTRA, *COMPLEX_EXTRA, *GEOMETRIC, *COMMON, *INTEGER,
                  *RELATIONAL, "native", "half_precision"])

# NumPy spellings of the SYCL names that differ (used here and by frontend.builtins);
# None: NumPy's function of that name means something else (np.remainder is the floored
# modulo, not IEEE remainder) or NumPy has none.
NUMPY_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2",
               "pow": "power", "round": "round", "asinh": "arcsinh", "acosh": "arccosh",
               "atanh": "arctanh", "remainder": None, "erf": None, "erfc": None,
               "tgamma": None, "lgamma": None}
# Python ``math`` spellings that differ.
MATH_NAMES = {"tgamma": "gamma"}


def _elementwise(fn):
    """A ``math`` function applied to scalars or arrays, in the argument's precision."""
    def run(*args):
        out = np.vectorize(fn, otypes=[np.float64])(*args)
        kind = np.result_type(*args)
        return out.astype(kind) if kind.kind == "f" else out
    return run


def _host(name):
    if name == "rsqrt":
        return lambda x: 1 / np.sqrt(x)
    if name == "fma":
        return lambda a, b, c: a * b + c
    np_name = NUMPY_NAMES.get(name, name)
    if np_name is not None and hasattr(np, np_name):
        return getattr(np, np_name)
    return _elementwise(getattr(math, MATH_NAMES.get(name, name)))


for _name in MATH_FUNCTIONS:
    _f = _host(_name)

    def _make(f=_f, n=_name):
        def fn(*args):
            return f(*args)
        fn.__name__ = fn.__qualname__ = n
        fn.__doc__ = f"sycl.math.{n} (IR op math.{n})."
        return fn
    globals()[_name] = _make()
del _name, _f


def ldexp(x, n):
    """sycl.math.ldexp: ``x * 2**n``, exactly."""
    return np.ldexp(x, n)


def degrees(x):
    """sycl.math.degrees: radians to degrees."""
    return np.degrees(x)


def radians(x):
    """sycl.math.radians: degrees to radians."""
    return np.radians(x)


def sign(x):
    """sycl.math.sign: 1, -1 or 0 (NaN stays NaN), as ``np.sign``."""
    return np.sign(x)


def modf(x):
    """sycl.math.modf: ``(fractional part, integral part)``, both with the sign of x."""
    return np.modf(x)


def sincos(x):
    """sycl.math.sincos: ``(sin(x), cos(x))``."""
    return np.sin(x), np.cos(x)


def fract(x):
    """sycl.math.fract: ``(x - floor(x)`` below 1, ``floor(x))``."""
    floor = np.floor(x)
    below_one = np.nextafter(np.ones_like(x), 0)
    part = np.where(np.isinf(x), np.copysign(np.zeros_like(x), x),
                    np.minimum(x - floor, below_one))
    return part, floor


def frexp(x):
    """sycl.math.frexp: ``(mantissa, exponent)``, ``x == mantissa * 2**exponent`` with the
    mantissa's magnitude in [0.5, 1); the exponent is int32 (as ``np.frexp``)."""
    return np.frexp(x)


def signbit(x):
    """sycl.math.signbit: whether the sign bit is set (-0.0 included), as ``np.signbit``."""
    return np.signbit(x)


def _lgamma_r(t: float) -> tuple[float, int]:
    """C's ``lgamma_r``: the sign is -1 for -0 and between the poles where tgamma is
    negative, +1 elsewhere (poles, infinities, NaN)."""
    if not math.isfinite(t):
        return abs(t), 1
    t = float(t)
    if t <= 0 and t == int(t):
        return math.inf, -1 if math.copysign(1, t) < 0 else 1
    return math.lgamma(t), -1 if t < 0 and math.floor(t) % 2 == 1 else 1


def _remquo(x: float, y: float) -> tuple[float, int]:
    """C's ``remquo``: the IEEE remainder and the 3 low bits of the rounded quotient
    ``(x - remainder) / y`` (an exact integer), with the sign of x / y."""
    x, y = float(x), float(y)
    if not (math.isfinite(x) and not math.isnan(y)) or y == 0:
        return math.nan, 0
    r = math.remainder(x, y)
    n = (Fraction(x) - Fraction(r)) / Fraction(y)
    low = int(abs(n)) % 8
    return r, -low if (x < 0) != (y < 0) else low


def _pair(fn, *args):
    """``fn`` (float -> (float, int)) on scalars or arrays, in the arguments' precision."""
    value, k = np.vectorize(fn, otypes=[np.float64, np.int32])(*args)
    kind = np.result_type(*args)
    value = value.astype(kind) if kind.kind == "f" else value
    return (value[()], k[()]) if value.ndim == 0 else (value, k)


def lgamma_r(x):
    """sycl.math.lgamma_r: ``(lgamma(x), sign of tgamma(x))``, the sign an int32 +-1."""
    return _pair(_lgamma_r, x)


def remquo(x, y):
    """sycl.math.remquo: ``(remainder(x, y), quo)``, ``quo`` the 3 low bits of the
    rounded quotient with the sign of x / y (int32)."""
    return _pair(_remquo, x, y)


def conj(z):
    """sycl.math.conj: the complex conjugate (a real number is its own, as ``np.conj``)."""
    return np.conj(z)


def real(z):
    """sycl.math.real: the real part, as ``np.real``."""
    return np.real(z)


def imag(z):
    """sycl.math.imag: the imaginary part (0 for a real number), as ``np.imag``."""
    return np.imag(z)


def arg(z):
    """sycl.math.arg: the phase ``atan2(z.imag, z.real)``, as ``np.angle``."""
    return np.angle(z)


def norm(z):
    """sycl.math.norm: ``z.real**2 + z.imag**2`` (SYCL's complex ``norm``, not ``abs``)."""
    return np.real(z) * np.real(z) + np.imag(z) * np.imag(z)


def polar(rho, theta=0):
    """sycl.math.polar: the complex number of modulus ``rho`` and phase ``theta``.

    >>> complex(polar(2.0, 0.0))
    (2+0j)
    """
    return rho * np.cos(theta) + 1j * (rho * np.sin(theta))


def proj(z):
    """sycl.math.proj: the projection onto the Riemann sphere (C99's ``cproj``): a
    number with an infinite part is ``inf + i copysign(0, z.imag)``, any other itself.

    >>> complex(proj(complex(-np.inf, -2.0)))
    (inf-0j)
    """
    out = np.array(z, dtype=np.result_type(np.asarray(z).dtype, np.complex64))
    infinite = np.isinf(out.real) | np.isinf(out.imag)
    out.imag[infinite] = np.copysign(0.0, out.imag[infinite])
    out.real[infinite] = np.inf
    return out[()] if out.ndim == 0 else out


def clamp(x, minval, maxval):
    """sycl.math.clamp: ``min(max(x, minval), maxval)``, as ``np.clip``."""
    return np.minimum(np.maximum(x, minval), maxval)


def mix(x, y, a):
    """sycl.math.mix: ``x + (y - x) * a``."""
    return x + (y - x) * a


def step(edge, x):
    """sycl.math.step: 0.0 where ``x < edge``, else 1.0."""
    return np.where(np.asarray(x) < edge, 0.0, 1.0).astype(np.result_type(edge, x))[()]


def smoothstep(edge0, edge1, x):
    """sycl.math.smoothstep: Hermite interpolation, 0 at or below ``edge0``, 1 at or
    above ``edge1``: ``t * t * (3 - 2 * t)`` with ``t = clamp((x - edge0) / (edge1 -
    edge0), 0, 1)``."""
    t = np.clip((x - edge0) / (edge1 - edge0), 0, 1)
    return t * t * (3 - 2 * t)


def _integer_fn(fn):
    """``fn`` on Python ints (and the element type's width and signedness), applied to
    integer scalars or arrays; results wrap into the first argument's type."""
    def run(*args):
        dtype = np.asarray(args[0]).dtype
        bits, signed = dtype.itemsize * 8, dtype.kind == "i"

        def one(*values):
            r = fn(bits, signed, *(int(v) for v in values)) & ((1 << bits) - 1)
            return r - (1 << bits) if signed and r >> (bits - 1) else r
        out = np.vectorize(one, otypes=[dtype])(*args)
        return out[()] if out.ndim == 0 else out
    return run


def _unsigned_int(bits, value):
    return value & ((1 << bits) - 1)


def _saturate(bits, signed, value):
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return min(max(value, lo), hi)


popcount = _integer_fn(lambda b, s, x: bin(_unsigned_int(b, x)).count("1"))
popcount.__doc__ = "sycl.math.popcount: the number of set bits."
clz = _integer_fn(lambda b, s, x: b - _unsigned_int(b, x).bit_length())
clz.__doc__ = "sycl.math.clz: the number of leading zero bits (the width for 0)."
ctz = _integer_fn(lambda b, s, x: (_unsigned_int(b, x) & -_unsigned_int(b, x)).bit_length() - 1
                  if x else b)
ctz.__doc__ = "sycl.math.ctz: the number of trailing zero bits (the width for 0)."
abs_diff = _integer_fn(lambda b, s, x, y: abs(x - y))
abs_diff.__doc__ = "sycl.math.abs_diff: |x - y| without overflow in the subtraction."
add_sat = _integer_fn(lambda b, s, x, y: _saturate(b, s, x + y))
add_sat.__doc__ = "sycl.math.add_sat: x + y saturated to the type's range."
sub_sat = _integer_fn(lambda b, s, x, y: _saturate(b, s, x - y))
sub_sat.__doc__ = "sycl.math.sub_sat: x - y saturated to the type's range."
hadd = _integer_fn(lambda b, s, x, y: (x + y) >> 1)
hadd.__doc__ = "sycl.math.hadd: (x + y) >> 1 without overflow."
rhadd = _integer_fn(lambda b, s, x, y: (x + y + 1) >> 1)
rhadd.__doc__ = "sycl.math.rhadd: (x + y + 1) >> 1 without overflow."
rotate = _integer_fn(lambda b, s, v, i: (_unsigned_int(b, v) << (i % b)) |
                     (_unsigned_int(b, v) >> ((b - i % b) % b) if i % b else 0))
rotate.__doc__ = "sycl.math.rotate: v's bits rotated left by i (modulo the width)."
mul_hi = _integer_fn(lambda b, s, x, y: (x * y) >> b)
mul_hi.__doc__ = "sycl.math.mul_hi: the high half of the full product x * y."
mad_hi = _integer_fn(lambda b, s, x, y, z: ((x * y) >> b) + z)
mad_hi.__doc__ = "sycl.math.mad_hi: mul_hi(x, y) + z."
mul24 = _integer_fn(lambda b, s, x, y: x * y)
mul24.__doc__ = "sycl.math.mul24: x * y (values of 24 bits)."
mad24 = _integer_fn(lambda b, s, x, y, z: x * y + z)
mad24.__doc__ = "sycl.math.mad24: x * y + z (x, y of 24 bits)."


def upsample(hi, lo):
    """sycl.math.upsample: ``(hi << width) | lo`` in the integer of twice the width."""
    hi, lo = np.asarray(hi), np.asarray(lo)
    bits = hi.dtype.itemsize * 8
    wide = np.dtype(f"{hi.dtype.kind}{hi.dtype.itemsize * 2}")
    out = (hi.astype(wide) << bits) | lo.astype(wide)
    return out[()] if out.ndim == 0 else out


def _mask(truth, like):
    """A comparison's result as SYCL gives it: a bool for scalars, a -1/0 mask of the
    signed integer of the elements' width for arrays (vecs)."""
    truth = np.asarray(truth)
    if truth.ndim == 0:
        return bool(truth)
    return np.where(truth, -1, 0).astype(f"i{np.asarray(like).dtype.itemsize}")


def isequal(x, y):
    """sycl.math.isequal: x == y (a bool; a -1/0 mask for vecs)."""
    return _mask(np.equal(x, y), x)


def isnotequal(x, y):
    """sycl.math.isnotequal: x != y (true for NaN)."""
    return _mask(np.not_equal(x, y), x)


def isgreater(x, y):
    """sycl.math.isgreater: x > y."""
    return _mask(np.greater(x, y), x)


def isgreaterequal(x, y):
    """sycl.math.isgreaterequal: x >= y."""
    return _mask(np.greater_equal(x, y), x)


def isless(x, y):
    """sycl.math.isless: x < y."""
    return _mask(np.less(x, y), x)


def islessequal(x, y):
    """sycl.math.islessequal: x <= y."""
    return _mask(np.less_equal(x, y), x)


def islessgreater(x, y):
    """sycl.math.islessgreater: x < y or x > y."""
    return _mask(np.less(x, y) | np.greater(x, y), x)


def isordered(x, y):
    """sycl.math.isordered: neither x nor y is NaN."""
    return _mask(~(np.isnan(x) | np.isnan(y)), x)


def isunordered(x, y):
    """sycl.math.isunordered: x or y is NaN."""
    return _mask(np.isnan(x) | np.isnan(y), x)


def isnormal(x):
    """sycl.math.isnormal: finite, not zero and not subnormal."""
    a = np.abs(np.asarray(x))
    return _mask(np.isfinite(a) & (a >= np.finfo(a.dtype).tiny), x)


def _msb(x) -> np.ndarray:
    arr = np.asarray(x)
    return arr.view(f"i{arr.dtype.itemsize}") < 0


def any(x):  # noqa: A001 - SYCL's name
    """sycl.math.any: 1 if the most significant bit of any element is set, else 0 (of a
    scalar, a bool)."""
    msb = _msb(x)
    return bool(msb) if msb.ndim == 0 else int(msb.any())


def all(x):  # noqa: A001 - SYCL's name
    """sycl.math.all: 1 if the most significant bit of every element is set, else 0 (of a
    scalar, a bool)."""
    msb = _msb(x)
    return bool(msb) if msb.ndim == 0 else int(msb.all())


def bitselect(a, b, c):
    """sycl.math.bitselect: each bit from b where c's bit is set, else from a."""
    a, b, c = np.asarray(a), np.asarray(b), np.asarray(c, dtype=np.asarray(a).dtype)
    bits = f"u{a.dtype.itemsize}"
    r = (a.view(bits) & ~c.view(bits)) | (b.view(bits) & c.view(bits))
    out = r.view(a.dtype)
    return out[()] if out.ndim == 0 else out


def select(a, b, c):
    """sycl.math.select: c ? b : a; of arrays, b[i] where the most significant bit of
    c[i] is set."""
    if np.ndim(a) == 0:
        return b if c else a
    return np.where(_msb(c), b, a)


def _vector(p) -> np.ndarray:
    """A vec (a NumPy array of its elements, or a vec dtype's structured value) or a
    scalar, as a 1-D array of its elements."""
    arr = np.asarray(p)
    if arr.dtype.names or arr.dtype.subdtype is not None:
        arr = arr.view(arr.dtype.base if arr.dtype.subdtype else arr.dtype[0])
    return np.atleast_1d(arr)


def dot(p0, p1):
    """sycl.math.dot: the sum of the element products of two float vecs (of scalars,
    their product)."""
    return np.sum(_vector(p0) * _vector(p1))


def cross(p0, p1):
    """sycl.math.cross: the cross product of two 3- or 4-element vecs (the 4th element of
    the result is 0)."""
    a, b = _vector(p0), _vector(p1)
    out = np.zeros_like(a * b)
    out[:3] = np.cross(a[:3], b[:3])
    return out


def length(p):
    """sycl.math.length: ``sqrt(dot(p, p))``."""
    return np.sqrt(dot(p, p))


def distance(p0, p1):
    """sycl.math.distance: ``length(p0 - p1)``."""
    return length(_vector(p0) - _vector(p1))


def normalize(p):
    """sycl.math.normalize: ``p / length(p)``; a zero vec stays zero."""
    v = _vector(p)
    n = length(v)
    return v / n if n else v


def fast_length(p):
    """sycl.math.fast_length: ``length(p)`` (here as accurate)."""
    return length(p)


def fast_distance(p0, p1):
    """sycl.math.fast_distance: ``distance(p0, p1)`` (here as accurate)."""
    return distance(p0, p1)


def fast_normalize(p):
    """sycl.math.fast_normalize: ``normalize(p)`` (here as accurate)."""
    return normalize(p)


class _Relaxed:
    """``sycl.math.native`` / ``sycl.math.half_precision``: SYCL's reduced-accuracy forms
    (4.17.5); here they compute as accurately as the full forms."""

    def __init__(self, name: str):
        self._name = name
        for fn in ("cos", "exp", "exp2", "log", "log2", "log10", "rsqrt", "sin", "sqrt", "tan"):
            setattr(self, fn, globals()[fn])
        self.powr = globals()["pow"]
        self.exp10 = lambda x: np.power(10, x)
        self.recip = lambda x: 1 / x
        self.divide = lambda x, y: x / y

    def __repr__(self):
        return f"sycl.math.{self._name}"


native = _Relaxed("native")
half_precision = _Relaxed("half_precision")

