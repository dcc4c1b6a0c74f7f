"""Lazy access to a Python function's source: AST with the file's positions, and the
environment its names resolve in (closure cells, module globals, builtins).

Kernels are compiled from source (never bytecode). ``getsource``
returns the function's lines only, dedented when nested; the AST is shifted back so every
``lineno``/``col_offset`` is the user's file position (errors and ``Loc`` use them).

>>> def f(x):
...     return x
>>> parse_function(f).node.args.args[0].arg
'x'
"""
from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import os
import sys
import textwrap
import threading
import types
from typing import Any

from .._records import Record
from ..detail.names import closure_vars, lookup_name  # noqa: F401 - the frontend's names
from ..errors import compile_error
from .diagnostics import Source

_lock = threading.Lock()
_cache: dict[Any, "ParsedFunction"] = {}


class ParsedFunction(Record):
    """A parsed definition (a mutable record with dataclass semantics, _records.py)."""

    _fields = ("node", "source", "fn")
    node: ast.FunctionDef
    source: Source
    fn: Any

    def __init__(self, node: ast.FunctionDef, source: Source, fn: Any):
        self.node = node
        self.source = source
        self.fn = fn

    @property
    def closure(self) -> dict[str, Any]:
        return closure_vars(self.fn)


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
    tree = None
    found = _source_lines(fn)
    if found is not None:
        text, start = found
        dedented = textwrap.dedent(text)
        try:
            tree = _parse_at(dedented, start, filename)
        except (SyntaxError, ValueError):
            tree = None
        if tree is not None and not (len(tree.body) == 1
                                     and isinstance(tree.body[0], ast.FunctionDef)):
            tree = None
    if tree is None:
        _register_command_line_source(fn)
        try:
            lines, start = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            raise compile_error(f"cannot read the source of {fn.__qualname__}: kernels are "
                                "compiled from source, so define it in a file or a notebook "
                                "cell, or give its text as sycl.kernel(source=...)",
                                filename, fn.__code__.co_firstlineno, 0) from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        tree = _parse_at(dedented, start, filename)
    indent = _removed_indent(text, dedented)
    if indent:
        for node in ast.walk(tree):
            # Shift columns back to the file by the indentation dedent removed (the
            # same for every line it touched).
            if hasattr(node, "lineno"):
                node.col_offset += indent
                if getattr(node, "end_col_offset", None) is not None:
                    node.end_col_offset += indent
    fdef = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if fdef is None:
        raise compile_error(f"{fn.__qualname__} is not a plain 'def' function", filename, start, 0)
    return ParsedFunction(fdef, Source(filename), fn)


def _parse_at(text: str, start: int, filename: str) -> ast.Module:
    """``text``, the lines of ``filename`` from line ``start`` on, parsed with the
    file's line numbers: blank lines in front put every node on its line (a pass over
    the tree to shift them cost a quarter of parsing a kernel)."""
    return ast.parse("\n" * (start - 1) + text, filename=filename)


_generated = itertools.count(1)


def register_source(text: str) -> str:
    """Keep ``text`` in ``linecache`` under a new name and return the name: code compiled
    with it as its filename has source that ``inspect`` (and so the frontend, error
    messages and tracebacks) can read, as IPython does for notebook cells."""
    filename = f"<pysycl-source-{next(_generated)}>"
    lines = text.splitlines(keepends=True)
    linecache.cache[filename] = (len(text), None, lines, filename)
    return filename


def _register_command_line_source(fn) -> None:
    """``python -c "..."``: the program text is the argument after ``-c`` in the
    process's command line; register it as the source of ``<string>`` when it holds
    ``fn``'s ``def`` where the code says (code run by ``exec`` is also ``<string>``)."""
    code = fn.__code__
    if code.co_filename != "<string>" or "<string>" in linecache.cache or \
            sys.argv[:1] != ["-c"]:
        return
    try:
        with open("/proc/self/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        text = argv[argv.index(b"-c") + 1].decode("utf-8")
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return
    lines = text.splitlines(keepends=True)
    line = lines[code.co_firstlineno - 1] if 0 < code.co_firstlineno <= len(lines) else ""
    stripped = line.lstrip()
    if stripped.startswith("@") or stripped.startswith(f"def {fn.__name__}"):
        linecache.cache["<string>"] = (len(text), None, lines, "<string>")


def _source_lines(fn) -> tuple[str, int] | None:
    """``("".join(lines), start)`` as ``inspect.getsourcelines(fn)`` gives them, for a
    plain ``def`` in a ``.py`` file, without the tokenizer that ``inspect.getblock``
    runs (its regexes cost milliseconds the first time); ``None``: use ``inspect``.

    The file's lines are read as ``inspect`` reads them (``linecache``, revalidated).
    The start is ``co_firstlineno`` when that line starts with ``@`` or ``def`` (where
    ``inspect.findsource``'s search stops at once). The end is the first line after the
    last line of the function's code that starts a statement at the ``def``'s
    indentation or less; trailing blank and comment lines are dropped (they change no
    AST). A cut inside a multi-line statement or string leaves the text unparsable, so
    ``_parse`` goes back to ``inspect`` for anything that does not parse to one ``def``;
    so does text with tabs in its indentation.
    """
    code = getattr(fn, "__code__", None)
    if code is None or hasattr(fn, "__wrapped__"):
        return None
    filename = code.co_filename
    if not filename.endswith(".py") or not os.path.exists(filename):
        return None
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, fn.__globals__)
    lnum = code.co_firstlineno - 1
    if not lines or not 0 <= lnum < len(lines):
        return None
    first = lines[lnum]
    head = first.lstrip()
    if not (head.startswith("@") or head.startswith("def") and head[3:4].isspace()):
        return None   # not where a def starts (a lambda?): inspect searches for it
    indent = len(first) - len(head)
    header = lnum   # the ``def`` line, after the decorators
    while header < len(lines) and not (lines[header].startswith("def", indent)
                                       and lines[header][indent + 3:indent + 4].isspace()):
        header += 1
    # The body ends at or after the last line of the function's code (1-based; it is the
    # index just past that line).
    end = max([header + 1] + [ln for c in _code_objects(code) for _, _, ln in c.co_lines()
                              if ln])
    while end < len(lines):
        stripped = lines[end].lstrip()
        if stripped and not stripped.startswith("#") and \
                len(lines[end]) - len(stripped) <= indent:
            break
        end += 1
    while end > lnum + 1 and (not lines[end - 1].strip()
                              or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    block = lines[lnum:end]
    if any("\t" in ln[:len(ln) - len(ln.lstrip())] or "\f" in ln for ln in block):
        return None
    return "".join(block), lnum + 1


def _code_objects(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _code_objects(c)


def _removed_indent(text: str, dedented: str) -> int:
    for a, b in zip(text.splitlines(), dedented.splitlines()):
        if a.strip():
            return len(a) - len(b)
    return 0
