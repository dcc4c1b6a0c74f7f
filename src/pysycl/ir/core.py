"""The IR's data structures: modules, functions, regions and ops.

The IR is structured (MLIR ``scf`` style): a function body is a :class:`Region`, a list of
:class:`Op`; control flow is only the ``if``/``for``/``while`` ops, which own regions.
Within a region values are SSA (an op's result is a :class:`Value` named ``%N``) and may be
used by later ops of the same region or of nested regions. Python locals are named slots
(``var``/``var.load``/``var.store``/``var.addr``) that LLVM's mem2reg turns into SSA.

Every op has a result type (``VOID`` when it yields nothing), attributes (plain data:
int, float, bool, str, bytes, None, Type, tuples/lists and dicts of those) and a source
location. The set of op names and their shapes is the catalogue in ``ir.ops``.

>>> m = Module("demo")
"""
from __future__ import annotations

from typing import Any, Iterator

from .._records import FrozenValue, Record
from .types import VOID, Type

_set = object.__setattr__
_NEW: Any = object()   # an argument not given: a new empty list or dict


class Loc(FrozenValue):
    """A source location: file, 1-based line, 0-based column. (Frozen value classes and
    records below are written out by hand with dataclass semantics: _records.py.)"""

    __slots__ = _fields = ("file", "line", "col")
    file: str
    line: int
    col: int

    def __init__(self, file: str = "", line: int = 0, col: int = 0):
        _set(self, "file", file)
        _set(self, "line", line)
        _set(self, "col", col)

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return (self.file, self.line, self.col) == (other.file, other.line, other.col)
        return NotImplemented

    def __hash__(self):
        return hash((self.file, self.line, self.col))

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


UNKNOWN_LOC = Loc()


class Value:
    """An SSA value: a function parameter or an op result."""

    __slots__ = ("type", "name", "owner")

    def __init__(self, type: Type, name: str | None = None, owner: "Op | None" = None):
        self.type = type
        self.name = name          # parameters keep their source name; results get %N on print
        self.owner = owner

    def __repr__(self) -> str:
        return f"Value({self.name or '?'}: {self.type})"


class Op:
    """One operation. ``result`` is None for ops of type VOID."""

    __slots__ = ("name", "operands", "attrs", "regions", "type", "loc", "result")

    def __init__(self, name: str, operands: list[Value] | tuple = (), type: Type = VOID,
                 attrs: dict[str, Any] | None = None, regions: list["Region"] | None = None,
                 loc: Loc = UNKNOWN_LOC):
        self.name = name
        self.operands = list(operands)
        self.attrs = dict(attrs or {})
        self.regions = list(regions or [])
        self.type = type
        self.loc = loc
        self.result = None if type == VOID else Value(type, owner=self)

    def __repr__(self) -> str:
        return f"Op({self.name}, {len(self.operands)} operands, {self.type})"

    def walk(self) -> Iterator["Op"]:
        """This op and every op nested in its regions, in program order."""
        yield self
        for r in self.regions:
            yield from r.walk()


class Region:
    """An ordered list of ops (a structured block)."""

    __slots__ = ("ops",)

    def __init__(self, ops: list[Op] | None = None):
        self.ops = list(ops or [])

    def append(self, op: Op) -> Op:
        self.ops.append(op)
        return op

    def walk(self) -> Iterator[Op]:
        for op in self.ops:
            yield from op.walk()

    def __iter__(self):
        return iter(self.ops)

    def __len__(self):
        return len(self.ops)


class Param(Record):
    _fields = ("name", "type", "properties", "value")
    _eq_fields = _repr_fields = ("name", "type", "properties")
    name: str
    type: Type
    # Compile-time properties of this parameter as meta name -> meta value strings
    # ("sycl-restrict" -> "", "sycl-alignment" -> "64"); carried mechanically.
    properties: dict[str, str]
    value: Value   # not an argument; not compared or printed

    def __init__(self, name: str, type: Type, properties: dict[str, str] = _NEW):
        self.name = name
        self.type = type
        self.properties = {} if properties is _NEW else properties
        self.value = Value(self.type, self.name)


