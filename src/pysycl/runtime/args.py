"""Kernel arguments: checking the user's values and packing them per the KernelArg ABI
(``backends/base.py``), and checking index spaces against the device.

A :class:`Packer` is built once per launcher from its parameter list and cached; a
launch then runs one small function per parameter. Errors are
``errc.kernel_argument`` and name the kernel and the parameter.

>>> import numpy as np
>>> from types import SimpleNamespace as P
>>> pk = Packer([P(name="n", kind="scalar", dtype=np.dtype(np.int32), dims=0, mode=None)], "k")
>>> args, local = pk.pack((7,), None); args[0].value, local
(b'\\x07\\x00\\x00\\x00', 0)
"""
from __future__ import annotations

import numbers
import sys
import warnings
import weakref

import numpy as np

from .. import types
from ..backends.base import KernelArg, KernelArgKind
from ..backends import registry
from ..detail.generated_code import define
from ..errors import errc, exception, overflow_error, type_error
from . import dlpack
from .buffer import accessor, local_accessor
from .ranges import SIZE_LIMIT
from . import usm_views
from .usm import find_allocation, usm_array

_sys_modules = sys.modules

_SCALAR, _BYTES, _MEM, _LOCAL = (KernelArgKind.scalar, KernelArgKind.bytes,
                                 KernelArgKind.mem, KernelArgKind.local)
# Parameters the runtime supplies (no user argument).
_IMPLICIT = frozenset({"index", "kernel_handler"})
# Local blocks start at multiples of this inside the work-group's local memory; the
# native CPU driver lays them out the same way.
LOCAL_ALIGNMENT = 64


def _i64(v: int) -> KernelArg:
    return KernelArg(_SCALAR, int(v).to_bytes(8, "little", signed=True))


def _arg_error(kernel: str, name: str, message: str, kind=exception) -> exception:
    """``errc.kernel_argument`` naming the kernel and parameter; ``kind`` adds the Python
    type users catch (``type_error``, ``overflow_error``)."""
    return kind(errc.kernel_argument, f"kernel {kernel}: argument {name!r}: {message}")


# Index spaces ----------------------------------------------------------------------------
def check_launch(desc, global_size, local_size, kernel: str = "kernel", offset=None) -> None:
    """``errc.nd_range`` unless the launch fits the device's limits: the work-items and
    every extent plus its offset below 2**63 (an ``OverflowError`` too), and
    ``local_size`` tiling ``global_size`` within the device's work-group limits.

    >>> from types import SimpleNamespace as D
    >>> dev = D(max_work_group_size=256, max_work_item_sizes=(256, 256, 256))
    >>> check_launch(dev, (10,), (4,), "k")
    Traceback (most recent call last):
    ...
    pysycl.errors.exception: kernel k: global range (10,) is not a multiple of local range (4,) (dimension 0)
    >>> check_launch(D(max_work_group_size=1024, max_work_item_sizes=(64, 1024, 1024)),
    ...              (512,), (256,), "k")
    >>> check_launch(dev, (2**32, 2**32), None, "k")
    Traceback (most recent call last):
    ...
    pysycl.errors.overflow_error: kernel k: global range (4294967296, 4294967296) has 2**64 work-items; a launch has fewer than 2**63
    """
    _check_global(global_size, offset, kernel)
    if local_size is None:
        return
    if len(local_size) != len(global_size):
        raise exception(errc.nd_range, f"kernel {kernel}: local range {tuple(local_size)} and "
                        f"global range {tuple(global_size)} differ in dimensions")
    total = 1
    # max_work_item_sizes<D> is the last D entries of the 3-D limits (SYCL order: the
    # last dimension varies fastest), as in bundle/device_image.py.
    sizes = tuple(desc.max_work_item_sizes)
    first = len(sizes) - len(local_size)
    for dim, (extent, local) in enumerate(zip(global_size, local_size)):
        if local <= 0:
            raise exception(errc.nd_range, f"kernel {kernel}: local range "
                            f"{tuple(local_size)} has an empty dimension {dim}")
        if extent % local:
            raise exception(errc.nd_range, f"kernel {kernel}: global range {tuple(global_size)}"
                            f" is not a multiple of local range {tuple(local_size)} "
                            f"(dimension {dim})")
        limit = sizes[first + dim] if 0 <= first + dim < len(sizes) else 1
        if local > limit:
            raise exception(errc.nd_range, f"kernel {kernel}: local range {tuple(local_size)}"
                            f" exceeds the device's max_work_item_sizes<{len(local_size)}> "
                            f"{sizes[max(first, 0):]} in dimension {dim}")
        total *= local
    if total > desc.max_work_group_size:
        raise exception(errc.nd_range, f"kernel {kernel}: work-group of {total} work-items "
                        f"{tuple(local_size)} exceeds the device's max_work_group_size "
                        f"{desc.max_work_group_size}")


