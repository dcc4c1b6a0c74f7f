"""OpenCL devices through pyopencl: discovery, memory, SPIR-V programs, launches, events.

>>> drv = OpenCLDriver()
>>> dev = drv.discover()[0]                                    # doctest: +SKIP
>>> q = drv.create_stream(dev, profiling=True)                 # doctest: +SKIP
>>> prg = drv.load(dev, spv, ["vadd"], {7: (1000).to_bytes(4, "little")})   # doctest: +SKIP
>>> drv.launch(q, prg, "vadd", [n], None, args).wait()         # doctest: +SKIP

Conventions the rest of pysycl relies on:

* Contexts: every call takes an optional ``context=``; without one the driver uses
  one default context per platform holding all its SPIR-V devices (SYCL's platform
  default context). Memory, programs and queues must share a context.
* ``global_size``/``local_size`` are in SYCL order (rightmost index varies fastest);
  the driver reverses them into OpenCL order (dimension 0 fastest), as DPC++ does, so
  SYCL dimension ``d`` of an ``n``-dimensional kernel is OpenCL dimension ``n-1-d``
  and ``lowering.py`` must query builtins with that index.
* USM: ``cl_intel_unified_shared_memory`` when the device lists it, else OpenCL 2.0
  SVM (coarse grain -> device, fine grain -> host/shared), else allocation raises
  ``errc.feature_not_supported``. ``kind="buffer"`` is a ``cl.Buffer``.
* Completion tokens are :class:`OpenCLEvent`; ``wait_for=`` takes a list of them, which
  is what an out-of-order queue needs for SYCL's dependency graph. A token's ``stream``
  is the (in-order) queue it went to.
* Launches: one ``cl.Kernel`` per (program, kernel name), shared by every queue; a launch
  sets only the arguments that changed since that kernel object's last launch
  (:class:`_KernelState`), and ``bind_launch`` gives the runtime's fast path a launch of
  one kernel on one queue with everything looked up once. At most a few hundred
  launches are in flight per queue (:class:`_InFlight`: Intel's CPU runtime enqueues
  USM-argument kernels more slowly the deeper its queue).
* Device globals: ``clGetDeviceGlobalVariablePointerINTEL`` gives the variable's USM
  address in the built program and the copy is a USM memcpy (read_global/write_global).
  The variable must keep external linkage and its IR name in the SPIR-V module (the
  compiler internalises only functions). Without that function (non-Intel drivers)
  the plan is a generated copy kernel per variable: codegen adds
  ``__pysycl_dg_copy_<name>(ptr addrspace(1) buf, i64 offset, i64 n, i32 to_device)``
  beside the kernels, and read/write launch it on a staging buffer; it is not built yet
  and those calls raise ``errc.feature_not_supported``.
"""
from __future__ import annotations

import collections
import ctypes
import logging
import os
import threading
import time
from typing import Any, Mapping, Sequence

from pysycl.backends.base import (DeviceDescription, Driver, KernelArg, KernelArgKind,
                                  fork_error, rect_extent)
from pysycl.backends.opencl import cl_ext, environment
from pysycl.backends.opencl.target import target_for_il_version
from pysycl.errors import errc, exception

log = logging.getLogger(__name__)

# Register the PyPI runtime before pyopencl (and its ICD loader) first looks.
environment.prepare()
try:
    import numpy as np
    import pyopencl as cl
except Exception as _e:   # missing package, broken install: the backend is absent
    cl = None
    np = None
    _IMPORT_ERROR = _e
else:
    _IMPORT_ERROR = None


class _fork:
    """The OpenCL runtime (Intel's CPU runtime: TBB worker threads; GPU drivers: device
    handles) does not survive ``fork``: a child forked after the parent found platforms
    must not touch it (it hangs or crashes there), and raises instead."""

    started = False            # platforms were listed in this process
    child_of_started = False   # this process was forked from one where they were

    @classmethod
    def after_in_child(cls) -> None:
        cls.child_of_started = cls.started

    @classmethod
    def check(cls) -> None:
        if cls.child_of_started:
            raise fork_error("OpenCL")


os.register_at_fork(after_in_child=_fork.after_in_child)


class OpenCLAllocation:
    """A device allocation: USM/SVM (``ptr`` != 0) or a ``cl.Buffer`` (``ptr`` == 0)."""

    def __init__(self, context, device, nbytes: int, kind: str, ptr: int = 0,
                 buffer=None, usm=None):
        self.context = context
        self.device = device
        self.nbytes = nbytes
        self.kind = kind
        self.ptr = ptr
        self.buffer = buffer
        self.usm = usm          # the cl_ext strategy that made ``ptr``
        self.freed = False

    def host_view(self) -> memoryview | None:
        """Host-accessible bytes for host/shared USM; None for device USM and buffers."""
        if not self.ptr or self.kind not in ("host", "shared") or self.freed:
            return None
        return memoryview((ctypes.c_ubyte * self.nbytes).from_address(self.ptr)).cast("B")

    def __repr__(self) -> str:
        return f"OpenCLAllocation({self.kind}, {self.nbytes} bytes, ptr={self.ptr:#x})"


class OpenCLEvent:
    """A completion token around a ``cl.Event``; keeps host memory of a pending
    asynchronous copy alive until the copy is known to be done. ``stream`` is the
    in-order ``cl.CommandQueue`` the command went to (None when not known): the runtime
    lets a command follow one issued earlier on the same queue without waiting."""

    __slots__ = ("event", "_keep", "stream")

    def __init__(self, event, keep: Any = None, stream: Any = None):
        self.event = event
        self._keep = keep
        self.stream = stream

    def wait(self) -> None:
        _fork.check()
        self.event.wait()
        self._keep = None

    def is_complete(self) -> bool:
        return self.event.command_execution_status == cl.command_execution_status.COMPLETE

    def profiling_ns(self) -> tuple[int, int, int]:
        """(submit, start, end) in ns (queue made with profiling): SYCL's command_submit
        is when the command was enqueued, OpenCL's CL_PROFILING_COMMAND_QUEUED."""
        self.wait()
        p = self.event.profile
        try:
            return (p.queued, p.start, p.end)
        except cl.Error as e:
            raise exception(errc.profiling, f"profiling information is not available: {e}") from None


