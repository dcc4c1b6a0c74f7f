"""pysycl: SYCL 2020 for Python. ``import pysycl as sycl`` and use SYCL's names.

This module is a facade of re-exports. The shared vocabulary (errors,
types, properties, ``detail``) is imported at once; everything else is imported on first
use through the module ``__getattr__`` (PEP 562), so that ``import pysycl`` stays fast
(no LLVM, no OpenCL or CUDA driver is touched) and never fails because one layer or an
optional backend cannot load: the name fails, with the real reason, when it is used.

>>> import numpy as np, pysycl as sycl
>>> q = sycl.queue()                                                   # doctest: +SKIP
>>> a = sycl.malloc_shared(16, np.float32, q)                         # doctest: +SKIP

Two public names serve two roles, as in the C++ API they mirror:

* ``sycl.kernel`` is the ``@sycl.kernel`` decorator (``@sycl.kernel`` or
  ``@sycl.kernel(properties=..., name=...)``) and the class of the kernel objects of
  executable bundles (``isinstance(kb.get_kernel(k), sycl.kernel)``).
* ``sycl.device`` is the ``@sycl.device`` decorator for device functions and the device
  class (``sycl.device(sycl.gpu_selector_v)``, ``sycl.device.get_devices()``).
"""
from __future__ import annotations

import ast as _ast
import importlib as _importlib
import inspect as _inspect
import textwrap as _textwrap

from .errors import compile_error, errc, exception, make_error_code, sycl_category
from .properties import (alignment, aspect, device_has, device_image_scope, host_access,
                         host_access_mode, implement_in_csr, init_mode, init_mode_enum,
                         max_linear_work_group_size, max_work_group_size, no_init, properties,
                         property, property_list, restrict, spec_constant_lowering,
                         sub_group_size, work_group_size, work_group_size_hint)
from .types import (access, access_mode, annotated_ptr, global_ptr, kernel_handler, memory_order,
                    memory_scope, read_only, read_write, struct, vec, write_only)
from . import detail

__version__ = "0.1.0"