def _check_global(global_size, offset, kernel: str) -> None:
    total = 1
    for dim, extent in enumerate(global_size):
        end = extent + (offset[dim] if offset else 0)
        if end >= SIZE_LIMIT:
            raise overflow_error(errc.nd_range, f"kernel {kernel}: global range "
                                 f"{tuple(global_size)} with offset {tuple(offset or ())} "
                                 f"reaches {end} in dimension {dim}; ids are below 2**63")
        total *= extent
    if total >= SIZE_LIMIT:
        raise overflow_error(errc.nd_range, f"kernel {kernel}: global range "
                             f"{tuple(global_size)} has {_power(total)} work-items; a launch "
                             "has fewer than 2**63")


def _power(n: int) -> str:
    """``n`` as ``2**k`` when it is a power of two (readable huge counts)."""
    return f"2**{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


# Pointers --------------------------------------------------------------------------------
def _foreign_usm(owner, dev) -> str:
    """The message for USM of ``owner`` given to a kernel on ``dev``: the devices' reprs
    name their backends (an OpenCL and the native CPU device share the CPU's name)."""
    return (f"USM memory of {owner!r} cannot be used on {dev!r}; allocate it with a "
            "queue of that device, or copy it there (q.memcpy)")


def pointer_of(value, dev, kernel: str, name: str, keep: list, stream=None, context=None):
    """(memory handle, dtype, size in bytes) of a USM array or an interop object usable on ``dev``;
    ``stream``: the queue's backend stream (CUDA arrays of other libraries are ordered
    after their producer's pending work on it, see :func:`_cuda_pointer`); ``context``:
    the queue's, where host arrays a device cannot reach are staged (:class:`HostStaging`)."""

    desc = dev._desc
    if isinstance(value, usm_array):
        value._check_live()
        if value.device is not dev and value.device != dev and (value.usm_type == "device" or
                                    value.device.get_platform() != dev.get_platform()):
            raise _arg_error(kernel, name, _foreign_usm(value.device, dev))
        return value.memory_handle, value.dtype, value.nbytes
    if hasattr(value, "__sycl_usm_array_interface__"):
        return _sycl_usm_pointer(value, dev, kernel, name, keep)
    if isinstance(value, np.generic):   # (has __array_interface__: a copy of the value)
        raise _arg_error(kernel, name, f"expected an array, got the NumPy scalar {value!r}: "
                         "a kernel would write into a temporary copy", type_error)
    host = reaches_host_memory(desc)
    if host and hasattr(value, "__array_interface__"):
        iface = value.__array_interface__
        if iface.get("strides") is not None and not np.asarray(value).flags.c_contiguous:
            raise _arg_error(kernel, name, "array is not C-contiguous")
        if iface["data"][1]:
            raise _arg_error(kernel, name, "array is read-only")
        keep.append(value)
        dtype = np.dtype(iface["typestr"])
        return int(iface["data"][0]), dtype, _count(iface["shape"]) * dtype.itemsize
    if not host and context is not None:
        host_array = _host_array(value)
        if host_array is not None:
            return _staged_pointer(host_array, dev, context, kernel, name, keep)
    if desc.backend == "cuda" and (hasattr(value, "__cuda_array_interface__") or
                                   hasattr(value, "__dlpack__")):
        return _cuda_pointer(value, dev, kernel, name, keep, stream)
    if hasattr(value, "__dlpack__"):
        return _dlpack_pointer(value, dev, kernel, name, keep)
    raise _arg_error(kernel, name, f"expected a sycl.usm_array or an array on {dev.name!r}, "
                     f"got {type(value).__name__}", type_error)


# Host arrays on devices that cannot reach host memory ------------------------------------
def reaches_host_memory(desc) -> bool:
    """Whether kernels on the device read and write ordinary host memory (a NumPy array)
    through its address: the driver says so (``host_accessible``: the native CPU), or the
    device has SYCL's ``usm_system_allocations`` aspect (OpenCL CPU runtimes, GPUs with
    system-allocated memory access)."""
    return bool(desc.extra.get("host_accessible")) or "usm_system_allocations" in desc.aspects


class HostStaging:
    """A host array a kernel argument stands for on a device that cannot reach host
    memory: copied into ``device`` (a device USM array) before the launch and back
    after it, as Numba's CUDA target does with NumPy arrays."""

    __slots__ = ("host", "device")
    copies_out = True

    def __init__(self, host: np.ndarray, device):
        self.host, self.device = host, device

    def copy_in(self) -> None:
        if self.host.nbytes:
            self.device._driver.copy(None, self.device.memory_handle, 0,
                                     memoryview(self.host).cast("B"), 0,
                                     self.host.nbytes).wait()

    def copy_out(self) -> None:
        if self.host.nbytes:
            self.device._driver.copy(None, memoryview(self.host).cast("B"), 0,
                                     self.device.memory_handle, 0, self.host.nbytes).wait()


