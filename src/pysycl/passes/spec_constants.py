"""Specialization constants after link: numeric IDs, then one of three lowerings.

``assign_spec_constant_ids`` runs over the *linked* module (numeric IDs exist only
after link, so separately compiled modules never clash; DPC++'s "SpecConstantsPass").
Each scalar leaf gets one ID, depth-first through composites, constants taken in order
of first use by the kernels (then the remaining declared constants). The emulated
buffer puts every constant at the sum of the sizes of the constants with smaller IDs,
with no alignment padding between constants (as DPC++ lays them out: ``int``, ``A{int; {float,
float}}``, ``Nested{float, float}`` sit at 0, 4 and 16 = 4 + sizeof(A)); a composite's
own padding is kept inside its size. Emulated loads are therefore unaligned loads.

``lower_spec_constants`` rewrites every ``spec.get`` op in place:

* ``"literal"``: ``const`` with the value (a Python scalar, or ``bytes`` for composites);
* ``"emulated"``: ``spec.load {offset}`` from the implicit spec-constant buffer;
* ``"native"``: ``spec.native {leaf_ids, default}`` (SPIR-V ``OpSpecConstant``).

>>> from pysycl.ir.core import Module
>>> ids, blob = assign_spec_constant_ids(Module("empty"))
>>> ids, blob
({}, b'')
"""
from __future__ import annotations

from typing import Iterator, Mapping

import numpy as np

from .._records import Record
from ..errors import errc, exception
from ..ir.core import Function, Module, Op
from ..ir.types import ArrayType, ComplexType, ScalarType, StructType, Type, VecType

PADDING_LEAF_ID = 0xFFFFFFFF
LOWERINGS = ("literal", "emulated", "native")


class SpecConstantIds(Record):
    """The result of ``assign_spec_constant_ids``.

    ``ids``: symbolic ID -> ``[(leaf ID, offset in the constant, size), ...]`` (the
    ``SYCL/specialization constants`` property set); ``default_values``: every
    constant's default in ascending numeric-ID order (``SYCL/specialization constants
    default values`` ``all``, the emulated buffer's initial contents); ``offsets``:
    symbolic ID -> offset in that buffer. Unpacks as ``ids, default_values``.
    """

    _fields = ("ids", "default_values", "offsets", "types")
    ids: dict[str, list[tuple[int, int, int]]]
    default_values: bytes
    offsets: dict[str, int]
    types: dict[str, Type]

    def __init__(self, ids: dict[str, list[tuple[int, int, int]]], default_values: bytes,
                 offsets: dict[str, int], types: dict[str, Type]):
        self.ids = ids
        self.default_values = default_values
        self.offsets = offsets
        self.types = types

    def __iter__(self):
        return iter((self.ids, self.default_values))

    @property
    def order(self) -> list[str]:
        """Symbolic IDs in ascending numeric-ID order."""
        return list(self.offsets)

    def size_of(self, symbolic_id: str) -> int:
        return self.types[symbolic_id].size

    def buffer(self, values: Mapping[str, bytes] | None = None) -> bytes:
        """The emulated buffer: defaults overlaid with ``values`` (symbolic ID -> bytes)."""
        out = bytearray(self.default_values)
        for sym, raw in (values or {}).items():
            if sym in self.offsets:
                off, size = self.offsets[sym], self.size_of(sym)
                if len(raw) != size:
                    raise exception(errc.invalid, f"spec constant {sym}: value has {len(raw)} "
                                                  f"bytes, its type {self.types[sym]} has {size}")
                out[off:off + size] = raw
        return bytes(out)

    def value_bytes(self, symbolic_id: str, values: Mapping[str, bytes] | None = None) -> bytes:
        """The value of one constant: ``values[symbolic_id]`` or its default."""
        if values and symbolic_id in values:
            return values[symbolic_id]
        off = self.offsets[symbolic_id]
        return self.default_values[off:off + self.size_of(symbolic_id)]

    def native_values(self, values: Mapping[str, bytes] | None = None) -> dict[int, bytes]:
        """Leaf SpecId -> value bytes, for ``Driver.load(spec_constants=...)``.

        Only constants with a set value are listed (the others keep the defaults the
        image carries), like DPC++'s ``SetSpecializationConstant`` calls per descriptor.
        """
        out: dict[int, bytes] = {}
        for sym, raw in (values or {}).items():
            for leaf, off, size in self.ids.get(sym, ()):
                if leaf != PADDING_LEAF_ID:
                    out[leaf] = bytes(raw[off:off + size])
        return out

    def restricted_to(self, used: list[str]) -> "SpecConstantIds":
        """The same numeric IDs for a subset of the constants (one device image after the
        per-kernel split), with that image's own buffer layout and default blob."""
        keep = [s for s in self.offsets if s in set(used)]
        offsets, blob, pos = {}, bytearray(), 0
        for sym in keep:
            offsets[sym] = pos
            blob += self.value_bytes(sym)
            pos += self.size_of(sym)
        return SpecConstantIds({s: list(self.ids[s]) for s in keep}, bytes(blob), offsets,
                               {s: self.types[s] for s in keep})