class OpenCLProgram:
    """A built SPIR-V program for one device, with one kernel object per name."""

    def __init__(self, program, device: DeviceDescription, context, kernel_names,
                 build_seconds: float, build_log: str):
        self.program = program            # pyopencl _Program
        self.device = device
        self.context = context
        self.kernel_names = tuple(kernel_names)
        self.build_seconds = build_seconds
        self.build_log = build_log
        self.lock = threading.Lock()      # set_arg + enqueue on one cl_kernel is not atomic
        self._kernels: dict[str, _KernelState] = {}
        self.usm = None                   # the device's cl_ext USM strategy (set by load)
        self.prepare = _no_prepare        # called on each new cl.Kernel (set by load)

    def kernel_state(self, name: str, prepare) -> "_KernelState":
        """The one ``cl.Kernel`` of ``name`` (made, and given to ``prepare``, on first
        use) with the arguments last set on it. Call with :attr:`lock` held."""
        st = self._kernels.get(name)
        if st is None:
            try:
                k = cl.Kernel(self.program, name)
            except cl.Error as e:
                raise exception(errc.kernel_not_supported,
                                f"kernel {name!r} is not in the program: {e}") from None
            prepare(k)
            st = self._kernels[name] = _KernelState(k)
        return st

    def kernel(self, name: str, prepare) -> Any:
        return self.kernel_state(name, prepare).kernel


def _no_prepare(kernel) -> None:
    pass


class _KernelState:
    """A ``cl_kernel`` and the KernelArgs its arguments were last set from.

    OpenCL kernel arguments stay set between enqueues, so a launch sets only those that
    differ from the previous launch of the same kernel object (a launch loop sets none).
    ``args[i]`` is compared by identity first (a USM array's KernelArg is made once, a
    scalar's is cached per value), then by kind and value; only immutable values are
    recorded (anything else is set again every launch). The recorded KernelArgs keep
    their allocation objects alive until the kernel's next launch with others."""

    __slots__ = ("kernel", "args")

    def __init__(self, kernel):
        self.kernel = kernel
        self.args: list = []


class _InFlight:
    """Bounds the kernels in flight on one ``cl.CommandQueue``: every ``STRIDE``-th
    launch's event is kept, and a launch that makes more than ``KEEP`` of them waits for
    the oldest (so at most about ``STRIDE * (KEEP + 1)`` launches are queued).

    Intel's CPU runtime registers every command with USM arguments for
    ``clMemBlockingFreeINTEL`` and unregisters it on completion by a scan of those in
    flight: an enqueue costs more the deeper the queue (an empty kernel with two USM
    arguments: about 4.5 us 100 deep, 7 us 10k deep; a ``cl.Buffer`` kernel stays flat).
    With a few hundred queued the device never runs dry, so the bound costs no
    throughput. Waiting does not deadlock: pysycl's runtime issues a command only once
    its dependencies are complete (it passes no wait lists), so every command it queued
    completes without the host."""

    STRIDE = 64            # a power of two (the hot path tests ``count & (STRIDE - 1)``)
    KEEP = 3

    __slots__ = ("count", "marks")

    def __init__(self):
        self.count = 0     # approximate under threads, which only moves the marks
        self.marks: collections.deque = collections.deque()

    @staticmethod
    def of(stream) -> "_InFlight":
        state = getattr(stream, "_pysycl_in_flight", None)
        if state is None:
            state = _InFlight()
            try:
                stream._pysycl_in_flight = state
            except AttributeError:   # a queue object without attributes: not bounded
                pass
        return state

    def launched(self, event) -> None:
        n = self.count = self.count + 1
        if not n & (self.STRIDE - 1):
            self.mark(event)

    def mark(self, event) -> None:
        marks = self.marks
        marks.append(event)
        if len(marks) > self.KEEP:
            try:
                old = marks.popleft()
            except IndexError:     # another thread took it
                return
            try:
                old.wait()
            except cl.Error:       # that command's own event reports its failure
                pass


_FP_BITS = (("denorm", 1), ("inf_nan", 2), ("round_to_nearest", 4), ("round_to_zero", 8),
            ("round_to_inf", 16), ("fma", 32), ("soft_float", 64),
            ("correctly_rounded_divide_sqrt", 128))


def _device_info(dev) -> dict:
    """The SYCL device descriptors the driver answers (runtime.device reads them), each
    left out when the driver does not know it."""
    def ask(attr, convert=lambda v: v):
        try:
            return convert(getattr(dev, attr))
        except (cl.Error, AttributeError, ValueError, TypeError):
            return None

    def fp(bits):
        return tuple(name for name, bit in _FP_BITS if bits & bit)

    def orders(bits):   # CL_DEVICE_ATOMIC_ORDER_RELAXED / ACQ_REL / SEQ_CST
        out = ["relaxed"] if bits & 1 else []
        out += ["acquire", "release", "acq_rel"] if bits & 2 else []
        return tuple(out + (["seq_cst"] if bits & 4 else []))

    def scopes(bits):   # CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM / WORK_GROUP / DEVICE / ALL_DEVICES
        out = ["work_item"] if bits & 8 else []
        out += ["sub_group", "work_group"] if bits & 16 else []
        out += ["device"] if bits & 32 else []
        return tuple(out + (["system"] if bits & 64 else []))
    info = {"vendor_id": ask("vendor_id"), "max_clock_frequency": ask("max_clock_frequency"),
            "max_parameter_size": ask("max_parameter_size"),
            "global_mem_cache_type": ask("global_mem_cache_type",
                                         lambda v: ("none", "read_only", "read_write")[v]),
            "global_mem_cache_line_size": ask("global_mem_cacheline_size"),
            "global_mem_cache_size": ask("global_mem_cache_size"),
            "error_correction_support": ask("error_correction_support", bool),
            "profiling_timer_resolution": ask("profiling_timer_resolution"),
            "half_fp_config": ask("half_fp_config", fp),
            "single_fp_config": ask("single_fp_config", fp),
            "double_fp_config": ask("double_fp_config", fp),
            "atomic_memory_orders": ask("atomic_memory_capabilities", orders),
            "atomic_memory_scopes": ask("atomic_memory_capabilities", scopes),
            "atomic_fence_orders": ask("atomic_fence_capabilities", orders),
            "atomic_fence_scopes": ask("atomic_fence_capabilities", scopes),
            "sub_group_independent_forward_progress": ask(
                "sub_group_independent_forward_progress", bool),
            "preferred_interop_user_sync": ask("preferred_interop_user_sync", bool),
            "backend_version": ask("version"), "profile": ask("profile"),
            "local_mem_type": ask("local_mem_type", lambda v: ("none", "local", "global")[v])}
    for kind in ("preferred", "native"):
        for elem in ("char", "short", "int", "long", "float", "double", "half"):
            info[f"{kind}_vector_width_{elem}"] = ask(f"{kind}_vector_width_{elem}")
    return {k: v for k, v in info.items() if v is not None}