_staging_warned = False


def _host_array(value) -> np.ndarray | None:
    """``value`` as a NumPy array over its own host memory, if it is host memory (a NumPy
    array, anything with ``__array_interface__``, a CPU DLPack tensor), else None."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__array_interface__"):
        return np.asarray(value)
    if hasattr(value, "__dlpack_device__") and hasattr(value, "__dlpack__"):
        try:
            if tuple(value.__dlpack_device__())[0] == dlpack.kDLCPU:
                return np.from_dlpack(value)
        except (BufferError, RuntimeError, TypeError, ValueError):
            return None
    return None


def _staged_pointer(arr: np.ndarray, dev, context, kernel, name, keep):
    """Device USM standing for host array ``arr`` (see :class:`HostStaging`), warning once
    per process that the copies happen."""
    global _staging_warned
    if not arr.flags.c_contiguous:
        raise _arg_error(kernel, name, "array is not C-contiguous")
    if not arr.flags.writeable:
        raise _arg_error(kernel, name, "array is read-only")
    if arr.dtype.hasobject:
        raise _arg_error(kernel, name, f"array of {arr.dtype} (Python objects)", type_error)
    if not _staging_warned:
        _staging_warned = True
        warnings.warn(f"kernel {kernel}: argument {name!r} is host memory, which "
                      f"{dev.name!r} cannot reach: it is copied to the device before the "
                      "launch and back after it, and the launch waits for the kernel. Use "
                      "sycl.malloc_device with q.memcpy, or a sycl.buffer, to decide when "
                      "data moves (this warning is shown once)", RuntimeWarning, stacklevel=2)
    staged = usm_array._make(arr.shape, arr.dtype, "device", dev, context)
    keep.append(HostStaging(arr, staged))
    return staged.memory_handle, arr.dtype, arr.nbytes


def _sycl_usm_pointer(value, dev, kernel, name, keep):
    """Memory of another array type exposing ``__sycl_usm_array_interface__`` (dpctl,
    dpnp): usable when it lies in a live pysycl USM allocation this device can use."""
    try:
        ptr, dtype, nbytes = usm_views.interface_memory(value)
    except exception as e:
        raise _arg_error(kernel, name, str(e), type(e)) from None
    block = find_allocation(ptr) if ptr else None
    if block is None or ptr + nbytes > block.ptr + block.nbytes:
        raise _arg_error(kernel, name, f"its __sycl_usm_array_interface__ memory is not USM "
                         f"pysycl allocated; copy it into a sycl.malloc_* array (q.memcpy)")
    if block.device != dev and (block.usm_type == "device" or
                                block.device.get_platform() != dev.get_platform()):
        raise _arg_error(kernel, name, _foreign_usm(block.device, dev))
    keep.append(value)
    mem = block.alloc if ptr == block.ptr else usm_views.ViewMemory(ptr, block.alloc)
    return mem, dtype, nbytes


def _c_contiguous(shape, strides, itemsize: int) -> bool:
    """``strides`` (in bytes) are those of a C-contiguous array (extents of 1 ignored)."""
    want = itemsize
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent != 1 and stride != want:
            return False
        want *= extent
    return True


def _dlpack_pointer(value, dev, kernel, name, keep, stream=None):

    desc = dev._desc
    want = registry.dlpack_device(desc, "device")
    have = tuple(value.__dlpack_device__())
    host_ok = reaches_host_memory(desc) and have[0] in (dlpack.kDLCPU, dlpack.kDLCUDAHost)
    if desc.backend == "cuda":     # pinned host and managed memory are reachable too
        host_ok = have[0] == dlpack.kDLCUDAHost or have == (dlpack.kDLCUDAManaged, want[1])
    if have != want and not host_ok:
        raise _arg_error(kernel, name, f"DLPack memory on device {have} is not on "
                         f"{dev.name!r} {want}")
    try:
        if stream is not None:
            # DLPack's stream protocol: the producer makes this stream wait for its
            # pending work (0 is not allowed; the driver API's 0 is the legacy stream, 1).
            handle = int(getattr(stream, "ptr", 0) or 0) or 1
            try:
                cap = value.__dlpack__(stream=handle)
            except TypeError:          # a producer without the stream keyword
                cap = value.__dlpack__()
        else:
            cap = value.__dlpack__()
    except (BufferError, RuntimeError, ValueError) as e:
        raise _arg_error(kernel, name, f"cannot export it through DLPack: {e}") from None
    tensor = dlpack.tensor_of(cap)
    code = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}.get(tensor.dtype.code, "V")
    dtype = np.dtype(f"{code}{tensor.dtype.bits // 8}") if code != "b" else np.dtype(np.bool_)
    keep.append((value, cap))  # the capsule owns the memory until the command is done
    if tensor.strides:
        shape = [tensor.shape[i] for i in range(tensor.ndim)]
        strides = [tensor.strides[i] * dtype.itemsize for i in range(tensor.ndim)]
        if not _c_contiguous(shape, strides, dtype.itemsize):
            raise _arg_error(kernel, name, f"array is not C-contiguous (shape {tuple(shape)}"
                             f", element strides {tuple(tensor.strides[i] for i in range(tensor.ndim))})")
    count = _count(tensor.shape[i] for i in range(tensor.ndim))
    return int(tensor.data or 0) + int(tensor.byte_offset), dtype, count * dtype.itemsize


def _cuda_pointer(value, dev, kernel, name, keep, stream):
    """A CUDA array of another library (PyTorch, CuPy, Numba, JAX...) on ``dev``, used in
    place. DLPack first: ``__dlpack__(stream=queue's stream)`` has the producer order its
    pending work before this queue's (the DLPack stream protocol); otherwise
    ``__cuda_array_interface__``, whose v3 ``stream`` is waited for with an event.

    An array seen before (same object, address and shape, on this device) whose
    producer's stream can be asked again (see :func:`_probe_for`) skips the export and
    the checks: only that stream is ordered (a launch loop over the same tensors asks the
    driver once per producer stream and launch whether it is idle, instead of an export
    per array)."""
    hit = _known_cuda_array(value, dev, stream, keep)
    if hit is not None:
        return hit.found
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        found = _dlpack_pointer(value, dev, kernel, name, keep, stream)
    else:
        found = _cai_pointer(value, dev, kernel, name, keep, stream)
    _remember_cuda_array(value, dev, found)
    return found


def _cai_pointer(value, dev, kernel, name, keep, stream):
    try:
        cai = value.__cuda_array_interface__
    except AttributeError as e:
        raise _arg_error(kernel, name, f"no usable __cuda_array_interface__: {e}") from None
    dtype = np.dtype(cai["typestr"])
    ptr, read_only = cai["data"]
    if read_only:
        raise _arg_error(kernel, name, "array is read-only")
    strides = cai.get("strides")
    if strides is not None and not _c_contiguous(cai["shape"], strides, dtype.itemsize):
        raise _arg_error(kernel, name, "array is not C-contiguous")
    driver = dev.driver
    if ptr:
        ordinal = driver.pointer_ordinal(int(ptr))
        if ordinal is not None and ordinal != dev._desc.handle.ordinal:
            raise _arg_error(kernel, name, f"CUDA memory of GPU {ordinal} cannot be used on "
                             f"{dev.name!r}")
    _order_after(cai.get("stream"), dev, stream, keep)
    keep.append(value)
    return int(ptr), dtype, _count(cai["shape"]) * dtype.itemsize


class _Waited:
    """Marks in a launch's ``keep`` list that its stream already waits for a producer
    stream (several arrays of one library need one event)."""

    __slots__ = ("producer",)

    def __init__(self, producer: int):
        self.producer = producer


def _order_after(producer, dev, stream, keep) -> bool:
    """Make ``stream`` wait for the work issued so far on the producer's stream (the
    ``__cuda_array_interface__`` v3 ``stream``: None means none to wait for). A queue
    on the producer's own stream needs nothing: its commands follow in issue order (a
    queue made on the legacy default stream, handle 0, is the interface's 1); nor does
    a queue's blocking stream after the legacy default stream (CuPy's and PyTorch's
    default), which CUDA orders itself. True when nothing is ever needed for this
    stream and producer."""
    if producer is None or stream is None:
        return True
    producer = int(producer)
    if stream.ordered_after(producer):
        return True
    for item in keep:
        if type(item) is _Waited and item.producer == producer:
            return False
    dev.driver.wait_foreign_stream(stream, producer)
    keep.append(_Waited(producer))
    return False


class _Known:
    """A CUDA array of another library already exported and checked on ``dev``, while
    it lives: ``found`` (address, dtype, bytes) and its ``karg``, and how to ask it again
    for its address and shape (``seen``) and its producer's stream (``probe``, see
    :func:`_probe_for`)."""

    __slots__ = ("ref", "dev", "found", "karg", "probe", "seen", "ordered")

    def __init__(self, ref, dev, found, probe, seen):
        self.ref, self.dev, self.found, self.probe, self.seen = ref, dev, found, probe, seen
        self.karg = KernelArg(_MEM, found[0])   # one object: launches compare it by identity
        # (stream, producer stream) last found to need no ordering (a launch loop's).
        self.ordered = (None, None)


# id(array) -> _Known
_known: dict[int, _Known] = {}


def _cai_probe(value):
    """``((address, shape), producer stream)`` from ``__cuda_array_interface__`` v3,
    whose ``stream`` is the producer's stream at this moment (CuPy, Numba)."""
    cai = value.__cuda_array_interface__
    return (int(cai["data"][0]), tuple(cai["shape"])), cai["stream"]


