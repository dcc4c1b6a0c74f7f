"""Kernel properties (``sycl_ext_oneapi_kernel_properties``), attached to kernel functions.

Meta names are DPC++'s IR attribute names (``PropertyMetaInfo`` in the DPC++ headers);
sizes are listed in SYCL order (``work_group_size(1, 8)`` is ``"1,8"``).

>>> work_group_size(8, 8).meta_name, work_group_size(8, 8).meta_value
('sycl-work-group-size', '8,8')
>>> device_has(aspect.fp16, aspect.fp64).meta_value
'5,6'
"""
from __future__ import annotations

from ._values import dims, parse_ints, positive_int
from .aspects import aspect, to_aspect
from .base import property


class _sizes_property(property):
    """A property whose value is 1..3 work-group sizes; ``p[d]`` reads dimension d."""

    def __init__(self, *sizes):
        self._value = dims(type(self).__name__, sizes)

    def __getitem__(self, dim: int) -> int:
        return self._value[dim]

    @classmethod
    def from_meta(cls, text):
        return cls(*parse_ints(cls.__name__, text))


class _count_property(property):
    """A property whose value is one positive count."""

    def __init__(self, n):
        self._value = positive_int(type(self).__name__, n)

    @classmethod
    def from_meta(cls, text):
        return cls(*parse_ints(cls.__name__, text))


class work_group_size(_sizes_property):
    """Required work-group size (``reqd_work_group_size``); launching with another
    local size is ``errc.nd_range``.

    >>> work_group_size(4, 2)[1]
    2
    """

    meta_name = "sycl-work-group-size"
    category = "kernel"


class work_group_size_hint(_sizes_property):
    """A hint for the work-group size; never an error."""

    meta_name = "sycl-work-group-size-hint"
    category = "kernel"


class max_work_group_size(_sizes_property):
    """Promise that every work-group dimension stays within these sizes."""

    meta_name = "sycl-max-work-group-size"
    category = "kernel"


class max_linear_work_group_size(_count_property):
    """Promise that the work-group's linear size is at most ``n``.

    >>> max_linear_work_group_size(64).meta_value
    '64'
    """

    meta_name = "sycl-max-linear-work-group-size"
    category = "kernel"


class sub_group_size(_count_property):
    """Required sub-group size (``reqd_sub_group_size``).

    >>> sub_group_size(16).meta_value
    '16'
    """

    meta_name = "sycl-sub-group-size"
    category = "kernel"


class device_has(property):
    """The aspects a kernel needs; a device lacking one gets ``errc.kernel_not_supported``.

    Aspects keep the order given (C++ keeps the template order) but repeated aspects
    collapse, so ``device_has(fp16, fp16) == device_has(fp16)``.

    >>> device_has("fp64").value
    (<aspect.fp64: 6>,)
    """

    meta_name = "sycl-device-has"
    category = "kernel"

    def __init__(self, *aspects):
        seen: dict[aspect, None] = {}
        for a in aspects:
            seen.setdefault(to_aspect(a), None)
        self._value = tuple(seen)

    @classmethod
    def from_meta(cls, text):
        return cls(*parse_ints(cls.__name__, text)) if text else cls()
