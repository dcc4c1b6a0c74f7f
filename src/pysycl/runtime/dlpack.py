"""A real DLPack capsule made with ctypes (``__dlpack__`` of ``sycl.usm_array``).

DLPack 1.0 ``DLManagedTensorVersioned`` (``"dltensor_versioned"``) for consumers that
pass ``max_version >= (1, 0)`` (NumPy 2: the array is writable), else the legacy
``DLManagedTensor`` in a ``"dltensor"`` capsule, which every consumer accepts.

The deleter and the capsule destructor run no Python code (C functions linked into the
host JIT): they only mark the export done. The producer keeps the tensor's C structures
and the owning object alive in ``_live`` until then; ``sweep`` (after each garbage
collection and at each export) releases what is marked, so memory whose ``sycl.free``
was asked for goes back to the device once the last consumer let go.

>>> import numpy as np
>>> from pysycl.runtime.dlpack import to_capsule
>>> a = np.arange(4.0)
>>> cap = to_capsule(a, a.ctypes.data, a.shape, a.dtype, (1, 0))
>>> type(cap).__name__
'PyCapsule'
"""
from __future__ import annotations

import ctypes
import gc
import threading

import numpy as np

from ..errors import errc, exception

# DLDeviceType values (dlpack.h).
kDLCPU, kDLCUDA, kDLCUDAHost, kDLOpenCL, kDLCUDAManaged, kDLOneAPI = 1, 2, 3, 4, 13, 14
# DLDataTypeCode values.
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", _Deleter)]



class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


_VDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion),
                                     ("manager_ctx", ctypes.c_void_p),
                                     ("deleter", _VDeleter), ("flags", ctypes.c_uint64),
                                     ("dl_tensor", DLTensor)]

# Private prototypes (``ctypes.pythonapi``'s function objects are shared with other code).
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))
_capsule_set_context = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_SetContext", ctypes.pythonapi))

_NAMES = {False: ctypes.create_string_buffer(b"dltensor"),
          True: ctypes.create_string_buffer(b"dltensor_versioned")}


class _State(ctypes.Structure):
    """Per export: ``done`` is written by the C functions below (1: the consumer called
    the deleter, 2: the capsule died unconsumed); ``name`` is the capsule name we gave,
    which a consumer replaces when it takes ownership."""

    _fields_ = [("done", ctypes.c_int64), ("name", ctypes.c_void_p)]


# The deleter and the capsule destructor are C functions (LLVM IR linked into the host
# JIT), not ctypes callbacks: a consumer may call them from any thread, with or without
# the GIL, and with a Python error set (NumPy refusing a device it cannot read destroys
# the capsule while raising); a Python callback fails or crashes there. They only mark
# the export's _State; ``sweep`` releases marked exports later, from ordinary Python.
_C_FUNCTIONS = """
declare ptr @PyCapsule_GetContext(ptr)
declare ptr @PyCapsule_GetName(ptr)

define void @pysycl_dlpack_deleter(ptr %m) {{
  %slot = getelementptr i8, ptr %m, i64 {legacy_ctx}
  %state = load ptr, ptr %slot
  store atomic i64 1, ptr %state seq_cst, align 8
  ret void
}}

define void @pysycl_dlpack_deleter_versioned(ptr %m) {{
  %slot = getelementptr i8, ptr %m, i64 {versioned_ctx}
  %state = load ptr, ptr %slot
  store atomic i64 1, ptr %state seq_cst, align 8
  ret void
}}

define void @pysycl_dlpack_capsule_destructor(ptr %capsule) {{
entry:
  %state = call ptr @PyCapsule_GetContext(ptr %capsule)
  %none = icmp eq ptr %state, null
  br i1 %none, label %out, label %check
check:
  %name = call ptr @PyCapsule_GetName(ptr %capsule)
  %ours = getelementptr i8, ptr %state, i64 {name_offset}
  %given = load ptr, ptr %ours
  %unconsumed = icmp eq ptr %name, %given
  br i1 %unconsumed, label %release, label %out
release:
  store atomic i64 2, ptr %state seq_cst, align 8
  br label %out
out:
  ret void
}}
"""
_functions: dict[str, int] = {}
_functions_lock = threading.Lock()


