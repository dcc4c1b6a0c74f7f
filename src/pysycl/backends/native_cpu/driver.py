"""The native CPU device: host memory, kernels as host code run by ``executor.py``.

All USM kinds and buffers are ordinary host memory here (NumPy-backed; 64-byte aligned,
blocks of 64 KiB or more 4 KiB aligned), so every allocation is host-accessible and
copies are ``memmove``. Loading and launching go to ``executor.py`` (ORC LLJIT + a
persistent thread pool); this file only turns :class:`KernelArg` values into the entry
ABI's ``void **args``.

>>> from pysycl.backends.native_cpu.driver import NativeCpuDriver
>>> drv = NativeCpuDriver(); dev = drv.discover()[0]
>>> a = drv.alloc(dev, 16, "device"); a.ptr % 64
0
>>> drv.fill(None, a, 0, b"\\x07", 16).wait(); bytes(a.host_view()[:2])
b'\\x07\\x07'
"""
from __future__ import annotations

import copy
import ctypes
import os
import platform
import threading
from typing import Any, Mapping, Sequence

import numpy as np

from pysycl import config
from pysycl.backends.base import (AddressSpace, DeviceDescription, Driver, KernelArg, Target,
                                  rect_extent)

# Cache-line alignment: what NumPy's allocator does not promise, and what vectorised
# kernel loops and the SYCL "alignment of USM is at least the largest scalar" rule need.
ALIGNMENT = 64
# Blocks of at least LARGE_BLOCK bytes start on a 4 KiB boundary, as the OpenCL runtimes
# place their buffers. A core guesses whether a load depends on an earlier store from
# the low 12 address bits; arrays allocated one after another (input, then output) put
# the output a few cache lines past the input in the page, so ``y[i] = f(x[i + k])`` has
# every load look like it follows a store still in flight. Measured on the FIR of
# benchmarks/ (4M float32, AMD Zen 5): 1.3-1.45x slower at the 128-256 byte offsets that
# consecutive allocations got; with both blocks page-aligned, the offset between any two
# arrays is the same as between their elements.
PAGE_ALIGNMENT = 4096
LARGE_BLOCK = 64 * 1024
# A CPU has no hardware limit on work-group size; a work-group runs on one thread as a
# loop. 4096 bounds the per-work-item state that work-group fission keeps across a
# barrier (4096 x a few hundred bytes stays within L2) and matches what GPUs allow
# often enough that portable nd_ranges work here. Intel's CPU OpenCL says 8192.
MAX_WORK_GROUP_SIZE = 4096
# Local memory is one buffer per worker thread, reused by each work-group it runs; 256 KiB
# fits L2 on current x86/Arm cores (Intel's CPU runtime reports the same figure).
LOCAL_MEM_SIZE = 256 * 1024

ASPECTS = frozenset({
    "cpu", "fp16", "fp64", "atomic64", "usm_device_allocations", "usm_host_allocations",
    "usm_shared_allocations", "usm_system_allocations", "online_compiler", "online_linker",
    "queue_profiling",
})


class HostAllocation:
    """An aligned (64 bytes, or ``alignment``) block of host memory kept alive by a NumPy
    array."""

    __slots__ = ("kind", "nbytes", "ptr", "_storage", "_view", "__weakref__")

    def __init__(self, nbytes: int, kind: str, alignment: int = ALIGNMENT):
        raw = np.empty(max(nbytes, 1) + alignment, dtype=np.uint8)
        start = (-raw.ctypes.data) % alignment
        self._storage = raw
        self._view = raw[start:start + nbytes]
        self.ptr = raw.ctypes.data + start
        self.nbytes = nbytes
        self.kind = kind

    def host_view(self) -> memoryview:
        return memoryview(self._view)

    def as_array(self) -> np.ndarray:
        """The bytes as a uint8 array (no copy)."""
        return self._view


class _Done:
    """Completion token of work that finished before the call returned."""

    __slots__ = ()

    def wait(self) -> None:
        return None

    def is_complete(self) -> bool:
        return True


DONE = _Done()


class NativeCpuStream:
    """The native CPU has no command queue: work is started by the runtime in order.
    ``pool``: a sub-device's worker pool, pinned to its cores (None: the process's)."""

    __slots__ = ("device", "profiling", "pool")

    def __init__(self, device: DeviceDescription, profiling: bool, pool=None):
        self.device = device
        self.profiling = profiling
        self.pool = pool


def _address(mem: Any) -> int:
    """The host address of an allocation, a USM pointer int, or a host buffer."""
    if isinstance(mem, int):
        return mem
    ptr = getattr(mem, "ptr", None)
    if isinstance(ptr, int):
        return ptr
    if isinstance(mem, np.ndarray):
        return mem.ctypes.data
    arr = np.frombuffer(mem, dtype=np.uint8)  # memoryview / bytes-like
    return arr.ctypes.data if arr.size else 0


