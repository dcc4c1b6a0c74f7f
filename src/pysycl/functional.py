"""SYCL's function objects (SYCL 2020 4.17.2) and what reductions know about them (4.10.6).

``sycl.plus()``, ``sycl.multiplies()``, ``sycl.minimum()``, ``sycl.maximum()``,
``sycl.bit_and()``, ``sycl.bit_or()``, ``sycl.bit_xor()``, ``sycl.logical_and()`` and
``sycl.logical_or()`` name the operator of a group algorithm or a reduction; kernels
compile them into the matching IR op, the host may call them. The class or an instance
may be given (``sycl.reducer[np.float32, sycl.minimum]``). ``known_identity`` is the
identity the runtime uses when a reduction gives none (SYCL 2020 4.10.6.2), and
``reduction_strategy`` says how a work-group's result reaches memory: one atomic per
work-group where the device has that atomic for the type and operator, else the
work-groups' results are combined by the last work-group to finish (a second pass in
the same launch).

>>> plus()(2, 3), known_identity(minimum, np.int8), reduction_strategy("plus", np.float32)
(5, np.int8(127), 'atomic')
"""
from __future__ import annotations

import numpy as np


class function_object:
    """Base of the operator classes; equal when of the same class (C++'s
    ``plus<>`` carries no state either)."""

    #: The operator's IR name (``group.reduce {op}``, reducer metadata).
    ir_name = ""
    #: Integer-only operators (bitwise).
    integral_only = False

    def __call__(self, a, b):
        raise NotImplementedError

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))

    def __repr__(self):
        return f"sycl.{type(self).__name__}()"


class plus(function_object):
    """``x + y``."""

    ir_name = "plus"

    def __call__(self, a, b):
        return a + b


class multiplies(function_object):
    """``x * y``."""

    ir_name = "multiplies"

    def __call__(self, a, b):
        return a * b


class minimum(function_object):
    """The smaller of ``x`` and ``y`` (``x`` when they are equal)."""

    ir_name = "minimum"

    def __call__(self, a, b):
        return b if b < a else a


class maximum(function_object):
    """The larger of ``x`` and ``y`` (``x`` when they are equal)."""

    ir_name = "maximum"

    def __call__(self, a, b):
        return b if b > a else a


class bit_and(function_object):
    """``x & y`` (integers and bool)."""

    ir_name = "bit_and"
    integral_only = True

    def __call__(self, a, b):
        return a & b


class bit_or(function_object):
    """``x | y`` (integers and bool)."""

    ir_name = "bit_or"
    integral_only = True

    def __call__(self, a, b):
        return a | b


class bit_xor(function_object):
    """``x ^ y`` (integers and bool)."""

    ir_name = "bit_xor"
    integral_only = True

    def __call__(self, a, b):
        return a ^ b


class logical_and(function_object):
    """``x && y``: 1 (true) when both are non-zero, else 0, in the operands' type."""

    ir_name = "logical_and"

    def __call__(self, a, b):
        return type(a)(bool(a) and bool(b)) if isinstance(a, np.generic) else bool(a) and bool(b)


class logical_or(function_object):
    """``x || y``: 1 (true) when either is non-zero, else 0, in the operands' type."""

    ir_name = "logical_or"

    def __call__(self, a, b):
        return type(a)(bool(a) or bool(b)) if isinstance(a, np.generic) else bool(a) or bool(b)


OPERATORS: dict[str, type[function_object]] = {
    c.ir_name: c for c in (plus, multiplies, minimum, maximum, bit_and, bit_or, bit_xor,
                           logical_and, logical_or)}

#: The operator an augmented assignment on a reducer means (SYCL 2020 4.10.6.3:
#: ``+=`` only for plus, ``*=`` for multiplies, ``&=``, ``|=``, ``^=`` for the bitwise ones).
AUGMENTED = {"add": "plus", "mul": "multiplies", "and": "bit_and", "or": "bit_or",
             "xor": "bit_xor"}

