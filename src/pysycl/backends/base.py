"""The contract every backend slice implements.

A backend is a folder ``backends/<name>/`` with the same four files:

* ``target.py``   — frozen :class:`Target` values (triple, data layout, address spaces).
* ``lowering.py`` — the codegen rules that differ for this target (work-item builtins,
  barriers, math, calling convention); see ``codegen``.
* ``compiler.py`` — :class:`Compiler`: LLVM IR text -> executable image bytes. Needs no device.
* ``driver.py``   — :class:`Driver`: the only code that touches a device.

The registry (``backends/registry.py``) is the only place that names concrete backends.
Nothing here imports a backend.

Kernel argument ABI (shared by all targets; ``codegen`` expands each IR kernel
parameter into these LLVM parameters, the runtime packs them as :class:`KernelArg`):

=====================  =============================================  =====================
IR parameter           LLVM parameters, in order                      packed KernelArg(s)
=====================  =============================================  =====================
scalar T               T                                              ``scalar`` bytes
complex T (c64, c128)  pointer to the bytes (``byval`` on SPIR-V),    ``scalar`` bytes
                       as a struct {re, im}
struct / array value   pointer to the bytes (``byval`` on SPIR-V)     ``bytes`` bytes
accessor<T, D>         global T*, D x i64 access range, D x i64       ``mem`` + ``scalar`` x (3D+1)
                       memory range, D x i64 access offset, i64
                       element offset of the buffer in the memory
local_accessor<T, D>   local T*, D x i64 range                         ``local`` nbytes + ``scalar`` x D
global_ptr<T>          global T*                                       ``mem``
spec-constant buffer   global i8* (implicit last parameter)            ``mem``
=====================  =============================================  =====================
"""
from __future__ import annotations

import abc
import enum
from typing import Any, Callable, Mapping, Sequence

from .._records import FrozenValue, Record
from ..errors import errc, exception

_set = object.__setattr__
_NEW: Any = object()   # DeviceDescription(extra=...) not given: a new dict


def rect_extent(rect: Sequence[int], region: Sequence[int]) -> int:
    """Bytes from the first byte of a ``copy_rect`` box to one past its last."""
    _, row_pitch, slice_pitch = rect
    width, rows, slices = region
    return (slices - 1) * slice_pitch + (rows - 1) * row_pitch + width


def fork_error(backend: str) -> exception:
    """What a driver raises in a child forked after it started in the parent: device
    runtimes (CUDA, OpenCL) keep threads and handles that do not survive ``fork``."""
    return exception(errc.feature_not_supported, f"the {backend} backend was started "
                     "before os.fork(): its devices, queues, memory and programs cannot be "
                     "used in the forked child process. Start worker processes with "
                     "multiprocessing's 'spawn' or 'forkserver' method, or use the "
                     "native_cpu device in the child")


class AddressSpace(enum.Enum):
    private = "private"
    global_ = "global"
    local = "local"
    constant = "constant"
    generic = "generic"


class Target(FrozenValue):
    """What codegen and the compiler need to know about a code-generation target.
    (Frozen value classes and records here are written out by hand with dataclass
    semantics: _records.py.)"""

    __slots__ = _fields = ("name", "backend", "triple", "data_layout", "binary_format",
                           "address_spaces", "cpu", "features", "native_spec_constants",
                           "sub_group_sizes", "accumulating_reductions")
    name: str                 # "native_cpu", "spirv64", "nvptx64-sm_90"
    backend: str              # "native_cpu", "opencl", "cuda"
    triple: str
    data_layout: str
    binary_format: str        # "object", "spirv", "ptx"
    address_spaces: Mapping[AddressSpace, int]
    cpu: str
    features: str
    # A device image in this format can take spec-constant values after codegen.
    native_spec_constants: bool
    # The sub-group sizes every device of this target has (ahead-of-time builds leave
    # out kernels that require another); None: it depends on the device.
    sub_group_sizes: tuple[int, ...] | None
    # Atomic reductions combine into an accumulator the queue keeps, so that nothing is
    # written before the kernel (passes/lower_reducers.py, runtime/reduction.py): on a
    # GPU that write is a device operation of its own; on a CPU the counter it takes per
    # work-group costs more than the host's write.
    accumulating_reductions: bool

    def __init__(self, name: str, backend: str, triple: str, data_layout: str,
                 binary_format: str, address_spaces: Mapping[AddressSpace, int],
                 cpu: str = "", features: str = "", native_spec_constants: bool = False,
                 sub_group_sizes: tuple[int, ...] | None = None,
                 accumulating_reductions: bool = False):
        _set(self, "name", name)
        _set(self, "backend", backend)
        _set(self, "triple", triple)
        _set(self, "data_layout", data_layout)
        _set(self, "binary_format", binary_format)
        _set(self, "address_spaces", address_spaces)
        _set(self, "cpu", cpu)
        _set(self, "features", features)
        _set(self, "native_spec_constants", native_spec_constants)
        _set(self, "sub_group_sizes", sub_group_sizes)
        _set(self, "accumulating_reductions", accumulating_reductions)

    def addrspace(self, space: AddressSpace) -> int:
        return self.address_spaces[space]