def _box(mem: Any, rect, region) -> np.ndarray:
    """A (slices, rows, bytes) strided uint8 view of a box of host memory (copy_rect)."""
    offset, row_pitch, slice_pitch = rect
    width, rows, slices = region
    block = (ctypes.c_char * rect_extent(rect, region)).from_address(_address(mem) + offset)
    flat = np.frombuffer(block, dtype=np.uint8)
    return np.lib.stride_tricks.as_strided(flat, (slices, rows, width),
                                           (slice_pitch, row_pitch, 1))


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def _cpu_vendor() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("vendor_id", "CPU implementer")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine() or "unknown"


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def _target() -> Target:
    """The target of ``target.py`` when the codegen slice has one, else the host's."""
    try:
        from pysycl.backends.native_cpu import target as target_module
    except ImportError:
        target_module = None
    if target_module is not None:
        for name in ("native_cpu_target", "host_target"):
            fn = getattr(target_module, name, None)
            if callable(fn):
                return fn()
        for value in vars(target_module).values():
            if isinstance(value, Target):
                return value
    # Until target.py exists: the process triple, which is what LLJIT loads.
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    machine = llvm.Target.from_default_triple().create_target_machine()
    return Target(name="native_cpu", backend="native_cpu", triple=llvm.get_process_triple(),
                  data_layout=str(machine.target_data), binary_format="object",
                  address_spaces={s: 0 for s in AddressSpace},
                  cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten())


