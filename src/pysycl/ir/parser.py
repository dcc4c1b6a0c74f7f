"""Read the IR text that ``ir.printer`` writes back into a :class:`Module`.

The text may come from a bundle file someone else wrote, so this is a plain
recursive-descent reader: nothing is evaluated, nesting depth is bounded, and every
problem is ``exception(errc.invalid, "IR parse error at line L col C: ...")``. Values
must be defined before use in the same region or an enclosing one (SSA dominance), which
the reader checks as it resolves names. It does not check ops against the catalogue:
that is ``ir.verifier``'s job.

>>> parse_module('module "m"\\n').name
'm'
"""
from __future__ import annotations

import re
from typing import Any

from ..errors import errc, exception
from ._syntax import BARE_KEY, OP_NAME, UNESCAPES, bits_float
from .core import (UNKNOWN_LOC, DeviceGlobalDecl, Function, Loc, Module, Op, Param, Region,
                   SpecConstantDecl, Value)
from .printer import KIND_WORDS
from .types import VOID, Type, parse_type_prefix

MAX_DEPTH = 200  # regions and attribute values; real kernels nest a handful of levels
_WORD_KINDS = {w: k for k, w in KIND_WORDS.items()}
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?")
_VALUE_CHARS = re.compile(r"[A-Za-z0-9_]+")
_HEX = re.compile(r"[0-9a-fA-F]*")


def parse_module(text: str) -> Module:
    """Parse a whole module.

    >>> m = parse_module('module "m"\\n\\ndeclare @"m.f"(%x: i32) -> f32\\n')
    >>> m.functions[0].params[0].type
    ScalarType(name='i32')
    """
    return _Parser(text).module()