class Function(Record):
    """A kernel (``kind="kernel"``), a device function (``"device"``, internal to its
    image), an exported ``@sycl.external`` (``"external"``) or an import declaration
    (``"declare"``, no body)."""

    _fields = ("name", "kind", "params", "return_type", "body", "loc", "properties",
               "attrs")
    name: str
    kind: str
    params: list[Param]
    return_type: Type = VOID
    body: Region | None = None
    loc: Loc = UNKNOWN_LOC
    # Kernel properties: meta name -> meta value ("sycl-work-group-size" -> "16,1,1").
    properties: dict[str, str]
    attrs: dict[str, Any]

    def __init__(self, name: str, kind: str, params: list[Param], return_type: Type = VOID,
                 body: Region | None = None, loc: Loc = UNKNOWN_LOC,
                 properties: dict[str, str] = _NEW, attrs: dict[str, Any] = _NEW):
        self.name = name
        self.kind = kind
        self.params = params
        self.return_type = return_type
        self.body = body
        self.loc = loc
        self.properties = {} if properties is _NEW else properties
        self.attrs = {} if attrs is _NEW else attrs

    @property
    def is_declaration(self) -> bool:
        return self.body is None

    def walk(self) -> Iterator[Op]:
        if self.body is not None:
            yield from self.body.walk()


class SpecConstantDecl(Record):
    """A ``specialization_id`` used by the module: symbolic ID, type, default bytes."""

    _fields = ("unique_id", "type", "default")
    unique_id: str
    type: Type
    default: bytes

    def __init__(self, unique_id: str, type: Type, default: bytes):
        self.unique_id = unique_id
        self.type = type
        self.default = default


class DeviceGlobalDecl(Record):
    """A ``device_global`` used by the module; ``properties`` as meta name -> value;
    ``initial``: the bytes of its initial value (empty: zero-initialised)."""

    _fields = ("unique_id", "type", "properties", "initial")
    unique_id: str
    type: Type
    properties: dict[str, str]
    initial: bytes

    def __init__(self, unique_id: str, type: Type, properties: dict[str, str] = _NEW,
                 initial: bytes = b""):
        self.unique_id = unique_id
        self.type = type
        self.properties = {} if properties is _NEW else properties
        self.initial = initial


class Module(Record):
    """One translation unit's worth of IR (an input/object image's payload)."""

    _fields = ("name", "functions", "spec_constants", "device_globals", "attrs")
    name: str
    functions: list[Function]
    spec_constants: list[SpecConstantDecl]
    device_globals: list[DeviceGlobalDecl]
    attrs: dict[str, Any]

    def __init__(self, name: str, functions: list[Function] = _NEW,
                 spec_constants: list[SpecConstantDecl] = _NEW,
                 device_globals: list[DeviceGlobalDecl] = _NEW, attrs: dict[str, Any] = _NEW):
        self.name = name
        self.functions = [] if functions is _NEW else functions
        self.spec_constants = [] if spec_constants is _NEW else spec_constants
        self.device_globals = [] if device_globals is _NEW else device_globals
        self.attrs = {} if attrs is _NEW else attrs

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    def get_function(self, name: str) -> Function | None:
        for f in self.functions:
            if f.name == name:
                return f
        return None

    @property
    def kernels(self) -> list[Function]:
        return [f for f in self.functions if f.kind == "kernel"]

    def spec_constant(self, unique_id: str) -> SpecConstantDecl | None:
        for s in self.spec_constants:
            if s.unique_id == unique_id:
                return s
        return None

    def device_global(self, unique_id: str) -> DeviceGlobalDecl | None:
        for d in self.device_globals:
            if d.unique_id == unique_id:
                return d
        return None
