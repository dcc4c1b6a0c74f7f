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

``tier_hits()``: where the outputs of the build chain's stages came from
(``build_chain.hit``), ``{"stage: tier": count}`` with tiers ``memory``, ``warm index``,
``disk`` and ``built``: a warm start shows as ``binary: warm index``.
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
_tier_hits: dict[str, int] = {}


def bump(name: str, n: int = 1) -> None:
    """Add ``n`` to counter ``name`` (thread safe)."""
    with _lock:
        globals()[name] += n


def bump_tier(stage: str, tier: str) -> None:
    """One output of build-chain stage ``stage`` came from cache tier ``tier``."""
    key = f"{stage}: {tier}"
    with _lock:
        _tier_hits[key] = _tier_hits.get(key, 0) + 1


def tier_hits() -> dict[str, int]:
    """``{"stage: tier": count}`` so far (see the module doc)."""
    with _lock:
        return dict(_tier_hits)


def snapshot() -> dict[str, int]:
    """All counters as a dict."""
    with _lock:
        return {k: globals()[k] for k in ("codegen_count", "target_compile_count",
                                          "frontend_count", "compile_count", "link_count",
                                          "load_count", "launcher_builds",
                                          "warm_index_hits", "warm_index_misses",
                                          "warm_index_reads", "warm_binary_reads")}