class KernelArgKind(enum.Enum):
    scalar = "scalar"     # value: bytes of the scalar (little-endian, dtype width)
    bytes = "bytes"       # value: bytes of a struct / array passed by value
    mem = "mem"           # value: a backend memory handle (USM pointer int or allocation object)
    local = "local"       # value: int, number of bytes of work-group local memory


class KernelArg(FrozenValue):
    # (Weakly referable: launch caches refer to the last launch's arguments without
    # keeping their memory alive after the array is freed.)
    __slots__ = ("kind", "value", "__weakref__")
    _fields = ("kind", "value")
    kind: KernelArgKind
    value: Any

    def __init__(self, kind: KernelArgKind, value: Any):
        _set(self, "kind", kind)
        _set(self, "value", value)


class DeviceDescription(Record):
    """What discovery learns about a device; ``runtime.device`` wraps it."""

    _fields = ("name", "vendor", "backend", "device_type", "driver_version",
               "max_compute_units", "max_work_group_size", "max_work_item_sizes",
               "sub_group_sizes", "global_mem_size", "local_mem_size", "aspects", "target",
               "handle", "extra")
    name: str
    vendor: str
    backend: str
    device_type: str                  # "cpu", "gpu", "accelerator"
    driver_version: str
    max_compute_units: int
    max_work_group_size: int
    max_work_item_sizes: tuple[int, int, int]
    sub_group_sizes: tuple[int, ...]
    global_mem_size: int
    local_mem_size: int
    aspects: frozenset[str]           # names of ``sycl.aspect`` members
    target: Target
    handle: Any = None                # backend object (cl.Device, CUdevice ordinal, ...)
    extra: dict

    def __init__(self, name: str, vendor: str, backend: str, device_type: str,
                 driver_version: str, max_compute_units: int, max_work_group_size: int,
                 max_work_item_sizes: tuple[int, int, int], sub_group_sizes: tuple[int, ...],
                 global_mem_size: int, local_mem_size: int, aspects: frozenset[str],
                 target: Target, handle: Any = None, extra: dict = _NEW):
        self.name = name
        self.vendor = vendor
        self.backend = backend
        self.device_type = device_type
        self.driver_version = driver_version
        self.max_compute_units = max_compute_units
        self.max_work_group_size = max_work_group_size
        self.max_work_item_sizes = max_work_item_sizes
        self.sub_group_sizes = sub_group_sizes
        self.global_mem_size = global_mem_size
        self.local_mem_size = local_mem_size
        self.aspects = aspects
        self.target = target
        self.handle = handle
        self.extra = {} if extra is _NEW else extra


class Compiler(abc.ABC):
    """LLVM IR text -> executable image bytes for one target. Device-free and thread-safe."""

    target: Target

    @abc.abstractmethod
    def compile(self, llvm_ir: str, kernel_names: Sequence[str]) -> bytes:
        """Optimise and emit. Raises ``exception(errc.build)`` with LLVM's message."""

    def disassemble(self, binary: bytes) -> str:
        """A readable form of the binary (``device_image.asm``)."""
        return ""

    def check_binary(self, binary: bytes, link: bool = False) -> None:
        """Raise ``exception(errc.invalid)`` unless ``binary`` is well formed for this
        target (a binary read from a file, before a driver or linker sees it); ``link``:
        also link it where linking could crash the process (host code that pysycl did
        not make), somewhere that a crash is only an answer."""
        return None


