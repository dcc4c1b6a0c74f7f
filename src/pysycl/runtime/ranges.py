"""Index spaces: ``sycl.range``, ``sycl.nd_range``, ``sycl.id`` (SYCL 2020 4.9.1).

Each is a small immutable tuple-like object; an int means a 1-D range. The same names
are kernel parameter annotations (``sycl.id[2]``), delegated to ``types``.

>>> r = range(4, 8); r.size(), r[1], tuple(r)
(32, 8, (4, 8))
>>> nd_range(range(8, 8), range(4, 4)).get_group_range()
range(2, 2)
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import types
from ..errors import errc, exception, overflow_error, type_error

#: Every extent, offset and work-item count of a launch is below this: the runtime and
#: the native CPU device count work-items in signed 64-bit integers.
SIZE_LIMIT = 1 << 63


def _dims(name: str, dims) -> tuple[int, ...]:
    if len(dims) == 1 and isinstance(dims[0], (tuple, list, _Index)):
        dims = tuple(dims[0])
    if not 1 <= len(dims) <= 3:
        raise exception(errc.invalid, f"sycl.{name} has 1, 2 or 3 dimensions, not {len(dims)}")
    return tuple(_extent(name, value) for value in dims)


def _extent(name: str, value) -> int:
    """One dimension: an integer (Python or NumPy; not a float, not a bool) in
    ``[0, SIZE_LIMIT)``."""
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
        raise type_error(errc.invalid, f"sycl.{name} dimensions are integers, not {value!r}")
    extent = value.__index__()
    if extent < 0:
        raise exception(errc.invalid, f"sycl.{name} dimensions are >= 0, not {extent}")
    if extent >= SIZE_LIMIT:
        raise overflow_error(errc.invalid, f"sycl.{name} dimension {extent} does not fit a "
                             "signed 64-bit size (at most 2**63 - 1)")
    return extent


class _Index(tuple):
    """Shared body of ``range`` and ``id``: a tuple of 1..3 non-negative ints."""

    _kind = "range"

    def __new__(cls, *dims):
        if len(dims) == 1:  # the common 1-D case, checked inline
            extent = dims[0]
            if type(extent) is int and 0 <= extent < SIZE_LIMIT:
                return tuple.__new__(cls, dims)
        return tuple.__new__(cls, _dims(cls._kind, dims))

    def dimensions(self) -> int:
        return len(self)

    @property
    def dims(self) -> int:
        return len(self)

    def get(self, d: int) -> int:
        return self[d]

    def __repr__(self):
        return f"{self._kind}({', '.join(str(v) for v in self)})"

    # Arithmetic is element-wise, as SYCL 2020 4.9.1.1 / 4.9.1.3 define it for range and
    # id (with another of the same dimensions, or a scalar on either side): as tuples,
    # ``range(2, 3) * 2`` would repeat the tuple and ``r + s`` concatenate. Division is
    # C++'s size_t division. A result below zero (no size_t wrap-around) is errc.invalid.
    def _elementwise(self, other, op, swap: bool = False):
        if isinstance(other, tuple):
            if len(other) != len(self):
                raise type_error(errc.invalid, f"{self!r} and {other!r} have different "
                                 "dimensions")
            others = other
        elif hasattr(other, "__index__") and not isinstance(other, (bool, np.bool_)):
            others = (other.__index__(),) * len(self)
        else:
            return NotImplemented
        pairs = zip(others, self) if swap else zip(self, others)
        return type(self)(*(op(a, b) for a, b in pairs))

    def __add__(self, other):
        return self._elementwise(other, operator.add)

    def __radd__(self, other):
        return self._elementwise(other, operator.add, True)

    def __sub__(self, other):
        return self._elementwise(other, operator.sub)

    def __rsub__(self, other):
        return self._elementwise(other, operator.sub, True)

    def __mul__(self, other):
        return self._elementwise(other, operator.mul)

    def __rmul__(self, other):
        return self._elementwise(other, operator.mul, True)

    def __truediv__(self, other):
        return self._elementwise(other, operator.floordiv)

    def __rtruediv__(self, other):
        return self._elementwise(other, operator.floordiv, True)

    __floordiv__, __rfloordiv__ = __truediv__, __rtruediv__

    def __mod__(self, other):
        return self._elementwise(other, operator.mod)

    def __rmod__(self, other):
        return self._elementwise(other, operator.mod, True)

    def __lshift__(self, other):
        return self._elementwise(other, operator.lshift)

    def __rlshift__(self, other):
        return self._elementwise(other, operator.lshift, True)

    def __rshift__(self, other):
        return self._elementwise(other, operator.rshift)

    def __rrshift__(self, other):
        return self._elementwise(other, operator.rshift, True)

    def __and__(self, other):
        return self._elementwise(other, operator.and_)

    def __rand__(self, other):
        return self._elementwise(other, operator.and_, True)

    def __or__(self, other):
        return self._elementwise(other, operator.or_)

    def __ror__(self, other):
        return self._elementwise(other, operator.or_, True)

    def __xor__(self, other):
        return self._elementwise(other, operator.xor)

    def __rxor__(self, other):
        return self._elementwise(other, operator.xor, True)

    def __pos__(self):
        return self


class range(_Index):
    """``sycl.range(*dims)``."""

    __pysycl_builtin__ = "sycl.range"   # also usable in kernels (frontend/builtins.py)
    _kind = "range"

    def size(self) -> int:
        n = 1
        for v in self:
            n *= v
        return n

    def __class_getitem__(cls, dims):
        return types.index_annotation("range", dims)


class id(_Index):
    """``sycl.id(*dims)``; ``sycl.id[D]`` is the kernel index annotation."""

    __pysycl_builtin__ = "sycl.id"
    _kind = "id"

    def __class_getitem__(cls, dims):
        return types.index_annotation("id", dims)


class nd_range:
    """``sycl.nd_range(global_range, local_range, offset=None)``: work-groups of
    ``local_range`` tiling ``global_range`` (checked at launch against the device)."""

    __slots__ = ("global_range", "local_range", "offset")

    def __init__(self, global_range, local_range, offset=None):
        global_range = _launch_part(global_range, "global range")
        local_range = _launch_part(local_range, "local range")
        if len(global_range) != len(local_range):
            raise exception(errc.nd_range, f"nd_range: global range {tuple(global_range)} and "
                            f"local range {tuple(local_range)} have different dimensions")
        self.global_range = global_range
        self.local_range = local_range
        self.offset = _launch_part(offset, "offset", id) if offset is not None else \
            id(*(0,) * len(global_range))
        if len(self.offset) != len(global_range):
            raise exception(errc.nd_range, f"nd_range: offset {tuple(self.offset)} and global "
                            f"range {tuple(global_range)} have different dimensions")

    def get_global_range(self) -> range:
        return self.global_range

    def get_local_range(self) -> range:
        return self.local_range

    def get_group_range(self) -> range:
        return range(*(extent // local if local else 0
                       for extent, local in zip(self.global_range, self.local_range)))

    def get_offset(self) -> id:
        return self.offset

    @property
    def dims(self) -> int:
        return len(self.global_range)

    def __eq__(self, other):
        return isinstance(other, nd_range) and (self.global_range, self.local_range,
                                                self.offset) == (other.global_range,
                                                                 other.local_range, other.offset)

    def __hash__(self):
        return hash((self.global_range, self.local_range, self.offset))

    def __repr__(self):
        return f"nd_range({self.global_range!r}, {self.local_range!r})"


def as_range(value) -> range:
    """An int, tuple or ``range`` as a ``range``."""
    if type(value) is range:
        return value
    if isinstance(value, builtins.int) or hasattr(value, "__index__"):
        return range(value)
    if not isinstance(value, (tuple, list, _Index)):
        raise type_error(errc.nd_range, f"a range is an int, a tuple of ints or a sycl.range, "
                         f"not {value!r}")
    return range(*value)


class offset_range:
    """A ``range`` launched from ``offset`` (SYCL 2020's deprecated
    ``parallel_for(range, id offset, kernel)``, kept as SYCL 1.2.1 code writes it): the
    work-items' ids run from ``offset`` to ``offset + range``."""

    __slots__ = ("global_range", "offset")

    def __init__(self, global_range, offset):
        self.global_range = _launch_part(global_range, "range")
        self.offset = _launch_part(offset, "offset", id)
        if len(self.offset) != len(self.global_range):
            raise exception(errc.nd_range, f"parallel_for: offset {tuple(self.offset)} and "
                            f"range {tuple(self.global_range)} have different dimensions")

    def __repr__(self):
        return f"offset_range({self.global_range!r}, {self.offset!r})"


