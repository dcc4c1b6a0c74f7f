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


def default_type(value) -> T.ScalarType:
    """The type a weak literal gets when nothing narrows it (KERNEL_LANGUAGE.md: ``1`` is
    int64, ``1.0`` float64)."""
    if isinstance(value, bool):
        return T.BOOL
    if isinstance(value, int):
        return T.I64
    return T.F64


def _np(t):
    return t.dtype if isinstance(t, T.ScalarType) else t


@functools.lru_cache(maxsize=None)
def binary_result(op: str, a, b) -> T.ScalarType:
    """Result type of IR op ``op`` on scalar types or weak Python types; ``TypeError`` if
    NumPy has no loop for it (``float & int``)."""
    if not isinstance(a, T.ScalarType) and not isinstance(b, T.ScalarType):
        a = default_type(a(0))  # both weak: only reached for non-foldable uses
    try:
        dts = UFUNCS[op].resolve_dtypes((_np(a), _np(b), None))
    except (TypeError, np.exceptions.DTypePromotionError) as e:
        raise TypeError(str(e)) from None
    return T.scalar_from_dtype(dts[2])


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
    """Float type of a math function: floats keep their precision (f32 stays f32,
    KERNEL_LANGUAGE.md), integers and weak literals compute in f64."""
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


def literal_fits(value, t: T.ScalarType) -> bool:
    """NEP 50: a Python int out of range for the typed side is an error, not a wrap."""
    if isinstance(value, bool) or not isinstance(value, int) or not t.is_int:
        return True
    info = np.iinfo(t.dtype)
    return info.min <= value <= info.max


def is_index_type(t) -> bool:
    return isinstance(t, T.ScalarType) and (t.is_int or t.is_bool)