class Driver(abc.ABC):
    """Device access for one backend. Handles are opaque to the runtime.

    Commands (``copy``, ``fill``, ``launch``) return a completion token with ``wait()``,
    ``is_complete()`` (without blocking) and, on queues made with profiling,
    ``profiling_ns() -> (submit, start, end)`` in nanoseconds, raising
    ``exception(errc.profiling)`` when the times are not available."""

    name: str
    #: ``launch`` takes ``offset=`` (a SYCL 1.2.1 global offset); others raise
    #: ``errc.feature_not_supported`` for a non-zero one.
    supports_global_offset: bool = False
    #: Commands issued to one stream run in issue order (a command may follow one issued
    #: earlier on the same stream without the host waiting).
    streams_in_order: bool = True
    #: A launch's token is (nearly) never complete when ``launch`` returns (GPU queues):
    #: the runtime does not ask at issue time.
    launch_tokens_pending: bool = False
    #: The ``alloc`` kind of a launcher's spec-constant buffer (the implicit last kernel
    #: argument of emulated spec constants).
    spec_buffer_kind: str = "device"
    #: The driver compiles device code when it loads an image (OpenCL: SPIR-V to the
    #: device's ISA), so ``load`` is given the device code cache.
    compiles_at_load: bool = False
    #: Why ``discover()`` found no devices (a missing package or driver library, a driver
    #: too old), set by ``discover``; shown by ``pysycl ls -v``.
    absent_reason: str | None = None
    #: Every USM allocation's address is a multiple of this many bytes.
    alloc_alignment: int = 0
    #: Keywords ``alloc`` takes beyond the contract's: ``alignment`` (bytes, a power of
    #: two) for USM kinds.
    alloc_options: frozenset = frozenset()

    def create_context(self, devices: Sequence[DeviceDescription]) -> Any:
        """A driver context over ``devices`` for a user-made ``sycl.context``; None where
        the backend has one implicit context per device (native CPU, CUDA's primary)."""
        return None

    def create_sub_devices(self, device: DeviceDescription, partition: str,
                           value: Any) -> list[DeviceDescription]:
        """Sub-devices of ``device`` (SYCL 2020 4.6.4.2). ``partition`` is the name of a
        ``sycl.info.partition_property`` member, ``value`` its count, list of counts or
        affinity-domain name. Each sub-device's ``extra`` holds ``"parent"`` (the
        description it was split from) and ``"partition"`` (``(partition, domain or
        None)``). Sizes that do not fit are ``errc.invalid``; partitions the device
        cannot do are ``errc.feature_not_supported``."""
        raise exception(errc.feature_not_supported,
                        f"{device.name} ({self.name}) cannot be partitioned into sub-devices")

    def partition_info(self, device: DeviceDescription) -> dict:
        """``{"max_sub_devices": n, "properties": [partition names], "domains": [affinity
        domain names]}`` for ``device`` (the partition info descriptors)."""
        return {"max_sub_devices": 0, "properties": [], "domains": []}

    @abc.abstractmethod
    def discover(self) -> list[DeviceDescription]:
        """Every usable device; empty when the driver or hardware is absent. Never raises."""

    # Memory -----------------------------------------------------------------
    @abc.abstractmethod
    def alloc(self, device: DeviceDescription, nbytes: int, kind: str, *,
              context: Any = None) -> Any:
        """kind: "device", "shared", "host" (USM) or "buffer". Returns an allocation
        object with ``.ptr`` (int, may be 0 for buffer-only backends) and
        ``.host_view()`` -> memoryview or None when not host-accessible. The runtime
        frees USM when the object is collected: it must take weak references, and
        ``free`` of a shallow copy (``copy.copy``) must release the memory.
        ``context``: the driver context of a user-made ``sycl.context`` (None: the
        default one); memory, programs and streams of one queue are made in the same one."""

    @abc.abstractmethod
    def free(self, allocation: Any) -> None: ...

    @abc.abstractmethod
    def copy(self, stream: Any, dst: Any, dst_offset: int, src: Any, src_offset: int,
             nbytes: int) -> Any:
        """dst/src: allocations or host memoryviews. Returns a completion token."""

    @abc.abstractmethod
    def fill(self, stream: Any, dst: Any, offset: int, pattern: bytes, nbytes: int) -> Any: ...

    def copy_rect(self, stream: Any, dst: Any, dst_rect: Sequence[int], src: Any,
                  src_rect: Sequence[int], region: Sequence[int]) -> Any:
        """Copy a box of ``region`` = (bytes per row, rows, slices). Each side's
        ``rect`` is (byte offset, row pitch, slice pitch) in its memory. Returns the
        token of the last command (None for an empty box); this default issues one
        :meth:`copy` per row, in stream order."""
        width, rows, slices = region
        (d0, drp, dsp), (s0, srp, ssp) = dst_rect, src_rect
        token = None
        for k in range(slices):
            for j in range(rows):
                token = self.copy(stream, dst, d0 + k * dsp + j * drp, src,
                                  s0 + k * ssp + j * srp, width)
        return token

    def fill_rect(self, stream: Any, dst: Any, rect: Sequence[int], pattern: bytes,
                  region: Sequence[int]) -> Any:
        """Repeat ``pattern`` over each row of a box (see :meth:`copy_rect`)."""
        width, rows, slices = region
        offset, row_pitch, slice_pitch = rect
        token = None
        for k in range(slices):
            for j in range(rows):
                token = self.fill(stream, dst, offset + k * slice_pitch + j * row_pitch,
                                  pattern, width)
        return token

    # Code -------------------------------------------------------------------
    @abc.abstractmethod
    def load(self, device: DeviceDescription, binary: bytes, kernel_names: Sequence[str],
             spec_constants: Mapping[int, bytes] | None = None, *,
             device_global_ids: Sequence[str] = (), code_cache: Any = None,
             context: Any = None) -> Any:
        """Load an executable image; ``spec_constants`` maps native SpecIds to value bytes.
        ``context``: as for :meth:`alloc`.

        ``device_global_ids``: the unique IDs of the image's device globals, for a driver
        that must ask for their storage to be kept (the native CPU exports their
        symbols). ``code_cache`` (given to a driver that ``compiles_at_load``, else
        None): an object with ``get(parts) -> bytes | None`` and ``put(parts, data)``,
        ``parts`` a dict of what the driver's compilation depends on
        (``bundle.cache.DeviceCodeCache``), or None when caching is off."""

    @abc.abstractmethod
    def launch(self, stream: Any, program: Any, kernel_name: str, global_size: Sequence[int],
               local_size: Sequence[int] | None, args: Sequence[KernelArg],
               local_mem_bytes: int = 0) -> Any:
        """Enqueue one launch; returns a completion token with ``wait()``. A driver that
        ``supports_global_offset`` also takes ``offset=`` (a tuple of ints)."""

    def bind_launch(self, stream: Any, program: Any, kernel_name: str,
                    trailing: KernelArg) -> Callable[..., Any]:
        """:meth:`launch` of one kernel on one stream as a function
        ``bound(global_size, local_size, args, local_mem_bytes=0) -> token``: the
        launcher calls it for every launch after the first. ``args`` is a fresh list
        the call may extend; ``trailing`` (the spec-constant buffer) goes last. A driver
        overrides this to look up its kernel object once instead of per launch.

        A driver's bound launch may also carry ``replay``, a list ``[call, version,
        id(args)]`` that it sets at each launch: for a launch whose KernelArgs repeat
        those of an earlier launch still in its records, ``call(version)`` makes that
        launch again (same geometry, same parameter bytes) and returns 0, or returns
        nonzero and launches nothing when it cannot (its record rewritten since, another
        context current) or the driver failed; ``call`` is None after any other launch.
        The runtime uses it for launch loops (``runtime/replay.py``)."""
        launch = self.launch

        def bound(global_size, local_size, args, local_mem_bytes=0):
            args.append(trailing)
            return launch(stream, program, kernel_name, global_size, local_size, args,
                          local_mem_bytes)
        return bound

    def read_device_global(self, stream: Any, program: Any, symbol: str, offset: int,
                           out: memoryview) -> None:
        """Copy ``out.nbytes`` bytes of the loaded program's global ``symbol`` from byte
        ``offset`` into ``out``; returns when the copy is done. Every backend that loads
        images with device globals implements this and :meth:`write_device_global`."""
        raise exception(errc.feature_not_supported,
                        f"the {self.name} backend has no device globals")

    def write_device_global(self, stream: Any, program: Any, symbol: str, offset: int,
                            data: memoryview) -> None:
        """Copy ``data`` into the loaded program's global ``symbol`` at byte ``offset``;
        returns when the copy is done."""
        raise exception(errc.feature_not_supported,
                        f"the {self.name} backend has no device globals")

    # Interoperability (SYCL 2020 4.5.1: get_native, make_kernel_bundle) -------
    def native_program(self, program: Any) -> Any:
        """What ``sycl.get_native`` gives for a program this driver loaded."""
        raise exception(errc.feature_not_supported,
                        f"the {self.name} backend has no native program objects")

    def native_kernel(self, program: Any, kernel_name: str) -> Any:
        """A new native kernel object of ``kernel_name`` in a loaded program."""
        raise exception(errc.feature_not_supported,
                        f"the {self.name} backend has no native kernel objects")

    def adopt_program(self, device: DeviceDescription, native: Any, context: Any = None) -> Any:
        """A loaded program (as :meth:`load` returns) around a native program built
        elsewhere for ``device`` in ``context``; its kernel names are the program's."""
        raise exception(errc.feature_not_supported,
                        f"the {self.name} backend cannot make a kernel_bundle from a "
                        "native program")

    def native_context(self, device: DeviceDescription, context: Any = None) -> Any:
        """The native context ``context`` stands for (None: the device's default)."""
        return context

    # Streams ----------------------------------------------------------------
    @abc.abstractmethod
    def create_stream(self, device: DeviceDescription, profiling: bool, *,
                      context: Any = None) -> Any:
        """A new stream (queue) on ``device``; ``context`` is the driver context of a
        user-made ``sycl.context`` (``create_context``), None for the default one."""

    def wrap_stream(self, device: DeviceDescription, handle: int, profiling: bool = False) -> Any:
        """A stream over a native one made elsewhere (``sycl.queue.from_native``); the
        backend does not destroy it. ``errc.feature_not_supported`` by default."""
        raise exception(errc.feature_not_supported,
                        f"the {self.name} backend cannot wrap a native stream")

    @abc.abstractmethod
    def synchronize(self, stream: Any) -> None: ...
