"""A real DLPack capsule made with ctypes (``__dlpack__`` of ``sycl.usm_array``).

DLPack 1.0 ``DLManagedTensorVersioned`` (``"dltensor_versioned"``) for consumers that
pass ``max_version >= (1, 0)`` (NumPy 2: the array is writable), else the legacy
``DLManagedTensor`` in a ``"dltensor"`` capsule, which every consumer accepts. The producer keeps the
tensor's C structures and the owning Python object alive in ``_live`` until the
consumer calls the deleter, or until the capsule dies unconsumed.

>>> import numpy as np
>>> from pysycl.runtime.dlpack import to_capsule
>>> a = np.arange(4.0)
>>> cap = to_capsule(a, a.ctypes.data, a.shape, a.dtype, (1, 0))
>>> type(cap).__name__
'PyCapsule'
"""
from __future__ import annotations

import ctypes
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

_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CapsuleDestructor]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

_live: dict[int, tuple] = {}      # address of DLManagedTensor -> what keeps it valid
_live_lock = threading.Lock()


def _release(address: int) -> None:
    with _live_lock:
        _live.pop(address, None)


@_Deleter
def _deleter(managed_ptr) -> None:
    # Called by the consumer when it no longer needs the memory.
    _release(ctypes.cast(managed_ptr, ctypes.c_void_p).value)


@_VDeleter
def _vdeleter(managed_ptr) -> None:
    _release(ctypes.cast(managed_ptr, ctypes.c_void_p).value)


@_CapsuleDestructor
def _capsule_destructor(capsule) -> None:
    # A consumer renames the capsule to "used_dltensor[_versioned]"; the original name
    # means nobody took ownership, so the producer releases the tensor itself.
    for name in (b"dltensor", b"dltensor_versioned"):
        if _api.PyCapsule_IsValid(capsule, name):
            _release(_api.PyCapsule_GetPointer(capsule, name))


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
    managed.manager_ctx = None
    if versioned:
        managed.version = DLPackVersion(1, 0)
        managed.deleter = _vdeleter
        managed.flags = 1 if read_only else 0   # DLPACK_FLAG_BITMASK_READ_ONLY
    else:
        managed.deleter = _deleter
    address = ctypes.addressof(managed)
    with _live_lock:
        _live[address] = (managed, shape_arr, owner)
    name = b"dltensor_versioned" if versioned else b"dltensor"
    return _api.PyCapsule_New(address, name, _capsule_destructor)