class _Parser:
    def __init__(self, text: str):
        if not isinstance(text, str):
            raise exception(errc.invalid, "IR parse error at line 1 col 1: text is not a str")
        self.text, self.pos, self.depth = text, 0, 0
        self.scopes: list[dict[str, Value]] = []

    # Errors and low-level scanning -------------------------------------------------
    def error(self, msg: str, pos: int | None = None) -> exception:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return exception(errc.invalid, f"IR parse error at line {line} col {col}: {msg}")

    def skip_sp(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n":
            self.pos += 1

    def peek(self) -> str:
        self.skip_sp()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def at(self, s: str) -> bool:
        self.skip_sp()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.at(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str) -> None:
        if not self.accept(s):
            found = self.text[self.pos:self.pos + 12].split("\n")[0] or "end of line"
            raise self.error(f"expected {s!r}, found {found!r}")

    def end_line(self) -> None:
        self.skip_sp()
        if self.pos < len(self.text) and self.text[self.pos] != "\n":
            raise self.error(f"unexpected {self.text[self.pos:self.pos + 12]!r}")
        self.pos += 1

    def match(self, pattern: re.Pattern, what: str) -> str:
        self.skip_sp()
        m = pattern.match(self.text, self.pos)
        if not m or not m.group(0):
            raise self.error(f"expected {what}")
        self.pos = m.end()
        return m.group(0)

    def word(self) -> str:
        return self.match(re.compile(r"[A-Za-z_][A-Za-z0-9_.]*"), "a word")

    def region_opens(self) -> bool:
        # "{" closing a line opens a region; "{" followed by text is an attribute dict.
        if self.peek() != "{":
            return False
        rest = self.pos + 1
        while rest < len(self.text) and self.text[rest] in " \t":
            rest += 1
        return rest >= len(self.text) or self.text[rest] == "\n"

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"nesting deeper than {MAX_DEPTH}")

    # Literals ------------------------------------------------------------------------
    def string(self) -> str:
        self.skip_sp()
        if self.peek() != '"':
            raise self.error("expected a string")
        start, self.pos, out = self.pos, self.pos + 1, []
        while True:
            if self.pos >= len(self.text) or self.text[self.pos] == "\n":
                raise self.error("unterminated string", start)
            ch = self.text[self.pos]
            self.pos += 1
            if ch == '"':
                return "".join(out)
            out.append(self.escape() if ch == "\\" else ch)

    def escape(self) -> str:
        ch = self.text[self.pos:self.pos + 1]
        if ch in UNESCAPES and ch:
            self.pos += 1
            return UNESCAPES[ch]
        m = re.compile(r"u\{([0-9A-F]{1,6})\}").match(self.text, self.pos)
        if not m or int(m.group(1), 16) > 0x10FFFF:
            raise self.error("bad escape in string")
        self.pos = m.end()
        return chr(int(m.group(1), 16))

    def integer(self) -> int:
        return int(self.match(re.compile(r"-?[0-9]+"), "an integer"))

    def type(self) -> Type:
        self.skip_sp()
        try:
            t, self.pos = parse_type_prefix(self.text, self.pos)
        except (ValueError, TypeError, IndexError, RecursionError) as e:
            raise self.error(f"bad type: {e}") from None
        return t

    def attr_value(self) -> Any:
        self.nest()
        try:
            return self._attr_value()
        finally:
            self.depth -= 1

    def _attr_value(self) -> Any:
        c = self.peek()
        if c == '"':
            return self.string()
        if c == "!":
            self.pos += 1
            return self.type()
        if c == "[":
            return self.sequence("[", "]")
        if c == "(":
            return tuple(self.sequence("(", ")"))
        if c == "{":
            return self.dict()
        if self.accept('x"'):
            digits = self.match(_HEX, "hex digits") if self.peek() != '"' else ""
            self.expect('"')
            if len(digits) % 2:
                raise self.error("odd number of hex digits")
            return bytes.fromhex(digits)
        for word, value in (("true", True), ("false", False), ("none", None)):
            if self.at(word) and not self.text[self.pos + len(word):][:1].isalnum():
                self.pos += len(word)
                return value
        return self.number()

    def number(self) -> int | float:
        neg = self.accept("-")
        if self.accept("inf"):
            return float("-inf") if neg else float("inf")
        if self.accept("nan"):
            if neg:
                raise self.error("'-nan' is not canonical; NaNs with a sign print their bits")
            if not self.accept("(0x"):
                return float("nan")
            bits = int(self.match(re.compile(r"[0-9a-f]{16}"), "16 hex digits"), 16)
            self.expect(")")
            return bits_float(bits)
        if neg:
            self.pos -= 1
        text = self.match(_NUMBER, "an attribute value")
        return float(text) if ("." in text or "e" in text or "E" in text) else int(text)

    def sequence(self, open_: str, close: str) -> list:
        self.expect(open_)
        items = []
        while not self.accept(close):
            if items:
                self.expect(",")
            items.append(self.attr_value())
        return items

    def dict(self) -> dict:
        self.expect("{")
        out: dict[str, Any] = {}
        while not self.accept("}"):
            if out:
                self.expect(",")
            key_pos = self.pos
            key = self.string() if self.peek() == '"' else self.match(BARE_KEY, "an attribute name")
            if key in out:
                raise self.error(f"duplicate attribute {key!r}", key_pos)
            self.expect("=")
            out[key] = self.attr_value()
        return out

    def str_dict(self) -> dict[str, str]:
        pos = self.pos
        d = self.dict()
        if not all(isinstance(v, str) for v in d.values()):
            raise self.error("property values must be strings", pos)
        return d

    def loc(self) -> Loc:
        if not self.accept("loc("):
            return UNKNOWN_LOC
        file = self.string()
        self.expect(":")
        line = self.integer()
        self.expect(":")
        col = self.integer()
        self.expect(")")
        return Loc(file, line, col)

    # Module structure ------------------------------------------------------------------
    def module(self) -> Module:
        self.skip_ws()
        self.expect("module")
        m = Module(self.string())
        if self.accept("attributes"):
            m.attrs = self.dict()
        self.end_line()
        while True:
            self.skip_ws()
            if self.pos >= len(self.text):
                return m
            self.top_level(m)

    def top_level(self, m: Module) -> None:
        pos = self.pos
        w = self.word()
        if w == "spec_const":
            uid = self.string()
            self.expect(":")
            t = self.type()
            self.expect("default")
            self.expect("=")
            default = self.attr_value()
            if not isinstance(default, bytes):
                raise self.error("a spec_const default is bytes: x\"...\"", pos)
            m.spec_constants.append(SpecConstantDecl(uid, t, default))
        elif w == "device_global":
            uid = self.string()
            self.expect(":")
            t = self.type()
            initial = b""
            if self.accept("init"):
                self.expect("=")
                initial = self.attr_value()
                if not isinstance(initial, bytes) or len(initial) != t.size:
                    raise self.error(f"a device_global init is x\"...\" of {t.size} bytes", pos)
            props = self.str_dict() if self.accept("properties") else {}
            m.device_globals.append(DeviceGlobalDecl(uid, t, props, initial))
        elif w in _WORD_KINDS:
            m.functions.append(self.function(_WORD_KINDS[w]))
            return
        else:
            raise self.error(f"expected a declaration or a function, found {w!r}", pos)
        self.end_line()

    def function(self, kind: str) -> Function:
        self.expect("@")
        name = self.string()
        self.scopes = [{}]
        params = self.params()
        ret = self.type() if self.accept("->") else VOID
        f = Function(name, kind, params, ret)
        if self.accept("properties"):
            f.properties = self.str_dict()
        if self.accept("attributes"):
            f.attrs = self.dict()
        f.loc = self.loc()
        if self.region_opens():
            f.body = self.region()
        self.end_line()
        return f

    def params(self) -> list[Param]:
        self.expect("(")
        params: list[Param] = []
        while not self.accept(")"):
            if params:
                self.expect(",")
            pos = self.pos
            name = self.value_name()
            self.expect(":")
            p = Param(name, self.type())
            if self.peek() == "{":
                p.properties = self.str_dict()
            self.define(name, p.value, pos)
            params.append(p)
        return params

    # Values, ops and regions ---------------------------------------------------------
    def value_name(self) -> str:
        self.expect("%")
        if self.text[self.pos:self.pos + 1] == '"':
            return self.string()
        m = _VALUE_CHARS.match(self.text, self.pos)
        if not m:
            raise self.error("expected a value name after '%'")
        self.pos = m.end()
        return m.group(0)

    def define(self, name: str, v: Value, pos: int) -> None:
        if any(name in s for s in self.scopes):
            raise self.error(f"redefinition of %{name}", pos)
        self.scopes[-1][name] = v

    def use(self) -> Value:
        pos = self.pos
        name = self.value_name()
        for s in reversed(self.scopes):
            v = s.get(name)
            if isinstance(v, Value):
                return v
        raise self.error(f"use of undefined value %{name} (values must be defined earlier "
                         "in the same region or an enclosing one)", pos)

    def region(self) -> Region:
        self.expect("{")
        self.end_line()
        self.nest()
        self.scopes.append({})
        r = Region()
        while True:
            self.skip_ws()
            if self.pos >= len(self.text):
                raise self.error("unterminated region")
            if self.peek() == "}":
                self.pos += 1
                break
            r.ops.append(self.op())
        # Names defined inside a region are not visible after it, but stay reserved so a
        # reused name is still a redefinition (the printer numbers per function).
        closed = self.scopes.pop()
        self.scopes[0].update({k: _CLOSED for k in closed})
        self.depth -= 1
        return r

    def op(self) -> Op:
        result_pos, result_name = self.pos, None
        if self.peek() == "%":
            result_name = self.value_name()
            self.expect("=")
        name_pos = self.pos
        name = self.word()
        if not OP_NAME.fullmatch(name):
            raise self.error(f"bad op name {name!r}", name_pos)
        operands = self.operands()
        attrs = self.dict() if self.peek() == "{" and not self.region_opens() else {}
        t = VOID
        if result_name is not None:
            self.expect(":")
            t = self.type()
            if t == VOID:
                raise self.error("an op with a result cannot have type void", result_pos)
        op = Op(name, operands, t, attrs, loc=self.loc())
        while self.region_opens():
            op.regions.append(self.region())  # "} {" goes on with the next region
        if result_name is not None:
            self.define(result_name, op.result, result_pos)
        self.end_line()
        return op

    def operands(self) -> list[Value]:
        out: list[Value] = []
        if self.peek() != "%":
            return out
        out.append(self.use())
        while self.accept(","):
            out.append(self.use())
        return out


class _Closed:
    """Marks a name whose region has ended (kept only to detect redefinitions)."""


_CLOSED = _Closed()
