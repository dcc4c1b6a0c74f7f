"""Structural equality of modules: same ops, attributes (floats bit for bit), types,
locations and value wiring, whatever the ``Value`` objects are.

``core`` classes compare by identity (an op is a node of a graph), so tests and the
bundle reader use this to say "the parser gave back the module that was printed".

>>> from .core import Module
>>> module_difference(Module("a"), Module("b"))
"module name 'a' != 'b'"
"""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .core import Function, Module, Op, Region, Value


def structurally_equal(a: Module, b: Module) -> bool:
    """Whether ``a`` and ``b`` are the same module up to value names.

    >>> structurally_equal(Module("m"), Module("m"))
    True
    """
    return module_difference(a, b) is None


def module_difference(a: Module, b: Module) -> str | None:
    """A description of the first difference between ``a`` and ``b``, or None."""
    if a.name != b.name:
        return f"module name {a.name!r} != {b.name!r}"
    if attr_key(a.attrs) != attr_key(b.attrs):
        return "module attributes differ"
    if [(s.unique_id, s.type, bytes(s.default)) for s in a.spec_constants] != \
            [(s.unique_id, s.type, bytes(s.default)) for s in b.spec_constants]:
        return "spec constant declarations differ"
    if [(d.unique_id, d.type, d.properties) for d in a.device_globals] != \
            [(d.unique_id, d.type, d.properties) for d in b.device_globals]:
        return "device_global declarations differ"
    if [f.name for f in a.functions] != [f.name for f in b.functions]:
        return "function lists differ"
    for fa, fb in zip(a.functions, b.functions):
        diff = function_difference(fa, fb)
        if diff:
            return f"function {fa.name!r}: {diff}"
    return None


def function_difference(a: Function, b: Function) -> str | None:
    """A description of the first difference between two functions, or None (the
    parameters of ``a`` are matched with those of ``b`` in order)."""
    head = lambda f: (f.name, f.kind, f.return_type, f.loc, f.properties, attr_key(f.attrs),
                      [(p.name, p.type, p.properties) for p in f.params], f.body is None)
    if head(a) != head(b):
        return "headers differ"
    mapping = {pa.value: pb.value for pa, pb in zip(a.params, b.params)}
    return None if a.body is None else _region_difference(a.body, b.body, mapping)


def _region_difference(a: Region, b: Region, mapping: dict[Value, Value]) -> str | None:
    if len(a.ops) != len(b.ops):
        return f"region of {len(a.ops)} ops vs {len(b.ops)}"
    for oa, ob in zip(a.ops, b.ops):
        diff = _op_difference(oa, ob, mapping)
        if diff:
            return diff
    return None


def _op_difference(a: Op, b: Op, mapping: dict[Value, Value]) -> str | None:
    if (a.name, a.type, a.loc, len(a.regions)) != (b.name, b.type, b.loc, len(b.regions)):
        return f"op {a.name} at {a.loc} vs {b.name} at {b.loc}"
    if attr_key(a.attrs) != attr_key(b.attrs):
        return f"attributes of {a.name} at {a.loc} differ"
    if len(a.operands) != len(b.operands) or any(
            mapping.get(va, va) is not vb for va, vb in zip(a.operands, b.operands)):
        return f"operands of {a.name} at {a.loc} differ"
    for ra, rb in zip(a.regions, b.regions):
        diff = _region_difference(ra, rb, mapping)
        if diff:
            return diff
    if a.result is not None:
        mapping[a.result] = b.result
    return None


def attr_key(v: Any) -> Any:
    """A hashable key equal for attribute values that print the same (floats by bits)."""
    if isinstance(v, (bool, np.bool_)):
        return ("b", bool(v))
    if isinstance(v, (int, np.integer)):
        return ("i", int(v))
    if isinstance(v, (float, np.floating)):
        return ("f", struct.pack("<d", float(v)))
    if isinstance(v, (bytes, bytearray)):
        return ("y", bytes(v))
    if isinstance(v, list):
        return ("l", tuple(attr_key(x) for x in v))
    if isinstance(v, tuple):
        return ("t", tuple(attr_key(x) for x in v))
    if isinstance(v, dict):
        return ("d", tuple(sorted((k, attr_key(x)) for k, x in v.items())))
    return ("v", type(v).__name__, v)
