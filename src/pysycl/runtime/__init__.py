"""The SYCL object model: platforms, devices, contexts, queues, events, memory.

``pysycl/__init__.py`` re-exports ``__all__`` from here.

>>> from pysycl import runtime as rt
>>> rt.queue().get_device() == rt.device()
True
"""
from . import bundle_pickling  # noqa: F401 - registers kernel_bundle pickling
from .args import check_launch
from .buffer import accessor, buffer, host_accessor, local_accessor
from .context import context
from .device import device, platform
from .event import event
from .handler import handler, interop_handle, spec_constant
from .info import backend, device_type, event_command_status, info
from .queue import queue
from .ranges import id, item, nd_item, nd_range, range
from .selectors import (accelerator_selector, accelerator_selector_v, aspect_selector,
                        cpu_selector, cpu_selector_v, default_selector, default_selector_v,
                        gpu_selector, gpu_selector_v)
from .usm import (aligned_alloc, aligned_alloc_device, aligned_alloc_host, aligned_alloc_shared,
                  free, get_pointer_device, get_pointer_type, malloc, malloc_device,
                  malloc_host, malloc_shared, usm_allocator, usm_array)

__all__ = [
    "accelerator_selector", "accelerator_selector_v", "accessor", "aligned_alloc",
    "aligned_alloc_device", "aligned_alloc_host", "aligned_alloc_shared",
    "aspect_selector", "backend", "buffer", "check_launch", "context", "cpu_selector",
    "cpu_selector_v", "default_selector", "default_selector_v", "device", "device_type",
    "event", "event_command_status", "free", "get_pointer_device", "get_pointer_type",
    "gpu_selector", "gpu_selector_v", "handler", "host_accessor", "id", "info",
    "interop_handle", "item", "local_accessor", "malloc", "malloc_device",
    "malloc_host", "malloc_shared", "nd_item", "nd_range", "platform", "queue", "range",
    "spec_constant", "usm_allocator", "usm_array",
]
