"""Type rules of the kernel language: NumPy scalar promotion with NEP 50 weak literals.

The result type of ``a <op> b`` is what NumPy's ufunc for that operator resolves, with
Python literals passed as their weak Python type (``int``/``float``/``bool``), so the
rules are NumPy's own and cannot drift from them:

>>> binary_result("add", T.F32, int)
ScalarType(name='f32')
>>> binary_result("add", T.I32, int)
ScalarType(name='i32')
>>> binary_result("div", T.I32, T.I32)
ScalarType(name='f64')

Weak values (Python numbers at run time)
----------------------------------------
Compiled code behaves like the same code run on NumPy scalars, so
what is weak is decided per value by what Python would hold there:

* **Weak** (a Python ``int``/``float``): literals and frozen globals (``values.Lit``), and
  the run-time values of ``values.Weak``: a ``range``/``sycl.static_range`` loop variable,
  a local first assigned a Python number (``n = 3``, ``acc = 0.0``), ``len(...)``,
  ``int(x)``, ``float(x)``, ``1 if c else 0``, ``-k``, ``abs(k)``, and arithmetic, ``min``
  and ``max`` among weak values (``k + 1``, ``k * 0.5``; computed in int64/float64).
* **Strong** (a NumPy type): kernel arguments, accessor/pointer elements, NumPy scalars
  and conversions (``np.float32(k)``, ``np.int64(k)``), work-item queries
  (``it.get_id(0)`` is SYCL's ``size_t``, int64), results of math functions, comparisons
  (bool), device-function parameters and results, and any result involving a strong value.

A weak int is stored as int64 (a loop variable counts in its range's type:
``range(n_i32)`` counts in int32, ``range(10)`` in int64), a weak float as float64. When a
weak value meets a strong one it converts to the strong type exactly like a literal:
``x_f32 * k`` is float32, ``i32 + k`` int32, ``0.0 + x_f32`` float32, ``k * 0.5`` a weak
float64. Converting a weak int to a narrower int wraps: NumPy raises ``OverflowError`` for
an out-of-range Python int, a kernel cannot (a literal out of range is still a compile
error). Comparisons of a weak int with an integer compare exactly (in the wider of the two
storage types, as before); with a float they are weak (``k < x_f32`` is a float32
comparison). Indexing converts to int64 whatever the index is.

Locals (``LoweringBase.assign_name``):

1. A local first assigned a strong value has that type; a later assignment of another
   type is a compile error naming the first line (Python numbers convert: ``x = 1`` into a
   float32 local is fine, a float into an int local is an error).
2. A local first assigned a Python number is *weak* (int64/float64 storage, each read is
   weak) as long as only Python numbers are assigned to it: ``n = 3; f32 * n`` is
   float32, ``i = 0; while ...: i += 1`` stays a Python int.
3. If strong values are assigned to it as well, anywhere in the function, the local has
   their type from its first assignment on -- with several strong types, their NumPy
   promotion with the Python number kind -- and rule 1 applies with that type (so a
   float local that is assigned an int32 value is still an error). This is what NumPy
   does from the first strong assignment on: ``acc = 0.0`` then ``acc += x[i]`` with a
   float32 ``x`` accumulates in **float32**, exactly like NumPy
   (``0.0 + np.float32(...)`` is float32); ``n = 0; n += a_i32[i]`` counts in int32.
   Write ``acc = np.float64(0.0)`` (or ``acc: np.float64 = 0.0``) for a float64
   accumulator. The only difference from Python: reads before the first strong
   assignment already see the strong type (the weak initial value converted to it).
4. A loop variable's type is its range's; it is weak, never inferred (rule 3 does not
   apply to it).
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from ..ir import types as T

#: IR op -> the NumPy ufunc whose type resolution defines it.
UFUNCS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "shl": np.left_shift, "shr": np.right_shift, "min": np.minimum, "max": np.maximum,
}
#: IR op -> the Python operator used to fold two literals (Python semantics).
PY_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "shl": operator.lshift, "shr": operator.rshift, "min": min, "max": max,
}
CMP_PREDS = {"Eq": "eq", "NotEq": "ne", "Lt": "lt", "LtE": "le", "Gt": "gt", "GtE": "ge"}
PY_CMPS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
           "gt": operator.gt, "ge": operator.ge}

WeakOrType = "T.ScalarType | type"


def default_type(value) -> T.ScalarType | T.ComplexType:
    """The type a weak literal gets when nothing narrows it (``1`` is
    int64, ``1.0`` float64, ``1j`` complex128)."""
    if isinstance(value, bool):
        return T.BOOL
    if isinstance(value, int):
        return T.I64
    if isinstance(value, complex):
        return T.C128
    return T.F64


def weak_storage_type(fv):
    """For an operation among Python numbers: a literal stays weak, a run-time Python
    number (``values.Weak``) counts as its int64/float64/complex128 representation."""
    if hasattr(fv, "py_type"):
        return default_type(fv.py_type(0))
    return type(fv.value)


def _np(t):
    return t.dtype if isinstance(t, T.NUMBER_TYPES) else t


@functools.lru_cache(maxsize=None)
def binary_result(op: str, a, b) -> T.ScalarType | T.ComplexType:
    """Result type of IR op ``op`` on number types or weak Python types; ``TypeError`` if
    NumPy has no loop for it (``float & int``, ``complex // int``)."""
    if not isinstance(a, T.NUMBER_TYPES) and not isinstance(b, T.NUMBER_TYPES):
        a = default_type(a(0))  # both weak: only reached for non-foldable uses
    try:
        dts = UFUNCS[op].resolve_dtypes((_np(a), _np(b), None))
    except (TypeError, np.exceptions.DTypePromotionError) as e:
        raise TypeError(str(e)) from None
    return T.number_from_dtype(dts[2])


@functools.lru_cache(maxsize=None)
def compare_operand_type(a, b) -> T.ScalarType:
    """The common type both sides of a comparison are converted to."""
    if not isinstance(a, T.ScalarType) and not isinstance(b, T.ScalarType):
        a = default_type(a(0))
    try:
        dts = np.less.resolve_dtypes((_np(a), _np(b), None))
    except (TypeError, np.exceptions.DTypePromotionError) as e:
        raise TypeError(str(e)) from None
    return T.scalar_from_dtype(dts[0])


def math_result(types: list) -> T.ScalarType:
    """Float type of a math function: floats keep their precision (f32 stays f32),
    integers and weak literals compute in f64."""
    typed = [t for t in types if isinstance(t, T.ScalarType)]
    if not typed:
        return T.F64
    common = typed[0]
    for t in typed[1:]:
        common = binary_result("add", common, t)
    for t in types:
        if not isinstance(t, T.ScalarType):
            common = binary_result("add", common, t)
    return common if common.is_float else T.F64


def complex_result(types: list) -> T.ComplexType:
    """Complex type of a complex math function (``np.exp(z)``, ``cmath.sqrt(x)``): the
    complex type of the float its parts compute in (``math_result``; complex64 for
    float32 and float16 arguments, complex128 for float64, integers and Python numbers).

    >>> complex_result([T.F32]), complex_result([complex])
    (ComplexType(elem=ScalarType(name='f32')), ComplexType(elem=ScalarType(name='f64')))
    """
    parts = [t.elem if isinstance(t, T.ComplexType) else float if t is complex else t
             for t in types]
    real = math_result(parts)
    return T.ComplexType(T.F32 if real in (T.F16, T.F32) else T.F64)


def literal_fits(value, t: T.ScalarType) -> bool:
    """NEP 50: a Python int out of range for the typed side is an error, not a wrap."""
    if isinstance(value, bool) or not isinstance(value, int) or not t.is_int:
        return True
    info = np.iinfo(t.dtype)
    return info.min <= value <= info.max


def is_index_type(t) -> bool:
    return isinstance(t, T.ScalarType) and (t.is_int or t.is_bool)
