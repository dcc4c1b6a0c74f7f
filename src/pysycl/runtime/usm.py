"""Unified shared memory: ``sycl.malloc_device/shared/host`` -> ``sycl.usm_array``.

A ``usm_array`` is a typed, C-contiguous block with a device pointer (``ptr``). Memory
the host can reach (every kind on the native CPU, host/shared USM elsewhere) exposes
``__array_interface__``, so ``np.asarray(a)`` is a zero-copy view; all memory exposes
DLPack, and CUDA memory ``__cuda_array_interface__``.

>>> import numpy as np, pysycl as sycl
>>> q = sycl.queue()
>>> a = sycl.malloc_shared((2, 3), np.float32, q)
>>> np.asarray(a)[:] = 1; float(np.from_dlpack(a).sum())
6.0
>>> sycl.free(a, q)
"""
from __future__ import annotations

import numpy as np

from ..backends import registry
from ..errors import errc, exception, memory_error, type_error
from . import dlpack
from .context import context as context_cls
from .device import device as device_cls

_KINDS = ("device", "shared", "host")


def _shape(shape) -> tuple[int, ...]:
    """The extents as Python ints: integers only (no floats, no bools), none negative."""
    dims = (shape,) if hasattr(shape, "__index__") else shape
    try:
        dims = tuple(dims)
        if any(isinstance(s, (bool, np.bool_)) for s in dims):
            raise TypeError
        dims = tuple(s.__index__() for s in dims)
    except (TypeError, AttributeError):
        raise type_error(errc.invalid, f"USM shape must be an int or a tuple of ints, not "
                         f"{shape!r}") from None
    if any(s < 0 for s in dims):
        raise exception(errc.invalid, f"USM shape {dims} has a negative extent")
    return dims


def _dtype(dtype) -> np.dtype:
    """A dtype kernels can read as plain bytes: no Python objects, not zero-sized."""
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise type_error(errc.invalid, f"USM dtype {dtype!r} is not a NumPy dtype: {e}") \
            from None
    if dt.hasobject:
        raise type_error(errc.invalid, f"USM memory cannot hold Python objects (dtype {dt}): "
                         "use a numeric or structured dtype")
    if dt.itemsize == 0:
        raise type_error(errc.invalid, f"USM dtype {dt} has no size; give one (e.g. 'S8')")
    return dt


def _nbytes(shape: tuple[int, ...], dtype: np.dtype, desc, kind: str) -> int:
    """The allocation's size, computed exactly and checked against the device's memory
    (``errc.memory_allocation``, also a ``MemoryError``)."""
    n = dtype.itemsize
    for s in shape:
        n *= s
    limit = desc.global_mem_size
    if limit and n > limit:
        raise memory_error(errc.memory_allocation, f"{kind} USM of shape {shape} and dtype "
                           f"{dtype} needs {n} bytes; {desc.name} has {limit}")
    return n


def alloc_on(driver, desc, nbytes: int, kind: str, context_handle):
    """``driver.alloc`` in ``context_handle`` when the driver takes contexts."""
    try:
        if context_handle is not None:
            return driver.alloc(desc, nbytes, kind, context=context_handle)
        return driver.alloc(desc, nbytes, kind)
    except exception:
        raise
    except MemoryError as e:
        raise memory_error(errc.memory_allocation, f"cannot allocate {nbytes} bytes of {kind} "
                        f"memory on {desc.name}: {e}") from None


