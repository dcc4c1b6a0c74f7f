"""``sycl.platform`` and ``sycl.device``: the devices the backends discovered.

A device wraps the backend's :class:`DeviceDescription`; two ``sycl.device`` objects for
the same hardware compare equal. ``PYSYCL_DEVICE_SELECTOR`` (see ``filters``) hides
devices from everything here, as ``ONEAPI_DEVICE_SELECTOR`` does in DPC++.

>>> import pysycl as sycl
>>> dev = sycl.device(sycl.cpu_selector_v)
>>> dev.is_cpu(), dev.has(sycl.aspect.fp64), dev.get_info(sycl.info.device.name) == dev.name
(True, True, True)
"""
from __future__ import annotations

import numbers
from typing import Any

from ..backends import registry
from ..backends.base import DeviceDescription
from ..errors import errc, exception
from ..properties.aspects import aspect, to_aspect
from . import filters, selectors
from .info import backend as backend_enum
from .info import device_type as device_type_enum
from .info import get_info
from .info import partition_affinity_domain as domain_enum
from .info import partition_property as partition_enum
from .info import fp_config as fp_config_enum
from .info import global_mem_cache_type as cache_type_enum
from .info import local_mem_type as local_mem_enum
from ..types import memory_order, memory_scope


class platform:
    """One backend platform (an OpenCL platform, the CUDA driver, the native CPU).

    >>> [p.backend.name for p in platform.get_platforms()][:1]
    ['native_cpu']
    """

    __slots__ = ("_key", "_descs", "name", "vendor", "version", "backend")

    def __init__(self, selector=None):
        """``sycl.platform()``: the default device's platform; ``sycl.platform(selector)``
        the platform of the device the selector chooses (SYCL 2020 4.6.2), and
        ``sycl.platform(dev)`` that device's."""
        chosen = selector if isinstance(selector, device) else device(selector)
        of = chosen.get_platform()
        for attr in platform.__slots__:
            setattr(self, attr, getattr(of, attr))

    @classmethod
    def _make(cls, key, descs: list[DeviceDescription]) -> "platform":
        p = object.__new__(cls)
        first = descs[0]
        p._key = key
        p._descs = descs
        p.backend = backend_enum(first.backend)
        # Backends with a platform object of their own (OpenCL) describe it in ``extra``.
        p.name = first.extra.get("platform_name") or f"pysycl {first.backend}"
        p.vendor = first.extra.get("platform_vendor") or first.vendor
        p.version = first.extra.get("platform_version") or first.driver_version
        return p

    @staticmethod
    def get_platforms() -> list["platform"]:
        """Every platform with at least one visible device, native_cpu first."""
        groups: dict[Any, list[DeviceDescription]] = {}
        for desc in filters.visible_devices():
            groups.setdefault(_platform_key(desc), []).append(desc)
        return [platform._make(k, v) for k, v in groups.items()]

    def get_devices(self, device_type=device_type_enum.all) -> list["device"]:
        wanted = _as_device_type(device_type)
        return [device._wrap(d) for d in self._descs if _type_matches(d, wanted)]

    def get_backend(self) -> backend_enum:
        return self.backend

    def get_info(self, descriptor):
        return get_info(self, descriptor)

    @property
    def profile(self) -> str:
        """``info::platform::profile``: FULL_PROFILE unless a device says otherwise."""
        profiles = {device._wrap(d).profile for d in self._descs}
        return "FULL_PROFILE" if profiles == {"FULL_PROFILE"} else "EMBEDDED_PROFILE"

    def has(self, asp) -> bool:
        return all(device._wrap(d).has(asp) for d in self._descs)

    def __eq__(self, other):
        return isinstance(other, platform) and other._key == self._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return f"<sycl.platform {self.name!r} ({self.backend.name})>"


def _platform_key(desc: DeviceDescription):
    handle = desc.extra.get("platform")
    return (desc.backend, getattr(handle, "int_ptr", None) if handle is not None else None)


def _as_device_type(t) -> device_type_enum:
    if isinstance(t, device_type_enum):
        return t
    try:
        return device_type_enum(getattr(t, "value", t))
    except ValueError:
        raise exception(errc.invalid, f"{t!r} is not a sycl.info.device_type") from None