# Probes of one library (and device) made once: arrays of one library share theirs, and
# its ``stream`` (a launch loop asks it once for all of them: runtime/replay.py).
_library_probes: dict = {}


def _shared_probe(key, make):
    probe = _library_probes.get(key)
    if probe is None:
        probe = _library_probes[key] = make()
    return probe


def _torch_probe(torch, dev):
    """PyTorch's: its interface (version 2) has no stream; DLPack's stream protocol
    orders its *current* stream on the tensor's device, which is asked here the same
    way (0, the legacy default stream, is 1 in the interface's terms). Its ``stream()``
    and ``where(value)`` are the two halves of what it returns."""
    ordinal = dev._desc.handle.ordinal
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)

    def stream():
        return (raw(ordinal) if raw is not None else
                torch.cuda.current_stream(ordinal).cuda_stream) or 1

    def where(value):
        return value.data_ptr(), value.shape

    def probe(value):
        current = raw(ordinal) if raw is not None else \
            torch.cuda.current_stream(ordinal).cuda_stream
        return (value.data_ptr(), value.shape), current or 1
    probe.stream, probe.where = stream, where
    return probe


# CuPy's null stream in the interface's terms (1, or 2 with per-thread default
# streams), learnt from its own ``__cuda_array_interface__``.
_cupy_null: list = [None]


