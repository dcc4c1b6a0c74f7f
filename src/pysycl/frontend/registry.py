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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .decorators import ExternalFunction, KernelFunction

_lock = threading.Lock()
_kernels: dict[str, list["KernelFunction"]] = {}
_externals: dict[str, "ExternalFunction"] = {}


def register_kernel(k: "KernelFunction") -> None:
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
    with _lock:
        for lst in _kernels.values():
            for k in lst:
                if k.name == name:
                    return k
    return None


def register_external(e: "ExternalFunction") -> None:
    """Record an ``@sycl.external`` definition (declarations are not exported)."""
    if e.is_declaration:
        return
    with _lock:
        _externals[e.name] = e


def externals_defined() -> dict[str, "ExternalFunction"]:
    """``{symbol: ExternalFunction}`` for every external definition seen so far."""
    with _lock:
        return dict(_externals)


def externals_in_module(module_name: str) -> list["ExternalFunction"]:
    with _lock:
        return [e for e in _externals.values() if e.module_name == module_name]
