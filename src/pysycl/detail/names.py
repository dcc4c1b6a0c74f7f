"""Python's name resolution for a kernel's free names, shared by the frontend (which
compiles them) and the warm-start index (which fingerprints them without importing the
frontend)."""
from __future__ import annotations

import builtins
from typing import Any


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


def lookup_name(fn, name: str, closure: dict[str, Any] | None = None) -> tuple[bool, Any]:
    """Resolve ``name`` as Python does for a free name in ``fn``: closure, globals,
    builtins. Returns ``(found, value)``. ``closure``: ``closure_vars(fn)``, when the
    caller resolves many names."""
    cl = closure_vars(fn) if closure is None else closure
    if name in cl:
        return True, cl[name]
    if name in fn.__globals__:
        return True, fn.__globals__[name]
    if hasattr(builtins, name):
        return True, getattr(builtins, name)
    return False, None