def _type_matches(desc: DeviceDescription, wanted: device_type_enum) -> bool:
    if wanted in (device_type_enum.all, device_type_enum.automatic):
        return True
    return desc.device_type == wanted.value


class device:
    """``sycl.device(selector=sycl.default_selector_v)``; info as attributes or get_info.

    ``selector`` is a selector callable (``device -> score``), or a device to copy.
    """

    __slots__ = ("_desc", "_aspects")
    _cache: dict[int, "device"] = {}

    def __new__(cls, selector=None):
        if isinstance(selector, device):
            return selector
        return select_device(selector)

    @classmethod
    def _wrap(cls, desc: DeviceDescription) -> "device":
        dev = cls._cache.get(id(desc))
        if dev is None or dev._desc is not desc:
            dev = object.__new__(cls)
            dev._desc = desc
            dev._aspects = frozenset(to_aspect(a) for a in desc.aspects
                                     if a in aspect.__members__)
            cls._cache[id(desc)] = dev
        return dev

    @staticmethod
    def get_devices(device_type=device_type_enum.all) -> list["device"]:
        """Every visible device of that type (``sycl.info.device_type`` or its name)."""
        wanted = _as_device_type(device_type)
        return [device._wrap(d) for d in filters.visible_devices() if _type_matches(d, wanted)]

    # Info ------------------------------------------------------------------------------
    name = property(lambda self: self._desc.name)
    vendor = property(lambda self: self._desc.vendor)
    driver_version = property(lambda self: self._desc.driver_version)
    version = property(lambda self: self._desc.driver_version)
    backend = property(lambda self: backend_enum(self._desc.backend))
    device_type = property(lambda self: device_type_enum(self._desc.device_type))
    max_compute_units = property(lambda self: self._desc.max_compute_units)
    max_work_group_size = property(lambda self: self._desc.max_work_group_size)
    max_work_item_sizes = property(lambda self: tuple(self._desc.max_work_item_sizes))
    max_work_item_dimensions = property(lambda self: 3)
    sub_group_sizes = property(lambda self: tuple(self._desc.sub_group_sizes))
    global_mem_size = property(lambda self: self._desc.global_mem_size)
    local_mem_size = property(lambda self: self._desc.local_mem_size)
    target = property(lambda self: self._desc.target)
    description = property(lambda self: self._desc, doc="the backend's DeviceDescription")
    # SYCL 2020 4.6.4.4 descriptors a backend may report in its description's ``extra``
    # (OpenCL asks its driver); otherwise what holds for every pysycl device: a 64-bit,
    # little-endian address space, allocations up to the global memory (as USM checks),
    # and USM aligned to at least 64 bytes (mem_base_addr_align counts bits).
    is_available = property(lambda self: True)
    address_bits = property(lambda self: self._desc.extra.get("address_bits", 64))
    is_endian_little = property(lambda self: self._desc.extra.get("endian_little", True))
    max_mem_alloc_size = property(lambda self: self._desc.extra.get(
        "max_mem_alloc_size", self._desc.global_mem_size))
    mem_base_addr_align = property(lambda self: self._desc.extra.get(
        "mem_base_addr_align", 512))

    # More SYCL 2020 4.6.4.4 descriptors: a backend's own answer in ``extra["info"]``
    # (OpenCL asks its driver), else what pysycl's code generation and devices give.
    def _reported(self, key: str, default):
        value = self._desc.extra.get("info", {}).get(key)
        return default() if value is None else value

    vendor_id = property(lambda self: self._reported("vendor_id", lambda: _CPU_VENDOR_IDS.get(
        self._desc.vendor, 0)))
    max_clock_frequency = property(lambda self: self._reported(
        "max_clock_frequency", _host_clock_mhz))
    max_parameter_size = property(lambda self: self._reported("max_parameter_size", lambda: 4096))
    global_mem_cache_type = property(lambda self: cache_type_enum[self._reported(
        "global_mem_cache_type", lambda: "read_write")])
    global_mem_cache_line_size = property(lambda self: self._reported(
        "global_mem_cache_line_size", lambda: 64))
    global_mem_cache_size = property(lambda self: self._reported(
        "global_mem_cache_size", _host_cache_bytes))
    error_correction_support = property(lambda self: bool(self._reported(
        "error_correction_support", lambda: False)))
    profiling_timer_resolution = property(lambda self: self._reported(
        "profiling_timer_resolution", lambda: 1))   # nanosecond clocks
    half_fp_config = property(lambda self: self._fp_config("half"))
    single_fp_config = property(lambda self: self._fp_config("single"))
    double_fp_config = property(lambda self: self._fp_config("double"))
    atomic_memory_order_capabilities = property(lambda self: [memory_order[o] for o in (
        self._reported("atomic_memory_orders", lambda: _ALL_ORDERS))])
    atomic_fence_order_capabilities = property(lambda self: [memory_order[o] for o in (
        self._reported("atomic_fence_orders", lambda: _ALL_ORDERS))])
    atomic_memory_scope_capabilities = property(lambda self: [memory_scope[o] for o in (
        self._reported("atomic_memory_scopes", lambda: _ALL_SCOPES))])
    atomic_fence_scope_capabilities = property(lambda self: [memory_scope[o] for o in (
        self._reported("atomic_fence_scopes", lambda: _ALL_SCOPES))])
    # (the native CPU runs a work-group's items in turns on one thread: no spin-waits)
    sub_group_independent_forward_progress = property(lambda self: bool(self._reported(
        "sub_group_independent_forward_progress", lambda: False)))
    preferred_interop_user_sync = property(lambda self: bool(self._reported(
        "preferred_interop_user_sync", lambda: False)))
    backend_version = property(lambda self: self._reported(
        "backend_version", lambda: self._desc.driver_version))
    # Local memory of its own on GPUs; in the host's RAM (global memory) on CPUs.
    local_mem_type = property(lambda self: local_mem_enum[self._reported(
        "local_mem_type", lambda: "local" if self._desc.device_type == "gpu" else "global")])
    # FULL_PROFILE: every device here implements all of its backend's core features.
    profile = property(lambda self: self._reported("profile", lambda: "FULL_PROFILE"))

    def _fp_config(self, precision: str) -> list:
        """The capabilities of a precision the device has (empty without fp16 / fp64)."""
        if precision != "single" and not self.has({"half": "fp16", "double": "fp64"}[precision]):
            return []
        names = self._reported(f"{precision}_fp_config", lambda: _FULL_FP)
        return [fp_config_enum[n] for n in names]

    def _vector_width(self, kind: str, elem: str) -> int:
        """Elements of ``elem`` in a SIMD register (16 bytes unless the backend says);
        0 for half and double on a device without fp16 / fp64."""
        if elem in ("half", "double") and not self.has("fp16" if elem == "half" else "fp64"):
            return 0
        size = {"char": 1, "short": 2, "int": 4, "long": 8, "float": 4, "double": 8,
                "half": 2}[elem]
        return self._reported(f"{kind}_vector_width_{elem}", lambda: 16 // size)

    @property
    def max_num_sub_groups(self) -> int:
        """Work-group size over the smallest sub-group size: the most sub-groups a
        work-group can have."""
        return self._desc.max_work_group_size // min(self._desc.sub_group_sizes or (1,))

    @property
    def aspects(self) -> list[aspect]:
        return sorted(self._aspects, key=int)

    @property
    def platform(self) -> platform:
        return self.get_platform()

    def get_platform(self) -> platform:
        key = _platform_key(self._desc)
        # Platforms never span backends: only this device's backend is asked.
        descs = [d for d in filters.visible_devices_of(self._desc.backend)
                 if _platform_key(d) == key]
        return platform._make(key, descs or [self._desc])

    def get_info(self, descriptor):
        """``dev.get_info(sycl.info.device.max_work_group_size)``."""
        return get_info(self, descriptor)

    def get_backend(self) -> backend_enum:
        return self.backend

    def has(self, asp) -> bool:
        """``dev.has(sycl.aspect.fp64)``; also takes an aspect's name."""
        return to_aspect(asp) in self._aspects

    def is_cpu(self) -> bool:
        return self._desc.device_type == "cpu"

    def is_gpu(self) -> bool:
        return self._desc.device_type == "gpu"

    def is_accelerator(self) -> bool:
        return self._desc.device_type == "accelerator"

    @property
    def built_in_kernel_ids(self) -> list:
        """``info::device::built_in_kernel_ids`` (SYCL 2020 4.6.4.4): the kernel ids of
        the device's built-in kernels. None of pysycl's backends exposes built-in
        kernels as SYCL kernels (OpenCL's ``CL_DEVICE_BUILT_IN_KERNELS`` are vendor
        functions with no SYCL signature), so the list is empty."""
        return []

    # Partitioning (SYCL 2020 4.6.4.2) ----------------------------------------------------
    def create_sub_devices(self, partition, value) -> list["device"]:
        """Split this device: ``dev.create_sub_devices(sycl.info.partition_property
        .partition_equally, 2)`` (sub-devices of 2 compute units each),
        ``partition_by_counts, [3, 1]`` or ``partition_by_affinity_domain,
        sycl.info.partition_affinity_domain.numa``. Each sub-device runs on its own
        share of the hardware (on the native CPU, threads pinned to its cores)."""
        prop = _member(partition_enum, partition, "partition property")
        descs = self.driver.create_sub_devices(self._desc, prop.name,
                                               _partition_value(prop, value))
        return [device._wrap(d) for d in descs]

    @property
    def partition_max_sub_devices(self) -> int:
        return self.driver.partition_info(self._desc)["max_sub_devices"]

    @property
    def partition_properties(self) -> list:
        return [partition_enum[p] for p in self.driver.partition_info(self._desc)["properties"]]

    @property
    def partition_affinity_domains(self) -> list:
        return [domain_enum[d] for d in self.driver.partition_info(self._desc)["domains"]]

    @property
    def partition_type_property(self):
        how = self._desc.extra.get("partition")
        return partition_enum[how[0]] if how else partition_enum.no_partition

    @property
    def partition_type_affinity_domain(self):
        how = self._desc.extra.get("partition")
        return domain_enum[how[1]] if how and how[1] else domain_enum.not_applicable

    @property
    def parent_device(self) -> "device":
        """The device this one was split from; ``errc.invalid`` for a root device."""
        parent = self._desc.extra.get("parent")
        if parent is None:
            raise exception(errc.invalid, f"{self!r} is a root device: it has no parent")
        return device._wrap(parent)

    @property
    def driver(self):
        """The backend driver (runtime-internal)."""
        return registry.get_driver(self._desc.backend)

    def __eq__(self, other):
        return isinstance(other, device) and other._desc is self._desc

    def __hash__(self):
        return id(self._desc)

    def __repr__(self):
        how = self._desc.extra.get("partition")
        sub = f" sub-device ({self.max_compute_units} compute units)" if how else ""
        return f"<sycl.device {self._desc.backend}:{self._desc.device_type} {self.name!r}{sub}>"


for _kind in ("preferred", "native"):
    for _elem in ("char", "short", "int", "long", "float", "double", "half"):
        setattr(device, f"{_kind}_vector_width_{_elem}",
                property(lambda self, k=_kind, e=_elem: self._vector_width(k, e)))
del _kind, _elem

_CPU_VENDOR_IDS = {"AuthenticAMD": 0x1022, "GenuineIntel": 0x8086}
_ALL_ORDERS = ("relaxed", "acquire", "release", "acq_rel", "seq_cst")
_ALL_SCOPES = ("work_item", "sub_group", "work_group", "device", "system")
_FULL_FP = ("denorm", "inf_nan", "round_to_nearest", "round_to_zero", "round_to_inf", "fma",
            "correctly_rounded_divide_sqrt")


def _host_clock_mhz() -> int:
    """The CPU's highest clock in MHz (cpufreq, else /proc/cpuinfo; 0 if unknown)."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            return int(f.read()) // 1000
    except (OSError, ValueError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            mhz = [float(line.split(":")[1]) for line in f if line.startswith("cpu MHz")]
        return int(max(mhz)) if mhz else 0
    except (OSError, ValueError, IndexError):
        return 0


def _host_cache_bytes() -> int:
    """The largest CPU cache in bytes (sysfs; 0 if unknown)."""
    sizes = []
    for index in range(8):
        try:
            with open(f"/sys/devices/system/cpu/cpu0/cache/index{index}/size") as f:
                text = f.read().strip()
        except OSError:
            break
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            sizes.append(int(text.rstrip("KMG")) * scale)
        except ValueError:
            pass
    return max(sizes, default=0)


def _member(enum_type, value, what: str):
    """``value`` as a member of ``enum_type`` (a member, or its name)."""
    if isinstance(value, enum_type):
        return value
    try:
        return enum_type[getattr(value, "name", value)]
    except (KeyError, TypeError):
        raise exception(errc.invalid, f"{value!r} is not a {what} (one of "
                        f"{', '.join(m.name for m in enum_type)})") from None


def _partition_value(prop, value):
    """``value`` checked for ``prop``: a positive count, a list of counts (zeros left
    out, as the specification counts only non-zero ones), or an affinity domain name."""
    if prop is partition_enum.partition_equally:
        return _compute_units(value, prop, allow_zero=False)
    if prop is partition_enum.partition_by_counts:
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise exception(errc.invalid, f"partition_by_counts takes a list of counts, "
                            f"not {value!r}")
        counts = [_compute_units(c, prop, allow_zero=True) for c in value]
        if not any(counts):
            raise exception(errc.invalid, f"partition_by_counts({list(value)}): no "
                            "non-zero count")
        return [c for c in counts if c]
    if prop is partition_enum.partition_by_affinity_domain:
        domain = _member(domain_enum, value, "affinity domain")
        if domain is domain_enum.not_applicable:
            raise exception(errc.invalid, "not_applicable is not an affinity domain")
        return domain.name
    raise exception(errc.invalid, f"{prop.name} does not create sub-devices")


def _compute_units(value, prop, allow_zero: bool) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or value < (0 if allow_zero else 1):
        raise exception(errc.invalid, f"{prop.name}: {value!r} is not a count of "
                        "compute units")
    return int(value)


def _selector(selector):
    """``selector``, the default selector for None; ``errc.invalid`` if not callable."""
    if selector is None:
        return selectors.default_selector_v
    if not callable(selector):
        raise exception(errc.invalid, f"{selector!r} is not a device selector "
                        "(a callable device -> int) nor a sycl.device")
    return selector


def select_device(selector=None):
    """The visible device with the highest non-negative score (ties: the first in platform
    order); ``errc.runtime`` if none. Backends are discovered only when one of their
    devices could score at least as high as the best so far (``selectors`` module)."""
    selector = _selector(selector)
    best, best_key = None, None
    for position, backend in _backends_by_bound(selector):
        bound = _bound(selector, backend)
        if bound is not None and (bound < 0 or best_key is not None
                                  and (bound, -position) < best_key[:2]):
            continue    # no device of this backend can win
        for index, desc in enumerate(filters.visible_devices_of(backend)):
            dev = device._wrap(desc)
            score = selector(dev)
            if score is None or score < 0:
                continue
            key = (score, -position, -index)
            if best_key is None or key > best_key:
                best, best_key = dev, key
    if best is None:
        name = getattr(selector, "__name__", repr(selector))
        raise exception(errc.runtime, f"no device satisfies {name} among "
                        f"{len(filters.visible_devices())} visible device(s)")
    return best


def select_among(selector, devices: list, where: str):
    """The device of ``devices`` with the highest non-negative score (ties: the first),
    as ``queue(context, selector)`` chooses among its context's devices (SYCL 2020
    4.6.5.1); ``errc.runtime`` if none."""
    selector = _selector(selector)
    best, best_score = None, None
    for dev in devices:
        score = selector(dev)
        if score is not None and score >= 0 and (best is None or score > best_score):
            best, best_score = dev, score
    if best is None:
        name = getattr(selector, "__name__", repr(selector))
        raise exception(errc.runtime, f"no device satisfies {name} among the "
                        f"{len(devices)} device(s) of {where}")
    return best


def _bound(selector, backend: str) -> int | None:
    """The highest score ``selector`` can give a device of ``backend`` here, or None
    when the selector cannot say (a user's selector)."""
    upper_bound = getattr(selector, "upper_bound", None)
    if upper_bound is None:
        return None
    return max((upper_bound(backend, t) for t in registry.device_types_here(backend)),
               default=-1)


def _backends_by_bound(selector) -> list[tuple[int, str]]:
    """(platform position, backend) of the visible backends, the most promising first."""
    visible = list(enumerate(filters.visible_backends()))
    if getattr(selector, "upper_bound", None) is None:
        return visible
    return sorted(visible, key=lambda pb: -_bound(selector, pb[1]))