def _device_type(dev) -> str:
    t = dev.type
    if t & cl.device_type.GPU:
        return "gpu"
    if t & cl.device_type.ACCELERATOR:
        return "accelerator"
    return "cpu"


class OpenCLDriver(Driver):
    """The ``opencl`` backend's device layer (see the module docstring)."""

    name = "opencl"
    # An nd_range's offset is OpenCL's global work offset (clEnqueueNDRangeKernel).
    supports_global_offset = True
    # Every queue the runtime makes is an in-order cl.CommandQueue (create_stream's
    # default): a command may follow one issued earlier on it without the host waiting.
    streams_in_order = True
    # A kernel enqueued on an OpenCL queue has (nearly) never completed when the enqueue
    # returns: the runtime's fast path does not ask (clGetEventInfo per launch), it
    # learns completion when someone asks (event.status, wait).
    launch_tokens_pending = True
    # The launcher's spec-constant buffer (the implicit last kernel argument) is a
    # cl.Buffer: Intel's CPU runtime enqueues a kernel more slowly for each USM pointer
    # argument (about 0.5 us for this one), and a buffer works without USM too.
    spec_buffer_kind = "buffer"
    # Intel's CPU runtime builds SPIR-V for ~200 ms in a fresh process: keep its binaries.
    compiles_at_load = True
    alloc_options = frozenset({"alignment"})

    def __init__(self, prefer_svm: bool = False):
        # prefer_svm: use SVM even where Intel USM exists (tests the fallback path).
        self.prefer_svm = prefer_svm
        self._api = cl_ext.ClApi.load(environment.icd_loader_library()) if cl else None
        self._lock = threading.Lock()
        self._default_contexts: dict[int, Any] = {}
        self._usm_cache: dict[int, Any] = {}
        self._global_queues: dict[int, Any] = {}

    # Discovery ---------------------------------------------------------------
    def discover(self) -> list[DeviceDescription]:
        """Every device whose ``CL_DEVICE_IL_VERSION`` lists SPIR-V; [] on any failure."""
        if cl is None:
            log.debug("OpenCL backend absent: %s", _IMPORT_ERROR)
            return []
        if _fork.child_of_started:
            return []
        try:
            platforms = cl.get_platforms()
        except Exception as e:      # PLATFORM_NOT_FOUND_KHR when no ICD is installed
            log.debug("OpenCL: no platforms: %s", e)
            return []
        _fork.started = True
        found = []
        for platform in platforms:
            try:
                devices = platform.get_devices()
            except Exception as e:
                log.debug("OpenCL: %s lists no devices: %s", platform.name, e)
                continue
            for dev in devices:
                try:
                    desc = self._describe(platform, dev)
                except Exception as e:
                    log.debug("OpenCL: skipping %s: %s", dev.name, e)
                    continue
                if desc is not None:
                    found.append(desc)
        return found

    def _describe(self, platform, dev) -> DeviceDescription | None:
        il = getattr(dev, "il_version", "") or ""
        target = target_for_il_version(il)
        if target is None:
            return None
        exts = set(dev.extensions.split())
        aspects = {_device_type(dev)}
        if "cl_khr_fp16" in exts:
            aspects.add("fp16")
        if "cl_khr_fp64" in exts or getattr(dev, "double_fp_config", 0):
            aspects.add("fp64")
        if {"cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics"} <= exts:
            aspects.add("atomic64")
        if dev.compiler_available:
            aspects.add("online_compiler")
        if dev.linker_available:
            aspects.add("online_linker")
        if dev.queue_properties & cl.command_queue_properties.PROFILING_ENABLE:
            aspects.add("queue_profiling")
        usm_kind = self._usm_aspects(platform, dev, exts, aspects)
        sizes = tuple(dev.max_work_item_sizes) + (1, 1, 1)
        sub_groups = self._api.device_info_sizes(dev.int_ptr, cl_ext.DEVICE_SUB_GROUP_SIZES_INTEL) \
            if self._api else ()
        return DeviceDescription(
            name=dev.name.strip(), vendor=dev.vendor.strip(), backend="opencl",
            device_type=_device_type(dev), driver_version=dev.driver_version,
            max_compute_units=dev.max_compute_units,
            max_work_group_size=dev.max_work_group_size,
            max_work_item_sizes=sizes[:3], sub_group_sizes=tuple(sub_groups),
            global_mem_size=dev.global_mem_size, local_mem_size=dev.local_mem_size,
            aspects=frozenset(aspects), target=target, handle=dev,
            extra={"platform": platform, "platform_name": platform.name,
                   "platform_vendor": platform.vendor, "platform_version": platform.version,
                   "il_version": il, "opencl_version": dev.version,
                   "extensions": frozenset(exts), "usm": usm_kind,
                   "max_mem_alloc_size": dev.max_mem_alloc_size,
                   "mem_base_addr_align": dev.mem_base_addr_align,
                   "address_bits": dev.address_bits,
                   "endian_little": bool(dev.endian_little),
                   "info": _device_info(dev)})

    def _usm_aspects(self, platform, dev, exts, aspects) -> str | None:
        api = self._api
        if api is None:
            return None
        if "cl_intel_unified_shared_memory" in exts and not self.prefer_svm \
                and api.intel_usm(platform.int_ptr) is not None:
            caps = {k: api.device_info_u64(dev.int_ptr, p) or 0 for k, p in (
                ("host", cl_ext.DEVICE_HOST_MEM_CAPABILITIES_INTEL),
                ("device", cl_ext.DEVICE_DEVICE_MEM_CAPABILITIES_INTEL),
                ("shared", cl_ext.DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL),
                ("system", cl_ext.DEVICE_SHARED_SYSTEM_MEM_CAPABILITIES_INTEL))}
            for kind, cap in caps.items():
                if cap & cl_ext.USM_ACCESS:
                    aspects.add(f"usm_{kind}_allocations")
            if caps["host"] & cl_ext.USM_ATOMIC_ACCESS:
                aspects.add("usm_atomic_host_allocations")
            if caps["shared"] & cl_ext.USM_ATOMIC_ACCESS:
                aspects.add("usm_atomic_shared_allocations")
            return "intel_usm"
        svm = cl_ext.Svm(api, int(getattr(dev, "svm_capabilities", 0) or 0))
        kinds = svm.kinds()
        for kind in kinds:
            aspects.add(f"usm_{kind}_allocations")
        if svm.capabilities & cl_ext.SVM_FINE_GRAIN_SYSTEM:
            aspects.add("usm_system_allocations")
        return "svm" if kinds else None

    # Sub-devices (clCreateSubDevices) ------------------------------------------
    _PARTITIONS = {"partition_equally": 0x1086, "partition_by_counts": 0x1087,
                   "partition_by_affinity_domain": 0x1088}
    _DOMAINS = {"numa": 1, "L4_cache": 2, "L3_cache": 4, "L2_cache": 8, "L1_cache": 16,
                "next_partitionable": 32}

    def partition_info(self, device: DeviceDescription) -> dict:
        h = device.handle
        try:
            props = [p for p in (h.partition_properties or []) if p]
            mask = (h.partition_affinity_domain or [0])[0] if isinstance(
                h.partition_affinity_domain, list) else int(h.partition_affinity_domain or 0)
            count = int(h.partition_max_sub_devices)
        except cl.Error:
            return super().partition_info(device)
        return {"max_sub_devices": count,
                "properties": [n for n, v in self._PARTITIONS.items() if v in props],
                "domains": [n for n, v in self._DOMAINS.items() if mask & v]}

    def create_sub_devices(self, device: DeviceDescription, partition: str,
                           value) -> list[DeviceDescription]:
        _fork.check()
        info = self.partition_info(device)
        supported = partition in info["properties"] and (
            partition != "partition_by_affinity_domain" or value in info["domains"])
        if not supported:
            return super().create_sub_devices(device, partition, value)
        code = self._PARTITIONS[partition]
        if partition == "partition_equally":
            props = [code, value]
        elif partition == "partition_by_counts":
            props = [code, *value, 0]
        else:
            props = [code, self._DOMAINS[value]]
        try:
            handles = device.handle.create_sub_devices(props)
        except cl.Error as e:
            raise exception(errc.invalid, f"{device.name} cannot be split by {partition}"
                            f"({value!r}): {e}") from None
        domain = value if partition == "partition_by_affinity_domain" else None
        subs = []
        for h in handles:
            sub = self._describe(device.extra["platform"], h)
            sub.extra.update(parent=device, partition=(partition, domain))
            subs.append(sub)
        return subs

    # Contexts and streams ----------------------------------------------------
    def create_context(self, devices: Sequence[DeviceDescription]) -> Any:
        """A ``cl.Context`` over ``devices`` (all of one platform)."""
        _fork.check()
        platforms = {d.extra["platform"].int_ptr for d in devices}
        if len(platforms) != 1:
            raise exception(errc.invalid, "an OpenCL context cannot span platforms: "
                            + ", ".join(d.name for d in devices))
        return cl.Context([d.handle for d in devices])

    def default_context(self, device: DeviceDescription) -> Any:
        """The platform's context over its root devices; a sub-device's own context
        (a platform context does not hold sub-devices)."""
        _fork.check()
        platform = device.extra["platform"]
        sub = "parent" in device.extra
        key = device.handle.int_ptr if sub else platform.int_ptr
        with self._lock:
            ctx = self._default_contexts.get(key)
            if ctx is None:
                devs = [] if sub else [d for d in platform.get_devices()
                                       if target_for_il_version(getattr(d, "il_version", "") or "")]
                ctx = cl.Context(devs or [device.handle])
                self._default_contexts[key] = ctx
            return ctx

    def _context(self, device: DeviceDescription, context) -> Any:
        return context if context is not None else self.default_context(device)

    def create_stream(self, device: DeviceDescription, profiling: bool, *, in_order: bool = True,
                      context: Any = None) -> Any:
        _fork.check()
        props = 0
        if profiling:
            props |= cl.command_queue_properties.PROFILING_ENABLE
        if not in_order:
            props |= cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        try:
            return cl.CommandQueue(self._context(device, context), device.handle, properties=props)
        except cl.Error as e:
            raise exception(errc.feature_not_supported if props else errc.runtime,
                            f"cannot create a queue on {device.name}: {e}") from None

    def synchronize(self, stream: Any) -> None:
        _fork.check()
        stream.finish()

    # Memory ------------------------------------------------------------------
    def _usm(self, device: DeviceDescription):
        kind = device.extra.get("usm")
        platform = device.extra["platform"].int_ptr
        if kind == "intel_usm":
            return self._api.intel_usm(platform)
        if kind == "svm":
            return cl_ext.Svm(self._api, int(device.handle.svm_capabilities))
        return None

    def alloc(self, device: DeviceDescription, nbytes: int, kind: str, *, context: Any = None,
              alignment: int = 0) -> OpenCLAllocation:
        _fork.check()
        ctx = self._context(device, context)
        if kind == "buffer":
            try:
                buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, max(nbytes, 1))
            except cl.Error as e:
                raise exception(errc.memory_allocation, f"cannot allocate a {nbytes}-byte "
                                f"buffer on {device.name}: {e}") from None
            return OpenCLAllocation(ctx, device, nbytes, kind, buffer=buf)
        if kind not in ("device", "shared", "host"):
            raise exception(errc.invalid, f"unknown allocation kind {kind!r}")
        if f"usm_{kind}_allocations" not in device.aspects:
            raise exception(errc.feature_not_supported, f"{device.name} offers no {kind} USM "
                            "(neither cl_intel_unified_shared_memory nor the matching SVM)")
        usm = self._usm(device)
        ptr = usm.alloc(ctx.int_ptr, device.handle.int_ptr, max(nbytes, 1), kind, alignment)
        return OpenCLAllocation(ctx, device, nbytes, kind, ptr=ptr, usm=usm)

    def free(self, allocation: OpenCLAllocation) -> None:
        if allocation.freed:
            return
        allocation.freed = True
        if _fork.child_of_started:   # the parent's memory: not this process's to free
            return
        if allocation.buffer is not None:
            allocation.buffer.release()
        elif allocation.ptr:
            allocation.usm.free(allocation.context.int_ptr, allocation.ptr)

    def copy(self, stream: Any, dst: Any, dst_offset: int, src: Any, src_offset: int,
             nbytes: int, *, wait_for: Sequence[OpenCLEvent] = ()) -> OpenCLEvent:
        """Copy ``nbytes``; each side is an allocation or a host buffer (memoryview)."""
        _fork.check()
        events = [e.event for e in wait_for]
        if stream is None:   # a copy outside any queue (buffer write-back to the host)
            alloc = next((a for a in (dst, src) if isinstance(a, OpenCLAllocation)), None)
            if alloc is not None:
                stream = self._queue_for(alloc.context, alloc.device)
        if isinstance(dst, OpenCLAllocation) and isinstance(src, OpenCLAllocation) and \
                dst.context.int_ptr != src.context.int_ptr:
            return self._staged_copy(stream, dst, dst_offset, src, src_offset, nbytes,
                                     wait_for)
        d_buf = isinstance(dst, OpenCLAllocation) and dst.buffer is not None
        s_buf = isinstance(src, OpenCLAllocation) and src.buffer is not None
        if d_buf or s_buf:
            return self._copy_buffer(stream, dst, dst_offset, src, src_offset, nbytes, events)
        usm = next(a.usm for a in (dst, src) if isinstance(a, OpenCLAllocation)) \
            if any(isinstance(a, OpenCLAllocation) for a in (dst, src)) else None
        if usm is None:      # host to host: a plain memmove keeps the contract uniform
            _host_bytes(dst, dst_offset, nbytes)[:] = _host_bytes(src, src_offset, nbytes)
            return OpenCLEvent(cl.enqueue_marker(stream, wait_for=events or None), None, stream)
        dptr, keep_d = _address(dst, dst_offset, nbytes)
        sptr, keep_s = _address(src, src_offset, nbytes)
        ev = usm.memcpy(stream.int_ptr, dptr, sptr, nbytes, events)
        return OpenCLEvent(cl.Event.from_int_ptr(ev, retain=False), (keep_d, keep_s), stream)

    def _staged_copy(self, stream, dst, dst_offset, src, src_offset, nbytes, wait_for):
        """Memory of two contexts (sub-devices' own contexts, say): no command of one
        context may touch the other's memory, so the bytes go through the host; the
        host waits for the read."""
        for e in wait_for:
            e.wait()
        host = memoryview(bytearray(nbytes))
        self.copy(self._queue_for(src.context, src.device), host, 0, src, src_offset,
                  nbytes).wait()
        queue = stream if stream is not None and stream.context.int_ptr == \
            dst.context.int_ptr else self._queue_for(dst.context, dst.device)
        return self.copy(queue, dst, dst_offset, host, 0, nbytes)

    def _copy_buffer(self, queue, dst, dst_offset, src, src_offset, nbytes, events):
        wait = events or None
        dst, src = _buffer_or_host(dst), _buffer_or_host(src)
        if isinstance(dst, OpenCLAllocation) and isinstance(src, OpenCLAllocation):
            ev = cl.enqueue_copy(queue, dst.buffer, src.buffer, byte_count=nbytes,
                                 src_offset=src_offset, dst_offset=dst_offset, wait_for=wait)
            return OpenCLEvent(ev, None, queue)
        if isinstance(dst, OpenCLAllocation):
            host = _host_bytes(src, src_offset, nbytes)
            ev = cl.enqueue_copy(queue, dst.buffer, host, dst_offset=dst_offset,
                                 wait_for=wait, is_blocking=False)
            return OpenCLEvent(ev, host, queue)
        host = _host_bytes(dst, dst_offset, nbytes)
        ev = cl.enqueue_copy(queue, host, src.buffer, src_offset=src_offset,
                             wait_for=wait, is_blocking=False)
        return OpenCLEvent(ev, host, queue)

    def copy_rect(self, stream: Any, dst: Any, dst_rect, src: Any, src_rect, region):
        """A box in one command where a ``cl.Buffer`` is involved (clEnqueue{Read,Write,
        Copy}BufferRect); USM and host-to-host boxes go row by row."""
        d_buf = isinstance(dst, OpenCLAllocation) and dst.buffer is not None
        s_buf = isinstance(src, OpenCLAllocation) and src.buffer is not None
        if not (d_buf or s_buf) or not all(region) or (d_buf and s_buf and dst is src):
            return super().copy_rect(stream, dst, dst_rect, src, src_rect, region)
        if stream is None:   # outside any queue (buffer write-back to the host)
            alloc = dst if d_buf else src
            stream = self._queue_for(alloc.context, alloc.device)
        dst, src = _buffer_or_host(dst), _buffer_or_host(src)
        d_org, d_pitch = _rect_origin(dst_rect)
        s_org, s_pitch = _rect_origin(src_rect)
        reg = tuple(region)
        if d_buf and s_buf:
            ev = cl.enqueue_copy(stream, dst.buffer, src.buffer, src_origin=s_org,
                                 dst_origin=d_org, region=reg, src_pitches=s_pitch,
                                 dst_pitches=d_pitch)
            return OpenCLEvent(ev, None, stream)
        host_rect, buf_org, buf_pitch = (src_rect, d_org, d_pitch) if d_buf else \
            (dst_rect, s_org, s_pitch)
        host = _host_bytes(src if d_buf else dst, host_rect[0], rect_extent(host_rect, reg))
        kw = dict(buffer_origin=buf_org, host_origin=(0, 0, 0), region=reg,
                  buffer_pitches=buf_pitch, host_pitches=tuple(host_rect[1:]),
                  is_blocking=False)
        ev = cl.enqueue_copy(stream, dst.buffer, host, **kw) if d_buf else \
            cl.enqueue_copy(stream, host, src.buffer, **kw)
        return OpenCLEvent(ev, host, stream)

    def fill(self, stream: Any, dst: Any, offset: int, pattern: bytes, nbytes: int, *,
             wait_for: Sequence[OpenCLEvent] = ()) -> OpenCLEvent:
        """Repeat ``pattern`` (1, 2, 4, ... 128 bytes, dividing ``nbytes``) over the range."""
        _fork.check()
        pattern = bytes(pattern)
        if nbytes % len(pattern):
            raise exception(errc.invalid, f"fill size {nbytes} is not a multiple of the "
                            f"{len(pattern)}-byte pattern")
        events = [e.event for e in wait_for]
        if dst.buffer is not None:
            pat = np.frombuffer(pattern, dtype=np.uint8)
            ev = cl.enqueue_fill_buffer(stream, dst.buffer, pat, offset, nbytes,
                                        wait_for=events or None)
            return OpenCLEvent(ev, pat, stream)
        ev = dst.usm.fill(stream.int_ptr, dst.ptr + offset, pattern, nbytes, events)
        return OpenCLEvent(cl.Event.from_int_ptr(ev, retain=False), None, stream)

    # Code --------------------------------------------------------------------
    def load(self, device: DeviceDescription, binary: bytes, kernel_names: Sequence[str],
             spec_constants: Mapping[int, bytes] | None = None, *,
             device_global_ids: Sequence[str] = (), code_cache: Any = None,
             context: Any = None, options: str = "") -> OpenCLProgram:
        """clCreateProgramWithIL + clSetProgramSpecializationConstant + clBuildProgram.

        ``spec_constants`` maps SpecId -> value bytes of the constant's exact width
        (bool: 1 byte). Build failures raise ``errc.build`` with the driver's log.
        With a ``code_cache`` (Driver.load) the device binary of the build is kept, and
        a later load in any process builds from it (clCreateProgramWithBinary): the
        first SPIR-V build in a process costs ~200 ms on Intel's CPU runtime (its
        compiler loads), a binary ~2 ms."""
        _fork.check()
        ctx = self._context(device, context)
        binary = bytes(binary)
        _check_spirv(binary, kernel_names)
        parts = _code_parts(device, binary, spec_constants, options) if code_cache else None
        if parts is not None:
            cached = code_cache.get(parts)
            if cached is not None:
                program = self._from_device_binary(device, ctx, cached, kernel_names, options)
                if program is not None:
                    return program
        try:
            prg = cl._cl._create_program_with_il(ctx, binary)
            for spec_id, value in sorted((spec_constants or {}).items()):
                prg.set_specialization_constant(int(spec_id), bytes(value))
        except cl.Error as e:
            raise exception(errc.build, f"{device.name} rejected the SPIR-V module: {e}") from None
        t0 = time.perf_counter()
        try:
            # _build, not pyopencl's build(): the latter turns the Intel runtime's
            # "Kernel was 16-way vectorized" remarks into a CompilerWarning on every
            # build, and warnings filters are process global (not thread safe to toggle).
            prg._build(options=options.encode(), devices=[device.handle])
        except cl.Error as e:
            logtext = _build_log(prg, device)
            raise exception(errc.build, f"building {', '.join(kernel_names)} for "
                            f"{device.name} failed: {e}\n{logtext}") from None
        seconds = time.perf_counter() - t0
        if parts is not None:
            try:
                code_cache.put(parts, _device_binary(prg))
            except cl.Error:
                pass   # a runtime that gives no binary: built from SPIR-V every time
        return self._program(prg, device, ctx, kernel_names, seconds)

    def _from_device_binary(self, device, ctx, data: bytes, kernel_names,
                            options: str) -> OpenCLProgram | None:
        """The program built from a cached device binary, or None when the runtime
        refuses it (another driver build behind the same version string, say): the
        caller builds from SPIR-V and replaces the entry."""
        t0 = time.perf_counter()
        try:
            prg = cl._cl._Program(ctx, [device.handle], [data])
            prg._build(options=options.encode(), devices=[device.handle])
        except cl.Error:
            return None
        return self._program(prg, device, ctx, kernel_names, time.perf_counter() - t0)

    def _program(self, prg, device, ctx, kernel_names, seconds: float) -> OpenCLProgram:
        program = OpenCLProgram(prg, device, ctx, kernel_names, seconds,
                                _build_log(prg, device))
        program.usm = self._usm(device)
        program.prepare = self._prepare_kernel(device)
        return program

    def _prepare_kernel(self, device: DeviceDescription):
        usm = self._usm(device)

        def prepare(kernel):
            if usm is not None:
                usm.prepare_kernel(self._api, kernel.int_ptr)
        return prepare

    # Interoperability ------------------------------------------------------
    def native_program(self, program: OpenCLProgram) -> Any:
        """A ``pyopencl.Program`` over the loaded ``cl_program``."""
        return cl.Program(program.program)

    def native_kernel(self, program: OpenCLProgram, kernel_name: str) -> Any:
        """A new ``pyopencl.Kernel`` (not the one launches set arguments on)."""
        try:
            kernel = cl.Kernel(program.program, kernel_name)
        except cl.Error as e:
            raise exception(errc.invalid, f"kernel {kernel_name!r} is not in the program: "
                            f"{e}") from None
        program.prepare(kernel)
        return kernel

    def adopt_program(self, device: DeviceDescription, native, context=None) -> OpenCLProgram:
        """A ``pyopencl.Program`` (or ``_Program``) built for ``device`` in the context
        ``context`` stands for; ``errc.invalid`` naming what does not fit."""
        prg = getattr(native, "_prg", native) if isinstance(native, cl.Program) else native
        if not isinstance(prg, cl._cl._Program):
            raise exception(errc.invalid, f"make_kernel_bundle takes a pyopencl.Program, not "
                            f"{type(native).__name__}")
        ctx = self._context(device, context)
        if prg.get_info(cl.program_info.CONTEXT) != ctx:
            raise exception(errc.invalid, "the pyopencl.Program belongs to another OpenCL "
                            "context than the sycl.context (make it in sycl.get_native(ctx))")
        status = prg.get_build_info(device.handle, cl.program_build_info.STATUS)
        if status != _CL_BUILD_SUCCESS:
            raise exception(errc.invalid, f"the pyopencl.Program is not built for "
                            f"{device.name} (build status {status})")
        names = [n for n in prg.get_info(cl.program_info.KERNEL_NAMES).split(";") if n]
        return self._program(prg, device, ctx, names, 0.0)

    def native_context(self, device: DeviceDescription, context=None) -> Any:
        return self._context(device, context)

    def launch(self, stream: Any, program: OpenCLProgram, kernel_name: str,
               global_size: Sequence[int], local_size: Sequence[int] | None,
               args: Sequence[KernelArg], local_mem_bytes: int = 0, *,
               wait_for: Sequence[OpenCLEvent] = (), offset: Sequence[int] | None = None
               ) -> OpenCLEvent:
        """Set ``args`` (those that changed since the kernel's last launch) and enqueue.
        Sizes and ``offset`` (an nd_range's, as OpenCL's global work offset) are in SYCL
        order (reversed here). ``local_mem_bytes`` is unused: OpenCL local memory comes
        as ``local`` args."""
        _fork.check()
        gsize, lsize = _cl_sizes(global_size, local_size)
        goffset = tuple(int(o) for o in reversed(offset)) if offset else None
        events = [e.event for e in wait_for] or None
        with program.lock:
            state = program.kernel_state(kernel_name, program.prepare)
            self._set_args(state, args, program)
            try:
                ev = cl.enqueue_nd_range_kernel(stream, state.kernel, gsize, lsize,
                                                global_work_offset=goffset, wait_for=events)
            except cl.Error as e:
                raise _launch_error(e, kernel_name, global_size, local_size) from None
        _InFlight.of(stream).launched(ev)
        return OpenCLEvent(ev, None, stream)

    def bind_launch(self, stream: Any, program: OpenCLProgram, kernel_name: str,
                    trailing: KernelArg):
        """:meth:`launch` of one kernel on one queue with everything looked up once:
        ``launch(global_size, local_size, args, local_mem_bytes)`` (the runtime's fast
        path of an already-launched kernel; ``args`` is a fresh list the call extends
        with ``trailing``, the spec-constant buffer). Per launch it compares the
        arguments with those last set on the kernel (identity, in C), converts the
        sizes only when they differ from the last launch's, and enqueues without a
        wait list (see :class:`_InFlight` for the bound on launches in flight)."""
        lock = program.lock
        with lock:
            state = program.kernel_state(kernel_name, program.prepare)
        kernel = state.kernel
        enqueue = cl.enqueue_nd_range_kernel
        set_args = self._set_args
        acquire, release = lock.acquire, lock.release
        new_event = OpenCLEvent
        in_flight = _InFlight.of(stream)
        stride_mask = _InFlight.STRIDE - 1
        # (global size, local size, OpenCL global size, OpenCL local size) of the last
        # launch, replaced as one tuple (threads may share the bound launch).
        last_sizes = [((), (), None, None)]

        fork = _fork

        def launch(global_size, local_size, args, local_mem_bytes=0):
            if fork.child_of_started:
                fork.check()
            args.append(trailing)
            sizes = last_sizes[0]
            if global_size == sizes[0] and local_size == sizes[1]:
                gsize, lsize = sizes[2], sizes[3]
            else:
                gsize, lsize = _cl_sizes(global_size, local_size)
                last_sizes[0] = (global_size, local_size, gsize, lsize)
            acquire()   # (cheaper than ``with lock``, which shows per launch)
            try:
                # One C-level list comparison: identical KernelArgs (a launch loop's)
                # compare equal without calling KernelArg.__eq__.
                try:
                    changed = args != state.args
                except Exception:   # noqa: BLE001 - a value that does not compare
                    changed = True
                if changed:
                    set_args(state, args, program)
                ev = enqueue(stream, kernel, gsize, lsize)
            except cl.Error as e:
                raise _launch_error(e, kernel_name, global_size, local_size) from None
            finally:
                release()
            n = in_flight.count = in_flight.count + 1
            if not n & stride_mask:
                in_flight.mark(ev)
            return new_event(ev, None, stream)
        return launch

    def _set_args(self, state: _KernelState, args: Sequence[KernelArg],
                  program: OpenCLProgram) -> None:
        """Set the arguments of ``state.kernel`` that differ from the recorded ones
        (see :class:`_KernelState`); call with ``program.lock`` held."""
        last = state.args
        if len(last) != len(args):
            last = state.args = [_UNSET] * len(args)
        kernel = state.kernel
        for i, arg in enumerate(args):
            prev = last[i]
            if arg is prev:
                continue
            value = arg.value
            if prev is not _UNSET and arg.kind is prev.kind and type(value) is \
                    type(prev.value) and (value is prev.value or value == prev.value):
                last[i] = arg
                continue
            last[i] = _UNSET       # stays so if setting fails
            self._set_arg(kernel, i, arg, program)
            if type(value) in _RECORDABLE:
                last[i] = arg

    def _set_arg(self, kernel, index: int, arg: KernelArg, program: OpenCLProgram) -> None:
        kind, value = arg.kind, arg.value
        try:
            if kind is KernelArgKind.mem:
                self._set_mem_arg(kernel, index, value, program)
            elif kind is KernelArgKind.scalar or kind is KernelArgKind.bytes:
                kernel.set_arg(index, bytes(value))    # clSetKernelArg(size=len(value))
            elif kind is KernelArgKind.local:
                kernel.set_arg(index, cl.LocalMemory(max(int(value), 1)))
            else:
                raise exception(errc.kernel_argument, f"unknown kernel argument kind {kind}")
        except cl.Error as e:
            raise exception(errc.kernel_argument, f"argument {index} of kernel "
                            f"{kernel.function_name}: {e}") from None

    def _set_mem_arg(self, kernel, index: int, value, program: OpenCLProgram) -> None:
        if value is None:
            kernel.set_arg(index, None)
        elif isinstance(value, OpenCLAllocation) and value.buffer is not None:
            kernel.set_arg(index, value.buffer)
        else:
            ptr = value.ptr if isinstance(value, OpenCLAllocation) else int(value)
            usm = program.usm
            if usm is None:
                raise exception(errc.feature_not_supported,
                                f"{program.device.name} cannot take pointer arguments (no USM/SVM)")
            usm.set_arg(kernel.int_ptr, index, ptr)

    # Device globals ----------------------------------------------------------
    def global_address(self, program: OpenCLProgram, name: str) -> tuple[int, int]:
        """(USM address, size in bytes) of program-scope variable ``name``."""
        dev = program.device
        found = None
        if self._api is not None and dev.extra.get("usm") == "intel_usm":
            found = self._api.global_variable_pointer(
                dev.extra["platform"].int_ptr, dev.handle.int_ptr, program.program.int_ptr, name)
        if found is None:
            raise exception(errc.feature_not_supported, f"{dev.name} cannot address device "
                            "globals (no clGetDeviceGlobalVariablePointerINTEL)")
        return found

    def _global_copy(self, program, name, offset, nbytes, stream, wait_for, to_device, data):
        _fork.check()
        ptr, size = self.global_address(program, name)
        if offset < 0 or offset + nbytes > size:
            raise exception(errc.invalid, f"device global {name!r} has {size} bytes; "
                            f"cannot access [{offset}, {offset + nbytes})")
        queue = stream if stream is not None else self._private_queue(program)
        usm = self._usm(program.device)
        host, keep = _address(data, 0, nbytes)
        dst, src = (ptr + offset, host) if to_device else (host, ptr + offset)
        ev = usm.memcpy(queue.int_ptr, dst, src, nbytes, [e.event for e in wait_for])
        event = OpenCLEvent(cl.Event.from_int_ptr(ev, retain=False), keep, queue)
        if stream is None:
            event.wait()
        return event

    def read_global(self, program: OpenCLProgram, name: str, offset: int, data, *,
                    stream: Any = None, wait_for: Sequence[OpenCLEvent] = ()) -> OpenCLEvent:
        """Copy ``len(data)`` bytes of device global ``name`` from ``offset`` into the
        writable host buffer ``data``; blocking when no ``stream`` is given."""
        return self._global_copy(program, name, offset, memoryview(data).nbytes, stream,
                                 wait_for, False, data)

    def write_global(self, program: OpenCLProgram, name: str, offset: int, data, *,
                     stream: Any = None, wait_for: Sequence[OpenCLEvent] = ()) -> OpenCLEvent:
        """Copy host bytes ``data`` into device global ``name`` at ``offset``."""
        return self._global_copy(program, name, offset, memoryview(data).nbytes, stream,
                                 wait_for, True, data)

    def read_device_global(self, stream: Any, program: OpenCLProgram, symbol: str,
                           offset: int, out: memoryview) -> None:
        self.read_global(program, symbol, offset, out)

    def write_device_global(self, stream: Any, program: OpenCLProgram, symbol: str,
                            offset: int, data: memoryview) -> None:
        self.write_global(program, symbol, offset, data)

    def _private_queue(self, program: OpenCLProgram):
        return self._queue_for(program.context, program.device)

    def _queue_for(self, context, device: DeviceDescription):
        """The driver's own in-order queue for (context, device)."""
        key = id(context), device.handle.int_ptr
        with self._lock:
            q = self._global_queues.get(key)
            if q is None:
                q = cl.CommandQueue(context, device.handle)
                self._global_queues[key] = q
            return q


