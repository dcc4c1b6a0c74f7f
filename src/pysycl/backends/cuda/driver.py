"""The CUDA driver API (``cuda.bindings.driver``, the ``pysycl[cuda]`` extra): the only
code of the CUDA slice that touches a GPU.

Design points, each for a reason:

* Importing this module never raises and never initialises CUDA; :meth:`discover` returns
  ``[]`` when the package, ``libcuda`` or a GPU is missing (``cuInit`` raises
  ``RuntimeError`` when ``libcuda.so.1`` cannot be opened).
* Every device uses its **primary context**, the one CuPy, PyTorch and the runtime API
  use, so USM pointers and streams are shared with them. The current context is set per
  thread only when it changes (a ``threading.local`` compare instead of a driver call).
* **Launch** goes through a per-kernel :class:`_ArgPacker` built on first launch: one
  ``struct.Struct`` writes every argument into one ctypes buffer whose ``void*[]`` array
  never changes, and ``cuLaunchKernel`` gets that array's address as an ``int`` (the
  cheapest form cuda-bindings accepts). The driver copies parameters at launch time, so
  the buffer is reused at once. Argument sizes are checked once against
  ``cuFuncGetParamInfo``.
* ``local`` arguments are ``i32`` byte offsets into one dynamic shared buffer (layout in
  ``target.py``); the sum is the launch's dynamic shared size, and the kernel's opt-in
  limit is raised (``cuFuncSetAttribute``) when it passes the 48 KiB default.
* Completion tokens of plain launches, copies and fills carry no event: ``wait()``
  synchronises the stream (streams are in order, so that is exact when it is the last
  command). :meth:`record_event` gives an exact event when the runtime needs one
  (cross-queue dependencies); a profiling stream records start/end timing events around
  every command, reported in ns (:meth:`CudaToken.profiling_ns`).
"""
from __future__ import annotations

import ctypes
import itertools
import os
import struct
import threading
import time
import weakref
from typing import Any, Mapping, Sequence

import numpy as np

from ... import config
from ...detail.generated_code import define
from ...errors import errc, exception
from ..base import (DeviceDescription, Driver, KernelArg, KernelArgKind, fork_error,
                    rect_extent)
from .launch_call import FIELDS, RECORD, WORD, launch_call
from .target import LOCAL_ARG_ALIGN, cuda_target, ptx_symbol

try:
    from cuda.bindings import driver as cu
    from cuda.bindings import __version__ as _BINDINGS_VERSION
except Exception as _e:  # noqa: BLE001 - any import problem means "no CUDA backend"
    cu = None
    _IMPORT_PROBLEM = f"cuda-bindings cannot be imported ({type(_e).__name__}: {_e}); " \
                      "install the cuda extra: pip install -e '.[cuda]'"

_SCALAR, _BYTES, _MEM, _LOCAL = (KernelArgKind.scalar, KernelArgKind.bytes,
                                 KernelArgKind.mem, KernelArgKind.local)
_DEFAULT_DYNAMIC_SHARED = 48 * 1024   # usable without cuFuncSetAttribute (CUDA guide §"Shared memory")


# -- errors and contexts ----------------------------------------------------------------
def _error_text(err) -> str:
    try:
        name = cu.cuGetErrorName(err)[1].decode()
        text = cu.cuGetErrorString(err)[1].decode()
        return f"{name}: {text}"
    except Exception:  # noqa: BLE001
        return str(err)


_ERRC = {"CUDA_ERROR_OUT_OF_MEMORY": errc.memory_allocation,
         "CUDA_ERROR_INVALID_PTX": errc.build,
         "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": errc.build,
         "CUDA_ERROR_NO_BINARY_FOR_GPU": errc.build,
         "CUDA_ERROR_JIT_COMPILER_NOT_FOUND": errc.build,
         "CUDA_ERROR_NOT_FOUND": errc.invalid,
         "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES": errc.nd_range,
         "CUDA_ERROR_ILLEGAL_ADDRESS": errc.kernel,
         "CUDA_ERROR_LAUNCH_FAILED": errc.kernel}


def _fail(err, what: str, code: errc | None = None):
    name = getattr(err, "name", str(err))
    raise exception(code or _ERRC.get(name, errc.runtime), f"{what} failed: {_error_text(err)}")


def _result(err):
    """A ``CUresult`` from the launch call's ``int`` (kept as the int if this version of
    cuda-bindings does not know the code)."""
    try:
        return cu.CUresult(err)
    except ValueError:
        return err


def _call(fn, *args, what: str | None = None):
    """Call a driver function; return its outputs (none, one, or a tuple)."""
    res = fn(*args)
    if res[0] != 0:
        _fail(res[0], what or fn.__name__)
    return res[1] if len(res) == 2 else res[1:] if len(res) > 2 else None


_tls = threading.local()
# Other libraries' stream handles (ints) as driver objects; a plain value each, made
# once (cleared when it grows: libraries make streams from small pools).
_foreign_streams: dict = {}
# Whether the driver takes stream memory operations (cuStreamWriteValue32/64): cleared at
# the first CUDA_ERROR_NOT_SUPPORTED.
_stream_writes = [True]


def _activate(ctx) -> None:
    if getattr(_tls, "ctx", None) is not ctx:
        if _fork.child_of_started:
            raise fork_error("CUDA")
        _call(cu.cuCtxSetCurrent, ctx)
        _tls.ctx = ctx


class _fork:
    """CUDA cannot be used in a child forked after ``cuInit`` in the parent."""

    started = False            # cuInit succeeded in this process
    child_of_started = False   # this process was forked from one where it had

    @classmethod
    def after_in_child(cls) -> None:
        cls.child_of_started = cls.started
        # The forking thread's current context is the parent's: every use of a context
        # goes through _activate again (and fails there).
        _tls.__dict__.clear()


os.register_at_fork(after_in_child=_fork.after_in_child)


class CudaDevice:
    """One GPU: ordinal, ``CUdevice`` and its primary context (retained on first use)."""

    def __init__(self, ordinal: int, cudevice, compute_capability: tuple[int, int]):
        self.ordinal = ordinal
        self.cudevice = cudevice
        self.compute_capability = compute_capability
        self._ctx = None
        self._lock = threading.Lock()
        # Recycled events, [without timing, with timing]: creating and destroying one
        # costs ~4 us of a 9 us launch+event (measured on an H200 through cuda-bindings).
        self.event_pools: tuple[list, list] = ([], [])
        self._aux: CudaStream | None = None

    def aux_stream(self) -> "CudaStream":
        """The device's own stream for copies made outside any queue (``stream=None``:
        buffer write-back, ``usm_array.to_numpy``, device-global host copies); such a
        copy is waited for before it returns."""
        if self._aux is None:
            with self._lock:
                if self._aux is None:
                    self.activate()
                    handle = _call(cu.cuStreamCreate,
                                   cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value)
                    self._aux = CudaStream(self, handle, False, owned=True)
        return self._aux

    def new_event(self, timing: bool):
        try:
            return self.event_pools[timing].pop()     # atomic under the GIL
        except IndexError:
            pass
        flags = cu.CUevent_flags.CU_EVENT_DEFAULT if timing else \
            cu.CUevent_flags.CU_EVENT_DISABLE_TIMING
        return _call(cu.cuEventCreate, flags)

    @property
    def context(self):
        if self._ctx is None:
            with self._lock:
                if self._ctx is None:
                    self._ctx = _call(cu.cuDevicePrimaryCtxRetain, self.cudevice)
        return self._ctx

    def activate(self) -> None:
        _activate(self.context)

    def __repr__(self) -> str:
        return f"CudaDevice({self.ordinal}, sm_{self.compute_capability[0]}{self.compute_capability[1]})"