class usm_array:
    """Typed USM memory; ``shape``, ``dtype``, ``nbytes``, ``ptr``, ``usm_type``, ``device``."""

    __slots__ = ("_alloc", "_driver", "_context", "shape", "dtype", "nbytes", "ptr",
                 "usm_type", "device", "_host", "_karg", "__weakref__")

    def __init__(self, *_a, **_k):
        raise exception(errc.invalid, "use sycl.malloc_device/malloc_shared/malloc_host")

    @classmethod
    def _make(cls, shape, dtype, usm_type: str, dev, ctx) -> "usm_array":
        shape = _shape(shape)
        dtype = _dtype(dtype)
        desc = dev._desc
        nbytes = _nbytes(shape, dtype, desc, usm_type)
        if f"usm_{usm_type}_allocations" not in desc.aspects:
            raise exception(errc.feature_not_supported,
                            f"{dev.name} does not support {usm_type} USM allocations")
        a = object.__new__(cls)
        a._driver = dev.driver
        a._alloc = alloc_on(a._driver, desc, nbytes, usm_type, ctx.handle)
        a._context = ctx
        a.shape = shape
        a.dtype = dtype
        a.nbytes = nbytes
        a.ptr = int(a._alloc.ptr)
        a.usm_type = usm_type
        a.device = dev
        a._host = usm_type != "device" or bool(desc.extra.get("host_accessible"))
        a._karg = None   # the KernelArg of this memory, made by the first launch
        return a

    # Shape -----------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.nbytes // self.dtype.itemsize if self.dtype.itemsize else 0

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def __len__(self):
        return self.shape[0] if self.shape else 1

    def get_context(self):
        return self._context

    @property
    def memory(self):
        """The backend allocation (what a kernel argument carries)."""
        return self._alloc

    def _check_live(self):
        if not self.ptr and self.nbytes:
            raise exception(errc.invalid, "this sycl.usm_array was freed")

    # Interop ---------------------------------------------------------------------------
    @property
    def __array_interface__(self):
        if not self._host:
            raise AttributeError("device USM is not host-accessible on this device; "
                                 "copy it with q.memcpy / q.copy")
        self._check_live()
        return {"shape": self.shape, "typestr": self.dtype.str,
                "descr": self.dtype.descr if self.dtype.fields else [("", self.dtype.str)],
                "data": (self.ptr, False), "strides": None, "version": 3}

    @property
    def __cuda_array_interface__(self):
        if self.device._desc.backend != "cuda":
            raise AttributeError("__cuda_array_interface__ is only for CUDA memory")
        self._check_live()
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3, "stream": None}

    def __dlpack_device__(self) -> tuple[int, int]:
        return registry.dlpack_device(self.device._desc, self.usm_type)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("sycl.usm_array.__dlpack__ does not copy (copy=True)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"memory is on DLPack device {self.__dlpack_device__()}, "
                              f"not {tuple(dl_device)}")
        self._check_live()
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        return dlpack.to_capsule(self, self.ptr, self.shape, self.dtype,
                                 self.__dlpack_device__(), versioned=versioned)

    def to_numpy(self) -> np.ndarray:
        """A NumPy view (host-accessible memory) or copy (device memory)."""
        if self._host:
            return np.asarray(self)
        out = np.empty(self.shape, self.dtype)
        self._driver.copy(None, memoryview(out).cast("B"), 0, self._alloc, 0,
                          self.nbytes).wait()
        return out

    def __getitem__(self, index):
        return np.asarray(self)[index]

    def __setitem__(self, index, value):
        np.asarray(self)[index] = value

    def __repr__(self):
        return (f"<sycl.usm_array {self.usm_type} shape={self.shape} dtype={self.dtype} "
                f"on {self.device.name!r}>")


def _queue_parts(q, context):
    """``(device, context)`` of an allocation: from a queue (anything whose
    ``get_device()`` and ``get_context()`` give them), or a device and its default context."""
    if isinstance(q, device_cls):
        return q, context if context is not None else context_cls._default_for(q)
    get_device, get_context = getattr(q, "get_device", None), getattr(q, "get_context", None)
    if callable(get_device) and callable(get_context):
        dev, ctx = get_device(), get_context()
        if isinstance(dev, device_cls) and isinstance(ctx, context_cls):
            return dev, ctx
    raise exception(errc.invalid, f"USM allocation needs a sycl.queue (or device and "
                    f"context), not {q!r}")


def _malloc(kind: str, shape, dtype, q, context=None) -> usm_array:
    dev, ctx = _queue_parts(q, context)
    return usm_array._make(shape, dtype, kind, dev, ctx)


def malloc_device(shape, dtype=np.float32, q=None, context=None) -> usm_array:
    """Device USM: ``sycl.malloc_device((n,), np.float32, q)``."""
    return _malloc("device", shape, dtype, q, context)


def malloc_shared(shape, dtype=np.float32, q=None, context=None) -> usm_array:
    """Shared USM, reachable from host and device."""
    return _malloc("shared", shape, dtype, q, context)


def malloc_host(shape, dtype=np.float32, q=None, context=None) -> usm_array:
    """Host USM (pinned on GPUs)."""
    return _malloc("host", shape, dtype, q, context)


def malloc(shape, dtype, q, kind="shared", context=None) -> usm_array:
    """``sycl.malloc(shape, dtype, q, kind)`` with kind ``device``/``shared``/``host``."""
    kind = getattr(kind, "name", kind)
    if kind not in _KINDS:
        raise exception(errc.invalid, f"USM kind must be one of {_KINDS}, not {kind!r}")
    return _malloc(kind, shape, dtype, q, context)


def free(a: usm_array, q=None) -> None:
    """Release ``a``; using it afterwards is ``errc.invalid``. Freeing twice is harmless."""
    if not isinstance(a, usm_array):
        raise exception(errc.invalid, f"sycl.free takes a sycl.usm_array, not {type(a).__name__}")
    if a.ptr or not a.nbytes:
        a._driver.free(a._alloc)
        a.ptr = 0
