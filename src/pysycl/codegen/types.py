"""IR types -> llvmlite types, for one target's address-space numbering.

Two views of a type: the *value* type lives in registers (``bool`` is ``i1``) and the
*memory* type is how the value is laid out in bytes (``bool`` is ``i8``, as in C and
NumPy). Composites only ever exist in memory form, so a struct field or array element of
type ``bool`` is an ``i8`` even inside a register value; the rules convert at
``struct.get``/``load`` and friends. Structs become packed LLVM structs with explicit
``[n x i8]`` padding so the IR's C layout (offsets, over-alignment) is kept byte for byte
whatever the target's data layout says.

>>> str(memory_type(ir_types.BOOL, {}))
'i8'
"""
from __future__ import annotations

import functools
from typing import Mapping

from llvmlite import ir as ll

from ..ir import types as ir_types
from ..ir.types import (AccessorType, ArrayType, ComplexType, IndexSpaceType,
                        LocalAccessorType, PointerType, ScalarType, StructType, TupleType, Type,
                        VecType, VoidType)

I1, I8, I32, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(32), ll.IntType(64)
VOID = ll.VoidType()

_SCALAR_LL = {
    "bool": I1, "i8": I8, "i16": ll.IntType(16), "i32": I32, "i64": I64,
    "u8": I8, "u16": ll.IntType(16), "u32": I32, "u64": I64,
    "f16": ll.HalfType(), "f32": ll.FloatType(), "f64": ll.DoubleType(),
}


def pointer(space: str, addrspaces: Mapping[str, int]) -> ll.PointerType:
    """An opaque pointer in the IR address space ``space``."""
    return ll.PointerType(addrspace=addrspaces.get(space, 0))


def value_type(t: Type, addrspaces: Mapping[str, int]) -> ll.Type:
    """The register type of an IR value."""
    if isinstance(t, ScalarType):
        return _SCALAR_LL[t.name]
    if isinstance(t, VecType):
        return ll.VectorType(_SCALAR_LL[t.elem.name], t.n)
    if isinstance(t, TupleType):
        return ll.LiteralStructType([value_type(e, addrspaces) for e in t.elems])
    return memory_type(t, addrspaces)


def complex_type(t: ComplexType) -> ll.LiteralStructType:
    """``{T, T}`` (real, imaginary): the layout of ``std::complex<T>`` and of NumPy's
    complex dtypes, and clang's IR for ``_Complex``. Not ``<2 x T>``: LLVM's loop
    vectoriser gives up on a loop with any vector-typed instruction, while the loads and
    stores of a two-field struct are split into scalar ones (InstCombine) whose
    interleaved accesses it vectorises across work-items. A complex kernel parameter is
    an aggregate (pointer to the bytes, ``byval`` on SPIR-V and PTX)."""
    elem = _SCALAR_LL[t.elem.name]
    return ll.LiteralStructType([elem, elem])


def memory_type(t: Type, addrspaces: Mapping[str, int]) -> ll.Type:
    """The in-memory type of an IR value (``bool`` -> ``i8``)."""
    if isinstance(t, ScalarType):
        return I8 if t.is_bool else _SCALAR_LL[t.name]
    if isinstance(t, VecType):
        return ll.VectorType(I8 if t.elem.is_bool else _SCALAR_LL[t.elem.name], t.n)
    if isinstance(t, ComplexType):
        return complex_type(t)
    if isinstance(t, ArrayType):
        return ll.ArrayType(memory_type(t.elem, addrspaces), t.n)
    if isinstance(t, StructType):
        return _struct_type(t, tuple(sorted(addrspaces.items())))
    if isinstance(t, TupleType):
        return ll.LiteralStructType([memory_type(e, addrspaces) for e in t.elems])
    if isinstance(t, PointerType):
        return pointer(t.space, addrspaces)
    if isinstance(t, VoidType):
        return VOID
    raise TypeError(f"type {t} has no LLVM memory representation")


@functools.lru_cache(maxsize=None)
def _struct_type(t: StructType, addrspaces: tuple) -> ll.Type:
    elems, _ = _struct_layout(t, dict(addrspaces))
    return ll.LiteralStructType(elems, packed=True)


def _struct_layout(t: StructType, addrspaces) -> tuple[list[ll.Type], list[int]]:
    elems: list[ll.Type] = []
    index_of_field: list[int] = []
    pos = 0
    for f in sorted(t.fields, key=lambda f: f.offset):
        if f.offset > pos:
            elems.append(ll.ArrayType(I8, f.offset - pos))
        index_of_field.append(len(elems))
        elems.append(memory_type(f.type, addrspaces))
        pos = f.offset + f.type.size
    if t.size_ > pos:
        elems.append(ll.ArrayType(I8, t.size_ - pos))
    return elems, index_of_field


def field_index(t: StructType, field) -> tuple[int, Type]:
    """LLVM element index and IR type of ``field`` (a name or a field number)."""
    i = field if isinstance(field, int) else t.field_index(field)
    order = sorted(range(len(t.fields)), key=lambda k: t.fields[k].offset)
    _, idx = _struct_layout(t, {})
    return idx[order.index(i)], t.fields[i].type


def is_expanded(t: Type) -> bool:
    """Accessor-like parameters that expand to several LLVM parameters (base.py ABI)."""
    return isinstance(t, (AccessorType, LocalAccessorType))


def has_storage(t: Type) -> bool:
    """Index-space objects (``nd_item`` ...) exist only at compile time."""
    return not isinstance(t, (IndexSpaceType, VoidType))


def is_aggregate(t: Type) -> bool:
    return isinstance(t, (StructType, ArrayType, ComplexType))


__all__ = ["value_type", "memory_type", "complex_type", "pointer", "field_index", "is_expanded",
           "has_storage", "is_aggregate", "I1", "I8", "I32", "I64", "VOID", "ir_types"]


def gep(builder, ptr, indices, etype, inbounds: bool = False):
    """``getelementptr`` that works for typed and opaque llvmlite pointers.

    llvmlite computes the result type from ``source_etype`` without stepping into it
    when the pointer is typed (an alloca), so a struct-field GEP came back typed as the
    struct pointer and the following store was rejected; typed pointers carry their
    element type anyway, so it is passed only for opaque ones (parameters)."""
    if getattr(ptr.type, "is_opaque", False):
        return builder.gep(ptr, indices, inbounds=inbounds, source_etype=etype)
    return builder.gep(ptr, indices, inbounds=inbounds)


class AttributedGlobal(ll.GlobalVariable):
    """A global variable with LLVM string attributes (``"sycl-unique-id"="..."``), which
    llvmlite cannot print: the definition ends with ``#N`` and the attribute group
    follows it (LLVM reads an ``attributes`` line anywhere at module level)."""

    #: Attribute group numbers from here up: llvmlite prints function attributes inline,
    #: so no other group uses them.
    FIRST_GROUP = 1000

    attributes_text = ""
    group = FIRST_GROUP

    def descr(self, buf):
        super().descr(buf)
        if self.attributes_text:
            buf[-1:] = [f" #{self.group}\n",
                        f"attributes #{self.group} = {{ {self.attributes_text} }}\n"]

