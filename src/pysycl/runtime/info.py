"""``sycl.info``: the descriptors of ``get_info`` and the enums of the object model.

SYCL 2020 spells queries as template arguments (``dev.get_info<info::device::name>()``);
here they are enum members (``dev.get_info(sycl.info.device.name)``) whose value is the
attribute that holds the answer, so ``get_info`` and attribute access never disagree.

>>> info.device.max_compute_units.value
'max_compute_units'
>>> backend.native_cpu.name
'native_cpu'
"""
from __future__ import annotations

import enum

from ..errors import errc, exception


class backend(enum.Enum):
    """``sycl.backend``: where a device comes from."""

    native_cpu = "native_cpu"
    opencl = "opencl"
    cuda = "cuda"


class device_type(enum.Enum):
    """``sycl.info.device_type`` (SYCL 2020 4.6.4.2)."""

    cpu = "cpu"
    gpu = "gpu"
    accelerator = "accelerator"
    custom = "custom"
    automatic = "automatic"
    host = "host"
    all = "all"


class event_command_status(enum.Enum):
    """``sycl.info.event_command_status``: what ``event.status`` returns."""

    submitted = 0
    running = 1
    complete = 2


class partition_property(enum.Enum):
    """``sycl.info.partition_property`` (SYCL 2020 4.6.4.2)."""

    no_partition = "no_partition"
    partition_equally = "partition_equally"
    partition_by_counts = "partition_by_counts"
    partition_by_affinity_domain = "partition_by_affinity_domain"


class partition_affinity_domain(enum.Enum):
    """``sycl.info.partition_affinity_domain`` (SYCL 2020 4.6.4.2)."""

    not_applicable = "not_applicable"
    numa = "numa"
    L4_cache = "L4_cache"
    L3_cache = "L3_cache"
    L2_cache = "L2_cache"
    L1_cache = "L1_cache"
    next_partitionable = "next_partitionable"


class fp_config(enum.Enum):
    """``sycl.info.fp_config`` (SYCL 2020 4.6.4.2): a floating-point capability."""

    denorm = "denorm"
    inf_nan = "inf_nan"
    round_to_nearest = "round_to_nearest"
    round_to_zero = "round_to_zero"
    round_to_inf = "round_to_inf"
    fma = "fma"
    correctly_rounded_divide_sqrt = "correctly_rounded_divide_sqrt"
    soft_float = "soft_float"


class global_mem_cache_type(enum.Enum):
    """``sycl.info.global_mem_cache_type`` (SYCL 2020 4.6.4.2)."""

    none = "none"
    read_only = "read_only"
    read_write = "read_write"


# ``sycl.info.local_mem_type`` (SYCL 2020 4.6.4.2): ``none``, ``local``, ``global`` (a
# Python keyword: ``local_mem_type["global"]``, or its alias ``local_mem_type.global_``).
local_mem_type = enum.Enum("local_mem_type", [("none", "none"), ("local", "local"),
                                              ("global", "global"), ("global_", "global")],
                           module=__name__, qualname="local_mem_type")


class _device(enum.Enum):
    name = "name"
    vendor = "vendor"
    backend = "backend"
    device_type = "device_type"
    driver_version = "driver_version"
    version = "version"
    max_compute_units = "max_compute_units"
    max_work_group_size = "max_work_group_size"
    max_work_item_sizes = "max_work_item_sizes"
    max_work_item_dimensions = "max_work_item_dimensions"
    sub_group_sizes = "sub_group_sizes"
    global_mem_size = "global_mem_size"
    local_mem_size = "local_mem_size"
    aspects = "aspects"
    platform = "platform"
    partition_max_sub_devices = "partition_max_sub_devices"
    partition_properties = "partition_properties"
    partition_affinity_domains = "partition_affinity_domains"
    partition_type_property = "partition_type_property"
    partition_type_affinity_domain = "partition_type_affinity_domain"
    parent_device = "parent_device"
    built_in_kernel_ids = "built_in_kernel_ids"
    is_available = "is_available"
    address_bits = "address_bits"
    is_endian_little = "is_endian_little"
    max_mem_alloc_size = "max_mem_alloc_size"
    mem_base_addr_align = "mem_base_addr_align"
    max_num_sub_groups = "max_num_sub_groups"
    profile = "profile"
    local_mem_type = "local_mem_type"
    vendor_id = "vendor_id"
    max_clock_frequency = "max_clock_frequency"
    max_parameter_size = "max_parameter_size"
    global_mem_cache_type = "global_mem_cache_type"
    global_mem_cache_line_size = "global_mem_cache_line_size"
    global_mem_cache_size = "global_mem_cache_size"
    error_correction_support = "error_correction_support"
    profiling_timer_resolution = "profiling_timer_resolution"
    half_fp_config = "half_fp_config"
    single_fp_config = "single_fp_config"
    double_fp_config = "double_fp_config"
    atomic_memory_order_capabilities = "atomic_memory_order_capabilities"
    atomic_fence_order_capabilities = "atomic_fence_order_capabilities"
    atomic_memory_scope_capabilities = "atomic_memory_scope_capabilities"
    atomic_fence_scope_capabilities = "atomic_fence_scope_capabilities"
    sub_group_independent_forward_progress = "sub_group_independent_forward_progress"
    preferred_interop_user_sync = "preferred_interop_user_sync"
    backend_version = "backend_version"
    preferred_vector_width_char = "preferred_vector_width_char"
    preferred_vector_width_short = "preferred_vector_width_short"
    preferred_vector_width_int = "preferred_vector_width_int"
    preferred_vector_width_long = "preferred_vector_width_long"
    preferred_vector_width_float = "preferred_vector_width_float"
    preferred_vector_width_double = "preferred_vector_width_double"
    preferred_vector_width_half = "preferred_vector_width_half"
    native_vector_width_char = "native_vector_width_char"
    native_vector_width_short = "native_vector_width_short"
    native_vector_width_int = "native_vector_width_int"
    native_vector_width_long = "native_vector_width_long"
    native_vector_width_float = "native_vector_width_float"
    native_vector_width_double = "native_vector_width_double"
    native_vector_width_half = "native_vector_width_half"


