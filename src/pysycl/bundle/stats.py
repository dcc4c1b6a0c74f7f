"""Counters of compile work, for tests and ``pysycl cache info`` (instrumentation only).

A test asserts that a second submit, or loading a saved executable bundle, does no
code generation::

    >>> from pysycl.bundle import stats
    >>> before = stats.codegen_count
    >>> stats.codegen_count - before
    0

``codegen_count``: LLVM modules generated from IR; ``target_compile_count``: target
compiler runs (LLVM -> object/SPIR-V/PTX); ``frontend_count``: input images made from
Python source; ``compile_count``/``link_count``: object images made, link operations;
``load_count``: programs loaded through a driver; ``launcher_builds``: launchers made by
``get_launcher`` (cache misses); ``warm_index_hits``/``warm_index_misses``: executable
images found (or not) through the warm-start source index (``warm_index.py``);
``warm_index_reads``: index entries read; ``warm_binary_reads``: binaries of such images
read from the build cache (on first use, not when the bundle is made).
"""
from __future__ import annotations

import threading

codegen_count = 0
target_compile_count = 0
frontend_count = 0
compile_count = 0
link_count = 0
load_count = 0
launcher_builds = 0
warm_index_hits = 0
warm_index_misses = 0
warm_index_reads = 0
warm_binary_reads = 0

_lock = threading.Lock()


def bump(name: str, n: int = 1) -> None:
    """Add ``n`` to counter ``name`` (thread safe)."""
    with _lock:
        globals()[name] += n


def snapshot() -> dict[str, int]:
    """All counters as a dict."""
    with _lock:
        return {k: globals()[k] for k in ("codegen_count", "target_compile_count",
                                          "frontend_count", "compile_count", "link_count",
                                          "load_count", "launcher_builds",
                                          "warm_index_hits", "warm_index_misses",
                                          "warm_index_reads", "warm_binary_reads")}