# -- traversal ---------------------------------------------------------------------------

def _spec_uses(fn: Function, module: Module, seen_fns: set[str]) -> Iterator[str]:
    """Symbolic IDs read by ``fn`` and, depth-first at each call, by its callees."""
    if fn.name in seen_fns:
        return
    seen_fns.add(fn.name)
    for op in fn.walk():
        if op.name == "spec.get":
            yield op.attrs["id"]
        elif op.name == "call":
            callee = module.get_function(op.attrs["callee"])
            if callee is not None and not callee.is_declaration:
                yield from _spec_uses(callee, module, seen_fns)


def spec_constants_used(module: Module, roots: list[str] | None = None) -> list[str]:
    """Symbolic IDs read by the kernels (or by ``roots``), in order of first use."""
    order: list[str] = []
    seen: set[str] = set()
    fns = ([module.function(r) for r in roots] if roots is not None else module.kernels)
    for fn in fns:
        for sym in _spec_uses(fn, module, set()):
            if sym not in seen:
                seen.add(sym)
                order.append(sym)
    return order


def _leaves(t: Type, base: int, next_id: list[int], out: list) -> None:
    """Depth-first leaves of ``t``: (ID, offset, size); padding inside or at the end of a
    struct gets ``PADDING_LEAF_ID`` and consumes no ID (DPC++'s sycl-post-link)."""
    if isinstance(t, ScalarType):
        out.append((next_id[0], base, t.size))
        next_id[0] += 1
    elif isinstance(t, ComplexType):     # std::complex: a struct {re, im}
        for i in range(2):
            _leaves(t.elem, base + i * t.elem.size, next_id, out)
    elif isinstance(t, VecType):
        for i in range(t.n):
            _leaves(t.elem, base + i * t.elem.size, next_id, out)
        if t.n == 3:  # a 3-vector takes the space of 4
            out.append((PADDING_LEAF_ID, base + 3 * t.elem.size, t.elem.size))
    elif isinstance(t, ArrayType):
        for i in range(t.n):
            _leaves(t.elem, base + i * t.elem.size, next_id, out)
    elif isinstance(t, StructType):
        cursor = 0
        for f in t.fields:
            if f.offset < cursor:
                raise exception(errc.build, "overlapping struct fields (unions) cannot be "
                                            "specialization constants")
            if f.offset > cursor:
                out.append((PADDING_LEAF_ID, base + cursor, f.offset - cursor))
            _leaves(f.type, base + f.offset, next_id, out)
            cursor = f.offset + f.type.size
        if t.size > cursor:
            out.append((PADDING_LEAF_ID, base + cursor, t.size - cursor))
    else:
        raise exception(errc.build, f"type {t} is not a scalar, complex, vec, array or struct")