class NativeCpuDriver(Driver):
    """One device: this machine's CPU. Always present."""

    supports_global_offset = True   # the executor's launch words carry the offset

    name = "native_cpu"
    # Every command finishes before its driver call returns (memmove, executor launch),
    # so the runtime never needs to look at a stream's order; say False so it always
    # checks tokens instead of assuming one.
    streams_in_order = False
    alloc_alignment = ALIGNMENT
    alloc_options = frozenset({"alignment"})
    # Set once the executor is warmed up (create_stream).
    _warm = False

    def __init__(self):
        self._sub_lock = threading.Lock()
        # (parent, partition, domain, cores) -> sub-device: the parent is kept alive by
        # its sub-devices (extra["parent"]), so its id stays unique.
        self._subs: dict[tuple, DeviceDescription] = {}

    def discover(self) -> list[DeviceDescription]:
        n = config.num_threads()
        return [DeviceDescription(
            name=_cpu_name(), vendor=_cpu_vendor(), backend="native_cpu", device_type="cpu",
            driver_version="pysycl native_cpu 0.1", max_compute_units=n,
            max_work_group_size=MAX_WORK_GROUP_SIZE,
            max_work_item_sizes=(MAX_WORK_GROUP_SIZE,) * 3,
            sub_group_sizes=(1,), global_mem_size=_physical_memory(),
            local_mem_size=LOCAL_MEM_SIZE, aspects=ASPECTS, target=_target(),
            handle=0, extra={"host_accessible": True, "cores": tuple(config.usable_cores())})]

    def create_sub_devices(self, device: DeviceDescription, partition: str,
                           value) -> list[DeviceDescription]:
        """Sub-devices owning groups of ``device``'s cores (``partitions.split``); equal
        requests give the same sub-devices, so repeated partitioning leaks nothing."""
        from pysycl.backends.native_cpu import partitions
        groups = partitions.split(device.extra["cores"], partition, value)
        with self._sub_lock:
            return [self._sub_device(device, partition, value, cores) for cores in groups]

    def partition_info(self, device: DeviceDescription) -> dict:
        from pysycl.backends.native_cpu import partitions
        cores = device.extra["cores"]
        return {"max_sub_devices": len(cores),
                "properties": list(partitions.PROPERTIES) if len(cores) > 1 else [],
                "domains": partitions.supported_domains(cores)}

    def _sub_device(self, parent: DeviceDescription, partition: str, value,
                    cores: tuple[int, ...]) -> DeviceDescription:
        domain = str(value) if partition == "partition_by_affinity_domain" else None
        key = (id(parent), partition, domain, cores)
        sub = self._subs.get(key)
        if sub is None:
            sub = copy.copy(parent)
            sub.max_compute_units = len(cores)
            sub.extra = dict(parent.extra, cores=cores, parent=parent,
                             partition=(partition, domain))
            self._subs[key] = sub
        return sub

    # Memory ---------------------------------------------------------------------------
    def alloc(self, device: DeviceDescription, nbytes: int, kind: str,
              alignment: int = ALIGNMENT, *, context: Any = None) -> HostAllocation:
        floor = PAGE_ALIGNMENT if nbytes >= LARGE_BLOCK else ALIGNMENT
        return HostAllocation(int(nbytes), kind, max(int(alignment), floor))

    def free(self, allocation: Any) -> None:
        # NumPy owns the block; dropping the view frees it once no array refers to it.
        if isinstance(allocation, HostAllocation):
            allocation.ptr = 0

    def copy(self, stream, dst, dst_offset, src, src_offset, nbytes):
        if nbytes:
            ctypes.memmove(_address(dst) + dst_offset, _address(src) + src_offset, nbytes)
        return DONE

    def fill(self, stream, dst, offset, pattern: bytes, nbytes: int):
        if nbytes <= 0:
            return DONE
        base = _address(dst) + offset
        if len(pattern) == 1:
            ctypes.memset(base, pattern[0], nbytes)
            return DONE
        count, rest = divmod(nbytes, len(pattern))
        block = (ctypes.c_char * nbytes).from_address(base)
        view = np.frombuffer(block, dtype=np.uint8)
        pat = np.frombuffer(pattern, dtype=np.uint8)
        view[:count * len(pattern)].reshape(count, len(pattern))[:] = pat
        view[count * len(pattern):] = pat[:rest]
        return DONE

    def copy_rect(self, stream, dst, dst_rect, src, src_rect, region):
        if all(region):
            _box(dst, dst_rect, region)[...] = _box(src, src_rect, region)
        return DONE

    def fill_rect(self, stream, dst, rect, pattern: bytes, region):
        width, rows, slices = region
        if width and rows and slices:
            pat = np.frombuffer(pattern, dtype=np.uint8)
            box = _box(dst, rect, region).reshape(slices, rows, width // len(pat), len(pat))
            box[...] = pat
        return DONE

    # Code -----------------------------------------------------------------------------
    def load(self, device, binary: bytes, kernel_names: Sequence[str],
             spec_constants: Mapping[int, bytes] | None = None, *,
             device_global_ids: Sequence[str] = (), code_cache: Any = None,
             context: Any = None) -> Any:
        # Spec constants never reach a host object natively (literal or emulated); one
        # implicit context (host memory), so ``context`` is always None here.
        from pysycl.backends.native_cpu import executor
        return executor.default_executor().load(binary, list(kernel_names),
                                                device_global_ids)

    def launch(self, stream, program, kernel_name: str, global_size: Sequence[int],
               local_size: Sequence[int] | None, args: Sequence[KernelArg],
               local_mem_bytes: int = 0, offset: Sequence[int] | None = None) -> Any:
        # The executor runs the kernel to completion (the caller runs the first share of
        # work-groups, pool threads the rest) and lays out local memory itself from the
        # ``local`` args, so ``local_mem_bytes`` is not needed here.
        program.launch(kernel_name, global_size, local_size, args, offset, stream.pool)
        return DONE

    def bind_launch(self, stream, program, kernel_name: str, trailing: KernelArg):
        """:meth:`launch` of one kernel with everything looked up once:
        ``launch(global_size, local_size, args, local_mem_bytes)`` (the queue's fast path;
        ``args`` is a fresh list, ``trailing`` the spec-constant buffer is appended)."""
        run, pool = program.launch, stream.pool

        def bound(global_size, local_size, args, local_mem_bytes=0):
            args.append(trailing)
            run(kernel_name, global_size, local_size, args, None, pool)
            return DONE
        return bound

    def read_device_global(self, stream, program, symbol: str, offset: int,
                           out: memoryview) -> None:
        n = out.nbytes
        ctypes.memmove((ctypes.c_char * n).from_buffer(out),
                       program.symbol_address(symbol) + offset, n)

    def write_device_global(self, stream, program, symbol: str, offset: int,
                            data: memoryview) -> None:
        ctypes.memmove(program.symbol_address(symbol) + offset, bytes(data), data.nbytes)

    # Streams --------------------------------------------------------------------------
    def create_stream(self, device: DeviceDescription, profiling: bool, *,
                      context: Any = None) -> NativeCpuStream:
        if not self._warm:
            # Device initialisation: the LLJIT and executor are made once, here, so the
            # first launch (a disk-cache hit above all) only adds its object.
            from pysycl.backends.native_cpu import executor
            executor.warm_up()
            self._warm = True
        pool = None
        if "parent" in device.extra:
            from pysycl.backends.native_cpu import executor
            pool = executor.pool_for(device.extra["cores"])
        return NativeCpuStream(device, profiling, pool)

    def synchronize(self, stream) -> None:
        return None