# What a kernel argument was last set from, when it is known not to change:
# _KernelState records only KernelArgs whose value has one of these types.
_UNSET = object()
_RECORDABLE = frozenset({bytes, int, OpenCLAllocation, type(None)})


#: CL_BUILD_SUCCESS (pyopencl names no constant for cl_build_status).
_CL_BUILD_SUCCESS = 0


def _cl_sizes(global_size, local_size) -> tuple[tuple, tuple | None]:
    """(global, local) sizes in OpenCL order (reversed), checked as SYCL 2020 wants."""
    if local_size:
        if len(local_size) != len(global_size):
            raise exception(errc.nd_range, f"local size {list(local_size)} and global size "
                            f"{list(global_size)} differ in dimensions")
        if any(int(x) <= 0 or int(g) % int(x) for g, x in zip(global_size, local_size)):
            # OpenCL 2.0+ would run non-uniform work-groups; SYCL 2020 (4.9.4.2.2) forbids them.
            raise exception(errc.nd_range, f"global size {list(global_size)} is not a multiple "
                            f"of the local size {list(local_size)}")
    gsize = tuple(int(g) for g in reversed(global_size))
    lsize = tuple(int(x) for x in reversed(local_size)) if local_size else None
    return gsize, lsize


def _launch_error(e, kernel_name: str, global_size, local_size) -> exception:
    text = str(e)
    code = errc.nd_range if "WORK_GROUP" in text or "WORK_ITEM" in text \
        else errc.kernel_argument if "KERNEL_ARGS" in text else errc.kernel
    return exception(code, f"launching {kernel_name} with global {list(global_size)}"
                     f", local {local_size}: {e}")


