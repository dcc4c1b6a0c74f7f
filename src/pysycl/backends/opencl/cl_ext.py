"""The OpenCL entry points pyopencl 2026.1 does not wrap, called through ctypes.

Part of ``driver.py`` (it touches the device only when the driver calls it), split out
because it is a different kind of code: raw C signatures.

* ``cl_intel_unified_shared_memory`` (USM): pyopencl has no ``USM*`` classes, but the
  ICD loader hands out the vendor's functions through
  ``clGetExtensionFunctionAddressForPlatform``; the handles they take are the same
  ``int_ptr`` values pyopencl objects expose.
* OpenCL 2.0 SVM by raw pointer (pyopencl wraps SVM only as Python-owned objects, and a
  SYCL USM pointer into the middle of an allocation must be usable as a kernel argument).
* ``clGetDeviceGlobalVariablePointerINTEL`` (cl_intel_global_variable_pointers) for
  device globals.

>>> api = ClApi.load(environment.icd_loader_library())    # doctest: +SKIP
>>> usm = api.intel_usm(platform.int_ptr)                  # None without the extension
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, c_int32, c_size_t, c_uint32, c_uint64, c_void_p

from pysycl.errors import errc, exception

cl_int = c_int32
_p = c_void_p

# cl_ext.h values (Khronos OpenCL-Headers, cl_ext.h / cl.h).
DEVICE_SUB_GROUP_SIZES_INTEL = 0x4108
DEVICE_HOST_MEM_CAPABILITIES_INTEL = 0x4190
DEVICE_DEVICE_MEM_CAPABILITIES_INTEL = 0x4191
DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL = 0x4192
DEVICE_SHARED_SYSTEM_MEM_CAPABILITIES_INTEL = 0x4194
USM_ACCESS = 1 << 0
USM_ATOMIC_ACCESS = 1 << 1
KERNEL_EXEC_INFO_INDIRECT_ACCESS_INTEL = (0x4200, 0x4201, 0x4202)   # host, device, shared
MEM_READ_WRITE = 1 << 0
MEM_SVM_FINE_GRAIN_BUFFER = 1 << 10
SVM_COARSE_GRAIN_BUFFER, SVM_FINE_GRAIN_BUFFER, SVM_FINE_GRAIN_SYSTEM = 1, 2, 4


def check(code: int, what: str, errcode: errc = errc.runtime) -> None:
    if code != 0:
        raise exception(errcode, f"{what} failed with OpenCL error {code} ({_status_name(code)})")


def _status_name(code: int) -> str:
    try:
        import pyopencl as cl
        return cl.status_code.to_string(code)
    except Exception:
        return "unknown"


def wait_list(events) -> tuple[int, object]:
    """(count, cl_event array) for ctypes calls; ``events`` are pyopencl Events."""
    handles = [e.int_ptr for e in events]
    return len(handles), ((_p * len(handles))(*handles) if handles else None)


class IntelUsm:
    """``cl_intel_unified_shared_memory`` function pointers of one platform."""

    name = "intel_usm"

    def __init__(self, addr):
        f = ctypes.CFUNCTYPE
        self._host = f(_p, _p, _p, c_size_t, c_uint32, POINTER(cl_int))(addr("clHostMemAllocINTEL"))
        self._device = f(_p, _p, _p, _p, c_size_t, c_uint32, POINTER(cl_int))(
            addr("clDeviceMemAllocINTEL"))
        self._shared = f(_p, _p, _p, _p, c_size_t, c_uint32, POINTER(cl_int))(
            addr("clSharedMemAllocINTEL"))
        self._free = f(cl_int, _p, _p)(addr("clMemBlockingFreeINTEL"))
        self._set_arg = f(cl_int, _p, c_uint32, _p)(addr("clSetKernelArgMemPointerINTEL"))
        self._memcpy = f(cl_int, _p, c_uint32, _p, _p, c_size_t, c_uint32, _p, POINTER(_p))(
            addr("clEnqueueMemcpyINTEL"))
        self._fill = f(cl_int, _p, _p, _p, c_size_t, c_size_t, c_uint32, _p, POINTER(_p))(
            addr("clEnqueueMemFillINTEL"))
        self._exec_info = None

    def alloc(self, ctx: int, dev: int, nbytes: int, kind: str, alignment: int) -> int:
        err = cl_int(0)
        if kind == "host":
            ptr = self._host(ctx, None, nbytes, alignment, ctypes.byref(err))
        elif kind == "device":
            ptr = self._device(ctx, dev, None, nbytes, alignment, ctypes.byref(err))
        else:
            ptr = self._shared(ctx, dev, None, nbytes, alignment, ctypes.byref(err))
        check(err.value, f"allocating {nbytes} bytes of {kind} USM", errc.memory_allocation)
        if not ptr:
            raise exception(errc.memory_allocation, f"allocating {nbytes} bytes of {kind} USM "
                            "returned a null pointer")
        return ptr

    def free(self, ctx: int, ptr: int) -> None:
        # Blocking free: SYCL's sycl::free may be called with kernels still queued
        # only if the user waited; the blocking form makes an early free safe.
        check(self._free(ctx, ptr), "clMemBlockingFreeINTEL")

    def set_arg(self, kernel: int, index: int, ptr: int) -> None:
        check(self._set_arg(kernel, index, ptr), f"setting USM pointer argument {index}")

    def prepare_kernel(self, api: "ClApi", kernel: int) -> None:
        # SYCL lets a kernel reach USM through pointers stored in other memory (a struct
        # argument, a linked list); the runtime must be told it may.
        true = c_uint32(1)
        for param in KERNEL_EXEC_INFO_INDIRECT_ACCESS_INTEL:
            api.set_kernel_exec_info(kernel, param, ctypes.byref(true), ctypes.sizeof(true))

    def memcpy(self, queue: int, dst: int, src: int, nbytes: int, events) -> int:
        n, wl = wait_list(events)
        ev = _p()
        check(self._memcpy(queue, 0, dst, src, nbytes, n, wl, ctypes.byref(ev)),
              "clEnqueueMemcpyINTEL")
        return ev.value

    def fill(self, queue: int, dst: int, pattern: bytes, nbytes: int, events) -> int:
        n, wl = wait_list(events)
        ev = _p()
        buf = ctypes.create_string_buffer(pattern, len(pattern))
        check(self._fill(queue, dst, buf, len(pattern), nbytes, n, wl, ctypes.byref(ev)),
              "clEnqueueMemFillINTEL")
        return ev.value


class Svm:
    """OpenCL 2.0 SVM standing in for USM: coarse-grain buffers for ``device``,
    fine-grain buffers (host-coherent) for ``host`` and ``shared``."""

    name = "svm"

    def __init__(self, api: "ClApi", capabilities: int):
        self.api = api
        self.capabilities = capabilities

    def kinds(self) -> frozenset[str]:
        kinds = set()
        if self.capabilities & SVM_COARSE_GRAIN_BUFFER:
            kinds.add("device")
        if self.capabilities & SVM_FINE_GRAIN_BUFFER:
            kinds |= {"host", "shared"}
        return frozenset(kinds)

    def alloc(self, ctx: int, dev: int, nbytes: int, kind: str, alignment: int) -> int:
        flags = MEM_READ_WRITE | (MEM_SVM_FINE_GRAIN_BUFFER if kind != "device" else 0)
        ptr = self.api.lib.clSVMAlloc(ctx, flags, nbytes, alignment)
        if not ptr:
            raise exception(errc.memory_allocation, f"clSVMAlloc of {nbytes} bytes ({kind}) failed")
        return ptr

    def free(self, ctx: int, ptr: int) -> None:
        self.api.lib.clSVMFree(ctx, ptr)

    def set_arg(self, kernel: int, index: int, ptr: int) -> None:
        check(self.api.lib.clSetKernelArgSVMPointer(kernel, index, ptr),
              f"setting SVM pointer argument {index}")

    def prepare_kernel(self, api: "ClApi", kernel: int) -> None:
        pass

    def memcpy(self, queue: int, dst: int, src: int, nbytes: int, events) -> int:
        n, wl = wait_list(events)
        ev = _p()
        check(self.api.lib.clEnqueueSVMMemcpy(queue, 0, dst, src, nbytes, n, wl, ctypes.byref(ev)),
              "clEnqueueSVMMemcpy")
        return ev.value

    def fill(self, queue: int, dst: int, pattern: bytes, nbytes: int, events) -> int:
        n, wl = wait_list(events)
        ev = _p()
        buf = ctypes.create_string_buffer(pattern, len(pattern))
        check(self.api.lib.clEnqueueSVMMemFill(queue, dst, buf, len(pattern), nbytes, n, wl,
                                               ctypes.byref(ev)), "clEnqueueSVMMemFill")
        return ev.value


class ClApi:
    """The ICD loader library pyopencl uses, with the prototypes we call."""

    _instances: dict[str, "ClApi"] = {}

    def __init__(self, path: str):
        lib = ctypes.CDLL(path)
        lib.clGetExtensionFunctionAddressForPlatform.restype = _p
        lib.clGetExtensionFunctionAddressForPlatform.argtypes = [_p, ctypes.c_char_p]
        lib.clGetDeviceInfo.restype = cl_int
        lib.clGetDeviceInfo.argtypes = [_p, c_uint32, c_size_t, _p, POINTER(c_size_t)]
        lib.clSetKernelExecInfo.restype = cl_int
        lib.clSetKernelExecInfo.argtypes = [_p, c_uint32, c_size_t, _p]
        lib.clSetKernelArgSVMPointer.restype = cl_int
        lib.clSetKernelArgSVMPointer.argtypes = [_p, c_uint32, _p]
        lib.clSVMAlloc.restype = _p
        lib.clSVMAlloc.argtypes = [_p, c_uint64, c_size_t, c_uint32]
        lib.clSVMFree.restype = None
        lib.clSVMFree.argtypes = [_p, _p]
        lib.clEnqueueSVMMemcpy.restype = cl_int
        lib.clEnqueueSVMMemcpy.argtypes = [_p, c_uint32, _p, _p, c_size_t, c_uint32, _p, POINTER(_p)]
        lib.clEnqueueSVMMemFill.restype = cl_int
        lib.clEnqueueSVMMemFill.argtypes = [_p, _p, _p, c_size_t, c_size_t, c_uint32, _p, POINTER(_p)]
        self.lib = lib
        self._usm: dict[int, IntelUsm | None] = {}
        self._global_ptr: dict[int, object] = {}

    @classmethod
    def load(cls, path: str | None) -> "ClApi | None":
        if not path:
            return None
        if path not in cls._instances:
            try:
                cls._instances[path] = cls(path)
            except (OSError, AttributeError):
                return None
        return cls._instances[path]

    def function(self, platform: int, name: str) -> int:
        return self.lib.clGetExtensionFunctionAddressForPlatform(platform, name.encode()) or 0

    def intel_usm(self, platform: int) -> IntelUsm | None:
        if platform not in self._usm:
            def addr(name):
                a = self.function(platform, name)
                if not a:
                    raise LookupError(name)
                return a
            try:
                self._usm[platform] = IntelUsm(addr)
            except LookupError:
                self._usm[platform] = None
        return self._usm[platform]

    def device_info_u64(self, device: int, param: int) -> int | None:
        value = c_uint64(0)
        if self.lib.clGetDeviceInfo(device, param, 8, ctypes.byref(value), None) != 0:
            return None
        return value.value

    def device_info_sizes(self, device: int, param: int) -> tuple[int, ...]:
        size = c_size_t(0)
        if self.lib.clGetDeviceInfo(device, param, 0, None, ctypes.byref(size)) != 0:
            return ()
        n = size.value // ctypes.sizeof(c_size_t)
        arr = (c_size_t * n)()
        if self.lib.clGetDeviceInfo(device, param, size.value, arr, None) != 0:
            return ()
        return tuple(arr)

    def set_kernel_exec_info(self, kernel: int, param: int, value, size: int) -> None:
        check(self.lib.clSetKernelExecInfo(kernel, param, size, value), "clSetKernelExecInfo")

    def global_variable_pointer(self, platform: int, device: int, program: int,
                                name: str) -> tuple[int, int] | None:
        """(pointer, size) of a program-scope variable, or None when the platform lacks
        ``clGetDeviceGlobalVariablePointerINTEL``; raises when the name is unknown."""
        fn = self._global_ptr.get(platform)
        if fn is None:
            a = self.function(platform, "clGetDeviceGlobalVariablePointerINTEL")
            if not a:
                return None
            fn = ctypes.CFUNCTYPE(cl_int, _p, _p, ctypes.c_char_p, POINTER(c_size_t),
                                  POINTER(_p))(a)
            self._global_ptr[platform] = fn
        size, ptr = c_size_t(0), _p()
        code = fn(device, program, name.encode(), ctypes.byref(size), ctypes.byref(ptr))
        if code != 0:
            raise exception(errc.invalid, f"device global {name!r} is not in the program "
                            f"(OpenCL error {code}, {_status_name(code)})")
        return ptr.value, size.value
