"""What an expression lowers to, before it is an IR value.

An expression is one of:
- an ``ir.Value`` (a typed run-time value);
- :class:`Lit`: a Python ``int``/``float``/``complex``/``bool`` literal or frozen global.
  It stays a *weak* type (NEP 50) until an operation meets a typed value, so ``f32 + 1``
  is f32 and ``f32 * 1j`` complex64;
- :class:`Weak`: a run-time value that holds a *Python* number (a ``range`` loop
  variable, ``n = 3``, ``k + 1``, ``int(x)``...): typed storage, weak promotion (below);
- :class:`TupleVal`: a tuple display, kept element-wise so index tuples and
  ``a, b = b, a`` need no IR tuple;
- :class:`Obj`: a compile-time Python object (a module, ``np.float32``, a
  ``@sycl.device`` function, a ``specialization_id``, an enum member...);
- a handle (:class:`GroupHandle`, :class:`AtomicHandle`, :class:`SpecPlaceholder`,
  :class:`ReducerHandle`): a SYCL object with no storage, whose methods lower to ops.

A memory location (accessor element, struct field of a local...) is a :class:`Ptr`;
reading it is a ``load``, writing a ``store``.
"""
from __future__ import annotations

from typing import Any, Union

import numpy as np

from .._records import FrozenValue as _FrozenValue
from ..ir import types as T
from ..ir.core import Value


# Frozen value classes written out by hand (they were frozen dataclasses, which cost
# ~1 ms each to create; this module is imported by the first build): _records.py.
_set = object.__setattr__


class Lit(_FrozenValue):
    __slots__ = _fields = ("value",)
    value: int | float | complex | bool

    def __init__(self, value):
        _set(self, "value", value)


class Weak(_FrozenValue):
    """A run-time value standing for a Python ``int``/``float``/``complex`` (NEP 50 *weak*).

    ``value`` is the storage: int64 / float64 / complex128, or the ``range`` type of a loop variable
    (``for k in range(n)`` with an int32 ``n`` counts in int32). In an operation with a
    strong (NumPy-typed) value it converts to that value's type like a literal does
    (``f32 * k`` is float32, ``i32 + k`` int32); operations among weak values compute in
    int64/float64 and stay weak. Only the weak-aware rules (``ExpressionRules.wexpr``)
    see this wrapper; ``expr`` hands every other rule the plain storage value.
    """

    __slots__ = _fields = ("value",)
    value: Value

    def __init__(self, value):
        _set(self, "value", value)

    @property
    def py_type(self) -> type:
        t = self.value.type
        if isinstance(t, T.ComplexType):
            return complex
        return float if t.is_float else int


class Obj(_FrozenValue):
    __slots__ = _fields = ("value",)
    value: Any

    def __init__(self, value):
        _set(self, "value", value)


class TupleVal(_FrozenValue):
    __slots__ = _fields = ("items",)
    items: tuple

    def __init__(self, items):
        _set(self, "items", items)


class HostTable(_FrozenValue):
    """Host data frozen into the image as a read-only table (a module-level NumPy array,
    or a tuple of numbers indexed at run time): ``data`` holds its bytes, ``type`` its IR
    array type; ``weak``: the elements are Python numbers (a tuple's), read as weak."""

    __slots__ = _fields = ("name", "type", "data", "weak")
    name: str
    type: T.Type
    data: bytes
    weak: bool

    def __init__(self, name, type, data, weak=False):
        _set(self, "name", name)
        _set(self, "type", type)
        _set(self, "data", data)
        _set(self, "weak", weak)


class GroupHandle(_FrozenValue):
    __slots__ = _fields = ("scope", "dims")
    scope: str          # "work_group" or "sub_group" (IR attribute values)
    dims: int

    def __init__(self, scope, dims=1):
        _set(self, "scope", scope)
        _set(self, "dims", dims)