def _device(description_or_device) -> CudaDevice:
    return getattr(description_or_device, "handle", description_or_device)


# -- streams, tokens, events ------------------------------------------------------------
class CudaStream:
    """A CUDA stream; ``owned`` is False for streams wrapped from another library."""

    def __init__(self, device: CudaDevice, handle, profiling: bool, owned: bool,
                 follows_legacy: bool = False):
        self.device, self.handle, self.profiling, self.owned = device, handle, profiling, owned
        # A blocking stream (or a default stream): CUDA orders its work after what was
        # issued earlier to the legacy default stream (and the legacy stream's after its).
        self.follows_legacy = follows_legacy
        # The token of every plain (event-less) command: all of them mean "wait for the
        # stream", so one object serves them all.
        self.plain_token = CudaToken(self)
        self.base_event = None
        self.base_ns = 0
        if profiling:
            # Host time of a completed reference event: event times become
            # base_ns + elapsed(base_event, e), on the host's perf_counter clock.
            self.base_event = _call(cu.cuEventCreate, cu.CUevent_flags.CU_EVENT_DEFAULT)
            _call(cu.cuEventRecord, self.base_event, handle)
            _call(cu.cuEventSynchronize, self.base_event)
            self.base_ns = time.perf_counter_ns()

    def timing_event(self):
        ev = self.device.new_event(True)
        _call(cu.cuEventRecord, ev, self.handle)
        return ev

    @property
    def ptr(self) -> int:
        return int(self.handle)

    def ordered_after(self, producer: int) -> bool:
        """Whether work issued now follows, without an event, the work issued so far to
        another library's stream ``producer`` (``__cuda_array_interface__`` terms: 1 and
        2 are the legacy and per-thread default streams): it is this stream, or the
        legacy stream and this stream is a blocking one."""
        return producer == (int(self.handle) or 1) or producer == 1 and self.follows_legacy


class CudaToken:
    """Completion of enqueued work. ``end`` is an event, or None (then the stream is waited)."""

    __slots__ = ("stream", "start", "end", "submit_ns")

    def __init__(self, stream: CudaStream, start=None, end=None, submit_ns: int = 0):
        self.stream, self.start, self.end, self.submit_ns = stream, start, end, submit_ns

    def wait(self) -> None:
        if self.end is not None:
            _call(cu.cuEventSynchronize, self.end)
        else:
            _call(cu.cuStreamSynchronize, self.stream.handle)

    def is_complete(self) -> bool:
        err = (cu.cuEventQuery(self.end) if self.end is not None
               else cu.cuStreamQuery(self.stream.handle))[0]
        if err == cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        if err != 0:
            _fail(err, "query")
        return True

    def profiling_ns(self) -> tuple[int, int, int]:
        """(submit, start, end) in ns on the host's ``perf_counter`` clock; waits first.
        Raises ``errc.profiling`` unless the stream was created with profiling."""
        if self.start is None or self.stream.base_event is None:
            raise exception(errc.profiling, "the queue was not created with "
                            "property::queue::enable_profiling")
        self.wait()
        start_ms = _call(cu.cuEventElapsedTime, self.stream.base_event, self.start)
        run_ms = _call(cu.cuEventElapsedTime, self.start, self.end)
        # float ms from the base lose precision over hours; the run time is measured
        # directly between its own two events so it keeps its 0.5 us resolution.
        start = max(self.stream.base_ns + int(start_ms * 1e6), self.submit_ns)
        return self.submit_ns, start, start + int(run_ms * 1e6)


# -- memory -----------------------------------------------------------------------------
class CudaAllocation:
    """USM memory: ``ptr`` is a unified virtual address usable by kernels and copies."""

    __slots__ = ("ptr", "nbytes", "kind", "device", "_view", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, kind: str, device: CudaDevice):
        self.ptr, self.nbytes, self.kind, self.device = ptr, nbytes, kind, device
        self._view = None

    def host_view(self) -> memoryview | None:
        """The bytes as a writable memoryview for ``host`` and ``shared`` memory (valid
        once the work that writes them has completed); None for ``device``."""
        if self.kind not in ("host", "shared") or not self.ptr:
            return None
        if self._view is None:
            self._view = memoryview((ctypes.c_char * self.nbytes).from_address(self.ptr)).cast("B")
        return self._view

    def __int__(self) -> int:
        return self.ptr

    def __repr__(self) -> str:
        return f"CudaAllocation({self.kind}, {self.nbytes} bytes at {self.ptr:#x})"


def _host_address(obj, writable: bool) -> tuple[int, int, Any]:
    """(address, nbytes, keep-alive) of a C-contiguous host buffer."""
    arr = obj if isinstance(obj, np.ndarray) else np.frombuffer(obj, dtype=np.uint8)
    if not arr.flags.c_contiguous:
        raise exception(errc.invalid, "host memory for a copy must be C-contiguous")
    if writable and not arr.flags.writeable:
        raise exception(errc.invalid, "the destination of a copy is read-only")
    return arr.ctypes.data, arr.nbytes, arr


# -- code -------------------------------------------------------------------------------
class CudaProgram:
    """A loaded PTX module and its kernels."""

    def __init__(self, device: CudaDevice, module, kernel_names: Sequence[str], jit_log: str):
        self.device, self.module, self.jit_log = device, module, jit_log
        self.kernels: dict[str, CudaKernel] = {}
        self._globals: dict[str, tuple[int, int]] = {}
        for name in kernel_names:
            err, fn = cu.cuModuleGetFunction(module, ptx_symbol(name).encode())
            if err != 0:
                raise exception(errc.invalid, f"kernel {name!r} is not in the loaded image "
                                f"({_error_text(err)})")
            self.kernels[name] = CudaKernel(self, name, fn)

    def global_symbol(self, name: str) -> tuple[int, int]:
        """(device address, size) of a module-scope variable (a device global)."""
        found = self._globals.get(name)
        if found is None:
            self.device.activate()
            err, ptr, size = cu.cuModuleGetGlobal(self.module, name.encode())
            if err != 0:
                raise exception(errc.invalid, f"device global {name!r} is not in the image "
                                f"({_error_text(err)})")
            found = self._globals[name] = (int(ptr), int(size))
        return found