class _platform(enum.Enum):
    name = "name"
    vendor = "vendor"
    version = "version"
    backend = "backend"
    profile = "profile"


class _context(enum.Enum):
    devices = "devices"
    platform = "platform"
    backend = "backend"
    atomic_memory_order_capabilities = "atomic_memory_order_capabilities"
    atomic_fence_order_capabilities = "atomic_fence_order_capabilities"
    atomic_memory_scope_capabilities = "atomic_memory_scope_capabilities"
    atomic_fence_scope_capabilities = "atomic_fence_scope_capabilities"


class _queue(enum.Enum):
    device = "device"
    context = "context"


class _event(enum.Enum):
    command_execution_status = "status"


class _event_profiling(enum.Enum):
    command_submit = "profiling_command_submit"
    command_start = "profiling_command_start"
    command_end = "profiling_command_end"


class _kernel(enum.Enum):
    # Answered by bundle.kernel; declared here so ``sycl.info`` is one namespace.
    function_name = "function_name"
    num_args = "num_args"
    attributes = "attributes"
    context = "context"


class _kernel_device_specific(enum.Enum):
    # Answered by bundle.kernel.get_info(descriptor, device) (SYCL 2020 4.11.13.2).
    global_work_size = "global_work_size"
    work_group_size = "work_group_size"
    compile_work_group_size = "compile_work_group_size"
    preferred_work_group_size_multiple = "preferred_work_group_size_multiple"
    private_mem_size = "private_mem_size"
    max_num_sub_groups = "max_num_sub_groups"
    compile_num_sub_groups = "compile_num_sub_groups"
    max_sub_group_size = "max_sub_group_size"
    compile_sub_group_size = "compile_sub_group_size"


class info:
    """``sycl.info``: ``info.device.name``, ``info.event_profiling.command_start``, ..."""

    device = _device
    platform = _platform
    context = _context
    queue = _queue
    event = _event
    event_profiling = _event_profiling
    kernel = _kernel
    kernel_device_specific = _kernel_device_specific
    device_type = device_type
    event_command_status = event_command_status
    partition_property = partition_property
    partition_affinity_domain = partition_affinity_domain
    fp_config = fp_config
    global_mem_cache_type = global_mem_cache_type
    local_mem_type = local_mem_type


# The descriptors each class answers in get_info (C++ rejects the others at compile time;
# here a descriptor of another class would otherwise read a same-named attribute).
_FAMILY = {"device": _device, "platform": _platform, "context": _context, "queue": _queue,
           "event": _event}


def _descriptor_name(descriptor) -> str:
    family = type(descriptor).__name__.lstrip("_")
    return f"sycl.info.{family}.{descriptor.name}"


def get_info(obj, descriptor, family=None):
    """The answer to ``descriptor`` for ``obj`` (the body of every ``get_info``);
    ``family``: the descriptor enum ``obj`` answers (by default from its class name)."""
    if not isinstance(descriptor, enum.Enum):
        raise exception(errc.invalid, f"{descriptor!r} is not a sycl.info descriptor")
    family = family or _FAMILY.get(type(obj).__name__)
    if family is not None and type(descriptor) is not family:
        raise exception(errc.invalid, f"{_descriptor_name(descriptor)} is not a descriptor "
                        f"of {type(obj).__name__} (those are "
                        f"sycl.info.{family.__name__.lstrip('_')}.*)")
    try:
        value = getattr(obj, descriptor.value)
    except AttributeError:
        raise exception(errc.invalid, f"{type(obj).__name__} has no "
                        f"{_descriptor_name(descriptor)}") from None
    return value() if callable(value) and not isinstance(value, type) else value
