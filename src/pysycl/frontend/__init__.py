"""Python source -> IR : decorators, registry, and the
compiler that builds one input image per kernel.

>>> from pysycl.frontend import kernel, device, external
"""
from .decorators import DeviceFunction, ExternalFunction, KernelFunction, device, external, kernel
from .kernel_api import (atomic_ref, group_barrier, maximum, minimum, plus, private_array,
                         reduce_over_group, static_range)
from .registry import all_kernels, externals_defined, find_kernel, kernels_in_module
from .signature import KernelSignature, ParamInfo
from . import sycl_math as math

__all__ = [
    "DeviceFunction", "ExternalFunction", "KernelFunction", "KernelSignature", "ParamInfo",
    "all_kernels", "atomic_ref", "device", "external", "externals_defined", "find_kernel",
    "group_barrier", "kernel", "kernels_in_module", "math", "maximum", "minimum", "plus",
    "private_array", "reduce_over_group", "static_range",
]
