"""Free names in kernel code: what a Python object found by name means to the compiler.

Names resolve as in Python (closure variables, module globals, builtins;
``source.lookup_name``). Numbers and tuples of numbers are frozen as constants:
they become part of the IR, hence of the cache key. A NumPy array of numbers (up to
64 KiB) is frozen too, as a read-only table in the image (``const.table``): pysycl makes
the array read-only when it is captured, so a later write raises NumPy's ``ValueError``
at the write instead of leaving a stale kernel. Other mutable host data is a compile
error that suggests the ways to get data into a kernel.

>>> classify_value(3, None, None)
Lit(value=3)
"""
from __future__ import annotations

import ast
import enum
import types

import numpy as np

from .diagnostics import Source, error_at
from ..ir import types as T
from .values import HostTable, Lit, Obj, TupleVal

#: The largest host array frozen into an image (device constant memory is 64 KiB).
MAX_TABLE_BYTES = 64 * 1024
_TABLE_KINDS = "biufc"   # bool, signed and unsigned integers, floats, complex numbers
_MUTABLE = (np.ndarray, list, dict, set, bytearray, memoryview)


def classify_value(value, src: Source | None, node: ast.AST | None, name: str = ""):
    """A Python value seen by kernel code -> Lit / TupleVal / Obj (numpy scalars stay
    ``Obj`` and become typed constants where they are used)."""
    if isinstance(value, np.generic):
        return Obj(value)  # typed constant (np.float32(2.0)), emitted where used
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, enum.Enum):
        return Lit(value)
    if isinstance(value, tuple):
        return TupleVal(tuple(classify_value(v, src, node, name) for v in value))
    if type(value) is np.ndarray:
        return host_table(value, src, node, name)
    if isinstance(value, _MUTABLE) or _is_array_like(value):
        what = type(value).__module__ + "." + type(value).__qualname__
        if type(value).__module__ == "builtins":
            what = type(value).__name__
        error_at(src, node, f"kernel code cannot read the mutable host object '{name}' "
                 f"(a {what}); only numbers, tuples of numbers and NumPy arrays of numbers "
                 "are frozen into kernels",
                 "use a tuple or np.array(...) for constant data; pass it as a kernel "
                 "argument (an accessor or USM pointer) or use a sycl.specialization_id")
    if isinstance(value, str):
        error_at(src, node, f"strings ('{name}') cannot be used as values in kernel code")
    return Obj(value)


def _is_array_like(value) -> bool:
    # usm_array, DLPack tensors, CuPy arrays...: anything that exposes memory.
    if isinstance(value, (type, types.ModuleType)):
        return False
    return any(hasattr(type(value), a) for a in
               ("__array_interface__", "__cuda_array_interface__", "__dlpack__"))


def host_table(arr: np.ndarray, src: Source | None, node: ast.AST | None, name: str,
               weak: bool = False) -> HostTable | Obj:
    """A host array as a constant table: its bytes and IR array type. The array (and any
    array it is a view of) is made read-only, so it cannot change under the kernel."""
    if arr.ndim == 0:
        return Obj(arr[()])
    dt = arr.dtype
    try:
        elem = T.number_from_dtype(dt.newbyteorder("=")) if dt.kind in _TABLE_KINDS else None
    except TypeError:
        elem = None
    if elem is None:
        error_at(src, node, f"kernel code cannot read the NumPy array '{name}' of dtype "
                 f"{dt}: only arrays of numbers (bool, int, uint, float, complex) are frozen into "
                 "kernels as constant tables",
                 "pass it as a kernel argument (an accessor or USM pointer)")
    if arr.nbytes > MAX_TABLE_BYTES or arr.size == 0:
        error_at(src, node, f"the NumPy array '{name}' ({arr.nbytes} bytes) cannot be frozen "
                 f"into a kernel: constant tables hold 1 to {MAX_TABLE_BYTES} bytes",
                 "pass it as a kernel argument (an accessor or USM pointer)")
    _freeze(arr, src, node, name)
    t = elem
    for n in reversed(arr.shape):
        t = T.ArrayType(t, int(n))
    data = np.ascontiguousarray(arr, dtype=dt.newbyteorder("<")).tobytes()
    return HostTable(name, t, data, weak)


def _freeze(arr: np.ndarray, src, node, name: str) -> None:
    # Make every array that shares this memory read-only (NumPy refuses writes to a
    # view of a read-only base); memory NumPy does not own could change behind it.
    chain, owner = [], arr
    while isinstance(owner, np.ndarray):
        chain.append(owner)
        owner = owner.base
    if owner is not None and not isinstance(owner, bytes) and arr.flags.writeable:
        error_at(src, node, f"kernel code cannot freeze the NumPy array '{name}': its memory "
                 f"belongs to a {type(owner).__name__}, which may change it behind the kernel",
                 f"freeze a copy: {name} = np.array(...)")
    for a in chain:
        if a.flags.writeable:
            a.flags.writeable = False