# Lazily imported names: public name -> candidate "module:attribute" (or "module" for a
# submodule), first that exists wins. Several candidates only where a layer has not yet
# settled where a name lives; the first is where it belongs.
_LAZY: dict[str, tuple[str, ...]] = {
    # kernel language (frontend)
    "external": ("pysycl.frontend.decorators:external", "pysycl.frontend:external"),
    "specialization_id": ("pysycl.host_objects:specialization_id",),
    "device_global": ("pysycl.host_objects:device_global",),
    "math": ("pysycl.frontend.sycl_math",),
    "atomic_ref": ("pysycl.frontend.kernel_api:atomic_ref",),
    "atomic_fence": ("pysycl.frontend.kernel_api:atomic_fence",),
    "group_barrier": ("pysycl.frontend.kernel_api:group_barrier",),
    "reduce_over_group": ("pysycl.frontend.kernel_api:reduce_over_group",),
    "group_broadcast": ("pysycl.frontend.kernel_api:group_broadcast",),
    "any_of_group": ("pysycl.frontend.kernel_api:any_of_group",),
    "all_of_group": ("pysycl.frontend.kernel_api:all_of_group",),
    "none_of_group": ("pysycl.frontend.kernel_api:none_of_group",),
    "inclusive_scan_over_group": ("pysycl.frontend.kernel_api:inclusive_scan_over_group",),
    "exclusive_scan_over_group": ("pysycl.frontend.kernel_api:exclusive_scan_over_group",),
    "joint_reduce": ("pysycl.frontend.kernel_api:joint_reduce",),
    "joint_any_of": ("pysycl.frontend.kernel_api:joint_any_of",),
    "joint_all_of": ("pysycl.frontend.kernel_api:joint_all_of",),
    "joint_none_of": ("pysycl.frontend.kernel_api:joint_none_of",),
    "joint_inclusive_scan": ("pysycl.frontend.kernel_api:joint_inclusive_scan",),
    "joint_exclusive_scan": ("pysycl.frontend.kernel_api:joint_exclusive_scan",),
    "shift_group_left": ("pysycl.frontend.kernel_api:shift_group_left",),
    "shift_group_right": ("pysycl.frontend.kernel_api:shift_group_right",),
    "permute_group_by_xor": ("pysycl.frontend.kernel_api:permute_group_by_xor",),
    "select_from_group": ("pysycl.frontend.kernel_api:select_from_group",),
    "plus": ("pysycl.functional:plus",),
    "multiplies": ("pysycl.functional:multiplies",),
    "bit_and": ("pysycl.functional:bit_and",),
    "bit_or": ("pysycl.functional:bit_or",),
    "bit_xor": ("pysycl.functional:bit_xor",),
    "logical_and": ("pysycl.functional:logical_and",),
    "logical_or": ("pysycl.functional:logical_or",),
    "known_identity": ("pysycl.functional:known_identity",),
    "has_known_identity": ("pysycl.functional:has_known_identity",),
    "minimum": ("pysycl.functional:minimum",),
    "maximum": ("pysycl.functional:maximum",),
    "private_array": ("pysycl.frontend.kernel_api:private_array",),
    "static_range": ("pysycl.frontend.kernel_api:static_range",),
    "get_spec_constant": ("pysycl.frontend.kernel_api:get_spec_constant",),
    # index spaces and kernel parameter annotations
    "id": ("pysycl.runtime.ranges:id",),
    "range": ("pysycl.runtime.ranges:range",),
    "nd_range": ("pysycl.runtime.ranges:nd_range",),
    "item": ("pysycl.runtime.ranges:item", "pysycl.types:item"),
    "nd_item": ("pysycl.runtime.ranges:nd_item", "pysycl.types:nd_item"),
    "group": ("pysycl.runtime.ranges:group", "pysycl.types:group",
              "pysycl.frontend.kernel_api:group"),
    "sub_group": ("pysycl.runtime.ranges:sub_group", "pysycl.types:sub_group",
                  "pysycl.frontend.kernel_api:sub_group"),
    # platforms, devices, contexts, queues, events
    "platform": ("pysycl.runtime.device:platform",),
    "context": ("pysycl.runtime.context:context",),
    "queue": ("pysycl.runtime.queue:queue",),
    "device_for_rank": ("pysycl.runtime.ranks:device_for_rank",),
    "get_native": ("pysycl.runtime.interop:get_native",),
    "make_kernel_bundle": ("pysycl.runtime.interop:make_kernel_bundle",),
    "node_local_rank": ("pysycl.runtime.ranks:node_local_rank",),
    "handler": ("pysycl.runtime.handler:handler", "pysycl.runtime.queue:handler"),
    "event": ("pysycl.runtime.event:event",),
    "info": ("pysycl.runtime.info:info",),
    "backend": ("pysycl.runtime.info:backend",),
    "default_selector_v": ("pysycl.runtime.selectors:default_selector_v",),
    "cpu_selector_v": ("pysycl.runtime.selectors:cpu_selector_v",),
    "gpu_selector_v": ("pysycl.runtime.selectors:gpu_selector_v",),
    "accelerator_selector_v": ("pysycl.runtime.selectors:accelerator_selector_v",),
    "aspect_selector": ("pysycl.runtime.selectors:aspect_selector",),
    # memory
    "buffer": ("pysycl.runtime.buffer:buffer",),
    "accessor": ("pysycl.runtime.buffer:accessor",),
    "host_accessor": ("pysycl.runtime.buffer:host_accessor",),
    "local_accessor": ("pysycl.runtime.buffer:local_accessor",),
    "usm_array": ("pysycl.runtime.usm:usm_array",),
    "malloc_device": ("pysycl.runtime.usm:malloc_device",),
    "malloc_shared": ("pysycl.runtime.usm:malloc_shared",),
    "malloc_host": ("pysycl.runtime.usm:malloc_host",),
    "malloc": ("pysycl.runtime.usm:malloc",),
    "free": ("pysycl.runtime.usm:free",),
    "aligned_alloc": ("pysycl.runtime.usm:aligned_alloc",),
    "aligned_alloc_device": ("pysycl.runtime.usm:aligned_alloc_device",),
    "aligned_alloc_shared": ("pysycl.runtime.usm:aligned_alloc_shared",),
    "aligned_alloc_host": ("pysycl.runtime.usm:aligned_alloc_host",),
    "usm": ("pysycl.runtime.usm:usm",),
    "usm_allocator": ("pysycl.runtime.usm:usm_allocator",),
    "get_pointer_type": ("pysycl.runtime.usm:get_pointer_type",),
    "get_pointer_device": ("pysycl.runtime.usm:get_pointer_device",),
    "spec_constant": ("pysycl.runtime.handler:spec_constant", "pysycl.types:spec_constant"),
    # reductions (SYCL 2020 4.10.6)
    "reducer": ("pysycl.types:reducer",),
    "reduction": ("pysycl.runtime.reduction:reduction",),
    "span": ("pysycl.runtime.reduction:span",),
    # kernel bundles
    "bundle_state": ("pysycl.bundle.device_image:bundle_state",),
    "device_image": ("pysycl.bundle.device_image:device_image",),
    "kernel_bundle": ("pysycl.bundle.kernel_bundle:kernel_bundle",),
    "kernel_id": ("pysycl.bundle.kernel_id:kernel_id",),
    "get_kernel_id": ("pysycl.bundle.kernel_id:get_kernel_id",),
    "get_kernel_ids": ("pysycl.bundle.kernel_id:get_kernel_ids",),
    "get_kernel_bundle": ("pysycl.bundle.free_functions:get_kernel_bundle",),
    "has_kernel_bundle": ("pysycl.bundle.free_functions:has_kernel_bundle",),
    "is_compatible": ("pysycl.bundle.free_functions:is_compatible",),
    "compile": ("pysycl.bundle.free_functions:compile",),
    "link": ("pysycl.bundle.free_functions:link",),
    "build": ("pysycl.bundle.free_functions:build",),
    "join": ("pysycl.bundle.free_functions:join",),
    "this_module": ("pysycl.bundle.this_module",),
    "save_kernel_bundle": ("pysycl.bundle.files:save_kernel_bundle",),
    "load_kernel_bundle": ("pysycl.bundle.files:load_kernel_bundle",),
    # autotuning over specialization constants and work-group sizes
    "autotune": ("pysycl.runtime.autotune:autotune",),
    # SYCL 1.2.1 compatibility layer (sycl.compat.program)
    "compat": ("pysycl.compat",),
}

