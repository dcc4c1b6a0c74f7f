"""Every ``@sycl.kernel`` and ``@sycl.external`` seen so far (thread-safe).

Kernels are kept per Python module in definition order: a Python module is the
"translation unit" that ``sycl.this_module`` and ``sycl.get_kernel_ids()`` speak of.
Re-running a definition (a notebook cell, ``importlib.reload``) replaces the kernel of
the same name in place, so IDs stay unique.

>>> isinstance(all_kernels(), list)
True
"""
from __future__ import annotations

import threading
from typing import Protocol


class KernelFunction(Protocol):
    """What the registry reads of a ``@sycl.kernel`` (it records, never builds)."""
    name: str
    module_name: str


class ExternalFunction(Protocol):
    """What the registry reads of an ``@sycl.external``."""
    name: str
    qualname: str
    module_name: str
    is_declaration: bool

_lock = threading.Lock()
_kernels: dict[str, list["KernelFunction"]] = {}
_externals: dict[str, list["ExternalFunction"]] = {}


def register_kernel(k: "KernelFunction") -> None:
    """Record a kernel of its Python module; a redefinition replaces the old one in place."""
    with _lock:
        lst = _kernels.setdefault(k.module_name, [])
        for i, old in enumerate(lst):
            if old.name == k.name:
                lst[i] = k
                return
        lst.append(k)


def kernels_in_module(module_name: str) -> list["KernelFunction"]:
    """The kernels defined in one Python module, in definition order."""
    with _lock:
        return list(_kernels.get(module_name, ()))


def all_kernels() -> list["KernelFunction"]:
    """Every kernel defined so far, module by module, in definition order."""
    with _lock:
        return [k for lst in _kernels.values() for k in lst]


def find_kernel(name: str) -> "KernelFunction | None":
    """The first registered kernel called ``name``, in any module, or None."""
    with _lock:
        for lst in _kernels.values():
            for k in lst:
                if k.name == name:
                    return k
    return None


def register_external(e: "ExternalFunction") -> None:
    """Record an ``@sycl.external`` (definition or declaration: telling them apart needs
    the AST, which is only parsed on first use)."""
    with _lock:
        lst = _externals.setdefault(e.name, [])
        lst[:] = [x for x in lst if x.qualname != e.qualname or x.module_name != e.module_name]
        lst.append(e)


def externals_defined() -> dict[str, "ExternalFunction"]:
    """``{symbol: ExternalFunction}`` for every external *definition* seen so far (the
    last one wins when a symbol is defined twice; link reports duplicates)."""
    with _lock:
        candidates = [(sym, list(lst)) for sym, lst in _externals.items()]
    out = {}
    for sym, lst in candidates:
        for e in lst:
            if not e.is_declaration:
                out[sym] = e
    return out


def external_definitions() -> list["ExternalFunction"]:
    """Every external *definition* seen so far, including a symbol defined in several
    modules (each module's library image exports its own; link reports the clash)."""
    with _lock:
        candidates = [e for lst in _externals.values() for e in lst]
    return [e for e in candidates if not e.is_declaration]


def externals_in_module(module_name: str) -> list["ExternalFunction"]:
    """Every external definition of one Python module."""
    return [e for e in externals_defined().values() if e.module_name == module_name]


def forget_module(module_name: str) -> None:
    """Drop a Python module's kernels and externals from the registry (a module being
    unloaded, or tests whose deliberately broken kernels must not join the
    application-wide bundle). The function objects keep working."""
    with _lock:
        _kernels.pop(module_name, None)
        for sym in list(_externals):
            kept = [e for e in _externals[sym] if e.module_name != module_name]
            if kept:
                _externals[sym] = kept
            else:
                del _externals[sym]
