"""Unified shared memory: ``sycl.malloc_device/shared/host`` -> ``sycl.usm_array``.

A ``usm_array`` is a typed, C-contiguous block of USM with a device pointer (``ptr``)
that behaves as an array: ``shape``, ``dtype``, ``reshape``, ``astype``, ``copy``,
indexing (an element is a NumPy scalar; a slice that stays contiguous is a
``usm_array`` view of the same memory, usable as a kernel argument; other selections
are NumPy arrays), ``to_numpy()`` / ``copy_to_host()``, and NumPy arithmetic through
``__array_ufunc__``. Memory the host can reach (every kind on the native CPU,
host/shared USM elsewhere) converts with ``np.asarray(a)`` to a zero-copy view; all
memory exposes DLPack and ``__sycl_usm_array_interface__`` (dpctl's protocol), CUDA
memory ``__cuda_array_interface__``. Device memory the host cannot reach is a
``TypeError`` for NumPy (copy it with ``a.to_numpy()`` or ``q.memcpy``).

Lifetime is the same on every backend: the memory goes back to the device when the
array and its views are collected, or at ``sycl.free(a)``; NumPy views and DLPack
exports keep it alive, so after ``free`` the memory is released when the last of them
dies. A ``usm_array`` pickles by value (its data, never its address) and unpickles
into a new allocation of the same kind on the default device of the same backend.

>>> import numpy as np, pysycl as sycl
>>> q = sycl.queue()
>>> a = sycl.malloc_shared((2, 3), np.float32, q)
>>> a[:] = 1; float(np.from_dlpack(a).sum()), (a[1:] * 2).tolist()
(6.0, [[2.0, 2.0, 2.0]])
>>> sycl.free(a, q)
"""
from __future__ import annotations

import bisect
import copy
import enum
import threading
import weakref

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from ..backends import registry
from ..errors import errc, exception, memory_error, type_error
from ..properties import runtime as rt_props
from . import dlpack
from .context import context as context_cls
from .device import device as device_cls
from .device import select_device
from .selectors import default_selector_v
from . import usm_views

_KINDS = ("device", "shared", "host")


class alloc(enum.Enum):
    """``sycl.usm.alloc``: the kind of a USM pointer (SYCL 2020 4.8.2)."""

    host = 0
    device = 1
    shared = 2
    unknown = 3


class usm:
    """``sycl.usm``: holds ``sycl.usm.alloc`` as C++'s ``sycl::usm`` namespace does."""

    alloc = alloc


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


def alloc_on(driver, desc, nbytes: int, kind: str, context_handle, alignment: int = 0):
    """``driver.alloc`` in ``context_handle`` when the driver takes contexts, aligned to
    ``alignment`` bytes when more than the driver's guaranteed alignment is asked."""
    kwargs = {}
    if context_handle is not None:
        kwargs["context"] = context_handle
    if alignment > driver.alloc_alignment:
        if "alignment" not in driver.alloc_options:
            raise exception(errc.memory_allocation, f"{desc.name}: cannot align USM to "
                            f"{alignment} bytes (at most {driver.alloc_alignment})")
        kwargs["alignment"] = alignment
    try:
        return driver.alloc(desc, nbytes, kind, **kwargs)
    except exception:
        raise
    except MemoryError as e:
        raise memory_error(errc.memory_allocation, f"cannot allocate {nbytes} bytes of {kind} "
                        f"memory on {desc.name}: {e}") from None


class not_host_accessible(exception, TypeError):
    """Device USM used as host memory: a ``sycl.exception`` and a ``TypeError``."""


# Live allocations by start address (pointer queries): sorted starts and their blocks.
_starts: list[int] = []
_blocks: dict[int, "weakref.ref"] = {}
# Re-entrant: a garbage collection inside a registry update may run a finalizer that
# removes another allocation (the registry's own statements stay consistent).
_blocks_lock = threading.RLock()


