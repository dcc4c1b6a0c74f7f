"""Kernel bundles (SYCL 2020 §4.11, from the "SYCL Modules" proposal): kernel ids, device images,
bundles in input/object/executable state, the free functions, ``this_module``, the
runtime's ``get_launcher``, bundle files. Property sets, SYCLBIN and the build cache
live in ``property_sets``, ``syclbin`` and ``cache``.

>>> from pysycl.bundle import bundle_state
>>> bundle_state.object.name
'object'
"""
from __future__ import annotations

from . import stats, this_module
from .device_image import bundle_state, device_image
from .files import load_kernel_bundle, save_kernel_bundle
from .free_functions import (build, compile, get_kernel_bundle, has_kernel_bundle,
                             is_compatible, join, link)
from .kernel_bundle import kernel, kernel_bundle
from .kernel_id import get_kernel_id, get_kernel_ids, kernel_id
from .launch import Launcher, get_launcher

__all__ = [
    "Launcher", "build", "bundle_state", "compile", "device_image", "get_kernel_bundle",
    "get_kernel_id", "get_kernel_ids", "get_launcher", "has_kernel_bundle", "is_compatible",
    "join", "kernel", "kernel_bundle", "kernel_id", "link", "load_kernel_bundle",
    "save_kernel_bundle", "stats", "this_module",
]
