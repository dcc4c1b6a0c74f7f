"""``sycl.kernel_id`` (SYCL 2020 4.11.5) and the functions that obtain one (4.11.6).

A kernel_id has reference semantics: there is one object per application kernel, so
equality is identity and ``get_kernel_id(k) is get_kernel_id(k)``. ``get_name()`` is
``"<module>.<qualname>"`` unless ``@sycl.kernel(name=...)`` gave one.

A kernel function's id is kept on the function (``_pysycl_kernel_id``), and what the
default lookup makes of the kernel is kept on its id: the input image and link
(``builds``), executable images from the warm-start index (``warm_images``) and, per
device, its launchers (``device_caches``).

>>> import pysycl as sycl                                          # doctest: +SKIP
>>> sycl.get_kernel_id(conv).get_name()                            # doctest: +SKIP
'examples.conv'
"""
from __future__ import annotations

import importlib
import threading
from typing import Any, Iterable

from .. import config
from ..detail.memo import LRUMemo, Memo
from ..errors import errc, exception

_lock = threading.RLock()
_by_name: dict[str, "kernel_id"] = {}       # kernel name -> kernel_id (latest definition)


class kernel_id:
    """Identifies one application kernel; not constructible by users."""

    __slots__ = ("_name", "_kernel", "_module", "builds", "warm_images", "device_caches",
                 "__weakref__")

    def __init__(self, *_a, **_k):
        raise exception(errc.invalid, "kernel_id cannot be constructed; use "
                                      "sycl.get_kernel_id(kernel) or sycl.get_kernel_ids()")

    @classmethod
    def _make(cls, name: str, kernel=None, module: str | None = None) -> "kernel_id":
        self = object.__new__(cls)
        self._name = name
        self._kernel = kernel
        self._module = module
        self.builds = Memo()   # "input": the input image, "link": the default link
        # Executable images from the warm-start index, by target and (literal) values.
        self.warm_images = LRUMemo(config.max_programs)
        # device -> its launchers (by spec-constant values, properties, checks, context).
        self.device_caches = Memo()
        return self

    def get_name(self) -> str:
        """The kernel's name (``"<module>.<qualname>"`` or the ``name=`` given)."""
        return self._name

    @property
    def kernel(self):
        """The ``@sycl.kernel`` function, or None for a kernel known only by name
        (loaded from a bundle file whose defining module is not imported)."""
        return self._kernel

    @property
    def module_name(self) -> str | None:
        """The Python module (translation unit) that defines the kernel."""
        return self._module

    def __repr__(self) -> str:
        return f"kernel_id({self._name!r})"

    def __reduce__(self):
        raise TypeError("kernel_id has reference semantics and cannot be pickled")


# -- reading the frontend's kernel objects ---------------------------------------------

def is_kernel_function(obj) -> bool:
    """True for a ``@sycl.kernel`` function object."""
    try:
        from ..frontend import KernelFunction  # type: ignore[attr-defined]
        if isinstance(obj, KernelFunction):
            return True
    except ImportError:
        pass
    return callable(getattr(obj, "ir_module", None)) and getattr(obj, "kind", "kernel") == "kernel"


def kernel_function_name(kfn) -> str:
    for attr in ("kernel_name", "name"):
        v = getattr(kfn, attr, None)
        if isinstance(v, str) and v:
            return v
    fn = getattr(kfn, "py_function", None) or getattr(kfn, "__wrapped__", None) or kfn
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def kernel_function_module(kfn) -> str | None:
    for attr in ("module_name", "module"):
        v = getattr(kfn, attr, None)
        if isinstance(v, str):
            return v
    fn = getattr(kfn, "py_function", None) or getattr(kfn, "__wrapped__", None) or kfn
    return getattr(fn, "__module__", None)


def _frontend_registry():
    try:
        return importlib.import_module("pysycl.frontend.registry")
    except ImportError:
        return None


def registered_kernels(module_name: str | None = None) -> list[Any]:
    """``@sycl.kernel`` functions defined so far (in one Python module, or all)."""
    reg = _frontend_registry()
    if reg is None:
        return []
    if module_name is not None:
        for fname in ("kernels_in", "kernels_in_module", "kernels_of", "module_kernels"):
            fn = getattr(reg, fname, None)
            if callable(fn):
                return list(fn(module_name))
    for fname in ("all_kernels", "kernels", "kernels_defined", "registered_kernels"):
        fn = getattr(reg, fname, None)
        if callable(fn):
            found = fn()
            break
    else:
        found = getattr(reg, "KERNELS", {})
    if isinstance(found, dict):  # module -> kernels, or name -> kernel
        vals = list(found.values())
        found = [k for v in vals for k in (v if isinstance(v, (list, tuple, set)) else [v])]
    found = list(found)
    if module_name is not None:
        found = [k for k in found if kernel_function_module(k) == module_name]
    return found


# -- public functions ----------------------------------------------------------------

def _id_for_function(kfn) -> kernel_id:
    with _lock:
        kid = getattr(kfn, "_pysycl_kernel_id", None)
        if kid is not None:
            return kid
        name = kernel_function_name(kfn)
        kid = _by_name.get(name)
        if kid is not None and kid.kernel is None:  # a name-only id meets its definition
            kid._kernel, kid._module = kfn, kernel_function_module(kfn)
        elif kid is None or kid.kernel is not kfn:
            kid = kernel_id._make(name, kfn, kernel_function_module(kfn))
            # The latest definition of a name wins (a re-imported or redefined kernel).
            _by_name[name] = kid
        kfn._pysycl_kernel_id = kid   # kept on the function: goes when it goes
        return kid


def get_kernel_id(kernel) -> kernel_id:
    """The ``kernel_id`` of a ``@sycl.kernel`` function (or of a ``sycl.kernel`` object).

    >>> get_kernel_id(42)
    Traceback (most recent call last):
    ...
    pysycl.errors.exception: 42 is not a @sycl.kernel function
    """
    if isinstance(kernel, kernel_id):
        return kernel
    kid = getattr(kernel, "_pysycl_kernel_id", None)  # sycl.kernel objects
    if isinstance(kid, kernel_id):
        return kid
    if is_kernel_function(kernel):
        return _id_for_function(kernel)
    raise exception(errc.invalid, f"{kernel!r} is not a @sycl.kernel function")


def kernel_id_by_name(name: str) -> kernel_id:
    """The id of the kernel called ``name``; a name-only id when no such kernel is
    defined in this process (a bundle file for a module not imported)."""
    with _lock:
        kid = _by_name.get(name)
        if kid is not None:
            return kid
    for k in registered_kernels():
        if kernel_function_name(k) == name:
            return _id_for_function(k)
    with _lock:
        return _by_name.setdefault(name, kernel_id._make(name, None, None))


def get_kernel_ids() -> list[kernel_id]:
    """Every application kernel defined in the Python modules imported so far."""
    return [get_kernel_id(k) for k in registered_kernels()]


def to_kernel_ids(kernels: Iterable | None) -> list[kernel_id]:
    """Normalise a list of kernel_ids / kernel functions (``None`` stays ``[]``)."""
    if kernels is None:
        return []
    if isinstance(kernels, (kernel_id, str)) or is_kernel_function(kernels):
        kernels = [kernels]
    return [kernel_id_by_name(k) if isinstance(k, str) else get_kernel_id(k) for k in kernels]
