"""Device aspects (SYCL 2020 4.6.4.3) as used by ``device_has`` and ``device.has``.

The integer values are DPC++'s (``sycl/info/aspects.def`` and the generated
``device_aspect_macros.hpp``), because the ``sycl-device-has`` property value and
the ``SYCL/device requirements`` ``aspects`` array carry these integers: a pysycl
image that says ``sycl-device-has="5"`` means fp16 to any DPC++ tool.

>>> aspect.fp64.value
6
>>> aspect["gpu"] is aspect.gpu
True
"""
from __future__ import annotations

import enum

from ..errors import errc, exception


class aspect(enum.IntEnum):
    """Optional device features; ``int(a)`` is DPC++'s aspect number."""

    cpu = 1
    gpu = 2
    accelerator = 3
    custom = 4
    fp16 = 5
    fp64 = 6
    # 7, 8 are DPC++'s deprecated int64_base/extended_atomics.
    image = 9
    online_compiler = 10
    online_linker = 11
    queue_profiling = 12
    usm_device_allocations = 13
    usm_host_allocations = 14
    usm_shared_allocations = 15
    # 16 is usm_restricted_shared_allocations (removed in SYCL 2020).
    usm_system_allocations = 17
    usm_atomic_host_allocations = 26
    usm_atomic_shared_allocations = 27
    atomic64 = 28
    host_debuggable = 32
    emulated = 40


def to_aspect(value) -> aspect:
    """Accept an ``aspect``, its name or its DPC++ number; anything else is ``errc.invalid``.

    >>> to_aspect("fp16") is aspect.fp16 and to_aspect(5) is aspect.fp16
    True
    """
    if isinstance(value, aspect):
        return value
    if isinstance(value, str) and value in aspect.__members__:
        return aspect[value]
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return aspect(value)
        except ValueError:
            pass
    raise exception(errc.invalid, f"{value!r} is not a sycl.aspect")
