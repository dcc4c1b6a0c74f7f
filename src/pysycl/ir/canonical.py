"""The canonical text of a module and its hash: the main part of the build cache key.

The canonical text is exactly ``print_module``: attribute keys sorted, results numbered in
print order, floats exact. Function and declaration order is kept, not sorted, because it
reaches the output (LLVM function order, the order spec constants get numeric IDs in), and
the cache must not return an image built from a differently ordered module.

Locations are part of the key by default. Codegen puts them into the image (assert and
bounds-check messages name the kernel's file and line, and debug info), so a kernel moved
in its file must not reuse an image whose messages point at the old line; the rebuild this
costs is cheap next to a wrong diagnostic. A caller that knows its output holds no
locations (say, a release build with asserts removed and no bounds checks) may pass
``locs=False`` to share entries across such edits.

>>> from .core import Module
>>> len(module_hash(Module("m")))
64
"""
from __future__ import annotations

import hashlib

from .core import Module
from .printer import print_module


def canonical_text(m: Module, locs: bool = True) -> str:
    """The text two modules share exactly when they are the same program.

    >>> canonical_text(Module("m"))
    'module "m"\\n'
    """
    return print_module(m, locs=locs)


def module_hash(m: Module, locs: bool = True) -> str:
    """SHA-256 (hex) of the canonical text, UTF-8 encoded.

    >>> module_hash(Module("m")) == module_hash(Module("m"))
    True
    """
    return hashlib.sha256(canonical_text(m, locs).encode("utf-8")).hexdigest()
