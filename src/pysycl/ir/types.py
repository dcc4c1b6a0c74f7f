"""IR types. Every type prints to one canonical string and parses back from it.

Scalars use NumPy names in short form (``i32``, ``u8``, ``f32``, ``bool``); pointers carry
their address space so each target maps it once.

>>> parse_type(str(PointerType(F32, "global")))
PointerType(pointee=ScalarType(name='f32'), space='global')
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from .._records import FrozenValue

ADDRESS_SPACES = ("private", "global", "local", "constant", "generic")
ACCESS_MODES = ("read_only", "write_only", "read_write")

_SCALAR_DTYPES = {
    "bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
}


class Type(FrozenValue):
    """Base of IR types: frozen value classes (hashable, comparable; _records.py), each
    written out by hand with the semantics of a frozen dataclass: equal when of the same
    class with equal fields, hashed by the field tuple, ``repr`` ``Name(field=...)``."""

    __slots__ = ()

    def __str__(self) -> str:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    @property
    def size(self) -> int:
        raise TypeError(f"type {self} has no storage size")

    @property
    def align(self) -> int:
        raise TypeError(f"type {self} has no alignment")


_set = object.__setattr__


class VoidType(Type):
    __slots__ = _fields = ()

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return True
        return NotImplemented

    def __hash__(self):
        return hash(())

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}()"

    def __str__(self) -> str:
        return "void"


class ScalarType(Type):
    __slots__ = _fields = ("name",)
    name: str  # one of _SCALAR_DTYPES

    def __init__(self, name: str):
        _set(self, "name", name)
        if name not in _SCALAR_DTYPES:
            raise ValueError(f"unknown scalar type {name!r}")

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return (self.name,) == (other.name,)
        return NotImplemented

    def __hash__(self):
        return hash((self.name,))

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(name={self.name!r})"

    def __str__(self) -> str:
        return self.name

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(_SCALAR_DTYPES[self.name])

    @property
    def size(self) -> int:
        return self.dtype.itemsize

    @property
    def align(self) -> int:
        return self.dtype.itemsize

    @property
    def is_float(self) -> bool:
        return self.name.startswith("f")

    @property
    def is_int(self) -> bool:
        return self.name[0] in "iu"

    @property
    def is_signed(self) -> bool:
        return self.name[0] == "i"

    @property
    def is_bool(self) -> bool:
        return self.name == "bool"

    @property
    def bits(self) -> int:
        return 1 if self.is_bool else self.size * 8


class ComplexType(Type):
    """A complex number of two ``elem`` floats (real, imaginary), NumPy's ``complex64``
    (f32) and ``complex128`` (f64), printed as NumPy's short names ``c64``/``c128``.
    C++ ``std::complex<T>`` layout: two T, aligned as T."""

    __slots__ = _fields = ("elem",)
    elem: ScalarType

    def __init__(self, elem: ScalarType):
        _set(self, "elem", elem)
        if elem.name not in ("f32", "f64"):
            raise ValueError(f"no complex type of {elem}")

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self.elem == other.elem
        return NotImplemented

    def __hash__(self):
        return hash(("complex", self.elem))

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(elem={self.elem!r})"

    def __str__(self) -> str:
        return f"c{self.elem.size * 16}"

    def const_bytes(self, value) -> bytes:
        """A complex number (a Python or NumPy number) as the IR's form of a complex
        constant: its little-endian bytes."""
        return np.array(value, dtype=self.dtype.newbyteorder("<")).tobytes()

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.complex64 if self.elem.size == 4 else np.complex128)

    @property
    def size(self) -> int:
        return 2 * self.elem.size

    @property
    def align(self) -> int:
        return self.elem.size


class _ElementsType(Type):
    """``n`` elements of one type (vectors and arrays): equality and hash written out,
    types are compared and hashed all through the compiler."""

    __slots__ = _fields = ("elem", "n")
    elem: Type
    n: int

    def __init__(self, elem: Type, n: int):
        _set(self, "elem", elem)
        _set(self, "n", n)

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self.elem == other.elem and self.n == other.n
        return NotImplemented

    def __hash__(self):
        return hash((self.elem, self.n))


class VecType(_ElementsType):
    """``sycl.vec``: C++ ``vec<T,n>`` size and alignment (a 3-vector takes 4 slots)."""

    __slots__ = ()
    elem: ScalarType

    def __str__(self) -> str:
        return f"vec<{self.elem},{self.n}>"

    @property
    def size(self) -> int:
        return self.elem.size * (4 if self.n == 3 else self.n)

    @property
    def align(self) -> int:
        return self.size


class ArrayType(_ElementsType):
    __slots__ = ()

    def __str__(self) -> str:
        return f"[{self.n} x {self.elem}]"

    @property
    def size(self) -> int:
        return self.elem.size * self.n

    @property
    def align(self) -> int:
        return self.elem.align


class StructField(FrozenValue):
    __slots__ = _fields = ("name", "type", "offset")
    name: str
    type: Type
    offset: int

    def __init__(self, name: str, type: Type, offset: int):
        _set(self, "name", name)
        _set(self, "type", type)
        _set(self, "offset", offset)


class StructType(Type):
    """A C-layout struct with explicit offsets (padding and over-alignment are kept)."""

    __slots__ = _fields = ("name", "fields", "size_", "align_")
    name: str
    fields: tuple[StructField, ...]
    size_: int
    align_: int

    def __init__(self, name: str, fields: tuple[StructField, ...], size_: int, align_: int):
        _set(self, "name", name)
        _set(self, "fields", fields)
        _set(self, "size_", size_)
        _set(self, "align_", align_)

    def __str__(self) -> str:
        body = ",".join(f"{f.name}:{f.type}@{f.offset}" for f in self.fields)
        return f"struct {self.name}{{{body};size={self.size_};align={self.align_}}}"

    @property
    def size(self) -> int:
        return self.size_

    @property
    def align(self) -> int:
        return self.align_

    def field(self, name: str) -> StructField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def field_index(self, name: str) -> int:
        for i, f in enumerate(self.fields):
            if f.name == name:
                return i
        raise KeyError(name)


class TupleType(Type):
    __slots__ = _fields = ("elems",)
    elems: tuple[Type, ...]

    def __init__(self, elems: tuple[Type, ...]):
        _set(self, "elems", elems)

    def __str__(self) -> str:
        return "tuple<" + ",".join(str(e) for e in self.elems) + ">"


class PointerType(Type):
    __slots__ = _fields = ("pointee", "space")
    pointee: Type
    space: str

    def __init__(self, pointee: Type, space: str = "global"):
        _set(self, "pointee", pointee)
        _set(self, "space", space)
        if space not in ADDRESS_SPACES:
            raise ValueError(f"unknown address space {space!r}")

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return (self.pointee, self.space) == (other.pointee, other.space)
        return NotImplemented

    def __hash__(self):
        return hash((self.pointee, self.space))

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(pointee={self.pointee!r}, space={self.space!r})"

    def __str__(self) -> str:
        return f"ptr<{self.space},{self.pointee}>"

    @property
    def size(self) -> int:
        return 8

    @property
    def align(self) -> int:
        return 8


class AccessorType(Type):
    """A buffer accessor parameter: element pointer + memory range + linear offset."""

    __slots__ = _fields = ("elem", "dims", "mode")
    elem: Type
    dims: int
    mode: str

    def __init__(self, elem: Type, dims: int, mode: str = "read_write"):
        _set(self, "elem", elem)
        _set(self, "dims", dims)
        _set(self, "mode", mode)
        if mode not in ACCESS_MODES:
            raise ValueError(f"unknown access mode {mode!r}")

    def __str__(self) -> str:
        return f"accessor<{self.elem},{self.dims},{self.mode}>"


class LocalAccessorType(Type):
    __slots__ = _fields = ("elem", "dims")
    elem: Type
    dims: int

    def __init__(self, elem: Type, dims: int):
        _set(self, "elem", elem)
        _set(self, "dims", dims)

    def __str__(self) -> str:
        return f"local_accessor<{self.elem},{self.dims}>"


class IndexSpaceType(Type):
    """Work-item objects and index tuples: ``id``, ``range``, ``item``, ``nd_item``,
    ``group``, ``sub_group``, ``kernel_handler``. They have no storage of their own."""

    __slots__ = _fields = ("kind", "dims")
    kind: str
    dims: int

    def __init__(self, kind: str, dims: int = 0):
        _set(self, "kind", kind)
        _set(self, "dims", dims)

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return (self.kind, self.dims) == (other.kind, other.dims)
        return NotImplemented

    def __hash__(self):
        return hash((self.kind, self.dims))

    def __str__(self) -> str:
        return f"{self.kind}<{self.dims}>" if self.dims else self.kind


# Canonical instances -------------------------------------------------------------
VOID = VoidType()
BOOL = ScalarType("bool")
I8, I16, I32, I64 = (ScalarType(n) for n in ("i8", "i16", "i32", "i64"))
U8, U16, U32, U64 = (ScalarType(n) for n in ("u8", "u16", "u32", "u64"))
F16, F32, F64 = (ScalarType(n) for n in ("f16", "f32", "f64"))
SCALARS = {n: ScalarType(n) for n in _SCALAR_DTYPES}
C64, C128 = ComplexType(F32), ComplexType(F64)
COMPLEX = {"c64": C64, "c128": C128}
#: The types of numbers: what arithmetic, math functions and NumPy promotion act on.
NUMBER_TYPES = (ScalarType, ComplexType)
INDEX_KINDS = ("id", "range", "item", "nd_item", "group", "sub_group", "kernel_handler")


def scalar_from_dtype(dtype) -> ScalarType:
    dt = np.dtype(dtype)
    for name, t in _SCALAR_DTYPES.items():
        if np.dtype(t) == dt:
            return SCALARS[name]
    raise TypeError(f"no scalar IR type for dtype {dt}")


def number_from_dtype(dtype) -> ScalarType | ComplexType:
    """The scalar or complex IR type of a NumPy number dtype (``TypeError`` otherwise).

    >>> number_from_dtype(np.complex64)
    ComplexType(elem=ScalarType(name='f32'))
    """
    dt = np.dtype(dtype)
    if dt == np.complex64:
        return C64
    if dt == np.complex128:
        return C128
    return scalar_from_dtype(dt)


def type_from_dtype(dtype, name: str | None = None) -> Type:
    """Map a NumPy dtype (scalar, structured, sub-array) to an IR type, keeping C layout."""
    dt = np.dtype(dtype)
    vec_n = (dt.metadata or {}).get("pysycl_vec")
    if vec_n and dt.subdtype is not None:
        return VecType(scalar_from_dtype(dt.subdtype[0]), int(vec_n))
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        t = type_from_dtype(base)
        for n in reversed(shape):
            t = ArrayType(t, int(n))
        return t
    if dt.fields is not None:
        fields = []
        for fname in dt.names:
            fdt, off = dt.fields[fname][:2]
            fields.append(StructField(fname, type_from_dtype(fdt), int(off)))
        align = max([1] + [f.type.align for f in fields])
        align = max(align, dt.alignment, int((dt.metadata or {}).get("pysycl_align", 1)))
        return StructType(name or _struct_name(dt), tuple(fields), dt.itemsize, align)
    return number_from_dtype(dt)


def _struct_name(dt: np.dtype) -> str:
    meta = dt.metadata or {}
    return str(meta.get("pysycl_name", "anon"))


def dtype_of(t: Type) -> np.dtype:
    """The NumPy dtype with the same layout as ``t`` (inverse of :func:`type_from_dtype`)."""
    if isinstance(t, (ScalarType, ComplexType)):
        return t.dtype
    if isinstance(t, VecType):
        return np.dtype((t.elem.dtype, (4 if t.n == 3 else t.n,)))
    if isinstance(t, ArrayType):
        return np.dtype((dtype_of(t.elem), (t.n,)))
    if isinstance(t, StructType):
        return np.dtype({"names": [f.name for f in t.fields],
                         "formats": [dtype_of(f.type) for f in t.fields],
                         "offsets": [f.offset for f in t.fields],
                         "itemsize": t.size_}, align=False)
    raise TypeError(f"type {t} has no NumPy dtype")


# Parsing -------------------------------------------------------------------------
class _TypeLexer:
    def __init__(self, text: str):
        self.text, self.pos = text, 0

    def peek(self) -> str:
        self._skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _skip(self):
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def expect(self, s: str):
        self._skip()
        if not self.text.startswith(s, self.pos):
            raise ValueError(f"expected {s!r} at {self.pos} in type {self.text!r}")
        self.pos += len(s)

    def word(self) -> str:
        self._skip()
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] in "_."):
            self.pos += 1
        if start == self.pos:
            raise ValueError(f"expected a name at {start} in type {self.text!r}")
        return self.text[start:self.pos]


def parse_type(text: str) -> Type:
    lx = _TypeLexer(text)
    t = _parse(lx)
    if lx.peek():
        raise ValueError(f"trailing text in type {text!r}")
    return t


def parse_type_prefix(text: str, pos: int) -> tuple[Type, int]:
    """Parse a type that starts at ``pos``; return it and the position after it."""
    lx = _TypeLexer(text)
    lx.pos = pos
    return _parse(lx), lx.pos


# Bounds a printed type must respect (IR text may come from a file): SYCL's 1 to 3
# dimensions, SYCL's vector sizes, and aggregates no bigger than a work-item could hold.
_MAX_AGGREGATE = 1 << 24
_VEC_SIZES = (1, 2, 3, 4, 8, 16)


def _int(lx: _TypeLexer, low: int, high: int, what: str) -> int:
    n = int(lx.word())
    if not low <= n <= high:
        raise ValueError(f"{what} {n} is not in {low}..{high}")
    return n


def _dims(lx: _TypeLexer) -> int:
    return _int(lx, 1, 3, "dimension count")


def _parse(lx: _TypeLexer) -> Type:
    if lx.peek() == "[":
        lx.expect("[")
        n = _int(lx, 0, _MAX_AGGREGATE, "array length")
        lx.expect("x")
        elem = _parse(lx)
        lx.expect("]")
        return ArrayType(elem, n)
    w = lx.word()
    if w == "void":
        return VOID
    if w in SCALARS:
        return SCALARS[w]
    if w in COMPLEX:
        return COMPLEX[w]
    if w == "struct":
        return _parse_struct(lx)
    if w == "vec":
        lx.expect("<"); e = _parse(lx); lx.expect(","); n = _int(lx, 1, 16, "vector size")
        lx.expect(">")
        if n not in _VEC_SIZES:
            raise ValueError(f"vector size {n}")
        return VecType(e, n)
    if w == "ptr":
        lx.expect("<"); space = lx.word(); lx.expect(","); p = _parse(lx); lx.expect(">")
        return PointerType(p, space)
    if w == "tuple":
        lx.expect("<")
        elems = [] if lx.peek() == ">" else [_parse(lx)]
        while lx.peek() == ",":
            lx.expect(","); elems.append(_parse(lx))
        lx.expect(">")
        return TupleType(tuple(elems))
    if w == "accessor":
        lx.expect("<"); e = _parse(lx); lx.expect(","); d = _dims(lx); lx.expect(",")
        mode = lx.word(); lx.expect(">")
        return AccessorType(e, d, mode)
    if w == "local_accessor":
        lx.expect("<"); e = _parse(lx); lx.expect(","); d = _dims(lx); lx.expect(">")
        return LocalAccessorType(e, d)
    if w in INDEX_KINDS:
        if lx.peek() == "<":
            lx.expect("<"); d = _dims(lx); lx.expect(">")
            return IndexSpaceType(w, d)
        return IndexSpaceType(w)
    raise ValueError(f"unknown type {w!r} in {lx.text!r}")


def _parse_struct(lx: _TypeLexer) -> StructType:
    name = lx.word()
    lx.expect("{")
    fields = []
    while lx.peek() != ";":
        if fields:
            lx.expect(",")
        fname = lx.word(); lx.expect(":"); ft = _parse(lx); lx.expect("@")
        off = _int(lx, 0, _MAX_AGGREGATE, "field offset")
        fields.append(StructField(fname, ft, off))
    lx.expect(";"); lx.expect("size="); size = _int(lx, 0, _MAX_AGGREGATE, "struct size")
    lx.expect(";"); lx.expect("align="); align = _int(lx, 1, 4096, "struct alignment")
    lx.expect("}")
    if align & (align - 1) or any(f.offset + f.type.size > size for f in fields):
        raise ValueError(f"struct {name} does not hold its fields")
    return StructType(name, tuple(fields), size, align)


def leaves(t: Type, base: int = 0) -> Iterator[tuple[ScalarType, int]]:
    """Scalar leaves of a composite, depth-first, with their byte offsets."""
    if isinstance(t, ScalarType):
        yield t, base
    elif isinstance(t, ComplexType):   # std::complex: a struct {re, im}
        yield t.elem, base
        yield t.elem, base + t.elem.size
    elif isinstance(t, VecType):
        for i in range(t.n):
            yield t.elem, base + i * t.elem.size
    elif isinstance(t, ArrayType):
        for i in range(t.n):
            yield from leaves(t.elem, base + i * t.elem.size)
    elif isinstance(t, StructType):
        for f in t.fields:
            yield from leaves(f.type, base + f.offset)
    else:
        raise TypeError(f"type {t} has no scalar leaves")