# Where the two-role names find their parts (same candidate rules as _LAZY).
_KERNEL_DECORATOR = ("pysycl.frontend.decorators:kernel", "pysycl.frontend:kernel")
_KERNEL_CLASS = ("pysycl.bundle.kernel_bundle:kernel_object",)
_DEVICE_DECORATOR = ("pysycl.frontend.decorators:device", "pysycl.frontend:device",
                     "pysycl.frontend.decorators:device_function",
                     "pysycl.frontend:device_function")
_DEVICE_CLASS = ("pysycl.runtime.device:device",)


def _resolve(public: str, candidates: tuple[str, ...]):
    """The first candidate that exists. A module that exists but fails to import raises
    its own error (a bug must not look like a missing feature)."""
    tried = []
    for cand in candidates:
        modname, _, attr = cand.partition(":")
        try:
            module = _importlib.import_module(modname)
        except ModuleNotFoundError as e:
            # Only "this very module (or its package) does not exist" means "not here";
            # a missing dependency inside an existing module is a real error.
            if e.name is None or not modname.startswith(e.name):
                raise
            tried.append(f"{modname} (not present)")
            continue
        if not attr:
            return module
        if hasattr(module, attr):
            return getattr(module, attr)
        tried.append(f"{modname}.{attr} (not defined)")
    raise AttributeError(f"sycl.{public} is not available in this pysycl build: "
                         f"looked for {', '.join(tried)}")


def __getattr__(name: str):
    candidates = _LAZY.get(name)
    if candidates is None:
        raise AttributeError(f"module 'pysycl' has no attribute {name!r}")
    value = _resolve(name, candidates)
    globals()[name] = value
    return value


# Two-role names -------------------------------------------------------------------
class _TwoRoleMeta(type):
    """``isinstance``, ``issubclass`` and class attributes go to the runtime class that
    the name stands for; calling the name is decided by the class's ``__new__``."""

    _class_candidates: tuple[str, ...] = ()

    def _runtime_class(cls):
        return _resolve(cls.__name__, cls._class_candidates)

    def __instancecheck__(cls, obj):
        return isinstance(obj, cls._runtime_class())

    def __subclasscheck__(cls, sub):
        return sub is cls or issubclass(sub, cls._runtime_class())

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(cls._runtime_class(), name)