class _ArgPacker:
    """Packs one kernel's KernelArg list into a fixed ctypes buffer + void*[] array."""

    __slots__ = ("kinds", "struct", "storage", "pointers", "params", "pack", "holds")

    _SLOT = {_MEM: ("Q", 8), _LOCAL: ("I", 4)}

    def __init__(self, args: Sequence[KernelArg], remembers: bool = False):
        """``remembers``: ``pack`` keeps (weakly) what it packed, for ``holds`` (a bound
        launch's records); else ``holds`` is always False."""
        fmt, offsets, offset = ["<"], [], 0
        for a in args:
            if a.kind in self._SLOT:
                code, size = self._SLOT[a.kind]
            else:
                size = len(a.value)
                code = f"{size}s"
            align = size if size in (1, 2, 4, 8) else 8
            pad = -offset % align
            fmt.append("x" * pad + code)
            offset += pad
            offsets.append(offset)
            offset += size
        self.kinds = tuple(a.kind for a in args)
        self.struct = struct.Struct("".join(fmt))
        self.storage = (ctypes.c_char * max(self.struct.size, 8))()
        base = ctypes.addressof(self.storage)
        self.pointers = (ctypes.c_void_p * max(len(args), 1))(*[base + o for o in offsets])
        self.params = ctypes.addressof(self.pointers) if args else 0
        self.pack = self._generate_pack(remembers)

    def sizes(self) -> list[int]:
        return [8 if k is _MEM else 4 if k is _LOCAL else 0 for k in self.kinds]

    def location(self) -> dict:
        """Where the parameters live, as a launch record names it (``launch_call.py``)."""
        return {"storage": ctypes.addressof(self.storage),
                "storage_bytes": ctypes.sizeof(self.storage),
                "pointers": ctypes.addressof(self.pointers), "count": len(self.kinds)}

    def _generate_pack(self, remembers: bool):
        """``pack(args, scratch_bytes) -> dynamic shared bytes``: straight-line code made
        for this signature (no per-argument kind dispatch at launch; half the Python
        time of a generic loop, measured with five arguments)."""
        lines, names = ["def pack(args, scratch_bytes):"], []
        n = len(self.kinds)
        remembers = remembers and n and _LOCAL not in self.kinds
        if n:
            lines.append(f"    {', '.join(f'a{i}' for i in range(n))}, = args")
        if remembers:   # (what ``holds`` compares with, weakly)
            lines.append("    LAST[0] = tuple(map(REF, args)); LAST[1] = scratch_bytes")
        lines.append("    end = (scratch_bytes + ALIGN - 1) & -ALIGN")
        for i, kind in enumerate(self.kinds):
            if kind is _MEM:
                lines.append(f"    v{i} = a{i}.value")
                lines.append(f"    if v{i}.__class__ is not int: v{i} = 0 if v{i} is None else v{i}.ptr")
            elif kind is _LOCAL:
                lines.append(f"    v{i} = end; end = (end + a{i}.value + ALIGN - 1) & -ALIGN")
            else:
                lines.append(f"    v{i} = a{i}.value")
            names.append(f"v{i}")
        lines.append(f"    pack_into(storage, 0, {', '.join(names)})")
        lines.append("    return end if end > scratch_bytes else scratch_bytes")
        # ``holds(args, scratch_bytes)``: the buffer holds these arguments already, the
        # same KernelArg objects as the last ``pack`` (a launch loop's). KernelArgs are
        # immutable, and compared by identity (equality compares their fields, which
        # costs more than packing when they differ) through weak references: a freed
        # array's memory goes with its KernelArg.
        lines.append("def holds(args, scratch_bytes):")
        if remembers:
            same = " and ".join(f"args[{i}] is last[{i}]()" for i in range(n))
            lines += ["    last = LAST[0]",
                      f"    return last is not None and len(args) == {n} and {same} and "
                      "scratch_bytes == LAST[1]"]
        else:
            lines.append("    return False")
        scope = {"ALIGN": LOCAL_ARG_ALIGN, "pack_into": self.struct.pack_into,
                 "storage": self.storage, "LAST": [None, None], "REF": weakref.ref}
        # Code built above from argument kinds only; named for tracebacks.
        kinds = ",".join(k.name for k in self.kinds)
        scope = define(lines, f"<pysycl CUDA argument packer ({kinds})>", scope)
        self.holds = scope["holds"]
        return scope["pack"]


class _Slot:
    """One launch record of a bound launch (``launch_call.RECORD``) with its own
    parameter buffer: the packer, the builtin that launches from it, and the last
    launch's ``(global size, local size, dynamic shared bytes, geometry)``."""

    __slots__ = ("record", "call", "packer", "last")

    def __init__(self, made):
        self.record = RECORD()
        self.reset(made)

    def reset(self, made) -> None:
        """Made anew (and its record written at the next launch) now that ``made``
        (``launch_call()``) is known."""
        self.call = made[0](self.record) if made and made[0] else None
        self.packer = None
        self.last = (None, None, None, None)


