"""Kernel bundles (SYCL 2020 §4.11, seed "SYCL Modules"): kernel ids, device images,
bundles in input/object/executable state, the free functions, ``this_module``, the
runtime's ``get_launcher``, bundle files. Property sets, SYCLBIN and the build cache
live in ``property_sets``, ``syclbin`` and ``cache``.

Submodules are imported lazily so that ``import pysycl.bundle.property_sets`` stays light.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "kernel_id": "kernel_id", "get_kernel_id": "kernel_id", "get_kernel_ids": "kernel_id",
    "bundle_state": "device_image", "device_image": "device_image",
    "kernel_bundle": "kernel_bundle", "kernel": "kernel_bundle",
    "get_kernel_bundle": "free_functions", "has_kernel_bundle": "free_functions",
    "is_compatible": "free_functions", "compile": "free_functions", "link": "free_functions",
    "build": "free_functions", "join": "free_functions",
    "get_launcher": "launch", "Launcher": "launch",
    "save_kernel_bundle": "files", "load_kernel_bundle": "files",
}
__all__ = sorted(_EXPORTS) + ["this_module", "stats"]


def __getattr__(name):
    if name in ("this_module", "stats"):
        return importlib.import_module(f"{__name__}.{name}")
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)
