"""Lazy access to a Python function's source: AST with the file's positions, and the
environment its names resolve in (closure cells, module globals, builtins).

Kernels are compiled from source (KERNEL_LANGUAGE.md: never bytecode). ``getsource``
returns the function's lines only, dedented when nested; the AST is shifted back so every
``lineno``/``col_offset`` is the user's file position (errors and ``Loc`` use them).

>>> def f(x):
...     return x
>>> parse_function(f).node.args.args[0].arg
'x'
"""
from __future__ import annotations

import ast
import builtins
import dataclasses
import inspect
import textwrap
import threading
from typing import Any

from ..errors import compile_error
from .diagnostics import Source

_lock = threading.Lock()
_cache: dict[Any, "ParsedFunction"] = {}


@dataclasses.dataclass
class ParsedFunction:
    node: ast.FunctionDef
    source: Source
    fn: Any

    @property
    def closure(self) -> dict[str, Any]:
        return closure_vars(self.fn)


def closure_vars(fn) -> dict[str, Any]:
    """The function's free variables that are bound now (an empty cell is skipped so the
    name falls through to globals, as Python would fail on it anyway)."""
    out = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            pass
    return out


def lookup_name(fn, name: str) -> tuple[bool, Any]:
    """Resolve ``name`` as Python does for a free name in ``fn``: closure, globals,
    builtins. Returns ``(found, value)``."""
    cl = closure_vars(fn)
    if name in cl:
        return True, cl[name]
    if name in fn.__globals__:
        return True, fn.__globals__[name]
    if hasattr(builtins, name):
        return True, getattr(builtins, name)
    return False, None


def parse_function(fn) -> ParsedFunction:
    """Parse ``fn``'s definition once (cached; thread-safe)."""
    with _lock:
        hit = _cache.get(fn)
    if hit is not None:
        return hit
    parsed = _parse(fn)
    with _lock:
        return _cache.setdefault(fn, parsed)


def _parse(fn) -> ParsedFunction:
    filename = fn.__code__.co_filename
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        raise compile_error(f"cannot read the source of {fn.__qualname__}: kernels are compiled "
                            "from source, so they must be defined in a file",
                            filename, fn.__code__.co_firstlineno, 0) from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = _removed_indent(text, dedented)
    tree = ast.parse(dedented, filename=filename)
    for node in ast.walk(tree):
        # Shift positions back to the file: lines by the start line, columns by the
        # indentation dedent removed (the same for every line it touched).
        if hasattr(node, "lineno"):
            node.lineno += start - 1
            node.col_offset += indent
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += start - 1
                node.end_col_offset += indent
    fdef = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if fdef is None:
        raise compile_error(f"{fn.__qualname__} is not a plain 'def' function", filename, start, 0)
    return ParsedFunction(fdef, Source(filename), fn)


def _removed_indent(text: str, dedented: str) -> int:
    for a, b in zip(text.splitlines(), dedented.splitlines()):
        if a.strip():
            return len(a) - len(b)
    return 0