def assign_spec_constant_ids(module: Module, start: int = 0) -> SpecConstantIds:
    """Numeric IDs for every specialization constant of a linked module (see module doc).

    The module's ``spec_constants`` list must declare every symbolic ID that a
    ``spec.get`` reads (type and default bytes); a read of an undeclared ID is
    ``errc.build``. Recorded on the module as ``attrs["spec_constant_ids"]``.

    >>> # ids.ids == {"id_int": [(0,0,4)], "id_A": [(1,0,4),(2,4,4),(3,8,4)], ...}
    """
    decls = {s.unique_id: s for s in module.spec_constants}
    order = spec_constants_used(module)
    for sym in order:
        if sym not in decls:
            raise exception(errc.build, f"specialization constant {sym} is read by a kernel "
                                        "but not declared in the linked module")
    order += [s for s in decls if s not in set(order)]
    ids: dict[str, list[tuple[int, int, int]]] = {}
    offsets: dict[str, int] = {}
    types: dict[str, Type] = {}
    blob = bytearray()
    next_id = [int(start)]
    for sym in order:
        decl = decls[sym]
        leaves: list[tuple[int, int, int]] = []
        try:
            _leaves(decl.type, 0, next_id, leaves)
        except exception as e:
            raise exception(errc.build, f"specialization constant {sym}: {e}") from None
        default = bytes(decl.default) if decl.default else bytes(decl.type.size)
        if len(default) != decl.type.size:
            raise exception(errc.build, f"specialization constant {sym}: default has "
                                        f"{len(default)} bytes, type {decl.type} has {decl.type.size}")
        ids[sym] = [tuple(leaf) for leaf in leaves]
        offsets[sym] = len(blob)
        types[sym] = decl.type
        blob += default
    result = SpecConstantIds(ids, bytes(blob), offsets, types)
    module.attrs["spec_constant_ids"] = {s: [list(l) for l in v] for s, v in ids.items()}
    return result


# -- lowering ----------------------------------------------------------------------------

def _scalar_value(t: ScalarType, raw: bytes):
    v = np.frombuffer(raw, dtype=t.dtype, count=1)[0]
    return v.item()


def literal_value(t: Type, raw: bytes):
    """The ``const`` attribute for a value of type ``t``: a Python scalar or the bytes."""
    if isinstance(t, ScalarType):
        return _scalar_value(t, raw)
    return bytes(raw)


def lower_spec_constants(module: Module, ids: SpecConstantIds, mode: str,
                         values: Mapping[str, bytes] | None = None) -> Module:
    """Rewrite every ``spec.get`` of ``module`` in place for ``mode`` (see module doc).

    ``values`` (symbolic ID -> bytes) are used by ``"literal"``; unset constants take
    their defaults. Offsets for ``"emulated"`` are ``ids.offsets`` (the image's buffer).
    """
    if mode not in LOWERINGS:
        raise exception(errc.invalid, f"unknown spec constant lowering {mode!r}")
    for fn in module.functions:
        for op in fn.walk():
            if op.name != "spec.get":
                continue
            sym = op.attrs["id"]
            if sym not in ids.ids:
                raise exception(errc.build, f"specialization constant {sym} has no numeric ID")
            _lower_op(op, sym, ids, mode, values)
    module.attrs["spec_constant_lowering"] = mode
    return module


def _lower_op(op: Op, sym: str, ids: SpecConstantIds, mode: str, values) -> None:
    if mode == "literal":
        op.name, op.attrs = "const", {"value": literal_value(op.type, ids.value_bytes(sym, values))}
    elif mode == "emulated":
        op.name, op.attrs = "spec.load", {"offset": ids.offsets[sym]}
    else:
        leaf_ids = tuple(l for l, _o, _s in ids.ids[sym] if l != PADDING_LEAF_ID)
        op.name, op.attrs = "spec.native", {"leaf_ids": leaf_ids,
                                            "default": ids.value_bytes(sym)}