class kernel(metaclass=_TwoRoleMeta):
    """``@sycl.kernel`` / ``@sycl.kernel(properties=..., name=...)`` makes a kernel of a
    Python function; instances (from ``kb.get_kernel(k)``) are the kernels of executable
    bundles (SYCL 2020 4.11.13).

    >>> @sycl.kernel                                                   # doctest: +SKIP
    ... def add(i: sycl.id[1], a: sycl.global_ptr[np.float32]): a[i] += 1
    """

    _class_candidates = _KERNEL_CLASS

    def __new__(cls, function=None, /, **options):
        decorator = _resolve("kernel", _KERNEL_DECORATOR)
        if function is None:
            return decorator(**options)
        return decorator(function, **options)


def _decorated_as_device(fn) -> bool | None:
    """Whether ``fn``'s source carries a ``@...device`` decorator (None: no source)."""
    try:
        tree = _ast.parse(_textwrap.dedent(_inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef)):
        return None
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, _ast.Call) else dec
        name = target.attr if isinstance(target, _ast.Attribute) else getattr(target, "id", "")
        if name == "device":
            return True
    return False


def _is_selector(obj) -> bool:
    """Whether ``sycl.device(obj)`` asks for a device (``obj`` is a selector) rather than
    decorating a device function. ``@sycl.device`` in the function's source decides;
    without it, a selector takes one parameter, the device, and does not annotate it with
    a data type (device functions may leave parameters unannotated, so a function used
    as ``sycl.device(f)`` with one bare parameter is taken as a selector)."""
    if obj is None or isinstance(obj, device):
        return True
    if not _inspect.isfunction(obj):
        # selector objects, functools.partial, ...; what is not callable at all (an int,
        # a string) is no function to decorate: the device lookup names the mistake.
        return True
    if getattr(obj, "__module__", "") == "pysycl.runtime.selectors" or hasattr(obj, "aspects"):
        return True
    decorated = _decorated_as_device(obj)
    if decorated is not None and obj.__name__ != "<lambda>":
        return not decorated
    try:
        params = list(_inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return True
    if len(params) != 1:
        return False
    ann = params[0].annotation
    if ann is _inspect.Parameter.empty:
        return True
    if isinstance(ann, str):
        return ann.rsplit(".", 1)[-1] == "device"
    return ann is device or (isinstance(ann, type) and issubclass(ann, device))


class device(metaclass=_TwoRoleMeta):
    """``sycl.device(selector=sycl.default_selector_v)`` picks a device; ``@sycl.device``
    on a function makes a device function (callable from kernels, internal to its
    bundle).

    >>> sycl.device(sycl.cpu_selector_v).is_cpu()                     # doctest: +SKIP
    True
    """

    _class_candidates = _DEVICE_CLASS

    def __new__(cls, selector=None, /, **options):
        if "selector" in options:
            selector = options.pop("selector")
        if options or not _is_selector(selector):
            decorator = _resolve("device", _DEVICE_DECORATOR)
            return decorator(selector, **options) if selector is not None \
                else decorator(**options)
        return cls._runtime_class()(selector)


# The public names -----------------------------------------------
__all__ = sorted({
    "exception", "errc", "compile_error", "make_error_code", "sycl_category", "kernel",
    "device", "struct", "vec",
    "global_ptr", "annotated_ptr", "spec_constant", "kernel_handler", "access", "access_mode",
    "read_only", "write_only", "read_write", "memory_order", "memory_scope", "detail",
    "properties", "property", "property_list", "work_group_size", "work_group_size_hint", "sub_group_size",
    "device_has", "max_work_group_size", "max_linear_work_group_size", "restrict",
    "alignment", "device_image_scope", "host_access", "host_access_mode", "init_mode",
    "init_mode_enum", "implement_in_csr", "no_init", "aspect", "spec_constant_lowering",
    *_LAZY,
})


def __dir__():
    return sorted(set(globals()) | set(__all__))


del annotations  # the __future__ feature object is not part of the facade