def _cupy_probe(cupy):
    """CuPy's: what its ``__cuda_array_interface__`` v3 reports (the current stream, the
    null stream as 1 or 2), read from the array and CuPy's current stream, without the
    dict the interface builds at every read (two thirds of a launch's time)."""
    current = cupy.cuda.get_current_stream

    def stream():   # (None: not known without an array's interface; never ordered)
        return current().ptr or _cupy_null[0]

    def where(value):
        return value.data.ptr, value.shape

    def probe(value):
        ptr = current().ptr
        if not ptr:
            ptr = _cupy_null[0]
            if ptr is None:
                return _cai_probe(value)
        return (value.data.ptr, value.shape), ptr
    probe.stream, probe.where = stream, where
    return probe


def _probe_for(value, dev):
    """How to ask ``value`` for its address, shape and producer stream on a later
    launch on ``dev``, or None: then it is exported again at every launch (the
    producer's stream cannot be known otherwise, and ordering after it is not
    optional)."""
    torch = _sys_modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return _shared_probe((torch, dev), lambda: _torch_probe(torch, dev))
    try:
        cai = value.__cuda_array_interface__
    except (AttributeError, RuntimeError):
        return None
    if "stream" not in cai or cai.get("version", 0) < 3:
        return None
    cupy = _sys_modules.get("cupy")
    if cupy is not None and value.__class__ is cupy.ndarray:
        if not cupy.cuda.get_current_stream().ptr:
            _cupy_null[0] = cai["stream"]
        probe = _shared_probe(cupy, lambda: _cupy_probe(cupy))
        if probe(value) == _cai_probe(value):
            return probe
    return _cai_probe


def _remember_cuda_array(value, dev, found) -> None:
    if len(_known) >= 4096:
        return
    try:
        probe = _probe_for(value, dev)
        if probe is None:
            return
        seen, _stream = probe(value)
        ref = weakref.ref(value, lambda _r, key=id(value): _known.pop(key, None))
    except (AttributeError, TypeError, RuntimeError, KeyError):
        return   # nothing to check it by next time, or no weak references
    if seen[0] == int(found[0]):
        _known[id(value)] = _Known(ref, dev, found, probe, seen)


def _known_cuda_array(value, dev, stream, keep, dt=None) -> _Known | None:
    """The entry of a CUDA array of another library seen before on ``dev`` whose
    address and shape are unchanged (a resized tensor gets a new address: exported
    again) and whose memory suits a ``global_ptr[dt]`` (None: any), with ``stream``
    ordered after its producer's and the array held in ``keep``; else None (then the
    general path checks it, and raises what is wrong). This is every argument of a
    launch loop over such arrays (the generated packer takes its ``karg``)."""
    hit = _known.get(id(value))
    if hit is None or hit.dev is not dev or hit.ref() is not value:
        return None
    try:
        seen, producer = hit.probe(value)
    except (AttributeError, TypeError, RuntimeError, KeyError):
        return None
    have = hit.found[1]
    if seen != hit.seen or dt is not have and _wrong_memory(have, dt):
        return None
    ordered = hit.ordered
    if (stream is not ordered[0] or producer != ordered[1]) and \
            _order_after(producer, dev, stream, keep):
        hit.ordered = (stream, producer)
    keep.append(value)
    return hit


def known_entry(value, karg, stream) -> _Known | None:
    """The entry of another library's CUDA array ``value`` whose KernelArg is ``karg``
    and whose producer's stream needed no ordering for ``stream`` last time (what a
    launch loop's replay checks again: runtime/replay.py), or None."""
    hit = _known.get(id(value))
    if hit is None or hit.karg is not karg or hit.ref() is not value or \
            hit.ordered[0] is not stream:
        return None
    return hit