class CudaKernel:
    """One ``CUfunction`` with its cached argument packer and launch geometries."""

    def __init__(self, program: CudaProgram, name: str, function):
        self.program, self.name, self.function = program, name, function
        self._packer: _ArgPacker | None = None
        self._geometry: dict[tuple, tuple[int, ...]] = {}
        self._dynamic_limit = -1        # bytes of dynamic shared memory allowed so far
        self._lock = threading.Lock()

    def attribute(self, attr: str) -> int:
        """A ``CU_FUNC_ATTRIBUTE_*`` value (e.g. ``"NUM_REGS"``, ``"SHARED_SIZE_BYTES"``)."""
        return _call(cu.cuFuncGetAttribute,
                     getattr(cu.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{attr}"), self.function)

    def _make_packer(self, args: Sequence[KernelArg], remembers: bool = False) -> _ArgPacker:
        """A packer of ``args``' kinds, checked against the kernel's PTX signature
        (``remembers``: see :class:`_ArgPacker`)."""
        packer = _ArgPacker(args, remembers)
        fixed = packer.sizes()
        for i, a in enumerate(args):     # one-time ABI check against the PTX signature
            err, _offset, size = cu.cuFuncGetParamInfo(self.function, i)
            if err != 0:
                raise exception(errc.kernel_argument, f"kernel {self.name!r} takes {i} "
                                f"arguments, {len(args)} were given")
            want = fixed[i] or len(a.value)
            if size != want:
                raise exception(errc.kernel_argument, f"kernel {self.name!r}: argument {i} "
                                f"({a.kind.name}) has {want} bytes, the PTX parameter {size}")
        if cu.cuFuncGetParamInfo(self.function, len(args))[0] == 0:
            raise exception(errc.kernel_argument, f"kernel {self.name!r} takes more than "
                            f"the {len(args)} arguments given")
        return packer

    def _grid(self, global_size: Sequence[int], local_size: Sequence[int] | None):
        key = (global_size if global_size.__class__ is tuple else tuple(global_size),
               local_size if local_size is None or local_size.__class__ is tuple
               else tuple(local_size) or None)
        geometry = self._geometry.get(key)
        if geometry is None:
            geometry = self._geometry[key] = _geometry(*key, self.program.device)
        return geometry

    def _allow_dynamic_shared(self, nbytes: int) -> None:
        static = self.attribute("SHARED_SIZE_BYTES")
        limit = _limits(self.program.device)["shared_optin"]
        if static + nbytes > limit:
            raise exception(errc.memory_allocation, f"kernel {self.name!r} needs "
                            f"{static + nbytes} bytes of local memory; the device has {limit}")
        if static + nbytes > _DEFAULT_DYNAMIC_SHARED:
            _call(cu.cuFuncSetAttribute, self.function, cu.CUfunction_attribute.
                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)
        self._dynamic_limit = nbytes

    def launch(self, stream: CudaStream, global_size, local_size, args, scratch_bytes=0):
        gx, gy, gz, bx, by, bz = self._grid(global_size, local_size)
        ctx = self.program.device._ctx
        with self._lock:
            if getattr(_tls, "ctx", None) is not ctx:
                _activate(ctx)
            packer = self._packer
            if packer is None or len(packer.kinds) != len(args):
                packer = self._packer = self._make_packer(args)
            shared = packer.pack(args, scratch_bytes)
            if shared > self._dynamic_limit:
                self._allow_dynamic_shared(shared)
            if stream.profiling:
                submit = time.perf_counter_ns()
                start = stream.timing_event()
            # An empty range (SYCL allows it) runs nothing; CUDA refuses a 0 grid.
            err = cu.cuLaunchKernel(self.function, gx, gy, gz, bx, by, bz, shared,
                                    stream.handle, packer.params, 0)[0] if gx * gy * gz else 0
        if err != 0:
            _fail(err, f"launch of kernel {self.name!r} (grid {gx}x{gy}x{gz}, "
                  f"block {bx}x{by}x{bz}, {shared} B local)")
        if stream.profiling:
            return _EventToken(stream, start, stream.timing_event(), submit)
        return stream.plain_token

    def bound(self, stream: CudaStream, trailing: KernelArg):
        """``launch(global_size, local_size, args, scratch_bytes)`` on ``stream``: what
        :meth:`launch` does, with the stream, function and context looked up once (the
        runtime's fast path of an already-launched kernel). ``global_size`` and
        ``local_size`` are tuples (or None); ``trailing`` is appended to ``args`` (the
        caller's list, which it gives up). A profiling stream takes :meth:`launch`.

        Its ``replay`` is ``[call, version, id(args)]`` after a launch made through
        ``launch_call.py`` with the same KernelArgs as an earlier one still in its
        record (else ``[None, 0, 0]``): ``call(version)`` makes that launch again, same
        geometry and parameter bytes, while no launch through this function rewrote
        that record since (returns 0, or nonzero without launching: see ``Driver.
        bind_launch``). Its parameters live in buffers of its own, written only here."""
        if stream.profiling:
            def launch_profiled(global_size, local_size, args, scratch_bytes=0):
                args.append(trailing)
                return self.launch(stream, global_size, local_size, args, scratch_bytes)
            launch_profiled.replay = list(_NO_REPLAY)
            return launch_profiled
        fn, handle, ctx = self.function, stream.handle, self.program.device._ctx
        token, grid, tls, launch_kernel = stream.plain_token, self._grid, _tls, cu.cuLaunchKernel
        acquire, release = self._lock.acquire, self._lock.release
        # (make, cuLaunchKernel, cuCtxGetCurrent), None until made; launches on stream 0
        # never take it (see launch_call.make_launch_call).
        made = [launch_call() if int(handle) else (None, 0, 0)]
        # Two records, the most recently used first: a loop whose launches alternate
        # two sets of arguments (a stencil's two buffers) finds each one's bytes in
        # place and can make either launch again.
        slots = [_Slot(made[0]), _Slot(made[0])]
        replay = list(_NO_REPLAY)
        versions = itertools.count(1)

        def launch(global_size, local_size, args, scratch_bytes=0):
            args.append(trailing)
            acquire()      # one launch at a time writes the records
            try:
                if made[0] is None:
                    made[0] = launch_call()
                    if made[0] is not None:
                        for slot in slots:
                            slot.reset(made[0])
                if getattr(tls, "ctx", None) is not ctx:
                    _activate(ctx)
                slot = slots[0]
                packer = slot.packer
                repeated = packer is not None and packer.holds(args, scratch_bytes)
                if not repeated:
                    slots.reverse()   # the other record: the least recently used
                    slot = slots[0]
                    packer = slot.packer
                    repeated = packer is not None and packer.holds(args, scratch_bytes)
                call, record = slot.call, slot.record
                if call is not None:
                    record[_VERSION] = 0   # no launch again from it while it is rewritten
                if packer is None or len(packer.kinds) != len(args):
                    packer = slot.packer = self._make_packer(args, remembers=True)
                    slot.last = (None, None, None, None)
                    if call is not None:
                        _write(record, launch=made[0][1], function=int(fn),
                               stream=int(handle), context=int(ctx),
                               get_context=made[0][2], **packer.location())
                shared = scratch_bytes if repeated else packer.pack(args, scratch_bytes)
                last = slot.last
                if global_size is last[0] and local_size is last[1] and shared == last[2]:
                    geometry = last[3]
                else:
                    if shared > self._dynamic_limit:
                        self._allow_dynamic_shared(shared)
                    geometry = grid(global_size, local_size)
                    if call is not None:
                        record[_GEOMETRY:_GEOMETRY + 7] = (*geometry, shared)
                    slot.last = (global_size, local_size, shared, geometry)
                # An empty range (SYCL allows it) runs nothing; CUDA refuses a 0 grid.
                if not geometry[0] * geometry[1] * geometry[2]:
                    err = 0
                    replay[:] = _NO_REPLAY
                elif call is not None:
                    version = record[_VERSION] = next(versions)
                    err = call(version)
                    if err == _REFUSED:   # another library made its context current here
                        _call(cu.cuCtxSetCurrent, ctx)
                        tls.ctx = ctx
                        err = call(version)
                    # (The caller's list names its launch: ``id`` of an object it holds.)
                    replay[:] = (call, version, id(args)) if repeated and not err else \
                        _NO_REPLAY
                else:
                    err = launch_kernel(fn, *geometry, shared, handle, packer.params, 0)[0]
            finally:
                release()
            if err:
                gx, gy, gz, bx, by, bz = geometry
                _fail(_result(err), f"launch of kernel {self.name!r} (grid "
                      f"{gx}x{gy}x{gz}, block {bx}x{by}x{bz}, {shared} B local)")
            return token
        launch.replay = replay
        return launch


def _write(record, **fields) -> None:
    for name, value in fields.items():
        record[WORD[name]] = value


_GEOMETRY, _VERSION = WORD["gx"], WORD["version"]
_REFUSED = -1   # what a launch call returns when it launched nothing
_NO_REPLAY = (None, 0, 0)
assert FIELDS[_GEOMETRY:_GEOMETRY + 7] == ("gx", "gy", "gz", "bx", "by", "bz", "shared")


def _largest_divisor(n: int, cap: int) -> int:
    for d in range(min(n, cap), 0, -1):
        if n % d == 0:
            return d
    return 1


def _default_block(global_size: tuple) -> tuple:
    """The work-group of a ``range`` launch: 256 threads, enough warps per block to
    hide latency on every sm_50+ GPU while leaving room for several blocks per SM. A
    multi-dimensional range gets a tile: a warp's width (32) along the last SYCL
    dimension (CUDA x, contiguous in memory), the rest across the others, then any room
    left back to x. Work-items of a block that are neighbours in every direction share
    the cache lines a stencil reads (3x3 convolution of 8192x8192 floats, H200: 327 us
    with 8x32 blocks, 338 us with 1x256)."""
    dims = len(global_size)
    local, room = [1] * dims, 256
    local[-1] = _largest_divisor(global_size[-1], 32 if dims > 1 else room)
    room //= local[-1]
    for i in reversed(range(dims - 1)):
        local[i] = _largest_divisor(global_size[i], room)
        room //= local[i]
    if room > 1:
        local[-1] = _largest_divisor(global_size[-1], local[-1] * room)
    return tuple(local)


def _geometry(global_size: tuple, local_size: tuple | None, device: CudaDevice):
    """(grid x, y, z, block x, y, z); SYCL dimension i is CUDA axis D-1-i (target.py)."""
    dims = len(global_size)
    if not 1 <= dims <= 3:
        raise exception(errc.nd_range, f"a range has 1 to 3 dimensions, not {dims}")
    if local_size is None:
        local_size = _default_block(global_size)
    if len(local_size) != dims:
        raise exception(errc.nd_range, f"local range {local_size} does not match the "
                        f"global range {global_size}")
    for g, l in zip(global_size, local_size):
        if l <= 0 or g % l:
            raise exception(errc.nd_range, f"global range {global_size} is not a multiple "
                            f"of the local range {local_size}")
    threads = 1
    for l in local_size:
        threads *= l
    limit = _limits(device)["max_threads"]
    if threads > limit:
        raise exception(errc.nd_range, f"work-group of {threads} work-items; the device "
                        f"allows {limit}")
    grid = [g // l for g, l in zip(global_size, local_size)][::-1] + [1] * (3 - dims)
    block = list(local_size)[::-1] + [1] * (3 - dims)
    return (*grid, *block)


_limit_cache: dict[int, dict[str, int]] = {}


def _attr(dev, name: str) -> int:
    return _call(cu.cuDeviceGetAttribute,
                 getattr(cu.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}"), dev)


def _limits(device: CudaDevice) -> dict[str, int]:
    found = _limit_cache.get(device.ordinal)
    if found is None:
        found = _limit_cache[device.ordinal] = {
            "max_threads": _attr(device.cudevice, "MAX_THREADS_PER_BLOCK"),
            "shared_optin": _attr(device.cudevice, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")}
    return found


class _Done:
    """The token of work that completed before the driver returned (``stream=None``)."""

    __slots__ = ()
    end = None
    stream = None

    def wait(self) -> None:
        pass

    def is_complete(self) -> bool:
        return True

    def profiling_ns(self) -> tuple[int, int, int]:
        raise exception(errc.profiling, "a copy made outside any queue has no profiling")


_DONE = _Done()
_POOL_LIMIT = 256


class _EventToken(CudaToken):
    """A token that owns its events and hands them back to the device's pool when it goes.
    Re-recording a recycled event is safe: ``cuStreamWaitEvent`` and ``cuEventSynchronize``
    use the event's state at the time they are called, and this token is gone by then."""

    __slots__ = ("timing",)

    def __init__(self, stream, start, end, submit_ns, timing=True):
        super().__init__(stream, start, end, submit_ns)
        self.timing = timing

    def __del__(self):
        try:
            pool = self.stream.device.event_pools[self.timing]
        except Exception:  # noqa: BLE001 - interpreter shutdown
            return
        for ev in (self.start, self.end):
            if ev is None:
                continue
            if len(pool) < _POOL_LIMIT:
                pool.append(ev)
            elif cu is not None:
                try:
                    cu.cuEventDestroy(ev)
                except Exception:  # noqa: BLE001 - interpreter shutdown
                    pass


def _driver_age_hint() -> str:
    """Why cuInit may fail on a working GPU: a driver older than the bindings' CUDA major."""
    try:
        version = _call(cu.cuDriverGetVersion)
    except Exception:  # noqa: BLE001 - no version either: nothing to add
        return ""
    major = int(_BINDINGS_VERSION.split(".")[0])
    if version // 1000 < major:
        return (f"; the driver supports CUDA {version // 1000}.{version % 1000 // 10} but "
                f"cuda-bindings {_BINDINGS_VERSION} needs a CUDA {major} driver: update the "
                f"driver or pip install 'cuda-bindings<{major}'")
    return ""


# -- the Driver -------------------------------------------------------------------------
class CudaDriver(Driver):
    """:class:`~pysycl.backends.base.Driver` on the CUDA driver API.

    >>> drv = CudaDriver(); devs = drv.discover()          # [] without a GPU
    """

    name = "cuda"
    # A launch's token is (nearly) never complete when launch returns: the runtime issues
    # launches without asking the driver (a cuStreamQuery per launch cost ~1 us), and
    # finds completion when someone asks (event.status, wait).
    launch_tokens_pending = True
    # cuMemAlloc and cuMemAllocManaged align to 256 bytes (pinned host memory to a page).
    alloc_alignment = 256

    def __init__(self):
        # (source ordinal, destination ordinal) -> peer access enabled (peer_access)
        self._peers: dict[tuple[int, int], bool] = {}

    # Discovery ------------------------------------------------------------------------
    def discover(self) -> list[DeviceDescription]:
        """This machine's CUDA devices; never raises. With none, ``absent_reason`` says
        why (``pysycl ls -v`` shows it)."""
        if cu is None:
            self.absent_reason = _IMPORT_PROBLEM
            return []
        try:
            status = cu.cuInit(0)[0]
            if status != 0:
                self.absent_reason = (f"cuInit failed: {getattr(status, 'name', status)}"
                                      f"{_driver_age_hint()}")
                return []
            _fork.started = True
            return [self._describe(i) for i in range(_call(cu.cuDeviceGetCount))]
        except Exception as e:  # noqa: BLE001 - no libcuda, a broken driver: no devices
            self.absent_reason = f"the CUDA driver cannot be used: {type(e).__name__}: {e}"
            return []

    def _describe(self, ordinal: int) -> DeviceDescription:
        dev = _call(cu.cuDeviceGet, ordinal)
        cc = (_attr(dev, "COMPUTE_CAPABILITY_MAJOR"), _attr(dev, "COMPUTE_CAPABILITY_MINOR"))
        handle = CudaDevice(ordinal, dev, cc)
        limits = _limits(handle)
        version = _call(cu.cuDriverGetVersion)
        managed = _attr(dev, "MANAGED_MEMORY")
        # online_compiler / online_linker: bundles compile and link to PTX with llvmlite
        # alone (compiler.py needs no device), so input and object bundles work here.
        aspects = {"gpu", "fp64", "atomic64", "queue_profiling", "usm_device_allocations",
                   "usm_host_allocations", "online_compiler", "online_linker"}
        if cc >= (5, 3):
            aspects.add("fp16")
        if managed:
            aspects.add("usm_shared_allocations")
            if _attr(dev, "CONCURRENT_MANAGED_ACCESS"):
                aspects.add("usm_atomic_shared_allocations")
        return DeviceDescription(
            name=_call(cu.cuDeviceGetName, 256, dev).split(b"\0")[0].decode(),
            vendor="NVIDIA Corporation", backend="cuda", device_type="gpu",
            driver_version=f"{version // 1000}.{version % 1000 // 10}",
            max_compute_units=_attr(dev, "MULTIPROCESSOR_COUNT"),
            max_work_group_size=limits["max_threads"],
            # SYCL order: the last dimension is CUDA's x (target.py)
            max_work_item_sizes=(_attr(dev, "MAX_BLOCK_DIM_Z"), _attr(dev, "MAX_BLOCK_DIM_Y"),
                                 _attr(dev, "MAX_BLOCK_DIM_X")),
            sub_group_sizes=(_attr(dev, "WARP_SIZE"),),
            global_mem_size=int(_call(cu.cuDeviceTotalMem, dev)),
            local_mem_size=limits["shared_optin"],
            aspects=frozenset(aspects), target=cuda_target(cc), handle=handle,
            extra={"compute_capability": cc,
                   "pci_bus_id": _attr(dev, "PCI_BUS_ID"),
                   "l2_cache_size": _attr(dev, "L2_CACHE_SIZE"),
                   "max_grid_size": (_attr(dev, "MAX_GRID_DIM_X"), _attr(dev, "MAX_GRID_DIM_Y"),
                                     _attr(dev, "MAX_GRID_DIM_Z")),
                   "driver_version_raw": version})

    # Memory ---------------------------------------------------------------------------
    def alloc(self, device, nbytes: int, kind: str, *, context: Any = None) -> CudaAllocation:
        # ``context`` is always None: one (primary) context per device.
        dev = _device(device)
        dev.activate()
        n = max(int(nbytes), 1)          # the driver refuses 0-byte allocations
        what = f"allocating {nbytes} bytes of {kind} memory"
        if kind in ("device", "buffer"):
            ptr = _call(cu.cuMemAlloc, n, what=what)
        elif kind == "host":
            # PORTABLE: SYCL host USM belongs to the context, i.e. to every device in it
            ptr = _call(cu.cuMemHostAlloc, n, 0x01, what=what)   # CU_MEMHOSTALLOC_PORTABLE
        elif kind == "shared":
            free, _total = _call(cu.cuMemGetInfo)
            # Managed memory beyond what is free can hang the GPU instead of failing.
            if n > free:
                raise exception(errc.memory_allocation, f"{what}: only {free} bytes are free")
            ptr = _call(cu.cuMemAllocManaged, n, cu.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL,
                        what=what)
        else:
            raise exception(errc.invalid, f"unknown memory kind {kind!r}")
        return CudaAllocation(int(ptr), int(nbytes), kind, dev)

    def free(self, allocation: CudaAllocation) -> None:
        """Release memory; views from ``host_view()`` must not be used afterwards."""
        if not allocation.ptr:
            return
        if _fork.child_of_started:   # the parent's memory: not this process's to free
            allocation.ptr = 0
            return
        allocation.device.activate()
        fn = cu.cuMemFreeHost if allocation.kind == "host" else cu.cuMemFree
        ptr, allocation.ptr, allocation._view = allocation.ptr, 0, None
        _call(fn, ptr)

    @staticmethod
    def _begin(stream: CudaStream):
        _activate(stream.device.context)
        if stream.profiling:
            return time.perf_counter_ns(), stream.timing_event()
        return None

    @staticmethod
    def _done(stream: CudaStream, begun) -> CudaToken:
        if begun is None:
            return stream.plain_token
        return _EventToken(stream, begun[1], stream.timing_event(), begun[0])

    @staticmethod
    def _span(obj, offset: int, nbytes: int, writable: bool) -> tuple[int, Any]:
        if isinstance(obj, CudaAllocation):
            size, addr, keep = obj.nbytes, obj.ptr, None
            if not addr:
                raise exception(errc.invalid, "use of freed USM memory")
        else:
            addr, size, keep = _host_address(obj, writable)
        if offset < 0 or nbytes < 0 or offset + nbytes > size:
            raise exception(errc.invalid, f"copy of {nbytes} bytes at offset {offset} "
                            f"overruns {size} bytes")
        return addr + offset, keep

    def copy(self, stream: CudaStream, dst, dst_offset: int, src, src_offset: int,
             nbytes: int) -> CudaToken:
        """Copy between USM allocations (any kinds) and host buffers (anything with the
        buffer protocol). Copies from pageable host memory return once the data is staged,
        copies into it once they are complete, so the host buffer is free on return."""
        d, keep_d = self._span(dst, dst_offset, nbytes, True)
        s, keep_s = self._span(src, src_offset, nbytes, False)
        d_dev, s_dev = isinstance(dst, CudaAllocation), isinstance(src, CudaAllocation)
        if stream is None:                     # outside any queue: synchronous
            if not (d_dev or s_dev):
                ctypes.memmove(d, s, nbytes)
                return _DONE
            stream = (dst if d_dev else src).device.aux_stream()
            self.copy(stream, dst, dst_offset, src, src_offset, nbytes).wait()
            return _DONE
        if not (d_dev or s_dev):               # host to host: in stream order, on the host
            self.synchronize(stream)
            ctypes.memmove(d, s, nbytes)
            return CudaToken(stream)
        if d_dev and s_dev and dst.device is not src.device and nbytes \
                and dst.kind == src.kind == "device":
            return self._peer_copy(stream, dst, d, src, s, nbytes)
        begun = self._begin(stream)
        if nbytes:
            if d_dev and s_dev:
                res = cu.cuMemcpyAsync(d, s, nbytes, stream.handle)
            elif d_dev:
                res = cu.cuMemcpyHtoDAsync(d, s, nbytes, stream.handle)
            else:
                res = cu.cuMemcpyDtoHAsync(d, s, nbytes, stream.handle)
            if res[0] != 0:
                _fail(res[0], f"copy of {nbytes} bytes")
        del keep_d, keep_s
        return self._copy_done(stream, begun)

    def _peer_copy(self, stream: CudaStream, dst, d: int, src, s: int, nbytes: int):
        """Device memory of one GPU to another's, in stream order: straight over the
        link where the pair can reach each other (access enabled once per pair, see
        :meth:`peer_access`), else staged through host memory by the driver, which
        pipelines the two halves (measured on two H200s: about 37 GB/s staged, 390 GB/s
        over NVLink)."""
        self.peer_access(src.device, dst.device)
        begun = self._begin(stream)
        self._ok(cu.cuMemcpyPeerAsync(d, dst.device.context, s, src.device.context,
                                      nbytes, stream.handle), f"peer copy of {nbytes} bytes")
        return self._copy_done(stream, begun)

    def _copy_done(self, stream: CudaStream, begun) -> CudaToken:
        """A copy's token: an event of its own, so waiting for a copy (halo rows, say)
        does not wait for kernels queued behind it, as a stream's token would; launches
        keep the stream token, which costs no event on the launch path."""
        return self.record_event(stream) if begun is None else self._done(stream, begun)

    def peer_access(self, src: CudaDevice, dst: CudaDevice) -> bool:
        """Whether ``dst``'s context may read ``src``'s memory directly: asked of the
        driver once per ordered pair and enabled then (``PYSYCL_CUDA_PEER_ACCESS=0``:
        never)."""
        key = (src.ordinal, dst.ordinal)
        known = self._peers.get(key)
        if known is None:
            known = config.cuda_peer_access() and bool(
                _call(cu.cuDeviceCanAccessPeer, dst.cudevice, src.cudevice))
            if known:
                _activate(dst.context)
                err, = cu.cuCtxEnablePeerAccess(src.context, 0)
                already = cu.CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
                known = err == 0 or err == already
            self._peers[key] = known
        return known

    def copy_rect(self, stream: CudaStream, dst, dst_rect, src, src_rect, region):
        """A box with device memory on one side: one cuMemcpy2DAsync per slice (device
        and USM sides by unified address, host buffers as host memory)."""
        width, rows, slices = region
        d_dev, s_dev = isinstance(dst, CudaAllocation), isinstance(src, CudaAllocation)
        if not (d_dev or s_dev) or not (width and rows and slices):
            return super().copy_rect(stream, dst, dst_rect, src, src_rect, region)
        if stream is None:                     # outside any queue: synchronous
            stream = (dst if d_dev else src).device.aux_stream()
            self.copy_rect(stream, dst, dst_rect, src, src_rect, region).wait()
            return _DONE
        d, keep_d = self._span(dst, dst_rect[0], rect_extent(dst_rect, region), True)
        s, keep_s = self._span(src, src_rect[0], rect_extent(src_rect, region), False)
        unified, host = cu.CUmemorytype.CU_MEMORYTYPE_UNIFIED, cu.CUmemorytype.CU_MEMORYTYPE_HOST
        begun = self._begin(stream)
        for k in range(slices):
            p = cu.CUDA_MEMCPY2D()
            if d_dev:
                p.dstMemoryType, p.dstDevice = unified, d + k * dst_rect[2]
            else:
                p.dstMemoryType, p.dstHost = host, d + k * dst_rect[2]
            if s_dev:
                p.srcMemoryType, p.srcDevice = unified, s + k * src_rect[2]
            else:
                p.srcMemoryType, p.srcHost = host, s + k * src_rect[2]
            p.dstPitch, p.srcPitch = dst_rect[1], src_rect[1]
            p.WidthInBytes, p.Height = width, rows
            self._ok(cu.cuMemcpy2DAsync(p, stream.handle), f"copy of a {region} byte box")
        del keep_d, keep_s
        return self._done(stream, begun)

    def fill(self, stream: CudaStream, dst, offset: int, pattern: bytes, nbytes: int) -> CudaToken:
        """Repeat ``pattern`` over ``nbytes`` (a multiple of its length): one word of
        device memory by a stream write (:meth:`_write_word`), else cuMemsetD8/16/32 for
        1-, 2- and 4-byte patterns, one strided cuMemsetD2D32 per 4-byte word for longer
        ones, a staged host copy otherwise."""
        if pattern.__class__ is not bytes:
            pattern = bytes(pattern)
        k = len(pattern)
        if not k or nbytes % k:
            raise exception(errc.invalid, f"fill of {nbytes} bytes with a {k}-byte pattern")
        if not isinstance(dst, CudaAllocation):
            if stream is not None:
                self.synchronize(stream)
            view = memoryview(dst).cast("B")
            view[offset:offset + nbytes] = pattern * (nbytes // k)
            return CudaToken(stream) if stream is not None else _DONE
        if stream is None:                     # outside any queue: synchronous
            self.fill(dst.device.aux_stream(), dst, offset, pattern, nbytes).wait()
            return _DONE
        addr, _ = self._span(dst, offset, nbytes, True)
        begun = self._begin(stream)
        if nbytes:
            self._fill_span(stream.handle, addr, dst.kind, pattern, nbytes)
        return self._done(stream, begun)

    def _fill_span(self, h, addr: int, kind: str, pattern: bytes, nbytes: int) -> None:
        """Issue the fill of ``nbytes`` (> 0) at ``addr`` on stream ``h``, the cheapest way
        the pattern, the alignment and the memory kind allow."""
        k = len(pattern)
        count = nbytes // k
        if nbytes in (4, 8) and kind != "shared" and addr % nbytes == 0 and \
                self._write_word(h, addr, pattern * count):
            return
        if pattern == pattern[:1] * k:
            self._ok(cu.cuMemsetD8Async(addr, pattern[0], nbytes, h), "memset")
        elif k == 2 and addr % 2 == 0:
            self._ok(cu.cuMemsetD16Async(addr, int.from_bytes(pattern, "little"), count, h),
                     "memset")
        elif k % 4 == 0 and addr % 4 == 0:
            words = [int.from_bytes(pattern[i:i + 4], "little") for i in range(0, k, 4)]
            if len(set(words)) == 1:
                self._ok(cu.cuMemsetD32Async(addr, words[0], nbytes // 4, h), "memset")
            else:
                for j, word in enumerate(words):
                    self._ok(cu.cuMemsetD2D32Async(addr + 4 * j, k, word, 1, count, h),
                             "memset")
        else:
            staged = pattern * count     # HtoD from pageable memory is staged before return
            self._ok(cu.cuMemcpyHtoDAsync(addr, staged, nbytes, h), "fill")

    @staticmethod
    def _write_word(handle, addr: int, word: bytes) -> bool:
        """Write one 4- or 8-byte ``word`` at ``addr`` (device memory, aligned) in stream
        order with a stream memory operation, which the GPU's front end carries out where
        a memset is a kernel of its own (a reduction's identity); False where the driver
        does not take them (then never asked again)."""
        if not _stream_writes[0]:
            return False
        write = cu.cuStreamWriteValue32 if len(word) == 4 else cu.cuStreamWriteValue64
        err = write(handle, addr, int.from_bytes(word, "little"), 0)[0]
        if err == cu.CUresult.CUDA_ERROR_NOT_SUPPORTED:
            _stream_writes[0] = False
            return False
        if err:
            _fail(err, "write of a word to device memory")
        return True

    @staticmethod
    def _ok(res, what: str) -> None:
        if res[0] != 0:
            _fail(res[0], what)

    # Code -----------------------------------------------------------------------------
    def load(self, device, binary: bytes, kernel_names: Sequence[str],
             spec_constants: Mapping[int, bytes] | None = None, *,
             device_global_ids: Sequence[str] = (), code_cache: Any = None,
             context: Any = None) -> CudaProgram:
        """Load PTX (JIT-compiled by the driver for this GPU); the JIT's error log becomes
        the ``errc.build`` message."""
        if spec_constants:
            raise exception(errc.feature_not_supported, "PTX has no native specialization "
                            "constants: build CUDA images in literal or emulated mode")
        dev = _device(device)
        dev.activate()
        image = bytes(binary)
        if not image.endswith(b"\0"):
            image += b"\0"
        error_log, info_log = bytearray(16384), bytearray(16384)
        opt = cu.CUjit_option
        options = [opt.CU_JIT_ERROR_LOG_BUFFER, opt.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                   opt.CU_JIT_INFO_LOG_BUFFER, opt.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES]
        values = [error_log, len(error_log), info_log, len(info_log)]
        err, module = cu.cuModuleLoadDataEx(image, len(options), options, values)
        if err != 0:
            log = bytes(error_log).split(b"\0", 1)[0].decode(errors="replace").strip()
            raise exception(_ERRC.get(err.name, errc.build), f"the CUDA driver could not "
                            f"load the PTX of {', '.join(kernel_names)}: {_error_text(err)}"
                            + (f"\n{log}" if log else ""))
        jit_log = bytes(info_log).split(b"\0", 1)[0].decode(errors="replace").strip()
        return CudaProgram(dev, module, kernel_names, jit_log)

    def unload(self, program: CudaProgram) -> None:
        if program.module is not None:
            program.device.activate()
            module, program.module = program.module, None
            _call(cu.cuModuleUnload, module)

    def kernel(self, program: CudaProgram, kernel_name: str) -> CudaKernel:
        """The kernel object; ``kernel.launch(stream, global, local, args, scratch)`` is
        :meth:`launch` without the name lookup (what a cached launcher holds)."""
        try:
            return program.kernels[kernel_name]
        except KeyError:
            raise exception(errc.invalid, f"kernel {kernel_name!r} was not loaded; the image "
                            f"has {sorted(program.kernels)}") from None

    def launch(self, stream: CudaStream, program: CudaProgram, kernel_name: str,
               global_size: Sequence[int], local_size: Sequence[int] | None,
               args: Sequence[KernelArg], local_mem_bytes: int = 0) -> CudaToken:
        """``local_mem_bytes``: kernel scratch at offset 0 of the dynamic local buffer,
        before the ``local`` arguments (target.py)."""
        return self.kernel(program, kernel_name).launch(stream, global_size, local_size,
                                                        args, local_mem_bytes)

    def bind_launch(self, stream: CudaStream, program: CudaProgram, kernel_name: str,
                    trailing: KernelArg):
        """:meth:`launch` of one kernel on one stream with everything looked up once:
        ``launch(global_size, local_size, args, local_mem_bytes)`` (see
        :meth:`CudaKernel.bound`)."""
        return self.kernel(program, kernel_name).bound(stream, trailing)

    # Device globals ---------------------------------------------------------------------
    def device_global(self, program: CudaProgram, name: str) -> CudaAllocation:
        """A non-owning device allocation over a module-scope variable (never free it)."""
        ptr, size = program.global_symbol(name)
        return CudaAllocation(ptr, size, "device", program.device)

    def read_global(self, stream: CudaStream, program: CudaProgram, name: str, dst,
                    offset: int = 0, nbytes: int | None = None) -> CudaToken:
        var = self.device_global(program, name)
        n = var.nbytes - offset if nbytes is None else nbytes
        return self.copy(stream, dst, 0, var, offset, n)

    def write_global(self, stream: CudaStream, program: CudaProgram, name: str, src,
                     offset: int = 0) -> CudaToken:
        var = self.device_global(program, name)
        return self.copy(stream, var, offset, src, 0, memoryview(src).nbytes)

    def read_device_global(self, stream: CudaStream, program: CudaProgram, symbol: str,
                           offset: int, out: memoryview) -> None:
        self.read_global(stream, program, symbol, out, offset, out.nbytes).wait()

    def write_device_global(self, stream: CudaStream, program: CudaProgram, symbol: str,
                            offset: int, data: memoryview) -> None:
        self.write_global(stream, program, symbol, data, offset).wait()

    # Streams and events -----------------------------------------------------------------
    def create_stream(self, device, profiling: bool, *, context: Any = None) -> CudaStream:
        """A blocking stream, as ``cudaStreamCreate`` and CuPy's streams make: a queue's
        work is ordered with what CuPy, PyTorch and others issue to CUDA's legacy default
        stream (their default), both ways, as that library's own streams are."""
        dev = _device(device)
        dev.activate()
        handle = _call(cu.cuStreamCreate, cu.CUstream_flags.CU_STREAM_DEFAULT.value)
        return CudaStream(dev, handle, profiling, owned=True, follows_legacy=True)

    def wrap_stream(self, device, handle: int, profiling: bool = False) -> CudaStream:
        """Use a stream made elsewhere (``torch.cuda.Stream.cuda_stream``, CuPy's ``ptr``);
        it is not destroyed by :meth:`destroy_stream`."""
        dev = _device(device)
        dev.activate()
        handle = int(handle)
        stream = cu.CUstream(handle)
        if handle in (0, 1, 2):   # the legacy and per-thread default streams
            follows = True
        else:
            flags = _call(cu.cuStreamGetFlags, stream)
            follows = not int(flags) & cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value
        return CudaStream(dev, stream, profiling, owned=False, follows_legacy=follows)

    def destroy_stream(self, stream: CudaStream) -> None:
        stream.device.activate()
        if stream.base_event is not None:
            _call(cu.cuEventDestroy, stream.base_event)
            stream.base_event = None
        if stream.owned and stream.handle is not None:
            handle, stream.handle = stream.handle, None
            _call(cu.cuStreamDestroy, handle)

    def synchronize(self, stream: CudaStream) -> None:
        if _fork.child_of_started:
            raise fork_error("CUDA")
        _call(cu.cuStreamSynchronize, stream.handle, what="waiting for the queue")

    def record_event(self, stream: CudaStream, timing: bool = False) -> CudaToken:
        """An event at this point of the stream: exact completion of everything enqueued
        so far (timing events can be compared with :meth:`elapsed_ns`)."""
        _activate(stream.device.context)
        ev = stream.device.new_event(timing)
        _call(cu.cuEventRecord, ev, stream.handle)
        return _EventToken(stream, None, ev, time.perf_counter_ns(), timing)

    def wait_event(self, stream: CudaStream, token: CudaToken) -> None:
        """Make ``stream`` wait (on the device) for ``token``; a token without an event
        from another stream is waited for on the host."""
        if token.end is not None:
            _activate(stream.device.context)
            _call(cu.cuStreamWaitEvent, stream.handle, token.end, 0)
        elif token.stream is not stream:
            token.wait()

    # Interop --------------------------------------------------------------------------
    def pointer_ordinal(self, ptr: int) -> int | None:
        """The ordinal of the GPU that owns CUDA memory at ``ptr`` (device or managed
        memory), or None for pinned host memory. ``errc.invalid`` when ``ptr`` is no
        CUDA memory at all. (The device is found through the memory's context:
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL read 0 for a second GPU's memory on a
        CUDA 13 driver.)"""
        attr = cu.CUpointer_attribute
        err, mtype = cu.cuPointerGetAttribute(attr.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr)
        if err != 0:
            raise exception(errc.invalid, f"address {ptr:#x} is not CUDA memory "
                            f"({_error_text(err)})")
        if int(mtype) == int(cu.CUmemorytype.CU_MEMORYTYPE_HOST):
            return None
        err, ctx = cu.cuPointerGetAttribute(attr.CU_POINTER_ATTRIBUTE_CONTEXT, ptr)
        if err == 0 and int(ctx):
            _call(cu.cuCtxPushCurrent, ctx)
            try:
                return int(_call(cu.cuCtxGetDevice))
            finally:
                _call(cu.cuCtxPopCurrent)
        err, ordinal = cu.cuPointerGetAttribute(attr.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)
        return int(ordinal) if err == 0 else None

    def wait_foreign_stream(self, stream: CudaStream, handle: int) -> None:
        """Make ``stream`` wait, on the GPU, for the work issued so far to another
        library's stream ``handle`` (1 and 2: the legacy and per-thread default streams),
        as ``__cuda_array_interface__`` v3 asks of a consumer. A stream with nothing
        left to run needs no event (a launch loop over another library's arrays, which
        that library is not using meanwhile, costs one query per launch)."""
        _activate(stream.device.context)
        producer = _foreign_streams.get(handle)
        if producer is None:
            if len(_foreign_streams) > 256:
                _foreign_streams.clear()
            producer = _foreign_streams[handle] = cu.CUstream(int(handle))
        err = cu.cuStreamQuery(producer)[0]
        if err == 0:
            return
        if err != cu.CUresult.CUDA_ERROR_NOT_READY:
            _fail(err, "query of another library's stream")
        ev = stream.device.new_event(False)
        _call(cu.cuEventRecord, ev, producer)
        _call(cu.cuStreamWaitEvent, stream.handle, ev, 0)
        # cuStreamWaitEvent uses the event's state at the call: it can be reused at once.
        stream.device.event_pools[False].append(ev)

    @staticmethod
    def elapsed_ns(start: CudaToken, end: CudaToken) -> int:
        """Device time between two timing events (0.5 us resolution)."""
        end.wait()
        return int(_call(cu.cuEventElapsedTime, start.end, end.end) * 1e6)