def _c_functions() -> dict[str, int]:
    """Addresses of the C functions above, linked on the first export (this loads
    LLVM, which is why it is imported here and not with the module)."""
    if not _functions:
        with _functions_lock:
            if not _functions:
                from ..backends.host_jit import link_host_functions
                ir = _C_FUNCTIONS.format(legacy_ctx=DLManagedTensor.manager_ctx.offset,
                                         versioned_ctx=DLManagedTensorVersioned.manager_ctx.offset,
                                         name_offset=_State.name.offset)
                _functions.update(link_host_functions(ir, (
                    "pysycl_dlpack_deleter", "pysycl_dlpack_deleter_versioned",
                    "pysycl_dlpack_capsule_destructor")))
    return _functions


_live: dict[int, tuple] = {}      # address of an export's _State -> what keeps it valid
_live_lock = threading.Lock()


def sweep() -> int:
    """Release the exports whose consumer is done (owners may be freed now); how many
    are still live. Never blocks: another thread sweeping (or this one, when a garbage
    collection interrupts ``to_capsule``) leaves the work to the next call."""
    if not _live_lock.acquire(blocking=False):
        return len(_live)
    try:
        done = [a for a, entry in _live.items() if entry[0].done]
        released = [_live.pop(a) for a in done]
        live = len(_live)
    finally:
        _live_lock.release()
    del released      # owners are dropped here, outside the lock
    return live


def _after_collection(phase, _info) -> None:
    if phase == "stop" and _live:
        sweep()


gc.callbacks.append(_after_collection)


_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def tensor_of(capsule) -> DLTensor:
    """The ``DLTensor`` of an unconsumed legacy ``"dltensor"`` capsule (valid while the
    capsule lives)."""
    return DLManagedTensor.from_address(_capsule_pointer(capsule, b"dltensor")).dl_tensor


def data_pointer(obj) -> int:
    """The address of the first element of an object exporting DLPack (the capsule is
    not consumed: its producer releases it)."""
    try:
        capsule = obj.__dlpack__()
    except (BufferError, RuntimeError, ValueError, TypeError) as e:
        raise exception(errc.invalid, f"cannot read the address of {type(obj).__name__} "
                        f"through DLPack: {e}") from None
    tensor = tensor_of(capsule)
    return int(tensor.data or 0) + int(tensor.byte_offset)


def dl_dtype(dtype: np.dtype) -> DLDataType:
    dtype = np.dtype(dtype)
    if dtype.kind not in _CODES or dtype.fields is not None or dtype.subdtype is not None:
        raise exception(errc.invalid, f"DLPack cannot describe dtype {dtype}")
    return DLDataType(_CODES[dtype.kind], dtype.itemsize * 8, 1)


def to_capsule(owner, ptr: int, shape, dtype, device: tuple[int, int],
               versioned: bool = False, read_only: bool = False):
    """A capsule for C-contiguous memory at ``ptr`` owned by ``owner``: DLPack 1.x
    ``"dltensor_versioned"`` when the consumer asked for it (it carries the read-only
    flag, so NumPy gives a writable array), else the legacy ``"dltensor"``."""
    functions = _c_functions()
    sweep()
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    t = managed.dl_tensor
    t.data = ptr
    t.device = DLDevice(*device)
    t.ndim = ndim
    t.dtype = dl_dtype(dtype)
    t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    t.strides = None          # NULL: C-contiguous (allowed by every DLPack version)
    t.byte_offset = 0
    name = _NAMES[versioned]
    state = _State(0, ctypes.addressof(name))
    managed.manager_ctx = ctypes.addressof(state)
    if versioned:
        managed.version = DLPackVersion(1, 0)
        managed.deleter = _VDeleter(functions["pysycl_dlpack_deleter_versioned"])
        managed.flags = 1 if read_only else 0   # DLPACK_FLAG_BITMASK_READ_ONLY
    else:
        managed.deleter = _Deleter(functions["pysycl_dlpack_deleter"])
    with _live_lock:
        _live[ctypes.addressof(state)] = (state, managed, shape_arr, owner)
    capsule = _capsule_new(ctypes.addressof(managed), ctypes.addressof(name),
                           functions["pysycl_dlpack_capsule_destructor"])
    _capsule_set_context(capsule, ctypes.addressof(state))
    return capsule