def _host_bytes(buf, offset: int, nbytes: int):
    """A uint8 NumPy view of ``nbytes`` of a host buffer from ``offset``."""
    if isinstance(buf, OpenCLAllocation):
        view = buf.host_view()
        if view is None:
            raise exception(errc.invalid, f"{buf!r} is not host accessible")
        buf = view
    arr = np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) \
        else buf.reshape(-1).view(np.uint8)
    if offset + nbytes > arr.size:
        raise exception(errc.invalid, f"host range [{offset}, {offset + nbytes}) exceeds "
                        f"{arr.size} bytes")
    return arr[offset:offset + nbytes]


def _address(buf, offset: int, nbytes: int) -> tuple[int, Any]:
    """(address, object to keep alive) of a USM allocation or a host buffer."""
    if isinstance(buf, OpenCLAllocation):
        if offset + nbytes > buf.nbytes:
            raise exception(errc.invalid, f"range [{offset}, {offset + nbytes}) exceeds {buf!r}")
        return buf.ptr + offset, None
    arr = _host_bytes(buf, offset, nbytes)
    return arr.ctypes.data, arr


def _rect_origin(rect) -> tuple[tuple[int, int, int], tuple[int, int]]:
    """(origin, pitches) of a copy_rect side for the *BufferRect commands: the byte
    offset split over (x, y, z) so every part stays inside its pitch."""
    offset, row_pitch, slice_pitch = rect
    z, rest = divmod(offset, slice_pitch)
    y, x = divmod(rest, row_pitch)
    return (x, y, z), (row_pitch, slice_pitch)


