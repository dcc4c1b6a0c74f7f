"""Deep copies of IR with fresh values (passes copy before they rewrite; unrolling clones
a loop body once per iteration).

``value_map`` maps values of the original to values of the copy. Operands not in the map
are kept as they are: a cloned region keeps using the values defined around it, unless
the caller maps them (as unrolling does to substitute constants).

>>> from .builder import Builder
>>> from .types import F32
>>> r = Region(); b = Builder(r); x = b.const(1.0, F32); _ = b.op("neg", x, type=F32)
>>> copy = clone_region(r, {})
>>> copy.ops[1].operands[0] is copy.ops[0].result
True
"""
from __future__ import annotations

from typing import Any

from .core import DeviceGlobalDecl, Function, Module, Op, Param, Region, SpecConstantDecl, Value


def copy_attr(v: Any) -> Any:
    """Attribute values are plain data; only the mutable containers need copying."""
    if isinstance(v, list):
        return [copy_attr(x) for x in v]
    if isinstance(v, tuple):
        return tuple(copy_attr(x) for x in v)
    if isinstance(v, dict):
        return {k: copy_attr(x) for k, x in v.items()}
    return v


def clone_op(op: Op, value_map: dict[Value, Value]) -> Op:
    """A copy of ``op`` and its regions; records the new result in ``value_map``."""
    new = Op(op.name, [value_map.get(v, v) for v in op.operands], op.type,
             copy_attr(op.attrs), [clone_region(r, value_map) for r in op.regions], op.loc)
    if op.result is not None:
        value_map[op.result] = new.result
    return new


def clone_region(r: Region, value_map: dict[Value, Value]) -> Region:
    """A deep copy of ``r``; ``value_map`` maps values defined outside it (and gains
    an entry for every result inside it).

    >>> clone_region(Region(), {}).ops
    []
    """
    return Region([clone_op(op, value_map) for op in r.ops])


def clone_function(f: Function, name: str | None = None) -> Function:
    """A deep copy of ``f``, renamed to ``name`` when given (inlining, per-kernel images)."""
    params = [Param(p.name, p.type, dict(p.properties)) for p in f.params]
    value_map = {old.value: new.value for old, new in zip(f.params, params)}
    body = None if f.body is None else clone_region(f.body, value_map)
    return Function(name or f.name, f.kind, params, f.return_type, body, f.loc,
                    dict(f.properties), copy_attr(f.attrs))


def clone_module(m: Module, name: str | None = None) -> Module:
    """A deep copy sharing nothing mutable with ``m``."""
    return Module(name or m.name, [clone_function(f) for f in m.functions],
                  [SpecConstantDecl(s.unique_id, s.type, bytes(s.default)) for s in m.spec_constants],
                  [DeviceGlobalDecl(d.unique_id, d.type, dict(d.properties), d.initial)
                   for d in m.device_globals],
                  copy_attr(m.attrs))