def launch_range(value) -> tuple[tuple[int, ...], tuple[int, ...] | None, tuple[int, ...]]:
    """``(global, local or None, offset)`` of what ``parallel_for`` takes: an
    ``nd_range``, a ``range``, a tuple of ints or an int (Python or NumPy); each checked
    here (integers in ``[0, 2**63)``, 1 to 3 dimensions), the device's limits at launch.
    A malformed range is ``errc.nd_range`` (and a ``TypeError`` / ``OverflowError``).

    >>> launch_range(8), launch_range((2, 3))[0]
    (((8,), None, (0,)), (2, 3))
    >>> launch_range(2.0)
    Traceback (most recent call last):
    ...
    pysycl.errors.type_error: a range is an int, a tuple of ints or a sycl.range, not 2.0
    """
    if isinstance(value, nd_range):
        return tuple(value.global_range), tuple(value.local_range), tuple(value.offset)
    if isinstance(value, offset_range):
        return tuple(value.global_range), None, tuple(value.offset)
    global_size = tuple(_launch_part(value, "range"))
    return global_size, None, _ZERO_OFFSETS[len(global_size)]


def _launch_part(value, what: str, kind=None):
    """``as_range(value)`` (``kind(*value)`` for an offset) with its errors as
    ``errc.nd_range``, of the same Python type."""
    try:
        if kind is None:
            return as_range(value)
        return kind(*value) if isinstance(value, (tuple, list, _Index)) else kind(value)
    except exception as e:
        if e.code() is errc.nd_range:
            raise
        raise type(e)(errc.nd_range, f"invalid {what} {value!r}: {e}") from None


_ZERO_OFFSETS = {1: (0,), 2: (0, 0), 3: (0, 0, 0)}

#: What ``single_task`` launches over, as ``launch_range`` gives it: one work-item in a
#: work-group of one (SYCL 2020 4.9.4.2.1); the kernel's index parameter is not checked.
SINGLE_TASK = ((1,), (1,), (0,))


class item:
    """``sycl.item[D]`` annotation."""

    def __class_getitem__(cls, dims):
        return types.index_annotation("item", dims)


class nd_item:
    """``sycl.nd_item[D]`` annotation."""

    def __class_getitem__(cls, dims):
        return types.index_annotation("nd_item", dims)