#: IR ``atomic.rmw`` op of an operator, where one exists.
ATOMIC_RMW = {"plus": "add", "minimum": "min", "maximum": "max", "bit_and": "and",
              "bit_or": "or", "bit_xor": "xor"}
_FLOAT_ATOMIC = frozenset({"plus", "minimum", "maximum"})
_ATOMIC_INTS = frozenset(np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64))
_ATOMIC_FLOATS = frozenset(np.dtype(t) for t in (np.float32, np.float64))


def as_operator(op) -> function_object | None:
    """An operator instance from an instance, a class or an IR name (None otherwise)."""
    if isinstance(op, function_object):
        return op
    if isinstance(op, type) and issubclass(op, function_object) and op.ir_name:
        return op()
    if isinstance(op, str) and op in OPERATORS:
        return OPERATORS[op]()
    return None


#: The operators that combine complex numbers (the SYCL complex extension's group
#: algorithms and reductions: plus and multiplies; complex numbers are not ordered and
#: have no bits or truth values to combine).
COMPLEX_OPERATORS = frozenset({"plus", "multiplies"})


def operand_problem(op, dtype) -> str | None:
    """Why ``op`` cannot combine ``dtype`` values, or None (bitwise needs integers,
    complex numbers take plus and multiplies).

    >>> operand_problem(minimum, np.complex64)
    'sycl.minimum() does not combine complex64 values: complex numbers take sycl.plus() or sycl.multiplies()'
    """
    dt = np.dtype(dtype)
    if dt.kind == "c":
        name = as_operator(op).ir_name
        if name in COMPLEX_OPERATORS:
            return None
        return (f"sycl.{name}() does not combine {dt} values: complex numbers take "
                "sycl.plus() or sycl.multiplies()")
    if dt.kind not in "biuf":
        return f"{dt} is not an arithmetic type"
    if as_operator(op).integral_only and dt.kind == "f":
        return f"sycl.{as_operator(op).ir_name}() needs integers or bool, not {dt}"
    return None


def has_known_identity(op, dtype) -> bool:
    """``sycl::has_known_identity<op, T>`` (SYCL 2020 4.10.6.2)."""
    return known_identity(op, dtype) is not None


def known_identity(op, dtype):
    """``sycl::known_identity<op, T>::value`` as a NumPy scalar, or None when the
    operator has none for ``dtype`` (then the reduction must give one).

    >>> known_identity(maximum, np.float32), known_identity(bit_and, np.uint8)
    (np.float32(-inf), np.uint8(255))
    """
    o, dt = as_operator(op), np.dtype(dtype)
    if o is None or operand_problem(o, dt) is not None:
        return None
    t = dt.type
    name = o.ir_name
    if name in ("plus", "bit_or", "bit_xor", "logical_or"):
        return t(0)
    if name in ("multiplies", "logical_and"):
        return t(1)
    if name == "bit_and":
        return t(True) if dt.kind == "b" else np.bitwise_not(t(0))
    if dt.kind == "b":
        return t(name == "minimum")
    if dt.kind == "f":
        return t(np.inf if name == "minimum" else -np.inf)
    info = np.iinfo(dt)
    return t(info.max if name == "minimum" else info.min)


def reduction_strategy(op, dtype) -> str:
    """``"atomic"``: each work-group adds its result to memory with one atomic (the
    device has ``atomic.rmw`` for ``dtype`` and ``op``); ``"last_group"``: work-groups
    store their results and the last one to finish combines them in group order."""
    name, dt = as_operator(op).ir_name, np.dtype(dtype)
    if name in ATOMIC_RMW and dt in _ATOMIC_INTS:
        return "atomic"
    if name in _FLOAT_ATOMIC and dt in _ATOMIC_FLOATS:
        return "atomic"
    return "last_group"


__all__ = ["AUGMENTED", "ATOMIC_RMW", "COMPLEX_OPERATORS", "OPERATORS", "as_operator", "bit_and", "bit_or",
           "bit_xor", "function_object", "has_known_identity", "known_identity",
           "logical_and", "logical_or", "maximum", "minimum", "multiplies",
           "operand_problem", "plus", "reduction_strategy"]
