"""Print IR modules in their canonical text form (the serialised form; ``ir.parser`` reads it).

The form is generic over the op catalogue, in the spirit of MLIR's generic syntax::

    module "mod"

    spec_const "mod.coeff" : [9 x f32] default = x"0000803f..."
    device_global "mod.count" : i32 properties {sycl-device-image-scope = ""}

    kernel @"mod.vadd"(%it: item<1>, %a: accessor<f32,1,read_only> {sycl-restrict = ""}) {
      %0 = wi.global_id {dim = 0} : i64 loc("vadd.py":7:8)
      %1 = acc.ptr %a, %0 : ptr<global,f32> loc("vadd.py":7:8)
      if %5 loc("vadd.py":9:4) {
        ...
      } {
      }
    }

An op line is ``[%N = ] name operands [{attrs}] [: type] [loc(...)] [regions]``; void ops
print no type. A region opens with ``{`` at the end of a line and closes with ``}`` on
its own line, which is what tells it from an attribute dict. Results are numbered ``%0``,
``%1``... per function in print order; parameters print by name. Attribute keys are sorted,
so equal modules print to equal text. Unknown locations print nothing.

>>> print_module(Module("empty"))
'module "empty"\\n'
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._syntax import format_float, is_bare_value_name, key_text, quote
from .core import UNKNOWN_LOC, Function, Loc, Module, Op, Param, Region, Value
from .types import VOID, Type

INDENT = "  "
# Function kinds as spelled in the text; "device" prints as "func" (MLIR's word).
KIND_WORDS = {"kernel": "kernel", "device": "func", "external": "external", "declare": "declare"}


def print_module(m: Module, locs: bool = True) -> str:
    """The canonical text of ``m``; with ``locs=False`` source locations are left out.

    >>> print_module(Module("m", attrs={"origin": "demo.py"}))
    'module "m" attributes {origin = "demo.py"}\\n'
    """
    head = "module " + quote(m.name) + _dict_suffix(" attributes ", m.attrs)
    parts = [head + "\n"]
    decls = [_spec_const_line(s) for s in m.spec_constants]
    decls += [_device_global_line(d) for d in m.device_globals]
    if decls:
        parts.append("\n" + "".join(line + "\n" for line in decls))
    for f in m.functions:
        parts.append("\n" + print_function(f, locs))
    return "".join(parts)


def print_function(f: Function, locs: bool = True) -> str:
    """The text of one function (header and body), ending with a newline.

    >>> print_function(Function("m.f", "declare", []))
    'declare @"m.f"()\\n'
    """
    printer = _FunctionPrinter(locs)
    for p in f.params:
        printer.names[p.value] = "%" + _value_name(p.name)
    head = _function_header(f, printer, locs)
    if f.body is None:
        return head + "\n"
    lines = [head + " {"]
    printer.region(f.body, 1, lines)
    lines.append("}")
    return "\n".join(lines) + "\n"


def print_op(op: Op, locs: bool = True) -> str:
    """One op (and its regions) alone, for diagnostics; values print as ``%?N``."""
    lines: list[str] = []
    _FunctionPrinter(locs).op(op, 0, lines)
    return "\n".join(lines)


def format_attr(v: Any) -> str:
    """The text of one attribute value.

    >>> format_attr([1, 2.5, None, "s", b"\\x01"])
    '[1, 2.5, none, "s", x"01"]'
    """
    v = _plain(v)
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, (bytes, bytearray)):
        return 'x"' + bytes(v).hex() + '"'
    if isinstance(v, Type):
        return "!" + str(v)
    if isinstance(v, list):
        return "[" + ", ".join(format_attr(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(format_attr(x) for x in v) + ")"
    if isinstance(v, dict):
        return format_dict(v)
    raise TypeError(f"IR attribute value {v!r} of type {type(v).__name__} cannot be printed")


def format_dict(d: dict) -> str:
    for k in d:
        if not isinstance(k, str):
            raise TypeError(f"IR attribute key {k!r} is not a string")
    return "{" + ", ".join(f"{key_text(k)} = {format_attr(d[k])}" for k in sorted(d)) + "}"


def format_loc(loc: Loc) -> str:
    return f"loc({quote(loc.file)}:{loc.line}:{loc.col})"


def _plain(v: Any) -> Any:
    # NumPy scalars that slip into attrs print as the Python value they equal exactly.
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def _dict_suffix(prefix: str, d: dict) -> str:
    return prefix + format_dict(d) if d else ""


def _value_name(name: str) -> str:
    # Parameter names are Python identifiers; anything else is quoted so it cannot be
    # mistaken for a numbered result.
    return name if is_bare_value_name(name) else quote(name)


def _spec_const_line(s) -> str:
    return f"spec_const {quote(s.unique_id)} : {s.type} default = {format_attr(bytes(s.default))}"


def _device_global_line(d) -> str:
    init = f" init = {format_attr(bytes(d.initial))}" if d.initial else ""
    return (f"device_global {quote(d.unique_id)} : {d.type}{init}"
            + _dict_suffix(" properties ", d.properties))


def _function_header(f: Function, printer: "_FunctionPrinter", locs: bool) -> str:
    kind = KIND_WORDS.get(f.kind)
    if kind is None:
        raise ValueError(f"function {f.name!r} has unknown kind {f.kind!r}")
    params = ", ".join(_param_text(p, printer) for p in f.params)
    text = f"{kind} @{quote(f.name)}({params})"
    if f.return_type != VOID:
        text += f" -> {f.return_type}"
    text += _dict_suffix(" properties ", f.properties) + _dict_suffix(" attributes ", f.attrs)
    if locs and f.loc != UNKNOWN_LOC:
        text += " " + format_loc(f.loc)
    return text


def _param_text(p: Param, printer: "_FunctionPrinter") -> str:
    return f"{printer.names[p.value]}: {p.type}" + _dict_suffix(" ", p.properties)


class _FunctionPrinter:
    """Names values as it goes: results get the next number when their op prints."""

    def __init__(self, locs: bool):
        self.locs = locs
        self.names: dict[Value, str] = {}
        self.next_result = 0
        self.next_unknown = 0

    def name(self, v: Value) -> str:
        if v not in self.names:
            # Not defined in this function (broken IR being shown in a diagnostic).
            self.names[v] = f"%?{self.next_unknown}"
            self.next_unknown += 1
        return self.names[v]

    def region(self, r: Region, depth: int, lines: list[str]) -> None:
        for op in r.ops:
            self.op(op, depth, lines)

    def op(self, op: Op, depth: int, lines: list[str]) -> None:
        pad = INDENT * depth
        text = op.name
        if op.operands:
            text += " " + ", ".join(self.name(v) for v in op.operands)
        if op.attrs:
            text += " " + format_dict(op.attrs)
        if op.result is not None:
            self.names[op.result] = f"%{self.next_result}"
            self.next_result += 1
            text = f"{self.names[op.result]} = {text} : {op.type}"
        if self.locs and op.loc != UNKNOWN_LOC:
            text += " " + format_loc(op.loc)
        if not op.regions:
            lines.append(pad + text)
            return
        for i, r in enumerate(op.regions):
            lines.append(pad + (text + " {" if i == 0 else "} {"))
            self.region(r, depth + 1, lines)
        lines.append(pad + "}")