def _wrong_memory(have: np.dtype, dt: np.dtype | None) -> bool:
    """Whether memory of ``have`` cannot back a ``global_ptr[dt]`` (None, a struct or a
    size-less type takes any)."""
    return dt is not None and have is not dt and have != dt and bool(have.itemsize) and \
        dt.kind != "V"


def _article(word: str) -> str:
    """English article for a type name: an int32, a uint8 ("you-int"), a float32."""
    return "an" if word[:1] in ("a", "e", "i", "o") else "a"


def _count(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


# Per-parameter packers -------------------------------------------------------------------
def _scalar_packer(p, kernel):
    dt = np.dtype(p.dtype)
    typ = dt.type
    integral = dt.kind in "iub"
    # Launch loops pass the same few values again and again: remember their KernelArgs
    # (keyed by type too, so 1 and 1.0 and True stay apart).
    cache: dict = {}

    def pack(value, out, cgh, keep):
        key = (type(value), value)
        try:
            hit = cache.get(key)
        except TypeError:  # unhashable: certainly not a scalar
            hit = None
        if hit is None:
            hit = _convert_scalar(value, dt, typ, integral, kernel, p.name)
            if len(cache) < 256:
                cache[key] = hit
        out.append(hit)
    pack.cache = cache   # read directly by Packer's generated fast path
    return pack


def _convert_scalar(value, dt, typ, integral, kernel, name) -> KernelArg:
    """``value`` as the bytes of a ``dt`` parameter. As C++ list-initialisation would,
    it refuses a conversion that loses information: an integer out of ``dt``'s range, a
    float that is not a whole number (or not finite) for an integer parameter, a finite
    float that overflows a float parameter, a complex for a real one. Values of NumPy
    types are checked like Python numbers (NumPy's own casts wrap silently)."""
    if not isinstance(value, (numbers.Number, np.generic)) or isinstance(value, np.ndarray):
        raise _arg_error(kernel, name, f"expected {_article(str(dt))} {dt} scalar, got {type(value).__name__}",
                         type_error)
    if dt.kind != "c" and isinstance(value, (complex, np.complexfloating)):
        raise _arg_error(kernel, name, f"complex value {value!r} for a {dt} parameter",
                         type_error)
    if integral:
        return KernelArg(_SCALAR, typ(_whole(value, dt, kernel, name)).tobytes())
    if dt.kind in "fc" and not isinstance(value, (numbers.Integral, np.integer, np.bool_)):
        with np.errstate(over="ignore"):
            out = typ(value)
        if np.isinf(out.real) and np.isfinite(np.real(value)) or \
                np.isinf(out.imag) and np.isfinite(np.imag(value)):
            raise _arg_error(kernel, name, f"{value!r} overflows {dt}", overflow_error)
        return KernelArg(_SCALAR, out.tobytes())
    try:
        return KernelArg(_SCALAR, typ(value).tobytes())
    except OverflowError as e:
        raise _arg_error(kernel, name, f"{value!r} does not fit {dt}: {e}",
                         overflow_error) from None
    except (ValueError, TypeError) as e:
        raise _arg_error(kernel, name, f"{value!r} does not fit {dt}: {e}") from None


def _whole(value, dt, kernel, name) -> int:
    """``value`` as a Python int in the range of the integer (or bool) dtype ``dt``."""
    if isinstance(value, (numbers.Integral, np.integer, np.bool_)):
        v = int(value)
    else:
        f = float(value)
        if not f.is_integer():   # also nan and inf
            raise _arg_error(kernel, name, f"{value!r} is not an integer ({dt})", type_error)
        v = int(f)
    lo, hi = (0, 1) if dt.kind == "b" else (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
    if not lo <= v <= hi:
        raise _arg_error(kernel, name, f"{value!r} does not fit {dt} ([{lo}, {hi}])",
                         overflow_error)
    return v


def _struct_packer(p, kernel):
    dt = np.dtype(p.dtype)

    def pack(value, out, cgh, keep):
        try:
            out.append(KernelArg(_BYTES, types.to_struct_bytes(value, dt)))
        except (TypeError, ValueError) as e:
            raise _arg_error(kernel, p.name, f"cannot convert {value!r} to {dt}: {e}",
                             type_error) from None
    return pack


def _accessor_packer(p, kernel):

    want_write = p.mode is not None and types.access_mode(getattr(p.mode, "value", p.mode)) \
        is not types.access_mode.read_only
    dt = np.dtype(p.dtype) if p.dtype is not None else None

    def pack(value, out, cgh, keep):
        if not isinstance(value, accessor):
            raise _arg_error(kernel, p.name, f"expected a sycl.accessor, got "
                             f"{type(value).__name__}", type_error)
        if value._cgh is not cgh:
            raise exception(errc.accessor, f"kernel {kernel}: accessor for {p.name!r} was not "
                            "created for this command group (pass cgh to sycl.accessor)")
        if p.dims and value.dims != p.dims:
            raise _arg_error(kernel, p.name, f"{value.dims}-D accessor for a {p.dims}-D "
                             "parameter", type_error)
        if dt is not None and value.dtype != dt:
            raise _arg_error(kernel, p.name, f"accessor of {value.dtype} for a {dt} parameter",
                             type_error)
        if want_write and not value.write:
            raise _arg_error(kernel, p.name, "read_only accessor for a parameter the kernel "
                             "writes")
        out.append(KernelArg(_MEM, value._mem._memory_for(cgh._queue._device,
                                                          cgh._queue._context)))
        for v in (*value._range, *value._shape, *value._offset, value._base):
            out.append(_i64(v))
    return pack


def _local_packer(p, kernel):

    def pack(value, out, cgh, keep):
        if not isinstance(value, local_accessor):
            raise _arg_error(kernel, p.name, "expected cgh.local_accessor(dtype, shape), got "
                             f"{type(value).__name__}", type_error)
        if p.dims and value.dims != p.dims:
            raise _arg_error(kernel, p.name, f"{value.dims}-D local accessor for a "
                             f"{p.dims}-D parameter", type_error)
        if p.dtype is not None and value.dtype != np.dtype(p.dtype):
            raise _arg_error(kernel, p.name, f"local accessor of {value.dtype} for a "
                             f"{np.dtype(p.dtype)} parameter", type_error)
        out.append(KernelArg(_LOCAL, value.nbytes))
        for extent in value.shape:
            out.append(_i64(extent))
    return pack


def _pointer_packer(p, kernel, bounds: bool = False):
    """``bounds``: a checked build, whose pointer parameters also take the size in bytes
    of their memory (``ir/check_record``)."""
    dt = np.dtype(p.dtype) if p.dtype is not None else None

    def pack(value, out, cgh, keep):
        dev = cgh._queue._device
        if type(value) is usm_array and value.device is dev and value.ptr:
            have = value.dtype   # the common case, checked cheaply
            if _wrong_memory(have, dt):
                raise _arg_error(kernel, p.name, f"memory of {have} for a global_ptr[{dt}]",
                                 type_error)
            karg = value._karg   # made once per array; refers to nothing more than it
            if karg is None:
                karg = value._karg = KernelArg(_MEM, value.memory_handle)
            out.append(karg)
            if bounds:
                out.append(_i64(value.nbytes))
            return
        hit = _known_cuda_array(value, dev, cgh._queue._stream, keep) if _known else None
        if hit is not None:   # checked when first seen, but for this parameter's type
            have = hit.found[1]
            if _wrong_memory(have, dt):
                raise _arg_error(kernel, p.name, f"memory of {have} for a "
                                 f"global_ptr[{dt}]", type_error)
            out.append(hit.karg)
            if bounds:
                out.append(_i64(hit.found[2]))
            return
        mem, have, nbytes = pointer_of(value, dev, kernel, p.name, keep,
                                       cgh._queue._stream, cgh._queue._context)
        if _wrong_memory(have, dt):
            raise _arg_error(kernel, p.name, f"memory of {have} for a global_ptr[{dt}]",
                             type_error)
        out.append(KernelArg(_MEM, mem))
        if bounds:
            out.append(_i64(nbytes))
    return pack


def _spec_packer(p, kernel):
    def pack(value, out, cgh, keep):
        if not hasattr(value, "spec_id"):
            raise _arg_error(kernel, p.name, "expected the placeholder returned by "
                             "cgh.set_spec_constant(spec_id, value)", type_error)
        if value.spec_id is not p.spec_id:
            raise _arg_error(kernel, p.name, f"the parameter reads {_uid(p.spec_id)}, but "
                             f"the placeholder is for {_uid(value.spec_id)}")
        # The value travels in the command group's spec-constant values, not as an arg.
    return pack


def _reducer_packer(p, kernel):
    def pack(value, out, cgh, keep):
        if not hasattr(value, "kernel_args"):
            raise _arg_error(kernel, p.name, "expected a sycl.reduction for this "
                             f"sycl.reducer parameter, got {type(value).__name__}")
        value.kernel_args(p, kernel, out)   # a reduction bound to this launch
        keep.append(value)
    return pack


def _uid(spec_id) -> str:
    try:
        return spec_id.unique_id
    except exception:
        return repr(spec_id)


_FACTORIES = {"scalar": _scalar_packer, "struct": _struct_packer,
              "accessor": _accessor_packer, "local_accessor": _local_packer,
              "global_ptr": _pointer_packer, "spec_placeholder": _spec_packer,
              "reducer": _reducer_packer}


class Packer:
    """User arguments -> KernelArgs for one kernel signature (built once, reused)."""

    __slots__ = ("kernel", "names", "steps", "has_local", "has_reducers", "index_kind",
                 "dims", "pack", "pointers")

    def __init__(self, params, kernel: str, index_kind=None, dims=None, bounds: bool = False):
        self.kernel = kernel
        self.index_kind = index_kind
        self.dims = dims
        self.names = []
        self.steps = []
        for p in params:
            if p.kind in _IMPLICIT:
                continue
            factory = _FACTORIES.get(p.kind)
            if factory is None:
                raise exception(errc.kernel_argument, f"kernel {kernel}: parameter {p.name!r} "
                                f"has unknown kind {p.kind!r}")
            self.names.append(p.name)
            self.steps.append(_pointer_packer(p, kernel, bounds) if p.kind == "global_ptr"
                              else factory(p, kernel))
        self.has_local = any(p.kind == "local_accessor" for p in params)
        self.has_reducers = any(p.kind == "reducer" for p in params)
        # (A checked build's hidden sizes go through the per-parameter steps.)
        fast = None if bounds else self._generate_fast(params)
        self.pack = fast or self.pack_slow
        # With the fast path: which user arguments are global_ptrs (the rest are
        # scalars), else None.
        self.pointers = None if fast is None else tuple(
            p.kind == "global_ptr" for p in params if p.kind not in _IMPLICIT)

    def _generate_fast(self, params):
        """``pack`` for signatures of USM pointers and scalars only: straight-line
        code that takes a USM array's cached KernelArg and a scalar's cached KernelArg
        with one check each, and hands anything else (another array type or device,
        a new scalar value, a wrong count) to :meth:`pack_slow`, which converts, checks
        and raises as always."""
    
        user = [p for p in params if p.kind not in _IMPLICIT]
        if not user or any(p.kind not in ("global_ptr", "scalar") for p in user):
            return None
        n = len(user)
        names = ", ".join(f"a{i}" for i in range(n))
        lines = ["def pack(args, cgh, keep=None):",
                 "    if keep is None:",
                 "        keep = []",
                 "    try:",
                 f"        {names}, = args",
                 "        dev = cgh._queue._device"]
        scope = {"USM": usm_array, "slow": self.pack_slow, "KNOWN": _known_cuda_array}
        for i, (p, step) in enumerate(zip(user, self.steps)):
            if p.kind == "global_ptr":
                scope[f"DT{i}"] = np.dtype(p.dtype) if p.dtype is not None else None
                cond = (f"a{i}.__class__ is USM and a{i}.device is dev and a{i}.ptr and "
                        f"(a{i}.dtype is DT{i} or DT{i} is None)")
                # (Another library's CUDA array seen before: its remembered KernelArg.)
                lines.append(f"        k{i} = a{i}._karg if {cond} else getattr(KNOWN(a{i}, "
                             f"dev, cgh._queue._stream, keep, DT{i}), 'karg', None)")
            else:
                scope[f"C{i}"] = step.cache
                lines.append(f"        k{i} = C{i}.get((a{i}.__class__, a{i}))")
        lines += ["    except (TypeError, ValueError, AttributeError):",
                  "        return slow(args, cgh, keep)",
                  f"    if {' or '.join(f'k{i} is None' for i in range(n))}:",
                  "        return slow(args, cgh, keep)",
                  f"    return [{names.replace('a', 'k')}], 0"]
        # Code built above from parameter kinds only; named after the kernel for tracebacks.
        return define(lines, f"<pysycl packer of kernel {self.kernel}>", scope)["pack"]

    def pack_slow(self, args, cgh, keep=None):
        """(KernelArgs, total local bytes); ``keep`` collects objects to hold alive."""
        steps = self.steps
        if len(args) != len(steps):
            raise type_error(errc.kernel_argument, f"kernel {self.kernel} takes {len(steps)} "
                             f"argument(s) ({', '.join(self.names)}), {len(args)} given")
        out: list = []
        if keep is None:
            keep = []
        for step, value in zip(steps, args):
            step(value, out, cgh, keep)
        local = 0
        if self.has_local:
            for a in out:
                if a.kind is _LOCAL:
                    local = (local + LOCAL_ALIGNMENT - 1) // LOCAL_ALIGNMENT * LOCAL_ALIGNMENT
                    local += a.value
        return out, local


def packer_for(launcher) -> Packer:
    """The :class:`Packer` of a ``bundle.launch.Launcher``, kept on the launcher (so it
    goes when the launcher does: launchers are bounded per spec-constant value)."""
    packer = launcher.__dict__.get("_packer")
    if packer is None:
        packer = launcher._packer = Packer(launcher.params, launcher.kernel_id.get_name(),
                                           launcher.index_kind, launcher.dims,
                                           launcher.bounds_abi)
    return packer