def _buffer_or_host(mem):
    """A buffer copy's side: a buffer allocation, or host memory (USM through its host
    view; device USM cannot meet a buffer in one copy)."""
    if isinstance(mem, OpenCLAllocation) and mem.buffer is None:
        view = mem.host_view()
        if view is None:
            raise exception(errc.feature_not_supported,
                            "copying between a buffer and device USM is not supported")
        return view
    return mem


def _code_parts(device: DeviceDescription, il: bytes, spec_constants, options: str) -> dict:
    """What a device binary depends on: the SPIR-V, the spec-constant values it was
    specialised with, the build options and the device, driver and platform."""
    dev = device.handle
    try:
        platform = f"{dev.platform.name} {dev.platform.version}"
    except Exception:  # noqa: BLE001 - a handle without a platform: the device alone
        platform = ""
    return {"format": "opencl program binary/1", "il": il,
            "spec": repr(sorted((int(k), bytes(v)) for k, v in (spec_constants or {}).items())),
            "options": options, "device": device.name, "driver": device.driver_version,
            "platform": platform}


def _device_binary(prg) -> bytes:
    (data,) = prg.get_info(cl.program_info.BINARIES)
    return bytes(data)


def _check_spirv(binary: bytes, kernel_names) -> None:
    """Reject a malformed module before the driver sees it: Intel's CPU runtime 2026.2
    hangs in clBuildProgram on a valid header followed by zero words (observed), so
    walk the instruction word counts (about 1 ms for 10k instructions)."""
    import struct
    what = f"the SPIR-V module for {', '.join(kernel_names)}"
    if len(binary) < 24 or len(binary) % 4 or binary[:4] != b"\x03\x02\x23\x07":
        raise exception(errc.build, f"{what} is not a little-endian SPIR-V binary")
    words = struct.unpack(f"<{len(binary) // 4}I", binary)
    pos = 5
    while pos < len(words):
        count = words[pos] >> 16
        if count == 0:
            raise exception(errc.build, f"{what} is malformed (zero-length instruction "
                            f"at word {pos})")
        pos += count
    if pos != len(words) or words[3] == 0:
        raise exception(errc.build, f"{what} is malformed (truncated instruction stream)")


def _build_log(prg, device: DeviceDescription) -> str:
    try:
        return (prg.get_build_info(device.handle, cl.program_build_info.LOG) or "").strip()
    except Exception:
        return ""
