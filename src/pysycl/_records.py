"""Value classes written out by hand, for the classes a program creates on its way to its
first kernel build (imports, decorators, the first queue, the first build):
``@dataclasses.dataclass`` builds each class by ``exec``-ing generated source (about
1 ms a class on the benchmark machine, ~50 of them); these cost nothing to create. Each class writes its own ``__init__`` (so the constructor's signature and
speed are those of the dataclass) and names its fields in ``_fields``, in order; the
base classes give exactly the methods the dataclass options gave:

* :class:`FrozenValue` = ``@dataclass(frozen=True)``: ``==`` true only between instances
  of the same class whose field tuples are equal (``NotImplemented`` otherwise),
  ``hash`` of the field tuple, ``repr`` ``Name(field=value, ...)`` and
  ``dataclasses.FrozenInstanceError`` on assignment or deletion; ``copy``, ``deepcopy``
  and ``pickle`` work. ``__slots__``: set the fields with ``object.__setattr__`` in
  ``__init__``.
* :class:`Record` = ``@dataclass``: ``==`` and ``repr`` as above, mutable, unhashable
  (``eq=True`` without ``frozen`` sets ``__hash__ = None``); ``_repr_fields`` leaves
  ``field(repr=False)`` fields out of the ``repr``, ``_eq_fields`` ``compare=False``
  ones out of ``==``.
* :class:`IdentityRecord` = ``@dataclass(eq=False)``: ``repr`` only; ``==`` and
  ``hash`` by identity.

>>> class P(FrozenValue):
...     __slots__ = _fields = ("x", "y")
...     def __init__(self, x, y=0):
...         object.__setattr__(self, "x", x)
...         object.__setattr__(self, "y", y)
>>> P(1) == P(1, 0), hash(P(1)) == hash((1, 0)), P(1)
(True, True, P(x=1, y=0))
"""
from __future__ import annotations

import _thread

_repr_running: set = set()


def _frozen(self, name, value=None):
    from dataclasses import FrozenInstanceError
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _repr(self, fields) -> str:
    key = (id(self), _thread.get_ident())
    if key in _repr_running:   # a value that contains itself (dataclasses print "...")
        return "..."
    _repr_running.add(key)
    try:
        body = ", ".join([f"{f}={getattr(self, f)!r}" for f in fields])
    finally:
        _repr_running.discard(key)
    return f"{type(self).__qualname__}({body})"


class FrozenValue:
    """Base of the frozen value classes (see the module docstring)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    __setattr__ = _frozen
    __delattr__ = _frozen

    def _astuple(self) -> tuple:
        return tuple([getattr(self, f) for f in self._fields])

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._astuple() == other._astuple()
        return NotImplemented

    def __hash__(self):
        return hash(self._astuple())

    def __repr__(self) -> str:
        return _repr(self, self._fields)

    # copy, deepcopy and pickle set the fields of a new instance through these (the
    # frozen ``__setattr__`` would refuse), as ``dataclass(frozen=True, slots=True)`` does.
    def __getstate__(self) -> list:
        return [getattr(self, f) for f in self._fields]

    def __setstate__(self, state: list) -> None:
        for f, v in zip(self._fields, state):
            object.__setattr__(self, f, v)


class Record:
    """Base of the mutable record classes (see the module docstring)."""

    _fields: tuple[str, ...] = ()
    _eq_fields: tuple[str, ...] | None = None     # None: all of _fields
    _repr_fields: tuple[str, ...] | None = None   # None: all of _fields

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            fields = self._fields if self._eq_fields is None else self._eq_fields
            return tuple([getattr(self, f) for f in fields]) == \
                tuple([getattr(other, f) for f in fields])
        return NotImplemented

    def __repr__(self) -> str:
        return _repr(self, self._fields if self._repr_fields is None else self._repr_fields)


class IdentityRecord:
    """Base of the record classes compared by identity (see the module docstring)."""

    _fields: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return _repr(self, self._fields)