def _release(driver, alloc, ptr: int) -> None:
    """Give the memory back (``alloc`` is a copy of the collected allocation object) and
    forget its address."""
    with _blocks_lock:
        if ptr in _blocks:
            del _blocks[ptr]
            del _starts[bisect.bisect_left(_starts, ptr)]
    driver.free(alloc)


def _free_when_collected(driver, alloc) -> None:
    """Free ``alloc`` when the allocation object itself is collected: whatever still uses
    the memory (an array, a view, a command not yet run, a kernel argument) holds it."""
    finalizer = weakref.finalize(alloc, _release, driver, copy.copy(alloc), int(alloc.ptr))
    finalizer.atexit = False   # the process gives everything back at exit


class _Block:
    """One allocation. The array, its NumPy views (through ``__array_interface__``, which
    makes the block their base) and its DLPack exports hold the block, the block holds
    the allocation object; commands hold that object until they are done."""

    __slots__ = ("alloc", "ptr", "nbytes", "usm_type", "device", "context", "__weakref__")

    def __init__(self, driver, alloc, nbytes: int, usm_type: str, dev, ctx):
        self.alloc = alloc
        self.ptr = int(alloc.ptr)
        self.nbytes = nbytes
        self.usm_type = usm_type
        self.device = dev
        self.context = ctx
        _free_when_collected(driver, alloc)
        if self.ptr:
            ref = weakref.ref(self)
            with _blocks_lock:
                if self.ptr not in _blocks:
                    bisect.insort(_starts, self.ptr)
                _blocks[self.ptr] = ref

    @property
    def __array_interface__(self):
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False),
                "strides": None, "version": 3}

    def view(self, dtype, shape, offset: int = 0) -> np.ndarray:
        # (a subarray dtype, such as a vec's, adds its dimensions, as NumPy does)
        return np.ndarray(shape, dtype, buffer=np.asarray(self), offset=offset)


def find_allocation(ptr: int):
    """The live USM block holding address ``ptr``, or None."""
    with _blocks_lock:
        i = bisect.bisect_right(_starts, ptr) - 1
        ref = _blocks.get(_starts[i]) if i >= 0 else None
    block = ref() if ref is not None else None
    if block is None or not (block.ptr <= ptr < block.ptr + max(block.nbytes, 1)):
        return None
    return block


