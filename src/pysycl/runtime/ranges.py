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

from .. import types
from ..errors import errc, exception


def _dims(name: str, dims) -> tuple[int, ...]:
    if len(dims) == 1 and isinstance(dims[0], (tuple, list, _Index)):
        dims = tuple(dims[0])
    if not 1 <= len(dims) <= 3:
        raise exception(errc.invalid, f"sycl.{name} has 1, 2 or 3 dimensions, not {len(dims)}")
    out = []
    for d in dims:
        try:
            v = d.__index__()
        except AttributeError:
            raise exception(errc.invalid, f"sycl.{name} dimensions are integers, not {d!r}") \
                from None
        if v < 0:
            raise exception(errc.invalid, f"sycl.{name} dimensions are >= 0, not {v}")
        out.append(v)
    return tuple(out)


class _Index(tuple):
    """Shared body of ``range`` and ``id``: a tuple of 1..3 non-negative ints."""

    _kind = "range"

    def __new__(cls, *dims):
        if len(dims) == 1:  # the common 1-D case, checked inline
            d = dims[0]
            if type(d) is int and d >= 0:
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
        g = as_range(global_range)
        l = as_range(local_range)
        if len(g) != len(l):
            raise exception(errc.nd_range, f"nd_range: global range {tuple(g)} and local "
                            f"range {tuple(l)} have different dimensions")
        self.global_range = g
        self.local_range = l
        self.offset = id(*offset) if offset is not None else id(*(0,) * len(g))

    def get_global_range(self) -> range:
        return self.global_range

    def get_local_range(self) -> range:
        return self.local_range

    def get_group_range(self) -> range:
        return range(*(g // l if l else 0 for g, l in zip(self.global_range, self.local_range)))

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
    return range(*value)


class item:
    """``sycl.item[D]`` annotation."""

    def __class_getitem__(cls, dims):
        return types.index_annotation("item", dims)


class nd_item:
    """``sycl.nd_item[D]`` annotation."""

    def __class_getitem__(cls, dims):
        return types.index_annotation("nd_item", dims)