class AtomicHandle(_FrozenValue):
    __slots__ = _fields = ("ptr", "elem", "order", "scope")
    ptr: Value
    elem: T.ScalarType
    order: str
    scope: str

    def __init__(self, ptr, elem, order, scope):
        _set(self, "ptr", ptr)
        _set(self, "elem", elem)
        _set(self, "order", order)
        _set(self, "scope", scope)


class SpecPlaceholder(_FrozenValue):
    """A ``sycl.spec_constant[T, spec_id]`` parameter; ``p.get()`` reads ``spec_id`` (the
    constant's own symbolic ID, as ``h.get_specialization_constant(spec_id)`` does)."""

    __slots__ = _fields = ("name", "type", "spec_id")
    name: str
    type: T.Type
    spec_id: Any

    def __init__(self, name, type, spec_id):
        _set(self, "name", name)
        _set(self, "type", type)
        _set(self, "spec_id", spec_id)


class ReducerHandle(_FrozenValue):
    """A ``sycl.reducer`` parameter (or, with ``index``, one element of a span reducer):
    ``combine`` updates the work-item's accumulator, the var ``acc`` (an array of
    ``extent`` elements for a span); the passes of each target initialise it with
    ``identity`` and combine it into memory (passes/lower_reducers.py)."""

    __slots__ = _fields = ("name", "elem", "extent", "op", "acc", "identity", "index")
    name: str
    elem: T.Type
    extent: int
    op: str
    acc: str
    identity: Value
    index: Value | None

    def __init__(self, name, elem, extent, op, acc, identity, index=None):
        _set(self, "name", name)
        _set(self, "elem", elem)
        _set(self, "extent", extent)
        _set(self, "op", op)
        _set(self, "acc", acc)
        _set(self, "identity", identity)
        _set(self, "index", index)


class Ptr(_FrozenValue):
    """A memory location. ``readonly`` names the read_only accessor it came from;
    ``device_global`` is the host object when the location is a whole device_global."""

    __slots__ = _fields = ("value", "readonly", "device_global")
    value: Value
    readonly: str | None
    device_global: Any

    def __init__(self, value, readonly=None, device_global=None):
        _set(self, "value", value)
        _set(self, "readonly", readonly)
        _set(self, "device_global", device_global)

    @property
    def pointee(self) -> T.Type:
        return self.value.type.pointee


FV = Union[Value, Lit, Weak, Obj, TupleVal, GroupHandle, AtomicHandle, SpecPlaceholder,
           ReducerHandle]

HANDLES = (GroupHandle, AtomicHandle, SpecPlaceholder, ReducerHandle)


def type_of(fv) -> T.Type | None:
    if isinstance(fv, Weak):
        return fv.value.type
    return fv.type if isinstance(fv, Value) else None


def is_scalar(fv) -> bool:
    return isinstance(fv, Lit) or isinstance(type_of(fv), T.ScalarType)


def is_complex(fv) -> bool:
    """A complex number: a Python ``complex`` (literal or :class:`Weak`), a NumPy complex
    constant, or a run-time complex64/complex128 value."""
    if isinstance(fv, Lit):
        return isinstance(fv.value, complex)
    if isinstance(fv, Obj):
        return isinstance(fv.value, np.complexfloating)
    return isinstance(type_of(fv), T.ComplexType)


def is_weak(fv) -> bool:
    """A Python number: a literal or a :class:`Weak` run-time value (not a Python bool)."""
    return isinstance(fv, Weak) or isinstance(fv, Lit) and not isinstance(fv.value, bool)


def strong(fv):
    """``fv`` with a :class:`Weak` wrapper removed (its storage value)."""
    return fv.value if isinstance(fv, Weak) else fv


def promo_type(fv):
    """The type promotion rules see: the IR type, or ``int``/``float``/``bool`` for a
    Python number (weak)."""
    if isinstance(fv, Lit):
        return type(fv.value)
    if isinstance(fv, Weak):
        return fv.py_type
    return fv.type