class usm_array(NDArrayOperatorsMixin):
    """Typed USM memory; ``shape``, ``dtype``, ``nbytes``, ``ptr``, ``usm_type``, ``device``.

    An array (see the module): ``a[1:3]`` is a view of the same memory (its ``ptr``
    is the view's first element), ``a + 1`` computes with NumPy on memory the host
    reaches and gives a NumPy array.

    >>> import numpy as np, pysycl as sycl
    >>> a = sycl.malloc_shared(6, np.int32, sycl.queue()); a[:] = np.arange(6)
    >>> a
    sycl.usm_array([0, 1, 2, 3, 4, 5], dtype=int32, usm_type='shared')
    >>> a.reshape(2, 3)[1].to_numpy().tolist(), (a[4:].ptr - a.ptr) // a.itemsize
    ([3, 4, 5], 4)
    """

    __slots__ = ("_alloc", "_block", "_driver", "_context", "shape", "dtype", "nbytes", "ptr",
                 "usm_type", "device", "_host", "_karg", "_offset", "__weakref__")
    _is_usm_array = True
    __array_priority__ = 20      # a + ndarray and ndarray + a both come here

    def __init__(self, *_a, **_k):
        raise exception(errc.invalid, "use sycl.malloc_device/malloc_shared/malloc_host")

    @classmethod
    def _make(cls, shape, dtype, usm_type: str, dev, ctx, alignment: int = 0) -> "usm_array":
        shape = _shape(shape)
        dtype = _dtype(dtype)
        desc = dev._desc
        nbytes = _nbytes(shape, dtype, desc, usm_type)
        if f"usm_{usm_type}_allocations" not in desc.aspects:
            raise exception(errc.feature_not_supported,
                            f"{dev.name} does not support {usm_type} USM allocations")
        if alignment and (alignment < 0 or alignment & (alignment - 1)):
            raise exception(errc.invalid, f"USM alignment must be a power of two, "
                            f"not {alignment}")
        dlpack.sweep()   # exports consumers let go of may hold freed memory
        a = object.__new__(cls)
        a._driver = dev.driver
        a._alloc = alloc_on(a._driver, desc, nbytes, usm_type, ctx.handle, alignment)
        a._block = _Block(a._driver, a._alloc, nbytes, usm_type, dev, ctx)
        a._context = ctx
        a.shape = shape
        a.dtype = dtype
        a.nbytes = nbytes
        a.ptr = a._block.ptr
        a.usm_type = usm_type
        a.device = dev
        a._host = usm_type != "device" or bool(desc.extra.get("host_accessible"))
        a._karg = None   # the KernelArg of this memory, made by the first launch
        a._offset = 0    # bytes from the allocation's start (a view's first element)
        return a

    def _view(self, offset: int, shape: tuple) -> "usm_array":
        """A ``usm_array`` of ``shape`` at ``offset`` bytes from this array's start,
        sharing its allocation (which it keeps alive)."""
        self._check_live()
        v = object.__new__(usm_array)
        for name in ("_alloc", "_block", "_driver", "_context", "dtype", "usm_type",
                     "device", "_host"):
            setattr(v, name, getattr(self, name))
        v.shape = tuple(int(d) for d in shape)
        v.nbytes = int(np.prod(v.shape, dtype=np.int64)) * self.dtype.itemsize
        v._offset = self._offset + offset
        v.ptr = self._block.ptr + v._offset
        v._karg = None
        return v

    @property
    def memory_handle(self):
        """What a command passes for this memory: the allocation, or for a view that
        starts inside it its address (holding the allocation)."""
        self._check_live()
        return self._alloc if not self._offset else usm_views.ViewMemory(self.ptr, self._alloc)

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
        if self._block is None:
            raise exception(errc.invalid, "this sycl.usm_array was freed")

    def _check_host(self, what: str):
        if not self._host:
            raise not_host_accessible(
                errc.invalid, f"{what}: {self.usm_type} USM on {self.device.name!r} is not "
                "reachable from the host; copy it with a.to_numpy() or q.memcpy(host_array, a)")
        self._check_live()

    # Interop ---------------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        self._check_host("np.asarray of a sycl.usm_array")
        view = self._block.view(self.dtype, self.shape, self._offset)
        if dtype is not None and np.dtype(dtype) != self.dtype:
            if copy is False:
                raise ValueError(f"a {self.dtype} sycl.usm_array cannot be viewed as {dtype}")
            return view.astype(dtype)
        return view.copy() if copy else view

    def _host_view(self) -> np.ndarray:
        return self.__array__()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return usm_views.run_ufunc(ufunc, method, inputs, kwargs,
                                   lambda a: a._host_view())

    @property
    def __sycl_usm_array_interface__(self):
        self._check_live()
        return usm_views.interface_of(self, self._context)

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
        where = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != where:
            # Memory the host reaches is also CPU memory (np.from_dlpack(a, device="cpu")).
            if not (tuple(dl_device) == (dlpack.kDLCPU, 0) and self._host):
                raise BufferError(f"{self.usm_type} USM on {self.device.name!r} is on DLPack "
                                  f"device {where}, not {tuple(dl_device)}; copy it to the "
                                  "host with a.to_numpy() or q.memcpy")
            where = (dlpack.kDLCPU, 0)
        self._check_live()
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        return dlpack.to_capsule(self._block, self.ptr, self.shape, self.dtype, where,
                                 versioned=versioned)

    def to_numpy(self) -> np.ndarray:
        """A NumPy view (host-accessible memory) or copy (device memory)."""
        if self._host:
            return np.asarray(self)
        return self.copy_to_host()

    def copy_to_host(self) -> np.ndarray:
        """A NumPy copy of the contents, whatever the memory."""
        self._check_live()
        if self._host:
            return np.array(self, copy=True)
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            self._driver.copy(None, memoryview(out).cast("B"), 0, self._alloc, self._offset,
                              self.nbytes).wait()
        return out

    def _like(self, dtype) -> "usm_array":
        return usm_array._make(self.shape, dtype, self.usm_type, self.device, self._context)

    def copy(self) -> "usm_array":
        """A new allocation of the same kind, device and context holding a copy."""
        self._check_live()
        out = self._like(self.dtype)
        if self.nbytes:
            self._driver.copy(None, out._alloc, 0, self._alloc, self._offset,
                              self.nbytes).wait()
        return out

    def astype(self, dtype, copy: bool = True) -> "usm_array":
        """The contents converted to ``dtype`` (NumPy's casting), in a new allocation of
        the same kind; ``self`` when the dtype is the same and ``copy`` is False."""
        dtype = _dtype(dtype)
        if dtype == self.dtype and not copy:
            return self
        out = self._like(dtype)
        data = np.ascontiguousarray(self.copy_to_host().astype(dtype))
        if out.nbytes:
            out._driver.copy(None, out._alloc, 0, memoryview(data).cast("B"), 0,
                             out.nbytes).wait()
        return out

    def reshape(self, *shape) -> "usm_array":
        """A view of the same memory in another shape (one extent may be -1)."""
        return self._view(0, usm_views.new_shape(self.shape, self.size, shape))

    def tolist(self):
        return self.copy_to_host().tolist()

    def __getitem__(self, index):
        if usm_views.is_basic(index, self.ndim):
            offset, shape, contiguous = usm_views.view_layout(self.shape, self.dtype, index)
            if contiguous:
                return self._view(offset, shape)
            self._check_host("a strided selection of a sycl.usm_array")
            return np.asarray(self)[index]       # a NumPy view (not C-contiguous)
        self._check_host("indexing a sycl.usm_array")
        return np.asarray(self)[index]

    def __setitem__(self, index, value):
        self._check_host("assigning into a sycl.usm_array")
        np.asarray(self)[index] = value

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d sycl.usm_array")
        return (self[i] for i in range(self.shape[0]))

    def __reduce__(self):
        # By value: an address means nothing in another process (or after free).
        self._check_live()
        return (_unpickle, (self.device._desc.backend, self.usm_type,
                            np.array(self.to_numpy(), copy=True)))

    def __repr__(self):
        if self._block is None:
            return f"<sycl.usm_array {self.usm_type} (freed) shape={self.shape} dtype={self.dtype}>"
        body = np.array2string(self.copy_to_host(), separator=", ",
                               prefix="sycl.usm_array(")
        return f"sycl.usm_array({body}, dtype={self.dtype}, usm_type={self.usm_type!r})"


