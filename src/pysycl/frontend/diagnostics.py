"""Compile errors that point at the user's source (``sycl.compile_error``).

Every error in kernel source is raised through :func:`error_at` with the AST node at
fault; the public entry points (``ir_module()``, ``signature()``) re-raise it with its
traceback cut (``errors.hide_compiler_frames``), so users never see compiler frames.

>>> import ast
>>> node = ast.parse("x").body[0]
>>> try:
...     error_at(Source("f.py"), node, "name 'x' is not defined")
... except compile_error as e:
...     (e.lineno, e.col)
(1, 0)
"""
from __future__ import annotations

import ast

from .._records import FrozenValue
from ..errors import compile_error
from ..ir.core import Loc


class Source(FrozenValue):
    """Where a function's AST came from; node positions are already the file's. (A
    frozen value class with dataclass semantics, _records.py.)"""

    __slots__ = _fields = ("filename",)
    filename: str

    def __init__(self, filename: str):
        object.__setattr__(self, "filename", filename)


def loc_of(src: Source, node: ast.AST | None) -> Loc:
    if node is None or not hasattr(node, "lineno"):
        return Loc(src.filename, 0, 0)
    return Loc(src.filename, node.lineno, node.col_offset)


def error_at(src: Source, node: ast.AST | None, message: str, hint: str | None = None):
    """Raise ``compile_error`` at ``node`` (never returns)."""
    loc = loc_of(src, node)
    raise compile_error(message, loc.file, loc.line, loc.col, hint)


#: Python constructs outside the kernel language, named the way users know them.
UNSUPPORTED = {
    ast.Try: ("try statement", "kernels cannot raise or catch exceptions"),
    ast.Raise: ("raise statement", "use assert for checks in debug builds"),
    ast.Lambda: ("lambda", "define a @sycl.device function instead"),
    ast.ListComp: ("list comprehension", "use a for loop and sycl.private_array"),
    ast.SetComp: ("set comprehension", None),
    ast.DictComp: ("dict comprehension", None),
    ast.GeneratorExp: ("generator expression", "use a for loop"),
    ast.With: ("with statement", None),
    ast.AsyncWith: ("async with statement", None),
    ast.AsyncFor: ("async for statement", None),
    ast.AsyncFunctionDef: ("async function", None),
    ast.Await: ("await", None),
    ast.Yield: ("yield", None),
    ast.YieldFrom: ("yield from", None),
    ast.ClassDef: ("class definition", "define structs with @sycl.struct at module level"),
    ast.FunctionDef: ("nested function", "define a @sycl.device function at module level"),
    ast.Global: ("global statement", "pass the value as an argument or use a device_global"),
    ast.Nonlocal: ("nonlocal statement", None),
    ast.Starred: ("star-args (*args)", None),
    ast.JoinedStr: ("f-string", None),
    ast.FormattedValue: ("f-string", None),
    ast.Delete: ("del statement", None),
    ast.Import: ("import statement", "import at module level"),
    ast.ImportFrom: ("import statement", "import at module level"),
    ast.Match: ("match statement", "use if/elif"),
    ast.NamedExpr: ("assignment expression (:=)", None),
    ast.List: ("list display", "use a tuple or sycl.private_array"),
    ast.Dict: ("dict display", None),
    ast.Set: ("set display", None),
    ast.Slice: ("slicing", "index one element at a time"),
}


def unsupported(src: Source, node: ast.AST, what: str | None = None):
    name, hint = UNSUPPORTED.get(type(node), (what or type(node).__name__, None))
    error_at(src, node, f"{name} is not supported in kernel code", hint)
