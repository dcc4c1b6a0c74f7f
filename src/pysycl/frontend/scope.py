"""Free names in kernel code: what a Python object found by name means to the compiler.

Names resolve as in Python (closure variables, module globals, builtins;
``source.lookup_name``). Numbers and tuples of numbers are frozen as constants:
they become part of the IR, hence of the cache key. Mutable host data is a
compile error that suggests the two ways to get data into a kernel.

>>> classify_value(3, None, None)
Lit(value=3)
"""
from __future__ import annotations

import ast
import enum
import types

import numpy as np

from .diagnostics import Source, error_at
from .values import Lit, Obj, TupleVal

_MUTABLE = (np.ndarray, list, dict, set, bytearray, memoryview)


def classify_value(value, src: Source | None, node: ast.AST | None, name: str = ""):
    """A Python value seen by kernel code -> Lit / TupleVal / Obj (numpy scalars stay
    ``Obj`` and become typed constants where they are used)."""
    if isinstance(value, np.generic):
        return Obj(value)  # typed constant (np.float32(2.0)), emitted where used
    if isinstance(value, (bool, int, float)) and not isinstance(value, enum.Enum):
        return Lit(value)
    if isinstance(value, tuple):
        return TupleVal(tuple(classify_value(v, src, node, name) for v in value))
    if isinstance(value, _MUTABLE) or _is_array_like(value):
        what = type(value).__module__ + "." + type(value).__qualname__
        if type(value).__module__ == "builtins":
            what = type(value).__name__
        error_at(src, node, f"kernel code cannot read the mutable host object '{name}' "
                 f"(a {what}); only numbers and tuples of numbers are frozen into kernels",
                 "pass it as a kernel argument (an accessor or USM pointer) or use a "
                 "sycl.specialization_id")
    if isinstance(value, complex):
        error_at(src, node, f"complex values ('{name}') are not supported in kernel code")
    if isinstance(value, str):
        error_at(src, node, f"strings ('{name}') cannot be used as values in kernel code")
    return Obj(value)


def _is_array_like(value) -> bool:
    # usm_array, DLPack tensors, CuPy arrays...: anything that exposes memory.
    if isinstance(value, (type, types.ModuleType)):
        return False
    return any(hasattr(type(value), a) for a in
               ("__array_interface__", "__cuda_array_interface__", "__dlpack__"))