def _host_method(name: str):
    """``a.<name>(...)`` as NumPy's method on the host view (memory the host reaches)."""
    def method(self, *args, **kwargs):
        return getattr(self._host_view(), name)(*args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"``numpy.ndarray.{name}`` of the contents (host-reachable memory)."
    return method


# Reductions and queries NumPy code calls as methods (np.sum(a) calls a.sum()).
for _name in ("sum", "prod", "min", "max", "mean", "std", "var", "any", "all", "argmin",
              "argmax", "cumsum", "nonzero", "tobytes", "item", "fill"):
    setattr(usm_array, _name, _host_method(_name))


def _unpickle(backend: str, usm_type: str, data: np.ndarray) -> usm_array:
    """A pickled ``usm_array``: a new allocation of ``usm_type`` on the default device of
    ``backend`` holding ``data``."""
    try:
        dev = select_device(lambda d: default_selector_v(d) if d._desc.backend == backend
                            else -1)
    except exception:
        raise exception(errc.platform, f"cannot unpickle a sycl.usm_array of the {backend} "
                        f"backend: this process sees no {backend} device") from None
    a = usm_array._make(data.shape, data.dtype, usm_type, dev, context_cls._default_for(dev))
    if a.nbytes:
        a._driver.copy(None, a._alloc, 0, memoryview(np.ascontiguousarray(data)).cast("B"), 0,
                       a.nbytes).wait()
    return a


def _queue_parts(q, context):
    """``(device, context)`` of an allocation: from a queue (anything whose
    ``get_device()`` and ``get_context()`` give them), or a device and its default context."""
    if isinstance(q, device_cls):
        return q, context if context is not None else context_cls._default_for(q)
    if isinstance(q, context_cls):      # malloc_host(n, dtype, ctx): its first device
        return q.get_devices()[0], q
    get_device, get_context = getattr(q, "get_device", None), getattr(q, "get_context", None)
    if callable(get_device) and callable(get_context):
        dev, ctx = get_device(), get_context()
        if isinstance(dev, device_cls) and isinstance(ctx, context_cls):
            return dev, ctx
    raise exception(errc.invalid, f"USM allocation needs a sycl.queue (or device and "
                    f"context), not {q!r}")


def _places(obj) -> bool:
    """Whether ``obj`` says where memory goes (a queue, device or context)."""
    return isinstance(obj, (device_cls, context_cls)) or callable(getattr(obj, "get_context",
                                                                          None))


def _without_properties(args: list, properties) -> list:
    """``args`` less the property list SYCL 2020's USM allocation functions take last
    (after the queue, or the device and context; no core property applies to them, so it
    is checked to be one and otherwise unused), or ``properties=``."""
    plists = [a for a in args if a is not None and rt_props.is_property_list(a)]
    if len(plists) + (properties is not None) > 1:
        raise exception(errc.invalid, "USM allocation: properties given twice")
    if properties is not None and not rt_props.is_property_list(properties):
        raise exception(errc.invalid, f"USM allocation: {properties!r} is not a property list")
    return [a for a in args if a is None or not rt_props.is_property_list(a)]


def _malloc(kind: str, shape, dtype, q, context=None, alignment: int = 0, more=(),
            properties=None) -> usm_array:
    if _places(dtype):   # C++'s untyped form, malloc_shared(num_bytes, q[, ctx]): bytes
        shape, dtype, q, context = shape, np.uint8, dtype, q
    rest = _without_properties([context, *more], properties)
    context = rest[0] if rest else None
    if any(a is not None for a in rest[1:]):
        raise exception(errc.invalid, f"USM allocation: unexpected arguments {rest[1:]!r} "
                        "(takes a queue, or a device and a context, then properties)")
    dev, ctx = _queue_parts(q, context)
    return usm_array._make(shape, dtype, kind, dev, ctx, alignment)


def malloc_device(shape, dtype=np.float32, q=None, context=None, *more,
                  properties=None) -> usm_array:
    """Device USM: ``sycl.malloc_device((n,), np.float32, q)``."""
    return _malloc("device", shape, dtype, q, context, 0, more, properties)


def malloc_shared(shape, dtype=np.float32, q=None, context=None, *more,
                  properties=None) -> usm_array:
    """Shared USM, reachable from host and device."""
    return _malloc("shared", shape, dtype, q, context, 0, more, properties)


def malloc_host(shape, dtype=np.float32, q=None, context=None, *more,
                properties=None) -> usm_array:
    """Host USM (pinned on GPUs)."""
    return _malloc("host", shape, dtype, q, context, 0, more, properties)


def _kind(kind) -> str:
    kind = getattr(kind, "name", kind)
    if kind not in _KINDS:
        raise exception(errc.invalid, f"USM kind must be one of {_KINDS}, not {kind!r}")
    return kind


def _kinded(dtype, args, kind, context, properties):
    """``(dtype, queue or device, context, kind)`` of ``malloc``/``aligned_alloc``, whose
    C++ forms put the kind after the queue, or after the device and context, and may
    leave out the type (bytes): the arguments are told apart by what they are."""
    if _places(dtype):
        dtype, args = np.uint8, (dtype, *args)
    places, kinds = [], [] if kind is None else [kind]
    for a in _without_properties(list(args), properties):
        if a is None:
            continue
        (places if _places(a) else kinds).append(a)
    if context is not None:
        places.append(context)
    if len(kinds) > 1 or not 1 <= len(places) <= 2:
        raise exception(errc.invalid, "USM allocation takes a queue, or a device and a "
                        "context, and one kind (sycl.usm.alloc.device, shared or host)")
    return (dtype, places[0], places[1] if len(places) == 2 else None,
            _kind(kinds[0] if kinds else "shared"))


def malloc(shape, dtype, *args, kind=None, context=None, properties=None) -> usm_array:
    """``sycl.malloc(shape, dtype, q, kind)`` with kind ``device``/``shared``/``host``
    (or ``sycl.usm.alloc.device`` ...), or ``(shape, dtype, device, context, kind)``;
    also C++'s untyped ``malloc(num_bytes, q, kind)``. A property list may follow."""
    dtype, q, ctx, kind = _kinded(dtype, args, kind, context, properties)
    return _malloc(kind, shape, dtype, q, ctx)


def aligned_alloc_device(alignment: int, shape, dtype=np.float32, q=None,
                         context=None, *more, properties=None) -> usm_array:
    """Device USM whose address is a multiple of ``alignment`` (a power of two)."""
    return _malloc("device", shape, dtype, q, context, int(alignment), more, properties)


def aligned_alloc_shared(alignment: int, shape, dtype=np.float32, q=None,
                         context=None, *more, properties=None) -> usm_array:
    """Shared USM whose address is a multiple of ``alignment`` (a power of two)."""
    return _malloc("shared", shape, dtype, q, context, int(alignment), more, properties)


def aligned_alloc_host(alignment: int, shape, dtype=np.float32, q=None,
                       context=None, *more, properties=None) -> usm_array:
    """Host USM whose address is a multiple of ``alignment`` (a power of two)."""
    return _malloc("host", shape, dtype, q, context, int(alignment), more, properties)


def aligned_alloc(alignment: int, shape, dtype, *args, kind=None, context=None,
                  properties=None) -> usm_array:
    """``sycl.aligned_alloc(alignment, shape, dtype, q, kind)`` or ``(..., device,
    context, kind)``; also C++'s ``aligned_alloc(alignment, num_bytes, q, kind)``."""
    dtype, q, ctx, kind = _kinded(dtype, args, kind, context, properties)
    return _malloc(kind, shape, dtype, q, ctx, int(alignment))


def free(a: usm_array, q=None) -> None:
    """Release ``a``; using it afterwards is ``errc.invalid``. Freeing twice is harmless.
    NumPy views and DLPack exports of ``a`` still alive keep the memory until they die.
    ``sycl.free(None, q)`` (C++'s null pointer) does nothing, as SYCL 2020 4.8.3 says."""
    if a is None or (isinstance(a, (int, np.integer)) and not isinstance(a, bool) and a == 0):
        return
    if not isinstance(a, usm_array):
        raise type_error(errc.invalid, f"sycl.free takes a sycl.usm_array, not "
                         f"{type(a).__name__}")
    if a._offset:
        raise exception(errc.invalid, "sycl.free of a view: free the array it was made from "
                        "(its memory goes when the last view is collected)")
    a._block = None       # the memory goes when the last view lets go of the block
    a._alloc = None
    a._karg = None
    a.ptr = 0


# Pointer queries (SYCL 2020 4.8.4) ----------------------------------------------------
def _address(ptr) -> int:
    """The address of ``ptr``: an int, a ``usm_array``, or memory of another library
    (DLPack, ``__cuda_array_interface__``, ``__array_interface__``)."""
    if isinstance(ptr, usm_array):
        return ptr.ptr
    if isinstance(ptr, (int, np.integer)) and not isinstance(ptr, (bool, np.bool_)):
        return int(ptr)
    kind = type(ptr)
    if hasattr(kind, "__dlpack__"):
        return dlpack.data_pointer(ptr)
    for attr in ("__cuda_array_interface__", "__array_interface__"):
        if hasattr(kind, attr):
            return int(getattr(ptr, attr)["data"][0])
    raise _pointer_error(errc.invalid, f"not a pointer: {type(ptr).__name__} (expected an "
                         "address, a sycl.usm_array or an array exposing DLPack)")


class _pointer_error(exception, TypeError):
    """A pointer query given something that is not a pointer."""


def _check_context(ctx) -> None:
    if not isinstance(ctx, context_cls):
        raise _pointer_error(errc.invalid, f"the second argument must be a sycl.context, "
                             f"not {type(ctx).__name__}")


def _allocation_in(ptr, ctx):
    """The live block holding ``ptr`` if it was allocated in ``ctx``, else None."""
    _check_context(ctx)
    address = _address(ptr)
    block = find_allocation(address) if address else None
    if block is None:
        return None
    owner = block.context
    if owner is ctx or (owner._is_default and ctx._is_default and
                        owner.get_platform() == ctx.get_platform()):
        return block
    return None


def get_pointer_type(ptr, ctx) -> alloc:
    """``sycl.get_pointer_type(ptr, ctx)``: ``sycl.usm.alloc.host/device/shared``, or
    ``unknown`` for memory not allocated as USM in ``ctx`` (freed memory included)."""
    block = _allocation_in(ptr, ctx)
    return alloc.unknown if block is None else alloc[block.usm_type]


def get_pointer_device(ptr, ctx):
    """``sycl.get_pointer_device(ptr, ctx)``: the device of a device or shared
    allocation; for host USM the first device of ``ctx``. ``errc.invalid`` for memory
    not allocated in ``ctx``."""
    block = _allocation_in(ptr, ctx)
    if block is None:
        raise exception(errc.invalid, "get_pointer_device: the pointer is not USM "
                        "allocated in this context")
    return ctx.get_devices()[0] if block.usm_type == "host" else block.device


class usm_allocator:
    """``sycl.usm_allocator(dtype, kind, q, alignment=0)`` (or ``(dtype, kind, ctx, dev)``):
    a standard-library-style allocator of USM of one kind (host or shared, as in SYCL
    2020 4.8.3.7: device memory is not host-reachable), ``allocate(n)`` ->
    ``usm_array`` of ``n`` elements, ``deallocate(a)``.

    >>> import numpy as np, pysycl as sycl
    >>> al = sycl.usm_allocator(np.int32, sycl.usm.alloc.shared, sycl.queue())
    >>> a = al.allocate(4); a[:] = 7; a.to_numpy().tolist()
    [7, 7, 7, 7]
    >>> al.deallocate(a, 4)
    """

    __slots__ = ("dtype", "kind", "_device", "_context", "alignment")

    def __init__(self, dtype, kind, q_or_context, dev=None, alignment: int = 0):
        kind = _kind(kind)
        if kind == "device":
            raise exception(errc.invalid, "usm_allocator of device memory: the host cannot "
                            "reach it (SYCL 2020 4.8.3.7); use host or shared")
        self.dtype = np.dtype(dtype)
        self.kind = alloc[kind]
        if isinstance(q_or_context, context_cls):
            dev = dev if dev is not None else q_or_context.get_devices()[0]
            self._device, self._context = _queue_parts(dev, q_or_context)
        else:
            self._device, self._context = _queue_parts(q_or_context, None)
        self.alignment = int(alignment)

    def allocate(self, count: int) -> usm_array:
        return usm_array._make(int(count), self.dtype, self.kind.name, self._device,
                               self._context, self.alignment)

    def deallocate(self, a: usm_array, count: int | None = None) -> None:
        free(a)

    def get_context(self):
        return self._context

    def get_device(self):
        return self._device

    def __eq__(self, other):
        return isinstance(other, usm_allocator) and (self.kind, self._context) == \
            (other.kind, other._context)

    def __hash__(self):
        return hash((self.kind, id(self._context)))
